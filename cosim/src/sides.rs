//! The child processes: spawned with their stdout collected and their stderr
//! forwarded live (and kept, to tell later which side only reported its
//! peer's failure), each reaped by a thread of its own that reports the exit
//! on the supervisor's event channel.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What wakes the supervisor.
#[derive(Debug)]
pub enum Event {
    /// A child ended with this status (exit code, or 128 + signal).
    Exit(u32, i32),
    /// The supervisor received this signal (INT, TERM, HUP).
    Signal(i32),
}

/// A running (or ended) side.
pub struct Child {
    pub pid: u32,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<()>>,
    /// Everything the side wrote on stderr so far.
    pub err_text: Arc<Mutex<Vec<u8>>>,
}

/// Exit status as a shell reports it.
fn status_code(s: std::process::ExitStatus) -> i32 {
    match (s.code(), s.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    }
}

/// Spawn `prog args` with stdout collected and stderr forwarded; its exit
/// goes to `events`. Spawned from the caller's (main) thread, so the child
/// is listed in `/proc/<pid>/task/<pid>/children`.
pub fn spawn(
    prog: &Path,
    args: &[String],
    env: &[(&str, String)],
    events: Sender<Event>,
) -> std::io::Result<Child> {
    Ok(watch(start(prog, args, env)?, events))
}

/// Start `prog args` (stdin empty, stdout and stderr piped) without the
/// threads that collect its output: a supervisor that starts two sides
/// starts both first and only then calls [`watch`] on each, because on
/// this project's VM a spawn from a process that has just created threads
/// cost about 2 ms instead of 0.3 ms, time the fabric's start-up then
/// lacks (measured on a one-message chain, 28 Nov 2026:
/// docs/cosim-speed-history.md, session 17).
pub fn start(
    prog: &Path,
    args: &[String],
    env: &[(&str, String)],
) -> std::io::Result<std::process::Child> {
    let mut c = Command::new(prog);
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let child = c.spawn()?;
    if let Some(out) = &child.stdout {
        // A side's report (the fabric's JSON statistics: ~0.7 MB on 128
        // HCAs) then fits the pipe at once instead of going through in
        // 64 KiB pieces, each a hand-over between the side and our reader
        // thread at the end of the run. Best effort: the kernel caps it at
        // /proc/sys/fs/pipe-max-size, and a failure changes nothing else.
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl(2) on a pipe descriptor we own.
        unsafe {
            libc::fcntl(out.as_raw_fd(), libc::F_SETPIPE_SZ, REPORT_PIPE_BYTES);
        }
    }
    Ok(child)
}

/// The capacity asked for each side's stdout pipe (Linux's default
/// pipe-max-size).
const REPORT_PIPE_BYTES: libc::c_int = 1 << 20;

/// The threads of a started side: its stdout collected, its stderr
/// forwarded and kept, its exit reported on `events`.
pub fn watch(mut child: std::process::Child, events: Sender<Event>) -> Child {
    let pid = child.id();
    let mut out = child.stdout.take().expect("piped stdout");
    let stdout = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let mut err = child.stderr.take().expect("piped stderr");
    let err_text = Arc::new(Mutex::new(Vec::new()));
    let keep = err_text.clone();
    let stderr = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match err.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    // forwarded at once (a chunk is what the side wrote in
                    // one go: its lines stay whole)
                    let _ = std::io::stderr().lock().write_all(&buf[..n]);
                    keep.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            }
        }
    });
    std::thread::spawn(move || {
        let code = match child.wait() {
            Ok(s) => status_code(s),
            Err(_) => 1,
        };
        let _ = events.send(Event::Exit(pid, code));
    });
    Child {
        pid,
        stdout: Some(stdout),
        stderr: Some(stderr),
        err_text,
    }
}

impl Child {
    /// Send a signal (the pid is not reused before our waiter reaps it,
    /// and we only signal sides that have not been reported as ended).
    pub fn kill(&self, sig: i32) {
        // SAFETY: plain kill(2).
        unsafe {
            libc::kill(self.pid as libc::pid_t, sig);
        }
    }

    /// Is the side stopped (SIGSTOP: state T or t in `/proc/<pid>/stat`)?
    pub fn stopped(&self) -> bool {
        proc_state(self.pid).is_some_and(|c| c == 'T' || c == 't')
    }

    /// Its standard output (after it ended: the pipe is closed then).
    pub fn take_stdout(&mut self) -> Vec<u8> {
        self.stdout
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// Wait until its stderr has been forwarded to the end.
    pub fn drain_stderr(&mut self) {
        if let Some(h) = self.stderr.take() {
            let _ = h.join();
        }
    }

    pub fn stderr_contains(&self, needles: &[&str]) -> bool {
        let t = self.err_text.lock().unwrap();
        let s = String::from_utf8_lossy(&t);
        needles.iter().any(|n| s.contains(n))
    }
}

/// The state letter of a process (R, S, D, T, t, Z, ...), None when gone.
pub fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 1..];
    after.trim_start().chars().next()
}
