//! Unit tests of the server state machine (no transport).

use super::*;
use crate::params::Params;
use crate::topology::builtin;

fn server(topo: &str, protocol: Protocol, quantum: u64, estimate: Option<f64>) -> FabricServer {
    let t = builtin(topo).unwrap();
    let f = Fabric::new(&t, &Params::thesis_ddr()).unwrap();
    let n = f.num_hcas();
    FabricServer::new(
        f,
        ServerConfig {
            protocol,
            quantum: Time(quantum),
            estimate,
            rank_hcas: (0..n).collect(),
        },
    )
    .unwrap()
}

fn ins(handle: u64, time: u64, src: u32, dst: u32, size: u64) -> Record {
    Record::Insert {
        handle,
        time: Time(time),
        src,
        dst,
        size,
        tag: 0,
    }
}

/// ibfabric.md 11 case 1 with the thesis-era numbers (sec. 13): a 44-byte
/// message is one 64-byte packet (20-byte header), one flit. Injected at 0:
/// generator at 1 ns, pop 16 ns -> leaves H_1 at 17 ns, ISW + VSW = 100 ns
/// -> reaches H_2 at 117 ns, drained in 64 x 0.525 = 33.6 ns -> 150.6 ns.
const ONE_FLIT_PS: u64 = 150_600;

#[test]
fn notify_single_message_arrives_at_sink_consumption() {
    let mut s = server("H8_S1", Protocol::Notify, 1, None);
    let mut out = Vec::new();
    assert_eq!(
        s.handle(ins(7, 0, 0, 1, 44), &mut out).unwrap(),
        Step::Continue
    );
    assert!(out.is_empty());
    s.handle(Record::NoMoreInserts { time: Time(0) }, &mut out)
        .unwrap();
    assert_eq!(
        out,
        vec![
            Record::Arrival {
                handle: 7,
                time: Time(ONE_FLIT_PS)
            },
            Record::ArrivalBatchEnd {
                time: Time(ONE_FLIT_PS),
                count: 1
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
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(0),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(1000),
            arrived: false
        }
    );
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(150_000),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(151_000),
            arrived: false
        }
    );
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(151_000),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(ONE_FLIT_PS),
            arrived: true
        }
    );
    assert_eq!(s.stats().query_lateness_ps, 400);
}

#[test]
fn estimate_answers_zero_load_and_counts_causality_errors() {
    // F = 1: the estimate is the exact lone-message arrival -> no error.
    let mut s = server("H8_S1", Protocol::Query, 1, Some(1.0));
    let mut out = Vec::new();
    s.handle(ins(1, 5_000, 0, 1, 44), &mut out).unwrap();
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(5_000),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(5_000 + ONE_FLIT_PS),
            arrived: false
        }
    );
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(5_000 + ONE_FLIT_PS),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(5_000 + ONE_FLIT_PS),
            arrived: true
        }
    );
    assert_eq!(s.stats().causality_errors, 0);
    // F = 2: promised 2x, the real arrival is earlier by one latency.
    let mut s = server("H8_S1", Protocol::Query, 1, Some(2.0));
    s.handle(ins(1, 0, 0, 1, 44), &mut out).unwrap();
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(0),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(2 * ONE_FLIT_PS),
            arrived: false
        }
    );
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(2 * ONE_FLIT_PS),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        out.pop().unwrap(),
        Record::Reply {
            handle: 1,
            time: Time(ONE_FLIT_PS),
            arrived: true
        }
    );
    assert_eq!(
        (
            s.stats().causality_errors,
            s.stats().causality_error_ps_total
        ),
        (1, ONE_FLIT_PS)
    );
}

#[test]
fn insert_into_the_past_is_a_violation() {
    let mut s = server("H8_S1", Protocol::Query, 1, None);
    let mut out = Vec::new();
    s.handle(ins(1, 0, 0, 1, 44), &mut out).unwrap();
    s.handle(
        Record::Query {
            handle: 1,
            time: Time(10_000),
            inserts_sent: 1,
        },
        &mut out,
    )
    .unwrap();
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
    let e = s
        .handle(Record::NoMoreInserts { time: Time(3) }, &mut out)
        .unwrap_err();
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
    let e = s
        .handle(
            Record::Query {
                handle: 1,
                time: Time(0),
                inserts_sent: 0,
            },
            &mut out,
        )
        .unwrap_err();
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
    s.handle(Record::NoMoreInserts { time: Time(0) }, &mut out)
        .unwrap();
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
