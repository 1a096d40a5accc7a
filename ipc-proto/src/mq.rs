//! POSIX message-queue transport.
//!
//! No reader thread: every queue is opened O_NONBLOCK and waits use poll(2)
//! on the queue descriptors (Linux mqd_t are file descriptors). While a send
//! waits for room in a full outgoing queue, the sender keeps draining its
//! own incoming queues into a local (unbounded) stash, so the peer, which
//! may be blocked sending to us, always progresses: neither side can
//! deadlock on full queues. A single thread also keeps a round trip at the
//! cost of two queue operations (no thread hand-offs).

use crate::error::{ProtoError, Result};
use crate::liveness::Liveness;
use crate::names::Lane;
use crate::record::Role;
use crate::session::OwnerGuard;
use crate::transport::{receive_turn, Receiving, SpinPolicy, Transport, LIVENESS_INTERVAL};
use nix::errno::Errno;
use nix::mqueue::{mq_receive, mq_send, MqdT};
use nix::sys::signal::kill;
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

pub(crate) struct Queue {
    pub lane: Lane,
    pub name: String,
    pub mqd: MqdT,
    pub msgsize: usize,
}

impl Drop for Queue {
    /// nix's `MqdT` does not close itself: without this every session a
    /// process opened kept its queues charged against RLIMIT_MSGQUEUE
    /// (unlinked queues live on while a descriptor is open) until exit.
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this Queue and closed once.
        unsafe {
            libc::mq_close(self.mqd.as_raw_fd());
        }
    }
}

pub struct MqTransport {
    role: Role,
    out: Vec<Queue>,
    inc: Vec<Queue>,
    max_msg: usize,
    buf: Vec<u8>,
    stash: VecDeque<(Lane, Vec<u8>)>,
    live: Liveness,
    guard: OwnerGuard,
    /// Pinned to one CPU: yield while spinning (see transport::spin_pause).
    yield_cpu: bool,
    /// How long to poll before blocking (adaptive, see transport::LONG_WAIT).
    policy: SpinPolicy,
    /// A message was sent since the last one was received: the next
    /// receive most likely waits for the peer's answer (see recv_message).
    sent_since_recv: bool,
}

/// How often a side pinned to one CPU yields it to its peer (and looks for
/// the answer) before it sleeps in poll(2); the shared-memory transport's
/// wait yields as often before its futex.
const ONE_CPU_YIELDS: usize = 16;

/// Is `pid` a live process? A zombie (dead, not yet reaped by its parent)
/// counts as dead.
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    match kill(Pid::from_raw(pid as i32), None) {
        Err(Errno::ESRCH) => false,
        _ => match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => {
                let state = s
                    .rfind(')')
                    .and_then(|i| s[i + 1..].trim_start().chars().next());
                !matches!(state, Some('Z') | Some('X'))
            }
            Err(_) => true,
        },
    }
}

impl MqTransport {
    pub(crate) fn new(
        role: Role,
        out: Vec<Queue>,
        inc: Vec<Queue>,
        live: Liveness,
        guard: OwnerGuard,
    ) -> MqTransport {
        let max_msg = out.iter().map(|q| q.msgsize).min().unwrap_or(0);
        let buf_len = inc.iter().map(|q| q.msgsize).max().unwrap_or(0);
        MqTransport {
            role,
            out,
            inc,
            max_msg,
            buf: vec![0u8; buf_len],
            stash: VecDeque::new(),
            live,
            guard,
            yield_cpu: crate::transport::single_cpu(),
            policy: SpinPolicy::new(),
            sent_since_recv: false,
        }
    }

    fn check_peer(&mut self, force: bool) -> Result<()> {
        self.live.check(force)
    }

    /// Poll the incoming queues with non-blocking receives for up to
    /// [`crate::transport::spin_budget`] (bounded by `max`); between attempts
    /// yield the CPU after the first 30 us (never in `--wait poll`), or
    /// always when pinned to a single CPU (the peer must be able to run).
    fn spin_receive(&mut self, max: Duration) -> Result<Option<(Lane, Vec<u8>)>> {
        let spin = self.policy.spin().min(max);
        let start = Instant::now();
        let mut n = 0u32;
        let busy = crate::transport::busy_limit();
        while start.elapsed() < spin {
            crate::liveness::beat();
            if let Some(m) = self.try_receive()? {
                return Ok(Some(m));
            }
            n += 1;
            if n > 2 {
                let yield_cpu = self.yield_cpu || start.elapsed() >= busy;
                crate::transport::spin_pause(yield_cpu);
            }
        }
        Ok(None)
    }

    /// One message from any incoming queue without waiting.
    fn try_receive(&mut self) -> Result<Option<(Lane, Vec<u8>)>> {
        for q in &self.inc {
            loop {
                let mut prio = 0u32;
                match mq_receive(&q.mqd, &mut self.buf, &mut prio) {
                    Ok(n) => return Ok(Some((q.lane, self.buf[..n].to_vec()))),
                    Err(Errno::EAGAIN) => break,
                    Err(Errno::EINTR) => continue,
                    Err(e) => return Err(ProtoError::os("mq_receive", q.name.clone(), e)),
                }
            }
        }
        Ok(None)
    }

    fn poll(&self, out_lane: Option<usize>, wait: Duration) -> Result<()> {
        crate::liveness::beat();
        let mut fds: Vec<libc::pollfd> = self
            .inc
            .iter()
            .map(|q| libc::pollfd {
                fd: q.mqd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if let Some(i) = out_lane {
            fds.push(libc::pollfd {
                fd: self.out[i].mqd.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            });
        }
        let ms = wait.as_millis().clamp(0, i32::MAX as u128) as i32;
        // Round sub-millisecond waits up so a short wait does not spin.
        let ms = if ms == 0 && !wait.is_zero() { 1 } else { ms };
        // SAFETY: `fds` is a live Vec of initialised pollfd of exactly
        // `fds.len()` elements, each naming a descriptor this Mq owns for
        // the duration of the call; poll writes only their `revents`.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r < 0 {
            let e = Errno::last();
            if e != Errno::EINTR {
                return Err(ProtoError::os("poll", "message queues", e));
            }
        }
        Ok(())
    }
}

impl Receiving for MqTransport {
    fn try_receive(&mut self) -> Result<Option<(Lane, Vec<u8>)>> {
        MqTransport::try_receive(self)
    }
    fn peer_alive(&mut self) -> Result<()> {
        self.check_peer(false)
    }
    fn policy(&mut self) -> &mut SpinPolicy {
        &mut self.policy
    }
}

impl Transport for MqTransport {
    fn max_message_size(&self) -> usize {
        self.max_msg
    }

    fn send_message(&mut self, lane: Lane, msg: &[u8]) -> Result<()> {
        crate::liveness::beat();
        let i = lane.index_among(self.out.iter().map(|q| q.lane), self.role, "queue")?;
        self.sent_since_recv = true;
        loop {
            match mq_send(&self.out[i].mqd, msg, 0) {
                Ok(()) => return Ok(()),
                Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
                Err(e) => return Err(ProtoError::os("mq_send", self.out[i].name.clone(), e)),
            }
            // The queue is full: drain what the peer sent us so that it can
            // progress, then wait for room (or for more incoming messages).
            while let Some(m) = self.try_receive()? {
                self.stash.push_back(m);
            }
            self.check_peer(false)?;
            self.poll(Some(i), LIVENESS_INTERVAL)?;
        }
    }

    fn recv_message(&mut self, wait: Duration) -> Result<Option<(Lane, Vec<u8>)>> {
        if let Some(m) = self.stash.pop_front() {
            return Ok(Some(m));
        }
        let start = Instant::now();
        let mut waited = false;
        // A side that has just sent waits for the peer's answer, which
        // cannot be there yet: a receive tried first fails with EAGAIN (on
        // the chain benchmark ~6,400 failed receives of ~23,600 calls).
        // Pinned to one CPU (the supervisor's default placement) the answer
        // needs the peer to run on this CPU: hand it over (sched_yield) and
        // look again, as the shared-memory transport does, instead of
        // sleeping in poll(2) (measured slower: a wake-up per message
        // instead of a yield); otherwise, when this side may not spin, go
        // straight to poll(2), which returns at once when a message is there.
        // The second and later messages of a batch are received directly.
        if std::mem::take(&mut self.sent_since_recv) && !wait.is_zero() {
            if self.yield_cpu {
                for _ in 0..ONE_CPU_YIELDS {
                    crate::liveness::beat();
                    std::thread::yield_now();
                    if let Some(m) = self.try_receive()? {
                        self.policy.record(start.elapsed());
                        return Ok(Some(m));
                    }
                }
            } else if self.policy.spin().is_zero() {
                self.poll(None, wait.min(LIVENESS_INTERVAL))?;
            }
        }
        loop {
            let left = match receive_turn(self, start, wait, &mut waited)? {
                ControlFlow::Break(got) => return Ok(got),
                ControlFlow::Continue(left) => left,
            };
            if let Some(m) = self.spin_receive(left)? {
                self.policy.record(start.elapsed());
                return Ok(Some(m));
            }
            let elapsed = start.elapsed();
            if elapsed >= wait {
                self.policy.nothing_came(elapsed);
                return Ok(None);
            }
            self.poll(None, (wait - elapsed).min(LIVENESS_INTERVAL))?;
        }
    }

    fn name(&self) -> &'static str {
        "mq"
    }

    fn on_fatal(&mut self) {
        // The session is over: remove its names now (open descriptors stay
        // valid), whatever the caller does next.
        self.guard.unlink_now();
    }
}
