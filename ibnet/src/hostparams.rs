//! Parameters of the host interface (docs/rdma.md): the PCIe link
//! between each HCA and its host memory, and the NIC's command engines.
//! The keys live in [`Params`]; this module holds their defaults, the PCIe
//! presets, the checks and the derived per-transaction timing.
//!
//! A DMA transfer of `B` payload bytes is split into transactions (TLPs) of
//! at most `max_payload` bytes; each occupies its direction of the link for
//! `(payload + tlp_overhead) x ns_per_byte`, rounded to ps per transaction
//! (sec. 1.2: every delay on its own), and its data is usable
//! `pcie_latency_ns` after its last byte left the link.

use crate::params::{keyed, ps, ConfigError, Params, MAX_DELAY_PS};

/// One PCIe preset: name, ns per byte, largest TLP payload, TLP overhead.
///
/// - `gen2x8` is the reference model's `pcie_8x_g2` include: it drives the
///   generator and the sink at 0.3077 ns per byte (docs/model/fabric.md 7.1), an
///   effective rate with every overhead folded in, so its TLP overhead is 0.
///   `gen2x16` is the same at twice the lanes.
/// - gen3/4/5 are the signalling rates (8, 16, 32 GT/s per lane, 128b/130b
///   encoding) with 24 bytes per TLP (framing 4 incl. sequence number,
///   4-DW header 16, LCRC 4) and 256-byte payloads.
pub const PCIE_PRESETS: &[(&str, f64, u32, u32)] = &[
    ("gen2x8", 0.3077, 256, 0),
    ("gen2x16", 0.3077 / 2.0, 256, 0),
    ("gen3x8", 8.0 / (8.0 * 8.0 * 128.0 / 130.0), 256, 24),
    ("gen3x16", 8.0 / (16.0 * 8.0 * 128.0 / 130.0), 256, 24),
    ("gen4x8", 8.0 / (8.0 * 16.0 * 128.0 / 130.0), 256, 24),
    ("gen4x16", 8.0 / (16.0 * 16.0 * 128.0 / 130.0), 256, 24),
    ("gen5x8", 8.0 / (8.0 * 32.0 * 128.0 / 130.0), 256, 24),
    ("gen5x16", 8.0 / (16.0 * 32.0 * 128.0 / 130.0), 256, 24),
];

pub fn default_pcie() -> String {
    "gen2x8".into()
}
pub fn is_default_pcie(s: &str) -> bool {
    s == "gen2x8"
}
pub fn default_payload() -> u32 {
    256
}
pub fn is_default_payload(v: &u32) -> bool {
    *v == 256
}
pub fn default_tlp_overhead() -> u32 {
    24
}
pub fn is_default_tlp_overhead(v: &u32) -> bool {
    *v == 24
}
pub fn one() -> u32 {
    1
}
pub fn is_one(v: &u32) -> bool {
    *v == 1
}
pub fn is_false(v: &bool) -> bool {
    !*v
}
pub fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// The keys the serialisation leaves out at their defaults, for the key
/// table that overrides are checked against.
pub(crate) fn insert_keys(p: &Params, t: &mut toml::Table) {
    use toml::Value::{Boolean, Float, Integer, String as S};
    t.insert(
        "rdma_ack_every_pkts".into(),
        Integer(p.rdma_ack_every_pkts.into()),
    );
    t.insert("host_model".into(), Boolean(p.host_model));
    t.insert("pcie".into(), S(p.pcie.clone()));
    t.insert("pcie_bw_gbps".into(), Float(p.pcie_bw_gbps));
    t.insert(
        "pcie_max_payload_bytes".into(),
        Integer(p.pcie_max_payload_bytes.into()),
    );
    t.insert(
        "pcie_tlp_overhead_bytes".into(),
        Integer(p.pcie_tlp_overhead_bytes.into()),
    );
    t.insert("pcie_latency_ns".into(), Float(p.pcie_latency_ns));
    t.insert("nic_tx_engines".into(), Integer(p.nic_tx_engines.into()));
    t.insert("nic_rx_engines".into(), Integer(p.nic_rx_engines.into()));
    t.insert("nic_cmd_ns".into(), Float(p.nic_cmd_ns));
}

/// The PCIe link and NIC timing of one HCA, in ps.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTiming {
    /// largest payload of one transaction, bytes
    pub max_payload: u64,
    /// link time of a full transaction (max_payload + overhead)
    pub full_tlp: u64,
    /// ns per byte and overhead, for the last (partial) transaction
    pub ns_per_byte: f64,
    pub overhead: u64,
    /// one-way latency
    pub latency: u64,
    pub tx_engines: usize,
    pub rx_engines: usize,
    /// one command on a NIC engine
    pub cmd: u64,
}

impl HostTiming {
    /// Link time of one transaction carrying `b` payload bytes.
    pub fn tlp(&self, b: u64) -> u64 {
        if b == self.max_payload {
            self.full_tlp
        } else {
            ps((b + self.overhead) as f64 * self.ns_per_byte)
        }
    }

    /// Link time of the first `b` bytes of a transfer (whole transactions:
    /// the transaction holding byte `b` counts in full) of `total` bytes.
    /// Transactions are back to back on the link. None if it does not fit
    /// in u64 ps (the engine reports that as an error).
    pub fn link_time(&self, b: u64, total: u64) -> Option<u64> {
        if b == 0 {
            return Some(0);
        }
        let k = b.div_ceil(self.max_payload);
        let n = total.div_ceil(self.max_payload);
        if k < n || total.is_multiple_of(self.max_payload) {
            k.checked_mul(self.full_tlp)
        } else {
            (n - 1)
                .checked_mul(self.full_tlp)?
                .checked_add(self.tlp(total - (n - 1) * self.max_payload))
        }
    }
}

/// Resolve the PCIe preset or the custom keys.
pub fn host_timing(p: &Params) -> Result<HostTiming, ConfigError> {
    let bad = |key: &str, msg: String| ConfigError::BadValue {
        key: key.into(),
        msg,
    };
    let (nspb, mp, ovh) = if p.pcie == "custom" {
        if !(p.pcie_bw_gbps.is_finite() && p.pcie_bw_gbps > 0.0) {
            return Err(bad(
                "pcie_bw_gbps",
                "pcie = \"custom\" needs a bandwidth > 0 Gb/s".into(),
            ));
        }
        (
            8.0 / p.pcie_bw_gbps,
            p.pcie_max_payload_bytes,
            p.pcie_tlp_overhead_bytes,
        )
    } else {
        let Some(&(_, nspb, mp, ovh)) = PCIE_PRESETS.iter().find(|e| e.0 == p.pcie) else {
            let names: Vec<&str> = PCIE_PRESETS.iter().map(|e| e.0).collect();
            return Err(bad(
                "pcie",
                format!(
                    "unknown preset `{}` (known: {}, custom)",
                    p.pcie,
                    names.join(", ")
                ),
            ));
        };
        for (key, set) in [
            ("pcie_bw_gbps", p.pcie_bw_gbps != 0.0),
            ("pcie_max_payload_bytes", p.pcie_max_payload_bytes != 256),
            ("pcie_tlp_overhead_bytes", p.pcie_tlp_overhead_bytes != 24),
        ] {
            if set {
                return Err(bad(
                    key,
                    format!(
                        "is set but pcie = \"{}\" selects a preset; set pcie = \"custom\" to give the link's numbers",
                        p.pcie
                    ),
                ));
            }
        }
        (nspb, mp, ovh)
    };
    if mp == 0 || mp > 1 << 20 {
        return Err(bad(
            "pcie_max_payload_bytes",
            "must be 1..=1048576 bytes".into(),
        ));
    }
    if ovh > 1 << 20 {
        return Err(bad(
            "pcie_tlp_overhead_bytes",
            "must be at most 1048576 bytes".into(),
        ));
    }
    let full = (mp as u64 + ovh as u64) as f64 * nspb;
    if full.is_nan() || full * 1000.0 > MAX_DELAY_PS as f64 {
        return Err(bad(
            "pcie_bw_gbps",
            "a transaction would take longer than the largest delay (1000 s)".into(),
        ));
    }
    if ps(full) == 0 {
        return Err(bad(
            "pcie_bw_gbps",
            "a full transaction rounds to 0 ps: the link would be infinitely fast".into(),
        ));
    }
    for (key, v) in keyed!(p; pcie_latency_ns, nic_cmd_ns) {
        if !(v.is_finite() && v >= 0.0 && v * 1000.0 <= MAX_DELAY_PS as f64) {
            return Err(bad(
                key,
                "must be a finite number >= 0 (at most 1000 s)".into(),
            ));
        }
    }
    for (key, v) in keyed!(p; nic_tx_engines, nic_rx_engines) {
        if v == 0 || v > 4096 {
            return Err(bad(key, "must be 1..=4096".into()));
        }
    }
    Ok(HostTiming {
        max_payload: mp as u64,
        full_tlp: ps(full),
        ns_per_byte: nspb,
        overhead: ovh as u64,
        latency: ps(p.pcie_latency_ns),
        tx_engines: p.nic_tx_engines as usize,
        rx_engines: p.nic_rx_engines as usize,
        cmd: ps(p.nic_cmd_ns),
    })
}

/// Checks of the keys of this module (also when the host model is off, so
/// a typo is found before it is switched on).
pub(crate) fn check(p: &Params) -> Result<(), ConfigError> {
    if p.rdma_ack_every_pkts > 1 << 30 {
        return Err(ConfigError::BadValue {
            key: "rdma_ack_every_pkts".into(),
            msg: "at most 2^30 packets".into(),
        });
    }
    host_timing(p).map(|_| ())
}
