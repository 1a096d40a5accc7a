//! Forwarding tables computed by ibnet for networks that come without
//! explicit tables.
//!
//! - [`Routing::MinHop`]: for each destination LID, a breadth-first search
//!   from the destination HCA over switches (HCAs are never transit nodes)
//!   gives every switch its distance in links; a switch forwards through the
//!   **lowest-numbered port** whose peer is one link closer. Deterministic,
//!   shortest paths, but on a fat tree all up-traffic of a leaf then uses
//!   its lowest up-port.
//! - [`Routing::UpDown`]: for 2-level fat trees (leaves = switches with at
//!   least one HCA, spines = the other switches, every leaf cabled to every
//!   spine). Traffic to LID `L` goes up to spine number `L mod S` (spines
//!   counted in node order, S spines) and down to the destination's leaf;
//!   traffic within a leaf stays on the leaf. Where two cables join the same
//!   pair of switches, the lowest-numbered port is used.
//! - [`Routing::Ftree`]: fat trees of any number of levels, destinations
//!   spread over the up ports (d-mod-k; see `routing/ftree.rs`).

mod ftree;

use std::collections::VecDeque;

use super::{NodeKind, PortRef, Router, TopoError, Topology, NO_ROUTE};

/// How to fill the forwarding tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    MinHop,
    UpDown,
    /// OpenSM-style fat-tree routing (d-mod-k), any number of levels.
    Ftree,
    /// Tables are given explicitly; nothing is computed.
    Tables,
}

impl Routing {
    pub fn parse(s: &str) -> Option<Routing> {
        match s {
            "minhop" => Some(Routing::MinHop),
            "updown" => Some(Routing::UpDown),
            "ftree" => Some(Routing::Ftree),
            "tables" => Some(Routing::Tables),
            _ => None,
        }
    }
    /// The routing of a network file: `given` (the file's or the
    /// caller's choice), else by the file's own tables when it has them,
    /// else min-hop.
    pub(crate) fn chosen(given: Option<Routing>, have_tables: bool) -> Routing {
        given.unwrap_or(if have_tables {
            Routing::Tables
        } else {
            Routing::MinHop
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Routing::MinHop => "minhop",
            Routing::UpDown => "updown",
            Routing::Ftree => "ftree",
            Routing::Tables => "tables",
        }
    }
}

/// Replace the forwarding table of every switch by one computed with
/// `routing` (no-op for [`Routing::Tables`]). Tables get `max_lid + 1`
/// entries; entry 0 and unreachable LIDs are [`NO_ROUTE`].
pub fn route(t: &mut Topology, routing: Routing) -> Result<(), TopoError> {
    match routing {
        Routing::Tables => Ok(()),
        Routing::MinHop => {
            minhop(t);
            Ok(())
        }
        Routing::UpDown => updown(t),
        Routing::Ftree => ftree::ftree(t),
    }
}

fn set_tables(t: &mut Topology, tables: Vec<Option<Vec<u16>>>) {
    for (n, table) in t.nodes.iter_mut().zip(tables) {
        if let (NodeKind::Switch { fdb, .. }, Some(table)) = (&mut n.kind, table) {
            *fdb = table;
        }
    }
}

fn empty_tables(t: &Topology) -> Vec<Option<Vec<u16>>> {
    let len = t.max_lid() as usize + 1;
    t.nodes
        .iter()
        .map(|n| n.is_switch().then(|| vec![NO_ROUTE; len]))
        .collect()
}

fn minhop(t: &mut Topology) {
    let r = Router::new(t);
    let mut tables = empty_tables(t);
    let mut dist: Vec<u32> = vec![u32::MAX; t.nodes.len()];
    let mut queue = VecDeque::new();
    for dst in t.hcas() {
        let lid = t.lid_of_hca(dst).unwrap() as usize;
        dist.iter_mut().for_each(|d| *d = u32::MAX);
        dist[dst] = 0;
        queue.clear();
        queue.push_back(dst);
        while let Some(n) = queue.pop_front() {
            if n != dst && !t.nodes[n].is_switch() {
                continue; // HCAs do not forward
            }
            for port in 0..t.nodes[n].num_ports() {
                if let Some(q) = r.peer(PortRef { node: n, port }) {
                    if dist[q.node] == u32::MAX && t.nodes[q.node].is_switch() {
                        dist[q.node] = dist[n] + 1;
                        queue.push_back(q.node);
                    }
                }
            }
        }
        for (s, table) in tables.iter_mut().enumerate() {
            let Some(table) = table else { continue };
            if dist[s] == u32::MAX {
                continue;
            }
            // lowest port whose peer is one link closer
            table[lid] = (0..t.nodes[s].num_ports())
                .find(|&port| {
                    r.peer(PortRef { node: s, port })
                        .is_some_and(|q| dist[q.node].checked_add(1) == Some(dist[s]))
                })
                .unwrap_or(NO_ROUTE);
        }
    }
    drop(r);
    set_tables(t, tables);
}

fn updown(t: &mut Topology) -> Result<(), TopoError> {
    let r = Router::new(t);
    let switches = t.switches();
    let has_hca = |s: usize| {
        (0..t.nodes[s].num_ports()).any(|port| {
            r.peer(PortRef { node: s, port })
                .is_some_and(|q| t.nodes[q.node].is_hca())
        })
    };
    let leaves: Vec<usize> = switches.iter().copied().filter(|&s| has_hca(s)).collect();
    let spines: Vec<usize> = switches.iter().copied().filter(|&s| !has_hca(s)).collect();
    // lowest port of `a` cabled to node `b`
    let port_to = |a: usize, b: usize| {
        (0..t.nodes[a].num_ports()).find(|&port| {
            r.peer(PortRef { node: a, port })
                .is_some_and(|q| q.node == b)
        })
    };
    for &h in &t.hcas() {
        match r.peer(PortRef { node: h, port: 0 }) {
            Some(q) if t.nodes[q.node].is_switch() => {}
            _ => {
                return Err(TopoError::Routing(format!(
                    "updown: HCA {} is not cabled to a switch",
                    t.nodes[h].name
                )))
            }
        }
    }
    if leaves.len() > 1 && spines.is_empty() {
        return Err(TopoError::Routing(
            "updown needs a 2-level fat tree, but no switch is free of HCAs (no spines)".into(),
        ));
    }
    for &l in &leaves {
        for &s in &spines {
            if port_to(l, s).is_none() {
                return Err(TopoError::Routing(format!(
                    "updown needs a 2-level fat tree: leaf {} is not cabled to spine {}",
                    t.nodes[l].name, t.nodes[s].name
                )));
            }
        }
    }
    let mut tables = empty_tables(t);
    for dst in t.hcas() {
        let lid = t.lid_of_hca(dst).unwrap();
        let home = r.peer(PortRef { node: dst, port: 0 }).unwrap();
        for &l in &leaves {
            let out = if l == home.node {
                home.port
            } else {
                let spine = spines[lid as usize % spines.len()];
                port_to(l, spine).unwrap()
            };
            tables[l].as_mut().unwrap()[lid as usize] = out;
        }
        for &s in &spines {
            tables[s].as_mut().unwrap()[lid as usize] = port_to(s, home.node).unwrap_or(NO_ROUTE);
        }
    }
    drop(r);
    set_tables(t, tables);
    Ok(())
}
