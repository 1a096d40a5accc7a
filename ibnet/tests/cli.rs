//! The `ibnet run` command line: presets shipped as files, error exits,
//! determinism of the JSON report.

mod common;
use common::words;
use std::path::PathBuf;
use std::process::Command;

use ibnet::Params;

fn ibnet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ibnet"))
}

fn presets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/presets")
}

#[test]
fn shipped_preset_files_equal_builtin_presets() {
    for name in ibnet::params::PRESETS {
        let text = std::fs::read_to_string(presets_dir().join(format!("{name}.toml"))).unwrap();
        // apply on top of a different preset: the file must set everything
        let from_file = Params::qdr().apply_toml(&text, name).unwrap();
        assert_eq!(from_file, Params::preset(name).unwrap(), "{name}.toml");
    }
    // the qdr file lists every key
    let text = std::fs::read_to_string(presets_dir().join("qdr.toml")).unwrap();
    let from_file = Params::hcyang99()
        .apply_toml(&text.replace("preset = \"qdr\"", ""), "qdr")
        .unwrap();
    assert_eq!(from_file, Params::qdr());
}

fn run_err(args: &[&str]) -> (i32, String) {
    let out = ibnet().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn errors_exit_nonzero_with_clear_messages() {
    let cases: &[(&str, &str)] = &[
        ("run --topology H8_S1 --set no_such_key=1", "no_such_key"),
        (
            "run --topology H8_S1 --set isw_delay_ns=abc",
            "isw_delay_ns",
        ),
        ("run --topology H8_S1 --set isw_delay_ns", "key=value"),
        ("run --topology H8_S1 --set msg_mtu=4096", "can never start"),
        ("run --topology H8_S1 --traffic param:1=99", "LID 99"),
        ("run --topology H8_S1 --traffic bogus:1", "unknown traffic"),
        ("run --topology no_such_topology", "no_such_topology"),
        ("run --topology H8_S1 --preset xdr", "unknown preset"),
        ("run --topology H8_S1 --until 5", "missing unit"),
    ];
    for (words, needle) in cases {
        let args: Vec<&str> = words.split_whitespace().collect();
        let (code, err) = run_err(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr {err:?} lacks {needle:?}"
        );
    }
    // a bad config file names file and line
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    let path = f.to_str().unwrap();
    std::fs::write(&f, "isw_delay_ns = 40.0\nvsw_delay = 3\n").unwrap();
    let (code, err) = run_err(&["run", "--topology", "H8_S1", "--config", path]);
    assert_eq!(code, 2);
    assert!(
        err.contains("vsw_delay") && err.contains("bad.toml"),
        "{err}"
    );
    std::fs::write(&f, "isw_delay_ns = = 4\n").unwrap();
    let (code, err) = run_err(&["run", "--topology", "H8_S1", "--config", path]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.toml:1"), "{err}");
}

#[test]
fn json_is_deterministic() {
    let args = words(
        "run --topology H8_S2 --preset qdr --traffic shift:3 --until 30us --json --latencies \
         --no-wall-time --set msg_length=20000 --set start_stat_col_ns=5000",
    );
    let a = ibnet().args(&args).output().unwrap();
    let b = ibnet().args(&args).output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert!(v["report"]["messages_completed"].as_u64().unwrap() > 10);
    assert!(v["report"]["messages"].as_array().unwrap().len() > 10);
    assert!(v["run"].get("wall_s").is_none());
}

#[test]
fn text_summary_and_closed_loop() {
    let out = ibnet()
        .args("run --topology H8_S1 --preset qdr --traffic dissemination:64:2".split_whitespace())
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("H_1.sink:") && s.contains("Msg-Network-Latency"),
        "{s}"
    );
    assert!(
        s.contains(
            "closed loop dissemination:64:2: 8 ranks, 48 messages, last completion 820.158 ns"
        ),
        "{s}"
    );
}

/// A run on huge pages (`IBNET_HUGEPAGES=on`: the binary executes itself
/// again with glibc's `glibc.malloc.hugetlb=1`; by default only networks of
/// 1024 HCAs or more) says so once and gives a report identical byte for
/// byte to the ordinary heap's. (Where the system's THP mode is not
/// `madvise` nothing is re-executed; the note is then absent.)
#[test]
fn huge_pages_change_nothing_but_the_speed() {
    let args = words("run --topology H8_S2 --traffic dissemination:180:3 --json --no-wall-time");
    let off = ibnet()
        .args(&args)
        .env("IBNET_HUGEPAGES", "off")
        .output()
        .unwrap();
    let on = ibnet()
        .args(&args)
        .env("IBNET_HUGEPAGES", "on")
        .env_remove("GLIBC_TUNABLES")
        .output()
        .unwrap();
    assert!(on.status.success() && off.status.success());
    assert_eq!(on.stdout, off.stdout);
    let note = "the heap on transparent huge pages";
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let err_on = String::from_utf8_lossy(&on.stderr);
    assert_eq!(
        err_on.matches(note).count(),
        usize::from(thp.contains("[madvise]")),
        "{thp}: {err_on}"
    );
    assert!(!String::from_utf8_lossy(&off.stderr).contains(note));
    // the default leaves an 8-HCA network alone
    let dflt = ibnet().args(&args).output().unwrap();
    assert!(!String::from_utf8_lossy(&dflt.stderr).contains(note));
    // with the wall time, the report says whether the heap was on huge pages
    let timed = |mode: &str| {
        let o = ibnet()
            .args(&args[..args.len() - 1])
            .env("IBNET_HUGEPAGES", mode)
            .env_remove("GLIBC_TUNABLES")
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["run"]["huge_pages"].as_bool().expect("run.huge_pages")
    };
    assert!(!timed("off"));
    assert_eq!(timed("on"), thp.contains("[madvise]"));
    let v: serde_json::Value = serde_json::from_slice(&off.stdout).unwrap();
    assert!(
        v["run"].get("huge_pages").is_none(),
        "not with --no-wall-time"
    );
}

/// A run that ends before the statistics start (100 us by default) says
/// what the report then computes differently; with the statistics starting
/// at 0 it says nothing.
#[test]
fn a_run_ending_before_the_statistics_start_is_warned() {
    let run = |extra: &[&str]| {
        let out = ibnet()
            .args(words(
                "run --topology H8_S1 --traffic shift:1 --until 10us --json",
            ))
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&[]);
    assert!(
        err.contains("ibnet: warning: the run ended at 10000000 ps, before the statistics start (start_stat_col_ns = 100000 ns): the sink bandwidth is computed from t = 0 instead"),
        "{err}"
    );
    let err = run(&["--set", "start_stat_col_ns=0"]);
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn event_order_is_checked_and_reported_only_when_local() {
    let run = |extra: &[&str]| {
        let mut a =
            words("run --topology fattree:4 --traffic shift:1 --until 20us --json --no-wall-time");
        a.extend_from_slice(extra);
        ibnet().args(&a).output().unwrap()
    };
    let fifo = run(&[]);
    assert!(fifo.status.success());
    let fifo = String::from_utf8(fifo.stdout).unwrap();
    assert!(!fifo.contains("event_order"), "{fifo}");
    // the reference order named explicitly is the default, byte for byte
    let named = run(&["--set", "event_order=fifo"]);
    assert_eq!(String::from_utf8(named.stdout).unwrap(), fifo);
    let local = run(&["--set", "event_order=local"]);
    assert!(local.status.success());
    let local = String::from_utf8(local.stdout).unwrap();
    assert!(local.contains("\"event_order\": \"local\""), "{local}");
    // the text summary names a non-reference order in its first line
    let text = |extra: &[&str]| {
        let mut a = words("run --topology fattree:4 --traffic shift:1 --until 5us");
        a.extend_from_slice(extra);
        let out = ibnet().args(&a).output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert!(text(&["--set", "event_order=local"]).ends_with("until 5000000 ps event order local"));
    assert!(text(&[]).ends_with("until 5000000 ps"));
    let bad = run(&["--set", "event_order=lifo"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8(bad.stderr).unwrap();
    assert!(
        err.contains("event_order") && err.contains("`fifo`") && err.contains("`local`"),
        "{err}"
    );
}

#[test]
fn threads_give_the_one_thread_report_byte_for_byte() {
    // a dragonfly with two VLs and random-permutation traffic, local order
    let run = |extra: &[&str]| {
        let mut a = words(
            "run --topology dragonfly:4:2:2:9 --set max_vl=1 --traffic perm:7 --until 30us \
             --set event_order=local --json --latencies --no-wall-time",
        );
        a.extend_from_slice(extra);
        let out = ibnet().args(&a).output().unwrap();
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (one, _) = run(&[]);
    assert!(one.contains("\"messages_completed\""));
    // a partition given by the user: every switch to process 0 or 1 by
    // parity, the HCAs with their switches
    let names = {
        let out = ibnet()
            .args(words(
                "run --topology dragonfly:4:2:2:9 --set max_vl=1 --traffic perm:7 --until 1ns --json",
            ))
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut s: Vec<String> = v["report"]["obufs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["node"].as_str().unwrap().to_string())
            .filter(|n| !n.starts_with('H'))
            .collect();
        s.dedup();
        s
    };
    assert!(names.len() > 8, "{names:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("part.txt");
    let text: String = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{n} {}  # by parity\n", i % 2))
        .collect();
    std::fs::write(&file, text).unwrap();
    let (given, err) = run(&["--threads", "2", "--partition", file.to_str().unwrap()]);
    assert!(given == one, "--partition: the report differs");
    assert!(err.contains("part.txt gives them"), "{err}");
    for n in ["2", "3"] {
        let (many, err) = run(&["--threads", n]);
        assert!(many == one, "--threads {n}: the report differs");
        // the partition is printed, one line per thread and the cut
        assert!(
            err.contains(&format!("ibnet: {n} logical processes on ")),
            "{err}"
        );
        assert!(
            err.contains("process 1: ") && err.contains("links join two processes"),
            "{err}"
        );
    }
    // with the wall time, the run says how it was split
    let (timed, _) = run(&["--threads", "2"]);
    assert!(!timed.contains("sync_rounds"));
    let a = words(
        "run --topology dragonfly:4:2:2:9 --set max_vl=1 --traffic perm:7 --until 5us \
         --set event_order=local --json --threads 2",
    );
    let out = ibnet().args(&a).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["run"]["threads"], 2);
    assert!(v["run"]["sync_rounds"].as_u64().unwrap() > 100);
    assert!(v["run"]["crossings"].as_u64().unwrap() > 0);
    assert!(v["run"]["sync_wait_s"].as_f64().unwrap() >= 0.0);
}

#[test]
fn threads_are_checked() {
    let run = |extra: &str| {
        let mut a = words("run --topology fattree:4 --traffic shift:1 --until 5us");
        a.extend(words(extra));
        ibnet().args(&a).output().unwrap()
    };
    for (extra, want) in [
        ("--threads 0", "--threads 0: expected 1 to 64"),
        ("--threads 65 --set event_order=local", "expected 1 to 64"),
        (
            "--threads 2 --set event_order=local --trace /dev/null",
            "--threads 2 does not support the flit trace",
        ),
        (
            "--distributed --threads 2",
            "--distributed runs one logical process per MPI rank",
        ),
        #[cfg(not(feature = "mpi"))]
        (
            "--distributed",
            "--distributed: this ibnet was built without MPI: build it with `cargo build --release -p ibnet --features mpi`",
        ),
    ] {
        let out = run(extra);
        assert_eq!(out.status.code(), Some(2), "{extra}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{extra}: {err}");
    }
    // a partition file: errors name the file and the line
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("part.txt");
    let part = file.to_str().unwrap();
    for (text, want) in [
        (
            "leaf_0 0\nleaf_0 1\n",
            "part.txt:2: node `leaf_0` is listed twice",
        ),
        (
            "# pods\nleaf_0 2\n",
            "part.txt:2: process `2`: expected 0 to 1",
        ),
        ("nosuch 0\n", "part.txt:1: no node `nosuch` in this network"),
        (
            "leaf_0\n",
            "part.txt:1: expected `NODE PROCESS`, found `leaf_0`",
        ),
        ("leaf_0 0\n", "has no line (every switch needs one)"),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = run(&format!(
            "--threads 2 --set event_order=local --partition {part}"
        ));
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{text}: {err}");
    }
    let out = run(&format!("--partition {part}"));
    assert_eq!(out.status.code(), Some(2));
    for (traffic, want) in [
        (
            "--traffic put:4096:1:2",
            "--threads 2 does not support one-sided operations (put, get)",
        ),
        (
            "--traffic dissemination --traffic shift:1",
            "--threads 2 does not support closed-loop traffic beside open-loop traffic",
        ),
    ] {
        let mut a = words("run --topology fattree:4 --threads 2");
        a.extend(words(traffic));
        let out = ibnet().args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{traffic}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{traffic}: {err}");
    }
}

/// A closed-loop pattern on several logical processes: the driver injects
/// each message when the one it waits for completes, as on one thread, so
/// the summary and the report are the same bytes (both orders, 2 and 3
/// processes, and a time limit that stops it with messages in flight).
#[test]
fn closed_loop_traffic_on_threads_gives_the_one_thread_report() {
    for (traffic, extra) in [
        ("dissemination:2048:2", ""),
        ("dissemination:2048:2", "--set event_order=local"),
        ("chain:8192:3", "--until 2us"),
    ] {
        let run = |threads: &str| {
            let mut a = words(
                "run --topology fattree:8 --preset qdr --json --latencies --no-wall-time --threads",
            );
            a.push(threads);
            let rest = format!("--traffic {traffic} {extra}");
            a.extend(words(&rest));
            let out = ibnet().args(&a).output().unwrap();
            assert!(
                out.status.success(),
                "{traffic} {extra} --threads {threads}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let one = run("1");
        let v: serde_json::Value = serde_json::from_str(&one).unwrap();
        let summary = &v["closed_loop"];
        assert_eq!(summary["ranks"], 32, "{traffic}");
        let limited = extra.contains("--until");
        assert_eq!(summary["stopped_at_limit"], limited, "{traffic}");
        if !limited {
            // five rounds of 32 messages per iteration
            assert_eq!(summary["messages"], 2 * 5 * 32, "{traffic}");
        }
        for n in ["2", "3"] {
            assert!(
                run(n) == one,
                "{traffic} {extra} --threads {n}: the report differs"
            );
        }
    }
    // the message records, written from the merged report
    let dir = tempfile::tempdir().unwrap();
    let csv = |threads: &str| {
        let f = dir.path().join(format!("messages{threads}.csv"));
        let mut a = words("run --topology fattree:8 --traffic dissemination:2048:2 --threads");
        a.push(threads);
        a.push("--messages-csv");
        a.push(f.to_str().unwrap());
        let out = ibnet().args(&a).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&f).unwrap()
    };
    let one = csv("1");
    // a header and 2 iterations of 5 rounds of 32 messages
    assert_eq!(one.lines().count(), 1 + 2 * 5 * 32);
    assert!(one.starts_with("id,src,dst,"), "{one}");
    assert_eq!(csv("2"), one);
}

/// The link statistics and heat map of a parallel run: every window end
/// read from the processes that own the ports, the same files as one
/// thread's, open and closed loops, both orders.
#[test]
fn link_statistics_on_threads_are_one_threads() {
    let dir = tempfile::tempdir().unwrap();
    for (traffic, extra) in [
        ("shift:3 --until 20us --window 2us", ""),
        (
            "dissemination:2048:3 --window 500ns",
            "--set event_order=local",
        ),
    ] {
        let files = |threads: &str| {
            let (ls, hm) = (
                dir.path().join(format!("links{threads}.csv")),
                dir.path().join(format!("heat{threads}.svg")),
            );
            let line = format!(
                "run --topology fattree:8 --traffic {traffic} {extra} --json --no-wall-time \
                 --threads {threads} --link-stats {} --heatmap {}",
                ls.display(),
                hm.display()
            );
            let out = ibnet().args(words(&line)).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            (
                std::fs::read_to_string(&ls).unwrap(),
                std::fs::read_to_string(&hm).unwrap(),
                out.stdout,
            )
        };
        let one = files("1");
        // a row per obuf (128) per window: ten windows of 2 us in 20 us
        let rows = one.0.lines().count() - 1;
        assert!(rows % 128 == 0 && rows >= 10 * 128, "{traffic}: {rows}");
        if traffic.starts_with("shift") {
            assert_eq!(rows, 10 * 128);
        }
        for n in ["2", "3"] {
            assert!(
                files(n) == one,
                "{traffic} {extra} --threads {n}: the files differ"
            );
        }
    }
}

#[test]
fn fabric_threads_of_the_server_are_checked() {
    // before any IPC object exists: exit 2 with the reason
    for (extra, want) in [
        ("--fabric-threads 0", "--fabric-threads 0: expected 1 to 64"),
        (
            "--fabric-threads 65",
            "--fabric-threads 65: expected 1 to 64",
        ),
        (
            "--fabric-partition part.txt",
            "--fabric-partition needs --fabric-threads 2 or more",
        ),
        (
            "--fabric-threads 2 --fabric-partition /nonexistent/part.txt",
            "--fabric-partition /nonexistent/part.txt: cannot read",
        ),
    ] {
        let mut a = words("serve --key clitest --topology fattree:4");
        a.extend(words(extra));
        let out = ibnet().args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{extra}: {err}");
    }
}
