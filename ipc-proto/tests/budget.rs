//! The per-user message-queue budget (RLIMIT_MSGQUEUE, 819200 bytes by
//! default): the default queue geometry lets at least 16 sessions live at
//! once, and running out is a clear, distinct error (exit code 3).

mod common;
use common::*;
use ipc_proto::session::{msgqueue_rlimit, DEFAULT_MESSAGE_SIZE, QUEUE_DEPTH};
use ipc_proto::{
    create_fabric, open_scheduler, FabricSession, ProtoError, Protocol, QueueGeometry,
    EXIT_RESOURCE,
};
use std::time::Duration;

#[test]
fn default_geometry_fits_16_query_sessions_in_the_default_budget() {
    let g = QueueGeometry::default();
    assert_eq!(
        (g.depth, g.message_size),
        (QUEUE_DEPTH, DEFAULT_MESSAGE_SIZE)
    );
    assert_eq!((g.depth, g.message_size), (10, 1024));
    // What Linux charges: maxmsg * (msgsize + 96) bytes per queue.
    assert_eq!(g.budget_bytes(), 11_200);
    assert_eq!(QueueGeometry::largest().budget_bytes(), 82_880);
    // Query sessions have 3 queues, notify sessions 2.
    assert_eq!(819_200 / (3 * g.budget_bytes()), 24);
    assert_eq!(819_200 / (2 * g.budget_bytes()), 36);
    assert_eq!(819_200 / (2 * QueueGeometry::largest().budget_bytes()), 4);
}

#[test]
fn sixteen_concurrent_sessions_fit_and_exhaustion_is_a_clear_resource_error() {
    let _l = mq_lock();
    let limit = msgqueue_rlimit();
    let mut sessions: Vec<(FabricSession, String)> = Vec::new();
    let err = loop {
        let key = unique_key("budget");
        match create_fabric(&key, Protocol::Query, 2) {
            Ok(s) => sessions.push((s, key)),
            Err(e) => break e,
        }
        assert!(sessions.len() < 10_000, "no limit reached");
    };
    let n = sessions.len();
    // Everything attached and usable: a scheduler opens each session.
    for (_, key) in sessions.iter().take(16) {
        let s = open_scheduler(key, Duration::from_secs(2)).unwrap();
        assert_eq!(s.protocol(), Protocol::Query);
    }
    drop(sessions);
    assert!(
        n >= 16,
        "only {n} query sessions fit RLIMIT_MSGQUEUE = {limit}"
    );
    if limit == 819_200 {
        // Nothing else of this user holds queues on a quiet machine: 24.
        assert!(n <= 24, "{n} sessions of 3 x 11200 bytes in 819200 bytes?");
    }
    match &err {
        ProtoError::QueueBudget { limit: l, .. } => assert_eq!(*l, limit),
        e => panic!("expected QueueBudget, got {e}"),
    }
    assert!(err.is_resource_exhausted());
    assert_eq!(err.exit_code(), EXIT_RESOURCE);
    assert_eq!(EXIT_RESOURCE, 3);
    let m = err.to_string();
    for part in [
        "RLIMIT_MSGQUEUE",
        "--transport shm",
        "ipc-proto cleanup",
        &limit.to_string(),
    ] {
        assert!(m.contains(part), "{m} lacks {part}");
    }
}
