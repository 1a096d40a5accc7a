//! Congestion control (sec. 12, optional): the per-flow CCT index of an
//! HCA, raised by a received CNP (BECN) and lowered by the CCTI timer,
//! which is armed only while an index is above its minimum, on the phase
//! of the HCA's first injection (sec. 12.1 item 6); the CNP a sink sends
//! for a FECN-marked head. Marking is in `vlarb.rs`, detection in
//! `ibuf.rs`, the paced injection interval in `gen.rs` (`push_period`).

use rustc_hash::FxHashMap as HashMap;

use super::dispatch::Ev;
use super::fabric::{Fabric, NONE};
use super::flits::{FId, F_BECN, F_CNP, F_NOSW};

#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Cc {
    /// CCT index per flow key (destination LID, or 0 = the whole app)
    pub(super) ccti: HashMap<u16, u32>,
    pub(super) ccti_max: u32,
    pub(super) first_inj: Option<u64>,
    pub(super) timer_pending: bool,
}

impl Cc {
    /// Every CCT index at 0, no timer armed.
    pub(super) fn new() -> Cc {
        Cc {
            ccti: HashMap::default(),
            ccti_max: 0,
            first_inj: None,
            timer_pending: false,
        }
    }
}

impl Fabric {
    /// A CNP reached the sink of HCA `h` (BECN): raise the CCT index of
    /// the flow towards the CNP's sender (`src`); the CNP is consumed at
    /// once and its credit freed.
    pub(super) fn cc_cnp_arrived(&mut self, h: usize, id: FId, src: u16, vl: u8) {
        let now = self.now;
        let pi = self.hcas[h].port as usize;
        let key = if self.p.cc_per_destination { src } else { 0 };
        let limit = self.p.cc_cct_limit;
        let cc = &mut self.hcas[h].cc;
        let i = cc.ccti.entry(key).or_insert(0);
        if *i < limit {
            *i += 1;
        }
        cc.ccti_max = cc.ccti_max.max(*i);
        self.hcas[h].sink.cnps_in += 1;
        self.fl_release(id);
        self.ccti_timer_arm(h);
        self.sched(
            now,
            Ev::IbufSent {
                port: pi as u32,
                vl: vl,
                last: true,
                out: 0,
            },
        );
    }

    /// Congestion detection (sec. 12.1) for a packet head arriving at
    /// switch port `pi` toward output `out` on VL `v`: the flits already
    /// queued toward (out, v) in all input buffers of the switch (the
    /// arriving head is not queued yet) exceed the threshold. The head then becomes a
    /// marking candidate; the output's arbiter marks it (vlarb.rs).
    pub(super) fn cc_congested(&self, pi: usize, out: usize, v: usize) -> bool {
        let port = &self.ports[pi];
        let base = port.base as usize;
        let mut q = 0usize;
        for j in 0..port.nports as usize {
            q += self.ports[base + j].ib.q[out * self.nvl + v].len();
        }
        q > self.p.cc_threshold as usize
    }

    pub(super) fn send_cnp(&mut self, h: usize, to: u16, _vl: u8) {
        self.hcas[h].sink.cnps_out += 1;
        let f = self.control_flit(h, to, NONE, 0, F_NOSW | F_CNP | F_BECN);
        let port = self.hcas[h].port as usize;
        let f = self.fl_alloc(f);
        if self.hcas[h].gen.cnpq.is_empty() && self.hoq_free(port, 0, 0) {
            self.gen_send_flit(h, f);
        } else {
            self.hcas[h].gen.cnpq.push_back(f);
        }
    }

    pub(super) fn ccti_timer_arm(&mut self, h: usize) {
        let cc = &self.hcas[h].cc;
        let min = self.p.cc_cct_min;
        if cc.timer_pending || !cc.ccti.values().any(|&i| i > min) || self.tm.cc_timer == 0 {
            return;
        }
        let t0 = cc.first_inj.unwrap_or(0);
        let per = self.tm.cc_timer;
        let k = (self.now.saturating_sub(t0)) / per + 1;
        self.hcas[h].cc.timer_pending = true;
        self.sched(t0 + k * per, Ev::CctiTimer { h: h as u32 });
    }

    pub(super) fn ccti_timer(&mut self, h: usize) {
        let min = self.p.cc_cct_min;
        let cc = &mut self.hcas[h].cc;
        cc.timer_pending = false;
        for i in cc.ccti.values_mut() {
            if *i > min {
                *i -= 1;
            }
        }
        self.ccti_timer_arm(h);
    }
}
