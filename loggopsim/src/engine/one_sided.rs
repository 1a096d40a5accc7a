//! One-sided operations in the engine (docs/rdma.md "LogGP costs" gives the
//! rules and their derivation).
//!
//! A put or get starts on its initiator like a send: it waits for the CPU
//! and the NIC, takes the CPU for o (the size class's overhead, no O: the
//! NIC reads the payload from memory, nothing is copied by the CPU) and
//! the NIC's send gap (put: g + (s-1)G, the data leaves through it; get:
//! g, only the request does). Everything after that is done by the NICs
//! and the network, never by a CPU:
//!
//! - put: the data arrives at the target (a message event, as for a send:
//!   no earlier than t + o + L) and is written by the target NIC in
//!   (s-1)G: that is the remote completion, which a `poll` on the target
//!   observes; the acknowledgement then travels back (one L in LogGP) and
//!   its arrival is the local completion (the put's `requires` point);
//! - get: the request arrives at the target (t + o + L), the target NIC
//!   sends the response at once (no target CPU, no target gap), it
//!   arrives at the initiator (one more L) and is written there in
//!   (s-1)G: the get's completion.
//!
//! The target NIC's gaps (g, nextgr/nextgs) are not charged for these
//! NIC-generated transfers: the LogGP NIC gap models the host's message
//! injection; a fabric backend serialises the packets on its links itself.
//!
//! Backends that carry put/get natively (the fabric, `insert_op`) report
//! the points themselves; the engine then applies the same endpoint terms:
//! remote completion = delivery + (s-1)G, local completion = the ack's
//! arrival + (s-1)G (the ack left (s-1)G after the delivery in the
//! composed model), get completion = response delivery + (s-1)G. Other
//! backends get the parts as messages (network/mod.rs `native_one_sided`).

use super::checked::{add, mul, overflow, v};
use super::handlers::{Msg, Outcome};
use super::queue::Ev;
use super::{Params, SimError, TraceEvent, Tracer};
use crate::hash::FastMap;
use crate::network::{Envelope, Handle, Network, OneSidedOp};
use crate::schedule::Kind;
use crate::Time;
use std::collections::VecDeque;

/// What a message slot of the engine carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// A two-sided message (send/recv).
    Data,
    /// Composed put: the data message (event at the target).
    PutData,
    /// Composed put: the 0-byte acknowledgement (event at the initiator).
    PutAck,
    /// Composed get: the 0-byte read request (event at the target).
    GetReq,
    /// Composed get: the response (event at the initiator).
    GetResp,
    /// Native put: the data is delivered at the target.
    PutDelivered,
    /// Native put: the acknowledgement is back at the initiator.
    PutAcked,
    /// Native get: the response is delivered at the initiator.
    GetDone,
}

/// Remote completions not yet polled and polls waiting for a put, by
/// (target, source, tag), both FIFO.
#[derive(Default)]
pub(super) struct State {
    done: FastMap<(u32, u32, u32), VecDeque<u64>>,
    polls: FastMap<(u32, u32, u32), VecDeque<u32>>,
}

impl State {
    /// Polls still waiting (never matched by a put).
    pub(super) fn waiting_polls(&self) -> usize {
        self.polls.values().map(|q| q.len()).sum()
    }
}

/// The uncontended LogGP times of one-sided operations, relative to the
/// start t of the operation (docs/rdma.md "LogGP costs").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneSidedTimes {
    /// put: all data written at the target, o + L + (s-1)G
    pub put_remote: u64,
    /// put: acknowledgement back at the initiator, o + 2L + (s-1)G
    pub put_local: u64,
    /// get: response written at the initiator, o + 2L + (s-1)G
    pub get_done: u64,
}

impl Params {
    /// The uncontended LogGP times of a put/get of `size` bytes (None on
    /// overflow).
    pub fn one_sided_times(&self, size: u64) -> Option<OneSidedTimes> {
        let o = self.overheads(size).0;
        let s1g = mul(size.saturating_sub(1), self.big_g)?;
        let put_remote = add(add(v(o), v(self.l)), v(s1g))?;
        let put_local = add(v(put_remote), v(self.l))?;
        Some(OneSidedTimes {
            put_remote,
            put_local,
            get_done: put_local,
        })
    }
}

impl<N: Network, T: Tracer> super::Sim<N, T> {
    /// Polls that never completed (for the report).
    pub(super) fn waiting_polls(&self) -> usize {
        self.rdma.waiting_polls()
    }

    /// A put or get is taken from the active queue on its initiator.
    pub(super) fn one_sided_start(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        // the same check as a send's (CPU and NIC), so the same class
        let (op, ci, ni) = match self.start_on_cpu_nic(ev) {
            Ok(started) => started,
            Err(blocked) => return Ok(blocked),
        };
        let t = ev.time;
        let p = self.params;
        let is_put = op.kind == Kind::Put;
        let what = if is_put { "put" } else { "get" };
        let ovf = || overflow(ev.host, what, t);
        let o = p.overheads(op.size).0;
        let end = add(add(v(t), v(o)), v(self.noise(ev.host, t, o))).ok_or_else(ovf)?;
        let nic_bytes = if is_put {
            mul(op.size.saturating_sub(1), p.big_g).ok_or_else(ovf)?
        } else {
            0
        };
        let gs = add(add(v(t), v(p.g)), v(nic_bytes)).ok_or_else(ovf)?;
        let (msg_time, t_ins) = self.occupy(ci, ni, t, o, end, gs).ok_or_else(ovf)?;
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::OneSided {
                what: if is_put { "put_start" } else { "get_start" },
                host: ev.host,
                peer: op.peer,
                node: ev.id,
                size: op.size,
                tag: op.tag,
                start: t,
                end,
            });
        }
        let (src, peer) = (ev.host, op.peer);
        if self.net.native_one_sided() {
            let kind = if is_put {
                OneSidedOp::Put
            } else {
                OneSidedOp::Get
            };
            let hs =
                self.net
                    .insert_op(Time(t_ins), Envelope::new(src, peer, op.size, op.tag), kind)?;
            if is_put {
                let acked = hs.acked.ok_or_else(|| {
                    SimError::Net(crate::network::NetError::Protocol(
                        "native put without an acknowledgement handle".into(),
                    ))
                })?;
                self.new_part(
                    Role::PutDelivered,
                    src,
                    peer,
                    ev.id,
                    t_ins,
                    hs.first,
                    msg_time,
                );
                self.new_part(Role::PutAcked, peer, src, ev.id, t_ins, acked, msg_time);
            } else {
                self.new_part(Role::GetDone, peer, src, ev.id, t_ins, hs.first, msg_time);
            }
        } else if is_put {
            let hd = self
                .net
                .insert(Time(t_ins), Envelope::new(src, peer, op.size, op.tag))?;
            self.new_part(Role::PutData, src, peer, ev.id, t_ins, hd, msg_time);
        } else {
            let hd = self
                .net
                .insert(Time(t_ins), Envelope::new(src, peer, 0, op.tag))?;
            self.new_part(Role::GetReq, src, peer, ev.id, t_ins, hd, msg_time);
        }
        Ok(Outcome::Done)
    }

    /// A part of a one-sided operation enters the network: a message
    /// `src` -> `dst` inserted at `t_ins` whose event happens on `dst` no
    /// earlier than `earliest`.
    #[allow(clippy::too_many_arguments)]
    fn new_part(
        &mut self,
        role: Role,
        src: u32,
        dst: u32,
        node: u32,
        t_ins: u64,
        handle: Handle,
        earliest: u64,
    ) {
        let op = self.sched.op(node);
        let size = match role {
            Role::PutAck | Role::GetReq => 0,
            _ => op.size,
        };
        let m = Msg::entering(role, src, dst, node, &op, size, t_ins, handle, true);
        // (fails only through triggers, which are off with one-sided operations)
        let _ = self.track_message(m, earliest, t_ins, false);
    }

    /// The event of a part of a one-sided operation on `ev.host`.
    pub(super) fn one_sided_message(&mut self, ev: Ev, slot: u32) -> Result<Outcome, SimError> {
        let t = ev.time;
        let m = self.msgs[slot as usize];
        let ef = self.earliest_arrival(slot, t)?;
        if ef > t {
            // not there yet; no CPU or host NIC gap is involved
            self.reinsert(ev, ef, "msg");
            return Ok(Outcome::Done);
        }
        self.free_msg(slot);
        let op = self.sched.op(m.send_node);
        let host = ev.host;
        let ovf = || overflow(host, "one-sided transfer", t);
        // the NIC writes the data in (s-1)G
        let written =
            add(v(t), mul(op.size.saturating_sub(1), self.params.big_g)).ok_or_else(ovf)?;
        match m.role {
            Role::Data => unreachable!("two-sided messages are handled by message()"),
            Role::PutData | Role::PutDelivered => {
                self.remote_done(host, m.src, m.send_node, written);
                if m.role == Role::PutData {
                    // the target NIC acknowledges once the data is written
                    let ack = self
                        .net
                        .insert(Time(written), Envelope::new(host, m.src, 0, m.tag))?;
                    let earliest = add(v(written), v(self.params.l)).ok_or_else(ovf)?;
                    self.new_part(
                        Role::PutAck,
                        host,
                        m.src,
                        m.send_node,
                        written,
                        ack,
                        earliest,
                    );
                }
            }
            Role::GetReq => {
                // the target NIC answers at once
                let resp = self
                    .net
                    .insert(Time(t), Envelope::new(host, m.src, op.size, m.tag))?;
                let earliest = add(v(t), v(self.params.l)).ok_or_else(ovf)?;
                self.new_part(Role::GetResp, host, m.src, m.send_node, t, resp, earliest);
            }
            Role::PutAck | Role::PutAcked | Role::GetResp | Role::GetDone => {
                let (what, done) = match m.role {
                    Role::PutAck => ("put_local", t),
                    Role::PutAcked => ("put_local", written),
                    _ => ("get_done", written),
                };
                if T::ACTIVE {
                    self.tracer.event(&TraceEvent::OneSided {
                        what,
                        host,
                        peer: op.peer,
                        node: m.send_node,
                        size: op.size,
                        tag: op.tag,
                        start: t,
                        end: done,
                    });
                }
                self.complete_op(m.send_node, host, done);
            }
        }
        Ok(Outcome::Done)
    }

    /// All data of the put `node` from `src` is written at `target` at
    /// `at`: a waiting poll completes, or the completion is kept for the
    /// next poll.
    fn remote_done(&mut self, target: u32, src: u32, node: u32, at: u64) {
        let op = self.sched.op(node);
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::OneSided {
                what: "put_remote",
                host: target,
                peer: src,
                node,
                size: op.size,
                tag: op.tag,
                start: self.now,
                end: at,
            });
        }
        let key = (target, src, op.tag);
        if let Some(q) = self.rdma.polls.get_mut(&key) {
            if let Some(poll) = q.pop_front() {
                if q.is_empty() {
                    self.rdma.polls.remove(&key);
                }
                self.poll_done(target, poll, self.now, at);
                return;
            }
        }
        self.rdma.done.entry(key).or_default().push_back(at);
    }

    fn poll_done(&mut self, host: u32, poll: u32, start: u64, at: u64) {
        if T::ACTIVE {
            let op = self.sched.op(poll);
            self.tracer.event(&TraceEvent::OneSided {
                what: "poll_done",
                host,
                peer: op.peer,
                node: poll,
                size: op.size,
                tag: op.tag,
                start,
                end: at,
            });
        }
        self.complete_op(poll, host, at);
    }

    /// A poll is taken from the active queue on the target: it completes
    /// at max(now, the remote completion of the next put from its peer
    /// with its tag), waiting for that put if needed. A poll costs no CPU
    /// time (as a receive matched from the UQ).
    pub(super) fn poll(&mut self, ev: Ev) -> Outcome {
        let op = self.sched.op(ev.id);
        let t = ev.time;
        self.start_op(ev.id, ev.host, t);
        let key = (ev.host, op.peer, op.tag);
        let done = match self.rdma.done.get_mut(&key) {
            Some(q) => {
                let d = q.pop_front();
                if q.is_empty() {
                    self.rdma.done.remove(&key);
                }
                d
            }
            None => None,
        };
        match done {
            Some(at) => self.poll_done(ev.host, ev.id, t, at.max(t)),
            None => self.rdma.polls.entry(key).or_default().push_back(ev.id),
        }
        Outcome::Done
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{OneSidedTimes, Params};

    /// docs/rdma.md "LogGP costs" with the defaults and s = 10:
    /// put_remote = o + L + 9G = 1500 + 2500 + 54 = 4054, one more L for
    /// the acknowledgement (put) or the response (get): 6554.
    #[test]
    fn uncontended_times() {
        assert_eq!(
            Params::default().one_sided_times(10),
            Some(OneSidedTimes {
                put_remote: 4054,
                put_local: 6554,
                get_done: 6554,
            })
        );
        let huge = Params {
            big_g: u64::MAX / 2,
            ..Params::default()
        };
        assert_eq!(huge.one_sided_times(10), None);
    }

    /// The composed put on LogGP: the initiator's dependent calc starts at
    /// the local completion 6554; the target's poll completes at the
    /// remote completion 4054 (a poll costs no CPU), so its calc ends at 4055.
    #[test]
    fn put_completions_release_their_dependents() {
        let text = "num_ranks 2\nrank 0 {\nl1: put 10b to 1\nl2: calc 1\nl2 requires l1\n}\nrank 1 {\nl1: poll 10b from 0\nl2: calc 1\nl2 requires l1\n}\n";
        let mut sim = crate::engine::build::loggp_sim(text);
        sim.run().unwrap();
        let r = sim.report();
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.finish_times, vec![6555, 4055]);
    }
}
