//! Output buffer (sec. 5.4): the queue in front of a link. Transmits data
//! flits and flow-control (FC) packets one at a time (wire time per
//! flit), with the periodic credit timer (`Tcred`) that starts the FC scan
//! and samples the queue depth; lazy when idle (see `engine/mod.rs`).

use super::dispatch::Ev;
use super::fabric::{Fabric, FabricError, NONE, NS};
use super::flits::{FId, FIdQueue};
use super::pervl::PerVl;
use super::trace::TraceKind;
use crate::stats::Stat;

/// One VL's flow-control counters of an obuf, side by side: a flit or an
/// FC scan of one VL touches one 32-byte block, not four cache lines.
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct ObVl {
    pub(super) fctbs: u64,
    pub(super) fccl: u64,
    pub(super) sent_fctbs: u64,
    pub(super) sent_fccl: u64,
}

/// Field order is the memory layout (`repr(C)`): what the
/// per-flit path reads and writes comes first, together (with VL 0's
/// counters right after it, about three cache lines); what only the
/// credit timer and the report read comes last.
#[repr(C)]
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Obuf {
    /// time of the pending pop (valid while `pop_pending`; direct.rs)
    pub(super) pop_at: u64,
    pub(super) pop_pending: bool,
    pub(super) inside: bool,
    pub(super) prev_data: bool,
    pub(super) dormant: bool,
    pub(super) fc_vl: u8,
    /// `ObufRxCred` events of this port in the queue (direct.rs)
    pub(super) rx_queued: u32,
    pub(super) q: FIdQueue,
    pub(super) size: usize,
    pub(super) bytes: u64,
    pub(super) data_flits: u64,
    pub(super) busy: u64,
    pub(super) first_tx: Option<u64>,
    pub(super) sources: Stat,
    pub(super) vl: PerVl<ObVl>,
    // credit timer and report
    pub(super) last_tick: u64,
    pub(super) fc_pkts: u64,
    pub(super) qdepth: Stat,
    pub(super) overflows: u64,
}

impl Obuf {
    /// An empty obuf of `size` flits on a network of `nvl` data VLs;
    /// nothing advertised yet (the first scan sends every VL's credits).
    pub(super) fn new(size: usize, nvl: usize) -> Obuf {
        Obuf {
            q: FIdQueue::new(),
            size,
            pop_pending: false,
            pop_at: 0,
            rx_queued: 0,
            inside: false,
            vl: PerVl::new(
                nvl,
                ObVl {
                    fctbs: 0,
                    fccl: 0,
                    sent_fctbs: u64::MAX,
                    sent_fccl: u64::MAX,
                },
            ),
            fc_vl: 0,
            prev_data: false,
            dormant: false,
            last_tick: 0,
            bytes: 0,
            data_flits: 0,
            fc_pkts: 0,
            busy: 0,
            first_tx: None,
            qdepth: Stat::default(),
            sources: Stat::default(),
            overflows: 0,
        }
    }
}

/// A credit tick (after the first period) that finds the obuf like this
/// lets the lazy timer put it to sleep: nothing to send, no pop pending,
/// and its credits advertised (or a packet in progress, which sends no FC
/// packet anyway).
pub(super) fn may_sleep(ob: &Obuf, nvl: usize) -> bool {
    !ob.pop_pending && ob.q.is_empty() && (ob.inside || synced(ob, nvl))
}

pub(super) fn synced(ob: &Obuf, nvl: usize) -> bool {
    (0..nvl).all(|v| ob.vl[v].fctbs == ob.vl[v].sent_fctbs && ob.vl[v].fccl == ob.vl[v].sent_fccl)
}

impl Fabric {
    pub(super) fn obuf_wake(&mut self, pi: usize) {
        let cred = self.tm.cred;
        let now = self.now;
        let seq = self.virt_seq(pi);
        let cur = self.cur_seq;
        let ob = &mut self.ports[pi].ob;
        ob.dormant = false;
        let kt = now / cred;
        let skipped = kt - ob.last_tick / cred;
        if skipped > 0 {
            ob.qdepth.add_n(0, skipped);
            ob.fc_vl = 0;
            ob.last_tick = kt * cred;
        }
        let tstar = kt * cred;
        // (the local order's keys leave the depth out: an event of
        // depth > 0 at the pop's instant runs after it, order.rs)
        let first = !self.local_order || self.local.depth0;
        let pend = now < tstar + NS || (now == tstar + NS && first && cur < seq);
        if pend {
            ob.pop_pending = true;
            ob.pop_at = tstar + NS;
            let ev = Ev::ObufPopTimer { port: pi as u32 };
            if tstar + NS == now && self.local.shuffle.is_some() {
                self.local_insert_now(seq, ev);
            } else {
                self.push_key(tstar + NS, seq, ev);
            }
        } else if !ob.inside {
            // The always-ticking model's wake-up pop at tstar + 1 ns has
            // already run: between packets it scanned every VL (all in
            // sync while dormant) and left the FC pointer past the last
            // one, so no FC packet may go out before the next tick.
            ob.fc_vl = self.nvl as u8;
        }
        self.push_key(tstar + cred, seq, Ev::ObufTick { port: pi as u32 });
    }

    /// New credit limit of VL `v` from this port's own ibuf (to be
    /// advertised by the next FC packet). Wakes a dormant obuf first: the
    /// limit may differ from what it last sent.
    #[inline]
    pub(super) fn obuf_rx_cred(&mut self, pi: usize, v: usize, limit: u64) {
        self.ports[pi].ob.rx_queued -= 1;
        if self.ports[pi].ob.dormant {
            self.obuf_wake(pi);
        }
        self.ports[pi].ob.vl[v].fccl = limit;
    }

    pub(super) fn obuf_tick(&mut self, pi: usize) {
        let now = self.now;
        let cred = self.tm.cred;
        let k = now / cred;
        let virt = self.lazy && k >= 1;
        // (the local order keys the timer's events alike whether or not
        // the tick ran, order.rs)
        let keyed = virt || (self.local_order && k >= 1);
        let seq = self.virt_seq(pi);
        let ob = &mut self.ports[pi].ob;
        ob.fc_vl = 0;
        ob.last_tick = now;
        if virt && may_sleep(ob, self.nvl) {
            ob.dormant = true;
            ob.qdepth.add(0);
            return;
        }
        let need_pop = !ob.pop_pending;
        if need_pop {
            ob.pop_pending = true;
            ob.pop_at = now + NS;
        }
        let qlen = ob.q.len() as u64;
        ob.qdepth.add(qlen);
        if keyed {
            if need_pop {
                self.push_key(now + NS, seq, Ev::ObufPopTimer { port: pi as u32 });
            }
            self.push_key(now + cred, seq, Ev::ObufTick { port: pi as u32 });
        } else {
            if need_pop {
                self.sched(now + NS, Ev::ObufPopTimer { port: pi as u32 });
            }
            self.sched(now + cred, Ev::ObufTick { port: pi as u32 });
        }
    }

    // always inlined into `dispatch`, its only caller (see there)
    #[inline(always)]
    pub(super) fn obuf_flit(&mut self, pi: usize, flit: FId) {
        if self.ports[pi].ob.dormant {
            self.obuf_wake(pi);
        }
        let ob = &mut self.ports[pi].ob;
        if ob.pop_pending {
            if ob.q.len() >= ob.size {
                if self.p.elastic_obuf {
                    ob.overflows += 1;
                } else {
                    let port = &self.ports[pi];
                    self.fatal = Some(FabricError::ObufOverflow {
                        node: self.node_names[port.node as usize].clone(),
                        port: port.local,
                        t: self.now,
                        len: port.ob.q.len(),
                        size: port.ob.size,
                    });
                    return;
                }
            }
            self.ports[pi].ob.q.push_back(flit);
        } else {
            self.obuf_transmit_data(pi, flit);
        }
    }

    /// Start the transmission of data flit `id`. Always inlined into its two
    /// callers (`obuf_flit`, `obuf_pop`; as `ibuf_handoff`).
    #[inline(always)]
    pub(super) fn obuf_transmit_data(&mut self, pi: usize, id: FId) {
        let now = self.now;
        let peer = self.ports[pi].peer;
        let flit = &self.fl[id as usize];
        let ob = &mut self.ports[pi].ob;
        if flit.sn == 0 && flit.pkt_flits > 1 {
            ob.inside = true;
        }
        if flit.last() {
            ob.inside = false;
        }
        ob.vl[flit.vl as usize].fctbs += 1;
        let w = self.tm.wire[flit.bytes as usize];
        ob.bytes += flit.bytes as u64;
        ob.data_flits += 1;
        ob.busy += w;
        ob.sources.add(flit.src as u64);
        if ob.first_tx.is_none() {
            ob.first_tx = Some(now);
        }
        ob.pop_pending = true;
        ob.pop_at = now + w;
        self.trace(TraceKind::Send, pi, id);
        if self.loss.is_some() && self.fl[id as usize].last() {
            self.loss_wire(pi, id);
        }
        if peer == NONE {
            let msg = format!(
                "flit for LID {} routed to unconnected port {} of {}",
                self.fl[id as usize].dst,
                self.ports[pi].local,
                self.node_names[self.ports[pi].node as usize]
            );
            self.fail(msg);
            return;
        }
        self.sched_link(Ev::IbufFlit {
            port: peer,
            flit: id,
        });
        self.sched(now + w, Ev::ObufPop { port: pi as u32 });
    }

    // always inlined into `dispatch`, its only caller (see there)
    #[inline(always)]
    pub(super) fn obuf_pop(&mut self, pi: usize) {
        let now = self.now;
        let nvl = self.nvl;
        let ob = &mut self.ports[pi].ob;
        ob.pop_pending = false;
        if ob.prev_data {
            self.sched_arb_kick(pi);
        }
        let ob = &mut self.ports[pi].ob;
        if !ob.inside {
            while (ob.fc_vl as usize) < nvl {
                let v = ob.fc_vl as usize;
                ob.fc_vl += 1;
                if ob.vl[v].fctbs != ob.vl[v].sent_fctbs || ob.vl[v].fccl != ob.vl[v].sent_fccl {
                    ob.vl[v].sent_fctbs = ob.vl[v].fctbs;
                    ob.vl[v].sent_fccl = ob.vl[v].fccl;
                    let w = self.tm.wire_fc;
                    ob.bytes += 8;
                    ob.fc_pkts += 1;
                    ob.busy += w;
                    if ob.first_tx.is_none() {
                        ob.first_tx = Some(now);
                    }
                    ob.pop_pending = true;
                    ob.pop_at = now + w;
                    ob.prev_data = false;
                    let peer = self.ports[pi].peer;
                    self.sched_link(Ev::IbufFc {
                        port: peer,
                        vl: v as u8,
                    });
                    self.sched(now + w, Ev::ObufPop { port: pi as u32 });
                    return;
                }
            }
        }
        let ob = &mut self.ports[pi].ob;
        if let Some(f) = ob.q.pop_front() {
            ob.prev_data = true;
            self.obuf_transmit_data(pi, f);
        } else {
            ob.prev_data = false;
        }
    }
}
