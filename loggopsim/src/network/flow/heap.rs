//! The flow model's event queue: one pending event per flow (its entry or
//! its completion), moved in place when a re-solve changes it.

/// A binary min-heap of flows keyed by (time, flow id), with one entry per
/// flow that can be moved in place (no stale entries).
#[derive(Clone, Debug, Default)]
pub(super) struct IdxHeap {
    heap: Vec<u32>,
    /// Position of each flow in `heap` (u32::MAX: absent).
    pos: Vec<u32>,
    key: Vec<u64>,
}

impl IdxHeap {
    #[inline]
    fn k(&self, f: u32) -> (u64, u32) {
        (self.key[f as usize], f)
    }
    pub(super) fn peek(&self) -> Option<(u64, u32)> {
        self.heap.first().map(|&f| self.k(f))
    }
    pub(super) fn set(&mut self, f: u32, t: u64) {
        let i = f as usize;
        if self.pos.len() <= i {
            self.pos.resize(i + 1, u32::MAX);
            self.key.resize(i + 1, 0);
        }
        self.key[i] = t;
        if self.pos[i] == u32::MAX {
            self.heap.push(f);
            self.pos[i] = self.heap.len() as u32 - 1;
        }
        let p = self.pos[i] as usize;
        self.up(p);
        let p = self.pos[i] as usize;
        self.down(p);
    }
    pub(super) fn pop(&mut self) -> Option<u32> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        self.pos[top as usize] = u32::MAX;
        if last != top {
            self.heap[0] = last;
            self.pos[last as usize] = 0;
            self.down(0);
        }
        Some(top)
    }
    fn up(&mut self, mut p: usize) {
        while p > 0 {
            let q = (p - 1) / 2;
            if self.k(self.heap[p]) < self.k(self.heap[q]) {
                self.swap(p, q);
                p = q;
            } else {
                break;
            }
        }
    }
    fn down(&mut self, mut p: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * p + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.k(self.heap[r]) < self.k(self.heap[l]) {
                r
            } else {
                l
            };
            if self.k(self.heap[c]) < self.k(self.heap[p]) {
                self.swap(p, c);
                p = c;
            } else {
                break;
            }
        }
    }
    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a] as usize] = a as u32;
        self.pos[self.heap[b] as usize] = b as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::IdxHeap;

    fn drain(h: &mut IdxHeap) -> Vec<(u64, u32)> {
        std::iter::from_fn(|| {
            let k = h.peek()?;
            assert_eq!(h.pop(), Some(k.1));
            Some(k)
        })
        .collect()
    }

    /// Order by (time, flow id); setting a flow again moves its one entry.
    #[test]
    fn order_and_moves() {
        let mut h = IdxHeap::default();
        for (f, t) in [(3, 50), (1, 50), (0, 70), (2, 10), (4, 60)] {
            h.set(f, t);
        }
        h.set(2, 80); // later
        h.set(0, 5); // earlier
        assert_eq!(
            drain(&mut h),
            vec![(5, 0), (50, 1), (50, 3), (60, 4), (80, 2)]
        );
        assert_eq!(h.peek(), None);
        h.set(1, 9);
        assert_eq!(drain(&mut h), vec![(9, 1)]);
    }
}
