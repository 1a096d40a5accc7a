//! `--network onepiece`: the fabric engine called directly from the
//! scheduler's thread (the thesis's "future work"): no second thread, no
//! channel, no encoding. The scheduler's records are handed to ibnet's
//! sans-I/O [`FabricServer::handle`] as they are produced and its answer
//! records are read back from a queue, so the protocol logic and every
//! check (query, notify-v1, exact notify) are exactly those of the other
//! transports; only the transport is gone. The two records of the
//! per-message path, Insert and the exact wait (NoMoreInserts and its
//! answer), do not even become records: they call the server's
//! [`FabricServer::insert_message`] and [`FabricServer::wait_exact`], the
//! functions its record handler calls (same checks, same counters). With
//! exact notify the results equal polling at 1 ps (docs/protocol.md rule 3a).

use super::inproc::report_fabric;
use super::{CosimArgs, CosimNetwork, Link};
use crate::network::{Envelope, NetError};
use ibnet::server::{ExactAnswer, FabricServer, ServerError, Step};
use ipc_proto::{ChannelStats, ProtoError, Protocol, Record, Time};
use std::collections::VecDeque;
use std::path::PathBuf;

/// The fabric server as a [`Link`]: `send` runs the fabric, `recv` pops
/// its answers.
pub struct Direct {
    server: FabricServer,
    out: VecDeque<Record>,
    buf: Vec<Record>,
    inserts: u64,
    stats: ChannelStats,
    /// The fabric's error in full (the Error record holds 48 bytes).
    error: Option<String>,
    finished: bool,
    report: Option<PathBuf>,
    json: bool,
}

impl Direct {
    pub fn new(server: FabricServer, report: Option<PathBuf>, json: bool) -> Direct {
        Direct {
            server,
            out: VecDeque::new(),
            buf: Vec::with_capacity(64),
            inserts: 0,
            stats: ChannelStats::default(),
            error: None,
            finished: false,
            report,
            json,
        }
    }
    pub fn server(&self) -> &FabricServer {
        &self.server
    }

    /// The fabric failed: keep its full message, and queue its Error
    /// record for the scheduler's next `recv` (a peer's own Error is not
    /// echoed).
    fn failed(&mut self, e: ServerError) {
        if let ServerError::Deadlock { handles, .. } = &e {
            if !handles.is_empty() {
                eprintln!("fabric: messages in flight (scheduler handles): {handles:?}");
            }
        }
        self.error = Some(e.to_string());
        if !matches!(e, ServerError::Peer { .. }) {
            self.out.push_back(e.to_record());
        }
    }
}

impl Link for Direct {
    fn send(&mut self, r: Record) -> Result<(), ProtoError> {
        if self.error.is_some() {
            // The Error record is still queued for the next `recv`.
            if self.out.is_empty() {
                return Err(ProtoError::Violation(
                    "the fabric already stopped with an error".into(),
                ));
            }
            return Ok(());
        }
        if matches!(r, Record::Insert { .. } | Record::InsertOp { .. }) {
            self.inserts += 1;
        }
        self.stats.records_sent += 1;
        match self.server.handle(r, &mut self.buf) {
            Ok(step) => {
                self.stats.records_received += self.buf.len() as u64;
                self.out.extend(self.buf.drain(..));
                if step == Step::Finished {
                    self.finished = true;
                }
            }
            Err(e) => {
                self.out.extend(self.buf.drain(..));
                self.failed(e);
            }
        }
        Ok(())
    }

    fn prefetch_insert(&self, src: u32, dst: u32) {
        if self.error.is_none() {
            self.server.prefetch_insert(src, dst);
        }
    }

    fn insert_direct(
        &mut self,
        handle: u64,
        time: Time,
        env: Envelope,
    ) -> Option<Result<(), ProtoError>> {
        if self.error.is_some() {
            // (the record path says what to do after an error)
            return None;
        }
        self.inserts += 1;
        self.stats.records_sent += 1;
        if let Err(e) = self
            .server
            .insert_message(handle, time, env.src, env.dst, env.size)
        {
            self.failed(e);
        }
        Some(Ok(()))
    }

    fn wait_exact_direct(
        &mut self,
        now: Time,
        horizon: Time,
        batch: &mut Vec<(u64, Time)>,
        fired: &mut Vec<(u64, Time, u64)>,
    ) -> Option<ExactAnswer> {
        if self.error.is_some() {
            return None;
        }
        let mark = batch.len();
        match self.server.wait_exact(now, horizon, batch) {
            Ok(answer) => {
                fired.extend_from_slice(self.server.fired());
                self.stats.records_sent += 1;
                // the arrivals and the batch end, or the grant
                self.stats.records_received += (batch.len() - mark) as u64 + 1;
                Some(answer)
            }
            Err(e) => {
                // as the record path: the Error record waits at `recv`
                batch.truncate(mark);
                self.failed(e);
                None
            }
        }
    }

    fn recv(&mut self) -> Result<Record, ProtoError> {
        self.out.pop_front().ok_or_else(|| {
            ProtoError::Violation("the fabric has no answer to the scheduler's last record".into())
        })
    }

    fn flush(&mut self) -> Result<(), ProtoError> {
        Ok(())
    }

    fn inserts_sent(&self) -> u64 {
        self.inserts
    }

    fn protocol(&self) -> Protocol {
        self.server.config().protocol
    }

    fn version(&self) -> u32 {
        self.server.config().version
    }

    fn stats(&self) -> ChannelStats {
        self.stats
    }

    fn error_text(&self) -> Option<String> {
        self.error.clone()
    }

    fn finished(&mut self) -> Result<Vec<(String, u64)>, NetError> {
        if let Some(e) = &self.error {
            return Err(NetError::Transport(format!("fabric: {e}")));
        }
        if !self.finished {
            return Err(NetError::Transport(
                "fabric: the session did not end with Finish".into(),
            ));
        }
        report_fabric(&self.server, self.report.as_ref(), self.json)
    }
}

/// Build the fabric from `args.fabric` and return the scheduler's backend
/// calling it directly. Fails (before any simulation) on bad fabric
/// options or when the schedule has more ranks than the fabric maps.
pub fn build(args: &CosimArgs, num_ranks: u32) -> Result<CosimNetwork, String> {
    build_from(args, num_ranks, super::inproc::build_unchecked(args))
}

/// [`build`] with a server built beforehand by
/// [`super::inproc::build_unchecked`] (loggopsim builds it while it reads
/// the schedule).
pub fn build_from(
    args: &CosimArgs,
    num_ranks: u32,
    server: Result<FabricServer, String>,
) -> Result<CosimNetwork, String> {
    let server = super::inproc::check_ranks(args, server?, num_ranks)?;
    let link = Direct::new(server, args.fabric_report.clone(), args.fabric_json);
    CosimNetwork::new_with_base(
        Box::new(link),
        args.quantum,
        args.estimate,
        args.estimate_base,
        format!("ibnet/{} onepiece", args.protocol),
        None,
    )
    .map_err(|e| format!("cannot configure the fabric: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Network, SyncMode};
    use ibnet::server::SetupArgs;
    use ipc_proto::{ProtocolSpec, Time};

    fn args(spec: ProtocolSpec) -> CosimArgs {
        let fabric = SetupArgs {
            topology: "H8_S1".into(),
            ..SetupArgs::default()
        };
        CosimArgs::new(spec, fabric)
    }

    /// One 44-byte message over one switch: 150.6 ns (docs/cosim.md), in
    /// both notify versions; version 2 answers a wait before the arrival
    /// with a grant beyond the horizon.
    #[test]
    fn one_message_both_versions() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(ProtocolSpec::NOTIFY_V1);
        a.fabric_report = Some(dir.path().join("f.txt"));
        let mut net = build(&a, 2).unwrap();
        assert_eq!(net.mode(), SyncMode::Notify);
        let h = net.insert(Time(0), Envelope::new(0, 1, 44, 0)).unwrap();
        assert_eq!(
            net.wait_arrivals(Time(0)).unwrap(),
            vec![(h, Time(150_600))]
        );
        net.finish(Time(150_600)).unwrap();

        let mut a = args(ProtocolSpec::NOTIFY);
        a.fabric_report = Some(dir.path().join("f2.txt"));
        let mut net = build(&a, 2).unwrap();
        assert_eq!(net.mode(), SyncMode::Exact);
        // 100 ns (ISW + VSW): a 1-flit message has no serialisation term
        assert_eq!(net.min_latency(), Time(100_000));
        let h = net.insert(Time(0), Envelope::new(0, 1, 44, 0)).unwrap();
        // horizon 50 ns: nothing arrives by then; the grant is the
        // message's insert time + its lower bound (100 ns)
        let ans = net.wait_exact(Time(0), Time(50_000)).unwrap();
        assert!(ans.arrivals.is_empty());
        assert_eq!(ans.grant, Time(100_000));
        let ans = net.wait_exact(Time(0), Time(u64::MAX)).unwrap();
        assert_eq!(ans.arrivals, vec![(h, Time(150_600))]);
        assert_eq!(ans.grant, Time(u64::MAX));
        net.finish(Time(150_600)).unwrap();
        let st: std::collections::HashMap<String, u64> = net.stats().into_iter().collect();
        assert_eq!(st["fabric_end_ps"], 150_600);
        assert_eq!((st["grants"], st["arrivals"]), (1, 1));
        let text = std::fs::read_to_string(dir.path().join("f2.txt")).unwrap();
        assert!(text.contains("protocol notify"), "{text}");
        assert!(
            text.contains("1 grants (1 from the lookahead alone)"),
            "{text}"
        );
    }

    /// A fabric error keeps its full text in one-piece mode (an Error
    /// record would cut it at 48 bytes).
    #[test]
    fn errors_keep_their_full_text() {
        let mut net = build(&args(ProtocolSpec::NOTIFY), 2).unwrap();
        net.insert(Time(0), Envelope::new(0, 1, 44, 0)).unwrap();
        let ans = net.wait_exact(Time(0), Time(u64::MAX)).unwrap();
        assert_eq!(ans.arrivals.len(), 1);
        net.insert(Time(100), Envelope::new(1, 0, 44, 0)).unwrap();
        let e = net
            .wait_exact(Time(100), Time(u64::MAX))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Insert 1 at 100 ps is in the fabric's past (fabric time 150600 ps)"),
            "{e}"
        );
    }
}
