//! Fat-tree routing in the spirit of OpenSM's `ftree` (Zahavi's d-mod-k):
//! destination-based, spreading destinations over the up ports so that a
//! shift permutation meets no contention on a full fat tree.
//!
//! Levels: leaves (switches with HCAs) are level 0; a switch's level is
//! its distance in switch hops from the nearest leaf; every switch-to-switch
//! cable must join adjacent levels. HCAs are numbered i = 0, 1, .. in LID
//! order. Towards HCA i on leaf L:
//! - switches from which L is reachable going only down forward down: to
//!   the HCA on L itself, elsewhere to the down port leading towards L
//!   (the (i mod c)-th of the c candidates, in port order);
//! - every other switch of level l forwards up, through the
//!   (floor(i / D_l) mod u)-th of its u usable up ports (in port order),
//!   where D_0 = 1 and D_{l+1} = D_l * (up ports of a level-l switch).
//!
//! On a k-ary n-tree this is d-mod-k: consecutive destinations leave a
//! leaf by different up ports, so the hosts of a leaf sending to K
//! consecutive destinations (a shift) never share a cable.

use std::collections::VecDeque;

use super::super::{NodeKind, PortRef, Router, TopoError, Topology, NO_ROUTE};

pub(super) fn ftree(t: &mut Topology) -> Result<(), TopoError> {
    let r = Router::new(t);
    let n = t.nodes.len();
    let err = |m: String| TopoError::Routing(format!("ftree: {m}"));
    let rr = &r;
    let peers = |s: usize| {
        (0..t.nodes[s].num_ports())
            .filter_map(move |port| rr.peer(PortRef { node: s, port }).map(|q| (port, q.node)))
    };
    let is_sw = |x: usize| t.nodes[x].is_switch();
    // levels by BFS from the leaves over switches
    let mut level = vec![u32::MAX; n];
    let mut queue = VecDeque::new();
    for s in t.switches() {
        if peers(s).any(|(_, q)| !is_sw(q)) {
            level[s] = 0;
            queue.push_back(s);
        }
    }
    if queue.is_empty() {
        return Err(err("no switch has an HCA".into()));
    }
    while let Some(s) = queue.pop_front() {
        for (_, q) in peers(s) {
            if is_sw(q) && level[q] == u32::MAX {
                level[q] = level[s] + 1;
                queue.push_back(q);
            }
        }
    }
    let mut up: Vec<Vec<(u16, usize)>> = vec![Vec::new(); n];
    let mut down: Vec<Vec<(u16, usize)>> = vec![Vec::new(); n];
    let mut top = 0u32;
    for s in t.switches() {
        if level[s] == u32::MAX {
            return Err(err(format!(
                "switch {} is not connected to any leaf switch",
                t.nodes[s].name
            )));
        }
        top = top.max(level[s]);
        for (port, q) in peers(s) {
            if !is_sw(q) {
                if level[s] != 0 {
                    return Err(err(format!("HCA {} is not on a leaf", t.nodes[q].name)));
                }
                continue;
            }
            if level[q] == level[s] + 1 {
                up[s].push((port, q));
            } else if level[q] + 1 == level[s] {
                down[s].push((port, q));
            } else {
                return Err(err(format!(
                    "not a fat tree: cable {}[{port}] - {} joins switches of the same level {}",
                    t.nodes[s].name, t.nodes[q].name, level[s]
                )));
            }
        }
    }
    // D_l from the first switch of each level
    let mut div = vec![1u64; top as usize + 2];
    for l in 0..=top as usize {
        let u = t
            .switches()
            .into_iter()
            .find(|&s| level[s] == l as u32)
            .map_or(1, |s| up[s].len().max(1));
        div[l + 1] = div[l].saturating_mul(u as u64);
    }
    let hcas = t.hcas_by_lid();
    let len = t.max_lid() as usize + 1;
    let mut tables: Vec<Option<Vec<u16>>> = t
        .nodes
        .iter()
        .map(|x| x.is_switch().then(|| vec![NO_ROUTE; len]))
        .collect();
    let mut by_level: Vec<usize> = t.switches();
    by_level.sort_by_key(|&s| std::cmp::Reverse(level[s]));
    let mut below = vec![false; n];
    let mut can = vec![false; n];
    for (i, &(lid, h)) in hcas.iter().enumerate() {
        let Some(home) = r.peer(PortRef { node: h, port: 0 }) else {
            return Err(err(format!("HCA {} is not cabled", t.nodes[h].name)));
        };
        let leaf = home.node;
        below.iter_mut().for_each(|x| *x = false);
        below[leaf] = true;
        queue.clear();
        queue.push_back(leaf);
        while let Some(s) = queue.pop_front() {
            for &(_, q) in &up[s] {
                if !below[q] {
                    below[q] = true;
                    queue.push_back(q);
                }
            }
        }
        for &s in &by_level {
            let table = tables[s].as_mut().unwrap();
            let out = if s == leaf {
                Some(home.port)
            } else if below[s] {
                let c: Vec<u16> = down[s]
                    .iter()
                    .filter(|&&(_, q)| below[q])
                    .map(|&(p, _)| p)
                    .collect();
                Some(c[i % c.len()])
            } else {
                let c: Vec<u16> = up[s]
                    .iter()
                    .filter(|&&(_, q)| can[q])
                    .map(|&(p, _)| p)
                    .collect();
                (!c.is_empty()).then(|| {
                    let k = (i as u64 / div[level[s] as usize]) % c.len() as u64;
                    c[k as usize]
                })
            };
            can[s] = out.is_some();
            if let Some(o) = out {
                table[lid as usize] = o;
            }
        }
    }
    drop(r);
    for (x, table) in t.nodes.iter_mut().zip(tables) {
        if let (NodeKind::Switch { fdb, .. }, Some(table)) = (&mut x.kind, table) {
            *fdb = table;
        }
    }
    Ok(())
}
