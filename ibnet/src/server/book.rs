//! The server's per-message bookkeeping structures, built for the
//! co-simulation's per-record path (every insert and every
//! arrival passes through them, serially with the fabric's own work).
//!
//! - [`HandleMap`](ibcosim_common::handles::HandleMap) (in the
//!   `ibcosim-common` crate, shared with loggopsim): the scheduler's
//!   handle -> the fabric's message id.
//! - [`EarliestBound`]: the smallest `t_insert + lower bound` of the
//!   messages in flight (the per-message part of a version-2 grant).
//!
//! Both give exactly the answers of the plain structures they replace
//! (a hash map; a binary heap with lazy deletion), tested against them
//! below.

use super::HashMap;
use crate::engine::MsgId;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The smallest key `t_insert + lb` over the messages in flight, where
/// completed messages are dropped lazily (when they reach the front).
///
/// A binary heap does this in O(log n) per message. Here the entries are
/// kept in FIFO lanes, one per distinct `lb` (a route length and a
/// message size; a workload has few): a scheduler inserts in time order,
/// so each lane's keys are already sorted and its front is its minimum.
/// An entry that would break its lane's order, or whose `lb` finds no
/// lane (more than [`Self::LANES`] distinct values), goes to a heap. The
/// minimum is that of the lanes' fronts and the heap's top: the same
/// value as a single heap's, since every structure's front is its
/// smallest live key.
#[derive(Default)]
pub(super) struct EarliestBound {
    lanes: Vec<(u64, VecDeque<(u64, MsgId)>)>,
    heap: BinaryHeap<Reverse<(u64, MsgId)>>,
}

impl EarliestBound {
    const LANES: usize = 8;

    pub(super) fn push(&mut self, t_insert: u64, lb: u64, id: MsgId) {
        let key = t_insert.saturating_add(lb);
        let full = self.lanes.len() >= Self::LANES;
        match self.lanes.iter_mut().find(|l| l.0 == lb) {
            Some((_, q)) => {
                if q.back().is_none_or(|b| b.0 <= key) {
                    q.push_back((key, id));
                    return;
                }
            }
            None if !full => {
                self.lanes.push((lb, VecDeque::from([(key, id)])));
                return;
            }
            None => {}
        }
        self.heap.push(Reverse((key, id)));
    }

    /// The smallest key of a message for which `done` is false (dropping
    /// the completed ones met on the way), or None.
    pub(super) fn min(&mut self, done: impl Fn(MsgId) -> bool) -> Option<u64> {
        let mut m: Option<u64> = None;
        for (_, q) in &mut self.lanes {
            while let Some(&(k, id)) = q.front() {
                if done(id) {
                    q.pop_front();
                } else {
                    m = Some(m.map_or(k, |x| x.min(k)));
                    break;
                }
            }
        }
        while let Some(&Reverse((k, id))) = self.heap.peek() {
            if done(id) {
                self.heap.pop();
            } else {
                m = Some(m.map_or(k, |x| x.min(k)));
                break;
            }
        }
        m
    }
}

/// Per-message records indexed by the fabric's message id (dense, in
/// insert order), of which only a window is kept: records at the front
/// are dropped once done, so memory follows the messages in flight, not
/// every message of the run (a long co-simulation inserts millions; each
/// record is ~100 bytes, and growing a vector of them also cost page
/// faults on the per-insert path).
pub(super) struct Window<T> {
    /// id of `q[0]`
    base: u64,
    q: VecDeque<T>,
}

impl<T> Default for Window<T> {
    fn default() -> Self {
        Window {
            base: 0,
            q: VecDeque::new(),
        }
    }
}

impl<T> Window<T> {
    /// The id the next `push` gets.
    pub(super) fn next_id(&self) -> u64 {
        self.base + self.q.len() as u64
    }

    pub(super) fn push(&mut self, v: T) {
        self.q.push_back(v);
    }

    /// The record of `id`; None if it was dropped or never pushed.
    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<&T> {
        self.q
            .get(usize::try_from(id.checked_sub(self.base)?).ok()?)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        self.q
            .get_mut(usize::try_from(id.checked_sub(self.base)?).ok()?)
    }

    /// Drop the records at the front for which `done` holds.
    pub(super) fn trim(&mut self, done: impl Fn(&T) -> bool) {
        while let Some(v) = self.q.front() {
            if !done(v) {
                break;
            }
            self.q.pop_front();
            self.base += 1;
        }
    }
}

/// Route length in switches per (source HCA, destination HCA), filled as
/// routes are asked for: a byte per pair up to [`Self::DENSE_HCAS`] HCAs
/// (4 MiB at most), a hash map beyond.
pub(super) struct HopsCache {
    n: usize,
    /// hops + 1 per pair, 0: not known yet
    dense: Vec<u8>,
    sparse: HashMap<(usize, usize), usize>,
}

impl HopsCache {
    const DENSE_HCAS: usize = 2048;

    pub(super) fn new(n: usize) -> HopsCache {
        HopsCache {
            n,
            dense: Vec::new(),
            sparse: HashMap::default(),
        }
    }

    #[inline]
    pub(super) fn get(&self, src: usize, dst: usize) -> Option<usize> {
        if let Some(&v) = self.dense.get(src * self.n + dst) {
            if v != 0 {
                return Some(v as usize - 1);
            }
        }
        if self.sparse.is_empty() {
            return None;
        }
        self.sparse.get(&(src, dst)).copied()
    }

    /// Hints the CPU to load the entry of (src, dst) (see `prefetch.rs`).
    #[inline]
    pub(super) fn prefetch(&self, src: usize, dst: usize) {
        if src < self.n && dst < self.n && !self.dense.is_empty() {
            crate::prefetch::line(self.dense.as_ptr().wrapping_add(src * self.n + dst));
        }
    }

    pub(super) fn set(&mut self, src: usize, dst: usize, hops: usize) {
        if self.n <= Self::DENSE_HCAS && src < self.n && dst < self.n && hops < 255 {
            if self.dense.is_empty() {
                self.dense = vec![0; self.n * self.n];
            }
            self.dense[src * self.n + dst] = hops as u8 + 1;
        } else {
            self.sparse.insert((src, dst), hops);
        }
    }

    /// Forget the hash map's routes (memory after an n^2 scan); the dense
    /// table is bounded and stays.
    pub(super) fn trim(&mut self) {
        self.sparse = HashMap::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn window_keeps_ids_after_trimming() {
        let mut w: Window<u32> = Window::default();
        for v in 0..5 {
            assert_eq!(w.next_id(), v as u64);
            w.push(v * 10);
        }
        w.trim(|&v| v < 20);
        assert_eq!(w.next_id(), 5);
        assert_eq!(w.get(1), None);
        assert_eq!(w.get(2), Some(&20));
        assert_eq!(w.get(4), Some(&40));
        assert_eq!(w.get(5), None);
        *w.get_mut(3).unwrap() = 7;
        // a record not done stops the trim, even if later ones are
        w.trim(|&v| v != 20);
        assert_eq!(w.get(3), Some(&7));
    }

    #[test]
    fn hops_cache_dense_and_sparse() {
        for n in [3, 3000] {
            let mut c = HopsCache::new(n);
            assert_eq!(c.get(1, 2), None);
            c.set(1, 2, 0);
            c.set(2, 1, 5);
            c.set(0, 0, 300);
            assert_eq!(c.get(1, 2), Some(0));
            assert_eq!(c.get(2, 1), Some(5));
            assert_eq!(c.get(0, 0), Some(300));
            assert_eq!(c.get(0, 1), None);
        }
    }

    proptest! {
        /// Random inserts (in order or not, few or many distinct bounds)
        /// and completions: the same minimum as a heap with lazy deletion.
        #[test]
        fn earliest_bound_equals_a_heap(
            ops in proptest::collection::vec((0u64..50, 0u64..12, any::<bool>(), 0usize..64), 1..300),
        ) {
            let mut b = EarliestBound::default();
            let mut heap: BinaryHeap<Reverse<(u64, MsgId)>> = BinaryHeap::new();
            let mut done: HashSet<MsgId> = HashSet::new();
            let mut t = 0u64;
            for (i, &(dt, lb, back, complete)) in ops.iter().enumerate() {
                // mostly in time order, sometimes back in time
                t = if back { t.saturating_sub(dt) } else { t + dt };
                let id = i as MsgId;
                b.push(t, lb * 1000, id);
                heap.push(Reverse((t + lb * 1000, id)));
                if complete < i {
                    done.insert(complete as MsgId);
                }
                let expect = loop {
                    match heap.peek() {
                        Some(&Reverse((_, id))) if done.contains(&id) => { heap.pop(); }
                        Some(&Reverse((k, _))) => break Some(k),
                        None => break None,
                    }
                };
                prop_assert_eq!(b.min(|id| done.contains(&id)), expect);
            }
        }
    }
}
