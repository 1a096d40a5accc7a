//! Host interface (docs/rdma.md): the PCIe link between each HCA and its host
//! memory, with `host_model = true` (off by default: the engine is then
//! exactly the reference model). Timing of one transaction in
//! [`crate::hostparams`].
//!
//! - Send side: when a message is posted to the HCA (its injection, or the
//!   creation of an ack/read response by the target) a TX engine processes
//!   its command (`nic.rs`); then its payload is DMA-read over the link's
//!   host-to-NIC direction, as back-to-back transactions. Reads of one HCA
//!   are FIFO per message (a message's read starts when the previous
//!   message's read has left the link). The generator creates the first
//!   flit of packet `p` no earlier than the time the transaction holding
//!   the packet's last payload byte is done plus `pcie_latency_ns`: the
//!   read is pipelined with the injection. The NIC buffers what was read
//!   without limit. Control packets (ack, read request) carry no payload
//!   and wait only for their command.
//! - Receive side: an arriving message takes an RX engine for its command
//!   when its first packet is consumed by the sink; each consumed packet's
//!   payload is then DMA-written over the NIC-to-host direction, FIFO in
//!   consumption order, starting at `max(consumption, command done, link
//!   free)`. The message has landed (its point: Delivered, GetDone, or the
//!   ack's Acked) when its last transaction is done plus the latency. The
//!   sink does not wait for the writes.
//! - Payload bytes are the message's bytes (headers are not DMA'd): every
//!   packet but the last carries `msg_mtu` bytes.

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

use super::dispatch::Ev;
use super::fabric::{Fabric, MAX_TIME_PS};
use super::nic::run_command;
use super::rdma::{R_GET_RESP, R_PUT_DATA, R_SEND};
use crate::hostparams::HostTiming;

/// Host-side state of one HCA.
#[derive(Clone, Default)]
pub(super) struct HostHca {
    /// the read (host to NIC) direction is free from this time
    rd_free: u64,
    /// the write (NIC to host) direction is free from this time
    wr_free: u64,
    tx: Vec<u64>,
    rx: Vec<u64>,
    bytes_read: u64,
    bytes_written: u64,
    rd_busy: u64,
    wr_busy: u64,
    tx_cmds: u64,
    rx_cmds: u64,
}

/// Host-side state of one message in flight.
#[derive(Clone, Copy, Default)]
struct MsgHost {
    /// send side: start of its DMA read (payload) or command done (control)
    rd_start: u64,
    /// receive side: its RX command is done
    rx_done: u64,
}

pub(super) struct HostModel {
    pub(super) tm: HostTiming,
    pub(super) hcas: Vec<HostHca>,
    msgs: HashMap<u32, MsgHost>,
    /// times of the pending HostLanded events (completion lower bound)
    pending: BTreeMap<u64, u32>,
}

/// Host-interface statistics (in the report only with `host_model = true`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct HostReport {
    pub pcie: String,
    pub pcie_transaction_ps: u64,
    pub pcie_latency_ps: u64,
    pub hcas: Vec<HostHcaReport>,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct HostHcaReport {
    pub name: String,
    pub dma_bytes_read: u64,
    pub dma_bytes_written: u64,
    /// time the read direction of the link was busy
    pub dma_read_busy_ps: u64,
    pub dma_write_busy_ps: u64,
    pub tx_commands: u64,
    pub rx_commands: u64,
}

impl HostModel {
    pub(super) fn new(tm: HostTiming, nhcas: usize) -> HostModel {
        let h = HostHca {
            tx: vec![0; tm.tx_engines],
            rx: vec![0; tm.rx_engines],
            ..Default::default()
        };
        HostModel {
            tm,
            hcas: vec![h; nhcas],
            msgs: HashMap::default(),
            pending: BTreeMap::new(),
        }
    }

    /// Earliest pending landing (a point the sink drains do not bound).
    pub(super) fn next_landing(&self) -> Option<u64> {
        self.pending.first_key_value().map(|(&t, _)| t)
    }
}

/// Are the read direction or the TX engines of HCA `h` busy beyond the
/// fabric's range?
fn hh_free_beyond(f: &Fabric, h: usize) -> bool {
    f.rdma.host.as_ref().is_some_and(|hm| {
        let x = &hm.hcas[h];
        x.rd_free > MAX_TIME_PS || x.tx.iter().any(|&t| t > MAX_TIME_PS)
    })
}

/// Does a message of this role carry payload across PCIe?
fn has_payload(role: u8) -> bool {
    matches!(role, R_SEND | R_PUT_DATA | R_GET_RESP)
}

impl Fabric {
    /// Message `m` is posted to HCA `h` now (injection or creation by the
    /// target): TX command, then the DMA read of its payload.
    pub(super) fn host_post(&mut self, h: usize, m: u32) {
        let now = self.now;
        let msg = &self.msgs[m as usize];
        let (role, bytes) = (msg.role, msg.bytes);
        let Some(hm) = self.rdma.host.as_mut() else {
            return;
        };
        let hh = &mut hm.hcas[h];
        let Some(done) = run_command(&mut hh.tx, now, hm.tm.cmd) else {
            return self.host_overflow(m);
        };
        hh.tx_cmds += 1;
        let start = if has_payload(role) {
            let s = done.max(hh.rd_free);
            let Some(end) = hm.tm.link_time(bytes, bytes).and_then(|d| s.checked_add(d)) else {
                return self.host_overflow(m);
            };
            hh.rd_busy += end - s;
            hh.rd_free = end;
            hh.bytes_read = hh.bytes_read.saturating_add(bytes);
            s
        } else {
            done
        };
        hm.msgs.entry(m).or_default().rd_start = start;
        // every later time of this read (start + part + latency) is then
        // below 2^62 + 10^15 ps: no overflow
        if hh_free_beyond(self, h) {
            self.host_overflow(m);
        }
    }

    /// A host-model time beyond the fabric's range: a fatal error.
    fn host_overflow(&mut self, m: u32) {
        self.fail(format!(
            "host model: the DMA or NIC command of message {m} ends beyond the fabric's range ({MAX_TIME_PS} ps)"
        ));
    }

    /// Earliest creation time of the first flit of packet `pkt` of message
    /// `m` under the host model (0 when it is off).
    pub(super) fn host_pkt_ready(&self, m: u32, pkt: u32) -> u64 {
        let Some(hm) = self.rdma.host.as_ref() else {
            return 0;
        };
        let msg = &self.msgs[m as usize];
        let Some(mh) = hm.msgs.get(&m) else { return 0 };
        if !has_payload(msg.role) {
            return mh.rd_start;
        }
        let mtu = self.p.msg_mtu as u64;
        let end = if pkt + 1 >= msg.npkts {
            msg.bytes
        } else {
            ((pkt as u64 + 1) * mtu).min(msg.bytes)
        };
        // fits: host_post checked the whole read against MAX_TIME_PS
        mh.rd_start + hm.tm.link_time(end, msg.bytes).unwrap_or(0) + hm.tm.latency
    }

    /// The last flit of a packet of message `m` was consumed by the sink of
    /// HCA `h` now: RX command (first packet), DMA write of the packet's
    /// payload; returns the time the message has landed if this was its
    /// last packet.
    pub(super) fn host_pkt_consumed(&mut self, h: usize, m: u32) -> Option<u64> {
        let now = self.now;
        let msg = &self.msgs[m as usize];
        let (role, bytes, npkts, k) = (msg.role, msg.bytes, msg.npkts, msg.consumed_pkts);
        let mtu = self.p.msg_mtu as u64;
        let hm = self.rdma.host.as_mut()?;
        let hh = &mut hm.hcas[h];
        if k == 1 {
            let Some(done) = run_command(&mut hh.rx, now, hm.tm.cmd) else {
                self.host_overflow(m);
                return None;
            };
            hh.rx_cmds += 1;
            hm.msgs.entry(m).or_default().rx_done = done;
        }
        let rx_done = hm.msgs.get(&m).map_or(now, |x| x.rx_done);
        let landed = if has_payload(role) {
            let pb = if k == npkts {
                bytes.saturating_sub((npkts as u64 - 1) * mtu)
            } else {
                mtu.min(bytes)
            };
            let s = now.max(rx_done).max(hh.wr_free);
            let lat = hm.tm.latency;
            let Some(end) = hm.tm.link_time(pb, pb).and_then(|d| s.checked_add(d)) else {
                self.host_overflow(m);
                return None;
            };
            hh.wr_busy += end - s;
            hh.wr_free = end;
            hh.bytes_written = hh.bytes_written.saturating_add(pb);
            end.checked_add(lat)
        } else {
            Some(rx_done)
        };
        let Some(landed) = landed.filter(|&t| t <= MAX_TIME_PS) else {
            self.host_overflow(m);
            return None;
        };
        if k < npkts {
            return None;
        }
        hm.msgs.remove(&m);
        Some(landed)
    }

    /// Schedule the landing of message `m` at `t` (> now).
    pub(super) fn host_schedule_landing(&mut self, m: u32, t: u64) {
        if let Some(hm) = self.rdma.host.as_mut() {
            *hm.pending.entry(t).or_insert(0) += 1;
        }
        self.sched(t, Ev::HostLanded { msg: m });
    }

    /// Ev::HostLanded: every byte of message `m` is in host memory.
    pub(super) fn host_landed(&mut self, m: u32) {
        let now = self.now;
        if let Some(hm) = self.rdma.host.as_mut() {
            if let Some(c) = hm.pending.get_mut(&now) {
                *c -= 1;
                if *c == 0 {
                    hm.pending.remove(&now);
                }
            }
        }
        self.msg_landed(m, now);
    }

    pub(super) fn host_report(&self) -> Option<HostReport> {
        let hm = self.rdma.host.as_ref()?;
        Some(HostReport {
            pcie: self.p.pcie.clone(),
            pcie_transaction_ps: hm.tm.full_tlp,
            pcie_latency_ps: hm.tm.latency,
            hcas: self
                .hcas
                .iter()
                .zip(&hm.hcas)
                .map(|(h, x)| HostHcaReport {
                    name: self.node_names[h.node as usize].clone(),
                    dma_bytes_read: x.bytes_read,
                    dma_bytes_written: x.bytes_written,
                    dma_read_busy_ps: x.rd_busy,
                    dma_write_busy_ps: x.wr_busy,
                    tx_commands: x.tx_cmds,
                    rx_commands: x.rx_cmds,
                })
                .collect(),
        })
    }
}
