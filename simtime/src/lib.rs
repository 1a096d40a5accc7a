//! simtime: simulated time, an unsigned 64-bit count of picoseconds, with
//! its units, command-line parsing (the one time parser of every tool:
//! [`parse_time`]) and human-readable formatting.
//!
//! The shared vocabulary of the workspace: the fabric engine (`ibnet`),
//! the scheduler (`loggopsim`) and the protocol (`ipc-proto`, which
//! re-exports everything here as `ipc_proto::Time` and `ipc_proto::time::*`)
//! all use this one type, so the sans-I/O engines need no IPC code.
//!
//! The scheduler is unit-agnostic (its
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

/// A unit of simulated time, for command-line arguments and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Ps,
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    /// Picoseconds per unit.
    pub const fn ps(self) -> u64 {
        match self {
            TimeUnit::Ps => 1,
            TimeUnit::Ns => 1_000,
            TimeUnit::Us => 1_000_000,
            TimeUnit::Ms => 1_000_000_000,
            TimeUnit::S => 1_000_000_000_000,
        }
    }
    pub const fn suffix(self) -> &'static str {
        match self {
            TimeUnit::Ps => "ps",
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }
    fn from_suffix(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "ps" => TimeUnit::Ps,
            "ns" => TimeUnit::Ns,
            "us" | "\u{b5}s" => TimeUnit::Us,
            "ms" => TimeUnit::Ms,
            "s" => TimeUnit::S,
            _ => return None,
        })
    }
}

/// What a number without a unit means in [`parse_time`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BareNumber {
    /// A bare number is in this unit (`2500` with `In(Ps)` is 2500 ps).
    In(TimeUnit),
    /// A unit is required, so a forgotten unit never silently means
    /// picoseconds (`ibnet run --until 5` is an error).
    Refused,
}

/// Why a time argument was refused; [`TimeArgError`] words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeArgErrorKind {
    /// No number at all (`fast`, `-1`, ``).
    NotATime,
    /// Digits and dots that are not one number (`.`, `1.2.3`).
    NotANumber,
    /// A number without a unit under [`BareNumber::Refused`].
    MissingUnit,
    /// A suffix that is not ps, ns, us (or µs), ms or s.
    UnknownUnit(String),
    /// More than 2^64-1 ps.
    TooLarge,
    /// A fraction of a picosecond.
    NotWholePs,
}

/// A refused time argument: the text as given and why. Its `Display` is the
/// message every command-line tool prints; a tool with its own wording for
/// a case matches on `kind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeArgError {
    pub input: String,
    pub kind: TimeArgErrorKind,
}

impl fmt::Display for TimeArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.input;
        match &self.kind {
            TimeArgErrorKind::NotATime => write!(
                f,
                "`{s}` is not a time: expected a non-negative number with an optional unit \
                 (ps, ns, us, ms, s), e.g. 2500, 2.5ns, 100us"
            ),
            TimeArgErrorKind::NotANumber => write!(f, "`{s}` is not a number"),
            TimeArgErrorKind::MissingUnit => write!(f, "`{s}`: missing unit (s, ms, us, ns or ps)"),
            TimeArgErrorKind::UnknownUnit(u) => {
                write!(
                    f,
                    "`{s}`: unknown time unit `{u}` (known: ps, ns, us, ms, s)"
                )
            }
            TimeArgErrorKind::TooLarge => write!(
                f,
                "`{s}` is too large: times are limited to {} ps (2^64-1, about 213 days)",
                u64::MAX
            ),
            TimeArgErrorKind::NotWholePs => write!(
                f,
                "`{s}` is not a whole number of picoseconds (the resolution of simulated time)"
            ),
        }
    }
}

impl std::error::Error for TimeArgError {}

/// Parses a time given on a command line: a non-negative decimal number
/// with an optional unit suffix `ps`, `ns`, `us`, `ms` or `s` (`2500`,
/// `2.5ns`, `100 us`, `0.25s`). A bare number is in `default_unit`. The
/// result must be a whole number of picoseconds that fits in 64 bits;
/// anything else (overflow, a fraction of a picosecond, a sign, an unknown
/// unit) is an error with a message, never a saturation or a rounding.
pub fn parse_time_arg(s: &str, default_unit: TimeUnit) -> Result<Time, String> {
    parse_time(s, BareNumber::In(default_unit)).map_err(|e| e.to_string())
}

/// The one parser of time arguments in the workspace ([`parse_time_arg`]'s
/// syntax), with the meaning of a bare number chosen by the caller: every
/// tool accepts the same times and words its errors the same way. The
/// number is read as an exact decimal, not through a float, so `0.1ns` is
/// exactly 100 ps.
pub fn parse_time(s: &str, bare: BareNumber) -> Result<Time, TimeArgError> {
    let err = |kind| TimeArgError {
        input: s.to_string(),
        kind,
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim_start());
    if num.is_empty() {
        return Err(err(TimeArgErrorKind::NotATime));
    }
    let unit = match (unit, bare) {
        ("", BareNumber::In(u)) => u,
        ("", BareNumber::Refused) => return Err(err(TimeArgErrorKind::MissingUnit)),
        (u, _) => TimeUnit::from_suffix(u)
            .ok_or_else(|| err(TimeArgErrorKind::UnknownUnit(u.to_string())))?,
    };
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(err(TimeArgErrorKind::NotANumber));
    }
    let too_big = || err(TimeArgErrorKind::TooLarge);
    let mut ps: u64 = 0;
    for c in int.bytes() {
        ps = ps
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as u64))
            .ok_or_else(too_big)?;
    }
    ps = ps.checked_mul(unit.ps()).ok_or_else(too_big)?;
    // The fraction: each digit is worth unit/10^k ps, which must be whole.
    let mut place = unit.ps();
    for c in frac.bytes() {
        let d = (c - b'0') as u64;
        if place % 10 != 0 {
            if d != 0 {
                return Err(err(TimeArgErrorKind::NotWholePs));
            }
            continue;
        }
        place /= 10;
        ps = ps.checked_add(d * place).ok_or_else(too_big)?;
    }
    Ok(Time(ps))
}

/// Formats picoseconds in the largest unit that keeps the value at least 1,
/// with up to 6 significant digits: `204.007 us`, `5.654 ns`, `0 ps`.
pub fn format_ps_human(ps: u64) -> String {
    let unit = [TimeUnit::S, TimeUnit::Ms, TimeUnit::Us, TimeUnit::Ns]
        .into_iter()
        .find(|u| ps >= u.ps())
        .unwrap_or(TimeUnit::Ps);
    if unit == TimeUnit::Ps {
        return format!("{ps} ps");
    }
    let v = ps as f64 / unit.ps() as f64;
    let digits = if v >= 100.0 {
        3
    } else if v >= 10.0 {
        4
    } else {
        5
    };
    let mut t = format!("{v:.digits$}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{t} {}", unit.suffix())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_arguments() {
        use TimeUnit::*;
        let p = |s: &str, u| parse_time_arg(s, u);
        assert_eq!(p("2500", Ps), Ok(Time(2500)));
        assert_eq!(p("2500", Ns), Ok(Time(2_500_000)));
        assert_eq!(p("2.5ns", Ps), Ok(Time(2500)));
        assert_eq!(p("100 us", Ps), Ok(Time(100_000_000)));
        assert_eq!(p("0.25s", Ps), Ok(Time(250_000_000_000)));
        assert_eq!(p("1ms", Ps), Ok(Time(1_000_000_000)));
        assert_eq!(p("7ps", Us), Ok(Time(7)));
        assert_eq!(p("1.000ps", Ps), Ok(Time(1)));
        assert_eq!(p(".5ns", Ps), Ok(Time(500)));
        assert_eq!(p("1_000", Ps), Ok(Time(1000)));
        assert_eq!(p("18446744073709551615", Ps), Ok(Time(u64::MAX)));
        assert!(p("18446744073709551616", Ps)
            .unwrap_err()
            .contains("too large"));
        assert!(p("18446744073709552ns", Ps)
            .unwrap_err()
            .contains("too large"));
        assert!(p("18446744073709551615.9ps", Ps).is_err());
        assert!(p("0.0004ns", Ps).unwrap_err().contains("whole number"));
        assert!(p("1.5", Ps).unwrap_err().contains("whole number"));
        assert!(p("-1", Ps).is_err());
        assert!(p("", Ps).is_err());
        assert!(p(".", Ps).is_err());
        assert!(p("1.2.3", Ps).is_err());
        assert!(p("5 h", Ps).unwrap_err().contains("unknown time unit"));
        assert!(p("1e3", Ps).is_err());
    }

    #[test]
    fn unit_required_and_error_kinds() {
        use TimeArgErrorKind::*;
        let p = |s: &str| parse_time(s, BareNumber::Refused).map_err(|e| e.kind);
        assert_eq!(p("2ms"), Ok(Time(2_000_000_000)));
        assert_eq!(p("1.5us"), Ok(Time(1_500_000)));
        assert_eq!(p("7 ps"), Ok(Time(7)));
        assert_eq!(p("12"), Err(MissingUnit));
        assert_eq!(p("3 furlongs"), Err(UnknownUnit("furlongs".into())));
        assert_eq!(p("0.5ps"), Err(NotWholePs));
        assert_eq!(p("-1ns"), Err(NotATime));
        assert_eq!(p("1.2.3ns"), Err(NotANumber));
        assert_eq!(p("99999999999s"), Err(TooLarge));
        let e = parse_time("5", BareNumber::Refused).unwrap_err();
        assert_eq!(e.to_string(), "`5`: missing unit (s, ms, us, ns or ps)");
        // parse_time_arg is parse_time with a default unit
        assert_eq!(
            parse_time_arg("3 h", TimeUnit::Ps).unwrap_err(),
            "`3 h`: unknown time unit `h` (known: ps, ns, us, ms, s)"
        );
    }

    #[test]
    fn human_format() {
        assert_eq!(format_ps_human(204_006_600), "204.007 us");
        assert_eq!(format_ps_human(5654), "5.654 ns");
        assert_eq!(format_ps_human(0), "0 ps");
        assert_eq!(format_ps_human(999), "999 ps");
        assert_eq!(format_ps_human(1_000_000_000_000), "1 s");
        assert_eq!(format_ps_human(11_259_988_000), "11.26 ms");
        assert_eq!(format_ps_human(u64::MAX), "18446744.074 s");
    }
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
