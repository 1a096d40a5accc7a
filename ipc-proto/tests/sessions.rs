//! Session setup, control segment, readiness, versions, cleanup.

mod common;
use common::*;
use ipc_proto::control::{offset, SEGMENT_MAGIC};
use ipc_proto::{
    cleanup, create_fabric, open_scheduler, ProtoError, Protocol, Role, DEFAULT_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
};
use std::time::{Duration, Instant};

#[test]
fn segment_layout_is_frozen() {
    let _l = mq_lock();
    let key = unique_key("seg");
    let fab = create_fabric_retry(&key, Protocol::Query, 648);
    let h = fab.segment().header_bytes();
    let le32 = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
    assert_eq!(&h[0..8], b"IBCOSCTL");
    assert_eq!(
        u64::from_le_bytes(h[0..8].try_into().unwrap()),
        SEGMENT_MAGIC
    );
    assert_eq!(le32(offset::VERSION), DEFAULT_PROTOCOL_VERSION);
    assert_eq!(le32(offset::PROTOCOL), 0);
    assert_eq!(le32(offset::ENDPOINTS), 648);
    assert_eq!(le32(offset::READY), 1);
    assert_eq!(le32(offset::FABRIC_PID), std::process::id());
    assert_eq!(le32(offset::SCHEDULER_PID), 0);
    assert_eq!(le32(offset::RECORD_SIZE), 64);
    assert_eq!(le32(offset::MESSAGE_SIZE), 8192);
    assert_eq!(le32(offset::QUEUE_DEPTH), 2);
    assert_eq!(
        [
            offset::VERSION,
            offset::PROTOCOL,
            offset::ENDPOINTS,
            offset::READY,
            offset::FABRIC_PID,
            offset::SCHEDULER_PID,
            offset::RECORD_SIZE,
            offset::MESSAGE_SIZE,
            offset::QUEUE_DEPTH
        ],
        [8, 12, 16, 20, 24, 28, 32, 36, 40]
    );
    let s = open_scheduler(&key, Duration::from_secs(1)).unwrap();
    assert_eq!(s.protocol(), Protocol::Query);
    assert_eq!(s.endpoints(), 648);
    assert_eq!(s.fabric_pid(), std::process::id());
    assert_eq!(
        fab.wait_for_scheduler(Duration::from_secs(1)).unwrap(),
        std::process::id()
    );
    // A second scheduler is refused.
    let e = open_scheduler(&key, Duration::from_secs(1)).err().unwrap();
    assert!(e.to_string().contains("already has a scheduler"), "{e}");
    // Creating the same key again is refused and does not harm the session.
    match create_fabric(&key, Protocol::Query, 1) {
        Err(ProtoError::SessionExists { name, .. }) => assert!(name.ends_with(".ctl")),
        other => panic!("{:?}", other.err()),
    }
    assert_eq!(leftovers(&key).len(), 4);
    drop(s);
    drop(fab);
    assert!(leftovers(&key).is_empty());
}

#[test]
fn readiness_wait_times_out_clearly_without_fabric() {
    let key = unique_key("nofab");
    let t = Instant::now();
    let e = open_scheduler(&key, Duration::from_millis(300))
        .err()
        .unwrap();
    let el = t.elapsed();
    assert!(
        el >= Duration::from_millis(300) && el < Duration::from_secs(2),
        "{el:?}"
    );
    match &e {
        ProtoError::TimedOut { what, .. } => {
            assert!(
                what.contains(&key) && what.contains("does not exist"),
                "{what}"
            )
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("timed out after 300ms"), "{e}");
}

#[test]
fn fabric_waiting_for_scheduler_times_out() {
    let _l = mq_lock();
    let key = unique_key("nosched");
    let fab = create_fabric_retry(&key, Protocol::Notify, 1);
    let e = fab
        .wait_for_scheduler(Duration::from_millis(100))
        .unwrap_err();
    assert!(e.to_string().contains("a scheduler to attach"), "{e}");
}

#[test]
fn version_mismatch_in_segment_is_detected() {
    let _l = mq_lock();
    let key = unique_key("ver");
    let fab = create_fabric_retry(&key, Protocol::Notify, 2);
    fab.segment().debug_set_version(PROTOCOL_VERSION + 1);
    match open_scheduler(&key, Duration::from_secs(1)).err().unwrap() {
        ProtoError::VersionMismatch { ours, theirs } => {
            assert_eq!((ours, theirs), (PROTOCOL_VERSION, PROTOCOL_VERSION + 1))
        }
        e => panic!("{e}"),
    }
    // The failed scheduler did not attach and removed nothing.
    assert_eq!(fab.segment().scheduler_pid(), 0);
    assert_eq!(leftovers(&key).len(), 3);
}

#[test]
fn bad_keys_are_rejected() {
    for k in ["", "a b", "x/y", "dot.ted", &"k".repeat(65)] {
        assert!(
            matches!(
                create_fabric(k, Protocol::Query, 1),
                Err(ProtoError::BadKey { .. })
            ),
            "{k:?}"
        );
        assert!(matches!(cleanup(k), Err(ProtoError::BadKey { .. })));
    }
}

#[test]
fn stale_objects_of_a_killed_run_are_cleaned_and_do_not_break_a_new_run() {
    let _l = mq_lock();
    let key = unique_key("stale");
    // A fabric that is SIGKILLed leaves its objects behind.
    let mut child = spawn_peer(&["--role", "fabric", "--key", &key, "--depth", "2", "--hold"]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        leftovers(&key).len(),
        3,
        "killed fabric should leave .ins .arr .ctl"
    );
    // A new fabric is refused with a message naming the cure...
    let e = create_fabric(&key, Protocol::Notify, 1).err().unwrap();
    assert!(e.to_string().contains("ipc-proto cleanup"), "{e}");
    // ...and a scheduler sees the segment's fabric is dead.
    assert!(matches!(
        open_scheduler(&key, Duration::from_millis(500))
            .err()
            .unwrap(),
        ProtoError::PeerDied {
            peer: Role::Fabric,
            ..
        }
    ));
    let mut removed = cleanup(&key).unwrap();
    removed.sort();
    assert_eq!(
        removed,
        [
            format!("/{key}.arr"),
            format!("/{key}.ctl"),
            format!("/{key}.ins")
        ]
    );
    assert!(leftovers(&key).is_empty());
    assert!(
        cleanup(&key).unwrap().is_empty(),
        "cleanup of nothing is fine"
    );
    // A full new run on the same key.
    let fab = create_fabric_retry(&key, Protocol::Notify, 1);
    let s = open_scheduler(&key, Duration::from_secs(1)).unwrap();
    let mut f = fab.connect().unwrap();
    let mut s = s.connect().unwrap();
    let t = std::thread::spawn(move || ipc_proto::selftest::fabric_stream(&mut f, 1000).unwrap());
    assert_eq!(
        ipc_proto::selftest::scheduler_stream(&mut s, 1000).unwrap(),
        1000
    );
    assert_eq!(t.join().unwrap(), 1000);
    drop(s);
    assert!(leftovers(&key).is_empty());
}

#[test]
fn cleanup_subcommand_removes_leftovers() {
    let _l = mq_lock();
    let key = unique_key("cli");
    let mut child = spawn_peer(&[
        "--role",
        "fabric",
        "--key",
        &key,
        "--protocol",
        "query",
        "--depth",
        "2",
        "--hold",
    ]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(leftovers(&key).len(), 4);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ipc-proto"))
        .args(["cleanup", &key, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.len(), 4);
    assert!(leftovers(&key).is_empty());
}

fn signal_removes_objects(sig: nix::sys::signal::Signal, code: i32) {
    let _l = mq_lock();
    let key = unique_key("sig");
    let child = spawn_peer(&["--role", "fabric", "--key", &key, "--depth", "2", "--hold"]);
    assert_eq!(leftovers(&key).len(), 3);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(leftovers(&key).is_empty());
}

#[test]
fn sigterm_unlinks_and_exits_143() {
    signal_removes_objects(nix::sys::signal::Signal::SIGTERM, 143);
}

#[test]
fn sigint_unlinks_and_exits_130() {
    signal_removes_objects(nix::sys::signal::Signal::SIGINT, 130);
}
