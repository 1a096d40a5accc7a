//! The result of a run (docs/model/loggops.md 8): finish times, event
//! counts, unmatched queue entries, the network's statistics.

use super::{Sim, Tracer};
use crate::network::{Network, SyncMode};
use crate::schedule::ANY;

/// An unmatched queue entry at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Pending {
    /// source rank, or -1 for any-source
    pub src: i64,
    /// tag, or -1 for any-tag
    pub tag: i64,
    #[serde(rename = "size_bytes")]
    pub size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HostLeftovers {
    pub host: u32,
    /// posted receives never matched (RQ)
    pub receives: Vec<Pending>,
    /// messages never received (UQ)
    pub unexpected: Vec<Pending>,
}

/// Result of a run, from which the binary prints text or JSON.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub num_hosts: u32,
    pub num_cpus: u32,
    pub num_nics: u32,
    /// Per host: max over its CPUs of nexto (NIC times excluded).
    pub finish_times: Vec<u64>,
    /// Distinct enqueued operations plus messages (re-insertions not counted).
    pub events: u64,
    /// Events processed including re-insertions.
    pub processed: u64,
    /// Time of the last processed event.
    pub end_time: u64,
    /// Hosts with non-empty RQ or UQ.
    pub leftovers: Vec<HostLeftovers>,
    /// Operations that never completed (includes unmatched ones).
    pub incomplete_ops: u64,
    /// Per host: largest RQ and UQ lengths seen.
    pub max_rq: Vec<u64>,
    pub max_uq: Vec<u64>,
    pub network_stats: Vec<(String, u64)>,
    /// Wall clock: how long the scheduler waited for a fabric in another
    /// process or thread (None for the other backends).
    pub waited_for_network: Option<std::time::Duration>,
}

impl Report {
    /// Host with the largest finish time (the first one on ties) and that time.
    pub fn max_finish(&self) -> (u32, u64) {
        let mut best = (0u32, 0u64);
        for (h, &t) in self.finish_times.iter().enumerate() {
            if t > best.1 {
                best = (h as u32, t);
            }
        }
        best
    }
    /// No leftovers and every operation completed.
    pub fn ok(&self) -> bool {
        self.leftovers.is_empty() && self.incomplete_ops == 0
    }
}

impl<N: Network, T: Tracer> Sim<N, T> {
    /// The result so far (complete once `step` returned None).
    pub fn report(&self) -> Report {
        let p = self.sched.num_ranks() as usize;
        let finish_times = (0..p)
            .map(|h| {
                self.nexto[h * self.ncpu..(h + 1) * self.ncpu]
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let pend = |src: u32, tag: u32, size: u64| Pending {
            src: if src == ANY { -1 } else { src as i64 },
            tag: if tag == ANY { -1 } else { tag as i64 },
            size,
        };
        let mut leftovers = Vec::new();
        for h in 0..p {
            if self.rq_len(h).0 == 0 && self.uq[h].is_empty() {
                continue;
            }
            let receives = self
                .rq_nodes(h)
                .into_iter()
                .map(|n| {
                    let op = self.sched.op(n);
                    pend(op.peer, op.tag, op.size)
                })
                .collect();
            let unexpected = self.uq[h]
                .entries_in_order()
                .into_iter()
                .map(|(s, t, m)| pend(s, t, self.msgs[m as usize].size))
                .collect();
            leftovers.push(HostLeftovers {
                host: h as u32,
                receives,
                unexpected,
            });
        }
        Report {
            num_hosts: p as u32,
            num_cpus: self.ncpu as u32,
            num_nics: self.nnic as u32,
            finish_times,
            events: self.events,
            processed: self.processed,
            end_time: self.now,
            leftovers,
            incomplete_ops: self.sched.num_nodes() as u64 - self.completed,
            max_rq: (0..p).map(|h| self.rq_len(h).1 as u64).collect(),
            max_uq: self.uq.iter().map(|q| q.max_len() as u64).collect(),
            waited_for_network: self.net.peer_wait(),
            network_stats: {
                let mut v = self.net.stats();
                if self.mode == SyncMode::Exact {
                    // cannot be anything but 0: a late arrival is an error
                    v.push(("late_arrivals".into(), self.late_arrivals));
                    v.push(("exact_grant_waits".into(), self.exact_grants));
                }
                if self.mode == SyncMode::Notify {
                    v.push(("late_arrivals".into(), self.late_arrivals));
                    v.push(("max_arrival_lag_ps".into(), self.max_arrival_lag));
                }
                if self.sched.uses_one_sided() {
                    // one-sided operations only (so other reports stay as they were)
                    v.push(("unmatched_polls".into(), self.waiting_polls() as u64));
                }
                v
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HostLeftovers, Pending, Report};

    fn report(finish_times: Vec<u64>) -> Report {
        Report {
            num_hosts: finish_times.len() as u32,
            num_cpus: 1,
            num_nics: 1,
            finish_times,
            events: 0,
            processed: 0,
            end_time: 0,
            leftovers: Vec::new(),
            incomplete_ops: 0,
            max_rq: Vec::new(),
            max_uq: Vec::new(),
            network_stats: Vec::new(),
            waited_for_network: None,
        }
    }

    #[test]
    fn the_first_host_wins_a_tie() {
        assert_eq!(report(vec![3, 9, 9, 1]).max_finish(), (1, 9));
        assert_eq!(report(vec![0, 0]).max_finish(), (0, 0));
        assert!(report(vec![1]).ok());
        let mut r = report(vec![1]);
        r.incomplete_ops = 1;
        assert!(!r.ok());
    }

    /// A receive that never matches is a leftover, printed with -1 for
    /// any source and any tag; the run is not ok.
    #[test]
    fn leftovers_show_wildcards_as_minus_one() {
        let text =
            "num_ranks 2\nrank 0 {\nl1: recv 8b from -1 tag -1\n}\nrank 1 {\nl1: calc 1\n}\n";
        let mut sim = crate::engine::build::loggp_sim(text);
        sim.run().unwrap();
        let r = sim.report();
        assert!(!r.ok());
        assert_eq!(r.incomplete_ops, 1);
        assert_eq!(
            r.leftovers,
            vec![HostLeftovers {
                host: 0,
                receives: vec![Pending {
                    src: -1,
                    tag: -1,
                    size: 8
                }],
                unexpected: Vec::new(),
            }]
        );
    }
}
