//! The interface of a layer that bounds each flow's rate (the penalty
//! backend, docs/backends.md "penalty"): it sees the active flows by host
//! and returns a bound per flow before each max-min solve.

/// Per-flow rate bounds from the active flows (the penalty layer).
pub trait Bounds {
    /// Recompute `bound` for the flows of `comp` (indices into `flows`);
    /// the engine calls it before each max-min solve of a component.
    fn bounds(&mut self, view: &FlowView<'_>, comp: &[u32], out: &mut Vec<f64>);
    /// Whether host links take part in max-min (the penalty model
    /// replaces them by its NIC model).
    fn host_links_shared(&self) -> bool {
        true
    }
    fn name(&self) -> &str;
}

/// What a [`Bounds`] layer sees: the active flows by source and
/// destination host.
pub struct FlowView<'a> {
    pub src: &'a dyn Fn(u32) -> u32,
    pub dst: &'a dyn Fn(u32) -> u32,
    /// Active flows from host h.
    pub out: &'a dyn Fn(u32) -> &'a [u32],
    /// Active flows into host h.
    pub inn: &'a dyn Fn(u32) -> &'a [u32],
    /// Capacity of a host link in bytes per ps.
    pub host_cap: f64,
}

#[cfg(test)]
mod tests {
    use super::{Bounds, FlowView};
    use crate::network::flow::{FastArgs, FlowNet, FlowTopology};
    use crate::network::{Envelope, Network};
    use crate::Time;

    /// Holds every flow at a quarter of the host link; the one flow of
    /// the test (0 -> 1) is what it sees.
    struct Quarter;
    impl Bounds for Quarter {
        fn bounds(&mut self, v: &FlowView<'_>, comp: &[u32], out: &mut Vec<f64>) {
            assert_eq!(comp, &[0]);
            assert_eq!(
                ((v.out)(0), (v.inn)(1), (v.out)(1)),
                (&[0u32][..], &[0u32][..], &[][..])
            );
            assert_eq!(((v.src)(0), (v.dst)(0)), (0, 1));
            out.clear();
            out.extend(comp.iter().map(|_| v.host_cap / 4.0));
        }
        fn name(&self) -> &str {
            "quarter"
        }
    }

    /// The layer sees the active flow from host 0 into host 1 and its
    /// bound holds the flow at 1e-3 / 4 B/ps: 1000 B take 4 000 000 ps.
    #[test]
    fn a_layer_bounds_the_rate() {
        let t = ibnet::topology::builtin("H8_S1").unwrap();
        let ranks = (0..8).map(|r| t.hca_of_rank(r).unwrap()).collect();
        let topo = FlowTopology::from_topology(&t, ranks, 1e9, 0, &FastArgs::default());
        let mut n = FlowNet::new(topo, true, Some(Box::new(Quarter)));
        assert_eq!(n.name(), "quarter");
        let h = n.insert(Time(0), Envelope::new(0, 1, 1000, 0)).unwrap();
        let a = n.wait_exact(Time(0), Time(u64::MAX)).unwrap();
        assert_eq!(a.arrivals, vec![(h, Time(4_000_001))]);
    }
}
