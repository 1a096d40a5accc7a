//! Generator (sec. 5.2): packetises the message in service into flits, one
//! per push period (or per CCT-paced injection interval with congestion
//! control), into per-VL queues of `max_queued_per_vl`; hands the head
//! flit of a VL to the HCA's arbiter when its HoQ slot is free, stamping
//! the injection time `Tgpop` later. CNPs of the HCA's sink are served
//! first.

use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

use super::app::PktPos;
use super::dispatch::Ev;
use super::fabric::{Fabric, NONE};
use super::flits::{FId, Flit, F_CNP, F_LCTL, F_NOSW, F_RTX};
use super::trace::TraceKind;

#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Gen {
    pub(super) cur: u32,
    pub(super) pos: PktPos,
    pub(super) vlq: Vec<VecDeque<FId>>,
    pub(super) cnpq: VecDeque<FId>,
    pub(super) push_pending: bool,
    pub(super) serial: HashMap<u16, u32>,
    pub(super) bytes_sent: u64,
    pub(super) flits_sent: u64,
    pub(super) first_flit: Option<u64>,
}

impl Gen {
    /// An idle generator with one queue per VL.
    pub(super) fn new(nvl: usize) -> Gen {
        Gen {
            cur: NONE,
            pos: PktPos::default(),
            vlq: (0..nvl).map(|_| VecDeque::new()).collect(),
            cnpq: VecDeque::new(),
            push_pending: false,
            serial: HashMap::default(),
            bytes_sent: 0,
            flits_sent: 0,
            first_flit: None,
        }
    }
}

impl Fabric {
    pub(super) fn gen_new_msg(&mut self, h: usize, m: u32) {
        if self.qp.is_some() {
            return self.qp_gen_new_msg(h, m);
        }
        let pos = PktPos::start(&self.p, &self.msgs[m as usize], 0);
        let g = &mut self.hcas[h].gen;
        g.cur = m;
        g.pos = pos;
        if g.push_pending {
            return;
        }
        self.gen_one(h);
    }

    /// The push timer: generate the next flit (if a VL queue has room).
    #[inline]
    pub(super) fn gen_push(&mut self, h: usize) {
        self.hcas[h].gen.push_pending = false;
        self.gen_one(h);
    }

    pub(super) fn gen_one(&mut self, h: usize) {
        // several send queues or retransmissions (qp.rs, loss.rs)
        if (self.qp.is_some() || self.loss.is_some()) && self.gen_one_ext(h) {
            return;
        }
        let now = self.now;
        let hca = &mut self.hcas[h];
        let g = &mut hca.gen;
        if g.cur == NONE {
            return;
        }
        let m = &self.msgs[g.cur as usize];
        let v = m.vl as usize;
        if g.vlq[v].len() >= self.p.max_queued_per_vl as usize {
            return;
        }
        if g.pos.sn == 0 && self.rdma.host.is_some() {
            // the packet's payload must be in the NIC (pcie.rs)
            let (cur, pkt) = (g.cur, g.pos.pkt);
            let ready = self.host_pkt_ready(cur, pkt);
            if ready > now {
                self.hcas[h].gen.push_pending = true;
                self.sched(ready, Ev::GenPush { h: h as u32 });
                return;
            }
        }
        let hca = &mut self.hcas[h];
        let g = &mut hca.gen;
        let m = &self.msgs[g.cur as usize];
        // create the flit
        let pos = g.pos;
        let serial = if pos.sn == 0 {
            let s = g.serial.entry(m.dst_lid).or_insert(0);
            *s += 1;
            *s
        } else {
            0
        };
        let flit = Flit {
            msg: g.cur,
            pkt: pos.pkt,
            inject: 0,
            t_in: 0,
            serial,
            src: hca.lid,
            dst: m.dst_lid,
            sn: pos.sn,
            pkt_flits: pos.pkt_flits,
            bytes: pos.bytes(self.p.flit_size),
            vl: v as u8,
            flags: F_NOSW,
        };
        let msg_done = !g.pos.advance(&self.p, m, m.npkts);
        if msg_done {
            g.cur = NONE;
        }
        self.flits_generated += 1;
        let port = hca.port as usize;
        let dst = flit.dst;
        let id = self.fl_alloc(flit);
        if self.hcas[h].gen.vlq[v].is_empty() && self.hoq_free(port, 0, v) {
            self.gen_send_flit(h, id);
        } else {
            self.hcas[h].gen.vlq[v].push_back(id);
        }
        if msg_done {
            self.sched(now, Ev::AppDone { h: h as u32 });
        }
        self.hcas[h].gen.push_pending = true;
        let period = self.push_period(h, dst);
        self.sched(now + period, Ev::GenPush { h: h as u32 });
    }

    /// Push period; in CC mode the injection interval of the flow of the
    /// message in service (sec. 12.1 item 5).
    #[inline]
    pub(super) fn push_period(&self, h: usize, dst: u16) -> u64 {
        if self.p.cc_enabled {
            let key = if self.p.cc_per_destination { dst } else { 0 };
            let i = self.hcas[h].cc.ccti.get(&key).copied().unwrap_or(0);
            self.tm.cc_base + self.tm.cct[i as usize]
        } else {
            self.tm.push
        }
    }

    pub(super) fn gen_send_flit(&mut self, h: usize, id: FId) {
        let now = self.now;
        let mut flit = self.fl[id as usize];
        let d = self.tm.gpop[flit.bytes as usize];
        flit.inject = now + d;
        self.fl[id as usize].inject = flit.inject;
        let port = self.hcas[h].port;
        {
            let g = &mut self.hcas[h].gen;
            g.bytes_sent += flit.bytes as u64;
            g.flits_sent += 1;
            if g.first_flit.is_none() {
                g.first_flit = Some(now);
            }
        }
        if flit.flags & (F_CNP | F_RTX | F_LCTL) == 0 && flit.pkt == 0 && flit.sn == 0 {
            self.msgs[flit.msg as usize].first_stamp = Some(flit.inject);
        }
        if self.p.cc_enabled && self.hcas[h].cc.first_inj.is_none() {
            self.hcas[h].cc.first_inj = Some(now);
        }
        self.trace(TraceKind::Inject, port as usize, id);
        self.sched(
            now + d,
            Ev::ArbFlit {
                port,
                input: 0,
                flit: id,
            },
        );
    }

    pub(super) fn gen_sent(&mut self, h: usize, v: usize) {
        // end-to-end ACK/NAKs of lossy links go first, between packets (loss.rs)
        if v == 0 && self.loss.is_some() && self.loss_ctl_sent(h) {
            return;
        }
        let port = self.hcas[h].port as usize;
        // CNPs are served first (sec. 12.3, thesis structure).
        if v == 0 && !self.hcas[h].gen.cnpq.is_empty() {
            if self.hoq_free(port, 0, 0) {
                let f = self.hcas[h].gen.cnpq.pop_front().unwrap();
                self.gen_send_flit(h, f);
            }
            return;
        }
        if self.hcas[h].gen.vlq[v].is_empty() || !self.hoq_free(port, 0, v) {
            return;
        }
        let f = self.hcas[h].gen.vlq[v].pop_front().unwrap();
        let dst = self.fl[f as usize].dst;
        self.gen_send_flit(h, f);
        if !self.hcas[h].gen.push_pending {
            self.hcas[h].gen.push_pending = true;
            let cur = self.hcas[h].gen.cur;
            let dst = if cur == NONE {
                dst
            } else {
                self.msgs[cur as usize].dst_lid
            };
            let period = self.push_period(h, dst);
            self.sched(self.now + period, Ev::GenPush { h: h as u32 });
        }
    }
}
