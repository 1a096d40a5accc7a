//! Choices per library (hand-checked against the rules in ompi.rs and
//! mpich.rs) and per-algorithm message patterns on small communicators.

use super::*;
use crate::goal::GoalWriter;

/// (kind, bytes, peer) of one rank's sends ('s') and receives ('r') in
/// the order written.
type Ops = Vec<(char, i64, i32)>;

fn ops_of(alg: Algorithm, p: i32, count: i64, dsize: i64, root: i32) -> Vec<Ops> {
    ops_of_lib(Library::Ompi, alg, p, count, dsize, root)
}

fn ops_of_lib(lib: Library, alg: Algorithm, p: i32, count: i64, dsize: i64, root: i32) -> Vec<Ops> {
    let call = Call {
        coll: alg.coll(),
        count,
        dsize,
        root,
    };
    let mut w = GoalWriter::new(p as i64, 0, None);
    for me in 0..p {
        w.start_rank(me as i64);
        // As the translator does before every collective.
        w.clear_sets();
        write(&mut w, lib, alg, &call, me, p).unwrap();
        w.end_rank();
    }
    let (text, _) = w.finish();
    let mut out: Vec<Ops> = Vec::new();
    for line in text.lines() {
        if line.starts_with("rank ") {
            out.push(Vec::new());
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() >= 5 && (t[1] == "send" || t[1] == "recv") {
            let bytes: i64 = t[2].trim_end_matches('b').parse().unwrap();
            let peer: i32 = t[4].parse().unwrap();
            out.last_mut()
                .unwrap()
                .push((t[1].as_bytes()[0] as char, bytes, peer));
        }
    }
    assert_eq!(out.len(), p as usize);
    out
}

fn sends(o: &Ops) -> Vec<(i64, i32)> {
    o.iter()
        .filter(|x| x.0 == 's')
        .map(|x| (x.1, x.2))
        .collect()
}
fn recvs(o: &Ops) -> Vec<(i64, i32)> {
    o.iter()
        .filter(|x| x.0 == 'r')
        .map(|x| (x.1, x.2))
        .collect()
}

fn ompi(coll: Coll, p: i64, bytes: i64) -> &'static str {
    choose(Library::Ompi, coll, p, bytes, 1).unwrap().name()
}
fn mpich(coll: Coll, p: i64, count: i64, dsize: i64) -> &'static str {
    choose(Library::Mpich, coll, p, count, dsize)
        .unwrap()
        .name()
}

/// Open MPI 4.1 fixed rules at a few points (commutative branch), read off
/// the tables by hand.
#[test]
fn ompi_choices() {
    // Allreduce, 8..15 ranks: < 8192 B recursive doubling, else Rabenseifner.
    assert_eq!(ompi(Coll::Allreduce, 8, 4), "recursive_doubling");
    assert_eq!(ompi(Coll::Allreduce, 8, 8191), "recursive_doubling");
    assert_eq!(ompi(Coll::Allreduce, 8, 8192), "rabenseifner");
    // 2..3 ranks, 100 KiB: segmented ring (= ring); 4..7 ranks, 8 B: ring.
    assert_eq!(ompi(Coll::Allreduce, 2, 100 << 10), "ring");
    assert_eq!(ompi(Coll::Allreduce, 4, 8), "ring");
    // 128..255 ranks, 1 KiB: nonoverlapping.
    assert_eq!(ompi(Coll::Allreduce, 200, 1024), "nonoverlapping");
    // Alltoall, 8..15 ranks: linear_sync (= linear) below 256 KiB, linear above.
    assert_eq!(ompi(Coll::Alltoall, 8, 1024), "linear");
    assert_eq!(ompi(Coll::Alltoall, 8, 262144), "linear");
    assert_eq!(ompi(Coll::Alltoall, 16, 100), "bruck");
    assert_eq!(ompi(Coll::Alltoall, 64, 600_000), "pairwise");
    // Barrier by communicator size.
    assert_eq!(ompi(Coll::Barrier, 2, 0), "recursive_doubling");
    assert_eq!(ompi(Coll::Barrier, 4, 0), "linear");
    assert_eq!(ompi(Coll::Barrier, 8, 0), "recursive_doubling");
    assert_eq!(ompi(Coll::Barrier, 100, 0), "dissemination");
    assert_eq!(ompi(Coll::Barrier, 300, 0), "tree");
    // Bcast, 8..15 ranks: 100 B knomial, 5000 B binary tree, 20000 B
    // binomial, 1 MiB linear; 4..7 ranks, 100 B binomial.
    assert_eq!(ompi(Coll::Bcast, 8, 100), "knomial");
    assert_eq!(ompi(Coll::Bcast, 8, 5000), "binary_tree");
    assert_eq!(ompi(Coll::Bcast, 8, 20000), "binomial");
    assert_eq!(ompi(Coll::Bcast, 8, 1 << 20), "linear");
    assert_eq!(ompi(Coll::Bcast, 4, 100), "binomial");
    assert_eq!(ompi(Coll::Bcast, 20, 2 << 20), "scatter_rd_allgather");
    // Allgather: two ranks two_proc; < 32 ranks recursive doubling, which
    // is Bruck on a non-power-of-two communicator; 40 ranks, 2000 B neighbour.
    assert_eq!(ompi(Coll::Allgather, 2, 100), "two_proc");
    assert_eq!(ompi(Coll::Allgather, 8, 100), "recursive_doubling");
    assert_eq!(ompi(Coll::Allgather, 6, 100), "bruck");
    assert_eq!(ompi(Coll::Allgather, 40, 2000), "neighbor_exchange");
    // Reduce, Gather, Scatter.
    assert_eq!(ompi(Coll::Reduce, 8, 100), "binary");
    assert_eq!(ompi(Coll::Reduce, 16, 10000), "binomial");
    assert_eq!(ompi(Coll::Reduce, 5, 300_000), "linear");
    assert_eq!(ompi(Coll::Gather, 8, 100), "binomial");
    assert_eq!(ompi(Coll::Scatter, 8, 20000), "linear_nb");
    assert_eq!(ompi(Coll::Scatter, 8, 2 << 20), "linear");
}

/// MPICH's defaults at the thresholds.
#[test]
fn mpich_choices() {
    // Allreduce: <= 2048 B or count < pof2: recursive doubling.
    assert_eq!(mpich(Coll::Allreduce, 8, 512, 4), "recursive_doubling");
    assert_eq!(mpich(Coll::Allreduce, 8, 513, 4), "rabenseifner");
    assert_eq!(mpich(Coll::Allreduce, 8, 4, 1024), "recursive_doubling");
    // Reduce: > 2048 B and count >= pof2: Rabenseifner.
    assert_eq!(mpich(Coll::Reduce, 8, 513, 4), "rabenseifner");
    assert_eq!(mpich(Coll::Reduce, 8, 512, 4), "binomial");
    // Bcast: < 12288 B or < 8 ranks binomial; < 512 KiB and pow2:
    // scatter + recursive doubling; else scatter + ring.
    assert_eq!(mpich(Coll::Bcast, 8, 12287, 1), "binomial");
    assert_eq!(mpich(Coll::Bcast, 8, 12288, 1), "scatter_rd_allgather");
    assert_eq!(mpich(Coll::Bcast, 6, 20000, 1), "binomial");
    assert_eq!(mpich(Coll::Bcast, 12, 20000, 1), "scatter_ring_allgather");
    assert_eq!(mpich(Coll::Bcast, 8, 524288, 1), "scatter_ring_allgather");
    // Alltoall: <= 256 B and >= 8 ranks Bruck; <= 32 KiB scattered; pairwise.
    assert_eq!(mpich(Coll::Alltoall, 8, 256, 1), "bruck");
    assert_eq!(mpich(Coll::Alltoall, 8, 257, 1), "scattered");
    assert_eq!(mpich(Coll::Alltoall, 4, 100, 1), "scattered");
    assert_eq!(mpich(Coll::Alltoall, 8, 32768, 1), "scattered");
    assert_eq!(mpich(Coll::Alltoall, 8, 32769, 1), "pairwise");
    // Allgather on the total: < 512 KiB and pow2 recursive doubling;
    // < 80 KiB Bruck; else ring.
    assert_eq!(mpich(Coll::Allgather, 8, 65535, 1), "recursive_doubling");
    assert_eq!(mpich(Coll::Allgather, 8, 65536, 1), "ring");
    assert_eq!(mpich(Coll::Allgather, 6, 1000, 1), "bruck");
    assert_eq!(mpich(Coll::Allgather, 6, 20000, 1), "ring");
    assert_eq!(mpich(Coll::Barrier, 8, 0, 0), "dissemination");
    assert_eq!(mpich(Coll::Gather, 8, 10, 1), "binomial");
    assert_eq!(mpich(Coll::Scatter, 8, 10, 1), "binomial");
}

#[test]
fn library_names() {
    assert_eq!(Library::by_name("ompi-tuned"), Some(Library::Ompi));
    assert_eq!(Library::by_name("mpich"), Some(Library::Mpich));
    assert_eq!(Library::by_name("textbook"), Some(Library::Textbook));
    assert_eq!(Library::by_name("intel"), None);
    assert!(choose(Library::Textbook, Coll::Bcast, 8, 1, 1).is_none());
}

/// Every send has its receive: for every algorithm on 1..=13 ranks and a
/// few roots and sizes, the multiset of (from, to, bytes) sent equals the
/// one received, and no rank talks to itself.
#[test]
fn every_algorithm_matches_sends_and_receives() {
    for &alg in Algorithm::ALL {
        for p in 1..=13 {
            for &(count, dsize) in &[(1i64, 4i64), (13, 8), (1000, 1)] {
                for (lib, root) in [
                    (Library::Ompi, 0),
                    (Library::Ompi, p - 1),
                    (Library::Ompi, p / 2),
                    (Library::Mpich, 0),
                ] {
                    let ops = ops_of_lib(lib, alg, p, count, dsize, root);
                    let mut sent = Vec::new();
                    let mut got = Vec::new();
                    for (me, o) in ops.iter().enumerate() {
                        for &(k, b, peer) in o {
                            assert_ne!(peer, me as i32, "{alg:?} p={p}: rank {me} talks to itself");
                            assert!((0..p).contains(&peer), "{alg:?} p={p}: peer {peer}");
                            if k == 's' {
                                sent.push((me as i32, peer, b));
                            } else {
                                got.push((peer, me as i32, b));
                            }
                        }
                    }
                    sent.sort();
                    got.sort();
                    assert_eq!(sent, got, "{alg:?} p={p} count={count} root={root}");
                }
            }
        }
    }
}

/// Recursive doubling on 8 ranks: 3 rounds, partner r ^ 2^k, whole vector.
#[test]
fn allreduce_recursive_doubling_8() {
    let o = ops_of(Algorithm::AllreduceRecursiveDoubling, 8, 10, 4, 0);
    for (r, ops) in o.iter().enumerate() {
        let r = r as i32;
        assert_eq!(sends(ops), vec![(40, r ^ 1), (40, r ^ 2), (40, r ^ 4)]);
        assert_eq!(recvs(ops), vec![(40, r ^ 1), (40, r ^ 2), (40, r ^ 4)]);
    }
    // 6 ranks: rem 2; ranks 0 and 2 hand over to 1 and 3 and get the
    // result back; 1, 3, 4, 5 (new ranks 0..3) do two rounds.
    let o = ops_of(Algorithm::AllreduceRecursiveDoubling, 6, 1, 4, 0);
    assert_eq!(o[0], vec![('s', 4, 1), ('r', 4, 1)]);
    // Rank 1 = new 0: partners new 1 (rank 3) and new 2 (rank 4).
    assert_eq!(sends(&o[1]), vec![(4, 3), (4, 4), (4, 0)]);
    assert_eq!(sends(&o[5]), vec![(4, 4), (4, 3)]);
}

/// Rabenseifner on 8 ranks, 8 elements of 4 B: halving sends 16, 8, 4 B to
/// r^1, r^2, r^4; the allgather sends 4, 8, 16 B back in reverse order.
#[test]
fn allreduce_rabenseifner_8() {
    let o = ops_of(Algorithm::AllreduceRabenseifner, 8, 8, 4, 0);
    for (r, ops) in o.iter().enumerate() {
        let r = r as i32;
        assert_eq!(
            sends(ops),
            vec![
                (16, r ^ 1),
                (8, r ^ 2),
                (4, r ^ 4),
                (4, r ^ 4),
                (8, r ^ 2),
                (16, r ^ 1)
            ]
        );
    }
}

/// Ring on 4 ranks, 10 elements of 1 B: blocks 3,3,2,2; 2(p-1) = 6 steps to
/// the right neighbour; rank 0 sends blocks 0,3,2 then 1,0,3.
#[test]
fn allreduce_ring_4() {
    let o = ops_of(Algorithm::AllreduceRing, 4, 10, 1, 0);
    assert_eq!(
        sends(&o[0]),
        vec![(3, 1), (2, 1), (2, 1), (3, 1), (3, 1), (2, 1)]
    );
    assert_eq!(
        recvs(&o[0]).iter().map(|x| x.1).collect::<Vec<_>>(),
        vec![3; 6]
    );
    let total: i64 = o.iter().flat_map(sends).map(|x| x.0).sum();
    // Every rank sends each of the other p-1 blocks twice (scatter+gather)
    // minus its own: 2 * (p-1)/p * 10 B per rank on average, 60 B in all.
    assert_eq!(total, 60);
}

/// Dissemination barrier on 8 ranks: 3 rounds, to r+2^k, from r-2^k, 0 B.
#[test]
fn barrier_dissemination_8() {
    let o = ops_of(Algorithm::BarrierDissemination, 8, 0, 0, 0);
    for (r, ops) in o.iter().enumerate() {
        let r = r as i32;
        assert_eq!(
            sends(ops),
            vec![(0, (r + 1) % 8), (0, (r + 2) % 8), (0, (r + 4) % 8)]
        );
        assert_eq!(
            recvs(ops),
            vec![(0, (r + 7) % 8), (0, (r + 6) % 8), (0, (r + 4) % 8)]
        );
    }
}

/// Recursive-doubling barrier on 5 ranks: rank 4 reports to 0 and waits;
/// 0..3 do two rounds.
#[test]
fn barrier_recursive_doubling_5() {
    let o = ops_of(Algorithm::BarrierRecursiveDoubling, 5, 0, 0, 0);
    assert_eq!(o[4], vec![('s', 0, 0), ('r', 0, 0)]);
    assert_eq!(
        o[0],
        vec![
            ('r', 0, 4),
            ('s', 0, 1),
            ('r', 0, 1),
            ('s', 0, 2),
            ('r', 0, 2),
            ('s', 0, 4)
        ]
    );
    assert_eq!(
        o[3],
        vec![('s', 0, 2), ('r', 0, 2), ('s', 0, 1), ('r', 0, 1)]
    );
}

/// Tree barrier on 5 ranks: fan-in 1->0, 3->2, 2->0, 4->0; fan-out mirrored.
#[test]
fn barrier_tree_5() {
    let o = ops_of(Algorithm::BarrierTree, 5, 0, 0, 0);
    assert_eq!(
        o[0],
        vec![
            ('r', 0, 1),
            ('r', 0, 2),
            ('r', 0, 4),
            ('s', 0, 4),
            ('s', 0, 2),
            ('s', 0, 1)
        ]
    );
    assert_eq!(
        o[2],
        vec![('r', 0, 3), ('s', 0, 0), ('r', 0, 0), ('s', 0, 3)]
    );
    assert_eq!(o[4], vec![('s', 0, 0), ('r', 0, 0)]);
}

/// K-nomial (radix 4) on 8 ranks from root 0: 0 -> 4, 1, 2, 3; 4 -> 5, 6, 7.
#[test]
fn bcast_knomial_8() {
    let o = ops_of(Algorithm::BcastKnomial, 8, 100, 1, 0);
    assert_eq!(sends(&o[0]), vec![(100, 4), (100, 1), (100, 2), (100, 3)]);
    assert_eq!(
        o[4],
        vec![('r', 100, 0), ('s', 100, 5), ('s', 100, 6), ('s', 100, 7)]
    );
    assert_eq!(o[5], vec![('r', 100, 4)]);
    // Root 3 shifts everything by 3.
    let o = ops_of(Algorithm::BcastKnomial, 8, 1, 1, 3);
    assert_eq!(sends(&o[3]), vec![(1, 7), (1, 4), (1, 5), (1, 6)]);
}

/// Binary tree, chain and linear broadcasts on 6 ranks from root 2.
#[test]
fn bcast_trees_6() {
    let o = ops_of(Algorithm::BcastBinary, 6, 8, 1, 2);
    // Relative 0 (rank 2) -> rel 1, 2 (ranks 3, 4); rel 1 -> rel 3, 4 (5, 0).
    assert_eq!(sends(&o[2]), vec![(8, 3), (8, 4)]);
    assert_eq!(o[3], vec![('r', 8, 2), ('s', 8, 5), ('s', 8, 0)]);
    let o = ops_of(Algorithm::BcastChain, 6, 8, 1, 2);
    assert_eq!(o[1], vec![('r', 8, 0)]);
    assert_eq!(o[5], vec![('r', 8, 4), ('s', 8, 0)]);
    let o = ops_of(Algorithm::BcastLinear, 6, 8, 1, 2);
    assert_eq!(sends(&o[2]).len(), 5);
}

/// Scatter + allgather broadcast of 8 B on 8 ranks: the root scatters 4, 2
/// and 1 blocks of 1 B, then every rank gathers the 7 blocks it lacks by
/// recursive doubling (1 + 2 + 4 B).
#[test]
fn bcast_scatter_allgather_8() {
    let o = ops_of(Algorithm::BcastScatterRdAllgather, 8, 8, 1, 0);
    assert_eq!(
        sends(&o[0]),
        vec![(4, 4), (2, 2), (1, 1), (1, 1), (2, 2), (4, 4)]
    );
    let got = |r: usize| recvs(&o[r]).iter().map(|x| x.0).sum::<i64>();
    assert_eq!(got(0), 7);
    // Rank 4 receives its subtree's 4 blocks, then 1 + 2 + 4 in the allgather.
    assert_eq!(recvs(&o[4]), vec![(4, 0), (1, 5), (2, 6), (4, 0)]);
    // Ring variant: 7 steps of 1 B after the scatter.
    let o = ops_of(Algorithm::BcastScatterRingAllgather, 8, 8, 1, 0);
    assert_eq!(recvs(&o[0]).len(), 7);
}

/// Binomial scatter and gather of 1 B per rank on 8 ranks.
#[test]
fn scatter_gather_binomial_8() {
    let o = ops_of(Algorithm::ScatterBinomial, 8, 1, 1, 0);
    assert_eq!(sends(&o[0]), vec![(4, 4), (2, 2), (1, 1)]);
    assert_eq!(o[4], vec![('r', 4, 0), ('s', 2, 6), ('s', 1, 5)]);
    let o = ops_of(Algorithm::GatherBinomial, 8, 1, 1, 0);
    assert_eq!(recvs(&o[0]), vec![(1, 1), (2, 2), (4, 4)]);
    assert_eq!(o[4], vec![('r', 1, 5), ('r', 2, 6), ('s', 4, 0)]);
}

/// Rabenseifner's reduce on 8 ranks, 8 B, root 0: after the halving the
/// root gathers 1, 2 and 4 B from ranks 4, 2 and 1 (largest distance first).
#[test]
fn reduce_rabenseifner_8() {
    let o = ops_of(Algorithm::ReduceRabenseifner, 8, 8, 1, 0);
    assert_eq!(
        recvs(&o[0]),
        vec![(4, 1), (2, 2), (1, 4), (1, 4), (2, 2), (4, 1)]
    );
    assert_eq!(sends(&o[1]), vec![(4, 0), (2, 3), (1, 5), (4, 0)]);
    assert!(sends(&o[0]).len() == 3);
}

/// All-to-all: Bruck on 8 ranks sends 4 blocks at distances 1, 2, 4;
/// pairwise on 4 ranks goes to r+1, r+2, r+3.
#[test]
fn alltoall_bruck_and_pairwise() {
    let o = ops_of(Algorithm::AlltoallBruck, 8, 3, 1, 0);
    assert_eq!(sends(&o[6]), vec![(12, 7), (12, 0), (12, 2)]);
    // 5 ranks: blocks with bit 0 set: 1, 3 -> 2; bit 1: 2, 3 -> 2; bit 2: 4 -> 1.
    let o = ops_of(Algorithm::AlltoallBruck, 5, 1, 1, 0);
    assert_eq!(sends(&o[0]), vec![(2, 1), (2, 2), (1, 4)]);
    let o = ops_of(Algorithm::AlltoallPairwise, 4, 1, 1, 0);
    assert_eq!(
        o[1],
        vec![
            ('s', 1, 2),
            ('r', 1, 0),
            ('s', 1, 3),
            ('r', 1, 3),
            ('s', 1, 0),
            ('r', 1, 2)
        ]
    );
}

/// MPICH's pairwise all-to-all exchanges with `r ^ k` when P is a power
/// of two (rank 0 of 8 sends to and receives from 1, then 2, 3, ... 7) and
/// with `r + k` / `r - k` otherwise; Open MPI's pairwise always uses the
/// latter (rank 0 of 8 sends to 1 and receives from 7 first).
#[test]
fn alltoall_pairwise_mpich_xor_on_powers_of_two() {
    let o = ops_of_lib(Library::Mpich, Algorithm::AlltoallPairwise, 8, 1, 1, 0);
    let want: Ops = (1..8).flat_map(|k| [('s', 1, k), ('r', 1, k)]).collect();
    assert_eq!(o[0], want);
    let want5: Ops = (1..8)
        .flat_map(|k| [('s', 1, 5 ^ k), ('r', 1, 5 ^ k)])
        .collect();
    assert_eq!(o[5], want5);
    let o = ops_of_lib(Library::Ompi, Algorithm::AlltoallPairwise, 8, 1, 1, 0);
    assert_eq!(o[0][..2], [('s', 1, 1), ('r', 1, 7)]);
    // 6 ranks (not a power of two): MPICH also uses r + k / r - k.
    let o = ops_of_lib(Library::Mpich, Algorithm::AlltoallPairwise, 6, 1, 1, 0);
    let want6: Ops = (1..6)
        .flat_map(|k| [('s', 1, k), ('r', 1, (6 - k) % 6)])
        .collect();
    assert_eq!(o[0], want6);
}

/// Allgather: Bruck on 5 ranks sends 1, 2, 1 blocks to r-1, r-2, r-4;
/// neighbour exchange on 6 ranks: 1 block, then 2, 2.
#[test]
fn allgather_bruck_and_neighbor() {
    let o = ops_of(Algorithm::AllgatherBruck, 5, 2, 1, 0);
    assert_eq!(sends(&o[0]), vec![(2, 4), (4, 3), (2, 1)]);
    let o = ops_of(Algorithm::AllgatherNeighbor, 6, 1, 1, 0);
    assert_eq!(sends(&o[0]), vec![(1, 1), (2, 5), (2, 1)]);
    assert_eq!(sends(&o[3]), vec![(1, 2), (2, 4), (2, 2)]);
}

/// Open MPI's nonoverlapping allreduce on 4 ranks, 1 KiB: Reduce (4..7
/// ranks, < 4096 B: binary) to rank 0, then Bcast (4..7 ranks, 128..2047 B:
/// binary tree) from it; the broadcast waits for the reduce.
#[test]
fn allreduce_nonoverlapping_composes() {
    let o = ops_of(Algorithm::AllreduceNonoverlapping, 4, 1024, 1, 0);
    // Binary reduce: 1 <- 3; 0 <- 1, 2. Binary bcast from 0: 0 -> 1, 2; 1 -> 3.
    assert_eq!(
        o[0],
        vec![
            ('r', 1024, 1),
            ('r', 1024, 2),
            ('s', 1024, 1),
            ('s', 1024, 2)
        ]
    );
    assert_eq!(o[3], vec![('s', 1024, 1), ('r', 1024, 1)]);
    let call = Call {
        coll: Coll::Allreduce,
        count: 1024,
        dsize: 1,
        root: 0,
    };
    let mut w = GoalWriter::new(4, 0, None);
    w.start_rank(3);
    w.clear_sets();
    write(
        &mut w,
        Library::Ompi,
        Algorithm::AllreduceNonoverlapping,
        &call,
        3,
        4,
    )
    .unwrap();
    w.end_rank();
    let (text, _) = w.finish();
    assert!(text.contains("l2 requires l1"), "{text}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// Any algorithm, communicator, size and root: either an error (size
    /// out of range) or a schedule whose sends and receives match; never a
    /// panic.
    #[test]
    fn any_call_matches_or_errors(
        a in 0usize..Algorithm::ALL.len(),
        p in 1i32..40,
        count in -2i64..3_000_000_000,
        dsize in -1i64..17,
        root in 0i32..40,
    ) {
        let alg = Algorithm::ALL[a];
        let call = Call { coll: alg.coll(), count, dsize, root };
        let mut w = GoalWriter::new(p as i64, 0, None);
        let mut ok = true;
        for me in 0..p {
            w.start_rank(me as i64);
            w.clear_sets();
            if write(&mut w, Library::Ompi, alg, &call, me, p).is_err() {
                ok = false;
            }
            w.end_rank();
        }
        let bytes = count.checked_mul(dsize);
        if root >= p || count < 0 || dsize < 0 || bytes.is_none_or(|b| b > i32::MAX as i64) {
            proptest::prop_assert!(!ok);
        }
        if ok {
            let (_, counts) = w.finish();
            proptest::prop_assert_eq!(counts.sends, counts.recvs);
        }
    }
}

/// Fewer elements than ranks: the ring and Rabenseifner allreduce fall back
/// to recursive doubling (3 exchanges of the whole 12-byte vector on 8
/// ranks), Rabenseifner's reduce to the binomial tree (root receives 3).
#[test]
fn small_counts_fall_back() {
    for alg in [Algorithm::AllreduceRing, Algorithm::AllreduceRabenseifner] {
        let o = ops_of(alg, 8, 3, 4, 0);
        assert_eq!(sends(&o[5]), vec![(12, 4), (12, 7), (12, 1)], "{alg:?}");
    }
    let o = ops_of(Algorithm::ReduceRabenseifner, 8, 3, 4, 0);
    assert_eq!(recvs(&o[0]).len(), 3);
    assert!(sends(&o[0]).is_empty());
}
