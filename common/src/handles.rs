//! A map from a co-simulation's message handles to small indices, built
//! for the per-message path of both sides (docs/cosim.md, "Speed: what the
//! coupling costs"): the fabric server maps the scheduler's handles to its
//! message ids with it, and loggopsim maps the handles of its messages in
//! flight to their slots. Both sides meet every insert and every arrival
//! here, serially with the fabric's own work, and a hash map's lookup there
//! is a cache miss or two per message that a window of a vector, walked in
//! handle order, avoids.
//!
//! It gives exactly the answers of a hash map (property test below).

use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

/// What a handle maps to: the fabric's message id, the scheduler's slot.
pub type MsgId = u64;

/// Handle -> message id (or any other index). Schedulers number their
/// messages 0, 1, 2, ... (loggopsim does): such handles index a window of a vector, from the
/// oldest handle still in flight to the newest (4 bytes per handle in
/// that span); any other handle goes to a hash map. The window grows only
/// while it stays dense (its end at most twice the handles ever put in
/// it, plus `Self::GROW`), so a sparse numbering, say every 1000th
/// integer, cannot make it grow by more than a few bytes per message.
#[derive(Default)]
pub struct HandleMap {
    /// id + 1 per handle from `base` on, 0: absent
    dense: VecDeque<u32>,
    base: u64,
    /// handles ever put into `dense`
    dense_inserted: u64,
    sparse: HashMap<u64, MsgId>,
    /// handles present (dense and sparse)
    live: usize,
}

impl HandleMap {
    /// Slack of the density rule: the first handles may be this sparse.
    const GROW: u64 = 4096;

    #[inline]
    fn slot(&self, h: u64) -> Option<usize> {
        let i = h.checked_sub(self.base)?;
        (i < self.dense.len() as u64).then_some(i as usize)
    }

    #[inline]
    pub fn get(&self, h: &u64) -> Option<MsgId> {
        match self.slot(*h) {
            // (a sparse handle stays in the map when the window grows
            // past it later)
            Some(i) => match self.dense[i] {
                0 if self.sparse.is_empty() => None,
                0 => self.sparse.get(h).copied(),
                v => Some(v as MsgId - 1),
            },
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(h).copied(),
        }
    }

    pub fn contains_key(&self, h: &u64) -> bool {
        self.get(h).is_some()
    }

    /// Handles present.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Insert a handle that is not present (the caller checked).
    #[inline]
    pub fn insert(&mut self, h: u64, id: MsgId) {
        self.live += 1;
        let end = self.base + self.dense.len() as u64;
        let fits = h >= self.base && (h < end || h <= 2 * self.dense_inserted + Self::GROW);
        if fits && id < u32::MAX as MsgId && h - self.base < u32::MAX as u64 {
            if h >= end {
                if self.dense.is_empty() {
                    // an empty window may start anywhere
                    self.base = h;
                }
                let len = (h - self.base) as usize + 1;
                if len == self.dense.len() + 1 {
                    // the common case: the next handle in sequence
                    self.dense.push_back(0);
                } else {
                    self.dense.resize(len, 0);
                }
            }
            let i = (h - self.base) as usize;
            self.dense[i] = id as u32 + 1;
            self.dense_inserted += 1;
        } else {
            self.sparse.insert(h, id);
        }
    }

    #[inline]
    pub fn remove(&mut self, h: &u64) -> Option<MsgId> {
        let r = self.remove_inner(h);
        self.live -= r.is_some() as usize;
        r
    }

    #[inline]
    fn remove_inner(&mut self, h: &u64) -> Option<MsgId> {
        let Some(i) = self.slot(*h) else {
            return self.sparse.remove(h);
        };
        match std::mem::take(&mut self.dense[i]) {
            0 => self.sparse.remove(h),
            v => {
                // the window starts at the oldest handle still present
                while self.dense.front() == Some(&0) {
                    self.dense.pop_front();
                    self.base += 1;
                }
                Some(v as MsgId - 1)
            }
        }
    }

    /// Entries of the window (tests: its memory).
    #[cfg(test)]
    fn dense_len(&self) -> usize {
        self.dense.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Handles 1000 apart: the vector stops growing after the first few,
    /// the rest go to the map (and every answer stays right).
    #[test]
    fn handle_map_sparse_numbering_stays_small() {
        let mut m = HandleMap::default();
        for k in 0..10_000u64 {
            m.insert(k * 1000, k);
        }
        assert!(m.dense_len() <= 2 * 5 + 4096 + 1, "{}", m.dense_len());
        for k in 0..10_000u64 {
            assert_eq!(m.get(&(k * 1000)), Some(k));
        }
        assert_eq!(m.get(&1), None);
        // sequential handles stay in the window, which follows the
        // handles in flight (here at most 10)
        let mut m = HandleMap::default();
        for k in 0..100_000u64 {
            m.insert(k, k);
            if k >= 9 {
                assert_eq!(m.remove(&(k - 9)), Some(k - 9));
            }
        }
        assert!(m.dense_len() <= 10, "{}", m.dense_len());
        assert!(m.sparse.is_empty());
        assert_eq!(m.get(&99_999), Some(99_999));
        assert_eq!(m.get(&5), None);
    }

    proptest! {
        /// Any handles (sequential, repeated, sparse): the answers of a
        /// hash map.
        #[test]
        fn handle_map_equals_a_hash_map(
            ops in proptest::collection::vec((0u8..3, prop_oneof![0u64..64, 0u64..100_000, any::<u64>()], 0u64..1000), 1..300),
        ) {
            let mut m = HandleMap::default();
            let mut r: HashMap<u64, MsgId> = HashMap::default();
            for &(op, h, id) in &ops {
                match op {
                    0 if !r.contains_key(&h) => {
                        m.insert(h, id);
                        r.insert(h, id);
                    }
                    1 => prop_assert_eq!(m.remove(&h), r.remove(&h)),
                    _ => {}
                }
                prop_assert_eq!(m.get(&h), r.get(&h).copied());
                prop_assert_eq!(m.contains_key(&h), r.contains_key(&h));
                prop_assert_eq!(m.len(), r.len());
            }
        }
    }
}
