//! The conformance checker's last resort: a fabric that creates its
//! session and then never reads blocks the checker's sends into the full
//! `.ins` queue (only a dead peer ends such a wait). The watchdog kills
//! the spawned peer after the stall limit and the scenario fails with a
//! reason instead of hanging.

use ipc_proto::conformance::{run, Options};
use ipc_proto::Role;
use std::time::{Duration, Instant};

#[test]
fn stuck_fabric_is_killed_and_reported() {
    let bin = env!("CARGO_BIN_EXE_ipc-proto");
    let o = Options {
        role: Role::Fabric,
        key: format!("cfw-{}", std::process::id()),
        // `test-peer --hold` creates the session and sleeps.
        spawn: Some(format!(
            "{bin} test-peer --role fabric --key {{key}} --protocol notify --depth 1 --hold"
        )),
        only: vec!["batching".into()],
        timeout: Duration::from_secs(5),
        stall_limit: Some(Duration::from_secs(2)),
        ..Options::default()
    };
    let start = Instant::now();
    let rep = run(&o, |_| {}).unwrap();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(rep.results.len(), 1, "{:?}", rep.results);
    let r = &rep.results[0];
    assert!(!r.pass);
    assert!(
        r.reason
            .starts_with("no progress within 2s, the checker killed the peer"),
        "{}",
        r.reason
    );
}
