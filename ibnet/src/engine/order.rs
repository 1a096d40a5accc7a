//! The local event order (`event_order = "local"`): an order of
//! same-instant events that every node of the network computes from its
//! own events alone, as a parallel engine or a packet train needs
//! (docs/scaling.md, "A local event order"). It is a different model from
//! the reference's FIFO order (`event_order = "fifo"`, the default), with
//! its own results; the default engine does not use this module.
//!
//! # The order
//!
//! Events run in increasing `(time, depth, origin, n)`:
//!
//! - `depth` is 0 for an event scheduled ahead (a delay > 0, or before the
//!   run starts) and its parent's depth + 1 for a zero-delay event. The
//!   reference's FIFO order is the same breadth-first order by depth
//!   within an instant (the events of an instant that were queued ahead
//!   run first, then the zero-delay ones in the order their parents ran),
//!   so the two orders differ only among the events of one depth.
//! - `origin` is 1 + the topology node whose event scheduled it (the
//!   parent's node), or [`EXTERNAL`] (0, first) for the initial events and
//!   the driver's injections, as the reference queues its initial events
//!   before any other.
//! - `n` is the origin's own insertion counter: it counts the events that
//!   node scheduled, in the order that node ran its events.
//!
//! Among the events of one depth at one node, those of one origin
//! therefore keep the FIFO order (each node runs its own events in this
//! order, so by induction its counter follows the FIFO order of its
//! parents), and those of different origins are taken by node number
//! instead of by the global moment their parents ran, which only a global
//! counter knows. Events queued ahead are always scheduled by the node
//! they run at (every delay of the model is inside one node; only
//! zero-delay events cross a link), so at depth 0 the two orders agree;
//! they differ only where two links deliver at one instant at one node
//! (the "cross ties" of docs/scaling.md).
//!
//! The periodic credit timer is keyed as the reference's lazy timer keys
//! it (`engine/mod.rs`), per node instead of globally: the events a tick
//! at k*P schedules (the next tick, the wake-up pop) get `n` = the node's
//! counter at its first event of period k, minus one, with 1 + the obuf's
//! port number in the low bits, whether the tick ran or was skipped. A
//! tick is the first event of its node in its period (every delay into an
//! obuf is shorter than the period), so that is the place its events would
//! have had; lazy and always-ticking runs are the same run in this order
//! too.
//!
//! Two engine shortcuts whose proofs rest on the FIFO order are off in
//! this order: the direct events of `direct.rs` (every event is queued)
//! and the now-queue of `queue.rs` (zero-delay events go into the timing
//! wheel, which sorts them by key).
//!
//! # Encoding
//!
//! The key is the event's `seq`, so the queue needs no change: `depth` in
//! the top 6 bits, `origin` in the next 18 (networks of up to 262,142
//! nodes), `n` in the low 40: the node's counter (4 G events per node)
//! above 8 bits that are 0 but in the timer's keys (ports 0 to 254). A
//! deeper chain, a larger network or a longer run is a fatal model error,
//! never a silent wrap.

use super::dispatch::Ev;
use super::fabric::Fabric;

const DEPTH_SHIFT: u32 = 58;
const ORIGIN_SHIFT: u32 = 40;
/// The low bits of `n` that only the timer's keys use.
const SUB_BITS: u32 = 8;
/// The deepest zero-delay chain the key holds.
pub(super) const MAX_DEPTH: u64 = (1 << (64 - DEPTH_SHIFT)) - 1;
/// Origin of the initial events and of the driver's injections (before
/// every node of the network).
pub(super) const EXTERNAL: u32 = 0;
/// Networks of fewer nodes than this (origin = 1 + node).
pub(super) const MAX_NODES: usize = (1 << (DEPTH_SHIFT - ORIGIN_SHIFT)) - 1;
/// Ports per node the timer's keys hold.
pub(super) const MAX_PORTS: usize = (1 << SUB_BITS) - 1;
const MAX_N: u64 = (1 << (ORIGIN_SHIFT - SUB_BITS)) - 1;
/// A counter starts at 1 (a tick's key is the counter at its period's
/// start minus one).
const FIRST_N: u64 = 1;
/// Test mode (`Fabric::shuffle_local_order`): the origin field holds the
/// shuffled target node in its high bits and the origin in these low ones.
const SHUFFLE_BITS: u32 = 9;

/// State of the local order (inert in the FIFO order).
pub(super) struct LocalOrder {
    /// A run loop is processing events: whatever is scheduled comes from
    /// the event being processed (`Fabric::cur_ev`), else from the driver.
    pub(super) in_run: bool,
    /// (now, events processed) when the clock last moved without an event
    moved: (u64, u64),
    /// next `n` per origin (index 0: `EXTERNAL`)
    next_n: Vec<u64>,
    /// per node: its latest credit period in which it scheduled an event,
    /// and its counter at its first event of that period (the timer's
    /// keys: no event changes the counter before the node schedules one)
    period: Vec<(u64, u64)>,
    /// Test mode: a permutation of the nodes. Events of one instant and
    /// depth then run grouped by their target node in this order (and by
    /// origin and n within a target), which gives the same run if and only
    /// if events at different nodes commute, i.e. if any partition of the
    /// nodes into processes gives the same results.
    shuffle: Option<Vec<u32>>,
}

impl LocalOrder {
    pub(super) fn new(nodes: usize) -> LocalOrder {
        LocalOrder {
            in_run: false,
            moved: (u64::MAX, 0),
            next_n: vec![FIRST_N; nodes + 1],
            period: vec![(0, FIRST_N); nodes],
            shuffle: None,
        }
    }

    fn field(&self, origin: u32, target: u32) -> u64 {
        match &self.shuffle {
            None => origin as u64,
            Some(p) => ((p[target as usize] as u64) << SHUFFLE_BITS) | origin as u64,
        }
    }

    /// The node's counter at its first event of credit period `k`.
    fn period_start(&self, node: usize, k: u64) -> u64 {
        let (pk, start) = self.period[node];
        if k > pk {
            self.next_n[node + 1]
        } else {
            start
        }
    }
}

impl Fabric {
    /// The topology node an event runs at.
    pub(super) fn ev_node(&self, ev: &Ev) -> u32 {
        match *ev {
            Ev::AppStart { h }
            | Ev::AppInject { h, .. }
            | Ev::AppDone { h }
            | Ev::GenMsg { h, .. }
            | Ev::GenPush { h }
            | Ev::GenSent { h, .. }
            | Ev::SinkFlit { h, .. }
            | Ev::SinkDrain { h }
            | Ev::SinkDrainTimer { h }
            | Ev::SinkHiccup { h }
            | Ev::CctiTimer { h }
            | Ev::QpDone { h, .. }
            | Ev::LossRto { h, .. } => self.hcas[h as usize].node,
            Ev::ArbFlit { port, .. }
            | Ev::ArbPop { port }
            | Ev::ArbTxCred { port, .. }
            | Ev::ArbKick { port }
            | Ev::ObufFlit { port, .. }
            | Ev::ObufRxCred { port, .. }
            | Ev::ObufTick { port }
            | Ev::ObufPop { port }
            | Ev::ObufPopTimer { port }
            | Ev::IbufFlit { port, .. }
            | Ev::IbufFc { port, .. }
            | Ev::IbufSent { port, .. } => self.ports[port as usize].node,
            Ev::HostLanded { msg } => self.hcas[self.msgs[msg as usize].dst_hca as usize].node,
        }
    }

    /// Schedule `ev` at `at` with its key in the local order. (Out of
    /// line: inlined into the FIFO order's hot paths, its code cost them
    /// speed. The dispatch keeps no state for it either but the event,
    /// `cur_ev`; a branch there cost the FIFO order a quarter of its speed.)
    #[inline(never)]
    pub(super) fn sched_local(&mut self, at: u64, ev: Ev) {
        let now = self.now;
        let (depth, origin) = if self.local.in_run {
            // from a handler: the event being processed is the parent
            let node = self.ev_node(&self.cur_ev) as usize;
            let k = now / self.tm.cred;
            let start = self.local.period_start(node, k);
            self.local.period[node] = (k, start);
            let d = if at == now {
                (self.cur_seq >> DEPTH_SHIFT) + 1
            } else {
                0
            };
            (d, node as u32 + 1)
        } else {
            // from the driver: at the current instant, after every event
            // processed at it (the last one processed is the deepest)
            let ran_now = self.started && self.local.moved != (now, self.events);
            let d = if at == now && ran_now {
                (self.cur_seq >> DEPTH_SHIFT) + 1
            } else {
                0
            };
            (d, EXTERNAL)
        };
        let n = &mut self.local.next_n[origin as usize];
        let k = *n;
        *n += 1;
        if depth > MAX_DEPTH || k > MAX_N {
            self.fail(format!(
                "the local event order holds zero-delay chains of up to {MAX_DEPTH} events \
                 and {MAX_N} events per node (this run needs more)"
            ));
            return;
        }
        let target = if self.local.shuffle.is_some() {
            self.ev_node(&ev)
        } else {
            0
        };
        let field = self.local.field(origin, target);
        self.counter += 1;
        let seq = (depth << DEPTH_SHIFT) | (field << ORIGIN_SHIFT) | (k << SUB_BITS);
        self.push_key(at, seq, ev);
    }

    /// The key of the events that the (possibly skipped) credit tick of
    /// obuf `pi` in the current period schedules (module doc); called from
    /// an event at the obuf's node.
    pub(super) fn timer_key(&self, pi: usize) -> u64 {
        let node = self.ports[pi].node;
        let field = self.local.field(node + 1, node);
        let start = self
            .local
            .period_start(node as usize, self.now / self.tm.cred);
        (field << ORIGIN_SHIFT) | ((start - 1) << SUB_BITS) | (1 + self.ports[pi].local as u64)
    }

    /// The clock moved to `now` without an event (`advance_to`).
    pub(super) fn local_moved(&mut self) {
        self.local.moved = (self.now, self.events);
    }

    /// Test mode of the local order (module `LocalOrder::shuffle`): run the
    /// events of one instant and depth grouped by their node, in the order
    /// of a permutation of the nodes drawn from `seed`. Must be called
    /// before the first event; networks of up to 510 nodes.
    #[doc(hidden)]
    pub fn shuffle_local_order(&mut self, seed: u64) -> Result<(), String> {
        let n = self.local.period.len();
        if !self.local_order || self.started || n + 1 >= 1 << SHUFFLE_BITS {
            return Err(
                "shuffling needs event_order = \"local\", no event run yet and fewer than \
                 511 nodes"
                    .into(),
            );
        }
        let mut perm: Vec<u32> = (0..n as u32).collect();
        let mut s = seed;
        for i in (1..n).rev() {
            let r = super::app::splitmix(&mut s);
            perm.swap(i, (r % (i as u64 + 1)) as usize);
        }
        self.local.shuffle = Some(perm);
        // the initial events are queued already: key them again (all of
        // depth 0 and origin EXTERNAL; their n stays)
        let mut queued = Vec::with_capacity(self.heap.len());
        while let Some(e) = self.heap.pop() {
            queued.push(e);
        }
        for (t, seq, ev) in queued {
            let field = self.local.field(EXTERNAL, self.ev_node(&ev));
            let key = (seq & !(((1 << (DEPTH_SHIFT - ORIGIN_SHIFT)) - 1) << ORIGIN_SHIFT))
                | (field << ORIGIN_SHIFT);
            self.heap.push(t, key, ev);
        }
        Ok(())
    }
}
