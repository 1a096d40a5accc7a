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

/// The default of [`spin_budget`].
pub const DEFAULT_SPIN: std::time::Duration = std::time::Duration::from_micros(1000);
/// The busy-loop part of the spin (see [`spin_budget`]).
pub const PURE_SPIN: std::time::Duration = std::time::Duration::from_micros(30);

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

/// Is this process restricted to a single CPU (sched_getaffinity)?
pub(crate) fn single_cpu() -> bool {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return false;
        }
        libc::CPU_COUNT(&set) <= 1
    }
}
