//! Waiting for the network (docs/model/loggops.md 7, docs/protocol.md
//! rules 3 and 3a): how a message is tracked in each synchronisation mode
//! (poll, notify, exact) and how reported arrivals enter the active queue.

use super::handlers::Msg;
use super::one_sided;
use super::queue::{Ev, MSG_FLAG};
use super::slots;
use super::{Sim, SimError, TraceEvent, Tracer};
use crate::network::{Handle, Network, SyncMode};
use crate::Time;

impl<N: Network, T: Tracer> Sim<N, T> {
    /// A message enters the network: store it and wait for it according to
    /// the synchronisation mode (poll: its event on the destination at
    /// `earliest`, the earliest time it may arrive; notify: until the
    /// network reports it; exact: also lower the granted horizon to the
    /// insert time `t_ins` plus the network's minimum latency). Two-sided
    /// sends and every part of a one-sided operation go through here.
    pub(super) fn track_message(
        &mut self,
        mut m: Msg,
        earliest: u64,
        t_ins: u64,
        prefired: bool,
    ) -> Result<u32, SimError> {
        let (host, handle) = (m.dst, m.handle);
        let seq = self.seq;
        self.seq += 1;
        self.events += 1;
        m.seq = seq;
        // exact mode: the earliest time the message event may run (t + o
        // + L for a send, as in poll mode) until the arrival is known
        if self.mode == SyncMode::Exact {
            m.arrival = earliest;
        }
        let slot = slots::store(&mut self.msgs, &mut self.msg_free, m);
        match self.mode {
            SyncMode::Poll => self.heap.push(Ev {
                time: earliest,
                seq,
                host,
                id: slot | MSG_FLAG,
            }),
            SyncMode::Notify => {
                self.waiting.insert(handle, slot as u64);
            }
            SyncMode::Exact => {
                self.waiting.insert(handle, slot as u64);
                // the new message arrives no earlier than its insert time
                // plus the network's minimum latency (a message the network
                // inserted itself is covered by its grant already)
                if !prefired {
                    self.granted = self.granted.min(t_ins.saturating_add(self.min_lat));
                }
                if self.trig.on {
                    self.trig_insert(host, handle, prefired)?;
                    if let Some(t) = self.trig.early.remove(&handle) {
                        // reported in the batch that fired it
                        self.arrive(handle, Time(t))?;
                    }
                }
            }
        }
        Ok(slot)
    }

    /// Exact notify (docs/protocol.md rule 3a): the next event is at `horizon`
    /// (u64::MAX: none) and not below the grant: ask the network for the
    /// arrivals up to the horizon, or a grant beyond it. A message event
    /// enters the heap at max(arrival, t + o + L), where poll mode would
    /// first look at it, with its original seq, so both modes process the
    /// same events in the same order.
    pub(super) fn wait_exact(&mut self, horizon: u64) -> Result<(), SimError> {
        if self.trig.on {
            self.arm_candidates()?;
        }
        let ans = self.net.wait_exact(Time(self.now), Time(horizon))?;
        for &(h, t_ins, new) in &ans.fired {
            self.trig_fired(h, t_ins, new)?;
        }
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Wait {
                now: self.now,
                arrivals: ans.arrivals.len(),
            });
        }
        if ans.arrivals.is_empty() {
            if horizon == u64::MAX {
                return Err(SimError::NoArrivals(self.waiting.len()));
            }
            if ans.grant.0 <= horizon {
                return Err(SimError::NoProgress {
                    horizon,
                    grant: ans.grant.0,
                });
            }
            self.exact_grants += 1;
        }
        if ans.arrivals.len() > 1 {
            self.prefetch_batch(&ans.arrivals);
        }
        for (h, t) in ans.arrivals {
            if self.processed > 0 && t.0 <= self.now {
                return Err(SimError::LateArrival {
                    handle: h,
                    at: t.0,
                    now: self.now,
                });
            }
            if self.trig.on && !self.waiting.contains_key(&h) && ans.fired.iter().any(|f| f.2 == h)
            {
                // a message the network inserted for a trigger, which the
                // engine will insert itself when it reaches the reaction
                self.trig.early.insert(h, t.0);
                continue;
            }
            self.arrive(h, t)?;
        }
        self.granted = ans.grant.0;
        Ok(())
    }

    /// A batch of arrivals is processed right after it is received, and
    /// each of its messages then waits on a chain of cache misses that the
    /// fabric's work since the last batch has caused: its waiting entry and
    /// message, the receive-queue slot it matches, the matched receive's
    /// record and its dependents (in one-piece mode about a third of the
    /// scheduler's time on the 648-rank dissemination went to the last two
    /// alone, `perf`). Each step of the chain needs the one before, but the
    /// chains of different messages are independent: loading step k of
    /// every message before step k+1 of any lets their misses overlap.
    /// Only loads; nothing changes (results are identical).
    pub(super) fn prefetch_batch(&mut self, arrivals: &[(Handle, Time)]) {
        if !self.rq.is_empty() {
            return;
        }
        let msgs = self.msgs.as_ptr();
        let mut slots = std::mem::take(&mut self.scratch);
        slots.clear();
        for &(h, _) in arrivals {
            if let Some(slot) = self.waiting.get(&h) {
                ibcosim_common::prefetch::line(msgs.wrapping_add(slot as usize));
                slots.push(slot as u32);
            }
        }
        for s in slots.iter_mut() {
            let m = &self.msgs[*s as usize];
            if m.role != one_sided::Role::Data {
                *s = u32::MAX;
                continue;
            }
            self.rq_exact[m.dst as usize].prefetch(self.rq_key(m.src, m.tag));
        }
        for s in slots.iter_mut() {
            if *s == u32::MAX {
                continue;
            }
            let m = &self.msgs[*s as usize];
            let sched = &self.sched;
            *s = match self.rq_exact[m.dst as usize].peek(
                self.rq_key(m.src, m.tag),
                &self.link,
                |n| sched.match_key(n),
            ) {
                Some(node) => {
                    sched.prefetch_node(node);
                    node
                }
                None => u32::MAX,
            };
        }
        for &node in &slots {
            if node != u32::MAX {
                self.sched.prefetch_edges(node);
            }
        }
        self.scratch = slots;
    }

    /// Exact mode: the network reported message `h` as arrived at `t`.
    pub(super) fn arrive(&mut self, h: Handle, t: Time) -> Result<(), SimError> {
        let slot = self.waiting.remove(&h).ok_or(SimError::UnknownHandle(h))? as u32;
        let m = &mut self.msgs[slot as usize];
        let seq = m.seq;
        let at = t.0.max(m.arrival);
        m.arrived = true;
        m.arrival = t.0;
        let dst = m.dst;
        self.heap.push(Ev {
            time: at,
            seq,
            host: dst,
            id: slot | MSG_FLAG,
        });
        if self.trig.on {
            self.trig.live[dst as usize] += 1;
            self.trig_arrived(dst, h);
        }
        Ok(())
    }

    pub(super) fn wait_network(&mut self) -> Result<(), SimError> {
        let batch = self.net.wait_arrivals(Time(self.now))?;
        if batch.is_empty() {
            return Err(SimError::NoArrivals(self.waiting.len()));
        }
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Wait {
                now: self.now,
                arrivals: batch.len(),
            });
        }
        for (h, t) in batch {
            // The notify protocol (docs/protocol.md rule 3, as in the thesis)
            // asks the fabric only when no finite event is left, so events
            // later than a message's arrival may already have run. With one
            // CPU per host and zero gaps that cannot change a result (a busy
            // CPU defers the message either way), but with several CPUs or
            // g > o it can. Count it so the user is told.
            if t.0 < self.now {
                self.late_arrivals += 1;
                self.max_arrival_lag = self.max_arrival_lag.max(self.now - t.0);
            }
            let slot = self.waiting.remove(&h).ok_or(SimError::UnknownHandle(h))? as u32;
            let m = &mut self.msgs[slot as usize];
            let seq = m.seq;
            m.arrived = true;
            m.arrival = t.0;
            self.heap.push(Ev {
                time: t.0,
                seq,
                host: m.dst,
                id: slot | MSG_FLAG,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Params, Sim, SimError};
    use crate::network::{Envelope, Handle, InFlight, NetError, Network, SyncMode};
    use crate::Time;

    /// A notify-mode network that reports every message at a fixed delay
    /// after its insert, or never (`lost`).
    struct Delay {
        d: u64,
        lost: bool,
        sent: Vec<(Handle, Time)>,
    }
    impl Network for Delay {
        fn name(&self) -> &str {
            "delay"
        }
        fn mode(&self) -> SyncMode {
            SyncMode::Notify
        }
        fn insert(&mut self, now: Time, _env: Envelope) -> Result<Handle, NetError> {
            let h = self.sent.len() as Handle;
            self.sent.push((h, Time(now.0 + self.d)));
            Ok(h)
        }
        fn query(&mut self, _now: Time, _m: InFlight) -> Result<Time, NetError> {
            unreachable!("notify mode never queries")
        }
        fn wait_arrivals(&mut self, _now: Time) -> Result<Vec<(Handle, Time)>, NetError> {
            Ok(if self.lost {
                Vec::new()
            } else {
                std::mem::take(&mut self.sent)
            })
        }
    }

    /// One message 0 -> 1 on a [`Delay`] network of delay `d`.
    fn pair_on_delay(d: u64, lost: bool) -> Sim<Delay> {
        let pair =
            "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n";
        let s = crate::goal::parse_str("t.goal", pair).unwrap();
        let net = Delay {
            d,
            lost,
            sent: Vec::new(),
        };
        Sim::new(s, Params::default(), net).unwrap()
    }

    /// Notify mode: the message event enters the queue at its reported
    /// arrival (here 7000, after t + o + L = 4000) and is taken in then:
    /// 7000 + o + 9G = 8554.
    #[test]
    fn notify_processes_a_message_at_its_reported_arrival() {
        let mut sim = pair_on_delay(7000, false);
        sim.run().unwrap();
        assert_eq!(sim.report().finish_times, vec![1500, 8554]);
    }

    /// A network that never reports a message in flight is an error, not a hang.
    #[test]
    fn no_arrivals_is_an_error() {
        let mut sim = pair_on_delay(1, true);
        assert_eq!(sim.run(), Err(SimError::NoArrivals(1)));
    }
}
