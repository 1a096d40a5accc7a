//! Max-min fair rates by progressive filling (docs/backends.md, "flow"):
//! raise every flow's rate together until a resource is full or a flow
//! reaches its bound, freeze those flows, repeat with the rest.

/// Scratch space of the solver, kept between solves: indexed by flow id
/// (`flow_pos`) and by resource (`res_rem`, `res_cnt`).
#[derive(Clone, Debug, Default)]
pub(super) struct MaxMin {
    /// position of each flow of the component in `comp`
    flow_pos: Vec<u32>,
    /// per resource: capacity left and flows not yet frozen
    res_rem: Vec<f64>,
    res_cnt: Vec<u32>,
}

/// One solve: a connected component of active flows and its resources.
pub(super) struct Problem<'a, R, C> {
    /// the flows (ids), in the order of the result
    pub comp: &'a [u32],
    /// every resource of those flows
    pub comp_res: &'a [u32],
    /// the active flows of each resource (only flows of `comp` on the
    /// resources of `comp_res`)
    pub res_flows: &'a [Vec<u32>],
    /// the resources of a flow
    pub flow_res: R,
    /// the capacity of a resource (infinite: not a constraint)
    pub cap: C,
    /// per flow of `comp` (when present): an upper bound on its rate
    pub bounds: &'a [f64],
    /// the rate of a flow no finite resource or bound constrains
    pub unconstrained: f64,
}

impl MaxMin {
    /// The max-min rates of `p.comp`'s flows (same order) and the number
    /// of filling rounds.
    pub(super) fn solve<'a, R, C>(&mut self, p: Problem<'a, R, C>) -> (Vec<f64>, u64)
    where
        R: Fn(u32) -> &'a [u32],
        C: Fn(u32) -> f64,
    {
        let comp = p.comp;
        let bounds = p.bounds;
        let mut rounds = 0;
        // progressive filling: per resource its remaining capacity and
        // unfrozen flows (scratch arrays indexed by resource); each round
        // freezes the flows of the tightest resource (lowest id on ties)
        // or the flows whose bound is lower, scanning the component's
        // resources (few distinct levels in practice; no heap churn)
        let n = comp.len();
        let mut rate = vec![0.0f64; n];
        let mut frozen = vec![false; n];
        let nf = comp.iter().map(|&f| f as usize + 1).max().unwrap_or(0);
        if self.flow_pos.len() < nf {
            self.flow_pos.resize(nf, 0);
        }
        for (i, &f) in comp.iter().enumerate() {
            self.flow_pos[f as usize] = i as u32;
        }
        let nr = p.res_flows.len();
        if self.res_rem.len() < nr {
            self.res_rem.resize(nr, 0.0);
            self.res_cnt.resize(nr, 0);
        }
        let mut live: Vec<u32> = Vec::with_capacity(p.comp_res.len());
        for &r in p.comp_res {
            let cnt = p.res_flows[r as usize].len() as u32;
            let c = (p.cap)(r);
            self.res_rem[r as usize] = c;
            self.res_cnt[r as usize] = cnt;
            if cnt > 0 && c.is_finite() {
                live.push(r);
            }
        }
        let mut by_bound: Vec<usize> = (0..n)
            .filter(|&i| bounds.get(i).is_some_and(|b| b.is_finite()))
            .collect();
        by_bound.sort_by(|&a, &b| bounds[a].total_cmp(&bounds[b]).then(a.cmp(&b)));
        let mut bi = 0;
        let mut left = n;
        let mut to_freeze: Vec<usize> = Vec::new();
        let mut tight: Vec<u32> = Vec::new();
        while left > 0 {
            rounds += 1;
            // tightest live resource
            // (all resources at the minimal share saturate together: one
            // round freezes the flows of every one of them)
            let mut share = f64::INFINITY;
            let mut link = None;
            tight.clear();
            live.retain(|&r| self.res_cnt[r as usize] > 0);
            for &r in &live {
                let s = self.res_rem[r as usize] / self.res_cnt[r as usize] as f64;
                if s < share {
                    share = s;
                    link = Some(r);
                    tight.clear();
                    tight.push(r);
                } else if s == share {
                    tight.push(r);
                }
            }
            while bi < by_bound.len() && frozen[by_bound[bi]] {
                bi += 1;
            }
            to_freeze.clear();
            if bi < by_bound.len() && bounds[by_bound[bi]] <= share {
                let b = bounds[by_bound[bi]];
                while bi < by_bound.len() && (frozen[by_bound[bi]] || bounds[by_bound[bi]] == b) {
                    if !frozen[by_bound[bi]] {
                        to_freeze.push(by_bound[bi]);
                    }
                    bi += 1;
                }
                for &i in &to_freeze {
                    rate[i] = b;
                }
            } else if link.is_some() {
                for &r in &tight {
                    for &f in &p.res_flows[r as usize] {
                        let i = self.flow_pos[f as usize] as usize;
                        if !frozen[i] {
                            frozen[i] = true;
                            to_freeze.push(i);
                            rate[i] = share;
                        }
                    }
                }
                for &i in &to_freeze {
                    frozen[i] = false;
                }
            } else {
                // unconstrained (only infinite resources and no bound):
                // cannot happen with real links; give the link rate
                for i in 0..n {
                    if !frozen[i] {
                        to_freeze.push(i);
                        rate[i] = p.unconstrained;
                    }
                }
            }
            for &i in &to_freeze {
                frozen[i] = true;
                left -= 1;
                for &r in (p.flow_res)(comp[i]) {
                    let r = r as usize;
                    self.res_rem[r] = (self.res_rem[r] - rate[i]).max(0.0);
                    self.res_cnt[r] -= 1;
                }
            }
        }
        (rate, rounds)
    }
}

#[cfg(test)]
mod tests {
    use super::{MaxMin, Problem};

    /// Solves for flows given by their resources (flow i uses `flows[i]`),
    /// capacities `cap` per resource, optional bounds.
    fn solve(flows: &[&[u32]], cap: &[f64], bounds: &[f64]) -> (Vec<f64>, u64) {
        let mut res_flows = vec![Vec::new(); cap.len()];
        for (f, rs) in flows.iter().enumerate() {
            for &r in *rs {
                res_flows[r as usize].push(f as u32);
            }
        }
        let comp: Vec<u32> = (0..flows.len() as u32).collect();
        let comp_res: Vec<u32> = (0..cap.len() as u32).collect();
        MaxMin::default().solve(Problem {
            comp: &comp,
            comp_res: &comp_res,
            res_flows: &res_flows,
            flow_res: |f: u32| flows[f as usize],
            cap: |r: u32| cap[r as usize],
            bounds,
            unconstrained: 42.0,
        })
    }

    #[test]
    fn two_flows_on_one_link_get_half_each() {
        assert_eq!(solve(&[&[0], &[0]], &[1.0], &[]), (vec![0.5, 0.5], 1));
    }

    /// A crosses links 0 (capacity 4) and 1 (capacity 3); B and C share
    /// link 1 with it, D is alone on link 0. Link 1 is the bottleneck:
    /// 3/3 = 1 each for A, B, C (round 1); D then gets what is left of
    /// link 0: 4 - 1 = 3 (round 2).
    #[test]
    fn a_flow_across_a_bottleneck_shared_with_two_others() {
        let (r, rounds) = solve(&[&[0, 1], &[1], &[1], &[0]], &[4.0, 3.0], &[]);
        assert_eq!(r, vec![1.0, 1.0, 1.0, 3.0]);
        assert_eq!(rounds, 2);
    }

    /// Links 0 (1.0: A, B) and 1 (2.0: B, C): link 0 fills first at 0.5
    /// for A and B; C gets the rest of link 1, 2 - 0.5 = 1.5.
    #[test]
    fn the_tighter_link_decides_first() {
        assert_eq!(
            solve(&[&[0], &[0, 1], &[1]], &[1.0, 2.0], &[]).0,
            vec![0.5, 0.5, 1.5]
        );
    }

    /// Two links at the same share saturate in one round.
    #[test]
    fn equal_shares_freeze_together() {
        assert_eq!(
            solve(&[&[0], &[0, 1], &[1]], &[1.0, 1.0], &[]),
            (vec![0.5, 0.5, 0.5], 1)
        );
    }

    /// A bound below the fair share (the penalty layer's B/rho): A is held
    /// at 0.2, B takes the rest of the link, 0.8; a bound above the share
    /// changes nothing.
    #[test]
    fn bounds_cap_a_flow_and_free_capacity_for_the_others() {
        assert_eq!(
            solve(&[&[0], &[0]], &[1.0], &[0.2, f64::INFINITY]).0,
            vec![0.2, 0.8]
        );
        assert_eq!(solve(&[&[0], &[0]], &[1.0], &[0.9, 0.9]).0, vec![0.5, 0.5]);
    }

    /// No finite resource and no bound: the given fallback rate.
    #[test]
    fn unconstrained_flows_get_the_fallback() {
        assert_eq!(solve(&[&[0]], &[f64::INFINITY], &[]).0, vec![42.0]);
    }
}
