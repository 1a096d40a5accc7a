//! Input buffer (sec. 5.5): the receiving end of a link. Per-VL credits,
//! routing of a packet head through the switch's forwarding table, the
//! per-(output, VL) queues, the ISW hand-off to the output's arbiter, and
//! the credit advertisement back to the peer obuf. Also the congestion
//! detection of sec. 12.1 (threshold on the queues toward one output).

use super::dispatch::Ev;
use super::fabric::{Fabric, NONE, NS};
use super::flits::{FId, FIdQueue, F_CAND, F_CNP, F_FECN, F_NOSW};
use super::pervl::PerVl;
use super::trace::TraceKind;
use crate::stats::Stat;

/// One VL's credit state of an ibuf and the statistic of its free
/// credits, side by side: a flit arrival updates both, so they share a
/// 96-byte block instead of the statistic living in a separate heap
/// allocation (one more cache line and a pointer load per flit).
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct IbVl {
    pub(super) free: i64,
    pub(super) max_free: i64,
    pub(super) abr: u64,
    pub(super) free_stat: Stat,
}

/// Field order is the memory layout (`repr(C)`): the per-flit
/// fields first, together, then the per-VL credits.
#[repr(C)]
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Ibuf {
    pub(super) cur_msg: u32,
    pub(super) cur_pkt: u32,
    pub(super) cur_src: u16,
    pub(super) cur_out: u16,
    pub(super) nbs: u32,
    pub(super) last: u64,
    /// Q[out * nvl + vl]
    pub(super) q: Vec<FIdQueue>,
    pub(super) vl: PerVl<IbVl>,
    pub(super) drops: u64,
}

impl Ibuf {
    /// An ibuf with `nout` outputs (1 at an HCA) and the static credits
    /// `statics[v]` per VL.
    pub(super) fn new(nout: usize, nvl: usize, statics: &[i64]) -> Ibuf {
        let mut vl = PerVl::new(nvl, IbVl::default());
        for (x, &s) in vl.iter_mut().zip(&statics[..nvl]) {
            x.free = s;
            x.max_free = s;
        }
        Ibuf {
            vl,
            q: (0..nout * nvl).map(|_| FIdQueue::new()).collect(),
            cur_msg: NONE,
            cur_pkt: 0,
            cur_src: 0,
            cur_out: 0,
            nbs: 0,
            last: 0,
            drops: 0,
        }
    }
}

impl Fabric {
    // always inlined into `dispatch`, its only caller (see there)
    #[inline(always)]
    pub(super) fn ibuf_flit(&mut self, pi: usize, id: FId) {
        let now = self.now;
        let nvl = self.nvl;
        // copy before writing: a load right after a narrower store to the
        // same bytes stalls (no store forwarding)
        let mut flit = self.fl[id as usize];
        flit.t_in = now;
        self.fl[id as usize].t_in = now;
        self.trace(TraceKind::Recv, pi, id);
        let v = flit.vl as usize;
        let is_sw = self.ports[pi].hca == NONE;
        let nports = self.ports[pi].nports;
        let local = self.ports[pi].local;
        if flit.sn == 0 {
            if flit.dst == 0 {
                self.fail("data packet with destination LID 0".into());
                return;
            }
            let out = if is_sw && nports > 1 {
                let lft = &self.lfts[self.ports[pi].sw as usize];
                let Some(&o) = lft.get(flit.dst as usize) else {
                    let msg = format!(
                        "LID {} beyond the forwarding table of {}",
                        flit.dst, self.node_names[self.ports[pi].node as usize]
                    );
                    self.fail(msg);
                    return;
                };
                if flit.flags & F_NOSW == 0 && o == local {
                    let msg = format!(
                        "loopback: LID {} routed back out of arrival port {} of {}",
                        flit.dst, local, self.node_names[self.ports[pi].node as usize]
                    );
                    self.fail(msg);
                    return;
                }
                o
            } else {
                0
            };
            let ib = &mut self.ports[pi].ib;
            if (flit.pkt_flits as i64) > ib.vl[v].free && !self.p.lossy_mode {
                let msg = format!(
                    "packet of {} flits does not fit the {} free credits of VL {v}",
                    flit.pkt_flits, ib.vl[v].free
                );
                self.fail(msg);
                return;
            }
            ib.cur_msg = flit.msg;
            ib.cur_pkt = flit.pkt;
            ib.cur_src = flit.src;
            ib.cur_out = out;
            // CC detection (sec. 12.1): flits queued toward (out, vl) across
            // all input buffers of the switch, excluding this one.
            if self.p.cc_enabled
                && is_sw
                && out < nports
                && flit.flags & (F_CNP | F_FECN) == 0
                && self.cc_congested(pi, out as usize, v)
            {
                flit.flags |= F_CAND;
            }
        } else {
            let ib = &self.ports[pi].ib;
            if ib.cur_msg != flit.msg || ib.cur_pkt != flit.pkt || ib.cur_src != flit.src {
                self.fail("continuation flit of a packet other than the current one".into());
                return;
            }
        }
        if is_sw {
            flit.flags &= !F_NOSW;
        }
        self.fl[id as usize].flags = flit.flags;
        let out = self.ports[pi].ib.cur_out;
        if out >= nports {
            self.ports[pi].ib.drops += 1;
            self.flits_dropped += 1;
            self.fl_release(id);
            return;
        }
        if self.p.lossy_mode
            && flit.sn == 0
            && (flit.pkt_flits as i64) > self.ports[pi].ib.vl[v].free
        {
            // lossy: drop the whole packet
            self.ports[pi].ib.cur_out = u16::MAX;
            self.ports[pi].ib.drops += 1;
            self.flits_dropped += 1;
            self.fl_release(id);
            return;
        }
        let ib = &mut self.ports[pi].ib;
        ib.vl[v].free -= 1;
        ib.vl[v].abr += 1;
        ib.q[out as usize * nvl + v].push_back(id);
        let l = ib.vl[v].abr + ib.vl[v].free as u64;
        let fs = ib.vl[v].free as u64;
        ib.vl[v].free_stat.add(fs);
        let l = if self.p.lossy_mode {
            ib.vl[v].abr + ib.vl[v].max_free as u64
        } else {
            l
        };
        self.sched_rx_cred(pi, v as u8, l);
        self.ibuf_handoff(pi, out as usize, v);
    }

    /// An FC packet for VL `vl` arrived from the peer obuf: the arbiter of
    /// this port gets the peer's credit limit (ArbTxCred), then this ibuf
    /// takes the peer's FCTBS as its ABR and advertises its new limit to
    /// its own obuf (ObufRxCred), both at this instant, in that order.
    pub(super) fn ibuf_fc(&mut self, pi: usize, vl: u8) {
        let port = pi as u32;
        if self.tm.link > 0 && self.part.is_some() {
            self.par_fc_arrives(pi, vl);
        }
        let peer = &self.ports[self.ports[pi].peer as usize].ob;
        let (fctbs, fccl) = (
            peer.vl[vl as usize].sent_fctbs,
            peer.vl[vl as usize].sent_fccl,
        );
        self.sched_now(Ev::ArbTxCred {
            port,
            vl,
            limit: fccl,
        });
        let ib = &mut self.ports[pi].ib;
        let v = vl as usize;
        if ib.vl[v].abr < fctbs {
            ib.vl[v].abr = fctbs;
        }
        let l = ib.vl[v].abr + ib.vl[v].free as u64;
        self.sched_rx_cred(pi, vl, l);
    }

    /// The hand-off of the head of queue (o, v) to the output's arbiter
    /// (or the sink). Always inlined into its two callers (`ibuf_flit`,
    /// `ibuf_sent`): out of line, its call, prologue and epilogue were
    /// about a fifth of its cost.
    #[inline(always)]
    pub(super) fn ibuf_handoff(&mut self, pi: usize, o: usize, v: usize) {
        let nvl = self.nvl;
        let qi = o * nvl + v;
        if self.ports[pi].ib.q[qi].is_empty() {
            return;
        }
        let now = self.now;
        if self.ports[pi].hca != NONE {
            let f = self.ports[pi].ib.q[qi].pop_front().unwrap();
            let h = self.ports[pi].hca;
            self.sched_now(Ev::SinkFlit { h, flit: f });
            return;
        }
        let op = self.ports[pi].base as usize + o;
        let local = self.ports[pi].local as usize;
        if !self.hoq_free(op, local, v) {
            return;
        }
        let ib = &mut self.ports[pi].ib;
        let f = ib.q[qi].pop_front().unwrap();
        let mut target = self.fl[f as usize].t_in + self.tm.isw;
        if target <= ib.last {
            target = ib.last + NS;
        }
        let at = if target > now {
            ib.last = target;
            target
        } else {
            ib.last = now;
            now
        };
        self.sched(
            at,
            Ev::ArbFlit {
                port: op as u32,
                input: local as u16,
                flit: f,
            },
        );
    }

    // always inlined into `dispatch`, its only caller (see there)
    #[inline(always)]
    pub(super) fn ibuf_sent(&mut self, pi: usize, v: usize, last: bool, o: usize) {
        let ib = &mut self.ports[pi].ib;
        ib.vl[v].free += 1;
        if ib.vl[v].free > ib.vl[v].max_free {
            self.fail(format!("credits above the maximum on VL {v}"));
            return;
        }
        let l = if self.p.lossy_mode {
            ib.vl[v].abr + ib.vl[v].max_free as u64
        } else {
            ib.vl[v].abr + ib.vl[v].free as u64
        };
        self.sched_rx_cred(pi, v as u8, l);
        if self.ports[pi].hca == NONE {
            if last {
                self.ports[pi].ib.nbs -= 1;
                let base = self.ports[pi].base;
                for j in 0..self.ports[pi].nports as u32 {
                    self.sched_arb_kick((base + j) as usize);
                }
            }
            self.ibuf_handoff(pi, o, v);
        }
    }
}
