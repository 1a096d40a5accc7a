//! [`Channel`]: one side's endpoint of a session, over any [`Transport`].
//!
//! - `send` buffers records per outgoing queue and ships a buffer as one
//!   message when the next record would not fit (`max_message_size`, 8192
//!   bytes = 128 records); `flush` ships all buffers (the `.ins` queue
//!   first); `recv`/`try_recv` flush first, so a Query is never left behind.
//! - Each side's first record is a Hello (sent by `Channel::new`, checked and
//!   consumed by the first `recv`): version, protocol and role must match.
//! - Query protocol, fabric side: Inserts (`.ins`) and Queries (`.qry`)
//!   travel on different queues, so a Query is held back until the number
//!   of Inserts delivered reaches its `inserts_sent`. `recv` therefore
//!   returns records in the order the scheduler sent them.
//! - Every received record is checked against the routing table (which
//!   record may travel on which queue); anything else is a `Violation`.

use crate::error::{ProtoError, Result};
use crate::names::Lane;
use crate::record::{
    decode_message, kind_version, Protocol, Record, Role, DEFAULT_PROTOCOL_VERSION, RECORD_SIZE,
};
use crate::time::Time;
use crate::transport::{Transport, LIVENESS_INTERVAL};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Record kinds the channel's tables cover (kinds are below 32).
const KINDS: usize = 32;
/// "Not sent by this side" in `Channel::out_lane_of`.
const NO_LANE: u8 = u8::MAX;

/// Bit `k` of a kind set (none for a kind beyond the tables).
fn kind_bit(k: u8) -> u32 {
    1u32.checked_shl(k as u32).unwrap_or(0)
}

/// Counters of one channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    pub records_sent: u64,
    pub messages_sent: u64,
    pub records_received: u64,
    pub messages_received: u64,
}

/// How long a side waited for its peer: the wall-clock time `recv` spent
/// with no record to hand (polling or asleep until the peer's next message
/// came), and how many times it had to. On a co-simulation this is the
/// coupling's cost as the waiting side sees it: for the fabric, the
/// scheduler's work per round plus the hand-over both ways (docs/cosim.md,
/// "Speed: what the coupling costs"). Kept apart from [`ChannelStats`],
/// whose counters are deterministic.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeerWait {
    /// wall-clock time without a record to hand
    pub waited: Duration,
    /// receives that found no record ready and got one by waiting
    pub waits: u64,
}

/// What the peer said in its Hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerHello {
    pub version: u32,
    pub pid: u32,
}

/// The scheduler's endpoint (same type as the fabric's; the role is inside).
pub type SchedulerEnd = Channel;
/// The fabric's endpoint.
pub type FabricEnd = Channel;

pub struct Channel {
    transport: Box<dyn Transport>,
    protocol: Protocol,
    /// wire version of the session (H1: 1 or 2)
    version: u32,
    role: Role,
    max_msg: usize,
    out_lanes: Vec<Lane>,
    out_bufs: Vec<Vec<u8>>,
    in_lanes: Vec<Lane>,
    in_queues: Vec<VecDeque<Record>>,
    peer_hello: Option<PeerHello>,
    inserts_sent: u64,
    inserts_delivered: u64,
    arrivals_unterminated_sent: u32,
    arrivals_unterminated_recv: u32,
    timeout: Option<Duration>,
    /// Per record kind (< 32), the index in `out_lanes` of the lane this
    /// side sends it on, or [`NO_LANE`] when it may not send it (wrong
    /// protocol, role or a later version): computed once from
    /// [`Lane::route`] and [`kind_version`], which stay the definition and
    /// word the error; the table only keeps the check off the
    /// per-record path.
    out_lane_of: [u8; KINDS],
    /// Per incoming lane, the kinds (bit k) the peer may send on it in
    /// this session.
    in_allowed: Vec<u32>,
    stats: ChannelStats,
    peer_wait: PeerWait,
    failed: bool,
}

impl Channel {
    /// Wrap a transport and send this side's Hello.
    pub fn new(transport: Box<dyn Transport>, protocol: Protocol, role: Role) -> Result<Channel> {
        Channel::with_version(transport, protocol, role, DEFAULT_PROTOCOL_VERSION)
    }

    /// [`Channel::new`] for a session of wire version `version` (1 or 2):
    /// the Hello carries it, the peer's must equal it, and records of a
    /// later version are refused both ways.
    pub fn with_version(
        transport: Box<dyn Transport>,
        protocol: Protocol,
        role: Role,
        version: u32,
    ) -> Result<Channel> {
        let max_msg = transport.max_message_size() / RECORD_SIZE * RECORD_SIZE;
        if max_msg == 0 {
            return Err(ProtoError::Violation(format!(
                "transport message size {} is smaller than one record ({RECORD_SIZE} bytes)",
                transport.max_message_size()
            )));
        }
        let out_lanes = Lane::outgoing(protocol, role);
        let in_lanes = Lane::incoming(protocol, role);
        let mut out_lane_of = [NO_LANE; KINDS];
        let mut in_allowed = vec![0u32; in_lanes.len()];
        for k in 0..KINDS as u8 {
            if kind_version(k) > version {
                continue;
            }
            if let Some(l) = Lane::route(protocol, role, k) {
                if let Some(i) = out_lanes.iter().position(|&o| o == l) {
                    out_lane_of[k as usize] = i as u8;
                }
            }
            if let Some(l) = Lane::route(protocol, role.peer(), k) {
                if let Some(i) = in_lanes.iter().position(|&o| o == l) {
                    in_allowed[i] |= kind_bit(k);
                }
            }
        }
        let mut ch = Channel {
            transport,
            protocol,
            version,
            role,
            max_msg,
            out_bufs: vec![Vec::with_capacity(max_msg); out_lanes.len()],
            out_lanes,
            in_queues: vec![VecDeque::new(); in_lanes.len()],
            in_lanes,
            peer_hello: None,
            inserts_sent: 0,
            inserts_delivered: 0,
            arrivals_unterminated_sent: 0,
            arrivals_unterminated_recv: 0,
            timeout: None,
            out_lane_of,
            in_allowed,
            stats: ChannelStats::default(),
            peer_wait: PeerWait::default(),
            failed: false,
        };
        let hello = Record::Hello {
            version,
            protocol,
            role,
            pid: std::process::id(),
        };
        ch.push(Lane::outgoing(protocol, role)[0], &hello)?;
        ch.flush()?;
        Ok(ch)
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    pub fn role(&self) -> Role {
        self.role
    }
    /// Wire version of the session.
    pub fn version(&self) -> u32 {
        self.version
    }
    pub fn stats(&self) -> ChannelStats {
        self.stats
    }
    /// Time spent waiting for the peer so far ([`PeerWait`]).
    pub fn peer_wait(&self) -> PeerWait {
        self.peer_wait
    }
    /// Number of Insert records sent so far (what a Query must carry).
    pub fn inserts_sent(&self) -> u64 {
        self.inserts_sent
    }
    /// The peer's Hello, once the first record has been received.
    pub fn peer_hello(&self) -> Option<PeerHello> {
        self.peer_hello
    }
    /// Records per queue message at most.
    pub fn records_per_message(&self) -> usize {
        self.max_msg / RECORD_SIZE
    }
    /// Overall bound for `recv` (None: wait as long as the peer lives).
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }
    pub fn transport_name(&self) -> &'static str {
        self.transport.name()
    }

    /// Buffer one record; ships the buffer first if the record does not fit.
    pub fn send(&mut self, rec: Record) -> Result<()> {
        let k = rec.kind();
        let lane_i = self.out_lane_of.get(k as usize).copied().unwrap_or(NO_LANE);
        if lane_i == NO_LANE || matches!(rec, Record::Hello { .. }) {
            return Err(self.refusal(&rec));
        }
        match rec {
            Record::Insert { .. } | Record::InsertOp { .. } => self.inserts_sent += 1,
            Record::Query { inserts_sent, .. } if inserts_sent != self.inserts_sent => {
                return Err(ProtoError::Violation(format!(
                    "Query carries inserts_sent={inserts_sent} but {} Inserts were sent",
                    self.inserts_sent
                )));
            }
            Record::Arrival { .. } => self.arrivals_unterminated_sent += 1,
            Record::ArrivalBatchEnd { count, .. } => {
                if count != self.arrivals_unterminated_sent {
                    return Err(ProtoError::Violation(format!(
                        "ArrivalBatchEnd count={count} but {} Arrivals precede it",
                        self.arrivals_unterminated_sent
                    )));
                }
                self.arrivals_unterminated_sent = 0;
            }
            _ => {}
        }
        self.push_at(lane_i as usize, &rec)
    }

    /// Why `send` refuses `rec` (the table said no; this words it).
    #[cold]
    fn refusal(&self, rec: &Record) -> ProtoError {
        let k = rec.kind();
        if matches!(rec, Record::Hello { .. }) {
            return ProtoError::Violation(
                "Hello is sent by the channel itself, not by the caller".into(),
            );
        }
        if kind_version(k) > self.version {
            return ProtoError::Violation(format!(
                "{} is a version-{} record; this session speaks version {}",
                rec.kind_name(),
                kind_version(k),
                self.version
            ));
        }
        ProtoError::Violation(format!(
            "the {} may not send {} in the {} protocol",
            self.role,
            rec.kind_name(),
            self.protocol
        ))
    }

    fn push(&mut self, lane: Lane, rec: &Record) -> Result<()> {
        let i = self.out_lanes.iter().position(|&l| l == lane).unwrap();
        self.push_at(i, rec)
    }

    fn push_at(&mut self, i: usize, rec: &Record) -> Result<()> {
        if self.out_bufs[i].len() + RECORD_SIZE > self.max_msg {
            self.flush_lane(i)?;
        }
        let buf = &mut self.out_bufs[i];
        let n = buf.len();
        buf.resize(n + RECORD_SIZE, 0);
        let slot: &mut [u8; RECORD_SIZE] = (&mut buf[n..]).try_into().expect("64 bytes");
        rec.encode_into(slot);
        self.stats.records_sent += 1;
        Ok(())
    }

    fn flush_lane(&mut self, i: usize) -> Result<()> {
        if self.out_bufs[i].is_empty() {
            return Ok(());
        }
        let lane = self.out_lanes[i];
        if let Err(e) = self.transport.send_message(lane, &self.out_bufs[i]) {
            return Err(self.fatal(e));
        }
        self.out_bufs[i].clear();
        self.stats.messages_sent += 1;
        Ok(())
    }

    /// Test hook (conformance checker): ship `msg` as one message on `lane`
    /// exactly as given, after the buffered records, bypassing every check
    /// (to see whether the peer rejects malformed records).
    #[doc(hidden)]
    pub fn send_raw_message(&mut self, lane: Lane, msg: &[u8]) -> Result<()> {
        self.flush()?;
        if let Err(e) = self.transport.send_message(lane, msg) {
            return Err(self.fatal(e));
        }
        self.stats.messages_sent += 1;
        Ok(())
    }

    /// Ship every buffered record (`.ins` before `.qry`).
    pub fn flush(&mut self) -> Result<()> {
        for i in 0..self.out_lanes.len() {
            self.flush_lane(i)?;
        }
        Ok(())
    }

    /// Blocking receive (flushes first). Never hangs: fails with `PeerDied`
    /// within about a second of the peer's death, and with `TimedOut` after
    /// the timeout set by `set_timeout`, if any.
    pub fn recv(&mut self) -> Result<Record> {
        let t = self.timeout;
        self.recv_inner(t)?.ok_or_else(|| ProtoError::TimedOut {
            waited: t.unwrap_or_default(),
            what: format!("a record from the {}", self.role.peer()),
        })
    }

    /// Notify protocol, scheduler side: move the Arrival records already
    /// received and at the head of the queue into `out` as (handle, time),
    /// stopping at the first other record; returns how many. The same
    /// records, in the same order and with the same checks, as calling
    /// [`Channel::recv`] for each (an arrival batch's end still counts
    /// them), without the per-record call chain: an arrival batch holds up
    /// to one record per message in flight, and this is the co-simulation's
    /// per-message path (docs/cosim.md, "Speed: what the coupling costs").
    pub fn take_arrivals(&mut self, out: &mut Vec<(u64, Time)>) -> usize {
        if self.peer_hello.is_none() || self.in_queues.len() != 1 {
            return 0;
        }
        let q = &mut self.in_queues[0];
        let mut n = 0;
        while let Some(&Record::Arrival { handle, time }) = q.front() {
            q.pop_front();
            out.push((handle, time));
            n += 1;
        }
        self.arrivals_unterminated_recv += n as u32;
        n
    }

    /// Notify protocol, fabric side: the next record if it is an Insert
    /// already received, else None (then [`Channel::recv`] gives the next
    /// record). The same record and checks as `recv` would give, without
    /// its call chain (the per-message path; see `take_arrivals`).
    pub fn take_insert(&mut self) -> Option<Record> {
        if self.peer_hello.is_none() || self.in_queues.len() != 1 {
            return None;
        }
        match self.in_queues[0].front() {
            Some(Record::Insert { .. }) => {
                self.inserts_delivered += 1;
                self.in_queues[0].pop_front()
            }
            _ => None,
        }
    }

    /// Notify protocol, fabric side: (src, dst) of the Insert records
    /// already received and not yet taken, in order, without taking them
    /// (so that the fabric can prefetch what they will touch).
    pub fn queued_inserts(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let q = match (&self.peer_hello, self.in_queues.len()) {
            (Some(_), 1) => Some(&self.in_queues[0]),
            _ => None,
        };
        q.into_iter().flatten().filter_map(|r| match *r {
            Record::Insert { src, dst, .. } => Some((src, dst)),
            _ => None,
        })
    }

    /// Receive with an explicit bound; `Ok(None)` when it runs out.
    pub fn recv_timeout(&mut self, wait: Duration) -> Result<Option<Record>> {
        self.recv_inner(Some(wait))
    }

    /// Non-blocking receive (flushes first).
    pub fn try_recv(&mut self) -> Result<Option<Record>> {
        self.recv_inner(Some(Duration::ZERO))
    }

    fn recv_inner(&mut self, timeout: Option<Duration>) -> Result<Option<Record>> {
        self.flush()?;
        // Most calls find a record already decoded (a message carries up to
        // 128): no clock read for those (one per record was ~40k
        // clock_gettime calls per side on the chain benchmark).
        if let Some(r) = self.next_ready()? {
            return Ok(Some(r));
        }
        let start = Instant::now();
        loop {
            if let Some(r) = self.next_ready()? {
                self.peer_wait.waited += start.elapsed();
                self.peer_wait.waits += 1;
                return Ok(Some(r));
            }
            let wait = match timeout {
                None => LIVENESS_INTERVAL,
                Some(t) => t.saturating_sub(start.elapsed()).min(LIVENESS_INTERVAL),
            };
            match self.transport.recv_message(wait) {
                Ok(Some((lane, msg))) => {
                    if let Err(e) = self.accept(lane, &msg) {
                        return Err(self.fatal(e));
                    }
                }
                Ok(None) => {
                    if let Some(t) = timeout {
                        if start.elapsed() >= t {
                            self.peer_wait.waited += start.elapsed();
                            return Ok(None);
                        }
                    }
                }
                Err(e) => return Err(self.fatal(e)),
            }
        }
    }

    fn fatal(&mut self, e: ProtoError) -> ProtoError {
        if !self.failed {
            self.failed = true;
            self.transport.on_fatal();
        }
        e
    }

    /// Decode one incoming message and check each record's queue.
    fn accept(&mut self, lane: Lane, msg: &[u8]) -> Result<()> {
        let i = self
            .in_lanes
            .iter()
            .position(|&l| l == lane)
            .ok_or_else(|| {
                ProtoError::Violation(format!(
                    "message on queue .{} which the {} does not read",
                    lane.suffix(),
                    self.role
                ))
            })?;
        let before = self.in_queues[i].len();
        let n = decode_message(msg, &mut self.in_queues[i])?;
        self.stats.messages_received += 1;
        self.stats.records_received += n as u64;
        // the lane's table says whether all are allowed; the rules below
        // word the refusal
        let allowed = self.in_allowed[i];
        if self.in_queues[i]
            .range(before..)
            .all(|r| allowed & kind_bit(r.kind()) != 0)
        {
            return Ok(());
        }
        let peer = self.role.peer();
        for rec in self.in_queues[i].range(before..) {
            if kind_version(rec.kind()) > self.version {
                return Err(ProtoError::Violation(format!(
                    "{} received in a version-{} session (it is a version-{} record)",
                    rec.kind_name(),
                    self.version,
                    kind_version(rec.kind())
                )));
            }
            if Lane::route(self.protocol, peer, rec.kind()) != Some(lane) {
                return Err(ProtoError::Violation(format!(
                    "{} received on queue .{} ({} protocol): not allowed there",
                    rec.kind_name(),
                    lane.suffix(),
                    self.protocol
                )));
            }
        }
        Err(ProtoError::Violation(format!(
            "a record refused on queue .{} (kind table)",
            lane.suffix()
        )))
    }

    /// The next record in protocol order, if one is complete.
    fn next_ready(&mut self) -> Result<Option<Record>> {
        if self.peer_hello.is_none() {
            match self.in_queues[0].pop_front() {
                None => return Ok(None),
                Some(Record::Hello {
                    version,
                    protocol,
                    role,
                    pid,
                }) => {
                    if version != self.version {
                        return Err(self.fatal(ProtoError::VersionMismatch {
                            ours: self.version,
                            theirs: version,
                        }));
                    }
                    if protocol != self.protocol || role != self.role.peer() {
                        return Err(self.fatal(ProtoError::Violation(format!(
                            "peer says it is the {role} speaking the {protocol} protocol; expected the {} speaking {}",
                            self.role.peer(),
                            self.protocol
                        ))));
                    }
                    self.peer_hello = Some(PeerHello { version, pid });
                }
                Some(other) => {
                    return Err(self.fatal(ProtoError::Violation(format!(
                        "expected Hello as the peer's first record, got {}",
                        other.kind_name()
                    ))))
                }
            }
        }
        let rec = if self.in_queues.len() == 2 {
            // Fabric side of the query protocol: [.ins, .qry].
            let query_ready = matches!(
                self.in_queues[1].front(),
                Some(Record::Query { inserts_sent, .. }) if *inserts_sent <= self.inserts_delivered
            );
            if query_ready {
                self.in_queues[1].pop_front()
            } else {
                self.in_queues[0].pop_front()
            }
        } else {
            self.in_queues[0].pop_front()
        };
        match rec {
            Some(Record::Hello { .. }) => {
                Err(self.fatal(ProtoError::Violation("second Hello from the peer".into())))
            }
            Some(Record::Insert { .. }) | Some(Record::InsertOp { .. }) => {
                self.inserts_delivered += 1;
                Ok(rec)
            }
            Some(Record::Arrival { .. }) => {
                self.arrivals_unterminated_recv += 1;
                Ok(rec)
            }
            Some(Record::ArrivalBatchEnd { count, .. }) => {
                let seen = std::mem::take(&mut self.arrivals_unterminated_recv);
                if count != seen {
                    return Err(self.fatal(ProtoError::Violation(format!(
                        "ArrivalBatchEnd count={count} but {seen} Arrivals preceded it"
                    ))));
                }
                Ok(rec)
            }
            other => Ok(other),
        }
    }
}

impl Drop for Channel {
    /// Best effort: ship what is still buffered (a Finish must not be lost
    /// because the caller forgot `flush`). Errors are ignored here.
    fn drop(&mut self) {
        if !self.failed {
            let _ = self.flush();
        }
    }
}
