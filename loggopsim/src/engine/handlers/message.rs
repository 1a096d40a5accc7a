//! MESSAGE (docs/model/loggops.md 6): on the receiver, once the network
//! says the message is there and the CPU and receive NIC are free, charge
//! o + max((s-1)O, (s-1)G) and g + (s-1)G and match it against the RQ.

use super::super::checked::{add, mul, overflow, v};
use super::super::queue::Ev;
use super::super::queue::MSG_FLAG;
use super::super::{Sim, SimError, TraceEvent, Tracer};
use super::Outcome;
use crate::engine::groups::class_key;
use crate::engine::one_sided;
use crate::network::Network;

impl<N: Network, T: Tracer> Sim<N, T> {
    pub(in crate::engine) fn message(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        let slot = ev.id & !MSG_FLAG;
        let t = ev.time;
        let m = self.msgs[slot as usize];
        if m.role != one_sided::Role::Data {
            return self.one_sided_message(ev, slot);
        }
        // (notify-mode messages are always `arrived` here)
        let ef = self.earliest_arrival(slot, t)?;
        let h = ev.host as usize;
        let ci = h * self.ncpu + m.cpu as usize;
        let ni = h * self.nnic + m.nic as usize;
        let busy = self.nexto[ci].max(self.nextgr[ni]);
        if ef > t {
            // not there yet: re-check (and query) at that time, individually
            if self.trig.on {
                self.trig.live[ev.host as usize] += 1; // still queued
            }
            self.reinsert(ev, busy.max(ef), "msg");
            return Ok(Outcome::Done);
        }
        if busy > t {
            // arrived, receiver busy: re-checks have no side effects, so it may be grouped
            return Ok(Outcome::Blocked {
                avail: busy,
                class: class_key(2, ev.host, m.cpu, m.nic),
            });
        }
        // (a reference: copying all of Params per message costs more)
        let p = &self.params;
        let rendezvous = m.size > p.s;
        let (o, big_o) = p.overheads(m.size);
        let s1 = m.size.saturating_sub(1);
        let ovf = || overflow(ev.host, "receive", t);
        let work = mul(s1, big_o)
            .ok_or_else(ovf)?
            .max(mul(s1, p.big_g).ok_or_else(ovf)?);
        let cpu_work = add(v(o), v(work)).ok_or_else(ovf)?;
        let end =
            add(add(v(t), v(cpu_work)), v(self.noise(ev.host, t, cpu_work))).ok_or_else(ovf)?;
        let gr = add(add(v(t), v(p.g)), mul(s1, p.big_g)).ok_or_else(ovf)?;
        let (prev_o, prev_gr) = (self.nexto[ci], self.nextgr[ni]);
        self.nexto[ci] = end;
        self.nextgr[ni] = gr;
        let matched = self.rq_take(ev.host, m.src, m.tag);
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::MsgReceived {
                host: ev.host,
                cpu: m.cpu,
                src: m.src,
                size: m.size,
                tag: m.tag,
                sent: m.start,
                arrived: if m.arrived { m.arrival } else { ef },
                start: t,
                end,
                node: matched,
                prev_o,
                prev_gr,
            });
        }
        match matched {
            Some(rnode) => {
                if rendezvous {
                    self.rendezvous_done(slot, t);
                }
                self.free_msg(slot);
                // the receive's dependents: no earlier than the end of this CPU work
                self.complete_op(rnode, ev.host, end);
            }
            None => self.uq[h].push(m.src, m.tag, slot),
        }
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use crate::engine::Params;

    /// The receiver's CPU takes o + max((s-1)O, (s-1)G): a 10 B message
    /// posted for at 0 is taken in at 4000 (t + o + L of its send) and
    /// ends at 4000 + 1500 + 9G = 5554, or + 9O = 5590 with O = 10 > G.
    #[test]
    fn receive_overhead_is_the_larger_per_byte_cost() {
        let t = "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n";
        assert_eq!(run(t, Params::default()).finish_times[1], 5554);
        assert_eq!(
            run(
                t,
                Params {
                    big_o: 10,
                    ..Params::default()
                }
            )
            .finish_times[1],
            5590
        );
    }

    /// The cpu and nic of the message are the send's, applied to the
    /// receiver's arrays: a send from cpu 1 occupies the receiver's CPU 1,
    /// so the receiver's calc on CPU 0 does not delay it.
    #[test]
    fn the_send_operation_picks_the_receivers_cpu() {
        let t = "num_ranks 2\nrank 0 {\nl1: send 10b to 1 cpu 1\n}\nrank 1 {\nl1: recv 10b from 0\nl2: calc 100000 cpu 0\n}\n";
        let r = run(t, Params::default());
        assert_eq!(r.finish_times[1], 100000);
        let t0 = t.replace("send 10b to 1 cpu 1", "send 10b to 1 cpu 0");
        let r0 = run(&t0, Params::default());
        assert_eq!(r0.finish_times[1], 100000 + 1500 + 54);
    }
}
