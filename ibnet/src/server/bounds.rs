//! Lower bounds of travel times (docs/protocol.md 3a): the per-hop base,
//! the zero-load bound with serialisation, the minimum latency of the
//! ConfigAck, and the lookahead a grant is made of.

use super::FabricServer;
use ipc_proto::Time;

impl FabricServer {
    /// Route length in switches (cached); 0 when there is no route (the
    /// insert itself reports that).
    pub(super) fn hops(&mut self, src_hca: usize, dst_hca: usize) -> usize {
        if let Some(n) = self.hops_cache.get(src_hca, dst_hca) {
            return n;
        }
        let n = self.fabric.switches_between(src_hca, dst_hca).unwrap_or(0);
        self.hops_cache.set(src_hca, dst_hca, n);
        n
    }

    /// The thesis's base (docs/protocol.md rule 2.5): the fixed per-hop
    /// latencies along the route, i.e. ISW + VSW delay per switch (the
    /// model has no wire propagation delay), without serialisation,
    /// generator or sink time. Every travel time is at least this: a flit
    /// leaves a switch no earlier than ISW + VSW after it arrived.
    pub fn hops_base(&mut self, src_hca: usize, dst_hca: usize) -> Time {
        Time(self.hops(src_hca, dst_hca) as u64 * self.switch_fixed)
    }

    /// A lower bound of the travel time of any message of `bytes` on this
    /// route, also under load: the per-hop base plus the serialisation
    /// (`zeroload::lower_bound`, >= the per-hop base).
    pub fn lower_bound(&mut self, src_hca: usize, dst_hca: usize, bytes: u64) -> Time {
        let sw = self.hops(src_hca, dst_hca);
        self.lower_bound_sw(sw, bytes)
    }

    /// [`Self::lower_bound`] of a route through `sw` switches.
    pub(super) fn lower_bound_sw(&mut self, sw: usize, bytes: u64) -> Time {
        if let Some(&t) = self.lb_cache.get(&(sw, bytes)) {
            return t;
        }
        let t = Time(crate::zeroload::lower_bound(
            self.fabric.params(),
            &self.tm,
            sw,
            bytes,
        ));
        if self.lb_cache.len() < 1 << 16 {
            self.lb_cache.insert((sw, bytes), t);
        }
        t
    }

    /// The smallest travel time any message between two mapped ranks can
    /// have (>= 1 ps): the minimum over the mapped HCA pairs of the lower
    /// bound of a 1-byte message (every message has at least one byte on
    /// the wire). It is the scheduler's lookahead after an insert
    /// (ConfigAck).
    pub fn min_latency(&mut self) -> Time {
        if let Some(t) = self.min_latency {
            return t;
        }
        let mut hcas: Vec<usize> = self.cfg.rank_hcas.clone();
        hcas.sort_unstable();
        let shared = hcas.windows(2).any(|w| w[0] == w[1]);
        hcas.dedup();
        let mut m = if shared || hcas.len() < 2 {
            0
        } else {
            u64::MAX
        };
        // No route crosses fewer than one switch: once a pair reaches that
        // floor the minimum is known (on a fat tree the first two HCAs of
        // a leaf), which spares the n^2 route walks of a large network.
        let floor = self.lower_bound_sw(1, 1).0;
        'outer: for &a in &hcas {
            for &b in &hcas {
                if a != b {
                    m = m.min(self.lower_bound(a, b, 1).0);
                    if m <= floor {
                        break 'outer;
                    }
                }
            }
        }
        let t = Time(m.max(1));
        self.hops_cache.trim();
        self.min_latency = Some(t);
        t
    }

    /// Version 2: a lower bound on the next completion of every message in
    /// flight, from their insert times and bases and the engine's bound.
    pub(super) fn lookahead(&mut self) -> u64 {
        let slots = &self.slots;
        let by_base = self
            .earliest
            .min(|id| slots.get(id).is_none_or(|s| s.arrived.is_some()))
            .unwrap_or(u64::MAX);
        let by_engine = self
            .fabric
            .completion_lower_bound()
            .map(|t| t.0)
            .unwrap_or(u64::MAX);
        by_base.max(by_engine)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{server, ONE_FLIT_PS};
    use ipc_proto::Protocol;

    #[test]
    fn per_hop_base_and_serialisation_bound() {
        // thesis-ddr: ISW + VSW = 100 ns per switch; H8_S1 has one switch
        // between any two HCAs, H8_S2 two between HCAs of different switches.
        let mut s = server("H8_S1", Protocol::Notify, 1, None);
        assert_eq!(s.hops(0, 1), 1);
        assert_eq!(s.hops_base(0, 1).0, 100_000);
        assert_eq!(s.min_latency().0, 100_000);
        // a one-flit message's zero-load travel time is the bound itself
        let lb = s.lower_bound(0, 1, 44).0;
        assert!((100_000..=ONE_FLIT_PS).contains(&lb), "{lb}");
        assert!(s.lower_bound(0, 1, 1 << 20).0 > lb);
        // nothing in flight: no bound from messages or the engine
        assert_eq!(s.lookahead(), u64::MAX);
        let mut two = server("H8_S2", Protocol::Notify, 1, None);
        let far = (0..8).map(|d| two.hops(0, d)).max().unwrap();
        assert_eq!(two.hops_base(0, 7).0, 100_000 * far as u64);
    }
}
