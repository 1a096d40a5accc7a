//! The built binary: output format byte for byte, exit codes, convert.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_loggopsim");

const WORKED: &str = "num_ranks 2\n\nrank 0 {\nl1: calc 100 cpu 0\nl2: send 10b to 1 tag 0 cpu 0 nic 0\nl3: recv 10b from 1 tag 0 cpu 0 nic 0\nl2 requires l1\n}\n\nrank 1 {\nl1: calc 100 cpu 0\nl2: send 10b to 0 tag 0 cpu 0 nic 0\nl3: recv 10b from 0 tag 0 cpu 0 nic 0\nl2 requires l1\n}\n";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn worked_example_output_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "LogGP network backend; size: 2 (1 CPUs, 1 NICs); L=2500, o=1500 g=1000, G=6, O=0, P=2, S=65535\n\
         PERFORMANCE: Processes: 2 \t Events: 8 \t Time: 0 s \t Speed: inf ev/s\n\
         Times: \nHost 0: 5654\nHost 1: 5654\n"
    );
}

#[test]
fn options_change_parameters_and_header() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    // L=100 o=10 g=5 G=1 O=0: send at 100, event at 210, receiver 210+10+9 = 229
    let o = run(&[
        "-f",
        s(&f),
        "-L",
        "100",
        "-o",
        "10",
        "-g",
        "5",
        "-G",
        "1",
        "-O",
        "0",
        "-S",
        "100",
    ]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.starts_with("LogGP network backend; size: 2 (1 CPUs, 1 NICs); L=100, o=10 g=5, G=1, O=0, P=2, S=100\n"), "{out}");
    assert!(
        out.ends_with("Times: \nHost 0: 229\nHost 1: 229\n"),
        "{out}"
    );
}

#[test]
fn batchmode_prints_maximum_only() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let out = String::from_utf8(run(&["-f", s(&f), "--batchmode"]).stdout).unwrap();
    assert!(out.ends_with("PERFORMANCE: Processes: 2 \t Events: 8 \t Time: 0 s \t Speed: inf ev/s\nMaximum finishing time at host 0: 5654 (5.654e-06 s)\n"), "{out}");
}

#[test]
fn more_than_16_hosts_prints_maximum_only() {
    let d = tempfile::tempdir().unwrap();
    let mut t = String::from("num_ranks 17\n");
    for r in 0..17 {
        t += &format!("rank {r} {{\nl1: calc {}\n}}\n", 1000 * (r % 5));
    }
    let f = write(d.path(), "m.goal", &t);
    let out = String::from_utf8(run(&["-f", s(&f)]).stdout).unwrap();
    assert!(
        out.ends_with("Maximum finishing time at host 4: 4000 (4e-06 s)\n"),
        "{out}"
    );
    assert!(!out.contains("Host 0:"));
}

#[test]
fn json_report() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let o = run(&["-f", s(&f), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["finish_times"], serde_json::json!([5654, 5654]));
    assert_eq!(v["events"], 8);
    assert_eq!(v["params"]["L"], 2500);
    assert_eq!(v["network"], "LogGP");
    assert!(v["wall_time_s"].as_f64().unwrap() >= 0.0);
}

#[test]
fn unmatched_queues_exit_1_and_are_printed() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "u.goal", "num_ranks 2\nrank 0 {\nl1: recv 10b from 1 tag 1\n}\nrank 1 {\nl1: send 12b to 0 tag 2\n}\n");
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("Host 0 RQ: src=1 tag=1 size=10\nHost 0 UQ: src=1 tag=2 size=12\n"),
        "{out}"
    );
    assert!(!out.contains("Times:"));
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["-f", s(&f), "--json"]).stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["leftovers"][0]["unexpected"][0]["tag"], 2);
}

#[test]
fn parse_error_exit_2_with_position() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "bad.goal",
        "num_ranks 2\nrank 0 {\nl1: send 5b to 7\n}\nrank 1 {\n}\n",
    );
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("bad.goal:3:16: peer 7 is outside 0..1"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(run(&["-f", "/nonexistent/x.goal"]).status.code(), Some(2));
    assert_eq!(run(&["-L", "abc", "-f", "x"]).status.code(), Some(2));
    assert_eq!(
        run(&["--network", "nosuch", "-f", "x"]).status.code(),
        Some(2)
    );
}

#[test]
fn convert_text_binary_text_and_simulate_binary() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let bin = d.path().join("w.bin");
    let txt = d.path().join("w2.goal");
    assert_eq!(run(&["convert", s(&f), s(&bin)]).status.code(), Some(0));
    assert_eq!(&std::fs::read(&bin).unwrap()[..8], &4223u64.to_le_bytes());
    assert_eq!(run(&["convert", s(&bin), s(&txt)]).status.code(), Some(0));
    let t = std::fs::read_to_string(&txt).unwrap();
    assert!(
        t.starts_with("num_ranks 2\n\nrank 0 {\nl1: calc 100\nl2: send 10b to 1 tag 0\n"),
        "{t}"
    );
    let a = run(&["-f", s(&f)]).stdout;
    assert_eq!(run(&["-f", s(&bin)]).stdout, a);
    assert_eq!(run(&["-f", s(&txt)]).stdout, a);
    // forced direction
    let bin2 = d.path().join("w2.bin");
    assert_eq!(
        run(&["convert", "--to", "binary", s(&txt), s(&bin2)])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(std::fs::read(&bin).unwrap(), std::fs::read(&bin2).unwrap());
}

#[test]
fn consumed_binary_is_rejected() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let bin = d.path().join("w.bin");
    run(&["convert", s(&f), s(&bin)]);
    let mut b = std::fs::read(&bin).unwrap();
    b[..8].copy_from_slice(&2342u64.to_le_bytes());
    std::fs::write(&bin, &b).unwrap();
    let o = run(&["-f", s(&bin)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8(o.stderr).unwrap().contains("consumed"));
}

#[test]
fn timeline_verbose_qstat_noise() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let tl = d.path().join("tl.txt");
    let q = d.path().join("q");
    let o = run(&["-f", s(&f), "-V", s(&tl), "--qstat", s(&q), "-v"]);
    assert_eq!(o.status.code(), Some(0));
    let t = std::fs::read_to_string(&tl).unwrap();
    assert!(t.contains("loclop 0 0 0 100 0.0 0.0 1.0;\n"), "{t}");
    assert!(t.contains("osend 0 0 100 1600 1.0 0.0 0.0;\n"), "{t}");
    assert!(t.contains("orecv 1 0 4100 5654 0.0 1.0 0.0;\n"), "{t}");
    assert!(
        t.contains("transmission 0 1 1600 4100 10 6 0.0 0.0 0.0;\n"),
        "{t}"
    );
    let qs = std::fs::read_to_string(d.path().join("q.qstat")).unwrap();
    assert_eq!(qs, "# host max_rq max_uq\n0 1 0\n1 1 0\n");
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("Calc { host: 0"));
    // noise: one event of 50 every 100 time units; calc 100 on each host gets 50 more
    let nf = write(d.path(), "noise.txt", "0\t50\n");
    let o = run(&[
        "-f",
        s(&f),
        "--noise-trace",
        s(&nf),
        "--noise-seed",
        "3",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t0 = v["finish_times"][0].as_u64().unwrap();
    assert!(t0 > 5654, "noise adds time: {t0}");
    let o2 = run(&[
        "-f",
        s(&f),
        "--noise-trace",
        s(&nf),
        "--noise-seed",
        "3",
        "--json",
    ]);
    let v2: serde_json::Value = serde_json::from_slice(&o2.stdout).unwrap();
    assert_eq!(
        v["finish_times"], v2["finish_times"],
        "same seed, same result"
    );
}

#[test]
fn subcommands_are_wired() {
    let o = run(&["gen", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let o = run(&["trace2goal", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let o = run(&["convert", "--help"]);
    assert_eq!(o.status.code(), Some(0));
}
