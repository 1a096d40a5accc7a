//! Lookahead of the parallel engine in the local order (docs/scaling.md
//! 2.11): after an instant, each logical process promises the earliest
//! time at which it could next send an event to another process, and
//! every process runs its instants before the smallest promise alone,
//! without a round. The run is the same; only the rounds are fewer.
//!
//! # What crosses, and when it can
//!
//! Only a link's arrivals cross between processes (`IbufFlit` and
//! `IbufFc`, parallel.rs), and both are scheduled by an obuf that starts
//! a transmission: at its pop (`ObufPop`, `ObufPopTimer`: the data flit
//! queued or an FC packet), or when a flit is handed to it while it is
//! idle (`ObufFlit`). So, for a *cut* port (one of this process's ports
//! whose link leads to another process's node), after instant T:
//!
//! - an obuf with its pop pending sends nothing before that pop
//!   (`pop_at`): a flit handed to it until then is queued;
//! - an idle obuf sends at a hand-off already queued (recorded when the
//!   arbiter schedules it: `watch_handoff`), at a pop of its credit timer
//!   (always at k x Tcred + 1 ns: a tick, or the wake-up of a dormant
//!   obuf, obuf.rs), or at a hand-off its arbiter schedules later;
//! - the arbiter hands a flit over no earlier than its own pending pop
//!   (`pop_at`), and in a switch no earlier than the flit's arrival in its
//!   HoQ slot + VSW (vlarb.rs): a flit that arrives after T goes no
//!   earlier than T + 1 ps + VSW. Only a flit already there can go
//!   sooner, at any kick; unless no such flit fits its VL's credits,
//!   which only an FC packet from the peer changes, and that packet is
//!   itself a crossing, at an instant the processes take together.
//!
//! The promise is the smallest of those bounds over the cut ports, and
//! at least T + 1 ps. An HCA on a cut link (a partition that separates a
//! host from its switch) has no VSW: its process promises T + 1 ps, which
//! is the protocol without lookahead. A process that breaks its promise
//! (an event for another process while it runs alone) stops the run with
//! an internal error; the engine's property tests run with lookahead.
//!
//! # Links with a propagation delay
//!
//! With `link_delay_ns` = d > 0 (docs/model/fabric.md 2.3) an arrival
//! crosses d after its transmission, as an event queued ahead
//! (`Fabric::par_sched_link`), so the promise is the earliest
//! transmission + d, and an instant's generations never cross: each
//! process finishes an instant alone, and what it sent meets the others
//! at the next round (or, sent while alone, in a round of its own before
//! the horizon). One bound is new: an FC packet on its way between two
//! processes may let its receiver's arbiter send as it arrives (a HoQ
//! flit short of credits), so until it arrives its arrival time bounds
//! the receiver's promise (and the sender's, in the round it is sent,
//! before the receiver has it). A data flit on its way bounds nothing
//! new: what it causes on a cut link goes at least ISW + VSW after it
//! arrives, later than the bound T + 1 ps + VSW above.

use std::collections::VecDeque;

use super::dispatch::Site;
use super::fabric::{Fabric, NONE, NS};
use super::parallel::NO_EVENT;

/// A process's view of its cut ports (module doc).
///
/// A cut port's bound changes only when an event runs at that port (its
/// obuf's and arbiter's state, and the HoQ flits that have arrived, are
/// written only by the port's own events; a reservation of a HoQ slot
/// from another port changes no bound, an arbiter kick dropped where it
/// is scheduled changes nothing, direct.rs). So each bound is kept and
/// recomputed only for the ports an event ran at since the last promise.
pub(super) struct Look {
    /// this process's ports whose link leads to another process's node
    cut: Vec<u32>,
    /// per port of the fabric: its index in `cut`, or NONE
    cut_idx: Vec<u32>,
    /// a cut port belongs to an HCA
    hca_cut: bool,
    /// per cut port: the times of the hand-offs to its obuf queued, in
    /// the order queued, which is the order of their times (a switch
    /// arbiter's `last` only grows, vlarb.rs); those that have run leave
    /// as new ones come, and when the port's bound is computed
    handoffs: Vec<VecDeque<u64>>,
    /// per cut port: its bound as last computed (`NOW`: any kick may
    /// make it send; `NO_EVENT`: nothing of its own)
    bound: Vec<u64>,
    /// per cut port: an event ran there since its bound was computed
    stale: Vec<bool>,
    /// the cut ports with `stale` set
    dirty: Vec<u32>,
}

/// A cut port's bound: its arbiter may send at the next kick.
const NOW: u64 = 0;

impl Look {
    /// The cut ports of process `me` under `owner`.
    pub(super) fn new(f: &Fabric, owner: &[u16], me: usize) -> Look {
        let mut cut_idx = vec![NONE; f.ports.len()];
        let mut cut = Vec::new();
        let mut hca_cut = false;
        for (pi, p) in f.ports.iter().enumerate() {
            if owner[p.node as usize] as usize != me || p.peer == NONE {
                continue;
            }
            let peer_node = f.ports[p.peer as usize].node as usize;
            if owner[peer_node] as usize != me {
                cut_idx[pi] = cut.len() as u32;
                cut.push(pi as u32);
                hca_cut |= p.hca != NONE;
            }
        }
        let n = cut.len();
        Look {
            cut,
            cut_idx,
            hca_cut,
            handoffs: vec![VecDeque::new(); n],
            bound: vec![NOW; n],
            stale: vec![true; n],
            dirty: (0..n as u32).collect(),
        }
    }
}

impl Fabric {
    /// The arbiter of port `pi` has just queued a hand-off to its obuf
    /// (called while `watch` is set: a parallel run in the local order).
    /// A switch's arbiter keeps the time of its latest hand-off in `last`
    /// when it is ahead of now (vlarb.rs); one at this instant runs before
    /// the instant ends, so it bounds no promise.
    #[cold]
    #[inline(never)]
    pub(super) fn watch_handoff(&mut self, pi: usize) {
        let (now, at) = (self.now, self.ports[pi].arb.last);
        if let Some(look) = self.part.as_deref_mut().and_then(|p| p.look.as_mut()) {
            let ci = look.cut_idx[pi];
            if ci != NONE && at > now {
                // (the hand-offs that have run go here too, not only when
                // the bound is computed: a run to the next completion
                // makes no promise, and the record holds what is pending)
                let q = &mut look.handoffs[ci as usize];
                while q.front().is_some_and(|&h| h < now) {
                    q.pop_front();
                }
                q.push_back(at);
            }
        }
    }

    /// An event runs at `site` (called while `watch` is set).
    #[inline]
    pub(super) fn watch_site(&mut self, site: Site) {
        if let Site::Port(p) = site {
            if let Some(look) = self.part.as_deref_mut().and_then(|p| p.look.as_mut()) {
                let ci = look.cut_idx[p as usize];
                if ci != NONE && !look.stale[ci as usize] {
                    look.stale[ci as usize] = true;
                    look.dirty.push(ci);
                }
            }
        }
    }

    /// After instant `t`, with no event of `t` left anywhere: the
    /// earliest time at which this process could send another process an
    /// event (module doc); `NO_EVENT` if it never can.
    pub(super) fn par_promise(&mut self, t: u64) -> u64 {
        let mut p = self.par_promise_tx(t);
        if self.tm.link == 0 {
            return p;
        }
        // With a link delay, an FC packet between two processes is on its
        // way for a while: its receiver's arbiter may send as it arrives
        // (a HoQ flit short of credits), so its arrival bounds the
        // receiver's next transmission, and the sender's until the
        // receiver has it (the round after it was sent).
        // (those that have arrived left `fc_in` then: `par_fc_arrives`)
        let part = self.part.as_deref_mut().unwrap();
        p = p.min(std::mem::replace(&mut part.fc_sent_min, NO_EVENT));
        if let Some(r) = part.fc_in.peek() {
            p = p.min(r.0);
        }
        if p == NO_EVENT {
            p
        } else {
            // (a transmission reaches the peer a link delay later)
            p + self.tm.link
        }
    }

    /// The earliest time at which this process could start a
    /// transmission on a cut link (the table of the module doc).
    fn par_promise_tx(&mut self, t: u64) -> u64 {
        let after = t + 1;
        let (vsw, cred) = (self.tm.vsw, self.tm.cred);
        let Some(look) = self.part.as_deref_mut().and_then(|p| p.look.as_mut()) else {
            return after;
        };
        if look.cut.is_empty() {
            return NO_EVENT;
        }
        if look.hca_cut {
            return after;
        }
        // a flit that reaches a cut arbiter from now on
        let mut b = after.saturating_add(vsw);
        // the credit timer's next pop
        let tick = t / cred * cred + NS;
        b = b.min(if tick > t { tick } else { tick + cred });
        let mut look = self.part.as_deref_mut().unwrap().look.take().unwrap();
        for ci in look.dirty.drain(..) {
            let ci = ci as usize;
            look.stale[ci] = false;
            let pi = look.cut[ci] as usize;
            let q = &mut look.handoffs[ci];
            // (the hand-offs that have run)
            while q.front().is_some_and(|&h| h <= t) {
                q.pop_front();
            }
            look.bound[ci] = self.port_bound(pi, q.front().copied());
        }
        let min = look.bound.iter().copied().min().unwrap_or(NO_EVENT);
        self.part.as_deref_mut().unwrap().look = Some(look);
        if min == NOW {
            return after;
        }
        b.min(min).max(after)
    }

    /// The bound of cut port `pi` (the table of the module doc, but the
    /// terms every cut port shares), with `handoff` its earliest hand-off
    /// queued that has not run. (A cut port's hand-offs, obuf and arbiter
    /// change only in events at the port, which mark its bound stale.)
    fn port_bound(&self, pi: usize, handoff: Option<u64>) -> u64 {
        let port = &self.ports[pi];
        if port.ob.pop_pending {
            // (a flit handed over until the pop is queued there)
            return port.ob.pop_at;
        }
        let own = if port.arb.pop_pending {
            port.arb.pop_at
        } else if port.arb.slots > 0 && self.arb_may_send(pi) {
            NOW
        } else {
            NO_EVENT
        };
        handoff.map_or(own, |h| own.min(h))
    }

    /// Whether the arbiter of port `pi` (its pop not pending) holds a flit
    /// it could send at its next arbitration, as far as its credits go.
    fn arb_may_send(&self, pi: usize) -> bool {
        let a = &self.ports[pi].arb;
        let nvl = self.nvl;
        if a.inside {
            let v = a.last_vl as usize;
            return a.hoq[a.last_port[v] as usize * nvl + v].id != NONE;
        }
        if a.inputs > 64 {
            return true;
        }
        (0..nvl).any(|v| a.heads[v] != 0 && self.pick(a, v, a.last_port[v]).is_some())
    }

    /// Run this process's instants before `h` alone: no other process can
    /// send it anything before `h`, and it sends nothing before its
    /// promise (module doc).
    pub(super) fn par_alone(&mut self, h: u64) {
        self.part.as_deref_mut().unwrap().alone_until = h;
        self.par_alone_to(h);
        self.part.as_deref_mut().unwrap().alone_until = 0;
    }

    fn par_alone_to(&mut self, h: u64) {
        while self.fatal.is_none() {
            let Some(t) = self.heap_next_time() else {
                break;
            };
            if t >= h {
                break;
            }
            let mut depth = 0;
            loop {
                self.par_batch(t, depth);
                let kept = self.par_extract();
                let part = self.part.as_deref().unwrap();
                if part.out.iter().any(|o| !o.is_empty()) {
                    self.fail(format!(
                        "internal error of the parallel engine: process {} sent an event at \
                         {t} ps, before the horizon {h} ps its lookahead promised",
                        part.me
                    ));
                    return;
                }
                if !kept || self.fatal.is_some() {
                    break;
                }
                depth += 1;
            }
            self.count_pulse();
        }
    }
}
