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
