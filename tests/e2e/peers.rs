//! The Python reference peers (scripts/peers/, written from
//! docs/protocol.md with the struct module only) against the Rust
//! binaries: the wire format is language-neutral.
//!
//! Fails, with the reason, when python3 or its posix_ipc module is
//! missing (scripts/install-deps installs it). Every test that opens
//! sessions holds `ipc_lock` (the machine allows ~9 queues at once).

use crate::util::{bin, ipc_lock, repo_root, u64_array, wait_within};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// scripts/peers; panics with the reason without python3 + posix_ipc.
pub(crate) fn python_peers() -> Option<PathBuf> {
    let ok = Command::new("python3")
        .args(["-c", "import posix_ipc"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        // A test that did not run must not pass.
        panic!("this test needs python3 with the posix_ipc module and did not run: run scripts/install-deps (scripts/test does)");
    }
    Some(repo_root().join("scripts").join("peers"))
}

/// A session key no other test uses.
pub(crate) fn key(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "pe-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Start a background process with captured output.
pub(crate) fn start(c: &mut Command) -> Child {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {c:?}: {e}"))
}

/// Wait for a child; kill it and panic after `limit` (never hang).
pub(crate) fn finish(child: Child, limit: Duration, what: &str) -> Output {
    wait_within(child, limit, what)
}

pub(crate) fn run_within(mut c: Command, limit: Duration) -> Output {
    let what = format!("{c:?}");
    finish(start(&mut c), limit, &what)
}

fn write_goal(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// rank 0 sends 100 B, rank 1 answers 300 B, rank 0 sends 7 B: a strict
/// ping-pong (no NIC is ever busy with two messages).
pub(crate) const PINGPONG3: &str = "num_ranks 2\n\nrank 0 {\nl1: send 100b to 1 tag 0\nl2: recv 300b from 1 tag 0\nl2 requires l1\nl3: send 7b to 1 tag 0\nl3 requires l2\n}\n\nrank 1 {\nl1: recv 100b from 0 tag 0\nl2: send 300b to 0 tag 0\nl2 requires l1\nl3: recv 7b from 0 tag 0\nl3 requires l2\n}\n";

/// Two messages of `size` bytes: 0 -> 1, then 1 -> 0 once it arrived.
fn pingpong2(size: u64) -> String {
    format!("num_ranks 2\n\nrank 0 {{\nl1: send {size}b to 1 tag 0\nl2: recv {size}b from 1 tag 0\nl2 requires l1\n}}\n\nrank 1 {{\nl1: recv {size}b from 0 tag 0\nl2: send {size}b to 0 tag 0\nl2 requires l1\n}}\n")
}

fn finish_times(json: &[u8]) -> Vec<u64> {
    let v: Value =
        serde_json::from_slice(json).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", text(json)));
    u64_array(&v, "finish_times_ps")
}

fn loggopsim_params(l: u64, o: u64, g_per_byte: u64) -> Vec<String> {
    [
        "-L",
        &l.to_string(),
        "-o",
        &o.to_string(),
        "-g",
        "0",
        "-G",
        &g_per_byte.to_string(),
        "-O",
        "0",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// fabric.py delivers a message at t_send + Lfix + size * Gfix. Which
/// LogGP parameters give the same finish times (docs/model/loggops.md section 6)?
///
/// LogGP, with g = O = 0: the message event is at t + o + L (G is not
/// added there); the receiver then charges nexto = t_m + o + (s-1) * G.
/// Its receive work ends at t + 2o + L + (s-1) * G.
///
/// Co-simulation with L = G = 0 (same o, g = O = 0): the event is at the
/// fabric's arrival t_a = t + Lfix + s * Gfix (notify: moved there; query
/// with the estimate F = 1: the first reply promises exactly t_a), and the
/// receiver charges o + (s-1) * 0: the work ends at t + Lfix + s * Gfix + o.
///
/// Equal for every size s >= 1 iff G = Gfix and L = Lfix + Gfix - o. The
/// sender side is o in both; LogGP's NIC gap t + (s-1) * G never delays a
/// ping-pong's next send (it comes after a whole round trip), so the
/// equivalence is exact for a strict ping-pong. (s = 0 would differ: the
/// engine charges no (s-1) term there, docs/model/loggops.md 9.3.)
#[test]
fn python_fabric_gives_the_loggp_times() {
    let Some(peers) = python_peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let g = write_goal(dir.path(), "pp3.goal", PINGPONG3);
    let (lfix, gfix) = (5000u64, 6u64);
    // Hand-derived (o = 0): 100 B arrives at 5000 + 600 = 5600 at rank 1,
    // which answers 300 B arriving at 5600 + 5000 + 1800 = 12400 at rank 0,
    // which sends 7 B arriving at 12400 + 5042 = 17442.
    // o = 1500: every receive ends o later, every send starts o later:
    // 5600 + 1500 = 7100 -> 7100 + 1500 + 6800 = 15400 -> 15400 + 1500 = 16900
    // at rank 0; 16900 + 5042 = 21942 at rank 1.
    for (o, want) in [(0u64, [12_400u64, 17_442]), (1500, [16_900, 21_942])] {
        let reference = crate::util::run(
            Command::new(bin("loggopsim"))
                .arg("-f")
                .arg(&g)
                .args(loggopsim_params(lfix + gfix - o, o, gfix)),
        );
        assert!(reference.status.success(), "{}", text(&reference.stderr));
        assert_eq!(finish_times(&reference.stdout), want, "LogGP, o={o}");
        // The Python peers speak protocol version 1: notify-v1, query-v1.
        let mut modes: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
            ("notify-v1", vec![], vec![]),
            ("query-v1", vec!["--estimate", "1"], vec!["--estimate", "1"]),
        ];
        if o == 0 {
            // The plain 1 ps poll too (about 17000 round trips).
            modes.push(("query-v1", vec![], vec![]));
        }
        for (protocol, fabric_extra, sched_extra) in modes {
            let _lock = ipc_lock();
            let k = key("fab");
            let fabric = start(
                Command::new("python3")
                    .arg(peers.join("fabric.py"))
                    .args(["--key", &k, "--protocol", protocol])
                    .args(["--latency", &lfix.to_string(), "--gap", &gfix.to_string()])
                    .args(&fabric_extra),
            );
            let mut c = Command::new(bin("loggopsim"));
            c.arg("-f")
                .arg(&g)
                .args(loggopsim_params(0, o, 0))
                .args(["--network", "ipc", "--key", &k, "--protocol", protocol])
                .args(&sched_extra);
            let s = run_within(c, Duration::from_secs(60));
            let f = finish(fabric, Duration::from_secs(20), "fabric.py");
            assert!(s.status.success(), "loggopsim: {}", text(&s.stderr));
            assert!(f.status.success(), "fabric.py: {}", text(&f.stderr));
            assert!(
                text(&f.stdout).contains("fabric.py: 3 messages"),
                "{}",
                text(&f.stdout)
            );
            assert_eq!(
                finish_times(&s.stdout),
                want,
                "o={o} {protocol} {fabric_extra:?}"
            );
        }
    }
}

/// One ibnet run with its arrival log; returns (peer stdout, arrival log).
fn with_ibnet(
    protocol: &str,
    estimate: &str,
    scheduler: impl FnOnce(&str) -> Command,
) -> (Output, String) {
    let _lock = ipc_lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("arrivals.log");
    let k = key("ib");
    let mut fc = Command::new(bin("ibnet"));
    fc.args([
        "serve",
        "--key",
        &k,
        "--protocol",
        protocol,
        "--topology",
        "H8_S1",
        // scheduler.py speaks message queues (ibnet serve's default is shm)
        "--transport",
        "mq",
    ])
    .arg("--log-arrivals")
    .arg(&log);
    if protocol.starts_with("query") {
        fc.args(["--estimate", estimate]);
    }
    let fabric = start(&mut fc);
    let s = run_within(scheduler(&k), Duration::from_secs(60));
    let f = finish(fabric, Duration::from_secs(20), "ibnet serve");
    assert!(s.status.success(), "scheduler: {}", text(&s.stderr));
    assert!(f.status.success(), "ibnet: {}", text(&f.stderr));
    (s, std::fs::read_to_string(&log).unwrap())
}

/// scheduler.py and loggopsim drive ibnet with the same two messages and
/// get the same arrival times (ibnet's arrival log and their reports).
/// 44 B and 2048 B over one switch take 150600 ps and 1225800 ps on the
/// idle thesis-ddr fabric (derived in tests/e2e/cosim.rs,
/// single_message_travel_time_equals_standalone_fabric); the answer starts
/// when the first message has been consumed, on an idle fabric again.
#[test]
fn python_scheduler_gets_loggopsims_arrival_times_from_ibnet() {
    let Some(peers) = python_peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The estimate is F x the per-hop fixed latencies (one switch: 100 ns,
    // docs/protocol.md rule 2.5), so F just below travel / 100 ns keeps the
    // 1 ps polls after the first reply few (a few hundred) and exact.
    for (size, travel, f) in [(44u64, 150_600u64, "1.5"), (2048, 1_225_800, "12.25")] {
        let g = write_goal(dir.path(), &format!("pp2-{size}.goal"), &pingpong2(size));
        // scheduler.py speaks protocol version 1: notify-v1, query-v1.
        for protocol in ["notify-v1", "query-v1"] {
            let (py, py_log) = with_ibnet(protocol, f, |k| {
                let mut c = Command::new("python3");
                c.arg(peers.join("scheduler.py"))
                    .args(["--key", k, "--protocol", protocol, "--json"])
                    .args(["--size", &size.to_string()]);
                if protocol.starts_with("query") {
                    c.arg("--estimate");
                }
                c
            });
            let (rs, rs_log) = with_ibnet(protocol, f, |k| {
                let mut c = Command::new(bin("loggopsim"));
                c.arg("-f").arg(&g).args(loggopsim_params(0, 0, 0)).args([
                    "--network",
                    "ipc",
                    "--key",
                    k,
                    "--protocol",
                    protocol,
                ]);
                if protocol.starts_with("query") {
                    c.args(["--estimate", f]);
                }
                c
            });
            let v: Value = serde_json::from_slice(&py.stdout)
                .unwrap_or_else(|e| panic!("scheduler.py JSON ({e}): {}", text(&py.stdout)));
            let py_times = u64_array(&v, "arrival_times");
            assert_eq!(py_times, [travel, 2 * travel], "{size} B {protocol}");
            // loggopsim: rank 1 ends at the first arrival (then sends at
            // once), rank 0 at the second.
            assert_eq!(
                finish_times(&rs.stdout),
                [2 * travel, travel],
                "{size} B {protocol}"
            );
            assert_eq!(
                py_log, rs_log,
                "{size} B {protocol}: ibnet's arrival logs differ"
            );
            assert_eq!(
                py_log,
                format!("# handle time_ps\n0 {travel}\n1 {}\n", 2 * travel)
            );
        }
    }
}

/// The two Python peers together: 100 B messages with Lfix = 5000 ps and
/// Gfix = 6 ps/B arrive every 5600 ps.
#[test]
fn python_peers_talk_to_each_other() {
    let Some(peers) = python_peers() else { return };
    for (protocol, extra) in [("notify", false), ("query", false), ("query", true)] {
        let _lock = ipc_lock();
        let k = key("py");
        let mut fc = Command::new("python3");
        fc.arg(peers.join("fabric.py")).args([
            "--key",
            &k,
            "--protocol",
            protocol,
            "--latency",
            "5000",
            "--gap",
            "6",
        ]);
        let mut sc = Command::new("python3");
        sc.arg(peers.join("scheduler.py"))
            .args(["--key", &k, "--rounds", "2", "--size", "100"]);
        if extra {
            fc.args(["--estimate", "1"]);
            sc.arg("--estimate");
        }
        let fabric = start(&mut fc);
        let s = run_within(sc, Duration::from_secs(60));
        let f = finish(fabric, Duration::from_secs(20), "fabric.py");
        assert!(s.status.success(), "{}", text(&s.stderr));
        assert!(f.status.success(), "{}", text(&f.stderr));
        assert_eq!(
            text(&s.stdout),
            "0 0 1 100 0 5600\n1 1 0 100 5600 11200\n2 0 1 100 11200 16800\n3 1 0 100 16800 22400\nfinish 22400\n",
            "{protocol} estimate={extra}"
        );
    }
}

#[test]
fn python_peers_report_bad_use() {
    let Some(peers) = python_peers() else { return };
    // A bad key is refused before anything is created.
    let o = run_within(
        {
            let mut c = Command::new("python3");
            c.arg(peers.join("fabric.py")).args(["--key", "a/b"]);
            c
        },
        Duration::from_secs(20),
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("invalid session key"),
        "{}",
        text(&o.stderr)
    );
    // No fabric: a bounded wait, then a clear error.
    let k = key("none");
    let o = run_within(
        {
            let mut c = Command::new("python3");
            c.arg(peers.join("scheduler.py"))
                .args(["--key", &k, "--connect-timeout", "0.3"]);
            c
        },
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(&format!("fabric not ready: /{k}.ctl does not exist")),
        "{}",
        text(&o.stderr)
    );
}
