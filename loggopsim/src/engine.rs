//! The LogGOPS engine (docs/model/loggops.md sections 4-6, 9, 10): a sans-I/O
//! discrete-event simulator over a [`Schedule`] and a [`Network`].
//!
//! Use: `Sim::new(schedule, params, network)`, then `run()` or repeated
//! `step()`, then `report()`.
//!
//! Deliberate differences from the reference (docs/model/loggops.md section 9), all
//! invisible on schedules the reference handles correctly:
//! - released operations are sorted by kind with a stable sort (9.1);
//! - dependencies carry time (9.2): a `requires` edge releases its dependent
//!   no earlier than the predecessor's CPU end (calc: t+d; eager send: its
//!   nexto; rendezvous send: the match time; receive matched by a message:
//!   the receiver's nexto after taking it in; receive matched from the UQ:
//!   `max(t, nexto[cpu])`), an `irequires` edge no earlier than its start;
//! - (s-1) is 0 for s = 0 (9.3);
//! - time arithmetic is checked (9.4): a result of 2^64-1 or more is
//!   [`SimError::TimeOverflow`] instead of the reference's silent wrap (our
//!   former saturation at 2^64-1, which is also the protocol's "never");
//! - a receive larger than S that matches an eager message from the UQ
//!   raises the sender's nexto/nextgs as the reference does, but does not
//!   complete the (already completed) send a second time;
//! - poll mode: once the network has said a message is there, the engine
//!   remembers it and does not query it again when the event is re-checked
//!   for a busy CPU/NIC.
//!
//! Performance devices that do not change the order of processing:
//! - roots are produced lazily host by host instead of being pushed;
//! - blocked events of one class (same kind of check on the same host, CPU
//!   and NIC) that sit at the same time are kept in a group with a single
//!   proxy in the heap, and moved together when provably nothing else runs
//!   between their checks (see `proxy`); this removes the quadratic
//!   re-insertion storm of all-to-all patterns. Tests compare it with
//!   literal re-insertion (`set_grouping(false)`).
//!
//! Notify mode (docs/protocol.md rule 3): message events are created
//! "at u64::MAX", i.e. kept in a handle-indexed map outside the heap; when
//! no finite event is left, `wait_arrivals(now)` is called and each reported
//! message enters the heap at its arrival time with its original seq.
//! As in the thesis, the engine processes every finite event before it asks
//! the network, so an arrival can be reported for a time earlier than
//! events already processed; such an event is then processed at its own
//! (earlier) time. Results equal LogGP's whenever no host has work beyond a
//! pending arrival (tests check the worked example, ltest and ringtest).
//!
//! Exact mode (protocol version 2, docs/protocol.md rule 3a; `wait_exact`):
//! while messages are waiting, an event runs only if its time is below the
//! network's grant (no unreported arrival before it); otherwise the engine
//! first asks the network with the event's time as its horizon. Each
//! insert at t lowers the grant to t + the network's minimum latency. A
//! message event enters the heap at max(arrival, t + o + L) with its
//! original seq: exactly where poll mode at 1 ps processes it. An arrival
//! for a time already passed is an error (`LateArrival`).
//!
//! Total order of events: (time, seq). `seq` is a global counter assigned
//! when an operation is first enqueued and when a message event is created;
//! a re-inserted event keeps its seq. The roots are not pushed into the heap:
//! they are all at time 0 with seq 0..R-1 in a known order, so the engine
//! merges a cursor over them with the heap (same order, much less memory).

use crate::hash::FastMap;
use crate::matching::{ExactRq, Indexes, MatchQueue};
use crate::network::{Handle, NetError, Network, SyncMode, Trigger};
use crate::noise::Noise;
use crate::schedule::{Kind, Schedule, ANY};
use crate::Time;
use ibnet::handles::HandleMap;
use std::collections::BinaryHeap;

/// LogGOPS parameters (all in the schedule's time unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Params {
    #[serde(rename = "L")]
    pub l: u64,
    pub o: u64,
    pub g: u64,
    #[serde(rename = "G")]
    pub big_g: u64,
    #[serde(rename = "O")]
    pub big_o: u64,
    #[serde(rename = "S")]
    pub s: u64,
    /// Section 10: per-message overhead for messages above `large_threshold`.
    pub o_large: Option<u64>,
    /// Section 10: per-byte overhead for messages above `large_threshold`.
    #[serde(rename = "O_large")]
    pub big_o_large: Option<u64>,
    /// Section 10: threshold for the second set (default: S).
    pub large_threshold: Option<u64>,
}

impl Default for Params {
    /// The reference's defaults (nanosecond flavour).
    fn default() -> Self {
        Params {
            l: 2500,
            o: 1500,
            g: 1000,
            big_g: 6,
            big_o: 0,
            s: 65535,
            o_large: None,
            big_o_large: None,
            large_threshold: None,
        }
    }
}

impl Params {
    /// (o, O) for a message of `size` bytes.
    #[inline]
    pub fn overheads(&self, size: u64) -> (u64, u64) {
        if (self.o_large.is_some() || self.big_o_large.is_some())
            && size > self.large_threshold.unwrap_or(self.s)
        {
            (
                self.o_large.unwrap_or(self.o),
                self.big_o_large.unwrap_or(self.big_o),
            )
        } else {
            (self.o, self.big_o)
        }
    }
}

/// Something the engine did, for `-v` and `-V` (see [`Tracer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    Calc {
        host: u32,
        cpu: u8,
        node: u32,
        start: u64,
        end: u64,
    },
    Send {
        host: u32,
        cpu: u8,
        node: u32,
        dst: u32,
        size: u64,
        tag: u32,
        start: u64,
        end: u64,
        handle: Handle,
    },
    /// A receive was posted into the RQ.
    RecvPosted {
        host: u32,
        cpu: u8,
        node: u32,
        src: u32,
        tag: u32,
        time: u64,
    },
    /// A receive matched a message already in the UQ.
    RecvMatched {
        host: u32,
        cpu: u8,
        node: u32,
        src: u32,
        tag: u32,
        /// the receive's size (it decides rendezvous)
        size: u64,
        time: u64,
    },
    /// A message was taken in by the receiver (CPU/NIC charged); `node` is
    /// the matched receive, or None when it went into the UQ.
    MsgReceived {
        host: u32,
        cpu: u8,
        src: u32,
        size: u64,
        tag: u32,
        sent: u64,
        arrived: u64,
        start: u64,
        end: u64,
        node: Option<u32>,
        /// the receiver's CPU (o) and NIC (g) availability before this
        /// message was charged (LogGOPSim's verbose `nexto`, `nextgr`)
        prev_o: u64,
        prev_gr: u64,
    },
    /// An event could not run and was re-inserted.
    Reinsert {
        host: u32,
        what: &'static str,
        from: u64,
        to: u64,
    },
    /// Notify mode: the engine waited for the network.
    Wait { now: u64, arrivals: usize },
    /// A one-sided operation (docs/rdma.md) reached a point: `what` is
    /// "put_start"/"get_start" (on the initiator, CPU busy `start..end`),
    /// "put_remote" (all data written at the target `host`),
    /// "put_local" (acknowledgement back at the initiator `host`),
    /// "get_done" (response written at the initiator `host`) or
    /// "poll_done" (a poll on the target `host` completed at `end`).
    OneSided {
        what: &'static str,
        host: u32,
        peer: u32,
        node: u32,
        size: u64,
        tag: u32,
        start: u64,
        end: u64,
    },
}

/// Receives [`TraceEvent`]s. `ACTIVE = false` removes all tracing code.
pub trait Tracer {
    const ACTIVE: bool = true;
    fn event(&mut self, e: &TraceEvent);
}

/// No tracing.
pub struct NoTrace;
impl Tracer for NoTrace {
    const ACTIVE: bool = false;
    #[inline]
    fn event(&mut self, _e: &TraceEvent) {}
}

impl<F: FnMut(&TraceEvent)> Tracer for F {
    fn event(&mut self, e: &TraceEvent) {
        self(e)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("network: {0}")]
    Net(#[from] NetError),
    #[error("network reported an arrival for unknown message handle {0}")]
    UnknownHandle(Handle),
    #[error("network reported no arrivals although {0} messages are in flight")]
    NoArrivals(usize),
    /// Exact notify (protocol version 2): an arrival reported for a time
    /// the engine has already passed. Impossible unless the network broke
    /// its grant; never just counted.
    #[error("network reported message {handle} arriving at {at} ps, but the scheduler had already processed events up to {now} ps under the network's grant (exact notify, protocol version 2)")]
    LateArrival { handle: Handle, at: u64, now: u64 },
    /// Exact notify: the network answered a wait with neither an arrival
    /// nor a grant beyond the horizon (it would never progress).
    #[error("network answered a wait at horizon {horizon} ps with no arrival and a grant of {grant} ps (must be later than the horizon)")]
    NoProgress { horizon: u64, grant: u64 },
    #[error("schedule too large ({0} ranks; the engine supports fewer than 2^31)")]
    TooLarge(u64),
    /// A time computation exceeded the range of simulated time (it used
    /// to saturate silently at 2^64-1, the protocol's "never").
    #[error(
        "time overflow on host {host} ({what} at time {at}): simulated time would reach \
         2^64-1 ps or more; check the schedule's calc durations and message sizes and the \
         -L/-o/-g/-G/-O parameters"
    )]
    TimeOverflow {
        host: u32,
        what: &'static str,
        at: u64,
    },
    /// Triggered inserts (protocol version 4): the network's reaction to
    /// an armed message differs from the engine's own. A bug on one side;
    /// never silently accepted.
    #[error("triggered insert: {0}")]
    Trigger(String),
}

#[path = "engine_one_sided.rs"]
mod one_sided;
pub use one_sided::OneSidedTimes;

#[path = "engine_triggers.rs"]
mod triggers;

const MSG_FLAG: u32 = 1 << 31;
/// In `Ev::host`: the event is a group proxy and `id` a group slot.
const PROXY: u32 = 1 << 31;

enum Outcome {
    Done,
    /// CPU/NIC busy until `avail`; `class` identifies the resources checked.
    Blocked {
        avail: u64,
        class: u64,
    },
}

/// Events blocked on the same resources with the same check: (kind, host, cpu, nic).
#[inline]
fn class_key(kind: u64, host: u32, cpu: u8, nic: u8) -> u64 {
    (kind << 48) | ((host as u64) << 16) | ((cpu as u64) << 8) | nic as u64
}

fn class_name(class: u64) -> &'static str {
    match class >> 48 {
        0 => "calc",
        1 => "send",
        _ => "msg",
    }
}

/// Blocked events of one class that all sit at the same time `time`,
/// sorted by seq; one proxy entry (time, first seq) stands for them in the
/// active queue.
struct Group {
    key: u64,
    host: u32,
    time: u64,
    members: std::collections::VecDeque<(u64, u32)>,
    /// the proxy entry currently valid
    proxy: Option<(u64, u64)>,
}

/// Active-queue entry; `id` is a node id, or a message slot with `MSG_FLAG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ev {
    time: u64,
    seq: u64,
    host: u32,
    id: u32,
}

impl Ord for Ev {
    #[inline]
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // reversed: BinaryHeap is a max-heap
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Ev {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// The active queue: events by (time, seq), smallest first.
///
/// Most events are pushed in increasing order: a released operation or a
/// new message gets a fresh (largest) seq, and its time is usually the
/// current time or later. Such an event goes to the back of a FIFO `lane`
/// (O(1)) whenever its key is not below the lane's last one, so the lane
/// stays sorted; any other event (a re-inserted one keeps its old seq, an
/// arrival may be earlier than the lane's tail) goes to the binary heap.
/// The next event is the smaller of the two heads, so the order is exactly
/// the heap-only order: keys are unique (a seq belongs to one event; a
/// group proxy carries the seq of a member that is not queued itself),
/// except for identical copies of a stale proxy, whose relative order
/// cannot matter.
#[derive(Default)]
struct EventQueue {
    /// the lane's events are `lane[head..]`; a plain vector with a head
    /// index is cheaper than a ring buffer (emptied when the head reaches
    /// the end, compacted when the consumed prefix is the larger half)
    lane: Vec<Ev>,
    head: usize,
    heap: BinaryHeap<Ev>,
}

impl EventQueue {
    #[inline]
    fn push(&mut self, e: Ev) {
        match self.lane.last() {
            Some(b) if (e.time, e.seq) < (b.time, b.seq) => self.heap.push(e),
            _ => self.lane.push(e),
        }
    }

    #[inline]
    fn peek(&self) -> Option<&Ev> {
        match (self.lane.get(self.head), self.heap.peek()) {
            (Some(l), Some(h)) => Some(if (h.time, h.seq) < (l.time, l.seq) {
                h
            } else {
                l
            }),
            (l, None) => l,
            (None, h) => h,
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Ev> {
        match (self.lane.get(self.head), self.heap.peek()) {
            (Some(l), Some(h)) if (h.time, h.seq) < (l.time, l.seq) => self.heap.pop(),
            (Some(&l), _) => {
                self.head += 1;
                if self.head == self.lane.len() {
                    self.lane.clear();
                    self.head = 0;
                } else if self.head >= 1024 && 2 * self.head >= self.lane.len() {
                    self.lane.drain(..self.head);
                    self.head = 0;
                }
                Some(l)
            }
            (None, _) => self.heap.pop(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    /// what this message is (parts of one-sided operations too)
    role: one_sided::Role,
    src: u32,
    dst: u32,
    send_node: u32,
    tag: u32,
    size: u64,
    start: u64,
    handle: Handle,
    /// earliest arrival the network confirmed (valid when `arrived`)
    arrival: u64,
    /// seq of the message's arrival event (the engine's insertion order
    /// when the message was tracked; used in notify and exact modes)
    seq: u64,
    cpu: u8,
    nic: u8,
    arrived: bool,
    /// the send operation has completed (eager, or rendezvous matched)
    send_done: bool,
}

/// An unmatched queue entry at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Pending {
    /// source rank, or -1 for any-source
    pub src: i64,
    /// tag, or -1 for any-tag
    pub tag: i64,
    #[serde(rename = "size_bytes")]
    pub size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HostLeftovers {
    pub host: u32,
    /// posted receives never matched (RQ)
    pub receives: Vec<Pending>,
    /// messages never received (UQ)
    pub unexpected: Vec<Pending>,
}

/// Result of a run, from which the binary prints text or JSON.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub num_hosts: u32,
    pub num_cpus: u32,
    pub num_nics: u32,
    /// Per host: max over its CPUs of nexto (NIC times excluded).
    pub finish_times: Vec<u64>,
    /// Distinct enqueued operations plus messages (re-insertions not counted).
    pub events: u64,
    /// Events processed including re-insertions.
    pub processed: u64,
    /// Time of the last processed event.
    pub end_time: u64,
    /// Hosts with non-empty RQ or UQ.
    pub leftovers: Vec<HostLeftovers>,
    /// Operations that never completed (includes unmatched ones).
    pub incomplete_ops: u64,
    /// Per host: largest RQ and UQ lengths seen.
    pub max_rq: Vec<u64>,
    pub max_uq: Vec<u64>,
    pub network_stats: Vec<(String, u64)>,
    /// Wall clock: how long the scheduler waited for a fabric in another
    /// process or thread (None for the other backends).
    pub waited_for_network: Option<std::time::Duration>,
}

impl Report {
    /// Host with the largest finish time (the first one on ties) and that time.
    pub fn max_finish(&self) -> (u32, u64) {
        let mut best = (0u32, 0u64);
        for (h, &t) in self.finish_times.iter().enumerate() {
            if t > best.1 {
                best = (h as u32, t);
            }
        }
        best
    }
    /// No leftovers and every operation completed.
    pub fn ok(&self) -> bool {
        self.leftovers.is_empty() && self.incomplete_ops == 0
    }
}

/// Checked time arithmetic: the largest valid time is 2^64-2 (2^64-1 is
/// the protocol's "never"). `None` means overflow.
#[inline]
fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match a?.checked_add(b?) {
        Some(u64::MAX) | None => None,
        v => v,
    }
}
#[inline]
fn mul(a: u64, b: u64) -> Option<u64> {
    a.checked_mul(b)
}
#[inline]
fn v(a: u64) -> Option<u64> {
    Some(a)
}
#[inline]
fn overflow(host: u32, what: &'static str, at: u64) -> SimError {
    SimError::TimeOverflow { host, what, at }
}

pub struct Sim<N: Network, T: Tracer = NoTrace> {
    /// (its dependency counters are counted down by the run)
    sched: Schedule,
    /// max ready time of nodes with some (not all) predecessors released
    /// (section 9.2), by node, 0 = none yet (a ready time is never below
    /// 0, so 0 is the identity of the max); empty when no node has more
    /// than one predecessor. A vector, not a map: on a collective's sends
    /// (two predecessors each) the map's lookups were cache misses on
    /// every release; zeroed by the allocator, so only the
    /// pages of nodes that wait on several predecessors are ever touched.
    partial: Vec<u64>,
    params: Params,
    net: N,
    mode: SyncMode,
    tracer: T,
    noise: Option<Noise>,
    ncpu: usize,
    nnic: usize,
    nexto: Vec<u64>,
    nextgs: Vec<u64>,
    nextgr: Vec<u64>,
    /// receive queues: `rq_exact` (+ `link`) when the schedule has no
    /// wildcards, else the general `rq`
    rq: Vec<MatchQueue>,
    rq_exact: Vec<ExactRq>,
    /// where the source starts in a receive key: the tag bits when
    /// (source, tag) is packed into 32 bits, else 32
    key_shift: u32,
    link: Vec<u32>,
    uq: Vec<MatchQueue>,
    heap: EventQueue,
    /// roots are produced host by host (see `peek_root`): the current
    /// host's roots, sorted by kind, and the seq of the first of them
    roots: Vec<u32>,
    root_pos: usize,
    root_host: u32,
    root_seq0: u64,
    roots_total: u64,
    roots_started: bool,
    msgs: Vec<Msg>,
    msg_free: Vec<u32>,
    /// notify mode: messages waiting for the network, by handle -> slot
    /// (the arrival event's seq is in the slot: `Msg::seq`); handles are
    /// numbered in insert order by the coupling, so a window, not a hash
    waiting: HandleMap,
    /// notify mode: arrivals reported for a time before `now` (the engine
    /// had already processed later events: the protocol's run-ahead, see
    /// `wait_network`), and the largest such lag.
    late_arrivals: u64,
    /// exact mode: no unreported arrival before this time (the network's
    /// grant, lowered by each insert to t + `min_lat`)
    granted: u64,
    min_lat: u64,
    /// Hand a message to the network after the sender's overhead o
    /// (t + o, the thesis's chapter-4 integration) instead of at the start
    /// of the send (t, chapter 5 and the default).
    insert_after_o: bool,
    /// exact mode: waits that returned a grant only / arrivals
    exact_grants: u64,
    max_arrival_lag: u64,
    seq: u64,
    events: u64,
    processed: u64,
    completed: u64,
    now: u64,
    released: Vec<(u32, u32, u64)>,
    /// scratch space of `prefetch_batch`
    scratch: Vec<u32>,
    /// one-sided operations: remote completions not yet polled and polls
    /// waiting for a put
    rdma: one_sided::State,
    groups: Vec<Group>,
    group_of: FastMap<u64, u32>,
    group_free: Vec<u32>,
    grouping: bool,
    done: bool,
    /// triggered inserts (protocol version 4, `engine_triggers.rs`)
    trig: triggers::Triggers,
}

impl<N: Network> Sim<N, NoTrace> {
    pub fn new(sched: Schedule, params: Params, net: N) -> Result<Self, SimError> {
        Sim::with_tracer(sched, params, net, NoTrace)
    }
}

impl<N: Network, T: Tracer> Sim<N, T> {
    pub fn with_tracer(
        sched: Schedule,
        params: Params,
        net: N,
        tracer: T,
    ) -> Result<Self, SimError> {
        if sched.num_ranks() >= PROXY {
            return Err(SimError::TooLarge(sched.num_ranks() as u64));
        }
        let p = sched.num_ranks() as usize;
        let ncpu = sched.num_cpus() as usize;
        let nnic = sched.num_nics() as usize;
        let w = sched.wildcard_use();
        // RQ is searched by messages (exact source, tag maybe any);
        // UQ by receives (source and tag maybe any).
        let rq_ix = Indexes {
            by_tag: false,
            by_src: w.send_any_tag,
            all: false,
        };
        let uq_ix = Indexes {
            by_tag: w.recv_any_src,
            by_src: w.recv_any_tag,
            all: w.recv_any_src && w.recv_any_tag,
        };
        let (mut roots_total, mut multi) = (0u64, false);
        for n in 0..sched.num_nodes() {
            let c = sched.depcount(n);
            roots_total += (c == 0) as u64;
            multi |= c > 1;
        }
        let partial = if multi {
            vec![0; sched.num_nodes() as usize]
        } else {
            Vec::new()
        };
        let seq = roots_total;
        let exact = !(w.recv_any_src || w.recv_any_tag || w.send_any_tag);
        // pack (src, tag) into 32 bits when both fit
        let src_bits = 32 - (p as u32).saturating_sub(1).leading_zeros();
        let tag_bits = 32 - sched.max_tag().leading_zeros();
        let key_bits = (src_bits + tag_bits <= 32).then_some(tag_bits);
        if sched.uses_one_sided() {
            // refuse a backend that cannot carry put/get up front
            net.check_one_sided()?;
        }
        let mode = net.mode();
        let min_lat = net.min_latency().0.max(1);
        let trig_on = mode == SyncMode::Exact && net.triggers() && exact && !sched.uses_one_sided();
        Ok(Sim {
            trig: triggers::Triggers::new(trig_on, &sched),
            partial,
            params,
            net,
            mode,
            tracer,
            noise: None,
            ncpu,
            nnic,
            nexto: vec![0; p * ncpu],
            nextgs: vec![0; p * nnic],
            nextgr: vec![0; p * nnic],
            rq: if exact {
                Vec::new()
            } else {
                (0..p).map(|_| MatchQueue::new(rq_ix)).collect()
            },
            rq_exact: if exact {
                vec![ExactRq::new(key_bits.is_some()); p]
            } else {
                Vec::new()
            },
            key_shift: key_bits.unwrap_or(32),
            link: if exact {
                vec![0; sched.num_nodes() as usize]
            } else {
                Vec::new()
            },
            uq: (0..p).map(|_| MatchQueue::new(uq_ix)).collect(),
            heap: EventQueue::default(),
            events: roots_total,
            roots: Vec::new(),
            root_pos: 0,
            root_host: 0,
            root_seq0: 0,
            roots_total,
            roots_started: false,
            msgs: Vec::new(),
            msg_free: Vec::new(),
            waiting: HandleMap::default(),
            late_arrivals: 0,
            granted: u64::MAX,
            min_lat,
            insert_after_o: false,
            exact_grants: 0,
            max_arrival_lag: 0,
            seq,
            processed: 0,
            completed: 0,
            now: 0,
            released: Vec::new(),
            scratch: Vec::new(),
            rdma: one_sided::State::default(),
            groups: Vec::new(),
            group_of: FastMap::default(),
            group_free: Vec::new(),
            grouping: true,
            done: false,
            sched,
        })
    }

    /// Turns the grouping of blocked events off (every blocked event is then
    /// re-inserted on its own, literally as the reference does). Results are
    /// identical either way; this exists to test that.
    pub fn set_grouping(&mut self, on: bool) {
        self.grouping = on;
    }

    /// Adds CPU noise (only used when set).
    pub fn set_noise(&mut self, noise: Noise) {
        self.noise = Some(noise);
    }
    /// `--insert-at after-o`: insert each message into the network at
    /// t + o instead of t (see the field's docs). Every backend accepts
    /// future insert times; the exact protocol's grant uses the insert time.
    pub fn set_insert_after_o(&mut self, on: bool) {
        self.insert_after_o = on;
    }
    pub fn params(&self) -> &Params {
        &self.params
    }
    pub fn network(&self) -> &N {
        &self.net
    }
    pub fn network_mut(&mut self) -> &mut N {
        &mut self.net
    }
    pub fn tracer_mut(&mut self) -> &mut T {
        &mut self.tracer
    }
    /// Distinct events so far.
    pub fn events(&self) -> u64 {
        self.events
    }
    pub fn processed(&self) -> u64 {
        self.processed
    }
    /// Current simulated time (time of the last processed event).
    pub fn now(&self) -> Time {
        Time(self.now)
    }
    pub fn is_done(&self) -> bool {
        self.done
    }
    /// Operations in the schedule.
    pub fn schedule_ops(&self) -> u64 {
        self.sched.num_nodes() as u64
    }
    /// Ranks in the schedule.
    pub fn schedule_ranks(&self) -> u32 {
        self.sched.num_ranks()
    }

    /// Runs to the end.
    pub fn run(&mut self) -> Result<(), SimError> {
        while self.step()?.is_some() {}
        Ok(())
    }

    /// Processes one event; returns its time, or None when the run is over
    /// (after calling the network's `finish`).
    pub fn step(&mut self) -> Result<Option<Time>, SimError> {
        if self.done {
            return Ok(None);
        }
        let ev = loop {
            let root = self.peek_root();
            if self.mode == SyncMode::Exact && !self.waiting.is_empty() {
                // Exact notify: the next event may run only below the grant.
                let next = match (root, self.heap.peek()) {
                    (Some(r), Some(h)) => r.time.min(h.time),
                    (Some(r), None) => r.time,
                    (None, Some(h)) => h.time,
                    (None, None) => u64::MAX,
                };
                if next >= self.granted {
                    self.wait_exact(next)?;
                    continue;
                }
            }
            match root {
                Some(r) => match self.heap.peek() {
                    Some(h) if (h.time, h.seq) < (r.time, r.seq) => {
                        break self.heap.pop().unwrap();
                    }
                    _ => {
                        self.root_pos += 1;
                        break r;
                    }
                },
                None => match self.heap.pop() {
                    Some(e) => break e,
                    None => {
                        if self.waiting.is_empty() {
                            self.done = true;
                            self.net.finish(Time(self.now))?;
                            return Ok(None);
                        }
                        self.wait_network()?;
                    }
                },
            }
        };
        self.prefetch_next();
        if ev.host & PROXY != 0 {
            self.proxy(ev)?;
        } else {
            self.processed += 1;
            self.now = self.now.max(ev.time);
            match self.dispatch(ev)? {
                Outcome::Blocked { avail, class } => {
                    if self.grouping {
                        self.join_group(class, avail, ev);
                    } else {
                        self.reinsert(ev, avail, class_name(class));
                    }
                }
                Outcome::Done => {
                    if self.trig.on {
                        self.trig.live[ev.host as usize] -= 1;
                    }
                }
            }
        }
        if !self.released.is_empty() {
            self.enqueue_released();
        }
        Ok(Some(Time(ev.time)))
    }

    /// If the next event is a message, start loading the receive-queue slot
    /// it will look up (a cache miss otherwise paid in full).
    #[inline]
    fn prefetch_next(&self) {
        if let Some(n) = self.heap.peek() {
            if n.host & PROXY != 0 {
                return;
            }
            if n.id & MSG_FLAG != 0 && self.rq.is_empty() {
                let m = &self.msgs[(n.id & !MSG_FLAG) as usize];
                self.rq_exact[n.host as usize].prefetch(self.rq_key(m.src, m.tag));
            }
        }
    }

    #[inline]
    fn dispatch(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        if ev.id & MSG_FLAG != 0 {
            self.message(ev)
        } else {
            Ok(match self.sched.kind(ev.id) {
                Kind::Calc => self.calc(ev)?,
                Kind::Send => self.send(ev)?,
                Kind::Recv => self.recv(ev),
                Kind::Put | Kind::Get => self.one_sided_start(ev)?,
                Kind::Poll => self.poll(ev),
            })
        }
    }

    /// (time, seq) of the next event other than a group proxy being processed.
    #[inline]
    fn next_other(&mut self) -> (u64, u64) {
        let h = self
            .heap
            .peek()
            .map(|e| (e.time, e.seq))
            .unwrap_or((u64::MAX, u64::MAX));
        match self.peek_root() {
            Some(r) => h.min((r.time, r.seq)),
            None => h,
        }
    }

    /// The next root event, if any. Roots are all at time 0 with seq
    /// 0..R-1 (host by host, each host's sorted by kind), and no root can
    /// be overtaken by a released event (those get larger seqs, and message
    /// events are never before time 0), so they are produced lazily, one
    /// host at a time, instead of being pushed into the heap. A host's
    /// dependency counters are untouched until its first root is processed
    /// (only that host's or later events can change them), so "counter is
    /// 0" still means "root" when the host is reached.
    #[inline]
    fn peek_root(&mut self) -> Option<Ev> {
        if self.root_seq0 + self.root_pos as u64 >= self.roots_total {
            return None;
        }
        if self.root_pos >= self.roots.len() {
            self.next_root_host();
        }
        Some(Ev {
            time: 0,
            seq: self.root_seq0 + self.root_pos as u64,
            host: self.root_host,
            id: self.roots[self.root_pos],
        })
    }

    /// Loads the roots of the next host that has any (once per host, so
    /// kept out of the per-event path).
    #[inline(never)]
    fn next_root_host(&mut self) {
        while self.root_pos >= self.roots.len() {
            self.root_seq0 += self.roots.len() as u64;
            self.roots.clear();
            self.root_pos = 0;
            if !self.roots_started {
                self.roots_started = true;
            } else {
                self.root_host += 1;
            }
            let h = self.root_host;
            let sched = &self.sched;
            // a stable sort by kind, only when needed: schedules often
            // list them in that order already, which this pass finds out
            let mut last = 0;
            let mut sorted = true;
            for n in sched.rank_nodes(h) {
                if sched.depcount(n) == 0 {
                    let o = sched.kind(n).order();
                    sorted &= o >= last;
                    last = o;
                    self.roots.push(n);
                }
            }
            if !sorted {
                self.roots.sort_by_key(|&n| sched.kind(n).order());
            }
        }
    }

    /// A blocked event waits for `avail`. The reference re-inserts it at
    /// `avail`; we add it to its class group when the group sits at that
    /// very time (same position in the total order), else re-insert it.
    fn join_group(&mut self, class: u64, avail: u64, ev: Ev) {
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Reinsert {
                host: ev.host,
                what: class_name(class),
                from: ev.time,
                to: avail,
            });
        }
        match self.group_of.get(&class) {
            Some(&gi) => {
                let g = &mut self.groups[gi as usize];
                if g.time != avail {
                    self.heap.push(Ev { time: avail, ..ev });
                    return;
                }
                let pos = g.members.partition_point(|m| m.0 < ev.seq);
                g.members.insert(pos, (ev.seq, ev.id));
                if pos == 0 {
                    g.proxy = Some((avail, ev.seq));
                    self.heap.push(Ev {
                        time: avail,
                        seq: ev.seq,
                        host: PROXY,
                        id: gi,
                    });
                }
            }
            None => {
                let g = Group {
                    key: class,
                    host: ev.host,
                    time: avail,
                    members: std::collections::VecDeque::from([(ev.seq, ev.id)]),
                    proxy: Some((avail, ev.seq)),
                };
                let gi = match self.group_free.pop() {
                    Some(i) => {
                        self.groups[i as usize] = g;
                        i
                    }
                    None => {
                        self.groups.push(g);
                        self.groups.len() as u32 - 1
                    }
                };
                self.group_of.insert(class, gi);
                self.heap.push(Ev {
                    time: avail,
                    seq: ev.seq,
                    host: PROXY,
                    id: gi,
                });
            }
        }
    }

    /// A group proxy popped: its head member is checked at the group's time.
    /// If it is blocked, every member that the reference would check before
    /// any other event (same time, seq below the next other event) would be
    /// blocked with the same availability (a blocked check changes nothing),
    /// so they all move to that time at once.
    fn proxy(&mut self, ev: Ev) -> Result<(), SimError> {
        let gi = ev.id;
        {
            let g = &mut self.groups[gi as usize];
            if g.proxy != Some((ev.time, ev.seq)) || g.members.is_empty() {
                return Ok(()); // stale proxy
            }
            g.proxy = None;
        }
        let (seq, id) = self.groups[gi as usize].members[0];
        let host = self.groups[gi as usize].host;
        let mev = Ev {
            time: ev.time,
            seq,
            host,
            id,
        };
        self.processed += 1;
        self.now = self.now.max(ev.time);
        match self.dispatch(mev)? {
            Outcome::Done => {
                if self.trig.on {
                    self.trig.live[host as usize] -= 1;
                }
                let g = &mut self.groups[gi as usize];
                g.members.pop_front();
                if let Some(&(s, _)) = g.members.front() {
                    g.proxy = Some((g.time, s));
                    let t = g.time;
                    self.heap.push(Ev {
                        time: t,
                        seq: s,
                        host: PROXY,
                        id: gi,
                    });
                } else {
                    let key = g.key;
                    self.group_of.remove(&key);
                    self.group_free.push(gi);
                }
            }
            Outcome::Blocked { avail, class } => {
                debug_assert!(avail > ev.time);
                let other = self.next_other();
                let t = ev.time;
                let g = &mut self.groups[gi as usize];
                let last = g.members.back().unwrap().0;
                let k = if (t, last) < other {
                    g.members.len()
                } else {
                    // at least the head, which was checked (guards against equal keys)
                    g.members.partition_point(|m| (t, m.0) < other).max(1)
                };
                if T::ACTIVE {
                    for i in 0..k {
                        let s = self.groups[gi as usize].members[i].0;
                        let _ = s;
                        self.tracer.event(&TraceEvent::Reinsert {
                            host,
                            what: class_name(class),
                            from: t,
                            to: avail,
                        });
                    }
                }
                let g = &mut self.groups[gi as usize];
                if k == g.members.len() {
                    g.time = avail;
                    g.proxy = Some((avail, seq));
                    self.heap.push(Ev {
                        time: avail,
                        seq,
                        host: PROXY,
                        id: gi,
                    });
                } else {
                    // only a prefix is checked before some other event: those
                    // are re-inserted one by one, the rest stays at `t`
                    for _ in 0..k {
                        let (s, id) = g.members.pop_front().unwrap();
                        self.heap.push(Ev {
                            time: avail,
                            seq: s,
                            host,
                            id,
                        });
                    }
                    let s = g.members[0].0;
                    g.proxy = Some((t, s));
                    self.heap.push(Ev {
                        time: t,
                        seq: s,
                        host: PROXY,
                        id: gi,
                    });
                }
            }
        }
        Ok(())
    }

    /// Exact notify (docs/protocol.md rule 3a): the next event is at `horizon`
    /// (u64::MAX: none) and not below the grant: ask the network for the
    /// arrivals up to the horizon, or a grant beyond it. A message event
    /// enters the heap at max(arrival, t + o + L), where poll mode would
    /// first look at it, with its original seq, so both modes process the
    /// same events in the same order.
    fn wait_exact(&mut self, horizon: u64) -> Result<(), SimError> {
        if self.trig.on {
            self.arm_candidates()?;
        }
        let ans = self.net.wait_exact(Time(self.now), Time(horizon))?;
        for &(h, t_ins, new) in &ans.fired {
            self.trig_fired(h, t_ins, new)?;
        }
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Wait {
                now: self.now,
                arrivals: ans.arrivals.len(),
            });
        }
        if ans.arrivals.is_empty() {
            if horizon == u64::MAX {
                return Err(SimError::NoArrivals(self.waiting.len()));
            }
            if ans.grant.0 <= horizon {
                return Err(SimError::NoProgress {
                    horizon,
                    grant: ans.grant.0,
                });
            }
            self.exact_grants += 1;
        }
        if ans.arrivals.len() > 1 {
            self.prefetch_batch(&ans.arrivals);
        }
        for (h, t) in ans.arrivals {
            if self.processed > 0 && t.0 <= self.now {
                return Err(SimError::LateArrival {
                    handle: h,
                    at: t.0,
                    now: self.now,
                });
            }
            if self.trig.on && !self.waiting.contains_key(&h) && ans.fired.iter().any(|f| f.2 == h)
            {
                // a message the network inserted for a trigger, which the
                // engine will insert itself when it reaches the reaction
                self.trig.early.insert(h, t.0);
                continue;
            }
            self.arrive(h, t)?;
        }
        self.granted = ans.grant.0;
        Ok(())
    }

    /// A batch of arrivals is processed right after it is received, and
    /// each of its messages then waits on a chain of cache misses that the
    /// fabric's work since the last batch has caused: its waiting entry and
    /// message, the receive-queue slot it matches, the matched receive's
    /// record and its dependents (in one-piece mode about a third of the
    /// scheduler's time on the 648-rank dissemination went to the last two
    /// alone, `perf`). Each step of the chain needs the one before, but the
    /// chains of different messages are independent: loading step k of
    /// every message before step k+1 of any lets their misses overlap.
    /// Only loads; nothing changes (results are identical).
    fn prefetch_batch(&mut self, arrivals: &[(Handle, Time)]) {
        if !self.rq.is_empty() {
            return;
        }
        let msgs = self.msgs.as_ptr();
        let mut slots = std::mem::take(&mut self.scratch);
        slots.clear();
        for &(h, _) in arrivals {
            if let Some(slot) = self.waiting.get(&h) {
                ibnet::prefetch::line(msgs.wrapping_add(slot as usize));
                slots.push(slot as u32);
            }
        }
        for s in slots.iter_mut() {
            let m = &self.msgs[*s as usize];
            if m.role != one_sided::Role::Data {
                *s = u32::MAX;
                continue;
            }
            self.rq_exact[m.dst as usize].prefetch(self.rq_key(m.src, m.tag));
        }
        for s in slots.iter_mut() {
            if *s == u32::MAX {
                continue;
            }
            let m = &self.msgs[*s as usize];
            let sched = &self.sched;
            *s = match self.rq_exact[m.dst as usize].peek(
                self.rq_key(m.src, m.tag),
                &self.link,
                |n| sched.match_key(n),
            ) {
                Some(node) => {
                    sched.prefetch_node(node);
                    node
                }
                None => u32::MAX,
            };
        }
        for &node in &slots {
            if node != u32::MAX {
                self.sched.prefetch_edges(node);
            }
        }
        self.scratch = slots;
    }

    /// Exact mode: the network reported message `h` as arrived at `t`.
    fn arrive(&mut self, h: Handle, t: Time) -> Result<(), SimError> {
        let slot = self.waiting.remove(&h).ok_or(SimError::UnknownHandle(h))? as u32;
        let m = &mut self.msgs[slot as usize];
        let seq = m.seq;
        let at = t.0.max(m.arrival);
        m.arrived = true;
        m.arrival = t.0;
        let dst = m.dst;
        self.heap.push(Ev {
            time: at,
            seq,
            host: dst,
            id: slot | MSG_FLAG,
        });
        if self.trig.on {
            self.trig.live[dst as usize] += 1;
            self.trig_arrived(dst, h);
        }
        Ok(())
    }

    fn wait_network(&mut self) -> Result<(), SimError> {
        let batch = self.net.wait_arrivals(Time(self.now))?;
        if batch.is_empty() {
            return Err(SimError::NoArrivals(self.waiting.len()));
        }
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Wait {
                now: self.now,
                arrivals: batch.len(),
            });
        }
        for (h, t) in batch {
            // The notify protocol (docs/protocol.md rule 3, as in the thesis)
            // asks the fabric only when no finite event is left, so events
            // later than a message's arrival may already have run. With one
            // CPU per host and zero gaps that cannot change a result (a busy
            // CPU defers the message either way), but with several CPUs or
            // g > o it can. Count it so the user is told.
            if t.0 < self.now {
                self.late_arrivals += 1;
                self.max_arrival_lag = self.max_arrival_lag.max(self.now - t.0);
            }
            let slot = self.waiting.remove(&h).ok_or(SimError::UnknownHandle(h))? as u32;
            let m = &mut self.msgs[slot as usize];
            let seq = m.seq;
            m.arrived = true;
            m.arrival = t.0;
            self.heap.push(Ev {
                time: t.0,
                seq,
                host: m.dst,
                id: slot | MSG_FLAG,
            });
        }
        Ok(())
    }

    #[inline]
    fn noise(&self, host: u32, start: u64, len: u64) -> u64 {
        match &self.noise {
            Some(n) => n.extra(host, start, len),
            None => 0,
        }
    }

    #[inline]
    fn reinsert(&mut self, ev: Ev, to: u64, what: &'static str) {
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Reinsert {
                host: ev.host,
                what,
                from: ev.time,
                to,
            });
        }
        self.heap.push(Ev { time: to, ..ev });
    }

    /// Marks `node` (on `host`) started at `t`: releases its irequires dependents.
    #[inline]
    fn start_op(&mut self, node: u32, host: u32, t: u64) {
        let (a, b) = self.edge_range(node);
        for i in a..b {
            let e = self.sched.edge_at(i);
            if e & crate::schedule::EDGE_START != 0 {
                self.release(e & !crate::schedule::EDGE_START, host, t);
            }
        }
    }

    /// Marks `node` completed; its requires dependents may start no earlier than `ready`.
    #[inline]
    fn complete_op(&mut self, node: u32, host: u32, ready: u64) {
        self.completed += 1;
        let (a, b) = self.edge_range(node);
        for i in a..b {
            let e = self.sched.edge_at(i);
            if e & crate::schedule::EDGE_START == 0 {
                self.release(e, host, ready);
            }
        }
    }

    #[inline]
    fn edge_range(&self, node: u32) -> (usize, usize) {
        self.sched.edge_bounds(node)
    }

    #[inline]
    fn release(&mut self, d: u32, host: u32, ready: u64) {
        debug_assert!(self.sched.depcount(d) > 0);
        if self.sched.satisfy_one(d) == 0 {
            let mut r = ready;
            if let Some(p) = self.partial.get_mut(d as usize) {
                r = r.max(std::mem::take(p));
            }
            self.released.push((host, d, r));
        } else {
            // (`partial` exists: this node has several predecessors)
            let e = &mut self.partial[d as usize];
            *e = (*e).max(ready);
        }
    }

    fn enqueue_released(&mut self) {
        let mut rel = std::mem::take(&mut self.released);
        if rel.len() > 1 {
            let sched = &self.sched;
            rel.sort_by_key(|&(h, n, _)| (h, sched.kind(n).order()));
        }
        for &(h, n, ready) in &rel {
            // (its record is loaded, but the next one, where its
            // dependents end, and the dependents themselves usually are
            // not: they are needed when it runs, after the events already
            // queued at this time; see `prefetch_batch`)
            self.sched.prefetch_node(n);
            self.sched.prefetch_edges(n);
            let op = self.sched.op(n);
            if op.kind == Kind::Send {
                self.net.prefetch_insert(h, op.peer);
            }
            let ci = h as usize * self.ncpu + op.cpu as usize;
            let mut t = self.nexto[ci].max(ready);
            if op.kind.uses_send_nic() {
                t = t.max(self.nextgs[h as usize * self.nnic + op.nic as usize]);
            }
            self.heap.push(Ev {
                time: t,
                seq: self.seq,
                host: h,
                id: n,
            });
            self.seq += 1;
            self.events += 1;
            if self.trig.on {
                self.trig.live[h as usize] += 1;
            }
        }
        rel.clear();
        self.released = rel;
    }

    fn calc(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        let op = self.sched.op(ev.id);
        let ci = ev.host as usize * self.ncpu + op.cpu as usize;
        let t = ev.time;
        if self.nexto[ci] <= t {
            let end = add(add(v(t), v(op.size)), v(self.noise(ev.host, t, op.size)))
                .ok_or_else(|| overflow(ev.host, "calc", t))?;
            self.nexto[ci] = end;
            if T::ACTIVE {
                self.tracer.event(&TraceEvent::Calc {
                    host: ev.host,
                    cpu: op.cpu,
                    node: ev.id,
                    start: t,
                    end,
                });
            }
            self.start_op(ev.id, ev.host, t);
            self.complete_op(ev.id, ev.host, end);
            Ok(Outcome::Done)
        } else {
            Ok(Outcome::Blocked {
                avail: self.nexto[ci],
                class: class_key(0, ev.host, op.cpu, 0),
            })
        }
    }

    /// A send (or put/get) may start at `ev.time` only when its CPU (o)
    /// and its NIC (g, G) are free: else it blocks, in the send class of
    /// that CPU and NIC, until the later of the two.
    #[inline]
    fn cpu_nic_busy(&self, ev: Ev, op: &crate::schedule::Op) -> Option<Outcome> {
        let h = ev.host as usize;
        let avail = self.nexto[h * self.ncpu + op.cpu as usize]
            .max(self.nextgs[h * self.nnic + op.nic as usize]);
        (avail > ev.time).then(|| Outcome::Blocked {
            avail,
            class: class_key(1, ev.host, op.cpu, op.nic),
        })
    }

    fn send(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        let op = self.sched.op(ev.id);
        let h = ev.host as usize;
        let ci = h * self.ncpu + op.cpu as usize;
        let ni = h * self.nnic + op.nic as usize;
        let t = ev.time;
        if let Some(blocked) = self.cpu_nic_busy(ev, &op) {
            return Ok(blocked);
        }
        self.start_op(ev.id, ev.host, t);
        let p = &self.params;
        let (o, big_o) = p.overheads(op.size);
        let s1 = op.size.saturating_sub(1); // section 9.3: (s-1) is 0 for s = 0
        let ovf = || overflow(ev.host, "send", t);
        let cpu_work = add(v(o), mul(s1, big_o)).ok_or_else(ovf)?;
        let end =
            add(add(v(t), v(cpu_work)), v(self.noise(ev.host, t, cpu_work))).ok_or_else(ovf)?;
        let gs = add(add(v(t), v(p.g)), mul(s1, p.big_g)).ok_or_else(ovf)?;
        let msg_time = add(add(v(t), v(o)), v(p.l)).ok_or_else(ovf)?;
        self.nexto[ci] = end;
        self.nextgs[ni] = gs;
        // when the network gets the message: the start of the send, or
        // after the sender's overhead o (--insert-at after-o)
        let t_ins = if self.insert_after_o {
            add(v(t), v(o)).ok_or_else(ovf)?
        } else {
            t
        };
        // version 4: the network may have made this insert already
        let prefired = if self.trig.on {
            self.take_prefired(ev.host, t_ins, op.peer, op.size)?
        } else {
            None
        };
        let handle = match prefired {
            Some(h) => h,
            None => self
                .net
                .insert(Time(t_ins), ev.host, op.peer, op.size, op.tag)?,
        };
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Send {
                host: ev.host,
                cpu: op.cpu,
                node: ev.id,
                dst: op.peer,
                size: op.size,
                tag: op.tag,
                start: t,
                end,
                handle,
            });
        }
        let eager = op.size <= self.params.s;
        let m = Msg {
            role: one_sided::Role::Data,
            src: ev.host,
            dst: op.peer,
            send_node: ev.id,
            tag: op.tag,
            size: op.size,
            start: t,
            handle,
            // exact mode: the earliest time the message event may run
            // (t + o + L, as in poll mode) until the arrival is known
            arrival: if self.mode == SyncMode::Exact {
                msg_time
            } else {
                0
            },
            seq: 0,
            cpu: op.cpu,
            nic: op.nic,
            arrived: false,
            send_done: eager,
        };
        self.track_message(m, msg_time, t_ins, prefired.is_some())?;
        if eager {
            self.complete_op(ev.id, ev.host, end);
        } else if self.trig.on {
            self.trig.rdv_open[ev.host as usize] += 1;
        }
        Ok(Outcome::Done)
    }

    /// A message enters the network: store it and wait for it according to
    /// the synchronisation mode (poll: its event on the destination at
    /// `earliest`, the earliest time it may arrive; notify: until the
    /// network reports it; exact: also lower the granted horizon to the
    /// insert time `t_ins` plus the network's minimum latency). Two-sided
    /// sends and every part of a one-sided operation go through here.
    fn track_message(
        &mut self,
        mut m: Msg,
        earliest: u64,
        t_ins: u64,
        prefired: bool,
    ) -> Result<u32, SimError> {
        let (host, handle) = (m.dst, m.handle);
        let seq = self.seq;
        self.seq += 1;
        self.events += 1;
        m.seq = seq;
        let slot = match self.msg_free.pop() {
            Some(s) => {
                self.msgs[s as usize] = m;
                s
            }
            None => {
                self.msgs.push(m);
                self.msgs.len() as u32 - 1
            }
        };
        match self.mode {
            SyncMode::Poll => self.heap.push(Ev {
                time: earliest,
                seq,
                host,
                id: slot | MSG_FLAG,
            }),
            SyncMode::Notify => {
                self.waiting.insert(handle, slot as u64);
            }
            SyncMode::Exact => {
                self.waiting.insert(handle, slot as u64);
                // the new message arrives no earlier than its insert time
                // plus the network's minimum latency (a message the network
                // inserted itself is covered by its grant already)
                if !prefired {
                    self.granted = self.granted.min(t_ins.saturating_add(self.min_lat));
                }
                if self.trig.on {
                    self.trig_insert(host, handle, prefired)?;
                    if let Some(t) = self.trig.early.remove(&handle) {
                        // reported in the batch that fired it
                        self.arrive(handle, Time(t))?;
                    }
                }
            }
        }
        Ok(slot)
    }

    /// Completes the rendezvous send of message `m` at match time `t` and
    /// raises the sender's CPU/NIC availability to at least `t`.
    fn rendezvous_done(&mut self, slot: u32, t: u64) {
        let m = self.msgs[slot as usize];
        let ci = m.src as usize * self.ncpu + m.cpu as usize;
        let ni = m.src as usize * self.nnic + m.nic as usize;
        self.nexto[ci] = self.nexto[ci].max(t);
        self.nextgs[ni] = self.nextgs[ni].max(t);
        if !m.send_done {
            self.msgs[slot as usize].send_done = true;
            if self.trig.on {
                self.trig.rdv_open[m.src as usize] -= 1;
            }
            self.complete_op(m.send_node, m.src, t);
        }
    }

    fn free_msg(&mut self, slot: u32) {
        self.msg_free.push(slot);
    }

    fn recv(&mut self, ev: Ev) -> Outcome {
        let op = self.sched.op(ev.id);
        let t = ev.time;
        self.start_op(ev.id, ev.host, t);
        match self.uq[ev.host as usize].take(op.peer, op.tag) {
            Some((_, _, slot)) => {
                // the receive's size decides rendezvous here (as the reference does)
                if op.size > self.params.s {
                    self.rendezvous_done(slot, t);
                }
                let m = self.msgs[slot as usize];
                if T::ACTIVE {
                    self.tracer.event(&TraceEvent::RecvMatched {
                        host: ev.host,
                        cpu: op.cpu,
                        node: ev.id,
                        src: m.src,
                        tag: m.tag,
                        size: op.size,
                        time: t,
                    });
                }
                self.free_msg(slot);
                let ci = ev.host as usize * self.ncpu + op.cpu as usize;
                let ready = self.nexto[ci].max(t);
                self.complete_op(ev.id, ev.host, ready);
            }
            None => {
                if T::ACTIVE {
                    self.tracer.event(&TraceEvent::RecvPosted {
                        host: ev.host,
                        cpu: op.cpu,
                        node: ev.id,
                        src: op.peer,
                        tag: op.tag,
                        time: t,
                    });
                }
                self.rq_push(ev.host, op.peer, op.tag, ev.id);
            }
        }
        Outcome::Done
    }

    #[inline]
    fn rq_push(&mut self, host: u32, src: u32, tag: u32, node: u32) {
        if self.rq.is_empty() {
            let sched = &self.sched;
            let key = self.rq_key(src, tag);
            self.rq_exact[host as usize].push(key, node, &mut self.link, |n| sched.match_key(n));
        } else {
            self.rq[host as usize].push(src, tag, node);
        }
    }

    #[inline]
    fn rq_take(&mut self, host: u32, src: u32, tag: u32) -> Option<u32> {
        if self.rq.is_empty() {
            let key = self.rq_key(src, tag);
            let sched = &self.sched;
            self.rq_exact[host as usize].take(key, &mut self.link, |n| sched.match_key(n))
        } else {
            self.rq[host as usize].take(src, tag).map(|e| e.2)
        }
    }

    /// Key of the wildcard-free receive queue (packed, or as `match_key`).
    #[inline]
    fn rq_key(&self, src: u32, tag: u32) -> u64 {
        ((src as u64) << self.key_shift) | tag as u64
    }

    /// Unmatched receives of a host (FIFO order; for the wildcard-free
    /// queue FIFO within each (source, tag), buckets in table order).
    fn rq_nodes(&self, host: usize) -> Vec<u32> {
        if self.rq.is_empty() {
            self.rq_exact[host].nodes(&self.link)
        } else {
            self.rq[host]
                .entries_in_order()
                .into_iter()
                .map(|e| e.2)
                .collect()
        }
    }

    fn rq_len(&self, host: usize) -> (usize, usize) {
        if self.rq.is_empty() {
            (self.rq_exact[host].len(), self.rq_exact[host].max_len())
        } else {
            (self.rq[host].len(), self.rq[host].max_len())
        }
    }

    fn message(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        let slot = ev.id & !MSG_FLAG;
        let t = ev.time;
        let m = self.msgs[slot as usize];
        if m.role != one_sided::Role::Data {
            return self.one_sided_message(ev, slot);
        }
        let ef = if m.arrived {
            m.arrival.min(t)
        } else {
            // poll mode (notify-mode messages are always `arrived` here)
            let ef = self
                .net
                .query(Time(m.start), Time(t), m.src, m.dst, m.size, m.handle)?
                .0;
            if ef <= t {
                let mm = &mut self.msgs[slot as usize];
                mm.arrived = true;
                mm.arrival = ef;
            }
            ef
        };
        let h = ev.host as usize;
        let ci = h * self.ncpu + m.cpu as usize;
        let ni = h * self.nnic + m.nic as usize;
        let busy = self.nexto[ci].max(self.nextgr[ni]);
        if ef > t {
            // not there yet: re-check (and query) at that time, individually
            if self.trig.on {
                self.trig.live[ev.host as usize] += 1; // still queued
            }
            self.reinsert(ev, busy.max(ef), "msg");
            return Ok(Outcome::Done);
        }
        if busy > t {
            // arrived, receiver busy: re-checks have no side effects, so it may be grouped
            return Ok(Outcome::Blocked {
                avail: busy,
                class: class_key(2, ev.host, m.cpu, m.nic),
            });
        }
        // (a reference: copying all of Params per message costs more)
        let p = &self.params;
        let rendezvous = m.size > p.s;
        let (o, big_o) = p.overheads(m.size);
        let s1 = m.size.saturating_sub(1);
        let ovf = || overflow(ev.host, "receive", t);
        let work = mul(s1, big_o)
            .ok_or_else(ovf)?
            .max(mul(s1, p.big_g).ok_or_else(ovf)?);
        let cpu_work = add(v(o), v(work)).ok_or_else(ovf)?;
        let end =
            add(add(v(t), v(cpu_work)), v(self.noise(ev.host, t, cpu_work))).ok_or_else(ovf)?;
        let gr = add(add(v(t), v(p.g)), mul(s1, p.big_g)).ok_or_else(ovf)?;
        let (prev_o, prev_gr) = (self.nexto[ci], self.nextgr[ni]);
        self.nexto[ci] = end;
        self.nextgr[ni] = gr;
        let matched = self.rq_take(ev.host, m.src, m.tag);
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::MsgReceived {
                host: ev.host,
                cpu: m.cpu,
                src: m.src,
                size: m.size,
                tag: m.tag,
                sent: m.start,
                arrived: if m.arrived { m.arrival } else { ef },
                start: t,
                end,
                node: matched,
                prev_o,
                prev_gr,
            });
        }
        match matched {
            Some(rnode) => {
                if rendezvous {
                    self.rendezvous_done(slot, t);
                }
                self.free_msg(slot);
                // the receive's dependents: no earlier than the end of this CPU work
                self.complete_op(rnode, ev.host, end);
            }
            None => self.uq[h].push(m.src, m.tag, slot),
        }
        Ok(Outcome::Done)
    }

    /// The result so far (complete once `step` returned None).
    pub fn report(&self) -> Report {
        let p = self.sched.num_ranks() as usize;
        let finish_times = (0..p)
            .map(|h| {
                self.nexto[h * self.ncpu..(h + 1) * self.ncpu]
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let pend = |src: u32, tag: u32, size: u64| Pending {
            src: if src == ANY { -1 } else { src as i64 },
            tag: if tag == ANY { -1 } else { tag as i64 },
            size,
        };
        let mut leftovers = Vec::new();
        for h in 0..p {
            if self.rq_len(h).0 == 0 && self.uq[h].is_empty() {
                continue;
            }
            let receives = self
                .rq_nodes(h)
                .into_iter()
                .map(|n| {
                    let op = self.sched.op(n);
                    pend(op.peer, op.tag, op.size)
                })
                .collect();
            let unexpected = self.uq[h]
                .entries_in_order()
                .into_iter()
                .map(|(s, t, m)| pend(s, t, self.msgs[m as usize].size))
                .collect();
            leftovers.push(HostLeftovers {
                host: h as u32,
                receives,
                unexpected,
            });
        }
        Report {
            num_hosts: p as u32,
            num_cpus: self.ncpu as u32,
            num_nics: self.nnic as u32,
            finish_times,
            events: self.events,
            processed: self.processed,
            end_time: self.now,
            leftovers,
            incomplete_ops: self.sched.num_nodes() as u64 - self.completed,
            max_rq: (0..p).map(|h| self.rq_len(h).1 as u64).collect(),
            max_uq: self.uq.iter().map(|q| q.max_len() as u64).collect(),
            waited_for_network: self.net.peer_wait(),
            network_stats: {
                let mut v = self.net.stats();
                if self.mode == SyncMode::Exact {
                    // cannot be anything but 0: a late arrival is an error
                    v.push(("late_arrivals".into(), self.late_arrivals));
                    v.push(("exact_grant_waits".into(), self.exact_grants));
                }
                if self.mode == SyncMode::Notify {
                    v.push(("late_arrivals".into(), self.late_arrivals));
                    v.push(("max_arrival_lag_ps".into(), self.max_arrival_lag));
                }
                if self.sched.uses_one_sided() {
                    // one-sided operations only (so other reports stay as they were)
                    v.push(("unmatched_polls".into(), self.waiting_polls() as u64));
                }
                v
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ev, EventQueue};
    use std::collections::BinaryHeap;

    /// The lane-and-heap queue pops exactly what a binary heap alone pops:
    /// random keys, mostly increasing (the lane) with earlier ones mixed
    /// in (the heap), interleaved pops, long enough runs to compact the
    /// lane (more than 1024 consumed entries).
    #[test]
    fn event_queue_pops_in_heap_order() {
        let mut q = EventQueue::default();
        let mut h = BinaryHeap::new();
        let mut x: u64 = 19;
        let mut rnd = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..200_000u32 {
            let r = rnd();
            if r % 5 < 3 || h.is_empty() {
                // mostly at or after the current time, sometimes earlier
                // (an arrival), sometimes an old seq (a re-inserted event)
                let time = if r % 17 == 0 {
                    now.saturating_sub(rnd() % 50)
                } else {
                    now + rnd() % 40
                };
                // unique keys, as in the engine: fresh seqs grow, "old"
                // ones come from a lower range
                seq += 1;
                let s = if r % 23 == 0 {
                    seq
                } else {
                    (seq << 20) | 1 << 40
                };
                let e = Ev {
                    time,
                    seq: s,
                    host: round % 7,
                    id: round,
                };
                q.push(e);
                h.push(e);
            } else {
                let a = q.pop();
                let b = h.pop();
                assert_eq!(a, b, "pop {round}");
                if let Some(e) = a {
                    now = now.max(e.time);
                }
            }
            assert_eq!(q.peek().copied(), h.peek().copied(), "peek {round}");
        }
        while let Some(b) = h.pop() {
            assert_eq!(q.pop(), Some(b));
        }
        assert_eq!(q.pop(), None);
    }
}
