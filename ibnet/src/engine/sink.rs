//! Sink (sec. 5.6) and its statistics (sec. 8): the FIFO of arrived flits,
//! drained one flit per drain time (plus the optional per-packet gap after
//! a packet's last flit), stopped while the hiccup is on; the
//! latency, out-of-order and bandwidth statistics; message completion.
//! A CNP (congestion control) is handed to `cc.rs` on arrival.

use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

use super::dispatch::Ev;
use super::fabric::{Fabric, FabricError, NS};
use super::flits::{FId, F_BAD, F_CNP, F_FECN, F_LCTL, F_RTX};
use super::rdma::{OpPoint, R_SEND};
use super::trace::TraceKind;
use crate::stats::Stat;

#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct SinkSt {
    pub(super) fifo: VecDeque<FId>,
    pub(super) drain_pending: bool,
    /// time of the pending drain (valid while `drain_pending`)
    pub(super) drain_at: u64,
    pub(super) hiccup_on: bool,
    pub(super) lat: Stat,
    pub(super) f2f: Stat,
    pub(super) pft: Stat,
    pub(super) wait: Stat,
    pub(super) last_consumed: u64,
    pub(super) bytes_after_start: u64,
    /// every flit's bytes (the bandwidth of a run shorter than the window)
    pub(super) bytes_total: u64,
    pub(super) vl_flits: [u64; 8],
    pub(super) ooo_next: HashMap<u16, u32>,
    pub(super) ooo_window: Stat,
    pub(super) ooo: u64,
    pub(super) inorder: u64,
    pub(super) cnps_in: u64,
    pub(super) cnps_out: u64,
    pub(super) enough_lat: Stat,
    pub(super) enough_gap: Stat,
}

impl Fabric {
    pub(super) fn sink_flit(&mut self, h: usize, id: FId) {
        let now = self.now;
        let flit = self.fl[id as usize];
        if flit.dst != self.hcas[h].lid {
            self.fail(format!(
                "flit for LID {} reached the sink of LID {}",
                flit.dst, self.hcas[h].lid
            ));
            return;
        }
        if flit.flags & F_CNP != 0 {
            // a CNP is not data: congestion control takes it (cc.rs)
            self.cc_cnp_arrived(h, id, flit.src, flit.vl);
            return;
        }
        if flit.flags & F_LCTL != 0 {
            // an end-to-end ACK/NAK (loss.rs)
            return self.loss_ctl_arrived(h, id);
        }
        // lossy links: the receiver's check of a packet's last flit
        let discard = self.loss.is_some() && flit.last() && !self.loss_accept(h, id);
        let start = self.tm.start_stat;
        let m = &mut self.msgs[flit.msg as usize];
        let s = &mut self.hcas[h].sink;
        // "64 per flit": a flit occupies flit_size bytes (sec. 8)
        if now >= start {
            s.bytes_after_start += self.p.flit_size as u64;
        }
        s.bytes_total += self.p.flit_size as u64;
        if flit.sn == 0 {
            // out-of-order bookkeeping per source
            let next = s.ooo_next.entry(flit.src).or_insert(1);
            if flit.serial == *next {
                s.inorder += 1;
                *next += 1;
            } else if flit.serial > *next {
                s.ooo += 1;
                s.ooo_window.add((flit.serial - *next) as u64);
                *next = flit.serial + 1;
            } else {
                self.fatal = Some(FabricError::Fatal {
                    t: now,
                    msg: format!(
                        "repeated packet serial {} from LID {}",
                        flit.serial, flit.src
                    ),
                });
                return;
            }
            if flit.pkt + 1 == m.npkts && flit.flags & F_RTX == 0 {
                if let Some(st) = m.first_stamp {
                    s.f2f.add(now - st);
                }
            }
        }
        if flit.last() && !discard {
            m.arrived_pkts += 1;
            if self.p.rep_first_packets > 0 && m.arrived_pkts == self.p.rep_first_packets {
                if let Some(st) = m.first_stamp {
                    s.enough_lat.add(now - st);
                }
                m.enough_at = Some(now);
            }
            if m.arrived_pkts == m.npkts {
                if let Some(st) = m.first_stamp {
                    s.lat.add(now - st);
                    m.net_latency = Some(now - st);
                }
                if let Some(e) = m.enough_at {
                    s.enough_gap.add(now - e);
                }
            }
        }
        // CC notification: FECN-marked head -> CNP back to the source
        let fecn = self.p.cc_enabled && flit.sn == 0 && flit.flags & F_FECN != 0;
        if !s.drain_pending {
            s.drain_pending = true;
            let d = self.tm.drain[flit.bytes as usize];
            s.drain_at = now + d;
            self.sched(now + d, Ev::SinkDrain { h: h as u32 });
        }
        self.hcas[h].sink.fifo.push_back(id);
        self.sink_held += 1;
        if fecn {
            self.send_cnp(h, flit.src, flit.vl);
        }
    }

    pub(super) fn sink_drain(&mut self, h: usize) {
        let now = self.now;
        let s = &mut self.hcas[h].sink;
        s.drain_pending = false;
        if s.hiccup_on || s.fifo.is_empty() {
            return;
        }
        let f = s.fifo.pop_front().unwrap();
        s.drain_pending = true;
        self.sink_held -= 1;
        let fl = self.fl[f as usize];
        // the per-packet receive gap (`sink_packet_gap_periods`, 0 = the
        // reference): after a packet's last flit the timer is re-armed that
        // much later, so the sink idles before the next packet's first
        // flit. Only the re-arm time changes, not the event order; flits
        // arriving meanwhile queue as usual (the timer is pending), and a
        // hiccup that is ON when the timer fires absorbs the gap.
        let d = self.tm.drain[fl.bytes as usize] + if fl.last() { self.tm.pkt_gap } else { 0 };
        // consume, then re-arm (sec. 5.6 and the reference's order; the two
        // events get consecutive sequence numbers, so either order gives
        // the same run)
        self.consume(h, f);
        self.hcas[h].sink.drain_at = now + d;
        self.sched(now + d, Ev::SinkDrain { h: h as u32 });
    }

    pub(super) fn consume(&mut self, h: usize, id: FId) {
        let now = self.now;
        let pi = self.hcas[h].port;
        self.trace(TraceKind::Consume, pi as usize, id);
        let f = self.fl[id as usize];
        self.fl_release(id);
        self.flits_consumed += 1;
        let start = self.tm.start_stat;
        let s = &mut self.hcas[h].sink;
        s.vl_flits[f.vl as usize] += 1;
        s.last_consumed = now;
        if now > start {
            s.wait.add(now - f.inject);
            if f.last() {
                s.pft.add(now - f.inject);
            }
        }
        // one-sided operations and the host model (rdma.rs) take over
        // after the packet's consumption is accounted for
        let mut rdma = false;
        if f.last() && f.flags & F_BAD == 0 {
            let host = self.host_model_on();
            let m = &mut self.msgs[f.msg as usize];
            m.consumed_pkts += 1;
            m.last_consumed = now;
            if m.role != R_SEND || host {
                rdma = true;
            } else if m.consumed_pkts == m.npkts {
                self.op_point(f.msg, OpPoint::Delivered, now, true);
            }
        }
        self.sched(
            now,
            Ev::IbufSent {
                port: pi,
                vl: f.vl,
                last: f.last(),
                out: 0,
            },
        );
        if rdma {
            self.rdma_pkt_consumed(h, f.msg);
        }
    }

    pub(super) fn sink_hiccup(&mut self, h: usize) {
        let now = self.now;
        let s = &mut self.hcas[h].sink;
        if !s.hiccup_on {
            s.hiccup_on = true;
            self.sched(now + self.tm.hiccup_on, Ev::SinkHiccup { h: h as u32 });
        } else {
            s.hiccup_on = false;
            // The drain restart is scheduled before the next toggle (as
            // the reference's sink does; sec. 5.6 leaves the order open).
            // It matters only when the OFF phase is 1 ns: the drain then
            // runs before the sink turns ON again.
            if !s.drain_pending {
                s.drain_pending = true;
                s.drain_at = now + NS;
                self.sched(now + NS, Ev::SinkDrainTimer { h: h as u32 });
            }
            self.sched(now + self.tm.hiccup_off, Ev::SinkHiccup { h: h as u32 });
        }
    }
}
