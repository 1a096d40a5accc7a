//! The peer under test as a child process: started from a command template
//! with `sh -c` in its own process group (so the whole group can be
//! stopped), output captured in a temporary file for failure reasons.

use crate::record::ProtocolSpec;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub struct PeerProcess {
    child: Child,
    log: PathBuf,
    status: Option<ExitStatus>,
    pub command: String,
}

/// `template` with `{key}` and `{protocol}` replaced.
pub fn expand(template: &str, key: &str, protocol: ProtocolSpec) -> String {
    template
        .replace("{key}", key)
        .replace("{protocol}", &protocol.name())
}

impl PeerProcess {
    pub fn spawn(template: &str, key: &str, protocol: ProtocolSpec) -> Result<PeerProcess, String> {
        static N: AtomicU32 = AtomicU32::new(0);
        if !template.contains("{key}") {
            return Err(format!(
                "the --spawn command {template:?} has no {{key}}: the peer would not use the scenario's session key"
            ));
        }
        let command = expand(template, key, protocol);
        let log = std::env::temp_dir().join(format!(
            "ipc-proto-conformance-{}-{}.log",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let f = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let f2 = f
            .try_clone()
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        Ok(PeerProcess {
            child,
            log,
            status: None,
            command,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait at most `within` for the peer to exit.
    pub fn wait_timeout(&mut self, within: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(s) = self.status {
                return Some(s);
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
                return Some(s);
            }
            if start.elapsed() >= within {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The last `n` non-empty lines the peer printed, joined with " | ".
    pub fn output_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..].join(" | ")
    }

    /// Stop the peer's process group (SIGTERM, then SIGKILL) and reap it.
    pub fn kill(&mut self) {
        if self.wait_timeout(Duration::ZERO).is_none() {
            let pg = -(self.child.id() as i32);
            // SAFETY: kill(2) takes no pointers; `pg` is the process group
            // of the child we spawned and have not reaped yet.
            unsafe { libc::kill(pg, libc::SIGTERM) };
            if self.wait_timeout(Duration::from_millis(500)).is_none() {
                // SAFETY: as above.
                unsafe { libc::kill(pg, libc::SIGKILL) };
                let _ = self.child.wait();
            }
        } else {
            // The shell is gone; make sure nothing it started survives.
            // SAFETY: kill(2) takes no pointers; the group id is the one of
            // the child we spawned as a group leader.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A child process that only exists to die on command: its pid is
/// published as ours so that the peer's liveness check can be tested.
pub struct StandIn {
    child: Child,
}

impl StandIn {
    pub fn start() -> Result<StandIn, String> {
        let child = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start a stand-in process (sleep): {e}"))?;
        Ok(StandIn { child })
    }
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    /// Kill and reap it: from now on it is dead for every liveness check.
    pub fn die(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.die();
    }
}
