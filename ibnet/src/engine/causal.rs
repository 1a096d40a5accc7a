//! The causal key of every event, checked against the order in which the
//! engine runs them (cargo feature `causal-check`; docs/scaling.md 2.4).
//!
//! The engine orders same-instant events by a global insertion counter.
//! A packet train or a parallel engine cannot keep such a counter: an
//! event skipped by a train, or scheduled on another logical process, has
//! no place in it. The causal key needs no global state:
//!
//! ```text
//! key(E) = (t_E, key(P), k)      P: the event whose handler scheduled E,
//!                                k: E's rank among P's scheduled events
//! ```
//!
//! compared lexicographically. For plain FIFO scheduling the two orders
//! are the same by induction (docs/scaling.md 2.4). This engine is not
//! plain FIFO, though: the lazy credit timer gives the events of a credit
//! tick *virtual* sequence numbers (`engine/mod.rs`), including ticks
//! that never ran because their obuf was dormant, and the direct events
//! (`direct.rs`) are applied where they are scheduled. In causal terms a
//! credit tick of obuf `pi` at `j * Tcred` is the node `Tick(pi, j)`,
//! whose key is `(j * Tcred, key(Tick(pi, j - 1)), 1)`, down to the tick
//! the initialisation scheduled at 0, whether or not the engine ran it.
//! The pops and ticks a tick schedules are its children.
//!
//! With the feature on, every event popped from the queue gets its key
//! and is compared with the previous event's: at the same instant the
//! previous key must be smaller. The first violation stops the run as a
//! model error naming both events. A run that finishes therefore ran its
//! events in causal-key order, which is what a train or a logical process
//! can compute alone. Direct events are not queued and not checked (their
//! proofs are in `direct.rs`); the scheduling ranks `k` they would take do
//! not change any comparison, since only the relative order of siblings
//! counts.
//!
//! Comparing two keys walks up both ancestries while their times are
//! equal. Walked to the end, that is unbounded here: under lockstep
//! traffic (OneHot, every host sending alike) the ancestries of two
//! same-instant flit events stay equal in time back to the start of the
//! run (21 levels at 0.2 us; more than 50 us of history at 50 us of
//! simulated time). So the check, like any engine built on the key, stops
//! the walk at processed events: two processed events ran in key order
//! (checked when they ran), so their ranks in processing order compare as
//! their keys. Only events that never ran (here the lazy timer's skipped
//! ticks; in a packet train, the skipped per-flit events) are walked
//! through, which bounds the walk by the length of such a run of skipped
//! events. Two credit-tick chains of the same period compare by the ticks
//! the initialisation scheduled (their times are equal at every level).
//! Processed events are kept for [`HORIZON_PS`] of simulated time; a walk
//! that needs an older one fails the run with a message (never silently).

use super::dispatch::{Ev, Site};
use super::fabric::Fabric;
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::VecDeque;

/// Simulated time for which processed events are kept for comparisons.
pub const HORIZON_PS: u64 = 50_000_000;

/// The parent of an event: the node whose handler scheduled it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Parent {
    /// The initialisation (sec. 1.4), or a driver's insertion before the
    /// first event: before every processed event.
    Root,
    /// A processed event, by its rank in processing order.
    Node(u64),
    /// The credit tick of obuf `pi` in credit period `j` (the always-ticking
    /// model's tick, whether or not the lazy timer ran it).
    Tick(u32, u64),
}

/// The key of an event: (t, key(parent), k).
#[derive(Clone, Copy, Debug)]
pub(super) struct Key {
    t: u64,
    parent: Parent,
    k: u32,
}

/// What the check found so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CausalSummary {
    /// Events popped from the queue and given a key.
    pub events: u64,
    /// Same-instant neighbours compared by key.
    pub comparisons: u64,
    /// Comparisons that had to walk past the parents (equal parent times).
    pub deep: u64,
    /// The longest walk, in ancestry levels.
    pub max_depth: u32,
    /// Pairs of events that ran one after the other at the same node and
    /// instant (the order a logical process owning the node must
    /// reproduce).
    pub node_pairs: u64,
    /// Of those, the pairs whose parents ran at one instant on two other
    /// nodes (or one of them on this node and the other elsewhere): a
    /// logical process per node could not order them by its own ranks.
    pub cross_ties: u64,
}

pub(super) struct Causal {
    /// (parent, k) of every queued event, by (time, seq): a tick's pop
    /// and next tick share their virtual seq.
    pending: FxHashMap<(u64, u64), (Parent, u32)>,
    /// Keys of processed events with rank `base..base + nodes.len()`.
    nodes: VecDeque<Key>,
    base: u64,
    /// The parent of events scheduled now, and the next rank among its
    /// children.
    cur: Parent,
    next_k: u32,
    last: Option<(Key, Ev)>,
    /// Rank among the initialisation's events of each obuf's tick at 0.
    tick_root: Vec<u32>,
    cred: u64,
    summary: CausalSummary,
    /// Topology node of each port and HCA (where an event runs).
    port_node: Vec<u32>,
    hca_node: Vec<u32>,
    /// The node of the event being processed.
    cur_node: u32,
    cur_t: u64,
    /// Per node: the last event run there (time, parent's node and time,
    /// kind).
    at_node: Vec<(u64, u32, u64, &'static str)>,
    /// Cross ties by the kinds of the two events.
    pub(super) ties: FxHashMap<(&'static str, &'static str), u64>,
    /// (parent's node, parent's time) of every queued event.
    origin: FxHashMap<(u64, u64), (u32, u64)>,
}

impl Causal {
    pub(super) fn new(nports: usize, cred: u64) -> Causal {
        Causal {
            pending: FxHashMap::default(),
            nodes: VecDeque::new(),
            base: 0,
            cur: Parent::Root,
            next_k: 0,
            last: None,
            tick_root: vec![u32::MAX; nports],
            cred,
            summary: CausalSummary::default(),
            port_node: Vec::new(),
            hca_node: Vec::new(),
            cur_node: u32::MAX,
            cur_t: 0,
            at_node: Vec::new(),
            ties: FxHashMap::default(),
            origin: FxHashMap::default(),
        }
    }

    pub(super) fn set_nodes(&mut self, port_node: Vec<u32>, hca_node: Vec<u32>) {
        let n = port_node
            .iter()
            .chain(&hca_node)
            .max()
            .map_or(0, |&m| m as usize + 1);
        self.at_node = vec![(u64::MAX, 0, 0, ""); n];
        self.port_node = port_node;
        self.hca_node = hca_node;
    }

    /// The topology node an event runs at (none for a message's host event).
    fn node_of(&self, ev: &Ev) -> u32 {
        let (v, i) = match ev.site() {
            Site::Port(p) => (&self.port_node, p),
            Site::Hca(h) => (&self.hca_node, h),
            Site::MsgDst(_) => return u32::MAX,
        };
        v.get(i as usize).copied().unwrap_or(u32::MAX)
    }

    pub(super) fn summary(&self) -> CausalSummary {
        self.summary
    }

    /// An event queued with the insertion counter's seq: a child of the
    /// event being processed (or of the root before the first one).
    pub(super) fn child(&mut self, t: u64, seq: u64, ev: &Ev) {
        if let (Parent::Root, Ev::ObufTick { port }) = (self.cur, ev) {
            self.tick_root[*port as usize] = self.next_k;
        }
        self.pending.insert((t, seq), (self.cur, self.next_k));
        self.origin.insert((t, seq), (self.cur_node, self.cur_t));
        self.next_k += 1;
    }

    /// An event queued by the lazy credit timer with a virtual seq: a child
    /// of obuf `pi`'s tick in the period of `now` (the tick that the
    /// always-ticking model runs; `obuf.rs`).
    pub(super) fn tick_child(&mut self, t: u64, seq: u64, pi: usize, now: u64, ev: &Ev) {
        let k = match ev {
            Ev::ObufTick { .. } => 1,
            _ => 0,
        };
        self.pending
            .insert((t, seq), (Parent::Tick(pi as u32, now / self.cred), k));
        let node = self.port_node.get(pi).copied().unwrap_or(u32::MAX);
        self.origin
            .insert((t, seq), (node, now / self.cred * self.cred));
    }

    /// The event `ev` with `seq` is popped at `t`: its key, checked
    /// against the previous event's.
    pub(super) fn pop(&mut self, t: u64, seq: u64, ev: &Ev) -> Result<(), String> {
        let (parent, k) = self
            .pending
            .remove(&(t, seq))
            .ok_or_else(|| format!("causal check: event {ev:?} at {t} ps was never scheduled"))?;
        let key = if let Ev::ObufTick { port } = ev {
            let j = t / self.cred;
            let want = if j == 0 {
                Parent::Root
            } else {
                Parent::Tick(*port, j - 1)
            };
            // scheduled by the previous tick, really (its children take
            // the counter's seq in period 0, or without the lazy timer) or
            // virtually: either way the parent is that tick's node
            if parent != want || t % self.cred != 0 {
                return Err(format!(
                    "causal check: credit tick {ev:?} at {t} ps has parent {parent:?}"
                ));
            }
            self.tick_key(*port, j)
        } else {
            Key { t, parent, k }
        };
        self.summary.events += 1;
        let (pnode, pt) = self.origin.remove(&(t, seq)).unwrap_or((u32::MAX, 0));
        let node = self.node_of(ev);
        let kind = kind_name(ev);
        if let Some(at) = self.at_node.get_mut(node as usize) {
            if at.0 == t {
                self.summary.node_pairs += 1;
                if at.2 == pt && at.1 != pnode {
                    self.summary.cross_ties += 1;
                    *self.ties.entry((at.3, kind)).or_default() += 1;
                }
            }
            *at = (t, pnode, pt, kind);
        }
        self.cur_node = node;
        self.cur_t = t;
        if let Some((prev, pev)) = self.last {
            if prev.t == t {
                self.summary.comparisons += 1;
                let (ord, depth) = self.cmp(prev, key)?;
                if depth > 1 {
                    self.summary.deep += 1;
                }
                self.summary.max_depth = self.summary.max_depth.max(depth);
                if ord != Ordering::Less {
                    return Err(format!(
                        "causal check: at {t} ps {pev:?} (key {prev:?}) ran before {ev:?} (key {key:?})"
                    ));
                }
            }
        }
        self.last = Some((key, *ev));
        let rank = self.base + self.nodes.len() as u64;
        self.nodes.push_back(key);
        while self.nodes.front().is_some_and(|n| n.t + HORIZON_PS < t) {
            self.nodes.pop_front();
            self.base += 1;
        }
        self.cur = match ev {
            Ev::ObufTick { port } => Parent::Tick(*port, t / self.cred),
            _ => Parent::Node(rank),
        };
        self.next_k = 0;
        Ok(())
    }

    fn tick_key(&self, pi: u32, j: u64) -> Key {
        if j == 0 {
            Key {
                t: 0,
                parent: Parent::Root,
                k: self.tick_root[pi as usize],
            }
        } else {
            Key {
                t: j * self.cred,
                parent: Parent::Tick(pi, j - 1),
                k: 1,
            }
        }
    }

    /// The key of a parent (not the root).
    fn key_of(&self, p: Parent) -> Result<Key, String> {
        match p {
            Parent::Root => unreachable!("the root has no key"),
            Parent::Tick(pi, j) => Ok(self.tick_key(pi, j)),
            Parent::Node(n) => {
                if n < self.base {
                    return Err(format!(
                        "causal check: a comparison needs an event older than the horizon of {HORIZON_PS} ps"
                    ));
                }
                Ok(self.nodes[(n - self.base) as usize])
            }
        }
    }

    /// Compare two keys; also the number of ancestry levels walked.
    fn cmp(&self, mut a: Key, mut b: Key) -> Result<(Ordering, u32), String> {
        let mut depth = 0;
        loop {
            depth += 1;
            if a.t != b.t {
                return Ok((a.t.cmp(&b.t), depth));
            }
            if a.parent == b.parent {
                return Ok((a.k.cmp(&b.k), depth));
            }
            match (a.parent, b.parent) {
                // the root ran before every event
                (Parent::Root, _) => return Ok((Ordering::Less, depth)),
                (_, Parent::Root) => return Ok((Ordering::Greater, depth)),
                // two tick chains at equal times all the way down
                (Parent::Tick(pa, ja), Parent::Tick(pb, jb)) if ja == jb => {
                    let (ra, rb) = (self.tick_root[pa as usize], self.tick_root[pb as usize]);
                    return Ok((ra.cmp(&rb), depth));
                }
                // two processed events: they ran in key order (checked
                // when they ran), so their ranks compare as their keys
                (Parent::Node(na), Parent::Node(nb)) => return Ok((na.cmp(&nb), depth)),
                (pa, pb) => {
                    a = self.key_of(pa)?;
                    b = self.key_of(pb)?;
                }
            }
        }
    }
}

/// The name of an event's kind (the cross-tie histogram).
fn kind_name(ev: &Ev) -> &'static str {
    match ev {
        Ev::AppStart { .. } => "AppStart",
        Ev::AppInject { .. } => "AppInject",
        Ev::AppDone { .. } => "AppDone",
        Ev::GenMsg { .. } => "GenMsg",
        Ev::GenPush { .. } => "GenPush",
        Ev::GenSent { .. } => "GenSent",
        Ev::ArbFlit { .. } => "ArbFlit",
        Ev::ArbPop { .. } => "ArbPop",
        Ev::ArbTxCred { .. } => "ArbTxCred",
        Ev::ArbKick { .. } => "ArbKick",
        Ev::ObufFlit { .. } => "ObufFlit",
        Ev::ObufRxCred { .. } => "ObufRxCred",
        Ev::ObufTick { .. } => "ObufTick",
        Ev::ObufPop { .. } => "ObufPop",
        Ev::ObufPopTimer { .. } => "ObufPopTimer",
        Ev::IbufFlit { .. } => "IbufFlit",
        Ev::IbufFc { .. } => "IbufFc",
        Ev::IbufSent { .. } => "IbufSent",
        Ev::SinkFlit { .. } => "SinkFlit",
        Ev::SinkDrain { .. } => "SinkDrain",
        Ev::SinkDrainTimer { .. } => "SinkDrainTimer",
        Ev::SinkHiccup { .. } => "SinkHiccup",
        Ev::CctiTimer { .. } => "CctiTimer",
        Ev::QpDone { .. } => "QpDone",
        Ev::LossRto { .. } => "LossRto",
        Ev::HostLanded { .. } => "HostLanded",
    }
}

impl Fabric {
    /// What the causal-order check found so far (a violation stops the run
    /// as a model error, [`Fabric::error`]).
    pub fn causal_check(&self) -> CausalSummary {
        self.causal.summary()
    }

    /// Cross ties (see [`CausalSummary::cross_ties`]) by the kinds of the
    /// two events, most frequent first.
    pub fn causal_cross_ties(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .causal
            .ties
            .iter()
            .map(|((a, b), n)| (format!("{a} then {b}"), *n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 256_000;

    fn kick(port: u32) -> Ev {
        Ev::ArbKick { port }
    }

    /// Two init events, each scheduling two children at the same instant:
    /// the children run parent by parent, then by rank.
    #[test]
    fn children_run_by_parent_then_rank() {
        let mut c = Causal::new(2, P);
        c.child(10, 1, &kick(0));
        c.child(10, 2, &kick(1));
        c.pop(10, 1, &kick(0)).unwrap();
        c.child(20, 3, &kick(0));
        c.child(20, 4, &kick(0));
        c.pop(10, 2, &kick(1)).unwrap();
        c.child(20, 5, &kick(1));
        c.pop(20, 3, &kick(0)).unwrap();
        c.pop(20, 4, &kick(0)).unwrap();
        c.pop(20, 5, &kick(1)).unwrap();
        let s = c.summary();
        assert_eq!((s.events, s.comparisons), (5, 3));
    }

    /// The check fails when the engine runs a later key first.
    #[test]
    fn a_later_key_first_is_a_violation() {
        let mut c = Causal::new(2, P);
        c.child(10, 1, &kick(0));
        c.child(10, 2, &kick(1));
        c.pop(10, 1, &kick(0)).unwrap();
        c.child(20, 3, &kick(0));
        c.pop(10, 2, &kick(1)).unwrap();
        c.child(20, 4, &kick(1));
        c.pop(20, 4, &kick(1)).unwrap();
        let e = c.pop(20, 3, &kick(0)).unwrap_err();
        assert!(e.contains("at 20 ps ArbKick { port: 1 }"), "{e}");
        let e = c.pop(30, 9, &kick(0)).unwrap_err();
        assert!(e.contains("never scheduled"), "{e}");
    }

    /// Ticks skipped by the lazy timer: the pop a tick of period 3
    /// schedules at 3P + 1 ns comes before a flit event at that instant
    /// scheduled at 3P + 0.5 ns, and ticks of two obufs compare by the
    /// initialisation's order, with no processed tick in between.
    #[test]
    fn skipped_ticks_are_walked_through() {
        let mut c = Causal::new(2, P);
        c.child(0, 1, &Ev::ObufTick { port: 1 });
        c.child(0, 2, &Ev::ObufTick { port: 0 });
        c.pop(0, 1, &Ev::ObufTick { port: 1 }).unwrap();
        c.pop(0, 2, &Ev::ObufTick { port: 0 }).unwrap();
        // an event at 3P + 0.5 ns schedules a flit event at 3P + 1 ns; a
        // dormant obuf 0 wakes and re-arms its timer in period 3
        c.child(3 * P + 500, 10, &kick(0));
        c.pop(3 * P + 500, 10, &kick(0)).unwrap();
        c.child(3 * P + 1000, 11, &kick(0));
        c.tick_child(
            3 * P + 1000,
            12,
            0,
            3 * P + 500,
            &Ev::ObufPopTimer { port: 0 },
        );
        c.tick_child(4 * P, 13, 0, 3 * P + 500, &Ev::ObufTick { port: 0 });
        c.tick_child(4 * P, 14, 1, 3 * P + 500, &Ev::ObufTick { port: 1 });
        let e = c.clone_pop_order(&[(3 * P + 1000, 11), (3 * P + 1000, 12)]);
        assert!(e.is_err(), "the flit event ran before the tick's pop");
        c.pop(3 * P + 1000, 12, &Ev::ObufPopTimer { port: 0 })
            .unwrap();
        c.pop(3 * P + 1000, 11, &kick(0)).unwrap();
        // obuf 1's tick was scheduled first at initialisation
        let e = c.clone_pop_order(&[(4 * P, 13), (4 * P, 14)]);
        assert!(e.is_err(), "obuf 0's tick ran before obuf 1's");
        c.pop(4 * P, 14, &Ev::ObufTick { port: 1 }).unwrap();
        c.pop(4 * P, 13, &Ev::ObufTick { port: 0 }).unwrap();
        // the flit event against the pop: one level past the parents
        assert_eq!(c.summary().deep, 1);
    }

    impl Causal {
        /// Pops the given (time, seq) events in this order on a copy.
        fn clone_pop_order(&self, order: &[(u64, u64)]) -> Result<(), String> {
            let mut c = Causal {
                pending: self.pending.clone(),
                nodes: self.nodes.clone(),
                base: self.base,
                cur: self.cur,
                next_k: self.next_k,
                last: self.last,
                tick_root: self.tick_root.clone(),
                cred: self.cred,
                summary: self.summary,
                port_node: self.port_node.clone(),
                hca_node: self.hca_node.clone(),
                cur_node: self.cur_node,
                cur_t: self.cur_t,
                at_node: self.at_node.clone(),
                ties: self.ties.clone(),
                origin: self.origin.clone(),
            };
            for &(t, seq) in order {
                let ev = match c.pending.get(&(t, seq)) {
                    Some(_) if t % P == 0 => Ev::ObufTick {
                        port: (seq % 2) as u32,
                    },
                    _ => kick(0),
                };
                c.pop(t, seq, &ev)?;
            }
            Ok(())
        }
    }
}
