//! SL (virtual layer) assignment per route for deadlock freedom when no
//! structural rule is known: routes are taken in (source LID, destination
//! LID) order and each goes to the first layer whose channel dependency
//! graph stays acyclic with it (the layering idea of OpenSM's LASH). The
//! channels are output ports; the engine keeps one VL per route (SL = VL).

use super::{PortRef, Topology};

/// The SL table (`Topology::sl` layout) or why it needs more than
/// `max_layers` layers.
pub(crate) fn assign_layers(t: &Topology, max_layers: usize) -> Result<Vec<u8>, String> {
    let router = t.router();
    let hcas = t.hcas_by_lid();
    let stride = t.max_lid() as usize + 1;
    let mut sl = vec![0u8; stride * stride];
    let mut id_of = rustc_hash::FxHashMap::<PortRef, u32>::default();
    // adjacency per layer, grown as channels appear
    let mut adj: Vec<Vec<Vec<u32>>> = vec![Vec::new(); max_layers];
    // edges known to close a cycle in a layer's committed graph: graphs
    // only grow, so they stay forbidden there (saves most searches)
    let mut forbidden: Vec<rustc_hash::FxHashSet<(u32, u32)>> =
        vec![Default::default(); max_layers];
    let mut mark: Vec<u32> = Vec::new();
    let mut stamp = 0u32;
    let mut stack = Vec::new();
    for &(ls, s) in &hcas {
        for &(ld, d) in &hcas {
            if s == d {
                continue;
            }
            let path = router.path(s, d).map_err(|e| e.to_string())?;
            let ids: Vec<u32> = path
                .iter()
                .map(|p| {
                    let n = id_of.len() as u32;
                    *id_of.entry(*p).or_insert(n)
                })
                .collect();
            mark.resize(id_of.len(), 0);
            let mut placed = None;
            'layer: for (l, g) in adj.iter_mut().enumerate() {
                g.resize(id_of.len(), Vec::new());
                let mut added: Vec<(u32, u32)> = Vec::new();
                for w in ids.windows(2) {
                    let (u, v) = (w[0], w[1]);
                    if g[u as usize].contains(&v) {
                        continue;
                    }
                    if forbidden[l].contains(&(u, v)) {
                        for (a, _) in added {
                            g[a as usize].pop();
                        }
                        continue 'layer;
                    }
                    // adding u -> v closes a cycle iff v reaches u
                    stamp += 1;
                    stack.clear();
                    stack.push(v);
                    mark[v as usize] = stamp;
                    let mut cyc = false;
                    while let Some(x) = stack.pop() {
                        if x == u {
                            cyc = true;
                            break;
                        }
                        for &y in &g[x as usize] {
                            if mark[y as usize] != stamp {
                                mark[y as usize] = stamp;
                                stack.push(y);
                            }
                        }
                    }
                    if cyc {
                        if added.is_empty() {
                            // the cycle lies in the committed graph alone
                            forbidden[l].insert((u, v));
                        }
                        for (a, _) in added {
                            g[a as usize].pop();
                        }
                        continue 'layer;
                    }
                    g[u as usize].push(v);
                    added.push((u, v));
                }
                placed = Some(l);
                break;
            }
            let Some(l) = placed else {
                return Err(format!(
                    "the routes need more than {max_layers} SLs (virtual layers) to be \
                     deadlock-free; the engine has at most 8 VLs"
                ));
            };
            sl[ls as usize * stride + ld as usize] = l as u8;
        }
    }
    Ok(sl)
}
