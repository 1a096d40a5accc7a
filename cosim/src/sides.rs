//! The child processes: spawned with their stdout collected and their stderr
//! forwarded live, line by line (and kept, to tell later which side only
//! reported its peer's failure), each reaped by a thread of its own that
//! reports the exit on the supervisor's event channel.
//!
//! Whole lines: a side's `eprintln!` is several write(2) calls (one per
//! piece of the format string), so the two sides' lines would interleave
//! mid-line when both wrote at once. Each side's reader forwards only
//! complete lines, each batch in one write under the lock of the
//! supervisor's stderr. A partial line (a terminal spinner, a prompt) is
//! forwarded as it is once the side has written nothing more for
//! [`PARTIAL_LINE_WAIT`].

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
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
    /// Lines that only report the peer's end (held back, not forwarded:
    /// [`is_follower_line`]); the supervisor prints or drops them at the end.
    pub held: Arc<Mutex<Vec<u8>>>,
}

/// How long a partial line waits for its end before it is forwarded as it is.
pub const PARTIAL_LINE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// A line in which a side only reports that its peer ended or that it was
/// told to stop: held back until the run's verdict, and dropped when the
/// verdict is bad input (exit 2), where the failing side's own line says
/// everything.
pub fn is_follower_line(line: &[u8]) -> bool {
    let l = String::from_utf8_lossy(line);
    l.contains("peer fabric (pid")
        || l.contains("peer scheduler (pid")
        || l.starts_with("ipc-proto: caught signal")
}

/// Forward `chunk`'s complete lines; what follows the last newline stays in
/// `pending`. Follower lines go to `held`.
fn forward_lines(pending: &mut Vec<u8>, keep: &Mutex<Vec<u8>>, held: &Mutex<Vec<u8>>) {
    let Some(last) = pending.iter().rposition(|&b| b == b'\n') else {
        return;
    };
    let rest = pending.split_off(last + 1);
    let lines = std::mem::replace(pending, rest);
    let mut out = Vec::with_capacity(lines.len());
    let mut hold = Vec::new();
    for line in lines.split_inclusive(|&b| b == b'\n') {
        if is_follower_line(line) {
            hold.extend_from_slice(line);
        } else {
            out.extend_from_slice(line);
        }
    }
    if !out.is_empty() {
        let _ = std::io::stderr().lock().write_all(&out);
    }
    if !hold.is_empty() {
        held.lock().unwrap().extend_from_slice(&hold);
    }
    keep.lock().unwrap().extend_from_slice(&lines);
}

/// Wait until `fd` is readable, at most `d`; false on timeout.
fn readable_within(fd: std::os::fd::RawFd, d: std::time::Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one descriptor we own.
    let r = unsafe { libc::poll(&mut p, 1, d.as_millis() as libc::c_int) };
    r != 0
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
/// a virtual machine a spawn from a process that has just created threads
/// can cost about 2 ms instead of 0.3 ms (measured on a one-message chain),
/// time the fabric's start-up then lacks.
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
    let held = Arc::new(Mutex::new(Vec::new()));
    let (keep, hold) = (err_text.clone(), held.clone());
    let stderr = std::thread::spawn(move || {
        let fd = err.as_raw_fd();
        let mut buf = [0u8; 8192];
        let mut pending: Vec<u8> = Vec::new();
        loop {
            if !pending.is_empty() && !readable_within(fd, PARTIAL_LINE_WAIT) {
                // a line that stays partial (a spinner): as it is
                let _ = std::io::stderr().lock().write_all(&pending);
                keep.lock().unwrap().extend_from_slice(&pending);
                pending.clear();
                continue;
            }
            match err.read(&mut buf) {
                Ok(0) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    forward_lines(&mut pending, &keep, &hold);
                }
            }
        }
        if !pending.is_empty() {
            // the side ended in the middle of a line: end it
            pending.push(b'\n');
            forward_lines(&mut pending, &keep, &hold);
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
        held,
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

    /// The held-back follower lines (after [`Child::drain_stderr`]).
    pub fn take_held(&self) -> Vec<u8> {
        std::mem::take(&mut *self.held.lock().unwrap())
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
