//! The main loop: the next event in (time, seq) order from the roots and
//! the active queue, under the exact protocol's grant (docs/model/loggops.md
//! 4, 5; docs/protocol.md rule 3a), and its dispatch to the handlers.

use super::groups::class_name;
use super::handlers::Outcome;
use super::queue::{Ev, MSG_FLAG, PROXY};
use super::{Sim, SimError, Tracer};
use crate::network::{Network, SyncMode};
use crate::schedule::Kind;
use crate::Time;

impl<N: Network, T: Tracer> Sim<N, T> {
    /// Runs to the end.
    pub fn run(&mut self) -> Result<(), SimError> {
        while self.step()?.is_some() {}
        Ok(())
    }

    /// Processes one event; returns its time, or None when the run is over
    /// (after calling the network's `finish`).
    pub fn step(&mut self) -> Result<Option<Time>, SimError> {
        if self.done {
            return Ok(None);
        }
        let ev = loop {
            let root = self.peek_root();
            if self.mode == SyncMode::Exact && !self.waiting.is_empty() {
                // Exact notify: the next event may run only below the grant.
                let next = match (root, self.heap.peek()) {
                    (Some(r), Some(h)) => r.time.min(h.time),
                    (Some(r), None) => r.time,
                    (None, Some(h)) => h.time,
                    (None, None) => u64::MAX,
                };
                if next >= self.granted {
                    self.wait_exact(next)?;
                    continue;
                }
            }
            match root {
                Some(r) => match self.heap.peek() {
                    Some(h) if (h.time, h.seq) < (r.time, r.seq) => {
                        break self.heap.pop().unwrap();
                    }
                    _ => {
                        self.root_pos += 1;
                        break r;
                    }
                },
                None => match self.heap.pop() {
                    Some(e) => break e,
                    None => {
                        if self.waiting.is_empty() {
                            self.done = true;
                            self.net.finish(Time(self.now))?;
                            return Ok(None);
                        }
                        self.wait_network()?;
                    }
                },
            }
        };
        self.prefetch_next();
        if ev.host & PROXY != 0 {
            self.proxy(ev)?;
        } else {
            self.processed += 1;
            self.now = self.now.max(ev.time);
            match self.dispatch(ev)? {
                Outcome::Blocked { avail, class } => {
                    if self.grouping {
                        self.join_group(class, avail, ev);
                    } else {
                        self.reinsert(ev, avail, class_name(class));
                    }
                }
                Outcome::Done => {
                    if self.trig.on {
                        self.trig.live[ev.host as usize] -= 1;
                    }
                }
            }
        }
        if !self.released.is_empty() {
            self.enqueue_released();
        }
        Ok(Some(Time(ev.time)))
    }

    /// If the next event is a message, start loading the receive-queue slot
    /// it will look up (a cache miss otherwise paid in full).
    #[inline]
    pub(super) fn prefetch_next(&self) {
        if let Some(n) = self.heap.peek() {
            if n.host & PROXY != 0 {
                return;
            }
            if n.id & MSG_FLAG != 0 && self.rq.is_empty() {
                let m = &self.msgs[(n.id & !MSG_FLAG) as usize];
                self.rq_exact[n.host as usize].prefetch(self.rq_key(m.src, m.tag));
            }
        }
    }

    #[inline]
    pub(super) fn dispatch(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        if ev.id & MSG_FLAG != 0 {
            self.message(ev)
        } else {
            Ok(match self.sched.kind(ev.id) {
                Kind::Calc => self.calc(ev)?,
                Kind::Send => self.send(ev)?,
                Kind::Recv => self.recv(ev),
                Kind::Put | Kind::Get => self.one_sided_start(ev)?,
                Kind::Poll => self.poll(ev),
            })
        }
    }
}

#[cfg(test)]
mod tests {

    /// `step` returns the events' times in order (roots at 0, the message
    /// at t + o + L = 4000), then None for good.
    #[test]
    fn steps_come_in_time_order_then_none() {
        let text =
            "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n";
        let mut sim = crate::engine::build::loggp_sim(text);
        let mut times = Vec::new();
        while let Some(t) = sim.step().unwrap() {
            times.push(t.0);
        }
        assert_eq!(times, vec![0, 0, 4000]);
        assert!(sim.is_done());
        assert_eq!(sim.step().unwrap(), None);
    }
}
