//! Open MPI's `coll/tuned` fixed decision rules as data.
//!
//! Source of the numbers: `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`
//! of the decision-function rewrite of 2020 ("the new default fixed
//! decision functions were generated based off of results that were
//! gathered using the ompi-collectives-tuning package"), the rules of
//! Open MPI 4.1.x and 5.0.x (this machine traces with Open MPI 4.1.4). The
//! numbers were read from the file in Open MPI's main repository; the
//! installed 4.1.4 lists the same algorithm numbers (`ompi_info --param
//! coll tuned --level 9`), its thresholds were not compared line by line.
//! Only the thresholds and the algorithm numbers are taken; the tables
//! below are written out from them. The branches for commutative
//! operations are used: a liballprof trace does not record whether a
//! reduction operation commutes, and the predefined operations (MPI_SUM,
//! MPI_MAX, ...) all do.
//!
//! Each table: rows `(P_below, [(bytes_below, alg), ...], alg_otherwise)`,
//! checked in order: the first row with `P < P_below` applies, then the
//! first entry with `bytes < bytes_below`, else `alg_otherwise`. The byte
//! count is, as in Open MPI: `count * datatype size` for Allreduce, Bcast
//! and Reduce; the per-rank block (`scount * size`) for Allgather and
//! Alltoall; the per-rank block for Gather and Scatter.
//!
//! Algorithm numbers are Open MPI's (`coll_tuned_<coll>_algorithm` MCA
//! values); [`super::Algorithm::from_ompi`] maps them.

/// One decision table (see the module documentation).
pub type Table = &'static [(i64, &'static [(i64, u8)], u8)];

const MAXP: i64 = i64::MAX;

/// Allreduce, commutative operations. 1 basic_linear, 2 nonoverlapping,
/// 3 recursive_doubling, 4 ring, 5 segmented_ring, 6 rabenseifner.
pub const ALLREDUCE: Table = &[
    (
        4,
        &[
            (8, 4),
            (4096, 3),
            (8192, 4),
            (16384, 3),
            (65536, 4),
            (262144, 5),
        ],
        6,
    ),
    (8, &[(16, 4), (8192, 3)], 6),
    (16, &[(8192, 3)], 6),
    (32, &[(64, 5), (4096, 3)], 6),
    (64, &[(128, 5)], 6),
    (128, &[(262144, 3)], 6),
    (256, &[(131072, 2), (262144, 3)], 6),
    (512, &[(4096, 2)], 6),
    (2048, &[(2048, 2), (16384, 3)], 6),
    (4096, &[(2048, 2), (4096, 5), (16384, 3)], 6),
    (MAXP, &[(2048, 2), (16384, 5), (32768, 3)], 6),
];

/// Alltoall. 1 linear, 2 pairwise, 3 modified_bruck, 4 linear_sync,
/// 5 two_proc.
pub const ALLTOALL: Table = &[
    (
        3,
        &[
            (2, 2),
            (4, 5),
            (16, 2),
            (64, 5),
            (256, 2),
            (4096, 5),
            (32768, 2),
            (262144, 4),
            (1048576, 5),
        ],
        2,
    ),
    (
        8,
        &[(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2)],
        1,
    ),
    (16, &[(262144, 4)], 1),
    (
        32,
        &[
            (4, 4),
            (512, 3),
            (8192, 4),
            (32768, 1),
            (262144, 4),
            (524288, 1),
        ],
        4,
    ),
    (64, &[(512, 3), (524288, 1)], 4),
    (128, &[(1024, 3), (2048, 1), (4096, 4), (262144, 1)], 2),
    (256, &[(1024, 3), (2048, 4), (262144, 1)], 2),
    (512, &[(1024, 3), (8192, 4), (32768, 1)], 2),
    (
        1024,
        &[(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1)],
        2,
    ),
    (
        2048,
        &[(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1)],
        4,
    ),
    (4096, &[(1024, 3), (4096, 4), (8192, 1), (131072, 4)], 1),
    (
        MAXP,
        &[(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1)],
        4,
    ),
];

/// Barrier (communicator size only). 1 linear, 2 double_ring,
/// 3 recursive_doubling, 4 bruck, 5 two_proc, 6 tree.
pub const BARRIER: Table = &[
    (4, &[], 3),
    (8, &[], 1),
    (64, &[], 3),
    (256, &[], 4),
    (512, &[], 6),
    (1024, &[], 4),
    (4096, &[], 6),
    (MAXP, &[], 4),
];

/// Bcast. 1 basic_linear, 2 chain, 3 pipeline, 4 split_binary_tree,
/// 5 binary_tree, 6 binomial, 7 knomial, 8 scatter_allgather,
/// 9 scatter_allgather_ring.
pub const BCAST: Table = &[
    (
        4,
        &[
            (32, 3),
            (256, 5),
            (512, 3),
            (1024, 7),
            (32768, 1),
            (131072, 5),
            (262144, 2),
            (524288, 1),
            (1048576, 6),
        ],
        5,
    ),
    (
        8,
        &[(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1)],
        2,
    ),
    (16, &[(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6)], 1),
    (32, &[(4096, 7), (1048576, 6)], 8),
    (64, &[(2048, 6)], 7),
    (128, &[], 7),
    (256, &[(2, 6), (16384, 5), (32768, 1), (65536, 5)], 7),
    (1024, &[(16384, 7), (32768, 4)], 7),
    (2048, &[(524288, 7)], 8),
    (4096, &[(262144, 7)], 8),
    (MAXP, &[(8192, 7), (16384, 5), (262144, 7)], 8),
];

/// Reduce, commutative operations. 1 linear, 2 chain, 3 pipeline,
/// 4 binary, 5 binomial, 6 in-order_binary, 7 rabenseifner.
pub const REDUCE: Table = &[
    (
        4,
        &[
            (8, 7),
            (16, 4),
            (32, 3),
            (262144, 1),
            (524288, 3),
            (1048576, 2),
        ],
        3,
    ),
    (
        8,
        &[
            (4096, 4),
            (65536, 2),
            (262144, 5),
            (524288, 1),
            (1048576, 5),
        ],
        1,
    ),
    (16, &[(8192, 4)], 5),
    (32, &[(4096, 4)], 5),
    (256, &[], 5),
    (512, &[(8192, 5), (16384, 6)], 5),
    (2048, &[], 5),
    (4096, &[(512, 5), (1024, 6), (8192, 5), (16384, 6)], 5),
    (
        MAXP,
        &[
            (16, 5),
            (32, 6),
            (1024, 5),
            (2048, 6),
            (8192, 5),
            (16384, 6),
        ],
        5,
    ),
];

/// Allgather (per-rank block). 1 linear, 2 bruck, 3 recursive_doubling,
/// 4 ring, 5 neighbor, 6 two_proc.
pub const ALLGATHER: Table = &[
    (3, &[], 6),
    (32, &[], 3),
    (64, &[(1024, 3), (65536, 5)], 4),
    (128, &[(512, 3), (65536, 5)], 4),
    (256, &[(512, 3), (131072, 5), (524288, 4), (1048576, 5)], 4),
    (
        512,
        &[
            (32, 3),
            (128, 2),
            (1024, 3),
            (131072, 5),
            (524288, 4),
            (1048576, 5),
        ],
        4,
    ),
    (1024, &[(64, 3), (256, 2), (2048, 3)], 5),
    (
        2048,
        &[
            (4, 3),
            (8, 2),
            (16, 3),
            (32, 2),
            (256, 3),
            (512, 2),
            (4096, 3),
        ],
        5,
    ),
    (4096, &[(32, 2), (128, 3), (512, 2), (4096, 3)], 5),
    (MAXP, &[(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3)], 5),
];

/// Gather (per-rank block). 1 basic_linear, 2 binomial, 3 linear_sync.
pub const GATHER: Table = &[
    (4, &[(2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2)], 3),
    (8, &[(1024, 2), (8192, 1), (32768, 2), (262144, 1)], 3),
    (256, &[], 2),
    (512, &[(2048, 2), (8192, 1)], 2),
    (MAXP, &[], 2),
];

/// Scatter (per-rank block). 1 basic_linear, 2 binomial, 3 linear_nb.
pub const SCATTER: Table = &[
    (4, &[(2, 3), (131072, 1), (262144, 3)], 1),
    (
        8,
        &[(2048, 2), (4096, 1), (8192, 2), (32768, 1), (1048576, 3)],
        1,
    ),
    (16, &[(16384, 2), (1048576, 3)], 1),
    (32, &[(16384, 2), (32768, 1)], 3),
    (64, &[(512, 2), (8192, 3), (16384, 2)], 3),
    (MAXP, &[(512, 2)], 3),
];

/// Looks up Open MPI's algorithm number for `p` ranks and `bytes`.
pub fn lookup(t: Table, p: i64, bytes: i64) -> u8 {
    for &(pb, entries, otherwise) in t {
        if p < pb {
            return entries
                .iter()
                .find(|&&(b, _)| bytes < b)
                .map_or(otherwise, |&(_, a)| a);
        }
    }
    unreachable!("every table ends with an unbounded row")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thresholds of every table increase (a typo in the data would make a
    /// row unreachable) and the last row is unbounded.
    #[test]
    fn tables_are_ordered() {
        for t in [
            ALLREDUCE, ALLTOALL, BARRIER, BCAST, REDUCE, ALLGATHER, GATHER, SCATTER,
        ] {
            assert_eq!(t.last().unwrap().0, MAXP);
            for w in t.windows(2) {
                assert!(w[0].0 < w[1].0);
            }
            for (_, e, _) in t {
                for w in e.windows(2) {
                    assert!(w[0].0 < w[1].0, "{e:?}");
                }
            }
        }
    }
}
