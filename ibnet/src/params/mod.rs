//! Parameters of the fabric (docs/model/fabric.md section 7, congestion control of
//! section 12, quirk switches of section 10) and the shipped presets.
//!
//! Every delay given "per byte" is in ns per byte; every other delay is in
//! ns (fractions allowed). They are converted to integer picoseconds by
//! [`ps`] (round to nearest, halves up, sec. 1.2), each delay on its own.
//!
//! Overrides: a TOML file (`[params]`-less flat table of the keys below) and
//! `key=value` strings. Unknown keys are errors naming the key.
//!
//! This file holds the parameter set and its limits; the rest is in
//! `presets.rs` (the shipped presets, read from configs/presets/), `set.rs`
//! (TOML texts and `--set key=value`), `validate.rs` (the checks),
//! `timing.rs` (the delays in ps), `packets.rs` (packetisation) and
//! `arb.rs` (VL arbitration tables).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// `[("field", p.field), ...]`: fields of a parameter set `p` beside their
/// keys (a key is its field's name), for the checks that go through
/// several parameters alike.
macro_rules! keyed {
    ($p:expr; $($field:ident),+ $(,)?) => {
        [$((stringify!($field), $p.$field)),+]
    };
}
pub(crate) use keyed;

mod arb;
mod packets;
mod presets;
mod set;
mod timing;
mod validate;

pub use arb::{parse_arb_table, ArbEntry};
pub use packets::PacketLayout;
pub use presets::PRESETS;
pub use set::PARAM_KEYS;
pub use timing::{ps, Timing};

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
    // ---- links --------------------------------------------------------
    /// Propagation delay of every link (each direction): a flit or FC
    /// packet that starts on a link at t reaches the peer's ibuf at t +
    /// `link_delay_ns` (docs/model/fabric.md 2.3). 0, the default and the
    /// reference model, is not written out; a real cable adds about 5 ns
    /// per metre. Must be shorter than the credit period.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub link_delay_ns: f64,
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
    /// Order of events at one instant: `fifo`, the reference model's
    /// insertion order (the default), or `local`, an order every node
    /// computes from its own events (docs/scaling.md, "A local event
    /// order"): a different model, with its own results. Left out of
    /// reports at `fifo`.
    #[serde(default = "default_event_order", skip_serializing_if = "is_fifo")]
    pub event_order: String,
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

fn default_event_order() -> String {
    "fifo".into()
}

fn is_fifo(s: &str) -> bool {
    s == "fifo"
}
