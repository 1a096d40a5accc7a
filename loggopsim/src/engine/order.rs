//! The ordering rules (docs/model/loggops.md 5, 9.1, 9.2): roots host by
//! host sorted by kind, dependencies released with the time they carry,
//! released operations sorted by kind (stably) and enqueued at their
//! CPU/NIC availability.

use super::queue::Ev;
use super::{Sim, Tracer};
use crate::network::Network;
use crate::schedule::Kind;

impl<N: Network, T: Tracer> Sim<N, T> {
    /// The next root event, if any. Roots are all at time 0 with seq
    /// 0..R-1 (host by host, each host's sorted by kind), and no root can
    /// be overtaken by a released event (those get larger seqs, and message
    /// events are never before time 0), so they are produced lazily, one
    /// host at a time, instead of being pushed into the heap. A host's
    /// dependency counters are untouched until its first root is processed
    /// (only that host's or later events can change them), so "counter is
    /// 0" still means "root" when the host is reached.
    #[inline]
    pub(super) fn peek_root(&mut self) -> Option<Ev> {
        if self.root_seq0 + self.root_pos as u64 >= self.roots_total {
            return None;
        }
        if self.root_pos >= self.roots.len() {
            self.next_root_host();
        }
        Some(Ev {
            time: 0,
            seq: self.root_seq0 + self.root_pos as u64,
            host: self.root_host,
            id: self.roots[self.root_pos],
        })
    }

    /// Loads the roots of the next host that has any (once per host, so
    /// kept out of the per-event path).
    #[inline(never)]
    pub(super) fn next_root_host(&mut self) {
        while self.root_pos >= self.roots.len() {
            self.root_seq0 += self.roots.len() as u64;
            self.roots.clear();
            self.root_pos = 0;
            if !self.roots_started {
                self.roots_started = true;
            } else {
                self.root_host += 1;
            }
            let h = self.root_host;
            let sched = &self.sched;
            // a stable sort by kind, only when needed: schedules often
            // list them in that order already, which this pass finds out
            let mut last = 0;
            let mut sorted = true;
            for n in sched.rank_nodes(h) {
                if sched.depcount(n) == 0 {
                    let o = sched.kind(n).order();
                    sorted &= o >= last;
                    last = o;
                    self.roots.push(n);
                }
            }
            if !sorted {
                self.roots.sort_by_key(|&n| sched.kind(n).order());
            }
        }
    }

    /// Marks `node` (on `host`) started at `t`: releases its irequires dependents.
    #[inline]
    pub(super) fn start_op(&mut self, node: u32, host: u32, t: u64) {
        let (a, b) = self.edge_range(node);
        for i in a..b {
            let e = self.sched.edge_at(i);
            if e & crate::schedule::EDGE_START != 0 {
                self.release(e & !crate::schedule::EDGE_START, host, t);
            }
        }
    }

    /// Marks `node` completed; its requires dependents may start no earlier than `ready`.
    #[inline]
    pub(super) fn complete_op(&mut self, node: u32, host: u32, ready: u64) {
        self.completed += 1;
        let (a, b) = self.edge_range(node);
        for i in a..b {
            let e = self.sched.edge_at(i);
            if e & crate::schedule::EDGE_START == 0 {
                self.release(e, host, ready);
            }
        }
    }

    #[inline]
    pub(super) fn edge_range(&self, node: u32) -> (usize, usize) {
        self.sched.edge_bounds(node)
    }

    #[inline]
    pub(super) fn release(&mut self, d: u32, host: u32, ready: u64) {
        debug_assert!(self.sched.depcount(d) > 0);
        if self.sched.satisfy_one(d) == 0 {
            let mut r = ready;
            if let Some(p) = self.partial.get_mut(d as usize) {
                r = r.max(std::mem::take(p));
            }
            self.released.push((host, d, r));
        } else {
            // (`partial` exists: this node has several predecessors)
            let e = &mut self.partial[d as usize];
            *e = (*e).max(ready);
        }
    }

    pub(super) fn enqueue_released(&mut self) {
        let mut rel = std::mem::take(&mut self.released);
        if rel.len() > 1 {
            let sched = &self.sched;
            rel.sort_by_key(|&(h, n, _)| (h, sched.kind(n).order()));
        }
        for &(h, n, ready) in &rel {
            // (its record is loaded, but the next one, where its
            // dependents end, and the dependents themselves usually are
            // not: they are needed when it runs, after the events already
            // queued at this time; see `prefetch_batch`)
            self.sched.prefetch_node(n);
            self.sched.prefetch_edges(n);
            let op = self.sched.op(n);
            if op.kind == Kind::Send {
                self.net.prefetch_insert(h, op.peer);
            }
            let ci = h as usize * self.ncpu + op.cpu as usize;
            let mut t = self.nexto[ci].max(ready);
            if op.kind.uses_send_nic() {
                t = t.max(self.nextgs[h as usize * self.nnic + op.nic as usize]);
            }
            self.heap.push(Ev {
                time: t,
                seq: self.seq,
                host: h,
                id: n,
            });
            self.seq += 1;
            self.events += 1;
            if self.trig.on {
                self.trig.live[h as usize] += 1;
            }
        }
        rel.clear();
        self.released = rel;
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::trace::loggp_events as trace;
    use crate::engine::TraceEvent;

    /// Roots run SEND before RECV before CALC (section 5), whatever the
    /// order of the schedule: on rank 0 the calc, listed first, runs last
    /// (the send took the CPU until o = 1500).
    #[test]
    fn roots_are_sorted_by_kind() {
        let t = trace("num_ranks 2\nrank 0 {\nl1: calc 5\nl2: recv 1b from 1\nl3: send 1b to 1\n}\nrank 1 {\nl1: recv 1b from 0\nl2: send 1b to 0\n}\n");
        let rank0: Vec<&str> = t
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Send { host: 0, .. } => Some("send"),
                TraceEvent::RecvPosted { host: 0, .. } => Some("recv"),
                TraceEvent::Calc { host: 0, .. } => Some("calc"),
                _ => None,
            })
            .collect();
        assert_eq!(rank0, vec!["send", "recv", "calc"]);
        assert!(t.iter().any(|e| matches!(
            e,
            TraceEvent::Calc {
                host: 0,
                start: 1500,
                end: 1505,
                ..
            }
        )));
    }

    /// Dependencies carry time (section 9.2): a calc on CPU 1 that requires
    /// a calc on CPU 0 (0..100) starts at 100, not at its own CPU's 0.
    #[test]
    fn a_requires_edge_carries_the_predecessors_end() {
        let t = trace(
            "num_ranks 1\nrank 0 {\nl1: calc 100 cpu 0\nl2: calc 10 cpu 1\nl2 requires l1\n}\n",
        );
        assert!(t.iter().any(|e| matches!(
            e,
            TraceEvent::Calc {
                cpu: 1,
                start: 100,
                end: 110,
                ..
            }
        )));
    }
}
