//! The statistics report (sec. 8): per sink, generator, obuf and ibuf,
//! plus counters and (optionally) every message's timing. Read-only.

use super::fabric::{Fabric, NONE};
use crate::stats::*;

impl Fabric {
    /// Statistics of sec. 8, per-port utilisation and counters.
    pub fn report(&self) -> Report {
        self.report_with(false)
    }

    /// The report of the obuf of port `pi` (a connected port), as of now.
    pub(super) fn obuf_report(&self, pi: usize) -> ObufReport {
        let now = self.now;
        let port = &self.ports[pi];
        let ob = &port.ob;
        let peer = &self.ports[port.peer as usize];
        // samples of skipped ticks of a dormant obuf are zeros
        let mut qd = ob.qdepth.clone();
        if ob.dormant {
            qd.add_n(0, now / self.tm.cred - ob.last_tick / self.tm.cred);
        }
        ObufReport {
            node: self.node_names[port.node as usize].clone(),
            port: port.local,
            peer: Some(format!(
                "{}[{}]",
                self.node_names[peer.node as usize], peer.local
            )),
            output_bw_bytes_per_sec: match ob.first_tx {
                Some(t0) if now > t0 => ob.bytes as f64 / ((now - t0) as f64 * 1e-12),
                _ => 0.0,
            },
            bytes_sent: ob.bytes,
            data_flits_sent: ob.data_flits,
            fc_packets_sent: ob.fc_pkts,
            utilisation: if now > 0 {
                ob.busy.min(now) as f64 / now as f64
            } else {
                0.0
            },
            busy_ps: ob.busy,
            queue_depth: qd.summary(),
            flits_sources: ob.sources.summary(),
            elastic_overflows: ob.overflows,
        }
    }

    /// As [`Fabric::report`], optionally with every message's timing.
    pub fn report_with(&self, messages: bool) -> Report {
        let now = self.now;
        // A run that ends before the statistics start (default 100 us)
        // would report 0 B/s everywhere: take its bandwidth from t = 0
        // (the caller warns: the sampled statistics stay empty).
        let start = if now > self.tm.start_stat {
            self.tm.start_stat
        } else {
            0
        };
        let sinks = self
            .hcas
            .iter()
            .map(|h| {
                let s = &h.sink;
                let bytes = if start == self.tm.start_stat {
                    s.bytes_after_start
                } else {
                    s.bytes_total
                };
                let bw = if now > start {
                    bytes as f64 / ((now - start) as f64 * 1e-12) / 1e6
                } else {
                    0.0
                };
                SinkReport {
                    name: self.node_names[h.node as usize].clone(),
                    lid: h.lid,
                    msg_network_latency_ps: s.lat.summary(),
                    msg_first2first_network_latency_ps: s.f2f.summary(),
                    packet_fabric_time_ps: s.pft.summary(),
                    waiting_time_ps: s.wait.summary(),
                    time_last_packet_consumed_ps: s.last_consumed,
                    sink_bw_mbps: bw,
                    bytes_arrived_after_start: s.bytes_after_start,
                    vl_total_flits: s.vl_flits[..self.nvl].to_vec(),
                    ooo_window_pkts: s.ooo_window.summary(),
                    ooo_packets: s.ooo,
                    in_order_packets: s.inorder,
                    oo_io_packets_ratio: if s.inorder == 0 {
                        0.0
                    } else {
                        s.ooo as f64 / s.inorder as f64
                    },
                    num_srcs: s.ooo_next.len() as u64,
                    enough_pkts_network_latency_ps: s.enough_lat.summary(),
                    last_to_enough_pkt_arrival_ps: s.enough_gap.summary(),
                    cnps_received: s.cnps_in,
                    cnps_sent: s.cnps_out,
                    ccti: h.cc.ccti.values().copied().max().unwrap_or(0),
                    ccti_max: h.cc.ccti_max,
                }
            })
            .collect();
        let generators = self
            .hcas
            .iter()
            .map(|h| GenReport {
                name: self.node_names[h.node as usize].clone(),
                bytes_sent: h.gen.bytes_sent,
                flits_sent: h.gen.flits_sent,
                bw_bytes_per_sec: match h.gen.first_flit {
                    Some(t0) if now > t0 => h.gen.bytes_sent as f64 / ((now - t0) as f64 * 1e-12),
                    _ => 0.0,
                },
            })
            .collect();
        let mut obufs = Vec::new();
        let mut ibufs = Vec::new();
        for (pi, port) in self.ports.iter().enumerate() {
            if port.peer == NONE {
                continue;
            }
            obufs.push(self.obuf_report(pi));
            ibufs.push(IbufReport {
                node: self.node_names[port.node as usize].clone(),
                port: port.local,
                free_credits: port.ib.vl.iter().map(|x| x.free_stat.summary()).collect(),
                dropped_flits: port.ib.drops,
            });
        }
        let completed = self.msgs.iter().filter(|m| m.done.is_some()).count() as u64;
        Report {
            topology: self.topo_name.clone(),
            now_ps: now,
            stat_window_start_ps: start,
            events_processed: self.events,
            flits_generated: self.flits_generated,
            flits_consumed: self.flits_consumed,
            flits_in_flight: self.flits_generated - self.flits_consumed - self.flits_dropped,
            flits_dropped: self.flits_dropped,
            messages_injected: self.msgs.len() as u64,
            messages_completed: completed,
            messages_in_flight: self.in_flight as u64,
            sinks,
            generators,
            obufs,
            ibufs,
            rdma: self.rdma_report(),
            host: self.host_report(),
            messages: messages.then(|| {
                self.msgs
                    .iter()
                    .enumerate()
                    .map(|(i, m)| MsgReport {
                        id: i as u64,
                        src_lid: self.hcas[m.src as usize].lid,
                        dst_lid: m.dst_lid,
                        bytes: m.bytes,
                        injected_ps: m.injected,
                        first_flit_stamp_ps: m.first_stamp,
                        network_latency_ps: m.net_latency,
                        completed_ps: m.done,
                    })
                    .collect()
            }),
            loss: self.loss_report(),
            stall: self.stall_report(),
        }
    }
}
