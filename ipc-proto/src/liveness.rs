//! Liveness of the peer, shared by the IPC transports (message queues and
//! shared memory):
//!
//! - **death**: the peer's pid (from the control segment) no longer exists
//!   or is a zombie -> [`ProtoError::PeerDied`], noticed within
//!   [`LIVENESS_INTERVAL`] (100 ms) of the next wait;
//! - **stop or freeze**: every process with a session runs a heartbeat
//!   thread that writes CLOCK_MONOTONIC milliseconds into its role's word of
//!   the control segment every [`HEARTBEAT_PERIOD`] (100 ms). A waiting side
//!   compares the peer's heartbeat with its own: when the peer's lags by
//!   more than [`stall_timeout`] (default 5 s, environment variable
//!   `IBCOSIM_STALL_TIMEOUT` in seconds) the peer is stopped (SIGSTOP,
//!   Ctrl-Z of the peer alone, a debugger) or frozen ->
//!   [`ProtoError::PeerStalled`]. Comparing the two heartbeats (rather than
//!   the clock) means a whole process group stopped and continued together
//!   (Ctrl-Z, `fg`) is not mistaken for a stall. A peer that writes no
//!   heartbeat (0, e.g. the Python reference peers) is never called stalled.
//!
//! - **hang**: the heartbeat thread writes only while its process makes
//!   progress: its main thread calls [`beat`] (the transports do at every
//!   send and every poll of a wait; the fabric engine and the LogGOPS
//!   engine every 65536 events, through [`pulse`]). A side whose main
//!   thread neither waits for its peer nor simulates (an endless loop, a
//!   deadlock on a lock) stops its heartbeat and is reported as stalled
//!   after the same timeout. Until the first beat (start-up) the thread
//!   writes unconditionally.

use crate::control::ControlSegment;
use crate::error::{ProtoError, Result};
use crate::mq::pid_alive;
use crate::record::Role;
use crate::transport::LIVENESS_INTERVAL;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the heartbeat thread writes.
pub const HEARTBEAT_PERIOD: Duration = Duration::from_millis(100);
/// Default lag of the peer's heartbeat after which it counts as stalled.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The stall timeout: `IBCOSIM_STALL_TIMEOUT` (seconds, > 0) or 5 s.
pub fn stall_timeout() -> Duration {
    std::env::var("IBCOSIM_STALL_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e6)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_STALL_TIMEOUT)
}

/// CLOCK_MONOTONIC in milliseconds (system-wide, comparable across
/// processes); never 0.
pub fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1000)
        .saturating_add(ts.tv_nsec as u64 / 1_000_000)
        .max(1)
}

/// The progress counter of this process (see the module docs): any
/// change between two heartbeat periods counts as progress.
static PULSE: AtomicU64 = AtomicU64::new(0);

/// Record progress of this process's main thread (a relaxed increment).
#[inline]
pub fn beat() {
    PULSE.fetch_add(1, Ordering::Relaxed);
}

/// The progress counter itself, for engines that take a plain
/// `&'static AtomicU64` (they increment it every so many events and do not
/// depend on this crate).
pub fn pulse() -> &'static AtomicU64 {
    &PULSE
}

/// The heartbeat thread of one side of one session; stops when dropped.
pub struct Heartbeat {
    stop: Arc<AtomicBool>,
}

impl Heartbeat {
    pub(crate) fn start(seg: Arc<ControlSegment>, role: Role) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        seg.heartbeat(role).store(monotonic_ms(), Ordering::Release);
        let s = stop.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("ipc-heartbeat-{role}"))
            .spawn(move || {
                let mut last = 0u64;
                while !s.load(Ordering::Acquire) {
                    let p = PULSE.load(Ordering::Relaxed);
                    // 0: no beat yet (start-up), write anyway
                    if p == 0 || p != last {
                        seg.heartbeat(role).store(monotonic_ms(), Ordering::Release);
                    }
                    last = p;
                    std::thread::sleep(HEARTBEAT_PERIOD);
                }
            });
        // Without a thread the peer sees a stale heartbeat after the stall
        // timeout: better to say so now than to be blamed later.
        if let Err(e) = spawned {
            eprintln!("ipc-proto: warning: cannot start the heartbeat thread: {e}");
        }
        Heartbeat { stop }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Rate-limited checks of the peer's pid and heartbeat.
pub(crate) struct Liveness {
    role: Role,
    seg: Arc<ControlSegment>,
    last_check: Instant,
    stall: Duration,
    _heartbeat: Heartbeat,
}

impl Liveness {
    pub(crate) fn new(role: Role, seg: Arc<ControlSegment>) -> Liveness {
        Liveness {
            role,
            _heartbeat: Heartbeat::start(seg.clone(), role),
            seg,
            last_check: Instant::now(),
            stall: stall_timeout(),
        }
    }

    pub(crate) fn peer_pid(&self) -> u32 {
        match self.role {
            Role::Scheduler => self.seg.fabric_pid(),
            // 0 until the scheduler attaches: not dead, just not there yet.
            Role::Fabric => self.seg.scheduler_pid(),
        }
    }

    /// Err(PeerDied / PeerStalled) if the peer is gone or stopped;
    /// rate-limited to one check per LIVENESS_INTERVAL unless `force`.
    pub(crate) fn check(&mut self, force: bool) -> Result<()> {
        if !force && self.last_check.elapsed() < LIVENESS_INTERVAL {
            return Ok(());
        }
        self.last_check = Instant::now();
        let pid = self.peer_pid();
        if pid == 0 {
            return Ok(());
        }
        if !pid_alive(pid) {
            return Err(ProtoError::PeerDied {
                peer: self.role.peer(),
                pid,
            });
        }
        let theirs = self.seg.heartbeat(self.role.peer()).load(Ordering::Acquire);
        if theirs != 0 {
            let ours = self.seg.heartbeat(self.role).load(Ordering::Acquire);
            let lag = Duration::from_millis(ours.saturating_sub(theirs));
            if lag > self.stall {
                return Err(ProtoError::PeerStalled {
                    peer: self.role.peer(),
                    pid,
                    lag,
                });
            }
        }
        Ok(())
    }
}
