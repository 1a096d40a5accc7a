//! Monotone radix heap over event times, FIFO (by sequence number) within
//! one time.
//!
//! A discrete-event simulator never schedules before the last event it
//! processed, so the times popped are non-decreasing and a radix heap
//! applies: an item lives in the bucket of the highest bit in which its time
//! differs from the last popped time. Bucket 0 holds the items at exactly
//! that time, sorted by sequence number (descending, pop from the end).
//! Pops are amortised O(log T); pushes are O(1) except into bucket 0.

pub(crate) struct RadixHeap<T: Copy> {
    last: u64,
    len: usize,
    /// bit i set iff bucket i is non-empty
    mask: u128,
    buckets: Vec<Vec<(u64, u64, T)>>,
}

#[inline]
fn bucket(x: u64) -> usize {
    (64 - x.leading_zeros()) as usize
}

impl<T: Copy> RadixHeap<T> {
    pub fn new() -> Self {
        RadixHeap {
            last: 0,
            len: 0,
            mask: 0,
            buckets: (0..65).map(|_| Vec::new()).collect(),
        }
    }

    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn put(&mut self, b: usize, e: (u64, u64, T)) {
        self.mask |= 1u128 << b;
        if b == 0 {
            let v = &mut self.buckets[0];
            // descending by seq; new items usually have the largest seq
            let pos = v.partition_point(|x| x.1 > e.1);
            v.insert(pos, e);
        } else {
            self.buckets[b].push(e);
        }
    }

    /// Insert an item with time `t` and sequence number `seq`.
    #[inline]
    pub fn push(&mut self, t: u64, seq: u64, v: T) {
        if t < self.last {
            // Only after a peek moved `last` ahead (API calls between
            // peeking and popping): rebuild relative to the new time.
            self.rebase(t);
        }
        let b = bucket(t ^ self.last);
        self.put(b, (t, seq, v));
        self.len += 1;
    }

    fn rebase(&mut self, t: u64) {
        let mut all = Vec::with_capacity(self.len);
        for b in &mut self.buckets {
            all.append(b);
        }
        self.last = t;
        self.mask = 0;
        for e in all {
            self.put(bucket(e.0 ^ t), e);
        }
    }

    /// Is there an item at time `t`, given that no item is earlier?
    #[inline]
    pub fn has_at(&self, t: u64) -> bool {
        self.last == t && !self.buckets[0].is_empty()
    }

    /// Smallest (time, seq) without removing it (may move items between
    /// buckets).
    #[inline]
    pub fn peek_key(&mut self) -> Option<(u64, u64)> {
        if self.len == 0 {
            return None;
        }
        self.refill();
        self.buckets[0].last().map(|e| (e.0, e.1))
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u64, u64, T)> {
        if self.len == 0 {
            return None;
        }
        self.refill();
        self.len -= 1;
        let r = self.buckets[0].pop();
        if self.buckets[0].is_empty() {
            self.mask &= !1;
        }
        r
    }

    #[inline]
    fn refill(&mut self) {
        if !self.buckets[0].is_empty() {
            return;
        }
        let i = self.mask.trailing_zeros() as usize;
        self.mask &= !(1u128 << i);
        let mut b = std::mem::take(&mut self.buckets[i]);
        let min = b.iter().map(|e| e.0).min().unwrap();
        self.last = min;
        let mut zero = std::mem::take(&mut self.buckets[0]);
        for e in &b {
            let nb = bucket(e.0 ^ min);
            if nb == 0 {
                zero.push(*e);
            } else {
                self.mask |= 1u128 << nb;
                self.buckets[nb].push(*e);
            }
        }
        zero.sort_unstable_by_key(|x| std::cmp::Reverse(x.1));
        self.mask |= 1;
        self.buckets[0] = zero;
        b.clear();
        if self.buckets[i].is_empty() {
            self.buckets[i] = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn pops_in_key_order() {
        let mut h = RadixHeap::new();
        let mut x: u64 = 12345;
        let mut keys: Vec<(u64, u64)> = Vec::new();
        let mut now = (0u64, 0u64);
        let mut seq = 1u64;
        for round in 0..3000u64 {
            for _ in 0..3 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (now.0 + (x >> 40) % 50, seq);
                seq += 1;
                h.push(k.0, k.1, k);
                keys.push(k);
            }
            if round % 7 == 0 {
                // a peek moves `last`; a later earlier push must still work
                let p = h.peek_key().unwrap();
                if p.0 > now.0 + 1 {
                    let k = (now.0 + 1, seq);
                    seq += 1;
                    h.push(k.0, k.1, k);
                    keys.push(k);
                }
            }
            let (t, s, v) = h.pop().unwrap();
            assert_eq!((t, s), v);
            assert!(v >= now);
            now = v;
            let min = *keys.iter().min().unwrap();
            assert_eq!(v, min);
            keys.retain(|&y| y != v);
            assert_eq!(h.len(), keys.len());
        }
    }
}
