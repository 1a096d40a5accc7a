//! A peer stopped with SIGSTOP is noticed through its heartbeat in the
//! control segment (IBCOSIM_STALL_TIMEOUT, 1 s here), on both transports.
//! Its own test binary: the environment variable is process-wide.

mod common;
use common::*;
use ipc_proto::{create_fabric_opts, FabricOptions, ProtoError, Protocol, Role, TransportKind};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::time::{Duration, Instant};

fn stopped_scheduler_is_stalled(transport: TransportKind) {
    let key = unique_key("stall");
    let opts = FabricOptions {
        transport,
        ..FabricOptions::default()
    };
    let fab = create_fabric_opts(&key, Protocol::Notify, 4, &opts).unwrap();
    // The peer attaches, prints READY and then streams far more than it
    // will ever get answers for; stop it right away.
    let mut child = spawn_peer(&[
        "--role",
        "scheduler",
        "--key",
        &key,
        "--records",
        "100000000",
    ]);
    let pid = child.id();
    fab.wait_for_scheduler(Duration::from_secs(10)).unwrap();
    let mut f = fab.connect().unwrap();
    for _ in 0..100 {
        f.recv().unwrap();
    }
    kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).unwrap();
    let t = Instant::now();
    let err = loop {
        match f.recv() {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    let took = t.elapsed();
    match &err {
        ProtoError::PeerStalled { peer, pid: p, lag } => {
            assert_eq!(*peer, Role::Scheduler);
            assert_eq!(*p, pid);
            assert!(*lag > Duration::from_secs(1), "{lag:?}");
        }
        e => panic!("expected PeerStalled, got {e}"),
    }
    // 1 s limit + up to 0.1 s heartbeat period + 0.1 s liveness poll + the
    // records still queued before the stop.
    assert!(
        took > Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(err.to_string().contains("stopped responding"), "{err}");
    assert_eq!(err.exit_code(), 1);
    // The fatal error removed the objects at once.
    assert!(leftovers(&key).is_empty(), "{:?}", leftovers(&key));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn stopped_peer_is_noticed_through_its_heartbeat() {
    std::env::set_var("IBCOSIM_STALL_TIMEOUT", "1");
    stopped_scheduler_is_stalled(TransportKind::Shm);
    let _l = mq_lock();
    stopped_scheduler_is_stalled(TransportKind::Mq);
}
