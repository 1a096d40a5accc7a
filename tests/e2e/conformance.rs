//! `ipc-proto conformance` against our own peers (ibnet serve, loggopsim
//! --network ipc) and the Python reference peers, both protocols, plus
//! peers that break rules (the checker must say which) and no peer at all
//! (the checker must not hang). Sessions are serialised with `ipc_lock`.

use crate::peers::{key, python_peers, run_within, text, PINGPONG3};
use crate::util::{bin, ipc_lock};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn conformance(role: &str, protocol: &str, spawn: &str, extra: &[&str]) -> Output {
    conformance_timed(role, protocol, spawn, extra).0
}

/// [`conformance`] and how long the checker ran (after the IPC lock was
/// taken: other tests may hold it for minutes).
fn conformance_timed(
    role: &str,
    protocol: &str,
    spawn: &str,
    extra: &[&str],
) -> (Output, Duration) {
    // Resolved before the clock starts: the first bin() of a test run
    // builds the workspace's binaries (20 s on CI), which is not the
    // checker's time.
    let exe = bin("ipc-proto");
    let _lock = ipc_lock();
    // timed after the lock: the wait for other IPC tests is not the checker's
    let start = std::time::Instant::now();
    let mut c = Command::new(exe);
    c.args([
        "conformance",
        "--role",
        role,
        "--protocol",
        protocol,
        "--key",
        &key("cf"),
        "--spawn",
        spawn,
    ])
    .args(extra);
    let o = run_within(c, Duration::from_secs(240));
    (o, start.elapsed())
}

/// Exit 0, no FAIL line, every applicable scenario reported, and the
/// summary line agrees.
fn assert_conforms(o: &Output, scenarios: &[&str], what: &str) {
    let out = text(&o.stdout);
    assert!(
        o.status.success(),
        "{what}: exit {:?}\n{out}\n{}",
        o.status.code(),
        text(&o.stderr)
    );
    assert!(!out.contains("FAIL"), "{what}:\n{out}");
    let passes = out.lines().filter(|l| l.starts_with("PASS ")).count();
    assert!(
        out.contains(&format!(
            "{passes} rules checked, 0 failed: the peer conforms"
        )),
        "{what}:\n{out}"
    );
    for s in scenarios {
        assert!(out.contains(&format!("PASS {s}/")), "{what}: no {s}\n{out}");
    }
}

const FABRIC_COMMON: &[&str] = &[
    "handshake",
    "hello-version",
    "bad-record",
    "times",
    "batching",
    "simultaneous",
    "finish",
    "past-insert",
    "peer-death",
];

fn fabric_scenarios(protocol: &str) -> Vec<&'static str> {
    let mut v = FABRIC_COMMON.to_vec();
    if protocol.starts_with("notify") {
        v.push("no-more-inserts");
    } else {
        v.extend(["query-before-after", "quantum"]);
    }
    if protocol == "notify" || protocol == "notify-v3" || protocol == "notify-v4" {
        // version 2 and later
        v.push("grant");
    }
    if protocol == "notify-v3" || protocol == "notify-v4" {
        v.push("one-sided");
    }
    if protocol == "notify-v4" {
        v.push("triggers");
    }
    v
}

const SCHEDULER_SCENARIOS: &[&str] = &[
    "run",
    "segment-version",
    "hello-version",
    "bad-record",
    "bad-answer",
    "fabric-death",
];

#[test]
fn ibnet_serve_conforms_as_a_fabric() {
    let ibnet = bin("ibnet");
    let ib = ibnet.display();
    // (protocol, checker options, ibnet options): query at 1 ns keeps the
    // step-by-step polling short; the estimate run checks the first-reply
    // exception of the quantum rule.
    // Version 2 (notify, query): q and F come from the checker's Config
    // record; version 1 (notify-v1, query-v1): from the fabric's options.
    for (protocol, checker, fabric) in [
        ("notify", vec![], ""),
        ("notify-v1", vec![], ""),
        ("notify-v3", vec![], ""),
        ("notify-v4", vec![], ""),
        ("query", vec!["--quantum", "1ns"], ""),
        ("query", vec!["--estimate"], ""),
        ("query-v1", vec!["--quantum", "1ns"], "--quantum 1ns"),
        ("query-v1", vec!["--estimate"], "--estimate 1"),
    ] {
        let spawn =
            format!("{ib} serve --key {{key}} --protocol {{protocol}} --topology H8_S1 {fabric}");
        let o = conformance("fabric", protocol, &spawn, &checker);
        assert_conforms(
            &o,
            &fabric_scenarios(protocol),
            &format!("ibnet {protocol} {fabric}"),
        );
        let out = text(&o.stdout);
        assert!(
            out.contains("PASS past-insert/past-insert: Error{code=1}"),
            "{out}"
        );
        // depth x records per message + 1 (the geometry is the fabric's)
        assert!(
            out.contains("PASS batching/batching: ")
                && out.contains(" Inserts sent in messages of up to "),
            "{out}"
        );
    }
}

#[test]
fn loggopsim_conforms_as_a_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("pp3.goal");
    std::fs::write(&g, PINGPONG3).unwrap();
    // 8 ranks, 3 rounds: in every round all 8 messages are in flight at
    // once and, with the checker's fixed latency, arrive at one time.
    let d = dir.path().join("diss8.goal");
    let o = crate::util::run(
        Command::new(bin("loggopsim"))
            .args(["gen", "dissemination", "-s", "8", "-d", "64", "-o"])
            .arg(&d),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let spawn = |goal: &std::path::Path| {
        format!(
            "{} -f {} -L 0 -o 0 -g 0 -G 0 -O 0 --network ipc --key {{key}} --protocol {{protocol}}",
            bin("loggopsim").display(),
            goal.display()
        )
    };
    for protocol in ["notify", "notify-v1", "query", "query-v1"] {
        let o = conformance("scheduler", protocol, &spawn(&g), &[]);
        assert_conforms(&o, SCHEDULER_SCENARIOS, &format!("loggopsim {protocol}"));
        // Three messages, each arriving 1000 ps (the checker's latency)
        // after it was sent: Finish at 3000 ps.
        let out = text(&o.stdout);
        assert!(
            out.contains("3 inserts") && out.contains("until Finish at 3000 ps"),
            "{out}"
        );
        let o = conformance(
            "scheduler",
            protocol,
            &spawn(&d),
            &["--only", "run", "--latency", "100ps"],
        );
        assert_conforms(&o, &["run"], &format!("loggopsim dissemination {protocol}"));
        let out = text(&o.stdout);
        // Three rounds of 100 ps.
        assert!(out.contains("24 inserts"), "{out}");
        assert!(out.contains("until Finish at 300 ps"), "{out}");
        if protocol.starts_with("notify") {
            // One NoMoreInserts per round, answered by a batch of 8
            // Arrivals (and the batch end) in one queue message.
            assert!(
                out.contains("3 NoMoreInserts, 3 batches (largest 8)"),
                "{out}"
            );
        }
    }
}

/// The Python peer `script` (playing `role`; the Python peers speak
/// version 1) conforms under notify-v1, query-v1, and query-v1 with the
/// checker's `--estimate` and the peer's `estimate` options: spawned as
/// `python3 SCRIPT --key {key} --protocol {protocol} ARGS OPTIONS`, it
/// passes `scenarios(protocol)` (a failure names the script, protocol and
/// options), and `also` holds of the checker's output.
fn python_peer_conforms(
    script: &Path,
    role: &str,
    args: &str,
    estimate: &str,
    scenarios: impl Fn(&str) -> Vec<&'static str>,
    also: impl Fn(&Output),
) {
    let name = script.file_name().unwrap().to_string_lossy();
    let cases: [(&str, &[&str], &str); 3] = [
        ("notify-v1", &[], ""),
        ("query-v1", &[], ""),
        ("query-v1", &["--estimate"], estimate),
    ];
    for (protocol, checker, extra) in cases {
        let spawn = format!(
            "python3 {} --key {{key}} --protocol {{protocol}} {args} {extra}",
            script.display()
        );
        let o = conformance(role, protocol, &spawn, checker);
        assert_conforms(
            &o,
            &scenarios(protocol),
            &format!("{name} {protocol} {extra}"),
        );
        also(&o);
    }
}

#[test]
fn python_fabric_conforms() {
    let Some(peers) = python_peers() else { return };
    python_peer_conforms(
        &peers.join("fabric.py"),
        "fabric",
        "--latency 5000 --gap 6",
        "--estimate 1",
        fabric_scenarios,
        |_| {},
    );
}

#[test]
fn python_scheduler_conforms() {
    let Some(peers) = python_peers() else { return };
    python_peer_conforms(
        &peers.join("scheduler.py"),
        "scheduler",
        "--rounds 2",
        "--estimate",
        |_| SCHEDULER_SCENARIOS.to_vec(),
        |o| {
            assert!(
                text(&o.stdout).contains("until Finish at 4000 ps"),
                "{}",
                text(&o.stdout)
            )
        },
    );
}

/// The test fabric src/bin/fixed-latency-peer is deliberately minimal:
/// it accepts Inserts into its past, and its "not yet" replies name the
/// arrival time itself (it needs a scheduler running with --estimate).
/// The checker must find exactly these deviations.
#[test]
fn checker_finds_the_deviations_of_the_fixed_latency_peer() {
    let spawn = format!(
        "{} --key {{key}} --protocol {{protocol}} --latency 5000",
        bin("fixed-latency-peer").display()
    );
    let o = conformance("fabric", "notify", &spawn, &["--timeout", "2"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    // version 2 adds the past horizon, which it does not check either
    assert_eq!(fails.len(), 4, "{out}");
    assert!(
        fails[2].starts_with("FAIL grant/past-horizon: the fabric answered normally: Grant"),
        "{out}"
    );
    assert!(out.contains("PASS grant/grant-honoured"), "{out}");
    assert!(
        fails[0].starts_with("FAIL past-insert/past-insert: the fabric answered normally: Arrival { handle: 1, time: Time(505000) }"),
        "{out}"
    );
    assert!(
        fails[1].starts_with("FAIL past-insert/exit-status"),
        "{out}"
    );
    assert!(out.contains("the peer does NOT conform"), "{out}");

    for query in ["query", "query-v1"] {
        let o = conformance("fabric", query, &spawn, &["--only", "quantum"]);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(
            out.contains("FAIL quantum/quantum: Reply 0 to a query at 5000 ps: not yet, next at 10000 ps; expected t' + q = 5001 ps"),
            "{out}"
        );
        // With --estimate a later first reply is allowed: it conforms there.
        let o = conformance(
            "fabric",
            query,
            &spawn,
            &["--only", "quantum", "--estimate"],
        );
        assert!(o.status.success(), "{}", text(&o.stdout));
    }
    // Version 1 too: the same two deviations, nothing else.
    let o = conformance("fabric", "notify-v1", &spawn, &["--timeout", "2"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 2, "{out}");
}

/// A fabric started with another quantum than the checker was told.
#[test]
fn checker_catches_a_wrong_quantum() {
    let Some(peers) = python_peers() else { return };
    let spawn = format!(
        "python3 {} --key {{key}} --protocol query-v1 --quantum 2",
        peers.join("fabric.py").display()
    );
    let o = conformance(
        "fabric",
        "query-v1",
        &spawn,
        &["--only", "quantum,handshake"],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL quantum/quantum: Reply 0 to a query at 5000 ps: not yet, next at 5002 ps; expected t' + q = 5001 ps"),
        "{out}"
    );
    assert!(out.contains("FAIL handshake/quantum"), "{out}");
    assert!(out.contains("PASS handshake/segment"), "{out}");
}

/// No peer at all (the command never opens a session): every scenario
/// fails after the bounded wait, nothing hangs, the peers are stopped.
#[test]
fn checker_does_not_hang_without_a_peer() {
    for role in ["fabric", "scheduler"] {
        let (o, took) = conformance_timed(
            role,
            "notify",
            "sleep 60 # {key}",
            &[
                "--timeout",
                "0.5",
                "--only",
                if role == "fabric" {
                    "handshake,finish"
                } else {
                    "run"
                },
            ],
        );
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(took < Duration::from_secs(20), "{role}: took {took:?}");
        let want = if role == "fabric" {
            "FAIL handshake/scenario: cannot attach to the fabric: timed out"
        } else {
            "FAIL run/scenario: no scheduler attached: timed out"
        };
        assert!(out.contains(want), "{role}: {out}");
    }
    // The same as JSON: one array of {scenario, rule, pass, reason}.
    let o = conformance(
        "fabric",
        "query",
        "sleep 60 # {key}",
        &["--timeout", "0.3", "--only", "quantum", "--json"],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["scenario"], "quantum");
    assert_eq!(v[0]["rule"], "scenario");
    assert_eq!(v[0]["pass"], false);
    assert!(
        v[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("cannot attach to the fabric: timed out"),
        "{v}"
    );
}

#[test]
fn conformance_usage_errors() {
    let ipc = bin("ipc-proto");
    let run = |args: &[&str]| crate::util::run(Command::new(&ipc).arg("conformance").args(args));
    // exit 2, and what stderr says ("" for a case checked by its exit alone)
    for (args, says) in [
        (&["--key", "x"][..], "--role"),
        (
            &["--role", "fabric", "--key", "x", "--spawn", "ibnet serve"],
            "has no {key}",
        ),
        (
            &["--role", "fabric", "--key", "x", "--only", "nosuch"],
            "unknown scenario \"nosuch\"",
        ),
        (
            &["--role", "scheduler", "--key", "x", "--only", "quantum"],
            "",
        ),
        (
            &["--role", "fabric", "--key", "bad/key"],
            "invalid session key",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = text(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // --list: every scenario with its number (the n of KEY-n).
    let o = run(&["--list"]);
    assert!(o.status.success());
    let list = text(&o.stdout);
    assert_eq!(list.lines().count(), 21, "{list}");
    assert!(list.contains("21 fabric    notify-v4+ triggers"), "{list}");
    assert!(list.contains("13 fabric    notify-v2+ grant"), "{list}");
    assert!(
        list.lines()
            .next()
            .unwrap()
            .starts_with(" 1 fabric    both    handshake"),
        "{list}"
    );
    let help = text(&run(&["--help"]).stdout);
    assert!(help.contains("the peer is a fabric"), "{help}");
    assert!(help.contains("the checker acts as the scheduler"), "{help}");
}
