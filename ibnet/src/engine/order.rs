//! The local event order (`event_order = "local"`): an order of
//! same-instant events that every node of the network computes from its
//! own events alone, as a parallel engine or a packet train needs
//! (docs/scaling.md, "A local event order"). It is a different model from
//! the reference's FIFO order (`event_order = "fifo"`, the default), with
//! its own results.
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
//! The periodic credit timer is keyed as the FIFO engine keys its lazy
//! timer (`engine/mod.rs`), per node instead of globally: the events a tick
//! at k*P schedules (the next tick, the wake-up pop) get `n` = the node's
//! counter at its first event of period k, minus one, with 1 + the obuf's
//! port number in the low bits of the key, whether the tick ran or was
//! skipped. A tick is the first event of its node in its period (every
//! delay into an obuf is shorter than the period), so that is the place
//! its events would have had; lazy and always-ticking runs are the same
//! run in this order too.
//!
//! # How the engine runs it
//!
//! Without a cost to the FIFO order: its scheduling code is unchanged.
//! The insertion counter that gives every event its `seq` holds, in this
//! order, `origin` and `n` of the node whose event is running
//! (`local_switch` loads it before each event, keeping the previous
//! node's `n`), so
//! `seq = counter << SEQ_SHIFT` is `(origin, n)` and the timing wheel
//! sorts depth-0 events by it. `depth` is not in the key: the now-queue
//! is taken in batches, one depth after the other (a batch is the
//! zero-delay events the previous one scheduled), each sorted by key
//! before it starts (`step_local`). The direct events of `direct.rs` are
//! the same run in this order too (their proofs say why).
//!
//! `origin` takes the bits the network needs (`LocalOrder::n_bits`), `n`
//! the rest of 44; a node that would schedule more events than that is a
//! fatal model error, never a silent wrap.

use super::app::Msg;
use super::dispatch::{Ev, Site};
use super::fabric::{Fabric, Hca, Port};
use super::queue::{Entry, SEQ_SHIFT};

/// Origin of the initial events and of the driver's injections (before
/// every node of the network).
pub(super) const EXTERNAL: usize = 0;
/// Bits of a key above `SEQ_SHIFT` (origin and n).
const KEY_BITS: u32 = 64 - SEQ_SHIFT;
/// Networks of fewer nodes than this (so that `n` keeps at least 26
/// bits). The timer's keys hold 1 + a port number in the low
/// `SEQ_SHIFT` bits: any node's ports.
pub(super) const MAX_NODES: usize = 1 << 18;
/// A node's counter starts at 1 (a tick's key is the counter at its
/// period's start minus one).
const FIRST_N: u64 = 1;
/// Test mode (`Fabric::shuffle_local_order`): networks of fewer nodes.
const SHUFFLE_MAX_NODES: usize = 4096;

/// What the local order keeps per origin (one record, so that switching
/// to a node touches one cache line).
#[derive(Clone, Copy)]
struct Origin {
    /// the insertion counter to load, `origin` and next `n` (while not
    /// loaded)
    next: u64,
    /// the node's latest credit period with an event, and its `n` at its
    /// first event of that period (the timer's keys)
    k: u64,
    k_first_n: u64,
}

/// State of the local order (inert in the FIFO order).
pub(super) struct LocalOrder {
    /// bits of `n` in the counter (the rest above is `origin`)
    n_bits: u32,
    n_mask: u64,
    /// the origin whose counter the insertion counter holds
    cur: usize,
    /// the credit period in which `cur` was loaded (its `Origin::k`)
    cur_k: u64,
    /// per origin (index 0: `EXTERNAL`, then 1 + node)
    origins: Vec<Origin>,
    /// the credit period of the instant last seen by `local_switch` and
    /// the times it spans, [k_start, k_end): one comparison per event
    /// instead of a division
    k_cur: u64,
    k_start: u64,
    k_end: u64,
    /// events of the running now-queue batch not yet taken
    batch_left: usize,
    /// the running event is of depth 0 (queued ahead)
    pub(super) depth0: bool,
    /// Test mode: a permutation of the nodes. Events of one instant and
    /// depth then run grouped by the node they run at, in this order (and
    /// by key within a node), which gives the same run if and only if
    /// events at different nodes commute, i.e. if any partition of the
    /// nodes into processes gives the same results.
    pub(super) shuffle: Option<Vec<u32>>,
}

impl LocalOrder {
    /// Where an event's `seq` names its origin node (the bits above the
    /// node's counter and `SEQ_SHIFT`).
    pub(super) fn key_group_shift(&self) -> u32 {
        self.n_bits + SEQ_SHIFT
    }

    pub(super) fn new(nodes: usize) -> LocalOrder {
        let origin_bits = usize::BITS - nodes.leading_zeros();
        let n_bits = KEY_BITS - origin_bits;
        let origins = (0..=nodes as u64)
            .map(|o| Origin {
                next: if o == EXTERNAL as u64 {
                    0
                } else {
                    (o << n_bits) | FIRST_N
                },
                k: 0,
                k_first_n: FIRST_N,
            })
            .collect();
        LocalOrder {
            n_bits,
            n_mask: (1 << n_bits) - 1,
            cur: EXTERNAL,
            cur_k: 0,
            origins,
            k_cur: 0,
            k_start: 0,
            k_end: 0,
            batch_left: 0,
            depth0: true,
            shuffle: None,
        }
    }
}

/// The topology node an event runs at.
#[inline(always)]
pub(super) fn node_of(ports: &[Port], hcas: &[Hca], msgs: &[Msg], ev: &Ev) -> u32 {
    match ev.site() {
        Site::Port(p) => ports[p as usize].node,
        Site::Hca(h) => hcas[h as usize].node,
        Site::MsgDst(m) => hcas[msgs[m as usize].dst_hca as usize].node,
    }
}

impl Fabric {
    /// As `step_until` (dispatch.rs), in the local order: the wheel's
    /// events of the current instant (depth 0, in key order), then the
    /// now-queue batch by batch, then the wheel's next instant. In the
    /// shuffled test mode the wheel's events of an instant are taken out
    /// as a batch of their own, to be grouped by node.
    #[inline(never)]
    pub(super) fn step_local(&mut self, limit: u64) -> bool {
        let now = self.now;
        let shuffled = self.local.shuffle.is_some();
        let popped = if shuffled {
            None
        } else {
            self.heap.pop_at(now)
        };
        let (t, seq, ev) = if let Some(x) = popped {
            self.local.depth0 = true;
            x
        } else if let Some(e) = self.next_in_batch() {
            (now, e.seq, e.ev)
        } else {
            let t = match self.heap.peek_key() {
                Some((t, _)) if t <= limit => t,
                _ => return false,
            };
            if !self.in_range(t) {
                return false;
            }
            if shuffled {
                while self.heap.peek_key().is_some_and(|k| k.0 == t) {
                    let (_, seq, ev) = self.heap.pop().unwrap();
                    self.nowq.push_back(Entry { seq, ev });
                }
                self.start_batch(true);
                let e = self.next_in_batch().unwrap();
                (t, e.seq, e.ev)
            } else {
                self.local.depth0 = true;
                self.heap.pop().unwrap()
            }
        };
        self.local_switch(t, &ev);
        self.dispatch(t, seq, ev);
        true
    }

    /// `run_until` in the local order: instant by instant, each in its
    /// batches (the wheel's events of the instant, then the now-queue's,
    /// depth by depth); the same run as `step_local` event by event, with
    /// less work per event.
    pub(super) fn run_local_until(&mut self, limit: u64) {
        if self.local.shuffle.is_some() {
            // the test mode
            while self.fatal.is_none() && self.step_local(limit) {}
            return;
        }
        self.local_resume();
        while self.fatal.is_none() {
            let t = match self.heap.peek_key() {
                Some((t, _)) if t <= limit => t,
                _ => break,
            };
            if !self.in_range(t) {
                break;
            }
            self.local_instant(t);
        }
    }

    /// Instant `t` in batches: the wheel's events of `t` (depth 0), then
    /// the now-queue's, generation by generation.
    fn local_instant(&mut self, t: u64) {
        self.local_batch(t, true);
        while self.fatal.is_none() && self.nowq.len() > 0 {
            self.local_batch(t, false);
        }
    }

    /// A driver's injections at the current instant wait in the
    /// now-queue: the rest of the instant, as `step_local` takes it up.
    fn local_resume(&mut self) {
        if self.nowq.len() > 0 {
            self.local_instant(self.now);
        }
    }

    /// `run_until_completion_or`'s loop in the local order, instant by
    /// instant in batches (`points`: the op points when the run began):
    /// the instant of the first completion, None if the run stopped
    /// without one (the caller tells why). The same events as deciding
    /// before each event (`until_completion_by_event`): the bound there
    /// cannot fall below an instant once the instant has begun (a
    /// foreground event in it moves the last foreground event to it; with
    /// none, the bound stays), so every instant the bound lets begin runs
    /// to its end, the completion's too.
    pub(super) fn local_until_completion(&mut self, limit: u64, points: u64) -> Option<u64> {
        self.local_resume();
        loop {
            if self.fatal.is_some() {
                return None;
            }
            if self.rdma.points > points {
                return Some(self.now);
            }
            let t = match self.heap.peek_key() {
                Some((t, _)) if t <= self.search_bound(limit) => t,
                _ => return None,
            };
            if !self.in_range(t) {
                return None;
            }
            self.local_instant(t);
            self.count_pulse();
        }
    }

    /// Run one batch of instant `t`: the wheel's events of `t` (depth 0),
    /// or the now-queue's events, sorted by key (the parallel engine's
    /// processes too, parallel.rs).
    pub(super) fn local_batch(&mut self, t: u64, depth0: bool) {
        if self.part.is_some() {
            self.local_batch_of::<true>(t, depth0)
        } else {
            self.local_batch_of::<false>(t, depth0)
        }
    }

    // (a copy of the loop for a sequential run without the parallel
    // engine's look at the cut ports: with it in the loop, a sequential
    // run took 20 % more time for 1.4 % more instructions, the code the
    // compiler makes of the loop around dispatch's inlined handlers)
    #[inline(always)]
    fn local_batch_of<const PAR: bool>(&mut self, t: u64, depth0: bool) {
        if depth0 {
            while self.fatal.is_none() {
                let Some((t, seq, ev)) = self.heap.pop_at(t) else {
                    break;
                };
                // (every delay of the model is inside one node, so a
                // process queues events ahead only at its own nodes: checked
                // where debug assertions are on, the test builds; the check
                // cost a parallel run 15 % of its time)
                debug_assert!(!PAR || self.par_check_owner(t, &ev));
                if PAR && self.watch {
                    self.watch_site(ev.site());
                }
                self.local.depth0 = true;
                self.local_switch(t, &ev);
                self.dispatch(t, seq, ev);
            }
        } else {
            self.nowq.sort_pending_by_key(|e| e.seq);
            self.local.depth0 = false;
            for _ in 0..self.nowq.len() {
                if self.fatal.is_some() {
                    break;
                }
                let e = self.nowq.pop_front().unwrap();
                if PAR && self.watch {
                    self.watch_site(e.ev.site());
                }
                self.local_switch(t, &e.ev);
                self.dispatch(t, e.seq, e.ev);
            }
        }
    }

    /// Begin a batch of the now-queue: everything in it, sorted by key
    /// (grouped by node first in the shuffled test mode).
    fn start_batch(&mut self, depth0: bool) {
        let (ports, hcas, msgs) = (&self.ports, &self.hcas, &self.msgs);
        match &self.local.shuffle {
            None => self.nowq.sort_pending_by_key(|e| e.seq),
            Some(p) => self
                .nowq
                .sort_pending_by_key(|e| (p[node_of(ports, hcas, msgs, &e.ev) as usize], e.seq)),
        }
        self.local.batch_left = self.nowq.len();
        self.local.depth0 = depth0;
    }

    fn next_in_batch(&mut self) -> Option<Entry> {
        if self.local.batch_left == 0 {
            if self.nowq.len() == 0 {
                return None;
            }
            // the zero-delay events the previous batch scheduled
            self.start_batch(false);
        }
        self.local.batch_left -= 1;
        self.nowq.pop_front()
    }

    /// Load the counter of the node `ev` runs at (module doc).
    #[inline(always)]
    pub(super) fn local_switch(&mut self, t: u64, ev: &Ev) {
        let node = node_of(&self.ports, &self.hcas, &self.msgs, ev) as usize;
        let lo = &mut self.local;
        if t >= lo.k_end || t < lo.k_start {
            let cred = self.tm.cred;
            lo.k_cur = t / cred;
            lo.k_start = lo.k_cur * cred;
            lo.k_end = lo.k_start + cred;
        }
        let k = lo.k_cur;
        if lo.cur == node + 1 && lo.cur_k == k {
            // the same node again, in the same credit period
            return;
        }
        self.local_switch_slow(node, k);
    }

    // (inlined: a call cost a third of it, and it runs at every other
    // event)
    #[inline(always)]
    fn local_switch_slow(&mut self, node: usize, k: u64) {
        let lo = &mut self.local;
        lo.origins[lo.cur].next = self.counter;
        let o = &mut lo.origins[node + 1];
        let c = o.next;
        let n = c & lo.n_mask;
        if k > o.k {
            o.k = k;
            o.k_first_n = n;
        }
        lo.cur = node + 1;
        lo.cur_k = k;
        self.counter = c;
        if n > lo.n_mask - (1 << 16) {
            self.local_full(node);
        }
    }

    #[cold]
    #[inline(never)]
    fn local_full(&mut self, node: usize) {
        let msg = format!(
            "the local event order holds {} events scheduled per node on this network \
             (node {} reached it)",
            self.local.n_mask - (1 << 16),
            self.node_names[node]
        );
        self.fail(msg);
    }

    /// After a run: what is scheduled now comes from the driver.
    pub(super) fn local_release(&mut self) {
        let lo = &mut self.local;
        lo.origins[lo.cur].next = self.counter;
        lo.cur = EXTERNAL;
        self.counter = lo.origins[EXTERNAL].next;
    }

    /// The key of the events that the (possibly skipped) credit tick of
    /// obuf `pi` in the current period schedules (module doc); called from
    /// an event at the obuf's node (whose period `local_switch` noted).
    pub(super) fn timer_key(&self, pi: usize) -> u64 {
        let node = self.ports[pi].node as usize;
        let lo = &self.local;
        debug_assert_eq!(lo.origins[node + 1].k, self.now / self.tm.cred);
        let start = lo.origins[node + 1].k_first_n;
        let counter = ((node as u64 + 1) << lo.n_bits) | (start - 1);
        (counter << SEQ_SHIFT) | (1 + self.ports[pi].local as u64)
    }

    /// The lazy timer's wake-up pop of obuf `pi` at the current instant
    /// (`obuf_wake`), in the shuffled test mode: into the running batch of
    /// depth-0 events, at its place.
    pub(super) fn local_insert_now(&mut self, seq: u64, ev: Ev) {
        if ev.background() {
            self.bg_pending += 1;
        }
        let (ports, hcas, msgs) = (&self.ports, &self.hcas, &self.msgs);
        let p = self.local.shuffle.as_ref().unwrap();
        // (the batch's rest is sorted; what it scheduled follows it)
        let within = self.local.batch_left;
        self.nowq
            .insert_pending_by_key(Entry { seq, ev }, within, |e| {
                (p[node_of(ports, hcas, msgs, &e.ev) as usize], e.seq)
            });
        self.local.batch_left += 1;
    }

    /// Test mode of the local order (`LocalOrder::shuffle`): run the
    /// events of one instant and depth grouped by their node, in the order
    /// of a permutation of the nodes drawn from `seed`. Must be called
    /// before the first event.
    #[doc(hidden)]
    pub fn shuffle_local_order(&mut self, seed: u64) -> Result<(), String> {
        let n = self.local.origins.len() - 1;
        if !self.local_order || self.started || n >= SHUFFLE_MAX_NODES {
            return Err(format!(
                "shuffling needs event_order = \"local\", no event run yet and fewer than \
                 {SHUFFLE_MAX_NODES} nodes"
            ));
        }
        let mut perm: Vec<u32> = (0..n as u32).collect();
        let mut s = seed;
        for i in (1..n).rev() {
            let r = super::app::splitmix(&mut s);
            perm.swap(i, (r % (i as u64 + 1)) as usize);
        }
        self.local.shuffle = Some(perm);
        Ok(())
    }
}
