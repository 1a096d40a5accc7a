//! Co-simulation end to end: `scripts/cosim` driving `ibnet serve` and
//! `loggopsim --network ipc|inproc` (and the in-process backend), the
//! fixed-latency test peer, and the failure paths (killed sides, unmatched
//! receives, too many ranks).
//!
//! Query at 1 ps runs with the arrival estimate F = 1: the zero-load
//! latency is a lower bound of every arrival, so the first reply never
//! promises too much and the result is exact, while a plain 1 ps poll of a
//! 400 kB message would need 2e8 round trips.

use crate::util::{bin, repo_root, u64_array, wait_within, words};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Linux charges each message queue against a per-user budget
/// (RLIMIT_MSGQUEUE), and some tests here measure that budget or start 16
/// sessions at once, so the tests of this module run their IPC sessions one
/// at a time, also against the other e2e modules (`util::ipc_lock`).
fn ipc_budget() -> crate::util::IpcLock {
    crate::util::ipc_lock()
}

fn bin_dir() -> PathBuf {
    bin("loggopsim").parent().unwrap().to_path_buf()
}

fn cosim_script() -> PathBuf {
    repo_root().join("scripts").join("cosim")
}

/// The project's ping-pong (examples/pingpong.goal): two ranks, ten round
/// trips of 400000 bytes, the workload of the tests below that need some
/// run of a few milliseconds.
fn pingpong() -> PathBuf {
    repo_root().join("examples/pingpong.goal")
}

/// A session key no other test (or run) uses.
fn fresh_key() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "e2e-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// `scripts/cosim ARGS` with the test build's binaries; panics after `limit`.
fn cosim_cmd(args: &[&str]) -> Command {
    let mut c = Command::new("bash");
    c.arg(cosim_script())
        .args(args)
        .env("IBCOSIM_BIN_DIR", bin_dir());
    c
}

fn run_limited(mut c: Command, limit: Duration) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().expect("spawn");
    wait_within(child, limit, &format!("{c:?}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run scripts/cosim with --json; return (scheduler JSON, fabric JSON).
fn cosim_json(args: &[&str]) -> (Value, Value) {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--json");
    let o = run_limited(cosim_cmd(&all), Duration::from_secs(120));
    assert!(
        o.status.success(),
        "cosim {args:?} failed: {}\n{}",
        text(&o.stderr),
        text(&o.stdout)
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("cosim {args:?}: bad JSON ({e}): {}", text(&o.stdout)));
    (v["scheduler"].clone(), v["fabric"].clone())
}

fn finish_times(sched: &Value) -> Vec<u64> {
    u64_array(sched, "finish_times_ps")
}

/// The transports under the exact notify protocol (version 2). Polling at
/// 1 ps is exact too, but since the arrival estimate follows the thesis
/// (per-hop fixed latencies, several times below a travel time) it costs
/// about one round trip per simulated ps of a transfer (~1e8 for ltest's
/// 400 kB messages), too slow for these end-to-end runs: query == notify
/// == one-piece at 1 ps is checked in-process by loggopsim's exactness
/// property test (loggopsim/tests/exact_notify.rs).
const MODES: &[(&str, &[&str])] = &[
    (
        "notify/shm",
        &["--protocol", "notify", "--transport", "shm"],
    ),
    ("notify/mq", &["--protocol", "notify", "--transport", "mq"]),
    (
        "notify/inproc",
        &["--protocol", "notify", "--transport", "inproc"],
    ),
    (
        "notify/onepiece",
        &["--protocol", "notify", "--transport", "onepiece"],
    ),
    // version 4, triggered inserts: fewer round trips, the same results
    (
        "notify-v4/shm",
        &["--protocol", "notify-v4", "--transport", "shm"],
    ),
    (
        "notify-v4/onepiece",
        &["--protocol", "notify-v4", "--transport", "onepiece"],
    ),
    // each side polling on a CPU of its own (`--wait poll`; the CI
    // machine has two): only when a side sleeps changes, never a result
    (
        "notify/shm/poll",
        &[
            "--protocol",
            "notify",
            "--transport",
            "shm",
            "--wait",
            "poll",
        ],
    ),
    (
        "notify/mq/poll",
        &[
            "--protocol",
            "notify",
            "--transport",
            "mq",
            "--wait",
            "poll",
        ],
    ),
];

/// Per-rank finish times of every mode; all must be identical.
fn all_modes_agree(base: &[&str]) -> Vec<u64> {
    let mut first: Option<(String, Vec<u64>)> = None;
    for (name, m) in MODES {
        let key = fresh_key();
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(m);
        args.extend_from_slice(&["--key", &key]);
        let started = std::time::Instant::now();
        let (s, f) = cosim_json(&args);
        let elapsed = started.elapsed().as_secs_f64();
        let t = finish_times(&s);
        assert!(t.iter().any(|&x| x > 0), "{name}: all finish times are 0");
        assert_eq!(
            f["fabric"]["messages_in_flight"], 0,
            "{name}: messages left in the fabric"
        );
        assert_eq!(
            f["server"]["causality_errors"], 0,
            "{name}: causality errors with F = 1"
        );
        coupling_reported(name, &s, &f, elapsed);
        match &first {
            None => first = Some((name.to_string(), t)),
            Some((n0, t0)) => assert_eq!(&t, t0, "{base:?}: {name} differs from {n0}"),
        }
    }
    first.unwrap().1
}

/// Both sides report how long they waited for each other: the scheduler
/// `waited_for_network_s` (a channel to another process or thread), the
/// fabric served over a channel `coupling` with at most one wait per
/// message the scheduler sent (a wait ends when a message comes). Both
/// within the `elapsed` seconds the whole run took (the scheduler's count
/// starts at the handshake, before its own `wall_time_s`).
fn coupling_reported(name: &str, s: &Value, f: &Value, elapsed: f64) {
    let sw = s["waited_for_network_s"].as_f64();
    let one_piece = s["network"]
        .as_str()
        .is_some_and(|n| n.contains("onepiece"));
    if one_piece {
        assert_eq!(sw, None, "{name}: one-piece has no channel to wait on");
        return;
    }
    let sw = sw.unwrap_or_else(|| panic!("{name}: no waited_for_network_s in {s}"));
    assert!(
        (0.0..elapsed).contains(&sw),
        "{name}: waited {sw} s in a run of {elapsed} s"
    );
    let waits = f["coupling"]["waits"].as_u64().unwrap();
    let sent = s["network_stats"]["messages_sent"].as_u64().unwrap();
    assert!(
        (1..=sent).contains(&waits),
        "{name}: the fabric waited {waits} times for {sent} messages"
    );
    let fw = f["coupling"]["waited_for_scheduler_s"].as_f64().unwrap();
    let ins = f["coupling"]["inserting_s"].as_f64().unwrap();
    let ans = f["coupling"]["answering_s"].as_f64().unwrap();
    // three disjoint parts of the fabric's session
    assert!(
        fw >= 0.0 && ins >= 0.0 && ans > 0.0 && fw + ins + ans < elapsed,
        "{name}: waited {fw} s, inserting {ins} s, answering {ans} s in a run of {elapsed} s"
    );
}

fn gen(pattern: &str, ranks: u32, bytes: u64, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{pattern}-{ranks}-{bytes}.goal"));
    let o = crate::util::run(
        Command::new(bin("loggopsim"))
            .args([
                "gen",
                pattern,
                "-s",
                &ranks.to_string(),
                "-d",
                &bytes.to_string(),
                "-o",
            ])
            .arg(&out),
    );
    assert!(o.status.success(), "gen {pattern}: {}", text(&o.stderr));
    out
}

fn write_goal(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn pingpong_identical_in_every_mode() {
    let _ipc = ipc_budget();
    let g = pingpong();
    let t = all_modes_agree(&["-f", g.to_str().unwrap(), "-t", "H8_S6"]);
    // The quick start's golden time (tests/e2e/quickstart.rs): rank 0's
    // last receive and rank 1's last send complete together (o = 0).
    assert_eq!(t, vec![4_341_988_000, 4_341_988_000]);
}

/// `--wait poll` needs a CPU per side: refused (exit 2, saying so) when the
/// supervisor may use one CPU only, and with `--placement same-cpu`.
#[test]
fn wait_poll_needs_two_cpus() {
    let g = pingpong();
    let mut c = Command::new("taskset");
    c.args(["-c", "0", "bash"])
        .arg(cosim_script())
        .args(["-f", g.to_str().unwrap(), "-t", "H8_S6", "--wait", "poll"])
        .env("IBCOSIM_BIN_DIR", bin_dir());
    let o = run_limited(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--wait poll needs two CPUs"),
        "{}",
        text(&o.stderr)
    );
    let o = run_limited(
        cosim_cmd(&["--wait", "poll", "--placement", "same-cpu"]),
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("cannot be combined with --placement same-cpu"));
}

#[test]
fn dissemination_identical_in_every_mode_on_h8_topologies() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 8, 180, dir.path());
    let mut per_topo = Vec::new();
    for topo in ["H8_S1", "H8_S2", "H8_S4", "H8_S6"] {
        per_topo.push(all_modes_agree(&["-f", g.to_str().unwrap(), "-t", topo]));
    }
    // More switches on the paths: never faster than the single switch.
    let max = |v: &Vec<u64>| *v.iter().max().unwrap();
    assert!(
        per_topo.iter().all(|t| max(t) >= max(&per_topo[0])),
        "{per_topo:?}"
    );
}

/// 64 ranks on a 64-HCA fat tree (8 leaves of 16-port switches):
/// recursive-doubling exchange rounds (partner r XOR 2^k) whose receives
/// are all `from -1 tag 0`, so a message of a later round may match an
/// earlier round's receive: the matching depends on arrival order.
///
/// (Not a many-to-one gather: at q = 1 ps a message delayed by incast is
/// polled once per ps of delay, e.g. a 3-to-1 fan-in after these rounds
/// takes 5e6 round trips; a 63-to-1 gather of 180 B overflows a spine
/// obuf, docs/model/fabric.md Q4, reported as a fabric error.)
fn any_source_goal(n: usize) -> String {
    let rounds = n.trailing_zeros() as usize;
    let mut s = format!("num_ranks {n}\n\n");
    for r in 0..n {
        s.push_str(&format!("rank {r} {{\n"));
        for k in 0..rounds {
            s.push_str(&format!(
                "s{k}: send 180b to {} tag 0\nr{k}: recv 180b from -1 tag 0\n",
                r ^ (1 << k)
            ));
            if k > 0 {
                s.push_str(&format!("s{k} requires r{}\n", k - 1));
            }
        }
        s.push_str("}\n\n");
    }
    s
}

#[test]
fn any_source_64_ranks_identical_in_every_mode() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = write_goal(dir.path(), "anysrc64.goal", &any_source_goal(64));
    let t = all_modes_agree(&["-f", g.to_str().unwrap(), "-t", "fattree:16:8"]);
    assert_eq!(t.len(), 64);
}

/// Query at 1 ns without the estimate: each message is learned up to
/// q - 1 ps late, so with 3 messages on every critical path (dissemination
/// among 8) a finish time moves by at most 3 q, where the delay of one
/// message does not change the fabric's timing of the others. That holds
/// on the single switch (H8_S1) and on the fat tree (H8_S6). It is not a
/// law where flows share a link: on H8_S2 (all round-2 messages cross the
/// one inter-switch cable) the shifted injections reorder the arbitration
/// there, and rank 1 ends 5.8 ns late (measured), more than 3 q.
#[test]
fn query_at_1ns_stays_within_quantum_times_critical_path() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 8, 180, dir.path());
    let gs = g.to_str().unwrap();
    for topo in ["H8_S1", "H8_S6"] {
        let (s, _) = cosim_json(&["-f", gs, "-t", topo, "--key", &fresh_key()]);
        let exact = finish_times(&s);
        for transport in ["ipc", "inproc"] {
            let (q, f) = cosim_json(&[
                "-f",
                gs,
                "-t",
                topo,
                "-p",
                "query",
                "-q",
                "1ns",
                "--transport",
                transport,
                "--key",
                &fresh_key(),
            ]);
            let t = finish_times(&q);
            assert_ne!(
                t, exact,
                "{topo} {transport}: 1 ns polling should be visible"
            );
            for (r, (&a, &b)) in exact.iter().zip(&t).enumerate() {
                assert!(
                    b >= a && b - a <= 3 * 1000,
                    "{topo} {transport} rank {r}: notify {a} ps, query@1ns {b} ps"
                );
            }
            assert_eq!(f["quantum_ps"], 1000);
            assert_eq!(f["server"]["replies_arrived"], 24, "{f}");
            assert!(
                f["server"]["query_lateness_ps"].as_u64().unwrap() > 0,
                "{f}"
            );
            assert_eq!(q["network_stats"]["quantum_ps"], 1000);
        }
    }
}

/// One message between the two HCAs of `chain:1` (H_1 - SW_1 - H_2, the
/// network of docs/model/fabric.md 11), L=o=g=G=O=0: the receiver finishes at the
/// fabric's travel time.
///
/// 1 flit (44 B + 20 B header = 64 B, thesis-ddr, docs/model/fabric.md 11 case 1
/// and 13): injected at 0, the generator gets it at 1 ns (msg2msgGap) and
/// pops it in 64 x 0.25 = 16 ns: it leaves H_1 at 17 ns, reaches the switch
/// at 17 ns (first bit), ISW 50 ns, VSW 50 ns -> at H_2 at 117 ns, drained
/// in 64 x 0.525 = 33.6 ns -> consumed at 150.6 ns = 150600 ps. 2048 B is
/// sec. 13's worked check (1225.8 ns).
#[test]
fn single_message_travel_time_equals_standalone_fabric() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    for (bytes, expect) in [
        (44u64, 150_600u64),
        (2048, 1_225_800),
        (4312, MULTI_PACKET_PS),
    ] {
        let g = write_goal(
            dir.path(),
            &format!("one-{bytes}.goal"),
            &format!("num_ranks 2\n\nrank 0 {{\nl1: send {bytes}b to 1 tag 0\n}}\n\nrank 1 {{\nl1: recv {bytes}b from 0 tag 0\n}}\n"),
        );
        for (name, m) in MODES {
            let (s, _) = cosim_json(
                &[
                    &[
                        "-f",
                        g.to_str().unwrap(),
                        "-t",
                        "chain:1",
                        "--key",
                        &fresh_key(),
                    ],
                    *m,
                ]
                .concat(),
            );
            assert_eq!(finish_times(&s), vec![0, expect], "{bytes} B, {name}");
        }
        // The fabric alone (`ibnet run`): with two ranks, dissemination is
        // one message each way, both injected at 0 on separate links.
        let o = crate::util::run(Command::new(bin("ibnet")).args([
            "run",
            "--topology",
            "chain:1",
            "--preset",
            "thesis-ddr",
            "--traffic",
            &format!("dissemination:{bytes}:1"),
            "--json",
            "--no-wall-time",
        ]));
        assert!(o.status.success(), "ibnet run: {}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["closed_loop"]["end_ps"], expect, "{bytes} B: ibnet run");
        // And the library: one message injected at 0; the zero-load formula.
        let topo = ibnet::topology::builtin("chain:1").unwrap();
        let mut f = ibnet::Fabric::new(&topo, &ibnet::Params::thesis_ddr()).unwrap();
        let id = f.inject(ibnet::Time(0), 0, 1, bytes).unwrap();
        assert_eq!(
            f.run_until_completion(),
            Some((ibnet::Time(expect), vec![id])),
            "{bytes} B standalone"
        );
        assert_eq!(
            f.zero_load_latency(0, 1, bytes).0,
            expect,
            "{bytes} B zero-load"
        );
    }
}

/// The benchmark workload (dissemination among 648 ranks on M9, 180 B,
/// zero LogGOPS parameters) ends exactly when the fabric's own closed-loop
/// dissemination driver ends: with o = 0 a rank sends round k the instant
/// its round k-1 message is consumed, which is what the driver does.
#[test]
fn dissemination_648_on_m9_equals_fabric_alone() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 648, 180, dir.path());
    let (s, f) = cosim_json(&[
        "-f",
        g.to_str().unwrap(),
        "-t",
        "M9",
        "--transport",
        "inproc",
    ]);
    let o = crate::util::run(Command::new(bin("ibnet")).args(words(
        "run --topology M9 --preset thesis-ddr --traffic dissemination:180:1 --json --no-wall-time",
    )));
    assert!(o.status.success(), "ibnet run: {}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["closed_loop"]["messages"], 6480);
    assert_eq!(
        s["max_finish_time_ps"], v["closed_loop"]["end_ps"],
        "cosim vs fabric alone"
    );
    assert_eq!(
        f["fabric"]["events_processed"], v["report"]["events_processed"],
        "same fabric work"
    );
}

/// 4312 B = 2 x 2156 B payload: two packets of 2176 B = 34 full flits each,
/// over one switch (thesis-ddr, docs/model/fabric.md 13; derivation in docs/cosim.md).
/// Packet 0 is the single-packet case: flit k reaches H_2 at 117 + 32k ns
/// and, the 33.6 ns drain being slower than the 32 ns wire, is consumed at
/// 150.6 + 33.6k ns, flit 33 at 1259.4 ns. Packet 1 may start at H_1 only
/// when the HCA obuf (36) holds at most one queued flit (flit 32 on the
/// wire at 17 + 32 x 32 = 1041 ns); it follows flit 33 (on the wire
/// 1073-1105 ns, plus at most a 4 ns FC packet), so its flit 34 reaches H_2
/// by 1209 ns, before the sink's next tick at 1293 ns: the sink never
/// idles and the last of the 68 flits is consumed at
/// 1259.4 + 34 x 33.6 = 2401.8 ns.
const MULTI_PACKET_PS: u64 = 2_401_800;

/// A peer that answers every message with a fixed latency Lfix gives the
/// LogGP backend's results with L = Lfix - o (the engine schedules the
/// message event at t + o + L; the peer's arrival is t + Lfix).
#[test]
fn fixed_latency_peer_matches_loggp() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 8, 180, dir.path());
    let peer = bin("fixed-latency-peer");
    for (o, lfix) in [(0u64, 5000u64), (1500, 5000)] {
        let l = lfix - o;
        let params = |l: u64| {
            vec![
                "-L".to_string(),
                l.to_string(),
                "-o".into(),
                o.to_string(),
                "-g".into(),
                "1000".into(),
                "-G".into(),
                "6".into(),
                "--json".into(),
            ]
        };
        let reference = crate::util::run(
            Command::new(bin("loggopsim"))
                .arg("-f")
                .arg(&g)
                .args(params(l)),
        );
        assert!(reference.status.success());
        let want = finish_times(&serde_json::from_slice(&reference.stdout).unwrap());
        for protocol in ["notify", "query"] {
            let key = fresh_key();
            let mut p = Command::new(&peer)
                .args([
                    "--key",
                    &key,
                    "--protocol",
                    protocol,
                    "--latency",
                    &lfix.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut c = Command::new(bin("loggopsim"));
            c.arg("-f").arg(&g).args(params(0)).args([
                "--network",
                "ipc",
                "--key",
                &key,
                "--protocol",
                protocol,
                "--estimate",
                "1",
            ]);
            let o2 = run_limited(c, Duration::from_secs(30));
            let ps = p.wait().unwrap();
            assert!(o2.status.success(), "{}", text(&o2.stderr));
            assert!(ps.success());
            let got = finish_times(&serde_json::from_slice(&o2.stdout).unwrap());
            assert_eq!(got, want, "o={o} Lfix={lfix} {protocol}");
        }
    }
}

/// Direct children of `pid` (Linux /proc).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect()
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn session_objects_left(key: &str) -> Vec<String> {
    let k = ipc_proto::SessionKey::new(key).unwrap();
    k.all_object_names()
        .into_iter()
        .filter(|n| ipc_proto::object_exists(n).unwrap_or(true))
        .collect()
}

/// The objects a running session of `transport` has: 4 queues + segment
/// (mq, query protocol) or the segment alone (shm).
fn objects_of(transport: &str) -> usize {
    if transport == "mq" {
        4
    } else {
        1
    }
}

/// Start a long run (query at 1 ps without the estimate: one round trip
/// per simulated ps of a 400 kB transfer) under the supervisor and wait
/// until both sides run and the session exists. Returns (supervisor child,
/// fabric pid, scheduler pid, key).
fn start_long_run(
    transport: &str,
    env: &[(&str, &str)],
) -> (std::process::Child, u32, u32, String) {
    start_long_run_with(transport, env, &[])
}

fn start_long_run_with(
    transport: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> (std::process::Child, u32, u32, String) {
    let key = fresh_key();
    let g = pingpong();
    let mut args = vec![
        "-f",
        g.to_str().unwrap(),
        "-p",
        "query",
        "-q",
        "1ps",
        "--transport",
        transport,
        "--key",
        &key,
    ];
    args.extend_from_slice(extra);
    let mut c = cosim_cmd(&args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let sup = child.id();
    let start = Instant::now();
    loop {
        let kids = children(sup);
        let named: Vec<(u32, String)> = kids.iter().map(|&p| (p, comm(p))).collect();
        let has = |n: &str| named.iter().find(|(_, c)| c == n).map(|(p, _)| *p);
        if let (Some(f), Some(s)) = (has("ibnet"), has("loggopsim")) {
            if session_objects_left(&key).len() == objects_of(transport) {
                return (child, f, s, key);
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run did not start: {named:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kill one side with SIGKILL (after `after`), and expect a prompt, clear
/// end that names the killed side, with its status, and no leftovers.
fn kill_one_side(victim: &str, transport: &str, after: Duration) {
    let (child, f, s, key) = start_long_run(transport, &[]);
    std::thread::sleep(after);
    let target = if victim == "ibnet" { f } else { s };
    let killed = Instant::now();
    assert!(Command::new("kill")
        .args(["-KILL", &target.to_string()])
        .status()
        .unwrap()
        .success());
    let out = run_wait(child, Duration::from_secs(10));
    let took = killed.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(137), "{victim}/{transport}: {err}");
    assert!(took < Duration::from_secs(3), "took {took:?}: {err}");
    let side = if victim == "ibnet" {
        "the fabric (ibnet) failed first"
    } else {
        "the scheduler (loggopsim) failed first"
    };
    assert!(
        err.contains(side) && err.contains("SIGKILL"),
        "{victim}/{transport}: {err}"
    );
    assert_eq!(
        session_objects_left(&key),
        Vec::<String>::new(),
        "IPC objects left"
    );
}

fn run_wait(child: std::process::Child, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("the supervisor did not end within {limit:?}");
        }
    }
}

#[test]
fn killing_the_fabric_stops_the_run_cleanly() {
    let _ipc = ipc_budget();
    kill_one_side("ibnet", "mq", Duration::from_millis(500));
    kill_one_side("ibnet", "shm", Duration::from_millis(500));
}

#[test]
fn killing_the_scheduler_stops_the_run_cleanly() {
    let _ipc = ipc_budget();
    kill_one_side("loggopsim", "mq", Duration::from_millis(500));
    kill_one_side("loggopsim", "shm", Duration::from_millis(500));
}

/// 50 kill -9 trials, alternating the victim and the transport, killed
/// 0-45 ms after the session exists: the supervisor must name the killed
/// side every time (both sides end within ~0.1 s of each other, so the
/// order in which they are reaped says nothing).
#[test]
fn kill_9_names_the_killed_side_in_50_trials() {
    let _ipc = ipc_budget();
    for i in 0..50u64 {
        let victim = if i % 2 == 0 { "ibnet" } else { "loggopsim" };
        let transport = if (i / 2) % 2 == 0 { "shm" } else { "mq" };
        kill_one_side(victim, transport, Duration::from_millis((i * 7) % 50));
    }
}

/// A side stopped with SIGSTOP: its heartbeat stops, the peer gives up
/// after IBCOSIM_STALL_TIMEOUT (1 s here) and the supervisor names the
/// stopped side; nothing is left behind.
fn stopped_side_is_detected(victim: &str, transport: &str) {
    let (child, f, s, key) = start_long_run(transport, &[("IBCOSIM_STALL_TIMEOUT", "1")]);
    std::thread::sleep(Duration::from_millis(200));
    let target = if victim == "ibnet" { f } else { s };
    let t = Instant::now();
    assert!(Command::new("kill")
        .args(["-STOP", &target.to_string()])
        .status()
        .unwrap()
        .success());
    let out = run_wait(child, Duration::from_secs(15));
    let took = t.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // 1 s stall limit + 0.1 s heartbeat + 0.1 s liveness poll + clean-up.
    assert!(
        took < Duration::from_secs(4),
        "took {took:?} to notice: {err}"
    );
    let side = if victim == "ibnet" {
        "the fabric (ibnet) failed first: it was stopped"
    } else {
        "the scheduler (loggopsim) failed first: it was stopped"
    };
    assert!(err.contains(side), "{err}");
    let peer = if victim == "ibnet" {
        "peer fabric"
    } else {
        "peer scheduler"
    };
    assert!(
        err.contains(peer) && err.contains("stopped responding"),
        "{err}"
    );
    assert!(
        !Path::new(&format!("/proc/{target}")).exists() || comm(target).is_empty() || {
            // reaped or a zombie of the supervisor's (it is gone)
            std::fs::read_to_string(format!("/proc/{target}/stat"))
                .map(|s| s.contains(") Z"))
                .unwrap_or(true)
        }
    );
    assert_eq!(session_objects_left(&key), Vec::<String>::new());
}

#[test]
fn sigstop_of_either_side_is_detected_within_the_stall_limit() {
    let _ipc = ipc_budget();
    stopped_side_is_detected("ibnet", "shm");
    stopped_side_is_detected("loggopsim", "mq");
}

/// CPU time (user + system) of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // fields after the command's closing parenthesis: utime and stime are
    // the 12th and 13th of them
    let rest = &st[st.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// `--wait poll`: the scheduler polls while the fabric works, but once its
/// peer is stopped it sleeps after one budget of polling (100 ms) instead
/// of keeping its CPU busy until the stall limit; the stall is still
/// detected and named, and nothing is left behind.
#[test]
fn a_polling_side_sleeps_while_its_peer_is_stopped() {
    let _ipc = ipc_budget();
    let (child, f, s, key) = start_long_run_with(
        "shm",
        &[("IBCOSIM_STALL_TIMEOUT", "4")],
        &["--wait", "poll"],
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(Command::new("kill")
        .args(["-STOP", &f.to_string()])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(Duration::from_millis(500));
    let c0 = cpu_ticks(s);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(s) - c0;
    // SAFETY: sysconf(3) takes an integer name and no pointers; it only
    // reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    // polling throughout would be 2 s; sleeping, a few liveness checks
    assert!(
        used * 10 < 3 * hz,
        "the scheduler used {used} ticks of {hz}/s in 2 s while its peer was stopped"
    );
    let out = run_wait(child, Duration::from_secs(15));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the fabric (ibnet) failed first: it was stopped"),
        "{err}"
    );
    assert_eq!(session_objects_left(&key), Vec::<String>::new());
}

/// A side that is alive and scheduled but makes no progress (here the
/// fabric loops forever after its first record, by fault injection) stops
/// its heartbeat (it beats only while it waits for its peer or simulates):
/// its peer reports it after the stall limit, the supervisor kills it and
/// names it, and nothing is left behind.
#[test]
fn a_hung_side_is_detected_within_the_stall_limit() {
    let _ipc = ipc_budget();
    for transport in ["shm", "mq"] {
        let t = Instant::now();
        let (child, f, _s, key) = start_long_run(
            transport,
            &[
                ("IBCOSIM_STALL_TIMEOUT", "1"),
                ("IBCOSIM_TEST_FAULT", "hang-fabric"),
            ],
        );
        let out = run_wait(child, Duration::from_secs(20));
        let took = t.elapsed();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{transport}: {err}");
        assert!(
            err.contains("peer fabric") && err.contains("stopped responding"),
            "{transport}: {err}"
        );
        assert!(
            err.contains("the fabric (ibnet) failed first: it stopped responding"),
            "{transport}: {err}"
        );
        // 1 s stall limit + heartbeat and liveness periods + the
        // supervisor's 2 s grace before it kills the hung side.
        assert!(
            took < Duration::from_secs(12),
            "{transport}: took {took:?}: {err}"
        );
        assert!(
            !Path::new(&format!("/proc/{f}")).exists()
                || std::fs::read_to_string(format!("/proc/{f}/stat"))
                    .map(|s| s.contains(") Z"))
                    .unwrap_or(true),
            "{transport}: the hung fabric is still running"
        );
        assert_eq!(session_objects_left(&key), Vec::<String>::new());
    }
}

#[test]
fn invalid_key_fails_with_2_before_starting_anything() {
    for key in ["a/b", "", "a.b", &"k".repeat(65)] {
        let c = cosim_cmd(&["--key", key]);
        let t = Instant::now();
        let o = run_limited(c, Duration::from_secs(10));
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{key:?}: {err}");
        assert!(err.contains("invalid session key"), "{err}");
        // Nothing was built or started (no side's output, no session
        // objects), and the refusal is immediate.
        assert!(
            !err.contains("building") && !err.contains("No such file"),
            "{err}"
        );
        assert!(
            !err.contains("ibnet") && !err.contains("loggopsim"),
            "{err}"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(text(&o.stdout).is_empty());
    }
}

#[test]
fn sigterm_to_the_supervisor_stops_both_and_cleans_up() {
    let _ipc = ipc_budget();
    let key = fresh_key();
    let g = pingpong();
    let mut c = cosim_cmd(&[
        "-f",
        g.to_str().unwrap(),
        "-p",
        "query",
        "-q",
        "1ps",
        "--transport",
        "mq",
        "--key",
        &key,
    ]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let sup = child.id();
    let start = Instant::now();
    while children(sup).len() < 2 || session_objects_left(&key).len() < 4 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kids = children(sup);
    assert!(Command::new("kill")
        .args(["-TERM", &sup.to_string()])
        .status()
        .unwrap()
        .success());
    let out = run_wait(child, Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("caught SIGTERM"));
    assert!(
        kids.iter()
            .all(|p| !Path::new(&format!("/proc/{p}")).exists() || comm(*p).is_empty()),
        "children survive"
    );
    assert_eq!(session_objects_left(&key), Vec::<String>::new());
}

#[test]
fn unmatched_receive_is_reported_and_fails() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = write_goal(
        dir.path(),
        "unmatched.goal",
        "num_ranks 2\n\nrank 0 {\nl1: send 8b to 1 tag 6\n}\n\nrank 1 {\nl1: recv 8b from 0 tag 5\n}\n",
    );
    for transport in ["shm", "mq", "inproc"] {
        for protocol in ["notify", "query"] {
            let key = fresh_key();
            let o = run_limited(
                cosim_cmd(&[
                    "-f",
                    g.to_str().unwrap(),
                    "-p",
                    protocol,
                    "-q",
                    "1ns",
                    "--transport",
                    transport,
                    "--key",
                    &key,
                ]),
                Duration::from_secs(30),
            );
            let (out, err) = (text(&o.stdout), text(&o.stderr));
            assert_eq!(o.status.code(), Some(1), "{transport}/{protocol}: {err}");
            assert!(out.contains("Host 1 RQ: src=0 tag=5 size=8"), "{out}");
            assert!(out.contains("Host 1 UQ: src=0 tag=6 size=8"), "{out}");
            assert!(err.contains("unmatched receive"), "{err}");
            assert!(err.contains("cosim: the scheduler (loggopsim"), "{err}");
            assert_eq!(session_objects_left(&key), Vec::<String>::new());
        }
    }
}

#[test]
fn more_ranks_than_hcas_is_a_startup_error() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 16, 8, dir.path());
    for transport in ["ipc", "inproc"] {
        let key = fresh_key();
        let o = run_limited(
            cosim_cmd(&[
                "-f",
                g.to_str().unwrap(),
                "-t",
                "H8_S6",
                "--transport",
                transport,
                "--key",
                &key,
            ]),
            Duration::from_secs(30),
        );
        let err = text(&o.stderr);
        assert!(!o.status.success());
        assert!(
            err.contains("the schedule has 16 ranks but the fabric"),
            "{transport}: {err}"
        );
        assert!(err.contains("maps only 8 ranks"), "{transport}: {err}");
        assert_eq!(session_objects_left(&key), Vec::<String>::new());
    }
}

#[test]
fn default_run_prints_finish_times_and_fabric_summary() {
    let _ipc = ipc_budget();
    let o = run_limited(cosim_cmd(&[]), Duration::from_secs(60));
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        out.contains("Host 0: ") && out.contains("Host 1: "),
        "{out}"
    );
    assert!(out.contains("fabric: topology H8_S6"), "{out}");
    assert!(
        out.contains("protocol: 20 inserts, 20 NoMoreInserts"),
        "{out}"
    );
    // the coupling's wall-clock cost as the fabric saw it, with its rounds
    let line = out
        .lines()
        .find(|l| l.starts_with("coupling: the fabric waited "))
        .unwrap_or_else(|| panic!("no coupling line in {out}"));
    assert!(
        line.contains(" ms (wall clock) for the scheduler: "),
        "{line}"
    );
    assert!(line.contains(", 20 rounds; took in inserts for "), "{line}");
    assert!(line.contains(" ms, simulated and answered for "), "{line}");
    assert!(line.ends_with(" ms"), "{line}");
}

#[test]
fn fabric_logs_are_written() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 8, 180, dir.path());
    let logs = dir.path().join("logs");
    for transport in ["ipc", "inproc"] {
        let _ = std::fs::remove_dir_all(&logs);
        let (_, f) = cosim_json(&[
            "-f",
            g.to_str().unwrap(),
            "--transport",
            transport,
            "--fabric-log",
            logs.to_str().unwrap(),
            "--key",
            &fresh_key(),
        ]);
        let ins = std::fs::read_to_string(logs.join("inserts.log")).unwrap();
        let arr = std::fs::read_to_string(logs.join("arrivals.log")).unwrap();
        assert_eq!(
            ins.lines().filter(|l| !l.starts_with('#')).count(),
            24,
            "{transport}"
        );
        assert_eq!(
            arr.lines().filter(|l| !l.starts_with('#')).count(),
            24,
            "{transport}"
        );
        // first round: every rank sends at 0 to r+1
        assert!(ins.lines().any(|l| l.ends_with(" 0 0 1 180")), "{ins}");
        assert_eq!(f["server"]["arrivals"], 24);
    }
}

/// `--map` moves ranks: rank 0 on H_8 and rank 1 on H_1 of H8_S2 puts the
/// two switches on the path, +100 ns (ISW + VSW, docs/model/fabric.md 11 case 6)
/// over the one-switch 150.6 ns. A bad map file is a startup error naming
/// file and line.
#[test]
fn rank_map_file_places_ranks() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = write_goal(
        dir.path(),
        "one.goal",
        "num_ranks 2\n\nrank 0 {\nl1: send 44b to 1 tag 0\n}\n\nrank 1 {\nl1: recv 44b from 0 tag 0\n}\n",
    );
    let map = write_goal(dir.path(), "map.txt", "# rank hca\n0 H_8\n1 H_1\n");
    let bad = write_goal(dir.path(), "bad.txt", "0 H_8\n0 H_1\n");
    let gs = g.to_str().unwrap();
    for transport in ["ipc", "inproc"] {
        let (s, _) = cosim_json(&[
            "-f",
            gs,
            "-t",
            "H8_S2",
            "--transport",
            transport,
            "--key",
            &fresh_key(),
        ]);
        assert_eq!(
            finish_times(&s),
            vec![0, 150_600],
            "{transport}: default map, one switch"
        );
        let (s, _) = cosim_json(&[
            "-f",
            gs,
            "-t",
            "H8_S2",
            "--map",
            map.to_str().unwrap(),
            "--transport",
            transport,
            "--key",
            &fresh_key(),
        ]);
        assert_eq!(
            finish_times(&s),
            vec![0, 250_600],
            "{transport}: mapped across two switches"
        );
        let key = fresh_key();
        let o = run_limited(
            cosim_cmd(&[
                "-f",
                gs,
                "-t",
                "H8_S2",
                "--map",
                bad.to_str().unwrap(),
                "--transport",
                transport,
                "--key",
                &key,
            ]),
            Duration::from_secs(30),
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{transport}: {err}");
        assert!(
            err.contains("bad.txt:2: rank 0 is mapped twice (first on line 1)"),
            "{transport}: {err}"
        );
        assert_eq!(session_objects_left(&key), Vec::<String>::new());
    }
}

/// The two sides must speak the same protocol: the scheduler reads the
/// fabric's protocol from the control segment and refuses to start.
#[test]
fn protocol_mismatch_is_refused() {
    let _ipc = ipc_budget();
    let key = fresh_key();
    let mut fabric = Command::new(bin("ibnet"))
        .args([
            "serve",
            "--key",
            &key,
            "--protocol",
            "notify",
            "--topology",
            "H8_S1",
            "--attach-timeout",
            "5",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut c = Command::new(bin("loggopsim"));
    c.arg("-f")
        .arg(pingpong())
        .args(["--network", "ipc", "--key", &key, "--protocol", "query"]);
    let o = run_limited(c, Duration::from_secs(20));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("serves notify") && err.contains("but --protocol query"),
        "{err}"
    );
    let _ = fabric.kill();
    let _ = fabric.wait();
    let _ = ipc_proto::cleanup(&key);
}

/// 16 co-simulations of one user at once over message queues (the default
/// RLIMIT_MSGQUEUE of 819200 bytes), all succeed with identical results;
/// then, with the rest of the budget taken, one more fails with exit code
/// 3 and a message naming the limit and the remedy, leaving nothing behind.
#[test]
fn sixteen_concurrent_mq_sessions_and_a_clear_error_beyond_the_budget() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 8, 180, dir.path());
    let keys: Vec<String> = (0..16).map(|_| fresh_key()).collect();
    let children: Vec<std::process::Child> = keys
        .iter()
        .map(|k| {
            let mut c = cosim_cmd(&[
                "-f",
                g.to_str().unwrap(),
                "-t",
                "H8_S1",
                "-p",
                "notify",
                "--transport",
                "mq",
                "--json",
                "--key",
                k,
            ]);
            c.stdout(Stdio::piped()).stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let mut first: Option<Vec<u64>> = None;
    for (i, ch) in children.into_iter().enumerate() {
        let o = run_wait(ch, Duration::from_secs(120));
        assert!(o.status.success(), "session {i}: {}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let t = finish_times(&v["scheduler"]);
        assert!(t.iter().all(|&x| x > 0), "{t:?}");
        match &first {
            None => first = Some(t),
            Some(t0) => assert_eq!(&t, t0, "session {i} differs"),
        }
    }
    for k in &keys {
        assert_eq!(session_objects_left(k), Vec::<String>::new());
    }
    // Take what is left of the budget, then ask for one more session.
    let mut held = Vec::new();
    loop {
        match ipc_proto::create_fabric(&fresh_key(), ipc_proto::Protocol::Notify, 8) {
            Ok(s) => held.push(s),
            Err(e) => {
                assert!(e.is_resource_exhausted(), "{e}");
                break;
            }
        }
        assert!(held.len() < 1000);
    }
    let key = fresh_key();
    let o = run_limited(
        cosim_cmd(&[
            "-f",
            g.to_str().unwrap(),
            "-t",
            "H8_S1",
            "--transport",
            "mq",
            "--key",
            &key,
        ]),
        Duration::from_secs(30),
    );
    drop(held);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("RLIMIT_MSGQUEUE"), "{err}");
    assert!(err.contains("--transport shm"), "{err}");
    assert!(err.contains("the fabric (ibnet) failed first"), "{err}");
    assert_eq!(session_objects_left(&key), Vec::<String>::new());
    // Shared memory has no such limit: the same run succeeds meanwhile.
    let o = run_limited(
        cosim_cmd(&[
            "-f",
            g.to_str().unwrap(),
            "-t",
            "H8_S1",
            "--transport",
            "shm",
        ]),
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// `ibnet serve` started with `&` from a shell script (SIGINT inherited as
/// ignored) or under nohup (SIGHUP ignored) still removes its queues and
/// segment on SIGTERM/SIGINT/SIGHUP and exits with 128 + signal; under
/// nohup SIGHUP stays ignored (what nohup asks for) and SIGTERM cleans up.
#[test]
fn ibnet_serve_started_in_the_background_cleans_up_on_signals() {
    let _ipc = ipc_budget();
    let ibnet = bin("ibnet");
    let script = r#"
k=$1; t=$2; sig=$3; wrap=$4; errf=$5
$wrap "$IBNET" serve --key "$k" --protocol query --topology H8_S1 --transport "$t" 2>"$errf" &
pid=$!
i=0; while [ ! -e "/dev/shm/$k.ctl" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
sleep 0.2
kill -"$sig" $pid
if [ "$sig" = HUP ] && [ -n "$wrap" ]; then
    sleep 0.5; kill -0 $pid && echo "survived HUP"; kill -TERM $pid
fi
wait $pid
echo "status=$?"
"#;
    for (transport, n) in [("mq", 4), ("shm", 1)] {
        for (sig, code, wrap) in [
            ("TERM", 143, ""),
            ("INT", 130, ""),
            ("HUP", 129, ""),
            ("TERM", 143, "nohup"),
            ("HUP", 143, "nohup"),
        ] {
            let key = fresh_key();
            // ibnet's own stderr, for the message if the status is wrong
            let errf = std::env::temp_dir().join(format!("{key}.serve-stderr"));
            let mut cmd = Command::new("sh");
            cmd.args([
                "-c",
                script,
                "sh",
                &key,
                transport,
                sig,
                wrap,
                errf.to_str().unwrap(),
            ])
            .env("IBNET", &ibnet)
            .current_dir(std::env::temp_dir());
            // The script starts from default dispositions whatever this
            // test inherited: run under nohup (SIGHUP ignored), the whole
            // suite would otherwise start every ibnet with SIGHUP ignored,
            // and ibnet rightly keeps it so (the nohup case below); a
            // non-interactive shell cannot undo an inherited "ignore".
            // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
            unsafe {
                cmd.pre_exec(|| {
                    for s in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                        libc::signal(s, libc::SIG_DFL);
                    }
                    Ok(())
                });
            }
            let o = cmd.output().unwrap();
            let out = text(&o.stdout);
            let serve_err = std::fs::read_to_string(&errf).unwrap_or_default();
            let _ = std::fs::remove_file(&errf);
            assert!(
                out.contains(&format!("status={code}")),
                "{transport} {wrap} {sig}: {out} {} (ibnet serve's stderr: {serve_err})",
                text(&o.stderr)
            );
            assert_eq!(
                out.contains("survived HUP"),
                wrap == "nohup" && sig == "HUP",
                "{out}"
            );
            assert_eq!(
                session_objects_left(&key),
                Vec::<String>::new(),
                "{transport} {wrap} {sig}: objects left ({n} existed)"
            );
        }
    }
}

/// The shared-memory transport passes the conformance checker like the
/// message queues: ibnet serve --transport shm as the fabric (the scenarios
/// about the transport: handshake, batching with full rings, Finish and
/// clean-up, peer death), loggopsim as the scheduler in a checker-made shm
/// session (every scenario).
#[test]
fn conformance_over_shared_memory() {
    let _ipc = ipc_budget();
    let checker = bin("ipc-proto");
    let ibnet = bin("ibnet");
    let loggopsim = bin("loggopsim");
    let dir = tempfile::tempdir().unwrap();
    let g = gen("dissemination", 4, 64, dir.path());
    let runs: [(Vec<String>, usize); 2] = [
        (
            vec![
                "--role".into(),
                "fabric".into(),
                "--only".into(),
                "handshake,bad-record,batching,finish,peer-death".into(),
                "--spawn".into(),
                format!(
                    "{} serve --key {{key}} --protocol {{protocol}} --topology H8_S1 --transport \
                    shm",
                    ibnet.display()
                ),
            ],
            0,
        ),
        (
            vec![
                "--role".into(),
                "scheduler".into(),
                "--transport".into(),
                "shm".into(),
                "--spawn".into(),
                format!(
                    "{} -f {} --network ipc --key {{key}} --protocol {{protocol}}",
                    loggopsim.display(),
                    g.display()
                ),
            ],
            0,
        ),
    ];
    for (args, _) in runs {
        let key = fresh_key();
        let mut c = Command::new(&checker);
        c.args([
            "conformance",
            "--key",
            &key,
            "--protocol",
            "notify",
            "--json",
        ])
        .args(&args);
        let o = run_limited(c, Duration::from_secs(120));
        let out = text(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {out} {}",
            text(&o.stderr)
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        let rules = v.as_array().unwrap();
        assert!(rules.len() >= 8, "{out}");
        assert!(
            rules.iter().all(|r| r["pass"] == Value::Bool(true)),
            "{out}"
        );
        if args[1] == "fabric" {
            assert!(out.contains("rings 32 x 8192 bytes"), "{out}");
        }
    }
}

/// The supervisor killed with SIGKILL (it cannot forward anything): both
/// sides get SIGTERM from the kernel (parent-death signal) and clean up,
/// instead of running on as orphans with their objects.
#[test]
fn sides_follow_a_supervisor_killed_with_sigkill() {
    let _ipc = ipc_budget();
    for transport in ["shm", "mq"] {
        let (child, f, s, key) = start_long_run(transport, &[]);
        std::thread::sleep(Duration::from_millis(200));
        assert!(Command::new("kill")
            .args(["-KILL", &child.id().to_string()])
            .status()
            .unwrap()
            .success());
        let _ = run_wait(child, Duration::from_secs(5));
        let t = Instant::now();
        let gone = |p: u32| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|st| st.contains(") Z"))
                .unwrap_or(true)
        };
        while !(gone(f) && gone(s)) {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "{transport}: sides still running after the supervisor died"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            session_objects_left(&key),
            Vec::<String>::new(),
            "{transport}"
        );
    }
}

/// A schedule with put, get and poll runs through the supervisor
/// under protocol version 3 (`-p notify-v3`) with identical per-rank times
/// over shared memory, message queues, the fabric thread and one-piece;
/// under plain `-p notify` the supervisor serves version 3 (the fabric
/// speaks the highest version of the protocol) and the times are the same;
/// under version 1 (`-p notify-v1`) the scheduler refuses it before the run
/// and says why.
#[test]
fn one_sided_schedule_needs_and_runs_protocol_v3() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = write_goal(
        dir.path(),
        "rdma.goal",
        "num_ranks 3\nrank 0 {\nl1: put 4096b to 1 tag 3\nl2: get 1024b from 2\nl2 requires l1\nl3: calc 0\nl3 requires l2\n}\nrank 1 {\nl1: poll 4096b from 0 tag 3\nl2: calc 0\nl2 requires l1\n}\nrank 2 {\n}\n",
    );
    let gs = g.to_str().unwrap();
    let mut first: Option<Vec<u64>> = None;
    for tr in ["shm", "mq", "inproc", "onepiece"] {
        let (s, f) = cosim_json(&[
            "-f",
            gs,
            "-t",
            "H8_S1",
            "-p",
            "notify-v3",
            "--transport",
            tr,
            "--key",
            &fresh_key(),
        ]);
        let t = finish_times(&s);
        assert!(t[0] > t[1] && t[1] > 0, "{tr}: {t:?}");
        assert_eq!(f["fabric"]["messages_in_flight"], 0, "{tr}");
        match &first {
            None => first = Some(t),
            Some(t0) => assert_eq!(&t, t0, "{tr}"),
        }
    }
    let (s, _) = cosim_json(&[
        "-f",
        gs,
        "-t",
        "H8_S1",
        "-p",
        "notify",
        "--key",
        &fresh_key(),
    ]);
    assert_eq!(Some(finish_times(&s)), first, "-p notify serves version 3");
    let o = run_limited(
        cosim_cmd(&[
            "-f",
            gs,
            "-t",
            "H8_S1",
            "-p",
            "notify-v1",
            "--key",
            &fresh_key(),
        ]),
        Duration::from_secs(60),
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("need protocol version 3") && err.contains("wire version 1"),
        "{err}"
    );
}

/// `ibnet serve` on huge pages (`IBNET_HUGEPAGES=on`; by default only for
/// networks of 1024 HCAs or more): the fabric executes itself again before
/// it creates the session, under the supervisor, and the per-rank times
/// are those of the ordinary heap.
#[test]
fn a_fabric_on_huge_pages_gives_the_same_times() {
    let _ipc = ipc_budget();
    let g = pingpong();
    let base = finish_times(&cosim_json(&["-f", g.to_str().unwrap(), "-t", "H8_S6"]).0);
    let mut c = cosim_cmd(&["-f", g.to_str().unwrap(), "-t", "H8_S6", "--json"]);
    c.env("IBNET_HUGEPAGES", "on").env_remove("GLIBC_TUNABLES");
    let o = run_limited(c, Duration::from_secs(120));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(finish_times(&v["scheduler"]), base);
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[madvise]") {
        assert!(
            text(&o.stderr).contains("ibnet serve: 8 HCAs, the heap on transparent huge pages"),
            "{}",
            text(&o.stderr)
        );
    }
}

/// Version 4 through the supervisor, over shared memory, on a pipeline
/// where triggers fire (each of 16 ranks sends 20 messages to the next,
/// each after the previous receive): the same finish times as version 3,
/// fewer round trips, and both sides count the triggers.
#[test]
fn triggered_inserts_save_round_trips_through_the_supervisor() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let mut goal = String::from("num_ranks 16\n");
    for r in 0..16 {
        goal.push_str(&format!("rank {r} {{\n"));
        for k in 0..20 {
            goal.push_str(&format!(
                "s{k}: send 1000b to {} tag {k}\nr{k}: recv 1000b from {} tag {k}\n",
                (r + 1) % 16,
                (r + 15) % 16
            ));
            if k > 0 {
                goal.push_str(&format!("s{k} requires r{}\n", k - 1));
            }
        }
        goal.push_str("}\n");
    }
    let g = write_goal(dir.path(), "pipeline16.goal", &goal);
    let run = |p: &str| {
        let key = fresh_key();
        cosim_json(&[
            "-f",
            g.to_str().unwrap(),
            "-t",
            "fattree:8",
            "--protocol",
            p,
            "--transport",
            "shm",
            "--key",
            &key,
        ])
    };
    let (s3, _) = run("notify-v3");
    let (s4, f4) = run("notify-v4");
    assert_eq!(finish_times(&s4), finish_times(&s3));
    let st = |s: &Value, k: &str| s["network_stats"][k].as_u64();
    assert_eq!(st(&s4, "protocol_version"), Some(4));
    let fired = st(&s4, "triggers_fired").unwrap();
    assert!(fired > 0, "no trigger fired: {}", s4["network_stats"]);
    assert_eq!(f4["server"]["triggers_fired"].as_u64(), Some(fired));
    assert!(
        st(&s4, "no_more_inserts").unwrap() < st(&s3, "no_more_inserts").unwrap(),
        "v4 {} round trips, v3 {}",
        s4["network_stats"]["no_more_inserts"],
        s3["network_stats"]["no_more_inserts"]
    );
    assert_eq!(st(&s4, "late_arrivals"), Some(0));
}

/// A forged Error record under notify (fault injection in either side:
/// IBCOSIM_TEST_FAULT=error-scheduler / error-fabric): the side that sent
/// the record is named, every time, whichever side the supervisor happens
/// to reap first. The receiver only reports it (and then, for the
/// scheduler, finds its peer gone), so it is never the one to blame.
#[test]
fn a_forged_error_record_gets_the_same_verdict_every_time() {
    let _ipc = ipc_budget();
    for (fault, sender) in [
        ("error-scheduler", "the scheduler (loggopsim)"),
        ("error-fabric", "the fabric (ibnet)"),
    ] {
        for i in 0..10 {
            let transport = if i % 2 == 0 { "shm" } else { "mq" };
            let key = fresh_key();
            let mut c = cosim_cmd(&["-p", "notify", "--transport", transport, "--key", &key]);
            c.env("IBCOSIM_TEST_FAULT", fault);
            let o = run_limited(c, Duration::from_secs(30));
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{fault} #{i}: {err}");
            let verdicts: Vec<&str> = err
                .lines()
                .filter(|l| l.starts_with("cosim: ") && l.contains("failed first"))
                .collect();
            assert_eq!(verdicts.len(), 1, "{fault} #{i}: {err}");
            assert!(
                verdicts[0].starts_with(&format!(
                    "cosim: {sender} failed first with exit status 1 (pid "
                )) && verdicts[0].ends_with("); both sides ended"),
                "{fault} #{i} ({transport}): {err}"
            );
            assert!(
                err.contains(&format!("forged by IBCOSIM_TEST_FAULT={fault}")),
                "{err}"
            );
            assert_eq!(session_objects_left(&key), Vec::<String>::new());
        }
    }
}

/// Bad options and input are refused before anything starts: exit 2, one
/// line naming the problem (the supervisor's own words, or the words of
/// the side's reader it uses), no output, no IPC object, at once. Before,
/// the supervisor started both sides first: a bad topology, preset or map
/// took 2 s and printed the scheduler's "caught signal" line and a verdict
/// line besides; `-q 0` was reported by both sides; `-p notify --estimate
/// 1` ran (loggopsim alone refuses it).
#[test]
fn bad_options_are_refused_before_anything_starts() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let passwd = write_goal(dir.path(), "passwd", "root:x:0:0:root:/root:/bin/sh\n");
    let ranks16 = write_goal(dir.path(), "r16.goal", "// sixteen\nnum_ranks 16\n");
    let (pw, r16) = (passwd.to_str().unwrap(), ranks16.to_str().unwrap());
    let d = dir.path().to_str().unwrap();
    // (arguments, the line exactly, or its start when it ends with '*')
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["-t", "nosuch"], "cosim: *\"nosuch\"*".into()),
        (
            vec!["--preset", "nope"],
            "cosim: --preset nope: unknown preset `nope`*".into(),
        ),
        (
            vec!["--set", "nope=1"],
            "cosim: --set nope=1: unknown parameter `nope`".into(),
        ),
        (
            vec!["--map", "/nonexistent.map"],
            "cosim: */nonexistent.map*".into(),
        ),
        (
            vec!["-p", "query", "-q", "0ps"],
            "cosim: invalid value '0ps' for '--quantum': `0ps`: the quantum must be at least 1 ps"
                .into(),
        ),
        (
            vec!["-p", "notify", "--estimate", "1"],
            "cosim: --estimate 1: an arrival estimate (F) only exists in the query protocol (-p query, query-v1 or query-v3), not in -p notify".into(),
        ),
        (
            vec!["-p", "query", "--estimate", "0"],
            "cosim: invalid value '0' for '--estimate': the estimate factor must be a positive number, not 0".into(),
        ),
        (
            vec!["-p", "query", "--estimate-base", "far"],
            "cosim: invalid value 'far' for '--estimate-base': unknown estimate base \"far\" (expected hops or zero-load)".into(),
        ),
        (
            vec!["-f", pw],
            format!("cosim: {pw}:1:1: expected 'num_ranks N' at the start of the schedule, found 'root'"),
        ),
        (
            vec!["-f", d],
            format!("cosim: cannot read schedule '{d}': not a regular file"),
        ),
        (
            vec!["-f", r16, "-t", "H8_S6"],
            "cosim: the schedule has 16 ranks but the fabric (topology H8_S6) maps only 8 ranks to HCAs (use a larger topology or a --map file)".into(),
        ),
    ];
    for (args, want) in cases {
        for transport in ["shm", "mq", "inproc"] {
            let key = fresh_key();
            let mut a = args.clone();
            a.extend_from_slice(&["--transport", transport, "--key", &key]);
            let t = Instant::now();
            let o = run_limited(cosim_cmd(&a), Duration::from_secs(20));
            let took = t.elapsed();
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "{a:?}: one line expected: {err}");
            let ok = match want.split('*').collect::<Vec<_>>()[..] {
                [whole] => lines[0] == whole,
                [start, mid, ""] => lines[0].starts_with(start) && lines[0].contains(mid),
                [start, ""] => lines[0].starts_with(start),
                _ => unreachable!("{want}"),
            };
            assert!(ok, "{a:?}:\n got  {}\n want {want}", lines[0]);
            assert!(text(&o.stdout).is_empty(), "{a:?}");
            assert_eq!(session_objects_left(&key), Vec::<String>::new());
            assert!(took < Duration::from_secs(2), "{a:?}: {took:?}");
        }
    }
}

/// What only a side finds (a schedule's body, parameters the fabric
/// cannot be built with) ends the run at once, with that side's one line:
/// the other side is stopped without its "caught signal" or "peer died"
/// lines and without a verdict line (before: 2 s and three lines).
#[test]
fn bad_input_found_by_a_side_ends_the_run_at_once_with_one_line() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let body = write_goal(
        dir.path(),
        "body.goal",
        "num_ranks 2\nrank 0 {\nl1: sand 8b to 1\n}\nrank 1 {\n}\n",
    );
    let b = body.to_str().unwrap();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["-f", b], format!("loggopsim: error: {b}:3:")),
        (
            vec!["--set", "obuf_size_hca=2"],
            "ibnet serve: error: fabric parameters: ".into(),
        ),
    ];
    for (args, start) in cases {
        for transport in ["shm", "mq"] {
            let key = fresh_key();
            let mut a = args.clone();
            a.extend_from_slice(&["--transport", transport, "--key", &key]);
            let t = Instant::now();
            let o = run_limited(cosim_cmd(&a), Duration::from_secs(20));
            let took = t.elapsed();
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "{a:?}: one line expected: {err}");
            assert!(lines[0].starts_with(&start), "{a:?}: {err}");
            assert!(took < Duration::from_secs(1), "{a:?}: took {took:?}");
            assert_eq!(session_objects_left(&key), Vec::<String>::new());
        }
    }
}

/// Both sides write 5000 stderr lines at the same time, each line in
/// several write(2) calls (as `eprintln!` does; fault injection
/// IBCOSIM_TEST_FAULT=chatter): every line arrives whole. Before, the
/// supervisor forwarded whatever each read returned, and some 10-500
/// lines of 10000 came out mixed with the other side's.
#[test]
fn the_sides_stderr_lines_arrive_whole() {
    let _ipc = ipc_budget();
    for transport in ["shm", "mq", "shm"] {
        let key = fresh_key();
        let mut c = cosim_cmd(&[
            "--transport",
            transport,
            "--placement",
            "free",
            "--key",
            &key,
        ]);
        c.env("IBCOSIM_TEST_FAULT", "chatter");
        let o = run_limited(c, Duration::from_secs(60));
        let err = text(&o.stderr);
        assert!(
            o.status.success(),
            "{transport}: {}",
            &err[err.len().saturating_sub(2000)..]
        );
        let mut seen = [0usize; 2];
        for line in err.lines() {
            let (side, rest) = line
                .split_once(": chatter line ")
                .unwrap_or_else(|| panic!("{transport}: a line that is not whole: {line:?}"));
            let (i, tail) = rest.split_once(" of 5000: ").expect(line);
            assert_eq!(tail, format!("{} {side} {i}", "x".repeat(64)), "{line:?}");
            let s = match side {
                "scheduler" => 0,
                "fabric" => 1,
                _ => panic!("{transport}: a line that is not whole: {line:?}"),
            };
            seen[s] += 1;
            assert_eq!(i.parse::<usize>().unwrap(), seen[s], "{line:?}");
        }
        assert_eq!(seen, [5000, 5000], "{transport}");
        assert!(text(&o.stdout).contains("Host 1: 4341988000 ps"));
    }
}

/// The quick start prints what the README shows, line for line (the
/// wall-clock figures of the `PERFORMANCE:` and `coupling:` lines aside),
/// in particular `protocol notify (version 3)`: the protocol asked for and
/// the version served (it printed `protocol notify-v3` where the README
/// said `notify`).
#[test]
fn quick_start_prints_what_the_readme_shows() {
    let _ipc = ipc_budget();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let qs = &readme[readme.find("## Quick start").expect("quick start")..];
    let block = qs
        .split("```")
        .find(|b| b.starts_with("\nibnet/notify"))
        .expect("the quick start's output block");
    let o = run_limited(cosim_cmd(&[]), Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o.stderr));
    // wall-clock numbers vary from run to run
    let norm = |l: &str| -> String {
        if l.starts_with("PERFORMANCE:") || l.starts_with("coupling:") {
            l.chars()
                .map(|c| {
                    if c.is_ascii_digit() || c == '.' {
                        '#'
                    } else {
                        c
                    }
                })
                .collect::<String>()
                .split('#')
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("N")
        } else {
            l.to_string()
        }
    };
    let want: Vec<String> = block.trim_matches('\n').lines().map(norm).collect();
    let got: Vec<String> = text(&o.stdout).lines().map(norm).collect();
    assert_eq!(got, want);
    assert!(got.contains(
        &"fabric: topology H8_S6, 8 HCAs, 8 ranks mapped, protocol notify (version 3)".to_string()
    ));
}

/// `ibnet serve` without `--transport` serves over shared memory, as
/// scripts/cosim does, and `loggopsim --network ipc` follows it.
#[test]
fn ibnet_serve_defaults_to_shared_memory() {
    let _ipc = ipc_budget();
    let help = run_limited(
        {
            let mut c = Command::new(bin("ibnet"));
            c.args(["serve", "--help"]);
            c
        },
        Duration::from_secs(10),
    );
    let h = text(&help.stdout);
    assert!(h.contains("--transport <shm|mq>"), "{h}");
    assert!(h.contains("[default: shm]"), "{h}");
    let key = fresh_key();
    let mut fabric = Command::new(bin("ibnet"))
        .args([
            "serve",
            "--key",
            &key,
            "--protocol",
            "notify",
            "--topology",
            "H8_S6",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut c = Command::new(bin("loggopsim"));
    c.arg("-f")
        .arg(repo_root().join("examples/pingpong.goal"))
        .args([
            "-L",
            "0",
            "-o",
            "0",
            "-g",
            "0",
            "-G",
            "0",
            "-O",
            "0",
            "--network",
            "ipc",
            "--protocol",
            "notify",
            "--key",
            &key,
        ]);
    let s = run_limited(c, Duration::from_secs(60));
    let f = {
        let t = Instant::now();
        loop {
            if let Some(_st) = fabric.try_wait().unwrap() {
                break fabric.wait_with_output().unwrap();
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "ibnet serve did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert!(s.status.success(), "{}", text(&s.stderr));
    assert!(f.status.success(), "{}", text(&f.stderr));
    assert!(
        text(&s.stdout).starts_with("ibnet/notify over shm network backend;"),
        "{}",
        text(&s.stdout)
    );
    assert!(text(&f.stdout).contains("protocol notify (version 2)"));
    assert_eq!(session_objects_left(&key), Vec::<String>::new());
}

/// A stand-in `cargo` on PATH: logs its directory and arguments, prints a
/// progress line as cargo does, and leaves executable stubs in
/// target/release that print their name and arguments.
fn fake_cargo(dir: &Path, log: &Path) -> PathBuf {
    let bin = dir.join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\necho \"$(pwd -P)|$*\" >> '{}'\necho '   Compiling ibnet v0.1.0 (stand-in)' >&2\nmkdir -p target/release\nfor b in cosim loggopsim ibnet; do printf '#!/bin/sh\\necho stub %s \"$@\"\\n' $b > target/release/$b; chmod +x target/release/$b; done\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn copy_script(repo: &Path, name: &str) -> PathBuf {
    let to = repo.join("scripts").join(name);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(repo_root().join("scripts").join(name), &to).unwrap();
    to
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// scripts/cosim's first use builds only the three binaries a run needs,
/// shows cargo's progress (not `cargo build --quiet --workspace` with
/// one line for minutes) and says how long that takes; a second use
/// builds nothing.
#[test]
fn scripts_cosim_builds_only_what_a_run_needs_and_shows_progress() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let script = copy_script(&repo, "cosim");
    let log = dir.path().join("cargo.log");
    let fake = fake_cargo(dir.path(), &log);
    let run = || {
        let mut c = Command::new("sh");
        c.arg(&script)
            .args(["-t", "M9"])
            .current_dir(dir.path())
            .env_remove("IBCOSIM_BIN_DIR")
            .env("PATH", path_with(&fake));
        run_limited(c, Duration::from_secs(30))
    };
    let o = run();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(text(&o.stdout), "stub cosim -t M9\n");
    let root = repo.canonicalize().unwrap();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!(
            "{}|build --release -p cosim -p loggopsim -p ibnet --bins\n",
            root.display()
        )
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "cosim: building the binaries it needs, once: cargo build --release -p cosim -p \
            loggopsim -p ibnet --bins",
            "cosim: (about 3-4 minutes on 2 CPUs, more on a busy machine; cargo's progress \
            follows)",
            "   Compiling ibnet v0.1.0 (stand-in)",
        ],
        "{err}"
    );
    assert!(
        lines[3].starts_with("cosim: built in ") && lines[3].ends_with(" s; running"),
        "{err}"
    );
    // built: no cargo, no message
    let o = run();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stderr), "");
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
}

/// scripts/backend-study calls cargo only when target/release/loggopsim is
/// missing or older than a source cargo built it from (it ran `cargo
/// build` on every call; cargo's own no-op build takes about 0.1 s and
/// said nothing, but the script announced a build every time).
#[test]
fn backend_study_builds_loggopsim_only_when_stale() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let script = copy_script(&repo, "backend-study");
    let log = dir.path().join("cargo.log");
    let fake = fake_cargo(dir.path(), &log);
    let rel = repo.join("target/release");
    std::fs::create_dir_all(&rel).unwrap();
    let src = repo.join("lib.rs");
    for f in ["Cargo.toml", "Cargo.lock", "lib.rs"] {
        std::fs::write(repo.join(f), "").unwrap();
    }
    let exe = rel.join("loggopsim");
    crate::util::write_exe(&exe, "#!/bin/sh\necho stand-in loggopsim >&2\nexit 1\n");
    std::fs::write(
        rel.join("loggopsim.d"),
        format!("{}: {}\n", exe.display(), src.display()),
    )
    .unwrap();
    let age = |p: &Path, secs: u64| {
        crate::util::set_mtime(p, std::time::SystemTime::now() - Duration::from_secs(secs));
    };
    for f in ["Cargo.toml", "Cargo.lock", "lib.rs"] {
        age(&repo.join(f), 100);
    }
    age(&exe, 50);
    let run = || {
        let mut c = Command::new("python3");
        c.arg(&script)
            .arg(repo_root().join("examples/pingpong.goal"))
            .args(["H8_S1", "--runs", "1", "--backends", "loggp", "--out"])
            .arg(dir.path().join("out"))
            .current_dir(dir.path())
            .env_remove("IBCOSIM_BIN_DIR")
            .env("PATH", path_with(&fake));
        run_limited(c, Duration::from_secs(30))
    };
    // current: no cargo; the stand-in loggopsim runs (and fails: exit 2)
    let o = run();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!log.exists(), "cargo ran: {err}");
    assert!(!err.contains("building"), "{err}");
    assert!(err.contains("stand-in loggopsim"), "{err}");
    // a source newer than the binary: one build, with the reason
    age(&src, 10);
    let o = run();
    let err = text(&o.stderr);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!(
            "{}|build --release -p loggopsim\n",
            repo.canonicalize().unwrap().display()
        )
    );
    assert!(
        err.starts_with(&format!(
            "backend-study: building loggopsim ({} changed since it was built): cargo build --release -p loggopsim\n   Compiling ibnet v0.1.0 (stand-in)\n",
            src.display()
        )),
        "{err}"
    );
}

/// scripts/rdma-barriers writes its figures into the repository's
/// docs/figures wherever it is run from (it wrote docs/figures under the
/// caller's directory).
#[test]
fn rdma_barriers_writes_into_the_repository_from_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let script = copy_script(&repo, "rdma-barriers");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut c = Command::new("python3");
    c.arg(&script)
        .args(["--sizes", "2,4", "--topology", "H8_S1", "--bin-dir"])
        .arg(bin_dir())
        .current_dir(&elsewhere);
    let o = run_limited(c, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let figs = repo.join("docs/figures");
    let csv = std::fs::read_to_string(figs.join("rdma-barriers.csv")).unwrap();
    assert!(csv.lines().count() >= 5, "{csv}");
    assert!(figs.join("rdma-barriers.svg").is_file());
    assert!(
        !elsewhere.join("docs").exists(),
        "written under the caller's directory"
    );
}

/// The scheduler's JSON without what depends on the wall clock.
fn without_wall_time(mut s: Value) -> Value {
    if let Some(m) = s.as_object_mut() {
        for k in [
            "wall_time_s",
            "cpu_time_s",
            "events_per_s",
            "events_per_cpu_s",
            "waited_for_network_s",
        ] {
            m.remove(k);
        }
    }
    s
}

/// The fabric as 2 and 3 logical processes (`--fabric-threads`,
/// docs/scaling.md 2.9) answers the scheduler as one thread does, over
/// shared memory and in one piece, with triggered inserts, in either
/// event order: the same scheduler results, server counters and fabric
/// report, byte for byte.
#[test]
fn fabric_threads_give_the_one_thread_cosimulation() {
    let _ipc = ipc_budget();
    let dir = tempfile::tempdir().unwrap();
    let g = gen("linear_alltoall", 16, 8192, dir.path());
    for (name, mode) in [
        (
            "notify/shm",
            &["--protocol", "notify", "--transport", "shm"][..],
        ),
        (
            "notify-v4/onepiece",
            &["--protocol", "notify-v4", "--transport", "onepiece"][..],
        ),
        (
            "notify/inproc, local order",
            &[
                "--protocol",
                "notify",
                "--transport",
                "inproc",
                "--set",
                "event_order=local",
            ][..],
        ),
    ] {
        let run = |threads: &str| {
            let key = fresh_key();
            let mut args = vec!["-f", g.to_str().unwrap(), "-t", "fattree:16", "--key", &key];
            args.extend_from_slice(mode);
            args.extend_from_slice(&["--fabric-threads", threads]);
            let (s, mut f) = cosim_json(&args);
            f.as_object_mut().unwrap().remove("coupling");
            (without_wall_time(s), f)
        };
        let (s1, f1) = run("1");
        assert_eq!(f1["fabric"]["messages_completed"], 16 * 15, "{name}");
        assert!(finish_times(&s1).iter().all(|&t| t > 0), "{name}");
        for threads in ["2", "3"] {
            let (s, f) = run(threads);
            assert!(
                s == s1,
                "{name}, {threads} processes: the scheduler's results differ"
            );
            assert!(
                f == f1,
                "{name}, {threads} processes: the fabric's answers differ"
            );
        }
    }
}
