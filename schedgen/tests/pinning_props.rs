//! Property tests of the pinning interval set against a naive byte bitmap.

use proptest::prelude::*;
use schedgen::calib::pinning::IntervalSet;

const SPACE: u64 = 512;

fn buffers() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0..SPACE, 0..128u64), 1..40)
}

proptest! {
    #[test]
    fn union_semantics_match_a_bitmap(bufs in buffers()) {
        let mut set = IntervalSet::new();
        let mut bitmap = vec![false; (SPACE + 128) as usize];
        for (start, len) in bufs {
            let naive_new = (start..start + len).filter(|&b| !bitmap[b as usize]).count() as u64;
            for b in start..start + len {
                bitmap[b as usize] = true;
            }
            let got = set.insert(start, len);
            prop_assert_eq!(got, naive_new);
            prop_assert!(got <= len, "new bytes never exceed the buffer size");
            prop_assert_eq!(set.covered_bytes(), bitmap.iter().filter(|&&x| x).count() as u64);
            // Stored intervals are disjoint, sorted and do not touch.
            let iv = set.intervals();
            for w in iv.windows(2) {
                prop_assert!(w[0].1 < w[1].0, "{:?}", iv);
            }
            for (s, e) in iv {
                prop_assert!(s < e);
            }
        }
    }

    #[test]
    fn a_repeated_buffer_adds_nothing(bufs in buffers(), pick in 0usize..40) {
        let mut set = IntervalSet::new();
        for &(s, l) in &bufs {
            set.insert(s, l);
        }
        let (s, l) = bufs[pick % bufs.len()];
        let before = set.clone();
        prop_assert_eq!(set.insert(s, l), 0);
        prop_assert_eq!(set, before);
    }

    #[test]
    fn order_does_not_change_the_union(mut bufs in buffers()) {
        let mut a = IntervalSet::new();
        let total_a: u64 = bufs.iter().map(|&(s, l)| a.insert(s, l)).sum();
        bufs.reverse();
        let mut b = IntervalSet::new();
        let total_b: u64 = bufs.iter().map(|&(s, l)| b.insert(s, l)).sum();
        prop_assert_eq!(total_a, total_b);
        prop_assert_eq!(a, b);
    }
}
