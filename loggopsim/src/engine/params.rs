//! The LogGOPS parameters (docs/model/loggops.md 1, 6) and the second
//! parameter set of section 10.

/// LogGOPS parameters (all in the schedule's time unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Params {
    #[serde(rename = "L")]
    pub l: u64,
    pub o: u64,
    pub g: u64,
    #[serde(rename = "G")]
    pub big_g: u64,
    #[serde(rename = "O")]
    pub big_o: u64,
    #[serde(rename = "S")]
    pub s: u64,
    /// Section 10: per-message overhead for messages above `large_threshold`.
    pub o_large: Option<u64>,
    /// Section 10: per-byte overhead for messages above `large_threshold`.
    #[serde(rename = "O_large")]
    pub big_o_large: Option<u64>,
    /// Section 10: threshold for the second set (default: S).
    pub large_threshold: Option<u64>,
}

impl Default for Params {
    /// The reference's defaults (nanosecond flavour).
    fn default() -> Self {
        Params {
            l: 2500,
            o: 1500,
            g: 1000,
            big_g: 6,
            big_o: 0,
            s: 65535,
            o_large: None,
            big_o_large: None,
            large_threshold: None,
        }
    }
}

impl Params {
    /// (o, O) for a message of `size` bytes.
    #[inline]
    pub fn overheads(&self, size: u64) -> (u64, u64) {
        if (self.o_large.is_some() || self.big_o_large.is_some())
            && size > self.large_threshold.unwrap_or(self.s)
        {
            (
                self.o_large.unwrap_or(self.o),
                self.big_o_large.unwrap_or(self.big_o),
            )
        } else {
            (self.o, self.big_o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Params;

    /// The reference's defaults (docs/model/loggops.md 1), read as ps.
    #[test]
    fn defaults_are_the_reference_numbers() {
        let p = Params::default();
        assert_eq!(
            (p.l, p.o, p.g, p.big_g, p.big_o, p.s),
            (2500, 1500, 1000, 6, 0, 65535)
        );
        assert_eq!(
            (p.o_large, p.big_o_large, p.large_threshold),
            (None, None, None)
        );
    }

    /// Section 10: the second pair applies strictly above the threshold
    /// (S by default); a pair given only in part keeps the other value.
    #[test]
    fn second_set_above_the_threshold() {
        let base = Params {
            big_o: 2,
            ..Params::default()
        };
        assert_eq!(
            base.overheads(1 << 30),
            (1500, 2),
            "no second set: always (o, O)"
        );
        let p = Params {
            o_large: Some(4000),
            big_o_large: Some(9),
            ..base
        };
        assert_eq!(p.overheads(65535), (1500, 2), "at S: first set");
        assert_eq!(p.overheads(65536), (4000, 9), "above S: second set");
        let q = Params {
            large_threshold: Some(100),
            o_large: Some(4000),
            ..base
        };
        assert_eq!(q.overheads(100), (1500, 2));
        assert_eq!(q.overheads(101), (4000, 2), "O_large unset: O stays");
    }
}
