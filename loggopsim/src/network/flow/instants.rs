//! Advancing the flow model (docs/backends.md, "flow"): all events of one
//! instant (flows entering the bandwidth phase, flows completing) are
//! applied together, then max-min is re-solved once for them.

use super::{FlowNet, St};

impl FlowNet {
    /// Apply every event at the earliest instant `<= limit`; returns the
    /// instant and the completions (flow ids) or None.
    pub(super) fn step_instant(&mut self, limit: u64) -> Option<(u64, Vec<u32>)> {
        let (t, _) = self.heap.peek()?;
        if t > limit {
            return None;
        }
        let mut changed: Vec<u32> = Vec::new();
        let mut done: Vec<u32> = Vec::new();
        let mut res = Vec::new();
        while let Some((t2, f)) = self.heap.peek() {
            if t2 != t {
                break;
            }
            self.heap.pop();
            if self.flows[f as usize].st == St::Active {
                self.complete(f, t, &mut res);
                done.push(f);
            } else {
                self.enter(f, t, &mut res);
            }
            changed.push(f);
        }
        self.now = t;
        self.resolve(t, &changed);
        done.sort_unstable();
        Some((t, done))
    }

    /// Flow `f` completes at `t`: it leaves its resources' lists (`res`:
    /// scratch for its resources).
    fn complete(&mut self, f: u32, t: u64, res: &mut Vec<u32>) {
        self.flow_res(f, res);
        let off = self.foff[f as usize] as usize;
        for (k, &r) in res.iter().enumerate() {
            let p = self.fpos[off + k] as usize;
            let v = &mut self.res_flows[r as usize];
            let vk = &mut self.res_k[r as usize];
            debug_assert_eq!(v[p], f);
            v.swap_remove(p);
            vk.swap_remove(p);
            if p < v.len() {
                // the flow moved into the hole: fix its position
                let (g, kg) = (v[p], vk[p]);
                self.fpos[self.foff[g as usize] as usize + kg as usize] = p as u32;
            }
        }
        let fl = &mut self.flows[f as usize];
        fl.st = St::Done;
        fl.arrival = t;
        fl.remaining = 0.0;
        self.active -= 1;
    }

    /// Flow `f` has waited its route latency and enters the bandwidth
    /// phase at `t`: it joins its resources' lists.
    fn enter(&mut self, f: u32, t: u64, res: &mut Vec<u32>) {
        self.flow_res(f, res);
        let off = self.fpos.len() as u32;
        self.foff[f as usize] = off;
        self.flen[f as usize] = res.len() as u8;
        self.fres.extend_from_slice(res);
        for (k, &r) in res.iter().enumerate() {
            let v = &mut self.res_flows[r as usize];
            self.fpos.push(v.len() as u32);
            v.push(f);
            self.res_k[r as usize].push(k as u8);
        }
        let fl = &mut self.flows[f as usize];
        fl.st = St::Active;
        fl.last = t;
        self.active += 1;
        self.max_active = self.max_active.max(self.active);
    }

    /// Process instants `<= limit` until one has completions.
    pub(super) fn advance_to_completion(&mut self, limit: u64) -> Option<(u64, Vec<u32>)> {
        loop {
            let (t, done) = self.step_instant(limit)?;
            if !done.is_empty() {
                return Some((t, done));
            }
        }
    }

    /// The time of the model's next event (u64::MAX: none).
    pub(super) fn next_event(&mut self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use crate::network::flow::test_net_with;

    /// Two 1000 B flows into host 1, inserted at 0: both enter at 1 ps
    /// (one instant, no completion), share host 1's link (5e-4 B/ps each)
    /// and complete together at 1 + 2 000 000 ps.
    #[test]
    fn entries_and_completions_by_instant() {
        let (mut n, [a, b]) = test_net_with([(0, 1, 1000), (2, 1, 1000)]);
        assert_eq!(n.step_instant(0), None, "nothing before the entry");
        assert_eq!(n.step_instant(u64::MAX), Some((1, vec![])));
        assert_eq!((n.rate(a as u64), n.rate(b as u64)), (5e-4, 5e-4));
        assert_eq!(n.active, 2);
        assert_eq!(
            n.advance_to_completion(u64::MAX),
            Some((2_000_001, vec![a, b]))
        );
        assert_eq!(n.active, 0);
        assert!(n.res_flows.iter().all(|v| v.is_empty()));
        assert_eq!(n.next_event(), u64::MAX);
    }

    /// Leaving a resource list by swap_remove keeps the others' positions
    /// right: three flows out of host 0, the first completes first (it is
    /// the shortest), the other two go on at half the link each.
    #[test]
    fn a_completion_fixes_the_positions_of_the_others() {
        let (mut n, [a, b, c]) = test_net_with([(0, 1, 300), (0, 2, 3000), (0, 3, 3000)]);
        n.step_instant(u64::MAX);
        // 1e-3 / 3 each; a's 300 B take 900 000 ps
        assert_eq!(n.advance_to_completion(u64::MAX), Some((900_001, vec![a])));
        assert_eq!((n.rate(b as u64), n.rate(c as u64)), (5e-4, 5e-4));
        for f in [b, c] {
            let off = n.foff[f as usize] as usize;
            for k in 0..n.flen[f as usize] as usize {
                let r = n.fres[off + k] as usize;
                assert_eq!(n.res_flows[r][n.fpos[off + k] as usize], f);
            }
        }
        // b and c: 2700 B left each at 5e-4 B/ps: 5 400 000 ps more
        assert_eq!(
            n.advance_to_completion(u64::MAX),
            Some((6_300_001, vec![b, c]))
        );
    }
}
