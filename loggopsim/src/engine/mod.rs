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
//!
//! Modules: `params.rs`, `trace.rs`, `error.rs` and `report.rs` (the
//! public types); `queue.rs` (the active queue, section 4), `order.rs`
//! (section 5), `handlers/` (section 6), `groups.rs` (blocked events put
//! back), `sync.rs` (section 7: poll, notify, exact), `one_sided.rs`,
//! `triggers.rs`, `run.rs` (the main loop), `build.rs` (construction),
//! `checked.rs` (9.4), `slots.rs` (reused table slots).

mod build;
mod checked;
mod error;
mod groups;
mod handlers;
mod one_sided;
mod order;
mod params;
mod queue;
mod report;
mod run;
mod slots;
mod sync;
mod trace;
mod triggers;

pub use error::SimError;
pub use one_sided::OneSidedTimes;
pub use params::Params;
pub use report::{HostLeftovers, Pending, Report};
pub use trace::{NoTrace, TraceEvent, Tracer};

use crate::hash::FastMap;
use crate::matching::{ExactRq, MatchQueue};
use crate::network::{Network, SyncMode};
use crate::noise::Noise;
use crate::schedule::Schedule;
use crate::Time;
use groups::Group;
use handlers::Msg;
use ibcosim_common::handles::HandleMap;
use queue::EventQueue;

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
    /// triggered inserts (protocol version 4, `triggers.rs`)
    trig: triggers::Triggers,
}

impl<N: Network, T: Tracer> Sim<N, T> {
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
}
