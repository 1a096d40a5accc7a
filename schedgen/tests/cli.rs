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
