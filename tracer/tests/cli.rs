//! The `mpi-tracer` command line on the stored traces (no MPI needed).

use std::path::PathBuf;
use std::process::{Command, Output};

fn exe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpi-tracer"));
    c.env("RUST_BACKTRACE", "0");
    c
}

fn colltest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/colltest-np4")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(c: &mut Command) -> Output {
    c.output().expect("run mpi-tracer")
}

#[test]
fn summary_prints_run_time_and_counts_per_rank() {
    let out = run(exe().arg("summary").arg(colltest()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 4);
    // Finalize - Init return of each file.
    for (rank, us) in [(0, 3500), (1, 3515), (2, 3327), (3, 3304)] {
        assert_eq!(
            lines[rank],
            format!(
                "rank {rank}: run_time_us {us} calls MPI_Allgather=10 MPI_Allreduce=10 \
                 MPI_Barrier=21 MPI_Comm_rank=1 MPI_Comm_size=1 MPI_Finalize=1 MPI_Init=1 \
                 MPI_Recv=2 MPI_Send=2"
            )
        );
    }
    let out = run(exe().arg("summary").arg(colltest()).arg("--json"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[2]["run_time_us"], 3327);
    assert_eq!(v[2]["counts"]["MPI_Barrier"], 21);
    assert_eq!(v[0]["clockdiff_init"], 0.0);
}

#[test]
fn compare_prints_errors_and_enforces_a_limit() {
    let dir = tempfile::tempdir().unwrap();
    let sim = dir.path().join("sim.out");
    // Schedule in picoseconds: rank 2 simulated 10% longer than traced.
    std::fs::write(
        &sim,
        "Times: \nHost 0: 3500000000\nHost 1: 3515000000\nHost 2: 3659700000\nHost 3: 3304000000\n",
    )
    .unwrap();
    let out = run(exe()
        .arg("compare")
        .arg(colltest())
        .arg(&sim)
        .args(["--timemult", "1000000"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.contains("    0           3500         3500.000     +0.000"),
        "{table}"
    );
    assert!(
        table.contains("    2           3327         3659.700    +10.000"),
        "{table}"
    );

    let out = run(exe().arg("compare").arg(colltest()).arg(&sim).args([
        "--timemult",
        "1000000",
        "--max-error-percent",
        "5",
    ]));
    assert_eq!(out.status.code(), Some(4), "4: the error limit is exceeded");
    assert!(
        text(&out.stderr).contains("largest error 10.000% exceeds 5%"),
        "{}",
        text(&out.stderr)
    );

    let out = run(exe().arg("compare").arg(colltest()).arg(&sim).args([
        "--timemult",
        "1000000",
        "--max-error-percent",
        "10.5",
        "--json",
    ]));
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v[2]["relative_error"].as_f64().unwrap() - 0.1).abs() < 1e-12);
}

#[test]
fn compare_rejects_mismatched_or_failed_simulations() {
    let dir = tempfile::tempdir().unwrap();
    let sim = dir.path().join("sim.out");
    std::fs::write(&sim, "Host 0: 1\nHost 1: 2\n").unwrap();
    let out = run(exe().arg("compare").arg(colltest()).arg(&sim));
    assert_eq!(out.status.code(), Some(2), "bad input");
    assert!(
        text(&out.stderr).contains("4 traced ranks but 2 simulated hosts"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(
        &sim,
        "{\"ok\": false, \"leftovers\": [\"host 1: RQ recv from 0 tag 5\"]}",
    )
    .unwrap();
    let out = run(exe().arg("compare").arg(colltest()).arg(&sim));
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed simulation is a failure"
    );
    assert!(
        text(&out.stderr).contains("the simulation failed"),
        "{}",
        text(&out.stderr)
    );

    let out = run(exe().arg("compare").arg(dir.path()).arg(&sim));
    assert_eq!(out.status.code(), Some(2), "bad input");
    let err = text(&out.stderr);
    assert!(
        err.contains("no pmpi-trace-rank-0.txt in this directory"),
        "{err}"
    );
    // One line with the program's name, no "Error:" and no backtrace even
    // with RUST_BACKTRACE set.
    assert!(err.starts_with("mpi-tracer: "), "{err}");
    assert!(!err.contains("Stack backtrace"), "{err}");
}

#[test]
fn lib_prints_an_existing_library_or_explains() {
    let out = run(exe().arg("lib"));
    match mpi_tracer::LIBRARY {
        Some(_) => {
            assert!(out.status.success(), "{}", text(&out.stderr));
            let path = PathBuf::from(text(&out.stdout).trim());
            assert!(path.is_file(), "{}", path.display());
            assert!(path.ends_with("libmpitracer.so"));
        }
        None => {
            assert_eq!(out.status.code(), Some(1));
            assert!(text(&out.stderr).contains("no MPI C compiler"));
        }
    }
}
