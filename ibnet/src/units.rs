//! Time arguments with units: `2ms`, `100us`, `1500ns`, `7ps`, `1.5us`, `3s`.

use crate::Time;

/// Parse a time with a unit suffix (s, ms, us, ns, ps): simtime's syntax
/// (docs/model/fabric.md 1.2: whole picoseconds). A bare number is an
/// error, so a forgotten unit never silently means picoseconds.
pub fn parse_time(s: &str) -> Result<Time, String> {
    simtime::parse_time(s, simtime::BareNumber::Refused).map_err(|e| e.to_string())
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
