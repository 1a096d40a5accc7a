//! Memory-pinning calibration (thesis 5.2.5 and Appendix F): the first time
//! an MPI call uses a buffer (or part of one), the MPI library pins it,
//! which costs `a + b * x`. We keep, per rank, the union of all buffers seen
//! so far as a set of disjoint intervals and charge only the bytes that are
//! new (`x = |new buffer \ union|`), which is the clean definition the
//! thesis's routine aims at (its printed code mishandles buffers that bridge
//! several stored intervals).

use std::collections::BTreeMap;

/// Thesis regression f(x) = 165.894 + 0.00301695 x microseconds.
pub const DEFAULT_PIN_A_US: f64 = 165.894;
/// Per-byte part of the regression, microseconds per byte.
pub const DEFAULT_PIN_B_US_PER_BYTE: f64 = 0.00301695;

/// Union of half-open byte intervals `[start, end)`. Intervals that overlap
/// or touch are merged, so stored intervals are disjoint and separated by at
/// least one uncovered byte.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntervalSet {
    /// start -> end, disjoint, non-touching.
    map: BTreeMap<u64, u64>,
}

impl IntervalSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `[start, start+len)` and returns how many of its bytes were not
    /// covered before.
    pub fn insert(&mut self, start: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let end = start.saturating_add(len);
        let mut new_start = start;
        let mut new_end = end;
        let mut covered = 0u64;
        // Candidates: the interval starting at or before `start` and all
        // intervals starting inside [start, end].
        let first = self.map.range(..=start).next_back().map(|(&s, _)| s);
        let mut keys: Vec<u64> = first
            .into_iter()
            .chain(self.map.range(start..=end).map(|(&s, _)| s))
            .collect();
        keys.dedup();
        for s in keys {
            let e = self.map[&s];
            if e < start || s > end {
                continue; // neither overlapping nor touching
            }
            // Bytes of [start,end) already covered by [s,e).
            let lo = s.max(start);
            let hi = e.min(end);
            if hi > lo {
                covered += hi - lo;
            }
            new_start = new_start.min(s);
            new_end = new_end.max(e);
            self.map.remove(&s);
        }
        self.map.insert(new_start, new_end);
        len - covered
    }

    /// Forgets every buffer (the thesis's "flush").
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Total bytes covered.
    pub fn covered_bytes(&self) -> u64 {
        self.map.iter().map(|(s, e)| e - s).sum()
    }

    /// The stored intervals in increasing order.
    pub fn intervals(&self) -> Vec<(u64, u64)> {
        self.map.iter().map(|(&s, &e)| (s, e)).collect()
    }
}

/// Pinning cost model: a + b * new_bytes, in trace time units (microseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PinningModel {
    pub a_us: f64,
    pub b_us_per_byte: f64,
}

impl Default for PinningModel {
    fn default() -> Self {
        PinningModel {
            a_us: DEFAULT_PIN_A_US,
            b_us_per_byte: DEFAULT_PIN_B_US_PER_BYTE,
        }
    }
}

impl PinningModel {
    /// Delay in microseconds for `new_bytes` newly pinned bytes (0 if none).
    pub fn delay_us(&self, new_bytes: u64) -> f64 {
        if new_bytes == 0 {
            0.0
        } else {
            self.a_us + self.b_us_per_byte * new_bytes as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_cases() {
        let mut s = IntervalSet::new();
        assert_eq!(s.insert(100, 50), 50);
        assert_eq!(s.insert(100, 50), 0);
        assert_eq!(s.insert(120, 50), 20); // extends above
        assert_eq!(s.insert(80, 30), 20); // extends below
        assert_eq!(s.intervals(), vec![(80, 170)]);
        assert_eq!(s.insert(200, 10), 10);
        assert_eq!(s.insert(170, 30), 30); // bridges the gap exactly
        assert_eq!(s.intervals(), vec![(80, 210)]);
        assert_eq!(s.insert(0, 1000), 1000 - 130);
        assert_eq!(s.intervals(), vec![(0, 1000)]);
        s.clear();
        assert_eq!(s.insert(5, 5), 5);
    }

    #[test]
    fn pinning_cost_of_ltest_buffer() {
        let m = PinningModel::default();
        // 400000 B: 165.894 + 0.00301695 * 400000 = 1372.674 us
        assert!((m.delay_us(400_000) - 1372.674).abs() < 1e-9);
        assert_eq!(m.delay_us(0), 0.0);
    }
}
