//! The engine's view of the network (docs/model/loggops.md section 7, docs/protocol.md
//! rules 2-3). The engine calls these methods at fixed points of its
//! handlers and never changes its timing rules for a backend:
//!
//! - `insert` at every send start (SEND handler, step 3);
//! - Poll mode: `query` each time a message event is processed until the
//!   network has said the message is there (`query(..) <= now`); after that
//!   the engine remembers it and does not ask again;
//! - Notify mode (protocol version 1, the thesis's run-ahead): message
//!   events are created at `Time::MAX`, kept out of the active queue, and
//!   `wait_arrivals` is called when no finite event is left; reported
//!   events re-enter the active queue at their arrival time with their
//!   original sequence number;
//! - Exact mode (protocol version 2, docs/protocol.md rule 3a): as notify, but
//!   the engine never processes an event at or after the time up to which
//!   the network has vouched for every message in flight (its grant): it
//!   calls `wait_exact(now, horizon)` first, with the time of its next
//!   event as the horizon. After each insert at t the grant shrinks to
//!   t + `min_latency()`. No arrival can then be late.
//! - `finish` once, after the last event.

use crate::Time;

pub mod fabric;
pub mod fast;
pub mod flow;
pub mod loggp;
pub mod lop;
pub mod penalty;
pub mod registry;
pub use fabric::{inproc, onepiece};
pub use loggp::LogGp;

pub type Handle = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    Poll,
    /// Protocol version 1 notify: ask only when no finite event is left.
    Notify,
    /// Protocol version 2 notify: ask before passing the network's grant.
    Exact,
}

/// The network's answer to `wait_exact`: the arrivals of one instant
/// (possibly none) and the grant: no message inserted so far arrives
/// before `grant` except those just reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub arrivals: Vec<(Handle, Time)>,
    pub grant: Time,
    /// Version 4: the armed messages whose reactions the network inserted
    /// itself: (message, insert time, handle of the inserted message).
    /// Their arrivals are in `arrivals` and may lie before the batch's
    /// last instant.
    pub fired: Vec<(Handle, Time, Handle)>,
}

/// Exact mode with triggers (protocol version 4): the engine's reaction to
/// the arrival of an armed message, which the network may carry out
/// itself instead of stopping at that arrival: when the message arrives
/// at t_a, insert a message `src` -> `dst` of `size` bytes at
/// max(t_a, `not_before`) + `delay`. `seq` orders the reactions of one
/// instant as the engine would process them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    pub not_before: Time,
    pub delay: u64,
    pub size: u64,
    pub seq: u64,
    pub src: u32,
    pub dst: u32,
}

/// Errors a network backend reports; the run fails with them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The simulated system cannot progress: messages in flight never arrive.
    #[error("deadlock: {detail} (handles {handles:?})")]
    Deadlock {
        handles: Vec<Handle>,
        detail: String,
    },
    /// The peer broke the protocol (e.g. an insert into the fabric's past).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// Transport failure (queue, shared memory, dead peer process).
    #[error("transport: {0}")]
    Transport(String),
    /// The backend does not implement the requested call.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// A one-sided operation as a network carries it (docs/rdma.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OneSidedOp {
    /// `size` bytes src -> dst, then an acknowledgement dst -> src.
    Put,
    /// A read request src -> dst, then `size` bytes of response dst -> src.
    Get,
}

/// What a message carries through the network: `size` bytes from rank
/// `src` to rank `dst` under `tag` (the matching engine's tag; the fabric
/// passes it on in its records). One value, so that the engine, the
/// `Box` forwarding and every backend name the message the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub tag: u32,
}

impl Envelope {
    pub const fn new(src: u32, dst: u32, size: u64, tag: u32) -> Envelope {
        Envelope {
            src,
            dst,
            size,
            tag,
        }
    }
}

/// A message in flight as the engine asks about it in poll mode: the
/// handle its insert returned and the time of that insert. The network
/// has the envelope from the insert; leaving it out keeps the two fields
/// in registers on the engine's hottest call (one query per processed
/// message event in poll mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    pub handle: Handle,
    pub start: Time,
}

/// The handles under which a native backend reports the completion points
/// of one operation, each exactly like a message arrival (query,
/// wait_arrivals, wait_exact): for a put `first` is the remote completion
/// (data written at the target) and `acked` the local completion (the
/// acknowledgement back at the initiator); for a get `first` is the
/// completion (response written at the initiator) and `acked` is None.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpHandles {
    pub first: Handle,
    pub acked: Option<Handle>,
}

pub trait Network {
    /// For the header line, e.g. "LogGP".
    fn name(&self) -> &str;
    fn mode(&self) -> SyncMode {
        SyncMode::Poll
    }
    /// A send starts at `now` on host `env.src` (rank) to `env.dst`: hand the message over.
    fn insert(&mut self, now: Time, env: Envelope) -> Result<Handle, NetError>;
    /// Poll mode: the message event of `m.handle` is processed at `now`; return the earliest arrival time the
    /// network can promise (<= now means "it is there"). LogGP returns `now`.
    fn query(&mut self, now: Time, m: InFlight) -> Result<Time, NetError>;
    /// Notify mode only: the active queue holds only "waiting for the network" events; block until the network
    /// reports the next batch of arrivals (all at one time) and return them. `now` = scheduler's current time.
    fn wait_arrivals(&mut self, now: Time) -> Result<Vec<(Handle, Time)>, NetError> {
        let _ = now;
        Err(NetError::Unsupported(format!(
            "{}: wait_arrivals (notify mode) is not implemented",
            self.name()
        )))
    }
    /// Exact mode only: the engine's next event is at `horizon` (u64::MAX:
    /// none) and it may not process it before it knows every arrival at or
    /// before it. Returns the arrivals of the first completion instant
    /// `<= horizon` with a grant after it, or no arrival and a grant
    /// `> horizon`.
    fn wait_exact(&mut self, now: Time, horizon: Time) -> Result<Answer, NetError> {
        let _ = (now, horizon);
        Err(NetError::Unsupported(format!(
            "{}: wait_exact (exact notify) is not implemented",
            self.name()
        )))
    }
    /// A send from `src` to `dst` will be inserted soon (it was just
    /// released, and runs after the events already queued at its time): a
    /// network that can, starts loading what that insert will touch
    /// (one-piece mode: the fabric's route and destination). Only a hint;
    /// results never depend on it.
    #[inline]
    fn prefetch_insert(&self, src: u32, dst: u32) {
        let _ = (src, dst);
    }
    /// Exact mode: a lower bound (>= 1 ps) of every message's travel time.
    fn min_latency(&self) -> Time {
        Time(1)
    }
    /// Exact mode: does this network take triggers ([`Network::arm`])?
    fn triggers(&self) -> bool {
        false
    }
    /// Arm message `h` (in flight, not yet reported) with the engine's
    /// reaction to its arrival; returns the handle the reaction's message
    /// will have.
    fn arm(&mut self, h: Handle, trig: Trigger) -> Result<Handle, NetError> {
        let _ = (h, trig);
        Err(NetError::Unsupported(format!(
            "{}: triggered inserts are not implemented",
            self.name()
        )))
    }
    /// Withdraw the trigger armed on `h` (not reported yet).
    fn disarm(&mut self, h: Handle) -> Result<(), NetError> {
        let _ = h;
        Err(NetError::Unsupported(format!(
            "{}: triggered inserts are not implemented",
            self.name()
        )))
    }
    /// The last event has been processed at `end`.
    fn finish(&mut self, end: Time) -> Result<(), NetError> {
        let _ = end;
        Ok(())
    }
    /// Backend counters for the report (messages, round trips, ...), as key/value pairs.
    fn stats(&self) -> Vec<(String, u64)> {
        vec![]
    }
    /// A fabric in another process: the wall-clock time this side waited
    /// for its records (None for every in-process backend).
    fn peer_wait(&self) -> Option<std::time::Duration> {
        None
    }
    /// True when the backend carries put/get itself
    /// ([`Network::insert_op`]; the fabric, which generates the
    /// acknowledgement, read request and response packets). When false the
    /// engine composes them from messages: put = data message, then a
    /// 0-byte (header-only) acknowledgement target -> initiator inserted
    /// when the data is written; get = 0-byte request, then the response
    /// of the get's size target -> initiator inserted when the request is
    /// there.
    fn native_one_sided(&self) -> bool {
        false
    }
    /// Called once before a run whose schedule has one-sided operations:
    /// an error when this backend cannot carry them (a fabric session of
    /// protocol version 1 or 2).
    fn check_one_sided(&self) -> Result<(), NetError> {
        Ok(())
    }
    /// Native backends only: a put or get starts at `now`.
    fn insert_op(
        &mut self,
        now: Time,
        env: Envelope,
        op: OneSidedOp,
    ) -> Result<OpHandles, NetError> {
        let _ = (now, env);
        Err(NetError::Unsupported(format!(
            "{}: native one-sided operation {op:?}",
            self.name()
        )))
    }
}

impl<N: Network + ?Sized> Network for Box<N> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn mode(&self) -> SyncMode {
        (**self).mode()
    }
    fn insert(&mut self, now: Time, env: Envelope) -> Result<Handle, NetError> {
        (**self).insert(now, env)
    }
    fn query(&mut self, now: Time, m: InFlight) -> Result<Time, NetError> {
        (**self).query(now, m)
    }
    fn wait_arrivals(&mut self, now: Time) -> Result<Vec<(Handle, Time)>, NetError> {
        (**self).wait_arrivals(now)
    }
    fn wait_exact(&mut self, now: Time, horizon: Time) -> Result<Answer, NetError> {
        (**self).wait_exact(now, horizon)
    }
    fn prefetch_insert(&self, src: u32, dst: u32) {
        (**self).prefetch_insert(src, dst)
    }
    fn min_latency(&self) -> Time {
        (**self).min_latency()
    }
    fn triggers(&self) -> bool {
        (**self).triggers()
    }
    fn arm(&mut self, h: Handle, trig: Trigger) -> Result<Handle, NetError> {
        (**self).arm(h, trig)
    }
    fn disarm(&mut self, h: Handle) -> Result<(), NetError> {
        (**self).disarm(h)
    }
    fn finish(&mut self, end: Time) -> Result<(), NetError> {
        (**self).finish(end)
    }
    fn stats(&self) -> Vec<(String, u64)> {
        (**self).stats()
    }
    fn peer_wait(&self) -> Option<std::time::Duration> {
        (**self).peer_wait()
    }
    fn native_one_sided(&self) -> bool {
        (**self).native_one_sided()
    }
    fn check_one_sided(&self) -> Result<(), NetError> {
        (**self).check_one_sided()
    }
    fn insert_op(
        &mut self,
        now: Time,
        env: Envelope,
        op: OneSidedOp,
    ) -> Result<OpHandles, NetError> {
        (**self).insert_op(now, env, op)
    }
}
