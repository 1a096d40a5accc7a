//! Channels over both transports: every record round-trips, batching,
//! ordering, violations, and the no-deadlock property.

mod common;
use common::*;
use ipc_proto::inproc::{self, transport_pair, InprocTransport};
use ipc_proto::{
    open_scheduler, selftest, Channel, ErrorCode, Lane, ProtoError, Protocol, Record, Role, Time,
    Transport, DEFAULT_PROTOCOL_VERSION, RECORD_SIZE,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn mq_pair(protocol: Protocol) -> (Channel, Channel) {
    let key = unique_key("pair");
    let fab = create_fabric_retry(&key, protocol, 8);
    let s = open_scheduler(&key, Duration::from_secs(2)).unwrap();
    assert_eq!(s.protocol(), protocol);
    assert_eq!(s.endpoints(), 8);
    (s.connect().unwrap(), fab.connect().unwrap())
}

fn pair(mq: bool, protocol: Protocol) -> (Channel, Channel) {
    if mq {
        mq_pair(protocol)
    } else {
        inproc::pair(protocol).unwrap()
    }
}

fn insert(i: u64) -> Record {
    Record::Insert {
        handle: i,
        time: Time(1000 + i),
        src: 1,
        dst: 2,
        size: 4096,
        tag: 7,
    }
}

fn every_record_roundtrip(mq: bool) {
    // Notify protocol: all scheduler and fabric records of that protocol.
    let (mut s, mut f) = pair(mq, Protocol::Notify);
    let from_s = [
        insert(1),
        Record::NoMoreInserts {
            time: Time(1001),
            horizon: Time(2002),
        },
        Record::error(ErrorCode::Abort, "scheduler gives up"),
        Record::Finish { time: Time::MAX },
    ];
    pass_all(&mut s, &mut f, &from_s);
    let from_f = [
        Record::Arrival {
            handle: 1,
            time: Time(5000),
        },
        Record::Arrival {
            handle: 2,
            time: Time(5000),
        },
        Record::ArrivalBatchEnd {
            time: Time(5000),
            count: 2,
            grant: Time(6000),
        },
        Record::error(ErrorCode::Deadlock, "handles 3 4"),
    ];
    pass_all(&mut f, &mut s, &from_f);
    assert_eq!(s.peer_hello().unwrap().version, DEFAULT_PROTOCOL_VERSION);
    assert_eq!(f.peer_hello().unwrap().pid, std::process::id());

    // Query protocol.
    drop((s, f));
    let (mut s, mut f) = pair(mq, Protocol::Query);
    s.send(insert(9)).unwrap();
    let q = Record::Query {
        handle: 9,
        time: Time(2000),
        inserts_sent: 1,
    };
    s.send(q).unwrap();
    s.flush().unwrap();
    assert_eq!(f.recv().unwrap(), insert(9));
    assert_eq!(f.recv().unwrap(), q);
    let reps = [
        Record::Reply {
            handle: 9,
            time: Time(2100),
            arrived: false,
        },
        Record::Reply {
            handle: 9,
            time: Time(2050),
            arrived: true,
        },
        Record::error(ErrorCode::Violation, "insert into the past"),
    ];
    pass_all(&mut f, &mut s, &reps);
    s.send(Record::Finish { time: Time(3000) }).unwrap();
    drop(s); // drop flushes
    assert_eq!(f.recv().unwrap(), Record::Finish { time: Time(3000) });
}

#[test]
fn every_record_roundtrip_inproc() {
    every_record_roundtrip(false);
}

#[test]
fn every_record_roundtrip_mq() {
    let _l = mq_lock();
    every_record_roundtrip(true);
}

/// Records the size of every message passed to the inner transport.
struct Recording {
    inner: InprocTransport,
    sizes: Arc<Mutex<Vec<usize>>>,
}
impl Transport for Recording {
    fn max_message_size(&self) -> usize {
        self.inner.max_message_size()
    }
    fn send_message(&mut self, lane: Lane, msg: &[u8]) -> Result<(), ProtoError> {
        self.sizes.lock().unwrap().push(msg.len());
        self.inner.send_message(lane, msg)
    }
    fn recv_message(&mut self, wait: Duration) -> Result<Option<(Lane, Vec<u8>)>, ProtoError> {
        self.inner.recv_message(wait)
    }
    fn name(&self) -> &'static str {
        "recording"
    }
}

#[test]
fn batching_packs_128_records_per_message_and_never_splits() {
    let (st, ft) = transport_pair();
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let mut s = Channel::new(
        Box::new(Recording {
            inner: st,
            sizes: sizes.clone(),
        }),
        Protocol::Notify,
        Role::Scheduler,
    )
    .unwrap();
    let mut f = Channel::new(Box::new(ft), Protocol::Notify, Role::Fabric).unwrap();
    assert_eq!(s.records_per_message(), 128);
    // The Hello went out alone (Channel::new flushes it).
    assert_eq!(*sizes.lock().unwrap(), vec![64]);
    for i in 0..1000 {
        s.send(insert(i)).unwrap();
    }
    // 1000 records: 7 full messages shipped while sending, 104 still buffered.
    assert_eq!(sizes.lock().unwrap().len(), 1 + 7);
    s.flush().unwrap();
    let got = sizes.lock().unwrap().clone();
    assert_eq!(
        got[1..],
        [8192, 8192, 8192, 8192, 8192, 8192, 8192, 104 * 64]
    );
    assert!(got.iter().all(|&n| n % RECORD_SIZE == 0 && n <= 8192));
    for i in 0..1000 {
        assert_eq!(f.recv().unwrap(), insert(i));
    }
    let st = f.stats();
    assert_eq!(st.records_received, 1001);
    assert_eq!(st.messages_received, 9);
    assert_eq!(s.stats().messages_sent, 9);
}

#[test]
fn receiver_decodes_any_number_of_records_per_message() {
    let (mut st, ft) = transport_pair();
    let mut f = Channel::new(Box::new(ft), Protocol::Notify, Role::Fabric).unwrap();
    let hello = Record::Hello {
        version: DEFAULT_PROTOCOL_VERSION,
        protocol: Protocol::Notify,
        role: Role::Scheduler,
        pid: 1,
    };
    let mut handle = 0;
    // Messages of 1 (the Hello), 1, 3, 128 and 50 records.
    st.send_message(Lane::Ins, &hello.encode()).unwrap();
    for n in [1usize, 3, 128, 50] {
        let mut m = Vec::new();
        for _ in 0..n {
            m.extend_from_slice(&insert(handle).encode());
            handle += 1;
        }
        st.send_message(Lane::Ins, &m).unwrap();
    }
    for i in 0..handle {
        assert_eq!(f.recv().unwrap(), insert(i));
    }
    // A message that is not a multiple of 64 bytes is a violation.
    st.send_message(Lane::Ins, &[2u8; 65]).unwrap();
    let e = f.recv().unwrap_err();
    assert!(matches!(e, ProtoError::Violation(_)), "{e}");
}

#[test]
fn query_waits_for_the_inserts_it_counts() {
    // The Query arrives (on .qry) before the two Inserts it counts (on
    // .ins): the fabric must still see the Inserts first.
    let (mut st, ft) = transport_pair();
    let mut f = Channel::new(Box::new(ft), Protocol::Query, Role::Fabric).unwrap();
    let q = Record::Query {
        handle: 1,
        time: Time(10),
        inserts_sent: 2,
    };
    st.send_message(Lane::Qry, &q.encode()).unwrap();
    let mut m = Record::Hello {
        version: DEFAULT_PROTOCOL_VERSION,
        protocol: Protocol::Query,
        role: Role::Scheduler,
        pid: 1,
    }
    .encode()
    .to_vec();
    m.extend_from_slice(&insert(0).encode());
    st.send_message(Lane::Ins, &m).unwrap();
    assert_eq!(f.recv().unwrap(), insert(0));
    // Only one of two inserts delivered: the query is not ready yet.
    assert_eq!(f.try_recv().unwrap(), None);
    let mut m = insert(1).encode().to_vec();
    m.extend_from_slice(&insert(2).encode()); // sent after the query
    st.send_message(Lane::Ins, &m).unwrap();
    assert_eq!(f.recv().unwrap(), insert(1));
    assert_eq!(f.recv().unwrap(), q);
    assert_eq!(f.recv().unwrap(), insert(2));
}

#[test]
fn local_misuse_is_rejected() {
    let (mut s, mut f) = inproc::pair(Protocol::Query).unwrap();
    let e = s
        .send(Record::NoMoreInserts {
            time: Time(1),
            horizon: Time(0),
        })
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("may not send NoMoreInserts in the query protocol"),
        "{e}"
    );
    let e = s
        .send(Record::Query {
            handle: 1,
            time: Time(1),
            inserts_sent: 3,
        })
        .unwrap_err();
    assert!(e.to_string().contains("inserts_sent=3 but 0"), "{e}");
    let e = f.send(insert(1)).unwrap_err();
    assert!(matches!(e, ProtoError::Violation(_)));
    let e = s
        .send(Record::Hello {
            version: 1,
            protocol: Protocol::Query,
            role: Role::Scheduler,
            pid: 1,
        })
        .unwrap_err();
    assert!(e.to_string().contains("Hello"));
    let (_s, mut f) = inproc::pair(Protocol::Notify).unwrap();
    f.send(Record::Arrival {
        handle: 1,
        time: Time(1),
    })
    .unwrap();
    let e = f
        .send(Record::ArrivalBatchEnd {
            time: Time(1),
            count: 2,
            grant: Time(0),
        })
        .unwrap_err();
    assert!(e.to_string().contains("count=2 but 1"), "{e}");
}

fn raw_fabric(protocol: Protocol) -> (InprocTransport, Channel) {
    let (st, ft) = transport_pair();
    (
        st,
        Channel::new(Box::new(ft), protocol, Role::Fabric).unwrap(),
    )
}

#[test]
fn peer_violations_are_detected() {
    let hello = |v: u32, p: Protocol, r: Role| {
        Record::Hello {
            version: v,
            protocol: p,
            role: r,
            pid: 1,
        }
        .encode()
    };
    // Wrong version in the Hello.
    let (mut st, mut f) = raw_fabric(Protocol::Notify);
    st.send_message(Lane::Ins, &hello(7, Protocol::Notify, Role::Scheduler))
        .unwrap();
    match f.recv().unwrap_err() {
        ProtoError::VersionMismatch { ours, theirs } => {
            assert_eq!((ours, theirs), (DEFAULT_PROTOCOL_VERSION, 7))
        }
        e => panic!("{e}"),
    }
    // Wrong protocol.
    let (mut st, mut f) = raw_fabric(Protocol::Notify);
    st.send_message(
        Lane::Ins,
        &hello(DEFAULT_PROTOCOL_VERSION, Protocol::Query, Role::Scheduler),
    )
    .unwrap();
    assert!(f.recv().unwrap_err().to_string().contains("query protocol"));
    // No Hello first.
    let (mut st, mut f) = raw_fabric(Protocol::Notify);
    st.send_message(Lane::Ins, &insert(0).encode()).unwrap();
    assert!(f.recv().unwrap_err().to_string().contains("expected Hello"));
    // A record on a queue where it may not travel.
    let (mut st, mut f) = raw_fabric(Protocol::Notify);
    let mut m = hello(DEFAULT_PROTOCOL_VERSION, Protocol::Notify, Role::Scheduler).to_vec();
    m.extend_from_slice(
        &Record::Reply {
            handle: 1,
            time: Time(1),
            arrived: true,
        }
        .encode(),
    );
    st.send_message(Lane::Ins, &m).unwrap();
    let e = f.recv().unwrap_err().to_string();
    assert!(e.contains("Reply received on queue .ins"), "{e}");
    // Batch end with a wrong count (scheduler receiving).
    let (st, ft) = transport_pair();
    let mut s = Channel::new(Box::new(st), Protocol::Notify, Role::Scheduler).unwrap();
    let mut ft = ft;
    let mut m = hello(DEFAULT_PROTOCOL_VERSION, Protocol::Notify, Role::Fabric).to_vec();
    m.extend_from_slice(
        &Record::Arrival {
            handle: 1,
            time: Time(1),
        }
        .encode(),
    );
    m.extend_from_slice(
        &Record::ArrivalBatchEnd {
            time: Time(1),
            count: 3,
            grant: Time(0),
        }
        .encode(),
    );
    ft.send_message(Lane::Arr, &m).unwrap();
    s.recv().unwrap();
    assert!(s.recv().unwrap_err().to_string().contains("count=3 but 1"));
}

#[test]
fn inproc_peer_drop_is_peer_died_and_timeouts_are_bounded() {
    let (mut s, f) = inproc::pair(Protocol::Notify).unwrap();
    s.set_timeout(Some(Duration::from_millis(150)));
    let t = Instant::now();
    match s.recv_timeout(Duration::from_millis(50)) {
        Ok(None) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.recv().unwrap_err(), ProtoError::TimedOut { .. }));
    assert!(t.elapsed() < Duration::from_secs(1));
    drop(f);
    assert!(matches!(
        s.recv().unwrap_err(),
        ProtoError::PeerDied {
            peer: Role::Fabric,
            ..
        }
    ));
}

/// Both sides push far more than the queues hold before reading anything.
fn no_deadlock(mq: bool, n: u64) {
    let (mut s, mut f) = pair(mq, Protocol::Notify);
    let t = std::thread::spawn(move || selftest::fabric_stream(&mut f, n).unwrap());
    assert_eq!(selftest::scheduler_stream(&mut s, n).unwrap(), n);
    assert_eq!(t.join().unwrap(), n);
}

#[test]
fn no_deadlock_with_full_queues_mq() {
    let _l = mq_lock();
    // 50,000 records each way = 391 messages each way, queues hold 10.
    no_deadlock(true, 50_000);
}

#[test]
fn no_deadlock_inproc() {
    no_deadlock(false, 50_000);
}

#[test]
fn query_roundtrips_over_mq_threads() {
    let _l = mq_lock();
    let (mut s, mut f) = mq_pair(Protocol::Query);
    let t = std::thread::spawn(move || selftest::fabric_answer(&mut f).unwrap());
    selftest::scheduler_roundtrips(&mut s, 2000, true).unwrap();
    assert_eq!(t.join().unwrap(), 2000);
}

/// `Channel::peer_wait`: a receive that finds its record already decoded
/// costs no wait; one that must wait for the peer counts once, for at
/// least as long as the peer took to send.
fn peer_wait_counts_only_real_waits(mq: bool) {
    let (mut s, mut f) = pair(mq, Protocol::Notify);
    // Hello only, nothing waited for yet
    assert_eq!(f.peer_wait().waits, 0);
    s.send(insert(1)).unwrap();
    s.send(insert(2)).unwrap();
    s.flush().unwrap();
    assert_eq!(f.recv().unwrap(), insert(1));
    let after_first = f.peer_wait();
    // the second record came in the same message: no wait at all
    assert_eq!(f.recv().unwrap(), insert(2));
    assert_eq!(f.peer_wait().waits, after_first.waits);
    assert_eq!(f.peer_wait().waited, after_first.waited);
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(60));
        s.send(insert(3)).unwrap();
        s.flush().unwrap();
        s
    });
    assert_eq!(f.recv().unwrap(), insert(3));
    let w = f.peer_wait();
    assert_eq!(w.waits, after_first.waits + 1);
    assert!(
        w.waited - after_first.waited >= Duration::from_millis(50),
        "waited only {:?} for a record sent 60 ms later",
        w.waited - after_first.waited
    );
    drop(sender.join().unwrap());
}

#[test]
fn peer_wait_inproc() {
    peer_wait_counts_only_real_waits(false);
}

#[test]
fn peer_wait_mq() {
    let _l = mq_lock();
    peer_wait_counts_only_real_waits(true);
}

/// One record of every kind (Hello aside).
fn one_of_each_kind() -> Vec<Record> {
    use ipc_proto::record::{EstimateBase, OpKind};
    vec![
        insert(5),
        Record::NoMoreInserts {
            time: Time(1),
            horizon: Time(2),
        },
        Record::Query {
            handle: 5,
            time: Time(3),
            inserts_sent: 0,
        },
        Record::Reply {
            handle: 5,
            time: Time(3),
            arrived: false,
        },
        Record::Arrival {
            handle: 5,
            time: Time(4),
        },
        Record::ArrivalBatchEnd {
            time: Time(4),
            count: 0,
            grant: Time(0),
        },
        Record::Finish { time: Time(9) },
        Record::error(ErrorCode::Abort, "x"),
        Record::Config {
            quantum: Time(1),
            estimate_milli: 1000,
            estimate_base: EstimateBase::Hops,
        },
        Record::ConfigAck {
            min_latency: Time(1),
        },
        Record::Grant { time: Time(7) },
        Record::InsertOp {
            handle: 6,
            time: Time(5),
            src: 1,
            dst: 2,
            size: 8,
            tag: 0,
            op: OpKind::Get,
            ack_handle: 0,
        },
        Record::Trigger {
            handle: 5,
            time: Time(5),
            delay: 0,
            new_handle: 7,
            size: 8,
            seq: 0,
            dst: 2,
            src: 1,
        },
        Record::Disarm { handle: 5 },
        Record::Fired {
            handle: 5,
            time: Time(5),
            new_handle: 7,
        },
    ]
}

/// The channel keeps per-kind tables of what a side may send and receive
/// (so that the per-record checks are a table lookup); they must say
/// exactly what the routing rules (`Lane::route`) and the version rules
/// (`kind_version`) say, for every protocol, version, role and kind, both
/// when sending and when receiving.
#[test]
fn kind_tables_follow_the_routing_and_version_rules() {
    use ipc_proto::record::kind_version;
    let recs = one_of_each_kind();
    let mut kinds: Vec<u8> = recs.iter().map(|r| r.kind()).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds.len(), recs.len(), "one record per kind");
    assert_eq!(kinds.len() as u32 + 1, 16, "every kind but Hello is listed");
    let (mut sent_ok, mut sent_refused, mut recv_ok, mut recv_refused) = (0, 0, 0, 0);
    for protocol in [Protocol::Query, Protocol::Notify] {
        for version in ipc_proto::MIN_PROTOCOL_VERSION..=ipc_proto::PROTOCOL_VERSION {
            for role in [Role::Scheduler, Role::Fabric] {
                for rec in &recs {
                    let k = rec.kind();
                    let allowed =
                        kind_version(k) <= version && Lane::route(protocol, role, k).is_some();
                    // sending
                    let (s, f) = inproc::pair_versioned(protocol, version).unwrap();
                    let mut me = if role == Role::Scheduler { s } else { f };
                    let r = me.send(*rec);
                    assert_eq!(
                        r.is_ok(),
                        allowed,
                        "{protocol} v{version}: {role} sending {rec:?}: {r:?}"
                    );
                    if allowed {
                        sent_ok += 1;
                    } else {
                        sent_refused += 1;
                        let e = r.unwrap_err().to_string();
                        assert!(
                            e.contains("may not send") || e.contains("is a version-"),
                            "{e}"
                        );
                    }
                    // receiving the same record from a raw peer of `role`,
                    // on every lane the receiver reads (a fresh channel per
                    // lane: a violation ends a channel)
                    for lane in Lane::incoming(protocol, role.peer()) {
                        let (st, ft) = transport_pair();
                        let (mut raw, mut rx): (InprocTransport, Channel) =
                            if role == Role::Scheduler {
                                (
                                    st,
                                    Channel::with_version(
                                        Box::new(ft),
                                        protocol,
                                        Role::Fabric,
                                        version,
                                    )
                                    .unwrap(),
                                )
                            } else {
                                (
                                    ft,
                                    Channel::with_version(
                                        Box::new(st),
                                        protocol,
                                        Role::Scheduler,
                                        version,
                                    )
                                    .unwrap(),
                                )
                            };
                        {
                            let mut m = Record::Hello {
                                version,
                                protocol,
                                role,
                                pid: 1,
                            }
                            .encode()
                            .to_vec();
                            let hello_lane = Lane::route(protocol, role, 1).unwrap();
                            if lane != hello_lane {
                                raw.send_message(hello_lane, &m).unwrap();
                                m.clear();
                            }
                            m.extend_from_slice(&rec.encode());
                            raw.send_message(lane, &m).unwrap();
                            let ok_here = allowed && Lane::route(protocol, role, k) == Some(lane);
                            rx.set_timeout(Some(Duration::from_millis(50)));
                            let got = rx.recv();
                            if ok_here {
                                recv_ok += 1;
                                assert!(
                                got.as_ref().is_ok_and(|g| g == rec),
                                "{protocol} v{version}: {rec:?} from the {role} on .{}: {got:?}",
                                lane.suffix()
                            );
                            } else {
                                recv_refused += 1;
                                let e = got.expect_err("refused").to_string();
                                assert!(
                                    e.contains("not allowed there") || e.contains("is a version-"),
                                    "{protocol} v{version}: {rec:?} on .{}: {e}",
                                    lane.suffix()
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    // the grid holds both outcomes on both paths
    assert!(sent_ok > 0 && sent_refused > 0 && recv_ok > 0 && recv_refused > 0);
}

/// The fabric's prefetch pass (ibnet's serve loop) sees the Inserts that
/// are received but not yet taken, in order, and only those: nothing is
/// consumed, and what follows an Insert batch is not listed.
#[test]
fn queued_inserts_lists_the_received_inserts_without_taking_them() {
    for mq in [false, true] {
        let (mut s, mut f) = pair(mq, Protocol::Notify);
        for i in 0..3u32 {
            s.send(Record::Insert {
                handle: i as u64,
                time: Time(10 + i as u64),
                src: i,
                dst: 100 + i,
                size: 8,
                tag: 0,
            })
            .unwrap();
        }
        s.send(Record::NoMoreInserts {
            time: Time(12),
            horizon: Time(u64::MAX),
        })
        .unwrap();
        s.flush().unwrap();
        assert!(f.queued_inserts().next().is_none(), "nothing received yet");
        assert!(matches!(
            f.recv().unwrap(),
            Record::Insert { handle: 0, .. }
        ));
        let q: Vec<(u32, u32)> = f.queued_inserts().collect();
        assert_eq!(q, vec![(1, 101), (2, 102)], "mq={mq}");
        // listing took nothing
        assert_eq!(f.queued_inserts().count(), 2);
        assert!(matches!(
            f.take_insert(),
            Some(Record::Insert { handle: 1, .. })
        ));
        assert_eq!(f.queued_inserts().collect::<Vec<_>>(), vec![(2, 102)]);
        assert!(matches!(
            f.take_insert(),
            Some(Record::Insert { handle: 2, .. })
        ));
        assert!(f.queued_inserts().next().is_none());
        assert!(matches!(f.recv().unwrap(), Record::NoMoreInserts { .. }));
    }
}
