//! Running the simulators as child processes: wall time, peak memory of each
//! child (`wait4`'s `ru_maxrss`), a wall-time budget, and the progress a
//! stopped run had reached.
//!
//! The children report progress only through their indicatif progress
//! lines, which indicatif draws only on a terminal. A run that may be
//! stopped for its budget therefore gets a pseudo-terminal as stderr; we
//! read it and keep the last progress line (read-only: nothing is sent to
//! the child).

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One child to start.
#[derive(Clone, Debug)]
pub struct ProcSpec {
    /// "scheduler" or "fabric" (names the process in messages and tables).
    pub role: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Give the child a pseudo-terminal as stderr (to read its progress line).
    pub pty: bool,
    /// Run the child on this CPU only (`sched_setaffinity`).
    pub cpu: Option<usize>,
}

impl ProcSpec {
    pub fn new(role: &'static str, program: PathBuf, args: Vec<String>) -> ProcSpec {
        ProcSpec {
            role,
            program,
            args,
            pty: false,
            cpu: None,
        }
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        let mut s = self.program.display().to_string();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
}

impl ExitKind {
    pub fn success(self) -> bool {
        self == ExitKind::Code(0)
    }
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitKind::Code(c) => write!(f, "exit status {c}"),
            ExitKind::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// What one child did.
#[derive(Clone, Debug)]
pub struct ProcResult {
    pub role: &'static str,
    pub exit: ExitKind,
    /// Peak resident set size in KiB (`ru_maxrss` of this child).
    pub maxrss_kb: u64,
    /// The file holding its stdout (reports can be megabytes: they are
    /// parsed from the file, never held whole in the study's memory).
    pub stdout_path: PathBuf,
    /// Its stderr (for a pty: the raw terminal output, last 64 KiB).
    pub stderr: String,
}

/// The progress a run had reached (from the last progress line).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Simulated time reached (ps).
    pub time_ps: u64,
    /// Records the fabric had received (inserts + queries + ...), if shown.
    pub records: Option<u64>,
    /// Events processed by the side that printed the line.
    pub events: Option<u64>,
}

/// The outcome of one run of a set of children.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Seconds from the first spawn until the last child was reaped (or,
    /// when stopped for the budget, until it was stopped).
    pub wall_s: f64,
    pub procs: Vec<ProcResult>,
    pub over_budget: bool,
    pub progress: Option<Progress>,
    /// The study's own anonymous memory (KiB) when it started the children:
    /// Linux carries a forked child's copy of it into the child's
    /// `ru_maxrss`, so each peak includes at most this much of ours.
    pub parent_anon_kb: u64,
    /// Progress seen while the run went on: (seconds since start, progress),
    /// about four samples a second (runs with a pty only).
    pub progress_samples: Vec<(f64, Progress)>,
}

impl RunResult {
    pub fn proc(&self, role: &str) -> Option<&ProcResult> {
        self.procs.iter().find(|p| p.role == role)
    }

    pub fn all_ok(&self) -> bool {
        self.procs.iter().all(|p| p.exit.success())
    }

    /// A one-paragraph description of the failed children, for errors.
    pub fn failure_text(&self) -> String {
        let mut s = String::new();
        for p in self.procs.iter().filter(|p| !p.exit.success()) {
            let tail: String = clean_terminal(&p.stderr)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .rev()
                .take(6)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n    ");
            s.push_str(&format!("{} {}:\n    {}\n", p.role, p.exit, tail));
        }
        s
    }
}

const STDERR_KEEP: usize = 64 * 1024;

/// Keep only the last `STDERR_KEEP` bytes (at a char boundary).
fn keep_tail(s: &mut String) {
    if s.len() > STDERR_KEEP {
        let mut cut = s.len() - STDERR_KEEP;
        while !s.is_char_boundary(cut) {
            cut += 1;
        }
        s.drain(..cut);
    }
}

/// Terminal output without carriage returns and ANSI escape sequences.
pub fn clean_terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ params final-byte(0x40..0x7e)
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for d in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&d) {
                            break;
                        }
                    }
                }
            }
            '\r' => out.push('\n'),
            _ => out.push(c),
        }
    }
    out
}

/// Digits right after `key` in `s` (e.g. "fabric time " -> 12345).
fn number_after(s: &str, key: &str) -> Option<u64> {
    let i = s.find(key)? + key.len();
    let digits: String = s[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Digits right before `key` (e.g. "42 records" with key " records").
fn number_before(s: &str, key: &str) -> Option<u64> {
    let i = s.find(key)?;
    let digits: String = s[..i]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// The last progress line in a child's terminal output. Two formats:
/// `ibnet serve --progress`: "fabric time T ps, E events, M messages in
/// flight, N records"; `loggopsim --progress`: "E events, simulated time T".
pub fn parse_progress(term: &str) -> Option<Progress> {
    let text = clean_terminal(term);
    for line in text.lines().rev() {
        if let Some(t) = number_after(line, "fabric time ") {
            return Some(Progress {
                time_ps: t,
                records: number_before(line, " records"),
                events: number_before(line, " events"),
            });
        }
        if let Some(t) = number_after(line, "simulated time ") {
            return Some(Progress {
                time_ps: t,
                records: None,
                events: number_before(line, " events"),
            });
        }
    }
    None
}

/// A pseudo-terminal: (master, slave), both close-on-exec (the slave is
/// dup'ed onto the child's stderr, which clears the flag there only).
fn open_pty() -> std::io::Result<(File, File)> {
    let mut master: libc::c_int = -1;
    let mut slave: libc::c_int = -1;
    // Wide enough that progress lines are not truncated.
    let ws = libc::winsize {
        ws_row: 50,
        ws_col: 400,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds into the ints we pass; name and termios
    // may be null; the winsize pointer is valid for the call.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    for fd in [master, slave] {
        // SAFETY: fd was just returned by openpty and is owned by us.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both fds are open and owned by nobody else.
    let (m, s) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    Ok((File::from(m), File::from(s)))
}

fn send_signal(pid: i32, sig: libc::c_int) {
    // SAFETY: plain kill(2) on a child we started and have not reaped.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Non-blocking `wait4`: Some((exit, maxrss_kb)) once the child is gone.
fn try_reap(pid: i32) -> Option<(ExitKind, u64)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; wait4 fills it in.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unreaped child; pointers are valid.
    let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
    if r != pid {
        return None;
    }
    let exit = if libc::WIFEXITED(status) {
        ExitKind::Code(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        ExitKind::Signal(libc::WTERMSIG(status))
    } else {
        ExitKind::Code(-1)
    };
    Some((exit, ru.ru_maxrss.max(0) as u64))
}

/// `RssAnon` of this process in KiB (0 if unknown).
pub fn self_anon_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("RssAnon:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

struct Running {
    spec: ProcSpec,
    pid: i32,
    stdout_path: PathBuf,
    stderr_path: Option<PathBuf>,
    pty_text: Option<Arc<Mutex<String>>>,
    pty_reader: Option<std::thread::JoinHandle<()>>,
    done: Option<(ExitKind, u64)>,
}

/// Start the children (in order; the first is typically the fabric, which
/// creates the IPC objects) and wait for all of them. If `budget` passes
/// first, stop them all (SIGTERM, SIGKILL after a second) and mark the run
/// over budget. If one child fails, the others get `grace` to finish
/// before they are stopped too.
pub fn run(
    specs: &[ProcSpec],
    budget: Option<Duration>,
    work: &std::path::Path,
) -> anyhow::Result<RunResult> {
    let grace = Duration::from_secs(3);
    let start = Instant::now();
    let mut running: Vec<Running> = Vec::new();
    let mut parent_anon_kb = 0;
    for (i, spec) in specs.iter().enumerate() {
        let stdout_path = work.join(format!("{i}-{}.stdout", spec.role));
        let stdout = File::create(&stdout_path)?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args).stdin(Stdio::null()).stdout(stdout);
        let (stderr_path, pty) = if spec.pty {
            let (master, slave) = open_pty()?;
            cmd.stderr(Stdio::from(slave));
            (None, Some(master))
        } else {
            let p = work.join(format!("{i}-{}.stderr", spec.role));
            cmd.stderr(File::create(&p)?);
            (Some(p), None)
        };
        // A real fork, not posix_spawn's vfork: a vfork child shares our
        // address space until exec, and exec records that space's
        // high-water mark (the study's peak) in the child's ru_maxrss. A
        // forked child carries only a copy of our current anonymous memory,
        // which we keep small and report (`parent_anon_kb`).
        // The closure also pins the child to a CPU when asked.
        let cpu = spec.cpu;
        // SAFETY: the closure only calls sched_setaffinity on a stack
        // cpu_set_t (no allocation, no locks): async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || {
                if let Some(c) = cpu {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(c, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        parent_anon_kb = parent_anon_kb.max(self_anon_kb());
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                for r in &running {
                    send_signal(r.pid, libc::SIGKILL);
                }
                for r in &running {
                    while try_reap(r.pid).is_none() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                anyhow::bail!("cannot start {}: {e}", spec.program.display());
            }
        };
        drop(cmd); // closes our copy of the pty slave
        let pid = child.id() as i32;
        let (pty_text, pty_reader) = match pty {
            Some(mut master) => {
                let text = Arc::new(Mutex::new(String::new()));
                let t2 = text.clone();
                let h = std::thread::spawn(move || {
                    let mut buf = [0u8; 8192];
                    // Ends with EIO once the child (the only slave holder) is gone.
                    while let Ok(n) = master.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let mut t = t2.lock().unwrap();
                        t.push_str(&String::from_utf8_lossy(&buf[..n]));
                        keep_tail(&mut t);
                    }
                });
                (Some(text), Some(h))
            }
            None => (None, None),
        };
        running.push(Running {
            spec: spec.clone(),
            pid,
            stdout_path,
            stderr_path,
            pty_text,
            pty_reader,
            done: None,
        });
    }

    let mut over_budget = false;
    let mut stopped_at: Option<Instant> = None;
    let mut term_sent: Option<Instant> = None;
    let mut first_failure: Option<Instant> = None;
    let mut end = start;
    let mut progress_at_stop: Option<Progress> = None;
    let mut samples: Vec<(f64, Progress)> = Vec::new();
    let mut next_sample = start;
    // The newest progress line of any child with a pty (the last few KiB
    // of its output are enough).
    let current_progress = |running: &[Running]| -> Option<Progress> {
        running
            .iter()
            .filter_map(|r| r.pty_text.as_ref())
            .filter_map(|t| {
                let t = t.lock().unwrap();
                let mut cut = t.len().saturating_sub(4096);
                while !t.is_char_boundary(cut) {
                    cut += 1;
                }
                parse_progress(&t[cut..])
            })
            .max_by_key(|p| p.time_ps)
    };
    loop {
        for r in running.iter_mut().filter(|r| r.done.is_none()) {
            if let Some(d) = try_reap(r.pid) {
                r.done = Some(d);
                end = Instant::now();
                if !d.0.success() && first_failure.is_none() {
                    first_failure = Some(end);
                }
            }
        }
        if running.iter().all(|r| r.done.is_some()) {
            break;
        }
        let now = Instant::now();
        let elapsed = now - start;
        if now >= next_sample && term_sent.is_none() {
            next_sample = now + Duration::from_millis(250);
            if let Some(p) = current_progress(&running) {
                if samples.last().is_none_or(|(_, q)| *q != p) {
                    samples.push((elapsed.as_secs_f64(), p));
                }
            }
        }
        let budget_hit = budget.is_some_and(|b| elapsed >= b);
        let failure_hit = first_failure.is_some_and(|f| now - f >= grace);
        if (budget_hit || failure_hit) && term_sent.is_none() {
            if budget_hit && first_failure.is_none() {
                over_budget = true;
                stopped_at = Some(now);
                // Progress before the children print their exit messages.
                progress_at_stop = current_progress(&running);
                if let Some(p) = progress_at_stop {
                    samples.push((elapsed.as_secs_f64(), p));
                }
            }
            for r in running.iter().filter(|r| r.done.is_none()) {
                send_signal(r.pid, libc::SIGTERM);
            }
            term_sent = Some(now);
        }
        if term_sent.is_some_and(|t| now - t >= Duration::from_secs(1)) {
            for r in running.iter().filter(|r| r.done.is_none()) {
                send_signal(r.pid, libc::SIGKILL);
            }
        }
        // Poll finely at first so short runs are timed precisely (the error
        // stays below ~2% of the run).
        let nap = (elapsed / 50).clamp(Duration::from_micros(50), Duration::from_millis(2));
        std::thread::sleep(nap);
    }
    let wall = match stopped_at {
        Some(s) => s - start,
        None => end - start,
    };
    let mut procs = Vec::new();
    let mut progress = progress_at_stop;
    for mut r in running {
        if let Some(h) = r.pty_reader.take() {
            // EOF comes when every holder of the slave is gone; a grandchild
            // could keep it open, so wait a little, not forever.
            let t = Instant::now();
            while !h.is_finished() && t.elapsed() < Duration::from_secs(1) {
                std::thread::sleep(Duration::from_millis(5));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
        let stderr = match (&r.stderr_path, &r.pty_text) {
            (Some(p), _) => {
                let mut t =
                    String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
                keep_tail(&mut t);
                t
            }
            (None, Some(t)) => t.lock().unwrap().clone(),
            _ => String::new(),
        };
        if progress.is_none() && r.pty_text.is_some() {
            progress = parse_progress(&stderr);
        }
        let (exit, maxrss_kb) = r.done.expect("reaped");
        procs.push(ProcResult {
            role: r.spec.role,
            exit,
            maxrss_kb,
            stdout_path: r.stdout_path.clone(),
            stderr,
        });
    }
    Ok(RunResult {
        wall_s: wall.as_secs_f64(),
        procs,
        over_budget,
        progress,
        parent_anon_kb,
        progress_samples: samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_of_the_fabric_server() {
        let term = "\r\x1b[2K⠁ 1s fabric time 1200 ps, 50 events, 3 messages in flight, 4096 records\
                    \r\x1b[2K⠂ 2s fabric time 2400 ps, 90 events, 2 messages in flight, 8192 records\r\x1b[2K";
        assert_eq!(
            parse_progress(term),
            Some(Progress {
                time_ps: 2400,
                records: Some(8192),
                events: Some(90)
            })
        );
    }

    #[test]
    fn progress_of_the_scheduler() {
        let term = "\r⠁ 00:00:03 262144 events, simulated time 777\n";
        assert_eq!(
            parse_progress(term),
            Some(Progress {
                time_ps: 777,
                records: None,
                events: Some(262144)
            })
        );
        assert_eq!(parse_progress("no progress here\n"), None);
    }

    /// A child `role` that runs a shell script.
    fn sh(role: &'static str, script: &str) -> ProcSpec {
        ProcSpec::new(role, "/bin/sh".into(), vec!["-c".into(), script.into()])
    }

    #[test]
    fn runs_children_and_reports_peak_memory() {
        let dir = tempfile::tempdir().unwrap();
        let spec = sh("scheduler", "echo hello; echo oops >&2; exit 3");
        let r = run(&[spec], None, dir.path()).unwrap();
        let p = r.proc("scheduler").unwrap();
        assert_eq!(p.exit, ExitKind::Code(3));
        assert_eq!(std::fs::read_to_string(&p.stdout_path).unwrap(), "hello\n");
        assert_eq!(p.stderr, "oops\n");
        assert!(p.maxrss_kb > 0, "ru_maxrss of the child");
        assert!(!r.over_budget);
        assert!(r.failure_text().contains("exit status 3"));
        assert!(r.parent_anon_kb > 0);
    }

    /// The child's peak must not include the parent's peak: grow our heap
    /// to 64 MiB, free it, then run a small child.
    #[test]
    fn child_peak_memory_excludes_the_study_peak() {
        let dir = tempfile::tempdir().unwrap();
        {
            let big = vec![1u8; 64 << 20];
            assert_eq!(
                big.iter().step_by(4096).map(|&b| b as usize).sum::<usize>(),
                16384
            );
        }
        let spec = ProcSpec::new("scheduler", "/bin/true".into(), vec![]);
        let r = run(&[spec], None, dir.path()).unwrap();
        let kb = r.proc("scheduler").unwrap().maxrss_kb;
        assert!(
            kb < 32 * 1024,
            "/bin/true peak {kb} KiB includes our 64 MiB"
        );
    }

    #[test]
    fn pins_a_child_to_one_cpu() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh("scheduler", "grep Cpus_allowed_list /proc/self/status");
        spec.cpu = Some(0);
        let r = run(&[spec], None, dir.path()).unwrap();
        let out = std::fs::read_to_string(&r.proc("scheduler").unwrap().stdout_path).unwrap();
        assert_eq!(out.split_whitespace().last(), Some("0"), "{out}");
    }

    #[test]
    fn stops_a_run_over_budget_and_keeps_its_progress() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh(
            "fabric",
            "printf 'fabric time 5000 ps, 7 events, 1 messages in flight, 10 records\\r' >&2; exec sleep 30",
        );
        spec.pty = true;
        let t0 = Instant::now();
        let r = run(&[spec], Some(Duration::from_millis(300)), dir.path()).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(r.over_budget);
        assert!(r.wall_s >= 0.3 && r.wall_s < 1.0, "{}", r.wall_s);
        assert_eq!(r.progress.unwrap().time_ps, 5000);
        assert_eq!(r.progress.unwrap().records, Some(10));
        assert_eq!(
            r.proc("fabric").unwrap().exit,
            ExitKind::Signal(libc::SIGTERM)
        );
    }
}
