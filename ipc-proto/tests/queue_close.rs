//! Queues are closed when a session ends. nix's `MqdT` does not close
//! itself, and an unlinked queue stays charged against the per-user
//! RLIMIT_MSGQUEUE budget (about 9 default queues) while a descriptor is
//! open: a process running sessions one after the other (the conformance
//! checker runs 12) that leaked them would run out after about 4.

use ipc_proto::{create_fabric, open_scheduler, ProtoError, Protocol, Record, Time};
use std::time::{Duration, Instant};

#[test]
fn sequential_sessions_do_not_exhaust_the_queue_budget() {
    for i in 0..12 {
        let key = format!("qclose-{}-{i}", std::process::id());
        // Other tests of this user may hold part of the budget for a
        // moment: wait for it (a leak would never give it back).
        let start = Instant::now();
        let fab = loop {
            match create_fabric(&key, Protocol::Query, 2) {
                Err(ProtoError::QueueBudget { .. })
                    if start.elapsed() < Duration::from_secs(30) =>
                {
                    std::thread::sleep(Duration::from_millis(50))
                }
                r => break r.unwrap_or_else(|e| panic!("session {i}: {e}")),
            }
        };
        let sched = open_scheduler(&key, Duration::from_secs(5)).unwrap();
        let mut s = sched.connect().unwrap();
        let mut f = fab.connect().unwrap();
        s.send(Record::Finish { time: Time(i) }).unwrap();
        s.flush().unwrap();
        assert_eq!(f.recv().unwrap(), Record::Finish { time: Time(i) });
    }
}
