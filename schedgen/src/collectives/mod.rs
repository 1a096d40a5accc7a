//! Collectives as MPI libraries run them (`trace2goal --collectives`).
//!
//! The trace translator turns each traced collective call into messages.
//! `textbook` (the default) uses LogGOPSim's algorithms of docs/model/schedgen.md
//! (dissemination for Barrier, Allreduce and Allgather, binomial trees for
//! Bcast and Reduce, linear exchange for Alltoall, linear Gather/Scatter).
//! `ompi` and `mpich` use the algorithm the library would pick for that
//! call's size and communicator size, from the decision rules in
//! [`ompi`] and [`mpich`] (one module per library, the rules as data), and
//! write it with the generators in [`algorithms`]. docs/prediction.md
//! lists the rules and what is approximated.

pub mod algorithms;
pub mod mpich;
pub mod ompi;

use crate::goal::GoalWriter;
use algorithms as a;

/// Which collective algorithms the translation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Library {
    /// LogGOPSim's algorithms (docs/model/schedgen.md), as before.
    #[default]
    Textbook,
    /// Open MPI's coll/tuned fixed decision rules.
    Ompi,
    /// MPICH's default selection.
    Mpich,
}

/// Names accepted by [`Library::by_name`].
pub const LIBRARY_NAMES: &[&str] = &["textbook", "ompi", "ompi-tuned", "mpich"];

impl Library {
    pub fn by_name(s: &str) -> Option<Self> {
        match s {
            "textbook" => Some(Library::Textbook),
            "ompi" | "ompi-tuned" | "openmpi" => Some(Library::Ompi),
            "mpich" => Some(Library::Mpich),
            _ => None,
        }
    }
}

/// The collectives with library decision rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coll {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Allgather,
    Alltoall,
    Gather,
    Scatter,
}

/// A collective algorithm with a sub-schedule generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    BarrierRecursiveDoubling,
    BarrierDissemination,
    BarrierLinear,
    BarrierDoubleRing,
    BarrierTree,
    /// Two ranks: one exchange (barrier, allgather, alltoall "two_proc").
    TwoProc,
    BcastLinear,
    /// Open MPI chain (fan-out taken as 1) and pipeline with one segment.
    BcastChain,
    BcastBinary,
    /// Open MPI split binary tree: written as a binary tree (approximation).
    BcastSplitBinary,
    BcastBinomial,
    /// K-nomial tree, Open MPI's default radix 4.
    BcastKnomial,
    BcastScatterRdAllgather,
    BcastScatterRingAllgather,
    ReduceLinear,
    ReduceChain,
    ReduceBinary,
    ReduceBinomial,
    ReduceRabenseifner,
    AllreduceRecursiveDoubling,
    /// Ring (Open MPI's segmented ring with segment size 0 is the ring).
    AllreduceRing,
    AllreduceRabenseifner,
    /// Open MPI: Reduce to rank 0 then Bcast from it, each as Open MPI's
    /// rules pick them.
    AllreduceNonoverlapping,
    AllgatherRecursiveDoubling,
    AllgatherBruck,
    AllgatherRing,
    AllgatherNeighbor,
    AlltoallLinear,
    AlltoallPairwise,
    AlltoallBruck,
    /// MPICH's throttled isend/irecv (batches of 32).
    AlltoallScattered,
    GatherLinear,
    GatherLinearSync,
    GatherBinomial,
    ScatterLinear,
    ScatterLinearNb,
    ScatterBinomial,
}

/// Open MPI's default k-nomial radix (`coll_tuned_bcast_knomial_radix`).
pub const OMPI_KNOMIAL_RADIX: i64 = 4;

impl Algorithm {
    /// Short name (docs, warnings, tests).
    pub fn name(self) -> &'static str {
        use Algorithm::*;
        match self {
            BarrierRecursiveDoubling => "recursive_doubling",
            BarrierDissemination => "dissemination",
            BarrierLinear => "linear",
            BarrierDoubleRing => "double_ring",
            BarrierTree => "tree",
            TwoProc => "two_proc",
            BcastLinear => "linear",
            BcastChain => "chain",
            BcastBinary => "binary_tree",
            BcastSplitBinary => "split_binary_tree",
            BcastBinomial => "binomial",
            BcastKnomial => "knomial",
            BcastScatterRdAllgather => "scatter_rd_allgather",
            BcastScatterRingAllgather => "scatter_ring_allgather",
            ReduceLinear => "linear",
            ReduceChain => "chain",
            ReduceBinary => "binary",
            ReduceBinomial => "binomial",
            ReduceRabenseifner => "rabenseifner",
            AllreduceRecursiveDoubling => "recursive_doubling",
            AllreduceRing => "ring",
            AllreduceRabenseifner => "rabenseifner",
            AllreduceNonoverlapping => "nonoverlapping",
            AllgatherRecursiveDoubling => "recursive_doubling",
            AllgatherBruck => "bruck",
            AllgatherRing => "ring",
            AllgatherNeighbor => "neighbor_exchange",
            AlltoallLinear => "linear",
            AlltoallPairwise => "pairwise",
            AlltoallBruck => "bruck",
            AlltoallScattered => "scattered",
            GatherLinear => "linear",
            GatherLinearSync => "linear_sync",
            GatherBinomial => "binomial",
            ScatterLinear => "linear",
            ScatterLinearNb => "linear_nb",
            ScatterBinomial => "binomial",
        }
    }

    /// Open MPI's algorithm number of `coll` as an algorithm here. Notes
    /// on the mapping (Open MPI passes segment size 0 and fan-out 0 from
    /// its fixed rules): segmented ring with one segment is the ring;
    /// pipeline with one segment is the chain; linear_sync all-to-all with
    /// the default `coll_tuned_alltoall_max_requests` 0 posts all requests,
    /// i.e. the linear all-to-all; in-order binary reduce has the binary
    /// tree's shape; recursive-doubling allgather on a non-power-of-two
    /// communicator is Bruck (as in Open MPI).
    pub fn from_ompi(coll: Coll, alg: u8, p: i64) -> Algorithm {
        use Algorithm::*;
        let pow2 = p > 0 && (p & (p - 1)) == 0;
        match (coll, alg) {
            (Coll::Barrier, 1) => BarrierLinear,
            (Coll::Barrier, 2) => BarrierDoubleRing,
            (Coll::Barrier, 3) => BarrierRecursiveDoubling,
            (Coll::Barrier, 4) => BarrierDissemination,
            (Coll::Barrier, 5) => TwoProc,
            (Coll::Barrier, _) => BarrierTree,
            (Coll::Bcast, 1) => BcastLinear,
            (Coll::Bcast, 2 | 3) => BcastChain,
            (Coll::Bcast, 4) => BcastSplitBinary,
            (Coll::Bcast, 5) => BcastBinary,
            (Coll::Bcast, 6) => BcastBinomial,
            (Coll::Bcast, 7) => BcastKnomial,
            (Coll::Bcast, 8) => BcastScatterRdAllgather,
            (Coll::Bcast, _) => BcastScatterRingAllgather,
            (Coll::Reduce, 1) => ReduceLinear,
            (Coll::Reduce, 2 | 3) => ReduceChain,
            (Coll::Reduce, 4 | 6) => ReduceBinary,
            (Coll::Reduce, 5) => ReduceBinomial,
            (Coll::Reduce, _) => ReduceRabenseifner,
            (Coll::Allreduce, 2) => AllreduceNonoverlapping,
            (Coll::Allreduce, 3) => AllreduceRecursiveDoubling,
            (Coll::Allreduce, 4 | 5) => AllreduceRing,
            (Coll::Allreduce, _) => AllreduceRabenseifner,
            (Coll::Allgather, 2) => AllgatherBruck,
            (Coll::Allgather, 3) if pow2 => AllgatherRecursiveDoubling,
            (Coll::Allgather, 3) => AllgatherBruck,
            (Coll::Allgather, 4) => AllgatherRing,
            (Coll::Allgather, 5) => AllgatherNeighbor,
            (Coll::Allgather, _) => TwoProc,
            (Coll::Alltoall, 1 | 4) => AlltoallLinear,
            (Coll::Alltoall, 2) => AlltoallPairwise,
            (Coll::Alltoall, 3) => AlltoallBruck,
            (Coll::Alltoall, _) => TwoProc,
            (Coll::Gather, 1) => GatherLinear,
            (Coll::Gather, 2) => GatherBinomial,
            (Coll::Gather, _) => GatherLinearSync,
            (Coll::Scatter, 1) => ScatterLinear,
            (Coll::Scatter, 2) => ScatterBinomial,
            (Coll::Scatter, _) => ScatterLinearNb,
        }
    }

    /// Every algorithm (tests, documentation).
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::BarrierRecursiveDoubling,
        Algorithm::BarrierDissemination,
        Algorithm::BarrierLinear,
        Algorithm::BarrierDoubleRing,
        Algorithm::BarrierTree,
        Algorithm::TwoProc,
        Algorithm::BcastLinear,
        Algorithm::BcastChain,
        Algorithm::BcastBinary,
        Algorithm::BcastSplitBinary,
        Algorithm::BcastBinomial,
        Algorithm::BcastKnomial,
        Algorithm::BcastScatterRdAllgather,
        Algorithm::BcastScatterRingAllgather,
        Algorithm::ReduceLinear,
        Algorithm::ReduceChain,
        Algorithm::ReduceBinary,
        Algorithm::ReduceBinomial,
        Algorithm::ReduceRabenseifner,
        Algorithm::AllreduceRecursiveDoubling,
        Algorithm::AllreduceRing,
        Algorithm::AllreduceRabenseifner,
        Algorithm::AllreduceNonoverlapping,
        Algorithm::AllgatherRecursiveDoubling,
        Algorithm::AllgatherBruck,
        Algorithm::AllgatherRing,
        Algorithm::AllgatherNeighbor,
        Algorithm::AlltoallLinear,
        Algorithm::AlltoallPairwise,
        Algorithm::AlltoallBruck,
        Algorithm::AlltoallScattered,
        Algorithm::GatherLinear,
        Algorithm::GatherLinearSync,
        Algorithm::GatherBinomial,
        Algorithm::ScatterLinear,
        Algorithm::ScatterLinearNb,
        Algorithm::ScatterBinomial,
    ];

    /// The collective the algorithm implements.
    pub fn coll(self) -> Coll {
        use Algorithm::*;
        match self {
            BarrierRecursiveDoubling
            | BarrierDissemination
            | BarrierLinear
            | BarrierDoubleRing
            | BarrierTree => Coll::Barrier,
            TwoProc => Coll::Alltoall,
            BcastLinear
            | BcastChain
            | BcastBinary
            | BcastSplitBinary
            | BcastBinomial
            | BcastKnomial
            | BcastScatterRdAllgather
            | BcastScatterRingAllgather => Coll::Bcast,
            ReduceLinear | ReduceChain | ReduceBinary | ReduceBinomial | ReduceRabenseifner => {
                Coll::Reduce
            }
            AllreduceRecursiveDoubling
            | AllreduceRing
            | AllreduceRabenseifner
            | AllreduceNonoverlapping => Coll::Allreduce,
            AllgatherRecursiveDoubling | AllgatherBruck | AllgatherRing | AllgatherNeighbor => {
                Coll::Allgather
            }
            AlltoallLinear | AlltoallPairwise | AlltoallBruck | AlltoallScattered => Coll::Alltoall,
            GatherLinear | GatherLinearSync | GatherBinomial => Coll::Gather,
            ScatterLinear | ScatterLinearNb | ScatterBinomial => Coll::Scatter,
        }
    }

    /// A note when the sub-schedule is an approximation of the algorithm.
    pub fn approximation(self) -> Option<&'static str> {
        match self {
            Algorithm::BcastSplitBinary => Some(
                "Open MPI's split binary tree broadcast is written as a binary tree broadcast \
                 of the whole message (the halves and their final exchange are not modelled)",
            ),
            _ => None,
        }
    }
}

/// The algorithm `lib` picks for `coll` on `p` ranks; `count` elements of
/// `dsize` bytes (for Allgather, Alltoall, Gather, Scatter: per rank).
/// None for the textbook set (the translator keeps its own mapping).
pub fn choose(lib: Library, coll: Coll, p: i64, count: i64, dsize: i64) -> Option<Algorithm> {
    let bytes = count.saturating_mul(dsize);
    match lib {
        Library::Textbook => None,
        Library::Mpich => Some(mpich::choose(coll, p, count, dsize)),
        Library::Ompi => {
            let t = match coll {
                Coll::Barrier => ompi::BARRIER,
                Coll::Bcast => ompi::BCAST,
                Coll::Reduce => ompi::REDUCE,
                Coll::Allreduce => ompi::ALLREDUCE,
                Coll::Allgather => ompi::ALLGATHER,
                Coll::Alltoall => ompi::ALLTOALL,
                Coll::Gather => ompi::GATHER,
                Coll::Scatter => ompi::SCATTER,
            };
            Some(Algorithm::from_ompi(coll, ompi::lookup(t, p, bytes), p))
        }
    }
}

/// One collective call as the generators need it.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub coll: Coll,
    /// Elements (per rank for Allgather, Alltoall, Gather, Scatter).
    pub count: i64,
    /// Bytes per element.
    pub dsize: i64,
    /// Root of rooted collectives (else 0).
    pub root: i32,
}

/// Writes rank `me`'s part of `alg` for `call` on `p` ranks. `lib` is used
/// by composed algorithms (Open MPI's nonoverlapping allreduce picks its
/// reduce and bcast by the same rules). The writer's start and end sets
/// must have been cleared for this rank's part (as the translator does
/// before every collective): composed algorithms read them.
pub fn write(
    w: &mut GoalWriter,
    lib: Library,
    alg: Algorithm,
    call: &Call,
    me: i32,
    p: i32,
) -> Result<(), String> {
    use Algorithm::*;
    let n = call
        .count
        .checked_mul(call.dsize)
        .ok_or_else(|| "collective size overflows 64 bits".to_string())?;
    // The translator's limit (a C int, as the reference): it also keeps
    // every product of a block and a rank count inside 64 bits.
    if n > i32::MAX as i64 || call.count < 0 || call.dsize < 0 {
        return Err(format!(
            "collective of {} x {} bytes: sizes must be non-negative and at most {} bytes",
            call.count,
            call.dsize,
            i32::MAX
        ));
    }
    if !(0..p.max(1)).contains(&call.root) {
        return Err(format!("root {} is outside 0..{}", call.root, p - 1));
    }
    let (root, c, d) = (call.root, call.count, call.dsize);
    if p <= 1 {
        // One rank: no messages.
        return Ok(());
    }
    match alg {
        BarrierRecursiveDoubling => a::barrier_recursive_doubling(w, me, p),
        BarrierDissemination => a::barrier_dissemination(w, me, p),
        BarrierLinear => a::barrier_linear(w, me, p),
        BarrierDoubleRing => a::barrier_double_ring(w, me, p),
        BarrierTree => a::barrier_tree(w, me, p),
        TwoProc => a::exchange_pair(w, me, p, if call.coll == Coll::Barrier { 0 } else { n }),
        BcastLinear => a::bcast_linear(w, me, p, root, n),
        BcastChain => a::bcast_chain(w, me, p, root, n),
        BcastBinary | BcastSplitBinary => a::bcast_binary(w, me, p, root, n),
        BcastBinomial => {
            crate::patterns::binomial_bcast(w, me, p, root, sz(n)?);
            Ok(())
        }
        BcastKnomial => a::bcast_knomial(w, me, p, root, n, OMPI_KNOMIAL_RADIX),
        BcastScatterRdAllgather => a::bcast_scatter_allgather(w, me, p, root, n, false),
        BcastScatterRingAllgather => a::bcast_scatter_allgather(w, me, p, root, n, true),
        ReduceLinear => a::reduce_linear(w, me, p, root, n),
        ReduceChain => a::reduce_chain(w, me, p, root, n),
        ReduceBinary => a::reduce_binary(w, me, p, root, n),
        ReduceBinomial => {
            crate::patterns::binomial_reduce(w, me, p, root, sz(n)?);
            Ok(())
        }
        ReduceRabenseifner => a::reduce_rabenseifner(w, me, p, root, c, d),
        AllreduceRecursiveDoubling => a::allreduce_recursive_doubling(w, me, p, n),
        AllreduceRing => a::allreduce_ring(w, me, p, c, d),
        AllreduceRabenseifner => a::allreduce_rabenseifner(w, me, p, c, d),
        AllreduceNonoverlapping => {
            let sub = |coll| Call {
                coll,
                root: 0,
                ..*call
            };
            let r = choose(lib, Coll::Reduce, p as i64, c, d).unwrap_or(ReduceBinomial);
            let b = choose(lib, Coll::Bcast, p as i64, c, d).unwrap_or(BcastBinomial);
            let first = w.last_label();
            write(w, lib, r, &sub(Coll::Reduce), me, p)?;
            let mid = w.last_label();
            write(w, lib, b, &sub(Coll::Bcast), me, p)?;
            // The Bcast starts when this rank's part of the Reduce is done.
            let ends: Vec<_> = w
                .end_set()
                .into_iter()
                .filter(|&l| l > first && l <= mid)
                .collect();
            let starts: Vec<_> = w.start_set().into_iter().filter(|&l| l > mid).collect();
            for &s in &starts {
                for &e in &ends {
                    w.requires(s, e);
                }
            }
            Ok(())
        }
        AllgatherRecursiveDoubling => a::allgather_recursive_doubling(w, me, p, n),
        AllgatherBruck => a::allgather_bruck(w, me, p, n),
        AllgatherRing => a::allgather_ring(w, me, p, n),
        AllgatherNeighbor => a::allgather_neighbor(w, me, p, n),
        AlltoallLinear => {
            crate::patterns::linear_alltoall(w, me, p, sz(n)?);
            Ok(())
        }
        AlltoallPairwise => a::alltoall_pairwise(w, me, p, n, lib == Library::Mpich),
        AlltoallBruck => a::alltoall_bruck(w, me, p, n),
        AlltoallScattered => a::alltoall_scattered(w, me, p, n, mpich::ALLTOALL_THROTTLE),
        GatherLinear => a::gather_linear(w, me, p, root, n, false),
        GatherLinearSync => a::gather_linear(w, me, p, root, n, true),
        GatherBinomial => a::gather_binomial(w, me, p, root, n),
        ScatterLinear => a::scatter_linear(w, me, p, root, n, false),
        ScatterLinearNb => a::scatter_linear(w, me, p, root, n, true),
        ScatterBinomial => a::scatter_binomial(w, me, p, root, n),
    }
}

fn sz(bytes: i64) -> Result<i32, String> {
    i32::try_from(bytes).map_err(|_| {
        format!(
            "a message of {bytes} bytes is larger than {} bytes",
            i32::MAX
        )
    })
}

#[cfg(test)]
mod tests;
