//! The README's quick start on a fresh clone: `scripts/cosim` with no
//! arguments runs the built-in example (examples/pingpong.goal) from the
//! repository alone, without `../shared` beside it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::util::{bin, host_times_ps, ipc_lock, repo_copy, run_with_timeout, stderr, stdout};

/// The built-in example's result on H8_S6 with the thesis-ddr preset, notify
/// protocol, L=o=g=G=O=0: both ranks finish together, when rank 0 has
/// received the tenth answer.
const PINGPONG_FINISH_PS: u64 = 4_341_988_000;

/// The fabric's line "sinks: ... network latency mean M ps, min A ps, max B ps".
fn latency_min_max_ps(out: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find(|l| l.starts_with("sinks:"))
        .unwrap_or_else(|| panic!("no 'sinks:' line in\n{out}"));
    let value = |key: &str| -> u64 {
        let at = line
            .find(key)
            .unwrap_or_else(|| panic!("no '{key}' in {line}"));
        let mut toks = line[at + key.len()..].split_whitespace();
        let (n, unit) = (toks.next().unwrap_or(""), toks.next().unwrap_or(""));
        assert!(unit.starts_with("ps"), "{key}: unit '{unit}' in {line}");
        n.parse()
            .unwrap_or_else(|e| panic!("{key}: '{n}': {e} in {line}"))
    };
    (value(" min "), value(" max "))
}

#[test]
fn cosim_without_arguments_runs_from_a_fresh_clone() {
    let copy = repo_copy();
    let root = copy.path().join("repo");
    assert!(
        !root.join("..").join("shared").exists(),
        "the copy must have no ../shared beside it"
    );
    assert!(root.join("examples/pingpong.goal").is_file());
    let bindir = bin("loggopsim").parent().unwrap().to_path_buf();
    bin("ibnet");
    bin("ipc-proto");

    let _ipc = ipc_lock();
    let out = run_with_timeout(
        Command::new("bash")
            .arg(root.join("scripts/cosim"))
            // From somewhere else than the repository: the default must not
            // depend on the working directory either.
            .current_dir(copy.path())
            .env("IBCOSIM_BIN_DIR", &bindir),
        Duration::from_secs(120),
    );
    let (o, e) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "scripts/cosim failed\n{o}\n{e}");

    // The scheduler: both ranks finish at the golden time.
    assert_eq!(
        host_times_ps(&o),
        vec![PINGPONG_FINISH_PS, PINGPONG_FINISH_PS],
        "{o}"
    );
    // The fabric: 2 ranks of the example on the 8-host fat tree, 20
    // messages of 400000 B (10 round trips), all delivered.
    assert!(o.contains("fabric: topology H8_S6, 8 HCAs"), "{o}");
    assert!(o.contains("protocol notify"), "{o}");
    assert!(
        o.contains("20 messages injected, 20 completed, 0 in flight"),
        "{o}"
    );
    assert!(o.contains("protocol: 20 inserts"), "{o}");
    assert!(o.contains("sinks: 2 HCAs received 20 messages"), "{o}");
    // Consistency: the 20 messages travel one after another and rank 1
    // computes 10 us per round, so the run lasts at least 20 minimal
    // network latencies plus 100 us, and at most 20 maximal ones plus
    // 100 us plus the hosts' part (send overheads at zero: a little).
    let (min, max) = latency_min_max_ps(&o);
    assert!(min > 200_000_000, "400000 B at DDR 4x take > 200 us: {min}");
    assert!(
        20 * min + 100_000_000 <= PINGPONG_FINISH_PS,
        "min latency {min} ps"
    );
    assert!(
        PINGPONG_FINISH_PS <= 20 * max + 100_000_000 + 20 * 10_000_000,
        "max latency {max} ps"
    );
}

/// The example on its own with LogGOPSim's default parameters, against the
/// hand-derived LogGOPS time.
#[test]
fn the_example_simulates_with_loggp_as_hand_derived() {
    let root = crate::util::repo_root();
    // The example is a valid schedule for the scheduler alone too.
    let out = crate::util::run(
        Command::new(bin("loggopsim"))
            .arg("-f")
            .arg(Path::new(&root).join("examples/pingpong.goal")),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // LogGP defaults L=2500 o=1500 g=1000 G=6 O=0 (ps): 20 messages of
    // 400000 B, each o + (s-1)G + L + o on the critical path, plus rank 1's
    // 10 calcs of 10 us (above S the rendezvous protocol delays only the
    // sender's completion, which no later operation waits for).
    let per_msg = 1500 + 399_999 * 6 + 2500 + 1500;
    assert_eq!(
        host_times_ps(&stdout(&out)).iter().max().copied(),
        Some(20 * per_msg + 10 * 10_000_000),
        "{}",
        stdout(&out)
    );
}

/// `scripts/test` first runs `scripts/install-deps`: afterwards Open MPI and
/// Python's posix_ipc are there (the tracer and Python-peer tests need
/// them), and a second run is quick and changes nothing (idempotent).
#[test]
fn install_deps_leaves_the_test_dependencies_in_place_and_is_idempotent() {
    let script = crate::util::repo_root().join("scripts/install-deps");
    let first = run_with_timeout(&mut Command::new(&script), Duration::from_secs(900));
    assert!(
        first.status.success(),
        "scripts/install-deps failed:\n{}",
        stderr(&first)
    );
    for tool in ["mpicc", "mpirun"] {
        let out = crate::util::run(Command::new("sh").args(["-c", &format!("command -v {tool}")]));
        assert!(
            out.status.success(),
            "{tool} is not on PATH after install-deps"
        );
    }
    let out = crate::util::run(Command::new("python3").args(["-c", "import posix_ipc"]));
    assert!(
        out.status.success(),
        "python3 cannot import posix_ipc after install-deps: {}",
        stderr(&out)
    );
    let t = std::time::Instant::now();
    let again = run_with_timeout(&mut Command::new(&script), Duration::from_secs(60));
    let took = t.elapsed();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).is_empty() && stdout(&again).is_empty(),
        "a second run must install nothing and say nothing:\n{}{}",
        stdout(&again),
        stderr(&again)
    );
    assert!(took < Duration::from_secs(10), "a second run took {took:?}");
}

/// `scripts/cosim` builds its release binaries when they are missing (the
/// tests above) and again when a Rust source or manifest is newer than
/// the last build (a pull, an edit), not otherwise. Checked with stand-in
/// binaries and a stand-in `cargo` that notes its calls, in a tree of its
/// own.
#[test]
fn cosim_rebuilds_when_the_sources_changed_and_only_then() {
    use crate::util::{set_mtime, write_exe as exe};
    use std::time::SystemTime;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let script = std::fs::read_to_string(crate::util::repo_root().join("scripts/cosim")).unwrap();
    exe(&root.join("scripts/cosim"), &script);
    for b in ["loggopsim", "ibnet"] {
        exe(&root.join("target/release").join(b), "#!/bin/sh\n");
    }
    exe(
        &root.join("target/release/cosim"),
        "#!/bin/sh\necho stand-in cosim \"$@\"\n",
    );
    let calls = dir.path().join("cargo-calls");
    exe(
        &dir.path().join("bin/cargo"),
        &format!("#!/bin/sh\necho \"$@\" >> {}\n", calls.display()),
    );
    let src = root.join("ibnet/src/lib.rs");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(&src, "// a source\n").unwrap();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    set_mtime(&src, hour_ago);
    let run = || {
        let path = format!(
            "{}:{}",
            dir.path().join("bin").display(),
            std::env::var("PATH").unwrap()
        );
        let out = Command::new("sh")
            .arg(root.join("scripts/cosim"))
            .arg("--x")
            .env("PATH", path)
            .env_remove("IBCOSIM_BIN_DIR")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), "stand-in cosim --x\n");
        (
            stderr(&out),
            std::fs::read_to_string(&calls).unwrap_or_default(),
        )
    };
    // up to date: no build
    let (err, cargo) = run();
    assert_eq!(cargo, "", "{err}");
    // a source newer than the build: one build, said on stderr
    set_mtime(&src, SystemTime::now() + Duration::from_secs(60));
    let (err, cargo) = run();
    assert!(
        err.contains("the sources changed since the binaries were built"),
        "{err}"
    );
    assert_eq!(
        cargo,
        "build --release -p cosim -p loggopsim -p ibnet --bins\n"
    );
    // built (the supervisor binary touched): the next run does not build
    set_mtime(&src, SystemTime::now() - Duration::from_secs(60));
    let (_, cargo) = run();
    assert_eq!(cargo.lines().count(), 1, "{cargo}");
}
