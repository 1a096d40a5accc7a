//! `loggopsim -v --verbose-format loggopsim` (docs/thesis.md): the event list in
//! LogGOPSim's own -v text, golden on a tiny schedule whose every line is
//! derived by hand below.

use std::process::{Command, Output};

/// Rank 0: calc 100, send 10 B to 1 (eager), then receive 70000 B from 1
/// (rendezvous, above S = 65535). Rank 1: receive the 10 B, then send the
/// 70000 B back.
const GOAL: &str = "num_ranks 2
rank 0 {
l1: calc 100
l2: send 10b to 1 tag 0
l3: recv 70000b from 1 tag 1
l2 requires l1
l3 requires l2
}
rank 1 {
l1: recv 10b from 0 tag 0
l2: send 70000b to 0 tag 1
l2 requires l1
}
";

/// LogGP defaults L=2500, o=1500, g=1000, G=6, O=0, S=65535 (ps):
/// - rank 0's calc runs 0..100; rank 1's receive is posted at 0 (nothing in
///   its UQ);
/// - the send starts at 100: inserted with arrival 100 + o + L = 4100, the
///   eager send completes at 100 + o = 1600, when rank 0 posts its receive;
/// - the 10 B message is taken at 4100 by rank 1, whose CPU and NIC were
///   free (nexto 0, nextgr 0), and matches the posted receive; rank 1's CPU
///   is busy until 4100 + o + 9 x G = 5654;
/// - rank 1's send starts at 5654 (its node is the 5th of the schedule,
///   index 4): arrival 5654 + 1500 + 2500 = 9654, rendezvous;
/// - rank 0 takes it at 9654 (nexto 1600 from its send, nextgr 0), matches
///   its posted receive and, rendezvous, frees the remote send.
const EXPECTED: &str = "\
[0] found loclop of length 100 - t: 0 (CPU: 0)
[1] found recv from 0 - t: 0 (CPU: 0)
-- satisfy local irequires
++ [1] searching matching queue for src 0 tag 0
-- not found in local UQ -- add to RQ
[0] found send to 1 - t: 100 (CPU: 0)
-- satisfy local irequires
-- [0] send inserting msg to 1, t: 4100
-- [0] eager -- satisfy local requires at t: 1600
[0] found recv from 1 - t: 1600 (CPU: 0)
-- satisfy local irequires
++ [0] searching matching queue for src 1 tag 1
-- not found in local UQ -- add to RQ
[1] found msg from 0, t: 4100 (CPU: 0)
-- msg o,g available (nexto: 0, nextgr: 0)
++ [1] searching matching queue for src 0 tag 0
-- found in RQ
[1] found send to 0 - t: 5654 (CPU: 0)
-- satisfy local irequires
-- [1] send inserting msg to 0, t: 9654
-- [1] start rendezvous message to: 0 (offset: 4)
[0] found msg from 1, t: 9654 (CPU: 0)
-- msg o,g available (nexto: 1600, nextgr: 0)
++ [0] searching matching queue for src 1 tag 1
-- found in RQ
-- satisfy remote requires on host 1
";

/// `loggopsim -f FILE EXTRA` on a file holding `goal`.
fn run_goal(goal: &str, extra: &[&str]) -> Output {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("t.goal");
    std::fs::write(&f, goal).unwrap();
    Command::new(env!("CARGO_BIN_EXE_loggopsim"))
        .arg("-f")
        .arg(&f)
        .args(extra)
        .output()
        .unwrap()
}

/// Standard output of a successful run on [`GOAL`].
fn run(extra: &[&str]) -> String {
    let out = run_goal(GOAL, extra);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn verbose_loggopsim_format_golden() {
    let text = run(&["-v", "--verbose-format", "loggopsim"]);
    // the event lines come first, then the report
    assert!(text.starts_with(EXPECTED), "got:\n{text}");
    let rest = &text[EXPECTED.len()..];
    assert!(rest.contains("Host 1: 9654 ps"), "{rest}");
    // with --loggopsim-output the report is LogGOPSim's too (bare numbers)
    let text = run(&["-v", "--verbose-format", "loggopsim", "--loggopsim-output"]);
    assert!(text.starts_with(EXPECTED), "got:\n{text}");
    assert!(text.contains("\nHost 1: 9654\n"), "{text}");
    // the native format is unchanged and the default
    let native = run(&["-v"]);
    assert!(native.contains("Calc { host: 0, cpu: 0, node: 0, start: 0 ps, end: 100 ps }"));
    assert!(!native.contains("found loclop"));
}

#[test]
fn verbose_loggopsim_format_reinsert_and_bad_value() {
    // two sends in a row on rank 0: the second waits for g (1000 ps) after
    // the first (o = 1500 > g, so o decides): reinserted
    let goal = "num_ranks 2
rank 0 {
l1: send 1b to 1 tag 0
l2: send 1b to 1 tag 1
}
rank 1 {
l1: recv 1b from 0 tag 0
l2: recv 1b from 0 tag 1
}
";
    let out = run_goal(goal, &["-v", "--verbose-format", "loggopsim"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("-- send local o,g not available -- reinserting\n"),
        "{text}"
    );
    // the second send runs at 1500, when o of the first has passed
    assert!(
        text.contains("[0] found send to 1 - t: 1500 (CPU: 0)\n"),
        "{text}"
    );
    let out = run_goal(goal, &["-v", "--verbose-format", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("verbose-format"));
}
