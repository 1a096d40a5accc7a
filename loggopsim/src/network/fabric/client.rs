//! Co-simulation backends: the engine's network is the flit-level fabric
//! (`ibnet`), reached through an ipc-proto [`Channel`] (docs/protocol.md).
//!
//! One type, [`CosimNetwork`], serves both protocols and every transport
//! (shared-memory rings or POSIX message queues to an `ibnet serve`
//! process, an in-process channel to a fabric thread, see
//! [`super::inproc`], or the fabric server itself, see
//! [`super::onepiece`]):
//!
//! - query (SyncMode::Poll): `insert` sends Insert; `query` sends
//!   Query{handle, t', inserts_sent} and blocks for the Reply, whose time is
//!   returned unchanged: the arrival time (<= t') or the next time to ask
//!   (t' + q, or the fabric's estimate). The engine re-inserts the message
//!   event there; its rules do not change.
//! - notify-v1 (SyncMode::Notify): `insert` sends Insert; `wait_arrivals`
//!   sends NoMoreInserts{now} and collects one batch of Arrivals up to the
//!   batch end.
//! - notify, version 2 (SyncMode::Exact): `wait_exact(now, horizon)` sends
//!   NoMoreInserts{now, horizon} and returns the batch (its end carries the
//!   grant) or the Grant.
//! - version 2: the first record is Config{q, F}; the ConfigAck gives the
//!   fabric's minimum latency (the engine's lookahead after an insert).
//! - `finish` sends Finish{t_end}.
//!
//! The records travel over a [`Link`]: an ipc-proto [`Channel`] (message
//! queues, shared memory, in-process channels), or the fabric server
//! itself, called on this thread (`--network onepiece`, [`super::onepiece`]).
//!
//! Handles are the scheduler's: 0, 1, 2, ... in insert order.

use super::{CosimArgs, Link};
use crate::network::{
    Answer, Envelope, Handle, InFlight, NetError, Network, OneSidedOp, OpHandles, SyncMode,
};
use ibnet::server::ExactAnswer;
use ipc_proto::{ErrorCode, EstimateBase, ProtoError, Protocol, ProtocolSpec, Record, Time};
use std::time::Duration;

/// Run at `finish` (the in-process backend joins its fabric thread there)
/// and returns extra counters for the report.
pub type FinishHook = Box<dyn FnOnce() -> Result<Vec<(String, u64)>, NetError> + Send>;

/// Counters of the scheduler's side.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    inserts: u64,
    queries: u64,
    not_yet: u64,
    waits: u64,
    arrivals: u64,
    grants: u64,
    armed: u64,
    fired: u64,
    disarmed: u64,
}

/// The co-simulation backend.
pub struct CosimNetwork {
    ch: Box<dyn Link>,
    spec: ProtocolSpec,
    quantum: Time,
    estimate: bool,
    /// Version 2: the fabric's ConfigAck (1 ps in version 1).
    min_latency: Time,
    name: String,
    next_handle: u64,
    c: Counters,
    batch: Vec<(Handle, Time)>,
    fired: Vec<(Handle, Time, Handle)>,
    on_finish: Option<FinishHook>,
    extra_stats: Vec<(String, u64)>,
    /// Finish was sent, or the peer already failed: nothing to tell it on drop.
    done: bool,
}

fn transport(e: ProtoError) -> NetError {
    match e {
        ProtoError::Violation(m) => NetError::Protocol(m),
        e => NetError::Transport(e.to_string()),
    }
}

impl CosimNetwork {
    /// Wrap a connected link. Version 2: sends Config{q, F} and waits for
    /// the ConfigAck (errors name the fabric's reason).
    pub fn new(
        ch: Box<dyn Link>,
        quantum: Time,
        estimate: Option<f64>,
        name: String,
        on_finish: Option<FinishHook>,
    ) -> Result<CosimNetwork, NetError> {
        CosimNetwork::new_with_base(ch, quantum, estimate, EstimateBase::Hops, name, on_finish)
    }

    /// [`CosimNetwork::new`] with the estimate's base.
    pub fn new_with_base(
        ch: Box<dyn Link>,
        quantum: Time,
        estimate: Option<f64>,
        estimate_base: EstimateBase,
        name: String,
        on_finish: Option<FinishHook>,
    ) -> Result<CosimNetwork, NetError> {
        let spec = ProtocolSpec::new(ch.protocol(), ch.version());
        let mut net = CosimNetwork {
            spec,
            ch,
            quantum,
            estimate: estimate.is_some(),
            min_latency: Time(1),
            name,
            next_handle: 0,
            c: Counters::default(),
            batch: Vec::new(),
            fired: Vec::new(),
            on_finish,
            extra_stats: Vec::new(),
            done: false,
        };
        if spec.has_config() {
            let estimate_milli = match estimate {
                Some(f) => ipc_proto::estimate_to_milli(f).map_err(NetError::Protocol)?,
                None => 0,
            };
            net.send(Record::Config {
                quantum,
                estimate_milli,
                estimate_base,
            })?;
            match net.recv()? {
                Record::ConfigAck { min_latency } if min_latency.0 >= 1 => {
                    net.min_latency = min_latency;
                }
                other => {
                    return Err(NetError::Protocol(format!(
                        "expected ConfigAck{{min_latency >= 1 ps}} as the answer to Config, got {other:?}"
                    )))
                }
            }
        }
        Ok(net)
    }

    /// The protocol and wire version of the session.
    pub fn spec(&self) -> ProtocolSpec {
        self.spec
    }

    /// `--network ipc`: attach to the fabric's session `args.key` (bounded
    /// wait), check protocol and endpoint count against the schedule.
    pub fn connect_ipc(args: &CosimArgs, num_ranks: u32) -> Result<CosimNetwork, String> {
        let key = args.key.as_deref().ok_or(
            "--network ipc needs --key KEY (the session key given to `ibnet serve --key`)",
        )?;
        let timeout = Duration::from_secs_f64(args.connect_timeout.max(0.0));
        let session = ipc_proto::open_scheduler(key, timeout)
            .map_err(|e| format!("cannot attach to the fabric: {e}"))?;
        // IBCOSIM_TEST_FAULT=chatter: many stderr lines, while the fabric,
        // which has seen us attach, writes as many (ibnet's test_chatter).
        if std::env::var("IBCOSIM_TEST_FAULT").is_ok_and(|v| v == "chatter") {
            ibnet::server::test_chatter("scheduler");
        }
        let served = ProtocolSpec::new(session.protocol(), session.version());
        // version 3 is version 2 plus one-sided operations (docs/rdma.md), and
        // version 4 (notify) version 3 plus triggered inserts: a version-2
        // request accepts a version-3 fabric, a version-2 or -3 notify
        // request a version-4 one
        let compatible = served.protocol == args.protocol.protocol
            && ((served.version == 3 && args.protocol.version == 2)
                || (served.version == 4
                    && served.protocol == Protocol::Notify
                    && (args.protocol.version == 2 || args.protocol.version == 3)));
        if served != args.protocol && !compatible {
            return Err(format!(
                "the fabric of session {key} serves {served} (the {} protocol, wire version {}), but --protocol {} (version {}) was given: start both sides with the same --protocol (notify-v1 / query-v1 talk to version-1 peers)",
                session.protocol(),
                session.version(),
                args.protocol,
                args.protocol.version
            ));
        }
        if session.endpoints() < num_ranks {
            return Err(format!(
                "the schedule has {num_ranks} ranks but the fabric of session {key} maps only {} ranks to HCAs (use a larger topology or a --map file)",
                session.endpoints()
            ));
        }
        let transport = session.transport();
        let ch = session
            .connect()
            .map_err(|e| format!("cannot connect to the fabric: {e}"))?;
        let mut net = CosimNetwork::new_with_base(
            Box::new(ch),
            args.quantum,
            args.estimate,
            args.estimate_base,
            format!("ibnet/{} over {transport}", args.protocol),
            None,
        )
        .map_err(|e| format!("cannot configure the session: {e}"))?;
        // Fault injection for the supervisor's tests:
        // IBCOSIM_TEST_FAULT=error-scheduler sends the fabric a forged Error
        // record (code Internal) and then carries on as if nothing happened.
        if std::env::var("IBCOSIM_TEST_FAULT").is_ok_and(|v| v == "error-scheduler") {
            net.send(Record::error(
                ErrorCode::Internal,
                "forged by IBCOSIM_TEST_FAULT=error-scheduler",
            ))
            .map_err(|e| format!("cannot send the forged Error record: {e}"))?;
        }
        Ok(net)
    }

    fn fresh_handle(&mut self) -> Handle {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    /// The fabric sent an Error record: turn it into the engine's error.
    fn peer_error(&mut self, rec: &Record) -> NetError {
        self.done = true;
        let (code, detail) = match rec {
            Record::Error { code, .. } => (
                *code,
                self.ch
                    .error_text()
                    .unwrap_or_else(|| rec.error_detail().unwrap_or_default()),
            ),
            _ => unreachable!(),
        };
        match ErrorCode::from_u32(code) {
            ErrorCode::Deadlock => NetError::Deadlock {
                handles: parse_stuck(&detail),
                detail: format!(
                    "the fabric reports a deadlock of the simulated system ({detail}); see the fabric's message for all handles"
                ),
            },
            ErrorCode::Violation => NetError::Protocol(format!("the fabric reports: {detail}")),
            ErrorCode::Config => NetError::Protocol(format!("the fabric rejects the run (configuration): {detail}")),
            c => NetError::Transport(format!("the fabric failed (code {}): {detail}", c.as_u32())),
        }
    }

    fn recv(&mut self) -> Result<Record, NetError> {
        match self.ch.recv() {
            Ok(r @ Record::Error { .. }) => Err(self.peer_error(&r)),
            Ok(r) => Ok(r),
            Err(e) => {
                self.done = true;
                Err(transport(e))
            }
        }
    }

    fn send(&mut self, r: Record) -> Result<(), NetError> {
        self.ch.send(r).map_err(|e| {
            self.done = true;
            transport(e)
        })
    }
}

/// The checks of a version-2 wait's answer (docs/protocol.md rule 3a): the
/// arrivals all at the batch's time, which is not past the horizon and is
/// before the grant; a Grant alone and past the horizon.
fn check_exact_answer(
    batch: &[(Handle, Time)],
    answer: ExactAnswer,
    horizon: Time,
    triggers: bool,
) -> Result<(), NetError> {
    match answer {
        ExactAnswer::Batch { time, grant } => {
            // version 4: instants passed on triggers come before the last
            if let Some((h, t)) = batch
                .iter()
                .find(|(_, t)| *t > time || (*t < time && !triggers))
            {
                return Err(NetError::Protocol(format!(
                    "Arrival {h} at {} ps inside a batch ending at {} ps",
                    t.0, time.0
                )));
            }
            if time > horizon {
                return Err(NetError::Protocol(format!(
                    "arrivals at {} ps answer a wait whose horizon is {} ps (the fabric must stop at the horizon and grant)",
                    time.0, horizon.0
                )));
            }
            if grant <= time {
                return Err(NetError::Protocol(format!(
                    "ArrivalBatchEnd at {} ps grants {} ps (must be later)",
                    time.0, grant.0
                )));
            }
        }
        ExactAnswer::Grant(time) => {
            if !batch.is_empty() || time <= horizon {
                return Err(NetError::Protocol(format!(
                    "Grant of {} ps for the horizon {} ps{} (it must be later than the horizon and come alone)",
                    time.0,
                    horizon.0,
                    if batch.is_empty() { "" } else { " after Arrivals" }
                )));
            }
        }
    }
    Ok(())
}

/// Handles from an Error detail "N stuck: a,b,c,..." (best effort).
fn parse_stuck(detail: &str) -> Vec<Handle> {
    detail
        .split_once("stuck:")
        .map(|(_, l)| l.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default()
}

impl Network for CosimNetwork {
    fn name(&self) -> &str {
        &self.name
    }

    fn mode(&self) -> SyncMode {
        match self.spec.protocol {
            Protocol::Query => SyncMode::Poll,
            Protocol::Notify if self.spec.exact_notify() => SyncMode::Exact,
            Protocol::Notify => SyncMode::Notify,
        }
    }

    fn min_latency(&self) -> Time {
        self.min_latency
    }

    fn insert(&mut self, now: Time, env: Envelope) -> Result<Handle, NetError> {
        let handle = self.fresh_handle();
        match self.ch.insert_direct(handle, now, env) {
            Some(r) => r.map_err(|e| {
                self.done = true;
                transport(e)
            })?,
            None => self.send(Record::Insert {
                handle,
                time: now,
                src: env.src,
                dst: env.dst,
                size: env.size,
                tag: env.tag,
            })?,
        }
        self.c.inserts += 1;
        Ok(handle)
    }

    fn triggers(&self) -> bool {
        self.spec.has_triggers()
    }

    #[inline]
    fn prefetch_insert(&self, src: u32, dst: u32) {
        self.ch.prefetch_insert(src, dst);
    }

    fn arm(&mut self, h: Handle, trig: crate::network::Trigger) -> Result<Handle, NetError> {
        let new_handle = self.fresh_handle();
        self.send(Record::Trigger {
            handle: h,
            time: trig.not_before,
            delay: trig.delay,
            new_handle,
            size: trig.size,
            seq: trig.seq,
            dst: trig.dst,
            src: trig.src,
        })?;
        self.c.armed += 1;
        Ok(new_handle)
    }

    fn disarm(&mut self, h: Handle) -> Result<(), NetError> {
        self.send(Record::Disarm { handle: h })?;
        self.c.disarmed += 1;
        Ok(())
    }

    /// The fabric carries put/get itself (protocol version 3,
    /// InsertOp); `check_one_sided` refuses older sessions.
    fn native_one_sided(&self) -> bool {
        true
    }

    fn check_one_sided(&self) -> Result<(), NetError> {
        if self.spec.has_one_sided() {
            return Ok(());
        }
        Err(NetError::Unsupported(format!(
            "the schedule has one-sided operations (put/get), which need protocol version 3, but this fabric session speaks {} (wire version {}); use --protocol {} on both sides (plain schedules keep working with version-{} peers)",
            self.spec,
            self.spec.version,
            ProtocolSpec::new(self.spec.protocol, 3),
            self.spec.version
        )))
    }

    fn insert_op(
        &mut self,
        now: Time,
        env: Envelope,
        op: OneSidedOp,
    ) -> Result<OpHandles, NetError> {
        self.check_one_sided()?;
        let handle = self.fresh_handle();
        let (kind, acked) = match op {
            OneSidedOp::Put => (ipc_proto::OpKind::Put, Some(self.fresh_handle())),
            OneSidedOp::Get => (ipc_proto::OpKind::Get, None),
        };
        // (the put's acknowledgement handle is 0 for a get)
        self.send(Record::InsertOp {
            handle,
            ack_handle: acked.unwrap_or(0),
            op: kind,
            time: now,
            src: env.src,
            dst: env.dst,
            size: env.size,
            tag: env.tag,
        })?;
        self.c.inserts += 1;
        Ok(OpHandles {
            first: handle,
            acked,
        })
    }

    fn query(&mut self, now: Time, m: InFlight) -> Result<Time, NetError> {
        let handle = m.handle;
        if self.spec.protocol != Protocol::Query {
            return Err(NetError::Unsupported("query in the notify protocol".into()));
        }
        let inserts_sent = self.ch.inserts_sent();
        self.send(Record::Query {
            handle,
            time: now,
            inserts_sent,
        })?;
        self.c.queries += 1;
        match self.recv()? {
            Record::Reply {
                handle: h,
                time,
                arrived,
            } if h == handle => {
                if arrived {
                    if time > now {
                        return Err(NetError::Protocol(format!(
                            "Reply for {handle}: arrived at {} ps, after the query time {} ps",
                            time.0, now.0
                        )));
                    }
                } else {
                    self.c.not_yet += 1;
                    let expect = Time(now.0.saturating_add(self.quantum.0));
                    // Without the estimate every "not yet" is exactly t'+q:
                    // this catches a fabric started with another --quantum.
                    if (!self.estimate && time != expect) || time < expect {
                        return Err(NetError::Protocol(format!(
                            "Reply for {handle} at {} ps: next query at {} ps, expected {} ps (t' + q with q = {} ps); do the scheduler's and the fabric's --quantum/--estimate agree?",
                            now.0, time.0, expect.0, self.quantum.0
                        )));
                    }
                }
                Ok(time)
            }
            other => Err(NetError::Protocol(format!(
                "expected the Reply for handle {handle}, got {other:?}"
            ))),
        }
    }

    fn wait_arrivals(&mut self, now: Time) -> Result<Vec<(Handle, Time)>, NetError> {
        if self.mode() != SyncMode::Notify {
            return Err(NetError::Unsupported(format!(
                "wait_arrivals in the {} protocol",
                self.spec
            )));
        }
        self.send(Record::NoMoreInserts {
            time: now,
            horizon: Time(0),
        })?;
        self.c.waits += 1;
        self.batch.clear();
        loop {
            match self.recv()? {
                Record::Arrival { handle, time } => self.batch.push((handle, time)),
                Record::ArrivalBatchEnd { time, .. } => {
                    if let Some((h, t)) = self.batch.iter().find(|(_, t)| *t != time) {
                        return Err(NetError::Protocol(format!(
                            "Arrival {h} at {} ps inside a batch ending at {} ps",
                            t.0, time.0
                        )));
                    }
                    self.c.arrivals += self.batch.len() as u64;
                    return Ok(std::mem::take(&mut self.batch));
                }
                other => {
                    return Err(NetError::Protocol(format!(
                        "expected Arrival or ArrivalBatchEnd, got {other:?}"
                    )))
                }
            }
        }
    }

    fn wait_exact(&mut self, now: Time, horizon: Time) -> Result<Answer, NetError> {
        if self.mode() != SyncMode::Exact {
            return Err(NetError::Unsupported(format!(
                "wait_exact in the {} protocol",
                self.spec
            )));
        }
        self.batch.clear();
        self.fired.clear();
        // one-piece: the fabric server's own answer, without records
        let answer = match self
            .ch
            .wait_exact_direct(now, horizon, &mut self.batch, &mut self.fired)
        {
            Some(answer) => answer,
            None => {
                self.send(Record::NoMoreInserts { time: now, horizon })?;
                loop {
                    // the batch's arrivals already received, in one go
                    self.ch.take_arrivals(&mut self.batch);
                    match self.recv()? {
                        Record::Arrival { handle, time } => self.batch.push((handle, time)),
                        Record::Fired {
                            handle,
                            time,
                            new_handle,
                        } if self.spec.has_triggers() => {
                            self.fired.push((handle, time, new_handle))
                        }
                        Record::ArrivalBatchEnd { time, grant, .. } => {
                            break ExactAnswer::Batch { time, grant }
                        }
                        Record::Grant { time } => break ExactAnswer::Grant(time),
                        other => {
                            return Err(NetError::Protocol(format!(
                                "expected Arrival, ArrivalBatchEnd or Grant, got {other:?}"
                            )))
                        }
                    }
                }
            }
        };
        self.c.waits += 1;
        if let Err(e) = check_exact_answer(&self.batch, answer, horizon, self.spec.has_triggers()) {
            self.done = true;
            return Err(e);
        }
        Ok(match answer {
            ExactAnswer::Batch { grant, .. } => {
                self.c.arrivals += self.batch.len() as u64;
                self.c.fired += self.fired.len() as u64;
                Answer {
                    arrivals: std::mem::take(&mut self.batch),
                    grant,
                    fired: std::mem::take(&mut self.fired),
                }
            }
            ExactAnswer::Grant(grant) => {
                self.c.grants += 1;
                Answer {
                    arrivals: Vec::new(),
                    grant,
                    fired: Vec::new(),
                }
            }
        })
    }

    fn finish(&mut self, end: Time) -> Result<(), NetError> {
        self.send(Record::Finish { time: end })?;
        self.ch.flush().map_err(transport)?;
        self.done = true;
        self.extra_stats = self.ch.finished()?;
        if let Some(hook) = self.on_finish.take() {
            self.extra_stats.extend(hook()?);
        }
        Ok(())
    }

    fn peer_wait(&self) -> Option<std::time::Duration> {
        self.ch.peer_wait()
    }
    fn stats(&self) -> Vec<(String, u64)> {
        let mut v = vec![("inserts".to_string(), self.c.inserts)];
        v.push(("protocol_version".into(), self.spec.version as u64));
        match self.spec.protocol {
            Protocol::Query => {
                v.push(("queries".into(), self.c.queries));
                v.push(("replies_not_yet".into(), self.c.not_yet));
                v.push(("quantum_ps".into(), self.quantum.0));
            }
            Protocol::Notify => {
                v.push(("no_more_inserts".into(), self.c.waits));
                v.push(("arrivals".into(), self.c.arrivals));
                if self.spec.exact_notify() {
                    v.push(("grants".into(), self.c.grants));
                    v.push(("min_latency_ps".into(), self.min_latency.0));
                }
                if self.spec.has_triggers() {
                    v.push(("triggers_armed".into(), self.c.armed));
                    v.push(("triggers_fired".into(), self.c.fired));
                    v.push(("triggers_disarmed".into(), self.c.disarmed));
                }
            }
        }
        let cs = self.ch.stats();
        v.push(("records_sent".into(), cs.records_sent));
        v.push(("messages_sent".into(), cs.messages_sent));
        v.push(("records_received".into(), cs.records_received));
        v.extend(self.extra_stats.iter().cloned());
        v
    }
}

impl Drop for CosimNetwork {
    /// The run ended without Finish (engine error, unmatched operations
    /// detected early, ...): tell the fabric, so it stops at once instead
    /// of noticing our death a second later.
    fn drop(&mut self) {
        if !self.done {
            let _ = self.ch.send(Record::error(
                ErrorCode::Abort,
                "the scheduler stopped before Finish",
            ));
            let _ = self.ch.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Params, Sim};
    use ibnet::server::{FabricServer, FabricSetup, ServerConfig, SetupArgs};

    fn zero() -> Params {
        Params {
            l: 0,
            o: 0,
            g: 0,
            big_g: 0,
            big_o: 0,
            ..Params::default()
        }
    }

    /// A backend whose fabric thread runs `cfg` (H8_S1, thesis-ddr). In
    /// version 1 the fabric is given `fabric_q` / `estimate`; in version 2
    /// it takes the scheduler's Config unless `pin` (then it insists on
    /// `fabric_q`).
    fn backend(
        spec: ProtocolSpec,
        fabric_q: u64,
        sched_q: u64,
        estimate: Option<f64>,
        pin: bool,
    ) -> Result<CosimNetwork, NetError> {
        let setup = FabricSetup::build(&SetupArgs {
            topology: "H8_S1".into(),
            ..SetupArgs::default()
        })
        .unwrap();
        let mut cfg = ServerConfig::new(spec, setup.rank_hcas);
        if spec.version < 2 || pin {
            cfg.quantum = Time(fabric_q);
            cfg.estimate = estimate;
            cfg.pinned = pin;
        }
        let mut server = FabricServer::new(setup.fabric, cfg).unwrap();
        let (s, mut f) = ipc_proto::inproc::pair_versioned(spec.protocol, spec.version).unwrap();
        std::thread::spawn(move || {
            let _ = ibnet::server::serve_channel(&mut f, &mut server, None);
        });
        CosimNetwork::new(Box::new(s), Time(sched_q), estimate, "test".into(), None)
    }

    const PINGPONG: &str = "num_ranks 2\n\nrank 0 {\nl1: send 44b to 1 tag 0\nl2: recv 44b from 1 tag 0\nl2 requires l1\n}\n\nrank 1 {\nl1: recv 44b from 0 tag 0\nl2: send 44b to 0 tag 0\nl2 requires l1\n}\n";

    fn run(net: CosimNetwork) -> Result<Vec<u64>, crate::engine::SimError> {
        let sched = crate::goal::parse_str("pp.goal", PINGPONG).unwrap();
        let mut sim = Sim::new(sched, zero(), net)?;
        sim.run()?;
        Ok(sim.report().finish_times)
    }

    /// Ping-pong of one-flit messages over one switch: each way takes
    /// 150.6 ns (docs/model/fabric.md 11 case 1 with the sec. 13 numbers), so rank 1
    /// finishes at 150600 ps and rank 0 at 301200 ps, in every protocol.
    #[test]
    fn pingpong_all_protocols() {
        for spec in [ProtocolSpec::NOTIFY, ProtocolSpec::NOTIFY_V1] {
            assert_eq!(
                run(backend(spec, 1, 1, None, false).unwrap()).unwrap(),
                vec![301_200, 150_600],
                "{spec}"
            );
        }
        for spec in [ProtocolSpec::QUERY, ProtocolSpec::QUERY_V1] {
            assert_eq!(
                run(backend(spec, 1, 1, Some(1.0), false).unwrap()).unwrap(),
                vec![301_200, 150_600],
                "{spec}"
            );
            // 1 ns polling: each arrival is learned at the next multiple of
            // 1 ns after its send (sends at 0 and 151 ns).
            assert_eq!(
                run(backend(spec, 1000, 1000, None, false).unwrap()).unwrap(),
                vec![302_000, 151_000],
                "{spec}"
            );
        }
    }

    /// Version 1: q is an option of both sides; the scheduler detects a
    /// mismatch from the replies.
    #[test]
    fn quantum_mismatch_is_detected_v1() {
        let e = run(backend(ProtocolSpec::QUERY_V1, 1000, 1, None, false).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 1 ps (t' + q with q = 1 ps)"), "{e}");
        assert!(e.contains("--quantum/--estimate agree"), "{e}");
    }

    /// Version 2: q travels in the Config record; a fabric pinned to
    /// another q refuses the Config at once, naming both values.
    #[test]
    fn quantum_agreed_through_config_v2() {
        // not pinned: the fabric takes the scheduler's 1 ns
        assert_eq!(
            run(backend(ProtocolSpec::QUERY, 1, 1000, None, false).unwrap()).unwrap(),
            vec![302_000, 151_000]
        );
        let e = backend(ProtocolSpec::QUERY, 1000, 1, None, true)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("Config q=1ps F=none, fabric has q=1000ps F=none"),
            "{e}"
        );
    }

    #[test]
    fn stats_count_protocol_records() {
        let sched = crate::goal::parse_str("pp.goal", PINGPONG).unwrap();
        let net = backend(ProtocolSpec::NOTIFY_V1, 1, 1, None, false).unwrap();
        let mut sim = Sim::new(sched, zero(), net).unwrap();
        sim.run().unwrap();
        let st: std::collections::HashMap<String, u64> =
            sim.network().stats().into_iter().collect();
        assert_eq!(
            (st["inserts"], st["no_more_inserts"], st["arrivals"]),
            (2, 2, 2)
        );
        // v2 on the same ping-pong: one switch, so the minimum latency is
        // ISW + VSW = 100 ns; each wait is answered with the arrival.
        let sched = crate::goal::parse_str("pp.goal", PINGPONG).unwrap();
        let net = backend(ProtocolSpec::NOTIFY, 1, 1, None, false).unwrap();
        let mut sim = Sim::new(sched, zero(), net).unwrap();
        sim.run().unwrap();
        let st: std::collections::HashMap<String, u64> =
            sim.report().network_stats.into_iter().collect();
        assert_eq!(
            (
                st["inserts"],
                st["no_more_inserts"],
                st["arrivals"],
                st["grants"],
                st["min_latency_ps"],
                st["late_arrivals"],
                st["protocol_version"]
            ),
            (2, 2, 2, 0, 100_000, 0, 2)
        );
    }

    #[test]
    fn fabric_errors_become_engine_errors() {
        let (s, mut f) = ipc_proto::inproc::pair_versioned(Protocol::Notify, 1).unwrap();
        let mut net = CosimNetwork::new(Box::new(s), Time(1), None, "test".into(), None).unwrap();
        std::thread::spawn(move || {
            let _ = f.recv();
            f.send(Record::error(ErrorCode::Deadlock, "2 stuck: 4,9"))
                .unwrap();
            f.flush().unwrap();
        });
        net.insert(Time(0), Envelope::new(0, 1, 8, 0)).unwrap();
        match net.wait_arrivals(Time(0)) {
            Err(NetError::Deadlock { handles, detail }) => {
                assert_eq!(handles, vec![4, 9]);
                assert!(detail.contains("deadlock"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// A fabric that breaks the version-2 rules is caught: a Grant not
    /// beyond the horizon, arrivals after the horizon.
    #[test]
    fn exact_answers_are_checked() {
        for (answer, want) in [
            (
                vec![Record::Grant { time: Time(500) }],
                "must be later than the horizon",
            ),
            (
                vec![
                    Record::Arrival {
                        handle: 0,
                        time: Time(900),
                    },
                    Record::ArrivalBatchEnd {
                        time: Time(900),
                        count: 1,
                        grant: Time(901),
                    },
                ],
                "whose horizon is 500 ps",
            ),
        ] {
            let (s, mut f) = ipc_proto::inproc::pair_versioned(Protocol::Notify, 2).unwrap();
            std::thread::spawn(move || {
                assert!(matches!(f.recv(), Ok(Record::Config { .. })));
                f.send(Record::ConfigAck {
                    min_latency: Time(10),
                })
                .unwrap();
                f.flush().unwrap();
                let _ = f.recv(); // Insert
                let _ = f.recv(); // NoMoreInserts
                for r in answer {
                    f.send(r).unwrap();
                }
                f.flush().unwrap();
                let _ = f.recv();
            });
            let mut net =
                CosimNetwork::new(Box::new(s), Time(1), None, "test".into(), None).unwrap();
            assert_eq!(net.min_latency(), Time(10));
            net.insert(Time(0), Envelope::new(0, 1, 8, 0)).unwrap();
            let e = net.wait_exact(Time(0), Time(500)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn ipc_needs_a_key_and_a_fabric() {
        let mut a = CosimArgs::new(ProtocolSpec::NOTIFY, SetupArgs::default());
        a.connect_timeout = 0.05;
        assert!(CosimNetwork::connect_ipc(&a, 2)
            .err()
            .unwrap()
            .contains("--network ipc needs --key"));
        a.key = Some(format!("nofabric-{}", std::process::id()));
        let e = CosimNetwork::connect_ipc(&a, 2).err().unwrap();
        assert!(
            e.contains("cannot attach to the fabric") && e.contains("timed out"),
            "{e}"
        );
    }
}
