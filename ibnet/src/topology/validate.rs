//! Structural and routing checks of a finished [`Topology`].

use std::collections::HashMap;

use super::{Link, Loc, Node, NodeKind, PortRef, Router, TopoError, Topology, NO_ROUTE};

/// Options of [`Topology::validate_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Accept destinations that some HCA cannot reach (flits to them are
    /// dropped by the engine). Forwarding loops are always errors.
    pub allow_unroutable: bool,
}

pub(crate) fn validate(t: &Topology, opts: &ValidateOptions) -> Result<(), TopoError> {
    check_structure(t)?;
    check_routes(t, opts)
}

fn invalid(msg: String) -> TopoError {
    TopoError::Invalid(msg)
}

/// The first switch that no cable reaches, if any. Such a switch carries no
/// traffic and changes no result, so it is almost certainly a mistake in
/// the topology (a cable section lost or a name misspelt); every loader
/// refuses it through [`check_cabled`].
pub(crate) fn uncabled_switch(nodes: &[Node], links: &[Link]) -> Option<usize> {
    let mut cabled = vec![false; nodes.len()];
    for l in links {
        for p in [l.a, l.b] {
            if let Some(c) = cabled.get_mut(p.node) {
                *c = true;
            }
        }
    }
    (0..nodes.len()).find(|&i| nodes[i].is_switch() && !cabled[i])
}

fn uncabled_message(name: &str) -> String {
    format!(
        "switch {name} has no cables: nothing connects it to the network (a missing link \
         section or a misspelt name?); remove it or cable it"
    )
}

/// The check of [`uncabled_switch`] for a loader: the error names the
/// switch at `loc_of(node)`, the line that declares it.
pub(crate) fn check_cabled(
    nodes: &[Node],
    links: &[Link],
    loc_of: impl Fn(usize) -> Loc,
) -> Result<(), TopoError> {
    match uncabled_switch(nodes, links) {
        Some(i) => Err(TopoError::parse(
            loc_of(i),
            uncabled_message(&nodes[i].name),
        )),
        None => Ok(()),
    }
}

/// Everything except the routes: names, ports, links, LIDs, tables, ranks.
pub(crate) fn check_structure(t: &Topology) -> Result<(), TopoError> {
    if !t.nodes.iter().any(|n| n.is_hca()) {
        return Err(invalid(if t.nodes.is_empty() {
            "no nodes at all (an empty file?): a network needs HCAs".to_string()
        } else {
            "no HCA: a network needs HCAs to send and receive".to_string()
        }));
    }
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, n) in t.nodes.iter().enumerate() {
        if n.name.is_empty() {
            return Err(invalid(format!("node {i} has an empty name")));
        }
        if let Some(j) = names.insert(&n.name, i) {
            return Err(invalid(format!(
                "node name {:?} used twice (nodes {j} and {i})",
                n.name
            )));
        }
        if let NodeKind::Switch { ports, .. } = n.kind {
            if ports == 0 || ports > NO_ROUTE {
                return Err(invalid(format!(
                    "switch {} has {ports} ports (must be 1..=255; 255 is the no-route marker)",
                    n.name
                )));
            }
        }
    }
    // Links: endpoints exist, ports in range, each port used once.
    let mut used: HashMap<PortRef, usize> = HashMap::new();
    for (k, l) in t.links.iter().enumerate() {
        for p in [l.a, l.b] {
            let Some(node) = t.nodes.get(p.node) else {
                return Err(invalid(format!(
                    "link {k}: node index {} does not exist",
                    p.node
                )));
            };
            if p.port >= node.num_ports() {
                return Err(invalid(format!(
                    "link {k}: port {} of {} is out of range (it has {} port{}, numbered from 0)",
                    p.port,
                    node.name,
                    node.num_ports(),
                    if node.num_ports() == 1 { "" } else { "s" }
                )));
            }
            if let Some(j) = used.insert(p, k) {
                return Err(invalid(format!(
                    "port {} of {} is used by two links ({j} and {k})",
                    p.port, node.name
                )));
            }
        }
    }
    // Switches without cables (the loaders report them with their line;
    // this catches the generators and hand-built topologies).
    if let Some(i) = uncabled_switch(&t.nodes, &t.links) {
        return Err(invalid(uncabled_message(&t.nodes[i].name)));
    }
    // LIDs.
    let mut lids: HashMap<u16, usize> = HashMap::new();
    for (i, n) in t.nodes.iter().enumerate() {
        if let Some(lid) = n.lid() {
            if lid == 0 {
                return Err(invalid(format!(
                    "HCA {} has LID 0 (LIDs start at 1)",
                    n.name
                )));
            }
            if let Some(j) = lids.insert(lid, i) {
                return Err(invalid(format!(
                    "LID {lid} is used by two HCAs ({} and {})",
                    t.nodes[j].name, n.name
                )));
            }
            if !used.contains_key(&PortRef { node: i, port: 0 }) {
                return Err(invalid(format!("HCA {} is not connected", n.name)));
            }
        }
    }
    // Tables.
    let max_lid = t.max_lid() as usize;
    for n in &t.nodes {
        if let NodeKind::Switch { ports, fdb } = &n.kind {
            if fdb.len() <= max_lid {
                return Err(invalid(format!(
                    "forwarding table of switch {} has {} entries; it must cover LIDs 0..={max_lid}",
                    n.name,
                    fdb.len()
                )));
            }
            if let Some((lid, &v)) = fdb
                .iter()
                .enumerate()
                .find(|(_, &v)| v >= *ports && v != NO_ROUTE)
            {
                return Err(invalid(format!(
                    "forwarding table of switch {}: LID {lid} -> port {v}, but the switch has {ports} ports",
                    n.name
                )));
            }
        }
    }
    // Ranks.
    let mut placed: HashMap<usize, usize> = HashMap::new();
    for (r, &h) in t.ranks.iter().enumerate() {
        match t.nodes.get(h) {
            Some(n) if n.is_hca() => {}
            Some(n) => {
                return Err(invalid(format!(
                    "rank {r} is mapped to {}, which is not an HCA",
                    n.name
                )))
            }
            None => {
                return Err(invalid(format!(
                    "rank {r} is mapped to node {h}, which does not exist"
                )))
            }
        }
        if let Some(q) = placed.insert(h, r) {
            return Err(invalid(format!(
                "ranks {q} and {r} are both mapped to HCA {}",
                t.nodes[h].name
            )));
        }
    }
    Ok(())
}

/// Result of following the tables from one HCA.
enum Walk {
    Reaches,
    /// Joins a walk that already failed (only when unroutable is allowed).
    JoinsFailed,
    Fails(TopoError),
}

/// Follow the tables from every HCA towards every other HCA's LID. Memoised
/// per destination, so the cost is O(#HCAs * #nodes).
pub(crate) fn check_routes(t: &Topology, opts: &ValidateOptions) -> Result<(), TopoError> {
    const NEW: u8 = 0;
    const ON_STACK: u8 = 1;
    const GOOD: u8 = 2;
    const BAD: u8 = 3;
    let r = Router::new(t);
    let hcas = t.hcas();
    let name = |i: usize| t.nodes[i].name.clone();
    let mut state = vec![NEW; t.nodes.len()];
    for &dst in &hcas {
        let lid = t.lid_of_hca(dst).expect("HCA has a LID");
        state.iter_mut().for_each(|s| *s = NEW);
        for &src in &hcas {
            if src == dst {
                continue;
            }
            let mut stack: Vec<usize> = Vec::new();
            let mut cur = PortRef { node: src, port: 0 };
            let outcome: Walk = loop {
                let Some(next) = r.peer(cur) else {
                    break Walk::Fails(TopoError::Unroutable {
                        switch: name(cur.node),
                        lid,
                        hca: name(dst),
                        detail: format!(
                            " (its table points to port {}, which is not connected)",
                            cur.port
                        ),
                    });
                };
                let n = next.node;
                if n == dst || state[n] == GOOD {
                    break Walk::Reaches;
                }
                if state[n] == BAD {
                    break Walk::JoinsFailed;
                }
                let NodeKind::Switch { ports, fdb } = &t.nodes[n].kind else {
                    break Walk::Fails(TopoError::Unroutable {
                        switch: name(cur.node),
                        lid,
                        hca: name(dst),
                        detail: format!(" (its table leads to HCA {} instead)", name(n)),
                    });
                };
                if state[n] == ON_STACK {
                    let from = stack.iter().position(|&s| s == n).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[from..].iter().map(|&s| name(s)).collect();
                    cycle.push(name(n));
                    return Err(TopoError::Loop { lid, cycle });
                }
                state[n] = ON_STACK;
                stack.push(n);
                let port = fdb.get(lid as usize).copied().unwrap_or(NO_ROUTE);
                if port >= *ports {
                    break Walk::Fails(TopoError::Unroutable {
                        switch: name(n),
                        lid,
                        hca: name(dst),
                        detail: String::new(),
                    });
                }
                cur = PortRef { node: n, port };
            };
            let ok = matches!(outcome, Walk::Reaches);
            for &s in &stack {
                state[s] = if ok { GOOD } else { BAD };
            }
            match outcome {
                Walk::Fails(e) if !opts.allow_unroutable => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}
