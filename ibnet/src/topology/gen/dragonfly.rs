//! Dragonfly (Kim, Dally, Scott and Abts 2008).
//!
//! `dragonfly:A:P:H:G`: G groups of A routers; each router has P hosts, a
//! cable to each other router of its group, and H global ports.
//! `dragonfly:A:P:H` takes the largest G = A*H + 1 (one global cable per
//! pair of groups); `dragonfly:P` is the balanced one, A = 2P, H = P.
//!
//! - Node order: hosts `H_1`.. (LIDs 1..; host i on group i / (A*P),
//!   router (i / P) mod A, port i mod P), then routers `g{g}_r{r}` group by
//!   group.
//! - Ports of a router: 0..P-1 hosts; P.. the other routers of the group in
//!   increasing order; P+A-1+x the global port x (0..H-1).
//! - Global cables: each pair of groups gets m = floor(A*H / (G-1)) cables.
//!   Global port k = r*H + x of a group (router r, port x) with
//!   k = (o-1)*m + j goes to group (g+o) mod G (o = 1..G-1, j = 0..m-1),
//!   arriving on that group's port (G-o-1)*m + j. Unused global ports
//!   stay unconnected. Links: hosts, local cables (per group, r < r'),
//!   global cables (g < g').
//! - Minimal routing (default): local, global, local; towards destination
//!   host i the global cable j = i mod m of the pair is used. VLs: the
//!   engine keeps one VL per route, so a route gets SL 1 when its source
//!   group is above its destination group, else SL 0. Within one SL the
//!   group number only grows (or only falls) along global cables and no
//!   route takes two local cables in a row, so each VL's channel dependency
//!   graph is acyclic. 2 VLs.
//! - Valiant (`routing=valiant[,seed=S]`): a forwarding table is indexed by
//!   the destination LID only (one LID per HCA), so the random
//!   intermediate group is drawn per destination (seeded, never the
//!   destination's group): routers of other groups forward towards the
//!   intermediate group, routers there (and in the destination group)
//!   minimally to the destination. SLs are then assigned per route, layer
//!   by layer (the first SL whose dependency graph stays acyclic, as
//!   OpenSM's LASH does); more than 8 are refused.

use super::super::builtin::Builder;
use super::super::{NodeKind, Routing, TopoError, Topology, NO_ROUTE};
use super::{arg, bad, splitmix, Opts, MAX_HOSTS_SL, MAX_PORTS};

pub(crate) fn dragonfly(name: &str, rest: &str, o: &mut Opts) -> Result<Topology, TopoError> {
    let v: Vec<&str> = rest.split(':').collect();
    let form = "dragonfly:A:P:H:G (routers per group, hosts per router, global links per router, groups), dragonfly:A:P:H or dragonfly:P";
    let (a, p, h, g) = match v.as_slice() {
        [p] if !p.is_empty() => {
            let p = arg(name, "P (hosts per router)", p, 1, 32)?;
            (2 * p, p, p, 2 * p * p + 1)
        }
        [a, p, h] | [a, p, h, _] => {
            let a = arg(name, "A (routers per group)", a, 1, MAX_PORTS)?;
            let p = arg(name, "P (hosts per router)", p, 1, MAX_PORTS)?;
            let h = arg(name, "H (global links per router)", h, 0, MAX_PORTS)?;
            let gmax = a * h + 1;
            let g = match v.get(3) {
                Some(s) => arg(name, "G (groups)", s, 1, gmax)?,
                None => gmax,
            };
            (a, p, h, g)
        }
        _ => return Err(bad(name, format!("expected {form}"))),
    };
    let valiant = match o.get("routing") {
        None | Some("minimal") => false,
        Some("valiant") => true,
        Some(x) => {
            return Err(bad(
                name,
                format!("routing={x}: expected minimal or valiant"),
            ))
        }
    };
    let seed = o.num("seed", 0, u64::MAX)?.unwrap_or(1);
    o.finish("routing, seed")?;
    let ports = p + a - 1 + h;
    if ports > MAX_PORTS {
        return Err(bad(
            name,
            format!("routers would have {ports} ports, at most {MAX_PORTS}"),
        ));
    }
    let nh = g * a * p;
    if nh > MAX_HOSTS_SL {
        return Err(bad(
            name,
            format!("{nh} hosts; at most {MAX_HOSTS_SL} here"),
        ));
    }
    let m = if g > 1 { a * h / (g - 1) } else { 0 };
    let local = |r: usize, r2: usize| (p + if r2 < r { r2 } else { r2 - 1 }) as u16;
    let global = |k: usize| (p + a - 1 + k % h) as u16;

    let mut b = Builder::new(name);
    let hosts = b.hosts(nh);
    let rt: Vec<usize> = (0..g * a)
        .map(|x| b.switch(format!("g{}_r{}", x / a, x % a), ports as u16))
        .collect();
    b.cable_hosts(&hosts, &rt, p);
    for gg in 0..g {
        for r in 0..a {
            for r2 in r + 1..a {
                b.link(rt[gg * a + r], local(r, r2), rt[gg * a + r2], local(r2, r));
            }
        }
    }
    for gg in 0..g {
        for off in 1..g {
            let g2 = (gg + off) % g;
            if g2 < gg {
                continue;
            }
            for j in 0..m {
                let k = (off - 1) * m + j;
                let k2 = (g - off - 1) * m + j;
                b.link(
                    rt[gg * a + k / h],
                    global(k),
                    rt[g2 * a + k2 / h],
                    global(k2),
                );
            }
        }
    }
    // intermediate group per destination (Valiant)
    let mut via: Vec<usize> = (0..nh).map(|i| i / (a * p)).collect();
    if valiant && g > 2 {
        let mut s = seed;
        for (i, v) in via.iter_mut().enumerate() {
            let gd = i / (a * p);
            *v = (gd + 1 + (splitmix(&mut s) % (g as u64 - 1)) as usize) % g;
        }
    }
    // router (gg, r) towards host i
    let out = |gg: usize, r: usize, i: usize| -> u16 {
        let gd = i / (a * p);
        let rd = (i / p) % a;
        if gg == gd {
            return if r == rd {
                (i % p) as u16
            } else {
                local(r, rd)
            };
        }
        let target = if gg == via[i] { gd } else { via[i] };
        let off = (target + g - gg) % g;
        let k = (off - 1) * m + i % m;
        let rr = k / h;
        if r == rr {
            global(k)
        } else {
            local(r, rr)
        }
    };
    for gg in 0..g {
        for r in 0..a {
            let mut fdb = vec![NO_ROUTE; nh + 1];
            for (i, e) in fdb.iter_mut().enumerate().skip(1) {
                *e = out(gg, r, i - 1);
            }
            if let NodeKind::Switch { fdb: f, .. } = &mut b.t.nodes[rt[gg * a + r]].kind {
                *f = fdb;
            }
        }
    }
    if g > 1 && m == 0 {
        return Err(bad(
            name,
            "no global cables (H = 0) but more than one group",
        ));
    }
    let mut t = b.finish(Routing::Tables)?;
    let stride = nh + 1;
    if valiant && g > 2 {
        t.sl = super::super::layers::assign_layers(&t, 8).map_err(|e| bad(name, e))?;
    } else if g > 1 {
        let mut sl = vec![0u8; stride * stride];
        for s in 0..nh {
            for d in 0..nh {
                sl[(s + 1) * stride + d + 1] = u8::from(s / (a * p) > d / (a * p));
            }
        }
        t.sl = sl;
    }
    Ok(t)
}
