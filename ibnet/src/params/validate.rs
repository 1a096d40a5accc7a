//! The checks of a parameter set that need no topology: value ranges and
//! consistency (docs/model/fabric.md 7; the delays' ps ranges are checked
//! in `timing.rs` as they are derived).

use super::timing::ps;
use super::{
    parse_arb_table, ConfigError, Params, Timing, MAX_DELAY_PS, MAX_MESSAGE_BYTES, MAX_PACKET_BYTES,
};

impl Params {
    /// Every check that does not need the topology: value ranges (also of
    /// the delays after conversion to ps) and consistency.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.check_values()?;
        Timing::derive(self).map(|_| ())
    }

    pub(super) fn check_values(&self) -> Result<(), ConfigError> {
        crate::hostparams::check(self)?;
        let bad = |key: &str, msg: &str| {
            Err(ConfigError::BadValue {
                key: key.into(),
                msg: msg.into(),
            })
        };
        for (key, v) in keyed!(self;
            gen_dly_per_byte_ns, gen_pop_dly_per_byte_ns, msg2msg_gap_ns,
            sink_pop_dly_per_byte_ns, hiccup_duration_ns, hiccup_delay_ns,
            start_stat_col_ns, cred_min_time_ns, isw_delay_ns, vsw_delay_ns, link_delay_ns,
            cc_timer_ns, cc_cct_coeff_ns, cc_base_interval_ns,
        ) {
            if !(v.is_finite() && v >= 0.0) {
                return bad(key, "must be a finite number >= 0");
            }
        }
        for (key, v) in keyed!(self; core_freq_switch_mhz, core_freq_hca_mhz) {
            if !(v.is_finite() && v > 0.0) {
                return bad(key, "must be > 0");
            }
        }
        if !matches!(
            self.send_queues.as_str(),
            "single" | "per-destination" | "per-message"
        ) {
            return Err(ConfigError::BadValue {
                key: "send_queues".into(),
                msg: format!(
                    "`{}`: expected single, per-destination or per-message",
                    self.send_queues
                ),
            });
        }
        if self.send_queues != "single" && self.max_cont_pkts == 0 {
            return bad(
                "max_cont_pkts",
                "must be > 0 with several send queues (the round-robin quantum in packets)",
            );
        }
        let per = self.link_packet_error_rate;
        if !(per.is_finite() && (0.0..1.0).contains(&per)) {
            return bad(
                "link_packet_error_rate",
                "must be a probability in [0, 1) (1 would lose every packet forever)",
            );
        }
        let ber = self.link_bit_error_rate;
        if !(ber.is_finite() && (0.0..1.0).contains(&ber)) {
            return bad("link_bit_error_rate", "must be a probability in [0, 1)");
        }
        if ber > 0.0 && per > 0.0 {
            return bad(
                "link_bit_error_rate",
                "give either link_bit_error_rate or link_packet_error_rate, not both",
            );
        }
        if !(self.rto_ns.is_finite() && self.rto_ns >= 0.001) || ps(self.rto_ns) > MAX_DELAY_PS {
            return bad(
                "rto_ns",
                "must be a finite time of at least 0.001 ns (1 ps) and at most 10^12 ns",
            );
        }
        if self.flit_size == 0 || self.flit_size > 65535 {
            return bad("flit_size", "must be 1..=65535 bytes");
        }
        if self.max_vl > 7 {
            return bad("max_vl", "at most 7");
        }
        if self.msg_sq > self.max_vl {
            return bad("msg_sq", "must not exceed max_vl (SL = VL)");
        }
        if self.max_static.len() < self.max_vl as usize + 1 {
            return bad("max_static", "needs one entry per VL 0..=max_vl");
        }
        if self.width == 0 {
            return bad("width", "must be > 0");
        }
        if self.link_width == 0 {
            return bad("link_width", "must be > 0 lanes");
        }
        if self.bus_width_hca == 0 {
            return bad("bus_width_hca", "must be > 0 bytes");
        }
        if self.bus_width_switch == 0 {
            return bad("bus_width_switch", "must be > 0 bytes");
        }
        if self.msg_length == 0 || self.msg_length > MAX_MESSAGE_BYTES {
            return Err(ConfigError::BadValue {
                key: "msg_length".into(),
                msg: format!("{} B: must be 1..={MAX_MESSAGE_BYTES} B", self.msg_length),
            });
        }
        if let Some(&b) = self
            .msg_len_set
            .iter()
            .find(|&&b| b == 0 || b > MAX_MESSAGE_BYTES)
        {
            return Err(ConfigError::BadValue {
                key: "msg_len_set".into(),
                msg: format!("{b} B: every length must be 1..={MAX_MESSAGE_BYTES} B"),
            });
        }
        if self
            .msg_len_prob
            .iter()
            .any(|p| !(p.is_finite() && *p >= 0.0))
        {
            return bad(
                "msg_len_prob",
                "every probability must be a finite number >= 0",
            );
        }
        if self.max_queued_per_vl == 0 {
            return bad("max_queued_per_vl", "must be > 0");
        }
        if self.max_being_sent == 0 {
            return bad(
                "max_being_sent",
                "must be > 0 (0 would stall every switch input)",
            );
        }
        if self.msg_mtu == 0 {
            return bad("msg_mtu", "must be > 0");
        }
        if self.msg_mtu as u64 + self.pkt_header_bytes as u64 > MAX_PACKET_BYTES as u64 {
            return Err(ConfigError::BadValue {
                key: "msg_mtu".into(),
                msg: format!(
                    "a packet of msg_mtu + pkt_header_bytes = {} B is larger than {MAX_PACKET_BYTES} B",
                    self.msg_mtu as u64 + self.pkt_header_bytes as u64
                ),
            });
        }
        if self.cred_min_time_ns <= 0.0 {
            return bad("cred_min_time_ns", "must be > 0");
        }
        if !self.obuf_enabled {
            return bad(
                "obuf_enabled",
                "false is not supported: no credits would ever flow and every sender would hang",
            );
        }
        let statics: u64 = self.max_static[..=self.max_vl as usize]
            .iter()
            .map(|&s| s as u64)
            .sum();
        if statics * self.width as u64 / 4 > self.total_buffer_size as u64 * self.width as u64 / 4 {
            return bad("max_static", "static credits exceed total_buffer_size");
        }
        match self.msg_len_mode.as_str() {
            "param" => {}
            "set" => {
                if self.msg_len_set.is_empty() || self.msg_len_set.len() != self.msg_len_prob.len()
                {
                    return bad("msg_len_set", "set mode needs msg_len_set and msg_len_prob of equal, non-zero length (Q2)");
                }
            }
            _ => return bad("msg_len_mode", "expected `param` or `set`"),
        }
        if !matches!(self.event_order.as_str(), "fifo" | "local") {
            return bad("event_order", "expected `fifo` (the reference) or `local`");
        }
        if self.cc_enabled && self.cc_markrate == 0 {
            return bad("cc_markrate", "must be > 0");
        }
        if self.cc_cct_min > self.cc_cct_limit {
            return bad("cc_cct_min", "must not exceed cc_cct_limit");
        }
        parse_arb_table("high_vl_arb_entries", &self.high_vl_arb_entries)?;
        parse_arb_table("low_vl_arb_entries", &self.low_vl_arb_entries)?;
        self.wire_rate_bps()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key named by the first failed check of `p` with `f` applied.
    #[track_caller]
    fn bad_key(f: impl FnOnce(&mut Params)) -> String {
        let mut p = Params::qdr();
        f(&mut p);
        match p.check() {
            Err(ConfigError::BadValue { key, .. }) => key,
            other => panic!("expected a bad value, got {other:?}"),
        }
    }

    #[test]
    fn shipped_presets_pass() {
        for name in crate::params::PRESETS {
            Params::preset(name).unwrap().check().unwrap();
        }
    }

    #[test]
    fn keyed_fields_carry_their_names() {
        let p = Params::qdr();
        assert_eq!(
            keyed!(p; isw_delay_ns, vsw_delay_ns),
            [("isw_delay_ns", 50.0), ("vsw_delay_ns", 50.0)]
        );
        assert_eq!(
            bad_key(|p| p.cc_base_interval_ns = -1.0),
            "cc_base_interval_ns"
        );
    }

    #[test]
    fn each_check_names_its_key() {
        assert_eq!(bad_key(|p| p.isw_delay_ns = f64::NAN), "isw_delay_ns");
        assert_eq!(bad_key(|p| p.core_freq_hca_mhz = 0.0), "core_freq_hca_mhz");
        assert_eq!(bad_key(|p| p.send_queues = "many".into()), "send_queues");
        assert_eq!(
            bad_key(|p| {
                p.send_queues = "per-message".into();
                p.max_cont_pkts = 0;
            }),
            "max_cont_pkts"
        );
        assert_eq!(
            bad_key(|p| {
                p.link_packet_error_rate = 0.1;
                p.link_bit_error_rate = 0.1;
            }),
            "link_bit_error_rate"
        );
        assert_eq!(bad_key(|p| p.rto_ns = 0.0), "rto_ns");
        assert_eq!(bad_key(|p| p.max_vl = 8), "max_vl");
        assert_eq!(bad_key(|p| p.msg_sq = 1), "msg_sq");
        assert_eq!(
            bad_key(|p| p.msg_length = MAX_MESSAGE_BYTES + 1),
            "msg_length"
        );
        assert_eq!(bad_key(|p| p.msg_mtu = MAX_PACKET_BYTES + 1), "msg_mtu");
        assert_eq!(bad_key(|p| p.obuf_enabled = false), "obuf_enabled");
        assert_eq!(bad_key(|p| p.max_static = vec![2000; 8]), "max_static");
        assert_eq!(bad_key(|p| p.msg_len_mode = "set".into()), "msg_len_set");
        assert_eq!(bad_key(|p| p.cc_cct_min = 200), "cc_cct_min");
        assert_eq!(
            bad_key(|p| p.low_vl_arb_entries = "x".into()),
            "low_vl_arb_entries"
        );
        assert_eq!(bad_key(|p| p.link_speed = "fast".into()), "link_speed");
        // a delay whose ps value is out of range is found by the derivation
        assert_eq!(bad_key(|p| p.isw_delay_ns = 1e13), "isw_delay_ns");
    }
}
