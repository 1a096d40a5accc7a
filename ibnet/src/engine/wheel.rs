//! Timing wheel (calendar queue) over event times with an overflow heap,
//! popping in exact (time, seq) order.
//!
//! Why: the fabric has about a thousand pending events whose times lie
//! almost all within a credit period (256 ns) of the current time, tens of
//! them per nanosecond. A wheel of `SLOTS` slots of `2^SHIFT` ps each makes
//! a push O(1) (append to the slot) and a pop O(1) amortised plus one small
//! sort per slot, instead of the O(log n) moves of a heap.
//!
//! Invariants (`base` = start time of the slot being drained, `H` = span of
//! the wheel):
//! - every queued item has time >= `base` (pushes are never earlier than
//!   the last pop), except *early* items: pushed after a peek had moved the
//!   base past their time (a driver peeks at the next event, then injects
//!   at the current instant), they go into the base slot's sorted vector,
//!   ahead of everything else, since they are smaller than every item
//!   elsewhere;
//! - items with time < `base + H` are in the wheel, in slot
//!   `(t >> SHIFT) % SLOTS`; the others are in `far`, a binary heap;
//! - the slot of `base` is kept sorted ascending by (time, seq) from index
//!   `head` on; every other slot is unsorted until it becomes the base slot;
//! - a slot other than the base slot whose items are not in ascending
//!   (time, seq) order has its bit in `unsorted` set (checked at each push
//!   against the slot's last item, so that advancing to an already sorted
//!   slot, the common case, reads nothing);
//! - bit i of `occ` is set iff slot i holds an item (from `head` for the
//!   base slot).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

const SHIFT: u32 = 8;
const SLOTS: usize = 1024;
const WORDS: usize = SLOTS / 64;
const SPAN: u64 = (SLOTS as u64) << SHIFT;
/// A drained slot keeps a buffer of up to this many entries whatever its
/// last round held (see [`Wheel::release_base_slot`]).
const KEEP_MIN: usize = 512;

struct Far<T>(u64, u64, T);

impl<T> PartialEq for Far<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl<T> Eq for Far<T> {}
impl<T> PartialOrd for Far<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Far<T> {
    // reversed: BinaryHeap is a max-heap, we want the smallest key on top
    fn cmp(&self, o: &Self) -> Ordering {
        (o.0, o.1).cmp(&(self.0, self.1))
    }
}

pub(crate) struct Wheel<T: Copy> {
    /// start time of the base slot (a multiple of 2^SHIFT)
    base: u64,
    /// index of the base slot
    bslot: usize,
    /// first unpopped item of the base slot
    head: usize,
    len: usize,
    /// the items of the base slot (its entry in `slots` is empty)
    cur: Vec<(u64, u64, T)>,
    occ: Box<[u64; WORDS]>,
    /// slots that need a sort when they become the base slot
    unsorted: Box<[u64; WORDS]>,
    slots: Vec<Vec<(u64, u64, T)>>,
    far: BinaryHeap<Far<T>>,
    /// scratch buffer of the counting sort
    tmp: Vec<(u64, u64, T)>,
    /// Sequence numbers whose bits from this one up name the group that
    /// pushed the item, each group pushing in its own order (the local
    /// order's origin node, order.rs); 0: no such structure.
    group_shift: u32,
    /// scratch counters of the sort by group
    counts: Vec<u32>,
}

/// Sort a slot by (time, seq). Items were appended in push order, which is
/// seq order except for virtual-seq and far-heap items. Small slots: an
/// insertion sort. Large ones (the fabric often has a hundred events at a
/// few identical instants): a stable counting sort on the time offset
/// within the slot, which leaves equal times in push order; if that is not
/// seq order after all, a full sort.
fn sort_slot<T: Copy>(
    v: &mut [(u64, u64, T)],
    tmp: &mut Vec<(u64, u64, T)>,
    group_shift: u32,
    counts: &mut Vec<u32>,
) {
    // Most slots arrive sorted already (the fabric's delays are whole
    // nanoseconds at QDR, so a 256 ps slot holds one instant, pushed in seq
    // order): one comparison pass instead of a counting sort over 256 bins.
    if v.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)) {
        return;
    }
    if v.len() <= 24 {
        insertion_sort(v);
        return;
    }
    // (one instant in the slot, the common case: only its keys to sort)
    let t0 = v[0].0;
    if v.iter().all(|e| e.0 == t0) {
        sort_run(v, tmp, group_shift, counts);
        return;
    }
    const W: usize = 1 << SHIFT;
    let mut pos = [0u32; W + 1];
    for e in v.iter() {
        pos[(e.0 as usize & (W - 1)) + 1] += 1;
    }
    for i in 1..=W {
        pos[i] += pos[i - 1];
    }
    tmp.clear();
    tmp.extend_from_slice(v);
    for e in tmp.iter() {
        let k = e.0 as usize & (W - 1);
        v[pos[k] as usize] = *e;
        pos[k] += 1;
    }
    // now in time order: sort each run of one time by seq where needed
    // (pushes at one instant are in seq order in the FIFO order; the local
    // order's keys are not, order.rs)
    let mut i = 0;
    while i < v.len() {
        let t = v[i].0;
        let mut j = i + 1;
        while j < v.len() && v[j].0 == t {
            j += 1;
        }
        sort_run(&mut v[i..j], tmp, group_shift, counts);
        i = j;
    }
}

/// Sort items of one time by seq. With groups (the local order: the
/// origin node in the high bits, each node's pushes in its own counter's
/// order but for the keys of skipped credit ticks), a stable counting sort
/// by group leaves runs that are sorted already or nearly so: on a
/// network of hundreds of hosts an instant holds a thousand events from
/// as many nodes, and a comparison sort of them was a quarter of the
/// local order's instructions.
fn sort_run<T: Copy>(
    run: &mut [(u64, u64, T)],
    tmp: &mut Vec<(u64, u64, T)>,
    group_shift: u32,
    counts: &mut Vec<u32>,
) {
    if run.is_sorted_by_key(|e| e.1) {
        return;
    }
    if run.len() <= 24 {
        insertion_sort(run);
        return;
    }
    let (mut lo, mut hi) = (u64::MAX, 0);
    if group_shift > 0 {
        for e in run.iter() {
            let g = e.1 >> group_shift;
            lo = lo.min(g);
            hi = hi.max(g);
        }
    }
    // (no groups, or so many that counting them costs more than sorting)
    if group_shift == 0 || hi - lo > 4 * run.len() as u64 + 256 {
        run.sort_unstable_by_key(|e| e.1);
        return;
    }
    let groups = (hi - lo + 1) as usize;
    counts.clear();
    counts.resize(groups + 1, 0);
    for e in run.iter() {
        counts[((e.1 >> group_shift) - lo) as usize + 1] += 1;
    }
    for g in 1..=groups {
        counts[g] += counts[g - 1];
    }
    tmp.clear();
    tmp.extend_from_slice(run);
    for e in tmp.iter() {
        let g = ((e.1 >> group_shift) - lo) as usize;
        run[counts[g] as usize] = *e;
        counts[g] += 1;
    }
    // (`counts[g]` is now the end of group g)
    let mut start = 0;
    for &end in &counts[..groups] {
        let group = &mut run[start..end as usize];
        if !group.is_sorted_by_key(|e| e.1) {
            if group.len() <= 24 {
                insertion_sort(group);
            } else {
                group.sort_unstable_by_key(|e| e.1);
            }
        }
        start = end as usize;
    }
}

#[inline]
fn insertion_sort<T: Copy>(v: &mut [(u64, u64, T)]) {
    for i in 1..v.len() {
        let e = v[i];
        let k = (e.0, e.1);
        let mut j = i;
        while j > 0 && (v[j - 1].0, v[j - 1].1) > k {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}

#[inline]
fn slot_of(t: u64) -> usize {
    ((t >> SHIFT) as usize) & (SLOTS - 1)
}

impl<T: Copy> Wheel<T> {
    pub fn new() -> Self {
        Wheel {
            base: 0,
            bslot: 0,
            head: 0,
            len: 0,
            cur: Vec::new(),
            occ: Box::new([0; WORDS]),
            unsorted: Box::new([0; WORDS]),
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            far: BinaryHeap::new(),
            tmp: Vec::new(),
            group_shift: 0,
            counts: Vec::new(),
        }
    }

    /// Sequence numbers from bit `shift` up name the group that pushed the
    /// item, and each group pushes mostly in seq order (a faster sort of a
    /// slot; the order is the same).
    pub fn set_key_groups(&mut self, shift: u32) {
        self.group_shift = shift;
    }

    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Buffer capacity of slot `s` (tests).
    #[cfg(test)]
    fn slot_capacity(&self, s: usize) -> usize {
        if s == self.bslot {
            self.cur.capacity()
        } else {
            self.slots[s].capacity()
        }
    }

    #[inline]
    fn set_occ(&mut self, s: usize) {
        self.occ[s >> 6] |= 1u64 << (s & 63);
    }

    #[inline]
    fn clear_occ(&mut self, s: usize) {
        self.occ[s >> 6] &= !(1u64 << (s & 63));
    }

    /// Next occupied slot at or after the base slot (cyclically).
    #[inline]
    fn next_occupied(&self) -> Option<usize> {
        let start = self.bslot;
        let w0 = start >> 6;
        let first = self.occ[w0] & (!0u64 << (start & 63));
        if first != 0 {
            return Some((w0 << 6) | first.trailing_zeros() as usize);
        }
        for k in 1..=WORDS {
            let w = (w0 + k) & (WORDS - 1);
            let bits = if k == WORDS {
                self.occ[w] & !(!0u64 << (start & 63))
            } else {
                self.occ[w]
            };
            if bits != 0 {
                return Some((w << 6) | bits.trailing_zeros() as usize);
            }
        }
        None
    }

    /// Insert into the wheel (t in [base, base + SPAN)).
    #[inline(always)]
    fn put(&mut self, e: (u64, u64, T)) {
        let s = slot_of(e.0);
        if s == self.bslot {
            self.insert_base(e);
        } else {
            self.push_slot(s, e);
        }
        self.set_occ(s);
    }

    /// Sorted insert into the base slot's vector (from `head` on); new
    /// items usually have the largest key, so the scan starts at the end.
    #[inline(always)]
    fn insert_base(&mut self, e: (u64, u64, T)) {
        let v = &mut self.cur;
        let key = (e.0, e.1);
        let mut pos = v.len();
        while pos > self.head && (v[pos - 1].0, v[pos - 1].1) > key {
            pos -= 1;
        }
        v.insert(pos, e);
    }

    /// Append to a slot other than the base slot, noting whether it is
    /// still sorted.
    #[inline(always)]
    fn push_slot(&mut self, s: usize, e: (u64, u64, T)) {
        let v = &mut self.slots[s];
        if let Some(l) = v.last() {
            if (l.0, l.1) > (e.0, e.1) {
                self.unsorted[s >> 6] |= 1u64 << (s & 63);
            }
        }
        v.push(e);
    }

    /// The base slot is drained: empty it for its next round. A slot keeps
    /// its buffer between rounds (no allocation in a steady run), but not
    /// one much larger than this round needed: otherwise every slot keeps
    /// the capacity of its busiest round ever (the credit ticks of all
    /// ports fall into one slot), which on the 1944-node network was most
    /// of the process's memory (about 150 MB of 5 million idle entries).
    #[inline]
    fn release_base_slot(&mut self) {
        let v = &mut self.cur;
        let held = v.len();
        // (hysteresis: a slot whose load only varies by a small factor
        // from round to round is not reallocated every round)
        if v.capacity() > KEEP_MIN && v.capacity() > 4 * held {
            *v = Vec::with_capacity(2 * held);
        } else {
            v.clear();
        }
        self.head = 0;
        self.clear_occ(self.bslot);
    }

    /// Insert an item with time `t` and sequence number `seq`.
    #[inline(always)]
    pub fn push(&mut self, t: u64, seq: u64, v: T) {
        // one comparison on the common path: t < base wraps to a huge
        // offset and takes the slow branch
        if t.wrapping_sub(self.base) >= SPAN {
            if t < self.base {
                self.push_early((t, seq, v));
            } else {
                self.len += 1;
                self.far.push(Far(t, seq, v));
            }
            return;
        }
        self.len += 1;
        self.put((t, seq, v));
    }

    /// An item earlier than the base (after a peek moved the base past the
    /// current instant): it is smaller than every item outside the base
    /// slot's vector, so a sorted insert there keeps every pop exact. (A
    /// rebuild of the whole wheel with a sort of every item would cost
    /// about 3 % of a closed-loop or co-simulation run's instructions,
    /// where each injection after a completion may come after such a peek.)
    /// Out of line: rare within a run, so `push` stays small.
    #[inline(never)]
    fn push_early(&mut self, e: (u64, u64, T)) {
        self.insert_base(e);
        self.len += 1;
        self.set_occ(self.bslot);
    }

    /// Move the base to slot `s` (occupied, or the slot of the far minimum
    /// when the wheel is empty), pull in far items now within the span and
    /// sort the new base slot. The base slot's items live in `cur` (one
    /// indirection less on every pop); its entry in `slots` keeps the
    /// buffer it had.
    fn advance(&mut self, s: Option<usize>) {
        // the old base slot is drained (and released by `pop`)
        debug_assert!(self.head == 0 && self.cur.is_empty());
        let old = self.bslot;
        self.clear_occ(old);
        let new = match s {
            Some(s) => {
                let d = (s + SLOTS - old) & (SLOTS - 1);
                self.base += (d as u64) << SHIFT;
                s
            }
            None => {
                let t = self.far.peek().expect("advance on an empty queue").0;
                self.base = t & !((1u64 << SHIFT) - 1);
                slot_of(t)
            }
        };
        // the drained buffer goes back to its slot, the new slot's items
        // become `cur`
        std::mem::swap(&mut self.slots[old], &mut self.cur);
        std::mem::swap(&mut self.slots[new], &mut self.cur);
        self.bslot = new;
        let mut unsorted = self.unsorted[new >> 6] & (1u64 << (new & 63)) != 0;
        self.unsorted[new >> 6] &= !(1u64 << (new & 63));
        let end = self.base + SPAN;
        while let Some(f) = self.far.peek() {
            if f.0 >= end {
                break;
            }
            let Far(a, b, c) = self.far.pop().unwrap();
            let s = slot_of(a);
            if s == self.bslot {
                self.cur.push((a, b, c));
                unsorted = true;
            } else {
                self.push_slot(s, (a, b, c));
            }
            self.set_occ(s);
        }
        if unsorted {
            sort_slot(
                &mut self.cur,
                &mut self.tmp,
                self.group_shift,
                &mut self.counts,
            );
        }
    }

    /// Ensure the base slot holds the minimum (after this, `cur[head]` is
    /// the smallest item). Returns false when empty.
    #[inline(always)]
    fn settle(&mut self) -> bool {
        // fast path, inlined into every pop and peek: the base slot still
        // holds items (then the queue is not empty)
        if self.head < self.cur.len() {
            return true;
        }
        self.settle_slow()
    }

    /// The base slot is drained: move to the next occupied slot.
    #[inline(never)]
    fn settle_slow(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        let s = self.next_occupied();
        self.advance(s);
        true
    }

    /// Is there an item at time `t`, given that no item is earlier?
    #[inline]
    pub fn has_at(&self, t: u64) -> bool {
        match self.cur.get(self.head) {
            Some(e) => e.0 == t,
            // base slot drained: items at `t` can only be in t's slot
            None => {
                self.len > 0
                    && ((slot_of(t) != self.bslot
                        && t >= self.base
                        && t - self.base < SPAN
                        && self.slots[slot_of(t)].iter().any(|e| e.0 == t))
                        || self.far.peek().is_some_and(|f| f.0 == t))
            }
        }
    }

    /// Smallest (time, seq) without removing it.
    #[inline]
    pub fn peek_key(&mut self) -> Option<(u64, u64)> {
        if !self.settle() {
            return None;
        }
        let e = &self.cur[self.head];
        Some((e.0, e.1))
    }

    /// The seqs of the items at the smallest time, in order, into `out`,
    /// without removing them (they lead the sorted base slot).
    pub fn front_seqs(&mut self, out: &mut Vec<u64>) {
        if let Some((t, _)) = self.peek_key() {
            out.extend(
                self.cur[self.head..]
                    .iter()
                    .take_while(|e| e.0 == t)
                    .map(|e| e.1),
            );
        }
    }

    /// Pop the smallest item if its time is `t`, given that no item is
    /// earlier (one check on the common path: the base slot's head).
    #[inline(always)]
    pub fn pop_at(&mut self, t: u64) -> Option<(u64, u64, T)> {
        match self.cur.get(self.head) {
            Some(e) if e.0 == t => {
                let e = *e;
                self.head += 1;
                self.len -= 1;
                if self.head == self.cur.len() {
                    self.release_base_slot();
                }
                Some(e)
            }
            Some(_) => None,
            None if self.has_at(t) => self.pop(),
            None => None,
        }
    }

    #[inline(always)]
    pub fn pop(&mut self) -> Option<(u64, u64, T)> {
        if !self.settle() {
            return None;
        }
        let e = self.cur[self.head];
        self.head += 1;
        self.len -= 1;
        if self.head == self.cur.len() {
            self.release_base_slot();
        }
        Some(e)
    }
}

/// FIFO that is drained completely again and again (the zero-delay events
/// of one instant): a vector and a read index, reset when empty.
pub(crate) struct Fifo<T: Copy> {
    v: Vec<T>,
    head: usize,
}

impl<T: Copy> Fifo<T> {
    pub fn with_capacity(n: usize) -> Self {
        Fifo {
            v: Vec::with_capacity(n),
            head: 0,
        }
    }

    #[inline(always)]
    pub fn push_back(&mut self, x: T) {
        self.v.push(x);
    }

    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        self.v.get(self.head)
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        let x = *self.v.get(self.head)?;
        self.head += 1;
        if self.head == self.v.len() {
            self.v.clear();
            self.head = 0;
        }
        Some(x)
    }

    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.v.len() - self.head
    }

    /// Sort the items not yet popped by `key` (the local event order's
    /// batches, order.rs). (A stable sort: it takes the runs of one
    /// origin's events as they come; an unstable one costs 6 % more
    /// instructions on M9.)
    pub fn sort_pending_by_key<K: Ord>(&mut self, mut key: impl FnMut(&T) -> K) {
        let v = &mut self.v[self.head..];
        // (often in order already: one origin's events come in its order)
        if !v.is_sorted_by_key(&mut key) {
            v.sort_by_key(key);
        }
    }

    /// The items not yet popped, in order.
    pub fn pending(&self) -> &[T] {
        &self.v[self.head..]
    }

    /// Remove the items not yet popped for which `keep` is false, in
    /// order, into `out` (a parallel run's events for other threads).
    pub fn split_pending_into(&mut self, out: &mut Vec<T>, mut keep: impl FnMut(&T) -> bool) {
        // (most items stay: nothing moves before the first that goes)
        let Some(first) = self.v[self.head..].iter().position(|x| !keep(x)) else {
            return;
        };
        let mut w = self.head + first;
        for r in w..self.v.len() {
            let x = self.v[r];
            if keep(&x) {
                self.v[w] = x;
                w += 1;
            } else {
                out.push(x);
            }
        }
        self.v.truncate(w);
        if self.head == w {
            self.v.clear();
            self.head = 0;
        }
    }

    /// Insert `x` among the next `within` items not yet popped (sorted by
    /// `key`), before the first whose key is greater.
    pub fn insert_pending_by_key<K: Ord>(
        &mut self,
        x: T,
        within: usize,
        mut key: impl FnMut(&T) -> K,
    ) {
        let k = key(&x);
        let run = &self.v[self.head..self.head + within];
        let at = self.head + run.partition_point(|y| key(y) <= k);
        self.v.insert(at, x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The items not yet popped split by a predicate: both parts keep
    /// their order, whether the first item goes, a later one, or none.
    #[test]
    fn split_pending_keeps_the_order_of_both_parts() {
        for (n, popped, goes) in [
            (10u32, 3usize, vec![3u32, 4, 9]),
            (10, 0, vec![0, 5]),
            (6, 2, vec![]),
            (5, 1, vec![1, 2, 3, 4]),
        ] {
            let mut q = Fifo::with_capacity(4);
            for i in 0..n {
                q.push_back(i);
            }
            for i in 0..popped {
                assert_eq!(q.pop_front(), Some(i as u32));
            }
            let mut out = Vec::new();
            q.split_pending_into(&mut out, |x| !goes.contains(x));
            assert_eq!(out, goes);
            let mut left = Vec::new();
            while let Some(x) = q.pop_front() {
                left.push(x);
            }
            let want: Vec<u32> = (popped as u32..n).filter(|x| !goes.contains(x)).collect();
            assert_eq!(left, want);
        }
    }

    /// Keys whose high bits name a group that pushes in its own order (the
    /// local order's origin nodes): large same-instant runs from many
    /// groups, a few groups out of their own order (virtual keys), and
    /// runs with so many groups that the counting sort is skipped, all pop
    /// in (time, seq) order.
    #[test]
    fn grouped_keys_pop_in_key_order() {
        const SHIFT: u32 = 40;
        let mut x: u64 = 7;
        let mut rnd = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for groups in [3u64, 40, 700, 5000] {
            let mut h = Wheel::new();
            h.set_key_groups(SHIFT);
            let mut keys = std::collections::BTreeSet::new();
            let mut next = vec![1u64; groups as usize];
            let mut now = 0u64;
            for round in 0..200u64 {
                for _ in 0..(30 + rnd() % 1500) {
                    let g = rnd() % groups;
                    let t = now + 1 + (rnd() % 3) * 1000;
                    let n = if round % 4 == 0 && rnd() % 20 == 0 {
                        next[g as usize].saturating_sub(1 + rnd() % 50)
                    } else {
                        next[g as usize] += 1;
                        next[g as usize]
                    };
                    let s = ((g + 1) << SHIFT) | n;
                    if keys.insert((t, s)) {
                        h.push(t, s, (t, s));
                    }
                }
                now += 1000;
                while let Some(&k) = keys.first() {
                    if k.0 > now {
                        break;
                    }
                    let got = h.pop().unwrap();
                    assert_eq!((got.0, got.1), k, "{groups} groups, round {round}");
                    keys.pop_first();
                }
            }
            for k in keys {
                let got = h.pop().unwrap();
                assert_eq!((got.0, got.1), k, "{groups} groups");
            }
            assert!(h.pop().is_none());
        }
    }

    /// Random pushes (near, far, equal times, pushes after a peek) pop in
    /// exactly the order of a sorted reference list.
    #[test]
    fn pops_in_key_order() {
        let mut h = Wheel::new();
        let mut x: u64 = 12345;
        let mut keys = std::collections::BTreeSet::new();
        let mut now = (0u64, 0u64);
        let mut seq = 1u64;
        let mut rnd = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for round in 0..20000u64 {
            for _ in 0..3 {
                let r = rnd();
                let d = match r % 10 {
                    0 => 0,
                    1 => 3 * SPAN + r % 1000,
                    2 => SPAN - 1 - (r >> 8) % 3,
                    3..=5 => (r >> 8) % 300,
                    _ => (r >> 8) % 20_000,
                };
                let k = (now.0 + d, seq);
                seq += 1;
                h.push(k.0, k.1, k);
                keys.insert(k);
            }
            if round % 7 == 0 {
                // a peek may move the base; earlier pushes (several, some at
                // the same instant, some at the current one) must still work
                let p = h.peek_key().unwrap();
                if p.0 > now.0 + 1 {
                    let n = 1 + rnd() % 4;
                    let mut t = now.0 + 1 + rnd() % (p.0 - now.0 - 1);
                    for i in 0..n {
                        if i > 0 && rnd() % 2 == 0 {
                            t = now.0 + rnd() % (p.0 - now.0);
                        }
                        let k = (t, seq);
                        seq += 1;
                        h.push(k.0, k.1, k);
                        keys.insert(k);
                    }
                }
            }
            let pops = if round % 3 == 0 { 4 } else { 2 };
            for _ in 0..pops {
                let Some((t, s, v)) = h.pop() else { break };
                assert_eq!((t, s), v);
                assert!(v >= now);
                now = v;
                assert_eq!(Some(v), keys.pop_first());
                assert_eq!(h.len(), keys.len());
                let next_at_t = keys.first().is_some_and(|k| k.0 == t);
                assert_eq!(h.has_at(t), next_at_t);
            }
        }
        while let Some((t, s, _)) = h.pop() {
            assert!((t, s) > now);
            now = (t, s);
        }
    }

    /// Large slots (counting sort), pushes whose seq order differs from
    /// push order (the fallback), and far items, against a reference set.
    #[test]
    fn large_slots_and_unordered_seqs() {
        let mut h = Wheel::new();
        let mut keys = std::collections::BTreeSet::new();
        let mut x: u64 = 99;
        let mut rnd = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut now = 0u64;
        let mut seq = 1u64 << 20;
        for round in 0..300u64 {
            let burst = 20 + rnd() % 200;
            for _ in 0..burst {
                let t = now + 1 + (rnd() % 4) * 64 + if rnd() % 50 == 0 { 2 * SPAN } else { 0 };
                // mostly increasing seqs, sometimes a smaller (virtual) one
                let s = if round % 3 == 0 && rnd() % 10 == 0 {
                    seq - 1000 - rnd() % 1000
                } else {
                    seq += 1;
                    seq
                };
                if keys.insert((t, s)) {
                    h.push(t, s, (t, s));
                }
            }
            for _ in 0..burst {
                let Some((t, s, v)) = h.pop() else { break };
                assert_eq!((t, s), v);
                assert_eq!(Some(v), keys.pop_first());
                now = t;
            }
        }
        while let Some((_, _, v)) = h.pop() {
            assert_eq!(Some(v), keys.pop_first());
        }
        assert!(keys.is_empty());
    }

    /// A slot that once held a burst does not keep that buffer once a
    /// later round needed far less (the memory bound of the 1944-node
    /// run), and a small slot keeps its buffer (no allocation per round).
    #[test]
    fn drained_slot_releases_a_burst_buffer() {
        let mut h = Wheel::new();
        let s = slot_of(1_000);
        // a burst of 10000 events at one instant (like the credit ticks of
        // every port), drained: the buffer fits what the round held
        for seq in 0..10_000u64 {
            h.push(1_000, seq, ());
        }
        while h.pop().is_some() {}
        let burst = h.slot_capacity(s);
        assert!(burst >= 10_000, "{burst}");
        // the same slot one wheel turn later holds 3 events: drained, it
        // drops the burst's buffer
        for seq in 0..3u64 {
            h.push(1_000 + SPAN, 20_000 + seq, ());
        }
        assert_eq!(h.slot_capacity(s), burst);
        while h.pop().is_some() {}
        assert!(h.slot_capacity(s) <= KEEP_MIN, "{}", h.slot_capacity(s));
        // a small round keeps its (small) buffer
        for seq in 0..40u64 {
            h.push(1_000 + 2 * SPAN, 30_000 + seq, ());
        }
        while h.pop().is_some() {}
        let small = h.slot_capacity(s);
        assert!((40..=KEEP_MIN).contains(&small), "{small}");
    }
}
