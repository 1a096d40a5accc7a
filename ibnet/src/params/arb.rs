//! VL arbitration tables (docs/model/fabric.md 5.3): the `high_vl_arb_entries`
//! and `low_vl_arb_entries` strings read into eight (VL, weight) entries.

use super::ConfigError;

/// One VL arbitration table entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArbEntry {
    pub vl: u8,
    pub weight: u32,
}

/// Parse `"0:1 1:20 2:40 3:80"`; missing entries have weight 0 (8 entries).
pub fn parse_arb_table(key: &str, s: &str) -> Result<[ArbEntry; 8], ConfigError> {
    let mut out = [ArbEntry::default(); 8];
    let bad = |msg: String| ConfigError::BadValue {
        key: key.to_string(),
        msg,
    };
    for (i, tok) in s
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .enumerate()
    {
        if i >= 8 {
            return Err(bad("more than 8 entries".into()));
        }
        let (v, w) = tok
            .split_once(':')
            .ok_or_else(|| bad(format!("entry `{tok}`: expected VL:weight")))?;
        let vl: u32 = v
            .parse()
            .map_err(|_| bad(format!("entry `{tok}`: bad VL")))?;
        let weight: u32 = w
            .parse()
            .map_err(|_| bad(format!("entry `{tok}`: bad weight")))?;
        if vl > 8 {
            return Err(bad(format!("entry `{tok}`: VL above 8")));
        }
        if weight > 255 {
            return Err(bad(format!("entry `{tok}`: weight above 255")));
        }
        out[i] = ArbEntry {
            vl: vl as u8,
            weight,
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arb_tables() {
        let t = parse_arb_table("k", "0:1 1:20 2:40 3:80").unwrap();
        assert_eq!(t[3], ArbEntry { vl: 3, weight: 80 });
        assert_eq!(t[4].weight, 0);
        assert!(parse_arb_table("k", "9:1").is_err());
        assert!(parse_arb_table("k", "1:256").is_err());
        assert!(parse_arb_table("k", "1-2").is_err());
    }

    #[test]
    fn commas_and_short_tables() {
        let t = parse_arb_table("k", "0:1,1:2").unwrap();
        assert_eq!(
            (t[0], t[1]),
            (ArbEntry { vl: 0, weight: 1 }, ArbEntry { vl: 1, weight: 2 })
        );
        assert!(t[2..].iter().all(|e| *e == ArbEntry::default()));
        assert_eq!(parse_arb_table("k", "").unwrap(), [ArbEntry::default(); 8]);
        let e = parse_arb_table("high", "0:1 0:1 0:1 0:1 0:1 0:1 0:1 0:1 0:1").unwrap_err();
        assert_eq!(
            e,
            ConfigError::BadValue {
                key: "high".into(),
                msg: "more than 8 entries".into()
            }
        );
    }
}
