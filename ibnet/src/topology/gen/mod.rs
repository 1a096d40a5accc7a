//! Parametric network generators, named the way people say them
//! (docs/topology.md has the naming, node order and routing of each):
//!
//! - fat trees (`fattree`): `kary:K:N`, `fattree2:HPL:LEAVES:SPINES`,
//!   `fattree3:HPL:LPP:APP:PODS`, `fattree:hosts=N[,radix=R]`;
//! - tori and meshes (`torus`): `torus:4x4x4[:HPS]`, `mesh:8x8[:HPS]`,
//!   dimension-order routing, dateline SLs on tori;
//! - dragonflies (`dragonfly`): `dragonfly:A:P:H:G`, minimal or Valiant.
//!
//! Options follow the name after commas, `key=value`:
//! `torus:4x4,vls=one`, `dragonfly:4:2:2:9,routing=valiant,seed=3`,
//! `fattree:8,routing=ftree`. The built-in names without options are
//! untouched (same nodes, links and tables as before).

pub(crate) mod dragonfly;
pub(crate) mod fattree;
pub(crate) mod torus;

use super::{route, Routing, TopoError, Topology};

/// Largest number of HCAs a generator builds (forwarding tables have one
/// entry per LID per switch).
pub(crate) const MAX_HOSTS: usize = 16_384;
/// Largest number of HCAs of a generator that assigns an SL per route (the
/// SL table has (max LID + 1)^2 entries).
pub(crate) const MAX_HOSTS_SL: usize = 4_096;
/// Most ports of a generated switch.
pub(crate) const MAX_PORTS: usize = 254;

/// Options after the name: `key=value` pairs.
pub(crate) struct Opts<'a> {
    name: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
    used: Vec<bool>,
}

impl<'a> Opts<'a> {
    fn parse(name: &'a str, s: &'a str) -> Result<Opts<'a>, TopoError> {
        let mut pairs = Vec::new();
        for tok in s.split(',') {
            let Some((k, v)) = tok.split_once('=') else {
                return Err(bad(
                    name,
                    format!("option {tok:?} is not key=value (e.g. routing=ftree)"),
                ));
            };
            if pairs.iter().any(|&(k2, _)| k2 == k) {
                return Err(bad(name, format!("option {k} given twice")));
            }
            pairs.push((k, v));
        }
        let used = vec![false; pairs.len()];
        Ok(Opts { name, pairs, used })
    }
    pub(crate) fn get(&mut self, key: &str) -> Option<&'a str> {
        let i = self.pairs.iter().position(|&(k, _)| k == key)?;
        self.used[i] = true;
        Some(self.pairs[i].1)
    }
    /// Option `key` as a number in `lo..=hi`.
    pub(crate) fn num(&mut self, key: &str, lo: u64, hi: u64) -> Result<Option<u64>, TopoError> {
        let name = self.name;
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
                _ => Err(bad(
                    name,
                    format!("option {key}={v}: expected a whole number in {lo}..={hi}"),
                )),
            },
        }
    }
    /// Error for the first option nobody asked for.
    pub(crate) fn finish(&self, known: &str) -> Result<(), TopoError> {
        match self.used.iter().position(|u| !u) {
            None => Ok(()),
            Some(i) => Err(bad(
                self.name,
                format!(
                    "unknown option {:?} (options here: {known})",
                    self.pairs[i].0
                ),
            )),
        }
    }
}

pub(crate) fn bad(name: &str, msg: impl std::fmt::Display) -> TopoError {
    TopoError::Invalid(format!("{name}: {msg}"))
}

/// Positional number `what` of generator `name`, in `lo..=hi`.
pub(crate) fn arg(
    name: &str,
    what: &str,
    s: &str,
    lo: usize,
    hi: usize,
) -> Result<usize, TopoError> {
    match s.parse::<usize>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        Ok(n) => Err(bad(name, format!("{what} must be in {lo}..={hi}, got {n}"))),
        Err(_) => Err(bad(
            name,
            format!("{what} must be a whole number, got {s:?}"),
        )),
    }
}

/// The generated network called `name`, or None when `name` is not a
/// generator name (then the caller tries the fixed built-ins).
pub(crate) fn generate(name: &str) -> Option<Result<Topology, TopoError>> {
    let (base, opts) = match name.split_once(',') {
        Some((b, o)) => (b, Some(o)),
        None => (name, None),
    };
    let mut o = match opts.map(|s| Opts::parse(name, s)).transpose() {
        Ok(o) => o.unwrap_or(Opts {
            name,
            pairs: Vec::new(),
            used: Vec::new(),
        }),
        Err(e) => return Some(Err(e)),
    };
    let (kind, rest) = base.split_once(':').unwrap_or((base, ""));
    let r = match kind {
        "kary" => fattree::kary(name, rest, &mut o),
        "fattree2" => fattree::fattree2(name, rest, &mut o),
        "fattree3" => fattree::fattree3(name, rest, &mut o),
        "fattree" if rest.starts_with("hosts=") => fattree::by_hosts(name, rest, &mut o),
        "torus" => torus::torus(name, rest, true, &mut o),
        "mesh" => torus::torus(name, rest, false, &mut o),
        "dragonfly" => dragonfly::dragonfly(name, rest, &mut o),
        _ => {
            // a fixed built-in with options: only routing= applies
            opts?;
            with_routing(name, base, &mut o)
        }
    };
    Some(r)
}

/// `H8_S6,routing=ftree`, `fattree:8,routing=minhop`: the built-in,
/// re-routed.
fn with_routing(name: &str, base: &str, o: &mut Opts) -> Result<Topology, TopoError> {
    let mut t = super::builtin::fixed(base)?;
    let routing = routing_opt(name, o, &["ftree", "updown", "minhop"])?;
    o.finish("routing")?;
    if let Some(r) = routing {
        route(&mut t, r)?;
        t.validate()?;
    }
    t.name = name.to_string();
    Ok(t)
}

/// `routing=` as one of `allowed` (names of [`Routing`]).
pub(crate) fn routing_opt(
    name: &str,
    o: &mut Opts,
    allowed: &[&str],
) -> Result<Option<Routing>, TopoError> {
    match o.get("routing") {
        None => Ok(None),
        Some(v) if allowed.contains(&v) => Ok(Routing::parse(v)),
        Some(v) => Err(bad(
            name,
            format!(
                "routing={v} is not available here (choose from {})",
                allowed.join(", ")
            ),
        )),
    }
}

/// What a by-host-count name resolved to, for the command line to print
/// (`fattree:hosts=16` -> "fattree:36:2 ..."); None for other names.
pub fn explain(name: &str) -> Option<String> {
    let base = name.split(',').next()?;
    if base.starts_with("fattree:hosts=") {
        fattree::explain_by_hosts(name).ok()
    } else {
        None
    }
}

/// A small deterministic generator (splitmix64) for seeded choices.
pub(crate) fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
