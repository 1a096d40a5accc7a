//! The ways a run fails (docs/model/loggops.md 9.4: every crash, hang or
//! silent wrap of the reference is a clear error here).

use crate::network::{Handle, NetError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("network: {0}")]
    Net(#[from] NetError),
    #[error("network reported an arrival for unknown message handle {0}")]
    UnknownHandle(Handle),
    #[error("network reported no arrivals although {0} messages are in flight")]
    NoArrivals(usize),
    /// Exact notify (protocol version 2): an arrival reported for a time
    /// the engine has already passed. Impossible unless the network broke
    /// its grant; never just counted.
    #[error("network reported message {handle} arriving at {at} ps, but the scheduler had already processed events up to {now} ps under the network's grant (exact notify, protocol version 2)")]
    LateArrival { handle: Handle, at: u64, now: u64 },
    /// Exact notify: the network answered a wait with neither an arrival
    /// nor a grant beyond the horizon (it would never progress).
    #[error("network answered a wait at horizon {horizon} ps with no arrival and a grant of {grant} ps (must be later than the horizon)")]
    NoProgress { horizon: u64, grant: u64 },
    #[error("schedule too large ({0} ranks; the engine supports fewer than 2^31)")]
    TooLarge(u64),
    /// A time computation exceeded the range of simulated time (it used
    /// to saturate silently at 2^64-1, the protocol's "never").
    #[error(
        "time overflow on host {host} ({what} at time {at}): simulated time would reach \
         2^64-1 ps or more; check the schedule's calc durations and message sizes and the \
         -L/-o/-g/-G/-O parameters"
    )]
    TimeOverflow {
        host: u32,
        what: &'static str,
        at: u64,
    },
    /// Triggered inserts (protocol version 4): the network's reaction to
    /// an armed message differs from the engine's own. A bug on one side;
    /// never silently accepted.
    #[error("triggered insert: {0}")]
    Trigger(String),
}

#[cfg(test)]
mod tests {
    use super::SimError;
    use crate::network::NetError;

    #[test]
    fn messages_name_the_cause() {
        let e = SimError::TimeOverflow {
            host: 3,
            what: "send",
            at: 42,
        };
        let s = e.to_string();
        assert!(
            s.starts_with("time overflow on host 3 (send at time 42)"),
            "{s}"
        );
        assert!(s.contains("-L/-o/-g/-G/-O"), "{s}");
        let n: SimError = NetError::Protocol("bad".into()).into();
        assert!(matches!(n, SimError::Net(_)));
        assert!(n.to_string().starts_with("network: "), "{n}");
    }
}
