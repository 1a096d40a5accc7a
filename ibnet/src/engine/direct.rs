//! Zero-delay events applied where they are scheduled, when that provably
//! gives the same run as queuing them (fewer trips through the event queue, same
//! results to the picosecond, same event count).
//!
//! An event E scheduled at the current instant with seq s runs after every
//! event already queued with a smaller key and after the rest of the
//! handler that schedules it; every event scheduled later runs after E.
//! Applying E's effect at once is therefore the same run if nothing that
//! runs in between reads or writes what E writes, and E's effect does not
//! depend on what they write. Two events qualify, with these proofs:
//!
//! - `ObufRxCred` (the ibuf's new credit limit for its own obuf): writes
//!   only `fccl[vl]` of that obuf (and wakes a dormant obuf: not taken
//!   here). Readers of `fccl` are the obuf's pop (FC scan) and its credit
//!   tick; writers are other `ObufRxCred` of the port. It is applied at
//!   once only when the obuf is awake, has no pop pending at this instant
//!   (a pending pop is always queued before E), the instant is not a
//!   credit tick instant (ticks run at multiples of `Tcred`), and no other
//!   `ObufRxCred` of the port is queued (it would overwrite the value
//!   later). Nothing else in the model reads `fccl` until the report.
//! - `ArbKick` (arbitrate) is dropped, counted as run, when it provably
//!   does nothing whenever it runs in this instant. The events that run
//!   between its scheduling and its turn are those already queued at this
//!   instant (everything scheduled later gets a later seq, and the lazy
//!   timer's virtual seqs only place obuf events). Three cases:
//!   - The arbiter's pop timer is pending beyond now: `arbitrate` returns
//!     at once, and the flag is cleared only by the arbiter's own pop, at
//!     `pop_at`.
//!   - The arbiter is inside a packet. Inside a packet `arbitrate` sends
//!     exactly when its pop timer is not pending and the packet's next
//!     flit is in its HoQ slot, and checks nothing else (credits and obuf
//!     space were checked for the packet's head). The only events that
//!     make that true are the flit's arrival (`arb_flit`) and the pop
//!     (`arb_pop`), and both arbitrate at once: so after every event, an
//!     arbiter inside a packet with no pop pending has an empty slot, and
//!     a kick finds nothing to do. If the packet ends in between, it ends
//!     with a send, whose pop is pending at the kick's turn (`tarb` > 0,
//!     or a zero-delay pop queued after the kick).
//!   - No HoQ slot of the arbiter holds a flit or is reserved for one
//!     (`Arb::slots` = 0) and the network has one VL. A flit reaches a
//!     slot only through `ArbFlit`, scheduled after the slot's reservation
//!     (`hoq_free`); with nothing reserved now, no `ArbFlit` of this
//!     arbiter runs before the kick, so the kick's round-robin pick finds
//!     no candidate, and with one VL a failed pick changes nothing (with
//!     several, table arbitration resets entry counts as it scans, so the
//!     rule is not used there).
//!
//!   On OneHot 2 ms the queued kicks fall from 6.26 M to 2.15 M, on the
//!   1944-node network over 20 us from 3.63 M to 0.47 M. Dropping a kick
//!   whose arbiter pops at this very instant is *not* safe: that pop runs
//!   first and may fail (for instance on the per-input limit of packets
//!   being sent), after which a "done" queued before the kick may free
//!   the input, and the kick then sends before the other arbiters' kicks.
//!
//! The proofs hold in the local event order too (`event_order = "local"`,
//! order.rs), where "scheduled later" no longer means "runs later" across
//! nodes: every event they rely on is at the same node as the one applied
//! or dropped. An `ObufRxCred` of a port and an `ArbFlit` or pop of an
//! arbiter are scheduled at that port's node, and within one node and
//! instant the local order runs events scheduled later at the same or a
//! greater depth, with a greater counter, so later. Pops and ticks of an
//! obuf at the current instant were queued ahead (depth 0) and run before
//! any zero-delay event, as in the FIFO order.
//!
//! Either way the event is accounted as processed: it takes its seq from
//! the insertion counter (so every later seq, the lazy credit timer's
//! virtual seqs included, is unchanged), counts in `events_processed`, and
//! as a foreground event marks this instant as the last foreground one
//! (the deadlock rule, run.rs), exactly as if it had been queued and run.
//! One exception, in the count only: a fatal model error (an obuf
//! overflow) stops the run in the middle of an instant, and the fully
//! queued engine never reaches the events queued behind the failing one,
//! while a dropped kick among them was counted when it was dropped. So
//! after a fatal error `events_processed` may exceed the queued engine's
//! by such kicks; every flit, time and other figure is the same (test
//! `direct_events_equal_queued_random` shows one: 16,235 against 16,234
//! events on H8_S4 with 29-flit obufs). Counting
//! them exactly would cost a record per dropped kick on the hot path for
//! a run that has already failed.

use super::dispatch::Ev;
use super::fabric::Fabric;

impl Fabric {
    /// Account for a zero-delay foreground event that was applied (or
    /// proven a no-op) where it was scheduled, instead of being queued.
    #[inline(always)]
    fn direct_event(&mut self) {
        self.counter += 1;
        self.events += 1;
        self.last_fg = self.now;
        self.direct_applied += 1;
    }

    /// Queue every event instead (tests: the run must be the same, flit by
    /// flit, with the same event count).
    #[doc(hidden)]
    pub fn set_direct_events(&mut self, on: bool) {
        self.direct = on;
    }

    /// Events applied where they were scheduled so far (tests).
    #[doc(hidden)]
    pub fn direct_events_applied(&self) -> u64 {
        self.direct_applied
    }

    /// `ObufRxCred { pi, v, limit }` now, from an ibuf handler: applied at
    /// once when allowed (module doc), else queued. (A handler runs only
    /// from `dispatch`, so the run has started and the event is at the
    /// current instant: neither needs a check.)
    #[inline(always)]
    pub(super) fn sched_rx_cred(&mut self, pi: usize, v: u8, limit: u64) {
        debug_assert!(self.started);
        let now = self.now;
        let ok = self.direct && now + self.tm.cred != self.next_boundary;
        let ob = &mut self.ports[pi].ob;
        if ok && !ob.dormant && ob.rx_queued == 0 && !(ob.pop_pending && ob.pop_at == now) {
            ob.vl[v as usize].fccl = limit;
            self.direct_event();
            if self.direct_report {
                // (a credit update wakes an obuf that the lazy timer
                // would hold dormant: parallel_fifo.rs counts for it)
                self.par_rx_cred_applied(pi);
            }
            return;
        }
        self.queue_rx_cred(now, pi, v, limit);
    }

    /// `ObufRxCred { pi, v, limit }` at `at`, queued (the initial credit
    /// advertisement, or when it cannot be applied at once).
    pub(super) fn queue_rx_cred(&mut self, at: u64, pi: usize, v: u8, limit: u64) {
        self.ports[pi].ob.rx_queued += 1;
        self.sched(
            at,
            Ev::ObufRxCred {
                port: pi as u32,
                vl: v,
                limit,
            },
        );
    }

    /// `ArbKick { pi }` now, from a handler (the run has started, as in
    /// `sched_rx_cred`): dropped (but counted) when it cannot do anything
    /// (module doc), else queued. (Always inlined, as the other
    /// small helpers of the per-flit path: the compiler kept it out of
    /// line, and a call costs as much as the check.)
    #[inline(always)]
    pub(super) fn sched_arb_kick(&mut self, pi: usize) {
        debug_assert!(self.started);
        let a = &self.ports[pi].arb;
        let noop = (a.pop_pending && a.pop_at > self.now)
            || a.inside
            || (a.slots == 0 && a.tables.is_none());
        if self.direct && noop {
            self.direct_event();
            return;
        }
        self.sched_now(Ev::ArbKick { port: pi as u32 });
    }
}
