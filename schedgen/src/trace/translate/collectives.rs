//! Collective calls (docs/model/schedgen.md 4.6): a collective over the
//! world becomes its communication pattern (`coll_patterns.rs`) between a
//! start set and an end calc, after the gap; `--traces-nbcify` and the
//! calibration delays are applied around it.

use super::coll_patterns::{library_call, write_collective};
use super::gaps::{Ctx, RankState};
use super::rank::{print_name, CollCount, Flow, Line, RankInfo};
use super::tags::coll_tag;
use crate::collectives::{self, Library};
use crate::goal::{DepKind, GoalWriter};
use crate::trace::reader::{Call, Fields, TraceError};

/// The calls this module translates.
pub(super) fn is_collective(call: Call) -> bool {
    matches!(
        call,
        Call::Barrier
            | Call::Allreduce
            | Call::Iallreduce
            | Call::Bcast
            | Call::Allgather
            | Call::Reduce
            | Call::Alltoall
            | Call::Alltoallv
            | Call::Allgatherv
            | Call::Gather
            | Call::Gatherv
            | Call::Scatter
            | Call::Scatterv
            | Call::ReduceScatter
    )
}

/// A collective's fields relevant to the translation.
pub(super) struct Coll {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) comm_handle: i64,
    pub(super) comm_size: i64,
}

/// The start and end time and the communicator of a collective record.
pub(super) fn coll_fields(call: Call, f: &Fields) -> Result<Coll, String> {
    // (handle field, size field, end field) for the fixed layouts of 4.2;
    // variable layouts (counts arrays) are located from the end of the line.
    let n = f.len() - 1;
    let (h, s, e) = match call {
        Call::Barrier => (2, 4, 5),
        Call::Allreduce => (9, 11, 12),
        Call::Iallreduce => (9, 11, 13),
        Call::Bcast => (8, 10, 11),
        Call::Allgather | Call::Alltoall => (12, 14, 15),
        Call::Reduce => (10, 12, 13),
        Call::Gather | Call::Scatter => (13, 15, 16),
        // comm triple is the last three fields before the end time.
        _ => (n.saturating_sub(3), n.saturating_sub(1), n),
    };
    Ok(Coll {
        start: f.time(1, "start time")?,
        end: f.time(e, "end time")?,
        comm_handle: f.int(h, "communicator handle")?,
        comm_size: f.int(s, "communicator size")?,
    })
}

/// A collective record. Stops the rank (`Flow::Stop`) after the
/// `--traces-nops`-th.
pub(super) fn on_collective(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    colls: &mut CollCount,
    info: &RankInfo,
    line: &Line,
) -> Result<Flow, TraceError> {
    let o = ctx.o;
    let (f, c, at) = (&line.f, line.call, line.at());
    let lerr = |m: String| line.err(m);
    let coll = coll_fields(c, f).map_err(lerr)?;
    if coll.comm_size != info.hn as i64 {
        skip(ctx, colls, info, line, coll.comm_size);
        return Ok(Flow::Next);
    }
    w.set_tag(coll_tag(c, o.raw_tags, coll.comm_handle, st.nops));
    if o.print {
        w.comment(&format!("{} begin", print_name(c)));
    }
    w.clear_sets();
    write_pattern(w, ctx, info, line)?;
    // Sync delay (calibration 4) is taken out of the collective's
    // own duration so the rank's total time is unchanged.
    let sync_us = info
        .sync
        .and_then(|s| s.delays.get(colls.index))
        .copied()
        .unwrap_or(0.0);
    let sync_units = ctx.units(sync_us, at.0, at.1);
    let mut cdur = 0u64;
    let mut c_plain = true;
    if o.durations.is_some() {
        let d = ctx.units(coll.end - coll.start, at.0, at.1);
        let link = ctx.link_units(w.ops_since_clear());
        cdur = d.saturating_sub(link);
        c_plain = false;
    }
    if sync_units > 0 {
        let take = sync_units.min(cdur);
        cdur -= take;
        match st.debt.checked_add(sync_units - take) {
            Some(d) => st.debt = d,
            None => return Err(lerr("synchronisation delays overflow 64 bits".into())),
        }
    }
    let cl = if c_plain {
        w.calc_plain(0)
    } else {
        w.calc_cpu(cdur, o.cpu)
    };
    for x in w.end_set() {
        w.requires(cl, x);
    }
    let start_set = w.start_set();
    for &x in &start_set {
        st.before.push((Some(x), DepKind::Requires));
    }
    let mut vs = coll.start - o.nbcify as f64;
    let mut nbcify = o.nbcify;
    if vs < st.t0 {
        vs = st.t0;
        nbcify = (coll.start - st.t0).trunc() as i64;
    }
    if nbcify < 0 {
        return Err(lerr(format!(
            "the collective starts {} us before the end of the previous call \
             (the times in the trace go backwards)",
            nbcify.unsigned_abs()
        )));
    }
    if nbcify != 0 {
        let n = w.calc_cpu(nbcify as u64, o.cpu);
        w.irequires(n, cl);
    }
    let gap = ctx.close_gap(w, st, vs, coll.end, at);
    if sync_units > 0 {
        let s = w.calc_cpu(sync_units, o.cpu);
        w.requires(s, gap);
        for &x in &start_set {
            w.requires(x, s);
        }
    }
    st.after = vec![(Some(cl), DepKind::Requires)];
    if c == Call::Iallreduce {
        let req = f.time(12, "request").map_err(lerr)?;
        st.pending.insert(req as u64, cl);
    }
    st.nops += 1;
    colls.index += 1;
    if o.print {
        w.comment(&format!("{} end", print_name(c)));
    }
    Ok(if o.nops > 0 && st.nops >= o.nops {
        Flow::Stop
    } else {
        Flow::Next
    })
}

/// A collective over another communicator than the world's size (only
/// the world is translated): warned about once per rank, here the first,
/// the rest counted (see `rank::warn_skipped`).
fn skip(ctx: &mut Ctx, colls: &mut CollCount, info: &RankInfo, line: &Line, size: i64) {
    colls.skipped += 1;
    if info.e == 0 && colls.skipped == 1 {
        ctx.warnings.push(format!(
            "{}:{}: {} over a communicator of size {} skipped \
             (only {} trace file(s))",
            line.file.display(),
            line.no,
            line.canonical,
            size,
            info.hn
        ));
    }
}

/// Writes the collective's pattern: the textbook algorithm, or the one
/// `--collectives` chooses (with a warning, once, where it is approximated).
fn write_pattern(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    info: &RankInfo,
    line: &Line,
) -> Result<(), TraceError> {
    let lerr = |m: String| line.err(m);
    let (c, f, total) = (line.call, &line.f, info.total);
    let lib = ctx.o.collectives;
    let chosen = if lib == Library::Textbook {
        None
    } else {
        library_call(c, f, total).map_err(lerr)?
    };
    match chosen {
        Some(call) => {
            let alg = collectives::choose(lib, call.coll, total as i64, call.count, call.dsize)
                .expect("a library set chooses");
            if let Some(note) = alg.approximation() {
                let msg = format!("{}: {note}", line.canonical);
                if !ctx.warnings.contains(&msg) {
                    ctx.warnings.push(msg);
                }
            }
            collectives::write(w, lib, alg, &call, info.me_block as i32, total).map_err(lerr)?;
        }
        None => write_collective(w, c, f, info.me_block as i32, total).map_err(lerr)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{block, translate_texts};
    use super::super::TraceOptions;

    fn rank(barriers: &[&str]) -> String {
        let mut s = "MPI_Init:-:1000:2000:100\n".to_string();
        for b in barriers {
            s += b;
            s += "\n";
        }
        s + "MPI_Finalize:400:-\n"
    }

    #[test]
    fn a_barrier_between_its_gap_and_its_end_calc() {
        // Dissemination over 2 ranks: one message of 1 byte each way, tag
        // 1000000 (the first collective, communicator 0); the end calc 0
        // requires both, both require the gap 100..220 us.
        let r = rank(&["MPI_Barrier:220:0,0,2:230"]);
        assert_eq!(
            block(&[&r, &r], &TraceOptions::default(), 0),
            "l1: send 1b to 1 tag 1000000\nl2: recv 1b from 1 tag 1000000\nl3: calc 0\n\
             l3 requires l1\nl3 requires l2\nl4: calc 120000\nl1 requires l4\nl2 requires l4\n\
             l5: calc 170000\nl5 requires l3\n"
        );
    }

    #[test]
    fn nops_stops_the_rank_after_that_many_collectives() {
        let r = rank(&["MPI_Barrier:220:0,0,2:230", "MPI_Barrier:240:0,0,2:250"]);
        let o = TraceOptions {
            nops: 1,
            ..TraceOptions::default()
        };
        let b = block(&[&r, &r], &o, 0);
        assert!(
            b.ends_with("l4: calc 120000\nl1 requires l4\nl2 requires l4\n"),
            "{b}"
        );
        // the second collective's tag is 1000001
        let b = block(&[&r, &r], &TraceOptions::default(), 0);
        assert!(
            b.contains("l5: send 1b to 1 tag 1000001\nl6: recv 1b from 1 tag 1000001\n"),
            "{b}"
        );
    }

    #[test]
    fn collectives_over_other_communicators_are_skipped_with_one_warning() {
        let r = rank(&[
            "MPI_Barrier:220:0,0,4:230",
            "MPI_Barrier:240:0,0,4:250",
            "MPI_Barrier:260:0,0,4:270",
        ]);
        let t = translate_texts(&[&r, &r], &TraceOptions::default()).unwrap();
        let w0: Vec<&String> = t.warnings.iter().filter(|w| w.contains("rank-0")).collect();
        assert_eq!(
            w0,
            [
                "t/pmpi-trace-rank-0.txt:2: MPI_Barrier over a communicator of size 4 skipped \
                 (only 2 trace file(s))",
                "t/pmpi-trace-rank-0.txt: 2 more collective(s) over a communicator of another \
                 size than 2 skipped",
            ]
        );
        // nothing but the gap from Init to Finalize
        assert_eq!(
            super::super::testutil::rank_block(&t.goal, 0),
            "l1: calc 300000\n"
        );
    }
}
