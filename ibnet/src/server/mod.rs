//! The fabric's co-simulation server (cosim-protocol.md): a sans-I/O state
//! machine [`FabricServer`] that turns the scheduler's records into
//! [`Fabric`] calls and answers with records, plus the transport loop and
//! the `ibnet serve` command ([`serve`]).
//!
//! Rules implemented here (section numbers of cosim-protocol.md):
//!
//! - Insert (2.1, 3.1): rank -> HCA through the rank map (7); the message is
//!   injected at its own time from the source HCA to the destination HCA;
//!   a time before the fabric's clock is a protocol violation (1), never
//!   clamped.
//! - Query (2.3): the channel already delivered every Insert the query
//!   counts; the fabric runs up to and including t', then answers the
//!   arrival time t_a <= t' or t' + q. With an estimate factor F (2.5) the
//!   first query of a message is answered max(t' + q, t_insert + F * zero
//!   load latency); a real arrival earlier than such a promise is a
//!   causality error, counted with its size.
//! - NoMoreInserts (3.3): run to the next completion instant, one Arrival
//!   per message completing then, and the batch end. Nothing in flight, or
//!   a fabric that cannot complete what is in flight, is a deadlock (3.5).
//! - Finish (4): the run is over; the caller prints [`FabricServer::summary`].
//!
//! Arrival = the last flit of the message consumed by the destination sink
//! (what `Fabric` reports as completion).

mod setup;
mod stats;

pub mod serve;

pub use serve::{run_serve, serve_channel, ServeArgs};
pub use setup::{parse_quantum, FabricSetup, SetupArgs};
pub use stats::ServerStats;

use crate::engine::{Fabric, FabricError, MsgId};
use ipc_proto::{ErrorCode, Protocol, Record, Time};
use std::collections::HashMap;
use std::io::Write;

/// Settings of one served session.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub protocol: Protocol,
    /// Query protocol: precision q of a "not yet" reply (t' + q), >= 1 ps.
    pub quantum: Time,
    /// Query protocol: arrival-estimate factor F (section 2.5), if enabled.
    pub estimate: Option<f64>,
    /// rank -> HCA number (index among the fabric's HCAs, node order).
    pub rank_hcas: Vec<usize>,
}

/// What the caller should do after a record was handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep receiving.
    Continue,
    /// Finish received: print the statistics and end the session.
    Finished,
}

/// Why a session ended in failure. Each maps to an Error record for the peer.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("protocol violation: {0}")]
    Violation(String),
    #[error("deadlock of the simulated system: {detail}")]
    Deadlock { detail: String, handles: Vec<u64> },
    #[error("configuration error: {0}")]
    Config(String),
    #[error("the fabric simulation failed: {0}")]
    Fabric(String),
    #[error("the scheduler reported an error (code {code}): {detail}")]
    Peer { code: u32, detail: String },
    #[error("writing a log file: {0}")]
    Log(String),
}

impl ServerError {
    /// The Error record telling the peer why the fabric stops (the detail
    /// field holds 48 bytes; the full text goes to the fabric's stderr).
    pub fn to_record(&self) -> Record {
        let (code, text) = match self {
            ServerError::Violation(m) => (ErrorCode::Violation, m.clone()),
            ServerError::Deadlock { handles, .. } => {
                let list: Vec<String> = handles.iter().take(6).map(|h| h.to_string()).collect();
                let more = if handles.len() > 6 { ",..." } else { "" };
                (
                    ErrorCode::Deadlock,
                    format!("{} stuck: {}{more}", handles.len(), list.join(",")),
                )
            }
            ServerError::Config(m) => (ErrorCode::Config, m.clone()),
            ServerError::Fabric(m) | ServerError::Log(m) => (ErrorCode::Internal, m.clone()),
            ServerError::Peer { .. } => (ErrorCode::Abort, "scheduler failed".into()),
        };
        Record::error(code, &text)
    }
}

/// Per-message bookkeeping of the server (indexed by the fabric's MsgId).
#[derive(Clone, Debug)]
struct Slot {
    handle: u64,
    insert_time: Time,
    src_hca: usize,
    dst_hca: usize,
    bytes: u64,
    /// Completion time, once the fabric reported it.
    arrived: Option<Time>,
    /// Query protocol: a time promised by the estimate (no arrival before it).
    promised: Option<Time>,
    queried: bool,
}

/// The server state machine. Feed it records with [`FabricServer::handle`].
pub struct FabricServer {
    fabric: Fabric,
    cfg: ServerConfig,
    slots: Vec<Slot>,
    by_handle: HashMap<u64, MsgId>,
    zll_cache: HashMap<(usize, usize, u64), Time>,
    stats: ServerStats,
    insert_log: Option<Box<dyn Write + Send>>,
    arrival_log: Option<Box<dyn Write + Send>>,
    finished: bool,
}

impl FabricServer {
    pub fn new(fabric: Fabric, cfg: ServerConfig) -> Result<FabricServer, ServerError> {
        let n = fabric.num_hcas();
        if let Some((r, &h)) = cfg.rank_hcas.iter().enumerate().find(|(_, &h)| h >= n) {
            return Err(ServerError::Config(format!(
                "rank {r} is mapped to HCA number {h}, but the fabric has {n} HCAs"
            )));
        }
        if cfg.protocol == Protocol::Query && cfg.quantum.0 == 0 {
            return Err(ServerError::Config(
                "the query quantum must be at least 1 ps".into(),
            ));
        }
        if let Some(f) = cfg.estimate {
            if !(f.is_finite() && f > 0.0) {
                return Err(ServerError::Config(format!(
                    "the estimate factor must be a positive number, not {f}"
                )));
            }
        }
        Ok(FabricServer {
            fabric,
            cfg,
            slots: Vec::new(),
            by_handle: HashMap::new(),
            zll_cache: HashMap::new(),
            stats: ServerStats::default(),
            insert_log: None,
            arrival_log: None,
            finished: false,
        })
    }

    /// Log every insert as `handle time_ps src_rank dst_rank bytes`.
    pub fn set_insert_log(&mut self, mut w: Box<dyn Write + Send>) -> Result<(), ServerError> {
        writeln!(w, "# handle time_ps src_rank dst_rank bytes")
            .map_err(|e| ServerError::Log(e.to_string()))?;
        self.insert_log = Some(w);
        Ok(())
    }

    /// Log every arrival as `handle time_ps`.
    pub fn set_arrival_log(&mut self, mut w: Box<dyn Write + Send>) -> Result<(), ServerError> {
        writeln!(w, "# handle time_ps").map_err(|e| ServerError::Log(e.to_string()))?;
        self.arrival_log = Some(w);
        Ok(())
    }

    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Handle one record from the scheduler; the answer records (if any) are
    /// appended to `out` in the order they must be sent.
    pub fn handle(&mut self, rec: Record, out: &mut Vec<Record>) -> Result<Step, ServerError> {
        if self.finished {
            return Err(ServerError::Violation(format!(
                "{} after Finish",
                rec.kind_name()
            )));
        }
        match rec {
            Record::Insert {
                handle,
                time,
                src,
                dst,
                size,
                ..
            } => {
                self.insert(handle, time, src, dst, size)?;
                Ok(Step::Continue)
            }
            Record::Query { handle, time, .. } if self.cfg.protocol == Protocol::Query => {
                out.push(self.query(handle, time)?);
                Ok(Step::Continue)
            }
            Record::NoMoreInserts { time } if self.cfg.protocol == Protocol::Notify => {
                self.no_more_inserts(time, out)?;
                Ok(Step::Continue)
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

    fn hca_of(&self, rank: u32, what: &str, handle: u64) -> Result<usize, ServerError> {
        self.cfg.rank_hcas.get(rank as usize).copied().ok_or_else(|| {
            ServerError::Config(format!(
                "Insert {handle}: {what} rank {rank} has no HCA (the fabric maps {} ranks on {} HCAs)",
                self.cfg.rank_hcas.len(),
                self.fabric.num_hcas()
            ))
        })
    }

    fn insert(
        &mut self,
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
    ) -> Result<(), ServerError> {
        let now = self.fabric.now();
        if time < now {
            return Err(ServerError::Violation(format!(
                "Insert {handle} at {} ps is in the fabric's past (fabric time {} ps)",
                time.0, now.0
            )));
        }
        let src_hca = self.hca_of(src, "source", handle)?;
        let dst_hca = self.hca_of(dst, "destination", handle)?;
        if self.by_handle.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "Insert reuses handle {handle}, which is still in flight"
            )));
        }
        // A 0-byte MPI message still crosses the wire as a header-only
        // packet; the fabric's packetiser needs at least one byte, so it is
        // injected as 1 byte (deviation noted in docs/cosim.md).
        let bytes = size.max(1);
        let id = self
            .fabric
            .inject(time, src_hca, dst_hca, bytes)
            .map_err(|e| match e {
                FabricError::InPast { .. } => {
                    ServerError::Violation(format!("Insert {handle}: {e}"))
                }
                e => ServerError::Fabric(format!("Insert {handle}: {e}")),
            })?;
        debug_assert_eq!(
            id as usize,
            self.slots.len(),
            "fabric message ids are dense"
        );
        self.slots.push(Slot {
            handle,
            insert_time: time,
            src_hca,
            dst_hca,
            bytes,
            arrived: None,
            promised: None,
            queried: false,
        });
        self.by_handle.insert(handle, id);
        self.stats.inserts += 1;
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.fabric.in_flight() as u64);
        if let Some(w) = &mut self.insert_log {
            writeln!(w, "{handle} {} {src} {dst} {size}", time.0)
                .map_err(|e| ServerError::Log(e.to_string()))?;
        }
        Ok(())
    }

    fn check_fabric(&self) -> Result<(), ServerError> {
        match self.fabric.error() {
            Some(e) => Err(ServerError::Fabric(e.to_string())),
            None => Ok(()),
        }
    }

    /// Record the fabric's completions in the slots (query protocol).
    fn collect_completions(&mut self) -> Result<(), ServerError> {
        for (id, t) in self.fabric.take_completions() {
            let Some(slot) = self.slots.get_mut(id as usize) else {
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

    fn query(&mut self, handle: u64, t: Time) -> Result<Record, ServerError> {
        self.stats.queries += 1;
        let &id = self.by_handle.get(&handle).ok_or_else(|| {
            ServerError::Violation(format!(
                "Query for unknown handle {handle} (never inserted, or already reported)"
            ))
        })?;
        if t < self.fabric.now() {
            return Err(ServerError::Violation(format!(
                "Query {handle} at {} ps is in the fabric's past (fabric time {} ps)",
                t.0,
                self.fabric.now().0
            )));
        }
        self.fabric.run_until(t);
        self.check_fabric()?;
        self.collect_completions()?;
        let q = self.cfg.quantum;
        let estimate = self.cfg.estimate;
        let slot = &self.slots[id as usize];
        if let Some(ta) = slot.arrived {
            self.stats.replies_arrived += 1;
            self.stats.query_lateness_ps += t.0 - ta.0;
            self.by_handle.remove(&handle);
            return Ok(Record::Reply {
                handle,
                time: ta,
                arrived: true,
            });
        }
        let mut next = Time(t.0.saturating_add(q.0));
        if !slot.queried {
            if let Some(f) = estimate {
                let key = (slot.src_hca, slot.dst_hca, slot.bytes);
                let zll = match self.zll_cache.get(&key) {
                    Some(&z) => z,
                    None => {
                        let z = self.fabric.zero_load_latency(key.0, key.1, key.2);
                        self.zll_cache.insert(key, z);
                        z
                    }
                };
                let est = Time(
                    slot.insert_time
                        .0
                        .saturating_add((f * zll.0 as f64).round() as u64),
                );
                if est > next {
                    next = est;
                    self.slots[id as usize].promised = Some(est);
                    self.stats.estimates += 1;
                }
            }
        }
        self.slots[id as usize].queried = true;
        self.stats.replies_not_yet += 1;
        Ok(Record::Reply {
            handle,
            time: next,
            arrived: false,
        })
    }

    fn stuck_handles(&self) -> Vec<u64> {
        self.fabric
            .in_flight_ids()
            .into_iter()
            .filter_map(|id| self.slots.get(id as usize))
            .map(|s| s.handle)
            .collect()
    }

    fn no_more_inserts(&mut self, t: Time, out: &mut Vec<Record>) -> Result<(), ServerError> {
        self.stats.no_more_inserts += 1;
        if self.fabric.in_flight() == 0 {
            return Err(ServerError::Deadlock {
                detail: format!(
                    "NoMoreInserts at {} ps with no message in flight: the scheduler waits for messages the fabric never received",
                    t.0
                ),
                handles: Vec::new(),
            });
        }
        match self.fabric.run_until_completion() {
            Some((ta, ids)) => {
                for id in &ids {
                    let slot = &mut self.slots[*id as usize];
                    slot.arrived = Some(ta);
                    let handle = slot.handle;
                    self.by_handle.remove(&handle);
                    out.push(Record::Arrival { handle, time: ta });
                    if let Some(w) = &mut self.arrival_log {
                        writeln!(w, "{handle} {}", ta.0)
                            .map_err(|e| ServerError::Log(e.to_string()))?;
                    }
                }
                self.stats.arrivals += ids.len() as u64;
                self.stats.arrival_batches += 1;
                out.push(Record::ArrivalBatchEnd {
                    time: ta,
                    count: ids.len() as u32,
                });
                Ok(())
            }
            None => {
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

    fn finish(&mut self, t: Time) -> Result<(), ServerError> {
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
        Ok(())
    }

    /// Text statistics printed at the end of the run.
    pub fn summary(&self) -> String {
        stats::summary_text(self)
    }

    /// JSON statistics: the server counters and the fabric's full report.
    pub fn summary_json(&self) -> serde_json::Value {
        stats::summary_json(self)
    }
}

#[cfg(test)]
mod tests;
