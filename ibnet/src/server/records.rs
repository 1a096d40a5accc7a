//! The records of docs/protocol.md turned into the server's steps: the
//! dispatch of [`FabricServer::handle`], version 2's Config (rule 3a) and
//! Finish (rule 4).

use super::{not_configured, Armed, FabricServer, ServerError, Step, OP_GET, OP_PUT};
use ipc_proto::{EstimateBase, Protocol, Record, Time};
use std::io::Write;

impl FabricServer {
    /// Handle one record from the scheduler; the answer records (if any) are
    /// appended to `out` in the order they must be sent.
    pub fn handle(&mut self, rec: Record, out: &mut Vec<Record>) -> Result<Step, ServerError> {
        if self.cfg.version >= 2 && !self.configured && !self.finished {
            return match rec {
                Record::Config {
                    quantum,
                    estimate_milli,
                    estimate_base,
                } => {
                    out.push(self.configure(quantum, estimate_milli, estimate_base)?);
                    Ok(Step::Continue)
                }
                Record::Error { code, .. } => Err(ServerError::Peer {
                    code,
                    detail: rec.error_detail().unwrap_or_default(),
                }),
                other => Err(not_configured(other.kind_name())),
            };
        }
        self.check_direct(rec.kind_name())?;
        match rec {
            Record::Insert {
                handle,
                time,
                src,
                dst,
                size,
                ..
            } => {
                self.insert_any(handle, time, src, dst, size, 0, 0)?;
                Ok(Step::Continue)
            }
            Record::InsertOp { .. } if self.cfg.version < 3 => {
                // (a channel refuses it already; the one-piece link does not)
                Err(ServerError::Violation(format!(
                    "InsertOp in a version-{} session (one-sided operations need version 3)",
                    self.cfg.version
                )))
            }
            Record::InsertOp {
                handle,
                time,
                src,
                dst,
                size,
                op,
                ack_handle,
                ..
            } => {
                let kind = match op {
                    ipc_proto::OpKind::Put => OP_PUT,
                    ipc_proto::OpKind::Get => OP_GET,
                };
                self.insert_any(handle, time, src, dst, size, kind, ack_handle)?;
                Ok(Step::Continue)
            }
            Record::Query { handle, time, .. } if self.cfg.protocol == Protocol::Query => {
                out.push(self.query(handle, time)?);
                Ok(Step::Continue)
            }
            Record::NoMoreInserts { time, horizon } if self.cfg.protocol == Protocol::Notify => {
                if self.cfg.version >= 2 {
                    self.wait_v2(time, horizon, out)?;
                } else {
                    if horizon.0 != 0 {
                        return Err(ServerError::Violation(format!(
                            "version 1: NoMoreInserts with a non-zero horizon field ({} ps)",
                            horizon.0
                        )));
                    }
                    self.no_more_inserts(time, out)?;
                }
                Ok(Step::Continue)
            }
            Record::Trigger {
                handle,
                time,
                delay,
                new_handle,
                size,
                seq,
                dst,
                src,
            } if self.cfg.version >= 4 && self.cfg.protocol == Protocol::Notify => {
                self.arm(
                    handle,
                    Armed {
                        not_before: time.0,
                        delay,
                        new_handle,
                        size,
                        seq,
                        dst,
                        src,
                    },
                )?;
                Ok(Step::Continue)
            }
            Record::Disarm { handle }
                if self.cfg.version >= 4 && self.cfg.protocol == Protocol::Notify =>
            {
                self.disarm(handle)?;
                Ok(Step::Continue)
            }
            Record::Config { .. } => {
                Err(ServerError::Violation("a second Config record".to_string()))
            }
            Record::Finish { time } => {
                self.finish(time)?;
                Ok(Step::Finished)
            }
            Record::Error { code, .. } => Err(ServerError::Peer {
                code,
                detail: rec.error_detail().unwrap_or_default(),
            }),
            other => Err(ServerError::Violation(format!(
                "the scheduler sent {} in the {} protocol",
                other.kind_name(),
                self.cfg.protocol
            ))),
        }
    }

    /// The state checks before a record (or its direct call): none after
    /// Finish; in version 2 none before Config (whose own handling is in
    /// `handle`).
    pub(super) fn check_direct(&self, what: &str) -> Result<(), ServerError> {
        if self.finished {
            return Err(ServerError::Violation(format!("{what} after Finish")));
        }
        if self.cfg.version >= 2 && !self.configured {
            return Err(not_configured(what));
        }
        Ok(())
    }

    /// Version 2: apply the scheduler's Config and answer ConfigAck.
    pub(super) fn configure(
        &mut self,
        quantum: Time,
        estimate_milli: u32,
        base: EstimateBase,
    ) -> Result<Record, ServerError> {
        self.configured = true;
        let estimate = (estimate_milli != 0).then(|| estimate_milli as f64 / 1000.0);
        if self.cfg.protocol == Protocol::Query {
            if quantum.0 == 0 {
                return Err(ServerError::Config(
                    "Config: the query quantum must be at least 1 ps".into(),
                ));
            }
            if self.cfg.pinned
                && (quantum != self.cfg.quantum
                    || estimate != self.cfg.estimate
                    || base != self.cfg.estimate_base)
            {
                let show = |q: Time, e: Option<f64>| {
                    format!(
                        "q={}ps F={}",
                        q.0,
                        e.map(|f| f.to_string()).unwrap_or_else(|| "none".into())
                    )
                };
                // (the first 48 bytes travel in the Error record)
                return Err(ServerError::Config(format!(
                    "Config {}, fabric has {}: in protocol version 2 q and F come from the scheduler's Config; drop --quantum/--estimate from the fabric's command line",
                    show(quantum, estimate),
                    show(self.cfg.quantum, self.cfg.estimate)
                )));
            }
            self.cfg.quantum = quantum;
            self.cfg.estimate = estimate;
            self.cfg.estimate_base = base;
        } else if estimate.is_some() {
            return Err(ServerError::Config(
                "Config: an arrival estimate (F) only exists in the query protocol".into(),
            ));
        }
        let min_latency = self.min_latency();
        Ok(Record::ConfigAck { min_latency })
    }

    pub(super) fn finish(&mut self, t: Time) -> Result<(), ServerError> {
        self.finished = true;
        self.stats.finish_time = Some(t.0);
        if self.cfg.protocol == Protocol::Query {
            self.collect_completions()?;
        }
        self.stats.in_flight_at_finish = self.fabric.in_flight() as u64;
        for w in [&mut self.insert_log, &mut self.arrival_log]
            .into_iter()
            .flatten()
        {
            w.flush().map_err(|e| ServerError::Log(e.to_string()))?;
        }
        self.finish_observed()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{config, ins, nmi, server, server_v2};
    use super::*;

    #[test]
    fn records_out_of_place() {
        let mut out = Vec::new();
        // version 2: Config first, once
        let mut s = server_v2("H8_S1", Protocol::Notify, 0);
        let e = s.handle(config(0), &mut out).unwrap_err();
        assert_eq!(
            e.to_string(),
            ServerError::Violation("a second Config record".into()).to_string()
        );
        assert!(not_configured("Insert")
            .to_string()
            .contains("must be Config, not Insert"));
        // a Query in the notify protocol
        let mut s = server("H8_S1", Protocol::Notify, 1, None);
        let q = Record::Query {
            handle: 1,
            time: Time(0),
            inserts_sent: 0,
        };
        let e = s.handle(q, &mut out).unwrap_err().to_string();
        assert!(e.contains("in the notify protocol"), "{e}");
        // Finish ends the session
        s.handle(ins(1, 0, 0, 1, 44), &mut out).unwrap();
        s.handle(nmi(0), &mut out).unwrap();
        assert_eq!(
            s.handle(
                Record::Finish {
                    time: Time(10_000_000)
                },
                &mut out
            )
            .unwrap(),
            Step::Finished
        );
        assert!(s.is_finished());
    }
}
