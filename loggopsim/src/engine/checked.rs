//! Checked time arithmetic (docs/model/loggops.md 9.4): every time the
//! engine computes goes through these, so an overflow is an error, never
//! a wrap or a saturation at the protocol's "never".

use super::SimError;

/// Checked time arithmetic: the largest valid time is 2^64-2 (2^64-1 is
/// the protocol's "never"). `None` means overflow.
#[inline]
pub(super) fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match a?.checked_add(b?) {
        Some(u64::MAX) | None => None,
        v => v,
    }
}
#[inline]
pub(super) fn mul(a: u64, b: u64) -> Option<u64> {
    a.checked_mul(b)
}
#[inline]
pub(super) fn v(a: u64) -> Option<u64> {
    Some(a)
}
#[inline]
pub(super) fn overflow(host: u32, what: &'static str, at: u64) -> SimError {
    SimError::TimeOverflow { host, what, at }
}

#[cfg(test)]
mod tests {
    use super::{add, mul, overflow, v};
    use crate::engine::SimError;

    /// 2^64-2 is the largest time; 2^64-1 ("never") and beyond are None.
    #[test]
    fn the_largest_time_is_two_to_the_64_minus_2() {
        assert_eq!(add(v(u64::MAX - 2), v(1)), Some(u64::MAX - 1));
        assert_eq!(add(v(u64::MAX - 1), v(1)), None);
        assert_eq!(add(v(u64::MAX), v(1)), None);
        assert_eq!(add(None, v(1)), None);
        assert_eq!(add(v(2), v(3)), Some(5));
        assert_eq!(mul(1 << 32, 1 << 32), None);
        assert_eq!(mul(9, 6), Some(54));
        assert_eq!(
            overflow(1, "calc", 7),
            SimError::TimeOverflow {
                host: 1,
                what: "calc",
                at: 7
            }
        );
    }
}
