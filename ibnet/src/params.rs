//! Parameters of the fabric (docs/model/fabric.md section 7, congestion control of
//! section 12, quirk switches of section 10) and the shipped presets.
//!
//! Every delay given "per byte" is in ns per byte; every other delay is in
//! ns (fractions allowed). They are converted to integer picoseconds by
//! [`ps`] (round to nearest, halves up, sec. 1.2), each delay on its own.
//!
//! Overrides: a TOML file (`[params]`-less flat table of the keys below) and
//! `key=value` strings. Unknown keys are errors naming the key.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Errors in parameters or configuration (all reported by [`crate::Fabric::new`]
/// or the parameter loaders, never at run time).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    #[error("unknown preset `{0}` (known: qdr, thesis-ddr, thesis-ch5, thesis-ch4, hcyang99)")]
    UnknownPreset(String),
    #[error("unknown parameter `{key}`{hint}")]
    UnknownKey { key: String, hint: String },
    #[error("parameter `{key}`: {msg}")]
    BadValue { key: String, msg: String },
    #[error("{file}: {msg}")]
    File { file: String, msg: String },
    #[error("malformed override `{0}`: expected key=value")]
    MalformedOverride(String),
    #[error("topology: {0}")]
    Topology(String),
    #[error("invalid parameters: {0}")]
    Invalid(String),
}

/// All fabric parameters. Field names are the TOML keys.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Params {
    // ---- data units -------------------------------------------------
    /// Flit size in bytes (one credit).
    pub flit_size: u32,
    /// ibuf width: the statics are scaled by width/4.
    pub width: u32,
    /// Highest VL index in use (0 = one data VL). At most 7.
    pub max_vl: u8,
    // ---- generator --------------------------------------------------
    /// Push period per byte (push = round(flit_size * this)).
    pub gen_dly_per_byte_ns: f64,
    /// Generator-to-arbiter delay per byte (Tgpop).
    pub gen_pop_dly_per_byte_ns: f64,
    pub max_queued_per_vl: u32,
    /// Never limits a single app (Q9). With `send_queues` other than
    /// `single` it is the round-robin quantum: after this many consecutive
    /// packets of one send queue the generator moves to the next one
    /// (engine/qp.rs, docs/rdma.md "Queue pairs").
    pub max_cont_pkts: u32,
    /// Send queues of an HCA (docs/rdma.md "Queue pairs"):
    /// `single` (the reference: one message at a time), `per-destination`
    /// (one queue pair per destination HCA) or `per-message` (every
    /// message its own queue), served packet by packet round robin.
    /// Applies to injected messages (co-simulation, `inject`). Not written
    /// out when `single`, so existing reports are unchanged.
    #[serde(default = "default_send_queues", skip_serializing_if = "is_single")]
    pub send_queues: String,
    // ---- app defaults -------------------------------------------------
    /// App-to-generator delay of every message.
    pub msg2msg_gap_ns: f64,
    /// MTU in bytes (payload bytes per packet).
    pub msg_mtu: u32,
    /// Message length in bytes for the `param` length mode.
    pub msg_length: u64,
    /// `param` (use msg_length) or `set` (draw from msg_len_set with msg_len_prob).
    pub msg_len_mode: String,
    pub msg_len_set: Vec<u64>,
    pub msg_len_prob: Vec<f64>,
    /// Send queue = SL = VL of every message.
    pub msg_sq: u8,
    /// Seed for `seq_rand` and `set` draws (and the link errors).
    pub seed: u64,
    // ---- sink ---------------------------------------------------------
    pub sink_pop_dly_per_byte_ns: f64,
    pub hiccup_duration_ns: f64,
    pub hiccup_delay_ns: f64,
    pub start_stat_col_ns: f64,
    pub rep_first_packets: u32,
    /// Per-packet receive gap: after consuming the last flit of a packet,
    /// the sink idles this many drain periods of a full flit
    /// (`flit_size x sink_pop_dly_per_byte_ns`) before it consumes the
    /// next flit, i.e. its drain timer is re-armed that much later (the
    /// thesis's chapter-5 model, preset thesis-ch5: 1; docs/thesis.md).
    /// 0 (the default, every other preset) is the reference's sink. Not
    /// written out when 0, so reports of the other presets are unchanged.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub sink_packet_gap_periods: u32,
    // ---- obuf ---------------------------------------------------------
    pub obuf_size_switch: u32,
    pub obuf_size_hca: u32,
    pub cred_min_time_ns: f64,
    pub obuf_enabled: bool,
    // ---- ibuf ---------------------------------------------------------
    /// Static credits per VL (maxStatic0..7), in flits.
    pub max_static: Vec<u32>,
    pub total_buffer_size: u32,
    pub max_being_sent: u32,
    pub lossy_mode: bool,
    // ---- lossy links (engine/loss.rs, docs/rdma.md) ----------------------
    /// Probability that a packet is corrupted on one link traversal (drawn
    /// per packet and link from a stream seeded by `seed`); 0 = lossless
    /// (the default, not written out). Corrupted packets are discarded by
    /// the destination and recovered end to end (go-back-N).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub link_packet_error_rate: f64,
    /// Alternative to `link_packet_error_rate`: the probability that one
    /// bit is flipped on a link; a packet of n bytes is then corrupted per
    /// traversal with probability 1 - (1 - b)^(8 n). 0 = off (default,
    /// not written out). At most one of the two may be set.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub link_bit_error_rate: f64,
    /// Retransmission timeout of the end-to-end recovery (lossy links only;
    /// default 65.536 us = IB's local ACK timeout 4.096 us x 2^4). Not
    /// written out at its default.
    #[serde(default = "default_rto_ns", skip_serializing_if = "is_default_rto")]
    pub rto_ns: f64,
    // ---- switch -------------------------------------------------------
    pub isw_delay_ns: f64,
    pub vsw_delay_ns: f64,
    // ---- vlarb --------------------------------------------------------
    pub core_freq_switch_mhz: f64,
    pub core_freq_hca_mhz: f64,
    pub bus_width_switch: u32,
    pub bus_width_hca: u32,
    /// In 4 KiB units (highLeft starts at vl_high_limit * 64 flits).
    pub vl_high_limit: u32,
    pub high_vl_arb_entries: String,
    pub low_vl_arb_entries: String,
    pub use_fcfs_rq_arb: bool,
    /// Q6 fix: IBA-style high limit and weights instead of the reference's
    /// counter (changes results when max_vl > 0).
    pub iba_vl_arb: bool,
    /// Table arbitration (max_vl > 0) starts each VL's round robin after
    /// the input that VL last served, instead of the reference's one
    /// pointer shared by all VLs, with which an input right
    /// after another VL's busy input can starve (docs/topology.md). Left
    /// out of reports when false (the reference).
    #[serde(default, skip_serializing_if = "crate::hostparams::is_false")]
    pub vl_arb_rr_per_vl: bool,
    // ---- links --------------------------------------------------------
    /// Lanes per link (4x).
    pub link_width: u32,
    /// Lane speed: "SDR", "DDR", "QDR", "FDR" or a number of Gb/s.
    pub link_speed: String,
    // ---- packetisation (sec. 3.3, 13) ---------------------------------
    /// Header bytes added to every packet (thesis preset: 20).
    pub pkt_header_bytes: u32,
    /// Last flit of a packet is short (thesis preset) instead of padded.
    pub short_last_flit: bool,
    // ---- quirk switches (sec. 10) -------------------------------------
    /// Q1: `floor(B/M)` packets as the reference (a message shorter than
    /// the MTU is then a configuration error instead of a crash).
    pub legacy_packet_count: bool,
    /// Q4: let an obuf exceed its size (counted) instead of a fatal error.
    pub elastic_obuf: bool,
    // ---- engine -------------------------------------------------------
    /// Idle obufs stop their credit timer and catch up on activity
    /// (identical timing, sec. "idle fabric"). `false` = always tick.
    pub lazy_credit_timer: bool,
    // ---- congestion control (sec. 12) ---------------------------------
    pub cc_enabled: bool,
    /// Marking candidate when more than this many flits are queued for the
    /// same (output, VL) across the switch's input buffers.
    pub cc_threshold: u32,
    pub cc_markrate: u32,
    pub cc_cct_limit: u32,
    pub cc_cct_min: u32,
    pub cc_timer_ns: f64,
    /// `CCT[i] = i^2 * cc_cct_coeff_ns`.
    pub cc_cct_coeff_ns: f64,
    /// Injection interval per unit (flit) in CC mode before the CCT delay.
    pub cc_base_interval_ns: f64,
    /// Keep one CCT index per (source, destination) flow instead of one per
    /// app (the fork's choice). Sec. 12.3 allows both.
    pub cc_per_destination: bool,
    // ---- one-sided operations, host interface (docs/rdma.md) ------------
    // Not written out at their defaults, so reports stay unchanged.
    /// RC coalesced acknowledgements of a put: the target also acks every
    /// this many packets (0 = one ack per put, after its last byte).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub rdma_ack_every_pkts: u32,
    /// Model the host side of every HCA: PCIe DMA and NIC engines
    /// (`crate::hostparams`). Off: today's model, bit-identical.
    #[serde(default, skip_serializing_if = "crate::hostparams::is_false")]
    pub host_model: bool,
    /// PCIe preset (`gen2x8` = the reference's `pcie_8x_g2`, `gen3x16`, ...)
    /// or `custom` (then `pcie_bw_gbps` etc.).
    #[serde(
        default = "crate::hostparams::default_pcie",
        skip_serializing_if = "crate::hostparams::is_default_pcie"
    )]
    pub pcie: String,
    /// `pcie = "custom"`: data rate of the link per direction, Gb/s.
    #[serde(default, skip_serializing_if = "crate::hostparams::is_zero_f64")]
    pub pcie_bw_gbps: f64,
    /// `pcie = "custom"`: largest payload of one transaction (TLP), bytes.
    #[serde(
        default = "crate::hostparams::default_payload",
        skip_serializing_if = "crate::hostparams::is_default_payload"
    )]
    pub pcie_max_payload_bytes: u32,
    /// `pcie = "custom"`: per-transaction overhead on the link, bytes.
    #[serde(
        default = "crate::hostparams::default_tlp_overhead",
        skip_serializing_if = "crate::hostparams::is_default_tlp_overhead"
    )]
    pub pcie_tlp_overhead_bytes: u32,
    /// One-way latency of a DMA transfer over PCIe (any preset), ns.
    #[serde(default, skip_serializing_if = "crate::hostparams::is_zero_f64")]
    pub pcie_latency_ns: f64,
    /// Parallel NIC command processors for transmission (TX engines).
    #[serde(
        default = "crate::hostparams::one",
        skip_serializing_if = "crate::hostparams::is_one"
    )]
    pub nic_tx_engines: u32,
    /// Parallel NIC command processors for reception (RX engines).
    #[serde(
        default = "crate::hostparams::one",
        skip_serializing_if = "crate::hostparams::is_one"
    )]
    pub nic_rx_engines: u32,
    /// Processing time of one command (one message) on a NIC engine, ns.
    #[serde(default, skip_serializing_if = "crate::hostparams::is_zero_f64")]
    pub nic_cmd_ns: f64,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Default of `rto_ns`: IB's local ACK timeout 4.096 us x 2^4.
pub const DEFAULT_RTO_NS: f64 = 65_536.0;

fn default_rto_ns() -> f64 {
    DEFAULT_RTO_NS
}

fn is_default_rto(v: &f64) -> bool {
    *v == DEFAULT_RTO_NS
}

fn default_send_queues() -> String {
    "single".into()
}

fn is_single(v: &String) -> bool {
    v == "single"
}

impl Default for Params {
    fn default() -> Self {
        Params::qdr()
    }
}

/// Largest message the fabric simulates (1 TiB); larger ones are rejected
/// at injection instead of exhausting memory or time.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 40;

/// Largest delay of any parameter after conversion to ps (10^15 ps =
/// 1000 s). Larger values are errors: together with
/// [`crate::engine::MAX_TIME_PS`] this keeps every time computation of the
/// engine in range.
pub const MAX_DELAY_PS: u64 = 1_000_000_000_000_000;

/// Largest packet (MTU + header) in bytes: 16 MiB.
pub const MAX_PACKET_BYTES: u32 = 1 << 24;

/// Largest `cc_cct_limit` (the CCT is a table of this many entries + 1).
pub const MAX_CCT_LIMIT: u32 = 65_535;

/// Packetisation of one message (see [`Params::packet_layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketLayout {
    /// Number of packets (>= 1).
    pub count: u32,
    /// Bytes of every packet but the last, header included.
    pub full: u32,
    /// Bytes of the last packet, header included.
    pub last: u32,
}

/// Names of the shipped presets.
pub const PRESETS: &[&str] = &["qdr", "thesis-ddr", "hcyang99", "thesis-ch5", "thesis-ch4"];

impl Params {
    /// The reference defaults (4x QDR), sec. 7.1 effective values.
    pub fn qdr() -> Params {
        Params {
            flit_size: 64,
            width: 4,
            max_vl: 0,
            gen_dly_per_byte_ns: 0.3077,
            gen_pop_dly_per_byte_ns: 0.25,
            max_queued_per_vl: 4,
            max_cont_pkts: 10,
            send_queues: default_send_queues(),
            msg2msg_gap_ns: 1.0,
            msg_mtu: 2048,
            msg_length: 131072,
            msg_len_mode: "param".into(),
            msg_len_set: vec![],
            msg_len_prob: vec![],
            msg_sq: 0,
            seed: 1,
            sink_pop_dly_per_byte_ns: 0.3077,
            hiccup_duration_ns: 1.0,
            hiccup_delay_ns: 10_000_000.0,
            start_stat_col_ns: 100_000.0,
            rep_first_packets: 0,
            sink_packet_gap_periods: 0,
            obuf_size_switch: 78,
            obuf_size_hca: 36,
            cred_min_time_ns: 256.0,
            obuf_enabled: true,
            max_static: vec![200; 8],
            total_buffer_size: 1000,
            max_being_sent: 3,
            lossy_mode: false,
            link_packet_error_rate: 0.0,
            link_bit_error_rate: 0.0,
            rto_ns: DEFAULT_RTO_NS,
            isw_delay_ns: 50.0,
            vsw_delay_ns: 50.0,
            core_freq_switch_mhz: 250.0,
            core_freq_hca_mhz: 200.0,
            bus_width_switch: 24,
            bus_width_hca: 16,
            vl_high_limit: 16,
            high_vl_arb_entries: "0:1 1:20 2:40 3:80".into(),
            low_vl_arb_entries: "0:1 1:20 2:40 3:80".into(),
            use_fcfs_rq_arb: false,
            iba_vl_arb: false,
            vl_arb_rr_per_vl: false,
            link_width: 4,
            link_speed: "QDR".into(),
            pkt_header_bytes: 0,
            short_last_flit: false,
            legacy_packet_count: false,
            elastic_obuf: false,
            lazy_credit_timer: true,
            cc_enabled: false,
            cc_threshold: 0,
            cc_markrate: 3,
            cc_cct_limit: 127,
            cc_cct_min: 0,
            cc_timer_ns: 10_000.0,
            cc_cct_coeff_ns: 3300.0 / 6889.0,
            cc_base_interval_ns: 512.0,
            cc_per_destination: true,
            rdma_ack_every_pkts: 0,
            host_model: false,
            pcie: crate::hostparams::default_pcie(),
            pcie_bw_gbps: 0.0,
            pcie_max_payload_bytes: crate::hostparams::default_payload(),
            pcie_tlp_overhead_bytes: crate::hostparams::default_tlp_overhead(),
            pcie_latency_ns: 0.0,
            nic_tx_engines: 1,
            nic_rx_engines: 1,
            nic_cmd_ns: 0.0,
        }
    }

    /// Thesis-era preset (sec. 13): 4x DDR, sink 0.525 ns/B, 2176-byte
    /// packets with a 20-byte header, short last flit.
    pub fn thesis_ddr() -> Params {
        Params {
            link_speed: "DDR".into(),
            sink_pop_dly_per_byte_ns: 0.525,
            msg_mtu: 2156,
            pkt_header_bytes: 20,
            short_last_flit: true,
            ..Params::qdr()
        }
    }

    /// The thesis's chapter-5 model generation (docs/thesis.md):
    /// the thesis-ddr fabric (20-byte header, 2176-byte packets) plus the
    /// generator handing flits to the arbiter without a pop delay
    /// (Appendix J), the message handed straight to the generator (no
    /// app-to-generator gap: the integration inserts at the generator), and
    /// one idle sink drain period after every packet
    /// (`sink_packet_gap_periods`).
    pub fn thesis_ch5() -> Params {
        Params {
            gen_pop_dly_per_byte_ns: 0.0,
            msg2msg_gap_ns: 0.0,
            sink_packet_gap_periods: 1,
            ..Params::thesis_ddr()
        }
    }

    /// The thesis's chapter-4 model generation (docs/thesis.md):
    /// the sec. 13 thesis-era fabric with the generator's pop delay as in
    /// the reference, and no per-packet sink gap. Its fabric is the same as
    /// thesis-ddr's; what distinguishes the chapter-4 integration is the
    /// scheduler's `loggopsim --insert-at after-o`.
    pub fn thesis_ch4() -> Params {
        Params::thesis_ddr()
    }

    /// Congestion-control preset from the public CC fork (sec. 12.2).
    pub fn hcyang99() -> Params {
        Params {
            flit_size: 2048,
            msg_mtu: 2048,
            obuf_size_switch: 5,
            obuf_size_hca: 5,
            max_static: vec![32; 8],
            cred_min_time_ns: 4096.0,
            max_being_sent: 1,
            core_freq_switch_mhz: 1200.0,
            core_freq_hca_mhz: 1000.0,
            bus_width_switch: 24,
            bus_width_hca: 16,
            gen_pop_dly_per_byte_ns: 0.25,
            gen_dly_per_byte_ns: 0.25,
            max_vl: 1,
            cc_enabled: true,
            cc_threshold: 0,
            cc_markrate: 3,
            cc_cct_limit: 127,
            cc_cct_min: 0,
            cc_timer_ns: 10_000.0,
            cc_cct_coeff_ns: 3300.0 / 6889.0,
            cc_base_interval_ns: 512.0,
            cc_per_destination: false,
            ..Params::qdr()
        }
    }

    pub fn preset(name: &str) -> Result<Params, ConfigError> {
        match name {
            "qdr" | "default" => Ok(Params::qdr()),
            "thesis-ddr" | "thesis" => Ok(Params::thesis_ddr()),
            "thesis-ch5" => Ok(Params::thesis_ch5()),
            "thesis-ch4" => Ok(Params::thesis_ch4()),
            "hcyang99" | "cc" => Ok(Params::hcyang99()),
            _ => Err(ConfigError::UnknownPreset(name.to_string())),
        }
    }

    /// Every key with its value (also `sink_packet_gap_periods`, which the
    /// serialisation of reports leaves out when 0).
    fn to_table(&self) -> toml::Table {
        match toml::Value::try_from(self) {
            Ok(toml::Value::Table(mut t)) => {
                t.insert(
                    "sink_packet_gap_periods".into(),
                    toml::Value::Integer(self.sink_packet_gap_periods.into()),
                );
                // the keys of queue pairs, lossy links, one-sided operations and
                // the host interface (docs/rdma.md), which reports leave out at
                // their defaults
                t.insert(
                    "send_queues".into(),
                    toml::Value::String(self.send_queues.clone()),
                );
                t.insert(
                    "link_packet_error_rate".into(),
                    toml::Value::Float(self.link_packet_error_rate),
                );
                t.insert(
                    "link_bit_error_rate".into(),
                    toml::Value::Float(self.link_bit_error_rate),
                );
                t.insert("rto_ns".into(), toml::Value::Float(self.rto_ns));
                t.insert(
                    "vl_arb_rr_per_vl".into(),
                    toml::Value::Boolean(self.vl_arb_rr_per_vl),
                );
                crate::hostparams::insert_keys(self, &mut t);
                t
            }
            _ => unreachable!("Params serialises to a table"),
        }
    }

    fn from_table(t: toml::Table, origin: &str) -> Result<Params, ConfigError> {
        toml::Value::Table(t)
            .try_into::<Params>()
            .map_err(|e| ConfigError::File {
                file: origin.to_string(),
                msg: e.to_string(),
            })
    }

    /// Apply a TOML configuration text (flat table of parameter keys; an
    /// optional `preset = "name"` key first selects a base preset).
    pub fn apply_toml(&self, text: &str, origin: &str) -> Result<Params, ConfigError> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            ConfigError::File {
                file: format!("{origin}:{line}:{col}"),
                msg: e.message().trim().to_string(),
            }
        })?;
        let at = |key: &str| match key_line(text, key) {
            Some(l) => format!("{origin}:{l}"),
            None => origin.to_string(),
        };
        let mut base = self.clone();
        if let Some(p) = doc.get("preset") {
            let name = p.as_str().ok_or_else(|| ConfigError::File {
                file: at("preset"),
                msg: "preset: expected a string".into(),
            })?;
            base = Params::preset(name).map_err(|e| ConfigError::File {
                file: at("preset"),
                msg: e.to_string(),
            })?;
        }
        let mut t = base.to_table();
        for (k, mut v) in doc {
            if k == "preset" {
                continue;
            }
            let Some(old) = t.get(&k) else {
                return Err(ConfigError::UnknownKey {
                    hint: format!(" in {}", at(&k)),
                    key: k,
                });
            };
            if old.is_float() {
                if let Some(i) = v.as_integer() {
                    v = toml::Value::Float(i as f64);
                }
            }
            if std::mem::discriminant(old) != std::mem::discriminant(&v) {
                return Err(ConfigError::File {
                    file: at(&k),
                    msg: format!(
                        "parameter `{k}`: {} has the wrong type (expected {})",
                        v,
                        old.type_str()
                    ),
                });
            }
            t.insert(k, v);
        }
        let p = Params::from_table(t, origin).map_err(|e| match e {
            ConfigError::File { msg, .. } => {
                // name the line of the key the message is about, if any
                let key = PARAM_KEYS.iter().find(|k| msg.contains(&format!("`{k}`")));
                ConfigError::File {
                    file: key.map_or(origin.to_string(), |k| at(k)),
                    msg: msg.trim().replace('\n', " "),
                }
            }
            e => e,
        })?;
        // range and consistency errors name the file and the key's line
        if let Err(e) = p.check() {
            return Err(match e {
                ConfigError::BadValue { key, msg } => ConfigError::File {
                    file: at(&key),
                    msg: format!("parameter `{key}`: {msg}"),
                },
                ConfigError::File { .. } => e,
                e => ConfigError::File {
                    file: origin.to_string(),
                    msg: e.to_string(),
                },
            });
        }
        Ok(p)
    }

    /// Apply one `key=value` override. The value is read as TOML (numbers,
    /// booleans, arrays, quoted strings); a bare word is taken as a string.
    pub fn apply_override(&self, kv: &str) -> Result<Params, ConfigError> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| ConfigError::MalformedOverride(kv.to_string()))?;
        let key = k.trim().replace('-', "_");
        let mut t = self.to_table();
        let old = t.get(&key).ok_or_else(|| ConfigError::UnknownKey {
            key: key.clone(),
            hint: String::new(),
        })?;
        let raw = v.trim();
        let value = if old.is_str() && !raw.starts_with('"') {
            toml::Value::String(raw.to_string())
        } else {
            let doc: toml::Table =
                format!("x = {raw}")
                    .parse()
                    .map_err(|_| ConfigError::BadValue {
                        key: key.clone(),
                        msg: format!("cannot parse `{raw}`"),
                    })?;
            let mut v = doc["x"].clone();
            // integers given for float parameters
            if old.is_float() {
                if let Some(i) = v.as_integer() {
                    v = toml::Value::Float(i as f64);
                }
            }
            v
        };
        if std::mem::discriminant(old) != std::mem::discriminant(&value) {
            return Err(ConfigError::BadValue {
                key,
                msg: format!("`{raw}` has the wrong type (expected {})", old.type_str()),
            });
        }
        t.insert(key.clone(), value);
        Params::from_table(t, &format!("--set {key}"))
    }

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

/// Every parameter key (the TOML keys of [`Params`]).
pub static PARAM_KEYS: std::sync::LazyLock<Vec<String>> =
    std::sync::LazyLock::new(|| Params::qdr().to_table().keys().cloned().collect());

/// 1-based line of the first `key = ...` line of a flat TOML text.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix(key)
                .or_else(|| l.strip_prefix(&format!("\"{key}\"")));
            rest.is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

fn line_col(text: &str, off: usize) -> (usize, usize) {
    let before = &text[..off.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// Convert a real delay in ns to integer ps: round to nearest, halves up.
pub fn ps(ns: f64) -> u64 {
    (ns * 1000.0 + 0.5).floor() as u64
}

/// One VL arbitration table entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    fn derive(p: &Params) -> Result<Timing, ConfigError> {
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
        for (key, v) in [
            ("gen_dly_per_byte_ns", p.gen_dly_per_byte_ns),
            ("gen_pop_dly_per_byte_ns", p.gen_pop_dly_per_byte_ns),
            ("sink_pop_dly_per_byte_ns", p.sink_pop_dly_per_byte_ns),
        ] {
            delay_ps(key, v)?;
        }
        derived_ps(
            "gen_dly_per_byte_ns",
            "the push period (flit_size x gen_dly_per_byte_ns)",
            p.flit_size as f64 * p.gen_dly_per_byte_ns,
        )?;
        let cred = delay_ps("cred_min_time_ns", p.cred_min_time_ns)?;
        if cred == 0 {
            return Err(ConfigError::BadValue {
                key: "cred_min_time_ns".into(),
                msg: format!(
                    "{} ns rounds to 0 ps; the credit period must be at least 1 ps (0.0005 ns rounds up to it)",
                    p.cred_min_time_ns
                ),
            });
        }
        let hiccup_off = delay_ps("hiccup_delay_ns", p.hiccup_delay_ns)?;
        if hiccup_off == 0 {
            return Err(ConfigError::BadValue {
                key: "hiccup_delay_ns".into(),
                msg: format!(
                    "{} ns rounds to 0 ps: the sink would never be OFF and never drain; the OFF phase must be at least 1 ps",
                    p.hiccup_delay_ns
                ),
            });
        }
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
    /// Every check that does not need the topology: value ranges (also of
    /// the delays after conversion to ps) and consistency.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.check_values()?;
        Timing::derive(self).map(|_| ())
    }

    fn check_values(&self) -> Result<(), ConfigError> {
        crate::hostparams::check(self)?;
        let bad = |key: &str, msg: &str| {
            Err(ConfigError::BadValue {
                key: key.into(),
                msg: msg.into(),
            })
        };
        for (key, v) in [
            ("gen_dly_per_byte_ns", self.gen_dly_per_byte_ns),
            ("gen_pop_dly_per_byte_ns", self.gen_pop_dly_per_byte_ns),
            ("msg2msg_gap_ns", self.msg2msg_gap_ns),
            ("sink_pop_dly_per_byte_ns", self.sink_pop_dly_per_byte_ns),
            ("hiccup_duration_ns", self.hiccup_duration_ns),
            ("hiccup_delay_ns", self.hiccup_delay_ns),
            ("start_stat_col_ns", self.start_stat_col_ns),
            ("cred_min_time_ns", self.cred_min_time_ns),
            ("isw_delay_ns", self.isw_delay_ns),
            ("vsw_delay_ns", self.vsw_delay_ns),
            ("cc_timer_ns", self.cc_timer_ns),
            ("cc_cct_coeff_ns", self.cc_cct_coeff_ns),
            ("cc_base_interval_ns", self.cc_base_interval_ns),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(key, "must be a finite number >= 0");
            }
        }
        for (key, v) in [
            ("core_freq_switch_mhz", self.core_freq_switch_mhz),
            ("core_freq_hca_mhz", self.core_freq_hca_mhz),
        ] {
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

    /// Packetisation of a message: the byte size of every packet (header
    /// included). Errors for a message the reference cannot send. Allocates
    /// one entry per packet: the engine uses [`Params::packet_layout`].
    pub fn packets(&self, bytes: u64) -> Result<Vec<u32>, ConfigError> {
        let l = self.packet_layout(bytes)?;
        let mut v = vec![l.full; l.count as usize];
        *v.last_mut().unwrap() = l.last;
        Ok(v)
    }

    /// Packetisation of a message without materialising it: the number of
    /// packets, the size of a full packet and of the last one (headers
    /// included). Messages above [`MAX_MESSAGE_BYTES`] are an error.
    pub fn packet_layout(&self, bytes: u64) -> Result<PacketLayout, ConfigError> {
        if bytes > MAX_MESSAGE_BYTES {
            return Err(ConfigError::BadValue {
                key: "msg_length".into(),
                msg: format!(
                    "a message of {bytes} B is larger than the largest the fabric simulates, {MAX_MESSAGE_BYTES} B (1 TiB)"
                ),
            });
        }
        if bytes == 0 {
            return Err(ConfigError::BadValue {
                key: "msg_length".into(),
                msg: "a message needs at least 1 byte".into(),
            });
        }
        let m = self.msg_mtu as u64;
        let h = self.pkt_header_bytes;
        let (n, last) = if self.legacy_packet_count {
            let n = bytes / m;
            if n == 0 {
                return Err(ConfigError::BadValue {
                    key: "msg_length".into(),
                    msg: format!("{bytes} B is below the MTU {m} B: the reference (legacy_packet_count) would send 0 packets and crash (Q1)"),
                });
            }
            let r = bytes % m;
            (n, if r == 0 { m } else { r })
        } else {
            let n = bytes.div_ceil(m);
            (n, bytes - (n - 1) * m)
        };
        // n <= 2^40 / 1 fits u64; with MTU >= 1 B, n <= 2^40: check u32
        let count = u32::try_from(n).map_err(|_| ConfigError::BadValue {
            key: "msg_length".into(),
            msg: format!("{bytes} B makes {n} packets of MTU {m} B, more than 2^32 - 1"),
        })?;
        Ok(PacketLayout {
            count,
            full: m as u32 + h,
            last: last as u32 + h,
        })
    }

    /// Flits of a packet of `b` bytes and the byte size of its last flit.
    pub fn flits_of(&self, b: u32) -> (u32, u32) {
        let f = self.flit_size;
        let n = b.div_ceil(f).max(1);
        let last = if self.short_last_flit {
            b - f * (n - 1)
        } else {
            f
        };
        (n, last.max(1))
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
    fn packetisation() {
        let p = Params::qdr();
        assert_eq!(p.packets(131072).unwrap().len(), 64);
        let mut q = p.clone();
        q.msg_mtu = 1600;
        assert_eq!(q.packets(400000).unwrap().len(), 250);
        q.msg_mtu = 2048;
        let v = q.packets(400000).unwrap();
        assert_eq!((v.len(), *v.last().unwrap()), (196, 400000 - 195 * 2048));
        q.legacy_packet_count = true;
        let v = q.packets(400000).unwrap();
        assert_eq!((v.len(), *v.last().unwrap()), (195, 400000 % 2048));
        assert!(q.packets(100).is_err());
        let t = Params::thesis_ddr();
        // sec. 13 says "10000 B gives 4 packets, the last 1376 + 20": the
        // rule ceil(B / 2156) gives 5 (4 x 2156 + 1376 = 10000); the last
        // packet is as stated.
        let v = t.packets(10000).unwrap();
        assert_eq!(v, vec![2176, 2176, 2176, 2176, 1396]);
        assert_eq!(t.flits_of(2176), (34, 64));
        assert_eq!(t.flits_of(2068), (33, 20));
        assert_eq!(t.flits_of(20), (1, 20));
    }

    #[test]
    fn overrides() {
        let p = Params::qdr().apply_override("isw_delay_ns=40").unwrap();
        assert_eq!(p.isw_delay_ns, 40.0);
        let p = p.apply_override("link_speed=DDR").unwrap();
        assert_eq!(p.link_speed, "DDR");
        let e = p.apply_override("no_such=1").unwrap_err();
        assert!(e.to_string().contains("no_such"), "{e}");
        assert!(p.apply_override("isw_delay_ns").is_err());
        assert!(p.apply_override("isw_delay_ns=abc").is_err());
        assert!(p.apply_override("max_vl=true").is_err());
        let e = p
            .apply_toml("isw_delay_ns = 3\nbogus = 2\n", "x.toml")
            .unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let q = p
            .apply_toml("preset = \"thesis-ddr\"\nvsw_delay_ns = 7.5\n", "x.toml")
            .unwrap();
        assert_eq!((q.vsw_delay_ns, q.pkt_header_bytes), (7.5, 20));
        let e = p.apply_toml("isw_delay_ns = \n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("x.toml:1"), "{e}");
    }

    #[test]
    fn arb_tables() {
        let t = parse_arb_table("k", "0:1 1:20 2:40 3:80").unwrap();
        assert_eq!(t[3], ArbEntry { vl: 3, weight: 80 });
        assert_eq!(t[4].weight, 0);
        assert!(parse_arb_table("k", "9:1").is_err());
        assert!(parse_arb_table("k", "1:256").is_err());
        assert!(parse_arb_table("k", "1-2").is_err());
    }
}

/// The presets' values as the Rust constructors wrote them before the
/// TOML files in configs/presets/ became their single source: every
/// preset must still give exactly these parameters, field by field.
#[cfg(test)]
mod preset_values {
    use super::Params;

    // The reference defaults (4x QDR), sec. 7.1 effective values.
    fn qdr() -> Params {
        Params {
            flit_size: 64,
            width: 4,
            max_vl: 0,
            gen_dly_per_byte_ns: 0.3077,
            gen_pop_dly_per_byte_ns: 0.25,
            max_queued_per_vl: 4,
            max_cont_pkts: 10,
            send_queues: "single".into(),
            msg2msg_gap_ns: 1.0,
            msg_mtu: 2048,
            msg_length: 131072,
            msg_len_mode: "param".into(),
            msg_len_set: vec![],
            msg_len_prob: vec![],
            msg_sq: 0,
            seed: 1,
            sink_pop_dly_per_byte_ns: 0.3077,
            hiccup_duration_ns: 1.0,
            hiccup_delay_ns: 10_000_000.0,
            start_stat_col_ns: 100_000.0,
            rep_first_packets: 0,
            sink_packet_gap_periods: 0,
            obuf_size_switch: 78,
            obuf_size_hca: 36,
            cred_min_time_ns: 256.0,
            obuf_enabled: true,
            max_static: vec![200; 8],
            total_buffer_size: 1000,
            max_being_sent: 3,
            lossy_mode: false,
            link_packet_error_rate: 0.0,
            link_bit_error_rate: 0.0,
            rto_ns: 65_536.0,
            isw_delay_ns: 50.0,
            vsw_delay_ns: 50.0,
            core_freq_switch_mhz: 250.0,
            core_freq_hca_mhz: 200.0,
            bus_width_switch: 24,
            bus_width_hca: 16,
            vl_high_limit: 16,
            high_vl_arb_entries: "0:1 1:20 2:40 3:80".into(),
            low_vl_arb_entries: "0:1 1:20 2:40 3:80".into(),
            use_fcfs_rq_arb: false,
            iba_vl_arb: false,
            vl_arb_rr_per_vl: false,
            link_width: 4,
            link_speed: "QDR".into(),
            pkt_header_bytes: 0,
            short_last_flit: false,
            legacy_packet_count: false,
            elastic_obuf: false,
            lazy_credit_timer: true,
            cc_enabled: false,
            cc_threshold: 0,
            cc_markrate: 3,
            cc_cct_limit: 127,
            cc_cct_min: 0,
            cc_timer_ns: 10_000.0,
            cc_cct_coeff_ns: 3300.0 / 6889.0,
            cc_base_interval_ns: 512.0,
            cc_per_destination: true,
            rdma_ack_every_pkts: 0,
            host_model: false,
            pcie: "gen2x8".into(),
            pcie_bw_gbps: 0.0,
            pcie_max_payload_bytes: 256,
            pcie_tlp_overhead_bytes: 24,
            pcie_latency_ns: 0.0,
            nic_tx_engines: 1,
            nic_rx_engines: 1,
            nic_cmd_ns: 0.0,
        }
    }

    // Thesis-era preset (sec. 13): 4x DDR, sink 0.525 ns/B, 2176-byte
    // packets with a 20-byte header, short last flit.
    fn thesis_ddr() -> Params {
        Params {
            link_speed: "DDR".into(),
            sink_pop_dly_per_byte_ns: 0.525,
            msg_mtu: 2156,
            pkt_header_bytes: 20,
            short_last_flit: true,
            ..qdr()
        }
    }

    // The thesis's chapter-5 model generation (docs/thesis.md):
    // the thesis-ddr fabric (20-byte header, 2176-byte packets) plus the
    // generator handing flits to the arbiter without a pop delay
    // (Appendix J), the message handed straight to the generator (no
    // app-to-generator gap: the integration inserts at the generator), and
    // one idle sink drain period after every packet
    // (`sink_packet_gap_periods`).
    fn thesis_ch5() -> Params {
        Params {
            gen_pop_dly_per_byte_ns: 0.0,
            msg2msg_gap_ns: 0.0,
            sink_packet_gap_periods: 1,
            ..thesis_ddr()
        }
    }

    // The thesis's chapter-4 model generation (docs/thesis.md):
    // the sec. 13 thesis-era fabric with the generator's pop delay as in
    // the reference, and no per-packet sink gap. Its fabric is the same as
    // thesis-ddr's; what distinguishes the chapter-4 integration is the
    // scheduler's `loggopsim --insert-at after-o`.
    fn thesis_ch4() -> Params {
        thesis_ddr()
    }

    // Congestion-control preset from the public CC fork (sec. 12.2).
    fn hcyang99() -> Params {
        Params {
            flit_size: 2048,
            msg_mtu: 2048,
            obuf_size_switch: 5,
            obuf_size_hca: 5,
            max_static: vec![32; 8],
            cred_min_time_ns: 4096.0,
            max_being_sent: 1,
            core_freq_switch_mhz: 1200.0,
            core_freq_hca_mhz: 1000.0,
            bus_width_switch: 24,
            bus_width_hca: 16,
            gen_pop_dly_per_byte_ns: 0.25,
            gen_dly_per_byte_ns: 0.25,
            max_vl: 1,
            cc_enabled: true,
            cc_threshold: 0,
            cc_markrate: 3,
            cc_cct_limit: 127,
            cc_cct_min: 0,
            cc_timer_ns: 10_000.0,
            cc_cct_coeff_ns: 3300.0 / 6889.0,
            cc_base_interval_ns: 512.0,
            cc_per_destination: false,
            ..qdr()
        }
    }

    /// Compares two parameter sets key by key (every key, also those that
    /// reports leave out at their defaults), naming the first that differs.
    fn assert_same(name: &str, got: &Params, want: &Params) {
        let (g, w) = (got.to_table(), want.to_table());
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            w.keys().collect::<Vec<_>>(),
            "{name}: keys"
        );
        for (k, v) in &w {
            assert_eq!(g.get(k), Some(v), "{name}: parameter `{k}`");
        }
        assert_eq!(got, want, "{name}");
    }

    #[test]
    fn every_preset_keeps_its_values() {
        for (name, want) in [
            ("qdr", qdr()),
            ("thesis-ddr", thesis_ddr()),
            ("thesis-ch5", thesis_ch5()),
            ("thesis-ch4", thesis_ch4()),
            ("hcyang99", hcyang99()),
        ] {
            assert_same(name, &Params::preset(name).unwrap(), &want);
        }
        for (alias, name) in [
            ("default", "qdr"),
            ("thesis", "thesis-ddr"),
            ("cc", "hcyang99"),
        ] {
            assert_same(
                alias,
                &Params::preset(alias).unwrap(),
                &Params::preset(name).unwrap(),
            );
        }
        assert_same("Default", &Params::default(), &qdr());
    }
}
