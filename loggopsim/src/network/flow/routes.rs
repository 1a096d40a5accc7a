//! The resources and routes of the flow models (docs/backends.md, "flow"):
//! one resource per direction of each cable, routes by ibnet's forwarding
//! tables, capacities and latencies from the fabric preset.

use super::FastArgs;
use ibnet::flowlevel::FlowLevel;
use ibnet::server::SetupArgs;
use ibnet::topology::{self, NodeKind, PortRef, Topology, NO_ROUTE};

/// The resources and routes of a topology for the flow models.
#[derive(Clone, Debug)]
pub struct FlowTopology {
    /// Capacity in bytes per ps of every resource (link direction).
    pub cap: Vec<f64>,
    /// Resource id of the output port (node, port): `out_id[node][port]`.
    out_id: Vec<Vec<u32>>,
    /// Peer of (node, port).
    peer: Vec<Vec<Option<PortRef>>>,
    /// rank -> HCA node index.
    pub rank_node: Vec<usize>,
    /// LID of each node (HCAs).
    lid: Vec<u16>,
    nodes: Vec<(bool, Vec<u16>, u16)>,
    names: Vec<String>,
    /// Per-switch latency in ps (ISW + VSW, times the latency factor, rounded).
    pub hop_latency: u64,
    /// Whether a route can avoid switches (an HCA cabled to an HCA).
    hca_to_hca: bool,
    /// Link capacity in bytes/s before the bandwidth factor.
    pub link_bytes_per_s: f64,
    /// ISW + VSW in ps before the latency factor.
    pub switch_latency_ps: u64,
    /// Every link's propagation delay in ps (`link_delay_ns`; 0 in the
    /// reference model) times the latency factor, rounded; added per link
    /// of a route.
    pub link_delay: u64,
    /// Link capacity in bytes per ps after the bandwidth factor.
    pub link_cap: f64,
}

/// A route: its resources (link directions in order) and latency.
#[derive(Clone, Debug)]
pub struct Route {
    pub links: Vec<u32>,
    pub latency: u64,
    /// Fastest rate the flow could ever get (min capacity on the route).
    pub max_rate: f64,
}

fn check_factor(name: &str, v: f64) -> Result<(), String> {
    if !(v.is_finite() && v > 0.0) {
        return Err(format!(
            "--{name} {v}: must be a finite number > 0 (1 = no correction)"
        ));
    }
    Ok(())
}

impl FlowTopology {
    /// Load the topology, preset, overrides and rank map exactly as the
    /// fabric backends do (`SetupArgs`), for a schedule of `num_ranks`.
    pub fn build(a: &SetupArgs, fast: &FastArgs, num_ranks: u32) -> Result<FlowTopology, String> {
        check_factor("latency-factor", fast.latency_factor)?;
        check_factor("bandwidth-factor", fast.bandwidth_factor)?;
        let topo =
            topology::open(&a.topology).map_err(|e| topology::open_error(&a.topology, &e))?;
        // link rate and per-switch latency: ibnet's derivation, shared
        // with `ibnet export --simgrid`
        let fl = FlowLevel::from_preset(&a.preset, &a.set)?;
        let rank_node: Vec<usize> = match &a.map {
            Some(path) => topology::load_rank_file(path, &topo).map_err(|e| e.to_string())?,
            None => (0..topo.num_ranks())
                .filter_map(|r| topo.hca_of_rank(r))
                .collect(),
        };
        if (num_ranks as usize) > rank_node.len() {
            return Err(format!(
                "the schedule has {num_ranks} ranks but the fabric ({}) maps only {} ranks to HCAs (use a larger topology or a --map file)",
                a.topology,
                rank_node.len()
            ));
        }
        let mut ft = Self::from_topology(
            &topo,
            rank_node,
            fl.link_bytes_per_s,
            fl.switch_latency_ps,
            fast,
        );
        ft.link_delay = (fl.link_delay_ps as f64 * fast.latency_factor).round() as u64;
        Ok(ft)
    }

    /// From a loaded topology: `bytes_per_s` per link direction,
    /// `switch_latency_ps` per switch traversed.
    pub fn from_topology(
        topo: &Topology,
        rank_node: Vec<usize>,
        bytes_per_s: f64,
        switch_latency_ps: u64,
        fast: &FastArgs,
    ) -> FlowTopology {
        let mut out_id: Vec<Vec<u32>> = topo
            .nodes
            .iter()
            .map(|n| vec![u32::MAX; n.num_ports() as usize])
            .collect();
        let mut peer: Vec<Vec<Option<PortRef>>> = topo
            .nodes
            .iter()
            .map(|n| vec![None; n.num_ports() as usize])
            .collect();
        let mut cap = Vec::new();
        let c = bytes_per_s * fast.bandwidth_factor / 1e12;
        let mut hca_to_hca = false;
        for l in &topo.links {
            for (x, y) in [(l.a, l.b), (l.b, l.a)] {
                out_id[x.node][x.port as usize] = cap.len() as u32;
                peer[x.node][x.port as usize] = Some(y);
                cap.push(c);
            }
            if topo.nodes[l.a.node].is_hca() && topo.nodes[l.b.node].is_hca() {
                hca_to_hca = true;
            }
        }
        let nodes = topo
            .nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::Hca { lid } => (true, Vec::new(), *lid),
                NodeKind::Switch { ports, fdb } => (false, fdb.clone(), *ports),
            })
            .collect();
        let lid = topo.nodes.iter().map(|n| n.lid().unwrap_or(0)).collect();
        FlowTopology {
            cap,
            out_id,
            peer,
            rank_node,
            lid,
            nodes,
            names: topo.nodes.iter().map(|n| n.name.clone()).collect(),
            hop_latency: (switch_latency_ps as f64 * fast.latency_factor).round() as u64,
            hca_to_hca,
            link_bytes_per_s: bytes_per_s,
            switch_latency_ps,
            link_delay: 0,
            link_cap: c,
        }
    }

    /// The lower bound of every route latency (>= 1 ps).
    pub fn min_latency(&self) -> u64 {
        // (a route crosses one link at least, two through a switch)
        if self.hca_to_hca {
            self.link_delay.max(1)
        } else {
            (self.hop_latency + 2 * self.link_delay).max(1)
        }
    }

    /// Route from rank `src` to rank `dst` by the forwarding tables.
    pub fn route(&self, src: u32, dst: u32) -> Result<Route, String> {
        let (Some(&s), Some(&d)) = (
            self.rank_node.get(src as usize),
            self.rank_node.get(dst as usize),
        ) else {
            return Err(format!("rank {src} or {dst} is not mapped to an HCA"));
        };
        let lid = self.lid[d];
        let mut cur = PortRef { node: s, port: 0 };
        let mut links = vec![self.out_id[s][0]];
        let mut switches = 0u64;
        let limit = self.nodes.len() + 1;
        loop {
            let Some(next) = self.peer[cur.node][cur.port as usize] else {
                return Err(format!(
                    "no route from {} to {}: port {} of {} is not connected",
                    self.names[s], self.names[d], cur.port, self.names[cur.node]
                ));
            };
            if next.node == d {
                break;
            }
            let (is_hca, fdb, ports) = &self.nodes[next.node];
            if *is_hca || links.len() > limit {
                return Err(format!(
                    "no route from {} to {} (the route ends at {} or loops)",
                    self.names[s], self.names[d], self.names[next.node]
                ));
            }
            let port = fdb.get(lid as usize).copied().unwrap_or(NO_ROUTE);
            if port >= *ports {
                return Err(format!(
                    "no route from {} to {}: switch {} has no entry for LID {lid}",
                    self.names[s], self.names[d], self.names[next.node]
                ));
            }
            switches += 1;
            cur = PortRef {
                node: next.node,
                port,
            };
            links.push(self.out_id[cur.node][port as usize]);
        }
        let max_rate = links
            .iter()
            .map(|&l| self.cap[l as usize])
            .fold(f64::INFINITY, f64::min);
        let latency = switches * self.hop_latency + links.len() as u64 * self.link_delay;
        Ok(Route {
            links,
            latency: latency.max(1),
            max_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{check_factor, FlowTopology};
    use crate::network::flow::FastArgs;

    fn topo(name: &str, bytes_per_s: f64, switch_ps: u64, fast: &FastArgs) -> FlowTopology {
        let t = ibnet::topology::builtin(name).unwrap();
        let ranks = (0..t.num_ranks())
            .map(|r| t.hca_of_rank(r).unwrap())
            .collect();
        FlowTopology::from_topology(&t, ranks, bytes_per_s, switch_ps, fast)
    }

    /// One switch: a route is the source's cable out and the switch's port
    /// to the destination, one switch latency, the link rate as the
    /// fastest rate; the factors scale latency (rounded) and capacity.
    #[test]
    fn one_switch_routes() {
        let t = topo("H8_S1", 2e9, 100_000, &FastArgs::default());
        let r = t.route(0, 1).unwrap();
        assert_eq!(r.links.len(), 2);
        assert_eq!(r.latency, 100_000);
        assert_eq!(r.max_rate, 2e9 / 1e12);
        assert_eq!(t.min_latency(), 100_000);
        assert_ne!(
            t.route(2, 1).unwrap().links[0],
            r.links[0],
            "own injection link"
        );
        assert_eq!(
            t.route(2, 1).unwrap().links[1],
            r.links[1],
            "shared ejection link"
        );
        let f = FastArgs {
            latency_factor: 1.5,
            bandwidth_factor: 0.5,
            ..FastArgs::default()
        };
        let t = topo("H8_S1", 2e9, 100_001, &f);
        assert_eq!(t.route(0, 1).unwrap().latency, 150_002);
        assert_eq!(t.link_cap, 1e9 / 1e12);
        assert!(t.route(0, 99).is_err());
    }

    /// Links with a propagation delay: a route takes it once per link
    /// (two on one switch, three across two), and the lower bound of every
    /// route is the shortest route's.
    #[test]
    fn link_delay_per_link() {
        let mut t = topo("H8_S2", 1e9, 100_000, &FastArgs::default());
        t.link_delay = 5_000;
        let lat: Vec<(usize, u64)> = (1..8)
            .flat_map(|d| t.route(0, d).ok())
            .map(|r| (r.links.len(), r.latency))
            .collect();
        assert!(lat.contains(&(2, 100_000 + 2 * 5_000)), "{lat:?}");
        assert!(lat.contains(&(3, 2 * 100_000 + 3 * 5_000)), "{lat:?}");
        assert_eq!(t.min_latency(), 110_000);
    }

    /// Two switches: a route across them has three links and two switch
    /// latencies; with no switch latency it still takes 1 ps.
    #[test]
    fn two_switches() {
        let t = topo("H8_S2", 1e9, 0, &FastArgs::default());
        let long = (0..8)
            .flat_map(|d| t.route(0, d).ok())
            .find(|r| r.links.len() == 3);
        assert_eq!(long.unwrap().latency, 1);
        let t = topo("H8_S2", 1e9, 10, &FastArgs::default());
        let long = (0..8)
            .flat_map(|d| t.route(0, d).ok())
            .find(|r| r.links.len() == 3);
        assert_eq!(long.unwrap().latency, 20);
    }

    #[test]
    fn factors_must_be_positive_and_finite() {
        assert!(check_factor("latency-factor", 1.0).is_ok());
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = check_factor("latency-factor", v).unwrap_err();
            assert!(e.starts_with("--latency-factor "), "{e}");
        }
    }
}
