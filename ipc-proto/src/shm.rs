//! Shared-memory transport: one single-producer single-consumer ring per
//! lane in the session's segment `/<key>.ctl`, after the control page.
//!
//! Layout (byte offsets from the start of the segment; `S` = slots per
//! ring, `P` = payload bytes per slot, both in the control page at offsets
//! 68 and 72, `stride` = 8 + P rounded up to 64):
//!
//! ```text
//! ring i (lane i of Lane::of(protocol)) at 4096 + i * (128 + S * stride):
//!   +0    u32 head   messages consumed (written by the reader only)
//!   +64   u32 tail   messages published (written by the writer only)
//!   +128  S slots:   u32 length, 4 bytes zero, P bytes of payload
//! ```
//!
//! The writer fills slot `tail % S` and then stores `tail + 1` (release);
//! the reader sees the message after loading `tail` (acquire), copies it out
//! and stores `head + 1`. Counters wrap at 2^32.
//!
//! Waiting: a side first polls for [`crate::transport::spin_budget`]
//! (only [`crate::transport::SHORT_SPIN`] when its recent waits were long,
//! see [`crate::transport::LONG_WAIT`]; checking its incoming rings, and room in the outgoing ring it wants to
//! write; a busy loop for the first 30 us, then yielding the CPU between
//! polls; when the process is pinned to a single CPU it always yields, so
//! that the peer can run), then
//! sleeps on its *doorbell* (a futex word in the control page): it sets its
//! `waiting` word, re-checks, and calls FUTEX_WAIT for at most 100 ms (to
//! check the peer's liveness). The peer, after publishing a message,
//! wakes the doorbell if the waiting word is set, and after freeing a slot
//! only if it is 1 (asleep for room or messages; 2 = for messages only,
//! so a side sleeping for the answer to its request is not woken when
//! the request is consumed; both
//! sides use sequentially consistent accesses, so one of them always sees
//! the other). A writer waiting for room keeps draining its incoming rings
//! into a local stash, exactly as the message-queue transport does, so
//! neither side can deadlock on full rings.

use crate::control::{offset, ControlSegment, SEGMENT_SIZE};
use crate::error::{ProtoError, Result};
use crate::liveness::Liveness;
use crate::names::Lane;
use crate::record::{Protocol, Role, RECORD_SIZE};
use crate::session::OwnerGuard;
use crate::transport::{receive_turn, Receiving, SpinPolicy, Transport, LIVENESS_INTERVAL};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default slots per ring.
pub const DEFAULT_SLOTS: u32 = 32;
/// Default payload bytes per slot (the same 128 records as a queue message).
pub const DEFAULT_SLOT_SIZE: u32 = 8192;

const RING_HEADER: usize = 128;

/// Geometry of the rings of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingGeometry {
    pub slots: u32,
    pub slot_size: u32,
}

impl Default for RingGeometry {
    fn default() -> Self {
        RingGeometry {
            slots: DEFAULT_SLOTS,
            slot_size: DEFAULT_SLOT_SIZE,
        }
    }
}

impl RingGeometry {
    pub(crate) fn validate(&self) -> Result<()> {
        if !(1..=1024).contains(&self.slots)
            || !(RECORD_SIZE as u32..=1 << 20).contains(&self.slot_size)
            || !(self.slot_size as usize).is_multiple_of(RECORD_SIZE)
        {
            return Err(ProtoError::Violation(format!(
                "ring geometry {self:?}: 1..=1024 slots of a multiple of {RECORD_SIZE} bytes up to 1 MiB"
            )));
        }
        Ok(())
    }
    fn stride(&self) -> usize {
        (8 + self.slot_size as usize).div_ceil(64) * 64
    }
    fn ring_bytes(&self) -> usize {
        RING_HEADER + self.slots as usize * self.stride()
    }
    /// Offset of ring `i` in the segment.
    fn ring_offset(&self, i: usize) -> usize {
        SEGMENT_SIZE + i * self.ring_bytes()
    }
    /// Segment size for `protocol`'s lanes.
    pub fn segment_size(&self, protocol: Protocol) -> usize {
        self.ring_offset(Lane::of(protocol).len())
    }
}

/// Values of a side's "waiting" word: 0 awake; [`WAITING_ANY`] asleep
/// until a message comes in or a slot of its outgoing ring frees up (also
/// what a peer of an earlier build writes for every sleep, so it is woken
/// as before); [`WAITING_INCOMING`] asleep until a message comes in.
const WAITING_ANY: u32 = 1;
const WAITING_INCOMING: u32 = 2;

/// One ring as seen from this process.
struct Ring {
    lane: Lane,
    off: usize,
}

pub struct ShmTransport {
    role: Role,
    seg: Arc<ControlSegment>,
    geo: RingGeometry,
    out: Vec<Ring>,
    inc: Vec<Ring>,
    stash: VecDeque<(Lane, Vec<u8>)>,
    live: Liveness,
    guard: OwnerGuard,
    /// Pinned to one CPU: yield while spinning (see transport::spin_pause).
    yield_cpu: bool,
    /// How long to poll before sleeping (adaptive, see transport::LONG_WAIT).
    policy: SpinPolicy,
}

impl ShmTransport {
    pub(crate) fn new(
        role: Role,
        protocol: Protocol,
        seg: Arc<ControlSegment>,
        geo: RingGeometry,
        live: Liveness,
        guard: OwnerGuard,
    ) -> Result<ShmTransport> {
        geo.validate()?;
        if seg.len() < geo.segment_size(protocol) {
            return Err(ProtoError::Violation(format!(
                "shared-memory segment of {} bytes is smaller than its rings need ({})",
                seg.len(),
                geo.segment_size(protocol)
            )));
        }
        let mut out = Vec::new();
        let mut inc = Vec::new();
        for (i, &lane) in Lane::of(protocol).iter().enumerate() {
            let r = Ring {
                lane,
                off: geo.ring_offset(i),
            };
            if lane.writer() == role {
                out.push(r)
            } else {
                inc.push(r)
            }
        }
        Ok(ShmTransport {
            role,
            seg,
            geo,
            out,
            inc,
            stash: VecDeque::new(),
            live,
            guard,
            yield_cpu: crate::transport::single_cpu(),
            policy: SpinPolicy::new(),
        })
    }

    fn head(&self, r: &Ring) -> &AtomicU32 {
        self.seg.atomic_u32(r.off)
    }
    fn tail(&self, r: &Ring) -> &AtomicU32 {
        self.seg.atomic_u32(r.off + 64)
    }
    fn slot_ptr(&self, r: &Ring, n: u32) -> *mut u8 {
        let i = (n % self.geo.slots) as usize;
        // SAFETY: in bounds: checked against the segment size in `new`.
        unsafe {
            self.seg
                .base()
                .add(r.off + RING_HEADER + i * self.geo.stride())
        }
    }

    fn doorbell(&self, role: Role) -> (&AtomicU32, &AtomicU32) {
        match role {
            Role::Scheduler => (
                self.seg.atomic_u32(offset::SCHED_DOORBELL),
                self.seg.atomic_u32(offset::SCHED_WAITING),
            ),
            Role::Fabric => (
                self.seg.atomic_u32(offset::FABRIC_DOORBELL),
                self.seg.atomic_u32(offset::FABRIC_WAITING),
            ),
        }
    }

    /// Wake the peer if it sleeps on its doorbell: after a publish
    /// (`freed_slot` false) whenever it waits; after freeing a slot only
    /// when it may wait for room ([`WAITING_ANY`]), not when it waits for
    /// incoming messages alone ([`WAITING_INCOMING`]): a side that has
    /// just sent its request and sleeps for the answer is not woken for
    /// nothing when the peer consumes the request.
    fn ring_peer(&self, freed_slot: bool) {
        let (bell, waiting) = self.doorbell(self.role.peer());
        let w = waiting.load(SeqCst);
        if w != 0 && !(freed_slot && w == WAITING_INCOMING) {
            bell.fetch_add(1, SeqCst);
            crate::futex::wake(bell);
        }
    }

    /// One message from any incoming ring without waiting.
    fn try_receive(&mut self) -> Result<Option<(Lane, Vec<u8>)>> {
        for r in &self.inc {
            let head = self.head(r).load(SeqCst);
            let tail = self.tail(r).load(SeqCst);
            if head == tail {
                continue;
            }
            if tail.wrapping_sub(head) > self.geo.slots {
                return Err(ProtoError::Violation(format!(
                    "ring .{}: tail {tail} is more than {} slots ahead of head {head}",
                    r.lane.suffix(),
                    self.geo.slots
                )));
            }
            let p = self.slot_ptr(r, head);
            // SAFETY: the slot is published (tail loaded after the writer's
            // release store) and not reused until we advance head.
            let len = unsafe { std::ptr::read_volatile(p as *const u32) } as usize;
            if len > self.geo.slot_size as usize {
                return Err(ProtoError::Violation(format!(
                    "ring .{}: message length {len} exceeds the slot size {}",
                    r.lane.suffix(),
                    self.geo.slot_size
                )));
            }
            // Copied straight into a new buffer (no zeroing first: the
            // copy writes every byte).
            // SAFETY: `len` <= slot_size bytes of payload follow the
            // 8-byte slot header inside the mapped ring (checked above).
            let v = unsafe { std::slice::from_raw_parts(p.add(8), len) }.to_vec();
            self.head(r).store(head.wrapping_add(1), SeqCst);
            let lane = r.lane;
            self.ring_peer(true);
            return Ok(Some((lane, v)));
        }
        Ok(None)
    }

    fn has_room(&self, i: usize) -> bool {
        let r = &self.out[i];
        self.tail(r)
            .load(SeqCst)
            .wrapping_sub(self.head(r).load(SeqCst))
            < self.geo.slots
    }

    fn has_incoming(&self) -> bool {
        self.inc
            .iter()
            .any(|r| self.head(r).load(SeqCst) != self.tail(r).load(SeqCst))
    }

    /// Wait until there is an incoming message (or room in `out[room_for]`),
    /// at most `max`: spin, then sleep on the doorbell.
    fn wait(&self, room_for: Option<usize>, max: Duration) {
        let ready = |t: &Self| t.has_incoming() || room_for.is_some_and(|i| t.has_room(i));
        let start = Instant::now();
        let spin = self.policy.spin().min(max);
        let mut n = 0u32;
        let mut yield_cpu = self.yield_cpu;
        let busy = crate::transport::busy_limit();
        loop {
            crate::liveness::beat();
            if ready(self) {
                return;
            }
            n += 1;
            crate::transport::spin_pause(yield_cpu);
            if n.is_multiple_of(16) {
                let e = start.elapsed();
                if e >= spin {
                    break;
                }
                yield_cpu |= e >= busy;
            }
        }
        let left = max.saturating_sub(start.elapsed());
        if left.is_zero() {
            return;
        }
        let (bell, waiting) = self.doorbell(self.role);
        waiting.store(
            if room_for.is_some() {
                WAITING_ANY
            } else {
                WAITING_INCOMING
            },
            SeqCst,
        );
        let seen = bell.load(SeqCst);
        if !ready(self) {
            crate::futex::wait(bell, seen, left);
        }
        waiting.store(0, SeqCst);
    }
}

impl Receiving for ShmTransport {
    fn try_receive(&mut self) -> Result<Option<(Lane, Vec<u8>)>> {
        ShmTransport::try_receive(self)
    }
    fn peer_alive(&mut self) -> Result<()> {
        self.live.check(false)
    }
    fn policy(&mut self) -> &mut SpinPolicy {
        &mut self.policy
    }
}

impl Transport for ShmTransport {
    fn max_message_size(&self) -> usize {
        self.geo.slot_size as usize
    }

    fn send_message(&mut self, lane: Lane, msg: &[u8]) -> Result<()> {
        crate::liveness::beat();
        let i = lane.index_among(self.out.iter().map(|r| r.lane), self.role, "ring")?;
        if msg.len() > self.geo.slot_size as usize {
            return Err(ProtoError::Violation(format!(
                "message of {} bytes exceeds the slot size {}",
                msg.len(),
                self.geo.slot_size
            )));
        }
        loop {
            if self.has_room(i) {
                let r = &self.out[i];
                let tail = self.tail(r).load(SeqCst);
                let p = self.slot_ptr(r, tail);
                // SAFETY: the slot is free (tail - head < slots) and only
                // this process writes this ring.
                unsafe {
                    std::ptr::write_volatile(p as *mut u32, msg.len() as u32);
                    std::ptr::write_volatile(p.add(4) as *mut u32, 0);
                    std::ptr::copy_nonoverlapping(msg.as_ptr(), p.add(8), msg.len());
                }
                self.tail(r).store(tail.wrapping_add(1), SeqCst);
                self.ring_peer(false);
                return Ok(());
            }
            // Full: drain what the peer sent us so that it can progress,
            // then wait for room (or for more incoming messages).
            while let Some(m) = self.try_receive()? {
                self.stash.push_back(m);
            }
            self.live.check(false)?;
            self.wait(Some(i), LIVENESS_INTERVAL);
        }
    }

    fn recv_message(&mut self, wait: Duration) -> Result<Option<(Lane, Vec<u8>)>> {
        if let Some(m) = self.stash.pop_front() {
            return Ok(Some(m));
        }
        let start = Instant::now();
        let mut waited = false;
        loop {
            match receive_turn(self, start, wait, &mut waited)? {
                ControlFlow::Break(got) => return Ok(got),
                ControlFlow::Continue(left) => self.wait(None, left.min(LIVENESS_INTERVAL)),
            }
        }
    }

    fn name(&self) -> &'static str {
        "shm"
    }

    fn on_fatal(&mut self) {
        self.guard.unlink_now();
    }
}
