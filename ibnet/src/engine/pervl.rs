//! Per-VL state of a port's components (the obuf's, ibuf's and arbiter's
//! credit counters): VL 0 inline, VLs 1.. in a boxed slice that exists
//! only when the network has more than one data VL.
//!
//! Why not `[T; 8]`: most networks run one data VL (`maxVL = 0`, every
//! reference scenario but the VL tests), and eight inline copies made a
//! `Port` 1,856 bytes, most of it never touched. Ports are the state a
//! flit hop reads; on large networks (the 1944-node network: 11,664 ports,
//! 21.6 MB of them) that footprint, not the instruction count, sets the
//! pace. With VL 0 inline the port is about half the size, and a lookup of
//! VL 0 costs one well-predicted comparison. Values and order of every
//! update are unchanged, so results are identical (golden tests).

use std::ops::{Index, IndexMut};

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct PerVl<T> {
    first: T,
    /// VLs 1..nvl (empty, no allocation, when nvl = 1)
    rest: Box<[T]>,
}

impl<T: Copy> PerVl<T> {
    /// `nvl` (1..=8) copies of `x`.
    pub(super) fn new(nvl: usize, x: T) -> PerVl<T> {
        debug_assert!((1..=8).contains(&nvl));
        PerVl {
            first: x,
            rest: vec![x; nvl.saturating_sub(1)].into_boxed_slice(),
        }
    }

    /// The VLs in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }

    /// The VLs in order, mutably.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        std::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }
}

impl<T> Index<usize> for PerVl<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, v: usize) -> &T {
        if v == 0 {
            &self.first
        } else {
            &self.rest[v - 1]
        }
    }
}

impl<T> IndexMut<usize> for PerVl<T> {
    #[inline(always)]
    fn index_mut(&mut self, v: usize) -> &mut T {
        if v == 0 {
            &mut self.first
        } else {
            &mut self.rest[v - 1]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PerVl;

    #[test]
    fn holds_each_vl_separately_in_order() {
        for nvl in 1..=8 {
            let mut p = PerVl::new(nvl, 0u64);
            assert_eq!(p.iter().count(), nvl);
            for v in 0..nvl {
                p[v] += 10 * v as u64 + 1;
            }
            for v in 0..nvl {
                p[v] += 1;
            }
            let got: Vec<u64> = p.iter().copied().collect();
            let want: Vec<u64> = (0..nvl).map(|v| 10 * v as u64 + 2).collect();
            assert_eq!(got, want);
            for x in p.iter_mut() {
                *x = 7;
            }
            assert!(p.iter().all(|&x| x == 7));
        }
    }

    #[test]
    #[should_panic]
    fn a_vl_beyond_the_network_s_is_an_error() {
        let p = PerVl::new(2, 0u8);
        let _ = p[2];
    }
}
