//! `cosim`: the supervisor of the two-process co-simulation (what
//! scripts/cosim runs once the binaries are built).
//!
//! It chooses a session key, starts the scheduler (`loggopsim`, which waits
//! for the fabric's ready flag) and the fabric (`ibnet serve
//! --scheduler-pid`, which stops waiting when the scheduler dies before
//! attaching), watches both (exit, or stopped with SIGSTOP), forwards
//! SIGINT/SIGTERM/SIGHUP to both, kills the survivor when one side fails,
//! names the side that failed first, removes the session's IPC objects on
//! every failure path and exits with the failing side's status.
//!
//! Written in Rust (it was a shell script) so that supervision costs no
//! process of its own: the script forked a dozen helpers per run (temporary
//! directory, log followers polling every 5 ms, a sleep ticker, cat, rm),
//! about 20 ms of a run's wall time. Here the children are reaped by
//! threads that report on one event channel, and their output comes through
//! pipes.

mod options;
mod placement;
mod precheck;
mod sides;
mod verdict;

use clap::Parser;
use options::{Args, Settings};
use sides::{Child, Event};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use verdict::{Observed, Side, Why};

/// How often the watch loop looks for a stopped side (and progress).
const TICK: Duration = Duration::from_millis(500);
/// A side stopped this many ticks is named and the run ends (5 s).
const STALL_TICKS: u32 = 10;

fn main() {
    std::process::exit(run());
}

fn say(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "cosim: {msg}");
}

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

/// Exit status in words.
fn describe(s: i32) -> String {
    if s > 128 && s < 160 {
        format!("exit status {s} (killed by {})", signal_name(s - 128))
    } else {
        format!("exit status {s}")
    }
}

/// The repository (for the built-in example) and the binaries' directory.
fn locations() -> (PathBuf, PathBuf) {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("."));
    let bindir = std::env::var_os("IBCOSIM_BIN_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| exe_dir.clone());
    // scripts/cosim tells where the repository is; else target/<profile>/..
    let root = std::env::var_os("IBCOSIM_ROOT")
        .map(PathBuf::from)
        .or_else(|| {
            exe_dir
                .parent()
                .and_then(|t| t.parent())
                .map(|r| r.to_path_buf())
        })
        .unwrap_or_else(|| PathBuf::from("."));
    (root, bindir)
}

fn run() -> i32 {
    let args = Args::parse();
    let (root, bindir) = locations();
    let tty = std::io::stderr().is_terminal();
    let s = match Settings::from_args(args, &root, &bindir, tty) {
        Ok(s) => s,
        Err(r) => {
            say(&r.0);
            return 2;
        }
    };
    for b in [&s.loggopsim, &s.ibnet] {
        if !b.is_file() {
            say(&format!(
                "{} not found (IBCOSIM_BIN_DIR or the supervisor's directory; build with `cargo build --release -p cosim -p loggopsim -p ibnet --bins`)",
                b.display()
            ));
            return 2;
        }
    }
    let (tx, rx) = channel();
    // SIGINT/SIGTERM/SIGHUP: forwarded to both sides, then the run ends.
    match signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM, libc::SIGHUP]) {
        Ok(mut sigs) => {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for sig in sigs.forever() {
                    if tx.send(Event::Signal(sig)).is_err() {
                        break;
                    }
                }
            });
        }
        Err(e) => {
            say(&format!("cannot install signal handlers: {e}"));
            return 1;
        }
    }
    let mut sup = Supervisor {
        s,
        rx,
        sched: None,
        fabric: None,
        ended: Vec::new(),
        drop_followers: false,
        _report_dir: None,
        _jobs_map: None,
    };
    if sup.s.transport.in_process() {
        sup.run_in_process(tx)
    } else {
        sup.run_two_processes(tx)
    }
}

struct Supervisor {
    s: Settings,
    rx: Receiver<Event>,
    sched: Option<Child>,
    fabric: Option<Child>,
    /// (pid, status) of the sides reaped so far, in order.
    ended: Vec<(u32, i32)>,
    /// Drop the sides' held-back lines that only report their peer's end
    /// (bad input: the failing side's own line says it all).
    drop_followers: bool,
    /// In-process mode: the fabric's report is written to a file here.
    _report_dir: Option<tempfile::TempDir>,
    /// Several jobs: their rank map for the fabric (removed at the end).
    _jobs_map: Option<tempfile::NamedTempFile>,
}

impl Supervisor {
    fn children(&self) -> impl Iterator<Item = &Child> {
        self.sched.iter().chain(self.fabric.iter())
    }
    fn status_of(&self, pid: u32) -> Option<i32> {
        self.ended.iter().find(|e| e.0 == pid).map(|e| e.1)
    }
    fn gone(&self, c: &Child) -> bool {
        self.status_of(c.pid).is_some()
    }
    fn side(&self, pid: u32) -> Side {
        if self.sched.as_ref().is_some_and(|c| c.pid == pid) {
            Side::Scheduler
        } else {
            Side::Fabric
        }
    }
    fn child(&self, side: Side) -> &Child {
        match side {
            Side::Scheduler => self.sched.as_ref().unwrap(),
            Side::Fabric => self.fabric.as_ref().unwrap(),
        }
    }

    /// Wait for the next event, at most `d`. Exits are recorded; a signal
    /// ends the run (this function then does not return).
    fn next(&mut self, d: Duration) -> Option<u32> {
        match self.rx.recv_timeout(d) {
            Ok(Event::Exit(pid, st)) => {
                self.ended.push((pid, st));
                Some(pid)
            }
            Ok(Event::Signal(sig)) => self.on_signal(sig),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Wait until `pid` has ended, at most `d`.
    fn wait_for(&mut self, pid: u32, d: Duration) -> bool {
        let until = Instant::now() + d;
        while self.status_of(pid).is_none() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.next(left);
        }
        true
    }

    fn kill_all(&self, sig: i32) {
        for c in self.children() {
            if !self.gone(c) {
                c.kill(sig);
            }
        }
    }

    fn on_signal(&mut self, sig: i32) -> ! {
        say(&format!("caught {}, stopping both sides", signal_name(sig)));
        self.kill_all(sig);
        let pids: Vec<u32> = self.children().map(|c| c.pid).collect();
        let until = Instant::now() + Duration::from_millis(500);
        for &p in &pids {
            while self.status_of(p).is_none() && Instant::now() < until {
                if let Ok(Event::Exit(pid, st)) = self
                    .rx
                    .recv_timeout(until.saturating_duration_since(Instant::now()))
                {
                    self.ended.push((pid, st));
                }
            }
        }
        self.kill_all(libc::SIGKILL);
        for &p in &pids {
            let until = Instant::now() + Duration::from_secs(5);
            while self.status_of(p).is_none() && Instant::now() < until {
                if let Ok(Event::Exit(pid, st)) = self.rx.recv_timeout(Duration::from_millis(100)) {
                    self.ended.push((pid, st));
                }
            }
        }
        let code = 128 + sig;
        self.finish(code)
    }

    /// Print the outputs in a fixed order (the scheduler's report, then the
    /// fabric's statistics; one JSON object with --json), clean up, exit.
    fn finish(&mut self, code: i32) -> ! {
        // Both sides remove their objects on every exit path; this is the
        // safety net for a side that was killed.
        if code != 0 && !self.s.transport.in_process() {
            let _ = ipc_proto::session::cleanup(&self.s.key);
        }
        let sched_out = self
            .sched
            .as_mut()
            .map(|c| c.take_stdout())
            .unwrap_or_default();
        let mut fabric_out = self
            .fabric
            .as_mut()
            .map(|c| c.take_stdout())
            .unwrap_or_default();
        if let Some(d) = &self._report_dir {
            fabric_out = std::fs::read(d.path().join("fabric.out")).unwrap_or_default();
        }
        if let Some(c) = self.sched.as_mut() {
            c.drain_stderr();
        }
        if let Some(c) = self.fabric.as_mut() {
            c.drain_stderr();
        }
        if !self.drop_followers {
            let mut se = std::io::stderr().lock();
            for c in self.children() {
                let _ = se.write_all(&c.take_held());
            }
        }
        let mut so = std::io::stdout().lock();
        let trim = |v: &[u8]| -> Vec<u8> {
            let mut v = v.to_vec();
            while v.last() == Some(&b'\n') {
                v.pop();
            }
            v
        };
        if !sched_out.is_empty() {
            if self.s.json && !fabric_out.is_empty() {
                let _ = so.write_all(b"{\"scheduler\":");
                let _ = so.write_all(&trim(&sched_out));
                let _ = so.write_all(b",\"fabric\":");
                let _ = so.write_all(&trim(&fabric_out));
                let _ = so.write_all(b"}\n");
            } else {
                let _ = so.write_all(&sched_out);
                let _ = so.write_all(&fabric_out);
            }
        } else if !fabric_out.is_empty() && !self.s.json {
            let _ = so.write_all(&fabric_out);
        }
        let _ = so.flush();
        drop(so);
        // the temporary files are removed by their destructors
        self._report_dir = None;
        self._jobs_map = None;
        std::process::exit(code)
    }

    /// inproc / onepiece: one process, the fabric on a thread of the
    /// scheduler or called by its own thread.
    fn run_in_process(&mut self, tx: std::sync::mpsc::Sender<Event>) -> i32 {
        let dir = match tempfile::Builder::new().prefix("cosim.").tempdir() {
            Ok(d) => d,
            Err(e) => {
                say(&format!("cannot create a temporary directory: {e}"));
                return 3;
            }
        };
        let report = dir.path().join("fabric.out");
        let mut a = self.s.sched_args.clone();
        a.extend(self.s.proto_args.iter().cloned());
        a.extend(["--network".into(), self.s.transport.name().into()]);
        a.extend(self.s.fabric_args.iter().cloned());
        a.extend([
            "--fabric-report".into(),
            report.to_string_lossy().into_owned(),
        ]);
        if self.s.json {
            a.push("--fabric-json".into());
        }
        a.extend(self.s.log_args.iter().cloned());
        a.extend(self.s.extra.iter().cloned());
        self._report_dir = Some(dir);
        let child = match sides::spawn(&self.s.loggopsim, &a, &[], tx) {
            Ok(c) => c,
            Err(e) => {
                say(&format!("cannot start {}: {e}", self.s.loggopsim.display()));
                return 2;
            }
        };
        let pid = child.pid;
        self.sched = Some(child);
        while self.status_of(pid).is_none() {
            self.next(TICK);
        }
        let st = self.status_of(pid).unwrap();
        // (bad input, 2: the scheduler's own line names the problem)
        if st != 0 && st != 2 {
            say(&format!(
                "the scheduler (loggopsim, in-process fabric) failed with {}",
                describe(st)
            ));
        }
        self.finish(st)
    }

    fn run_two_processes(&mut self, tx: std::sync::mpsc::Sender<Event>) -> i32 {
        let s = &self.s;
        // Leftovers of an earlier run that used this key must not break
        // this one (a key given with --key may be reused; the default key
        // names this supervisor's pid, which no live session holds).
        if s.key_given {
            let _ = ipc_proto::session::cleanup(&s.key);
        }
        // Both sides ask for SIGTERM when the supervisor dies, even by
        // SIGKILL (prctl PR_SET_PDEATHSIG in ipc-proto), so nothing runs on
        // as an orphan.
        let mut env = vec![("IBCOSIM_SUPERVISOR_PID", std::process::id().to_string())];
        // Both sides on one CPU (placement.rs says why): the supervisor
        // names it (IBCOSIM_PIN_CPU) and each side moves there once the two
        // have met, so that their start-up work (the fabric's topology, the
        // scheduler's schedule) still runs on two CPUs at the same time;
        // they block instead of spinning on it. (Also when the supervisor
        // was started on one CPU already, e.g. under `taskset -c 1`: there
        // is nothing to choose then, but the sides share that CPU all the
        // same and must not spin on it.)
        // How the sides wait (`--wait`): set in every case, so that a value
        // left in the user's environment cannot contradict the option.
        env.push((ipc_proto::transport::WAIT_ENV, s.wait.name().to_string()));
        if s.wait == ipc_proto::transport::WaitMode::Poll && placement::allowed_cpus().len() < 2 {
            say("--wait poll needs two CPUs (each side polls on its own) but this process may use only one; use --wait block");
            return 2;
        }
        if s.same_cpu {
            let cpu = placement::shared_cpu();
            if let Some(c) = cpu {
                env.push((ipc_proto::transport::SHARED_CPU_ENV, c.to_string()));
            }
            if (cpu.is_some() || placement::allowed_cpus().len() == 1)
                && std::env::var_os("IBCOSIM_SPIN_US").is_none()
            {
                env.push(("IBCOSIM_SPIN_US", "0".to_string()));
            }
        }
        let mut sa = s.sched_args.clone();
        let mut fabric_args = s.fabric_args.clone();
        // Several jobs: the fabric reads their placement as a rank map (the
        // scheduler's own, printed by --print-map), and the scheduler places
        // them on the same topology for its per-job report.
        let map_file;
        if !s.jobs.is_empty() {
            let mut c = std::process::Command::new(&s.loggopsim);
            for j in &s.jobs {
                c.args(["--job", j]);
            }
            c.args(["--topology", &s.topology, "--print-map"]);
            let out = match c.stderr(std::process::Stdio::inherit()).output() {
                Ok(o) if o.status.success() => o.stdout,
                Ok(_) => return 2,
                Err(e) => {
                    say(&format!("cannot start {}: {e}", s.loggopsim.display()));
                    return 2;
                }
            };
            map_file = match tempfile::Builder::new().prefix("cosim-jobs.").tempfile() {
                Ok(mut f) => {
                    if f.write_all(&out).is_err() {
                        say("cannot write the jobs' rank map");
                        return 3;
                    }
                    f
                }
                Err(e) => {
                    say(&format!("cannot create a temporary file: {e}"));
                    return 3;
                }
            };
            fabric_args.push("--map".into());
            fabric_args.push(map_file.path().to_string_lossy().into_owned());
            sa.push("--topology".into());
            sa.push(s.topology.clone());
            self._jobs_map = Some(map_file);
        }
        sa.extend(s.proto_args.iter().cloned());
        sa.extend([
            "--network".into(),
            "ipc".into(),
            "--key".into(),
            s.key.clone(),
        ]);
        sa.extend(s.extra.iter().cloned());
        // The scheduler first (it waits for the fabric's ready flag), so
        // that the fabric can watch its pid while it waits for it to attach.
        let sched = match sides::start(&s.loggopsim, &sa, &env) {
            Ok(c) => c,
            Err(e) => {
                say(&format!("cannot start {}: {e}", s.loggopsim.display()));
                return 2;
            }
        };
        let mut fa: Vec<String> = vec![
            "serve".into(),
            "--key".into(),
            s.key.clone(),
            "--protocol".into(),
            fabric_protocol(&s.protocol).into(),
            "--transport".into(),
            s.transport.name().into(),
            "--scheduler-pid".into(),
            sched.id().to_string(),
        ];
        fa.extend(s.proto_args.iter().cloned());
        fa.extend(fabric_args);
        if s.json {
            fa.push("--json".into());
        }
        fa.extend(s.log_args.iter().cloned());
        // Both started before either's threads (sides::start says why).
        let fabric = sides::start(&s.ibnet, &fa, &env);
        self.sched = Some(sides::watch(sched, tx.clone()));
        match fabric {
            Ok(c) => self.fabric = Some(sides::watch(c, tx)),
            Err(e) => {
                say(&format!("cannot start {}: {e}", self.s.ibnet.display()));
                self.kill_all(libc::SIGTERM);
                let pid = self.sched.as_ref().unwrap().pid;
                self.wait_for(pid, Duration::from_secs(5));
                self.finish(2)
            }
        }
        let (sp, fp) = (
            self.sched.as_ref().unwrap().pid,
            self.fabric.as_ref().unwrap().pid,
        );

        // Watch both: wake up when a side exits, or every TICK to look for
        // a side that stays stopped and to print progress.
        let t0 = Instant::now();
        let mut last_progress = t0;
        let mut stopped: Option<Side> = None;
        let mut stop_ticks = 0;
        let tty = std::io::stderr().is_terminal();
        let first = loop {
            if let Some(pid) = self.next(TICK) {
                break self.side(pid);
            }
            let now_stopped = [Side::Fabric, Side::Scheduler]
                .into_iter()
                .find(|&x| self.child(x).stopped());
            if let (Some(x), true) = (now_stopped, now_stopped == stopped) {
                stop_ticks += 1;
                if stop_ticks >= STALL_TICKS {
                    say(&format!(
                        "the {} failed first: it has been stopped (SIGSTOP?) for {} s (pid {}); stopping both sides",
                        x.name(),
                        STALL_TICKS / 2,
                        self.child(x).pid
                    ));
                    self.kill_all(libc::SIGKILL);
                    for p in [sp, fp] {
                        self.wait_for(p, Duration::from_secs(5));
                    }
                    self.finish(1)
                }
            } else {
                stopped = now_stopped;
                stop_ticks = 0;
            }
            if !tty
                && self.s.progress_secs > 0
                && last_progress.elapsed().as_secs() >= self.s.progress_secs
            {
                last_progress = Instant::now();
                say(&format!(
                    "running for {} s (scheduler pid {sp}, fabric pid {fp}, transport {})",
                    t0.elapsed().as_secs(),
                    self.s.transport.name()
                ));
            }
        };

        // One side ended. Give the other a moment to end by itself (it
        // notices a dead peer within ~0.1 s), then collect both statuses.
        let other = first.other();
        let (first_pid, other_pid) = (self.child(first).pid, self.child(other).pid);
        let first_status = self.status_of(first_pid).unwrap();
        // Bad input (2) on one side: the other cannot do anything useful
        // (typically it still waits for its peer to appear), so it is
        // stopped at once.
        let grace = match first_status {
            0 => Duration::from_secs(10),
            2 => Duration::ZERO,
            _ => Duration::from_secs(2),
        };
        let until = Instant::now() + grace;
        while self.status_of(other_pid).is_none()
            && !self.child(other).stopped()
            && Instant::now() < until
        {
            self.next(Duration::from_millis(100));
        }
        let mut killed_other = false;
        let mut other_stopped = false;
        if self.status_of(other_pid).is_none() {
            if self.child(other).stopped() {
                say(&format!("the {} is stopped (SIGSTOP?)", other.name()));
                other_stopped = true;
            } else if first_status == 0 {
                say(&format!(
                    "the {} did not exit 10 s after the {} finished; killing it",
                    other.name(),
                    first.name()
                ));
            }
            killed_other = true;
            self.child(other).kill(libc::SIGTERM);
            if !self.wait_for(other_pid, Duration::from_secs(1)) {
                self.child(other).kill(libc::SIGKILL);
                self.wait_for(other_pid, Duration::from_secs(10));
            }
        }
        let other_status = self.status_of(other_pid).unwrap_or(137);
        let followed = |c: &Child, side: Side| match side {
            Side::Scheduler => c.stderr_contains(&[
                "peer fabric (pid",
                "the fabric reports",
                "the fabric rejects",
                "the fabric failed",
            ]),
            Side::Fabric => {
                c.stderr_contains(&["peer scheduler (pid", "the scheduler reported an error"])
            }
        };
        // Words with which a side says it received an Error record from its
        // peer (the peer is the one that reported a failure).
        let got_error = |c: &Child, side: Side| match side {
            Side::Scheduler => c.stderr_contains(&[
                "the fabric reports",
                "the fabric rejects",
                "the fabric failed (code",
            ]),
            Side::Fabric => c.stderr_contains(&["the scheduler reported an error"]),
        };
        // The followers' texts are complete once the sides are gone.
        if let Some(c) = self.sched.as_mut() {
            c.drain_stderr();
        }
        if let Some(c) = self.fabric.as_mut() {
            c.drain_stderr();
        }
        let v = verdict::decide(&Observed {
            first,
            first_status,
            other_status,
            killed_other,
            other_stopped,
            first_followed: followed(self.child(first), first),
            other_followed: followed(self.child(other), other),
            first_got_error: got_error(self.child(first), first),
            other_got_error: got_error(self.child(other), other),
        });
        if v.status == 2 {
            // Bad input: the side's own line names the problem; its peer's
            // lines about its end, and a verdict line, would only be noise.
            self.drop_followers = true;
        } else if let Some((c, why)) = v.culprit {
            let pid = self.child(c).pid;
            match why {
                Why::Stopped => say(&format!(
                    "the {} failed first: it was stopped (pid {pid}); both sides ended",
                    c.name()
                )),
                Why::Unresponsive => say(&format!(
                    "the {} failed first: it stopped responding (its peer saw no progress) and was killed (pid {pid}); both sides ended",
                    c.name()
                )),
                Why::Status(st) => say(&format!(
                    "the {} failed first with {} (pid {pid}); both sides ended",
                    c.name(),
                    describe(st)
                )),
            }
        }
        self.finish(v.status)
    }
}

/// The protocol the supervisor asks of its fabric. Version 3 is version 2
/// plus the one-sided record (InsertOp), record for record the same when a
/// schedule has no put/get, and our scheduler asked for version 2 accepts a
/// version-3 fabric (docs/protocol.md sec. 10). So the fabric serves
/// version 3 for the chosen protocol: a schedule with put/get runs under
/// plain `-p notify`/`-p query`. Version 4 (triggered inserts) is served
/// only when asked for (`-p notify-v4`): on this machine it saves round
/// trips but costs more per message than they do (docs/cosim.md, "Speed:
/// what the coupling costs").
fn fabric_protocol(p: &str) -> &str {
    match p {
        "notify" => "notify-v3",
        "query" => "query-v3",
        other => other,
    }
}

#[cfg(test)]
mod fabric_protocol_tests {
    use super::fabric_protocol;

    #[test]
    fn version_2_names_serve_version_3_and_the_others_stay() {
        assert_eq!(fabric_protocol("notify"), "notify-v3");
        assert_eq!(fabric_protocol("query"), "query-v3");
        assert_eq!(fabric_protocol("notify-v1"), "notify-v1");
        assert_eq!(fabric_protocol("query-v1"), "query-v1");
        assert_eq!(fabric_protocol("notify-v3"), "notify-v3");
        assert_eq!(fabric_protocol("notify-v4"), "notify-v4");
        assert_eq!(fabric_protocol("query-v3"), "query-v3");
    }
}
