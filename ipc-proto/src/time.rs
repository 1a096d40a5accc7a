//! Simulated time: an unsigned 64-bit count of picoseconds.
//!
//! Both engines use this type. The scheduler is unit-agnostic (its
//! parameters share whatever unit the schedule uses); in a co-simulation the
//! unit is the picosecond because the fabric works in picoseconds.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time (or a duration), in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    /// "Never" / "waiting for the network" (notify protocol).
    pub const MAX: Time = Time(u64::MAX);

    pub const fn ps(ps: u64) -> Time {
        Time(ps)
    }
    pub const fn ns(ns: u64) -> Time {
        Time(ns * 1_000)
    }
    pub const fn us(us: u64) -> Time {
        Time(us * 1_000_000)
    }
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    pub fn saturating_add(self, d: Time) -> Time {
        Time(self.0.saturating_add(d.0))
    }
    pub fn checked_add(self, d: Time) -> Option<Time> {
        self.0.checked_add(d.0).map(Time)
    }
    pub fn saturating_sub(self, d: Time) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
    /// Seconds as a float, for human-readable output only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-12
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0 + rhs.0)
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, rhs: Time) {
        self.0 += rhs.0;
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, rhs: Time) -> Time {
        Time(self.0 - rhs.0)
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl From<u64> for Time {
    fn from(v: u64) -> Time {
        Time(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn units() {
        assert_eq!(Time::ns(3).as_ps(), 3000);
        assert_eq!(Time::us(2), Time(2_000_000));
        assert_eq!(Time(5) + Time(7), Time(12));
        assert_eq!(Time::MAX.saturating_add(Time(1)), Time::MAX);
        assert_eq!(Time(3).saturating_sub(Time(5)), Time::ZERO);
        assert_eq!(Time(1_500_000_000_000).as_secs_f64(), 1.5);
    }
}
