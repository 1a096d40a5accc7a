//! The error type of every fallible operation in this crate.

use crate::record::Role;
use nix::errno::Errno;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The peer process is gone (its pid no longer exists or is a zombie),
    /// or, in-process, the peer's end was dropped.
    #[error("peer {peer} (pid {pid}) died or closed its end of the session")]
    PeerDied { peer: Role, pid: u32 },
    /// The peer's heartbeat (control segment) lags ours by more than the
    /// stall timeout: it is stopped (SIGSTOP) or frozen (see
    /// [`crate::liveness`]).
    #[error("peer {peer} (pid {pid}) stopped responding: its heartbeat is {lag:.1?} behind ours (stopped with SIGSTOP/Ctrl-Z, frozen, or hung: no progress; limit IBCOSIM_STALL_TIMEOUT)")]
    PeerStalled { peer: Role, pid: u32, lag: Duration },
    /// A bounded wait ran out.
    #[error("timed out after {waited:?} waiting for {what}")]
    TimedOut { waited: Duration, what: String },
    /// The peer (or the local caller) broke a protocol rule.
    #[error("protocol violation: {0}")]
    Violation(String),
    /// The two sides speak different protocol versions.
    #[error("protocol version mismatch: ours is {ours}, theirs is {theirs}")]
    VersionMismatch { ours: u32, theirs: u32 },
    /// An invalid session key.
    #[error("invalid session key {key:?}: {reason}")]
    BadKey { key: String, reason: String },
    /// Exclusive creation found objects of the same key (a concurrent run,
    /// or leftovers of a killed run: remove them with `ipc-proto cleanup KEY`).
    #[error("session objects for key {key:?} already exist ({name}); another run uses this key, or a killed run left them behind: run `ipc-proto cleanup {key}`")]
    SessionExists { key: String, name: String },
    /// mq_open failed with EMFILE: the per-user RLIMIT_MSGQUEUE budget
    /// (819200 bytes here, about 9 queues of 10 x 8192) is used up by other
    /// sessions or by leftovers of killed runs.
    #[error("cannot create message queue {name}: the per-user message-queue budget (RLIMIT_MSGQUEUE, {limit} bytes) is exhausted by other sessions or leftovers of killed runs; remedies: use the shared-memory transport (`--transport shm`, no such limit), run fewer message-queue sessions at once, remove leftovers with `ipc-proto cleanup KEY`, or raise the limit (`ulimit -q`, limits.conf msgqueue)")]
    QueueBudget { name: String, limit: u64 },
    /// Shared memory could not be created or sized (/dev/shm full, or a
    /// memory limit).
    #[error("cannot create the shared-memory segment {name}: {errno} ({}); /dev/shm is full or a memory limit is reached: free space in /dev/shm (remove leftovers with `ipc-proto cleanup KEY`) or use fewer concurrent sessions", errno.desc())]
    ShmExhausted { name: String, errno: Errno },
    /// A system call failed.
    #[error("{op}({name}) failed: {errno} ({})", errno.desc())]
    Os {
        op: &'static str,
        name: String,
        errno: Errno,
    },
}

/// Exit code of every binary when a system resource is exhausted (the
/// message-queue budget RLIMIT_MSGQUEUE, /dev/shm): distinct from 1
/// (simulation failed) and 2 (bad input or options).
pub const EXIT_RESOURCE: i32 = 3;

impl ProtoError {
    /// True when the error is a resource limit (exit with [`EXIT_RESOURCE`]).
    pub fn is_resource_exhausted(&self) -> bool {
        matches!(
            self,
            ProtoError::QueueBudget { .. } | ProtoError::ShmExhausted { .. }
        ) || matches!(self, ProtoError::Os { errno, .. } if matches!(errno, Errno::ENOSPC | Errno::ENOMEM | Errno::ENFILE))
    }

    /// The process exit code for this error: [`EXIT_RESOURCE`] for
    /// resource limits, 2 for a bad session key, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.is_resource_exhausted() {
            EXIT_RESOURCE
        } else if matches!(self, ProtoError::BadKey { .. }) {
            2
        } else {
            1
        }
    }

    pub(crate) fn os(op: &'static str, name: impl Into<String>, errno: Errno) -> ProtoError {
        ProtoError::Os {
            op,
            name: name.into(),
            errno,
        }
    }
}

pub type Result<T, E = ProtoError> = std::result::Result<T, E>;
