//! The active queue (docs/model/loggops.md 4): events in (time, seq)
//! order, smallest first.

use std::collections::BinaryHeap;

/// In `Ev::id`: the event is a message and `id` its slot.
pub(super) const MSG_FLAG: u32 = 1 << 31;
/// In `Ev::host`: the event is a group proxy and `id` a group slot.
pub(super) const PROXY: u32 = 1 << 31;

/// Active-queue entry; `id` is a node id, or a message slot with `MSG_FLAG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ev {
    pub time: u64,
    pub seq: u64,
    pub host: u32,
    pub id: u32,
}

impl Ord for Ev {
    #[inline]
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // reversed: BinaryHeap is a max-heap
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Ev {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// The active queue: events by (time, seq), smallest first.
///
/// Most events are pushed in increasing order: a released operation or a
/// new message gets a fresh (largest) seq, and its time is usually the
/// current time or later. Such an event goes to the back of a FIFO `lane`
/// (O(1)) whenever its key is not below the lane's last one, so the lane
/// stays sorted; any other event (a re-inserted one keeps its old seq, an
/// arrival may be earlier than the lane's tail) goes to the binary heap.
/// The next event is the smaller of the two heads, so the order is exactly
/// the heap-only order: keys are unique (a seq belongs to one event; a
/// group proxy carries the seq of a member that is not queued itself),
/// except for identical copies of a stale proxy, whose relative order
/// cannot matter.
#[derive(Default)]
pub(super) struct EventQueue {
    /// the lane's events are `lane[head..]`; a plain vector with a head
    /// index is cheaper than a ring buffer (emptied when the head reaches
    /// the end, compacted when the consumed prefix is the larger half)
    lane: Vec<Ev>,
    head: usize,
    heap: BinaryHeap<Ev>,
}

impl EventQueue {
    #[inline]
    pub(super) fn push(&mut self, e: Ev) {
        match self.lane.last() {
            Some(b) if (e.time, e.seq) < (b.time, b.seq) => self.heap.push(e),
            _ => self.lane.push(e),
        }
    }

    #[inline]
    pub(super) fn peek(&self) -> Option<&Ev> {
        match (self.lane.get(self.head), self.heap.peek()) {
            (Some(l), Some(h)) => Some(if (h.time, h.seq) < (l.time, l.seq) {
                h
            } else {
                l
            }),
            (l, None) => l,
            (None, h) => h,
        }
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<Ev> {
        match (self.lane.get(self.head), self.heap.peek()) {
            (Some(l), Some(h)) if (h.time, h.seq) < (l.time, l.seq) => self.heap.pop(),
            (Some(&l), _) => {
                self.head += 1;
                if self.head == self.lane.len() {
                    self.lane.clear();
                    self.head = 0;
                } else if self.head >= 1024 && 2 * self.head >= self.lane.len() {
                    self.lane.drain(..self.head);
                    self.head = 0;
                }
                Some(l)
            }
            (None, _) => self.heap.pop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ev, EventQueue};
    use std::collections::BinaryHeap;

    fn ev(time: u64, seq: u64) -> Ev {
        Ev {
            time,
            seq,
            host: 0,
            id: seq as u32,
        }
    }

    /// (time, seq) order: an earlier time first, then the lower seq; an
    /// old seq pushed after newer ones (a re-inserted event) still comes
    /// first at its time.
    #[test]
    fn order_is_time_then_seq() {
        let mut q = EventQueue::default();
        for e in [ev(5, 7), ev(5, 9), ev(3, 10), ev(5, 2), ev(8, 1)] {
            q.push(e);
        }
        let got: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.seq))
            .collect();
        assert_eq!(got, vec![(3, 10), (5, 2), (5, 7), (5, 9), (8, 1)]);
    }
    /// The lane-and-heap queue pops exactly what a binary heap alone pops:
    /// random keys, mostly increasing (the lane) with earlier ones mixed
    /// in (the heap), interleaved pops, long enough runs to compact the
    /// lane (more than 1024 consumed entries).
    #[test]
    fn event_queue_pops_in_heap_order() {
        let mut q = EventQueue::default();
        let mut h = BinaryHeap::new();
        let mut x: u64 = 19;
        let mut rnd = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..200_000u32 {
            let r = rnd();
            if r % 5 < 3 || h.is_empty() {
                // mostly at or after the current time, sometimes earlier
                // (an arrival), sometimes an old seq (a re-inserted event)
                let time = if r % 17 == 0 {
                    now.saturating_sub(rnd() % 50)
                } else {
                    now + rnd() % 40
                };
                // unique keys, as in the engine: fresh seqs grow, "old"
                // ones come from a lower range
                seq += 1;
                let s = if r % 23 == 0 {
                    seq
                } else {
                    (seq << 20) | 1 << 40
                };
                let e = Ev {
                    time,
                    seq: s,
                    host: round % 7,
                    id: round,
                };
                q.push(e);
                h.push(e);
            } else {
                let a = q.pop();
                let b = h.pop();
                assert_eq!(a, b, "pop {round}");
                if let Some(e) = a {
                    now = now.max(e.time);
                }
            }
            assert_eq!(q.peek().copied(), h.peek().copied(), "peek {round}");
        }
        while let Some(b) = h.pop() {
            assert_eq!(q.pop(), Some(b));
        }
        assert_eq!(q.pop(), None);
    }
}
