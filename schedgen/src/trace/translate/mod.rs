//! The trace translator: the per-rank state machine of docs/model/schedgen.md 4.4-4.7
//! plus the extensions (more collectives) and the thesis's calibration
//! methods (docs/calibration.md).
//!
//! `translate` reads the trace files (`files.rs`), plans calibration 4
//! (`sync.rs`), and translates rank by rank (`rank.rs`), each record by the
//! step of its call: point-to-point (`p2p.rs`), waits (`requests.rs`),
//! collectives (`collectives.rs`, patterns in `coll_patterns.rs`). The gap
//! calcs and the CPU/wall measure are in `gaps.rs`, the calibration calcs
//! in `calib.rs`, tags in `tags.rs`, field meanings in `fields.rs`,
//! `--traces-start` in `start_file.rs`, the options in `options.rs`.

use std::path::{Path, PathBuf};

use crate::goal::{Counts, GoalWriter};
use crate::trace::reader::TraceError;

mod calib;
mod coll_patterns;
mod collectives;
mod fields;
mod files;
mod gaps;
mod options;
mod p2p;
mod rank;
mod requests;
mod start_file;
mod sync;
mod tags;
#[cfg(test)]
mod testutil;

pub use fields::{message_bytes, MAX_MESSAGE_BYTES};
pub use files::{trace_file_names, MAX_LINE_BYTES};
pub use options::{Compute, TraceOptions, COMPUTE_NAMES};
pub use start_file::{fmt_g30, StartFile};

use files::{check_missing_ranks, read_traces, RankTrace};
use gaps::{has_cpu_times, Ctx};
use rank::{translate_rank, RankSync};
use sync::{sync_targets, SyncPlan};

/// The translated schedule and what was noticed on the way.
#[derive(Debug, Clone)]
pub struct Translation {
    pub goal: String,
    pub counts: Counts,
    /// Warnings (unknown calls, skipped collectives, missing ranks, ...),
    /// each naming file and line where there is one.
    pub warnings: Vec<String>,
    /// The trace files used, rank order.
    pub files: Vec<PathBuf>,
}

/// Translates the traces whose rank-0 file is `first`.
pub fn translate(first: &Path, o: &TraceOptions) -> Result<Translation, TraceError> {
    if o.extr < 1 {
        return Err(TraceError::Other("--traces-extr must be at least 1".into()));
    }
    if o.nbcify < 0 {
        return Err(TraceError::Other(format!(
            "--traces-nbcify must be non-negative (got {})",
            o.nbcify
        )));
    }
    let traces = read_traces(first)?;
    translate_traces(first, traces, o)
}

/// Translates traces read into memory (`first` names rank 0's file, for
/// the names of missing ones): the CPU/wall choice, the missing ranks, the
/// synchronisation plan of calibration 4, then every rank.
fn translate_traces(
    first: &Path,
    traces: Vec<RankTrace>,
    o: &TraceOptions,
) -> Result<Translation, TraceError> {
    let hn = traces.len();
    let mut ctx = Ctx {
        o,
        warnings: Vec::new(),
        err: None,
        use_cpu: false,
    };
    check_missing_ranks(first, &traces, &mut ctx)?;
    if o.compute == Compute::Cpu {
        let without: Vec<&RankTrace> = traces.iter().filter(|t| !has_cpu_times(t)).collect();
        if without.is_empty() {
            ctx.use_cpu = true;
        } else {
            ctx.warnings.push(format!(
                "{} of {hn} trace file(s) have no CPU times (no `:cpu=` fields, e.g. {}: written \
                 by liballprof or an older mpi-tracer); computation is measured in wall-clock \
                 time (--compute wall) instead of thread CPU time",
                without.len(),
                without[0].file.display()
            ));
        }
    }

    let sync = if o.sync_collectives || o.sync_p2p {
        Some(sync_targets(&traces, &mut ctx)?)
    } else {
        None
    };
    translate_all(o, traces, hn, ctx, sync)
}

fn translate_all(
    o: &TraceOptions,
    traces: Vec<RankTrace>,
    hn: usize,
    mut ctx: Ctx,
    sync: Option<SyncPlan>,
) -> Result<Translation, TraceError> {
    let start_file = match &o.start_file {
        Some(p) => Some(StartFile::read(p)?),
        None => None,
    };
    let e_total = o.extr as usize;
    let mut w = GoalWriter::new((hn * e_total) as i64, o.cpu, o.prelude);
    let mut stops: Vec<Option<(u64, f64)>> = vec![None; hn];
    for e in 0..e_total {
        for (h, tr) in traces.iter().enumerate() {
            let delays = sync.as_ref().map(|s| RankSync {
                start: s.start[h],
                delays: &s.delays[h],
                p2p: &s.p2p[h],
            });
            let start = start_file.as_ref().map(|f| f.get(h));
            if let Some(s) = translate_rank(&mut w, &mut ctx, tr, h, e, hn, delays, start)? {
                stops[h] = Some(s);
            }
            if w.is_full() {
                return Err(TraceError::File {
                    file: tr.file.clone(),
                    msg: format!(
                        "the schedule exceeds the {} bytes trace2goal builds in memory",
                        crate::goal::MAX_GOAL_BYTES
                    ),
                });
            }
        }
    }
    if let (Some(path), Some(old)) = (&o.start_file, &start_file) {
        // Rewrite: where the early stop was reached the new position,
        // otherwise the old values.
        let entries = (0..hn)
            .map(|h| stops[h].unwrap_or_else(|| old.get(h)))
            .collect();
        std::fs::write(path, StartFile { entries }.render()).map_err(|e| TraceError::File {
            file: path.clone(),
            msg: format!("cannot rewrite start file: {e}"),
        })?;
    }
    let (goal, counts) = w.finish();
    Ok(Translation {
        goal,
        counts,
        warnings: ctx.warnings,
        files: traces.into_iter().map(|t| t.file).collect(),
    })
}

/// Per rank, the start skew `--sync-collectives` gives it: its MPI_Init
/// return on rank 0's clock minus the earliest rank's, us. A rank's
/// simulated run time is then its finish time minus this (what
/// `mpi-tracer compare --start-skew` subtracts).
pub fn start_skews_us(first: &Path) -> Result<Vec<f64>, TraceError> {
    let o = TraceOptions {
        sync_collectives: true,
        ..TraceOptions::default()
    };
    let traces = read_traces(first)?;
    let mut ctx = Ctx {
        o: &o,
        warnings: Vec::new(),
        err: None,
        use_cpu: false,
    };
    Ok(sync_targets(&traces, &mut ctx)?.start)
}
