//! The future-event queue of the fabric: scheduling and peeking.
//!
//! Every event carries a key (time, seq); `seq` is a global insertion
//! counter shifted left by [`SEQ_SHIFT`], so equal-time events run in
//! insertion (FIFO) order (sec. 1.3) and the low bits are free for the
//! virtual sequence numbers of the lazy credit timer ([`Fabric::virt_seq`],
//! see `engine/mod.rs`).
//!
//! Two containers hold the events, for speed only: delayed events go into
//! the timing wheel (`wheel.rs`); zero-delay events of the current instant
//! (most of the fabric's hand-offs) go into a FIFO, `nowq`, whose keys are
//! all larger than those of the wheel's events at the same instant except
//! virtual-sequence ones. [`Fabric::peek_source`] decides which one holds
//! the smallest key, so the pop order is exactly the (time, seq) order of
//! a single priority queue.

use super::dispatch::Ev;
use super::fabric::Fabric;

pub(super) const SEQ_SHIFT: u32 = 20;

/// Queued event of the now-queue. Its time is always the current instant
/// (`Fabric::now`: the clock never moves while the now-queue holds
/// events), so only the seq is stored: 24 bytes instead of 32.
#[derive(Clone, Copy)]
pub(super) struct Entry {
    pub(super) seq: u64,
    pub(super) ev: Ev,
}

impl Fabric {
    #[inline(always)]
    pub(super) fn sched(&mut self, at: u64, ev: Ev) {
        if at == self.now && self.started {
            self.sched_now(ev);
        } else {
            let seq = self.counter << SEQ_SHIFT;
            self.counter += 1;
            self.push_key(at, seq, ev);
        }
    }

    /// A link's arrival at the peer's ibuf (a data flit or an FC packet),
    /// scheduled by the obuf that starts it: at once on a link without
    /// propagation delay (the reference model), else `link_delay_ns`
    /// later, where another process of a parallel run may own the peer
    /// (`par_sched_link`).
    #[inline(always)]
    pub(super) fn sched_link(&mut self, ev: Ev) {
        let d = self.tm.link;
        if d == 0 {
            self.sched_now(ev);
        } else if self.part.is_some() {
            self.par_sched_link(self.now + d, ev);
        } else {
            self.sched(self.now + d, ev);
        }
    }

    /// A zero-delay event scheduled by a handler: what `sched(self.now, ev)`
    /// does there, without its test (a handler runs only from `dispatch`,
    /// so the run has started and the event goes to the now-queue).
    #[inline(always)]
    pub(super) fn sched_now(&mut self, ev: Ev) {
        debug_assert!(self.started);
        let seq = self.counter << SEQ_SHIFT;
        self.counter += 1;
        if ev.background() {
            self.bg_pending += 1;
        }
        #[cfg(feature = "causal-check")]
        self.causal.child(self.now, seq, &ev);
        self.nowq.push_back(Entry { seq, ev });
    }

    #[inline]
    pub(super) fn peek_time(&mut self) -> Option<u64> {
        self.peek_source().map(|(t, _)| t)
    }

    /// Time of the next event and whether it comes from the now-queue.
    /// Heap events at the current instant were inserted before every
    /// now-queue event (or carry a virtual seq below them): they go first.
    #[inline(always)]
    pub(super) fn peek_source(&mut self) -> Option<(u64, bool)> {
        if self.heap.has_at(self.now) {
            return Some((self.now, false));
        }
        match self.nowq.front() {
            Some(_) => Some((self.now, true)),
            None => self.heap.peek_key().map(|k| (k.0, false)),
        }
    }

    #[inline(always)]
    pub(super) fn push_key(&mut self, at: u64, seq: u64, ev: Ev) {
        if ev.background() {
            self.bg_pending += 1;
        }
        #[cfg(feature = "causal-check")]
        if !self.local_order {
            // the lazy credit timer's virtual seqs carry the obuf in their
            // low bits (`virt_seq`)
            let low = seq & ((1 << SEQ_SHIFT) - 1);
            if low == 0 {
                self.causal.child(at, seq, &ev);
            } else {
                self.causal
                    .tick_child(at, seq, low as usize - 1, self.now, &ev);
            }
        }
        self.heap.push(at, seq, ev);
    }

    /// Foreground events queued (the deadlock rule, run.rs): every queued
    /// event but the background ones, which are rare and the only ones
    /// counted (one counter update less per event).
    #[inline]
    pub(super) fn fg_pending(&self) -> u64 {
        (self.heap.len() + self.nowq.len()) as u64 - self.bg_pending + self.fg_elsewhere
    }

    /// Virtual sequence number of an event inserted by the (possibly
    /// skipped) credit tick of obuf `pi` in the current period (in the
    /// local order, the timer's own key, order.rs).
    #[inline]
    pub(super) fn virt_seq(&self, pi: usize) -> u64 {
        if self.local_order {
            return self.timer_key(pi);
        }
        ((self.bk_counter.max(1) - 1) << SEQ_SHIFT) | (1 + pi as u64)
    }
}
