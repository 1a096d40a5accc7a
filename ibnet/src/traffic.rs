//! Standalone traffic so the fabric runs without the scheduler.
//!
//! Two kinds:
//! - the reference app modes (sec. 5.1), configured per HCA with
//!   [`Fabric::set_traffic`]: `param`, `seq_once`, `seq_loop`, `seq_rand`;
//! - closed-loop patterns whose sends are triggered by arrivals with zero
//!   processing time ("fabric alone" baselines): dissemination and chain.
//!   They are drivers over [`Fabric::inject`] and
//!   [`Fabric::run_until_completion`], the same path the co-simulation uses.

// Message ids and (iteration, round) pairs: rustc-hash, not SipHash (the
// closed loop looks one up per completion; nothing iterates these maps, so
// their order cannot reach a result).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::{Path, PathBuf};

use crate::Time;
use serde::Serialize;

use crate::engine::{Driven, Fabric, FabricError, MsgId, OpKind, RunOutcome, TrafficMode};
use crate::topology::{load_dst_seq, Topology};

/// A `--traffic` specification.
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficSpec {
    /// `param:SRC=DST,...` (LIDs): the app of SRC sends to DST forever.
    Param(Vec<(u16, u16)>),
    /// `seq_once|seq_loop|seq_rand:FILE.dstSeq[:FILE.dstSeq.ini]`.
    Seq {
        mode: SeqMode,
        dstseq: PathBuf,
        ini: PathBuf,
    },
    /// `shift:K`: HCA i streams to HCA (i+K) mod n (seq_loop of one entry).
    Shift(usize),
    /// `perm[:SEED]`: HCA i streams to HCA p(i), p a random permutation
    /// with one cycle through every HCA (so nobody sends to itself), drawn
    /// from SEED (default 1) the same way on every machine
    /// ([`random_cycle`]).
    Perm(u64),
    /// `dissemination[:BYTES[:COUNT]]`.
    Dissemination { bytes: u64, count: u64 },
    /// `chain[:BYTES[:COUNT]]`.
    Chain { bytes: u64, count: u64 },
    /// `put|get:BYTES:SRC:DST[:COUNT]` (LIDs): COUNT one-sided operations
    /// from SRC, each injected when the previous one is complete.
    Op {
        kind: OpKind,
        bytes: u64,
        src: u16,
        dst: u16,
        count: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqMode {
    Once,
    Loop,
    Rand,
}

impl TrafficSpec {
    pub fn parse(s: &str) -> Result<TrafficSpec, String> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        let nums = |rest: &str, def_bytes: u64| -> Result<(u64, u64), String> {
            let mut it = rest.split(':').filter(|x| !x.is_empty());
            let b = match it.next() {
                Some(x) => x
                    .parse::<u64>()
                    .map_err(|_| format!("traffic `{s}`: bad byte count `{x}`"))?,
                None => def_bytes,
            };
            let c = match it.next() {
                Some(x) => x
                    .parse::<u64>()
                    .map_err(|_| format!("traffic `{s}`: bad count `{x}`"))?,
                None => 1,
            };
            if b == 0 || c == 0 {
                return Err(format!("traffic `{s}`: bytes and count must be > 0"));
            }
            if b > crate::params::MAX_MESSAGE_BYTES {
                return Err(format!(
                    "traffic `{s}`: {b} B is larger than the largest message the fabric simulates, {} B (1 TiB)",
                    crate::params::MAX_MESSAGE_BYTES
                ));
            }
            Ok((b, c))
        };
        match kind {
            "param" => {
                let mut v = Vec::new();
                for pair in rest.split(',').filter(|x| !x.is_empty()) {
                    let (a, b) = pair.split_once('=').ok_or_else(|| format!("traffic `{s}`: expected SRC=DST LID pairs"))?;
                    let a: u16 = a.trim().parse().map_err(|_| format!("traffic `{s}`: bad LID `{a}`"))?;
                    let b: u16 = b.trim().parse().map_err(|_| format!("traffic `{s}`: bad LID `{b}`"))?;
                    v.push((a, b));
                }
                if v.is_empty() {
                    return Err(format!("traffic `{s}`: expected param:SRC=DST[,SRC=DST...]"));
                }
                Ok(TrafficSpec::Param(v))
            }
            "seq_once" | "seq_loop" | "seq_rand" => {
                let mode = match kind {
                    "seq_once" => SeqMode::Once,
                    "seq_loop" => SeqMode::Loop,
                    _ => SeqMode::Rand,
                };
                if rest.is_empty() {
                    return Err(format!("traffic `{s}`: expected {kind}:FILE.dstSeq[:FILE.ini]"));
                }
                let (f, ini) = match rest.rsplit_once(':') {
                    Some((a, b)) if b.ends_with(".ini") => (PathBuf::from(a), PathBuf::from(b)),
                    _ => (PathBuf::from(rest), PathBuf::from(format!("{rest}.ini"))),
                };
                Ok(TrafficSpec::Seq { mode, dstseq: f, ini })
            }
            "shift" => {
                let k: usize = rest.parse().map_err(|_| format!("traffic `{s}`: expected shift:K"))?;
                Ok(TrafficSpec::Shift(k))
            }
            "perm" => {
                let seed = if rest.is_empty() {
                    1
                } else {
                    rest.parse()
                        .map_err(|_| format!("traffic `{s}`: expected perm[:SEED] (SEED a whole number)"))?
                };
                Ok(TrafficSpec::Perm(seed))
            }
            "dissemination" => {
                let (bytes, count) = nums(rest, 8)?;
                Ok(TrafficSpec::Dissemination { bytes, count })
            }
            "chain" => {
                let (bytes, count) = nums(rest, 8)?;
                Ok(TrafficSpec::Chain { bytes, count })
            }
            "put" | "get" => {
                let f: Vec<&str> = rest.split(':').collect();
                if !(3..=4).contains(&f.len()) {
                    return Err(format!("traffic `{s}`: expected {kind}:BYTES:SRC:DST[:COUNT] (LIDs)"));
                }
                let (bytes, count) = nums(&format!("{}:{}", f[0], f.get(3).unwrap_or(&"1")), 8)?;
                let lid = |x: &str| x.trim().parse::<u16>().map_err(|_| format!("traffic `{s}`: bad LID `{x}`"));
                Ok(TrafficSpec::Op {
                    kind: if kind == "put" { OpKind::Put } else { OpKind::Get },
                    bytes,
                    src: lid(f[1])?,
                    dst: lid(f[2])?,
                    count,
                })
            }
            _ => Err(format!(
                "unknown traffic `{s}` (param:SRC=DST, seq_loop|seq_once|seq_rand:FILE, shift:K, perm[:SEED], dissemination[:BYTES[:COUNT]], chain[:BYTES[:COUNT]], put|get:BYTES:SRC:DST[:COUNT])"
            )),
        }
    }

    pub fn is_closed_loop(&self) -> bool {
        matches!(
            self,
            TrafficSpec::Dissemination { .. } | TrafficSpec::Chain { .. } | TrafficSpec::Op { .. }
        )
    }
}

/// Configure the apps for an open-loop spec (before the run starts).
pub fn apply_app_traffic(
    f: &mut Fabric,
    topo: &Topology,
    spec: &TrafficSpec,
) -> Result<(), String> {
    let n = f.num_hcas();
    match spec {
        TrafficSpec::Param(pairs) => {
            for &(s, d) in pairs {
                let h = f
                    .hca_of_lid(s)
                    .ok_or_else(|| format!("traffic: no HCA has LID {s}"))?;
                f.set_traffic(h, TrafficMode::Param { dst_lid: d })
                    .map_err(|e| format!("traffic param:{s}={d}: {e}"))?;
            }
        }
        TrafficSpec::Seq { mode, dstseq, ini } => {
            let seqs = load_dst_seq(dstseq, ini).map_err(|e| e.to_string())?;
            let rows = seqs.resolve(topo).map_err(|e| e.to_string())?;
            for (h, row) in rows.into_iter().enumerate() {
                if row.is_empty() {
                    continue;
                }
                let m = match mode {
                    SeqMode::Once => TrafficMode::SeqOnce(row),
                    SeqMode::Loop => TrafficMode::SeqLoop(row),
                    SeqMode::Rand => TrafficMode::SeqRand(row),
                };
                f.set_traffic(h, m)
                    .map_err(|e| format!("traffic {}: HCA {h}: {e}", dstseq.display()))?;
            }
        }
        TrafficSpec::Shift(k) => {
            if n < 2 || k % n == 0 {
                return Err(format!(
                    "traffic shift:{k}: needs a shift that is not a multiple of the {n} HCAs"
                ));
            }
            for h in 0..n {
                let d = f.hca_lid((h + k) % n);
                f.set_traffic(h, TrafficMode::SeqLoop(vec![d]))
                    .map_err(|e| format!("traffic shift:{k}: {e}"))?;
            }
        }
        TrafficSpec::Perm(seed) => {
            if n < 2 {
                return Err(format!(
                    "traffic perm: needs at least 2 HCAs, the topology has {n}"
                ));
            }
            for (h, d) in random_cycle(n, *seed).into_iter().enumerate() {
                let d = f.hca_lid(d);
                f.set_traffic(h, TrafficMode::SeqLoop(vec![d]))
                    .map_err(|e| format!("traffic perm:{seed}: {e}"))?;
            }
        }
        _ => return Err("closed-loop traffic is run with run_closed_loop".into()),
    }
    Ok(())
}

/// A random permutation of `0..n` with a single cycle (Sattolo's shuffle:
/// every cyclic permutation equally likely, no fixed point), from a
/// SplitMix64 stream seeded with `seed`: the same destinations on every
/// machine and in every version. `p[i]` is the destination of HCA i.
pub fn random_cycle(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        // j uniform in 0..i, never i itself: that keeps one cycle. The
        // modulo bias is below 2^-40 for any network that fits in memory.
        let j = (next() % i as u64) as usize;
        p.swap(i, j);
    }
    p
}

/// Check the LIDs and routes of a `put`/`get` spec before the run (other
/// specs pass).
pub fn check_op_traffic(f: &Fabric, spec: &TrafficSpec) -> Result<(), String> {
    if let TrafficSpec::Op { src, dst, .. } = *spec {
        let lid = |l: u16| {
            f.hca_of_lid(l)
                .ok_or_else(|| format!("traffic: no HCA has LID {l}"))
        };
        let (s, d) = (lid(src)?, lid(dst)?);
        f.switches_between(s, d)
            .map_err(|e| format!("traffic: {e}"))?;
        f.switches_between(d, s)
            .map_err(|e| format!("traffic: {e}"))?;
    }
    Ok(())
}

/// Summary of a closed-loop run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClosedLoopSummary {
    pub pattern: String,
    pub ranks: usize,
    pub messages: u64,
    /// Time of the last completion (ps).
    pub end_ps: u64,
    /// True when `--until` stopped the run before every message completed.
    pub stopped_at_limit: bool,
}

/// Run a closed-loop pattern to the end, or stop at `until` (the fabric's
/// clock is then exactly `until`; messages still in flight are reported by
/// the fabric). Rank r is HCA number `ranks[r]`. The fabric is the
/// sequential engine or the parallel one ([`Driven`]).
pub fn run_closed_loop<F: Driven>(
    f: &mut F,
    spec: &TrafficSpec,
    ranks: &[usize],
    until: Option<Time>,
) -> Result<ClosedLoopSummary, FabricError> {
    run_closed_loop_with(f, spec, ranks, until, &mut |_, _| {})
}

/// As [`run_closed_loop`], calling `progress(fabric, messages sent)` after
/// every completion instant (for progress output; it must be cheap).
pub fn run_closed_loop_with<F: Driven>(
    f: &mut F,
    spec: &TrafficSpec,
    ranks: &[usize],
    until: Option<Time>,
    progress: &mut dyn FnMut(&F, u64),
) -> Result<ClosedLoopSummary, FabricError> {
    run_closed_loop_observed(f, spec, ranks, until, progress, None)
}

/// Window boundaries for observers of a closed-loop run: the run stops at
/// every `next()` instant (with no completion left at or before it) and
/// calls `at()`; the events processed and their order are the same as
/// without windows.
pub trait WindowHook<F = Fabric> {
    /// The next instant at which to stop (None: no more windows).
    fn next(&self) -> Option<Time>;
    /// The fabric's clock is at `next()`.
    fn at(&mut self, f: &mut F);
}

/// As [`run_closed_loop_with`], stopping at the window boundaries of
/// `window` (see [`crate::observe`]).
pub fn run_closed_loop_observed<F: Driven>(
    f: &mut F,
    spec: &TrafficSpec,
    ranks: &[usize],
    until: Option<Time>,
    progress: &mut dyn FnMut(&F, u64),
    mut window: Option<&mut dyn WindowHook<F>>,
) -> Result<ClosedLoopSummary, FabricError> {
    let n = ranks.len();
    let mut tags: HashMap<MsgId, (usize, u64, u32)> = HashMap::default(); // id -> (dst rank, iter, round)
    let mut messages = 0u64;
    let mut end = 0u64;
    let mut stopped = false;
    // the pattern as the summary names it
    let pattern = match *spec {
        TrafficSpec::Dissemination { bytes, count } => {
            let rounds = if n <= 1 {
                0
            } else {
                usize::BITS - (n - 1).leading_zeros()
            };
            // state per rank: next (iter, round) to send
            let mut next: Vec<(u64, u32)> = vec![(0, 0); n];
            let mut got: Vec<HashSet<(u64, u32)>> = vec![HashSet::default(); n];
            // `got[r]`: the (iteration, round) pairs rank r has received
            // and not used yet; each is used (and removed) once, by the
            // send it enables, so the sets hold only what arrived early
            // and memory does not grow with the count.
            let send_ready = |f: &mut F,
                              r: usize,
                              next: &mut Vec<(u64, u32)>,
                              got: &mut Vec<HashSet<(u64, u32)>>,
                              tags: &mut HashMap<MsgId, (usize, u64, u32)>,
                              messages: &mut u64|
             -> Result<(), FabricError> {
                loop {
                    let (i, k) = next[r];
                    if i >= count || rounds == 0 {
                        return Ok(());
                    }
                    let ok = if k == 0 {
                        i == 0 || got[r].remove(&(i - 1, rounds - 1))
                    } else {
                        got[r].remove(&(i, k - 1))
                    };
                    if !ok {
                        return Ok(());
                    }
                    let dst = (r + (1usize << k)) % n;
                    let id = f.inject(f.now(), ranks[r], ranks[dst], bytes)?;
                    tags.insert(id, (dst, i, k));
                    *messages += 1;
                    next[r] = if k + 1 == rounds {
                        (i + 1, 0)
                    } else {
                        (i, k + 1)
                    };
                }
            };
            for r in 0..n {
                send_ready(f, r, &mut next, &mut got, &mut tags, &mut messages)?;
            }
            while let Some((t, ids)) = next_completion(f, until, &mut stopped, &mut window) {
                end = t.0;
                for id in ids {
                    if let Some((dst, i, k)) = tags.remove(&id) {
                        got[dst].insert((i, k));
                        send_ready(f, dst, &mut next, &mut got, &mut tags, &mut messages)?;
                    }
                }
                progress(f, messages);
            }
            format!("dissemination:{bytes}:{count}")
        }
        TrafficSpec::Chain { bytes, count } => {
            let mut sent = vec![0u64; n];
            if n >= 2 {
                for r in 0..n {
                    let id = f.inject(f.now(), ranks[r], ranks[(r + 1) % n], bytes)?;
                    tags.insert(id, ((r + 1) % n, 0, 0));
                    sent[r] = 1;
                    messages += 1;
                }
            }
            while let Some((t, ids)) = next_completion(f, until, &mut stopped, &mut window) {
                end = t.0;
                for id in ids {
                    if let Some((dst, _, _)) = tags.remove(&id) {
                        if sent[dst] < count {
                            let id2 = f.inject(f.now(), ranks[dst], ranks[(dst + 1) % n], bytes)?;
                            tags.insert(id2, ((dst + 1) % n, 0, 0));
                            sent[dst] += 1;
                            messages += 1;
                        }
                    }
                }
                progress(f, messages);
            }
            format!("chain:{bytes}:{count}")
        }
        TrafficSpec::Op {
            kind,
            bytes,
            src,
            dst,
            count,
        } => {
            let lid = |l: u16| {
                f.hca_of_lid(l)
                    .ok_or_else(|| FabricError::BadMessage(format!("traffic: no HCA has LID {l}")))
            };
            let (s, d) = (lid(src)?, lid(dst)?);
            let mut cur = f.inject_op(f.now(), s, d, bytes, kind)?;
            messages = 1;
            while let Some((t, ids)) = next_completion(f, until, &mut stopped, &mut window) {
                end = t.0;
                if ids.contains(&cur) && messages < count {
                    cur = f.inject_op(f.now(), s, d, bytes, kind)?;
                    messages += 1;
                }
                progress(f, messages);
            }
            format!(
                "{}:{bytes}:{src}:{dst}:{count}",
                if kind == OpKind::Put { "put" } else { "get" }
            )
        }
        _ => return Err(FabricError::BadMessage("not a closed-loop pattern".into())),
    };
    if let Some(e) = f.error() {
        return Err(e.clone());
    }
    if !stopped && f.in_flight() > 0 {
        return Err(FabricError::Fatal {
            t: f.now().0,
            msg: format!(
                "deadlock: {} messages can never complete: {:?}",
                f.in_flight(),
                f.in_flight_ids()
            ),
        });
    }
    Ok(ClosedLoopSummary {
        pattern,
        ranks: n,
        messages,
        end_ps: end,
        stopped_at_limit: stopped,
    })
}

/// The next completion instant, or None when the run is over: everything
/// completed, a deadlock or fatal error (the caller checks), or the time
/// limit reached with no completion up to it (`stopped` is then set and
/// the fabric's clock is at the limit).
fn next_completion<F: Driven>(
    f: &mut F,
    until: Option<Time>,
    stopped: &mut bool,
    window: &mut Option<&mut dyn WindowHook<F>>,
) -> Option<(Time, Vec<MsgId>)> {
    let until = until.unwrap_or(Time(u64::MAX));
    loop {
        let boundary = window
            .as_ref()
            .and_then(|w| w.next())
            .filter(|&b| b < until);
        match f.run_until_completion_or(boundary.unwrap_or(until)) {
            RunOutcome::Completed(t, ids) => return Some((t, ids)),
            RunOutcome::Limit => {
                if boundary.is_some() {
                    if let Some(w) = window.as_mut() {
                        w.at(f);
                    }
                    continue;
                }
                *stopped = true;
                return None;
            }
            RunOutcome::Idle | RunOutcome::Deadlock | RunOutcome::Fatal => return None,
        }
    }
}

/// Rank -> HCA number (index among HCAs) from the topology's rank map.
pub fn rank_hcas(topo: &Topology) -> Vec<usize> {
    let hcas = topo.hcas();
    (0..topo.num_ranks())
        .filter_map(|r| topo.hca_of_rank(r))
        .filter_map(|node| hcas.iter().position(|&h| h == node))
        .collect()
}

/// Default `.ini` next to a `.dstSeq` file.
pub fn default_ini(dstseq: &Path) -> PathBuf {
    PathBuf::from(format!("{}.ini", dstseq.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perm_parses_with_and_without_a_seed() {
        assert_eq!(TrafficSpec::parse("perm"), Ok(TrafficSpec::Perm(1)));
        assert_eq!(TrafficSpec::parse("perm:42"), Ok(TrafficSpec::Perm(42)));
        let e = TrafficSpec::parse("perm:x").unwrap_err();
        assert!(e.contains("expected perm[:SEED]"), "{e}");
    }

    /// One cycle through every HCA, for every size and several seeds:
    /// following the destinations from 0 visits all n before coming back.
    #[test]
    fn random_cycle_is_one_cycle_through_everyone() {
        for n in 2..60 {
            for seed in [0, 1, 7, u64::MAX] {
                let p = random_cycle(n, seed);
                let (mut h, mut steps) = (0, 0);
                loop {
                    h = p[h];
                    steps += 1;
                    if h == 0 {
                        break;
                    }
                    assert!(steps < n, "n={n} seed={seed}: {p:?}");
                }
                assert_eq!(steps, n, "n={n} seed={seed}: {p:?}");
            }
        }
    }

    /// The draw is pinned: SplitMix64 from the seed, Sattolo's swaps from
    /// the top. For n = 2 there is one cycle; for n = 5, seed 1, the first
    /// outputs 0x910a2dec89025cc1 (mod 4 = 1), 0xbeeb8da1658eec67 (mod 3 = 1),
    /// 0xf893a2eefb32555e (mod 2 = 0), 0x71c18690ee42c90b (mod 1 = 0) give
    /// the swaps (4,1), (3,1), (2,0), (1,0).
    #[test]
    fn random_cycle_is_pinned() {
        assert_eq!(random_cycle(2, 1), vec![1, 0]);
        let mut p: Vec<usize> = (0..5).collect();
        for (i, j) in [(4, 1), (3, 1), (2, 0), (1, 0)] {
            p.swap(i, j);
        }
        assert_eq!(random_cycle(5, 1), p);
        assert_ne!(random_cycle(64, 1), random_cycle(64, 2));
    }
}
