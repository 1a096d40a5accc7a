//! scripts/backend-study on a tiny case (docs/backends.md): it runs over the built
//! binary, its table and CSV have every backend, the errors are real
//! numbers recomputed from the finish times, and the figure is written.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_loggopsim");

/// One 4 KiB message on one switch, and a second one into the same
/// receiver, so that flow and the fabric see contention.
const TINY: &str = "num_ranks 3\n\nrank 0 {\nl1: send 4096b to 2 tag 0\n}\n\nrank 1 {\nl1: send 4096b to 2 tag 1\n}\n\nrank 2 {\nl1: recv 4096b from 0 tag 0\nl2: recv 4096b from 1 tag 1\n}\n";

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/backend-study")
}

#[test]
fn backend_study_tiny_case() {
    let d = tempfile::tempdir().unwrap();
    let goal = d.path().join("tiny.goal");
    std::fs::write(&goal, TINY).unwrap();
    let bindir = Path::new(BIN).parent().unwrap();
    let out = d.path().join("out");
    let o = Command::new("python3")
        .arg(script())
        .arg(&goal)
        .arg("H8_S1")
        .arg("--bin-dir")
        .arg(bindir)
        .arg("--out")
        .arg(&out)
        .args(["--runs", "1"])
        .output()
        .expect("python3 is needed by scripts/backend-study (scripts/install-deps)");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for b in ["loggp", "lop", "penalty", "flow", "onepiece"] {
        assert!(
            stdout.contains(&format!("| {b} |")),
            "{b} missing:\n{stdout}"
        );
    }
    // CSV: one row per backend, errors recomputed from the max finish times
    let csv = std::fs::read_to_string(out.join("tiny.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(rows.len(), 5);
    let get =
        |b: &str, c: &str| -> String { rows.iter().find(|r| r[0] == b).unwrap()[col(c)].clone() };
    let fab: f64 = get("onepiece", "max_finish_ps").parse().unwrap();
    let flow: f64 = get("flow", "max_finish_ps").parse().unwrap();
    let err: f64 = get("flow", "err_max_pct").parse().unwrap();
    assert!(err.is_finite());
    assert!(((flow - fab) / fab * 100.0 - err).abs() < 1e-3, "{err}");
    // flow's own prediction: the two 4 KiB flows share the receiver's link
    // (2 GB/s, 500 ps/B each alone): both end 8192 B x 500 ps/B = 4.096 us
    // after entering, so its max finish is above 4.096 us
    assert!(flow > 4_096_000.0, "{flow}");
    // the same number as loggopsim --network flow prints itself
    let j = Command::new(BIN)
        .arg("-f")
        .arg(&goal)
        .args(["--network", "flow", "--topology", "H8_S1", "--json"])
        .output()
        .unwrap();
    let j = String::from_utf8_lossy(&j.stdout);
    assert!(
        j.contains(&format!("\"max_finish_time_ps\": {}", flow as u64)),
        "{j}"
    );
    let wall: f64 = get("onepiece", "wall_s").parse().unwrap();
    assert!(wall > 0.0);
    let rss: f64 = get("flow", "peak_rss_mib").parse().unwrap();
    assert!(rss > 0.0);
    let svg = std::fs::read_to_string(out.join("tiny.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("flow"));
    // per-rank finish times: 3 ranks x 5 backends
    let fin = std::fs::read_to_string(out.join("tiny-finish.csv")).unwrap();
    assert_eq!(fin.lines().count(), 4);
}

#[test]
fn backend_study_bad_arguments_exit_2() {
    let o = Command::new("python3")
        .arg(script())
        .arg("/nonexistent.goal")
        .arg("H8_S1")
        .arg("--bin-dir")
        .arg(Path::new(BIN).parent().unwrap())
        .output()
        .expect("python3");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent.goal"));
}

fn dstseq(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/goal-from-dstseq"))
        .args(args)
        .output()
        .expect("python3 is needed by scripts/goal-from-dstseq")
}

/// The OneHot pattern (reference data, read in place from ../shared):
/// 32 ranks, 6 destinations each, 2 passes: 12 sends per rank, and every
/// send has its receive (loggopsim runs the schedule to completion).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn goal_from_dstseq_onehot() {
    let data = Path::new(env!("IBCOSIM_REFERENCE_DATA_DIR")).join("ibmodel-32n");
    assert!(
        data.join("32n_1hot.dstSeq").exists(),
        "the reference data {} is missing: this test needs ../shared beside the checkout",
        data.display()
    );
    let d = tempfile::tempdir().unwrap();
    let goal = d.path().join("onehot.goal");
    let o = dstseq(&[
        data.join("32n_1hot.dstSeq").as_os_str(),
        "--ini".as_ref(),
        data.join("32n_1hot.dstSeq.ini").as_os_str(),
        "--passes".as_ref(),
        "2".as_ref(),
        "-o".as_ref(),
        goal.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&goal).unwrap();
    assert!(text.starts_with("num_ranks 32\n"));
    assert_eq!(text.matches(": send 131072b to ").count(), 32 * 12);
    assert_eq!(text.matches(": recv 131072b from ").count(), 32 * 12);
    // H_1 (rank 0) sends to LIDs 3 9 15 19 21 24 = ranks 2 8 14 18 20 23
    assert!(text.contains("rank 0 {\ns0: send 131072b to 2 tag 0\ns1: send 131072b to 8 tag 1\n"));
    let r = Command::new(BIN)
        .arg("-f")
        .arg(&goal)
        .arg("--json")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

/// Bad input: exit 2 naming the file and line; never a traceback.
#[test]
fn goal_from_dstseq_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o.goal");
    for (text, want) in [
        ("0: 1 2\nx: 3\n", ":2: expected `index: lid lid ...`"),
        ("0: 0\n", ":1: expected one or more LIDs >= 1"),
        (
            "0: 49152\n",
            ":1: expected one or more LIDs >= 1 and <= 49151",
        ),
        ("0:\n", ":1: expected one or more LIDs >= 1"),
        ("", "no sequences"),
        ("0: 1 \u{00e9}\n", ":1:"),
    ] {
        let f = d.path().join("s.dstSeq");
        std::fs::write(&f, text).unwrap();
        let o = dstseq(&[f.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text:?}: {err}");
        assert!(
            err.contains(want) && !err.contains("Traceback"),
            "{text:?}: {err}"
        );
    }
    let o = dstseq(&[
        "/nonexistent.dstSeq".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent.dstSeq"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, ..Default::default() })]
    /// Arbitrary text: the generator writes a schedule or exits 2 with a
    /// message; it never crashes with a traceback.
    #[test]
    fn goal_from_dstseq_never_crashes(text in "[0-9: \\n*a-zH_.=]{0,60}") {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.dstSeq");
        std::fs::write(&f, &text).unwrap();
        let out = d.path().join("o.goal");
        let o = dstseq(&[f.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        proptest::prop_assert!(!err.contains("Traceback"), "{:?}: {}", text, err);
        proptest::prop_assert!(o.status.code() == Some(0) || o.status.code() == Some(2), "{:?}: {}", text, err);
        if o.status.success() {
            let g = std::fs::read_to_string(&out).unwrap();
            let r = Command::new(BIN).arg("-f").arg(&out).output().unwrap();
            proptest::prop_assert!(r.status.success(), "{:?} -> {}: {}", text, g, String::from_utf8_lossy(&r.stderr));
        }
    }
}

/// `--penalty-rule-b` on the command line, on examples/fig3-six-flows.goal
/// (H8_S1, thesis-ddr: 500 ps/B, 100 ns through the switch; L = o = g = G
/// = O = 0, eager). Rank 7's finish is f's end plus the 1-byte forward:
/// f enters its bandwidth phase at 100 000 ps and moves 20 971 520 B at
/// rho x 500 ps/B; the forward takes 100 000 + 500 ps.
/// table: rho = 1.5: 100 000 + 15 728 640 000 + 100 500 = 15 728 840 500;
/// printed: rho = 10/7: 100 000 + ceil(14 979 657 142.86) + 100 500 =
/// 14 979 857 643 ps.
#[test]
fn fig3_example_penalty_rule_b_cli() {
    let goal = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fig3-six-flows.goal");
    let run = |rule: &str| {
        let o = Command::new(BIN)
            .arg("-f")
            .arg(&goal)
            .args([
                "--network",
                "penalty",
                "--topology",
                "H8_S1",
                "--penalty-rule-b",
                rule,
            ])
            .args("-L 0 -o 0 -g 0 -G 0 -O 0 -S 100000000".split(' '))
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (c, out, err) = run("table");
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("Host 7: 15728840500 ps"), "{out}");
    let (c, out, err) = run("printed");
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("Host 7: 14979857643 ps"), "{out}");
    let (c, _, err) = run("tabel");
    assert_eq!(c, Some(2));
    assert!(
        err.contains("tabel") && err.contains("printed") && err.contains("table"),
        "{err}"
    );
}
