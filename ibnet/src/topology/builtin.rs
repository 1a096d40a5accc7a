//! Built-in networks: the thesis's test networks and parametric families.
//!
//! Conventions (docs/topology.md has the full tables):
//! - HCAs are `H_1`..`H_N` with LIDs 1..N and come first in node order,
//!   then the switches (for fat trees: leaves, then spines).
//! - Switches have exactly as many ports as they have cables.
//! - Fat trees (`fattree:P`, `H8_S6` = `fattree:4`, `M9` = `fattree:36`):
//!   P leaves `leaf_0`..`leaf_{P-1}` and P/2 spines `spine_0`..; leaf l
//!   port i (0 <= i < P/2) goes to HCA `H_{l*P/2+i+1}`, leaf l port P/2+s
//!   goes to spine s port l. Routed up/down (spine = LID mod P/2).
//! - Everything else is routed min-hop.

use super::{route, Link, Node, NodeKind, PortRef, Routing, TopoError, Topology};

/// Incremental constructor used by the generators.
pub(crate) struct Builder {
    pub t: Topology,
}

impl Builder {
    pub fn new(name: &str) -> Builder {
        Builder {
            t: Topology::new(name.to_string(), Vec::new(), Vec::new()),
        }
    }
    pub fn hca(&mut self, name: String, lid: u16) -> usize {
        self.t.nodes.push(Node {
            name,
            kind: NodeKind::Hca { lid },
        });
        self.t.nodes.len() - 1
    }
    pub fn switch(&mut self, name: String, ports: u16) -> usize {
        self.t.nodes.push(Node {
            name,
            kind: NodeKind::Switch {
                ports,
                fdb: Vec::new(),
            },
        });
        self.t.nodes.len() - 1
    }
    pub fn link(&mut self, a: usize, pa: u16, b: usize, pb: u16) {
        self.t.links.push(Link {
            a: PortRef { node: a, port: pa },
            b: PortRef { node: b, port: pb },
        });
    }
    /// `n` HCAs `H_1`..`H_n` with LIDs 1..=n, in that order.
    pub fn hosts(&mut self, n: usize) -> Vec<usize> {
        (0..n)
            .map(|i| self.hca(format!("H_{}", i + 1), (i + 1) as u16))
            .collect()
    }
    /// Cable host `i` of `hosts` to port `i % per_switch` of switch
    /// `switches[i / per_switch]`, hosts in order.
    pub fn cable_hosts(&mut self, hosts: &[usize], switches: &[usize], per_switch: usize) {
        for (i, &h) in hosts.iter().enumerate() {
            self.link(h, 0, switches[i / per_switch], (i % per_switch) as u16);
        }
    }
    /// A two-level fat tree: `hpl * leaves` hosts, then the leaves
    /// `leaf_<l>` (`leaf_ports` ports) and the spines `spine_<s>`
    /// (`spine_ports` ports); `hpl` hosts on every leaf, and leaf `l`'s
    /// port `hpl + s` cabled to port `l` of spine `s`.
    pub fn leaf_spine(
        &mut self,
        hpl: usize,
        leaves: usize,
        spines: usize,
        leaf_ports: usize,
        spine_ports: usize,
    ) {
        let hosts = self.hosts(hpl * leaves);
        let leaves: Vec<usize> = (0..leaves)
            .map(|l| self.switch(format!("leaf_{l}"), leaf_ports as u16))
            .collect();
        let spines: Vec<usize> = (0..spines)
            .map(|s| self.switch(format!("spine_{s}"), spine_ports as u16))
            .collect();
        self.cable_hosts(&hosts, &leaves, hpl);
        self.bipartite(&leaves, hpl, &spines);
    }
    /// Cable every switch of `lower` to every switch of `upper`: port
    /// `base + j` of `lower[i]` to port `i` of `upper[j]`, by `i`, then by
    /// `j`.
    pub fn bipartite(&mut self, lower: &[usize], base: usize, upper: &[usize]) {
        for (i, &lo) in lower.iter().enumerate() {
            for (j, &up) in upper.iter().enumerate() {
                self.link(lo, (base + j) as u16, up, i as u16);
            }
        }
    }
    /// Route, validate and return.
    pub fn finish(mut self, routing: Routing) -> Result<Topology, TopoError> {
        route(&mut self.t, routing)?;
        self.t.validate()?;
        Ok(self.t)
    }
}

/// A built-in network by name: `H8_S1`, `H8_S2`, `H8_S4`, `H8_S6`, `M9`,
/// `fattree:P` (P even, 2..=254), `fattree:P:L` (the same with only L
/// leaves, 1 <= L <= P; spines keep P ports, P-L of them unused),
/// `chain:N` (N >= 1 switches).
///
/// Generator names (`kary:K:N`, `torus:4x4`, `dragonfly:A:P:H:G`, ...) and
/// options after commas are handled by [`super::gen`].
pub fn builtin(name: &str) -> Result<Topology, TopoError> {
    if let Some(r) = super::gen::generate(name) {
        return r;
    }
    fixed(name)
}

/// The fixed built-ins and `fattree:P[:L]`, `chain:N`.
pub(crate) fn fixed(name: &str) -> Result<Topology, TopoError> {
    let num = |s: &str| -> Result<usize, TopoError> {
        s.parse::<usize>()
            .map_err(|_| TopoError::UnknownBuiltin(name.to_string()))
    };
    match name {
        "H8_S1" => stars(name, 1, 8),
        "H8_S2" => stars(name, 2, 4),
        "H8_S4" => stars(name, 4, 2),
        "H8_S6" => fat_tree(name, 4, 4),
        "M9" => fat_tree(name, 36, 36),
        _ => {
            if let Some(p) = name.strip_prefix("fattree:") {
                match p.split_once(':') {
                    Some((p, l)) => fat_tree(name, num(p)?, num(l)?),
                    None => fat_tree(name, num(p)?, num(p)?),
                }
            } else if let Some(n) = name.strip_prefix("chain:") {
                chain(name, num(n)?)
            } else {
                Err(TopoError::UnknownBuiltin(name.to_string()))
            }
        }
    }
}

/// `k` fully meshed stars `SW_1`..`SW_k` of `h` hosts each. Switch i:
/// ports 0..h-1 to its hosts (HCA `H_{i*h+j+1}` on port j), then ports
/// h.. to the other switches in increasing index order. Links are listed
/// host links first, then switch pairs (i < j) in lexicographic order.
fn stars(name: &str, k: usize, h: usize) -> Result<Topology, TopoError> {
    let mut b = Builder::new(name);
    let hosts = b.hosts(k * h);
    let ports = (h + k - 1) as u16;
    let sw: Vec<usize> = (0..k)
        .map(|i| b.switch(format!("SW_{}", i + 1), ports))
        .collect();
    b.cable_hosts(&hosts, &sw, h);
    // port on switch i towards switch j
    let up = |i: usize, j: usize| (h + if j < i { j } else { j - 1 }) as u16;
    for i in 0..k {
        for j in i + 1..k {
            b.link(sw[i], up(i, j), sw[j], up(j, i));
        }
    }
    b.finish(Routing::MinHop)
}

/// 2-level fat tree of `p`-port switches: `nleaves` leaves (p for a full
/// tree), p/2 spines, nleaves*p/2 HCAs.
fn fat_tree(name: &str, p: usize, nleaves: usize) -> Result<Topology, TopoError> {
    if p < 2 || !p.is_multiple_of(2) || p > 254 {
        return Err(TopoError::Invalid(format!(
            "{name}: a fat tree needs an even port count between 2 and 254, got {p}"
        )));
    }
    if nleaves == 0 || nleaves > p {
        return Err(TopoError::Invalid(format!(
            "{name}: the number of leaves must be 1..={p}, got {nleaves}"
        )));
    }
    let half = p / 2;
    let mut b = Builder::new(name);
    b.leaf_spine(half, nleaves, half, p, p);
    b.finish(Routing::UpDown)
}

/// `n` 2-port switches `SW_1`..`SW_n` in a line; port 0 faces left, port
/// 1 right. `H_1` (LID 1) is on SW_1 port 0, `H_2` (LID 2) on SW_n port 1.
fn chain(name: &str, n: usize) -> Result<Topology, TopoError> {
    if n == 0 || n > 10_000 {
        return Err(TopoError::Invalid(format!(
            "{name}: need 1..=10000 switches, got {n}"
        )));
    }
    let mut b = Builder::new(name);
    let h1 = b.hca("H_1".into(), 1);
    let h2 = b.hca("H_2".into(), 2);
    let sw: Vec<usize> = (0..n)
        .map(|i| b.switch(format!("SW_{}", i + 1), 2))
        .collect();
    b.link(h1, 0, sw[0], 0);
    for i in 0..n - 1 {
        b.link(sw[i], 1, sw[i + 1], 0);
    }
    b.link(sw[n - 1], 1, h2, 0);
    b.finish(Routing::MinHop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_spine_cables_hosts_then_leaves_to_spines() {
        let mut b = Builder::new("t");
        b.leaf_spine(2, 2, 3, 5, 2);
        let t = b.t;
        let names: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            ["H_1", "H_2", "H_3", "H_4", "leaf_0", "leaf_1", "spine_0", "spine_1", "spine_2"]
        );
        assert_eq!(t.hcas_by_lid(), [(1, 0), (2, 1), (3, 2), (4, 3)]);
        let ends: Vec<(usize, u16, usize, u16)> = t
            .links
            .iter()
            .map(|l| (l.a.node, l.a.port, l.b.node, l.b.port))
            .collect();
        assert_eq!(
            ends[..4],
            [(0, 0, 4, 0), (1, 0, 4, 1), (2, 0, 5, 0), (3, 0, 5, 1)]
        );
        // leaf 1's port 2 + 2 goes to port 1 of spine 2
        assert_eq!(ends[4..].len(), 6);
        assert_eq!(ends[9], (5, 4, 8, 1));
        assert_eq!((t.nodes[4].num_ports(), t.nodes[8].num_ports()), (5, 2));
    }

    #[test]
    fn h8_s2_ports() {
        let t = builtin("H8_S2").unwrap();
        let sw1 = t.node_by_name("SW_1").unwrap();
        let sw2 = t.node_by_name("SW_2").unwrap();
        assert_eq!(t.nodes[sw1].num_ports(), 5);
        assert_eq!(
            t.peer(PortRef { node: sw1, port: 4 }),
            Some(PortRef { node: sw2, port: 4 })
        );
        // H_1 -> H_5 leaves SW_1 through port 4 and SW_2 through port 0
        let p = t.path(0, 4).unwrap();
        assert_eq!(p.iter().map(|p| p.port).collect::<Vec<_>>(), vec![0, 4, 0]);
    }

    #[test]
    fn h8_s4_mesh_ports() {
        let t = builtin("H8_S4").unwrap();
        // SW_3 (index 2): ports 2,3,4 go to SW_1, SW_2, SW_4
        let s = |i: usize| t.node_by_name(&format!("SW_{i}")).unwrap();
        assert_eq!(
            t.peer(PortRef {
                node: s(3),
                port: 2
            })
            .unwrap()
            .node,
            s(1)
        );
        assert_eq!(
            t.peer(PortRef {
                node: s(3),
                port: 3
            })
            .unwrap()
            .node,
            s(2)
        );
        assert_eq!(
            t.peer(PortRef {
                node: s(3),
                port: 4
            })
            .unwrap()
            .node,
            s(4)
        );
        assert_eq!(
            t.peer(PortRef {
                node: s(3),
                port: 4
            })
            .unwrap()
            .port,
            4
        );
    }

    #[test]
    fn chain_hops() {
        for n in [1, 2, 5] {
            let t = builtin(&format!("chain:{n}")).unwrap();
            assert_eq!(t.hops(0, 1).unwrap(), n + 1);
            assert_eq!(t.hops(1, 0).unwrap(), n + 1);
        }
        assert!(builtin("chain:0").is_err());
    }

    #[test]
    fn partial_fat_tree() {
        let t = builtin("fattree:8:2").unwrap();
        assert_eq!(t.hcas().len(), 8);
        assert_eq!(t.switches().len(), 2 + 4);
        // H_1 -> H_5 (LID 5): leaf_0 up-port 4 + 5 mod 4 = 5 to spine_1, down port 1
        assert_eq!(
            t.path(0, 4)
                .unwrap()
                .iter()
                .map(|p| p.port)
                .collect::<Vec<_>>(),
            vec![0, 5, 1, 0]
        );
        assert!(builtin("fattree:8:9")
            .unwrap_err()
            .to_string()
            .contains("1..=8"));
        assert!(builtin("fattree:8:0").is_err());
    }

    #[test]
    fn unknown_names() {
        assert!(matches!(builtin("H9"), Err(TopoError::UnknownBuiltin(_))));
        assert!(matches!(
            builtin("fattree:x"),
            Err(TopoError::UnknownBuiltin(_))
        ));
        assert!(builtin("fattree:5")
            .unwrap_err()
            .to_string()
            .contains("even"));
    }
}
