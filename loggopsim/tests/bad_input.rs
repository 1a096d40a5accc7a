//! Bad input is refused with exit code 2 and a message naming the file,
//! the line and the problem: tags too wide for GOAL from `trace2goal
//! --raw-tags`, dependency cycles, labels defined twice (a warning: the
//! first definition counts, as in LogGOPSim), session keys, schedules too
//! large to generate, and topology errors naming their file once. Also the
//! PERFORMANCE line of short runs and `--batchmode`'s three lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_loggopsim");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The project's 4-rank trace (tracer/testdata/colltest-np4) in a fresh
/// directory, with `edit` applied to rank 1's trace.
fn traces_with(edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer/testdata/colltest-np4");
    let d = tempfile::tempdir().unwrap();
    for r in 0..4 {
        let name = format!("pmpi-trace-rank-{r}.txt");
        let text = std::fs::read_to_string(src.join(&name)).unwrap();
        let text = if r == 1 { edit(&text) } else { text };
        std::fs::write(d.path().join(&name), text).unwrap();
    }
    d
}

/// Rank 1's first MPI_Send (line 11) goes to rank 0 with tag 0.
const SEND_LINE: &str = "MPI_Send:1795243051695237:140729884411056:100000:39,4,4:0:0:0,1,4:";

fn with_tag(tag: &str) -> tempfile::TempDir {
    traces_with(|t| {
        assert!(t.contains(SEND_LINE));
        t.replacen(
            SEND_LINE,
            &format!("MPI_Send:1795243051695237:140729884411056:100000:39,4,4:0:{tag}:0,1,4:"),
            1,
        )
    })
}

/// `--raw-tags` wrote tags wider than 32 bits (and 2^63 as 2^63-1), which
/// the scheduler then refused: the trace is bad input, named with its line.
#[test]
fn raw_tags_beyond_32_bits_are_refused_naming_trace_line_and_tag() {
    for tag in ["4294967296", "9223372036854775808", "-2147483649"] {
        let d = with_tag(tag);
        let goal = d.path().join("out.goal");
        let o = run(&[
            "trace2goal",
            "--raw-tags",
            "--traces",
            s(&d.path().join("pmpi-trace-rank-0.txt")),
            "-o",
            s(&goal),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", err(&o));
        let e = err(&o);
        assert!(
            e.ends_with(&format!(
                "loggopsim: error: {}:11: field 8 (tag): tag {tag} does not fit in 32 bits \
                 (an MPI tag is a C int, -2147483648..2147483647; GOAL tags are 32-bit)\n",
                d.path().join("pmpi-trace-rank-1.txt").display()
            )),
            "{e}"
        );
        assert!(!goal.exists());
    }
    // Tags of the C int range are written as traced, and the scheduler
    // reads what trace2goal writes.
    for (tag, written) in [
        ("2147483647", "tag 2147483647"),
        ("-7", "tag 18446744073709551609"),
    ] {
        let d = with_tag(tag);
        let goal = d.path().join("out.goal");
        let o = run(&[
            "trace2goal",
            "--raw-tags",
            "--traces",
            s(&d.path().join("pmpi-trace-rank-0.txt")),
            "-o",
            s(&goal),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let text = std::fs::read_to_string(&goal).unwrap();
        assert!(
            text.contains(&format!("send 400000b to 0 {written}\n")),
            "{text}"
        );
        let o = run(&["convert", s(&goal), s(&d.path().join("out.bin"))]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    }
}

const CYCLE: &str = "num_ranks 2\nrank 0 {\nl1: calc 1\nl2: calc 2\nl3: calc 3\nl1 requires l2\nl2 requires l1\n}\nrank 1 {\n}\n";

/// A dependency cycle is bad input (exit 2), named with every label's
/// line, not a run that ends with unmatched receive/unexpected queues.
#[test]
fn dependency_cycle_is_bad_input_naming_its_labels_and_lines() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "c.goal", CYCLE);
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(2));
    let p = f.display();
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: error: {p}:8:1: rank 0: dependency cycle: l1 ({p}:3) requires l2 \
             ({p}:4) requires l1; none of these operations can ever start\n"
        )
    );
    assert_eq!(out(&o), "");
    // irequires edges, a longer cycle, one reached from outside it, and a
    // self-dependency
    let f = write(
        d.path(),
        "c3.goal",
        "num_ranks 1\nrank 0 {\nx: calc 9\nl1: calc 1\nl2: calc 2\nl3: calc 3\nl1 requires x\nl2 requires l1\nl1 irequires l3\nl3 requires l2\n}\n",
    );
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(2));
    let p = f.display();
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: error: {p}:11:1: rank 0: dependency cycle: l1 ({p}:4) irequires l3 \
             ({p}:6) requires l2 ({p}:5) requires l1; none of these operations can ever start\n"
        )
    );
    let f = write(
        d.path(),
        "c1.goal",
        "num_ranks 1\nrank 0 {\nl1: calc 1\n  l1 requires l1\n}\n",
    );
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(2));
    let p = f.display();
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: error: {p}:5:1: rank 0: dependency cycle: l1 ({p}:3) requires l1; the \
             operation can never start\n"
        )
    );
    // a DAG whose edges point backwards in offset order is fine
    let f = write(
        d.path(),
        "dag.goal",
        "num_ranks 1\nrank 0 {\nl1: calc 1\nl2: calc 2\nl1 requires l2\n}\n",
    );
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).ends_with("Host 0: 3 ps\n"), "{}", out(&o));
}

/// The cycle search is linear: a cycle through 200000 operations is found
/// at once, and the message lists its first 16 operations.
#[test]
fn long_cycle_is_found_quickly_and_the_message_stays_short() {
    let n = 200_000;
    let mut t = String::from("num_ranks 1\nrank 0 {\n");
    for i in 1..=n {
        t += &format!("l{i}: calc 1\n");
    }
    for i in 1..n {
        t += &format!("l{i} requires l{}\n", i + 1);
    }
    t += &format!("l{n} requires l1\n}}\n");
    let t0 = Instant::now();
    let e = loggopsim::goal::parse_str("big.goal", &t)
        .unwrap_err()
        .to_string();
    assert!(t0.elapsed() < Duration::from_secs(5));
    let mut want = format!("big.goal:{}:1: rank 0: dependency cycle: ", 2 * n + 3);
    for i in 1..=16 {
        want += &format!("l{i} (big.goal:{}) requires ", i + 2);
    }
    want += "... (199984 more) ... l1; none of these operations can ever start";
    assert_eq!(e, want);
}

/// A binary schedule (the reference's layout) with two nodes that require
/// each other.
fn binary_cycle() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&4223u64.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes()); // num_ranks
    b.extend_from_slice(&[0, 0]); // max_cpu, max_nic
    let block_len = 8 + 2 * 39 + 2 * 4;
    b.extend_from_slice(&22u64.to_le_bytes());
    b.extend_from_slice(&(22u64 + block_len).to_le_bytes());
    b.extend_from_slice(&2u32.to_le_bytes()); // nodes
    b.extend_from_slice(&0u32.to_le_bytes()); // roots
    for i in [0u32, 1] {
        b.extend_from_slice(&1u32.to_le_bytes()); // depcount
        b.push(3); // calc
        b.extend_from_slice(&0u32.to_le_bytes()); // peer
        b.extend_from_slice(&5u64.to_le_bytes()); // duration
        b.extend_from_slice(&0u32.to_le_bytes()); // tag
        b.extend_from_slice(&[0, 0]); // cpu, nic
        b.extend_from_slice(&1u32.to_le_bytes()); // n_deps
        b.extend_from_slice(&i.to_le_bytes()); // deps_index
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
    }
    // appendix: node 0 is required by node 1, node 1 by node 0
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b
}

#[test]
fn dependency_cycle_in_a_binary_schedule_is_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("c.bin");
    std::fs::write(&f, binary_cycle()).unwrap();
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: error: {}: byte offset 30: rank 0: dependency cycle: node 0 requires \
             node 1 requires node 0; none of these operations can ever start\n",
            f.display()
        )
    );
}

/// A label defined twice in a rank: the first definition counts (as in
/// LogGOPSim, which the GOAL grammar follows), and the second is warned
/// about.
#[test]
fn label_defined_twice_is_a_warning_naming_both_lines() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "d.goal",
        "num_ranks 1\nrank 0 {\nl1: calc 10\nl1: calc 500 cpu 1\nl2: calc 1 cpu 2\nl2 requires l1\n}\n",
    );
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(0));
    let p = f.display();
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: warning: {p}:4: rank 0: label 'l1' is defined again (first at {p}:3); \
             the first definition counts, this operation has no label\n"
        )
    );
    // l2 waits for the first l1 (CPU 0, 0..10 ps) and runs 10..11 ps on
    // CPU 2; after the second (CPU 1, 0..500 ps) the host would end at 501
    assert!(
        out(&o).ends_with("Times: \nHost 0: 500 ps\n"),
        "{}",
        out(&o)
    );
}

/// `--network ipc --key a/b` exited 1 (it failed when attaching); a bad
/// key is bad input, checked as `ibnet serve` checks it.
#[test]
fn invalid_or_missing_session_key_is_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "w.goal",
        CYCLE.replace("l2 requires l1\n", "").as_str(),
    );
    let o = run(&["-f", s(&f), "--network", "ipc", "--key", "a/b"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        "loggopsim: error: --key: invalid session key \"a/b\": character '/' not allowed (use \
         A-Z a-z 0-9 _ -)\n"
    );
    let o = run(&["-f", s(&f), "--network", "ipc", "--key", &"k".repeat(65)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("longer than 64 characters"), "{}", err(&o));
    let o = run(&["-f", s(&f), "--network", "ipc"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        "loggopsim: error: --network ipc needs --key KEY (the session key given to `ibnet serve \
         --key`)\n"
    );
}

/// `gen -s 1000000000` grew to 2.3 GB before its 2 GiB bound stopped it:
/// the size is estimated from the pattern before anything is allocated.
#[test]
fn huge_generated_schedule_is_refused_before_allocating() {
    let d = tempfile::tempdir().unwrap();
    let goal = d.path().join("big.goal");
    let t0 = Instant::now();
    let o = run(&["gen", "dissemination", "-s", "1000000000", "-o", s(&goal)]);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        "loggopsim: error: dissemination with --commsize 1000000000: 60000000000 operations, at \
         least 1380000000000 bytes of GOAL text, more than the 2147483648 bytes (2 GiB) the \
         generator builds in memory; use fewer ranks\n"
    );
    assert!(!goal.exists());
    let o = run(&[
        "gen",
        "pipelinedring",
        "-s",
        "100000",
        "-d",
        "2000000000",
        "--segmentsize",
        "1",
        "-o",
        s(&goal),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("use fewer ranks or larger segments (--segmentsize)"),
        "{}",
        err(&o)
    );
}

/// The topology's path was named twice (`topology X: X:2:1: ...`).
#[test]
fn topology_errors_name_the_path_once() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", "num_ranks 1\nrank 0 {\nl1: calc 1\n}\n");
    let t = write(d.path(), "bad.toml", "garbage = [\n");
    let o = run(&["-f", s(&f), "--network", "flow", "--topology", s(&t)]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: error: {}:2:1: invalid array: expected `]`\n",
            t.display()
        )
    );
    // an error about the whole file
    let t = write(
        d.path(),
        "tables.toml",
        "routing = \"tables\"\nnodes = [{ hca = \"H_1\" }, { hca = \"H_2\" }, { switch = \"S\", ports = 2 }]\nlinks = [\"H_1:0 <-> S:0\", \"H_2:0 <-> S:1\"]\n",
    );
    let o = run(&["-f", s(&f), "--network", "flow", "--topology", s(&t)]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: error: {}: routing = \"tables\" but switch S has no [fdb] entry\n",
            t.display()
        )
    );
}

/// The PERFORMANCE line of a short run said `Time: 0 s` and `Speed: inf
/// ev/s`; the native output measures to the microsecond.
#[test]
fn perf_line_has_a_measured_time_and_no_inf() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "w.goal",
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n",
    );
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(0));
    let text = out(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("PERFORMANCE: "))
        .unwrap();
    let f4: Vec<&str> = line.split(" \t ").collect();
    assert_eq!(
        (f4.len(), f4[0], f4[1]),
        (4, "PERFORMANCE: Processes: 2", "Events: 3"),
        "{line}"
    );
    let time = f4[2]
        .strip_prefix("Time: ")
        .and_then(|t| t.strip_suffix(" s"))
        .unwrap();
    let (whole, frac) = time.split_once('.').expect("decimals");
    assert!(
        whole.bytes().all(|b| b.is_ascii_digit()) && frac.len() == 6,
        "{line}"
    );
    let speed = f4[3]
        .strip_prefix("Speed: ")
        .and_then(|t| t.strip_suffix(" ev/s"))
        .unwrap();
    if time.parse::<f64>().unwrap() > 0.0 {
        assert!(speed.parse::<u64>().is_ok(), "{line}");
    } else {
        assert_eq!(speed, "n/a", "{line}");
    }
    assert!(!line.contains("inf"), "{line}");
    // LogGOPSim's bytes stay as they were (its whole seconds)
    let o = run(&["-f", s(&f), "--loggopsim-output"]);
    assert!(
        out(&o)
            .contains("PERFORMANCE: Processes: 2 \t Events: 3 \t Time: 0 s \t Speed: inf ev/s\n"),
        "{}",
        out(&o)
    );
}

/// `--batchmode` printed three lines although its help said it prints only
/// the maximum: it prints what LogGOPSim's does (header, PERFORMANCE, the
/// maximum), and the help says so.
#[test]
fn batchmode_output_and_help_agree() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "w.goal",
        "num_ranks 2\nrank 0 {\nl1: calc 7\n}\nrank 1 {\nl1: calc 9\n}\n",
    );
    for extra in [None, Some("--loggopsim-output")] {
        let mut args = vec!["-f", s(&f), "--batchmode"];
        args.extend(extra);
        let text = out(&run(&args));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("LogGP network backend; "), "{text}");
        assert!(lines[1].starts_with("PERFORMANCE: "), "{text}");
        assert!(
            lines[2].starts_with("Maximum finishing time at host 1: 9"),
            "{text}"
        );
    }
    let help = out(&run(&["--help"]));
    assert!(
        help.contains(
            "Print the maximum finishing time (`Maximum finishing time at host H: T`) instead \
             of one line per host, as LogGOPSim's --batchmode (and as with more than 16 hosts); \
             the header and PERFORMANCE lines stay, so a run prints three lines"
        ),
        "{help}"
    );
}
