//! The fabric as a flow-level model sees it: one capacity per link
//! direction and one fixed latency per switch, derived from the fabric
//! parameters. The single source of truth for loggopsim's `--network flow`
//! (and `penalty`) and for `ibnet export --simgrid`, so that an exported
//! SimGrid platform and the flow backend run the same network.
//!
//! - link capacity = `wire_rate_bps / 8` bytes/s = link_width x lane rate x
//!   0.8 (8b/10b) / 8, the same on every link direction (thesis-ddr: 4 x 5
//!   Gb/s x 0.8 / 8 = 2 GB/s = 500 ps per byte; qdr: 4 GB/s). Packet
//!   headers, credits and the sink's drain rate are not part of it;
//! - per-switch latency = ISW + VSW, each rounded to ps as the fabric does
//!   (`isw_delay_ns`, `vsw_delay_ns`; thesis-ddr: 50 + 50 = 100 ns). As
//!   per-link latencies: a link direction leaving a switch carries it, a
//!   direction leaving an HCA carries 0, so a route's latency is its
//!   number of switches x (ISW + VSW).

use crate::params::{Params, Timing};

/// Link capacity and per-switch latency of a fabric configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowLevel {
    /// Capacity of every link direction in bytes per second.
    pub link_bytes_per_s: f64,
    /// ISW + VSW in ps: the fixed latency of one switch traversal.
    pub switch_latency_ps: u64,
    /// The propagation delay of every link in ps (`link_delay_ns`, 0 in
    /// the reference model).
    pub link_delay_ps: u64,
}

impl FlowLevel {
    /// From checked parameters (errors name the parameter, prefixed
    /// `fabric parameters:`).
    pub fn from_params(p: &Params) -> Result<FlowLevel, String> {
        let tm = Timing::new(p).map_err(|e| format!("fabric parameters: {e}"))?;
        let rate = p
            .wire_rate_bps()
            .map_err(|e| format!("fabric parameters: {e}"))?;
        Ok(FlowLevel {
            link_bytes_per_s: rate / 8.0,
            switch_latency_ps: tm.isw + tm.vsw,
            link_delay_ps: tm.link,
        })
    }

    /// From a preset name and `key=value` overrides, as `--preset` and
    /// `--set` of every command (errors name the option).
    pub fn from_preset(preset: &str, sets: &[String]) -> Result<FlowLevel, String> {
        Self::from_params(&crate::options::params(preset, sets)?)
    }

    /// Latency in ps of the link direction leaving a node: the switch's
    /// fixed latency when the node is a switch, 0 when it is an HCA, and
    /// the link's propagation delay.
    pub fn out_latency_ps(&self, leaves_switch: bool) -> u64 {
        let node = if leaves_switch {
            self.switch_latency_ps
        } else {
            0
        };
        node + self.link_delay_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `link_delay_ns` adds itself to every link direction, leaving a
    /// switch or an HCA.
    #[test]
    fn link_delay() {
        let d = FlowLevel::from_preset("qdr", &["link_delay_ns=2.5".into()]).unwrap();
        assert_eq!(d.link_delay_ps, 2_500);
        assert_eq!(d.out_latency_ps(true), 102_500);
        assert_eq!(d.out_latency_ps(false), 2_500);
        let e = FlowLevel::from_preset("qdr", &["link_delay_ns=300".into()]).unwrap_err();
        assert!(e.contains("credit period"), "{e}");
    }

    #[test]
    fn presets() {
        let d = FlowLevel::from_preset("thesis-ddr", &[]).unwrap();
        assert_eq!(d.link_bytes_per_s, 2e9);
        assert_eq!(d.switch_latency_ps, 100_000);
        assert_eq!(d.out_latency_ps(true), 100_000);
        assert_eq!(d.out_latency_ps(false), 0);
        let q = FlowLevel::from_preset("qdr", &[]).unwrap();
        assert_eq!(q.link_bytes_per_s, 4e9);
        // an override reaches the derivation: 1x instead of 4x
        let one = FlowLevel::from_preset("thesis-ddr", &["link_width=1".into()]).unwrap();
        assert_eq!(one.link_bytes_per_s, 0.5e9);
        let e = FlowLevel::from_preset("nonesuch", &[]).unwrap_err();
        assert!(e.starts_with("--preset nonesuch:"), "{e}");
        let e = FlowLevel::from_preset("qdr", &["no_such_key=1".into()]).unwrap_err();
        assert!(e.starts_with("--set no_such_key=1:"), "{e}");
    }
}
