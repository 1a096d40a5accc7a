//! The shared-memory transport: round trips, batching limits, full rings
//! (no deadlock), segment layout, clean-up on every path, peer death.

mod common;
use common::*;
use ipc_proto::control::{offset, SEGMENT_SIZE};
use ipc_proto::{
    create_fabric_opts, open_scheduler, open_scheduler_as, selftest, Channel, ErrorCode,
    FabricOptions, ProtoError, Protocol, Record, RingGeometry, Role, Time, TransportKind,
};
use std::time::{Duration, Instant};

fn shm_opts(slots: u32, slot_size: u32) -> FabricOptions {
    FabricOptions {
        transport: TransportKind::Shm,
        rings: RingGeometry { slots, slot_size },
        ..FabricOptions::default()
    }
}

/// (scheduler end, fabric end) over shared memory, both in this process.
fn shm_pair(key: &str, protocol: Protocol, opts: &FabricOptions) -> (Channel, Channel) {
    let fab = create_fabric_opts(key, protocol, 8, opts).unwrap();
    assert_eq!(fab.transport(), TransportKind::Shm);
    let s = open_scheduler(key, Duration::from_secs(2)).unwrap();
    assert_eq!(s.transport(), TransportKind::Shm);
    assert_eq!(s.protocol(), protocol);
    assert_eq!(s.endpoints(), 8);
    let s = s.connect().unwrap();
    let f = fab.connect().unwrap();
    assert_eq!(s.transport_name(), "shm");
    assert_eq!(f.transport_name(), "shm");
    (s, f)
}

/// [`shm_pair`] under the notify protocol, the shared-memory transport
/// asked for by name.
fn shm_notify_pair(key: &str) -> (Channel, Channel) {
    let opts = FabricOptions {
        transport: TransportKind::Shm,
        ..FabricOptions::default()
    };
    shm_pair(key, Protocol::Notify, &opts)
}

#[test]
fn segment_layout_of_an_shm_session() {
    let key = unique_key("shmlay");
    let opts = shm_opts(4, 1024);
    let fab = create_fabric_opts(&key, Protocol::Query, 3, &opts).unwrap();
    let seg = fab.segment();
    let h = seg.header_bytes();
    // The mq fields keep their meaning: message size = slot size, depth = slots.
    assert_eq!(u32::from_le_bytes(h[36..40].try_into().unwrap()), 1024);
    assert_eq!(u32::from_le_bytes(h[40..44].try_into().unwrap()), 4);
    assert_eq!(seg.transport_raw(), 1);
    assert_eq!(seg.ring_geometry(), (4, 1024));
    // 3 rings (query: ins, qry, rep) of 128 + 4 x (8 + 1024 -> 1088) bytes.
    let ring = 128 + 4 * 1088;
    assert_eq!(seg.len(), SEGMENT_SIZE + 3 * ring);
    assert_eq!(opts.rings.segment_size(Protocol::Query), 4096 + 3 * 4480);
    assert_eq!(opts.rings.segment_size(Protocol::Notify), 4096 + 2 * 4480);
    assert_eq!(offset::TRANSPORT, 64);
    // The size of /dev/shm/<key>.ctl is the whole segment.
    let st = std::fs::metadata(format!("/dev/shm/{key}.ctl")).unwrap();
    assert_eq!(st.len() as usize, 4096 + 3 * 4480);
    // No message queue was created.
    assert_eq!(leftovers(&key), [format!("/{key}.ctl")]);
    drop(fab);
    assert!(leftovers(&key).is_empty());
}

#[test]
fn every_record_roundtrips_over_shm() {
    let key = unique_key("shmrt");
    let (mut s, mut f) = shm_notify_pair(&key);
    let from_s = [
        Record::Insert {
            handle: 1,
            time: Time(1001),
            src: 1,
            dst: 2,
            size: 4096,
            tag: 7,
        },
        Record::error(ErrorCode::Abort, "scheduler gives up"),
        Record::Finish { time: Time::MAX },
    ];
    pass_all(&mut s, &mut f, &from_s);
    f.send(Record::Arrival {
        handle: 1,
        time: Time(2000),
    })
    .unwrap();
    f.send(Record::Arrival {
        handle: u64::MAX,
        time: Time(2000),
    })
    .unwrap();
    f.flush().unwrap();
    assert_eq!(
        s.recv().unwrap(),
        Record::Arrival {
            handle: 1,
            time: Time(2000)
        }
    );
    assert_eq!(
        s.recv().unwrap(),
        Record::Arrival {
            handle: u64::MAX,
            time: Time(2000)
        }
    );
    // One message carried both records (one flush).
    assert_eq!(f.stats().messages_sent, 2); // Hello + the two arrivals
    assert_eq!(s.stats().records_received, 3); // Hello + 2
    assert_eq!(s.peer_hello().unwrap().pid, std::process::id());
    drop(s);
    drop(f);
    assert!(leftovers(&key).is_empty());
}

#[test]
fn batching_follows_the_slot_size() {
    // 256-byte slots: 4 records per message.
    let key = unique_key("shmbat");
    let (mut s, mut f) = shm_pair(&key, Protocol::Notify, &shm_opts(8, 256));
    assert_eq!(s.records_per_message(), 4);
    for i in 0..10u64 {
        s.send(Record::Insert {
            handle: i,
            time: Time(i),
            src: 0,
            dst: 1,
            size: 1,
            tag: 0,
        })
        .unwrap();
    }
    s.flush().unwrap();
    for i in 0..10u64 {
        match f.recv().unwrap() {
            Record::Insert { handle, .. } => assert_eq!(handle, i),
            other => panic!("{other:?}"),
        }
    }
    // Hello (1 message) + 10 inserts in messages of 4, 4, 2.
    assert_eq!(s.stats().messages_sent, 4);
    assert_eq!(f.stats().messages_received, 4);
}

#[test]
fn query_roundtrips_over_shm_threads() {
    let key = unique_key("shmq");
    let (mut s, mut f) = shm_pair(&key, Protocol::Query, &shm_opts(2, 128));
    let t = std::thread::spawn(move || selftest::fabric_answer(&mut f).unwrap());
    selftest::scheduler_roundtrips(&mut s, 20_000, true).unwrap();
    assert_eq!(t.join().unwrap(), 20_000);
    drop(s);
    assert!(leftovers(&key).is_empty());
}

#[test]
fn no_deadlock_with_full_rings() {
    // Both sides push 50,000 records (25,000 messages of 2 records into
    // rings of 2 slots) before reading anything.
    let key = unique_key("shmdl");
    let (mut s, mut f) = shm_pair(&key, Protocol::Notify, &shm_opts(2, 128));
    let n = 50_000;
    let t = std::thread::spawn(move || selftest::fabric_stream(&mut f, n).unwrap());
    assert_eq!(selftest::scheduler_stream(&mut s, n).unwrap(), n);
    assert_eq!(t.join().unwrap(), n);
}

#[test]
fn bad_ring_geometry_is_refused_and_nothing_is_left() {
    let key = unique_key("shmbad");
    for (slots, size) in [(0, 8192), (4, 100), (4, 0), (2000, 64)] {
        let e = create_fabric_opts(&key, Protocol::Notify, 2, &shm_opts(slots, size))
            .err()
            .unwrap();
        assert!(e.to_string().contains("ring geometry"), "{e}");
        assert!(leftovers(&key).is_empty());
    }
}

#[test]
fn dead_scheduler_is_noticed_within_a_second_over_shm() {
    // The "scheduler" pid is a short-lived child: once it is gone the
    // fabric's blocking recv must fail with PeerDied.
    let key = unique_key("shmdead");
    let fab = create_fabric_opts(
        &key,
        Protocol::Notify,
        2,
        &FabricOptions {
            transport: TransportKind::Shm,
            ..FabricOptions::default()
        },
    )
    .unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("0.3")
        .spawn()
        .unwrap();
    let s = open_scheduler_as(&key, Duration::from_secs(2), child.id()).unwrap();
    let mut s = s.connect().unwrap();
    let mut f = fab.connect().unwrap();
    s.send(Record::Finish { time: Time(5) }).unwrap();
    s.flush().unwrap();
    assert_eq!(f.recv().unwrap(), Record::Finish { time: Time(5) });
    child.wait().unwrap();
    let t = Instant::now();
    match f.recv() {
        Err(ProtoError::PeerDied { peer, pid }) => {
            assert_eq!(peer, Role::Scheduler);
            assert_eq!(pid, child.id());
        }
        other => panic!("expected PeerDied, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // The fatal error removed the segment at once.
    assert!(leftovers(&key).is_empty());
    drop(s);
}

#[test]
fn wait_for_scheduler_gives_up_when_the_watched_pid_dies() {
    let key = unique_key("shmwatch");
    let fab = create_fabric_opts(&key, Protocol::Notify, 2, &shm_opts(2, 64)).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let t = Instant::now();
    let e = fab
        .wait_for_scheduler_watching(Duration::from_secs(30), Some(child.id()))
        .unwrap_err();
    assert!(
        matches!(
            e,
            ProtoError::PeerDied {
                peer: Role::Scheduler,
                ..
            }
        ),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

/// A side asleep for the answer to its request (waiting word 2) is not
/// woken when the peer consumes the request, only when the answer comes
/// (before, every consumed message rang the peer's doorbell if it slept:
/// one spurious wake-up per round trip).
#[test]
fn a_side_asleep_for_its_answer_is_not_woken_when_its_request_is_consumed() {
    use std::io::{Read, Seek, SeekFrom};
    let key = unique_key("shmwk");
    let (mut s, mut f) = shm_notify_pair(&key);
    // anything the fabric end still holds (its Hello) goes out now
    f.flush().unwrap();
    let path = format!("/dev/shm/{key}.ctl");
    // the control page as the other process sees it (tmpfs: same pages)
    let word = |off: usize| -> u32 {
        let mut file = std::fs::File::open(&path).unwrap();
        file.seek(SeekFrom::Start(off as u64)).unwrap();
        let mut b = [0u8; 4];
        file.read_exact(&mut b).unwrap();
        u32::from_le_bytes(b)
    };
    let ins = Record::Insert {
        handle: 1,
        time: Time(1000),
        src: 0,
        dst: 1,
        size: 8,
        tag: 0,
    };
    let arr = Record::Arrival {
        handle: 1,
        time: Time(5000),
    };
    let t = std::thread::spawn(move || {
        s.send(ins).unwrap();
        s.flush().unwrap();
        let r = s.recv().unwrap();
        (s, r)
    });
    // The scheduler polls (up to the 1 ms spin budget), then sleeps for
    // incoming messages only.
    let deadline = Instant::now() + Duration::from_secs(10);
    while word(offset::SCHED_WAITING) != 2 {
        assert!(
            Instant::now() < deadline,
            "the scheduler never slept on its doorbell (waiting word {})",
            word(offset::SCHED_WAITING)
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    let bell = word(offset::SCHED_DOORBELL);
    assert_eq!(f.recv().unwrap(), ins);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        word(offset::SCHED_DOORBELL),
        bell,
        "consuming the scheduler's request rang its doorbell"
    );
    f.send(arr).unwrap();
    f.flush().unwrap();
    let (s, r) = t.join().unwrap();
    assert_eq!(r, arr);
    drop(s);
    drop(f);
    assert!(leftovers(&key).is_empty());
}
