//! Regression tests of ibnet's input handling (each failed before its fix):
//! bad input is a clear error naming file and line, exit 2, no panic, no
//! abort, no hang; units and flags of `ibnet run`.

mod common;
use common::words;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ibnet::{Params, Time};
use serde_json::Value;

const SHARED: &str = concat!(env!("IBCOSIM_REFERENCE_DATA_DIR"), "/ibmodel-32n");

fn shared(name: &str) -> PathBuf {
    common::reference_file(SHARED, name, "this test needs")
}

/// Run ibnet (killed after 30 s: a hang is a failure, not a stuck suite).
fn ibnet_in(args: &[&str], cwd: Option<&Path>) -> Output {
    use std::io::Read;
    let mut c = Command::new(env!("CARGO_BIN_EXE_ibnet"));
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let mut child = c.spawn().unwrap();
    // drain both pipes while waiting (a full pipe would block the child)
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let errs = drain(Box::new(child.stderr.take().unwrap()));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("ibnet {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: errs.join().unwrap(),
    }
}

fn ibnet(args: &[&str]) -> Output {
    ibnet_in(args, None)
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2 and a stderr containing every needle.
fn assert_bad_input(args: &[&str], needles: &[&str]) {
    let o = ibnet(args);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "ibnet {args:?}: {e}");
    for n in needles {
        assert!(e.contains(n), "ibnet {args:?}: stderr lacks {n:?}: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", err(o));
    serde_json::from_slice(&o.stdout).unwrap()
}

// delays that round to zero --------------------------------------------

#[test]
fn delays_that_round_to_zero_ps_are_rejected() {
    assert_bad_input(
        &words("run --topology H8_S1 --traffic shift:1 --until 1us --set cred_min_time_ns=0.0004"),
        &["cred_min_time_ns", "rounds to 0 ps"],
    );
    assert_bad_input(
        &words("run --topology H8_S1 --traffic shift:1 --until 1us --set hiccup_delay_ns=0.0001"),
        &["hiccup_delay_ns", "rounds to 0 ps"],
    );
    // the smallest accepted values: 0.0005 ns rounds to 1 ps
    let p = Params::qdr()
        .apply_override("cred_min_time_ns=0.0005")
        .unwrap()
        .apply_override("hiccup_delay_ns=0.0005")
        .unwrap();
    p.check().unwrap();
}

// huge sizes -----------------------------------------------------------

#[test]
fn huge_sizes_are_errors_not_aborts() {
    assert_bad_input(
        &words("run --topology H8_S1 --traffic dissemination:18446744073709551615:1"),
        &["18446744073709551615", "1 TiB"],
    );
    assert_bad_input(
        &words(
            "run --topology H8_S1 --preset hcyang99 --set cc_cct_limit=4294967295 \
             --traffic shift:1 --until 1us",
        ),
        &["cc_cct_limit", "65535"],
    );
    assert_bad_input(
        &words(
            "run --topology H8_S1 --set msg_length=18446744073709551615 --traffic shift:1 \
             --until 1us",
        ),
        &["msg_length"],
    );
    // a 2^64-1 B message injected through the engine API (what the server
    // does for an Insert record) is refused without allocating
    let t = ibnet::topology::builtin("H8_S1").unwrap();
    let mut f = ibnet::Fabric::new(&t, &Params::qdr()).unwrap();
    let e = f.inject(Time(0), 0, 1, u64::MAX).unwrap_err();
    assert!(e.to_string().contains("1 TiB"), "{e}");
}

// file names without a directory part ----------------------------------

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn topology_files_without_a_directory_part() {
    let dir = tempfile::tempdir().unwrap();
    for n in [
        "is1_3l_32n.topo",
        "ftree.hcas",
        "is1_3l_32n.fdbs",
        "is1_3l_32n.fdbs.ini",
    ] {
        std::os::unix::fs::symlink(shared(n), dir.path().join(n)).unwrap();
    }
    let o = ibnet_in(
        &words("run --topology is1_3l_32n.topo --preset qdr --until 1us --json"),
        Some(dir.path()),
    );
    assert_eq!(json(&o)["report"]["topology"], "is1_3l_32n");
    // an [ibdm] table naming the .topo without a directory (hcas by convention)
    std::fs::write(
        dir.path().join("net.toml"),
        "[ibdm]\ntopo = \"is1_3l_32n.topo\"\n",
    )
    .unwrap();
    let o = ibnet_in(
        &["run", "--topology", "net.toml", "--until", "1us", "--json"],
        Some(dir.path()),
    );
    let v = json(&o);
    assert_eq!(v["report"]["sinks"].as_array().unwrap().len(), 32);
}

// --until with closed-loop traffic -------------------------------------

#[test]
fn until_stops_closed_loop_traffic() {
    let t0 = Instant::now();
    let o = ibnet(&words(
        "run --topology H8_S1 --preset qdr --traffic dissemination:10000000:1 --until \
        1us --json --no-wall-time",
    ));
    let v = json(&o);
    assert_eq!(v["run"]["sim_time_ps"], 1_000_000);
    assert_eq!(v["report"]["now_ps"], 1_000_000);
    assert_eq!(v["closed_loop"]["stopped_at_limit"], true);
    // 1 us of an 8-host switch, not the 3.1 ms of the whole pattern
    assert!(
        v["run"]["events_processed"].as_u64().unwrap() < 100_000,
        "{}",
        v["run"]
    );
    assert!(t0.elapsed() < Duration::from_secs(20));
    // without --until the pattern runs to its end
    let o = ibnet(&words(
        "run --topology H8_S1 --preset qdr --traffic dissemination:1000:1 --json --no-wall-time",
    ));
    let v = json(&o);
    assert_eq!(v["closed_loop"]["stopped_at_limit"], false);
    assert_eq!(v["closed_loop"]["messages"], 24);
}

// out-of-range delays --------------------------------------------------

const DELAY_KEYS: &[&str] = &[
    "gen_dly_per_byte_ns",
    "gen_pop_dly_per_byte_ns",
    "msg2msg_gap_ns",
    "sink_pop_dly_per_byte_ns",
    "hiccup_duration_ns",
    "hiccup_delay_ns",
    "start_stat_col_ns",
    "cred_min_time_ns",
    "isw_delay_ns",
    "vsw_delay_ns",
    "cc_timer_ns",
    "cc_cct_coeff_ns",
    "cc_base_interval_ns",
];

#[test]
fn out_of_range_delays_are_errors() {
    for key in DELAY_KEYS {
        for v in ["1e17", "1e308", "1.7976931348623157e308", "1e13"] {
            let e = Params::qdr()
                .apply_override(&format!("{key}={v}"))
                .unwrap()
                .check()
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(key) && e.contains("out of range"),
                "{key}={v}: {e}"
            );
        }
        // the largest accepted: 1000 s (for the per-byte keys, of a flit)
        let ok = if key.contains("per_byte") {
            "15.625e9"
        } else {
            "1e12"
        };
        let p = Params::qdr()
            .apply_override(&format!("{key}={ok}"))
            .unwrap();
        if *key == "cc_cct_coeff_ns" {
            // 127^2 x coefficient must stay in range too
            assert!(p.check().is_err());
        } else {
            p.check().unwrap_or_else(|e| panic!("{key}={ok}: {e}"));
        }
    }
    for (key, needle) in [
        ("isw_delay_ns=1e17", "isw_delay_ns"),
        ("vsw_delay_ns=1e308", "vsw_delay_ns"),
    ] {
        assert_bad_input(
            &[
                "run",
                "--topology",
                "H8_S1",
                "--traffic",
                "shift:1",
                "--until",
                "1us",
                "--set",
                key,
            ],
            &[needle, "out of range"],
        );
    }
    // a link so slow that a flit takes longer than 1000 s
    assert_bad_input(
        &words("run --topology H8_S1 --until 1us --set link_speed=1e-12"),
        &["link_speed", "out of range"],
    );
}

// error messages name file, line and parameter -------------------------

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn errors_name_file_line_and_the_right_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // non-UTF-8: TOML topology, IBDM .topo, dstSeq, --config
    let topo = d.join("t.toml");
    std::fs::write(&topo, b"name = \"x\"\n# ok\nnodes = [\xff]\n").unwrap();
    assert_bad_input(
        &["run", "--topology", topo.to_str().unwrap()],
        &["t.toml:3:10", "UTF-8"],
    );
    let mut ibdm = std::fs::read(shared("is1_3l_32n.topo")).unwrap();
    ibdm.splice(0..0, b"\n\n\xfe".iter().copied());
    std::fs::write(d.join("bad.topo"), &ibdm).unwrap();
    std::fs::copy(shared("ftree.hcas"), d.join("bad.hcas")).unwrap();
    assert_bad_input(
        &["run", "--topology", d.join("bad.topo").to_str().unwrap()],
        &["bad.topo:3:1", "UTF-8"],
    );
    std::fs::write(d.join("s.dstSeq"), b"0: 2\n1: 1\xc3\n").unwrap();
    std::fs::write(d.join("s.dstSeq.ini"), "**H_1_U1.gen.dstSeqIndex = 0\n").unwrap();
    let spec = format!("seq_loop:{}", d.join("s.dstSeq").display());
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--traffic",
            &spec,
            "--until",
            "1us",
        ],
        &["s.dstSeq:2:5", "UTF-8"],
    );
    let cfg = d.join("c.toml");
    std::fs::write(&cfg, b"isw_delay_ns = 40\n\xe9\n").unwrap();
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &["c.toml:2:1", "UTF-8"],
    );
    // range errors from --config name file and line
    std::fs::write(&cfg, "# comment\nvsw_delay_ns = 50\nisw_delay_ns = 1e17\n").unwrap();
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &["c.toml:3", "isw_delay_ns", "out of range"],
    );
    std::fs::write(&cfg, "link_width = 0\n").unwrap();
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &["c.toml:1", "`link_width`"],
    );
    std::fs::write(&cfg, "\nbus_width_switch = 0\n").unwrap();
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &["c.toml:2", "`bus_width_switch`"],
    );
    std::fs::write(&cfg, "cc_cct_limit = 99999999999\n").unwrap();
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &["c.toml:1", "cc_cct_limit"],
    );
    std::fs::write(&cfg, "\n\nisw_delay_ns = \"fast\"\n").unwrap();
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            cfg.to_str().unwrap(),
        ],
        &["c.toml:3", "isw_delay_ns", "wrong type"],
    );
    // and through --set: the right key
    assert_bad_input(
        &["run", "--topology", "H8_S1", "--set", "link_width=0"],
        &["`link_width`"],
    );
    assert_bad_input(
        &["run", "--topology", "H8_S1", "--set", "bus_width_switch=0"],
        &["`bus_width_switch`"],
    );
    // an empty topology file names its path
    let empty = d.join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    assert_bad_input(
        &["run", "--topology", empty.to_str().unwrap()],
        &[empty.to_str().unwrap(), "no nodes"],
    );
    std::fs::write(d.join("e.topo"), "").unwrap();
    std::fs::write(d.join("e.hcas"), "").unwrap();
    assert_bad_input(
        &["run", "--topology", d.join("e.topo").to_str().unwrap()],
        &["e.topo"],
    );
}

// serve with a bad key -------------------------------------------------

#[test]
fn serve_with_a_bad_key_exits_2() {
    assert_bad_input(&["serve", "--key", "a/b", "--topology", "H8_S1"], &["a/b"]);
}

// devices and FIFOs ----------------------------------------------------

#[test]
fn devices_and_fifos_are_refused_without_hanging() {
    assert_bad_input(
        &["run", "--topology", "/dev/zero"],
        &["/dev/zero", "not a regular file"],
    );
    assert_bad_input(
        &["run", "--topology", "H8_S1", "--config", "/dev/zero"],
        &["/dev/zero", "not a regular file"],
    );
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.toml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // nobody writes to the FIFO: reading it would block forever
    assert_bad_input(
        &["run", "--topology", fifo.to_str().unwrap()],
        &["pipe.toml", "FIFO"],
    );
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--config",
            fifo.to_str().unwrap(),
        ],
        &["pipe.toml", "FIFO"],
    );
    let spec = format!("seq_loop:{}", fifo.display());
    assert_bad_input(
        &[
            "run",
            "--topology",
            "H8_S1",
            "--traffic",
            &spec,
            "--until",
            "1us",
        ],
        &["pipe.toml", "FIFO"],
    );
}

// statistics window, progress, units, flags ------------------------------

#[test]
fn short_runs_get_bandwidth_and_a_warning() {
    let args = words(
        "run --topology H8_S1 --preset qdr --traffic shift:1 --until 20us --json --no-wall-time",
    );
    let o = ibnet(&args);
    let v = json(&o);
    let bw = v["report"]["sinks"][1]["sink_bw_mbps"].as_f64().unwrap();
    // a 4x QDR link streams at most 4000 MB/s of flits
    assert!(bw > 1000.0 && bw <= 4000.0, "{bw}");
    assert_eq!(v["report"]["stat_window_start_ps"], 0);
    assert!(v["warnings"][0]
        .as_str()
        .unwrap()
        .contains("start_stat_col_ns"));
    assert!(err(&o).contains("warning"), "{}", err(&o));
    // the same run with the window at 0: the same bandwidth, no warning
    let mut a2 = args.to_vec();
    a2.extend(["--set", "start_stat_col_ns=0"]);
    let o2 = ibnet(&a2);
    let v2 = json(&o2);
    assert_eq!(
        v2["report"]["sinks"][1]["sink_bw_mbps"].as_f64().unwrap(),
        bw
    );
    assert!(v2.get("warnings").is_none());
    assert!(!err(&o2).contains("warning"));
}

#[test]
fn progress_prints_plain_lines_when_stderr_is_not_a_terminal() {
    for traffic in [
        &["--traffic", "shift:1", "--until", "30us"][..],
        &["--traffic", "dissemination:64:20"][..],
    ] {
        let mut args = vec![
            "run",
            "--topology",
            "H8_S1",
            "--progress",
            "--progress-interval",
            "0",
        ];
        args.extend_from_slice(traffic);
        let o = ibnet(&args);
        assert!(o.status.success(), "{}", err(&o));
        let e = err(&o);
        let lines: Vec<&str> = e
            .lines()
            .filter(|l| l.starts_with("ibnet: progress: simulated "))
            .collect();
        assert!(lines.len() >= 5, "{e}");
        // plain text with units, no terminal control characters
        assert!(!e.contains('\u{1b}') && !e.contains('\r'), "{e:?}");
        assert!(
            lines
                .iter()
                .all(|l| l.contains("s,") && l.contains("events")),
            "{lines:?}"
        );
    }
}

/// Without --progress, a log (stderr not a terminal) gets a plain line
/// every 30 s of wall time: none for a short run; with the interval set
/// (here 0 s) the lines come without --progress too, and --json on stdout
/// stays one document.
#[test]
fn a_log_gets_plain_progress_lines_without_the_flag() {
    let base = words("run --topology H8_S1 --traffic shift:1 --until 30us");
    let o = ibnet(&base);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!err(&o).contains("ibnet: progress:"), "{}", err(&o));
    let mut args = base.to_vec();
    args.extend_from_slice(&["--progress-interval", "0", "--json"]);
    let o = ibnet(&args);
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    let lines = e
        .lines()
        .filter(|l| l.starts_with("ibnet: progress: simulated ") && l.contains(" of 30 us ("))
        .count();
    assert!(lines >= 5, "{e}");
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert!(v["run"]["events_processed"].as_u64().unwrap() > 0);
    // a negative interval is refused with the usage code
    let o = ibnet(&["run", "--topology", "H8_S1", "--progress-interval=-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("--progress-interval -1: expected seconds >= 0"),
        "{}",
        err(&o)
    );
}

/// Every string value in the report is text, never a number in disguise.
fn no_numeric_strings(v: &Value, path: &str) {
    match v {
        Value::String(s) => {
            assert!(
                s.trim().parse::<f64>().is_err() || path.ends_with("ibnet"),
                "{path} = {s:?} is a number in a string"
            );
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| no_numeric_strings(x, &format!("{path}[{i}]"))),
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| no_numeric_strings(x, &format!("{path}.{k}"))),
        _ => {}
    }
}

#[test]
fn json_numbers_and_units() {
    let o = ibnet(&words(
        "run --topology H8_S2 --traffic dissemination:3000:2 --json --latencies",
    ));
    let v = json(&o);
    no_numeric_strings(&v, "");
    assert!(v["report"]["sinks"][0]["msg_network_latency_ps"]["sum"].is_u64());
    for k in ["until_ps", "sim_time_ps", "wall_s"] {
        assert!(v["run"].get(k).is_some(), "{k}");
    }
    assert!(v["closed_loop"]["end_ps"].is_u64());
    // text output: every time has a unit
    let o = ibnet(&words("run --topology H8_S1 --traffic dissemination:64:1"));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("last completion ") && s.contains(" ns"), "{s}");
    for l in s
        .lines()
        .filter(|l| l.contains("Time last packet consumed"))
    {
        assert!(l.trim_end().ends_with(" ns"), "{l}");
    }
}

#[test]
fn flags_are_consistent() {
    // -V is --version in every subcommand
    for args in [
        &["-V"][..],
        &["--version"][..],
        &["run", "-V"][..],
        &["serve", "-V"][..],
    ] {
        let o = ibnet(args);
        assert!(o.status.success(), "{args:?}: {}", err(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(env!("CARGO_PKG_VERSION")),
            "{args:?}"
        );
    }
    // the default preset of `ibnet run` is thesis-ddr, as for serve and cosim
    let v = json(&ibnet(&words(
        "run --topology H8_S1 --traffic dissemination:64:1 --json",
    )));
    assert_eq!(v["preset"], "thesis-ddr");
    assert_eq!(
        v["params"],
        serde_json::to_value(Params::thesis_ddr()).unwrap()
    );
    // --report FILE writes a copy and leaves stdout as it is
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("r.json");
    let base = words("run --topology H8_S1 --traffic dissemination:64:1 --no-wall-time");
    let plain = ibnet(&base);
    let mut with = base.to_vec();
    with.extend(["--report", rep.to_str().unwrap()]);
    let copied = ibnet(&with);
    assert!(copied.status.success());
    assert_eq!(
        plain.stdout, copied.stdout,
        "--report must not change stdout"
    );
    let mut j = base.to_vec();
    j.push("--json");
    let as_json = json(&ibnet(&j));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    assert_eq!(file, as_json);
}
