//! Several jobs on one fabric through `scripts/cosim --job` (docs/jobs.md): the
//! two-process transport gets the jobs' placement as the fabric's rank map
//! (`loggopsim --print-map`), so it gives the same per-job times as the
//! one-piece fabric, which reads the placement in-process.

use crate::util::{bin, repo_root};
use serde_json::Value;
use std::process::Command;

const PINGPONG: &str = "num_ranks 2\nrank 0 {\ns: send 16000b to 1 tag 0\nr: recv 16000b from 1 tag 0\nr requires s\n}\nrank 1 {\nr: recv 16000b from 0 tag 0\ns: send 16000b to 0 tag 0\ns requires r\n}\n";
const EXCHANGE: &str = "num_ranks 2\nrank 0 {\ns: send 16000b to 1 tag 0\nr: recv 16000b from 1 tag 0\n}\nrank 1 {\ns: send 16000b to 0 tag 0\nr: recv 16000b from 0 tag 0\n}\n";

fn jobs_run(transport: &str, jp: &str, jx: &str) -> Value {
    let _lock = crate::util::ipc_lock();
    let o = Command::new("bash")
        .arg(repo_root().join("scripts/cosim"))
        .args([
            "-t",
            "H8_S2",
            "--transport",
            transport,
            "--job",
            jp,
            "--job",
            jx,
            "--json",
        ])
        .env("IBCOSIM_BIN_DIR", bin("loggopsim").parent().unwrap())
        .output()
        .expect("run scripts/cosim");
    assert!(
        o.status.success(),
        "{transport}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    v["scheduler"]["jobs"].clone()
}

#[test]
fn cosim_jobs_same_on_every_transport() {
    let d = tempfile::tempdir().unwrap();
    let pp = d.path().join("pp.goal");
    let x = d.path().join("x.goal");
    std::fs::write(&pp, PINGPONG).unwrap();
    std::fs::write(&x, EXCHANGE).unwrap();
    let jp = format!("{}:round-robin", pp.display());
    let jx = format!("{}:round-robin", x.display());
    let shm = jobs_run("shm", &jp, &jx);
    let one = jobs_run("onepiece", &jp, &jx);
    assert_eq!(shm[0]["hcas"], serde_json::json!(["H_1", "H_5"]));
    assert_eq!(shm[1]["hcas"], serde_json::json!(["H_2", "H_6"]));
    for j in 0..2 {
        assert_eq!(
            shm[j]["finish_times_ps"], one[j]["finish_times_ps"],
            "job {j}"
        );
    }
    // The placement reached the fabric process: with the default map
    // (ranks on H_1..H_4) the ping-pong would stay on SW_1 and finish in
    // 17235600 ps; across the shared link it takes longer (docs/jobs.md).
    assert!(shm[0]["finish_time_ps"].as_u64().unwrap() > 17235600);
}
