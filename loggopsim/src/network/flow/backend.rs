//! The flow model as a [`Network`] (docs/backends.md, "flow",
//! synchronisation): inserts start flows; exact notification and polling
//! advance the model only as far as no later insert can change it.

use super::{ceil_ps, Flow, FlowNet, St};
use crate::network::{Answer, Envelope, Handle, InFlight, NetError, Network, SyncMode};
use crate::Time;

impl Network for FlowNet {
    fn name(&self) -> &str {
        &self.name
    }
    fn mode(&self) -> SyncMode {
        self.mode
    }
    fn insert(&mut self, now: Time, env: Envelope) -> Result<Handle, NetError> {
        let Envelope { src, dst, size, .. } = env;
        if now.0 < self.now {
            return Err(NetError::Protocol(format!(
                "insert at {} ps is in the flow model's past ({} ps)",
                now.0, self.now
            )));
        }
        let route = self.route_id(src, dst)?;
        let lat = self.routes[route as usize].latency;
        let entry = now.0.checked_add(lat).ok_or_else(|| {
            NetError::Protocol(format!("time overflow: {} ps + latency {lat} ps", now.0))
        })?;
        let f = self.flows.len() as u32;
        self.flows.push(Flow {
            route,
            src,
            dst,
            remaining: size as f64,
            rate: 0.0,
            last: entry,
            gen: 0,
            st: St::Latency,
            entry,
            arrival: 0,
        });
        self.foff.push(0);
        self.flen.push(0);
        self.heap.set(f, entry);
        Ok(f as Handle)
    }

    fn query(&mut self, now: Time, m: InFlight) -> Result<Time, NetError> {
        let handle = m.handle;
        // no later insert changes anything at or before `now`
        while self.step_instant(now.0).is_some() {}
        let fl = self
            .flows
            .get(handle as usize)
            .ok_or_else(|| NetError::Protocol(format!("query of unknown handle {handle}")))?;
        let max_rate = self.routes[fl.route as usize].max_rate;
        Ok(match fl.st {
            St::Done => Time(fl.arrival),
            St::Latency => Time(
                fl.entry
                    .saturating_add(ceil_ps(fl.remaining / max_rate))
                    .max(now.0 + 1),
            ),
            St::Active => {
                let left = fl.remaining - fl.rate * (now.0 - fl.last) as f64;
                let lb = if left > 0.0 {
                    ceil_ps(left / max_rate)
                } else {
                    1
                };
                Time(now.0 + lb.max(1))
            }
        })
    }

    fn wait_exact(&mut self, now: Time, horizon: Time) -> Result<Answer, NetError> {
        let _ = now;
        match self.advance_to_completion(horizon.0) {
            Some((t, done)) => {
                let arrivals = done.into_iter().map(|f| (f as Handle, Time(t))).collect();
                Ok(Answer {
                    arrivals,
                    grant: Time(self.next_event()),
                    fired: Vec::new(),
                })
            }
            None => {
                let g = self.next_event();
                // nothing up to the horizon: the next event is beyond it
                Ok(Answer {
                    arrivals: Vec::new(),
                    grant: Time(g),
                    fired: Vec::new(),
                })
            }
        }
    }

    fn min_latency(&self) -> Time {
        Time(self.topo.min_latency())
    }

    fn stats(&self) -> Vec<(String, u64)> {
        vec![
            ("messages".into(), self.flows.len() as u64),
            ("solves".into(), self.solves),
            ("fill_rounds".into(), self.fill_rounds),
            ("solved_flows".into(), self.solved_flows),
            ("max_active_flows".into(), self.max_active),
        ]
    }
}

#[cfg(test)]
mod tests {
    use crate::network::flow::test_net;
    use crate::network::{Envelope, InFlight, Network};
    use crate::Time;

    /// Exact mode: 1000 B alone arrive at 1 + 1000/1e-3 = 1 000 001 ps;
    /// nothing is reported before the horizon reaches it.
    #[test]
    fn wait_exact_reports_the_first_completion() {
        let mut n = test_net(true);
        let h = n.insert(Time(0), Envelope::new(0, 1, 1000, 0)).unwrap();
        let a = n.wait_exact(Time(0), Time(500)).unwrap();
        assert!(a.arrivals.is_empty());
        assert!(a.grant.0 > 500);
        let a = n.wait_exact(Time(0), Time(u64::MAX)).unwrap();
        assert_eq!(a.arrivals, vec![(h, Time(1_000_001))]);
        assert_eq!(a.grant, Time(u64::MAX));
    }

    /// Poll mode: before the arrival the answer is a lower bound (the
    /// remaining bytes at the route's fastest rate), after it the arrival.
    #[test]
    fn query_answers_a_lower_bound_then_the_arrival() {
        let mut n = test_net(false);
        let h = n.insert(Time(0), Envelope::new(0, 1, 1000, 0)).unwrap();
        let m = InFlight {
            handle: h,
            start: Time(0),
        };
        assert_eq!(n.query(Time(0), m).unwrap(), Time(1_000_001));
        // half-way: 500 B left at 1e-3 B/ps
        assert_eq!(n.query(Time(500_001), m).unwrap(), Time(1_000_001));
        assert_eq!(n.query(Time(2_000_000), m).unwrap(), Time(1_000_001));
        assert!(
            n.insert(Time(5), Envelope::new(0, 1, 1, 0)).is_err(),
            "an insert in the model's past"
        );
    }
}
