//! Requests and waits (docs/model/schedgen.md 4.5): a non-blocking call's
//! operation is pending under its request handle until a Wait or Waitall
//! names it; the wait becomes a calc that requires the pending operations.

use super::calib::wait_calc;
use super::gaps::{Ctx, RankState};
use super::rank::Line;
use crate::goal::{DepKind, GoalWriter, Label};
use crate::trace::reader::{Call, TraceError};

/// Wait and Waitall: a calc that requires the pending operations, in
/// place of the call. A Wait whose request is not pending (already
/// completed, or never started in the translated part) is skipped like the
/// reference; a Waitall requires every pending request of its array.
pub(super) fn on_wait(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    line: &Line,
) -> Result<(), TraceError> {
    let (f, at) = (&line.f, line.at());
    let lerr = |m: String| line.err(m);
    let start = f.time(1, "start time").map_err(lerr)?;
    let (end, wc) = if line.call == Call::Waitall {
        let count = f.int(2, "count").map_err(lerr)?;
        let array = f.addr(3, "request array").map_err(lerr)?;
        let end = f.time(5, "end time").map_err(lerr)?;
        let wc = wait_calc(w, ctx, start, end, at);
        for l in pending_in_array(st, array, count) {
            w.requires(wc, l);
        }
        // Reference quirk: only the first request is forgotten.
        st.pending.remove(&array);
        (end, wc)
    } else {
        let req = f.addr(2, "request").map_err(lerr)?;
        let end = f.time(4, "end time").map_err(lerr)?;
        let Some(target) = st.pending.remove(&req) else {
            return Ok(());
        };
        if ctx.o.print {
            w.comment("wait");
        }
        let wc = wait_calc(w, ctx, start, end, at);
        w.requires(wc, target);
        (end, wc)
    };
    st.before = vec![(Some(wc), DepKind::Requires)];
    ctx.close_gap(w, st, start, end, at);
    st.after = vec![(Some(wc), DepKind::Requires)];
    Ok(())
}

/// The requests array[0..count] (8-byte handles) that are pending, in
/// array order. Looked up from the pending side: `count` comes from the
/// trace and may be up to 2^63 (a loop over it hung, found by the fuzz
/// test).
fn pending_in_array(st: &RankState, array: u64, count: i64) -> Vec<Label> {
    let count = count.max(0) as u64;
    let mut hits: Vec<(u64, Label)> = st
        .pending
        .iter()
        .filter_map(|(&req, &l)| {
            let d = req.wrapping_sub(array);
            (d % 8 == 0 && d / 8 < count).then_some((d / 8, l))
        })
        .collect();
    hits.sort_unstable();
    hits.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::block;
    use super::super::TraceOptions;
    use super::*;

    const IDLE: &str = "MPI_Init:-:1000:2000:100\nMPI_Finalize:400:-\n";

    #[test]
    fn a_wait_requires_the_pending_operation() {
        // The Isend (request 7000) lets the rank go on once it started
        // (irequires); the Wait's calc 0 requires the send, and follows the
        // 1 us gap 111..112.
        let r0 = "MPI_Init:-:1000:2000:100\n\
                  MPI_Isend:110:4096:10:11,8,8:1:7:0,0,2:7000:111\n\
                  MPI_Wait:112:7000:-:150\n\
                  MPI_Wait:160:7000:-:170\n\
                  MPI_Finalize:400:-\n";
        assert_eq!(
            block(&[r0, IDLE], &TraceOptions::default(), 0),
            "l1: send 80b to 1 tag 7\nl2: calc 10000\nl1 requires l2\n\
             l3: calc 0\nl3 requires l1\nl4: calc 1000\nl3 requires l4\nl4 irequires l1\n\
             l5: calc 250000\nl5 requires l3\n",
            "the second Wait names a completed request: skipped"
        );
    }

    #[test]
    fn waitall_finds_the_pending_requests_of_its_array() {
        let mut st = RankState::new();
        for (req, l) in [(7016, 3), (7000, 1), (7008, 2), (9001, 4), (7004, 5)] {
            st.pending.insert(req, l);
        }
        assert_eq!(pending_in_array(&st, 7000, 2), vec![1, 2]);
        assert_eq!(pending_in_array(&st, 7000, i64::MAX), vec![1, 2, 3]);
        assert_eq!(pending_in_array(&st, 7000, -1), Vec::<Label>::new());
    }
}
