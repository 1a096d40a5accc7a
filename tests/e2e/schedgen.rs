//! `loggopsim gen` and `loggopsim trace2goal` through the loggopsim binary:
//! every generator pattern at 4, 8 and 16 ranks, and the thesis traces,
//! must simulate without leftover queues (exit 0).

use crate::util::{bin, reference_data_dir, run, stderr, stdout, words};
use std::process::Command;

/// Patterns that must simulate cleanly. `chained_dissem` is excluded on
/// purpose: its marker sends go to rank 9999999 (docs/model/schedgen.md 3.16) and the
/// simulator rejects it; checked separately below.
const PATTERNS: &[&str] = &[
    "binomialtreebcast",
    "binomialtreereduce",
    "binarytreebcast",
    "dissemination",
    "nwaydissemination",
    "pipelinedring",
    "pipelinedringdep",
    "doublering",
    "gather",
    "scatter",
    "linbarrier",
    "linear_alltoall",
    "linear_alltoallv",
    "allreduce_recdoub",
    "allreduce_ring",
    "resnet",
    "random_bisect",
    "random_bisect_fd_sym",
];

/// `loggopsim trace2goal --traces FIRST FLAGS -o GOAL`.
fn trace2goal(
    first: impl AsRef<std::ffi::OsStr>,
    flags: &[&str],
    goal: impl AsRef<std::ffi::OsStr>,
) -> std::process::Output {
    run(Command::new(bin("loggopsim"))
        .arg("trace2goal")
        .arg("--traces")
        .arg(first)
        .args(flags)
        .arg("-o")
        .arg(goal))
}

fn simulate(goal: &std::path::Path, extra: &[&str]) -> std::process::Output {
    run(Command::new(bin("loggopsim"))
        .arg("-f")
        .arg(goal)
        .args(extra))
}

#[test]
fn every_pattern_simulates_at_4_8_16_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for p in PATTERNS {
        for n in [4, 8, 16] {
            let goal = dir.path().join(format!("{p}-{n}.goal"));
            // binarytreebcast is only consistent for root 0 (docs/model/schedgen.md 3.3,
            // a reproduced reference quirk); the other rooted patterns run
            // with root 1.
            let root = if *p == "binarytreebcast" { "0" } else { "1" };
            let g = run(Command::new(bin("loggopsim"))
                .args(["gen", p, "-s", &n.to_string(), "-d", "64"])
                .args([
                    "--nway",
                    "2",
                    "--segmentsize",
                    "16",
                    "--root",
                    root,
                    "--seed",
                    "5",
                    "-o",
                    goal.to_str().unwrap(),
                ]));
            assert!(g.status.success(), "gen {p} -s {n}: {}", stderr(&g));
            assert!(
                stdout(&g).contains(&format!("among {n} hosts written")),
                "{}",
                stdout(&g)
            );
            let s = simulate(&goal, &[]);
            assert_eq!(
                s.status.code(),
                Some(0),
                "{p} at {n} ranks: {}{}",
                stdout(&s),
                stderr(&s)
            );
            for r in 0..n {
                assert!(
                    stdout(&s).contains(&format!("Host {r}: ")),
                    "{p} {n}: {}",
                    stdout(&s)
                );
            }
        }
    }
}

#[test]
fn gen_to_stdout_pipes_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let g = run(Command::new(bin("loggopsim")).args(words("gen dissemination -s 4 -d 180 -o -")));
    assert!(g.status.success());
    assert!(stdout(&g).starts_with("num_ranks 4\n\nrank 0 {\nl1: send 180b to 1 tag 0\n"));
    assert!(stderr(&g).contains("8 sends, 8 recvs, 0 execs, and 4 reqs among 4 hosts written"));
    let goal = dir.path().join("d.goal");
    std::fs::write(&goal, &g.stdout).unwrap();
    let s = simulate(&goal, &[]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
}

#[test]
fn chained_dissem_is_rejected_by_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let goal = dir.path().join("c.goal");
    let g = run(Command::new(bin("loggopsim"))
        .args(["gen", "chained_dissem", "-s", "4", "-o"])
        .arg(&goal));
    assert!(g.status.success());
    let s = simulate(&goal, &[]);
    assert_ne!(s.status.code(), Some(0));
    assert!(stderr(&s).contains("9999999"), "{}", stderr(&s));
}

#[test]
fn bad_gen_options_fail_cleanly() {
    let g = run(Command::new(bin("loggopsim")).args(["gen", "nosuch", "-o", "-"]));
    assert_ne!(g.status.code(), Some(0));
    assert!(
        stderr(&g).contains("unknown pattern `nosuch`"),
        "{}",
        stderr(&g)
    );
    let g =
        run(Command::new(bin("loggopsim")).args(["gen", "linear_alltoallv", "-d", "0", "-o", "-"]));
    assert_ne!(g.status.code(), Some(0));
    assert!(stderr(&g).contains("division by zero"), "{}", stderr(&g));
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn thesis_traces_translate_and_simulate() {
    let dir = tempfile::tempdir().unwrap();
    let data = reference_data_dir().join("thesis");
    for (t, flags) in [
        ("ltest", vec![]),
        ("ltest", vec!["--raw-tags", "--pinning"]),
        ("ringtest", vec![]),
        ("ringtest", vec!["--durations", "--sync-collectives"]),
    ] {
        let goal = dir.path().join(format!("{t}.goal"));
        let first = data.join(t).join("pmpi-trace-rank-0.txt");
        let g = trace2goal(&first, &flags, &goal);
        assert!(g.status.success(), "{t} {flags:?}: {}", stderr(&g));
        // The thesis's ltest conditions: L = g = G = 0, o = 55 us.
        let s = simulate(&goal, &["-L", "0", "-g", "0", "-G", "0", "-o", "55000000"]);
        assert_eq!(
            s.status.code(),
            Some(0),
            "{t} {flags:?}: {}{}",
            stdout(&s),
            stderr(&s)
        );
        assert!(stdout(&s).contains("Host 1: "));
    }
    // Calibration 2: the printed command line runs as printed.
    let ltest0 = data.join("ltest/pmpi-trace-rank-0.txt");
    let g = trace2goal(&ltest0, &["--print-overheads"], dir.path().join("o.goal"));
    assert!(g.status.success());
    let line = stderr(&g)
        .lines()
        .find(|l| l.contains("loggopsim -f"))
        .expect("printed command")
        .to_string();
    let args: Vec<&str> = line
        .split("loggopsim ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    let s = run(Command::new(bin("loggopsim")).args(&args));
    assert_eq!(s.status.code(), Some(0), "{line}: {}", stderr(&s));
    assert!(
        stdout(&s).contains("o_large=32000000 ps, O_large=65 ps/B"),
        "{}",
        stdout(&s)
    );
    // ltest with --raw-tags reproduces the thesis's Schedgen1.1 file.
    let goal = dir.path().join("l.goal");
    let g = trace2goal(&ltest0, &["--raw-tags"], &goal);
    assert!(g.status.success());
    let ours = std::fs::read_to_string(&goal).unwrap();
    let theirs = std::fs::read_to_string(data.join("ltest/ltest.goal")).unwrap();
    assert_eq!(ours.trim_end(), theirs.trim_end());
    // colltest: only rank 0 exists; --require-all names the missing files.
    let g = trace2goal(
        data.join("colltest/pmpi-trace-rank-0.txt"),
        &["--require-all"],
        dir.path().join("c.goal"),
    );
    assert_ne!(g.status.code(), Some(0));
    assert!(
        stderr(&g).contains("colltest/pmpi-trace-rank-3.txt"),
        "{}",
        stderr(&g)
    );
}
