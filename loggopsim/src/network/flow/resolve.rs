//! Re-solving the rates after an instant's changes (docs/backends.md,
//! "flow"): only the connected component of the changed flows (flows
//! linked through shared resources) is solved again; the other flows keep
//! their rates and completion events.

use super::ceil_ps;
use super::maxmin::Problem;
use super::{FlowNet, FlowView, St};

impl FlowNet {
    /// Re-solve max-min on the component of the changed flows at time `t`.
    pub(super) fn resolve(&mut self, t: u64, changed: &[u32]) {
        let (comp, comp_res) = self.component(changed);
        if comp.is_empty() {
            return;
        }
        // (the BFS order is deterministic: no sort needed)
        self.solves += 1;
        self.solved_flows += comp.len() as u64;
        self.catch_up(t, &comp);
        let bounds = self.layer_bounds(&comp);
        let (fres, foff, flen) = (&self.fres, &self.foff, &self.flen);
        let cap = &self.topo.cap;
        let (rate, rounds) = self.maxmin.solve(Problem {
            comp: &comp,
            comp_res: &comp_res,
            res_flows: &self.res_flows,
            flow_res: |f: u32| {
                let off = foff[f as usize] as usize;
                &fres[off..off + flen[f as usize] as usize]
            },
            cap: |r: u32| cap.get(r as usize).copied().unwrap_or(f64::INFINITY),
            bounds: &bounds,
            unconstrained: self.topo.link_cap,
        });
        self.fill_rounds += rounds;
        self.reschedule(t, &comp, &rate);
    }

    /// The active flows connected to the `changed` ones through shared
    /// resources (the changed flows first, then in BFS order) and their
    /// resources. Marks are epoch numbers, so nothing is cleared per call.
    pub(super) fn component(&mut self, changed: &[u32]) -> (Vec<u32>, Vec<u32>) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark_res.iter_mut().for_each(|m| *m = 0);
            self.mark_flow.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let ep = self.epoch;
        if self.mark_flow.len() < self.flows.len() {
            self.mark_flow.resize(self.flows.len(), 0);
        }
        // BFS over resources from the changed flows' resources
        let mut res_stack: Vec<u32> = Vec::new();
        let mut comp_res: Vec<u32> = Vec::new();
        let mut comp: Vec<u32> = Vec::new();
        let mut tmp = Vec::new();
        for &f in changed {
            self.flow_res(f, &mut tmp);
            for &r in &tmp {
                if self.mark_res[r as usize] != ep {
                    self.mark_res[r as usize] = ep;
                    res_stack.push(r);
                }
            }
            if self.flows[f as usize].st == St::Active && self.mark_flow[f as usize] != ep {
                self.mark_flow[f as usize] = ep;
                comp.push(f);
            }
        }
        while let Some(r) = res_stack.pop() {
            comp_res.push(r);
            for i in 0..self.res_flows[r as usize].len() {
                let f = self.res_flows[r as usize][i];
                if self.mark_flow[f as usize] == ep {
                    continue;
                }
                self.mark_flow[f as usize] = ep;
                comp.push(f);
                let off = self.foff[f as usize] as usize;
                for &r2 in &self.fres[off..off + self.flen[f as usize] as usize] {
                    if self.mark_res[r2 as usize] != ep {
                        self.mark_res[r2 as usize] = ep;
                        res_stack.push(r2);
                    }
                }
            }
        }
        (comp, comp_res)
    }

    /// Brings the remaining bytes of `comp`'s flows to `t` at their old rates.
    pub(super) fn catch_up(&mut self, t: u64, comp: &[u32]) {
        for &f in comp {
            let fl = &mut self.flows[f as usize];
            if fl.last < t {
                fl.remaining -= fl.rate * (t - fl.last) as f64;
                if fl.remaining < 0.0 {
                    fl.remaining = 0.0;
                }
                fl.last = t;
            }
        }
    }

    /// The layer's rate bound per flow of `comp` (none without a layer).
    fn layer_bounds(&mut self, comp: &[u32]) -> Vec<f64> {
        let mut bounds = Vec::new();
        if let Some(mut layer) = self.layer.take() {
            {
                let flows = &self.flows;
                let rf = &self.res_flows;
                let nres = self.nres;
                let nh = self.nhosts as usize;
                let src = |f: u32| flows[f as usize].src;
                let dst = |f: u32| flows[f as usize].dst;
                let out = |h: u32| rf[nres + h as usize].as_slice();
                let inn = |h: u32| rf[nres + nh + h as usize].as_slice();
                let view = FlowView {
                    src: &src,
                    dst: &dst,
                    out: &out,
                    inn: &inn,
                    host_cap: self.topo.link_cap,
                };
                layer.bounds(&view, comp, &mut bounds);
            }
            self.layer = Some(layer);
        }
        bounds
    }

    /// New completion events for the flows of `comp` at their new rates;
    /// a flow whose rate did not change (bit for bit) keeps its event, so
    /// a re-solve does not move it by rounding again.
    pub(super) fn reschedule(&mut self, t: u64, comp: &[u32], rate: &[f64]) {
        for (i, &f) in comp.iter().enumerate() {
            let fl = &mut self.flows[f as usize];
            if fl.rate == rate[i] && fl.gen > 0 && fl.remaining > 0.0 {
                continue; // unchanged: keep its completion event
            }
            fl.rate = rate[i];
            fl.gen = fl.gen.wrapping_add(1).max(1);
            let dt = if fl.remaining <= 0.0 {
                0
            } else {
                ceil_ps(fl.remaining / fl.rate)
            };
            self.heap.set(f, t.saturating_add(dt));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::network::flow::test_net_with;

    /// 0->1 and 0->2 share host 0's link, 3->4 shares nothing with them:
    /// the component of 0->1 is {0->1, 0->2} and the three links they use
    /// (host 0's injection, the ejections to 1 and 2).
    #[test]
    fn the_component_follows_shared_links_only() {
        let (mut n, [a, b, c]) = test_net_with([(0, 1, 1000), (0, 2, 1000), (3, 4, 1000)]);
        n.step_instant(1);
        let (mut comp, comp_res) = n.component(&[a]);
        comp.sort_unstable();
        assert_eq!(comp, vec![a, b]);
        assert_eq!(comp_res.len(), 3);
        assert_eq!(n.component(&[c]).0, vec![c]);
    }

    /// Remaining bytes at the old rate: 1000 B at 5e-4 B/ps for 400 000 ps
    /// leave 800 B; never below 0.
    #[test]
    fn catch_up_serves_bytes_at_the_old_rate() {
        let (mut n, [a, b]) = test_net_with([(0, 1, 1000), (0, 2, 1000)]);
        n.step_instant(1); // both enter at 1 ps at 5e-4 B/ps
        n.catch_up(400_001, &[a]);
        assert_eq!(n.flows[a as usize].remaining, 800.0);
        assert_eq!(n.flows[a as usize].last, 400_001);
        assert_eq!(
            n.flows[b as usize].remaining, 1000.0,
            "not in the list: untouched"
        );
        n.catch_up(10_000_000, &[a]);
        assert_eq!(n.flows[a as usize].remaining, 0.0);
    }

    /// A new rate moves the completion to t + ceil(remaining / rate); the
    /// same rate keeps the event where it was.
    #[test]
    fn reschedule_moves_only_changed_rates() {
        let (mut n, [a]) = test_net_with([(0, 1, 1000)]);
        n.step_instant(1); // alone: 1e-3 B/ps, completes at 1 000 001
        assert_eq!(n.next_event(), 1_000_001);
        n.reschedule(7, &[a], &[1e-3]);
        assert_eq!(n.next_event(), 1_000_001, "unchanged rate: same event");
        n.reschedule(1, &[a], &[5e-4]);
        assert_eq!(n.next_event(), 2_000_001);
    }
}
