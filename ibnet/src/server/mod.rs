//! The fabric's co-simulation server (docs/protocol.md): a sans-I/O state
//! machine [`FabricServer`] that turns the scheduler's records into
//! [`Fabric`] calls and answers with records, plus the transport loop and
//! the `ibnet serve` command ([`serve`]).
//!
//! Rules implemented here (rule numbers of docs/protocol.md):
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
//! - Version 2 (3a, exact notify): the scheduler's first record is Config
//!   (q, F and the estimate base; answered with ConfigAck{min_latency}).
//!   NoMoreInserts carries the horizon H (the scheduler's next event): the
//!   fabric runs to the first completion instant t_a <= H (a batch whose
//!   end carries a grant) or through H (a Grant). A grant is a provable
//!   lower bound on the next completion of every message inserted so far:
//!   the largest of H + 1 (resp. t_a + 1), the earliest t_insert + base of
//!   the messages in flight (base: the per-hop fixed latencies, a lower
//!   bound of any travel time), and the engine's own bound
//!   (`Fabric::completion_lower_bound`).
//! - Version 4 (triggered inserts, docs/protocol.md): Trigger arms a
//!   message in flight with the scheduler's reaction to its arrival. A
//!   completion instant t_a below the horizon whose completions are all
//!   armed, each reaction's insert time max(t_a, not_before) + delay below
//!   the grant this instant's batch would carry, is passed: the reactions
//!   are inserted then and there (ordered by max(t_a, not_before), then
//!   seq), reported as Fired, and the fabric runs on; the batch ends at
//!   the first instant that cannot be passed (or at the horizon). Every
//!   other armed trigger of a reported message is dropped. Disarm
//!   withdraws a trigger.
//! - Finish (4): the run is over; the caller prints [`FabricServer::summary`].
//!
//! Arrival = the last flit of the message consumed by the destination sink
//! (what `Fabric` reports as completion).

mod book;
mod setup;
mod stats;

pub mod serve;

pub use serve::{run_serve, serve_channel, test_chatter, ServeArgs};
pub use setup::{parse_quantum, FabricSetup, SetupArgs};
pub use stats::{ServerStats, SummaryJson};

use crate::engine::{Fabric, FabricError, MsgId, RunOutcome};
use ipc_proto::{ErrorCode, EstimateBase, Protocol, ProtocolSpec, Record, Time};
use rustc_hash::FxHashMap as HashMap;
use std::io::Write;

/// Settings of one served session.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub protocol: Protocol,
    /// Wire version of the session (1: run-ahead notify / v1 polling;
    /// 2: exact notify and the Config record).
    pub version: u32,
    /// Query protocol: precision q of a "not yet" reply (t' + q), >= 1 ps.
    /// Version 2: replaced by the scheduler's Config.
    pub quantum: Time,
    /// Query protocol: arrival-estimate factor F (section 2.5), if enabled.
    /// Version 2: replaced by the scheduler's Config.
    pub estimate: Option<f64>,
    /// What F multiplies (section 2.5).
    pub estimate_base: EstimateBase,
    /// Version 2: q / F / base were set on the fabric's command line; the
    /// scheduler's Config must then agree (else a Config error).
    pub pinned: bool,
    /// rank -> HCA number (index among the fabric's HCAs, node order).
    pub rank_hcas: Vec<usize>,
}

impl ServerConfig {
    /// A session of `spec` with q = 1 ps, no estimate, nothing pinned.
    pub fn new(spec: ProtocolSpec, rank_hcas: Vec<usize>) -> ServerConfig {
        ServerConfig {
            protocol: spec.protocol,
            version: spec.version,
            quantum: Time(1),
            estimate: None,
            estimate_base: EstimateBase::Hops,
            pinned: false,
            rank_hcas,
        }
    }
    pub fn spec(&self) -> ProtocolSpec {
        ProtocolSpec::new(self.protocol, self.version)
    }
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

/// Version 4: a trigger armed on a message in flight (Trigger record).
#[derive(Clone, Copy, Debug)]
struct Armed {
    not_before: u64,
    delay: u64,
    new_handle: u64,
    size: u64,
    seq: u64,
    dst: u32,
    src: u32,
}

/// Per-message bookkeeping of the server (indexed by the fabric's MsgId).
#[derive(Clone, Debug)]
struct Slot {
    handle: u64,
    insert_time: Time,
    /// Completion time, once the fabric reported it.
    arrived: Option<Time>,
    /// Query protocol: a time promised by the estimate (no arrival before it).
    promised: Option<Time>,
    queried: bool,
    /// The thesis's per-hop base (a lower bound of the travel time).
    base: Time,
    /// The stronger lower bound with the serialisation (zero-load bound).
    lb: Time,
    /// Version 3: 0 a message, `OP_PUT` or `OP_GET`. For a put
    /// `arrived` is the local completion (its final point), `remote` the
    /// remote completion, reported under `handle`; the local one under
    /// `ack_handle`. For a get `arrived` is its completion.
    op: u8,
    ack_handle: u64,
    remote: Option<Time>,
}

/// The server state machine. Feed it records with [`FabricServer::handle`].
pub struct FabricServer {
    fabric: Fabric,
    cfg: ServerConfig,
    slots: book::Window<Slot>,
    by_handle: crate::handles::HandleMap,
    /// Route length in switches per (src HCA, dst HCA).
    hops_cache: book::HopsCache,
    /// Version 2: t_insert + lower bound of the messages possibly in
    /// flight (completed ones are dropped lazily).
    earliest: book::EarliestBound,
    /// Version 2: the Config record was received.
    configured: bool,
    /// The fixed latency of one switch on the route: ISW + VSW delay.
    switch_fixed: u64,
    tm: crate::params::Timing,
    /// zeroload::lower_bound per (switches, bytes)
    lb_cache: HashMap<(usize, u64), Time>,
    /// Cached minimum of the base over the mapped rank pairs.
    min_latency: Option<Time>,
    stats: ServerStats,
    insert_log: Option<Box<dyn Write + Send>>,
    arrival_log: Option<Box<dyn Write + Send>>,
    finished: bool,
    /// Version 3: the fabric's op events drive the arrivals (one per
    /// completion point), and puts' ack handles -> op id.
    ops: bool,
    ack_handles: HashMap<u64, MsgId>,
    /// Reused buffer of one wait's arrivals (record path).
    arrivals_buf: Vec<(u64, Time)>,
    /// Over a channel: where the fabric's wall-clock time went (reported,
    /// never used by the model).
    coupling: Option<Coupling>,
    /// Version 4: triggers armed on messages in flight, by handle, and
    /// by the rank the message goes to (at most one per rank).
    armed: HashMap<u64, Armed>,
    armed_rank: HashMap<u32, u64>,
    /// Version 4: the triggers fired in the current wait: (handle armed
    /// on, insert time, new handle).
    fired: Vec<(u64, Time, u64)>,
    /// Version 4: may a trigger fire here (`Fabric::inject_order_free`)?
    /// Otherwise every armed instant stops as in version 2.
    triggers_ok: bool,
}

/// The wall-clock figures of a session served over a channel (serve.rs):
/// waiting for the scheduler, taking in each round's records up to its
/// NoMoreInserts or Query, then simulating and writing the answer. The
/// three are disjoint.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coupling {
    pub wait: ipc_proto::PeerWait,
    pub inserting: std::time::Duration,
    pub answering: std::time::Duration,
}

/// The answer to a version-2 wait ([`FabricServer::wait_exact`]): the
/// arrivals of one instant and the grant after it (ArrivalBatchEnd), or a
/// grant beyond the horizon (Grant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExactAnswer {
    Batch { time: Time, grant: Time },
    Grant(Time),
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
        if !ipc_proto::version_supported(cfg.version) {
            return Err(ServerError::Config(format!(
                "protocol version {} is not supported (this fabric speaks {}..={})",
                cfg.version,
                ipc_proto::MIN_PROTOCOL_VERSION,
                ipc_proto::PROTOCOL_VERSION
            )));
        }
        let tm = crate::params::Timing::new(fabric.params())
            .map_err(|e| ServerError::Config(format!("fabric parameters: {e}")))?;
        let switch_fixed = tm.isw + tm.vsw;
        let ops = cfg.version >= 3;
        let triggers_ok = fabric.inject_order_free();
        let mut fabric = fabric;
        if ops {
            // start recording completion points
            fabric.take_op_events();
        }
        Ok(FabricServer {
            ops,
            ack_handles: HashMap::default(),
            switch_fixed,
            tm,
            lb_cache: HashMap::default(),
            min_latency: None,
            fabric,
            cfg,
            slots: book::Window::default(),
            by_handle: crate::handles::HandleMap::default(),
            hops_cache: book::HopsCache::new(n),
            earliest: book::EarliestBound::default(),
            configured: false,
            stats: ServerStats::default(),
            insert_log: None,
            arrival_log: None,
            finished: false,
            arrivals_buf: Vec::new(),
            coupling: None,
            armed: HashMap::default(),
            armed_rank: HashMap::default(),
            fired: Vec::new(),
            triggers_ok,
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
    /// Version 1 (and pinned version 2): the base of the arrival estimate.
    pub fn set_estimate_base(&mut self, base: EstimateBase) {
        self.cfg.estimate_base = base;
    }
    /// Version 2: refuse a Config that differs from this configuration.
    pub fn pin_config(&mut self) {
        self.cfg.pinned = true;
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

    /// Hints the CPU to load what an Insert from rank `src` to rank `dst`
    /// reads in the server and the fabric, for a caller that knows inserts
    /// ahead of handling them: the records of an arrived message (the
    /// serve loop) or a send the scheduler has just released (one-piece
    /// mode). Each insert otherwise waits on these cache misses in turn
    /// (the fabric's own work since the last round has evicted them);
    /// announced together, they overlap. Only loads; no effect on results.
    pub fn prefetch_insert(&self, src: u32, dst: u32) {
        let hcas = &self.cfg.rank_hcas;
        if let (Some(&s), Some(&d)) = (hcas.get(src as usize), hcas.get(dst as usize)) {
            self.hops_cache.prefetch(s, d);
            self.fabric.prefetch_injection(s, d);
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

    /// A message (`op` 0) or a one-sided operation (`OP_PUT`, `OP_GET`).
    #[allow(clippy::too_many_arguments)]
    fn insert_any(
        &mut self,
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
        op: u8,
        ack_handle: u64,
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
        if self.by_handle.contains_key(&handle) || self.ack_handles.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "Insert reuses handle {handle}, which is still in flight"
            )));
        }
        if op == OP_PUT
            && (self.by_handle.contains_key(&ack_handle)
                || self.ack_handles.contains_key(&ack_handle))
        {
            return Err(ServerError::Violation(format!(
                "InsertOp reuses handle {ack_handle} (ack_handle), which is still in flight"
            )));
        }
        // A 0-byte MPI message still crosses the wire as a header-only
        // packet; the fabric's packetiser needs at least one byte, so it is
        // injected as 1 byte (deviation noted in docs/cosim.md).
        let bytes = size.max(1);
        let injected = match op {
            0 => self.fabric.inject(time, src_hca, dst_hca, bytes),
            _ => self.fabric.inject_op(
                time,
                src_hca,
                dst_hca,
                bytes,
                if op == OP_PUT {
                    crate::engine::OpKind::Put
                } else {
                    crate::engine::OpKind::Get
                },
            ),
        };
        let id = injected.map_err(|e| match e {
            FabricError::InPast { .. } => ServerError::Violation(format!("Insert {handle}: {e}")),
            e => ServerError::Fabric(format!("Insert {handle}: {e}")),
        })?;
        // Fabric ids are dense over the messages it creates; with
        // one-sided operations it also creates acks and responses, whose
        // ids get placeholder slots (never reported).
        debug_assert!(id >= self.slots.next_id(), "fabric ids increase");
        while self.slots.next_id() < id {
            self.slots.push(Slot::placeholder());
        }
        // (one route lookup per insert: it is on the per-message path)
        let sw = self.hops(src_hca, dst_hca);
        let base = Time(sw as u64 * self.switch_fixed);
        // a get's first packet is its (header-only) read request
        let lb = self.lower_bound_sw(sw, if op == OP_GET { 1 } else { bytes });
        if self.cfg.version >= 2 && self.cfg.protocol == Protocol::Notify {
            self.earliest.push(time.0, lb.0, id);
        }
        self.slots.push(Slot {
            handle,
            insert_time: time,
            arrived: None,
            promised: None,
            queried: false,
            base,
            lb,
            op,
            ack_handle,
            remote: None,
        });
        self.by_handle.insert(handle, id);
        if op == OP_PUT {
            self.ack_handles.insert(ack_handle, id);
        }
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

    fn query(&mut self, handle: u64, t: Time) -> Result<Record, ServerError> {
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
        self.fabric.run_until(t);
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

    /// Route length in switches (cached); 0 when there is no route (the
    /// insert itself reports that).
    fn hops(&mut self, src_hca: usize, dst_hca: usize) -> usize {
        if let Some(n) = self.hops_cache.get(src_hca, dst_hca) {
            return n;
        }
        let n = self.fabric.switches_between(src_hca, dst_hca).unwrap_or(0);
        self.hops_cache.set(src_hca, dst_hca, n);
        n
    }

    /// The thesis's base (docs/protocol.md rule 2.5): the fixed per-hop
    /// latencies along the route, i.e. ISW + VSW delay per switch (the
    /// model has no wire propagation delay), without serialisation,
    /// generator or sink time. Every travel time is at least this: a flit
    /// leaves a switch no earlier than ISW + VSW after it arrived.
    pub fn hops_base(&mut self, src_hca: usize, dst_hca: usize) -> Time {
        Time(self.hops(src_hca, dst_hca) as u64 * self.switch_fixed)
    }

    /// A lower bound of the travel time of any message of `bytes` on this
    /// route, also under load: the per-hop base plus the serialisation
    /// (`zeroload::lower_bound`, >= the per-hop base).
    pub fn lower_bound(&mut self, src_hca: usize, dst_hca: usize, bytes: u64) -> Time {
        let sw = self.hops(src_hca, dst_hca);
        self.lower_bound_sw(sw, bytes)
    }

    /// [`Self::lower_bound`] of a route through `sw` switches.
    fn lower_bound_sw(&mut self, sw: usize, bytes: u64) -> Time {
        if let Some(&t) = self.lb_cache.get(&(sw, bytes)) {
            return t;
        }
        let t = Time(crate::zeroload::lower_bound(
            self.fabric.params(),
            &self.tm,
            sw,
            bytes,
        ));
        if self.lb_cache.len() < 1 << 16 {
            self.lb_cache.insert((sw, bytes), t);
        }
        t
    }

    /// The smallest travel time any message between two mapped ranks can
    /// have (>= 1 ps): the minimum over the mapped HCA pairs of the lower
    /// bound of a 1-byte message (every message has at least one byte on
    /// the wire). It is the scheduler's lookahead after an insert
    /// (ConfigAck).
    pub fn min_latency(&mut self) -> Time {
        if let Some(t) = self.min_latency {
            return t;
        }
        let mut hcas: Vec<usize> = self.cfg.rank_hcas.clone();
        hcas.sort_unstable();
        let shared = hcas.windows(2).any(|w| w[0] == w[1]);
        hcas.dedup();
        let mut m = if shared || hcas.len() < 2 {
            0
        } else {
            u64::MAX
        };
        // No route crosses fewer than one switch: once a pair reaches that
        // floor the minimum is known (on a fat tree the first two HCAs of
        // a leaf), which spares the n^2 route walks of a large network.
        let floor = self.lower_bound_sw(1, 1).0;
        'outer: for &a in &hcas {
            for &b in &hcas {
                if a != b {
                    m = m.min(self.lower_bound(a, b, 1).0);
                    if m <= floor {
                        break 'outer;
                    }
                }
            }
        }
        let t = Time(m.max(1));
        self.hops_cache.trim();
        self.min_latency = Some(t);
        t
    }

    /// Version 2: apply the scheduler's Config and answer ConfigAck.
    fn configure(
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

    /// Close a batch of `count` arrivals at `ta`: count it and grant up to
    /// the lookahead (everything, when nothing is left in flight).
    fn end_arrival_batch(&mut self, ta: Time, count: usize) -> ExactAnswer {
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

    /// Version 2: a lower bound on the next completion of every message in
    /// flight, from their insert times and bases and the engine's bound.
    fn lookahead(&mut self) -> u64 {
        let slots = &self.slots;
        let by_base = self
            .earliest
            .min(|id| slots.get(id).is_none_or(|s| s.arrived.is_some()))
            .unwrap_or(u64::MAX);
        let by_engine = self
            .fabric
            .completion_lower_bound()
            .map(|t| t.0)
            .unwrap_or(u64::MAX);
        by_base.max(by_engine)
    }

    /// Version 2 NoMoreInserts{time, horizon} (docs/protocol.md rule 3a): the
    /// answer of [`FabricServer::wait_exact`] as records.
    fn wait_v2(
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

    /// An Insert without a record (one-piece mode): what
    /// [`FabricServer::handle`] does with `Insert{handle, time, src, dst,
    /// size}`.
    pub fn insert_message(
        &mut self,
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
    ) -> Result<(), ServerError> {
        self.check_direct("Insert")?;
        self.insert_any(handle, time, src, dst, size, 0, 0)
    }

    /// The state checks before a record (or its direct call): none after
    /// Finish; in version 2 none before Config (whose own handling is in
    /// `handle`).
    fn check_direct(&self, what: &str) -> Result<(), ServerError> {
        if self.finished {
            return Err(ServerError::Violation(format!("{what} after Finish")));
        }
        if self.cfg.version >= 2 && !self.configured {
            return Err(not_configured(what));
        }
        Ok(())
    }

    /// The body of [`FabricServer::wait_exact`] and of the record's handler.
    fn wait_exact_inner(
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
        if self.fabric.in_flight() == 0 {
            return Err(ServerError::Deadlock {
                detail: format!(
                    "NoMoreInserts at {} ps with no message in flight: the scheduler waits for messages the fabric never received",
                    t.0
                ),
                handles: Vec::new(),
            });
        }
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
            match self.fabric.run_until_completion_or(horizon) {
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

    /// Version 4: may the completion instant `ta`, whose points are
    /// `out[from..]`, be passed? Only when every point is armed and each
    /// reaction's insert time lies below the grant this instant's batch
    /// would carry (so the scheduler would have made that insert before
    /// asking again, and no later stop can come before it). Then the
    /// reactions are inserted, in the scheduler's order (reaction instant,
    /// then seq). Either way the triggers of these points are used up.
    fn pass_on_triggers(
        &mut self,
        ta: Time,
        from: usize,
        out: &[(u64, Time)],
    ) -> Result<bool, ServerError> {
        if self.armed.is_empty() {
            return Ok(false);
        }
        let pts = &out[from..];
        let all = self.triggers_ok && pts.iter().all(|(h, _)| self.armed.contains_key(h));
        let mut fire: Vec<(u64, u64, u64, u64, Armed)> = Vec::with_capacity(pts.len());
        for &(h, _) in pts {
            if let Some(a) = self.armed.remove(&h) {
                self.armed_rank.remove(&a.src);
                fire.push((0, a.seq, 0, h, a));
            }
        }
        if !all {
            return Ok(false);
        }
        let grant = self.lookahead().max(ta.0 + 1);
        for f in &mut fire {
            let a = f.4;
            let tproc = ta.0.max(a.not_before);
            match tproc.checked_add(a.delay) {
                Some(t_ins) if t_ins < grant => {
                    f.0 = tproc;
                    f.2 = t_ins;
                }
                _ => return Ok(false),
            }
        }
        // A reaction f that sends to a rank g reacting at this same
        // instant: g was armed as the only message in flight there. f's
        // message arrives no earlier than f's insert time plus the minimum
        // latency; g's reaction is decided (its insert made) by g's insert
        // time. Later than that, f's message could change g's reaction:
        // stop instead.
        let min_lat = self.min_latency().0;
        if fire.iter().any(|f| {
            fire.iter()
                .any(|g| g.4.src == f.4.dst && g.2 >= f.2.saturating_add(min_lat))
        }) {
            return Ok(false);
        }
        fire.sort_by_key(|f| (f.0, f.1));
        for (_, _, t_ins, h, a) in fire {
            // the destination's own armed message (still in flight) no
            // longer is the only one there: its trigger is dropped, as
            // the scheduler's insert would have disarmed it
            if let Some(h0) = self.armed_rank.remove(&a.dst) {
                self.armed.remove(&h0);
            }
            self.insert_any(a.new_handle, Time(t_ins), a.src, a.dst, a.size, 0, 0)?;
            self.fired.push((h, Time(t_ins), a.new_handle));
            self.stats.triggers_fired += 1;
        }
        self.stats.instants_passed += 1;
        Ok(true)
    }

    /// Version 4: the triggers armed on these reported points are gone.
    fn drop_triggers(&mut self, pts: &[(u64, Time)]) {
        if self.armed.is_empty() {
            return;
        }
        for (h, _) in pts {
            if let Some(a) = self.armed.remove(h) {
                self.armed_rank.remove(&a.src);
            }
        }
    }

    /// Version 4 Trigger: arm message `handle` (in flight, not armed).
    fn arm(&mut self, handle: u64, a: Armed) -> Result<(), ServerError> {
        if !self.by_handle.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "Trigger on handle {handle}, which is not in flight"
            )));
        }
        if self.by_handle.contains_key(&a.new_handle)
            || self.ack_handles.contains_key(&a.new_handle)
        {
            return Err(ServerError::Violation(format!(
                "Trigger on {handle} would insert handle {}, which is still in flight",
                a.new_handle
            )));
        }
        self.hca_of(a.src, "source", a.new_handle)?;
        self.hca_of(a.dst, "destination", a.new_handle)?;
        if self.armed.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "a second Trigger on handle {handle}"
            )));
        }
        if let Some(h0) = self.armed_rank.get(&a.src) {
            return Err(ServerError::Violation(format!(
                "Trigger on handle {handle} for rank {}, which has a trigger armed already (on handle {h0})",
                a.src
            )));
        }
        self.armed.insert(handle, a);
        self.armed_rank.insert(a.src, handle);
        self.stats.triggers_armed += 1;
        Ok(())
    }

    /// Version 4 Disarm: withdraw the trigger armed on `handle`.
    fn disarm(&mut self, handle: u64) -> Result<(), ServerError> {
        let Some(a) = self.armed.remove(&handle) else {
            return Err(ServerError::Violation(format!(
                "Disarm of handle {handle}, which has no trigger armed"
            )));
        };
        self.armed_rank.remove(&a.src);
        self.stats.triggers_disarmed += 1;
        Ok(())
    }

    /// Version 4: the triggers fired in the last wait (handle armed on,
    /// insert time, new handle), as the Fired records carry them.
    pub fn fired(&self) -> &[(u64, Time, u64)] {
        &self.fired
    }

    /// The points of completion instant `ta` into `out`, the slots marked.
    fn report_completions(
        &mut self,
        ta: Time,
        ids: Vec<MsgId>,
        out: &mut Vec<(u64, Time)>,
    ) -> Result<(), ServerError> {
        if self.ops {
            let points = self.collect_points()?;
            if let Some(&(h, t)) = points.iter().find(|p| p.1 != ta) {
                return Err(ServerError::Fabric(format!(
                    "internal: point of handle {h} at {} ps in the batch of {} ps",
                    t.0, ta.0
                )));
            }
            out.extend_from_slice(&points);
            return Ok(());
        }
        for id in &ids {
            let slot = self
                .slots
                .get_mut(*id)
                .expect("the slot of a message in flight");
            slot.arrived = Some(ta);
            let handle = slot.handle;
            self.by_handle.remove(&handle);
            out.push((handle, ta));
            if let Some(w) = &mut self.arrival_log {
                writeln!(w, "{handle} {}", ta.0).map_err(|e| ServerError::Log(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// A wait that ends without a completion: the grant at the horizon,
    /// or the fabric's failure.
    fn end_wait(&mut self, outcome: RunOutcome, horizon: Time) -> Result<ExactAnswer, ServerError> {
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

    /// The slot of a message the scheduler may still ask about (a bug
    /// otherwise: slots are dropped only once reported).
    fn slot(&self, id: MsgId) -> &Slot {
        self.slots
            .get(id)
            .expect("the slot of a message not yet reported")
    }

    fn slot_mut(&mut self, id: MsgId) -> &mut Slot {
        self.slots
            .get_mut(id)
            .expect("the slot of a message not yet reported")
    }

    /// Drop the slots at the front whose messages have arrived and been
    /// reported under every handle they have (`book::Window`).
    fn trim_slots(&mut self) {
        let (by_handle, acks) = (&self.by_handle, &self.ack_handles);
        self.slots.trim(|s| {
            s.arrived.is_some()
                && !by_handle.contains_key(&s.handle)
                && (s.op != OP_PUT || !acks.contains_key(&s.ack_handle))
        });
    }

    fn stuck_handles(&self) -> Vec<u64> {
        self.fabric
            .in_flight_ids()
            .into_iter()
            .filter_map(|id| self.slots.get(id))
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

    /// The coupling's wall-clock figures for the report's "coupling" line
    /// (serve.rs sets them when the session ends).
    pub fn set_coupling(&mut self, c: Coupling) {
        self.coupling = Some(c);
    }

    pub fn coupling(&self) -> Option<Coupling> {
        self.coupling
    }

    /// Text statistics printed at the end of the run.
    pub fn summary(&self) -> String {
        stats::summary_text(self)
    }

    /// JSON statistics: the server counters and the fabric's full report.
    pub fn summary_json(&self) -> stats::SummaryJson<'_> {
        stats::summary_json(self)
    }
}

/// A record other than Config first in a version-2 session.
fn not_configured(what: &str) -> ServerError {
    ServerError::Violation(format!(
        "version 2: the scheduler's first record must be Config, not {what}"
    ))
}

mod one_sided;
use one_sided::{OP_GET, OP_PUT};

#[cfg(test)]
mod tests;
