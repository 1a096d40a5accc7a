//! Waiting in the notify protocol (docs/protocol.md 3.3, 3a): run to the
//! next completion instant or through the scheduler's horizon, and answer
//! a batch of arrivals with the grant after it, or a grant alone.

use super::{ExactAnswer, FabricServer, ServerError};
use crate::engine::RunOutcome;
use ipc_proto::{Protocol, Record, Time};

impl FabricServer {
    /// Close a batch of `count` arrivals at `ta`: count it and grant up to
    /// the lookahead (everything, when nothing is left in flight).
    pub(super) fn end_arrival_batch(&mut self, ta: Time, count: usize) -> ExactAnswer {
        self.stats.arrivals += count as u64;
        self.stats.arrival_batches += 1;
        let grant = if self.fabric.in_flight() == 0 {
            u64::MAX
        } else {
            self.lookahead().max(ta.0 + 1)
        };
        ExactAnswer::Batch {
            time: ta,
            grant: Time(grant),
        }
    }

    /// Version 2 NoMoreInserts{time, horizon} (docs/protocol.md rule 3a): the
    /// answer of [`FabricServer::wait_exact`] as records.
    pub(super) fn wait_v2(
        &mut self,
        t: Time,
        horizon: Time,
        out: &mut Vec<Record>,
    ) -> Result<(), ServerError> {
        let mut arrivals = std::mem::take(&mut self.arrivals_buf);
        arrivals.clear();
        let r = self.wait_exact_inner(t, horizon, &mut arrivals);
        self.trim_slots();
        if let Ok(answer) = &r {
            match *answer {
                ExactAnswer::Batch { time, grant } => {
                    for &(handle, time, new_handle) in &self.fired {
                        out.push(Record::Fired {
                            handle,
                            time,
                            new_handle,
                        });
                    }
                    for &(handle, time) in &arrivals {
                        out.push(Record::Arrival { handle, time });
                    }
                    out.push(Record::ArrivalBatchEnd {
                        time,
                        count: arrivals.len() as u32,
                        grant,
                    });
                }
                ExactAnswer::Grant(time) => out.push(Record::Grant { time }),
            }
        }
        self.arrivals_buf = arrivals;
        r.map(|_| ())
    }

    /// Version 2 NoMoreInserts{time, horizon} without records (one-piece
    /// mode, `loggopsim --network onepiece`): what [`FabricServer::handle`]
    /// does with that record, the arrivals appended to `arrivals` as
    /// (handle, time) and the batch end or grant returned. The same checks
    /// and counters as the record.
    pub fn wait_exact(
        &mut self,
        t: Time,
        horizon: Time,
        arrivals: &mut Vec<(u64, Time)>,
    ) -> Result<ExactAnswer, ServerError> {
        self.check_direct("NoMoreInserts")?;
        if self.cfg.protocol != Protocol::Notify || self.cfg.version < 2 {
            return Err(ServerError::Violation(format!(
                "NoMoreInserts with a horizon in the {} protocol, version {}",
                self.cfg.protocol, self.cfg.version
            )));
        }
        let r = self.wait_exact_inner(t, horizon, arrivals);
        self.trim_slots();
        r
    }

    /// The body of [`FabricServer::wait_exact`] and of the record's handler.
    pub(super) fn wait_exact_inner(
        &mut self,
        t: Time,
        horizon: Time,
        out: &mut Vec<(u64, Time)>,
    ) -> Result<ExactAnswer, ServerError> {
        self.stats.no_more_inserts += 1;
        // The scheduler's clock may be behind the fabric's (the fabric ran
        // to an arrival the scheduler processes later, at t + o + L); its
        // horizon, the next event, never is.
        let now = self.fabric.now();
        if horizon < now {
            return Err(ServerError::Violation(format!(
                "NoMoreInserts with horizon {} ps, in the fabric's past (fabric time {} ps)",
                horizon.0, now.0
            )));
        }
        if horizon < t {
            return Err(ServerError::Violation(format!(
                "NoMoreInserts at {} ps with horizon {} ps: the horizon (the scheduler's next event) cannot be before its current time",
                t.0, horizon.0
            )));
        }
        self.something_in_flight(t)?;
        // The answer is the same whether the fabric stops at the horizon
        // or beyond it as long as no completion lies in between: with the
        // lookahead already past the horizon, answer at once.
        let la = self.lookahead();
        if horizon.0 != u64::MAX && la > horizon.0 {
            self.stats.grants += 1;
            self.stats.grants_without_simulation += 1;
            return Ok(ExactAnswer::Grant(Time(la)));
        }
        self.fired.clear();
        let first = out.len();
        // Version 4: the last instant passed on triggers, if any.
        let mut passed: Option<Time> = None;
        loop {
            let from = out.len();
            match self.run_observed(horizon)? {
                RunOutcome::Completed(ta, ids) => {
                    self.report_completions(ta, ids, out)?;
                    if ta < horizon && self.pass_on_triggers(ta, from, out)? {
                        passed = Some(ta);
                        continue;
                    }
                    // reported without firing: their triggers are used up
                    // (also at or past the horizon, where none is tried)
                    self.drop_triggers(&out[from..]);
                    return Ok(self.end_arrival_batch(ta, out.len() - first));
                }
                RunOutcome::Limit | RunOutcome::Idle if passed.is_some() => {
                    // instants passed on triggers, then nothing more up to
                    // the horizon: one batch of what was passed
                    let ta = passed.unwrap();
                    self.stats.arrivals += (out.len() - first) as u64;
                    self.stats.arrival_batches += 1;
                    let grant = if self.fabric.in_flight() == 0 {
                        u64::MAX
                    } else {
                        self.lookahead().max(horizon.0.saturating_add(1))
                    };
                    return Ok(ExactAnswer::Batch {
                        time: ta,
                        grant: Time(grant),
                    });
                }
                other => return self.end_wait(other, horizon),
            }
        }
    }

    /// A wait that ends without a completion: the grant at the horizon,
    /// or the fabric's failure.
    pub(super) fn end_wait(
        &mut self,
        outcome: RunOutcome,
        horizon: Time,
    ) -> Result<ExactAnswer, ServerError> {
        match outcome {
            RunOutcome::Completed(..) => unreachable!("completions are handled by the caller"),
            RunOutcome::Limit => {
                let grant = self.lookahead().max(horizon.0 + 1);
                self.stats.grants += 1;
                Ok(ExactAnswer::Grant(Time(grant)))
            }
            RunOutcome::Idle => {
                // nothing in flight (checked above; kept for completeness)
                Ok(ExactAnswer::Grant(Time(u64::MAX)))
            }
            RunOutcome::Fatal => {
                self.check_fabric()?;
                Err(ServerError::Fabric("the fabric stopped".into()))
            }
            RunOutcome::Deadlock => {
                let handles = self.stuck_handles();
                Err(ServerError::Deadlock {
                    detail: format!(
                        "no event left in the fabric that can complete the {} message(s) in flight at {} ps (handles {:?})",
                        handles.len(),
                        self.fabric.now().0,
                        handles
                    ),
                    handles,
                })
            }
        }
    }

    /// A NoMoreInserts at `t` waits for a message in flight: with none,
    /// the scheduler waits for messages the fabric never received.
    fn something_in_flight(&self, t: Time) -> Result<(), ServerError> {
        if self.fabric.in_flight() == 0 {
            return Err(ServerError::Deadlock {
                detail: format!(
                    "NoMoreInserts at {} ps with no message in flight: the scheduler waits for messages the fabric never received",
                    t.0
                ),
                handles: Vec::new(),
            });
        }
        Ok(())
    }

    pub(super) fn no_more_inserts(
        &mut self,
        t: Time,
        out: &mut Vec<Record>,
    ) -> Result<(), ServerError> {
        self.stats.no_more_inserts += 1;
        self.something_in_flight(t)?;
        match self.run_observed(Time(u64::MAX))? {
            RunOutcome::Completed(ta, ids) => {
                let mut points = std::mem::take(&mut self.arrivals_buf);
                points.clear();
                self.report_completions(ta, ids, &mut points)?;
                out.extend(
                    points
                        .iter()
                        .map(|&(handle, time)| Record::Arrival { handle, time }),
                );
                self.stats.arrivals += points.len() as u64;
                self.stats.arrival_batches += 1;
                out.push(Record::ArrivalBatchEnd {
                    time: ta,
                    count: points.len() as u32,
                    grant: Time(0),
                });
                self.arrivals_buf = points;
                self.trim_slots();
                Ok(())
            }
            _ => {
                self.check_fabric()?;
                let handles = self.stuck_handles();
                Err(ServerError::Deadlock {
                    detail: format!(
                        "the fabric's event queue drained at {} ps with {} message(s) in flight (handles {:?})",
                        self.fabric.now().0,
                        handles.len(),
                        handles
                    ),
                    handles,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::server;
    use super::*;

    #[test]
    fn a_batch_with_nothing_left_in_flight_grants_everything() {
        let mut s = server("H8_S1", Protocol::Notify, 1, None);
        assert_eq!(
            s.end_arrival_batch(Time(5), 3),
            ExactAnswer::Batch {
                time: Time(5),
                grant: Time(u64::MAX)
            }
        );
        assert_eq!((s.stats.arrivals, s.stats.arrival_batches), (3, 1));
    }
}
