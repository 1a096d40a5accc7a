//! One rank's translation (docs/model/schedgen.md 4.4-4.7): its records
//! in order, each recognised, filtered by the options, its CPU times read,
//! and handed to the step of its call (`p2p.rs`, `requests.rs`,
//! `collectives.rs`; MPI_Init and MPI_Finalize here).

use std::collections::HashMap;
use std::path::Path;

use super::collectives::{is_collective, on_collective};
use super::files::RankTrace;
use super::gaps::{cpu_times_of, Ctx, RankState};
use super::p2p::{is_p2p, on_send_recv, on_sendrecv};
use super::requests::on_wait;
use super::TraceOptions;
use crate::goal::{DepKind, GoalWriter};
use crate::trace::reader::{self, lines_from, recognise, Call, Fields, Recognised, TraceError};

/// Calibration 4's plan for one rank (`sync.rs`).
#[derive(Clone, Copy)]
pub(super) struct RankSync<'a> {
    /// Its start skew, us.
    pub(super) start: f64,
    /// The delay before each translated collective, us.
    pub(super) delays: &'a [f64],
    /// Line of a blocking Send/Recv -> time from the call's start to its
    /// operation, us.
    pub(super) p2p: &'a HashMap<usize, f64>,
}

/// What stays the same over one rank's translation.
pub(super) struct RankInfo<'a> {
    pub(super) tr: &'a RankTrace,
    /// The extrapolation copy (0: the traced ranks themselves; warnings
    /// are given for copy 0 only).
    pub(super) e: usize,
    /// The number of trace files.
    pub(super) hn: usize,
    /// This rank in the schedule.
    pub(super) me_block: i64,
    /// Ranks in the schedule (trace files x extrapolation factor).
    pub(super) total: i32,
    /// The first rank of this copy: a trace's peers are shifted by it.
    pub(super) off: i32,
    pub(super) sync: Option<RankSync<'a>>,
}

/// Per rank: the collectives seen so far.
#[derive(Default)]
pub(super) struct CollCount {
    /// Translated ones (the index into the synchronisation delays).
    pub(super) index: usize,
    /// Skipped ones (over a communicator of another size).
    pub(super) skipped: usize,
}

/// One MPI call record, recognised.
pub(super) struct Line<'a> {
    pub(super) no: usize,
    pub(super) call: Call,
    pub(super) canonical: &'static str,
    pub(super) f: Fields<'a>,
    pub(super) file: &'a Path,
}

impl Line<'_> {
    /// File and line, for the helpers that record an error.
    pub(super) fn at(&self) -> (&Path, usize) {
        (self.file, self.no)
    }

    pub(super) fn err(&self, m: String) -> TraceError {
        TraceError::line(self.file, self.no, m)
    }
}

/// Whether the rank continues after a record.
pub(super) enum Flow {
    Next,
    /// `--traces-nops` reached: the rank ends here.
    Stop,
}

/// Translates rank `h` of extrapolation copy `e`; returns where it stopped
/// early (`--traces-nops`): the byte offset after the last record read
/// and its t0, for `--traces-start`.
#[allow(clippy::too_many_arguments)]
pub(super) fn translate_rank(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    tr: &RankTrace,
    h: usize,
    e: usize,
    hn: usize,
    sync: Option<RankSync>,
    start: Option<(u64, f64)>,
) -> Result<Option<(u64, f64)>, TraceError> {
    let info = RankInfo {
        tr,
        e,
        hn,
        me_block: (h + hn * e) as i64,
        total: (hn * ctx.o.extr as usize) as i32,
        off: (hn * e) as i32,
        sync,
    };
    w.start_rank(info.me_block);
    let mut st = RankState::new();
    let mut colls = CollCount::default();
    let mut stop = None;
    let mut pending_t0 = start.map(|(_, t)| t);
    for (idx, rec) in records(tr, start).enumerate() {
        if let Some(e) = ctx.err.take() {
            return Err(e);
        }
        if idx == 1 {
            if let Some(t) = pending_t0.take() {
                st.t0 = t;
                // The saved position has no CPU time: that gap is wall time.
                st.cpu0 = None;
            }
        }
        let Some((call, canonical)) = recognise_call(ctx, &info, &rec)? else {
            continue;
        };
        if filtered_out(ctx.o, call) {
            continue;
        }
        if ctx.use_cpu {
            st.rec_cpu = cpu_times_of(rec.text, call)
                .map_err(|m| TraceError::line(&tr.file, rec.lineno, m))?;
        }
        let line = Line {
            no: rec.lineno,
            call,
            canonical,
            f: Fields::split(rec.text),
            file: &tr.file,
        };
        if let Flow::Stop = dispatch(w, ctx, &mut st, &mut colls, &info, &line)? {
            stop = Some((rec.end, st.t0));
            break;
        }
    }
    if let Some(e) = ctx.err.take() {
        return Err(e);
    }
    warn_skipped(ctx, &info, colls.skipped);
    w.end_rank();
    Ok(stop)
}

/// The records of a trace. With --traces-start, the first line is
/// processed, then reading jumps to the saved offset (4.7).
fn records<'t>(
    tr: &'t RankTrace,
    start: Option<(u64, f64)>,
) -> Box<dyn Iterator<Item = reader::Line<'t>> + 't> {
    match start {
        Some((off, _)) => Box::new(
            lines_from(&tr.text, 0)
                .take(1)
                .chain(lines_from(&tr.text, off as usize)),
        ),
        None => Box::new(lines_from(&tr.text, 0)),
    }
}

/// The call of a record, or none for a line that is no call and for an
/// unknown call (a warning, or an error with `--strict`). A known call
/// under another name than its canonical one is warned about.
fn recognise_call(
    ctx: &mut Ctx,
    info: &RankInfo,
    rec: &reader::Line,
) -> Result<Option<(Call, &'static str)>, TraceError> {
    let (o, tr, lineno, line) = (ctx.o, info.tr, rec.lineno, rec.text);
    let lerr = |m: String| TraceError::line(&tr.file, lineno, m);
    let (call, canonical) = match recognise(line).map_err(lerr)? {
        Recognised::Known { call, canonical } => (call, canonical),
        Recognised::NotACall => return Ok(None),
        Recognised::Unknown(name) => {
            let msg = format!(
                "{}:{lineno}: unknown MPI call `{name}` ignored",
                tr.file.display()
            );
            if o.strict {
                return Err(lerr(format!("unknown MPI call `{name}` (--strict)")));
            }
            if info.e == 0 {
                ctx.warnings.push(msg);
            }
            return Ok(None);
        }
    };
    let name = line.split(':').next().unwrap_or("");
    if name != canonical
        && info.e == 0
        && !(name == "MPI_Ssend" || name.len() > 14 && canonical.starts_with(&name[..14]))
    {
        ctx.warnings.push(format!(
            "{}:{lineno}: `{name}` is treated as {canonical} (same function number in the reference)",
            tr.file.display()
        ));
    }
    Ok(Some((call, canonical)))
}

/// `--nop2p` and `--nocolls` drop their calls entirely.
fn filtered_out(o: &TraceOptions, call: Call) -> bool {
    o.nop2p && is_p2p(call) || o.nocolls && is_collective(call)
}

/// Hands a record to the step of its call.
fn dispatch(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    colls: &mut CollCount,
    info: &RankInfo,
    line: &Line,
) -> Result<Flow, TraceError> {
    match line.call {
        Call::Ignored => {}
        Call::Init => on_init(w, ctx, st, info, line)?,
        Call::Send | Call::Rsend | Call::Recv | Call::Isend | Call::Irecv => {
            on_send_recv(w, ctx, st, info, line)?
        }
        Call::Wait | Call::Waitall => on_wait(w, ctx, st, line)?,
        Call::Sendrecv => on_sendrecv(w, ctx, st, info, line)?,
        Call::Finalize => on_finalize(w, ctx, st, line)?,
        c if is_collective(c) => return on_collective(w, ctx, st, colls, info, line),
        _ => {}
    }
    Ok(Flow::Next)
}

/// MPI_Init: the first gap starts when it returns (and, with calibration
/// 4, after the rank's start skew).
fn on_init(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    info: &RankInfo,
    line: &Line,
) -> Result<(), TraceError> {
    let lerr = |m: String| line.err(m);
    // The reference asserts t0 == 0 here (a second Init aborts it,
    // except right after a --traces-start jump to offset 0).
    if st.init_end.is_some() && st.t0 != 0.0 {
        return Err(lerr("second MPI_Init in this trace".into()));
    }
    let end = line.f.time(4, "end time").map_err(lerr)?;
    st.t0 = end;
    st.cpu0 = st.rec_cpu.1.or(st.rec_cpu.0);
    st.init_end = Some(end);
    st.after = vec![(None, DepKind::Requires)];
    // Calibration 4: this rank starts when it left MPI_Init on
    // the common clock, so the first gap waits for the skew.
    let skew = info.sync.map_or(0.0, |s| s.start);
    if skew > 0.0 {
        let u = ctx.units(skew, line.file, line.no);
        if u > 0 {
            let c = w.calc_cpu(u, ctx.o.cpu);
            st.after = vec![(Some(c), DepKind::Requires)];
        }
    }
    Ok(())
}

/// MPI_Finalize: the last gap ends where it starts.
fn on_finalize(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    line: &Line,
) -> Result<(), TraceError> {
    let start = line.f.time(1, "start time").map_err(|m| line.err(m))?;
    st.before = vec![(None, DepKind::Requires)];
    ctx.close_gap(w, st, start, start, line.at());
    Ok(())
}

/// The collectives skipped after the first (which was warned about).
fn warn_skipped(ctx: &mut Ctx, info: &RankInfo, skipped: usize) {
    if skipped > 1 && info.e == 0 {
        ctx.warnings.push(format!(
            "{}: {} more collective(s) over a communicator of another size than {} skipped",
            info.tr.file.display(),
            skipped - 1,
            info.hn
        ));
    }
}

/// Display name used in the `--traces-print` comments.
pub(super) fn print_name(call: Call) -> &'static str {
    match call {
        Call::Send => "Send",
        Call::Rsend => "Rsend",
        Call::Recv => "Recv",
        Call::Isend => "Isend",
        Call::Irecv => "Irecv",
        Call::Sendrecv => "Sendrecv",
        Call::Barrier => "Barrier",
        Call::Allreduce => "Allreduce",
        Call::Iallreduce => "Iallreduce",
        Call::Bcast => "Bcast",
        Call::Allgather => "Allgather",
        Call::Reduce => "Reduce",
        Call::Alltoall => "Alltoall",
        Call::Alltoallv => "Alltoallv",
        Call::Allgatherv => "Allgatherv",
        Call::Gather => "Gather",
        Call::Gatherv => "Gatherv",
        Call::Scatter => "Scatter",
        Call::Scatterv => "Scatterv",
        Call::ReduceScatter => "Reduce_scatter",
        _ => "call",
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{block, translate_texts, warnings_then_error};
    use super::*;

    #[test]
    fn unknown_and_aliased_calls() {
        let r0 = "MPI_Init:-:1000:2000:100\nMPI_Frobnicate:1:2\nMPI_Finalize:400:-\n";
        let (warnings, e) = warnings_then_error(r0, |o| o.strict = true);
        assert_eq!(
            warnings,
            ["t/pmpi-trace-rank-0.txt:2: unknown MPI call `MPI_Frobnicate` ignored"]
        );
        assert_eq!(
            e.to_string(),
            "t/pmpi-trace-rank-0.txt:2: unknown MPI call `MPI_Frobnicate` (--strict)"
        );
    }

    #[test]
    fn options_drop_calls() {
        let r0 = "MPI_Init:-:1000:2000:100\n\
                  MPI_Send:110:4096:10:11,8,8:0:7:0,0,1:115\n\
                  MPI_Barrier:220:0,0,1:230\n\
                  MPI_Finalize:400:-\n";
        let nop2p = TraceOptions {
            nop2p: true,
            ..TraceOptions::default()
        };
        assert_eq!(
            block(&[r0], &nop2p, 0),
            "l1: calc 0\nl2: calc 120000\nl3: calc 170000\nl3 requires l1\n"
        );
        let nocolls = TraceOptions {
            nocolls: true,
            ..TraceOptions::default()
        };
        assert_eq!(
            block(&[r0], &nocolls, 0),
            "l1: send 80b to 0 tag 7\nl2: calc 10000\nl1 requires l2\n\
             l3: calc 285000\nl3 requires l1\n"
        );
    }

    #[test]
    fn a_second_init_is_an_error() {
        let r0 = "MPI_Init:-:1000:2000:100\nMPI_Init:-:1000:2000:200\n";
        let e = translate_texts(&[r0], &TraceOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t/pmpi-trace-rank-0.txt:2: second MPI_Init in this trace"
        );
    }
}
