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
            &format!(
                "MPI_Send:1795243051695237:140729884411056:100000:39,4,4:0:{tag}:0,1,4:"
            ),
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
        assert!(text.contains(&format!("send 400000b to 0 {written}\n")), "{text}");
        let o = run(&["convert", s(&goal), s(&d.path().join("out.bin"))]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    }
}

