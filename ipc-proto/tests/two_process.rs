//! Two real processes over POSIX message queues: the helper binary is the
//! peer. 100,000 records each way, then the peer killed mid-run.

mod common;
use common::*;
use ipc_proto::{open_scheduler, selftest, ProtoError, Protocol, Record, Role};
use std::time::{Duration, Instant};

/// Both sides send all 100,000 records before reading anything; the
/// child is the fabric with default geometry: message queues of 10 x 1024
/// bytes (16 records per message) or shared-memory rings of 32 x 8192 bytes
/// (128 records per message).
fn hundred_thousand_records_each_way(transport: &str, per_message: u64) {
    let key = unique_key("p100k");
    let child = spawn_peer(&[
        "--role",
        "fabric",
        "--key",
        &key,
        "--records",
        "100000",
        "--transport",
        transport,
    ]);
    let s = open_scheduler(&key, Duration::from_secs(5)).unwrap();
    assert_eq!(s.protocol(), Protocol::Notify);
    assert_eq!(s.transport().to_string(), transport);
    let mut s = s.connect().unwrap();
    assert_eq!(
        selftest::scheduler_stream(&mut s, 100_000).unwrap(),
        100_000
    );
    let st = s.stats();
    // The Hello alone (Channel::new flushes it), then 100,000 Arrivals +
    // 10,000 batch ends, `per_message` per message.
    assert_eq!(st.records_received, 110_001);
    assert_eq!(st.messages_received, 1 + 110_000u64.div_ceil(per_message));
    drop(s);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(leftovers(&key).is_empty());
}

#[test]
fn hundred_thousand_records_each_way_between_processes() {
    let _l = mq_lock();
    hundred_thousand_records_each_way("mq", 16);
}

#[test]
fn hundred_thousand_records_each_way_between_processes_over_shm() {
    hundred_thousand_records_each_way("shm", 128);
}

#[test]
fn query_roundtrips_between_processes() {
    let _l = mq_lock();
    let key = unique_key("pq");
    let fab = create_fabric_retry(&key, Protocol::Query, 4);
    let child = spawn_peer(&[
        "--role",
        "scheduler",
        "--key",
        &key,
        "--protocol",
        "query",
        "--records",
        "5000",
    ]);
    let mut f = fab.connect().unwrap();
    assert_eq!(selftest::fabric_answer(&mut f).unwrap(), 5000);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(f);
    assert!(leftovers(&key).is_empty());
}

fn assert_peer_died_quickly(
    ch: &mut ipc_proto::Channel,
    child: &mut std::process::Child,
    peer: Role,
) {
    // Receive a while, then kill the peer mid-stream (not reaped yet: a
    // zombie must count as dead).
    for _ in 0..5_000 {
        ch.recv().unwrap();
    }
    child.kill().unwrap();
    let t = Instant::now();
    let err = loop {
        match ch.recv() {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    let el = t.elapsed();
    match err {
        ProtoError::PeerDied { peer: p, pid } => {
            assert_eq!(p, peer);
            assert_eq!(pid, child.id());
        }
        e => panic!("expected PeerDied, got {e}"),
    }
    assert!(el < Duration::from_secs(2), "PeerDied after {el:?}");
    assert!(err_message_ok(peer));
    let _ = child.wait();
}

fn err_message_ok(peer: Role) -> bool {
    ProtoError::PeerDied { peer, pid: 1 }
        .to_string()
        .contains("died")
}

#[test]
fn fabric_killed_mid_run_scheduler_gets_peer_died() {
    let _l = mq_lock();
    let key = unique_key("kfab");
    let mut child = spawn_peer(&["--role", "fabric", "--key", &key, "--records", "1000000000"]);
    let mut s = open_scheduler(&key, Duration::from_secs(5))
        .unwrap()
        .connect()
        .unwrap();
    assert_peer_died_quickly(&mut s, &mut child, Role::Fabric);
    // The survivor removed every name at once (before being dropped).
    assert!(leftovers(&key).is_empty());
    drop(s);
}

#[test]
fn scheduler_killed_mid_run_fabric_gets_peer_died() {
    let _l = mq_lock();
    let key = unique_key("ksch");
    let fab = create_fabric_retry(&key, Protocol::Notify, 2);
    let mut child = spawn_peer(&[
        "--role",
        "scheduler",
        "--key",
        &key,
        "--records",
        "1000000000",
    ]);
    let mut f = fab.connect().unwrap();
    assert_peer_died_quickly(&mut f, &mut child, Role::Scheduler);
    assert!(leftovers(&key).is_empty());
    // Nothing more arrives; sends fail too.
    let e = f.recv().unwrap_err();
    assert!(matches!(e, ProtoError::PeerDied { .. }), "{e}");
    let _ = f.send(Record::error(ipc_proto::ErrorCode::Abort, "bye"));
}

#[test]
fn peer_killed_while_we_are_blocked_on_a_full_queue() {
    let _l = mq_lock();
    let key = unique_key("kfull");
    let fab = create_fabric_retry(&key, Protocol::Notify, 2);
    // The scheduler attaches and then never reads.
    let mut child = spawn_peer(&["--role", "scheduler", "--key", &key, "--hold"]);
    let mut f = fab.connect().unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap();
        let t = Instant::now();
        child.wait().unwrap();
        t
    });
    // Two queue slots of 128 records: this blocks long before 1,000,000.
    let mut err = None;
    for i in 0..1_000_000u64 {
        if let Err(e) = f.send(Record::Arrival {
            handle: i,
            time: ipc_proto::Time(i),
        }) {
            err = Some(e);
            break;
        }
    }
    let killed_at = killer.join().unwrap();
    match err {
        Some(ProtoError::PeerDied {
            peer: Role::Scheduler,
            ..
        }) => {}
        other => panic!("expected PeerDied while sending, got {other:?}"),
    }
    assert!(killed_at.elapsed() < Duration::from_secs(2));
    assert!(leftovers(&key).is_empty());
}
