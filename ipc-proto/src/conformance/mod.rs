//! The conformance checker (`ipc-proto conformance`): it plays the other
//! side of a session against a peer under test and checks the rules of
//! docs/protocol.md with scripted scenarios.
//!
//! - `Role::Fabric` = the peer under test is a fabric (`ibnet serve`,
//!   `scripts/peers/fabric.py`); the checker acts as the scheduler and
//!   scripts every record ([`fabric_checks`]).
//! - `Role::Scheduler` = the peer under test is a scheduler (`loggopsim
//!   --network ipc`, `scripts/peers/scheduler.py`); the checker acts as a
//!   fixed-latency fabric, checks every record the scheduler sends and
//!   injects faults into its answers ([`scheduler_checks`]).
//!
//! Every scenario runs in a fresh session `KEY-<n>` (n = the scenario's
//! number in [`scenarios`], stable across runs) because several of them
//! end the session (a violation, a killed process). With a spawn template
//! the checker starts the peer for each scenario (`{key}` and `{protocol}`
//! substituted, run by `sh -c` in its own process group) and also checks
//! its exit status; without one, someone else must start a peer on each
//! `KEY-<n>` (the checker says which on stderr).
//!
//! Checks whose answers depend on the fabric's timing are structural
//! (replies in order, arrived iff t_a <= t', "not yet" = t' + q, batch
//! times strictly increasing, every handle arrives exactly once, batch
//! counts), never picosecond values. Every wait is bounded: a dead or
//! silent peer gives a FAIL line, never a hang.

pub mod fabric_checks;
pub mod peer;
pub mod scheduler_checks;

use crate::record::{Protocol, ProtocolSpec, Role};
use crate::time::Time;
use peer::PeerProcess;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Settings of one conformance run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The role of the peer under test (the checker plays the other one).
    pub role: Role,
    /// Protocol and wire version of the sessions (`query`, `notify`,
    /// `notify-v1`, `query-v1`).
    pub protocol: ProtocolSpec,
    /// Base session key; scenario n uses `KEY-n`.
    pub key: String,
    /// Command template starting the peer for one scenario (`{key}`,
    /// `{protocol}` are substituted), run with `sh -c`.
    pub spawn: Option<String>,
    /// Query protocol: the quantum q the fabric answers "not yet" with.
    pub quantum: Time,
    /// Query protocol: the fabric may answer a message's first query later
    /// than t' + q (arrival estimate, docs/protocol.md rule 2.5).
    pub estimate: bool,
    /// Checker as fabric: every message arrives this long after its insert.
    pub latency: Time,
    /// Bound of every wait for the peer.
    pub timeout: Duration,
    /// Run only these scenarios (names); empty = all that apply.
    pub only: Vec<String>,
    /// A scenario that has not ended after this long gets its spawned peer
    /// killed (see [`Watchdog`]); None = 6 x timeout, at least 60 s.
    pub stall_limit: Option<Duration>,
    /// Checker as fabric: the transport of the sessions it creates (H2).
    /// Checker as scheduler: it follows the peer's choice.
    pub transport: crate::session::TransportKind,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            role: Role::Fabric,
            protocol: ProtocolSpec::NOTIFY,
            key: "conformance".into(),
            spawn: None,
            quantum: Time(1),
            estimate: false,
            latency: Time(1000),
            timeout: Duration::from_secs(10),
            only: Vec::new(),
            stall_limit: None,
            transport: crate::session::TransportKind::Mq,
        }
    }
}

/// One checked rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleResult {
    pub scenario: &'static str,
    pub rule: &'static str,
    pub pass: bool,
    pub reason: String,
}

impl fmt::Display for RuleResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{}: {}",
            if self.pass { "PASS" } else { "FAIL" },
            self.scenario,
            self.rule,
            self.reason
        )
    }
}

/// A scenario: its name, the peer role and protocols it applies to, what
/// it does (for `--list` and the docs).
pub struct Scenario {
    pub name: &'static str,
    pub role: Role,
    /// None = both protocols.
    pub protocol: Option<Protocol>,
    /// The oldest wire version the scenario applies to (1: all).
    pub min_version: u32,
    pub about: &'static str,
    run: fn(&mut Ctx) -> Result<(), String>,
}

impl Scenario {
    pub fn applies(&self, role: Role, spec: ProtocolSpec) -> bool {
        self.role == role
            && self.protocol.is_none_or(|p| p == spec.protocol)
            && spec.version >= self.min_version
    }
}

/// Every scenario, in a fixed order: scenario n (1-based) uses `KEY-n`.
pub fn scenarios() -> Vec<Scenario> {
    let mut v = fabric_checks::scenarios();
    v.extend(scheduler_checks::scenarios());
    // version 3 (one-sided operations), last: the older numbers stay as they were
    v.push(fabric_checks::one_sided_scenario());
    // version 4 (triggered inserts), after it for the same reason
    v.push(fabric_checks::triggers_scenario());
    v
}

/// State of one running scenario.
pub struct Ctx<'a> {
    pub opts: &'a Options,
    pub scenario: &'static str,
    /// This scenario's session key.
    pub key: String,
    pub peer: Option<PeerProcess>,
    /// Process group of the spawned peer (0: none), for the watchdog.
    peer_group: Arc<AtomicU32>,
    pub results: Vec<RuleResult>,
}

impl Ctx<'_> {
    pub fn rule(&mut self, rule: &'static str, pass: bool, reason: impl Into<String>) {
        self.results.push(RuleResult {
            scenario: self.scenario,
            rule,
            pass,
            reason: reason.into(),
        });
    }
    pub fn pass(&mut self, rule: &'static str, reason: impl Into<String>) {
        self.rule(rule, true, reason);
    }
    pub fn fail(&mut self, rule: &'static str, reason: impl Into<String>) {
        self.rule(rule, false, reason);
    }

    /// Start the peer for this scenario (if a spawn template was given).
    pub fn start_peer(&mut self) -> Result<(), String> {
        if let Some(t) = &self.opts.spawn {
            let p = PeerProcess::spawn(t, &self.key, self.opts.protocol)?;
            self.peer_group.store(p.pid(), Ordering::SeqCst);
            self.peer = Some(p);
        } else {
            eprintln!(
                "conformance: scenario {}: start the {} under test with session key {}",
                self.scenario, self.opts.role, self.key
            );
        }
        Ok(())
    }

    /// Ok if the spawned peer is still running (or none was spawned);
    /// otherwise why it is not, with its last output.
    pub fn peer_still_running(&mut self) -> Result<(), String> {
        if let Some(p) = &mut self.peer {
            if let Some(st) = p.wait_timeout(Duration::ZERO) {
                return Err(format!(
                    "the peer `{}` exited ({st}) before the session was set up",
                    p.command
                ));
            }
        }
        Ok(())
    }

    /// Retry `attempt` (a bounded wait of its own) until it succeeds, the
    /// spawned peer exits, or `opts.timeout` runs out.
    pub fn wait_for<T>(
        &mut self,
        mut attempt: impl FnMut(Duration) -> Result<T, crate::ProtoError>,
    ) -> Result<T, String> {
        let start = std::time::Instant::now();
        loop {
            let step = Duration::from_millis(100).min(self.opts.timeout);
            match attempt(step) {
                Ok(v) => return Ok(v),
                Err(crate::ProtoError::TimedOut { .. }) if start.elapsed() < self.opts.timeout => {
                    self.peer_still_running()?;
                }
                Err(crate::ProtoError::TimedOut { what, .. }) => {
                    return Err(format!(
                        "timed out after {:?} waiting for {what}",
                        self.opts.timeout
                    ))
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// The spawned peer's output so far (for reasons), or "".
    pub fn peer_output(&self) -> String {
        self.peer
            .as_ref()
            .map(|p| p.output_tail(3))
            .unwrap_or_default()
    }

    /// Wait (bounded) until the peer has ended. `pid` is the peer's pid as
    /// the session tells it (used without a spawned process). Returns
    /// Some(exit code) (None inside = killed by a signal or not observable)
    /// or Err(reason) if it is still running after `within`.
    pub fn wait_peer_exit(&mut self, pid: u32, within: Duration) -> Result<Option<i32>, String> {
        match &mut self.peer {
            Some(p) => match p.wait_timeout(within) {
                Some(status) => Ok(status.code()),
                None => Err(format!("still running {within:?} later")),
            },
            None => {
                let start = std::time::Instant::now();
                while pid != 0 && crate::mq::pid_alive(pid) {
                    if start.elapsed() > within {
                        return Err(format!("pid {pid} still running {within:?} later"));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(None)
            }
        }
    }
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        if let Some(p) = &mut self.peer {
            p.kill();
        }
        let _ = crate::session::cleanup(&self.key);
    }
}

/// The outcome of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub results: Vec<RuleResult>,
}

impl Report {
    pub fn passed(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(|r| r.pass)
    }
    pub fn failures(&self) -> usize {
        self.results.iter().filter(|r| !r.pass).count()
    }
}

/// Run every applicable scenario (or those named in `opts.only`), calling
/// `each` with every result as soon as it is known.
pub fn run(opts: &Options, mut each: impl FnMut(&RuleResult)) -> Result<Report, String> {
    crate::names::SessionKey::new(&format!("{}-99", opts.key)).map_err(|e| e.to_string())?;
    if let Some(t) = &opts.spawn {
        if !t.contains("{key}") {
            return Err(format!(
                "the --spawn command {t:?} has no {{key}}: the peer would not use the scenario's session key"
            ));
        }
    }
    let all = scenarios();
    for name in &opts.only {
        match all.iter().find(|s| s.name == name) {
            None => return Err(format!("unknown scenario {name:?} (see --list)")),
            Some(s) if !s.applies(opts.role, opts.protocol) => {
                return Err(format!(
                    "scenario {name} does not apply to a {} peer with the {} protocol",
                    opts.role, opts.protocol
                ))
            }
            _ => {}
        }
    }
    let mut report = Report::default();
    for (i, s) in all.iter().enumerate() {
        if !s.applies(opts.role, opts.protocol)
            || (!opts.only.is_empty() && !opts.only.iter().any(|n| n == s.name))
        {
            continue;
        }
        let mut ctx = Ctx {
            opts,
            scenario: s.name,
            key: format!("{}-{}", opts.key, i + 1),
            peer: None,
            peer_group: Arc::new(AtomicU32::new(0)),
            results: Vec::new(),
        };
        let watchdog = Watchdog::start(opts, s.name, &ctx.key, ctx.peer_group.clone());
        let _ = crate::session::cleanup(&ctx.key);
        if let Err(mut reason) = (s.run)(&mut ctx) {
            if watchdog.fired.load(Ordering::SeqCst) {
                reason = format!(
                    "no progress within {:?}, the checker killed the peer (stuck, e.g. not reading its queue?): {reason}",
                    watchdog.limit
                );
            }
            let out = ctx.peer_output();
            let reason = if out.is_empty() {
                reason
            } else {
                format!("{reason} [peer output: {out}]")
            };
            ctx.fail("scenario", reason);
        }
        let results = std::mem::take(&mut ctx.results);
        drop(ctx);
        watchdog.stop();
        for r in results {
            each(&r);
            report.results.push(r);
        }
    }
    if report.results.is_empty() {
        return Err("no scenario ran".into());
    }
    Ok(report)
}

/// The last resort against a peer that is alive but stuck: every wait
/// for a record is bounded by `--timeout`, but a send into a full queue
/// waits as long as the peer lives. After `6 x timeout` (at least 60 s) the
/// watchdog kills the spawned peer's process group (blocked operations
/// then fail with "peer died"); if the scenario still does not end 5 s
/// later (an external peer), it prints a FAIL line and exits with 1.
pub struct Watchdog {
    /// Set when the watchdog killed the peer.
    fired: Arc<std::sync::atomic::AtomicBool>,
    limit: Duration,
    done: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchdog {
    fn start(opts: &Options, scenario: &'static str, key: &str, group: Arc<AtomicU32>) -> Watchdog {
        let limit = opts
            .stall_limit
            .unwrap_or_else(|| (opts.timeout * 6).max(Duration::from_secs(60)));
        let key = key.to_string();
        let (done, rx) = mpsc::channel::<()>();
        let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fired2 = fired.clone();
        let thread = std::thread::spawn(move || {
            let fired = fired2;
            if rx.recv_timeout(limit) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            let pg = group.load(Ordering::SeqCst);
            if pg != 0 {
                fired.store(true, Ordering::SeqCst);
                // SAFETY: plain kill(2) of the process group we started.
                unsafe { libc::kill(-(pg as i32), libc::SIGKILL) };
            }
            if rx.recv_timeout(Duration::from_secs(5)) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            println!(
                "FAIL {scenario}/scenario: no progress within {limit:?}; the checker gives up"
            );
            let _ = crate::session::cleanup(&key);
            std::process::exit(1);
        });
        Watchdog {
            fired,
            limit,
            done,
            thread,
        }
    }

    fn stop(self) {
        let _ = self.done.send(());
        let _ = self.thread.join();
    }
}

/// Convert a transport error into a scenario failure reason.
pub(crate) fn err(e: crate::ProtoError) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_table_is_stable_and_unambiguous() {
        let all = scenarios();
        assert_eq!(all.len(), 21);
        // KEY-n numbering: scenario 1 is the fabric handshake, 13 the
        // (version-2) grant, 14 the scheduler run (documented in --list
        // and docs/protocol.md).
        assert_eq!((all[0].name, all[0].role), ("handshake", Role::Fabric));
        assert_eq!((all[12].name, all[12].role), ("grant", Role::Fabric));
        assert_eq!((all[13].name, all[13].role), ("run", Role::Scheduler));
        assert_eq!((all[19].name, all[19].role), ("one-sided", Role::Fabric));
        assert_eq!((all[20].name, all[20].role), ("triggers", Role::Fabric));
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(
                    !(a.name == b.name && a.role == b.role),
                    "duplicate scenario {}",
                    a.name
                );
            }
        }
        let count = |r, p| all.iter().filter(|s| s.applies(r, p)).count();
        assert_eq!(count(Role::Fabric, ProtocolSpec::NOTIFY), 11);
        assert_eq!(count(Role::Fabric, ProtocolSpec::NOTIFY_V3), 12);
        assert_eq!(count(Role::Fabric, ProtocolSpec::NOTIFY_V4), 13);
        assert_eq!(count(Role::Fabric, ProtocolSpec::QUERY_V3), 11);
        assert_eq!(count(Role::Fabric, ProtocolSpec::NOTIFY_V1), 10);
        assert_eq!(count(Role::Fabric, ProtocolSpec::QUERY), 11);
        assert_eq!(count(Role::Fabric, ProtocolSpec::QUERY_V1), 11);
        assert_eq!(count(Role::Scheduler, ProtocolSpec::NOTIFY), 6);
        assert_eq!(count(Role::Scheduler, ProtocolSpec::QUERY_V1), 6);
    }

    #[test]
    fn spawn_template_substitution() {
        assert_eq!(
            peer::expand(
                "ibnet serve --key {key} --protocol {protocol} # {key}",
                "k-3",
                ProtocolSpec::QUERY
            ),
            "ibnet serve --key k-3 --protocol query # k-3"
        );
        assert_eq!(
            peer::expand("x --protocol {protocol}", "k", ProtocolSpec::NOTIFY_V1),
            "x --protocol notify-v1"
        );
    }

    #[test]
    fn result_lines() {
        let r = RuleResult {
            scenario: "times",
            rule: "quantum",
            pass: false,
            reason: "expected 1001 ps".into(),
        };
        assert_eq!(r.to_string(), "FAIL times/quantum: expected 1001 ps");
        let mut rep = Report::default();
        assert!(!rep.passed(), "an empty report is not a pass");
        rep.results.push(RuleResult {
            pass: true,
            ..r.clone()
        });
        assert!(rep.passed());
        rep.results.push(r);
        assert!(!rep.passed());
        assert_eq!(rep.failures(), 1);
    }

    #[test]
    fn bad_options_are_refused_before_any_session() {
        let run_err = |o: Options| run(&o, |_| {}).unwrap_err();
        let e = run_err(Options {
            key: "a/b".into(),
            ..Options::default()
        });
        assert!(e.contains("invalid session key"), "{e}");
        let e = run_err(Options {
            spawn: Some("ibnet serve".into()),
            ..Options::default()
        });
        assert!(e.contains("has no {key}"), "{e}");
        let e = run_err(Options {
            only: vec!["nosuch".into()],
            ..Options::default()
        });
        assert!(e.contains("unknown scenario \"nosuch\""), "{e}");
        let e = run_err(Options {
            only: vec!["no-more-inserts".into()],
            protocol: ProtocolSpec::QUERY,
            ..Options::default()
        });
        assert!(
            e.contains("does not apply to a fabric peer with the query protocol"),
            "{e}"
        );
    }

    /// With a spawn command that never opens the session, a scenario
    /// fails after the bounded wait (and the command is stopped).
    #[test]
    fn missing_peer_fails_within_the_timeout() {
        let o = Options {
            key: format!("cfu-{}", std::process::id()),
            spawn: Some("sleep 30 # {key}".into()),
            only: vec!["handshake".into()],
            timeout: std::time::Duration::from_millis(300),
            ..Options::default()
        };
        let start = std::time::Instant::now();
        let mut seen = 0;
        let rep = run(&o, |_| seen += 1).unwrap();
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(seen, 1);
        assert_eq!(rep.results.len(), 1);
        let r = &rep.results[0];
        assert!(!r.pass);
        assert_eq!((r.scenario, r.rule), ("handshake", "scenario"));
        assert!(
            r.reason
                .starts_with("cannot attach to the fabric: timed out"),
            "{}",
            r.reason
        );
    }

    /// A peer that exits at once is reported at once, with its status.
    #[test]
    fn peer_exiting_early_is_reported_without_waiting() {
        for (role, only, what) in [
            (
                Role::Fabric,
                "handshake",
                "cannot attach to the fabric: the peer",
            ),
            (Role::Scheduler, "run", "no scheduler attached: the peer"),
        ] {
            let o = Options {
                role,
                key: format!("cfe-{}", std::process::id()),
                spawn: Some("echo giving up on {key}; exit 3".into()),
                only: vec![only.into()],
                timeout: std::time::Duration::from_secs(20),
                ..Options::default()
            };
            let start = std::time::Instant::now();
            let rep = run(&o, |_| {}).unwrap();
            assert!(start.elapsed() < std::time::Duration::from_secs(5));
            let r = &rep.results[0];
            assert!(!r.pass);
            assert!(r.reason.starts_with(what), "{}", r.reason);
            assert!(r.reason.contains("exit status: 3"), "{}", r.reason);
            assert!(
                r.reason.contains("[peer output: giving up on cfe-"),
                "{}",
                r.reason
            );
        }
    }
}
