//! `ibnet run` observers: windowed link statistics, message records, the
//! flit trace and the heat map (src/observe.rs). Checked against the
//! hand-derived case 1 of ibfabric.md section 11 and against the run's own
//! end-of-run report; observing must not change the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ibnet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .args(args)
        .output()
        .expect("run ibnet")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibnet-observe-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Rows of a CSV file as maps column -> value (the files are plain: no
/// quoted fields in these topologies).
fn rows(p: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            assert_eq!(v.len(), head.len(), "{l}");
            head.iter()
                .cloned()
                .zip(v.iter().map(|s| s.to_string()))
                .collect()
        })
        .collect()
}

fn num(r: &std::collections::HashMap<String, String>, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k} = {:?}", r[k]))
}

/// Case 1 (one 64-byte flit over one switch, qdr): injected at 17 ns, at
/// H_2 at 117 ns, consumed at 136.693 ns; one switch on the route.
#[test]
fn message_records_match_the_hand_derived_case() {
    let m = tmp("case1-messages.csv");
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--preset",
        "qdr",
        "--traffic",
        "chain:64:1",
        "--messages-csv",
        m.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = rows(&m);
    assert_eq!(r.len(), 2);
    for row in &r {
        assert_eq!(num(row, "bytes"), 64);
        assert_eq!(num(row, "first_flit_ps"), 17_000);
        assert_eq!(num(row, "completed_ps"), 136_693);
        assert_eq!(num(row, "network_latency_ps"), 100_000);
        assert_eq!(num(row, "latency_ps"), 136_693 - num(row, "injected_ps"));
        assert_eq!(num(row, "switch_hops"), 1);
    }
    assert_eq!(r[0]["src"], "H_1");
    assert_eq!(r[0]["dst"], "H_2");
}

/// The trace of case 1: H_1 injects at 1 ns (stamp 17 ns), sends at 17 ns;
/// the switch forwards at 117 ns; H_2 consumes at 136.693 ns. The node
/// filter keeps H_1 only, the time filter drops what is after 50 ns.
#[test]
fn trace_has_the_checkpoints_and_honours_the_filters() {
    let t = tmp("case1-trace.csv");
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--preset",
        "qdr",
        "--traffic",
        "chain:64:1",
        "--trace",
        t.to_str().unwrap(),
        "--window",
        "20ns",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = rows(&t);
    let find = |kind: &str, node: &str, msg: u64| {
        all.iter()
            .find(|r| r["kind"] == kind && r["node"] == node && num(r, "msg") == msg)
            .map(|r| num(r, "t_ps"))
    };
    assert_eq!(find("Send", "H_1", 0), Some(17_000));
    assert_eq!(find("Recv", "H_2", 0), Some(117_000));
    assert_eq!(find("Consume", "H_2", 0), Some(136_693));
    // sorted by time, as the engine produced them
    let times: Vec<u64> = all.iter().map(|r| num(r, "t_ps")).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));

    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--preset",
        "qdr",
        "--traffic",
        "chain:64:1",
        "--trace",
        t.to_str().unwrap(),
        "--trace-nodes",
        "H_1",
        "--trace-until",
        "50ns",
    ]);
    assert!(o.status.success());
    let some = rows(&t);
    assert!(!some.is_empty());
    assert!(some
        .iter()
        .all(|r| r["node"] == "H_1" && num(r, "t_ps") <= 50_000));
    assert!(some.iter().any(|r| r["kind"] == "Send"));
}

/// Windowed link rows add up to the end-of-run report, and observing (in
/// windows) leaves the report byte for byte unchanged, closed and open loop.
#[test]
fn link_windows_add_up_and_do_not_change_the_run() {
    for (topo, traffic, extra) in [
        ("fattree:16", "chain:1000:20", vec![]),
        ("H8_S6", "shift:1", vec!["--until", "30us"]),
    ] {
        let mut base = vec![
            "run",
            "--topology",
            topo,
            "--traffic",
            traffic,
            "--json",
            "--no-wall-time",
        ];
        base.extend(extra.iter().copied());
        let plain = ibnet(&base);
        assert!(
            plain.status.success(),
            "{}",
            String::from_utf8_lossy(&plain.stderr)
        );
        let l = tmp(&format!("links-{}.csv", topo.replace(':', "_")));
        let h = tmp(&format!("heat-{}.svg", topo.replace(':', "_")));
        let mut obs = base.clone();
        obs.extend([
            "--link-stats",
            l.to_str().unwrap(),
            "--window",
            "700ns",
            "--heatmap",
            h.to_str().unwrap(),
        ]);
        let observed = ibnet(&obs);
        assert!(observed.status.success());
        assert_eq!(
            plain.stdout, observed.stdout,
            "{topo}: observing changed the run"
        );

        let v: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
        let end = v["run"]["sim_time_ps"].as_u64().unwrap();
        let r = rows(&l);
        let mut flits = std::collections::HashMap::<String, u64>::new();
        let mut busy = std::collections::HashMap::<String, u64>::new();
        for row in &r {
            let (s, e) = (num(row, "window_start_ps"), num(row, "window_end_ps"));
            assert!(e > s && e <= end);
            assert!(e - s <= 700_000);
            *flits.entry(row["link"].clone()).or_default() += num(row, "data_flits");
            *busy.entry(row["link"].clone()).or_default() += num(row, "busy_ps");
            // A transmission counts where it starts: at most one flit time
            // (32 ns at thesis-era DDR) over the window above 1.
            let u: f64 = row["utilisation"].parse().unwrap();
            assert!((0.0..=1.0 + 32_000.0 / (e - s) as f64).contains(&u), "{u}");
        }
        let last = r.iter().map(|row| num(row, "window_end_ps")).max().unwrap();
        assert_eq!(last, end, "{topo}: the last window ends with the run");
        for o in v["report"]["obufs"].as_array().unwrap() {
            let link = format!("{}[{}]", o["node"].as_str().unwrap(), o["port"]);
            assert_eq!(
                flits[&link],
                o["data_flits_sent"].as_u64().unwrap(),
                "{link}"
            );
            assert_eq!(busy[&link], o["busy_ps"].as_u64().unwrap(), "{link}");
        }
        let svg = std::fs::read_to_string(&h).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("<rect"), "a busy run draws cells");
    }
}

#[test]
fn bad_observer_options_are_clear_errors() {
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--traffic",
        "chain:64:1",
        "--trace",
        "/tmp/x.csv",
        "--trace-nodes",
        "H_99",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no node named 'H_99'"));
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--traffic",
        "chain:64:1",
        "--link-stats",
        "/tmp/x.csv",
        "--window",
        "0ps",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--window"));
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--traffic",
        "chain:64:1",
        "--link-stats",
        "/nonexistent-dir/x.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir/x.csv"));
}
