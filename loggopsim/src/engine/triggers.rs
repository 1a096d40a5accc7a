//! Triggered inserts (protocol version 4, docs/protocol.md "Triggered
//! inserts"): before it asks the network to run on, the engine arms each
//! message in flight whose arrival it can already answer, so that the
//! network inserts the reaction itself and runs on instead of stopping at
//! that arrival for a round trip. Results are identical to version 2.
//!
//! A message h to rank r is armed only when r's reaction to it is fixed,
//! whatever else happens before h arrives:
//!
//! - r is quiet: no event of r is queued or grouped and no root of r is
//!   left (`live`), h is the only message in flight to r, r has no
//!   rendezvous send open (whose match elsewhere would change r's CPU,
//!   NIC and dependencies), r's unexpected queue is empty, and no noise;
//!   nothing but h can then change r before h arrives, except a message
//!   inserted to r, which disarms h first (here when the engine inserts
//!   it, in the fabric when a fired reaction does);
//! - h is an eager two-sided message that matches a receive R already
//!   posted at r (the oldest with its source and tag: the schedule has no
//!   wildcards), and r's CPU and receive NIC are free by h's earliest
//!   processing time (t + o + L of its send), so the message event runs at
//!   t_p = max(arrival, t + o + L) and ends the receive at
//!   t_p + o + max((s-1)O, (s-1)G);
//! - no message inserted after the network passed h's arrival (which no
//!   longer disarms h) can reach r before that receive ends: the
//!   receive ends less than the network's minimum latency after h's
//!   earliest arrival, the engine's current time;
//! - completing R releases exactly one send s (eager) and otherwise only
//!   receives, which post (the unexpected queue is empty), and neither
//!   s's start, its completion nor those receives' starts release
//!   anything more; s's CPU, NIC and partial ready time are free by the
//!   receive's earliest end, so s starts exactly when the receive ends.
//!
//! The reaction is then "insert s at max(arrival, not_before) + delay".
//! When the engine later processes h's arrival it makes that insert itself
//! and checks it against what the network did (`prefired`): the same
//! time, destination and size, or the run fails loudly.

use super::{one_sided, Sim, SimError, Tracer};
use crate::hash::FastMap;
use crate::network::{Handle, Network, Trigger};
use crate::schedule::{Kind, Schedule};
use crate::Time;

/// The reaction the network carried out for rank r, until the engine
/// makes the same insert.
#[derive(Clone, Copy, Debug)]
pub(super) struct Prefired {
    pub t_ins: u64,
    pub dst: u32,
    pub size: u64,
    pub handle: Handle,
}

/// Per-rank state of the triggered inserts.
#[derive(Default)]
pub(super) struct Triggers {
    /// on: exact mode with a network that takes triggers, no one-sided
    /// operations, no wildcards
    pub on: bool,
    /// events of each rank queued, grouped or being processed; a root
    /// counts from the start (roots are produced lazily, `peek_root`)
    pub live: Vec<u32>,
    /// messages in flight to each rank, and the xor of their handles (the
    /// handle itself when there is one)
    pub inflight: Vec<u32>,
    pub inflight_xor: Vec<u64>,
    /// rendezvous sends of each rank not yet matched
    pub rdv_open: Vec<u32>,
    /// the message armed on each rank, with its trigger
    pub armed: Vec<Option<(Handle, Trigger, Handle)>>,
    /// reactions the network made, per source rank
    pub prefired: Vec<Option<Prefired>>,
    /// arrivals of messages the network inserted for a trigger, reported
    /// before the engine made the insert itself (handle -> time)
    pub early: FastMap<Handle, u64>,
    /// ranks to look at before the next wait
    pub candidates: Vec<u32>,
    pub seen: Vec<bool>,
}

impl Triggers {
    pub fn new(on: bool, sched: &Schedule) -> Triggers {
        if !on {
            return Triggers::default();
        }
        let ranks = sched.num_ranks() as usize;
        let live = (0..sched.num_ranks())
            .map(|r| {
                sched
                    .rank_nodes(r)
                    .filter(|&n| sched.depcount(n) == 0)
                    .count() as u32
            })
            .collect();
        Triggers {
            on,
            live,
            inflight: vec![0; ranks],
            inflight_xor: vec![0; ranks],
            rdv_open: vec![0; ranks],
            armed: vec![None; ranks],
            prefired: vec![None; ranks],
            early: FastMap::default(),
            candidates: Vec::new(),
            seen: vec![false; ranks],
        }
    }

    #[inline]
    pub fn note(&mut self, r: u32) {
        if !self.seen[r as usize] {
            self.seen[r as usize] = true;
            self.candidates.push(r);
        }
    }
}

impl<N: Network, T: Tracer> Sim<N, T> {
    /// Before a wait: arm every candidate rank's message that can be armed.
    pub(super) fn arm_candidates(&mut self) -> Result<(), SimError> {
        let mut cands = std::mem::take(&mut self.trig.candidates);
        for &r in &cands {
            self.trig.seen[r as usize] = false;
            if let Some((h, trig)) = self.reaction(r) {
                let new = self.net.arm(h, trig)?;
                self.trig.armed[r as usize] = Some((h, trig, new));
            }
        }
        cands.clear();
        self.trig.candidates = cands;
        Ok(())
    }

    /// The message in flight to `r` and its trigger, when r's reaction to
    /// it is fixed (module docs); None otherwise.
    fn reaction(&self, r: u32) -> Option<(Handle, Trigger)> {
        let ri = r as usize;
        let tg = &self.trig;
        if tg.armed[ri].is_some()
            || tg.prefired[ri].is_some()
            || tg.live[ri] != 0
            || tg.inflight[ri] != 1
            || tg.rdv_open[ri] != 0
            || self.noise.is_some()
            || !self.rq.is_empty()
            || !self.uq[ri].is_empty()
        {
            return None;
        }
        let h = tg.inflight_xor[ri];
        let slot = self.waiting.get(&h)? as u32;
        let m = self.msgs[slot as usize];
        let seq = m.seq;
        let p = &self.params;
        if m.role != one_sided::Role::Data || m.dst != r || m.size > p.s || m.arrived {
            return None;
        }
        let ci = ri * self.ncpu + m.cpu as usize;
        let ni = ri * self.nnic + m.nic as usize;
        let lb = m.arrival; // t + o + L of its send (exact mode)
        if self.nexto[ci].max(self.nextgr[ni]) > lb {
            return None;
        }
        let sched = &self.sched;
        let rnode = self.rq_exact[ri].peek(self.rq_key(m.src, m.tag), &self.link, |n| {
            sched.match_key(n)
        })?;
        let (o, big_o) = p.overheads(m.size);
        let s1 = m.size.saturating_sub(1);
        let cpu_work = o.checked_add(s1.checked_mul(big_o)?.max(s1.checked_mul(p.big_g)?))?;
        let end_lb = lb.checked_add(cpu_work)?;
        // A message inserted to r once the network has passed h's arrival
        // t_a does not disarm h (the network fired already): it comes at
        // least `min_lat` after t_a, and h's receive ends at most
        // max(0, lb - t_a) + cpu_work after t_a, with t_a >= now. Arriving
        // before that end, its receive could take r's CPU ahead of s.
        if lb.saturating_sub(self.now).checked_add(cpu_work)? >= self.min_lat {
            return None;
        }
        // the dependency counts this reaction takes off (node, count); a
        // reaction touching more nodes than this is simply not armed (no
        // allocation on this per-message path)
        let mut dec = Small::<(u32, u32), 16>::new();
        let mut take = |n: u32| -> Option<bool> {
            let c = match dec.iter_mut().find(|e| e.0 == n) {
                Some(e) => {
                    e.1 += 1;
                    e.1
                }
                None => {
                    dec.push((n, 1))?;
                    1
                }
            };
            Some(sched.depcount(n) == c) // released by this
        };
        let mut send = None;
        let mut recvs = Small::<u32, 8>::new();
        for d in sched.requires_dependents(rnode) {
            if take(d)? {
                match sched.kind(d) {
                    Kind::Send if send.is_none() => send = Some(d),
                    Kind::Recv => recvs.push(d)?,
                    _ => return None,
                }
            }
        }
        let s = send?;
        let op = sched.op(s);
        if op.size > p.s {
            return None;
        }
        for &rv in recvs.as_slice() {
            for d in sched.irequires_dependents(rv) {
                if take(d)? {
                    return None;
                }
            }
        }
        for d in sched
            .irequires_dependents(s)
            .chain(sched.requires_dependents(s))
        {
            if take(d)? {
                return None;
            }
        }
        // s starts when the receive ends: nothing else of r holds it back
        let partial = self.partial.get(s as usize).copied().unwrap_or(0);
        let other_cpu = if op.cpu == m.cpu {
            0
        } else {
            self.nexto[ri * self.ncpu + op.cpu as usize]
        };
        let gap = self.nextgs[ri * self.nnic + op.nic as usize];
        if partial.max(other_cpu).max(gap) > end_lb {
            return None;
        }
        let after = if self.insert_after_o {
            p.overheads(op.size).0
        } else {
            0
        };
        let delay = cpu_work.checked_add(after)?;
        // the insert time must fit (the engine's own checks would fail)
        end_lb.checked_add(after)?;
        Some((
            h,
            Trigger {
                not_before: Time(lb),
                delay,
                size: op.size,
                seq,
                src: r,
                dst: op.peer,
            },
        ))
    }

    /// A message `handle` enters the network to `dst` (exact mode). The
    /// network carried it out already when `prefired`: the fabric then
    /// also dropped any trigger armed on `dst`.
    pub(super) fn trig_insert(
        &mut self,
        dst: u32,
        handle: Handle,
        prefired: bool,
    ) -> Result<(), SimError> {
        let di = dst as usize;
        if let Some((h0, _, _)) = self.trig.armed[di].take() {
            if !prefired {
                self.net.disarm(h0)?;
            }
        }
        self.trig.inflight[di] += 1;
        self.trig.inflight_xor[di] ^= handle;
        self.trig.note(dst);
        Ok(())
    }

    /// The network reported `handle` (to `dst`) as arrived.
    pub(super) fn trig_arrived(&mut self, dst: u32, handle: Handle) {
        let di = dst as usize;
        self.trig.inflight[di] -= 1;
        self.trig.inflight_xor[di] ^= handle;
        if matches!(self.trig.armed[di], Some((h, _, _)) if h == handle) {
            self.trig.armed[di] = None;
        }
        self.trig.note(dst);
    }

    /// The network fired the trigger armed on `handle` (to rank r): r's
    /// next insert must be that one.
    pub(super) fn trig_fired(
        &mut self,
        handle: Handle,
        t_ins: Time,
        new: Handle,
    ) -> Result<(), SimError> {
        let Some(slot) = self.waiting.get(&handle) else {
            return Err(SimError::Trigger(format!(
                "the network fired the trigger of message {handle}, which is not in flight"
            )));
        };
        let r = self.msgs[slot as usize].dst as usize;
        match self.trig.armed[r] {
            Some((h, trig, nh)) if h == handle && nh == new => {
                self.trig.prefired[r] = Some(Prefired {
                    t_ins: t_ins.0,
                    dst: trig.dst,
                    size: trig.size,
                    handle: new,
                });
                Ok(())
            }
            _ => Err(SimError::Trigger(format!(
                "the network fired a trigger on message {handle} (new handle {new}) that is not armed"
            ))),
        }
    }

    /// The send of rank `src` to `dst` is about to insert at `t_ins`: the
    /// network's own insert, when it made one for this rank.
    pub(super) fn take_prefired(
        &mut self,
        src: u32,
        t_ins: u64,
        dst: u32,
        size: u64,
    ) -> Result<Option<Handle>, SimError> {
        let Some(p) = self.trig.prefired[src as usize].take() else {
            return Ok(None);
        };
        if p.t_ins != t_ins || p.dst != dst || p.size != size {
            return Err(SimError::Trigger(format!(
                "rank {src}: the network inserted {} B to rank {} at {} ps for a trigger, the engine now sends {size} B to rank {dst} at {t_ins} ps",
                p.size, p.dst, p.t_ins
            )));
        }
        Ok(Some(p.handle))
    }
}

/// A fixed-capacity list on the stack (`push` fails when full).
struct Small<T: Copy + Default, const N: usize> {
    v: [T; N],
    n: usize,
}

impl<T: Copy + Default, const N: usize> Small<T, N> {
    fn new() -> Self {
        Small {
            v: [T::default(); N],
            n: 0,
        }
    }
    fn push(&mut self, x: T) -> Option<()> {
        *self.v.get_mut(self.n)? = x;
        self.n += 1;
        Some(())
    }
    fn as_slice(&self) -> &[T] {
        &self.v[..self.n]
    }
    fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.v[..self.n].iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::{Small, Triggers};

    #[test]
    fn small_list_refuses_a_push_when_full() {
        let mut s: Small<u32, 2> = Small::new();
        assert_eq!(s.push(1), Some(()));
        assert_eq!(s.push(2), Some(()));
        assert_eq!(s.push(3), None);
        s.iter_mut().for_each(|x| *x *= 10);
        assert_eq!(s.as_slice(), &[10, 20]);
    }

    /// A rank becomes a candidate once until the next wait clears `seen`.
    #[test]
    fn a_rank_is_noted_once() {
        let mut t = Triggers {
            seen: vec![false; 3],
            ..Triggers::default()
        };
        t.note(2);
        t.note(0);
        t.note(2);
        assert_eq!(t.candidates, vec![2, 0]);
    }
}
