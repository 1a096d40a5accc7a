//! Monotone radix heap over 128-bit keys `(time << 64) | seq`.
//!
//! A discrete-event simulator never schedules before the last event it
//! processed, so keys popped are non-decreasing and a radix heap applies:
//! an item lives in the bucket of the highest bit in which its key differs
//! from the last popped key. Pops are amortised O(log C) with cheap, cache-
//! friendly pushes. Keys are unique (seq is unique), so the order is total.

pub(crate) struct RadixHeap<T: Copy> {
    last: u128,
    len: usize,
    /// items in buckets 0..=64 (same time as `last`)
    near: usize,
    buckets: Vec<Vec<(u128, T)>>,
}

#[inline]
fn bucket(x: u128) -> usize {
    (128 - x.leading_zeros()) as usize
}

impl<T: Copy> RadixHeap<T> {
    pub fn new() -> Self {
        RadixHeap { last: 0, len: 0, near: 0, buckets: (0..129).map(|_| Vec::new()).collect() }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn push(&mut self, key: u128, v: T) {
        if key < self.last {
            // Only after a peek moved `last` ahead (API calls between
            // peeking and popping): rebuild relative to the new key.
            self.rebase(key);
        }
        let b = bucket(key ^ self.last);
        if b <= 64 {
            self.near += 1;
        }
        self.buckets[b].push((key, v));
        self.len += 1;
    }

    fn rebase(&mut self, key: u128) {
        let mut all = Vec::with_capacity(self.len);
        for b in &mut self.buckets {
            all.append(b);
        }
        self.last = key;
        self.near = 0;
        for (k, v) in all {
            let b = bucket(k ^ key);
            if b <= 64 {
                self.near += 1;
            }
            self.buckets[b].push((k, v));
        }
    }

    /// Is there an item whose time (high 64 bits) is `t`, given that no
    /// item is earlier than `t`? Cheap: such items share `last`'s time.
    #[inline]
    pub fn has_at(&self, t: u64) -> bool {
        self.near > 0 && (self.last >> 64) as u64 == t
    }

    /// Smallest key without removing it (moves items between buckets).
    #[inline]
    pub fn peek_key(&mut self) -> Option<u128> {
        if self.len == 0 {
            return None;
        }
        self.refill();
        self.buckets[0].last().map(|e| e.0)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u128, T)> {
        if self.len == 0 {
            return None;
        }
        self.refill();
        self.len -= 1;
        self.near -= 1;
        self.buckets[0].pop()
    }

    #[inline]
    fn refill(&mut self) {
        if !self.buckets[0].is_empty() {
            return;
        }
        let i = (1..129).find(|&i| !self.buckets[i].is_empty()).unwrap();
        let b = std::mem::take(&mut self.buckets[i]);
        if i <= 64 {
            self.near -= b.len();
        }
        let min = b.iter().map(|e| e.0).min().unwrap();
        self.last = min;
        for e in &b {
            let nb = bucket(e.0 ^ min);
            if nb <= 64 {
                self.near += 1;
            }
            self.buckets[nb].push(*e);
        }
        // give the allocation back to bucket i for reuse
        let mut b = b;
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
        let mut keys = Vec::new();
        let mut now = 0u128;
        for round in 0..2000 {
            for _ in 0..3 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let k = now + ((x >> 40) as u128 % 1000) * (1 << 64) + round;
                h.push(k, k);
                keys.push(k);
            }
            if round % 7 == 0 {
                // a peek moves `last`; a later smaller push must still work
                let _ = h.peek_key();
                let k = now + 1;
                if !keys.contains(&k) && k < h.peek_key().unwrap() {
                    h.push(k, k);
                    keys.push(k);
                }
            }
            let (k, v) = h.pop().unwrap();
            assert_eq!(k, v);
            assert!(k >= now);
            now = k;
            keys.retain(|&y| y != k);
            assert_eq!(k, *keys.iter().min().unwrap_or(&k).min(&k));
        }
    }
}
