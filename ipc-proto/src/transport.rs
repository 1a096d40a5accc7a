//! The transport abstraction: moves whole messages (batches of encoded
//! records) on named lanes. Batching, record checks, the Hello exchange and
//! ordering live in [`crate::Channel`], above every transport.

use crate::error::Result;
use crate::names::Lane;
use std::time::Duration;

/// How often a waiting side checks that its peer is still alive.
pub const LIVENESS_INTERVAL: Duration = Duration::from_millis(100);

pub trait Transport: Send {
    /// Largest message (in bytes) `send_message` accepts.
    fn max_message_size(&self) -> usize;

    /// Send one message on an outgoing lane. May block while the lane is
    /// full, but must keep accepting incoming messages meanwhile (so the
    /// peer, which may itself be blocked sending to us, can progress) and
    /// must fail with `PeerDied` within about a second of the peer's death.
    fn send_message(&mut self, lane: Lane, msg: &[u8]) -> Result<()>;

    /// The next incoming message from any incoming lane, waiting at most
    /// `wait`; `Ok(None)` if none came in that time. Fails with `PeerDied`
    /// once the peer is gone and everything it sent has been delivered.
    fn recv_message(&mut self, wait: Duration) -> Result<Option<(Lane, Vec<u8>)>>;

    /// Short name for reports ("mq", "inproc").
    fn name(&self) -> &'static str;

    /// Called once when the channel hits a fatal error (peer died,
    /// violation): e.g. unlink the session's objects right away.
    fn on_fatal(&mut self) {}
}

/// How long a waiting side polls its incoming queue or ring before it
/// blocks in the kernel (both transports). Blocking puts a wake-up of
/// 5-50 us (more when it crosses CPUs) on the critical path of every round
/// trip; polling costs CPU time that the peer, on its own CPU, does not
/// need. The default (1 ms) covers the usual time the fabric simulates
/// between two answers (the 128-rank chain benchmark: ~0.4 ms), so a side
/// usually sees the answer without sleeping. Only the first
/// [`PURE_SPIN`] is a busy loop; after it every poll yields the CPU
/// (sched_yield), so that on a busy machine (a parameter sweep with more
/// processes than CPUs) a waiting side gives its CPU to runnable work.
/// `IBCOSIM_SPIN_US` (microseconds, 0-100000) changes the budget. On a
/// single CPU every poll yields.
pub fn spin_budget() -> std::time::Duration {
    static SPIN: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        std::env::var("IBCOSIM_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&us| us <= 100_000)
            .map(std::time::Duration::from_micros)
            .unwrap_or(DEFAULT_SPIN)
    })
}

/// How a waiting side waits: the environment variable `IBCOSIM_WAIT`
/// (`block`, the default, or `poll`), set by the supervisor's `--wait`.
pub const WAIT_ENV: &str = "IBCOSIM_WAIT";

/// A side's way of waiting for its peer ([`WAIT_ENV`]).
///
/// - `Block` (the default): poll briefly, then sleep on the doorbell
///   (adaptive, see [`LONG_WAIT`]). Each round trip then costs the peer a
///   wake-up and both sides a context switch; on a machine where that is
///   dear (a 2-vCPU virtual machine: a pair of switches costs the working
///   side about 35 us in refilled caches, docs/cosim.md, "Speed: what the
///   coupling costs") that is much of the coupling's cost on large runs.
/// - `Poll`: a side polls its incoming ring or queue without yielding,
///   for up to [`POLL_BUDGET`] per wait, and only then sleeps. Meant for
///   sides on CPUs of their own (the supervisor's `--wait poll` lets the
///   kernel place them): no wake-up and no switch on the critical path, at
///   the price of a second CPU kept busy while the peer works. A side that
///   is the only one on its CPU set (one allowed CPU, or the shared CPU of
///   `--placement same-cpu`) still yields between polls, as in `Block`.
///
/// The mode only changes when a side sleeps, never what it receives:
/// results are identical under both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    Block,
    Poll,
}

impl WaitMode {
    /// Parse a `--wait` / `IBCOSIM_WAIT` value.
    pub fn parse(s: &str) -> Option<WaitMode> {
        match s.trim() {
            "block" => Some(WaitMode::Block),
            "poll" => Some(WaitMode::Poll),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            WaitMode::Block => "block",
            WaitMode::Poll => "poll",
        }
    }
}

/// This process's [`WaitMode`] (from [`WAIT_ENV`]; an unset or unknown
/// value means `Block`, the supervisor having checked what it sets).
pub fn wait_mode() -> WaitMode {
    static MODE: std::sync::OnceLock<WaitMode> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| {
        std::env::var(WAIT_ENV)
            .ok()
            .and_then(|v| WaitMode::parse(&v))
            .unwrap_or(WaitMode::Block)
    })
}

/// How long a side in [`WaitMode::Poll`] polls before it sleeps: long
/// enough to cover a round of the fabric (the 648-rank dissemination's
/// rounds take ~0.4 ms, the 128-rank chain's ~0.25 ms). A wait that
/// polled this long without a message makes the side sleep (after
/// [`SHORT_SPIN`]) until a message comes again, so that a side whose
/// peer is stopped or hung does not keep its CPU busy; it still checks
/// the peer's liveness every [`LIVENESS_INTERVAL`], as before.
pub const POLL_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

/// How long a poll loop spins before it starts yielding the CPU between
/// polls: [`PURE_SPIN`] when blocking, the whole budget when polling.
pub(crate) fn busy_limit() -> std::time::Duration {
    match wait_mode() {
        WaitMode::Block => PURE_SPIN,
        WaitMode::Poll => std::time::Duration::MAX,
    }
}

/// The default of [`spin_budget`].
pub const DEFAULT_SPIN: std::time::Duration = std::time::Duration::from_micros(1000);
/// The busy-loop part of the spin (see [`spin_budget`]).
pub const PURE_SPIN: std::time::Duration = std::time::Duration::from_micros(30);

/// Adaptive spinning (the default; `IBCOSIM_SPIN_ADAPT=0` turns it off):
/// a side whose recent waits were long blocks after [`SHORT_SPIN`]
/// instead of polling for the whole [`spin_budget`].
///
/// Why: in a conservative coupling one side works while the other waits,
/// and the two waits are very different. On the 128-rank chain benchmark
/// the scheduler waits ~0.4-0.6 ms per round for the fabric, the fabric
/// ~10-40 us for the scheduler. A side that polls through a long wait
/// holds its CPU the whole time, and on a 2-vCPU virtual machine a busy
/// sibling vCPU slows the fabric's own work (measured: +10-17% fabric CPU
/// time while the scheduler polls; docs/cosim.md); sleeping costs one
/// wake-up (tens of us) per round instead. The classic rule for
/// spin-then-block (spin about as long as blocking costs, then block) is
/// applied per side from its own history: the expected wait is an
/// exponentially weighted mean of the side's last waits (weight 1/8); when
/// it exceeds [`LONG_WAIT`] the side polls only [`SHORT_SPIN`] (answers
/// that are ready at once, e.g. grants from the lookahead alone) and then
/// sleeps on its doorbell; otherwise it polls for up to the spin budget as
/// before. The rule only changes when a side sleeps, never what it
/// receives: results are identical under every policy.
pub const LONG_WAIT: std::time::Duration = std::time::Duration::from_micros(150);
/// How long a side with long expected waits polls before it sleeps.
pub const SHORT_SPIN: std::time::Duration = std::time::Duration::from_micros(5);

/// Is adaptive spinning on (`IBCOSIM_SPIN_ADAPT`, default 1)?
pub fn spin_adaptive() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        !matches!(
            std::env::var("IBCOSIM_SPIN_ADAPT")
                .ok()
                .as_deref()
                .map(str::trim),
            Some("0") | Some("off") | Some("no") | Some("false")
        )
    })
}

/// One side's spin-then-block decision (see [`LONG_WAIT`]).
#[derive(Clone, Debug)]
pub(crate) struct SpinPolicy {
    /// Exponentially weighted mean of the recent waits, in ns.
    mean_ns: u64,
    budget: std::time::Duration,
    adaptive: bool,
    /// [`WaitMode::Poll`]: after a whole wait without a message (the
    /// peer stopped, hung, or simply busy for longer than a round), spin
    /// only [`SHORT_SPIN`] and sleep, until a message comes again.
    /// Without it a side whose peer is stopped would poll forever, since
    /// each wait of [`LIVENESS_INTERVAL`] is spent spinning.
    sleep_when_idle: bool,
    idle: bool,
}

impl SpinPolicy {
    pub(crate) fn new() -> SpinPolicy {
        SpinPolicy::for_mode(wait_mode())
    }

    /// The policy of a side waiting in `mode`.
    pub(crate) fn for_mode(mode: WaitMode) -> SpinPolicy {
        match mode {
            WaitMode::Block => SpinPolicy::with(spin_budget(), spin_adaptive()),
            WaitMode::Poll => SpinPolicy {
                sleep_when_idle: true,
                ..SpinPolicy::with(POLL_BUDGET, false)
            },
        }
    }

    pub(crate) fn with(budget: std::time::Duration, adaptive: bool) -> SpinPolicy {
        SpinPolicy {
            mean_ns: 0,
            budget,
            adaptive,
            sleep_when_idle: false,
            idle: false,
        }
    }

    /// How long to poll before sleeping, for the next wait.
    pub(crate) fn spin(&self) -> std::time::Duration {
        if self.idle || (self.adaptive && self.mean_ns > LONG_WAIT.as_nanos() as u64) {
            SHORT_SPIN.min(self.budget)
        } else {
            self.budget
        }
    }

    /// A wait that ended (a message came) after `waited`.
    /// A wait of `waited` ended without a message (its timeout passed):
    /// idle if that was at least the whole budget (not a zero-timeout
    /// probe).
    pub(crate) fn nothing_came(&mut self, waited: std::time::Duration) {
        if self.sleep_when_idle && waited >= self.budget {
            self.idle = true;
        }
    }

    pub(crate) fn record(&mut self, waited: std::time::Duration) {
        self.idle = false;
        let w = waited.as_nanos().min(u64::MAX as u128 / 2) as u64;
        // mean += (w - mean) / 8, in integers without overflow
        self.mean_ns = self.mean_ns - self.mean_ns / 8 + w / 8;
    }

    /// The expected wait (for tests and reports).
    #[cfg(test)]
    pub(crate) fn mean(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.mean_ns)
    }
}

/// What the receive loops of the queue and shared-memory transports
/// share: a look at the incoming lanes that does not wait, the peer's
/// liveness and the side's spin policy.
pub(crate) trait Receiving {
    fn try_receive(&mut self) -> Result<Option<(Lane, Vec<u8>)>>;
    /// `Err` when the peer is gone (checked at most every
    /// [`LIVENESS_INTERVAL`]).
    fn peer_alive(&mut self) -> Result<()>;
    fn policy(&mut self) -> &mut SpinPolicy;
}

/// The turn that starts each round of a receive loop begun at `start` and
/// allowed `wait`: a message (its wait recorded in the policy once the
/// loop has `waited`), the peer's death (after a last look, since it may
/// have sent something just before dying), the end of the wait (None), or
/// the time left to wait.
#[inline]
pub(crate) fn receive_turn<R: Receiving>(
    r: &mut R,
    start: std::time::Instant,
    wait: Duration,
    waited: &mut bool,
) -> Result<std::ops::ControlFlow<Option<(Lane, Vec<u8>)>, Duration>> {
    use std::ops::ControlFlow::{Break, Continue};
    if let Some(m) = r.try_receive()? {
        if *waited {
            r.policy().record(start.elapsed());
        }
        return Ok(Break(Some(m)));
    }
    *waited = true;
    if let Err(e) = r.peer_alive() {
        return match r.try_receive()? {
            Some(m) => Ok(Break(Some(m))),
            None => Err(e),
        };
    }
    let elapsed = start.elapsed();
    if elapsed >= wait {
        r.policy().nothing_came(elapsed);
        return Ok(Break(None));
    }
    Ok(Continue(wait - elapsed))
}

/// How a waiting side polls before it blocks: with more than one CPU
/// available it spins (`spin_loop`, holding its CPU: yielding on a loaded
/// machine can hand the CPU away for milliseconds); pinned to a single CPU
/// (`taskset -c 0`) it yields instead, so that the peer, which needs that
/// CPU to answer, runs at once.
pub(crate) fn spin_pause(yield_cpu: bool) {
    if yield_cpu {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Is this process restricted to a single CPU (sched_getaffinity), or will
/// it be once the two sides have met ([`shared_cpu`])?
pub(crate) fn single_cpu() -> bool {
    if shared_cpu().is_some() {
        return true;
    }
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return false;
        }
        libc::CPU_COUNT(&set) <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A transport whose lanes hold `inbox` and whose peer is `alive`.
    struct Fake {
        inbox: Vec<(Lane, Vec<u8>)>,
        alive: bool,
        policy: SpinPolicy,
    }
    impl Receiving for Fake {
        fn try_receive(&mut self) -> Result<Option<(Lane, Vec<u8>)>> {
            Ok(self.inbox.pop())
        }
        fn peer_alive(&mut self) -> Result<()> {
            if self.alive {
                Ok(())
            } else {
                Err(crate::ProtoError::PeerDied {
                    peer: crate::Role::Fabric,
                    pid: 7,
                })
            }
        }
        fn policy(&mut self) -> &mut SpinPolicy {
            &mut self.policy
        }
    }

    #[test]
    fn a_receive_turn_ends_in_a_message_a_death_the_deadline_or_time_left() {
        use std::ops::ControlFlow::{Break, Continue};
        let msg = (Lane::Arr, vec![1u8, 2]);
        let mut f = Fake {
            inbox: vec![msg.clone()],
            alive: true,
            policy: SpinPolicy::with(Duration::from_micros(50), true),
        };
        // a message at the first look: no wait to record
        let start = std::time::Instant::now() - Duration::from_millis(8);
        let mut waited = false;
        let got = receive_turn(&mut f, start, Duration::from_secs(60), &mut waited).unwrap();
        assert_eq!(got, Break(Some(msg.clone())));
        assert!(!waited);
        assert_eq!(f.policy.mean(), Duration::ZERO);
        // nothing there: the time left, then the message with its wait
        // (8 ms and more) recorded as an eighth of the mean
        let left = receive_turn(&mut f, start, Duration::from_secs(60), &mut waited).unwrap();
        assert!(waited);
        assert!(
            matches!(left, Continue(d) if d <= Duration::from_secs(60) - Duration::from_millis(8))
        );
        f.inbox.push(msg.clone());
        let got = receive_turn(&mut f, start, Duration::from_secs(60), &mut waited).unwrap();
        assert_eq!(got, Break(Some(msg.clone())));
        assert!(f.policy.mean() >= Duration::from_millis(1));
        // the wait is over: None
        let got = receive_turn(&mut f, start, Duration::from_millis(1), &mut waited).unwrap();
        assert_eq!(got, Break(None));
        // a dead peer: what it sent last, then its death
        f.alive = false;
        f.inbox.push(msg.clone());
        f.inbox.push(msg.clone());
        assert_eq!(
            receive_turn(&mut f, start, Duration::ZERO, &mut waited).unwrap(),
            Break(Some(msg.clone()))
        );
        assert_eq!(
            receive_turn(&mut f, start, Duration::ZERO, &mut waited).unwrap(),
            Break(Some(msg))
        );
        let e = receive_turn(&mut f, start, Duration::ZERO, &mut waited).unwrap_err();
        assert!(e.to_string().contains("died"), "{e}");
    }

    #[test]
    fn a_side_moves_to_the_shared_cpu_and_yields_there() {
        // in a child, so that the test binary's other threads keep their
        // CPUs (and the environment is the child's own)
        // SAFETY: fork(2) takes no pointers. The child is a one-thread copy
        // of the multi-threaded test binary: it only uses the allocator,
        // the environment and affinity system calls (glibc keeps its
        // allocator usable in a forked child) and leaves with _exit, so
        // nothing of the harness runs twice; the parent reaps it.
        match unsafe { libc::fork() } {
            0 => {
                // SAFETY: a zeroed cpu_set_t is a valid empty set that
                // sched_getaffinity fills, and CPU_ISSET reads it in bounds.
                let allowed = |()| unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
                    (0..libc::CPU_SETSIZE as usize)
                        .filter(|&c| libc::CPU_ISSET(c, &set))
                        .collect::<Vec<_>>()
                };
                let before = allowed(());
                let target = *before.last().unwrap();
                std::env::set_var(SHARED_CPU_ENV, target.to_string());
                let ok = single_cpu() && shared_cpu() == Some(target) && {
                    move_to_shared_cpu();
                    allowed(()) == vec![target]
                };
                // SAFETY: _exit ends the forked child without running the
                // parent's destructors or atexit handlers.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            pid if pid > 0 => {
                let mut st = 0;
                // SAFETY: `st` is a valid i32 that waitpid writes; `pid` is
                // our own child.
                unsafe { libc::waitpid(pid, &mut st, 0) };
                assert!(
                    libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
                    "status {st}"
                );
            }
            _ => panic!("fork failed"),
        }
    }

    #[test]
    fn long_waits_switch_to_a_short_spin_and_short_waits_back() {
        let budget = Duration::from_micros(1000);
        let mut p = SpinPolicy::with(budget, true);
        // no history: the full budget
        assert_eq!(p.spin(), budget);
        // waits of 600 us: the mean passes 150 us after 3 of them
        // (600 * (1 - (7/8)^n) > 150 <=> n >= 3: 75, 140.6, 197.6 us)
        p.record(Duration::from_micros(600));
        p.record(Duration::from_micros(600));
        assert_eq!(p.spin(), budget, "mean {:?}", p.mean());
        p.record(Duration::from_micros(600));
        assert_eq!(p.spin(), SHORT_SPIN, "mean {:?}", p.mean());
        // then short waits bring it back under 150 us
        for _ in 0..20 {
            p.record(Duration::from_micros(10));
        }
        assert!(p.mean() < LONG_WAIT);
        assert_eq!(p.spin(), budget);
    }

    #[test]
    fn poll_mode_polls_the_whole_budget_however_long_the_waits() {
        assert_eq!(WaitMode::parse("poll"), Some(WaitMode::Poll));
        assert_eq!(WaitMode::parse(" block "), Some(WaitMode::Block));
        assert_eq!(WaitMode::parse("spin"), None);
        let mut p = SpinPolicy::for_mode(WaitMode::Poll);
        for _ in 0..50 {
            p.record(Duration::from_millis(2));
        }
        // the adaptive rule would have cut a blocking side's spin to 5 us
        assert_eq!(p.spin(), POLL_BUDGET);
        // a whole wait without a message: sleep after a short spin until
        // one comes (a stopped peer does not keep this side's CPU busy)
        p.nothing_came(Duration::ZERO);
        assert_eq!(
            p.spin(),
            POLL_BUDGET,
            "a probe without waiting is no idle period"
        );
        p.nothing_came(POLL_BUDGET);
        assert_eq!(p.spin(), SHORT_SPIN);
        p.record(Duration::from_millis(150));
        assert_eq!(p.spin(), POLL_BUDGET);
        // a blocking side keeps its rule
        let mut f = SpinPolicy::with(DEFAULT_SPIN, false);
        f.nothing_came(Duration::from_secs(1));
        assert_eq!(f.spin(), DEFAULT_SPIN);
        let mut b = SpinPolicy::with(DEFAULT_SPIN, true);
        for _ in 0..50 {
            b.record(Duration::from_millis(2));
        }
        assert_eq!(b.spin(), SHORT_SPIN);
    }

    #[test]
    fn fixed_policy_always_spins_the_budget() {
        let budget = Duration::from_micros(250);
        let mut p = SpinPolicy::with(budget, false);
        for _ in 0..10 {
            p.record(Duration::from_millis(5));
        }
        assert_eq!(p.spin(), budget);
        // a budget below the short spin is not raised
        let q = SpinPolicy::with(Duration::ZERO, true);
        assert_eq!(q.spin(), Duration::ZERO);
    }
}

/// The environment variable with which the supervisor (`cosim
/// --placement same-cpu`, the default) names the CPU the two sides share.
pub const SHARED_CPU_ENV: &str = "IBCOSIM_PIN_CPU";

/// The CPU named by [`SHARED_CPU_ENV`], if any (and valid).
pub fn shared_cpu() -> Option<usize> {
    static CPU: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *CPU.get_or_init(|| {
        std::env::var(SHARED_CPU_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&c| c < libc::CPU_SETSIZE as usize)
    })
}

/// Move the calling thread (the side's simulating thread) to the shared
/// CPU, once the two sides have met (the scheduler attached / the session
/// opened). Why only then: until they meet the sides work independently,
/// the fabric building its topology and the scheduler reading its
/// schedule, and on two idle CPUs they do that at the same time; after it
/// they only alternate, and one CPU saves a cross-CPU wake-up per round
/// trip (cosim/src/placement.rs). A failure (the CPU is not allowed)
/// leaves the placement to the kernel; only the thread that calls it
/// moves (the heartbeat and signal threads are idle).
pub fn move_to_shared_cpu() {
    let Some(cpu) = shared_cpu() else { return };
    // SAFETY: a zeroed cpu_set_t is a valid empty set; cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
