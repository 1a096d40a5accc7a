//! The event handlers of docs/model/loggops.md 6: one module per kind of
//! event (calc, send, recv, message); one-sided operations are in
//! `engine/one_sided.rs`. Each handler either runs its event or reports
//! the time its CPU/NIC is free (`Outcome::Blocked`).

mod calc;
mod message;
mod recv;
mod send;

use super::one_sided;
use super::{Sim, SimError, Tracer};
use crate::network::{Handle, InFlight, Network};
use crate::schedule::Op;
use crate::Time;

/// What a handler did with its event.
pub(in crate::engine) enum Outcome {
    Done,
    /// CPU/NIC busy until `avail`; `class` identifies the resources checked.
    Blocked {
        avail: u64,
        class: u64,
    },
}

/// A message in flight (a slot of `Sim::msgs`).
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Msg {
    /// what this message is (parts of one-sided operations too)
    pub role: one_sided::Role,
    pub src: u32,
    pub dst: u32,
    pub send_node: u32,
    pub tag: u32,
    pub size: u64,
    pub start: u64,
    pub handle: Handle,
    /// earliest arrival the network confirmed (valid when `arrived`)
    pub arrival: u64,
    /// seq of the message's arrival event (the engine's insertion order
    /// when the message was tracked; used in notify and exact modes)
    pub seq: u64,
    pub cpu: u8,
    pub nic: u8,
    pub arrived: bool,
    /// the send operation has completed (eager, or rendezvous matched)
    pub send_done: bool,
}

impl Msg {
    /// The message `role` of schedule operation `op` (node `node`) as it
    /// enters the network at `start`: not arrived, its tag, CPU and NIC
    /// the operation's; `track_message` sets its seq and, in exact mode,
    /// its earliest arrival.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(in crate::engine) fn entering(
        role: one_sided::Role,
        src: u32,
        dst: u32,
        node: u32,
        op: &Op,
        size: u64,
        start: u64,
        handle: Handle,
        send_done: bool,
    ) -> Msg {
        Msg {
            role,
            src,
            dst,
            send_node: node,
            tag: op.tag,
            size,
            start,
            handle,
            arrival: 0,
            seq: 0,
            cpu: op.cpu,
            nic: op.nic,
            arrived: false,
            send_done,
        }
    }
}

impl<N: Network, T: Tracer> Sim<N, T> {
    #[inline]
    pub(in crate::engine) fn noise(&self, host: u32, start: u64, len: u64) -> u64 {
        match &self.noise {
            Some(n) => n.extra(host, start, len),
            None => 0,
        }
    }

    /// Completes the rendezvous send of message `m` at match time `t` and
    /// raises the sender's CPU/NIC availability to at least `t`.
    pub(in crate::engine) fn rendezvous_done(&mut self, slot: u32, t: u64) {
        let m = self.msgs[slot as usize];
        let ci = m.src as usize * self.ncpu + m.cpu as usize;
        let ni = m.src as usize * self.nnic + m.nic as usize;
        self.nexto[ci] = self.nexto[ci].max(t);
        self.nextgs[ni] = self.nextgs[ni].max(t);
        if !m.send_done {
            self.msgs[slot as usize].send_done = true;
            if self.trig.on {
                self.trig.rdv_open[m.src as usize] -= 1;
            }
            self.complete_op(m.send_node, m.src, t);
        }
    }

    /// The earliest arrival of message `slot` as known at `t`: the one the
    /// network confirmed, else its answer to a query (poll mode),
    /// remembered once the message is there.
    #[inline(always)]
    pub(in crate::engine) fn earliest_arrival(
        &mut self,
        slot: u32,
        t: u64,
    ) -> Result<u64, SimError> {
        let m = &self.msgs[slot as usize];
        if m.arrived {
            return Ok(m.arrival.min(t));
        }
        let sent = InFlight {
            handle: m.handle,
            start: Time(m.start),
        };
        let ef = self.net.query(Time(t), sent)?.0;
        if ef <= t {
            let mm = &mut self.msgs[slot as usize];
            mm.arrived = true;
            mm.arrival = ef;
        }
        Ok(ef)
    }

    pub(in crate::engine) fn free_msg(&mut self, slot: u32) {
        self.msg_free.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Params, Report, Sim};
    use crate::network::LogGp;

    /// Runs a GOAL text on LogGP (shared by the handlers' tests).
    pub(super) fn run(text: &str, p: Params) -> Report {
        let s = crate::goal::parse_str("case.goal", text).expect("parse");
        let mut sim = Sim::new(s, p, LogGp::new()).unwrap();
        sim.run().unwrap();
        let r = sim.report();
        assert!(r.ok(), "{:?}", r.leftovers);
        r
    }

    /// Rendezvous (docs/model/loggops.md 6): a send above S completes when
    /// the receive matches, at 100000 (the receiver computes until then),
    /// and raises the sender's nexto to that time: its calc runs
    /// 100000..100010.
    #[test]
    fn rendezvous_completes_the_send_at_the_match() {
        let r = run(
            "num_ranks 2\nrank 0 {\nl1: send 70000b to 1\nl2: calc 10\nl2 requires l1\n}\nrank 1 {\nl1: calc 100000\nl2: recv 70000b from 0\nl2 requires l1\n}\n",
            Params::default(),
        );
        assert_eq!(r.finish_times[0], 100010);
    }
}
