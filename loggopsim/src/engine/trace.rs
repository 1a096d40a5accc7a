//! What the engine reports to `-v` and `-V` while it runs: [`TraceEvent`]
//! and the [`Tracer`] that receives them (docs/model/loggops.md 8). With
//! [`NoTrace`] every tracing branch compiles away.

use crate::network::Handle;

/// Something the engine did, for `-v` and `-V` (see [`Tracer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    Calc {
        host: u32,
        cpu: u8,
        node: u32,
        start: u64,
        end: u64,
    },
    Send {
        host: u32,
        cpu: u8,
        node: u32,
        dst: u32,
        size: u64,
        tag: u32,
        start: u64,
        end: u64,
        handle: Handle,
    },
    /// A receive was posted into the RQ.
    RecvPosted {
        host: u32,
        cpu: u8,
        node: u32,
        src: u32,
        tag: u32,
        time: u64,
    },
    /// A receive matched a message already in the UQ.
    RecvMatched {
        host: u32,
        cpu: u8,
        node: u32,
        src: u32,
        tag: u32,
        /// the receive's size (it decides rendezvous)
        size: u64,
        time: u64,
    },
    /// A message was taken in by the receiver (CPU/NIC charged); `node` is
    /// the matched receive, or None when it went into the UQ.
    MsgReceived {
        host: u32,
        cpu: u8,
        src: u32,
        size: u64,
        tag: u32,
        sent: u64,
        arrived: u64,
        start: u64,
        end: u64,
        node: Option<u32>,
        /// the receiver's CPU (o) and NIC (g) availability before this
        /// message was charged (LogGOPSim's verbose `nexto`, `nextgr`)
        prev_o: u64,
        prev_gr: u64,
    },
    /// An event could not run and was re-inserted.
    Reinsert {
        host: u32,
        what: &'static str,
        from: u64,
        to: u64,
    },
    /// Notify mode: the engine waited for the network.
    Wait { now: u64, arrivals: usize },
    /// A one-sided operation (docs/rdma.md) reached a point: `what` is
    /// "put_start"/"get_start" (on the initiator, CPU busy `start..end`),
    /// "put_remote" (all data written at the target `host`),
    /// "put_local" (acknowledgement back at the initiator `host`),
    /// "get_done" (response written at the initiator `host`) or
    /// "poll_done" (a poll on the target `host` completed at `end`).
    OneSided {
        what: &'static str,
        host: u32,
        peer: u32,
        node: u32,
        size: u64,
        tag: u32,
        start: u64,
        end: u64,
    },
}

/// Receives [`TraceEvent`]s. `ACTIVE = false` removes all tracing code.
pub trait Tracer {
    const ACTIVE: bool = true;
    fn event(&mut self, e: &TraceEvent);
}

/// No tracing.
pub struct NoTrace;
impl Tracer for NoTrace {
    const ACTIVE: bool = false;
    #[inline]
    fn event(&mut self, _e: &TraceEvent) {}
}

impl<F: FnMut(&TraceEvent)> Tracer for F {
    fn event(&mut self, e: &TraceEvent) {
        self(e)
    }
}

/// Every event of a GOAL schedule run with the default parameters on
/// LogGP, in order (for the engine's unit tests).
#[cfg(test)]
pub(super) fn loggp_events(text: &str) -> Vec<TraceEvent> {
    let s = crate::goal::parse_str("t.goal", text).unwrap();
    let mut seen = Vec::new();
    let mut sim = super::Sim::with_tracer(
        s,
        super::Params::default(),
        crate::network::LogGp::new(),
        |e: &TraceEvent| seen.push(e.clone()),
    )
    .unwrap();
    sim.run().unwrap();
    drop(sim);
    seen
}

#[cfg(test)]
mod tests {
    use super::{loggp_events, NoTrace, TraceEvent, Tracer};

    fn accepts<T: Tracer>(_: &T) -> bool {
        T::ACTIVE
    }

    #[test]
    fn no_trace_is_inactive_and_closures_are_active() {
        assert!(!accepts(&NoTrace));
        assert!(accepts(&|_: &TraceEvent| {}));
    }

    /// The worked example of docs/model/loggops.md 2 on one rank pair,
    /// traced: rank 0's calc runs 0..100, its send 100..1600 (o = 1500);
    /// the message is taken in at 100 + o + L = 4100 and ends at
    /// 4100 + o + 9G = 5654.
    #[test]
    fn a_closure_sees_every_event_with_its_times() {
        let text = "num_ranks 2\nrank 0 {\nl1: calc 100\nl2: send 10b to 1\nl2 requires l1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n";
        let seen = loggp_events(text);
        assert!(matches!(
            seen[0],
            TraceEvent::Calc {
                host: 0,
                start: 0,
                end: 100,
                ..
            }
        ));
        assert!(matches!(
            seen[1],
            TraceEvent::RecvPosted {
                host: 1,
                time: 0,
                ..
            }
        ));
        assert!(matches!(
            seen[2],
            TraceEvent::Send {
                host: 0,
                start: 100,
                end: 1600,
                ..
            }
        ));
        assert!(matches!(
            seen[3],
            TraceEvent::MsgReceived {
                host: 1,
                start: 4100,
                end: 5654,
                node: Some(_),
                ..
            }
        ));
        assert_eq!(seen.len(), 4);
    }
}
