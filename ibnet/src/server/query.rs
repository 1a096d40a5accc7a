//! The query protocol (docs/protocol.md 2.3, 2.5): run up to the asked
//! time, answer the arrival or the next time to ask, with the estimate.

use super::{FabricServer, ServerError};
use ipc_proto::{EstimateBase, Record, Time};
use std::io::Write;

impl FabricServer {
    pub(super) fn check_fabric(&self) -> Result<(), ServerError> {
        match self.fabric.error() {
            Some(e) => Err(ServerError::Fabric(e.to_string())),
            None => Ok(()),
        }
    }

    /// Record the fabric's completions in the slots (query protocol).
    pub(super) fn collect_completions(&mut self) -> Result<(), ServerError> {
        if self.ops {
            return self.collect_points().map(|_| ());
        }
        for (id, t) in self.fabric.take_completions() {
            let Some(slot) = self.slots.get_mut(id) else {
                continue;
            };
            slot.arrived = Some(t);
            if let Some(p) = slot.promised {
                if t < p {
                    self.stats.note_causality_error(p.0 - t.0);
                }
            }
            if let Some(w) = &mut self.arrival_log {
                writeln!(w, "{} {}", slot.handle, t.0)
                    .map_err(|e| ServerError::Log(e.to_string()))?;
            }
        }
        Ok(())
    }

    pub(super) fn query(&mut self, handle: u64, t: Time) -> Result<Record, ServerError> {
        self.stats.queries += 1;
        // (a put's ack handle names its local completion point)
        let (id, ack) = match self.by_handle.get(&handle) {
            Some(id) => (id, false),
            None => match self.ack_handles.get(&handle) {
                Some(&id) => (id, true),
                None => {
                    return Err(ServerError::Violation(format!(
                        "Query for unknown handle {handle} (never inserted, or already reported)"
                    )))
                }
            },
        };
        if t < self.fabric.now() {
            return Err(ServerError::Violation(format!(
                "Query {handle} at {} ps is in the fabric's past (fabric time {} ps)",
                t.0,
                self.fabric.now().0
            )));
        }
        self.run_until_observed(t)?;
        self.check_fabric()?;
        self.collect_completions()?;
        let q = self.cfg.quantum;
        let estimate = self.cfg.estimate;
        let slot = self.slot(id);
        if let Some(ta) = slot.point_time(ack) {
            self.stats.replies_arrived += 1;
            self.stats.query_lateness_ps += t.0 - ta.0;
            if ack {
                self.ack_handles.remove(&handle);
            } else {
                self.by_handle.remove(&handle);
            }
            self.trim_slots();
            return Ok(Record::Reply {
                handle,
                time: ta,
                arrived: true,
            });
        }
        let mut next = Time(t.0.saturating_add(q.0));
        if !slot.queried {
            if let Some(f) = estimate {
                // Section 2.5: F x the per-hop fixed latencies of the route
                // (or the zero-load lower bound, when chosen).
                let base = match self.cfg.estimate_base {
                    EstimateBase::Hops => slot.base,
                    EstimateBase::ZeroLoad => slot.lb,
                };
                let est = Time(
                    slot.insert_time
                        .0
                        .saturating_add((f * base.0 as f64).round() as u64),
                );
                if est > next {
                    next = est;
                    self.slot_mut(id).promised = Some(est);
                    self.stats.estimates += 1;
                }
            }
        }
        self.slot_mut(id).queried = true;
        self.stats.replies_not_yet += 1;
        Ok(Record::Reply {
            handle,
            time: next,
            arrived: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ins, server};
    use ipc_proto::{Protocol, Time};

    #[test]
    fn a_query_before_the_arrival_names_the_next_time_to_ask() {
        let mut s = server("H8_S1", Protocol::Query, 1000, None);
        s.check_fabric().unwrap();
        let mut out = Vec::new();
        s.handle(ins(1, 0, 0, 1, 44), &mut out).unwrap();
        // at 0 the message cannot have arrived: ask again a quantum later
        let r = s.query(1, Time(0)).unwrap();
        assert_eq!(
            r,
            ipc_proto::Record::Reply {
                handle: 1,
                time: Time(1000),
                arrived: false
            }
        );
        assert_eq!(s.stats.queries, 1);
    }
}
