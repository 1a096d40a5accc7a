//! Blocked events (docs/model/loggops.md 6, "put it back"): re-insertion,
//! and the grouping of blocked events of one class behind one proxy in
//! the active queue (the header comment of `engine/mod.rs` says why it
//! does not change the order).

use super::handlers::Outcome;
use super::queue::{Ev, PROXY};
use super::{Sim, SimError, TraceEvent, Tracer};
use crate::network::Network;

/// Events blocked on the same resources with the same check: (kind, host, cpu, nic).
#[inline]
pub(super) fn class_key(kind: u64, host: u32, cpu: u8, nic: u8) -> u64 {
    (kind << 48) | ((host as u64) << 16) | ((cpu as u64) << 8) | nic as u64
}

pub(super) fn class_name(class: u64) -> &'static str {
    match class >> 48 {
        0 => "calc",
        1 => "send",
        _ => "msg",
    }
}

/// Blocked events of one class that all sit at the same time `time`,
/// sorted by seq; one proxy entry (time, first seq) stands for them in the
/// active queue.
pub(super) struct Group {
    key: u64,
    host: u32,
    time: u64,
    members: std::collections::VecDeque<(u64, u32)>,
    /// the proxy entry currently valid
    proxy: Option<(u64, u64)>,
}

impl<N: Network, T: Tracer> Sim<N, T> {
    /// (time, seq) of the next event other than a group proxy being processed.
    #[inline]
    pub(super) fn next_other(&mut self) -> (u64, u64) {
        let h = self
            .heap
            .peek()
            .map(|e| (e.time, e.seq))
            .unwrap_or((u64::MAX, u64::MAX));
        match self.peek_root() {
            Some(r) => h.min((r.time, r.seq)),
            None => h,
        }
    }

    /// A blocked event waits for `avail`. The reference re-inserts it at
    /// `avail`; we add it to its class group when the group sits at that
    /// very time (same position in the total order), else re-insert it.
    pub(super) fn join_group(&mut self, class: u64, avail: u64, ev: Ev) {
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Reinsert {
                host: ev.host,
                what: class_name(class),
                from: ev.time,
                to: avail,
            });
        }
        match self.group_of.get(&class) {
            Some(&gi) => {
                let g = &mut self.groups[gi as usize];
                if g.time != avail {
                    self.heap.push(Ev { time: avail, ..ev });
                    return;
                }
                let pos = g.members.partition_point(|m| m.0 < ev.seq);
                g.members.insert(pos, (ev.seq, ev.id));
                if pos == 0 {
                    g.proxy = Some((avail, ev.seq));
                    self.heap.push(Ev {
                        time: avail,
                        seq: ev.seq,
                        host: PROXY,
                        id: gi,
                    });
                }
            }
            None => {
                let g = Group {
                    key: class,
                    host: ev.host,
                    time: avail,
                    members: std::collections::VecDeque::from([(ev.seq, ev.id)]),
                    proxy: Some((avail, ev.seq)),
                };
                let gi = super::slots::store(&mut self.groups, &mut self.group_free, g);
                self.group_of.insert(class, gi);
                self.heap.push(Ev {
                    time: avail,
                    seq: ev.seq,
                    host: PROXY,
                    id: gi,
                });
            }
        }
    }

    /// A group proxy popped: its head member is checked at the group's time.
    /// If it is blocked, every member that the reference would check before
    /// any other event (same time, seq below the next other event) would be
    /// blocked with the same availability (a blocked check changes nothing),
    /// so they all move to that time at once.
    pub(super) fn proxy(&mut self, ev: Ev) -> Result<(), SimError> {
        let gi = ev.id;
        {
            let g = &mut self.groups[gi as usize];
            if g.proxy != Some((ev.time, ev.seq)) || g.members.is_empty() {
                return Ok(()); // stale proxy
            }
            g.proxy = None;
        }
        let (seq, id) = self.groups[gi as usize].members[0];
        let host = self.groups[gi as usize].host;
        let mev = Ev {
            time: ev.time,
            seq,
            host,
            id,
        };
        self.processed += 1;
        self.now = self.now.max(ev.time);
        match self.dispatch(mev)? {
            Outcome::Done => {
                if self.trig.on {
                    self.trig.live[host as usize] -= 1;
                }
                let g = &mut self.groups[gi as usize];
                g.members.pop_front();
                if let Some(&(s, _)) = g.members.front() {
                    g.proxy = Some((g.time, s));
                    let t = g.time;
                    self.heap.push(Ev {
                        time: t,
                        seq: s,
                        host: PROXY,
                        id: gi,
                    });
                } else {
                    let key = g.key;
                    self.group_of.remove(&key);
                    self.group_free.push(gi);
                }
            }
            Outcome::Blocked { avail, class } => {
                debug_assert!(avail > ev.time);
                let other = self.next_other();
                let t = ev.time;
                let g = &mut self.groups[gi as usize];
                let last = g.members.back().unwrap().0;
                let k = if (t, last) < other {
                    g.members.len()
                } else {
                    // at least the head, which was checked (guards against equal keys)
                    g.members.partition_point(|m| (t, m.0) < other).max(1)
                };
                if T::ACTIVE {
                    for i in 0..k {
                        let s = self.groups[gi as usize].members[i].0;
                        let _ = s;
                        self.tracer.event(&TraceEvent::Reinsert {
                            host,
                            what: class_name(class),
                            from: t,
                            to: avail,
                        });
                    }
                }
                let g = &mut self.groups[gi as usize];
                if k == g.members.len() {
                    g.time = avail;
                    g.proxy = Some((avail, seq));
                    self.heap.push(Ev {
                        time: avail,
                        seq,
                        host: PROXY,
                        id: gi,
                    });
                } else {
                    // only a prefix is checked before some other event: those
                    // are re-inserted one by one, the rest stays at `t`
                    for _ in 0..k {
                        let (s, id) = g.members.pop_front().unwrap();
                        self.heap.push(Ev {
                            time: avail,
                            seq: s,
                            host,
                            id,
                        });
                    }
                    let s = g.members[0].0;
                    g.proxy = Some((t, s));
                    self.heap.push(Ev {
                        time: t,
                        seq: s,
                        host: PROXY,
                        id: gi,
                    });
                }
            }
        }
        Ok(())
    }

    #[inline]
    pub(super) fn reinsert(&mut self, ev: Ev, to: u64, what: &'static str) {
        if T::ACTIVE {
            self.tracer.event(&TraceEvent::Reinsert {
                host: ev.host,
                what,
                from: ev.time,
                to,
            });
        }
        self.heap.push(Ev { time: to, ..ev });
    }
}

#[cfg(test)]
mod tests {
    use super::{class_key, class_name};

    #[test]
    fn classes_separate_kind_host_cpu_and_nic() {
        let keys = [
            class_key(0, 1, 2, 3),
            class_key(1, 1, 2, 3),
            class_key(0, 2, 2, 3),
            class_key(0, 1, 3, 3),
            class_key(0, 1, 2, 4),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(class_name(class_key(0, 9, 0, 0)), "calc");
        assert_eq!(class_name(class_key(1, 9, 0, 0)), "send");
        assert_eq!(class_name(class_key(2, 9, 0, 0)), "msg");
    }

    /// Grouping changes nothing: an all-to-all of 6 ranks (many messages
    /// blocked on one busy receiver at once) gives the same report with
    /// and without it, except for the count of processed events (a group
    /// moves its members with one check of its head).
    #[test]
    fn grouping_equals_literal_reinsertion() {
        let p = 6;
        let mut text = format!("num_ranks {p}\n");
        for r in 0..p {
            text += &format!("rank {r} {{\n");
            for q in (0..p).filter(|&q| q != r) {
                text += &format!("send 1000b to {q}\nrecv 1000b from {q}\n");
            }
            text += "}\n";
        }
        let run = |grouping: bool| {
            let mut sim = crate::engine::build::loggp_sim(&text);
            sim.set_grouping(grouping);
            sim.run().unwrap();
            sim.report()
        };
        let (mut a, b) = (run(true), run(false));
        assert!(a.ok());
        assert!(a.processed < b.processed, "the test has blocked groups");
        a.processed = b.processed;
        assert_eq!(a, b);
    }
}
