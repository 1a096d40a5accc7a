//! Building an engine for a schedule and a network: the queues sized to
//! the schedule, the receive-queue variant its wildcards need, the roots
//! counted (docs/model/loggops.md 4, 5), and the options of a run.

use super::queue::{EventQueue, PROXY};
use super::{one_sided, triggers};
use super::{NoTrace, Params, Sim, SimError, Tracer};
use crate::hash::FastMap;
use crate::matching::{ExactRq, Indexes, MatchQueue};
use crate::network::{Network, SyncMode};
use crate::noise::Noise;
use crate::schedule::Schedule;
use ibcosim_common::handles::HandleMap;

impl<N: Network> Sim<N, NoTrace> {
    pub fn new(sched: Schedule, params: Params, net: N) -> Result<Self, SimError> {
        Sim::with_tracer(sched, params, net, NoTrace)
    }
}

impl<N: Network, T: Tracer> Sim<N, T> {
    pub fn with_tracer(
        sched: Schedule,
        params: Params,
        net: N,
        tracer: T,
    ) -> Result<Self, SimError> {
        if sched.num_ranks() >= PROXY {
            return Err(SimError::TooLarge(sched.num_ranks() as u64));
        }
        let p = sched.num_ranks() as usize;
        let ncpu = sched.num_cpus() as usize;
        let nnic = sched.num_nics() as usize;
        let w = sched.wildcard_use();
        // RQ is searched by messages (exact source, tag maybe any);
        // UQ by receives (source and tag maybe any).
        let rq_ix = Indexes {
            by_tag: false,
            by_src: w.send_any_tag,
            all: false,
        };
        let uq_ix = Indexes {
            by_tag: w.recv_any_src,
            by_src: w.recv_any_tag,
            all: w.recv_any_src && w.recv_any_tag,
        };
        let (mut roots_total, mut multi) = (0u64, false);
        for n in 0..sched.num_nodes() {
            let c = sched.depcount(n);
            roots_total += (c == 0) as u64;
            multi |= c > 1;
        }
        let partial = if multi {
            vec![0; sched.num_nodes() as usize]
        } else {
            Vec::new()
        };
        let seq = roots_total;
        let exact = !(w.recv_any_src || w.recv_any_tag || w.send_any_tag);
        // pack (src, tag) into 32 bits when both fit
        let src_bits = 32 - (p as u32).saturating_sub(1).leading_zeros();
        let tag_bits = 32 - sched.max_tag().leading_zeros();
        let key_bits = (src_bits + tag_bits <= 32).then_some(tag_bits);
        if sched.uses_one_sided() {
            // refuse a backend that cannot carry put/get up front
            net.check_one_sided()?;
        }
        let mode = net.mode();
        let min_lat = net.min_latency().0.max(1);
        let trig_on = mode == SyncMode::Exact && net.triggers() && exact && !sched.uses_one_sided();
        Ok(Sim {
            trig: triggers::Triggers::new(trig_on, &sched),
            partial,
            params,
            net,
            mode,
            tracer,
            noise: None,
            ncpu,
            nnic,
            nexto: vec![0; p * ncpu],
            nextgs: vec![0; p * nnic],
            nextgr: vec![0; p * nnic],
            rq: if exact {
                Vec::new()
            } else {
                (0..p).map(|_| MatchQueue::new(rq_ix)).collect()
            },
            rq_exact: if exact {
                vec![ExactRq::new(key_bits.is_some()); p]
            } else {
                Vec::new()
            },
            key_shift: key_bits.unwrap_or(32),
            link: if exact {
                vec![0; sched.num_nodes() as usize]
            } else {
                Vec::new()
            },
            uq: (0..p).map(|_| MatchQueue::new(uq_ix)).collect(),
            heap: EventQueue::default(),
            events: roots_total,
            roots: Vec::new(),
            root_pos: 0,
            root_host: 0,
            root_seq0: 0,
            roots_total,
            roots_started: false,
            msgs: Vec::new(),
            msg_free: Vec::new(),
            waiting: HandleMap::default(),
            late_arrivals: 0,
            granted: u64::MAX,
            min_lat,
            insert_after_o: false,
            exact_grants: 0,
            max_arrival_lag: 0,
            seq,
            processed: 0,
            completed: 0,
            now: 0,
            released: Vec::new(),
            scratch: Vec::new(),
            rdma: one_sided::State::default(),
            groups: Vec::new(),
            group_of: FastMap::default(),
            group_free: Vec::new(),
            grouping: true,
            done: false,
            sched,
        })
    }

    /// Turns the grouping of blocked events off (every blocked event is then
    /// re-inserted on its own, literally as the reference does). Results are
    /// identical either way; this exists to test that.
    pub fn set_grouping(&mut self, on: bool) {
        self.grouping = on;
    }

    /// Adds CPU noise (only used when set).
    pub fn set_noise(&mut self, noise: Noise) {
        self.noise = Some(noise);
    }
    /// `--insert-at after-o`: insert each message into the network at
    /// t + o instead of t (see the field's docs). Every backend accepts
    /// future insert times; the exact protocol's grant uses the insert time.
    pub fn set_insert_after_o(&mut self, on: bool) {
        self.insert_after_o = on;
    }
}

/// A new engine for a GOAL text with the default parameters on LogGP
/// (for the engine's unit tests).
#[cfg(test)]
pub(super) fn loggp_sim(text: &str) -> Sim<crate::network::LogGp> {
    let s = crate::goal::parse_str("t.goal", text).unwrap();
    Sim::new(s, Params::default(), crate::network::LogGp::new()).unwrap()
}

#[cfg(test)]
mod tests {

    /// Every root counts as an event from the start (section 8's Events);
    /// nothing has run yet.
    #[test]
    fn a_new_engine_counts_its_roots() {
        let text = "num_ranks 2\nrank 0 {\nl1: calc 1\nl2: calc 2\nl3: calc 3\nl3 requires l1\n}\nrank 1 {\nl1: calc 1\n}\n";
        let sim = crate::engine::build::loggp_sim(text);
        assert_eq!((sim.events(), sim.processed(), sim.now().0), (3, 0, 0));
        assert_eq!((sim.schedule_ops(), sim.schedule_ranks()), (4, 2));
        assert!(!sim.is_done());
    }
}
