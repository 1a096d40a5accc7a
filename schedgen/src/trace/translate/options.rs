//! The options of trace mode (docs/model/schedgen.md section 1, plus the
//! calibration methods of docs/calibration.md and the CPU/wall measure).

use std::path::PathBuf;

use crate::calib::linkmodel::LinkLayer;
use crate::calib::pinning::PinningModel;
use crate::collectives::Library;
use crate::goal::Prelude;

#[cfg(doc)]
use super::start_skews_us;

/// Options of trace mode (docs/model/schedgen.md section 1 trace options, plus ours).
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// Multiplier from trace time units (microseconds) to schedule units.
    pub timemult: f64,
    /// Stop each rank after this many translated collectives (0 = all).
    pub nops: u64,
    /// Extrapolation factor E (>= 1).
    pub extr: u32,
    /// Debug comments in the GOAL file.
    pub print: bool,
    pub nop2p: bool,
    pub nocolls: bool,
    pub nbcify: i64,
    /// `--cpu`.
    pub cpu: u64,
    pub prelude: Option<Prelude>,
    /// Unknown MPI calls are errors instead of warnings.
    pub strict: bool,
    /// Thesis Schedgen1.1 tags: p2p tags as in the trace, collectives
    /// 1000000 + n (no communicator in the tag).
    pub raw_tags: bool,
    /// Calibration 1: memory pinning calcs before p2p transfers.
    pub pinning: Option<PinningModel>,
    /// Calibration 3: MPI call durations minus the link-layer time of the
    /// network the schedule will be simulated on ([`LinkLayer::None`] for
    /// the LogGOPS backend at zero parameters) as calcs.
    pub durations: Option<LinkLayer>,
    /// Calibration 4: synchronised collectives on the traces' common clock
    /// (absolute times corrected by each file's `# clockdiff:`); each rank
    /// also starts with a calc of its start skew (see [`start_skews_us`]).
    pub sync_collectives: bool,
    /// Calibration 4 for point-to-point: with `durations`, a blocking
    /// Send/Recv pair's operations are placed where both calls overlap on
    /// the common clock (implies the common clock and the start skew).
    pub sync_p2p: bool,
    /// `--collectives`: the textbook algorithms, or those Open MPI / MPICH
    /// would pick for each call (crate::collectives).
    pub collectives: Library,
    /// Fail when the traces declare more ranks than files exist.
    pub require_all: bool,
    /// `--traces-start FILE`: resume positions (read, then rewritten).
    pub start_file: Option<PathBuf>,
    /// `--compute`: how a computation gap between two MPI calls is
    /// measured. [`Compute::Wall`] (the reference's, and this library's
    /// default) or [`Compute::Cpu`] (the thread CPU time the tracer records
    /// beside the wall times; traces without it fall back to wall time with
    /// a warning).
    pub compute: Compute,
}

/// How the computation between two MPI calls is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// The wall-clock gap: next call's start minus the previous call's end.
    Wall,
    /// The thread CPU time used in the gap (the trace's `:cpu=C0:C1`
    /// fields), at most the wall-clock gap. Not inflated when the rank
    /// waited for a core; a rank that sleeps computes nothing.
    Cpu,
}

/// The names `--compute` accepts.
pub const COMPUTE_NAMES: &[&str] = &["cpu", "wall"];

impl Compute {
    pub fn by_name(s: &str) -> Option<Compute> {
        match s {
            "cpu" => Some(Compute::Cpu),
            "wall" => Some(Compute::Wall),
            _ => None,
        }
    }
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            timemult: 1000.0,
            nops: 0,
            extr: 1,
            print: false,
            nop2p: false,
            nocolls: false,
            nbcify: 0,
            cpu: 0,
            prelude: None,
            strict: false,
            raw_tags: false,
            pinning: None,
            durations: None,
            sync_collectives: false,
            sync_p2p: false,
            collectives: Library::Textbook,
            require_all: false,
            start_file: None,
            compute: Compute::Wall,
        }
    }
}
