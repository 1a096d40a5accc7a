//! RECV (docs/model/loggops.md 6) and the receive queue (RQ): a receive
//! takes a matching message from the UQ at no cost, or waits in the RQ.

use super::super::queue::Ev;
use super::super::{Sim, TraceEvent, Tracer};
use super::Outcome;
use crate::network::Network;

impl<N: Network, T: Tracer> Sim<N, T> {
    pub(in crate::engine) fn recv(&mut self, ev: Ev) -> Outcome {
        let op = self.sched.op(ev.id);
        let t = ev.time;
        self.start_op(ev.id, ev.host, t);
        match self.uq[ev.host as usize].take(op.peer, op.tag) {
            Some((_, _, slot)) => {
                // the receive's size decides rendezvous here (as the reference does)
                if op.size > self.params.s {
                    self.rendezvous_done(slot, t);
                }
                let m = self.msgs[slot as usize];
                if T::ACTIVE {
                    self.tracer.event(&TraceEvent::RecvMatched {
                        host: ev.host,
                        cpu: op.cpu,
                        node: ev.id,
                        src: m.src,
                        tag: m.tag,
                        size: op.size,
                        time: t,
                    });
                }
                self.free_msg(slot);
                let ci = ev.host as usize * self.ncpu + op.cpu as usize;
                let ready = self.nexto[ci].max(t);
                self.complete_op(ev.id, ev.host, ready);
            }
            None => {
                if T::ACTIVE {
                    self.tracer.event(&TraceEvent::RecvPosted {
                        host: ev.host,
                        cpu: op.cpu,
                        node: ev.id,
                        src: op.peer,
                        tag: op.tag,
                        time: t,
                    });
                }
                self.rq_push(ev.host, op.peer, op.tag, ev.id);
            }
        }
        Outcome::Done
    }

    #[inline]
    pub(in crate::engine) fn rq_push(&mut self, host: u32, src: u32, tag: u32, node: u32) {
        if self.rq.is_empty() {
            let sched = &self.sched;
            let key = self.rq_key(src, tag);
            self.rq_exact[host as usize].push(key, node, &mut self.link, |n| sched.match_key(n));
        } else {
            self.rq[host as usize].push(src, tag, node);
        }
    }

    #[inline]
    pub(in crate::engine) fn rq_take(&mut self, host: u32, src: u32, tag: u32) -> Option<u32> {
        if self.rq.is_empty() {
            let key = self.rq_key(src, tag);
            let sched = &self.sched;
            self.rq_exact[host as usize].take(key, &mut self.link, |n| sched.match_key(n))
        } else {
            self.rq[host as usize].take(src, tag).map(|e| e.2)
        }
    }

    /// Key of the wildcard-free receive queue (packed, or as `match_key`).
    #[inline]
    pub(in crate::engine) fn rq_key(&self, src: u32, tag: u32) -> u64 {
        ((src as u64) << self.key_shift) | tag as u64
    }

    /// Unmatched receives of a host (FIFO order; for the wildcard-free
    /// queue FIFO within each (source, tag), buckets in table order).
    pub(in crate::engine) fn rq_nodes(&self, host: usize) -> Vec<u32> {
        if self.rq.is_empty() {
            self.rq_exact[host].nodes(&self.link)
        } else {
            self.rq[host]
                .entries_in_order()
                .into_iter()
                .map(|e| e.2)
                .collect()
        }
    }

    pub(in crate::engine) fn rq_len(&self, host: usize) -> (usize, usize) {
        if self.rq.is_empty() {
            (self.rq_exact[host].len(), self.rq_exact[host].max_len())
        } else {
            (self.rq[host].len(), self.rq[host].max_len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use crate::engine::Params;

    /// Matched from the UQ: rank 1 computes 0..10000, so the message
    /// (event at 4000) is taken in at 10000 (nexto = 10000 + 1500 + 9G =
    /// 11554) into the UQ; the receive, released at 10000 after it, takes
    /// it without charging anything: rank 1 ends at 11554.
    #[test]
    fn a_receive_matched_from_the_uq_costs_nothing() {
        let r = run(
            "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: calc 10000\nl2: recv 10b from 0\nl2 requires l1\n}\n",
            Params::default(),
        );
        assert_eq!(r.finish_times, vec![1500, 11554]);
        assert_eq!(r.max_uq, vec![0, 1]);
        assert_eq!(r.max_rq, vec![0, 0]);
    }
}
