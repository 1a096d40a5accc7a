//! Several jobs on one fabric (docs/jobs.md): job specifications, placement of
//! each job's ranks on the topology's HCAs, merging the schedules into one
//! global rank space, and the per-job results.
//!
//! A job is `FILE[:PLACEMENT]` (`--job`, repeatable). Job j's ranks become
//! global ranks `first_j .. first_j + n_j`, where `first_j` is the sum of the
//! rank counts of the jobs before it; its sends and receives are renumbered
//! by the same offset, so a job only ever talks to itself (an any-source
//! receive stays any-source: only its own job's ranks send to it).
//!
//! Placements (docs/jobs.md):
//! - `linear`: the next free HCAs in the topology's rank order (the order in
//!   which a single schedule's ranks are placed by default; HCAs outside that
//!   order follow in node order);
//! - `round-robin`: one host per leaf switch in turn (leaves in the order of
//!   their first HCA in rank order; on each leaf its next free host);
//! - `random:SEED`: distinct free HCAs drawn by a seeded shuffle
//!   (reproducible: the same jobs, topology and seed give the same hosts);
//! - `map:FILE`: one HCA per rank, one per line (a name such as `H_3`, or an
//!   index into the rank order, 0-based); `#` starts a comment.
//!
//! `map:` jobs are placed first (they name their hosts), then the others in
//! job order around them. Two jobs on one HCA, or a job that does not fit
//! into the free HCAs, is an input error.

use crate::schedule::{BuildError, Kind, Op, Schedule, ScheduleBuilder, ANY};
use ibnet::topology::{PortRef, Topology};
use std::path::{Path, PathBuf};

/// How a job's ranks are put on HCAs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    Linear,
    RoundRobin,
    Random(u64),
    Map(PathBuf),
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Linear => f.write_str("linear"),
            Placement::RoundRobin => f.write_str("round-robin"),
            Placement::Random(s) => write!(f, "random:{s}"),
            Placement::Map(p) => write!(f, "map:{}", p.display()),
        }
    }
}

/// One `--job` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    pub file: PathBuf,
    pub placement: Placement,
}

const KEYWORDS: &str = "linear, round-robin, random:SEED or map:FILE";

/// Parses a placement (`linear`, `round-robin`, `random:SEED`, `map:FILE`).
pub fn parse_placement(s: &str) -> Result<Placement, String> {
    match s {
        "linear" => return Ok(Placement::Linear),
        "round-robin" => return Ok(Placement::RoundRobin),
        "random" => {
            return Err("placement random needs a seed: random:SEED (an integer)".into());
        }
        "map" => return Err("placement map needs a file: map:FILE".into()),
        _ => {}
    }
    if let Some(seed) = s.strip_prefix("random:") {
        return seed.parse::<u64>().map(Placement::Random).map_err(|_| {
            format!("placement {s:?}: the seed must be an integer from 0 to 2^64-1, found {seed:?}")
        });
    }
    if let Some(file) = s.strip_prefix("map:") {
        if file.is_empty() {
            return Err("placement map needs a file: map:FILE".into());
        }
        return Ok(Placement::Map(PathBuf::from(file)));
    }
    Err(format!("unknown placement {s:?} (use {KEYWORDS})"))
}

/// Does `s` start like a placement (a keyword, then the end or `:`)?
fn looks_like_placement(s: &str) -> bool {
    ["linear", "round-robin", "random", "map"].iter().any(|k| {
        s.strip_prefix(k)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
    })
}

/// Parses `FILE[:PLACEMENT]`. The placement starts at the first `:` that is
/// followed by a placement keyword; without one the whole text is the file
/// and the placement is `linear`. (A schedule whose name contains
/// `:linear` etc. cannot be named this way; rename or link it.)
pub fn parse_job_spec(s: &str) -> Result<JobSpec, String> {
    if s.is_empty() {
        return Err("empty --job: expected FILE[:PLACEMENT]".into());
    }
    let mut split = None;
    for (i, c) in s.char_indices() {
        if c == ':' && looks_like_placement(&s[i + 1..]) {
            split = Some(i);
            break;
        }
    }
    let (file, placement) = match split {
        Some(i) => (&s[..i], parse_placement(&s[i + 1..])?),
        None => (s, Placement::Linear),
    };
    if file.is_empty() {
        return Err(format!(
            "--job {s:?}: no schedule file before the placement"
        ));
    }
    Ok(JobSpec {
        file: PathBuf::from(file),
        placement,
    })
}

/// Bounded pseudo-random generator (SplitMix64): enough for a reproducible
/// shuffle; the sequence is fixed by the seed on every platform.
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0), by rejection (no modulo bias).
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// The topology's HCAs as placements see them.
pub struct Hosts {
    /// HCA node indices in rank order (then the HCAs outside it, in node order).
    pub order: Vec<usize>,
    /// For each entry of `order`: the node its port is cabled to (its leaf
    /// switch), if any.
    pub leaf: Vec<Option<usize>>,
}

impl Hosts {
    pub fn new(topo: &Topology) -> Hosts {
        let mut order: Vec<usize> = (0..topo.num_ranks())
            .filter_map(|r| topo.hca_of_rank(r))
            .collect();
        let mut seen = vec![false; topo.nodes.len()];
        for &h in &order {
            seen[h] = true;
        }
        for h in topo.hcas() {
            if !seen[h] {
                seen[h] = true;
                order.push(h);
            }
        }
        let router = topo.router();
        let leaf = order
            .iter()
            .map(|&h| router.peer(PortRef { node: h, port: 0 }).map(|p| p.node))
            .collect();
        Hosts { order, leaf }
    }
}

/// What `place` needs to know of a job.
pub struct JobNeed<'a> {
    /// `job 1 (a2a.goal)`, for messages.
    pub label: String,
    pub ranks: u32,
    pub placement: &'a Placement,
    /// The text of the map file for `map:` (read by the caller).
    pub map_text: Option<&'a str>,
}

/// Parses a `map:` file: one HCA per rank (name, or index into the rank
/// order), `#` comments, blank lines ignored. Returns positions in
/// `hosts.order`.
pub fn parse_map_text(
    text: &str,
    file: &Path,
    topo: &Topology,
    hosts: &Hosts,
    ranks: u32,
) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    // position in `hosts.order` of each HCA node; the rank holding each position
    let mut pos_of = vec![usize::MAX; topo.nodes.len()];
    for (k, &h) in hosts.order.iter().enumerate() {
        pos_of[h] = k;
    }
    let mut rank_at: Vec<Option<usize>> = vec![None; hosts.order.len()];
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("{}:{}", file.display(), i + 1);
        if line.split_whitespace().count() != 1 {
            return Err(format!(
                "{at}: expected one HCA (a name or an index) per line, found {line:?}"
            ));
        }
        let pos = match topo.node_by_name(line) {
            Some(n) if topo.nodes[n].is_hca() => pos_of[n],
            Some(_) => return Err(format!("{at}: {line} is a switch, not an HCA")),
            None => match line.parse::<usize>() {
                Ok(k) if k < hosts.order.len() => k,
                Ok(k) => {
                    return Err(format!(
                        "{at}: HCA index {k} is out of range (topology {} has {} HCAs, 0..{})",
                        topo.name,
                        hosts.order.len(),
                        hosts.order.len().saturating_sub(1)
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "{at}: no HCA named {line:?} in topology {}",
                        topo.name
                    ))
                }
            },
        };
        if let Some(k) = rank_at[pos] {
            return Err(format!(
                "{at}: HCA {} is given twice (ranks {k} and {})",
                topo.nodes[hosts.order[pos]].name,
                out.len()
            ));
        }
        rank_at[pos] = Some(out.len());
        out.push(pos);
        if out.len() as u64 > ranks as u64 {
            return Err(format!(
                "{at}: more lines than the job's {ranks} ranks (one HCA per rank)"
            ));
        }
    }
    if out.len() as u64 != ranks as u64 {
        return Err(format!(
            "{}: {} HCAs for a job of {ranks} ranks (one HCA per rank, one per line)",
            file.display(),
            out.len()
        ));
    }
    Ok(out)
}

/// Places every job. Returns, per job, the HCA node index of each of its
/// ranks. Errors (overlap, not enough free HCAs, bad map) are input errors.
pub fn place(topo: &Topology, jobs: &[JobNeed]) -> Result<Vec<Vec<usize>>, String> {
    let hosts = Hosts::new(topo);
    let n = hosts.order.len();
    // owner[pos] = job that holds hosts.order[pos]
    let mut owner: Vec<Option<usize>> = vec![None; n];
    let mut result: Vec<Vec<usize>> = vec![Vec::new(); jobs.len()];
    let name = |pos: usize| topo.nodes[hosts.order[pos]].name.clone();
    // Maps first: they name their hosts.
    for (j, job) in jobs.iter().enumerate() {
        let Placement::Map(path) = job.placement else {
            continue;
        };
        let text = job.map_text.unwrap_or("");
        let pos = parse_map_text(text, path, topo, &hosts, job.ranks)
            .map_err(|e| format!("{}: {e}", job.label))?;
        for (r, &p) in pos.iter().enumerate() {
            if let Some(o) = owner[p] {
                return Err(format!(
                    "{} and {} overlap: both place a rank on HCA {} (rank {r} of {}); jobs must \
                     use distinct HCAs",
                    jobs[o].label,
                    job.label,
                    name(p),
                    job.label
                ));
            }
            owner[p] = Some(j);
        }
        result[j] = pos.iter().map(|&p| hosts.order[p]).collect();
    }
    // Leaves in order of their first host, each with its hosts in order.
    let mut leaves: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
    for pos in 0..n {
        let l = hosts.leaf[pos];
        match leaves.iter_mut().find(|(k, _)| *k == l) {
            Some((_, v)) => v.push(pos),
            None => leaves.push((l, vec![pos])),
        }
    }
    for (j, job) in jobs.iter().enumerate() {
        if matches!(job.placement, Placement::Map(_)) {
            continue;
        }
        let free: Vec<usize> = (0..n).filter(|&p| owner[p].is_none()).collect();
        let need = job.ranks as usize;
        if need > free.len() {
            let mut users: Vec<String> = Vec::new();
            for (k, o) in jobs.iter().enumerate() {
                let c = owner.iter().filter(|&&x| x == Some(k)).count();
                if c > 0 {
                    users.push(format!("{} holds {c}", o.label));
                }
            }
            let others = if users.is_empty() {
                String::new()
            } else {
                format!(" ({})", users.join(", "))
            };
            return Err(format!(
                "{} does not fit: it needs {need} HCAs but only {} of the {n} HCAs of topology \
                 {} are free{others}; use a larger --topology (e.g. fattree:P)",
                job.label,
                free.len(),
                topo.name
            ));
        }
        let chosen: Vec<usize> = match job.placement {
            Placement::Linear => free[..need].to_vec(),
            Placement::RoundRobin => {
                let mut next = vec![0usize; leaves.len()];
                let mut out = Vec::with_capacity(need);
                while out.len() < need {
                    for (li, (_, hs)) in leaves.iter().enumerate() {
                        if out.len() == need {
                            break;
                        }
                        while next[li] < hs.len() && owner[hs[next[li]]].is_some() {
                            next[li] += 1;
                        }
                        if next[li] < hs.len() {
                            let p = hs[next[li]];
                            owner[p] = Some(j);
                            out.push(p);
                            next[li] += 1;
                        }
                    }
                }
                out
            }
            Placement::Random(seed) => {
                // Partial Fisher-Yates over the free hosts.
                let mut v = free.clone();
                let mut rng = SplitMix(*seed);
                for i in 0..need {
                    let k = i + rng.below((v.len() - i) as u64) as usize;
                    v.swap(i, k);
                }
                v.truncate(need);
                v
            }
            Placement::Map(_) => unreachable!(),
        };
        for &p in &chosen {
            owner[p] = Some(j);
        }
        result[j] = chosen.iter().map(|&p| hosts.order[p]).collect();
    }
    Ok(result)
}

/// The leaf switches (nodes cabled to the HCAs) a job's HCAs use, in order
/// of first use.
pub fn leaves_of(topo: &Topology, hcas: &[usize]) -> Vec<Option<usize>> {
    let router = topo.router();
    let mut out: Vec<Option<usize>> = Vec::new();
    for &h in hcas {
        let l = router.peer(PortRef { node: h, port: 0 }).map(|p| p.node);
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// Merges the jobs' schedules: job j's rank r becomes global rank
/// `first_j + r`, its send destinations and receive sources are shifted by
/// `first_j` (any-source stays any-source); operations, dependencies and
/// their order are kept, so a job's DAG is unchanged.
pub fn merge(parts: &[&Schedule]) -> Result<Schedule, String> {
    let total: u64 = parts.iter().map(|s| s.num_ranks() as u64).sum();
    if total > u32::MAX as u64 - 1 {
        return Err(format!(
            "the jobs have {total} ranks together, more than {}",
            u32::MAX - 1
        ));
    }
    let nodes: u64 = parts.iter().map(|s| s.num_nodes() as u64).sum();
    if nodes > crate::schedule::MAX_NODES {
        return Err(BuildError::TooManyNodes.to_string());
    }
    let mut b = ScheduleBuilder::new(total as u32);
    let mut first = 0u32;
    for s in parts {
        for r in 0..s.num_ranks() {
            let range = s.rank_nodes(r);
            b.begin_rank();
            for n in range.clone() {
                let mut op: Op = s.op(n);
                if op.kind != Kind::Calc && op.peer != ANY {
                    op.peer += first;
                }
                b.add_op(op).map_err(|e| e.to_string())?;
            }
            for n in range.clone() {
                for &e in s.raw_edges(n) {
                    let imm = e & crate::schedule::EDGE_START != 0;
                    let d = (e & !crate::schedule::EDGE_START) - range.start;
                    b.add_dep(d, n - range.start, imm)
                        .map_err(|e| e.to_string())?;
                }
            }
            // (the jobs' schedules were read, so they hold no cycle)
            b.end_rank()
                .map_err(|_| format!("rank {r}: dependency cycle"))?;
        }
        first += s.num_ranks();
    }
    Ok(b.finish())
}

/// One job's results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct JobResult {
    pub job: usize,
    pub schedule: String,
    pub placement: String,
    pub num_ranks: u32,
    /// Global rank of the job's rank 0 in the merged run.
    pub first_global_rank: u32,
    /// HCA of each rank (empty for --network loggp: no topology).
    pub hcas: Vec<String>,
    /// Leaf switches the job's HCAs are cabled to, in order of first use.
    pub leaf_switches: Vec<String>,
    /// All ranks on one leaf switch: the job's traffic never leaves it.
    pub single_switch: bool,
    pub finish_time_ps: u64,
    pub finish_times_ps: Vec<u64>,
    pub alone_finish_time_ps: Option<u64>,
    pub alone_finish_times_ps: Option<Vec<u64>>,
    /// finish_time_ps / alone_finish_time_ps (None when not asked, or the
    /// job alone finishes at 0).
    pub slowdown: Option<f64>,
}

/// The text section after the usual report.
pub fn text(jobs: &[JobResult], batch: bool) -> String {
    use ipc_proto::time::format_ps_human;
    let mut out = String::from("Jobs (finish time = max over the job's ranks):\n");
    for j in jobs {
        out.push_str(&format!(
            "Job {}: {} ({} ranks, global {}..{}, placement {})",
            j.job,
            j.schedule,
            j.num_ranks,
            j.first_global_rank,
            j.first_global_rank as u64 + j.num_ranks as u64,
            j.placement
        ));
        if j.hcas.len() > 16 || j.leaf_switches.len() > 16 {
            // Long lists only per rank (below) and in --json.
            out.push_str(&format!(
                " on {} HCAs under {} leaf switches",
                j.hcas.len(),
                j.leaf_switches.len()
            ));
        } else if !j.hcas.is_empty() {
            out.push_str(&format!(
                " on {} (leaves {})",
                j.hcas.join(" "),
                j.leaf_switches.join(" ")
            ));
        }
        out.push('\n');
        out.push_str(&format!(
            "  finish: {} ps ({})",
            j.finish_time_ps,
            format_ps_human(j.finish_time_ps)
        ));
        if let Some(a) = j.alone_finish_time_ps {
            out.push_str(&format!("; alone: {a} ps ({})", format_ps_human(a)));
            match j.slowdown {
                Some(s) => out.push_str(&format!("; slowdown: {s:.6}")),
                None => out.push_str("; slowdown: n/a (alone finish 0 ps)"),
            }
        }
        out.push('\n');
        if !batch {
            for (r, t) in j.finish_times_ps.iter().enumerate() {
                out.push_str(&format!(
                    "  rank {r} (global {}{}): {t} ps",
                    j.first_global_rank as u64 + r as u64,
                    j.hcas.get(r).map(|h| format!(", {h}")).unwrap_or_default()
                ));
                if let Some(a) = &j.alone_finish_times_ps {
                    out.push_str(&format!("; alone: {} ps", a[r]));
                }
                out.push('\n');
            }
        }
    }
    out
}

/// The `"jobs"` array for the JSON report.
pub fn json(jobs: &[JobResult]) -> String {
    serde_json::to_string_pretty(jobs).expect("plain data")
}

/// Adds `"jobs": [...]` as the last key of a pretty-printed JSON object
/// (the report of [`crate::report::json`]).
pub fn add_to_json_report(report: &str, jobs: &[JobResult]) -> String {
    let body = report.trim_end();
    let body = body.strip_suffix('}').unwrap_or(body).trim_end();
    let arr = json(jobs).replace('\n', "\n  ");
    format!("{body},\n  \"jobs\": {arr}\n}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let j = parse_job_spec("a.goal").unwrap();
        assert_eq!(j.file, PathBuf::from("a.goal"));
        assert_eq!(j.placement, Placement::Linear);
        let j = parse_job_spec("dir:x/a.goal:random:7").unwrap();
        assert_eq!(j.file, PathBuf::from("dir:x/a.goal"));
        assert_eq!(j.placement, Placement::Random(7));
        let j = parse_job_spec("a.goal:map:m:1.txt").unwrap();
        assert_eq!(j.placement, Placement::Map(PathBuf::from("m:1.txt")));
        assert_eq!(
            parse_job_spec("a.goal:round-robin").unwrap().placement,
            Placement::RoundRobin
        );
        assert!(parse_job_spec("a.goal:random")
            .unwrap_err()
            .contains("needs a seed"));
        assert!(parse_job_spec("a.goal:random:x")
            .unwrap_err()
            .contains("seed must be an integer"));
        assert!(parse_job_spec(":linear")
            .unwrap_err()
            .contains("no schedule"));
        assert!(parse_job_spec("").is_err());
    }
}
