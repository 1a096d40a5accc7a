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
//!
//! This file holds the server's state and configuration; its steps are in
//! `records.rs` (the dispatch of each record, Config, Finish), `insert.rs`,
//! `query.rs`, `horizon.rs` (notify waits, batches and grants),
//! `triggers.rs` (version 4), `arrivals.rs` (completions into the
//! messages' slots), `bounds.rs` (travel-time lower bounds) and
//! `one_sided.rs`.

mod arrivals;
mod book;
mod bounds;
mod horizon;
mod insert;
mod query;
mod records;
mod served;
mod setup;
mod stats;
mod triggers;

pub mod serve;

pub use crate::observe::ObserveConfig;
pub use serve::{run_serve, serve_channel, test_chatter, ServeArgs};
pub use setup::{parse_quantum, FabricSetup, SetupArgs};
pub use stats::{ServerStats, SummaryJson};

use crate::engine::MsgId;
use ipc_proto::{ErrorCode, EstimateBase, Protocol, ProtocolSpec, Record, Time};
use rustc_hash::FxHashMap as HashMap;
pub use served::ServedFabric;
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
    fabric: ServedFabric,
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
    /// Observations over time ([`FabricServer::observe`]): the fabric
    /// stops at their window boundaries.
    observed: Option<stats::Observed>,
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
    pub fn new(
        fabric: impl Into<ServedFabric>,
        cfg: ServerConfig,
    ) -> Result<FabricServer, ServerError> {
        let fabric: ServedFabric = fabric.into();
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
            observed: None,
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

    pub fn fabric(&self) -> &ServedFabric {
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
pub(super) fn not_configured(what: &str) -> ServerError {
    ServerError::Violation(format!(
        "version 2: the scheduler's first record must be Config, not {what}"
    ))
}

mod one_sided;
use one_sided::{OP_GET, OP_PUT};

#[cfg(test)]
mod tests;
