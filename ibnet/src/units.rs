//! Time arguments with units: `2ms`, `100us`, `1500ns`, `7ps`, `1.5us`, `3s`.

use crate::Time;

/// Parse a time with a unit suffix (s, ms, us, ns, ps). A bare number is an
/// error, so a forgotten unit never silently means picoseconds.
pub fn parse_time(s: &str) -> Result<Time, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("`{s}`: missing unit (s, ms, us, ns or ps)"))?;
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit {
        "s" => 1_000_000_000_000,
        "ms" => 1_000_000_000,
        "us" => 1_000_000,
        "ns" => 1_000,
        "ps" => 1,
        _ => {
            return Err(format!(
                "`{s}`: unknown unit `{unit}` (s, ms, us, ns or ps)"
            ))
        }
    };
    let num = num.trim();
    if let Ok(i) = num.parse::<u64>() {
        return i
            .checked_mul(mult)
            .map(Time)
            .ok_or_else(|| format!("`{s}`: too large"));
    }
    let f: f64 = num
        .parse()
        .map_err(|_| format!("`{s}`: `{num}` is not a number"))?;
    if !(f.is_finite() && f >= 0.0) {
        return Err(format!("`{s}`: must be a finite number >= 0"));
    }
    let ps = f * mult as f64;
    if ps > u64::MAX as f64 {
        return Err(format!("`{s}`: too large"));
    }
    if (ps - ps.round()).abs() > 1e-6 * ps.max(1.0) {
        return Err(format!("`{s}`: not a whole number of picoseconds"));
    }
    Ok(Time(ps.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn units() {
        assert_eq!(parse_time("2ms").unwrap(), Time(2_000_000_000));
        assert_eq!(parse_time("100us").unwrap(), Time(100_000_000));
        assert_eq!(parse_time("1500ns").unwrap(), Time(1_500_000));
        assert_eq!(parse_time("7ps").unwrap(), Time(7));
        assert_eq!(parse_time("1.5us").unwrap(), Time(1_500_000));
        assert!(parse_time("12").is_err());
        assert!(parse_time("3 furlongs").is_err());
        assert!(parse_time("0.5ps").is_err());
        assert!(parse_time("-1ns").is_err());
    }
}
