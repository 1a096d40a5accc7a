//! From an MPI program to a prediction (issue 18): `scripts/predict` (trace
//! once, simulate many; robust computation estimate across runs; one table
//! or JSON with the fabric's summary) and the smaller defects of
//! `scripts/trace-and-simulate`.
//!
//! The prediction arithmetic is checked on hand-written traces (no MPI run,
//! exact values); one test runs a real program (examples/halo.c, 2 ranks,
//! twice) and one the thesis's ltest through trace-and-simulate.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::tracer::{require_mpi_lib, thesis_program, tracer_library, MPI_RUNS};
use crate::util::{bin, repo_root, run, stderr, stdout};

fn predict() -> Command {
    let mut c = Command::new(repo_root().join("scripts/predict"));
    c.env("LOGGOPSIM", bin("loggopsim"))
        .env("MPI_TRACER", bin("mpi-tracer"));
    c
}

/// A two-rank trace: rank 0 computes `g0` us, sends 60000 B to rank 1 (the
/// call takes 30 us here), computes `g1` us; rank 1 computes `h0` us,
/// receives until 140 us after MPI_Init, computes `h1` us.
fn write_run(dir: &Path, g0: u64, g1: u64, h0: u64, h1: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let t0 = 1000;
    std::fs::write(
        dir.join("pmpi-trace-rank-0.txt"),
        format!(
            "# clockdiff: 0.000000 s (relative to rank 0)\nMPI_Init:-:1:2:{t0}\n\
             MPI_Send:{}:4096:7500:1,8,8:1:0:0,0,2:{}\nMPI_Finalize:{}:-\n",
            t0 + g0,
            t0 + g0 + 30,
            t0 + g0 + 30 + g1
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("pmpi-trace-rank-1.txt"),
        format!(
            "# clockdiff: 0.000000 s (relative to rank 0)\nMPI_Init:-:1:2:{t0}\n\
             MPI_Recv:{}:4096:7500:1,8,8:0:0:0,0,2:6000:{}\nMPI_Finalize:{}:-\n",
            t0 + h0,
            t0 + 140,
            t0 + 140 + h1
        ),
    )
    .unwrap();
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

/// Three runs of the same program with different computation: per-burst
/// minimum (and median) across runs, then the LogGP backend of H8_S1 on
/// thesis-ddr: L = 1 switch x (ISW 50 ns + VSW 50 ns) = 100 ns, G = 1 / (2
/// GB/s) = 500 ps/B, o = g = O = 0.
///
/// min: rank 0 computes 80 + 50 = 130 us and sends at 80 us (o = 0: done at
/// once), so it finishes at 130 us. Rank 1 posts its receive at min(10, 20,
/// 15) = 10 us; the 60000-B message (eager: below S = 65535) arrives at 80
/// + 0.1 + 59999 x 0.0005 = 110.0995 us, then min(10, 5, 30) = 5 us: 115.0995.
/// median: rank 0 90 + 60 = 150 us; rank 1 90 + 0.1 + 29.9995 + 10 = 130.0995.
/// "This machine" is each trace's MPI_Finalize - MPI_Init: rank 0 180 us in
/// every run, rank 1 150, 145, 170 us (median 150).
#[test]
fn predict_combines_runs_per_burst_and_simulates_every_target() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [(100, 50, 10, 10), (80, 70, 20, 5), (90, 60, 15, 30)];
    let mut args = Vec::new();
    for (k, &(a, b, c, d)) in runs.iter().enumerate() {
        let p = dir.path().join(format!("run-{k}"));
        write_run(&p, a, b, c, d);
        args.push("--traces".to_string());
        args.push(p.display().to_string());
    }
    for (estimate, r0, r1, comp1) in [
        ("min", 130.0, 115.0995, 15.0),
        ("median", 150.0, 130.0995, 25.0),
    ] {
        let work = dir.path().join(format!("work-{estimate}"));
        let out = run(predict()
            .args(&args)
            .args(["--estimate", estimate, "--json", "--work"])
            .arg(&work)
            .args(["--target", "H8_S1:thesis-ddr", "--target", "H8_S1:qdr"])
            .args(["--backend", "loggp", "--backend", "onepiece"]));
        assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
        let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        assert_eq!(v["runs"], 3);
        assert_eq!(v["ranks"], 2);
        let comp = &v["computation_us_per_rank"];
        assert!(close(comp["estimate"][0].as_f64().unwrap(), r0), "{comp}");
        assert!(
            close(comp["estimate"][1].as_f64().unwrap(), comp1),
            "{comp}"
        );
        assert_eq!(comp["per_run"][1][0], 150.0); // 80 + 70
        let here = &v["this_machine"];
        assert_eq!(here["run_time_us_per_rank"][0], 180.0);
        assert_eq!(here["run_time_us_per_rank"][1], 150.0);
        assert_eq!(here["run_time_us_per_rank_max"][1], 170.0);
        assert!(here["note"].as_str().unwrap().contains("not a prediction"));
        let rows = v["predictions"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "2 targets x 2 backends");
        let row = |t: &str, b: &str| {
            rows.iter()
                .find(|r| r["target"] == t && r["backend"] == b)
                .unwrap_or_else(|| panic!("no row {t} {b}"))
        };
        let ddr = row("H8_S1:thesis-ddr", "loggp");
        assert_eq!(ddr["loggp_ps"]["L"], 100_000);
        assert_eq!(ddr["loggp_ps"]["G"], 500);
        let t = ddr["time_us_per_rank"].as_array().unwrap();
        assert!(close(t[0].as_f64().unwrap(), r0), "{ddr}");
        assert!(close(t[1].as_f64().unwrap(), r1), "{ddr}");
        // QDR: G = 250 ps/B, the message arrives 15 us earlier.
        let qdr = row("H8_S1:qdr", "loggp");
        assert_eq!(qdr["loggp_ps"]["G"], 250);
        let tq = qdr["time_us_per_rank"][1].as_f64().unwrap();
        assert!(close(tq, r1 - 59_999.0 * 0.00025), "{qdr}");
        // The flit-level fabric: one message; its latency (insert to last
        // flit consumed) is set by the slowest per-byte stage: on thesis-ddr
        // the sink's 0.525 ns/B (60000 B: 31.5 us; the wire's 0.5 ns/B is
        // faster), on qdr the generator's 0.3077 ns/B (18.462 us; the wire
        // needs 0.25 ns/B), plus a few 100 ns of pipeline and switch.
        for (t, wire) in [("H8_S1:thesis-ddr", 31.5), ("H8_S1:qdr", 18.462)] {
            let f = &row(t, "onepiece")["fabric"];
            assert_eq!(f["messages"], 1, "{f}");
            let p50 = f["message_latency_us"]["p50"].as_f64().unwrap();
            assert!(p50 >= wire && p50 < 1.05 * wire, "{t}: latency {p50} us");
            assert!(f["busiest_ports"][0]["utilisation"].as_f64().unwrap() > 0.0);
            assert_eq!(
                f["ports_used"], 2,
                "{t}: H_1 -> SW_1 -> H_2 carry data: {f}"
            );
        }
    }
    // The table: one row per target x backend and this machine, labelled.
    // Run 0 alone: rank 1 receives at 100 + 0.1 + 29.9995 us, then 10 us.
    let out = run(predict().args(&args[..2]).args([
        "--target",
        "H8_S1:thesis-ddr",
        "--backend",
        "loggp",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("target") && lines[1].contains("rank 1 [us]"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("H8_S1:thesis-ddr") && lines[2].contains("140.1"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("this machine (not a prediction)"),
        "{text}"
    );
}

/// Runs whose MPI calls differ cannot be combined: say where (exit 1), and
/// bad options exit 2 naming the problem.
#[test]
fn predict_rejects_different_runs_and_bad_options() {
    let dir = tempfile::tempdir().unwrap();
    write_run(&dir.path().join("a"), 100, 50, 10, 10);
    write_run(&dir.path().join("b"), 100, 50, 10, 10);
    // run b's rank 1 receives 8 bytes more.
    let f = dir.path().join("b/pmpi-trace-rank-1.txt");
    let t = std::fs::read_to_string(&f)
        .unwrap()
        .replace(":7500:", ":7501:");
    std::fs::write(&f, t).unwrap();
    let out = run(predict()
        .arg("--traces")
        .arg(dir.path().join("a"))
        .arg("--traces")
        .arg(dir.path().join("b"))
        .args(["--backend", "loggp"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("recv 60008b from 0")
            && stderr(&out).contains("the runs made different MPI calls"),
        "{}",
        stderr(&out)
    );
    for (args, msg) in [
        (vec!["--target", "H8_S1:ddr5"], "unknown preset 'ddr5'"),
        (vec!["--backend", "ns3"], "unknown --backend 'ns3'"),
        (vec!["--estimate", "mean"], "unknown --estimate 'mean'"),
        (vec!["--repeat", "0"], "--repeat must be a positive integer"),
        (
            vec!["--method", "durations", "--traces", "/nonexistent"],
            "/nonexistent: no pmpi-trace-rank-0.txt",
        ),
        (vec!["prog.c"], "NP is missing"),
    ] {
        let out = run(predict().args(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(msg), "{args:?}: {}", stderr(&out));
    }
    // durations on a target without an analytic link model: the row says
    // why instead of a number (and nothing else to simulate: exit 1).
    let out = run(predict().arg("--traces").arg(dir.path().join("a")).args([
        "--method",
        "durations",
        "--target",
        "H8_S1:qdr",
    ]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no analytic link model for preset 'qdr'")
            && stderr(&out).contains("use --method gaps"),
        "{}",
        stderr(&out)
    );
}

/// durations-sync cannot combine runs per burst (its synchronisation calcs
/// depend on each run's timing, so the schedules differ in shape): predict
/// uses the run whose time here is the median and says so. Run times here
/// (max over ranks): a 180 us, b 210 us, c 190 us: the median is run 3 (c).
#[test]
fn predict_durations_sync_uses_the_median_run() {
    let dir = tempfile::tempdir().unwrap();
    write_run(&dir.path().join("a"), 100, 50, 10, 10);
    write_run(&dir.path().join("b"), 100, 80, 10, 10);
    write_run(&dir.path().join("c"), 100, 60, 10, 10);
    let out = run(predict()
        .args([
            "--method",
            "durations-sync",
            "--json",
            "--target",
            "H8_S1:thesis-ddr",
        ])
        .args(["--backend", "onepiece"])
        .arg("--traces")
        .arg(dir.path().join("a"))
        .arg("--traces")
        .arg(dir.path().join("b"))
        .arg("--traces")
        .arg(dir.path().join("c")));
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("run 3 (the median run time here) is used"),
        "{notes}"
    );
    assert_eq!(v["runs"], 3);
    assert_eq!(
        v["computation_us_per_rank"]["per_run"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// A real program, traced twice (examples/halo.c on 2 ranks: 50 iterations,
/// each rank sends 2 x 64 KiB to the other per iteration), predicted on DDR
/// and QDR with the LogGP backend: the sender's NIC alone needs 100 x 65536 B
/// x 500 ps/B = 3.28 ms on DDR and half that on QDR, so the predictions are
/// at least that; the computation estimate (per-burst minimum) is at most
/// every run's.
#[test]
fn predict_traces_a_program_repeatedly_and_predicts_ddr_and_qdr() {
    let _lib = require_mpi_lib(tracer_library());
    let work = tempfile::tempdir().unwrap();
    let _serial = MPI_RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(predict()
        .arg(repo_root().join("examples/halo.c"))
        .arg("2")
        .args(["--repeat", "2", "--json", "--work"])
        .arg(work.path())
        .args(["--target", "H8_S1:thesis-ddr", "--target", "H8_S1:qdr"])
        .args(["--backend", "loggp"]));
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["runs"], 2);
    let rows = v["predictions"].as_array().unwrap();
    let max = |t: &str| {
        rows.iter().find(|r| r["target"] == t).unwrap()["max_time_us"]
            .as_f64()
            .unwrap()
    };
    let (ddr, qdr) = (max("H8_S1:thesis-ddr"), max("H8_S1:qdr"));
    eprintln!("halo on 2 ranks: DDR {ddr:.1} us, QDR {qdr:.1} us");
    assert!(ddr >= 100.0 * 65536.0 * 0.0005, "DDR {ddr} us");
    assert!(qdr >= 100.0 * 65536.0 * 0.00025, "QDR {qdr} us");
    assert!(ddr > qdr);
    let comp = &v["computation_us_per_rank"];
    for r in 0..2 {
        let est = comp["estimate"][r].as_f64().unwrap();
        for run in comp["per_run"].as_array().unwrap() {
            assert!(est <= run[r].as_f64().unwrap() + 1e-9, "{comp}");
        }
    }
    assert!(work
        .path()
        .join("run2/traces/pmpi-trace-rank-1.txt")
        .is_file());
}

/// Issue 18's smaller defects of trace-and-simulate, in one traced run:
/// a --work directory whose path contains `-0` twice; an mpi-tracer
/// without its library (built before Open MPI was installed: the script
/// compiles the library itself); the default method on the QDR fabric
/// (gaps: no link model needed); the fabric's statistics on stderr, not
/// only in a log file. ltest sends 20 x 400000 B, at least 100 us each at
/// QDR 4x's 4 B/ns: every rank's prediction is at least 2000 us.
#[test]
fn trace_and_simulate_small_defects_are_fixed() {
    let _lib = require_mpi_lib(tracer_library());
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("run-0/case-0");
    let fake = dir.path().join("mpi-tracer-without-lib");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$1\" = lib ]; then echo 'mpi-tracer: the MPI tracer was not built \
             because no MPI C compiler (mpicc) was found at build time' >&2; exit 1; fi\n\
             exec {} \"$@\"\n",
            bin("mpi-tracer").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _serial = MPI_RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let out = run(Command::new(repo_root().join("scripts/trace-and-simulate"))
        .arg("--work")
        .arg(&work)
        .args(["--json", "--fabric", "H8_S1"])
        .args(["--sim-arg", "--preset", "--sim-arg", "qdr"])
        .arg(thesis_program("ltest/ltest.c"))
        .arg("2")
        .env("LOGGOPSIM", bin("loggopsim"))
        .env("MPI_TRACER", &fake));
    let err = stderr(&out);
    assert!(out.status.success(), "{}\n{err}", stdout(&out));
    assert!(
        !err.contains("panicked") && !err.contains("stack backtrace"),
        "{err}"
    );
    assert!(
        err.contains("compiling the tracer library here instead"),
        "{err}"
    );
    assert!(work.join("libmpitracer.so").is_file());
    assert!(
        err.contains("method gaps (the default for backend onepiece)"),
        "{err}"
    );
    assert!(
        err.contains("obufs:") && err.contains("utilisation"),
        "{err}"
    );
    assert!(
        err.contains("'real' is this machine (not a prediction)"),
        "{err}"
    );
    let rows: Value = serde_json::from_str(&stdout(&out)).expect("JSON comparison");
    for row in rows.as_array().unwrap() {
        let sim = row["simulated_us"].as_f64().unwrap();
        assert!(sim >= 2000.0, "{row}");
    }
    // `--method plain` with the qdr preset used to fail with "unknown
    // --link-model ''": plain takes no link model, any preset works; and
    // --collectives reaches trace2goal (ltest has none: same bound).
    let out = run(Command::new(repo_root().join("scripts/trace-and-simulate"))
        .args([
            "--json",
            "--method",
            "plain",
            "--collectives",
            "ompi",
            "--fabric",
            "H8_S1",
        ])
        .args(["--sim-arg", "--preset", "--sim-arg", "qdr"])
        .arg(thesis_program("ltest/ltest.c"))
        .arg("2")
        .env("LOGGOPSIM", bin("loggopsim"))
        .env("MPI_TRACER", bin("mpi-tracer")));
    let err = stderr(&out);
    assert!(out.status.success(), "{}\n{err}", stdout(&out));
    assert!(!err.contains("link-model"), "{err}");
    let rows: Value = serde_json::from_str(&stdout(&out)).expect("JSON comparison");
    for row in rows.as_array().unwrap() {
        assert!(row["simulated_us"].as_f64().unwrap() >= 2000.0, "{row}");
    }
    let out = run(
        Command::new(repo_root().join("scripts/trace-and-simulate")).args([
            "--collectives",
            "intel",
            "prog.c",
            "2",
        ]),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown --collectives 'intel'"),
        "{}",
        stderr(&out)
    );
}
