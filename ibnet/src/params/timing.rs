//! Delays derived from the parameters (docs/model/fabric.md 1.2, 7): every
//! delay converted to integer ps on its own, range-checked, and the wire
//! rate of a link.

use super::{ConfigError, Params, MAX_CCT_LIMIT, MAX_DELAY_PS};

/// Convert a real delay in ns to integer ps: round to nearest, halves up.
pub fn ps(ns: f64) -> u64 {
    (ns * 1000.0 + 0.5).floor() as u64
}

/// Delays derived from the parameters, in ps, indexed by flit byte size.
#[derive(Clone, Debug)]
pub struct Timing {
    pub push: u64,
    pub gpop: Vec<u64>,
    pub arb_hca: Vec<u64>,
    pub arb_sw: Vec<u64>,
    pub wire: Vec<u64>,
    pub wire_fc: u64,
    pub drain: Vec<u64>,
    pub isw: u64,
    pub vsw: u64,
    /// propagation delay of every link
    pub link: u64,
    pub cred: u64,
    pub gap: u64,
    pub hiccup_on: u64,
    pub hiccup_off: u64,
    /// Idle time of the sink after a packet's last flit
    /// (`sink_packet_gap_periods` x the drain time of a full flit).
    pub pkt_gap: u64,
    pub start_stat: u64,
    pub cc_timer: u64,
    pub cc_base: u64,
    pub cct: Vec<u64>,
}

impl Timing {
    /// Checks the parameters ([`Params::check`]) and derives the delays.
    pub fn new(p: &Params) -> Result<Timing, ConfigError> {
        p.check_values()?;
        Timing::derive(p)
    }

    /// Every delay converted to ps and range-checked: a value that is not
    /// a finite number >= 0, or whose ps value (or a delay derived from it)
    /// exceeds [`MAX_DELAY_PS`], is an error naming the parameter; the
    /// credit period and the hiccup OFF phase must be at least 1 ps after
    /// rounding (sec. 1.2: each delay is rounded on its own).
    pub(super) fn derive(p: &Params) -> Result<Timing, ConfigError> {
        let rate = p.wire_rate_bps()?;
        let n = p.flit_size as usize;
        // the largest entry of each per-byte table is at n bytes
        let per =
            |key: &str, what: &str, f: &dyn Fn(f64) -> f64| -> Result<Vec<u64>, ConfigError> {
                derived_ps(key, what, f(n as f64))?;
                Ok((0..=n).map(|b| ps(f(b as f64))).collect())
            };
        let arb = |key: &str, bw: u32, mhz: f64| {
            per(key, "the arbitration time of a flit", &|b| {
                b / (bw as f64 * mhz * 1e6) * 1e9
            })
        };
        if p.cc_cct_limit > MAX_CCT_LIMIT {
            return Err(ConfigError::BadValue {
                key: "cc_cct_limit".into(),
                msg: format!(
                    "{} is out of range (at most {MAX_CCT_LIMIT} table entries)",
                    p.cc_cct_limit
                ),
            });
        }
        let lim = p.cc_cct_limit as u64;
        delay_ps("cc_cct_coeff_ns", p.cc_cct_coeff_ns)?;
        derived_ps(
            "cc_cct_coeff_ns",
            "the largest CCT delay (cc_cct_limit^2 x cc_cct_coeff_ns)",
            (lim * lim) as f64 * p.cc_cct_coeff_ns,
        )?;
        let cct = (0..=lim)
            .map(|i| ps((i * i) as f64 * p.cc_cct_coeff_ns))
            .collect();
        for (key, v) in keyed!(p;
            gen_dly_per_byte_ns, gen_pop_dly_per_byte_ns, sink_pop_dly_per_byte_ns,
        ) {
            delay_ps(key, v)?;
        }
        derived_ps(
            "gen_dly_per_byte_ns",
            "the push period (flit_size x gen_dly_per_byte_ns)",
            p.flit_size as f64 * p.gen_dly_per_byte_ns,
        )?;
        let cred = nonzero_ps(
            "cred_min_time_ns",
            p.cred_min_time_ns,
            "; the credit period must be at least 1 ps (0.0005 ns rounds up to it)",
        )?;
        let hiccup_off = nonzero_ps(
            "hiccup_delay_ns",
            p.hiccup_delay_ns,
            ": the sink would never be OFF and never drain; the OFF phase must be at least 1 ps",
        )?;
        // the per-packet sink gap: whole drain periods of a full flit
        let full_drain = ps(n as f64 * p.sink_pop_dly_per_byte_ns);
        let pkt_gap = full_drain
            .checked_mul(p.sink_packet_gap_periods as u64)
            .filter(|&g| g <= MAX_DELAY_PS)
            .ok_or_else(|| ConfigError::BadValue {
                key: "sink_packet_gap_periods".into(),
                msg: format!(
                    "{} periods of {full_drain} ps is out of range (at most {} ns)",
                    p.sink_packet_gap_periods,
                    MAX_DELAY_PS / 1000
                ),
            })?;
        Ok(Timing {
            push: ps(p.flit_size as f64 * p.gen_dly_per_byte_ns),
            gpop: per(
                "gen_pop_dly_per_byte_ns",
                "the generator pop delay of a flit",
                &|b| b * p.gen_pop_dly_per_byte_ns,
            )?,
            arb_hca: arb("core_freq_hca_mhz", p.bus_width_hca, p.core_freq_hca_mhz)?,
            arb_sw: arb(
                "core_freq_switch_mhz",
                p.bus_width_switch,
                p.core_freq_switch_mhz,
            )?,
            wire: per("link_speed", "the wire time of a flit", &|b| {
                8.0 * b / rate * 1e9
            })?,
            wire_fc: derived_ps(
                "link_speed",
                "the wire time of an FC packet",
                64.0 / rate * 1e9,
            )?,
            drain: per(
                "sink_pop_dly_per_byte_ns",
                "the sink drain time of a flit",
                &|b| b * p.sink_pop_dly_per_byte_ns,
            )?,
            isw: delay_ps("isw_delay_ns", p.isw_delay_ns)?,
            link: link_ps(p.link_delay_ns, cred)?,
            vsw: delay_ps("vsw_delay_ns", p.vsw_delay_ns)?,
            cred,
            gap: delay_ps("msg2msg_gap_ns", p.msg2msg_gap_ns)?,
            hiccup_on: delay_ps("hiccup_duration_ns", p.hiccup_duration_ns)?,
            hiccup_off,
            pkt_gap,
            start_stat: delay_ps("start_stat_col_ns", p.start_stat_col_ns)?,
            cc_timer: delay_ps("cc_timer_ns", p.cc_timer_ns)?,
            cc_base: delay_ps("cc_base_interval_ns", p.cc_base_interval_ns)?,
            cct,
        })
    }
}

/// `link_delay_ns` in ps: shorter than the credit period `cred`. (The
/// lazy credit timer relies on every delay into an obuf being shorter
/// than the period, `engine/mod.rs`, and so does an FC packet, whose
/// arrival reads what its sender advertised: the sender advertises a VL
/// again at its next tick at the earliest.)
fn link_ps(ns: f64, cred: u64) -> Result<u64, ConfigError> {
    let d = delay_ps("link_delay_ns", ns)?;
    if d >= cred {
        return Err(ConfigError::BadValue {
            key: "link_delay_ns".into(),
            msg: format!(
                "{ns} ns is not shorter than the credit period ({} ns, cred_min_time_ns)",
                cred as f64 / 1000.0
            ),
        });
    }
    Ok(d)
}

/// A delay parameter in ns converted to ps ([`ps`]), range-checked.
fn delay_ps(key: &str, ns: f64) -> Result<u64, ConfigError> {
    if !(ns.is_finite() && ns >= 0.0) {
        return Err(ConfigError::BadValue {
            key: key.into(),
            msg: format!("{ns} is not a finite number >= 0"),
        });
    }
    derived_ps(key, "", ns)
}

/// [`delay_ps`] of a delay that must not round to 0 ps; `why` ends the
/// message saying what 0 would do.
fn nonzero_ps(key: &str, ns: f64, why: &str) -> Result<u64, ConfigError> {
    match delay_ps(key, ns)? {
        0 => Err(ConfigError::BadValue {
            key: key.into(),
            msg: format!("{ns} ns rounds to 0 ps{why}"),
        }),
        t => Ok(t),
    }
}

/// A delay derived from parameter `key`, in ns, converted to ps; out of
/// range (above [`MAX_DELAY_PS`], or not finite) is an error naming `key`.
fn derived_ps(key: &str, what: &str, ns: f64) -> Result<u64, ConfigError> {
    let v = (ns * 1000.0 + 0.5).floor();
    if !(v.is_finite() && v >= 0.0 && v <= MAX_DELAY_PS as f64) {
        return Err(ConfigError::BadValue {
            key: key.into(),
            msg: format!(
                "{}{ns} ns is out of range (at most {} ns = {} s)",
                if what.is_empty() {
                    String::new()
                } else {
                    format!("{what} would be ")
                },
                MAX_DELAY_PS / 1000,
                MAX_DELAY_PS / 1_000_000_000_000
            ),
        });
    }
    Ok(ps(ns))
}

impl Params {
    /// Wire rate in bits per second: width x speed x 0.8 (8b/10b, also for FDR, Q11).
    pub fn wire_rate_bps(&self) -> Result<f64, ConfigError> {
        let s = self.link_speed.trim();
        let gbps = match s.to_ascii_uppercase().as_str() {
            "SDR" => 2.5,
            "DDR" => 5.0,
            "QDR" => 10.0,
            "FDR" => 14.0,
            other => other.parse::<f64>().map_err(|_| ConfigError::BadValue {
                key: "link_speed".into(),
                msg: format!("`{s}`: expected SDR, DDR, QDR, FDR or Gb/s per lane"),
            })?,
        };
        if !(gbps > 0.0 && gbps.is_finite()) {
            return Err(ConfigError::BadValue {
                key: "link_speed".into(),
                msg: "must be > 0".into(),
            });
        }
        Ok(self.link_width as f64 * gbps * 1e9 * 0.8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_examples() {
        assert_eq!(ps(64.0 / (24.0 * 250e6) * 1e9), 10667);
        assert_eq!(ps(64.0 * 0.3077), 19693);
        assert_eq!(ps(512.0 / 44.8e9 * 1e9), 11429);
        let t = Timing::new(&Params::qdr()).unwrap();
        assert_eq!(
            (t.push, t.gpop[64], t.arb_hca[64], t.arb_sw[64]),
            (19693, 16000, 20000, 10667)
        );
        assert_eq!(
            (t.wire[64], t.wire_fc, t.drain[64], t.cred),
            (16000, 2000, 19693, 256000)
        );
        let d = Timing::new(&Params::thesis_ddr()).unwrap();
        assert_eq!(
            (d.wire[64], d.wire_fc, d.drain[64], d.drain[20]),
            (32000, 4000, 33600, 10500)
        );
        let c = Timing::new(&Params::hcyang99()).unwrap();
        assert_eq!(c.cct[127], ps(127.0 * 127.0 * 3300.0 / 6889.0));
    }

    #[test]
    fn delays_out_of_range_name_their_key() {
        assert_eq!(delay_ps("k", 1.0005).unwrap(), 1001);
        let e = delay_ps("isw_delay_ns", -1.0).unwrap_err();
        assert!(matches!(e, ConfigError::BadValue { ref key, .. } if key == "isw_delay_ns"));
        let e = derived_ps("k", "the thing", 2e12).unwrap_err();
        assert!(e.to_string().contains("the thing would be"), "{e}");
        let mut p = Params::qdr();
        p.cred_min_time_ns = 0.0004;
        let e = Timing::derive(&p).unwrap_err();
        assert!(e.to_string().contains("cred_min_time_ns"), "{e}");
    }

    #[test]
    fn some_delays_must_stay_above_zero() {
        assert_eq!(nonzero_ps("k", 0.0005, ": why").unwrap(), 1);
        assert_eq!(
            nonzero_ps("k", 0.0004, ": why").unwrap_err().to_string(),
            "parameter `k`: 0.0004 ns rounds to 0 ps: why"
        );
    }

    #[test]
    fn wire_rates() {
        let mut p = Params::qdr();
        assert_eq!(p.wire_rate_bps().unwrap(), 32e9);
        p.link_speed = "fdr".into();
        assert_eq!(p.wire_rate_bps().unwrap(), 4.0 * 14.0 * 1e9 * 0.8);
        p.link_speed = "12.5".into();
        assert_eq!(p.wire_rate_bps().unwrap(), 40e9);
        for bad in ["XDR", "0", "-1", "inf"] {
            p.link_speed = bad.into();
            assert!(p.wire_rate_bps().is_err(), "{bad}");
        }
    }
}
