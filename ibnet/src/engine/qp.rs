//! Queue pairs (docs/rdma.md "Queue pairs"): several send queues
//! per HCA, served packet by packet round robin by the generator.
//!
//! The reference HCA (docs/model/fabric.md sec. 5.1, 5.2) has one app that hands one
//! message at a time to the generator, so a host sending to several peers
//! sends its messages one after another (`send_queues = "single"`, the
//! default; this module is then not used at all). A real HCA holds one
//! queue pair per connection and interleaves them. With
//! `send_queues = "per-destination"` every destination HCA has its own
//! send queue (QP number = destination HCA index); with `"per-message"`
//! every message has its own (QP number = message id).
//!
//! Each send queue behaves as the reference app does for its own messages:
//! FIFO, the head handed to the generator `msg2msg_gap` after it was
//! injected into an idle queue or after the queue's previous message was
//! fully generated (`Ev::QpDone`, zero delay, as `AppDone`).
//!
//! The generator treats the queues as the reference generator treats its
//! apps (sec. 5.2 generate-one, step 1), with the contiguous-packet limit
//! `max_cont_pkts` applied (the reference never applies it, Q9):
//!
//! 1. If the queue in service is inside a packet, it continues (the flits
//!    of a packet are never interleaved with another packet's) if its VL
//!    queue has room; otherwise the generator idles until a flit leaves
//!    that VL queue ("sent", which restarts the push timer).
//! 2. At a packet boundary a pending retransmission goes first (loss.rs).
//! 3. Otherwise the queue in service continues if it has started fewer
//!    than `max_cont_pkts` packets in a row and its VL queue has room.
//!    Otherwise the queues holding a message are scanned in increasing QP
//!    number, cyclically, starting after the one in service and ending with
//!    it; the first whose VL queue has room is served and its count of
//!    packets in a row starts again. A queue whose message ends leaves the
//!    scan; the next one after it is served.
//! 4. The flit is created and sent (or queued) as in sec. 5.2 steps 3-6:
//!    the per-destination serial on flit 0, "done" to the send queue
//!    after the message's last flit, then the push timer.

use std::collections::{BTreeMap, VecDeque};

use super::app::PktPos;
use super::dispatch::Ev;
use super::fabric::Fabric;
use super::flits::{Flit, F_NOSW};
use crate::params::Params;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SqMode {
    PerDestination,
    PerMessage,
}

/// The send queues of every HCA.
pub(super) struct QpState {
    mode: SqMode,
    max_cont: u32,
    hcas: Vec<QpHca>,
}

#[derive(Default)]
struct QpHca {
    /// Send queues with work, by QP number. A queue that has handed its
    /// last message to the generator and has none waiting is removed (it
    /// is created again, with the same number, by its next message).
    queues: BTreeMap<u32, SendQueue>,
    /// The messages in the generator, by increasing QP number (at most
    /// one per queue).
    slots: Vec<Slot>,
    /// QP number of the queue in service (None before the first packet).
    cur: Option<u32>,
    /// Packets the queue in service has started in a row.
    cont: u32,
}

#[derive(Default)]
struct SendQueue {
    waiting: VecDeque<u32>,
    /// the message handed to the generator
    in_gen: Option<u32>,
}

/// QP number of the standalone app's message (ibnet run's traffic modes:
/// one message at a time, paced by the app's own "done"): after every
/// send queue in the scan.
const APP_QP: u32 = u32::MAX;

/// A message in the generator and its position (as `Gen`'s own fields).
struct Slot {
    qp: u32,
    msg: u32,
    pos: PktPos,
}

impl QpState {
    /// None for the single (reference) queue.
    pub(super) fn new(p: &Params, nhca: usize) -> Option<Box<QpState>> {
        let mode = match p.send_queues.as_str() {
            "per-destination" => SqMode::PerDestination,
            "per-message" => SqMode::PerMessage,
            _ => return None,
        };
        Some(Box::new(QpState {
            mode,
            max_cont: p.max_cont_pkts,
            hcas: (0..nhca).map(|_| QpHca::default()).collect(),
        }))
    }
}

impl Fabric {
    fn qp_number(&self, msg: u32) -> u32 {
        match self.qp.as_ref().map(|q| q.mode) {
            Some(SqMode::PerMessage) => msg,
            _ => self.msgs[msg as usize].dst_hca,
        }
    }

    /// An injected message joins its send queue; an idle queue hands it to
    /// the generator after `msg2msg_gap`.
    pub(super) fn qp_inject(&mut self, h: usize, msg: u32) {
        let n = self.qp_number(msg);
        let st = &mut self.qp.as_mut().expect("qp mode").hcas[h];
        let idle = !st.queues.contains_key(&n);
        st.queues.entry(n).or_default().waiting.push_back(msg);
        if idle {
            self.qp_next(h, n);
        }
    }

    /// Hand the next message of queue `n` to the generator, or forget the
    /// queue if it has none.
    fn qp_next(&mut self, h: usize, n: u32) {
        let at = self.now + self.tm.gap;
        let st = &mut self.qp.as_mut().expect("qp mode").hcas[h];
        let Some(q) = st.queues.get_mut(&n) else {
            return;
        };
        match q.waiting.pop_front() {
            Some(m) => {
                q.in_gen = Some(m);
                self.sched(
                    at,
                    Ev::GenMsg {
                        h: h as u32,
                        msg: m,
                    },
                )
            }
            None => {
                st.queues.remove(&n);
            }
        }
    }

    /// The generator reported message `msg` of HCA `h` fully generated.
    pub(super) fn qp_done(&mut self, h: usize, msg: u32) {
        let n = self.qp_number(msg);
        self.qp_next(h, n);
    }

    /// A message reaches the generator: it takes its queue's place in the
    /// round robin; an idle generator starts at once (sec. 5.2).
    pub(super) fn qp_gen_new_msg(&mut self, h: usize, m: u32) {
        let n = self.qp_number(m);
        // a message of the standalone app did not come through a queue
        let queued = self.qp.as_ref().expect("qp mode").hcas[h]
            .queues
            .get(&n)
            .is_some_and(|q| q.in_gen == Some(m));
        let n = if queued { n } else { APP_QP };
        let pos = PktPos::start(&self.p, &self.msgs[m as usize], 0);
        let st = &mut self.qp.as_mut().expect("qp mode").hcas[h];
        let at = st.slots.partition_point(|s| s.qp < n);
        st.slots.insert(at, Slot { qp: n, msg: m, pos });
        if self.hcas[h].gen.push_pending {
            return;
        }
        self.gen_one(h);
    }

    /// Whether the generator of HCA `h` is between packets (a
    /// retransmission may start).
    pub(super) fn gen_at_boundary(&self, h: usize) -> bool {
        match &self.qp {
            Some(q) => {
                let st = &q.hcas[h];
                !st.slots
                    .iter()
                    .any(|s| Some(s.qp) == st.cur && s.pos.sn > 0)
            }
            None => self.hcas[h].gen.pos.sn == 0,
        }
    }

    /// The message whose packet the send queue in service has partly
    /// created, if any.
    pub(super) fn qp_mid_packet(&self, h: usize) -> Option<u32> {
        let st = &self.qp.as_ref()?.hcas[h];
        st.slots
            .iter()
            .find(|s| Some(s.qp) == st.cur && s.pos.sn > 0)
            .map(|s| s.msg)
    }

    /// Packets of message `m` (of HCA `h`) generated so far in its first
    /// pass: all of them once the message has left the generator.
    pub(super) fn first_pass_generated(&self, h: usize, m: u32) -> u32 {
        let npkts = self.msgs[m as usize].npkts;
        match &self.qp {
            Some(q) => q.hcas[h]
                .slots
                .iter()
                .find(|s| s.msg == m)
                .map_or(npkts, |s| s.pos.pkt),
            None => {
                let g = &self.hcas[h].gen;
                if g.cur == m {
                    g.pos.pkt
                } else {
                    npkts
                }
            }
        }
    }

    /// generate-one when several send queues or retransmissions are
    /// active; false: the reference generator (single queue) goes on.
    pub(super) fn gen_one_ext(&mut self, h: usize) -> bool {
        if self.loss.is_some() && self.gen_at_boundary(h) && self.loss_gen_one(h) {
            return true;
        }
        if self.qp.is_some() {
            self.qp_gen_one(h);
            return true;
        }
        false
    }

    /// generate-one over the send queues (rules 1, 3, 4 of the module doc).
    fn qp_gen_one(&mut self, h: usize) {
        let maxq = self.p.max_queued_per_vl as usize;
        let now = self.now;
        // with the host model a packet starts only once its payload is
        // DMA-read into the NIC (pcie.rs): a queue waiting for it cannot
        // proceed, the next one is served
        let host = self.rdma.host.is_some();
        let ready: Vec<u64> = if host {
            self.qp.as_ref().expect("qp mode").hcas[h]
                .slots
                .iter()
                .map(|s| {
                    if s.pos.sn == 0 {
                        self.host_pkt_ready(s.msg, s.pos.pkt)
                    } else {
                        0
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let qp = self.qp.as_mut().expect("qp mode");
        let max_cont = qp.max_cont;
        let st = &mut qp.hcas[h];
        if st.slots.is_empty() {
            return;
        }
        let gen = &self.hcas[h].gen;
        let msgs = &self.msgs;
        let room_vl = |s: &Slot| gen.vlq[msgs[s.msg as usize].vl as usize].len() < maxq;
        let room = |i: usize, s: &Slot| room_vl(s) && (!host || ready[i] <= now);
        let cur_i = st.cur.and_then(|c| st.slots.iter().position(|s| s.qp == c));
        let pick = match cur_i {
            Some(i) if st.slots[i].pos.sn > 0 => {
                if !room_vl(&st.slots[i]) {
                    return;
                }
                i
            }
            Some(i) if st.cont < max_cont && room(i, &st.slots[i]) => i,
            _ => {
                let len = st.slots.len();
                let start = match st.cur {
                    Some(c) => st.slots.iter().position(|s| s.qp > c).unwrap_or(0),
                    None => 0,
                };
                let Some(i) = (0..len)
                    .map(|k| (start + k) % len)
                    .find(|&i| room(i, &st.slots[i]))
                else {
                    // only payloads still in host memory: retry when the
                    // first of them (with room in its VL queue) is in
                    let wake = (0..len)
                        .filter(|&i| host && room_vl(&st.slots[i]))
                        .map(|i| ready[i])
                        .min();
                    if let Some(t) = wake {
                        self.hcas[h].gen.push_pending = true;
                        self.sched(t, Ev::GenPush { h: h as u32 });
                    }
                    return;
                };
                st.cur = Some(st.slots[i].qp);
                st.cont = 0;
                i
            }
        };
        let s = &mut st.slots[pick];
        if s.pos.sn == 0 {
            st.cont += 1;
        }
        let (msg, pos) = (s.msg, s.pos);
        let m = &self.msgs[msg as usize];
        let done = !s.pos.advance(&self.p, m, m.npkts);
        let app = st.slots[pick].qp == APP_QP;
        if done {
            st.slots.remove(pick);
        }
        let dst = m.dst_lid;
        self.gen_emit(
            h,
            msg,
            pos.pkt,
            pos.sn,
            pos.pkt_flits,
            pos.bytes(self.p.flit_size),
            0,
        );
        if done {
            let h = h as u32;
            // "done" to the message's send queue, or to the standalone app
            let ev = if app {
                Ev::AppDone { h }
            } else {
                Ev::QpDone { h, msg }
            };
            self.sched(self.now, ev);
        }
        self.gen_rearm(h, dst);
    }

    /// Create flit `sn` of packet `pkt` of message `msg` at the generator
    /// of HCA `h` and send it to the arbiter or queue it (sec. 5.2 steps
    /// 3-4): the same flit the reference generator makes, plus `flags`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gen_emit(
        &mut self,
        h: usize,
        msg: u32,
        pkt: u32,
        sn: u16,
        pkt_flits: u16,
        bytes: u16,
        flags: u8,
    ) {
        let m = &self.msgs[msg as usize];
        let (v, dst) = (m.vl as usize, m.dst_lid);
        let hca = &mut self.hcas[h];
        let serial = if sn == 0 {
            let s = hca.gen.serial.entry(dst).or_insert(0);
            *s += 1;
            *s
        } else {
            0
        };
        let flit = Flit {
            msg,
            pkt,
            inject: 0,
            t_in: 0,
            serial,
            src: hca.lid,
            dst,
            sn,
            pkt_flits,
            bytes,
            vl: v as u8,
            flags: F_NOSW | flags,
        };
        let port = hca.port as usize;
        self.flits_generated += 1;
        let id = self.fl_alloc(flit);
        if self.hcas[h].gen.vlq[v].is_empty() && self.hoq_free(port, 0, v) {
            self.gen_send_flit(h, id);
        } else {
            self.hcas[h].gen.vlq[v].push_back(id);
        }
    }

    /// Sec. 5.2 step 6: the push timer at `now + Tpush` (or the CC pacing).
    pub(super) fn gen_rearm(&mut self, h: usize, dst: u16) {
        self.hcas[h].gen.push_pending = true;
        let period = self.push_period(h, dst);
        self.sched(self.now + period, Ev::GenPush { h: h as u32 });
    }
}
