//! Fat trees sized the way people say them.
//!
//! - `kary:K:N`: the k-ary n-tree (Petrini and Vanneschi): K^N hosts, N
//!   levels of K^(N-1) switches. Switch `sw{l}_{w}` (level l, 0 = leaves;
//!   w in 0..K^(N-1), written in base K as digits w_0 (least significant)
//!   .. w_{N-2}): ports 0..K-1 go down, K..2K-1 up (top level: K ports).
//!   Up port K+j of (l, w) goes to (l+1, w with digit l set to j), arriving
//!   on its down port w_l. Host h is on leaf h / K, port h mod K.
//! - `fattree2:HPL:LEAVES:SPINES`: LEAVES leaves `leaf_l` with HPL hosts
//!   (ports 0..HPL-1) and one cable to each of SPINES spines `spine_s`
//!   (leaf port HPL+s, spine port l).
//! - `fattree3:HPL:LPP:APP:PODS`: PODS pods of LPP leaves `leaf_{p}_{l}`
//!   (HPL hosts each) and APP aggregation switches `agg_{p}_{a}`, every
//!   leaf cabled to every aggregation switch of its pod (leaf port HPL+a,
//!   agg port l); agg a of every pod goes up to the LPP core switches
//!   `core_{a}_{c}` of core group a (agg port LPP+c, core port p). With
//!   HPL = LPP = APP = k/2 and PODS = k this is the k-port fat tree of
//!   Al-Fares et al. (k^3/4 hosts).
//! - `fattree:hosts=N[,radix=R]`: the smallest 2-level tree of R-port
//!   switches (default 36) with at least N hosts and at least 2 leaves: the
//!   built-in `fattree:R:L` with L = max(2, ceil(N / (R/2))) leaves.
//!
//! Hosts come first in node order (`H_1`.. with LIDs 1..), then switches
//! level by level. These trees are routed with `ftree` by default
//! (`,routing=minhop` or `,routing=updown` for 2 levels also work).

use super::super::builtin::Builder;
use super::super::{Routing, TopoError, Topology};
use super::{arg, bad, routing_opt, Opts, MAX_HOSTS, MAX_PORTS};

/// The `N` colon-separated arguments of a generator, or the message that
/// `rest` does not have the `form` it should.
fn split<'a, const N: usize>(
    name: &str,
    rest: &'a str,
    form: &str,
) -> Result<[&'a str; N], TopoError> {
    let v: Vec<&str> = rest.split(':').collect();
    match v.try_into() {
        Ok(v) if !rest.is_empty() => Ok(v),
        _ => Err(bad(name, format!("expected {form}"))),
    }
}

/// The hosts per leaf (HPL) of a fat tree: a leaf keeps a port for the
/// level above.
fn hosts_per_leaf(name: &str, s: &str) -> Result<usize, TopoError> {
    arg(name, "HPL (hosts per leaf)", s, 1, MAX_PORTS - 1)
}

fn check_hosts(name: &str, hosts: usize) -> Result<(), TopoError> {
    if hosts > MAX_HOSTS {
        return Err(bad(
            name,
            format!("{hosts} hosts; generators build at most {MAX_HOSTS}"),
        ));
    }
    Ok(())
}

fn finish_tree(name: &str, b: Builder, o: &mut Opts) -> Result<Topology, TopoError> {
    let r = routing_opt(name, o, &["ftree", "minhop", "updown"])?;
    o.finish("routing")?;
    b.finish(r.unwrap_or(Routing::Ftree))
}

/// `kary:K:N`.
pub(crate) fn kary(name: &str, rest: &str, o: &mut Opts) -> Result<Topology, TopoError> {
    let [k, n] = split(name, rest, "kary:K:N (K-ary N-tree: K^N hosts, N levels)")?;
    let k = arg(name, "K (switch half-radix)", k, 2, MAX_PORTS / 2)?;
    let n = arg(name, "N (levels)", n, 1, 8)?;
    let nh = k
        .checked_pow(n as u32)
        .filter(|&h| h <= MAX_HOSTS)
        .ok_or_else(|| {
            bad(
                name,
                format!("K^N hosts; generators build at most {MAX_HOSTS}"),
            )
        })?;
    let per = nh / k; // switches per level
    let mut b = Builder::new(name);
    let h = b.hosts(nh);
    let mut sw = vec![Vec::with_capacity(per); n];
    for (l, level) in sw.iter_mut().enumerate() {
        let ports = if l + 1 == n { k } else { 2 * k };
        for w in 0..per {
            level.push(b.switch(format!("sw{l}_{w}"), ports as u16));
        }
    }
    b.cable_hosts(&h, &sw[0], k);
    for l in 0..n - 1 {
        let p = k.pow(l as u32); // weight of digit l
        for w in 0..per {
            let digit = (w / p) % k;
            for j in 0..k {
                let up = w - digit * p + j * p;
                b.link(sw[l][w], (k + j) as u16, sw[l + 1][up], digit as u16);
            }
        }
    }
    finish_tree(name, b, o)
}

/// `fattree2:HPL:LEAVES:SPINES`.
pub(crate) fn fattree2(name: &str, rest: &str, o: &mut Opts) -> Result<Topology, TopoError> {
    let [hpl, nl, ns] = split(
        name,
        rest,
        "fattree2:HPL:LEAVES:SPINES (hosts per leaf, leaves, spines)",
    )?;
    let hpl = hosts_per_leaf(name, hpl)?;
    let nl = arg(name, "LEAVES", nl, 1, MAX_PORTS)?;
    let ns = arg(name, "SPINES", ns, 1, MAX_PORTS - hpl)?;
    check_hosts(name, hpl * nl)?;
    let mut b = Builder::new(name);
    b.leaf_spine(hpl, nl, ns, hpl + ns, nl);
    finish_tree(name, b, o)
}

/// `fattree3:HPL:LPP:APP:PODS`.
pub(crate) fn fattree3(name: &str, rest: &str, o: &mut Opts) -> Result<Topology, TopoError> {
    let [hpl, lpp, app, pods] = split(
        name,
        rest,
        "fattree3:HPL:LPP:APP:PODS (hosts per leaf, leaves per pod, aggregation switches per pod, pods)",
    )?;
    let hpl = hosts_per_leaf(name, hpl)?;
    let lpp = arg(name, "LPP (leaves per pod)", lpp, 1, MAX_PORTS / 2)?;
    let app = arg(
        name,
        "APP (aggregation switches per pod)",
        app,
        1,
        MAX_PORTS - hpl,
    )?;
    let pods = arg(name, "PODS", pods, 1, MAX_PORTS)?;
    check_hosts(name, hpl * lpp * pods)?;
    let mut b = Builder::new(name);
    let h = b.hosts(hpl * lpp * pods);
    let mut leaves = Vec::new();
    for p in 0..pods {
        for l in 0..lpp {
            leaves.push(b.switch(format!("leaf_{p}_{l}"), (hpl + app) as u16));
        }
    }
    let mut aggs = Vec::new();
    for p in 0..pods {
        for a in 0..app {
            aggs.push(b.switch(format!("agg_{p}_{a}"), (2 * lpp) as u16));
        }
    }
    let mut cores = Vec::new();
    for a in 0..app {
        for c in 0..lpp {
            cores.push(b.switch(format!("core_{a}_{c}"), pods as u16));
        }
    }
    b.cable_hosts(&h, &leaves, hpl);
    // within a pod: leaf l's port hpl + a to aggregation switch a's port l
    for (pod_leaves, pod_aggs) in leaves.chunks(lpp).zip(aggs.chunks(app)) {
        b.bipartite(pod_leaves, hpl, pod_aggs);
    }
    for p in 0..pods {
        for a in 0..app {
            for c in 0..lpp {
                b.link(
                    aggs[p * app + a],
                    (lpp + c) as u16,
                    cores[a * lpp + c],
                    p as u16,
                );
            }
        }
    }
    finish_tree(name, b, o)
}

/// (radix, leaves) of `fattree:hosts=N[,radix=R]`.
fn by_hosts_size(name: &str, rest: &str, o: &mut Opts) -> Result<(usize, usize), TopoError> {
    let n = arg(
        name,
        "hosts",
        rest.strip_prefix("hosts=").unwrap_or(rest),
        1,
        MAX_HOSTS,
    )?;
    let radix = o.num("radix", 2, MAX_PORTS as u64)?.unwrap_or(36) as usize;
    o.finish("radix")?;
    if !radix.is_multiple_of(2) {
        return Err(bad(name, format!("radix={radix}: must be even")));
    }
    let half = radix / 2;
    let leaves = n.div_ceil(half).max(2);
    if leaves > radix {
        return Err(bad(
            name,
            format!(
                "{n} hosts need {leaves} leaves of {half} hosts, but a 2-level tree of {radix}-port \
                 switches has at most {radix} leaves ({} hosts); give a larger radix= or use \
                 fattree3:HPL:LPP:APP:PODS or kary:K:3",
                radix * half
            ),
        ));
    }
    Ok((radix, leaves))
}

/// `fattree:hosts=N[,radix=R]`: the built-in `fattree:R:L`.
pub(crate) fn by_hosts(name: &str, rest: &str, o: &mut Opts) -> Result<Topology, TopoError> {
    let (radix, leaves) = by_hosts_size(name, rest, o)?;
    super::super::builtin::fixed(&format!("fattree:{radix}:{leaves}"))
}

/// One line saying what `fattree:hosts=N` picked.
pub(crate) fn explain_by_hosts(name: &str) -> Result<String, TopoError> {
    let (base, opts) = name.split_once(',').unwrap_or((name, ""));
    let mut o = if opts.is_empty() {
        Opts {
            name,
            pairs: Vec::new(),
            used: Vec::new(),
        }
    } else {
        Opts::parse(name, opts)?
    };
    let rest = base.strip_prefix("fattree:").unwrap_or(base);
    let (radix, leaves) = by_hosts_size(name, rest, &mut o)?;
    let half = radix / 2;
    let n: usize = rest
        .strip_prefix("hosts=")
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let one_leaf = if n <= half {
        format!(
            "; {n} ranks in order all sit on leaf_0 (give a smaller radix=, e.g. radix={}, to spread them)",
            (2 * n.div_ceil(2)).max(2)
        )
    } else {
        String::new()
    };
    Ok(format!(
        "{name} is fattree:{radix}:{leaves}: {leaves} leaves x {half} hosts = {} hosts, {half} spines \
         ({radix}-port switches, updown routing); ranks fill the leaves in order{one_leaf}",
        leaves * half
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_by_position() {
        let form = "t:A:B";
        assert_eq!(split::<2>("t", "4:x", form).unwrap(), ["4", "x"]);
        for rest in ["", "4", "4:5:6"] {
            assert_eq!(
                split::<2>("t", rest, form).unwrap_err().to_string(),
                "invalid topology: t: expected t:A:B",
                "{rest:?}"
            );
        }
        assert_eq!(hosts_per_leaf("f", "3").unwrap(), 3);
        assert_eq!(
            hosts_per_leaf("f", "0").unwrap_err().to_string(),
            format!(
                "invalid topology: f: HPL (hosts per leaf) must be in 1..={}, got 0",
                MAX_PORTS - 1
            )
        );
    }
}
