//! n-dimensional tori and meshes with dimension-order routing.
//!
//! `torus:4x4x4[:HPS]`, `mesh:8x8[:HPS]`: one switch per grid point, HPS
//! hosts per switch (default 1). Every dimension has 2..=64 switches.
//!
//! - Node order: hosts `H_1`.. (LIDs 1..), host h on switch h / HPS, port
//!   h mod HPS; then the switches `sw_{c0}_{c1}..` with c0 varying fastest
//!   (switch index = c0 + n0 * (c1 + n1 * (c2 ..))).
//! - Ports: 0..HPS-1 hosts; HPS+2d goes to the + neighbour in dimension d,
//!   HPS+2d+1 to the - neighbour. The cable from switch s in direction +d
//!   arrives on the neighbour's port HPS+2d+1. Links: host links, then for
//!   each switch in order and each dimension its + cable (a torus wraps
//!   around: c = n-1 goes to c = 0; a mesh has no cable there).
//! - Routing (DOR): correct dimension 0 first, then 1, ...; in a torus the
//!   shorter way round, + on a tie (distance n/2).
//! - VLs (torus, `vls=dateline`, the default): the dateline of a dimension
//!   is its wrap-around cable. A route gets the SL whose bit b is set when
//!   it crosses the dateline of the b-th dimension with at least 4
//!   switches (the others have routes of one hop per dimension, so no
//!   dependency inside the dimension). The engine keeps one VL per route
//!   (SL = VL), so a route crossing the dateline of a dimension stays on the
//!   "crossing" VL class all along that dimension: within one SL every ring
//!   either never uses its wrap cable or is used only by routes that cross
//!   it, and a minimal route (at most n/2 hops) cannot close the ring, so
//!   each VL's channel dependency graph is acyclic (`ibnet topology
//!   --summary` checks it). 2^b VLs; b > 3 needs more than the engine's 8
//!   and is refused. `vls=one` keeps everything on VL 0 (not deadlock-free
//!   on rings of 4 or more: the summary shows the cycle). A mesh needs no
//!   VLs (DOR on a mesh is deadlock-free).

use super::super::builtin::Builder;
use super::super::{NodeKind, Routing, TopoError, Topology, NO_ROUTE};
use super::{arg, bad, Opts, MAX_HOSTS, MAX_HOSTS_SL, MAX_PORTS};

/// Coordinates of switch index `s` (dimension 0 fastest).
fn coords(mut s: usize, dims: &[usize]) -> Vec<usize> {
    dims.iter()
        .map(|&n| {
            let c = s % n;
            s /= n;
            c
        })
        .collect()
}

fn index(c: &[usize], dims: &[usize]) -> usize {
    c.iter()
        .zip(dims)
        .rev()
        .fold(0, |acc, (&x, &n)| acc * n + x)
}

/// Direction DOR takes in one dimension from `a` to `b` (`a != b`): true
/// for +.
fn plus(a: usize, b: usize, n: usize, wrap: bool) -> bool {
    if wrap {
        (b + n - a) % n <= n / 2
    } else {
        b > a
    }
}

pub(crate) fn torus(
    name: &str,
    rest: &str,
    wrap: bool,
    o: &mut Opts,
) -> Result<Topology, TopoError> {
    let kind = if wrap { "torus" } else { "mesh" };
    let form = format!("{kind}:N0xN1x..[:HPS] (e.g. {kind}:4x4x4 or {kind}:8x8:2)");
    let (dims_s, hps_s) = match rest.split_once(':') {
        Some((d, h)) => (d, Some(h)),
        None => (rest, None),
    };
    if dims_s.is_empty() {
        return Err(bad(name, format!("expected {form}")));
    }
    let dims: Vec<usize> = dims_s
        .split('x')
        .map(|d| arg(name, "each dimension", d, 2, 64))
        .collect::<Result<_, _>>()?;
    if dims.len() > 6 {
        return Err(bad(name, "at most 6 dimensions"));
    }
    let hps = match hps_s {
        Some(h) => arg(
            name,
            "HPS (hosts per switch)",
            h,
            1,
            MAX_PORTS - 2 * dims.len(),
        )?,
        None => 1,
    };
    let nsw: usize = dims.iter().product();
    let nh = nsw * hps;
    let dateline = match o.get("vls") {
        None | Some("dateline") => wrap,
        Some("one") => false,
        Some(v) => return Err(bad(name, format!("vls={v}: expected dateline or one"))),
    };
    match o.get("routing") {
        None | Some("dor") => {}
        Some(v) => return Err(bad(name, format!("routing={v}: {kind}s are routed dor"))),
    }
    o.finish("routing, vls")?;
    let limit = if dateline { MAX_HOSTS_SL } else { MAX_HOSTS };
    if nh > limit {
        return Err(bad(name, format!("{nh} hosts; at most {limit} here")));
    }
    // dimensions that need a dateline bit: rings of 4 or more
    let bit_of: Vec<Option<u32>> = {
        let mut b = 0;
        dims.iter()
            .map(|&n| {
                (dateline && n >= 4).then(|| {
                    b += 1;
                    b - 1
                })
            })
            .collect()
    };
    let bits = bit_of.iter().flatten().count() as u32;
    if bits > 3 {
        return Err(bad(
            name,
            format!(
                "dateline routing needs 2^{bits} = {} VLs (one SL per combination of crossed \
                 datelines), more than the engine's 8 (max_vl <= 7); use at most 3 dimensions \
                 of 4 or more switches, or vls=one (not deadlock-free)",
                1u32 << bits
            ),
        ));
    }

    let d = dims.len();
    let ports = (hps + 2 * d) as u16;
    let mut b = Builder::new(name);
    let h = b.hosts(nh);
    let sw: Vec<usize> = (0..nsw)
        .map(|s| {
            let c: Vec<String> = coords(s, &dims).iter().map(|x| x.to_string()).collect();
            b.switch(format!("sw_{}", c.join("_")), ports)
        })
        .collect();
    b.cable_hosts(&h, &sw, hps);
    for s in 0..nsw {
        let c = coords(s, &dims);
        for (k, &n) in dims.iter().enumerate() {
            if !wrap && c[k] + 1 == n {
                continue;
            }
            let mut c2 = c.clone();
            c2[k] = (c[k] + 1) % n;
            let nb = index(&c2, &dims);
            b.link(
                sw[s],
                (hps + 2 * k) as u16,
                sw[nb],
                (hps + 2 * k + 1) as u16,
            );
        }
    }
    // DOR tables
    let max_lid = nh;
    for (s, &node) in sw.iter().enumerate() {
        let c = coords(s, &dims);
        let mut fdb = vec![NO_ROUTE; max_lid + 1];
        for (dst, e) in fdb.iter_mut().enumerate().skip(1) {
            let host = dst - 1;
            let cd = coords(host / hps, &dims);
            *e = match (0..d).find(|&k| c[k] != cd[k]) {
                None => (host % hps) as u16,
                Some(k) => {
                    let up = plus(c[k], cd[k], dims[k], wrap);
                    (hps + 2 * k + usize::from(!up)) as u16
                }
            };
        }
        if let NodeKind::Switch { fdb: f, .. } = &mut b.t.nodes[node].kind {
            *f = fdb;
        }
    }
    if bits > 0 {
        let stride = max_lid + 1;
        let mut sl = vec![0u8; stride * stride];
        for src in 0..nh {
            let cs = coords(src / hps, &dims);
            for dst in 0..nh {
                let cd = coords(dst / hps, &dims);
                let mut v = 0u8;
                for k in 0..d {
                    let Some(bit) = bit_of[k] else { continue };
                    if cs[k] == cd[k] {
                        continue;
                    }
                    let crosses = if plus(cs[k], cd[k], dims[k], true) {
                        cd[k] < cs[k]
                    } else {
                        cd[k] > cs[k]
                    };
                    if crosses {
                        v |= 1 << bit;
                    }
                }
                sl[(src + 1) * stride + dst + 1] = v;
            }
        }
        b.t.sl = sl;
    }
    b.finish(Routing::Tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coords_roundtrip() {
        let dims = [4, 3, 2];
        for s in 0..24 {
            assert_eq!(index(&coords(s, &dims), &dims), s);
        }
        assert_eq!(coords(5, &dims), vec![1, 1, 0]);
    }

    #[test]
    fn directions() {
        // ring of 4: 0 -> 2 is a tie, + ; 0 -> 3 is one hop -
        assert!(plus(0, 2, 4, true));
        assert!(!plus(0, 3, 4, true));
        assert!(plus(3, 0, 4, true));
        assert!(!plus(3, 0, 4, false));
    }
}
