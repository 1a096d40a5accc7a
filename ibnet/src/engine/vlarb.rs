//! VL arbiter (sec. 5.3): one per output port. Holds one head-of-queue
//! (HoQ) slot per (input, VL), picks the next packet by round robin (or
//! FCFS, or the high/low VL tables when max_vl > 0), checks the obuf's
//! free space and the input's being-sent limit, and moves a flit every
//! `Tarb` to the obuf (after the VSW delay in a switch). Also the
//! congestion-control FECN marking of packet heads (sec. 12.1).

use super::dispatch::Ev;
use super::fabric::{Fabric, NONE, NS};
use super::flits::{FId, Flit, F_CAND, F_FECN};
use super::pervl::PerVl;
use crate::params::ArbEntry;

/// One head-of-queue slot of an arbiter, per (input, VL). The four fields
/// live together (16 bytes) so that a hand-off or a pick touches one cache
/// line instead of four arrays.
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct Hoq {
    /// arrival time of the flit (the VSW reference)
    pub(super) t_arr: u64,
    /// flit handle, NONE = empty
    pub(super) id: FId,
    /// the packet length in flits when the slot holds a first flit, else 0
    /// (the round-robin scan reads only this field)
    pub(super) first: u16,
    /// reserved by an input (isHoQFree succeeded, flit on its way)
    pub(super) res: bool,
}

const HOQ_EMPTY: Hoq = Hoq {
    t_arr: 0,
    id: NONE,
    first: 0,
    res: false,
};

/// One VL's credit counters of an arbiter, side by side.
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct ArbVl {
    pub(super) fccl: u64,
    pub(super) fctbs: u64,
}

/// Field order is the memory layout (`repr(C)`): the per-flit
/// fields first, together; the VL tables (maxVL > 0 only) last.
#[repr(C)]
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Arb {
    /// time of the pending pop (valid while `pop_pending`; direct.rs)
    pub(super) pop_at: u64,
    pub(super) last: u64,
    pub(super) pop_pending: bool,
    pub(super) inside: bool,
    pub(super) last_high: bool,
    pub(super) last_vl: u8,
    pub(super) inputs: u16,
    /// HoQ slots that hold a flit or are reserved for one on its way
    /// (`hoq_free` .. the send that empties the slot): 0 means no flit can
    /// reach this arbiter before an `ArbFlit` scheduled from now on
    /// (direct.rs, the idle kick)
    pub(super) slots: u32,
    // CC marking
    pub(super) mark_ctr: u32,
    pub(super) last_port: [u16; 8],
    /// per VL: bit p set iff input p's HoQ slot holds the first flit of a
    /// packet (`Hoq::first != 0`), for inputs below 64. The round-robin
    /// pick visits only those inputs instead of reading every input's
    /// slot (on a 36-port switch nine cache lines per arbitration, the
    /// largest single source of cache misses on the 1944-node network);
    /// arbiters with more than 64 inputs scan.
    pub(super) heads: PerVl<u64>,
    /// per (input, VL), index `input * nvl + vl`
    pub(super) hoq: Vec<Hoq>,
    pub(super) vl: PerVl<ArbVl>,
    /// table arbitration, on a network with more than one data VL only
    /// (a one-VL network never reads it: 208 bytes less per port)
    pub(super) tables: Option<Box<VlTables>>,
}

/// The high/low VL arbitration tables of an arbiter and their state
/// (maxVL > 0).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct VlTables {
    pub(super) high_left: i64,
    pub(super) idx_high: usize,
    pub(super) idx_low: usize,
    pub(super) high: [ArbEntry; 8],
    pub(super) low: [ArbEntry; 8],
    pub(super) used_high: [u32; 8],
    pub(super) used_low: [u32; 8],
}

impl Arb {
    /// An idle arbiter with `inputs` inputs and the VL arbitration tables;
    /// `high_left` = the high-priority limit in flits.
    pub(super) fn new(
        inputs: u16,
        nvl: usize,
        high: [ArbEntry; 8],
        low: [ArbEntry; 8],
        high_left: i64,
    ) -> Arb {
        Arb {
            inputs,
            slots: 0,
            hoq: vec![HOQ_EMPTY; inputs as usize * nvl],
            heads: PerVl::new(nvl, 0),
            vl: PerVl::new(nvl, ArbVl::default()),
            pop_pending: false,
            pop_at: 0,
            inside: false,
            last_vl: 0,
            last_port: [0; 8],
            last: 0,
            tables: (nvl > 1).then(|| {
                Box::new(VlTables {
                    high,
                    low,
                    used_high: [0; 8],
                    used_low: [0; 8],
                    idx_high: 0,
                    idx_low: 0,
                    high_left,
                })
            }),
            last_high: false,
            mark_ctr: 0,
        }
    }
}

impl Fabric {
    /// isHoQFree: true iff empty and unreserved; reserves on success.
    /// (Always inlined: a few instructions, called for most flits.)
    #[inline(always)]
    pub(super) fn hoq_free(&mut self, port: usize, input: usize, v: usize) -> bool {
        let i = input * self.nvl + v;
        let a = &mut self.ports[port].arb;
        let h = &mut a.hoq[i];
        if h.id == NONE && !h.res {
            h.res = true;
            a.slots += 1;
            true
        } else {
            false
        }
    }

    // always inlined into `dispatch`, its only caller (see there)
    #[inline(always)]
    pub(super) fn arb_flit(&mut self, pi: usize, input: usize, id: FId) {
        let nvl = self.nvl;
        let a = &mut self.ports[pi].arb;
        let f = &self.fl[id as usize];
        let vl = f.vl;
        let first = if f.sn == 0 { f.pkt_flits } else { 0 };
        let i = input * nvl + vl as usize;
        let h = &mut a.hoq[i];
        if !h.res || h.id != NONE {
            let msg = format!("arbiter HoQ ({input}, {vl}) not reserved or occupied");
            self.fail(msg);
            return;
        }
        *h = Hoq {
            t_arr: self.now,
            id,
            first,
            res: false,
        };
        if first != 0 && input < 64 {
            a.heads[vl as usize] |= 1u64 << input;
        }
        self.arbitrate(pi);
    }

    /// Round-robin input pick for VL v from `last_port + 1`, wrapping.
    #[inline]
    pub(super) fn rr_pick(
        a: &Arb,
        nvl: usize,
        v: usize,
        start_after: u16,
        credits: i64,
    ) -> Option<usize> {
        let n = a.inputs as usize;
        if n <= 64 {
            // the inputs holding a first flit, visited in the same order
            // as the scan below: from start_after + 1 up, then from 0 up
            // to start_after
            let m = a.heads[v];
            let s = if start_after as usize + 1 >= n {
                0
            } else {
                start_after as usize + 1
            };
            let low = (1u64 << s) - 1;
            for mut part in [m & !low, m & low] {
                while part != 0 {
                    let p = part.trailing_zeros() as usize;
                    if a.hoq[p * nvl + v].first as i64 <= credits {
                        return Some(p);
                    }
                    part &= part - 1;
                }
            }
            return None;
        }
        let mut p = start_after as usize;
        for _ in 0..n {
            p += 1;
            if p == n {
                p = 0;
            }
            // 0 = empty or a continuation flit
            let len = a.hoq[p * nvl + v].first;
            if len != 0 && len as i64 <= credits {
                return Some(p);
            }
        }
        None
    }

    pub(super) fn fcfs_pick(
        a: &Arb,
        fl: &[Flit],
        nvl: usize,
        v: usize,
        start_after: u16,
        credits: i64,
    ) -> Option<usize> {
        let n = a.inputs as usize;
        let mut p = start_after as usize;
        let mut best: Option<(u64, usize)> = None;
        for _ in 0..n {
            p += 1;
            if p == n {
                p = 0;
            }
            let id = a.hoq[p * nvl + v].id;
            if id != NONE {
                let f = &fl[id as usize];
                if f.sn == 0 && best.is_none_or(|(t, _)| f.t_in < t) {
                    best = Some((f.t_in, p));
                }
            }
        }
        let (_, p) = best?;
        (fl[a.hoq[p * nvl + v].id as usize].pkt_flits as i64 <= credits).then_some(p)
    }

    pub(super) fn pick(&self, a: &Arb, v: usize, start: u16) -> Option<usize> {
        let credits = a.vl[v].fccl as i64 - a.vl[v].fctbs as i64;
        if self.p.use_fcfs_rq_arb {
            Self::fcfs_pick(a, &self.fl, self.nvl, v, start, credits)
        } else {
            Self::rr_pick(a, self.nvl, v, start, credits)
        }
    }

    /// Table arbitration (maxVL > 0), Q6 reproduced: the first nvl
    /// entries, an entry's `used` restarts as soon as the scan moves past
    /// it and it may send while `used <= weight`. With `iba_vl_arb` the
    /// IBA-style variant: all 8 entries, an entry keeps sending while
    /// `used < weight`, `used` restarts only when the index moves to it.
    /// The round robin of every VL starts after `last_port[last_vl]` (the
    /// reference's one pointer shared by the VLs), or with `vl_arb_rr_per_vl`
    /// after the input that VL last served.
    pub(super) fn table_select(&mut self, pi: usize) -> Option<(usize, usize)> {
        if self.p.vl_arb_rr_per_vl {
            self.table_select_per_vl(pi)
        } else {
            self.table_select_g::<false>(pi)
        }
    }

    #[cold]
    #[inline(never)]
    fn table_select_per_vl(&mut self, pi: usize) -> Option<(usize, usize)> {
        self.table_select_g::<true>(pi)
    }

    fn table_select_g<const PER_VL: bool>(&mut self, pi: usize) -> Option<(usize, usize)> {
        let iba = self.p.iba_vl_arb;
        let nvl = self.nvl;
        let len = if iba { 8 } else { nvl };
        // the tables are taken out while `pick` reads the rest of the arbiter
        let mut boxed = self.ports[pi].arb.tables.take()?;
        let t = &mut *boxed;
        let high_first = t.high_left > 0;
        let mut out = None;
        'passes: for pass in 0..2 {
            let use_high = high_first == (pass == 0);
            let a = &self.ports[pi].arb;
            let shared = a.last_port[a.last_vl as usize];
            let (table, used, idx) = if use_high {
                (&t.high, &mut t.used_high, &mut t.idx_high)
            } else {
                (&t.low, &mut t.used_low, &mut t.idx_low)
            };
            for i in 0..=len {
                let e = (*idx + i) % len;
                let ent = table[e];
                let u = if i == 0 {
                    used[e]
                } else {
                    if !iba {
                        used[e] = 0;
                    }
                    0
                };
                let over = if iba { u >= ent.weight } else { u > ent.weight };
                if ent.weight == 0 || over || ent.vl as usize >= nvl {
                    continue;
                }
                let v = ent.vl as usize;
                let start = if PER_VL { a.last_port[v] } else { shared };
                if let Some(p) = self.pick(a, v, start) {
                    if iba && i > 0 {
                        used[e] = 0;
                    }
                    *idx = e;
                    out = Some((p, v, use_high));
                    break 'passes;
                }
            }
        }
        let a = &mut self.ports[pi].arb;
        a.tables = Some(boxed);
        let (p, v, use_high) = out?;
        a.last_high = use_high;
        Some((p, v))
    }

    /// The arbiter's own pop timer (`Tarb` after it sent a flit).
    #[inline]
    pub(super) fn arb_pop(&mut self, pi: usize) {
        self.ports[pi].arb.pop_pending = false;
        self.arbitrate(pi);
    }

    /// Credit limit of VL `v` from an FC packet of the peer's ibuf.
    #[inline]
    pub(super) fn arb_tx_cred(&mut self, pi: usize, v: usize, limit: u64) {
        self.ports[pi].arb.vl[v].fccl = limit;
        self.arbitrate(pi);
    }

    /// Arbitrate (sec. 5.3). The two checks that end about half of all
    /// calls at once -- the pop timer is pending, or the packet being sent
    /// has no next flit in its HoQ yet -- are inlined at the call sites;
    /// the rest is out of line.
    #[inline(always)]
    pub(super) fn arbitrate(&mut self, pi: usize) {
        let a = &self.ports[pi].arb;
        if a.pop_pending {
            return;
        }
        if a.inside {
            let v = a.last_vl as usize;
            if a.hoq[a.last_port[v] as usize * self.nvl + v].id == NONE {
                return;
            }
        }
        self.arbitrate_send(pi);
    }

    #[inline(never)]
    fn arbitrate_send(&mut self, pi: usize) {
        let nvl = self.nvl;
        if self.ports[pi].arb.pop_pending {
            return;
        }
        let (p, v, first);
        if self.ports[pi].arb.inside {
            let a = &mut self.ports[pi].arb;
            v = a.last_vl as usize;
            p = a.last_port[v] as usize;
            let id = a.hoq[p * nvl + v].id;
            if id == NONE {
                return;
            }
            let is_last = self.fl[id as usize].last();
            if is_last {
                a.inside = false;
            }
            // (the tables exist iff nvl > 1)
            if let (false, Some(t)) = (self.p.iba_vl_arb, a.tables.as_deref_mut()) {
                // Q6 reproduced: only continuation flits count
                if a.last_high {
                    t.high_left -= 1;
                } else if is_last && t.high_left == 0 {
                    t.high_left = self.p.vl_high_limit as i64 * 64;
                }
            }
            first = false;
        } else {
            let sel = if nvl == 1 {
                let a = &self.ports[pi].arb;
                self.pick(a, 0, a.last_port[0]).map(|p| (p, 0))
            } else {
                self.table_select(pi)
            };
            let Some((sp, sv)) = sel else { return };
            p = sp;
            v = sv;
            let port = &self.ports[pi];
            let f = &self.fl[port.arb.hoq[p * nvl + v].id as usize];
            let pkt_flits = f.pkt_flits as usize;
            let inside = !f.last();
            // validity (a): obuf free space strictly greater than the packet
            let free = port.ob.size as isize - port.ob.q.len() as isize;
            let ok_a = free > pkt_flits as isize;
            let mut ok = ok_a;
            if ok_a && port.hca == NONE {
                // (b) the chosen input may start one more packet
                let ii = (port.base as usize) + p;
                let ib = &mut self.ports[ii].ib;
                if ib.nbs < self.p.max_being_sent {
                    ib.nbs += 1;
                } else {
                    ok = false;
                }
            }
            if !ok {
                self.ports[pi].arb.inside = false;
                return;
            }
            self.ports[pi].arb.inside = inside;
            first = true;
        }
        // send the flit (step 5)
        let now = self.now;
        let is_sw = self.ports[pi].hca == NONE;
        let cc = self.p.cc_enabled;
        let markrate = self.p.cc_markrate;
        let a = &mut self.ports[pi].arb;
        if first {
            a.last_vl = v as u8;
            a.last_port[v] = p as u16;
        }
        let i = p * nvl + v;
        let h = std::mem::replace(&mut a.hoq[i], HOQ_EMPTY);
        a.slots -= 1;
        if h.first != 0 && p < 64 {
            a.heads[v] &= !(1u64 << p);
        }
        let id = h.id;
        let flit = &mut self.fl[id as usize];
        let t_arr = h.t_arr;
        // (the tables exist iff nvl > 1)
        if let Some(t) = a.tables.as_deref_mut() {
            if a.last_high {
                t.used_high[t.idx_high] += 1;
            } else {
                t.used_low[t.idx_low] += 1;
            }
            if self.p.iba_vl_arb {
                // every High flit counts; a Low packet ends the Low turn
                if a.last_high {
                    t.high_left -= 1;
                } else if flit.last() && t.high_left <= 0 {
                    t.high_left = self.p.vl_high_limit as i64 * 64;
                }
            }
        }
        if first && is_sw && cc {
            if flit.flags & F_CAND != 0 && a.mark_ctr == 0 {
                flit.flags |= F_FECN;
            }
            flit.flags &= !F_CAND;
            a.mark_ctr = (a.mark_ctr + 1) % markrate;
        }
        let tarb = if is_sw {
            self.tm.arb_sw[flit.bytes as usize]
        } else {
            self.tm.arb_hca[flit.bytes as usize]
        };
        a.pop_pending = true;
        a.pop_at = now + tarb;
        let to_obuf = if is_sw {
            let mut target = t_arr + self.tm.vsw;
            if target <= a.last {
                target = a.last + NS;
            }
            if target > now {
                a.last = target;
                target
            } else {
                a.last = now;
                now
            }
        } else {
            now
        };
        a.vl[v].fctbs += 1;
        let last = flit.last();
        self.sched(now + tarb, Ev::ArbPop { port: pi as u32 });
        self.sched(
            to_obuf,
            Ev::ObufFlit {
                port: pi as u32,
                flit: id,
            },
        );
        if is_sw {
            let ii = self.ports[pi].base + p as u32;
            self.sched_now(Ev::IbufSent {
                port: ii,
                vl: v as u8,
                last,
                out: self.ports[pi].local,
            });
        } else {
            let h = self.ports[pi].hca;
            self.sched_now(Ev::GenSent { h, vl: v as u8 });
        }
        if self.watch {
            self.watch_handoff(pi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The round-robin pick as the reference states it: every input's
    /// slot in turn from `start_after + 1`, wrapping.
    fn scan(a: &Arb, nvl: usize, v: usize, start_after: u16, credits: i64) -> Option<usize> {
        let n = a.inputs as usize;
        (1..=n).map(|k| (start_after as usize + k) % n).find(|&p| {
            let len = a.hoq[p * nvl + v].first;
            len != 0 && len as i64 <= credits
        })
    }

    proptest! {
        /// The bitmask pick visits the inputs holding a first flit in the
        /// scan's order, so it picks the same input (any radix up to 64,
        /// any VL, start and credit count); arbiters above 64 inputs scan.
        #[test]
        fn mask_pick_equals_the_scan(
            inputs in 1usize..=70,
            nvl in 1usize..=3,
            slots in proptest::collection::vec(0u16..=4, 70 * 3),
            start in 0usize..70,
            credits in -2i64..=5,
        ) {
            let entries = [ArbEntry::default(); 8];
            let mut a = Arb::new(inputs as u16, nvl, entries, entries, 0);
            for p in 0..inputs {
                for v in 0..nvl {
                    let first = slots[p * 3 + v];
                    a.hoq[p * nvl + v].first = first;
                    if first != 0 && p < 64 {
                        a.heads[v] |= 1u64 << p;
                    }
                }
            }
            let start = (start % inputs) as u16;
            for v in 0..nvl {
                prop_assert_eq!(
                    Fabric::rr_pick(&a, nvl, v, start, credits),
                    scan(&a, nvl, v, start, credits)
                );
            }
        }
    }
}
