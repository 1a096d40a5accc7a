//! Computation gaps (docs/model/schedgen.md 4.4): the time between two MPI
//! calls becomes a calc, measured in wall-clock time or in the thread CPU
//! time the tracer records (`--compute`), and the per-rank state the gaps
//! are closed on.

use std::collections::HashMap;
use std::path::Path;

use super::files::RankTrace;
use super::TraceOptions;
use crate::calib::pinning::IntervalSet;
use crate::goal::{DepKind, GoalWriter, Label};
use crate::trace::reader::{Call, TraceError};

/// Per-rank translation state (4.4).
pub(super) struct RankState {
    pub(super) t0: f64,
    pub(super) after: Vec<(Option<Label>, DepKind)>,
    pub(super) before: Vec<(Option<Label>, DepKind)>,
    pub(super) pending: HashMap<u64, Label>,
    pub(super) nops: u64,
    /// Schedule time still to be taken out of later gaps (sync collectives).
    pub(super) debt: u64,
    pub(super) pins: IntervalSet,
    pub(super) init_end: Option<f64>,
    /// Thread CPU time (ns) at the end of the call that started the current
    /// gap (with `Compute::Cpu`; `None` until known).
    pub(super) cpu0: Option<u64>,
    /// The current record's CPU times (ns) at the call and at its return.
    pub(super) rec_cpu: (Option<u64>, Option<u64>),
}

impl RankState {
    pub(super) fn new() -> Self {
        RankState {
            t0: 0.0,
            after: Vec::new(),
            before: Vec::new(),
            pending: HashMap::new(),
            nops: 0,
            debt: 0,
            pins: IntervalSet::new(),
            init_end: None,
            cpu0: None,
            rec_cpu: (None, None),
        }
    }
}

pub(super) struct Ctx<'a> {
    pub(super) o: &'a TraceOptions,
    pub(super) warnings: Vec<String>,
    /// The first error found by a helper that cannot return one (a
    /// negative or too large time); checked after every trace line.
    pub(super) err: Option<TraceError>,
    /// Gaps are measured in thread CPU time (`Compute::Cpu` and every trace
    /// has CPU times).
    pub(super) use_cpu: bool,
}

impl Ctx<'_> {
    /// Converts a trace duration (us) to schedule units, rounding half away
    /// from zero. A negative duration (the trace's times go backwards) or
    /// one that does not fit in 64 bits is an error (recorded in `err`):
    /// the reference wraps it to a huge unsigned value, which gave a
    /// schedule whose times overflow.
    pub(super) fn units(&mut self, us: f64, file: &Path, line: usize) -> u64 {
        let v = (us * self.o.timemult).round();
        if v.is_nan() || v < 0.0 {
            self.fail(TraceError::line(
                file,
                line,
                format!(
                    "negative operation time {v} (the times in the trace go backwards; \
                     the reference would write it as a huge unsigned number)"
                ),
            ));
            0
        } else if v >= u64::MAX as f64 {
            self.fail(TraceError::line(
                file,
                line,
                format!("operation time {v} does not fit in 64 bits"),
            ));
            0
        } else {
            v as u64
        }
    }

    pub(super) fn fail(&mut self, e: TraceError) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Closes a gap at (tb, te) (4.4) and returns the calc's label.
    pub(super) fn close_gap(
        &mut self,
        w: &mut GoalWriter,
        st: &mut RankState,
        tb: f64,
        te: f64,
        at: (&Path, usize),
    ) -> Label {
        let wall = tb - st.t0;
        let us = match (self.use_cpu, st.cpu0, st.rec_cpu.0) {
            // CPU time of the gap, never more than its wall time (the two
            // clocks differ in resolution; a gap cannot use more CPU than
            // time passed on one thread).
            (true, Some(c0), Some(c1)) if wall >= 0.0 => {
                (c1.saturating_sub(c0) as f64 / 1000.0).min(wall)
            }
            _ => wall,
        };
        let mut dur = self.units(us, at.0, at.1);
        if st.debt > 0 && dur < (1u64 << 63) {
            let take = st.debt.min(dur);
            dur -= take;
            st.debt -= take;
        }
        let c = w.calc_cpu(dur, self.o.cpu);
        for (x, k) in st.before.drain(..) {
            if let Some(x) = x {
                w.dep(x, c, k);
            }
        }
        for (y, k) in st.after.drain(..) {
            if let Some(y) = y {
                w.dep(c, y, k);
            }
        }
        st.t0 = te;
        st.cpu0 = st.rec_cpu.1.or(st.rec_cpu.0);
        c
    }
}

/// Whether a trace records thread CPU times: its MPI_Init record ends in
/// `:cpu=...` (the tracer writes them on every record or on none).
pub(super) fn has_cpu_times(tr: &RankTrace) -> bool {
    tr.lines
        .iter()
        .find(|l| l.starts_with("MPI_Init:"))
        .is_some_and(|l| l.contains(":cpu="))
}

/// The `:cpu=C0[:C1]` fields at the end of a record (ns; `-` unknown), by
/// the reader's [`split_cpu_times`](crate::trace::reader::split_cpu_times).
/// `Ok(None)` when the record has none.
pub(super) fn record_cpu(line: &str) -> Result<Option<crate::trace::reader::CpuTimes>, String> {
    crate::trace::reader::split_cpu_times(line)
        .map(|(_, c)| c)
        .map_err(|e| e.msg)
}

/// The CPU times of a record when the trace has them: every MPI call
/// record carries `:cpu=` (an ignored call may lack it).
#[allow(clippy::type_complexity)]
pub(super) fn cpu_times_of(line: &str, call: Call) -> Result<(Option<u64>, Option<u64>), String> {
    match record_cpu(line)? {
        Some(c) => Ok(c),
        None if call == Call::Ignored => Ok((None, None)),
        None => Err(
            "no `:cpu=` fields on this record although the trace's MPI_Init has \
                     them (a damaged trace; --compute wall ignores them)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::block;
    use super::super::{Compute, TraceOptions};
    use super::*;

    #[test]
    fn cpu_fields_of_a_record() {
        assert_eq!(record_cpu("MPI_Barrier:1:0,0,1:2"), Ok(None));
        assert_eq!(
            record_cpu("MPI_Barrier:1:0,0,1:2:cpu=100:200"),
            Ok(Some((Some(100), Some(200))))
        );
        assert_eq!(record_cpu("X:cpu=-:5"), Ok(Some((None, Some(5)))));
        assert_eq!(record_cpu("X:cpu=7"), Ok(Some((Some(7), None))));
        assert!(record_cpu("X:cpu=1:2:3").is_err());
        assert!(record_cpu("X:cpu=1.5:2").is_err());
        assert_eq!(cpu_times_of("MPI_Foo:1", Call::Ignored), Ok((None, None)));
        assert!(cpu_times_of("MPI_Barrier:1:0,0,1:2", Call::Barrier).is_err());
    }

    /// One rank: Init (CPU 2000 ns at return), a barrier over itself at
    /// 220..230 us (CPU 5000 ns at the call, 6000 at return), Finalize at
    /// 400 us (CPU 9000 ns).
    const CPU_TRACE: &str = "MPI_Init:-:1000:2000:100:cpu=1000:2000\n\
                             MPI_Barrier:220:0,0,1:230:cpu=5000:6000\n\
                             MPI_Finalize:400:-:cpu=9000:9500\n";

    #[test]
    fn gaps_in_wall_or_cpu_time() {
        // wall: 220 - 100 and 400 - 230 us
        let wall = TraceOptions::default();
        assert_eq!(
            block(&[CPU_TRACE], &wall, 0),
            "l1: calc 0\nl2: calc 120000\nl3: calc 170000\nl3 requires l1\n"
        );
        // CPU: 5000 - 2000 and 9000 - 6000 ns
        let cpu = TraceOptions {
            compute: Compute::Cpu,
            ..TraceOptions::default()
        };
        assert_eq!(
            block(&[CPU_TRACE], &cpu, 0),
            "l1: calc 0\nl2: calc 3000\nl3: calc 3000\nl3 requires l1\n"
        );
    }

    #[test]
    fn units_round_and_reject_negative_times() {
        let o = TraceOptions::default();
        let mut ctx = Ctx {
            o: &o,
            warnings: Vec::new(),
            err: None,
            use_cpu: false,
        };
        let p = Path::new("t");
        assert_eq!(ctx.units(1.0005, p, 1), 1001);
        assert_eq!(ctx.units(0.0004, p, 1), 0);
        assert!(ctx.err.is_none());
        assert_eq!(ctx.units(-1.0, p, 3), 0);
        assert!(ctx
            .err
            .take()
            .unwrap()
            .to_string()
            .contains("negative operation time"));
        assert_eq!(ctx.units(1e30, p, 4), 0);
        assert!(ctx.err.is_some());
    }
}
