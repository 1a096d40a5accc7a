//! What a topology is and whether its routing works: host, switch and link
//! counts, the diameter, whether every HCA reaches every other, and whether
//! the routes are free of credit deadlock (`ibnet topology --summary`); and
//! one route spelled out (`ibnet routes`).
//!
//! Deadlock freedom is the classic channel-dependency test (Dally and
//! Seitz): every output port a route uses is a channel, consecutive
//! channels of a route are a dependency, and the routing cannot deadlock on
//! credits if and only if that graph has no cycle. The engine keeps one VL
//! per route (SL to VL is the identity; the SL is the sender's send queue,
//! or the route's SL when the topology assigns one, `Topology::sl`), so a
//! channel is an (output port, VL) pair: routes on different VLs use
//! separate buffers and never depend on each other.

use super::{NodeKind, PortRef, Topology};
use serde::Serialize;

/// `ibnet topology --summary`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub hosts: usize,
    pub switches: usize,
    /// Cables (each joins two ports; a full-duplex link counted once).
    pub links: usize,
    /// Longest route between two HCAs, in links (host-switch-host is 2).
    pub diameter_links: usize,
    /// Mean route length over ordered pairs of distinct HCAs, in links.
    pub mean_links: f64,
    /// Every HCA reaches every other HCA.
    pub routing_complete: bool,
    /// Pairs without a route (at most 10 listed), as "SRC -> DST: why".
    pub unroutable: Vec<String>,
    pub unroutable_pairs: usize,
    /// VLs the routes use (1 without per-route SLs).
    pub vls: usize,
    /// The channel dependency graph of all routes (per VL) has no cycle.
    pub deadlock_free: bool,
    /// A dependency cycle, as `node[port]` channels (with "/VLv" when the
    /// topology has per-route SLs), when there is one.
    pub cycle: Vec<String>,
}

fn chan(t: &Topology, (p, vl): (PortRef, u8)) -> String {
    if t.sl.is_empty() {
        format!("{}[{}]", t.nodes[p.node].name, p.port)
    } else {
        format!("{}[{}]/VL{vl}", t.nodes[p.node].name, p.port)
    }
}

/// Summarise `t`: every ordered pair of HCAs is routed once.
pub fn summarize(t: &Topology) -> Summary {
    let hcas = t.hcas();
    let switches = t.switches().len();
    let router = t.router();
    let mut links = 0usize;
    for (i, n) in t.nodes.iter().enumerate() {
        let ports = match &n.kind {
            NodeKind::Hca { .. } => 1,
            NodeKind::Switch { ports, .. } => *ports,
        };
        for p in 0..ports {
            if let Some(q) = router.peer(PortRef { node: i, port: p }) {
                // count each cable from its lower end
                if (i, p) < (q.node, q.port) {
                    links += 1;
                }
            }
        }
    }
    // channels are numbered densely as they are first used
    let mut id_of = rustc_hash::FxHashMap::<(PortRef, u8), u32>::default();
    let mut names: Vec<(PortRef, u8)> = Vec::new();
    let mut edges = rustc_hash::FxHashSet::<(u32, u32)>::default();
    let mut diameter = 0usize;
    let mut total = 0u64;
    let mut routed = 0u64;
    let mut unroutable = Vec::new();
    let mut unroutable_pairs = 0usize;
    for &a in &hcas {
        for &b in &hcas {
            if a == b {
                continue;
            }
            match router.path(a, b) {
                Ok(path) => {
                    diameter = diameter.max(path.len());
                    total += path.len() as u64;
                    routed += 1;
                    let mut prev: Option<u32> = None;
                    let vl = match (t.lid_of_hca(a), t.lid_of_hca(b)) {
                        (Some(x), Some(y)) => t.route_sl(x, y),
                        _ => 0,
                    };
                    for p in path {
                        let id = *id_of.entry((p, vl)).or_insert_with(|| {
                            names.push((p, vl));
                            names.len() as u32 - 1
                        });
                        if let Some(q) = prev {
                            edges.insert((q, id));
                        }
                        prev = Some(id);
                    }
                }
                Err(e) => {
                    unroutable_pairs += 1;
                    if unroutable.len() < 10 {
                        unroutable.push(format!("{} -> {}: {e}", t.nodes[a].name, t.nodes[b].name));
                    }
                }
            }
        }
    }
    let cycle: Vec<String> = find_cycle(names.len(), &edges)
        .map(|c| c.into_iter().map(|i| chan(t, names[i as usize])).collect())
        .unwrap_or_default();
    let deadlock_free = cycle.is_empty();
    Summary {
        hosts: hcas.len(),
        switches,
        links,
        diameter_links: diameter,
        mean_links: if routed > 0 {
            total as f64 / routed as f64
        } else {
            0.0
        },
        routing_complete: unroutable_pairs == 0,
        unroutable,
        unroutable_pairs,
        vls: t.vls_needed(),
        deadlock_free,
        cycle,
    }
}

/// A cycle of the directed graph (nodes 0..n), found by an iterative
/// depth-first search, or None.
fn find_cycle(n: usize, edges: &rustc_hash::FxHashSet<(u32, u32)>) -> Option<Vec<u32>> {
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut sorted: Vec<&(u32, u32)> = edges.iter().collect();
    sorted.sort_unstable(); // deterministic cycle reported
    for &&(a, b) in &sorted {
        adj[a as usize].push(b);
    }
    // 0 unvisited, 1 on the stack, 2 done
    let mut state = vec![0u8; n];
    let mut parent = vec![u32::MAX; n];
    for s in 0..n {
        if state[s] != 0 {
            continue;
        }
        let mut stack: Vec<(u32, usize)> = vec![(s as u32, 0)];
        state[s] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if *i < adj[v as usize].len() {
                let w = adj[v as usize][*i];
                *i += 1;
                match state[w as usize] {
                    0 => {
                        state[w as usize] = 1;
                        parent[w as usize] = v;
                        stack.push((w, 0));
                    }
                    1 => {
                        // back edge v -> w: the cycle is w ... v
                        let mut c = vec![v];
                        let mut x = v;
                        while x != w {
                            x = parent[x as usize];
                            c.push(x);
                        }
                        c.reverse();
                        return Some(c);
                    }
                    _ => {}
                }
            } else {
                state[v as usize] = 2;
                stack.pop();
            }
        }
    }
    None
}

/// One hop of a route: leaving `node` through `port`, arriving at `peer`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Hop {
    pub node: String,
    pub port: u16,
    pub peer: String,
    pub peer_port: u16,
}

/// The route from HCA `src` to HCA `dst` (node indices), hop by hop.
pub fn route_hops(t: &Topology, src: usize, dst: usize) -> Result<Vec<Hop>, super::TopoError> {
    let router = t.router();
    let path = router.path(src, dst)?;
    Ok(path
        .into_iter()
        .map(|p| {
            let q = router.peer(p).expect("a routed port is connected");
            Hop {
                node: t.nodes[p.node].name.clone(),
                port: p.port,
                peer: t.nodes[q.node].name.clone(),
                peer_port: q.port,
            }
        })
        .collect())
}
