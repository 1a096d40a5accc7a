//! The collective algorithms of `trace2goal --collectives ompi|mpich`
//! (schedgen::collectives) run under the LogGP engine: every algorithm
//! completes on small communicators, and two cases to a hand-derived
//! finish time.

use loggopsim::engine::{Params, Sim};
use loggopsim::goal::parse_str;
use loggopsim::network::LogGp;
use schedgen::collectives::{write, Algorithm, Call, Library};
use schedgen::goal::GoalWriter;

fn schedule(alg: Algorithm, p: i32, count: i64, dsize: i64, root: i32) -> String {
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
        write(&mut w, Library::Ompi, alg, &call, me, p).unwrap();
        w.end_rank();
    }
    w.finish().0
}

fn finish_times(text: &str) -> Vec<u64> {
    let s = parse_str("coll.goal", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let mut sim = Sim::new(s, Params::default(), LogGp::new()).unwrap();
    sim.run().unwrap();
    let r = sim.report();
    assert!(
        r.ok(),
        "leftovers {:?}, incomplete {}\n{text}",
        r.leftovers,
        r.incomplete_ops
    );
    r.finish_times.clone()
}

/// Every algorithm runs to completion (all messages matched, nothing
/// left) on 2..=12 ranks, eager (100 B) and rendezvous (100 KiB) sizes.
#[test]
fn every_algorithm_completes() {
    for &alg in Algorithm::ALL {
        for p in 2..=12 {
            for count in [100i64, 100 << 10] {
                finish_times(&schedule(alg, p, count, 1, p / 3));
            }
        }
    }
}

/// Recursive-doubling allreduce of 10 B on 4 ranks with the engine's
/// defaults L=2500 o=1500 g=1000 G=6 O=0 (tests/engine_cases.rs). Each
/// round is a symmetric exchange: send at t (CPU until t+o), arrival at
/// t+o+L, receive done at t+o+L+o+(10-1)G = t+5554; the next round needs
/// both operations, so 2 rounds end at 11108 on every rank.
#[test]
fn recursive_doubling_allreduce_time() {
    let t = finish_times(&schedule(
        Algorithm::AllreduceRecursiveDoubling,
        4,
        10,
        1,
        0,
    ));
    assert_eq!(t, vec![11108; 4]);
}

/// Ring allreduce of 8 elements of 4 B on 4 ranks: 2(p-1) = 6 steps of one
/// 8-byte block each; a step is the same exchange as above with 8 B:
/// o + L + o + 7G = 5542, so 6 x 5542 = 33252 on every rank.
#[test]
fn ring_allreduce_time() {
    let t = finish_times(&schedule(Algorithm::AllreduceRing, 4, 8, 4, 0));
    assert_eq!(t, vec![33252; 4]);
}

/// Dissemination barrier on 8 ranks (zero-byte messages): 3 rounds of
/// o + L + o = 5500 each (no G term for 0 bytes): 16500.
#[test]
fn dissemination_barrier_time() {
    let t = finish_times(&schedule(Algorithm::BarrierDissemination, 8, 0, 0, 0));
    assert_eq!(t, vec![16500; 8]);
}
