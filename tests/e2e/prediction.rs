//! From an MPI program to a prediction: `scripts/predict` (trace
//! once, simulate many; robust computation estimate across runs; one table
//! or JSON with the fabric's summary) and the smaller defects of
//! `scripts/trace-and-simulate`.
//!
//! The prediction arithmetic is checked on hand-written traces (no MPI run,
//! exact values); one test runs a real program (examples/halo.c, 2 ranks,
//! twice) and one examples/pingpong.c through trace-and-simulate.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::tracer::{example_program, require_mpi_lib, tracer_library, MPI_RUNS};
use crate::util::{bin, repo_root, run, stderr, stdout, words};

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
    // durations on a target without an analytic link model: nothing the
    // method can simulate, refused before anything runs (exit 2), saying why.
    let out = run(predict().arg("--traces").arg(dir.path().join("a")).args([
        "--method",
        "durations",
        "--target",
        "H8_S1:qdr",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
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
        .args(words(
            "--method durations-sync --json --target H8_S1:thesis-ddr",
        ))
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

/// The smaller defects of trace-and-simulate, in one traced run:
/// a --work directory whose path contains `-0` twice; an mpi-tracer
/// without its library (built before Open MPI was installed: the script
/// compiles the library itself); the default method on the QDR fabric
/// (gaps: no link model needed); the fabric's statistics on stderr, not
/// only in a log file. examples/pingpong.c sends 20 x 400000 B, at least 100 us each at
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
        .arg(example_program("pingpong.c"))
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
    // `--method plain` with the qdr preset must not fail with "unknown
    // --link-model ''": plain takes no link model, any preset works; and
    // --collectives reaches trace2goal (the ping-pong has none: same bound).
    let out = run(Command::new(repo_root().join("scripts/trace-and-simulate"))
        .args(words(
            "--json --method plain --collectives ompi --fabric H8_S1",
        ))
        .args(["--sim-arg", "--preset", "--sim-arg", "qdr"])
        .arg(example_program("pingpong.c"))
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

/// `write_run` with the tracer's CPU times: every gap's CPU time is its
/// wall time divided by `slow` (a rank that waited for a core).
fn write_run_cpu(dir: &Path, g0: u64, g1: u64, h0: u64, h1: u64, slow: u64) {
    write_run(dir, g0, g1, h0, h1);
    for r in 0..2 {
        let f = dir.join(format!("pmpi-trace-rank-{r}.txt"));
        let text = std::fs::read_to_string(&f).unwrap();
        let mut out = String::new();
        let mut cpu_ns = 0u64;
        let mut last_end: Option<u64> = None;
        for line in text.lines() {
            if !line.starts_with("MPI_") {
                out += line;
                out.push('\n');
                continue;
            }
            let fields: Vec<&str> = line.split(':').collect();
            let (call, end) = if line.starts_with("MPI_Init") {
                (None, fields[4].parse::<u64>().unwrap())
            } else if line.starts_with("MPI_Finalize") {
                let t = fields[1].parse::<u64>().unwrap();
                (Some(t), t)
            } else {
                (
                    Some(fields[1].parse::<u64>().unwrap()),
                    fields.last().unwrap().parse::<u64>().unwrap(),
                )
            };
            if let (Some(c), Some(e)) = (call, last_end) {
                cpu_ns += (c - e) * 1000 / slow;
            }
            let c0 = cpu_ns;
            if let Some(c) = call {
                cpu_ns += (end - c) * 1000; // inside MPI: polling
            }
            let c1 = if line.starts_with("MPI_Finalize") {
                "-".to_string()
            } else {
                cpu_ns.to_string()
            };
            out += &format!("{line}:cpu={c0}:{c1}\n");
            last_end = Some(end);
        }
        std::fs::write(&f, out).unwrap();
    }
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}\n{}", stdout(out), stderr(out));
    serde_json::from_str(&stdout(out)).expect("JSON")
}

fn warnings_of(v: &Value) -> String {
    v["warnings"].to_string()
}

/// The computation measure on hand-written traces: with CPU times the
/// schedule's computation is the CPU time (a quarter of the wall gaps
/// here), `--compute wall` takes the gaps, traces without CPU times fall
/// back to wall with a warning. And the warnings: a spread between runs
/// above --spread-threshold (rank 1's computation is 20, 25, 45 us of wall
/// time in the three runs: 25 us apart, more than 10% of the ~140 us
/// prediction), computation that dominates the prediction (rank 0 computes
/// all of its run), a single run.
#[test]
fn predict_measures_cpu_time_and_warns_where_it_would_mislead() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [(100, 50, 10, 10), (80, 70, 20, 5), (90, 60, 15, 30)];
    let mut cpu_args = Vec::new();
    let mut wall_args = Vec::new();
    for (k, &(a, b, c, d)) in runs.iter().enumerate() {
        let p = dir.path().join(format!("cpu-{k}"));
        write_run_cpu(&p, a, b, c, d, 4);
        cpu_args.push("--traces".to_string());
        cpu_args.push(p.display().to_string());
        let p = dir.path().join(format!("wall-{k}"));
        write_run(&p, a, b, c, d);
        wall_args.push("--traces".to_string());
        wall_args.push(p.display().to_string());
    }
    let common = words("--json --target H8_S1:thesis-ddr --backend loggp");
    // cpu (the default): rank 0's bursts min(100, 80, 90) / 4 + min(50, 70, 60) / 4.
    let v = json_of(&run(predict().args(&cpu_args).args(&common)));
    assert_eq!(v["compute"], "cpu");
    let est = &v["computation_us_per_rank"]["estimate"];
    assert!(close(est[0].as_f64().unwrap(), 20.0 + 12.5), "{est}");
    // wall: the gaps themselves.
    let v = json_of(&run(predict()
        .args(&cpu_args)
        .args(&common)
        .args(["--compute", "wall"])));
    assert_eq!(v["compute"], "wall");
    let est = &v["computation_us_per_rank"]["estimate"];
    assert!(close(est[0].as_f64().unwrap(), 130.0), "{est}");
    // wall: the spread (25 us on a ~140 us prediction) and the computation
    // share (rank 0: 130 of 130 us) warn.
    let w = warnings_of(&v);
    assert!(
        w.contains("differs by 25.0 us between the fastest and the slowest run")
            && w.contains("--spread-threshold 10%"),
        "{w}"
    );
    assert!(
        w.contains("computation is up to 100% of a predicted run time"),
        "{w}"
    );
    assert!(
        !w.contains("no CPU times") && !w.contains("single run"),
        "{w}"
    );
    // a higher threshold silences the spread warning.
    let v = json_of(&run(predict().args(&cpu_args).args(&common).args([
        "--compute",
        "wall",
        "--spread-threshold",
        "50",
    ])));
    assert!(!warnings_of(&v).contains("fastest and the slowest"), "{v}");
    // Traces without CPU times: wall, said so; the same numbers as wall.
    let v = json_of(&run(predict().args(&wall_args).args(&common)));
    assert_eq!(v["compute"], "wall");
    assert!(
        warnings_of(&v).contains("has no CPU times") && warnings_of(&v).contains("--compute wall"),
        "{v}"
    );
    assert!(close(
        v["computation_us_per_rank"]["estimate"][0]
            .as_f64()
            .unwrap(),
        130.0
    ));
    // A single run: no noise estimate, said so.
    let v = json_of(&run(predict().args(&cpu_args[..2]).args(&common)));
    assert!(warnings_of(&v).contains("a single run"), "{v}");
    assert!(v["noise"]["computation_spread_pct"].is_null(), "{v}");
    // --no-computation: every calc 0, the transfer alone (rank 1 receives
    // 60000 B: 0.1 + 59999 x 0.0005 us).
    let v = json_of(&run(predict()
        .args(&cpu_args)
        .args(&common)
        .arg("--no-computation")));
    let t = v["predictions"][0]["time_us_per_rank"][1].as_f64().unwrap();
    assert!(close(t, 0.1 + 59_999.0 * 0.0005), "{v}");
}

/// The computation label follows the method: under the durations methods
/// it is not "the gaps between MPI calls" alone.
#[test]
fn predict_labels_the_computation_by_method() {
    let dir = tempfile::tempdir().unwrap();
    write_run_cpu(&dir.path().join("a"), 100, 50, 10, 10, 1);
    let table = |method: &str| {
        let out = run(predict().arg("--traces").arg(dir.path().join("a")).args([
            "--method",
            method,
            "--target",
            "H8_S1:thesis-ddr",
        ]));
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let d = table("durations");
    assert!(
        d.contains("plus every MPI call's duration here minus the target's link time")
            && d.contains("computation = wall-clock time"),
        "{d}"
    );
    assert!(!d.contains("sum of the gaps"), "{d}");
    let g = table("gaps");
    assert!(
        g.contains("(the thread CPU time of the bursts between MPI calls)"),
        "{g}"
    );
}

/// Targets, presets and rank counts are checked before anything is traced:
/// mpicc and mpirun are stand-ins that leave a mark if they are run.
#[test]
fn predict_validates_targets_before_tracing() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("ran");
    let fake = dir.path().join("fake-mpi");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", mark.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let halo = example_program("halo.c");
    let halo = halo.to_str().unwrap();
    for (args, msg) in [
        (
            vec!["--target", "H8-S6", halo, "2"],
            "invalid topology: \"H8-S6\" is neither an existing file nor a built-in",
        ),
        (
            vec![
                "--method",
                "durations",
                "--target",
                "fattree:8:4:qdr",
                halo,
                "8",
            ],
            "--method durations can simulate none of the targets x backends given",
        ),
        (
            vec![halo, "16"],
            "--target H8_S6:thesis-ddr: the network has 8 hosts, fewer than the 16 ranks",
        ),
        (
            vec![
                "--target",
                "fattree:8:4:qdr",
                "--target",
                "H8_S1",
                halo,
                "12",
            ],
            "--target H8_S1:thesis-ddr: the network has 8 hosts, fewer than the 12 ranks",
        ),
    ] {
        let out = run(predict()
            .args(&args)
            .env("MPICC", &fake)
            .env("MPIRUN", &fake));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(msg), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("predict: --"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("Traceback"), "{}", stderr(&out));
        assert!(
            !mark.exists(),
            "{args:?}: mpicc or mpirun ran before the check"
        );
    }
    // Traces of 9 ranks are checked the same way, before translation.
    let nine = dir.path().join("nine");
    std::fs::create_dir(&nine).unwrap();
    for r in 0..9 {
        std::fs::write(
            nine.join(format!("pmpi-trace-rank-{r}.txt")),
            "MPI_Init:-:1:2:1000\nMPI_Finalize:1100:-\n",
        )
        .unwrap();
    }
    let out = run(predict()
        .arg("--traces")
        .arg(&nine)
        .args(["--target", "H8_S1"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the network has 8 hosts, fewer than the 9 ranks")
            && !stderr(&out).contains("simulating"),
        "{}",
        stderr(&out)
    );
}

/// `--backend loggp` needs ibnet (the mean route length): without one next
/// to LOGGOPSIM, on PATH or in IBNET (and no cargo to build it) the error
/// says so instead of a Python traceback; with IBNET it runs.
#[test]
fn predict_loggp_without_ibnet_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    write_run(&dir.path().join("a"), 100, 50, 10, 10);
    let lone = dir.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::copy(bin("loggopsim"), lone.join("loggopsim")).unwrap();
    // PATH with python3 and the system tools, without cargo and ibnet.
    let py = run(Command::new("python3").args(["-c", "import sys; print(sys.executable)"]));
    let py = stdout(&py).trim().to_string();
    let pbin = dir.path().join("pybin");
    std::fs::create_dir(&pbin).unwrap();
    std::os::unix::fs::symlink(&py, pbin.join("python3")).unwrap();
    let path = format!("{}:/usr/bin:/bin", pbin.display());
    let mut cmd = predict();
    cmd.env("LOGGOPSIM", lone.join("loggopsim"))
        .env_remove("IBNET")
        .env("PATH", &path)
        .arg("--traces")
        .arg(dir.path().join("a"))
        .args(["--backend", "loggp", "--target", "H8_S1"]);
    let out = run(&mut cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("Traceback"), "{err}");
    assert!(err.contains("IBNET"), "{err}");
    let out = run(cmd.env("IBNET", bin("ibnet")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("loggp"), "{}", stdout(&out));
}

/// The cpu measure on a busy machine: examples are tracer/testdata/bursts.c,
/// 10 bursts of 2 ms of CPU work (`spin`) or of sleep (`sleep`) between
/// barriers, on twice as many ranks as cores. A spinning rank's computation
/// under --compute cpu is its 20 ms of CPU whatever the sharing did to the
/// wall clock (which --compute wall shows: at least 1.3 x longer for some
/// rank); a sleeping rank computes ~nothing under cpu (sleeping is not
/// computation) and its 20 ms of sleep under wall.
#[test]
fn cpu_measure_is_robust_with_more_ranks_than_cores() {
    let _lib = require_mpi_lib(tracer_library());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let np = (2 * cores).clamp(4, 64);
    let src = repo_root().join("tracer/testdata/bursts.c");
    let _serial = MPI_RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let work = tempfile::tempdir().unwrap();
    let predict_bursts = |mode: &str, compute: &str| {
        let out = run(predict()
            .arg(&src)
            .arg(np.to_string())
            .args(["--json", "--compute", compute, "--backend", "loggp"])
            .arg("--target")
            .arg(format!("fattree:hosts={np}:qdr"))
            .arg("--work")
            .arg(work.path().join(format!("{mode}-{compute}")))
            .args(["--", mode]));
        let v = json_of(&out);
        assert!(
            warnings_of(&v).contains(&format!("{np} ranks on {cores} cores")),
            "{v}"
        );
        let est: Vec<f64> = v["computation_us_per_rank"]["estimate"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        eprintln!("bursts {mode} --compute {compute}, {np} ranks: computation {est:?} us");
        (est, v)
    };
    let (spin_cpu, v) = predict_bursts("spin", "cpu");
    for &c in &spin_cpu {
        assert!((19_500.0..=23_000.0).contains(&c), "{spin_cpu:?}");
    }
    let max = v["predictions"][0]["max_time_us"].as_f64().unwrap();
    assert!((20_000.0..=25_000.0).contains(&max), "prediction {max} us");
    let (spin_wall, _) = predict_bursts("spin", "wall");
    let worst = spin_wall.iter().cloned().fold(0.0, f64::max);
    assert!(worst >= 1.3 * 20_000.0, "{spin_wall:?}");
    let (sleep_cpu, _) = predict_bursts("sleep", "cpu");
    for &c in &sleep_cpu {
        assert!(c < 2_000.0, "{sleep_cpu:?}");
    }
    let (sleep_wall, _) = predict_bursts("sleep", "wall");
    for &c in &sleep_wall {
        assert!(c >= 19_000.0, "{sleep_wall:?}");
    }
    // PMPI_TRACE_CPU=0: the tracer writes no CPU times; wall time, said so.
    let out = run(predict()
        .arg(&src)
        .arg(np.to_string())
        .args(["--json", "--repeat", "1", "--backend", "loggp"])
        .arg("--target")
        .arg(format!("fattree:hosts={np}:qdr"))
        .args(["--mpirun-arg", "-x", "--mpirun-arg", "PMPI_TRACE_CPU=0"])
        .arg("--work")
        .arg(work.path().join("no-cpu"))
        .args(["--", "spin"]));
    let v = json_of(&out);
    assert_eq!(v["compute"], "wall", "{v}");
    assert!(warnings_of(&v).contains("has no CPU times"), "{v}");
    let t = std::fs::read_to_string(work.path().join("no-cpu/run1/traces/pmpi-trace-rank-0.txt"))
        .unwrap();
    assert!(!t.contains("cpu="), "{t}");
}

/// SimGrid/SMPI 3.32 side by side, network only (scripts/smpi-compare
/// --modes network): examples/halo.c and examples/alltoall.c on 8 ranks,
/// on H8_S6 (thesis-ddr) and fattree:8:4 (qdr) exported with `ibnet export
/// --simgrid`, collectives `ompi` against SMPI's ompi selector. Our flow
/// backend and SMPI run the same network model (docs/backends.md, SimGrid
/// bridge), so their ratio must stay within 0.8..1.25; so must the
/// flit-level fabric's on DDR (on QDR it is at 1.25, the HCA's injection
/// rate: docs/prediction.md). Without SimGrid the test fails and says so.
#[test]
fn smpi_network_only_agrees_on_the_examples() {
    for tool in ["smpicc", "smpirun"] {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
            .unwrap_or(false);
        assert!(
            found,
            "SimGrid is missing: {tool} not found on PATH; scripts/install-deps installs \
             libsimgrid-dev (smpicc, smpirun)"
        );
    }
    let _lib = require_mpi_lib(tracer_library());
    let _serial = MPI_RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let work = tempfile::tempdir().unwrap();
    let out = run(Command::new(repo_root().join("scripts/smpi-compare"))
        .args(words("--programs halo,alltoall --modes network --repeat 1"))
        .args(["--json", "--work"])
        .arg(work.path())
        .env("LOGGOPSIM", bin("loggopsim"))
        .env("MPI_TRACER", bin("mpi-tracer"))
        .env("IBNET", bin("ibnet")));
    let rows = json_of(&out);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4, "2 programs x 2 networks");
    for r in rows {
        let flow = r["flow_ratio"].as_f64().unwrap();
        let op = r["onepiece_ratio"].as_f64().unwrap();
        eprintln!(
            "{} {}: flow/SMPI {flow:.3}, onepiece/SMPI {op:.3} (SMPI {:.0} us)",
            r["program"], r["network"], r["smpi_us"]
        );
        assert!((0.8..=1.25).contains(&flow), "{r}");
        if r["network"] == "ddr" {
            assert!((0.8..=1.25).contains(&op), "{r}");
        }
    }
}
