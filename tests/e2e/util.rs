//! Shared helpers: locate (and build, once) the workspace's binaries, find
//! the shared data directory, run commands with a timeout.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root (where the workspace Cargo.toml lives).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` next to the checkout (specs, thesis data, reference network).
pub fn shared_dir() -> PathBuf {
    repo_root().join("..").join("shared")
}

/// Path of a workspace binary, built once per test run with the same profile
/// as this test binary so the tests never run a stale executable.
pub fn bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/e2e-xxxx -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("profile dir")
        .to_path_buf();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(repo_root())
            .args(["build", "--workspace", "--bins"]);
        // target/debug is the dev profile; any other directory is named
        // after its profile (release, ci).
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some(profile) => {
                cmd.args(["--profile", profile]);
            }
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "building the workspace binaries failed");
    });
    let path = profile_dir.join(name);
    assert!(path.exists(), "binary {} not found", path.display());
    path
}

/// Run a command to completion and return its output (stdout, stderr, status).
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Serialises the tests that open POSIX message-queue sessions: only about
/// 9 default-size queues (RLIMIT_MSGQUEUE = 819200 bytes per user, root
/// included) exist at once on the whole machine, so concurrent sessions
/// fail with EMFILE. A process-wide mutex (test threads) plus an exclusive
/// flock on `target/ipc-sessions.lock` (other test processes of this
/// checkout) held until the guard is dropped.
pub struct IpcLock {
    _file: std::fs::File,
    _guard: std::sync::MutexGuard<'static, ()>,
}

pub fn ipc_lock() -> IpcLock {
    static IN_PROCESS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    // target/<profile>/deps/e2e-xxxx -> target
    let exe = std::env::current_exe().expect("current_exe");
    let target = exe
        .ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let path = target.join("ipc-sessions.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("flock {}: {e}", path.display()));
    IpcLock {
        _file: file,
        _guard: guard,
    }
}
