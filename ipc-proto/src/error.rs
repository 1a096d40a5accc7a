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
    #[error("cannot create message queue {name}: the per-user message-queue budget (RLIMIT_MSGQUEUE, {limit} bytes; one queue of 10 x 8192 bytes takes about 83 KB) is exhausted by other sessions or leftovers of killed runs (remove them with `ipc-proto cleanup KEY`)")]
    QueueBudget { name: String, limit: u64 },
    /// A system call failed.
    #[error("{op}({name}) failed: {errno} ({})", errno.desc())]
    Os {
        op: &'static str,
        name: String,
        errno: Errno,
    },
}

impl ProtoError {
    pub(crate) fn os(op: &'static str, name: impl Into<String>, errno: Errno) -> ProtoError {
        ProtoError::Os {
            op,
            name: name.into(),
            errno,
        }
    }
}

pub type Result<T, E = ProtoError> = std::result::Result<T, E>;
