//! MPICH's default collective algorithm selection as data.
//!
//! Source: MPICH 3.3's `MPIR_<Coll>_intra_auto` selection functions and the
//! defaults of the control variables they read (the `MPIR_CVAR_*` blocks
//! of `src/mpi/coll/<coll>/<coll>.c`); MPICH 4's default JSON selection
//! keeps these choices for a flat communicator. The thresholds are the
//! variables' documented defaults; the logic is restated here, not copied.
//! Reductions assume a commutative operation (see [`super::ompi`]).

use super::algorithms::pof2_floor;
use super::{Algorithm, Coll};

/// MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE: at most this many bytes use
/// recursive doubling.
pub const ALLREDUCE_SHORT_MSG_SIZE: i64 = 2048;
/// MPIR_CVAR_REDUCE_SHORT_MSG_SIZE: above this, Rabenseifner's reduce.
pub const REDUCE_SHORT_MSG_SIZE: i64 = 2048;
/// MPIR_CVAR_BCAST_SHORT_MSG_SIZE: below this, binomial.
pub const BCAST_SHORT_MSG_SIZE: i64 = 12288;
/// MPIR_CVAR_BCAST_LONG_MSG_SIZE: below this (and power-of-two P),
/// scatter + recursive-doubling allgather.
pub const BCAST_LONG_MSG_SIZE: i64 = 524288;
/// MPIR_CVAR_BCAST_MIN_PROCS: fewer ranks always use binomial.
pub const BCAST_MIN_PROCS: i64 = 8;
/// MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE: per-rank blocks of at most this many
/// bytes use Bruck (with at least ALLTOALL_MIN_PROCS ranks).
pub const ALLTOALL_SHORT_MSG_SIZE: i64 = 256;
/// MPIR_CVAR_ALLTOALL_MIN_PROCS.
pub const ALLTOALL_MIN_PROCS: i64 = 8;
/// MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE: up to this, throttled isend/irecv.
pub const ALLTOALL_MEDIUM_MSG_SIZE: i64 = 32768;
/// MPIR_CVAR_ALLTOALL_THROTTLE: requests per batch of the medium algorithm.
pub const ALLTOALL_THROTTLE: i64 = 32;
/// MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE (total bytes gathered).
pub const ALLGATHER_SHORT_MSG_SIZE: i64 = 81920;
/// MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE (total bytes gathered).
pub const ALLGATHER_LONG_MSG_SIZE: i64 = 524288;

/// The algorithm MPICH picks for `coll` on `p` ranks with `count` elements
/// of `dsize` bytes (per rank for Allgather, Alltoall, Gather, Scatter).
pub fn choose(coll: Coll, p: i64, count: i64, dsize: i64) -> Algorithm {
    use Algorithm as A;
    let bytes = count.saturating_mul(dsize);
    let pow2 = pof2_floor(p.clamp(1, i32::MAX as i64) as i32) as i64 == p;
    let pof2 = pof2_floor(p.clamp(1, i32::MAX as i64) as i32) as i64;
    match coll {
        // MPIR_Barrier_intra_dissemination.
        Coll::Barrier => A::BarrierDissemination,
        // Short or fewer elements than the power of two: recursive
        // doubling; else reduce-scatter + allgather.
        Coll::Allreduce => {
            if bytes <= ALLREDUCE_SHORT_MSG_SIZE || count < pof2 {
                A::AllreduceRecursiveDoubling
            } else {
                A::AllreduceRabenseifner
            }
        }
        Coll::Reduce => {
            if bytes > REDUCE_SHORT_MSG_SIZE && count >= pof2 {
                A::ReduceRabenseifner
            } else {
                A::ReduceBinomial
            }
        }
        Coll::Bcast => {
            if bytes < BCAST_SHORT_MSG_SIZE || p < BCAST_MIN_PROCS {
                A::BcastBinomial
            } else if bytes < BCAST_LONG_MSG_SIZE && pow2 {
                A::BcastScatterRdAllgather
            } else {
                A::BcastScatterRingAllgather
            }
        }
        Coll::Alltoall => {
            if bytes <= ALLTOALL_SHORT_MSG_SIZE && p >= ALLTOALL_MIN_PROCS {
                A::AlltoallBruck
            } else if bytes <= ALLTOALL_MEDIUM_MSG_SIZE {
                A::AlltoallScattered
            } else {
                A::AlltoallPairwise
            }
        }
        Coll::Allgather => {
            let total = bytes.saturating_mul(p);
            if total < ALLGATHER_LONG_MSG_SIZE && pow2 {
                A::AllgatherRecursiveDoubling
            } else if total < ALLGATHER_SHORT_MSG_SIZE {
                A::AllgatherBruck
            } else {
                A::AllgatherRing
            }
        }
        Coll::Gather => A::GatherBinomial,
        Coll::Scatter => A::ScatterBinomial,
    }
}
