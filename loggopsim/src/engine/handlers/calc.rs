//! CALC (docs/model/loggops.md 6): the CPU is busy for the duration d.

use super::super::checked::{add, overflow, v};
use super::super::queue::Ev;
use super::super::{Sim, SimError, TraceEvent, Tracer};
use super::Outcome;
use crate::engine::groups::class_key;
use crate::network::Network;

impl<N: Network, T: Tracer> Sim<N, T> {
    pub(in crate::engine) fn calc(&mut self, ev: Ev) -> Result<Outcome, SimError> {
        let op = self.sched.op(ev.id);
        let ci = ev.host as usize * self.ncpu + op.cpu as usize;
        let t = ev.time;
        if self.nexto[ci] <= t {
            let end = add(add(v(t), v(op.size)), v(self.noise(ev.host, t, op.size)))
                .ok_or_else(|| overflow(ev.host, "calc", t))?;
            self.nexto[ci] = end;
            if T::ACTIVE {
                self.tracer.event(&TraceEvent::Calc {
                    host: ev.host,
                    cpu: op.cpu,
                    node: ev.id,
                    start: t,
                    end,
                });
            }
            self.start_op(ev.id, ev.host, t);
            self.complete_op(ev.id, ev.host, end);
            Ok(Outcome::Done)
        } else {
            Ok(Outcome::Blocked {
                avail: self.nexto[ci],
                class: class_key(0, ev.host, op.cpu, 0),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use crate::engine::Params;

    /// Two independent calcs on one CPU: the second is put back at the
    /// first's end (nexto = 100) and ends at 150; on two CPUs they overlap.
    #[test]
    fn a_busy_cpu_defers_the_calc() {
        let r = run(
            "num_ranks 1\nrank 0 {\nl1: calc 100\nl2: calc 50\n}\n",
            Params::default(),
        );
        assert_eq!(r.finish_times, vec![150]);
        assert_eq!(r.processed, 3, "two calcs, one put back");
        let r = run(
            "num_ranks 1\nrank 0 {\nl1: calc 100 cpu 0\nl2: calc 50 cpu 1\n}\n",
            Params::default(),
        );
        assert_eq!(r.finish_times, vec![100]);
    }
}
