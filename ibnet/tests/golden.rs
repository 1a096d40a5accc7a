//! Golden reports: the full `ibnet run --json --latencies --no-wall-time`
//! output of fixed scenarios, compared byte for byte with files committed
//! under `tests/golden/` (the engine may be restructured and sped up, but
//! every reported number, per-message timing included, must stay
//! picosecond-identical).
//!
//! `--no-wall-time` leaves the only non-deterministic fields (wall time,
//! events per second) out, so no normalisation is needed. The 32-node
//! reference scenarios read the GPL data from `../shared` at test time and
//! run with that directory as the working directory, so the paths in the
//! report (`topology`, `traffic`) are the bare file names and the golden
//! files do not depend on where the checkout lives.
//!
//! To regenerate after an intended change of the output (never to make a
//! number come out): `IBNET_BLESS=1 cargo test -p ibnet --test golden`; the
//! blessing run fails on purpose so that it cannot pass by accident, then
//! review the diff of `tests/golden/` before committing.

use std::path::{Path, PathBuf};
use std::process::Command;

const DATA32: &str = concat!(env!("IBCOSIM_REFERENCE_DATA_DIR"), "/ibmodel-32n");

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"))
}

/// One `ibnet run` at a time: a parallel run's threads wait for each
/// other at every generation, and a concurrent run taking their cores
/// makes them wait for the scheduler (minutes instead of seconds).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `ibnet run ARGS --json --latencies --no-wall-time` in `cwd` (ARGS
/// the words of `args`) and compares stdout with the golden file `name`.
fn check(name: &str, cwd: &Path, args: &str) {
    let guard = one_at_a_time();
    let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .current_dir(cwd)
        .arg("run")
        .args(args.split_whitespace())
        .args(["--json", "--latencies", "--no-wall-time"])
        .output()
        .expect("run ibnet");
    drop(guard);
    assert!(
        out.status.success(),
        "{name}: ibnet exited with {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).expect("UTF-8 report");
    let path = golden_path(name);
    if std::env::var_os("IBNET_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        panic!(
            "{name}: golden file {} regenerated (IBNET_BLESS); review the diff and rerun without IBNET_BLESS",
            path.display()
        );
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{name}: golden file {}: {e}", path.display()));
    if got != want {
        // name the first differing line, with the JSON path context
        let (gl, wl): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
        let i = gl
            .iter()
            .zip(&wl)
            .position(|(a, b)| a != b)
            .unwrap_or(gl.len().min(wl.len()));
        let from = i.saturating_sub(6);
        panic!(
            "{name}: report differs from {} at line {} (got {} lines, golden {}):\n--- golden\n{}\n--- got\n{}",
            path.display(),
            i + 1,
            gl.len(),
            wl.len(),
            wl[from..(i + 1).min(wl.len())].join("\n"),
            gl[from..(i + 1).min(gl.len())].join("\n"),
        );
    }
    // a golden that is empty or holds no messages would not test anything
    assert!(
        want.contains("\"messages\"") && want.len() > 1000,
        "{name}: golden too small"
    );
}

fn data32() -> &'static Path {
    let d = Path::new(DATA32);
    // A test that did not run must not pass.
    assert!(
        d.join("is1_3l_32n.topo").exists(),
        "the reference data {DATA32} is missing: this test needs ../shared beside the checkout"
    );
    d
}

fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The reference's 32-node OneHot run, 2 ms (sec. 11 cases 5 and 6).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn golden_onehot_2ms() {
    check(
        "onehot_2ms",
        data32(),
        "--preset qdr --topology is1_3l_32n.topo --traffic seq_loop:32n_1hot.dstSeq --until 2ms",
    );
}

/// The same network with TwoHot destination sequences, 2 ms.
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn golden_twohot_2ms() {
    check(
        "twohot_2ms",
        data32(),
        "--preset qdr --topology is1_3l_32n.topo --traffic seq_loop:32n_2hot.dstSeq --until 2ms",
    );
}

/// Incast: seven senders stream to H_8 through one switch (credit
/// back-pressure, VL arbitration over 7 inputs, sink saturation).
#[test]
fn golden_incast() {
    check(
        "incast",
        here(),
        "--preset qdr --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us",
    );
}

/// The same incast with congestion control (sec. 12, preset hcyang99):
/// FECN marking, CNPs, CCT back-off.
#[test]
fn golden_incast_cc() {
    check(
        "incast_cc",
        here(),
        "--preset hcyang99 --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us",
    );
}

/// Multi-packet messages (sec. 11 cases 2 to 4): 400000 B at MTU 1600 =
/// 250 packets of 25 flits, back to back over one switch, 1 ms.
#[test]
fn golden_multipacket() {
    check(
        "multipacket",
        here(),
        "--preset qdr --topology chain:1 --set msg_length=400000 --set msg_mtu=1600 --traffic param:1=2 --until 1ms",
    );
}

/// A closed loop through the injection API (dissemination barrier, 10
/// rounds, thesis preset) on the 8-host fat tree: run_until_completion.
#[test]
fn golden_dissemination() {
    check(
        "dissemination",
        here(),
        "--preset thesis-ddr --topology H8_S6 --set start_stat_col_ns=0 --traffic dissemination:1024:10",
    );
}

// ---- the local event order (docs/scaling.md 1.7) --------------------------
//
// Its own golden reports where it differs from the reference's order, and
// the reference's reports (but for the parameter naming the order) where
// it does not: a parallel engine on this order must reproduce both.

/// OneHot in the local order: 406 numbers of the report differ from the
/// reference order's (ibuf free-credit statistics), no flit or message.
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn golden_onehot_2ms_local_order() {
    check(
        "onehot_2ms_local",
        data32(),
        "--preset qdr --topology is1_3l_32n.topo --traffic seq_loop:32n_1hot.dstSeq --until 2ms --set event_order=local",
    );
}

/// TwoHot in the local order.
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn golden_twohot_2ms_local_order() {
    check(
        "twohot_2ms_local",
        data32(),
        "--preset qdr --topology is1_3l_32n.topo --traffic seq_loop:32n_2hot.dstSeq --until 2ms --set event_order=local",
    );
}

/// A 4x4 torus with four VLs (dateline routing, table arbitration, the
/// thesis-era preset), in both orders: they differ in a few free-credit
/// statistics of its ibufs. The local order also on 2 and 3 threads.
#[test]
fn golden_torus_both_orders() {
    let args =
        "--preset thesis-ddr --topology torus:4x4 --set max_vl=3 --traffic shift:1 --until 50us";
    check("torus_4x4", here(), args);
    check(
        "torus_4x4_local",
        here(),
        &format!("{args} --set event_order=local"),
    );
    // the parallel engine gives the bytes of either order
    // (engine/parallel.rs, engine/parallel_fifo.rs)
    for n in [2, 3] {
        check("torus_4x4", here(), &format!("{args} --threads {n}"));
        check(
            "torus_4x4_local",
            here(),
            &format!("{args} --set event_order=local --threads {n}"),
        );
    }
}

/// Where the local order takes no cross tie differently, its report is
/// the reference order's golden one but for the parameter that names it.
#[test]
fn local_order_equals_the_reference_order_on_the_small_goldens() {
    for (name, args) in [
        ("incast", "--preset qdr --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us"),
        ("incast_cc", "--preset hcyang99 --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us"),
        ("multipacket", "--preset qdr --topology chain:1 --set msg_length=400000 --set msg_mtu=1600 --traffic param:1=2 --until 1ms"),
    ] {
        let guard = one_at_a_time();
        let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
            .current_dir(here())
            .arg("run")
            .args(args.split_whitespace())
            .args(["--set", "event_order=local", "--json", "--latencies", "--no-wall-time"])
            .output()
            .expect("run ibnet");
        drop(guard);
        assert!(out.status.success(), "{name}");
        let got = String::from_utf8(out.stdout).unwrap();
        let line = "    \"event_order\": \"local\",\n";
        assert!(got.contains(line), "{name}: the report names the order");
        let want = std::fs::read_to_string(golden_path(name)).unwrap();
        assert!(got.replacen(line, "", 1) == want, "{name}: the local order's report differs");
    }
}

/// The parallel engine in the reference's order reproduces the small
/// goldens byte for byte on 2 and 3 processes.
#[test]
fn parallel_runs_reproduce_the_small_goldens() {
    for (name, args) in [
        ("incast", "--preset qdr --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us"),
        ("incast_cc", "--preset hcyang99 --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us"),
        ("multipacket", "--preset qdr --topology chain:1 --set msg_length=400000 --set msg_mtu=1600 --traffic param:1=2 --until 1ms"),
    ] {
        for n in [2, 3] {
            check(name, here(), &format!("{args} --threads {n}"));
        }
    }
}

/// OneHot, where the local order differs from the reference's (406
/// report numbers at 2 ms): the parallel engine in the reference's order
/// gives the sequential report on two and three processes (200 us here;
/// the 2 ms golden report too, docs/scaling.md 2.7, in minutes).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn onehot_on_two_and_three_processes_equals_one() {
    let run = |extra: &[&str]| {
        let _guard = one_at_a_time();
        let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
            .current_dir(data32())
            .args(
                "run --preset qdr --topology is1_3l_32n.topo --traffic seq_loop:32n_1hot.dstSeq --until 200us --json --latencies --no-wall-time"
                    .split_whitespace(),
            )
            .args(extra)
            .output()
            .expect("run ibnet");
        assert!(out.status.success(), "{extra:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let one = run(&[]);
    assert!(one.contains("\"messages_completed\""));
    for n in ["2", "3"] {
        assert!(
            run(&["--threads", n]) == one,
            "--threads {n}: the report differs"
        );
    }
}
