//! The clap definitions (as the loggopsim binary flattens them) and the
//! entry points.

use clap::{CommandFactory, Parser};
use schedgen::cli::{run_gen, run_trace2goal, GenArgs, Trace2GoalArgs};

#[derive(Parser, Debug)]
enum Cmd {
    Gen(GenArgs),
    Trace2goal(Trace2GoalArgs),
}

#[test]
fn clap_definitions_are_consistent() {
    Cmd::command().debug_assert();
}

#[test]
fn gen_writes_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.goal");
    let cmd = Cmd::try_parse_from([
        "x",
        "gen",
        "dissemination",
        "-s",
        "4",
        "-d",
        "180",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let Cmd::Gen(a) = cmd else { panic!() };
    run_gen(&a).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("num_ranks 4\n\nrank 0 {\nl1: send 180b to 1 tag 0\n"));
    // Negative --rpl-dep-cmp values parse.
    let cmd =
        Cmd::try_parse_from(["x", "gen", "allreduce_recdoub", "--rpl-dep-cmp", "-1"]).unwrap();
    let Cmd::Gen(a) = cmd else { panic!() };
    assert_eq!(a.rpl_dep_cmp, -1);
}

#[test]
fn trace2goal_defaults_to_picoseconds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l.goal");
    let first = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/thesis/ltest/pmpi-trace-rank-0.txt"
    );
    let cmd = Cmd::try_parse_from([
        "x",
        "trace2goal",
        "--traces",
        first,
        "--raw-tags",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let Cmd::Trace2goal(a) = cmd else { panic!() };
    assert_eq!(a.timemult, 1_000_000.0);
    run_trace2goal(&a).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("l2: calc 73000000\n"));
    // gen trace keeps the reference's default timemult of 1000.
    let cmd = Cmd::try_parse_from([
        "x",
        "gen",
        "trace",
        "--traces",
        first,
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let Cmd::Gen(a) = cmd else { panic!() };
    run_gen(&a).unwrap();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("l2: calc 73000\n"));
    // Missing trace file: a clear error.
    let cmd = Cmd::try_parse_from([
        "x",
        "trace2goal",
        "--traces",
        "/nonexistent/pmpi-trace-rank-0.txt",
    ])
    .unwrap();
    let Cmd::Trace2goal(a) = cmd else { panic!() };
    let e = run_trace2goal(&a).unwrap_err().to_string();
    assert!(
        e.contains("/nonexistent/pmpi-trace-rank-0.txt") && e.contains("not found"),
        "{e}"
    );
}

/// Times on the command line take unit suffixes (issue 12); bare numbers
/// keep their documented unit (schedule units, trace microseconds).
#[test]
fn time_options_take_unit_suffixes() {
    let Cmd::Gen(a) = Cmd::try_parse_from([
        "x",
        "gen",
        "dissemination",
        "--nb",
        "5us",
        "--nb-poll",
        "1000000",
        "--rpl-dep-cmp",
        "2ns",
    ])
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        (a.nb, a.nb_poll, a.rpl_dep_cmp),
        (Some(5_000_000), 1_000_000, 2000)
    );
    let Cmd::Gen(a) =
        Cmd::try_parse_from(["x", "gen", "dissemination", "--rpl-dep-cmp", "-1"]).unwrap()
    else {
        panic!()
    };
    assert_eq!(a.rpl_dep_cmp, -1);
    let Cmd::Trace2goal(t) = Cmd::try_parse_from([
        "x",
        "trace2goal",
        "--traces",
        "t-0.txt",
        "--traces-nbcify",
        "2000ns",
        "--pin-a",
        "165894ns",
        "--pin-b",
        "3.01695ns",
    ])
    .unwrap() else {
        panic!()
    };
    assert_eq!(t.trace.traces_nbcify, 2);
    assert!((t.trace.pin_a - 165.894).abs() < 1e-9);
    assert!((t.trace.pin_b - 0.00301695).abs() < 1e-12);
    let Cmd::Trace2goal(t) = Cmd::try_parse_from([
        "x",
        "trace2goal",
        "--traces",
        "t-0.txt",
        "--traces-nbcify",
        "7",
    ])
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        t.trace.traces_nbcify, 7,
        "bare numbers are trace microseconds"
    );
    for bad in [
        &["x", "gen", "dissemination", "--nb", "1.5"][..],
        &["x", "gen", "dissemination", "--nb", "99999999999999999999"],
        &[
            "x",
            "trace2goal",
            "--traces",
            "t-0.txt",
            "--traces-nbcify",
            "1500ns",
        ],
        &["x", "trace2goal", "--traces", "t-0.txt", "--pin-a", "3h"],
    ] {
        assert!(Cmd::try_parse_from(bad).is_err(), "{bad:?}");
    }
    // A prelude of 10^12 calcs per rank is refused instead of filling memory.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.goal");
    let Cmd::Gen(a) = Cmd::try_parse_from([
        "x",
        "gen",
        "dissemination",
        "--nb",
        "1000000000000",
        "--nb-poll",
        "1",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap() else {
        panic!()
    };
    let e = run_gen(&a).unwrap_err().to_string();
    assert!(e.contains("calcs per rank"), "{e}");
    assert!(!out.exists());
}
