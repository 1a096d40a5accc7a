//! Stalled flows on a dragonfly with minimal routing (docs/topology.md,
//! "Dragonfly: head-of-line blocking between groups"): the report's
//! `stall` section and `stalled:` / `credit-blocked:` lines, the mechanism
//! behind them (a chain of groups coupled through the input buffers'
//! per-VL FIFOs), and runs that flow without such a line.

mod common;
use common::words;
use std::process::Command;

use serde_json::Value;

const DF: &str = "dragonfly:4:2:2:9";

fn ibnet(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .args(args)
        .output()
        .expect("run ibnet");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `ibnet run ARGS --json --no-wall-time`: the report (asserts exit 0).
fn run_json(args: &[&str]) -> Value {
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "--no-wall-time"]);
    let (code, out, err) = ibnet(&a);
    assert_eq!(code, 0, "{args:?}: {err}");
    let v: Value = serde_json::from_str(&out).expect("JSON report");
    v["report"].clone()
}

/// Utilisation of the global link from group g to group g+1 (router 0's
/// port 5 in every group), g = 0..8.
fn next_group_links(r: &Value) -> Vec<f64> {
    (0..9)
        .map(|g| {
            let node = format!("g{g}_r0");
            r["obufs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["node"] == node.as_str() && o["port"] == 5)
                .unwrap()["utilisation"]
                .as_f64()
                .unwrap()
        })
        .collect()
}

fn sink_mbps(r: &Value, name: &str) -> f64 {
    r["sinks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap()["sink_bw_mbps"]
        .as_f64()
        .unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.002, "got {got:?}, want {want:?}");
    }
}

/// `param:` traffic, HCA i+1 -> dst(i)+1 for the HCAs `dst` maps.
fn param(dst: impl Fn(usize) -> Option<usize>) -> String {
    let pairs: Vec<String> = (0..72)
        .filter_map(|i| dst(i).map(|d| format!("{}={}", i + 1, d + 1)))
        .collect();
    format!("param:{}", pairs.join(","))
}

#[test]
fn shift_by_one_group_cascades_and_reports_the_stall() {
    let base = [
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--traffic",
        "shift:8",
        "--until",
        "2ms",
    ];
    let r = run_json(&base);
    assert_eq!(r["messages_injected"], 134);
    assert_eq!(r["messages_completed"], 59);
    // each group's 8 hosts send to the next group over its one cable; the
    // minimal-routing bound lets every such cable run at 100 %. Only the
    // two whose flows leave the VL-0 chain do (g7 -> g8 arrives where the
    // outgoing flows use VL 1, g8 -> g0 is on VL 1); upstream each group
    // keeps about a quarter of the next one's rate
    close(
        &next_group_links(&r),
        &[
            0.0115, 0.0115, 0.0115, 0.0142, 0.0257, 0.0721, 0.2591, 0.9999, 0.9999,
        ],
    );
    let silent = r["sinks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["bytes_arrived_after_start"] == 0)
        .count();
    assert_eq!(silent, 28);

    let st = &r["stall"];
    assert_eq!(st["deadlock"], false);
    assert_eq!(st["window_ps"], 200_000_000u64);
    assert_eq!(st["at_ps"], 2_000_000_000u64);
    assert_eq!(st["messages_pending"], 75);
    assert_eq!(st["messages_stalled"], 40);
    assert_eq!(st["destinations_stalled"], 40);
    assert_eq!(st["since_ps"], 10_095_400u64);
    let first = &st["messages"][0];
    assert_eq!(first["src"], "H_1");
    assert_eq!(first["dst"], "H_9");
    assert_eq!(first["packets_consumed"], 2);
    assert_eq!(first["packets"], 61);
    assert_eq!(first["since_ps"], 10_095_400u64);
    // the stalled flows are those into groups 1..5, and H_72 -> H_8
    let mut dsts: Vec<u64> = st["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["dst"].as_str().unwrap()[2..].parse().unwrap())
        .collect();
    dsts.sort();
    let mut want: Vec<u64> = std::iter::once(8).chain(9..=40).chain(42..=48).collect();
    want.sort();
    assert_eq!(dsts, want);
    // the global cables out of groups 0..6 hold packets they have no
    // credits for, 850 flits each
    assert_eq!(st["blocked_ports_total"], 104);
    for g in 0..7 {
        let b = &st["blocked_ports"][g];
        assert_eq!(b["node"], format!("g{g}_r0").as_str());
        assert_eq!(b["port"], 5);
        assert_eq!(b["peer"], format!("g{}_r3[6]", g + 1).as_str());
        assert_eq!(b["vl"], 0);
        assert_eq!(b["flits_waiting"], 850);
        assert_eq!(b["head_packet_flits"], 34);
        assert_eq!(b["credits"], 30);
    }

    // the text summary says the same
    let mut a = vec!["run"];
    a.extend_from_slice(&base);
    let (code, out, _) = ibnet(&a);
    assert_eq!(code, 0);
    let line = out.lines().find(|l| l.starts_with("stalled:")).expect(&out);
    assert!(
        line.starts_with(
            "stalled: 40 of 75 pending messages made no progress in the last 200.000 us of the run \
            (to 2000.000 us), toward 40 destinations, the longest since 10.095 us: H_1 -> H_9 \
            since 10.095 us (2 of 61 packets), "
        ),
        "{line}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("credit-blocked:"))
        .expect(&out);
    assert!(
        line.starts_with(
            "credit-blocked: 104 output ports hold a packet without credits for it: g0_r0[5] -> \
            g1_r3[6] VL 0 (850 flits waiting, head packet 34 flits, 30 credits), "
        ),
        "{line}"
    );
}

#[test]
fn chain_broken_at_one_group_restarts_the_cascade() {
    // shift:8 with group 4 silent: nothing leaves group 4, so the flows
    // arriving there are not held behind outgoing ones: g3 -> g4 runs at
    // 100 % and the cascade starts again below it with the same ratios
    let t = param(|i| (i / 8 != 4).then_some((i + 8) % 72));
    let r = run_json(&[
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--traffic",
        &t,
        "--until",
        "2ms",
    ]);
    close(
        &next_group_links(&r),
        &[
            0.0257, 0.0721, 0.2591, 0.9999, 0.0, 0.0721, 0.2591, 0.9999, 0.9999,
        ],
    );
}

#[test]
fn no_arrivals_behind_departures_every_cable_full_and_no_stall() {
    // the same load per cable (8 hosts of a group to the next group), but
    // no destination on router 0, whose global port leads on: arrivals
    // never share a local link and VL with the group's own departures.
    // Every global cable runs at 100 %, the minimal-routing bound
    let t = param(|i| Some(((i / 8 + 1) % 9) * 8 + 2 + (i % 8) % 6));
    let args = [
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--traffic",
        &t,
        "--until",
        "2ms",
    ];
    let r = run_json(&args);
    close(&next_group_links(&r), &[0.9999; 9]);
    assert!(r.get("stall").is_none(), "{}", r["stall"]);
    let mut a = vec!["run"];
    a.extend_from_slice(&args);
    let (code, out, _) = ibnet(&a);
    assert_eq!(code, 0);
    assert!(
        !out.contains("stalled:") && !out.contains("credit-blocked:"),
        "{out}"
    );
}

#[test]
fn flowing_runs_have_no_stall_line() {
    for (topo, traffic) in [
        (DF, "shift:1"),
        ("dragonfly:4:2:2:9,routing=valiant", "shift:1"),
        ("fattree:16", "shift:5"),
        ("torus:4x4", "shift:5"),
    ] {
        let r = run_json(&[
            "--topology",
            topo,
            "--set",
            "max_vl=3",
            "--traffic",
            traffic,
            "--until",
            "2ms",
        ]);
        assert!(r.get("stall").is_none(), "{topo} {traffic}: {}", r["stall"]);
        assert!(
            r["messages_completed"].as_u64().unwrap() > 100,
            "{topo} {traffic}"
        );
    }
}

#[test]
fn valiant_relieves_most_of_it() {
    let r = run_json(&words(
        "--topology dragonfly:4:2:2:9,routing=valiant --set max_vl=3 --traffic shift:8 --until 2ms",
    ));
    assert_eq!(r["messages_completed"], 617);
    assert_eq!(r["messages_injected"], 707);
    assert_eq!(r["stall"]["messages_stalled"], 5);
    assert_eq!(r["stall"]["messages"][0]["src"], "H_7");
    assert_eq!(r["stall"]["messages"][0]["dst"], "H_15");
    assert_eq!(r["stall"]["messages"][0]["packets_consumed"], 0);
}

#[test]
fn shared_round_robin_pointer_starves_one_host_behind_another_vl() {
    // In group 8, router 3's link to router 0 carries H_71 and H_72 on
    // VL 1 (to group 0) and, with shift:8, group 7's arrivals for router
    // 0's hosts on VL 0. The arbiters' round-robin pointer is shared by
    // the VLs (the reference's table arbitration): after each VL-0 packet
    // from input 6 the VL-1 scan starts at input 0, so H_71 always wins
    let r = run_json(&[
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--traffic",
        "shift:8",
        "--until",
        "2ms",
    ]);
    assert!((sink_mbps(&r, "H_7") - 399.0).abs() < 1.0);
    assert_eq!(sink_mbps(&r, "H_8"), 0.0);
    // without group 7's traffic the two share fairly
    let t = param(|i| (i / 8 != 7).then_some((i + 8) % 72));
    let r = run_json(&[
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--traffic",
        &t,
        "--until",
        "2ms",
    ]);
    assert!(
        (sink_mbps(&r, "H_7") - 200.0).abs() < 3.0,
        "{}",
        sink_mbps(&r, "H_7")
    );
    assert!(
        (sink_mbps(&r, "H_8") - 200.0).abs() < 3.0,
        "{}",
        sink_mbps(&r, "H_8")
    );
}

/// A linear all-to-all of 64 KiB among H_1..H_64 as destination
/// sequences (one message at a time per HCA, as the co-simulation's
/// single send queue hands them over): HCA r sends to r+1, r+2, ...
fn alltoall_files(dir: &std::path::Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let mut seq = String::new();
    let mut ini = String::new();
    for r in 0..64 {
        let d: Vec<String> = (1..64).map(|i| ((r + i) % 64 + 1).to_string()).collect();
        seq += &format!("{r}: {}\n", d.join(" "));
        ini += &format!("**H_{}.gen.dstSeqIndex = {r}\n", r + 1);
    }
    let p = dir.join("a2a.dstSeq");
    std::fs::write(&p, seq).unwrap();
    std::fs::write(dir.join("a2a.dstSeq.ini"), ini).unwrap();
    format!("seq_once:{}", p.display())
}

#[test]
fn alltoall_stalls_group_by_group() {
    let dir = std::env::temp_dir().join(format!("ibnet-stall-a2a-{}", std::process::id()));
    let t = alltoall_files(&dir);
    let r = run_json(&[
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--set",
        "msg_length=65536",
        "--traffic",
        &t,
        "--until",
        "4ms",
    ]);
    assert_eq!(r["messages_completed"], 755);
    let st = &r["stall"];
    assert_eq!(st["messages_pending"], 77);
    assert_eq!(st["messages_stalled"], 28);
    let m = &st["messages"][0];
    assert_eq!(
        (m["src"].as_str(), m["dst"].as_str()),
        (Some("H_8"), Some("H_9"))
    );
    assert_eq!(m["packets_consumed"], 17);
    assert_eq!(m["since_ps"], 39_579_400u64);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[cfg_attr(
    not(optimized),
    ignore = "slow unoptimised: 29 ms of a 64-rank all-to-all (about 5 s optimised)"
)]
fn alltoall_completes_at_29_ms_without_a_stall() {
    let dir = std::env::temp_dir().join(format!("ibnet-stall-a2a-full-{}", std::process::id()));
    let t = alltoall_files(&dir);
    let r = run_json(&[
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--set",
        "msg_length=65536",
        "--traffic",
        &t,
        "--until",
        "100ms",
    ]);
    assert_eq!(r["messages_completed"], 4032);
    let last = r["sinks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["time_last_packet_consumed_ps"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(last, 29_236_349_400);
    assert!(r.get("stall").is_none());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn deadlock_is_reported_as_a_stall_of_every_pending_message() {
    let (code, out, err) = ibnet(&words(
        "run --topology torus:8,vls=one --traffic dissemination:16384:3 --json --no-wall-time",
    ));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("deadlock: 8 messages can never complete"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let st = &v["report"]["stall"];
    assert_eq!(st["deadlock"], true);
    assert_eq!(st["messages_pending"], 8);
    assert_eq!(st["messages_stalled"], 8);
    assert_eq!(st["since_ps"], 34_847_400u64);
    // the credit loop: every ring cable + of the 8 switches
    assert_eq!(st["blocked_ports_total"], 8);
    let mut ring: Vec<(String, String)> = st["blocked_ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert_eq!(b["port"], 1);
            (
                b["node"].as_str().unwrap().into(),
                b["peer"].as_str().unwrap().into(),
            )
        })
        .collect();
    ring.sort();
    let want: Vec<(String, String)> = (0..8)
        .map(|i| (format!("sw_{i}"), format!("sw_{}[2]", (i + 1) % 8)))
        .collect();
    assert_eq!(ring, want);
}

#[test]
fn dragonfly_minimal_on_one_vl_is_refused() {
    let (code, out, err) = ibnet(&[
        "run",
        "--topology",
        DF,
        "--traffic",
        "shift:8",
        "--until",
        "20us",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("dragonfly:4:2:2:9: its routing needs 2 VLs for deadlock freedom")
            && err.contains("max_vl = 0 (1 VL)")
            && err.contains("give --set max_vl=1"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn per_vl_round_robin_pointer_ends_that_starvation() {
    // vl_arb_rr_per_vl = true: each VL's round robin starts after the
    // input it last served; H_71 and H_72 share router 3's VL-1 turns
    let on = ["--set", "vl_arb_rr_per_vl=true"];
    let mut a = vec![
        "--topology",
        DF,
        "--set",
        "max_vl=1",
        "--traffic",
        "shift:8",
        "--until",
        "2ms",
    ];
    a.extend_from_slice(&on);
    let r = run_json(&a);
    assert!(
        (sink_mbps(&r, "H_7") - 201.0).abs() < 2.0,
        "{}",
        sink_mbps(&r, "H_7")
    );
    assert!(
        (sink_mbps(&r, "H_8") - 198.0).abs() < 2.0,
        "{}",
        sink_mbps(&r, "H_8")
    );
    // the head-of-line cascade is not the arbiter's doing: unchanged
    assert_eq!(r["messages_completed"], 59);
    assert_eq!(r["stall"]["messages_stalled"], 39);
    close(
        &next_group_links(&r),
        &[
            0.0115, 0.0115, 0.0115, 0.0142, 0.0257, 0.0721, 0.2591, 0.9999, 0.9999,
        ],
    );
    // Valiant with it: every flow advances, no sink below 100 MB/s
    let mut a = vec![
        "--topology",
        "dragonfly:4:2:2:9,routing=valiant",
        "--set",
        "max_vl=3",
        "--traffic",
        "shift:8",
        "--until",
        "2ms",
    ];
    a.extend_from_slice(&on);
    let r = run_json(&a);
    assert!(r.get("stall").is_none(), "{}", r["stall"]);
    assert_eq!(r["messages_completed"], 632);
    let min = r["sinks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sink_bw_mbps"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert!(min > 100.0, "{min}");
}

#[test]
fn per_vl_pointer_is_reported_only_when_on() {
    let args = words("run --topology H8_S1 --traffic shift:1 --until 20us --json --no-wall-time");
    let (code, out, _) = ibnet(&args);
    assert_eq!(code, 0);
    assert!(!out.contains("vl_arb_rr_per_vl"));
    let mut a = args.to_vec();
    a.extend_from_slice(&["--set", "vl_arb_rr_per_vl=true"]);
    let (code, out, _) = ibnet(&a);
    assert_eq!(code, 0);
    assert!(out.contains("\"vl_arb_rr_per_vl\": true"), "{out}");
    let (code, _, err) = ibnet(&words(
        "run --topology H8_S1 --traffic shift:1 --set vl_arb_rr_per_vl=2",
    ));
    assert_eq!(code, 2);
    assert!(
        err.contains("vl_arb_rr_per_vl") && err.contains("wrong type"),
        "{err}"
    );
}
