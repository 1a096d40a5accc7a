//! Running the fabric: to a time limit, to the next message completion
//! (with the deadlock rule), and the queries a driver needs between runs
//! (completions, lower bound on the next completion, counters).

use super::app::MsgId;
use super::fabric::{Fabric, MAX_TIME_PS, NS};
use crate::Time;

/// Outcome of [`Fabric::run_until_completion_or`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// One or more messages completed at this instant (the first completion
    /// instant at or before the limit); the whole instant was processed.
    Completed(Time, Vec<MsgId>),
    /// No message completes at any time up to and including the limit:
    /// every event with time <= limit was processed and `now() == limit`.
    Limit,
    /// Nothing is in flight: no completion can come without a new
    /// injection. Nothing was processed and `now()` is unchanged.
    Idle,
    /// Messages are in flight and none can ever complete (see the deadlock
    /// rule at [`Fabric::run_until_completion`]).
    Deadlock,
    /// A fatal model condition stopped the run: see [`Fabric::error`].
    Fatal,
}

/// How often (in events) the engine reports progress to its pulse.
pub const PULSE_EVENTS: u64 = 1 << 16;

impl Fabric {
    /// Process every event with time <= t; afterwards now() == max(now, t).
    pub fn run_until(&mut self, t: Time) {
        // (every event is at or after `now`: nothing to do for an earlier
        // limit; `step_until` never moves `now` past the limit)
        if t.0 >= self.now {
            if self.local_order {
                self.run_local_until(t.0);
                self.local_release();
            } else {
                while self.fatal.is_none() && self.step_until(t.0) {}
            }
        }
        if self.fatal.is_none() && t.0 > self.now {
            self.advance_to(t.0);
        }
    }

    /// Move the clock forward to `t` (no event is pending before it).
    pub(super) fn advance_to(&mut self, t: u64) {
        if t > MAX_TIME_PS {
            self.fail(format!(
                "time limit {t} ps is beyond the fabric's range ({MAX_TIME_PS} ps)"
            ));
        } else {
            self.now = t;
        }
    }

    /// Run until at least one message completes (last flit consumed), then
    /// finish that instant; return the instant and the messages completed at
    /// it (they are removed from the `take_completions` buffer). None when
    /// nothing is in flight, when the messages in flight can never complete
    /// (deadlock), or after a fatal error (see [`Fabric::error`]).
    ///
    /// Deadlock rule (docs/protocol.md rules 3.5 and 3a: a fabric that only
    /// stalls is not deadlocked). Foreground events are every event except
    /// the periodic timers (credit tick, sink hiccup toggle, CC timer) and
    /// the obuf pop / sink drain that a tick or a hiccup end starts
    /// (`Ev::background`). Anything useful a timer does -- an FC packet,
    /// a flit on the wire, a consumed flit -- schedules foreground events;
    /// a timer that finds nothing to do schedules only timer events, and
    /// what it looks at (credit counters, obuf and sink queues, the
    /// in-packet flag) changes only in foreground events. So once no
    /// foreground event is pending, if every timer has run a full cycle
    /// (with the pop or drain it starts) since the last foreground event
    /// without scheduling one, each later cycle will do exactly the same
    /// nothing: that is a deadlock. The cycle bound used is
    /// `Tcred + 1 ns`, plus `hiccupDuration + hiccupDelay + 1 ns` while a
    /// sink FIFO holds flits (only then can a hiccup end matter); CC timers
    /// only change the pacing of future pushes, which are foreground
    /// events already. A sink that stalls for a finite time, a credit
    /// timer of any period and CC back-off are therefore progress, and a
    /// true deadlock is reported after at most one such cycle of simulated
    /// time (never a hang: the timers' events in that cycle are bounded).
    pub fn run_until_completion(&mut self) -> Option<(Time, Vec<MsgId>)> {
        match self.run_until_completion_or(Time(u64::MAX)) {
            RunOutcome::Completed(t, ids) => Some((t, ids)),
            _ => None,
        }
    }

    /// As [`Fabric::run_until_completion`], but stop at `limit` (inclusive)
    /// if no message completes by then: the first completion instant
    /// `t <= limit` ([`RunOutcome::Completed`]), or every event with time
    /// `<= limit` processed and `now() == limit` ([`RunOutcome::Limit`]),
    /// whichever comes first. With `limit = Time(u64::MAX)` this is
    /// `run_until_completion`.
    pub fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome {
        if self.fatal.is_some() {
            return RunOutcome::Fatal;
        }
        if self.in_flight == 0 {
            return RunOutcome::Idle;
        }
        let mark = self.completions.len();
        let points = self.rdma.points;
        let found = if self.local_order && self.local.shuffle.is_none() {
            // instant by instant, each in its batches (order.rs)
            self.local_until_completion(limit.0, points)
        } else {
            self.until_completion_by_event(limit.0, points)
        };
        if self.local_order {
            self.local_release();
        }
        let Some(ft) = found else {
            if self.fatal.is_some() {
                return RunOutcome::Fatal;
            }
            match self.peek_time() {
                // nothing at all is left: the timers cannot be running
                None => {
                    self.deadlock_seen = true;
                    return RunOutcome::Deadlock;
                }
                // due by the limit but not by the bound: beyond the quiet
                // window with no foreground event pending
                Some(t) if t <= limit.0 => {
                    self.deadlock_seen = true;
                    return RunOutcome::Deadlock;
                }
                Some(_) => {}
            }
            if limit.0 > self.now {
                self.advance_to(limit.0);
                if self.fatal.is_some() {
                    return RunOutcome::Fatal;
                }
            }
            return RunOutcome::Limit;
        };
        let done: Vec<(MsgId, Time)> = self.completions.drain(mark..).collect();
        let ids: Vec<MsgId> = done
            .iter()
            .filter(|(_, t)| t.0 == ft)
            .map(|(i, _)| *i)
            .collect();
        RunOutcome::Completed(Time(ft), ids)
    }

    /// `run_until_completion_or`'s loop event by event (`points`: the op
    /// points when the run began): the instant of the first completion,
    /// None if the run stopped without one.
    fn until_completion_by_event(&mut self, limit: u64, points: u64) -> Option<u64> {
        let mut found: Option<u64> = None;
        // One look at the queue per event: `step_until(bound)` processes
        // the next event if it is due by `bound`, the latest time up to
        // which this run must go on: the completion instant once one is
        // found (finish that instant), else the limit, and with no
        // foreground event pending also the end of the quiet window (an
        // event beyond it means deadlock, decided below without processing
        // it). The same events in the same order as peeking at each event's
        // time first and deciding on it.
        loop {
            if self.fatal.is_some() {
                break;
            }
            let bound = found.unwrap_or_else(|| self.search_bound(limit));
            // (`step_until` needs a bound not before now; every event is
            // at or after now, so none is due by an earlier bound)
            if bound < self.now {
                break;
            }
            let stepped = if self.local_order {
                self.step_local(bound)
            } else {
                self.step_until(bound)
            };
            if !stepped {
                break;
            }
            self.count_pulse();
            if found.is_none() && self.rdma.points > points {
                found = Some(self.now);
            }
        }
        found
    }

    /// The latest time a run to the next completion may go on to before
    /// it finds one: the limit, and with no foreground event pending
    /// also the end of the quiet window (the deadlock rule above).
    pub(super) fn search_bound(&self, limit: u64) -> u64 {
        if self.fg_pending() == 0 {
            limit.min(self.last_fg.saturating_add(self.quiet_window()))
        } else {
            limit
        }
    }

    /// The quiet window without and with flits held in a sink FIFO.
    pub(super) fn quiet_terms(&self) -> (u64, u64) {
        let w = self.tm.cred + NS;
        (w, w + self.tm.hiccup_on + self.tm.hiccup_off + NS)
    }

    /// Simulated time after the last foreground event during which, with no
    /// foreground event pending, every periodic timer has run a full cycle
    /// (see the deadlock rule at [`Fabric::run_until_completion`]).
    pub(super) fn quiet_window(&self) -> u64 {
        let mut w = self.tm.cred + NS;
        if self.sink_held > 0 {
            w += self.tm.hiccup_on + self.tm.hiccup_off + NS;
        }
        w
    }

    /// A provable lower bound on the time of the next completion of a
    /// message already in the fabric, None when nothing is in flight (or
    /// after a fatal error). A completion is the consumption of a last flit
    /// by a sink drain: either a drain already pending, or one scheduled
    /// by a later event, at least `min(1 ns, drain time of 1 byte)` after
    /// it. Cheap (O(HCAs)) and weak; messages injected later are not
    /// covered (they cannot complete before their injection time).
    pub fn completion_lower_bound(&mut self) -> Option<Time> {
        if self.in_flight == 0 || self.fatal.is_some() {
            return None;
        }
        let next = self.peek_time()?;
        let dmin = self.tm.drain.get(1).copied().unwrap_or(0).min(NS);
        let mut lb = next + dmin;
        for h in &self.hcas {
            if h.sink.drain_pending {
                lb = lb.min(h.sink.drain_at);
            }
        }
        // host model: a message whose last DMA write is pending lands then
        if let Some(t) = self.rdma.host.as_ref().and_then(|x| x.next_landing()) {
            lb = lb.min(t);
        }
        Some(Time(lb.max(self.now)))
    }

    /// Completions since the last call, in order.
    pub fn take_completions(&mut self) -> Vec<(MsgId, Time)> {
        std::mem::take(&mut self.completions)
    }

    /// Messages injected (or created by standalone apps) and not completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn next_event_time(&mut self) -> Option<Time> {
        self.peek_time().map(Time)
    }

    pub fn events_processed(&self) -> u64 {
        self.events
    }

    /// Count an event towards the pulse (after each processed event).
    #[inline(always)]
    pub(super) fn count_pulse(&mut self) {
        // `>=`, not a multiple: events applied where they were scheduled
        // (direct.rs) count too, so the counter may step over a multiple
        if self.events >= self.next_pulse {
            self.next_pulse = self.events + PULSE_EVENTS;
            if let Some(p) = self.pulse {
                p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Count progress in `p` (every `PULSE_EVENTS` events), so that a
    /// watchdog in another thread can tell a busy engine from a hung one.
    pub fn set_pulse(&mut self, p: &'static std::sync::atomic::AtomicU64) {
        self.pulse = Some(p);
    }
}
