//! The efficiency study (`study`, scripts/efficiency-study) in its tiny
//! configuration: two ranks on chain:1, every setup once. The study runs
//! once (under the IPC lock) and the tests read its CSV.
//!
//! Hand-derived expectations for polling (docs/protocol.md rule 2): with
//! L=o=g=G=O=0 both messages are inserted at 0 and first queried at 0; a
//! "not yet" reply moves the next query q later, so a message arriving at
//! T is answered "arrived" at the first multiple of q >= T: ceil(T/q) + 1
//! queries per message, and the scheduler learns of it at ceil(T/q) * q.

use crate::util::{bin, ipc_lock, repo_root, run, stderr, stdout, words};
use std::collections::HashMap;
use std::process::Command;
use std::sync::OnceLock;

/// The CSV columns the study promises (docs/efficiency.md).
const COLUMNS: &[&str] = &[
    "setup",
    "kind",
    "protocol",
    "transport",
    "quantum_ps",
    "estimate_factor",
    "status",
    "runs",
    "wall_s",
    "wall_min_s",
    "wall_max_s",
    "progress_fraction",
    "wall_extrapolated_s",
    "scheduler_loop_s",
    "scheduler_events",
    "fabric_events",
    "ipc_messages_sched_to_fabric",
    "ipc_records_sched_to_fabric",
    "ipc_records_fabric_to_sched",
    "ipc_messages_fabric_to_sched",
    "inserts",
    "queries",
    "round_trips",
    "round_trips_extrapolated",
    "scheduler_peak_rss_kb",
    "fabric_peak_rss_kb",
    "sim_final_ps",
    "error_ps",
    "error_pct",
    "causality_errors",
    "causality_error_max_ps",
];

/// The setups of the default study, in table order.
const SETUPS: &[&str] = &[
    "fabric alone",
    "LogGOPS alone (LogGP)",
    "query q=1 ns",
    "query q=100 ps",
    "query q=10 ps",
    "query q=1 ps",
    "query q=1 ns F=1",
    "query q=1 ns F=2",
    "query q=1 ns F=3",
    "query q=1 ns F=4",
    "query q=100 ps F=1",
    "query q=100 ps F=2",
    "query q=100 ps F=3",
    "query q=100 ps F=4",
    "notify v2 (mq)",
    "notify v2 (shm)",
    "notify v2 (inproc)",
    "notify v2 (onepiece)",
    "notify v1 (mq)",
    "notify v1 (shm)",
    "notify v1 (inproc)",
    "notify v1 (onepiece)",
];

struct Csv {
    header: Vec<String>,
    rows: Vec<HashMap<String, String>>,
}

impl Csv {
    fn parse(text: &str) -> Csv {
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .expect("header")
            .split(',')
            .map(String::from)
            .collect();
        let rows = lines
            .map(|l| {
                assert!(!l.contains('"'), "no quoting expected in {l}");
                let cells: Vec<&str> = l.split(',').collect();
                assert_eq!(cells.len(), header.len(), "row {l}");
                header
                    .iter()
                    .cloned()
                    .zip(cells.iter().map(|c| c.to_string()))
                    .collect()
            })
            .collect();
        Csv { header, rows }
    }

    fn row(&self, setup: &str) -> &HashMap<String, String> {
        self.rows
            .iter()
            .find(|r| r["setup"] == setup)
            .unwrap_or_else(|| panic!("no row {setup}"))
    }

    fn num(&self, setup: &str, col: &str) -> u64 {
        let v = &self.row(setup)[col];
        v.parse()
            .unwrap_or_else(|_| panic!("{setup}.{col} = {v:?}"))
    }
}

struct Tiny {
    csv: Csv,
    md: String,
    stdout: String,
    png: Vec<u8>,
    svg: String,
}

/// Run `scripts/efficiency-study --tiny` (the user's entry point) once for
/// all tests of this module, on this test run's binaries.
fn tiny() -> &'static Tiny {
    static T: OnceLock<Tiny> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let study = bin("study");
        let bindir = study.parent().unwrap().to_path_buf();
        let o = {
            let _l = ipc_lock();
            run(Command::new(repo_root().join("scripts/efficiency-study"))
                .env("IBCOSIM_BIN_DIR", &bindir)
                .args(["--tiny", "--out"])
                .arg(dir.path()))
        };
        assert!(o.status.success(), "study --tiny failed:\n{}", stderr(&o));
        let read =
            |n: &str| std::fs::read(dir.path().join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
        Tiny {
            csv: Csv::parse(&String::from_utf8(read("efficiency-tiny.csv")).unwrap()),
            md: String::from_utf8(read("efficiency-tiny.md")).unwrap(),
            stdout: stdout(&o),
            png: read("efficiency-tiny-quantum.png"),
            svg: String::from_utf8(read("efficiency-tiny-quantum.svg")).unwrap(),
        }
    })
}

#[test]
fn tiny_study_csv_has_every_column_and_a_row_per_setup() {
    let t = tiny();
    assert_eq!(t.csv.header, COLUMNS);
    let setups: Vec<&str> = t.csv.rows.iter().map(|r| r["setup"].as_str()).collect();
    assert_eq!(setups, SETUPS);
    for r in &t.csv.rows {
        assert_eq!(r["status"], "ok", "{}: {:?}", r["setup"], r);
        assert_eq!(r["runs"], "1");
        let w: f64 = r["wall_s"].parse().unwrap();
        assert!(w > 0.0 && w < 60.0, "{} wall {w}", r["setup"]);
        // Every process has a peak memory; the fabric's where it is a process of its own.
        assert!(r["scheduler_peak_rss_kb"]
            .parse::<u64>()
            .map_or(r["kind"] == "fabric-alone", |k| k > 100));
        // The fabric's own message count is not reported (its JSON lacks it).
        let fab_msgs = &r["ipc_messages_fabric_to_sched"];
        assert_eq!(fab_msgs, if r["protocol"].is_empty() { "" } else { "n/a" });
    }
    assert!(t.csv.num("fabric alone", "fabric_peak_rss_kb") > 100);
    assert!(t.csv.num("notify v2 (mq)", "fabric_peak_rss_kb") > 100);
    assert!(t.csv.num("notify v2 (shm)", "fabric_peak_rss_kb") > 100);
    for one in [
        "notify v2 (inproc)",
        "notify v2 (onepiece)",
        "notify v1 (onepiece)",
    ] {
        assert_eq!(
            t.csv.row(one)["fabric_peak_rss_kb"],
            "",
            "{one}: one process"
        );
    }
    assert_eq!(t.csv.row("notify v1 (mq)")["protocol"], "notify-v1");
    assert_eq!(t.csv.row("notify v2 (shm)")["protocol"], "notify");
    // the start-up share is measured and printed, not assumed
    assert!(
        t.md.contains("Process start-up and session set-up"),
        "{}",
        t.md
    );
    // The Markdown table is on stdout and in the results file.
    assert!(t.stdout.contains("| notify v2 (mq) |"), "{}", t.stdout);
    assert_eq!(t.md, t.stdout);
    assert_eq!(t.md.matches("\n| query q=").count(), 12);
    // Both plots were drawn, with text.
    assert_eq!(&t.png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(t.png.len() > 10_000, "PNG of {} bytes", t.png.len());
    assert!(
        t.svg.contains("<svg") && t.svg.contains("quantum"),
        "SVG with labels"
    );
}

#[test]
fn notify_and_query_at_1ps_give_the_same_simulated_final_time() {
    let c = &tiny().csv;
    let t = c.num("notify v2 (mq)", "sim_final_ps");
    assert!(
        t > 100_000,
        "a 180-byte message through a switch takes over 100 ns: {t}"
    );
    // Every exact setup, over every transport, ends at the same time; so
    // does the thesis's run-ahead notify (v1) on this schedule (one
    // message at a time, nothing to run ahead of).
    for s in [
        "notify v2 (shm)",
        "notify v2 (inproc)",
        "notify v2 (onepiece)",
        "notify v1 (mq)",
        "notify v1 (shm)",
        "notify v1 (inproc)",
        "notify v1 (onepiece)",
        "query q=1 ps",
        "fabric alone",
        "query q=100 ps F=1",
        "query q=100 ps F=2",
    ] {
        assert_eq!(c.num(s, "sim_final_ps"), t, "{s}");
        assert_eq!(c.row(s)["error_ps"], "0", "{s}");
    }
    // A coarse quantum learns of the arrival at the next multiple of q
    // (2 messages of 125700 ps each: 251400 -> 252000 with q = 1 ns).
    let coarse = t.div_ceil(1000) * 1000;
    assert_eq!(c.num("query q=1 ns", "sim_final_ps"), coarse);
    // The thesis's estimate (docs/protocol.md rule 2.5) is F x the per-hop fixed
    // latencies, far below a travel time: F = 1 and 2 only skip queries, the
    // quantum still decides the precision.
    for s in ["query q=1 ns F=1", "query q=1 ns F=2"] {
        assert_eq!(c.num(s, "sim_final_ps"), coarse, "{s}");
        assert_eq!(c.num(s, "causality_errors"), 0, "{s}");
    }
    // LogGP with L=o=g=G=O=0: messages take no time at all.
    assert_eq!(c.num("LogGOPS alone (LogGP)", "sim_final_ps"), 0);
    assert_eq!(c.row("LogGOPS alone (LogGP)")["error_pct"], "-100.0000");
    assert_eq!(c.num("query q=1 ps", "causality_errors"), 0);
    // F = 3 and 4 promise more than the travel time: every message (2) is a
    // causality error, and the run ends at 2 x F x base, with the same base.
    let base = c.num("query q=1 ns F=3", "sim_final_ps") / 6;
    assert!(base > 0 && 2 * base < t / 2, "per-hop base {base} ps");
    for (s, f) in [
        ("query q=1 ns F=3", 3),
        ("query q=1 ns F=4", 4),
        ("query q=100 ps F=3", 3),
        ("query q=100 ps F=4", 4),
    ] {
        assert_eq!(c.num(s, "causality_errors"), 2, "{s}");
        assert_eq!(c.num(s, "sim_final_ps"), 2 * f * base, "{s}");
        assert_eq!(c.num(s, "causality_error_max_ps"), 2 * f * base - t, "{s}");
    }
}

#[test]
fn polling_query_count_grows_as_the_quantum_shrinks() {
    let c = &tiny().csv;
    let t = c.num("notify v2 (mq)", "sim_final_ps");
    let mut last = 0;
    for (setup, q) in [
        ("query q=1 ns", 1000),
        ("query q=100 ps", 100),
        ("query q=10 ps", 10),
        ("query q=1 ps", 1),
    ] {
        let n = c.num(setup, "queries");
        assert_eq!(
            n,
            2 * (t.div_ceil(q) + 1),
            "{setup}: two messages, ceil(T/q)+1 queries each"
        );
        assert_eq!(c.num(setup, "round_trips"), n);
        assert!(n > last, "{setup}: {n} queries, not more than {last}");
        last = n;
    }
    // The estimate skips the first F x base of each message's polling.
    let f1 = c.num("query q=100 ps F=1", "queries");
    let f2 = c.num("query q=100 ps F=2", "queries");
    assert!(
        f2 < f1 && f1 < c.num("query q=100 ps", "queries"),
        "{f2} {f1}"
    );
    // Notify: one NoMoreInserts/arrival exchange for the one round.
    assert_eq!(c.num("notify v2 (mq)", "round_trips"), 1);
}

#[test]
fn over_budget_run_is_stopped_and_extrapolated() {
    let dir = tempfile::tempdir().unwrap();
    let o = {
        let _l = ipc_lock();
        run(Command::new(bin("study"))
            .args(words(
                "--tiny --quanta 1ps --factors 1 --estimate-quanta 1ns \
                 --budget 0.5 --name ob --out",
            ))
            .arg(dir.path()))
    };
    assert!(o.status.success(), "{}", stderr(&o));
    let c = Csv::parse(&std::fs::read_to_string(dir.path().join("ob.csv")).unwrap());
    let r = c.row("query q=1 ps");
    assert_eq!(r["status"], "over budget");
    let wall: f64 = r["wall_s"].parse().unwrap();
    assert!((0.5..2.0).contains(&wall), "stopped at the budget: {wall}");
    let p: f64 = r["progress_fraction"].parse().expect("progress known");
    assert!(p > 0.0 && p < 1.0, "{p}");
    // Extrapolated from the rate over the second half of the run: more
    // than what was spent, and of the order of elapsed / fraction done.
    let est: f64 = r["wall_extrapolated_s"].parse().unwrap();
    let linear = wall / p;
    assert!(
        est > wall && est > linear / 3.0 && est < linear * 3.0,
        "{est} vs {wall}/{p}"
    );
    // The round trips scale with the simulated time reached: the whole run
    // takes 2 x (T + 1) queries (T = 251400 ps, see the tiny study).
    let rts: f64 = r["round_trips_extrapolated"].parse().unwrap();
    assert!((rts - 502_802.0).abs() < 0.05 * 502_802.0, "{rts}");
    assert_eq!(r["sim_final_ps"], "n/a");
    assert!(r["fabric_peak_rss_kb"].parse::<u64>().unwrap() > 100);
    assert!(stdout(&o).contains("**over budget**"), "{}", stdout(&o));
}

#[test]
fn mismatched_topology_fails_the_fabric_alone_setup_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let o = {
        let _l = ipc_lock();
        run(Command::new(bin("study"))
            .args(words(
                "--tiny --topology H8_S1 --quanta 1ns --factors 1 \
                 --estimate-quanta 1ns --name mm --out",
            ))
            .arg(dir.path()))
    };
    // The other setups still run and the outputs are written; the exit
    // status says that one failed.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 run(s) failed"), "{}", stderr(&o));
    let c = Csv::parse(&std::fs::read_to_string(dir.path().join("mm.csv")).unwrap());
    assert_eq!(c.row("fabric alone")["status"], "failed");
    assert!(
        stderr(&o).contains("8 ranks (every HCA of H8_S1), the schedule has 2"),
        "{}",
        stderr(&o)
    );
    assert_eq!(c.row("notify v2 (mq)")["status"], "ok");
}

#[test]
fn bad_options_are_rejected() {
    let o = run(Command::new(bin("study")).args(["--runs", "0"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--runs must be at least 1"),
        "{}",
        stderr(&o)
    );
    let o = run(Command::new(bin("study")).args(["--quanta", "fast"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected a time like 1ns"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tiny_scaling_study_reports_busy_and_idle_events_and_fits() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(Command::new(bin("study"))
        .args(["--tiny", "--scaling-only", "--name", "sc", "--out"])
        .arg(dir.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("sc-scaling.csv")).unwrap();
    let c = Csv::parse(&text);
    assert_eq!(
        c.header,
        [
            "topology",
            "hcas",
            "switches",
            "messages_per_rank",
            "bytes",
            "status",
            "runs",
            "wall_s",
            "event_loop_s",
            "sim_final_ps",
            "fabric_events",
            "idle_events",
            "idle_to_busy_ratio",
            "events_per_s",
            "events_per_hca_per_sim_us",
            "peak_rss_kb"
        ]
    );
    // fattree:4 and fattree:6 (P*P/2 HCAs, P + P/2 switches) x 2 and 4 sends.
    let got: Vec<(String, String, String, String)> = c
        .rows
        .iter()
        .map(|r| {
            (
                r["topology"].clone(),
                r["hcas"].clone(),
                r["switches"].clone(),
                r["messages_per_rank"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, String, String, String)> = [
        ("fattree:4", "8", "6", "2"),
        ("fattree:4", "8", "6", "4"),
        ("fattree:6", "18", "9", "2"),
        ("fattree:6", "18", "9", "4"),
    ]
    .iter()
    .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
    .collect();
    assert_eq!(got, want);
    for r in &c.rows {
        assert_eq!(r["status"], "ok");
        let busy: u64 = r["fabric_events"].parse().unwrap();
        let idle: u64 = r["idle_events"].parse().unwrap();
        assert!(busy > idle, "{r:?}");
    }
    // The chain's simulated time grows with the sends per rank.
    let t = |row: usize| c.rows[row]["sim_final_ps"].parse::<u64>().unwrap();
    assert!(t(1) > t(0) && t(3) > t(2));
    let md = std::fs::read_to_string(dir.path().join("sc.md")).unwrap();
    assert!(
        md.contains("wall time = C * HCAs^a * T^b (all rows)"),
        "{md}"
    );
    assert!(
        dir.path().join("sc-scaling.png").exists() && dir.path().join("sc-scaling.svg").exists()
    );
}
