//! Stalled flows (`Report::stall`): messages that have stopped advancing
//! while the run goes on. Computed from state the engine keeps anyway (a
//! message's first-flit stamp and completion, a sink's last consumption,
//! the arbiters' credit counters and head-of-queue slots) when a report is
//! made, never per event: the hot loop is unchanged.
//!
//! Rule. A message is *stalled* at the report's instant `now` when it is
//! pending (not completed), its first flit was generated, and neither that
//! nor the consumption of one of its packets at its sink happened during
//! the last `max(W, 4 n t)`: `W` = max(100 us, now / 10), `n` the started
//! pending messages to the same destination and `t` the sink's drain time
//! of one of the message's packets (a fair share of a destination that `n`
//! flows share gives each a packet about every `n t`, so a large incast
//! advancing at its fair rate is not reported). In a true deadlock (no
//! foreground event left and either a run found the deadlock or a quiet
//! cycle passed, the rule of `run.rs`) every started pending message is
//! stalled. The output ports that hold a packet head longer than the
//! credits of its VL are listed with the flits waiting for them: the ports
//! where the flows stand.

use super::fabric::{Fabric, NONE};
use crate::stats::{BlockedPort, StallReport, StalledMsg};

/// The shortest window of no progress reported as a stall (100 us).
pub const STALL_MIN_WINDOW_PS: u64 = 100_000_000;

/// Entries of the `messages` and `blocked_ports` lists kept in a
/// report (the totals count all).
const LIST_MAX: usize = 64;

impl Fabric {
    /// The stalled messages now, or None when there are none (see the
    /// module documentation for the rule).
    pub fn stall_report(&self) -> Option<StallReport> {
        if self.in_flight == 0 {
            return None;
        }
        let now = self.now;
        // no foreground event left, and either a run found the deadlock or
        // a full quiet cycle has passed (run.rs's rule)
        let deadlock = self.fg_pending() == 0
            && (self.deadlock_seen || now >= self.last_fg.saturating_add(self.quiet_window()));
        let window = if deadlock {
            now.saturating_sub(self.last_fg)
        } else {
            STALL_MIN_WINDOW_PS.max(now / 10)
        };
        if now < window {
            return None;
        }
        // started pending messages per destination (the fair-share term)
        let mut per_dst = vec![0u32; self.hcas.len()];
        let mut pending = 0u64;
        for m in &self.msgs {
            if m.done.is_none() {
                pending += 1;
                if m.first_stamp.is_some() {
                    if let Some(x) = per_dst.get_mut(m.dst_hca as usize) {
                        *x += 1;
                    }
                }
            }
        }
        // the sink's drain time of a packet of `bytes` (full flits)
        let flit_drain = self
            .tm
            .drain
            .get(self.p.flit_size as usize)
            .copied()
            .unwrap_or(0);
        let drain = |bytes: u32| -> u64 { self.p.flits_of(bytes).0 as u64 * flit_drain };
        let mut stalled: Vec<StalledMsg> = Vec::new();
        let mut dsts = vec![false; self.hcas.len()];
        for (id, m) in self.msgs.iter().enumerate() {
            if m.done.is_some() {
                continue;
            }
            let Some(t0) = m.first_stamp else { continue };
            let since = t0.max(m.last_consumed);
            let d = m.dst_hca as usize;
            let need = if deadlock {
                window
            } else {
                let n = per_dst.get(d).copied().unwrap_or(1) as u64;
                let pkt = m.pkt_bytes(0);
                window.max(4u64.saturating_mul(n).saturating_mul(drain(pkt)))
            };
            if since.saturating_add(need) > now {
                continue;
            }
            if let Some(x) = dsts.get_mut(d) {
                *x = true;
            }
            stalled.push(StalledMsg {
                id: id as u64,
                src: self.node_names[self.hcas[m.src as usize].node as usize].clone(),
                dst: self.hcas.get(d).map_or_else(
                    || format!("LID {}", m.dst_lid),
                    |h| self.node_names[h.node as usize].clone(),
                ),
                packets_consumed: m.consumed_pkts as u64,
                packets: m.npkts as u64,
                since_ps: since,
            });
        }
        if stalled.is_empty() {
            return None;
        }
        stalled.sort_by(|a, b| a.since_ps.cmp(&b.since_ps).then(a.id.cmp(&b.id)));
        let nstalled = stalled.len() as u64;
        let since = stalled[0].since_ps;
        stalled.truncate(LIST_MAX);
        let mut ports = self.credit_blocked_ports();
        let nports = ports.len() as u64;
        ports.truncate(LIST_MAX);
        Some(StallReport {
            window_ps: window,
            at_ps: now,
            deadlock,
            messages_pending: pending,
            messages_stalled: nstalled,
            since_ps: since,
            destinations_stalled: dsts.iter().filter(|&&x| x).count() as u64,
            messages: stalled,
            blocked_ports_total: nports,
            blocked_ports: ports,
        })
    }

    /// Output ports (and VLs) whose arbiter holds a packet head longer than
    /// the VL's credits, most waiting flits first.
    fn credit_blocked_ports(&self) -> Vec<BlockedPort> {
        let nvl = self.nvl;
        let mut out = Vec::new();
        for port in &self.ports {
            if port.peer == NONE {
                continue;
            }
            let a = &port.arb;
            for v in 0..nvl {
                let credits = a.vl[v].fccl as i64 - a.vl[v].fctbs as i64;
                let mut head = 0u16;
                let mut hoq = 0u64;
                for p in 0..a.inputs as usize {
                    let h = &a.hoq[p * nvl + v];
                    if h.id != NONE {
                        hoq += 1;
                        if h.first as i64 > credits && h.first > head {
                            head = h.first;
                        }
                    }
                }
                if head == 0 {
                    continue;
                }
                // flits queued toward this output on this VL in the
                // switch's input buffers (an HCA's generator holds its own)
                let mut queued = 0u64;
                if port.sw != NONE {
                    let out_idx = port.local as usize * nvl + v;
                    for q in 0..port.nports as usize {
                        let ib = &self.ports[port.base as usize + q].ib;
                        if let Some(x) = ib.q.get(out_idx) {
                            queued += x.len() as u64;
                        }
                    }
                }
                let peer = &self.ports[port.peer as usize];
                out.push(BlockedPort {
                    node: self.node_names[port.node as usize].clone(),
                    port: port.local,
                    peer: format!("{}[{}]", self.node_names[peer.node as usize], peer.local),
                    vl: v as u8,
                    flits_waiting: hoq + queued,
                    head_packet_flits: head as u64,
                    credits,
                });
            }
        }
        out.sort_by(|a, b| {
            b.flits_waiting
                .cmp(&a.flits_waiting)
                .then_with(|| a.node.cmp(&b.node))
                .then(a.port.cmp(&b.port))
                .then(a.vl.cmp(&b.vl))
        });
        out
    }
}
