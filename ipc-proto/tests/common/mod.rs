#![allow(dead_code)]
use ipc_proto::{
    create_fabric_with, object_exists, FabricSession, ProtoError, Protocol, QueueGeometry, Record,
    SessionKey,
};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The per-user message-queue budget (RLIMIT_MSGQUEUE = 819200 bytes)
/// holds only about 9 queues of 10 x 8192 bytes, shared by every process
/// of the user: tests that create queues take this lock so they do not
/// starve each other.
static MQ_LOCK: Mutex<()> = Mutex::new(());

pub fn mq_lock() -> MutexGuard<'static, ()> {
    MQ_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// create_fabric, retrying for up to 20 s while other processes of this
/// user hold the queue budget.
/// Tests use shallow queues (2 messages): a fraction of the budget, and
/// full queues happen all the time.
pub fn create_fabric_retry(key: &str, protocol: Protocol, endpoints: u32) -> FabricSession {
    let start = Instant::now();
    let g = QueueGeometry {
        depth: 2,
        message_size: 8192,
    };
    loop {
        match create_fabric_with(key, protocol, endpoints, g) {
            Ok(s) => return s,
            Err(ProtoError::QueueBudget { .. }) if start.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("create_fabric({key}): {e}"),
        }
    }
}
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A key unique to this test process and call.
pub fn unique_key(tag: &str) -> String {
    format!(
        "ipt{}-{}-{tag}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Names of `key` that still exist (probed with mq_open / shm_open).
pub fn leftovers(key: &str) -> Vec<String> {
    SessionKey::new(key)
        .unwrap()
        .all_object_names()
        .into_iter()
        .filter(|n| object_exists(n).unwrap())
        .collect()
}

/// Start the helper binary as a test peer and wait for its READY line.
pub fn spawn_peer(args: &[&str]) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipc-proto"))
        .arg("test-peer")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ipc-proto test-peer");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    if line.trim() != "READY" {
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        panic!(
            "peer did not get ready: stdout {line:?}, stderr {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Keep reading stdout in the background so the child never blocks on it.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    });
    child
}

/// Sends `records` on `from`, flushes, and receives them on `to`: the same
/// records in the same order.
pub fn pass_all(from: &mut ipc_proto::Channel, to: &mut ipc_proto::Channel, records: &[Record]) {
    for r in records {
        from.send(*r).unwrap();
    }
    from.flush().unwrap();
    for r in records {
        assert_eq!(to.recv().unwrap(), *r);
    }
}
