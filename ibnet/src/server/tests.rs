//! Unit tests of the server state machine (no transport).

use super::*;
use crate::engine::Fabric;
use crate::params::Params;
use crate::topology::builtin;

/// A version-1 server (q and F given to the fabric, no Config record).
pub(super) fn server(
    topo: &str,
    protocol: Protocol,
    quantum: u64,
    estimate: Option<f64>,
) -> FabricServer {
    server_with(
        topo,
        Params::thesis_ddr(),
        ProtocolSpec::new(protocol, 1),
        quantum,
        estimate,
    )
}

pub(super) fn server_with(
    topo: &str,
    params: Params,
    spec: ProtocolSpec,
    quantum: u64,
    estimate: Option<f64>,
) -> FabricServer {
    let t = builtin(topo).unwrap();
    let f = Fabric::new(&t, &params).unwrap();
    let n = f.num_hcas();
    let mut cfg = ServerConfig::new(spec, (0..n).collect());
    cfg.quantum = Time(quantum);
    cfg.estimate = estimate;
    FabricServer::new(f, cfg).unwrap()
}

/// A version-2 server after its Config exchange (q = 1 ps, no estimate
/// for notify).
pub(super) fn server_v2(topo: &str, protocol: Protocol, estimate_milli: u32) -> FabricServer {
    let mut s = server_with(
        topo,
        Params::thesis_ddr(),
        ProtocolSpec::new(protocol, 2),
        1,
        None,
    );
    let mut out = Vec::new();
    s.handle(config(estimate_milli), &mut out).unwrap();
    assert!(matches!(out[..], [Record::ConfigAck { .. }]), "{out:?}");
    s
}

pub(super) fn nmi(t: u64) -> Record {
    Record::NoMoreInserts {
        time: Time(t),
        horizon: Time(0),
    }
}

pub(super) fn wait(t: u64, horizon: u64) -> Record {
    Record::NoMoreInserts {
        time: Time(t),
        horizon: Time(horizon),
    }
}

/// A Config record: a 1 ps quantum, estimates `estimate_milli` / 1000
/// times the per-hop latencies.
pub(super) fn config(estimate_milli: u32) -> Record {
    Record::Config {
        quantum: Time(1),
        estimate_milli,
        estimate_base: EstimateBase::Hops,
    }
}

pub(super) fn query(handle: u64, time: u64, inserts_sent: u64) -> Record {
    Record::Query {
        handle,
        time: Time(time),
        inserts_sent,
    }
}

pub(super) fn ins(handle: u64, time: u64, src: u32, dst: u32, size: u64) -> Record {
    Record::Insert {
        handle,
        time: Time(time),
        src,
        dst,
        size,
        tag: 0,
    }
}

/// docs/model/fabric.md 11 case 1 with the thesis-era numbers (sec. 13): a 44-byte
/// message is one 64-byte packet (20-byte header), one flit. Injected at 0:
/// generator at 1 ns, pop 16 ns -> leaves H_1 at 17 ns, ISW + VSW = 100 ns
/// -> reaches H_2 at 117 ns, drained in 64 x 0.525 = 33.6 ns -> 150.6 ns.
pub(super) const ONE_FLIT_PS: u64 = 150_600;

#[test]
fn notify_single_message_arrives_at_sink_consumption() {
    let mut s = server("H8_S1", Protocol::Notify, 1, None);
    let mut out = Vec::new();
    assert_eq!(
        s.handle(ins(7, 0, 0, 1, 44), &mut out).unwrap(),
        Step::Continue
    );
    assert!(out.is_empty());
    s.handle(nmi(0), &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            Record::Arrival {
                handle: 7,
                time: Time(ONE_FLIT_PS)
            },
            Record::ArrivalBatchEnd {
                time: Time(ONE_FLIT_PS),
                count: 1,
                grant: Time(0)
            }
        ]
    );
    assert_eq!(
        s.handle(
            Record::Finish {
                time: Time(ONE_FLIT_PS)
            },
            &mut vec![]
        )
        .unwrap(),
        Step::Finished
    );
    assert!(s.summary().contains("1 arrivals"), "{}", s.summary());
}

#[test]
fn query_polls_with_quantum_and_answers_arrival_time() {
    let mut s = server("H8_S1", Protocol::Query, 1000, None);
    let mut out = Vec::new();
    s.handle(ins(1, 0, 0, 1, 44), &mut out).unwrap();
    // (query time, answer time, arrived)
    for (t, answer, arrived) in [
        (0, 1000, false),
        (150_000, 151_000, false),
        (151_000, ONE_FLIT_PS, true),
    ] {
        s.handle(query(1, t, 1), &mut out).unwrap();
        let reply = Record::Reply {
            handle: 1,
            time: Time(answer),
            arrived,
        };
        assert_eq!(out.pop().unwrap(), reply, "query at {t} ps");
    }
    assert_eq!(s.stats().query_lateness_ps, 400);
}

/// Query the message `h` (inserted at `t0`) as a 1 ps poller would at
/// its first and at the promised time, then far later: returns (first
/// "not yet" answer, arrival).
fn estimate_then_arrival(s: &mut FabricServer, h: u64, t0: u64) -> (u64, u64) {
    let mut out = Vec::new();
    let q = |t: u64| query(h, t, h + 1);
    s.handle(q(t0), &mut out).unwrap();
    let Some(Record::Reply {
        time: first,
        arrived: false,
        ..
    }) = out.pop()
    else {
        panic!("first query answered {out:?}")
    };
    s.handle(q(first.0), &mut out).unwrap();
    if let Some(Record::Reply {
        time,
        arrived: true,
        ..
    }) = out.pop()
    {
        return (first.0, time.0);
    }
    s.handle(q(first.0 + 1_000_000_000), &mut out).unwrap();
    let Some(Record::Reply {
        time,
        arrived: true,
        ..
    }) = out.pop()
    else {
        panic!("far query answered {out:?}")
    };
    (first.0, time.0)
}

/// Section 2.5 (corrected): the estimate is F x the per-hop fixed latencies
/// of the route (ISW + VSW = 100 ns per switch with thesis-ddr), not the
/// zero-load latency. One switch: base 100 ns against a travel time of
/// 150.6 ns, so F = 1 is early (no error) and F = 2, 3 promise too late.
#[test]
fn estimate_is_f_times_per_hop_latencies_and_counts_causality_errors() {
    let mut s = server("H8_S1", Protocol::Query, 1, Some(1.0));
    s.handle(ins(0, 5_000, 0, 1, 44), &mut Vec::new()).unwrap();
    assert_eq!(
        estimate_then_arrival(&mut s, 0, 5_000),
        (105_000, 5_000 + ONE_FLIT_PS)
    );
    assert_eq!(s.stats().causality_errors, 0);
    assert_eq!(s.stats().estimates, 1);
    for (f, promise) in [(2.0, 200_000u64), (3.0, 300_000)] {
        let mut s = server("H8_S1", Protocol::Query, 1, Some(f));
        s.handle(ins(0, 0, 0, 1, 44), &mut Vec::new()).unwrap();
        assert_eq!(estimate_then_arrival(&mut s, 0, 0), (promise, ONE_FLIT_PS));
        assert_eq!(
            (
                s.stats().causality_errors,
                s.stats().causality_error_ps_total,
                s.stats().causality_error_ps_max
            ),
            (1, promise - ONE_FLIT_PS, promise - ONE_FLIT_PS)
        );
    }
    // two switches (H8_S2, hosts 0 and 4 on different leaves): base 200 ns
    let mut s = server("H8_S2", Protocol::Query, 1, Some(1.0));
    let two = s.fabric().switches_between(0, 7).unwrap() as u64;
    assert!(two >= 2, "{two}");
    s.handle(ins(0, 0, 0, 7, 44), &mut Vec::new()).unwrap();
    let (first, _) = estimate_then_arrival(&mut s, 0, 0);
    assert_eq!(first, two * 100_000);
    assert_eq!(s.stats().causality_errors, 0);
}

/// Insert message `h` of `size` bytes from rank 0 to rank 1 at the
/// fabric's present time `t0` and query it as [`estimate_then_arrival`]
/// does: (t0, first "not yet" answer, arrival).
fn insert_now_and_estimate(s: &mut FabricServer, h: u64, size: u64) -> (u64, u64, u64) {
    let t0 = s.fabric().now().0;
    s.handle(ins(h, t0, 0, 1, size), &mut Vec::new()).unwrap();
    let (promise, arrival) = estimate_then_arrival(s, h, t0);
    (t0, promise, arrival)
}

/// The case that showed it: with the qdr preset on one switch the old zero-load
/// base gave 8 causality errors at F = 1 (up to 18.7 ns). The per-hop base
/// is a true lower bound: no error for any size.
#[test]
fn estimate_f1_never_errs_with_qdr() {
    let qdr = Params::preset("qdr").unwrap();
    let mut s = server_with("H8_S1", qdr, ProtocolSpec::QUERY_V1, 1, Some(1.0));
    let sizes = [
        0u64, 1, 44, 64, 100, 1000, 2048, 4096, 4312, 10_000, 65_536, 100_000,
    ];
    for (h, &size) in sizes.iter().enumerate() {
        let (_, promise, arrival) = insert_now_and_estimate(&mut s, h as u64, size);
        assert!(promise <= arrival, "size {size}: {promise} > {arrival}");
    }
    assert_eq!(s.stats().causality_errors, 0);
    assert_eq!(s.stats().estimates, sizes.len() as u64);
    // the zero-load lower bound (serialisation included) neither
    let mut s = server_with("H8_S1", qdr_params(), ProtocolSpec::QUERY_V1, 1, Some(1.0));
    let mut cfg_base = s.config().clone();
    cfg_base.estimate_base = EstimateBase::ZeroLoad;
    let f = Fabric::new(&builtin("H8_S1").unwrap(), &qdr_params()).unwrap();
    let mut s2 = FabricServer::new(f, cfg_base).unwrap();
    std::mem::swap(&mut s, &mut s2);
    for (h, &size) in sizes.iter().enumerate() {
        let (t0, promise, arrival) = insert_now_and_estimate(&mut s, h as u64, size);
        assert!(promise <= arrival, "size {size}: {promise} > {arrival}");
        if size >= 10_000 {
            // serialisation dominates: within 10% of the real travel
            assert!(
                (arrival - t0) * 9 < (promise - t0) * 10,
                "size {size}: {promise} vs {arrival}"
            );
        }
    }
    assert_eq!(s.stats().causality_errors, 0);
}

fn qdr_params() -> Params {
    Params::preset("qdr").unwrap()
}

/// Version 2: Config first (anything else is a violation), answered with
/// the minimum latency over the mapped ranks (one switch: 100 ns).
#[test]
fn v2_config_comes_first() {
    let mut s = server_with("H8_S1", Params::thesis_ddr(), ProtocolSpec::NOTIFY, 1, None);
    let e = s.handle(ins(0, 0, 0, 1, 44), &mut Vec::new()).unwrap_err();
    assert!(
        e.to_string()
            .contains("the scheduler's first record must be Config, not Insert"),
        "{e}"
    );
    let mut s = server_v2("H8_S1", Protocol::Notify, 0);
    let mut out = Vec::new();
    let e = s.handle(config(0), &mut out).unwrap_err();
    assert!(e.to_string().contains("a second Config"), "{e}");
    let mut s = server_with("H8_S2", Params::thesis_ddr(), ProtocolSpec::NOTIFY, 1, None);
    s.handle(config(0), &mut out).unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::ConfigAck {
            // one switch: ISW + VSW (a single flit has no serialisation term)
            min_latency: Time(100_000)
        }
    );
    // F in the notify protocol is a configuration error
    let mut s = server_with("H8_S1", Params::thesis_ddr(), ProtocolSpec::NOTIFY, 1, None);
    let e = s.handle(config(1000), &mut out).unwrap_err();
    assert!(matches!(e, ServerError::Config(_)), "{e}");
}

/// Version 2 waits: a horizon before any possible arrival is granted from
/// the lookahead (insert time + base) without simulating; a horizon past
/// the arrival gets the batch, whose grant covers the other message.
#[test]
fn v2_grants_and_batches() {
    let mut s = server_v2("H8_S1", Protocol::Notify, 0);
    let mut out = Vec::new();
    s.handle(ins(0, 0, 0, 1, 44), &mut out).unwrap();
    s.handle(ins(1, 50_000, 2, 3, 44), &mut out).unwrap();
    // horizon 10 ns: earliest possible completion 100 ns (0 + the lower
    // bound: ISW + VSW; one flit has no serialisation term)
    s.handle(wait(0, 10_000), &mut out).unwrap();
    assert_eq!(
        out,
        vec![Record::Grant {
            time: Time(100_000)
        }]
    );
    assert_eq!(s.fabric().now(), Time(0));
    out.clear();
    // horizon 140 ns: simulated through it, no completion (150.6 ns); the
    // grant is at least 140 ns + 1
    s.handle(wait(100_000, 140_000), &mut out).unwrap();
    let [Record::Grant { time: g }] = out[..] else {
        panic!("{out:?}")
    };
    assert!(g.0 > 140_000 && g.0 <= ONE_FLIT_PS, "{g}");
    assert_eq!(s.fabric().now(), Time(140_000));
    out.clear();
    // horizon u64::MAX: the first arrival, granting at most the second's
    s.handle(wait(120_000, u64::MAX), &mut out).unwrap();
    let [Record::Arrival {
        handle: 0,
        time: ta,
    }, Record::ArrivalBatchEnd {
        time: te,
        count: 1,
        grant,
    }] = out[..]
    else {
        panic!("{out:?}")
    };
    assert_eq!((ta, te), (Time(ONE_FLIT_PS), Time(ONE_FLIT_PS)));
    assert!(
        grant.0 > ONE_FLIT_PS && grant.0 <= 50_000 + ONE_FLIT_PS,
        "{grant}"
    );
    out.clear();
    s.handle(wait(ONE_FLIT_PS, u64::MAX), &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            Record::Arrival {
                handle: 1,
                time: Time(50_000 + ONE_FLIT_PS)
            },
            Record::ArrivalBatchEnd {
                time: Time(50_000 + ONE_FLIT_PS),
                count: 1,
                grant: Time(u64::MAX)
            }
        ]
    );
    assert_eq!(
        (s.stats().grants, s.stats().grants_without_simulation),
        (2, 1)
    );
    // a horizon before the scheduler's time is a violation
    let e = s.handle(wait(300_000, 200_000), &mut out).unwrap_err();
    assert!(e.to_string().contains("horizon"), "{e}");
}

/// Version 1 sessions keep the old layout: a non-zero horizon field is a
/// violation there.
#[test]
fn v1_rejects_a_horizon() {
    let mut s = server("H8_S1", Protocol::Notify, 1, None);
    s.handle(ins(0, 0, 0, 1, 44), &mut Vec::new()).unwrap();
    let e = s.handle(wait(0, 5), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("non-zero horizon"), "{e}");
}

#[test]
fn insert_into_the_past_is_a_violation() {
    let mut s = server("H8_S1", Protocol::Query, 1, None);
    let mut out = Vec::new();
    s.handle(ins(1, 0, 0, 1, 44), &mut out).unwrap();
    s.handle(query(1, 10_000, 1), &mut out).unwrap();
    let e = s.handle(ins(2, 9_999, 1, 0, 44), &mut out).unwrap_err();
    assert!(matches!(e, ServerError::Violation(_)), "{e}");
    assert!(
        e.to_string()
            .contains("Insert 2 at 9999 ps is in the fabric's past (fabric time 10000 ps)"),
        "{e}"
    );
    assert_eq!(e.to_record().kind(), ipc_proto::record::kind::ERROR);
}

#[test]
fn deadlocks_are_reported_with_handles() {
    let mut s = server("H8_S1", Protocol::Notify, 1, None);
    let mut out = Vec::new();
    let e = s.handle(nmi(3), &mut out).unwrap_err();
    assert!(matches!(e, ServerError::Deadlock { .. }), "{e}");
    assert!(e.to_string().contains("no message in flight"), "{e}");
    let d = e.to_record().error_detail().unwrap();
    assert_eq!(d, "0 stuck: ");
    let e = ServerError::Deadlock {
        detail: "x".into(),
        handles: (1..=8).collect(),
    };
    assert_eq!(
        e.to_record().error_detail().unwrap(),
        "8 stuck: 1,2,3,4,5,6,..."
    );
}

#[test]
fn unmapped_rank_and_wrong_records_are_errors() {
    let mut s = server("H8_S1", Protocol::Notify, 1, None);
    let mut out = Vec::new();
    let e = s.handle(ins(1, 0, 0, 8, 44), &mut out).unwrap_err();
    assert!(
        e.to_string()
            .contains("destination rank 8 has no HCA (the fabric maps 8 ranks on 8 HCAs)"),
        "{e}"
    );
    let e = s.handle(query(1, 0, 0), &mut out).unwrap_err();
    assert!(
        e.to_string().contains("sent Query in the notify protocol"),
        "{e}"
    );
    let e = s
        .handle(Record::error(ErrorCode::Abort, "bye"), &mut out)
        .unwrap_err();
    assert!(matches!(e, ServerError::Peer { code: 6, .. }), "{e}");
}

#[test]
fn logs_are_written() {
    use std::sync::{Arc, Mutex};
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (a, b) = (Buf::default(), Buf::default());
    let mut s = server("H8_S1", Protocol::Notify, 1, None);
    s.set_insert_log(Box::new(a.clone())).unwrap();
    s.set_arrival_log(Box::new(b.clone())).unwrap();
    let mut out = Vec::new();
    s.handle(ins(3, 0, 2, 5, 44), &mut out).unwrap();
    s.handle(nmi(0), &mut out).unwrap();
    s.handle(Record::Finish { time: Time(0) }, &mut out)
        .unwrap();
    assert_eq!(
        String::from_utf8(a.0.lock().unwrap().clone()).unwrap(),
        "# handle time_ps src_rank dst_rank bytes\n3 0 2 5 44\n"
    );
    assert_eq!(
        String::from_utf8(b.0.lock().unwrap().clone()).unwrap(),
        format!("# handle time_ps\n3 {ONE_FLIT_PS}\n")
    );
}

/// Version 3: a put's two points arrive under its two handles,
/// a get's under its handle, at the fabric's own times; a message beside
/// them as in version 2. Thesis-ddr on H8_S1: a 44-byte put's data is the
/// 44-byte message above (ONE_FLIT_PS); the acknowledgement is a real
/// header-only packet after it.
#[test]
fn v3_insert_op_points_arrive_under_their_handles() {
    let mut s = server_with(
        "H8_S1",
        Params::thesis_ddr(),
        ProtocolSpec::NOTIFY_V3,
        1,
        None,
    );
    let mut out = Vec::new();
    s.handle(config(0), &mut out).unwrap();
    out.clear();
    let put = |handle, ack_handle, src, dst| Record::InsertOp {
        handle,
        time: Time(0),
        src,
        dst,
        size: 44,
        tag: 0,
        op: ipc_proto::OpKind::Put,
        ack_handle,
    };
    s.handle(put(10, 11, 0, 1), &mut out).unwrap();
    // a handle still in flight (the ack handle too) is refused
    assert!(matches!(
        s.handle(put(11, 12, 2, 3), &mut vec![]),
        Err(ServerError::Violation(_))
    ));
    s.handle(ins(20, 0, 2, 3, 44), &mut out).unwrap();
    let mut got = Vec::new();
    while got.len() < 3 {
        out.clear();
        s.handle(wait(0, u64::MAX), &mut out).unwrap();
        for r in &out {
            if let Record::Arrival { handle, time } = r {
                got.push((*handle, time.0));
            }
        }
        assert!(matches!(out.last(), Some(Record::ArrivalBatchEnd { .. })));
    }
    // data and the message (same size, disjoint pairs) at one instant
    assert_eq!(got[0], (10, ONE_FLIT_PS));
    assert_eq!(got[1], (20, ONE_FLIT_PS));
    assert_eq!(got[2].0, 11);
    assert!(got[2].1 > ONE_FLIT_PS);
    // a version-2 server refuses InsertOp
    let mut v2 = server_v2("H8_S1", Protocol::Notify, 0);
    let e = v2.handle(put(1, 2, 0, 1), &mut vec![]).unwrap_err();
    assert!(e.to_string().contains("need version 3"), "{e}");
}
