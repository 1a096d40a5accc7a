//! Statistics accumulators and the serialisable report (docs/model/fabric.md section 8).

use serde::{Deserialize, Serialize};

/// count/mean/stddev/min/max/sum/sum-of-squares of integer samples (ps or
/// counts), accumulated exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    pub n: u64,
    pub sum: u128,
    pub sumsq: u128,
    pub min: u64,
    pub max: u64,
}

impl Stat {
    #[inline]
    pub fn add(&mut self, x: u64) {
        if self.n == 0 || x < self.min {
            self.min = x;
        }
        if x > self.max {
            self.max = x;
        }
        self.n += 1;
        self.sum += x as u128;
        self.sumsq += (x as u128) * (x as u128);
    }
    /// Add `k` samples of value `x`.
    pub fn add_n(&mut self, x: u64, k: u64) {
        if k == 0 {
            return;
        }
        if self.n == 0 || x < self.min {
            self.min = x;
        }
        if x > self.max {
            self.max = x;
        }
        self.n += k;
        self.sum += x as u128 * k as u128;
        self.sumsq += (x as u128) * (x as u128) * k as u128;
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let m = self.sum as f64 / n;
        let var = (self.sumsq as f64 - n * m * m) / (n - 1.0);
        var.max(0.0).sqrt()
    }
    pub fn summary(&self) -> StatSummary {
        StatSummary {
            count: self.n,
            mean: self.mean(),
            stddev: self.stddev(),
            min: if self.n == 0 { 0 } else { self.min },
            max: self.max,
            sum: self.sum,
        }
    }
}

/// Serialised form of a [`Stat`] (values in the unit of the statistic).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StatSummary {
    pub count: u64,
    pub mean: f64,
    pub stddev: f64,
    pub min: u64,
    pub max: u64,
    /// Exact sum (may exceed 2^64: a JSON number of any size).
    pub sum: u128,
}

/// Per-HCA sink statistics (times in ps).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SinkReport {
    pub name: String,
    pub lid: u16,
    pub msg_network_latency_ps: StatSummary,
    pub msg_first2first_network_latency_ps: StatSummary,
    pub packet_fabric_time_ps: StatSummary,
    pub waiting_time_ps: StatSummary,
    pub time_last_packet_consumed_ps: u64,
    pub sink_bw_mbps: f64,
    pub bytes_arrived_after_start: u64,
    pub vl_total_flits: Vec<u64>,
    pub ooo_window_pkts: StatSummary,
    pub ooo_packets: u64,
    pub in_order_packets: u64,
    pub oo_io_packets_ratio: f64,
    pub num_srcs: u64,
    pub enough_pkts_network_latency_ps: StatSummary,
    pub last_to_enough_pkt_arrival_ps: StatSummary,
    pub cnps_received: u64,
    pub cnps_sent: u64,
    pub ccti: u32,
    pub ccti_max: u32,
}

/// Per-port output buffer statistics and utilisation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ObufReport {
    pub node: String,
    pub port: u16,
    pub peer: Option<String>,
    pub output_bw_bytes_per_sec: f64,
    pub bytes_sent: u64,
    pub data_flits_sent: u64,
    pub fc_packets_sent: u64,
    /// Fraction of the run the link was transmitting (data and FC).
    pub utilisation: f64,
    pub busy_ps: u64,
    pub queue_depth: StatSummary,
    pub flits_sources: StatSummary,
    pub elastic_overflows: u64,
}

/// Per-port input buffer statistics.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IbufReport {
    pub node: String,
    pub port: u16,
    /// Free credits sampled after each arrival, per VL (the reference's
    /// "Used Static Credits", Q14).
    pub free_credits: Vec<StatSummary>,
    pub dropped_flits: u64,
}

/// Generator summary per HCA.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GenReport {
    pub name: String,
    pub bytes_sent: u64,
    pub flits_sent: u64,
    pub bw_bytes_per_sec: f64,
}

/// One message's timing (ps).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MsgReport {
    pub id: u64,
    pub src_lid: u16,
    pub dst_lid: u16,
    pub bytes: u64,
    pub injected_ps: u64,
    /// Injection stamp of the first flit (Msg-Network-Latency origin).
    pub first_flit_stamp_ps: Option<u64>,
    pub network_latency_ps: Option<u64>,
    pub completed_ps: Option<u64>,
}

/// Everything [`crate::Fabric::report`] returns.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    pub topology: String,
    pub now_ps: u64,
    /// Start of the statistics window of the sink bandwidth (sec. 8):
    /// `start_stat_col_ns`, or 0 when the run ended before it.
    pub stat_window_start_ps: u64,
    pub events_processed: u64,
    pub flits_generated: u64,
    pub flits_consumed: u64,
    pub flits_in_flight: u64,
    pub flits_dropped: u64,
    pub messages_injected: u64,
    pub messages_completed: u64,
    pub messages_in_flight: u64,
    pub sinks: Vec<SinkReport>,
    pub generators: Vec<GenReport>,
    pub obufs: Vec<ObufReport>,
    pub ibufs: Vec<IbufReport>,
    /// One-sided operations (docs/rdma.md): only when a put or get ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<crate::engine::RdmaReport>,
    /// Host interface (docs/rdma.md): only with `host_model = true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::engine::HostReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<MsgReport>>,
    /// Lossy links (docs/rdma.md): present only when `link_packet_error_rate`
    /// is above 0, so lossless reports are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossReport>,
    /// Messages that stopped advancing (engine/stall.rs): present only
    /// when some did, so the report of a run that flows is unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall: Option<StallReport>,
}

impl Report {
    /// The warning for a run that ended (without an error) before the
    /// statistics start, `start_stat_col_ns` of the parameters: what the
    /// report then computes differently. `ibnet run` and the Python
    /// package print the same words.
    pub fn early_end_warning(&self, start_stat_col_ns: f64) -> Option<String> {
        (self.events_processed > 0
            && self.stat_window_start_ps < crate::params::ps(start_stat_col_ns))
        .then(|| {
            format!(
                "the run ended at {} ps, before the statistics start (start_stat_col_ns = {} ns): the sink bandwidth is computed from t = 0 instead, and the packet fabric time and waiting time statistics are empty (use --set start_stat_col_ns=0)",
                self.now_ps, start_stat_col_ns
            )
        })
    }
}

/// Pending messages that stopped advancing (engine/stall.rs): none of
/// their packets was consumed at the destination (and none started) during
/// at least the last `window_ps` (longer for a destination that many
/// flows share), or the fabric is deadlocked.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct StallReport {
    /// max(100 us, a tenth of the run), or the time since the last
    /// foreground event in a true deadlock; a message is stalled after no
    /// progress for max(window, 4 x its destination's started pending
    /// messages x the drain time of one of its packets)
    pub window_ps: u64,
    /// the report's instant (the end of the run)
    pub at_ps: u64,
    /// no event left that can move a flit (run.rs's deadlock rule)
    pub deadlock: bool,
    pub messages_pending: u64,
    pub messages_stalled: u64,
    /// The earliest `since_ps` of the stalled messages.
    pub since_ps: u64,
    /// distinct destinations of the stalled messages
    pub destinations_stalled: u64,
    /// The stalled messages, longest stalled first (at most 64).
    pub messages: Vec<StalledMsg>,
    /// Output ports (per VL) whose arbiter holds a packet head longer than
    /// the VL's credits at the report's instant.
    pub blocked_ports_total: u64,
    /// The first 64 of them, most waiting flits first.
    pub blocked_ports: Vec<BlockedPort>,
}

/// A stalled message.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StalledMsg {
    pub id: u64,
    pub src: String,
    pub dst: String,
    pub packets_consumed: u64,
    pub packets: u64,
    /// its latest packet consumed at the sink, or its first flit if later
    pub since_ps: u64,
}

/// An output port whose head packet on a VL waits for credits.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BlockedPort {
    pub node: String,
    pub port: u16,
    pub peer: String,
    pub vl: u8,
    /// flits in the arbiter's head-of-queue slots and (switch) the input
    /// buffers' queues toward this port on this VL
    pub flits_waiting: u64,
    pub head_packet_flits: u64,
    /// the VL's credits (FCCL - FCTBS, flits)
    pub credits: i64,
}

impl StallReport {
    /// The report's text lines (`ibnet run`'s summary, the co-simulation
    /// server's): one `stalled:` line, one `credit-blocked:` line.
    pub fn text(&self) -> String {
        let us = |ps: u64| format!("{:.3} us", ps as f64 / 1e6);
        let what = if self.deadlock {
            format!(
                "can never complete (deadlock: no event that can move a flit since {})",
                us(self.at_ps - self.window_ps)
            )
        } else {
            format!(
                "made no progress in the last {} of the run (to {})",
                us(self.window_ps),
                us(self.at_ps)
            )
        };
        let mut s = format!(
            "stalled: {} of {} pending messages {what}, toward {} destinations, the longest since {}: ",
            self.messages_stalled,
            self.messages_pending,
            self.destinations_stalled,
            us(self.since_ps),
        );
        const SHOW: usize = 8;
        for (i, m) in self.messages.iter().take(SHOW).enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(&format!(
                "{} -> {} since {} ({} of {} packets)",
                m.src,
                m.dst,
                us(m.since_ps),
                m.packets_consumed,
                m.packets
            ));
        }
        if self.messages_stalled as usize > SHOW {
            s.push_str(&format!(
                ", and {} more",
                self.messages_stalled as usize - SHOW
            ));
        }
        s.push('\n');
        s.push_str(&format!(
            "credit-blocked: {} output ports hold a packet without credits for it",
            self.blocked_ports_total
        ));
        for (i, b) in self.blocked_ports.iter().take(SHOW).enumerate() {
            s.push_str(if i == 0 { ": " } else { ", " });
            s.push_str(&format!(
                "{}[{}] -> {} VL {} ({} flits waiting, head packet {} flits, {} credits)",
                b.node, b.port, b.peer, b.vl, b.flits_waiting, b.head_packet_flits, b.credits
            ));
        }
        if self.blocked_ports_total as usize > SHOW {
            s.push_str(&format!(
                ", and {} more",
                self.blocked_ports_total as usize - SHOW
            ));
        }
        s.push('\n');
        s
    }
}

/// Losses and end-to-end recovery (engine/loss.rs, docs/rdma.md).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LossReport {
    pub link_packet_error_rate: f64,
    pub link_bit_error_rate: f64,
    pub rto_ps: u64,
    /// Data packets corrupted on a link (each packet at most once).
    pub packets_corrupted: u64,
    /// ACK/NAK packets corrupted on a link.
    pub responses_corrupted: u64,
    /// Packets (data or response) dropped at their destination because
    /// they were corrupted.
    pub discarded_corrupted: u64,
    /// Good data packets discarded because an earlier one was missing.
    pub discarded_out_of_sequence: u64,
    /// Good data packets discarded because they had been accepted before.
    pub discarded_duplicates: u64,
    pub naks_sent: u64,
    pub acks_sent: u64,
    /// Retransmission timer expiries (each sends a probe).
    pub timeouts: u64,
    /// Data packets sent again (go-back-N and probes).
    pub packets_retransmitted: u64,
    pub probes_sent: u64,
    /// Messages with at least one retransmitted packet.
    pub messages_retransmitted: u64,
    /// Messages whose receiver had to wait for a retransmission (added
    /// latency above 0).
    pub messages_delayed: u64,
    /// Sum and maximum over completed messages of the added latency: the
    /// time the receiver held a sequence hole, from the arrival of the
    /// first discarded packet it still needed to the acceptance of the
    /// missing one (engine/loss.rs).
    pub added_latency_total_ps: u64,
    pub added_latency_max_ps: u64,
}
