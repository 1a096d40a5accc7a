//! `mpirun -n K ibnet run ... --distributed` (cargo feature `mpi`): the
//! fabric's logical processes as MPI ranks give the report of one
//! process, byte for byte (engine/distributed.rs), for K = 1, 2 and 4
//! (oversubscribed on a small machine), closed loops included; a rank
//! that dies ends the run with a message naming it, and leaves nothing
//! behind. scripts/test runs these with `--features mpi` (they need Open
//! MPI's mpirun).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One MPI job at a time: ranks that share the cores with another job
/// wait for the scheduler at every round.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mpirun(k: usize) -> Command {
    assert!(
        Command::new("mpirun").arg("--version").output().is_ok(),
        "mpirun is missing: Open MPI is needed (scripts/install-deps installs it)"
    );
    let mut c = Command::new("mpirun");
    // (as root too, and more ranks than cores)
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["--oversubscribe", "-n", &k.to_string()])
        .arg(env!("CARGO_BIN_EXE_ibnet"));
    c
}

fn golden(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn run(k: usize, args: &str) -> Output {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    mpirun(k)
        .arg("run")
        .args(args.split_whitespace())
        .args(["--json", "--latencies", "--no-wall-time", "--distributed"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run mpirun")
}

#[test]
fn ranks_give_the_golden_reports() {
    let torus =
        "--preset thesis-ddr --topology torus:4x4 --set max_vl=3 --traffic shift:1 --until 50us";
    for (name, args) in [
        // the reference's FIFO order and the local one
        ("torus_4x4", torus.to_string()),
        ("torus_4x4_local", format!("{torus} --set event_order=local")),
        // congestion control
        (
            "incast_cc",
            "--preset hcyang99 --topology H8_S1 --traffic param:1=8,2=8,3=8,4=8,5=8,6=8,7=8 --until 300us"
                .to_string(),
        ),
        // a closed loop: every rank drives it alike
        // (engine/distributed_drive.rs)
        (
            "dissemination",
            "--preset thesis-ddr --topology H8_S6 --set start_stat_col_ns=0 --traffic dissemination:1024:10"
                .to_string(),
        ),
    ] {
        for k in [1, 2, 4] {
            let out = run(k, &args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{name}, {k} ranks: {err}");
            assert!(
                out.stdout == golden(name).as_bytes(),
                "{name}, {k} ranks: the report differs from the golden one"
            );
            // rank 0 alone prints the partition
            assert_eq!(
                err.matches(&format!("{k} logical processes on {k} MPI ranks"))
                    .count(),
                1,
                "{err}"
            );
        }
    }
}

#[test]
fn a_partition_file_and_the_run_info() {
    // every switch of the 4x4 torus by its row: rows 0-1 and 2-3
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rows.txt");
    let mut text = String::from("# switch process\n");
    for r in 0..4 {
        for c in 0..4 {
            text += &format!("sw_{r}_{c} {}\n", r / 2);
        }
    }
    std::fs::write(&file, text).unwrap();
    let args = format!(
        "--preset thesis-ddr --topology torus:4x4 --set max_vl=3 --traffic shift:1 --until 50us --partition {}",
        file.display()
    );
    let out = run(2, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("as ") && err.contains("rows.txt gives them"),
        "{err}"
    );
    assert!(out.stdout == golden("torus_4x4").as_bytes());
    // with the wall time, the run info says how it ran
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = mpirun(2)
        .args([
            "run",
            "--topology",
            "torus:4x4",
            "--set",
            "max_vl=3",
            "--traffic",
            "shift:1",
        ])
        .args(["--until", "20us", "--json", "--distributed"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["run"]["mpi_ranks"], 2);
    assert_eq!(v["run"]["threads"], 2);
    assert!(v["run"]["sync_rounds"].as_u64().unwrap() > 100);
    assert!(v["run"]["crossings"].as_u64().unwrap() > 100);
    let peaks = v["run"]["peak_rss_mb_per_rank"].as_array().unwrap();
    assert_eq!(peaks.len(), 2);
    assert!(peaks.iter().all(|m| m.as_f64().unwrap() > 1.0), "{peaks:?}");
}

/// `--link-stats`, `--heatmap` and `--messages-csv` on ranks: the files of
/// one process, byte for byte, in both orders, open and closed loop;
/// rank 0 alone writes them (the other ranks' counters reach it at every
/// window end).
#[test]
fn link_statistics_on_ranks_are_one_processs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for (traffic, extra) in [
        ("shift:3 --until 20us", "--messages-csv"),
        ("dissemination:65536:2", ""),
    ] {
        for order in ["fifo", "local"] {
            let args = |tag: &str| {
                let mut a = format!(
                    "--preset qdr --topology fattree:8 --traffic {traffic} --set event_order={order} \
                     --window 3us --link-stats {d}/{tag}.csv --heatmap {d}/{tag}.png"
                );
                if !extra.is_empty() {
                    a += &format!(" {extra} {d}/{tag}_m.csv");
                }
                a
            };
            let one = std::process::Command::new(env!("CARGO_BIN_EXE_ibnet"))
                .arg("run")
                .args(args("one").split_whitespace())
                .args(["--json", "--latencies", "--no-wall-time"])
                .output()
                .unwrap();
            assert!(one.status.success());
            for k in [2, 3] {
                let out = run(k, &args("ranks"));
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "{err}");
                assert!(
                    out.stdout == one.stdout,
                    "{traffic} {order} on {k}: the report"
                );
                let same = |ext: &str| {
                    let a = std::fs::read(format!("{d}/one{ext}")).unwrap();
                    let b = std::fs::read(format!("{d}/ranks{ext}")).unwrap();
                    assert!(a.len() > 1000 && a == b, "{traffic} {order} on {k}: {ext}");
                };
                same(".csv");
                same(".png");
                if !extra.is_empty() {
                    same("_m.csv");
                }
            }
        }
    }
}

/// The process IDs of `pid`'s children.
fn children(pid: u32) -> Vec<u32> {
    let out = Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// Open MPI's shared-memory segments in /dev/shm.
fn segments() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("vader_segment") || n.contains("ompi"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_rank_that_dies_ends_every_rank() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = segments();
    let mut child = mpirun(2)
        .args(["run", "--topology", "fattree:8", "--traffic", "shift:1"])
        .args(["--until", "2ms", "--json", "--distributed"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mpirun");
    // (rank 0 prints the partition once every rank has its process)
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("links join two processes") {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("the run ended before it started: {seen}");
        }
        seen += &line;
    }
    let ranks = children(child.id());
    assert_eq!(ranks.len(), 2, "{ranks:?}");
    let victim = *ranks.iter().max().unwrap();
    Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the other rank did not end within 60 s of the kill");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(!status.success());
    assert!(
        rest.contains("process rank") && rest.contains("signal 9"),
        "{rest}"
    );
    // no rank left running, no shared memory left behind
    assert!(children(child.id()).is_empty());
    std::thread::sleep(Duration::from_millis(200));
    let after: Vec<String> = segments()
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect();
    assert!(after.is_empty(), "left in /dev/shm: {after:?}");
}

#[test]
fn distributed_refuses_what_it_cannot_run() {
    for (args, want) in [
        ("--threads 2", "leave out --threads"),
        ("--traffic put:4096:1:2", "one-sided operations (put, get)"),
    ] {
        let out = run(2, &format!("--topology fattree:4 {args}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(want), "{args}: {err}");
        // every rank that says why (mpirun may end the others first):
        // rank 0 plainly, the others with their rank
        let said: Vec<&str> = err.lines().filter(|l| l.contains(want)).collect();
        assert!(!said.is_empty(), "{err}");
        assert!(
            said.iter()
                .all(|l| l.starts_with("ibnet: error: ") || l.starts_with("ibnet: rank 1: error: ")),
            "{err}"
        );
    }
}
