#![allow(dead_code)]
use ipc_proto::{object_exists, SessionKey};
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
