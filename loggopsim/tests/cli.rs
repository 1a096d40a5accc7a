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
    // LogGOPSim's exact bytes behind the compatibility option.
    let o = run(&["-f", s(&f), "--loggopsim-output"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "LogGP network backend; size: 2 (1 CPUs, 1 NICs); L=2500, o=1500 g=1000, G=6, O=0, P=2, S=65535\n\
         PERFORMANCE: Processes: 2 \t Events: 8 \t Time: 0 s \t Speed: inf ev/s\n\
         Times: \nHost 0: 5654\nHost 1: 5654\n"
    );
    // Native output: every time names its unit, picoseconds;
    // the wall time to the microsecond (masked here; tests/bad_input.rs
    // checks it).
    let o = run(&["-f", s(&f)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        mask_perf(&String::from_utf8(o.stdout).unwrap()),
        "LogGP network backend; size: 2 (1 CPUs, 1 NICs); L=2500 ps, o=1500 ps, g=1000 ps, G=6 ps/B, O=0 ps/B, P=2, S=65535 B\n\
         PERFORMANCE: Processes: 2 \t Events: 8 \t Time: T s \t Speed: V ev/s\n\
         Times: \nHost 0: 5654 ps\nHost 1: 5654 ps\n"
    );
}

/// The output with the PERFORMANCE line's time and speed replaced by `T`
/// and `V` (they are measured).
fn mask_perf(out: &str) -> String {
    out.lines()
        .map(|l| match l.strip_prefix("PERFORMANCE: ") {
            Some(rest) => {
                let f: Vec<&str> = rest.split(" \t ").collect();
                assert_eq!(f.len(), 4, "{l}");
                assert!(f[2].starts_with("Time: ") && f[2].ends_with(" s"), "{l}");
                assert!(
                    f[3].starts_with("Speed: ") && f[3].ends_with(" ev/s"),
                    "{l}"
                );
                format!(
                    "PERFORMANCE: {} \t {} \t Time: T s \t Speed: V ev/s",
                    f[0], f[1]
                )
            }
            None => l.to_string(),
        })
        .map(|l| l + "\n")
        .collect()
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
        "--loggopsim-output",
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
    let out =
        String::from_utf8(run(&["-f", s(&f), "--batchmode", "--loggopsim-output"]).stdout).unwrap();
    assert!(out.ends_with("PERFORMANCE: Processes: 2 \t Events: 8 \t Time: 0 s \t Speed: inf ev/s\nMaximum finishing time at host 0: 5654 (5.654e-06 s)\n"), "{out}");
    // Native: picoseconds, and the human form is right for ps (5654 ps is
    // 5.654 ns, not 5.654 us as LogGOPSim's "(5.654e-06 s)" reads).
    let out = String::from_utf8(run(&["-f", s(&f), "--batchmode"]).stdout).unwrap();
    assert!(
        out.ends_with("Maximum finishing time at host 0: 5654 ps (5.654 ns)\n"),
        "{out}"
    );
}

#[test]
fn more_than_16_hosts_prints_maximum_only() {
    let d = tempfile::tempdir().unwrap();
    let mut t = String::from("num_ranks 17\n");
    for r in 0..17 {
        t += &format!("rank {r} {{\nl1: calc {}\n}}\n", 1000 * (r % 5));
    }
    let f = write(d.path(), "m.goal", &t);
    let out = String::from_utf8(run(&["-f", s(&f), "--loggopsim-output"]).stdout).unwrap();
    assert!(
        out.ends_with("Maximum finishing time at host 4: 4000 (4e-06 s)\n"),
        "{out}"
    );
    assert!(!out.contains("Host 0:"));
    let out = String::from_utf8(run(&["-f", s(&f)]).stdout).unwrap();
    assert!(
        out.ends_with("Maximum finishing time at host 4: 4000 ps (4 ns)\n"),
        "{out}"
    );
}

#[test]
fn json_report() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let o = run(&["-f", s(&f), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    // Units in the keys, numbers as values.
    assert_eq!(v["finish_times_ps"], serde_json::json!([5654, 5654]));
    assert_eq!(v["max_finish_time_ps"], 5654);
    assert_eq!(v["end_time_ps"], 4100);
    assert_eq!(v["events"], 8);
    assert_eq!(v["params"]["L_ps"], 2500);
    assert_eq!(v["params"]["G_ps_per_byte"], 6);
    assert_eq!(v["params"]["S_bytes"], 65535);
    assert!(v.get("finish_times").is_none() && v["params"].get("L").is_none());
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
    let stdout = |p: &Path| mask_perf(&String::from_utf8(run(&["-f", s(p)]).stdout).unwrap());
    let a = stdout(&f);
    assert_eq!(stdout(&bin), a);
    assert_eq!(stdout(&txt), a);
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
    let o = run(&["-f", s(&f), "--timeline", s(&tl), "--qstat", s(&q), "-v"]);
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
    // -v lines name the unit of their times.
    let v = String::from_utf8(o.stdout).unwrap();
    assert!(
        v.contains("Calc { host: 0, cpu: 0, node: 0, start: 0 ps, end: 100 ps }"),
        "{v}"
    );
    assert!(
        v.contains("size: 10, tag: 0, start: 100 ps, end: 1600 ps"),
        "{v}"
    );
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
    let t0 = v["finish_times_ps"][0].as_u64().unwrap();
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
        v["finish_times_ps"], v2["finish_times_ps"],
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

fn code_and_err(o: &Output) -> (Option<i32>, String) {
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Time overflow was a silent saturation at 2^64-1 (the
/// protocol's "never") with exit 0; it is bad input, exit 2.
#[test]
fn time_overflow_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "o.goal",
        "num_ranks 1\nrank 0 {\nl1: calc 18446744073709551615\nl2: calc 1\nl2 requires l1\n}\n",
    );
    let (c, e) = code_and_err(&run(&["-f", s(&f)]));
    assert_eq!(c, Some(2), "{e}");
    assert!(e.contains("time overflow on host 0 (calc"), "{e}");
    // The largest valid time is 2^64-2.
    let ok = write(
        d.path(),
        "k.goal",
        "num_ranks 1\nrank 0 {\nl1: calc 18446744073709551614\n}\n",
    );
    let o = run(&["-f", s(&ok)]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("Host 0: 18446744073709551614 ps"));
    let pp = write(
        d.path(),
        "p.goal",
        "num_ranks 2\nrank 0 {\nl1: send 2b to 1 tag 0\n}\nrank 1 {\nl1: recv 2b from 0 tag 0\n}\n",
    );
    for flag in ["-L", "-G", "-o", "-g", "-O"] {
        let (c, e) = code_and_err(&run(&["-f", s(&pp), flag, "18446744073709551615"]));
        assert_eq!(c, Some(2), "{flag}: {e}");
        assert!(e.contains("time overflow on host"), "{flag}: {e}");
    }
}

/// Times on the command line take unit suffixes; bare numbers are ps.
#[test]
fn time_arguments_take_units() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let base = run(&["-f", s(&f), "-L", "100", "-o", "10", "--json"]).stdout;
    let v: serde_json::Value = serde_json::from_slice(&base).unwrap();
    let with_units = run(&["-f", s(&f), "-L", "0.1ns", "-o", "10ps", "--json"]).stdout;
    let w: serde_json::Value = serde_json::from_slice(&with_units).unwrap();
    assert_eq!(v["finish_times_ps"], w["finish_times_ps"]);
    assert_eq!(w["params"]["L_ps"], 100);
    let o = run(&["-f", s(&f), "-L", "1us", "--json"]).stdout;
    let w: serde_json::Value = serde_json::from_slice(&o).unwrap();
    assert_eq!(w["params"]["L_ps"], 1_000_000);
    for bad in [
        "1.5",
        "18446744073709551616",
        "18446744073709552ns",
        "-1",
        "5h",
        "0.0001ns",
    ] {
        let arg = format!("-L={bad}");
        let (c, e) = code_and_err(&run(&["-f", s(&f), &arg]));
        assert_eq!(c, Some(2), "{bad}");
        assert!(e.contains("-L"), "{bad}: {e}");
    }
}

/// `-V` is `--version` as in every binary; the timeline is `--timeline`.
#[test]
fn capital_v_is_version() {
    let o = run(&["-V"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .starts_with("loggopsim "));
    assert_eq!(run(&["--version"]).stdout, run(&["-V"]).stdout);
}

/// `--report FILE` writes a copy; stdout is unchanged.
#[test]
fn report_file_is_a_copy() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    for extra in [&[][..], &["--json"][..], &["--loggopsim-output"][..]] {
        let rep = d.path().join("r.txt");
        let mut args = vec!["-f", s(&f)];
        args.extend_from_slice(extra);
        let plain = run(&args).stdout;
        args.extend_from_slice(&["--report", s(&rep)]);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0));
        let copy = std::fs::read(&rep).unwrap();
        if extra == ["--json"] {
            // wall/cpu times differ between runs; compare the results
            let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let b: serde_json::Value = serde_json::from_slice(&copy).unwrap();
            let c: serde_json::Value = serde_json::from_slice(&plain).unwrap();
            assert_eq!(a, b);
            assert_eq!(a["finish_times_ps"], c["finish_times_ps"]);
        } else {
            assert_eq!(o.stdout, copy);
            let masked = |b: &[u8]| mask_perf(std::str::from_utf8(b).unwrap());
            assert_eq!(masked(&o.stdout), masked(&plain));
        }
    }
}

/// `--progress` prints plain lines when stderr is not a terminal.
#[test]
fn progress_lines_without_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let o = run(&["-f", s(&f), "--progress"]);
    assert_eq!(o.status.code(), Some(0));
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.contains("loggopsim: progress: started, 6 operations on 2 ranks\n"),
        "{e}"
    );
    assert!(e.contains("loggopsim: progress: finished, "), "{e}");
    assert!(
        e.contains(" 8 events, simulated time 4100 ps (4.1 ns)\n"),
        "{e}"
    );
}

/// Devices and FIFOs are refused at once, endless lines
/// are cut off.
#[test]
fn devices_fifos_and_endless_lines_are_refused() {
    let t0 = std::time::Instant::now();
    let (c, e) = code_and_err(&run(&["-f", "/dev/zero"]));
    assert_eq!(c, Some(2));
    assert!(e.contains("/dev/zero: is not a regular file"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (c, e) = code_and_err(&run(&["-f", s(&fifo)]));
    assert_eq!(c, Some(2));
    assert!(e.contains("is not a regular file"), "{e}");
    let (c, _) = code_and_err(&run(&["convert", s(&fifo), s(&d.path().join("x"))]));
    assert_eq!(c, Some(2));
    assert!(t0.elapsed().as_secs() < 10, "no blocking");
    // A 2 MiB line: refused with the line number, not read into memory whole.
    let mut big = b"num_ranks 1\n".to_vec();
    big.extend(std::iter::repeat(b'x').take(2 << 20));
    let f = d.path().join("long.goal");
    std::fs::write(&f, &big).unwrap();
    let (c, e) = code_and_err(&run(&["-f", s(&f)]));
    assert_eq!(c, Some(2));
    assert!(
        e.contains("long.goal:2:1: line longer than 1048576 bytes"),
        "{e}"
    );
}

/// Trailing data after a binary schedule was ignored.
#[test]
fn binary_with_trailing_data_is_rejected() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "w.goal", WORKED);
    let bin = d.path().join("w.bin");
    assert_eq!(run(&["convert", s(&f), s(&bin)]).status.code(), Some(0));
    let mut b = std::fs::read(&bin).unwrap();
    let n = b.len();
    b.extend_from_slice(b"junk");
    std::fs::write(&bin, &b).unwrap();
    let (c, e) = code_and_err(&run(&["-f", s(&bin)]));
    assert_eq!(c, Some(2));
    assert!(
        e.contains(&format!(
            "w.bin: byte offset {n}: 4 bytes of trailing data after the last rank block"
        )),
        "{e}"
    );
}

/// A send larger than the fabric simulates is refused
/// before the fabric starts (it aborted the fabric with an allocation failure).
#[test]
fn fabric_backends_refuse_huge_messages() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "h.goal",
        "num_ranks 2\nrank 0 {\nl1: send 18446744073709551615b to 1 tag 0\n}\nrank 1 {\nl1: recv 18446744073709551615b from 0 tag 0\n}\n",
    );
    for net in ["inproc", "ipc"] {
        let (c, e) = code_and_err(&run(&[
            "-f",
            s(&f),
            "--network",
            net,
            "--key",
            "sizecheck",
            "-G",
            "0",
            "-O",
            "0",
        ]));
        assert_eq!(c, Some(2), "{net}: {e}");
        assert!(
            e.contains("h.goal: rank 0: a send of 18446744073709551615 bytes is larger than the largest message the fabric simulates (1099511627776 bytes, 1 TiB)"),
            "{net}: {e}"
        );
    }
}

/// Bad input to `gen` (a communicator of 0 ranks) and `trace2goal` (a size
/// beyond a C int, an empty trace) through the binary: exit 2 with file and
/// line, no file written.
#[test]
fn gen_and_trace2goal_bad_input_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o.goal");
    let (c, e) = code_and_err(&run(&["gen", "dissemination", "-s", "0", "-o", s(&out)]));
    assert_eq!(c, Some(2));
    assert!(e.contains("--commsize must be at least 1"), "{e}");
    assert!(!out.exists(), "no file written");
    let t = write(d.path(), "t-0.txt", "MPI_Init:-:1:2:100\nMPI_Send:110:4096:536870912:11,4,4:0:7:0,0,1:115\nMPI_Finalize:400:-\n");
    let (c, e) = code_and_err(&run(&["trace2goal", "--traces", s(&t), "-o", s(&out)]));
    assert_eq!(c, Some(2));
    assert!(
        e.contains("t-0.txt:2: ") && e.contains("larger than 2147483647 bytes"),
        "{e}"
    );
    let t = write(d.path(), "e-0.txt", "");
    let (c, e) = code_and_err(&run(&["trace2goal", "--traces", s(&t), "-o", s(&out)]));
    assert_eq!(c, Some(2));
    assert!(e.contains("e-0.txt: the trace is empty"), "{e}");
    assert!(!out.exists());
}

/// `gen` refuses sizes whose schedule cannot be built in memory, at once.
#[test]
fn gen_refuses_unbounded_sizes() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o.goal");
    let t0 = std::time::Instant::now();
    let (c, e) = code_and_err(&run(&[
        "gen",
        "linear_alltoallv",
        "-s",
        "2000000",
        "-o",
        s(&out),
    ]));
    assert_eq!(c, Some(2));
    assert!(e.contains("limit 16384 ranks"), "{e}");
    assert!(t0.elapsed().as_secs() < 5);
    assert!(!out.exists());
}
