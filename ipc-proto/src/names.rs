//! Session keys, the queues ("lanes") of each protocol, object names, and
//! which record travels on which queue.

use crate::error::ProtoError;
use crate::record::{kind, Protocol, Role};
use std::fmt;

/// Longest accepted session key. Object names are `/<key>.<suffix>`, far
/// below NAME_MAX (255) for message queues and shared memory.
pub const MAX_KEY_LEN: usize = 64;

/// A validated session key: 1..=64 characters from `[A-Za-z0-9_-]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionKey(String);

impl SessionKey {
    pub fn new(key: &str) -> Result<SessionKey, ProtoError> {
        let bad = |reason: &str| ProtoError::BadKey {
            key: key.to_string(),
            reason: reason.to_string(),
        };
        if key.is_empty() {
            return Err(bad("empty"));
        }
        if key.len() > MAX_KEY_LEN {
            return Err(bad(&format!("longer than {MAX_KEY_LEN} characters")));
        }
        if let Some(c) = key
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(bad(&format!(
                "character {c:?} not allowed (use A-Z a-z 0-9 _ -)"
            )));
        }
        Ok(SessionKey(key.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// `/<key>.ctl`: the control segment.
    pub fn segment_name(&self) -> String {
        format!("/{}.ctl", self.0)
    }
    /// `/<key>.<suffix>` of a queue.
    pub fn queue_name(&self, lane: Lane) -> String {
        format!("/{}.{}", self.0, lane.suffix())
    }
    /// Every object name a session of this key can ever create (all lanes of
    /// both protocols, then the segment), for cleanup.
    pub fn all_object_names(&self) -> Vec<String> {
        let mut v: Vec<String> = Lane::ALL.iter().map(|&l| self.queue_name(l)).collect();
        v.push(self.segment_name());
        v
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One message queue of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Scheduler -> fabric: Hello, Insert, NoMoreInserts (notify), Finish, Error.
    Ins,
    /// Scheduler -> fabric (query protocol only): Query.
    Qry,
    /// Fabric -> scheduler (query protocol): Hello, Reply, Error.
    Rep,
    /// Fabric -> scheduler (notify protocol): Hello, Arrival, ArrivalBatchEnd, Error.
    Arr,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Ins, Lane::Qry, Lane::Rep, Lane::Arr];

    /// The position of this lane among `written`, the lanes a side
    /// writes, or the violation of writing one it does not (`object`:
    /// what a lane is to the transport, a queue or a ring).
    #[inline]
    pub(crate) fn index_among(
        self,
        written: impl Iterator<Item = Lane>,
        role: Role,
        object: &str,
    ) -> Result<usize, ProtoError> {
        let mut written = written;
        written.position(|l| l == self).ok_or_else(|| {
            ProtoError::Violation(format!(
                "the {role} does not write {object} .{}",
                self.suffix()
            ))
        })
    }

    pub fn suffix(self) -> &'static str {
        match self {
            Lane::Ins => "ins",
            Lane::Qry => "qry",
            Lane::Rep => "rep",
            Lane::Arr => "arr",
        }
    }

    /// Queues of a protocol, in creation order.
    pub fn of(protocol: Protocol) -> &'static [Lane] {
        match protocol {
            Protocol::Query => &[Lane::Ins, Lane::Qry, Lane::Rep],
            Protocol::Notify => &[Lane::Ins, Lane::Arr],
        }
    }

    /// The side that writes this queue.
    pub fn writer(self) -> Role {
        match self {
            Lane::Ins | Lane::Qry => Role::Scheduler,
            Lane::Rep | Lane::Arr => Role::Fabric,
        }
    }

    /// Queues `role` writes in `protocol`; the first carries its Hello.
    pub fn outgoing(protocol: Protocol, role: Role) -> Vec<Lane> {
        Lane::of(protocol)
            .iter()
            .copied()
            .filter(|l| l.writer() == role)
            .collect()
    }

    /// Queues `role` reads in `protocol`.
    pub fn incoming(protocol: Protocol, role: Role) -> Vec<Lane> {
        Lane::outgoing(protocol, role.peer())
    }

    /// The queue on which `sender` sends a record of kind `k` in
    /// `protocol`, or None if that record is not allowed there.
    pub fn route(protocol: Protocol, sender: Role, k: u8) -> Option<Lane> {
        use Protocol::*;
        use Role::*;
        match (sender, protocol, k) {
            (
                Scheduler,
                _,
                kind::HELLO
                | kind::INSERT
                | kind::INSERT_OP
                | kind::FINISH
                | kind::ERROR
                | kind::CONFIG,
            ) => Some(Lane::Ins),
            (Scheduler, Query, kind::QUERY) => Some(Lane::Qry),
            (Scheduler, Notify, kind::NO_MORE_INSERTS | kind::TRIGGER | kind::DISARM) => {
                Some(Lane::Ins)
            }
            (Fabric, Query, kind::HELLO | kind::REPLY | kind::ERROR | kind::CONFIG_ACK) => {
                Some(Lane::Rep)
            }
            (
                Fabric,
                Notify,
                kind::HELLO
                | kind::ARRIVAL
                | kind::ARRIVAL_BATCH_END
                | kind::ERROR
                | kind::CONFIG_ACK
                | kind::GRANT
                | kind::FIRED,
            ) => Some(Lane::Arr),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let k = SessionKey::new("run-42_a").unwrap();
        assert_eq!(k.segment_name(), "/run-42_a.ctl");
        assert_eq!(k.queue_name(Lane::Qry), "/run-42_a.qry");
        assert_eq!(
            k.all_object_names(),
            [
                "/run-42_a.ins",
                "/run-42_a.qry",
                "/run-42_a.rep",
                "/run-42_a.arr",
                "/run-42_a.ctl"
            ]
        );
        assert!(SessionKey::new("").is_err());
        assert!(SessionKey::new(&"a".repeat(65)).is_err());
        assert!(SessionKey::new(&"a".repeat(64)).is_ok());
        let e = SessionKey::new("a/b").unwrap_err().to_string();
        assert!(e.contains("'/'"), "{e}");
        assert!(SessionKey::new("a.b").is_err());
    }

    #[test]
    fn routing_tables() {
        use Protocol::*;
        use Role::*;
        assert_eq!(Lane::outgoing(Query, Scheduler), [Lane::Ins, Lane::Qry]);
        assert_eq!(Lane::incoming(Query, Scheduler), [Lane::Rep]);
        assert_eq!(Lane::outgoing(Notify, Fabric), [Lane::Arr]);
        assert_eq!(Lane::incoming(Notify, Fabric), [Lane::Ins]);
        assert_eq!(Lane::route(Query, Scheduler, kind::QUERY), Some(Lane::Qry));
        assert_eq!(Lane::route(Notify, Scheduler, kind::QUERY), None);
        assert_eq!(Lane::route(Query, Scheduler, kind::NO_MORE_INSERTS), None);
        assert_eq!(Lane::route(Notify, Fabric, kind::REPLY), None);
        assert_eq!(Lane::route(Query, Fabric, kind::INSERT), None);
        assert_eq!(
            Lane::route(Notify, Fabric, kind::ARRIVAL_BATCH_END),
            Some(Lane::Arr)
        );
    }
}
