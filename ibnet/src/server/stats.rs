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

/// Observations of a served session over time (`crate::observe`, the
/// observers of `ibnet run`): link statistics per window, message records,
/// heat map, flit trace. The server stops the fabric at every window
/// boundary on its way to where a record sends it, as `ibnet run` does;
/// the engine processes the same events in the same order either way, so
/// the session's answers do not change.
pub(crate) struct Observed {
    obs: crate::observe::Observers,
    topo: crate::topology::Topology,
}

fn observe_error(e: anyhow::Error) -> super::ServerError {
    super::ServerError::Log(format!("{e:#}"))
}

impl FabricServer {
    /// Observe the session over time as `cfg` says (the files of
    /// `ibnet run --link-stats/--messages-csv/--heatmap/--trace`), from
    /// now on; `topo` is the fabric's topology. The files are complete
    /// once Finish was handled (the last window ends at the fabric's
    /// clock then).
    pub fn observe(
        &mut self,
        cfg: crate::observe::ObserveConfig,
        topo: crate::topology::Topology,
    ) -> anyhow::Result<()> {
        let f = self.fabric.as_one_mut().ok_or_else(|| {
            anyhow::anyhow!(
                "observation outputs are not supported on a parallel fabric yet (leave out --fabric-threads)"
            )
        })?;
        let obs = crate::observe::Observers::new(cfg, &topo, f)?;
        self.observed = Some(Observed { obs, topo });
        Ok(())
    }

    /// [`crate::Fabric::run_until_completion_or`], through the window
    /// boundaries before `limit` (the loop of the closed-loop traffic
    /// driver, `crate::traffic`).
    pub(super) fn run_observed(
        &mut self,
        limit: ipc_proto::Time,
    ) -> Result<crate::engine::RunOutcome, super::ServerError> {
        use crate::engine::RunOutcome;
        let Some(o) = self.observed.as_mut() else {
            return Ok(self.fabric.run_until_completion_or(limit));
        };
        loop {
            match o.obs.next_boundary().filter(|&b| b < limit) {
                None => return Ok(self.fabric.run_until_completion_or(limit)),
                Some(b) => match self.fabric.run_until_completion_or(b) {
                    RunOutcome::Limit => o
                        .obs
                        .window_end(self.fabric.as_one_mut().expect("observed: one engine"))
                        .map_err(observe_error)?,
                    other => return Ok(other),
                },
            }
        }
    }

    /// [`crate::Fabric::run_until`], through the window boundaries before
    /// `t` (the loop of `ibnet run` with open-loop traffic).
    pub(super) fn run_until_observed(
        &mut self,
        t: ipc_proto::Time,
    ) -> Result<(), super::ServerError> {
        if let Some(o) = self.observed.as_mut() {
            while let Some(b) = o.obs.next_boundary().filter(|&b| b < t) {
                self.fabric.run_until(b);
                if self.fabric.error().is_some() {
                    break;
                }
                o.obs
                    .window_end(self.fabric.as_one_mut().expect("observed: one engine"))
                    .map_err(observe_error)?;
            }
        }
        self.fabric.run_until(t);
        Ok(())
    }

    /// At Finish: the last window, the message records and the heat map.
    pub(super) fn finish_observed(&mut self) -> Result<(), super::ServerError> {
        match self.observed.take() {
            Some(o) => o
                .obs
                .finish(
                    self.fabric.as_one_mut().expect("observed: one engine"),
                    &o.topo,
                )
                .map_err(observe_error),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod observed_tests {
    use super::super::tests::{ins, server, server_v2, wait};
    use super::super::{FabricServer, Step};
    use crate::observe::ObserveConfig;
    use ipc_proto::{Protocol, Record, Time};

    /// Three messages from HCA 0 (two to HCA 1, one to HCA 2), waited for
    /// one completion at a time, then Finish: every answer record.
    fn session(s: &mut FabricServer, version2: bool) -> Vec<Record> {
        let mut out = Vec::new();
        for r in [
            ins(1, 0, 0, 1, 4096),
            ins(2, 0, 0, 2, 4096),
            ins(3, 5_000, 0, 1, 300),
        ] {
            s.handle(r, &mut out).unwrap();
        }
        let mut t = 5_000;
        for _ in 0..8 {
            let rec = if version2 {
                wait(t, u64::MAX - 1)
            } else {
                Record::NoMoreInserts {
                    time: Time(t),
                    horizon: Time(0),
                }
            };
            if s.handle(rec, &mut out).is_err() {
                break;
            }
            if let Some(Record::ArrivalBatchEnd { time, .. }) = out.last() {
                t = time.0;
            }
            if s.fabric().in_flight() == 0 {
                break;
            }
        }
        assert_eq!(
            s.handle(Record::Finish { time: Time(t) }, &mut out)
                .unwrap(),
            Step::Finished
        );
        out
    }

    fn observed(s: &mut FabricServer, dir: &std::path::Path) -> std::path::PathBuf {
        let csv = dir.join("links.csv");
        let cfg = ObserveConfig {
            window: Time(1_000),
            link_stats: Some(csv.clone()),
            ..ObserveConfig::default()
        };
        s.observe(cfg, crate::topology::builtin("H8_S1").unwrap())
            .unwrap();
        csv
    }

    #[test]
    fn windows_leave_the_answers_unchanged_and_add_up_to_the_report() {
        let dir = tempfile::tempdir().unwrap();
        for version2 in [false, true] {
            let mk = || {
                if version2 {
                    server_v2("H8_S1", Protocol::Notify, 0)
                } else {
                    server("H8_S1", Protocol::Notify, 1, None)
                }
            };
            let mut plain = mk();
            let mut watched = mk();
            let csv = observed(&mut watched, dir.path());
            let answers = session(&mut plain, version2);
            assert_eq!(session(&mut watched, version2), answers);
            assert_eq!(
                answers
                    .iter()
                    .filter(|r| matches!(r, Record::Arrival { .. }))
                    .count(),
                3
            );
            assert_eq!(plain.fabric().report(), watched.fabric().report());
            let text = std::fs::read_to_string(&csv).unwrap();
            let rows: Vec<Vec<&str>> = text
                .lines()
                .skip(1)
                .map(|l| l.split(',').collect())
                .collect();
            let end = watched.fabric().now().0;
            let links = plain.fabric().report().obufs.len();
            // whole windows of 1 ns up to the fabric's clock, every link in each
            assert_eq!(rows.len() as u64, end.div_ceil(1_000) * links as u64);
            assert_eq!(rows[0][0..2], ["0", "1000"]);
            assert_eq!(rows.last().unwrap()[1], end.to_string());
            let flits: u64 = rows.iter().map(|r| r[6].parse::<u64>().unwrap()).sum();
            let total: u64 = plain
                .fabric()
                .report()
                .obufs
                .iter()
                .map(|o| o.data_flits_sent)
                .sum();
            assert_eq!(flits, total);
            assert!(total > 0);
        }
    }

    #[test]
    fn queries_stop_at_the_boundaries_too() {
        let dir = tempfile::tempdir().unwrap();
        let mut plain = server("H8_S1", Protocol::Query, 1, None);
        let mut watched = server("H8_S1", Protocol::Query, 1, None);
        let csv = observed(&mut watched, dir.path());
        let mut answers = [Vec::new(), Vec::new()];
        for (s, out) in [&mut plain, &mut watched].into_iter().zip(&mut answers) {
            s.handle(ins(7, 0, 0, 1, 2048), out).unwrap();
            for t in [3_500u64, 2_000_000] {
                s.handle(
                    Record::Query {
                        handle: 7,
                        time: Time(t),
                        inserts_sent: 1,
                    },
                    out,
                )
                .unwrap();
            }
            s.handle(
                Record::Finish {
                    time: Time(2_000_000),
                },
                out,
            )
            .unwrap();
        }
        assert_eq!(answers[0], answers[1]);
        assert!(
            matches!(answers[0][1], Record::Reply { arrived: true, .. }),
            "{:?}",
            answers[0]
        );
        let text = std::fs::read_to_string(csv).unwrap();
        let last = text.lines().last().unwrap();
        assert!(last.starts_with("1999000,2000000,"), "{last}");
    }
}
