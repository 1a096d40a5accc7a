//! Counters of the co-simulation server and the statistics printed at
//! Finish (text, or JSON with the fabric's full report).

use super::FabricServer;
use ipc_proto::Protocol;
use serde::Serialize;

/// Protocol counters of one session.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ServerStats {
    pub inserts: u64,
    pub queries: u64,
    pub replies_arrived: u64,
    pub replies_not_yet: u64,
    /// First-query replies that used the arrival estimate (it exceeded t' + q).
    pub estimates: u64,
    /// Real arrivals earlier than a time the estimate had promised.
    pub causality_errors: u64,
    pub causality_error_ps_total: u64,
    pub causality_error_ps_max: u64,
    /// Sum over arrived replies of (query time - arrival time): how late the
    /// scheduler learned of arrivals because of the quantum.
    pub query_lateness_ps: u64,
    pub no_more_inserts: u64,
    /// Version 2: Grant answers ("no arrival before T"), and those given
    /// from the lookahead alone, without simulating.
    pub grants: u64,
    pub grants_without_simulation: u64,
    pub arrival_batches: u64,
    pub arrivals: u64,
    /// Version 4: Trigger records taken, triggers fired, Disarm records,
    /// and completion instants passed on triggers instead of a stop.
    pub triggers_armed: u64,
    pub triggers_fired: u64,
    pub triggers_disarmed: u64,
    pub instants_passed: u64,
    pub max_in_flight: u64,
    pub in_flight_at_finish: u64,
    pub finish_time: Option<u64>,
}

impl ServerStats {
    pub(crate) fn note_causality_error(&mut self, ps: u64) {
        self.causality_errors += 1;
        self.causality_error_ps_total += ps;
        self.causality_error_ps_max = self.causality_error_ps_max.max(ps);
    }
}

pub(crate) fn summary_text(s: &FabricServer) -> String {
    let f = s.fabric();
    let r = f.report();
    let st = s.stats();
    let cfg = s.config();
    let mut out = String::new();
    out.push_str(&format!(
        "fabric: topology {}, {} HCAs, {} ranks mapped, protocol {} (version {})",
        r.topology,
        f.num_hcas(),
        cfg.rank_hcas.len(),
        // the protocol's name as the user gives it (`-p notify`), and the
        // wire version served (scripts/cosim serves version 3 for it)
        cfg.protocol,
        cfg.version
    ));
    if cfg.protocol == Protocol::Query {
        out.push_str(&format!(", quantum {} ps", cfg.quantum.0));
        if let Some(x) = cfg.estimate {
            out.push_str(&format!(", estimate factor {x}"));
        }
    }
    out.push('\n');
    out.push_str(&format!(
        "fabric: end {} ps (Finish at {} ps), {} events, {} messages injected, {} completed, {} in flight\n",
        r.now_ps,
        st.finish_time.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
        r.events_processed,
        r.messages_injected,
        r.messages_completed,
        r.messages_in_flight
    ));
    if let Some(st) = &r.stall {
        out.push_str(&st.text());
    }
    match cfg.protocol {
        Protocol::Query => out.push_str(&format!(
            "protocol: {} inserts, {} queries ({} arrived, {} not yet, {} estimated), lateness {} ps, causality errors {} (total {} ps, max {} ps)\n",
            st.inserts,
            st.queries,
            st.replies_arrived,
            st.replies_not_yet,
            st.estimates,
            st.query_lateness_ps,
            st.causality_errors,
            st.causality_error_ps_total,
            st.causality_error_ps_max
        )),
        Protocol::Notify if cfg.version >= 2 => out.push_str(&format!(
            "protocol: {} inserts, {} NoMoreInserts, {} arrival batches, {} arrivals, {} grants ({} from the lookahead alone)\n",
            st.inserts,
            st.no_more_inserts,
            st.arrival_batches,
            st.arrivals,
            st.grants,
            st.grants_without_simulation
        )),
        Protocol::Notify => out.push_str(&format!(
            "protocol: {} inserts, {} NoMoreInserts, {} arrival batches, {} arrivals\n",
            st.inserts, st.no_more_inserts, st.arrival_batches, st.arrivals
        )),
    }
    if cfg.protocol == Protocol::Notify && cfg.version >= 4 {
        out.push_str(&format!(
            "triggers: {} armed, {} fired, {} disarmed; {} completion instants passed without a round trip\n",
            st.triggers_armed, st.triggers_fired, st.triggers_disarmed, st.instants_passed
        ));
    }
    if let Some(c) = s.coupling() {
        out.push_str(&coupling_line(c, st.no_more_inserts + st.queries));
    }
    // Sinks: aggregate over the HCAs that received something.
    let active: Vec<_> = r
        .sinks
        .iter()
        .filter(|k| k.msg_network_latency_ps.count > 0)
        .collect();
    let msgs: u64 = active.iter().map(|k| k.msg_network_latency_ps.count).sum();
    if msgs > 0 {
        let sum: f64 = active
            .iter()
            .map(|k| k.msg_network_latency_ps.mean * k.msg_network_latency_ps.count as f64)
            .sum();
        let min = active
            .iter()
            .map(|k| k.msg_network_latency_ps.min)
            .min()
            .unwrap_or(0);
        let max = active
            .iter()
            .map(|k| k.msg_network_latency_ps.max)
            .max()
            .unwrap_or(0);
        let last = r
            .sinks
            .iter()
            .map(|k| k.time_last_packet_consumed_ps)
            .max()
            .unwrap_or(0);
        out.push_str(&format!(
            "sinks: {} HCAs received {} messages; network latency mean {:.1} ps, min {} ps, max {} ps; last packet consumed at {} ps\n",
            active.len(),
            msgs,
            sum / msgs as f64,
            min,
            max,
            last
        ));
    } else {
        out.push_str(&format!(
            "sinks: {} flits consumed (no message latency recorded)\n",
            r.flits_consumed
        ));
    }
    // Obufs: the busiest links.
    let mut obufs: Vec<_> = r.obufs.iter().filter(|o| o.data_flits_sent > 0).collect();
    obufs.sort_by(|a, b| {
        b.busy_ps
            .cmp(&a.busy_ps)
            .then(a.node.cmp(&b.node))
            .then(a.port.cmp(&b.port))
    });
    let total_flits: u64 = r.obufs.iter().map(|o| o.data_flits_sent).sum();
    out.push_str(&format!(
        "obufs: {} ports sent {} data flits",
        obufs.len(),
        total_flits
    ));
    if let Some(o) = obufs.first() {
        out.push_str(&format!(
            "; busiest {}[{}] -> {}: {} flits, busy {} ps, utilisation {:.4}, max queue {}",
            o.node,
            o.port,
            o.peer.as_deref().unwrap_or("-"),
            o.data_flits_sent,
            o.busy_ps,
            o.utilisation,
            o.queue_depth.max
        ));
    }
    out.push('\n');
    out
}

/// The JSON summary written at Finish (`ibnet serve --json`, the
/// co-simulation's `"fabric"` object): serialised straight from the
/// counters and the engine's report. (It used to go through a
/// `serde_json::Value` tree: on the 128-HCA chain benchmark building and
/// dropping that tree of ~440 KB cost ~10 ms per run, half the supervisor's
/// fixed cost.) Top-level keys in alphabetical order, as before; the
/// fabric report's keys in its declaration order, as `ibnet run --json`.
#[derive(Serialize)]
pub struct SummaryJson<'a> {
    /// Wall-clock: how long the fabric waited for the scheduler (only when
    /// served over a channel; like every wall-clock figure, not part of the
    /// simulation's result).
    #[serde(skip_serializing_if = "Option::is_none")]
    coupling: Option<CouplingJson>,
    estimate: Option<f64>,
    fabric: crate::stats::Report,
    protocol: String,
    protocol_version: u32,
    quantum_ps: u64,
    ranks: usize,
    server: &'a ServerStats,
}

pub(crate) fn summary_json(s: &FabricServer) -> SummaryJson<'_> {
    let cfg = s.config();
    SummaryJson {
        coupling: s.coupling().map(|c| CouplingJson {
            waited_for_scheduler_s: c.wait.waited.as_secs_f64(),
            waits: c.wait.waits,
            inserting_s: c.inserting.as_secs_f64(),
            answering_s: c.answering.as_secs_f64(),
        }),
        estimate: cfg.estimate,
        fabric: s.fabric().report(),
        protocol: cfg.spec().name(),
        protocol_version: cfg.version,
        quantum_ps: cfg.quantum.0,
        ranks: cfg.rank_hcas.len(),
        server: s.stats(),
    }
}

/// The "coupling" object of the JSON summary.
#[derive(serde::Serialize)]
pub struct CouplingJson {
    /// wall-clock seconds the fabric spent with nothing to do until the
    /// scheduler's next record came: per round, the scheduler's own work
    /// and the hand-over both ways
    waited_for_scheduler_s: f64,
    /// how many times it had to wait
    waits: u64,
    /// wall-clock seconds from each round's first record to its
    /// NoMoreInserts or Query: taking in the scheduler's inserts
    inserting_s: f64,
    /// wall-clock seconds from each NoMoreInserts or Query to its answer:
    /// simulating, and writing the arrivals
    answering_s: f64,
}

/// "coupling: the fabric waited 35.0 ms (wall clock) for the scheduler:
/// 1142 waits of 30.6 us on average, 1139 rounds; took in inserts for
/// 13.4 ms, simulated and answered for 351.4 ms": the coupling's wall-clock
/// cost as the fabric sees it. Rounds are the NoMoreInserts and Queries.
fn coupling_line(c: super::Coupling, rounds: u64) -> String {
    let w = c.wait;
    let ms = w.waited.as_secs_f64() * 1e3;
    let each = if w.waits > 0 {
        w.waited.as_secs_f64() * 1e6 / w.waits as f64
    } else {
        0.0
    };
    format!(
        "coupling: the fabric waited {ms:.1} ms (wall clock) for the scheduler: {} waits of {each:.1} us on average, {rounds} rounds; took in inserts for {:.1} ms, simulated and answered for {:.1} ms\n",
        w.waits,
        c.inserting.as_secs_f64() * 1e3,
        c.answering.as_secs_f64() * 1e3
    )
}
