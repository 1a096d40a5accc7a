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

/// The reference data (the thesis's programs and traces, the reference IB
/// model's networks): `../shared/data` beside the checkout or
/// `IBCOSIM_REFERENCE_DATA`, as decided at build time (refdata/src/lib.rs).
/// A test that reads it is marked
/// `#[cfg_attr(not(reference_data), ignore = "needs the reference data: ...")]`.
pub fn reference_data_dir() -> PathBuf {
    PathBuf::from(env!("IBCOSIM_REFERENCE_DATA_DIR"))
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

/// Run a command with a time limit: kill it and panic after `limit`, so a
/// hanging child fails the test instead of hanging the suite.
pub fn run_with_timeout(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    wait_within(child, limit, &format!("{cmd:?}"))
}

/// Wait for a child with captured output; kill it (the child itself, not
/// its process group, which is not ours) and panic after `limit`, naming it
/// `what`, so a hanging child fails the test instead of hanging the suite.
pub fn wait_within(child: std::process::Child, limit: std::time::Duration, what: &str) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("wait {what}: {e}")),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{what} did not finish within {limit:?}");
        }
    }
}

/// The array `v[key]` of unsigned integers (a JSON report's per-rank times).
pub fn u64_array(v: &serde_json::Value, key: &str) -> Vec<u64> {
    v[key]
        .as_array()
        .expect(key)
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// A copy of the repository's tracked files (as they are in the working
/// tree, so uncommitted edits are tested too) in `<tempdir>/repo`, with
/// nothing else beside it: no `../shared`, no `target/`. A fresh clone as a
/// new user gets it.
pub fn repo_copy() -> tempfile::TempDir {
    let root = repo_root();
    let out = run(Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(words("ls-files -z --cached --others --exclude-standard")));
    assert!(
        out.status.success(),
        "git ls-files in {} failed (the fresh-clone tests need the git checkout): {}",
        root.display(),
        stderr(&out)
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = dir.path().join("repo");
    let mut n = 0;
    for rel in out.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).expect("UTF-8 path"));
        let from = root.join(rel);
        if !from.exists() {
            continue; // deleted in the working tree, not yet committed
        }
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        // fs::copy keeps the permission bits (scripts stay executable).
        std::fs::copy(&from, &to)
            .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", from.display(), to.display()));
        n += 1;
    }
    assert!(
        n > 10,
        "only {n} tracked files copied from {}",
        root.display()
    );
    dir
}

/// The per-rank finish times of loggopsim's text report, lines
/// `Host N: T` or `Host N: T UNIT` (UNIT ps, ns, us, ms or s), in ps.
pub fn host_times_ps(report: &str) -> Vec<u64> {
    let mut v = Vec::new();
    for line in report.lines() {
        let Some(rest) = line.strip_prefix("Host ") else {
            continue;
        };
        let Some((rank, t)) = rest.split_once(':') else {
            continue;
        };
        let rank: usize = rank
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("rank in '{line}': {e}"));
        assert_eq!(rank, v.len(), "ranks out of order at '{line}'");
        let mut toks = t.split_whitespace();
        let n = toks.next().unwrap_or_else(|| panic!("no time in '{line}'"));
        let mult: u64 = match toks.next() {
            None | Some("ps") => 1,
            Some("ns") => 1_000,
            Some("us") => 1_000_000,
            Some("ms") => 1_000_000_000,
            Some("s") => 1_000_000_000_000,
            Some(u) => panic!("unknown unit '{u}' in '{line}'"),
        };
        let n: u64 = n
            .parse()
            .unwrap_or_else(|e| panic!("time in '{line}': {e}"));
        v.push(n * mult);
    }
    v
}

/// The words of a command line (none of the arguments holds a space).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Set a file's modification time (tests of rebuild-when-stale rules).
pub fn set_mtime(p: &std::path::Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// Write an executable script (a stand-in for a binary), creating its folder.
pub fn write_exe(p: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}
