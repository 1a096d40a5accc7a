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
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn trace2goal_defaults_to_picoseconds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l.goal");
    let first = concat!(
        env!("IBCOSIM_REFERENCE_DATA_DIR"),
        "/thesis/ltest/pmpi-trace-rank-0.txt"
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

/// Times on the command line take unit suffixes; bare numbers
/// keep their documented unit (schedule units, trace microseconds).
#[test]
fn time_options_take_unit_suffixes() {
    let Cmd::Gen(a) = Cmd::try_parse_from(
        "x gen dissemination --nb 5us --nb-poll 1000000 --rpl-dep-cmp 2ns".split(' '),
    )
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
    let Cmd::Trace2goal(t) = Cmd::try_parse_from(
        "x trace2goal --traces t-0.txt --traces-nbcify 2000ns --pin-a 165894ns --pin-b 3.01695ns"
            .split(' '),
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(t.trace.traces_nbcify, 2);
    assert!((t.trace.pin_a - 165.894).abs() < 1e-9);
    assert!((t.trace.pin_b - 0.00301695).abs() < 1e-12);
    let Cmd::Trace2goal(t) =
        Cmd::try_parse_from("x trace2goal --traces t-0.txt --traces-nbcify 7".split(' ')).unwrap()
    else {
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

/// `trace2goal --collectives` (docs/schedgen.md): a 4-rank Allreduce of 4096 ints
/// (16384 B) is LogGOPSim's dissemination with `textbook` (the default),
/// Rabenseifner's algorithm with `ompi` (4..7 ranks, >= 8192 B) and `mpich`
/// (> 2048 B): halves of 8192 B to rank 1, 4096 B to rank 2, and back.
/// Unknown names are rejected by the parser.
#[test]
fn trace2goal_collectives_option() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..4 {
        let t = format!(
            "MPI_Init:-:1:2:100\nMPI_Allreduce:110:1:2:4096:1,4,4:3:0,{r},4:120\nMPI_Finalize:400:-\n"
        );
        std::fs::write(dir.path().join(format!("pmpi-trace-rank-{r}.txt")), t).unwrap();
    }
    let first = dir.path().join("pmpi-trace-rank-0.txt");
    let run = |set: Option<&str>| -> String {
        let out = dir
            .path()
            .join(format!("{}.goal", set.unwrap_or("default")));
        let mut argv = vec![
            "x".to_string(),
            "trace2goal".into(),
            "--traces".into(),
            first.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ];
        if let Some(s) = set {
            argv.extend(["--collectives".to_string(), s.to_string()]);
        }
        let Cmd::Trace2goal(a) = Cmd::try_parse_from(argv).unwrap() else {
            panic!()
        };
        run_trace2goal(&a).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        let r0 = &text[text.find("rank 0 {").unwrap()..text.find("rank 1 {").unwrap()];
        r0.lines()
            .filter(|l| l.contains("send") || l.contains("recv"))
            .map(|l| {
                l.split(" tag")
                    .next()
                    .unwrap()
                    .split(": ")
                    .nth(1)
                    .unwrap()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let textbook = "send 16384b to 1; recv 16384b from 3; send 16384b to 2; recv 16384b from 2";
    assert_eq!(run(None), textbook);
    assert_eq!(run(Some("textbook")), textbook);
    let raben = "send 8192b to 1; recv 8192b from 1; send 4096b to 2; recv 4096b from 2; \
                 send 4096b to 2; recv 4096b from 2; send 8192b to 1; recv 8192b from 1";
    assert_eq!(run(Some("ompi")), raben);
    assert_eq!(run(Some("ompi-tuned")), raben);
    assert_eq!(run(Some("mpich")), raben);
    assert!(
        Cmd::try_parse_from(["x", "trace2goal", "--traces", "t", "--collectives", "intel"])
            .is_err()
    );
}
