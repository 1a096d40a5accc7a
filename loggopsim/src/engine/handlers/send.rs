//! SEND (docs/model/loggops.md 6): charge o + (s-1)O on the CPU and
//! g + (s-1)G on the NIC, hand the message to the network, create its
//! event on the receiver at t + o + L.

use super::super::checked::{add, mul, overflow, v};
use super::super::queue::Ev;
use super::super::{Sim, SimError, TraceEvent, Tracer};
use super::Msg;
use super::Outcome;
use crate::engine::groups::class_key;
use crate::engine::one_sided;
use crate::network::{Envelope, Network};
use crate::schedule::Op;
use crate::Time;

impl<N: Network, T: Tracer> Sim<N, T> {
    /// A send (or put/get) may start at `ev.time` only when its CPU (o)
    /// and its NIC (g, G) are free: then it starts, and its operation and
    /// the indices of its CPU and NIC are returned; else it blocks, in the
    /// send class of that CPU and NIC, until the later of the two.
    #[inline(always)]
    pub(in crate::engine) fn start_on_cpu_nic(
        &mut self,
        ev: Ev,
    ) -> Result<(Op, usize, usize), Outcome> {
        let op = self.sched.op(ev.id);
        let h = ev.host as usize;
        let ci = h * self.ncpu + op.cpu as usize;
        let ni = h * self.nnic + op.nic as usize;
        let avail = self.nexto[ci].max(self.nextgs[ni]);
        if avail > ev.time {
            return Err(Outcome::Blocked {
                avail,
                class: class_key(1, ev.host, op.cpu, op.nic),
            });
        }
        self.start_op(ev.id, ev.host, ev.time);
        Ok((op, ci, ni))
    }

    /// A send, put or get started at `t` with overhead `o` holds its CPU
    /// (index `ci`) until `end` and its NIC (`ni`) until `gs`. Returns
    /// the time its message event may first run (t + o + L) and the time
    /// the network gets the message: the start, or after the overhead o
    /// (--insert-at after-o). None on a time overflow.
    #[inline(always)]
    pub(in crate::engine) fn occupy(
        &mut self,
        ci: usize,
        ni: usize,
        t: u64,
        o: u64,
        end: u64,
        gs: u64,
    ) -> Option<(u64, u64)> {
        let msg_time = add(add(v(t), v(o)), v(self.params.l))?;
        self.nexto[ci] = end;
        self.nextgs[ni] = gs;
        let t_ins = if self.insert_after_o {
            add(v(t), v(o))?
        } else {
            t
        };
        Some((msg_time, t_ins))
    }

    pub(in crate::engine) fn send(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        let (op, ci, ni) = match self.start_on_cpu_nic(ev) {
            Ok(started) => started,
            Err(blocked) => return Ok(blocked),
        };
        let t = ev.time;
        let p = &self.params;
        let (o, big_o) = p.overheads(op.size);
        let s1 = op.size.saturating_sub(1); // section 9.3: (s-1) is 0 for s = 0
        let ovf = || overflow(ev.host, "send", t);
        let cpu_work = add(v(o), mul(s1, big_o)).ok_or_else(ovf)?;
        let end =
            add(add(v(t), v(cpu_work)), v(self.noise(ev.host, t, cpu_work))).ok_or_else(ovf)?;
        let gs = add(add(v(t), v(p.g)), mul(s1, p.big_g)).ok_or_else(ovf)?;
        let (msg_time, t_ins) = self.occupy(ci, ni, t, o, end, gs).ok_or_else(ovf)?;
        // version 4: the network may have made this insert already
        let prefired = if self.trig.on {
            self.take_prefired(ev.host, t_ins, op.peer, op.size)?
        } else {
            None
        };
        let handle = match prefired {
            Some(h) => h,
            None => self.net.insert(
                Time(t_ins),
                Envelope::new(ev.host, op.peer, op.size, op.tag),
            )?,
        };
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Send {
                host: ev.host,
                cpu: op.cpu,
                node: ev.id,
                dst: op.peer,
                size: op.size,
                tag: op.tag,
                start: t,
                end,
                handle,
            });
        }
        let eager = op.size <= self.params.s;
        let m = Msg::entering(
            one_sided::Role::Data,
            ev.host,
            op.peer,
            ev.id,
            &op,
            op.size,
            t,
            handle,
            eager,
        );
        self.track_message(m, msg_time, t_ins, prefired.is_some())?;
        if eager {
            self.complete_op(ev.id, ev.host, end);
        } else if self.trig.on {
            self.trig.rdv_open[ev.host as usize] += 1;
        }
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use crate::engine::Params;

    /// nexto = t + o + (s-1)O, nextgs = t + g + (s-1)G: with O = 2 a 10 B
    /// send keeps the CPU until 1500 + 18 = 1518; with g = 5000 the second
    /// send waits for the NIC until 5000 + 9G = 5054 and ends at
    /// 5054 + 1518 = 6572.
    #[test]
    fn cpu_and_nic_overheads() {
        let p = Params {
            big_o: 2,
            ..Params::default()
        };
        let one = "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n";
        assert_eq!(run(one, p).finish_times[0], 1518);
        let two = "num_ranks 2\nrank 0 {\nl1: send 10b to 1\nl2: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\nl2: recv 10b from 0\n}\n";
        assert_eq!(run(two, Params { g: 5000, ..p }).finish_times[0], 6572);
    }
}
