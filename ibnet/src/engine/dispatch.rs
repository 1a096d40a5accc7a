//! The events of the model and their dispatch: the one place where an
//! event is taken from the queue and handed to its component.
//!
//! # Total order of events
//!
//! Events are processed in increasing (time, seq) order, where seq is the
//! insertion order (sec. 1.3: FIFO among equal times); the queue
//! (`queue.rs`) guarantees it. The order of two events at the same instant
//! is therefore the order in which their handlers scheduled them, and
//! every handler schedules its events in exactly the order the spec lists
//! them (sec. 5 and Appendix A):
//!
//! 1. Initialisation (`build.rs`, sec. 1.4): depth-first in declaration
//!    order; per HCA: app start, sink hiccup timer; per connected port:
//!    the obuf's credit tick at 0, then the ibuf's initial credit
//!    advertisement per VL at 1 ns (so it reaches the obuf before the
//!    obuf's first wake-up pop: Appendix A.1).
//! 2. Arbiter (`vlarb.rs`, A.6): its own pop timer first, then the data
//!    hand-off to the obuf, then the "sent" notice (ibuf or generator).
//! 3. Obuf (`obuf.rs`): a data transmission schedules the ibuf's arrival
//!    then its own pop; a pop schedules the arbiter kick ("free") before
//!    an FC packet or the next data flit. A credit tick is scheduled one
//!    period ahead, so it precedes every same-instant event inserted later
//!    (A.2, A.3).
//! 4. Ibuf (`ibuf.rs`): the credit update to the obuf before its
//!    hand-off; "done" to the arbiters in port order 0..N-1 before its
//!    next hand-off (A.7). An FC packet's zero-delay handler updates the
//!    arbiter's credits before the obuf's advertised limit.
//! 5. Sink (`sink.rs`): a drain scheduled by a flit or a previous drain;
//!    consume before re-arm (A.4: a drain tick at t runs before a flit
//!    arriving at t because it was scheduled earlier).
//!
//! The lazy credit timer (`obuf.rs`, `engine/mod.rs`) gives re-armed ticks
//! a virtual seq that puts them where the always-ticking model would have.
//! Tests: `lazy_equals_naive*` (flit by flit), the golden reports
//! (`tests/golden.rs`) and the reference cases.

use super::fabric::{Fabric, MAX_TIME_PS};
use super::flits::FId;

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Ev {
    AppStart {
        h: u32,
    },
    AppInject {
        h: u32,
        msg: u32,
    },
    AppDone {
        h: u32,
    },
    GenMsg {
        h: u32,
        msg: u32,
    },
    GenPush {
        h: u32,
    },
    GenSent {
        h: u32,
        vl: u8,
    },
    ArbFlit {
        port: u32,
        input: u16,
        flit: FId,
    },
    ArbPop {
        port: u32,
    },
    ArbTxCred {
        port: u32,
        vl: u8,
        limit: u64,
    },
    /// "done" from a switch ibuf or "free" from the obuf: both just arbitrate.
    ArbKick {
        port: u32,
    },
    ObufFlit {
        port: u32,
        flit: FId,
    },
    ObufRxCred {
        port: u32,
        vl: u8,
        limit: u64,
    },
    ObufTick {
        port: u32,
    },
    /// The end of a transmission (the obuf's pop).
    ObufPop {
        port: u32,
    },
    /// The same pop scheduled by the credit timer (a tick or a lazy obuf's
    /// catch-up), not by a transmission: a background event, see
    /// [`Ev::background`] (a variant of its own so that the test is one
    /// look at the discriminant).
    ObufPopTimer {
        port: u32,
    },
    IbufFlit {
        port: u32,
        flit: FId,
    },
    /// FC packet for `vl` from the peer obuf: the values it carries are the
    /// peer's `sent_fctbs`/`sent_fccl`, which cannot change before this
    /// event runs: at once (the peer's link is busy for the FC packet), or
    /// a link delay later, which is shorter than the credit period, and
    /// the peer advertises a VL again at its next tick at the earliest.
    IbufFc {
        port: u32,
        vl: u8,
    },
    IbufSent {
        port: u32,
        vl: u8,
        last: bool,
        out: u16,
    },
    SinkFlit {
        h: u32,
        flit: FId,
    },
    SinkDrain {
        h: u32,
    },
    /// The same drain started by the hiccup toggle to OFF, not by a flit
    /// (background, as `ObufPopTimer`).
    SinkDrainTimer {
        h: u32,
    },
    SinkHiccup {
        h: u32,
    },
    CctiTimer {
        h: u32,
    },
    /// A send queue's message fully generated (qp.rs; `AppDone` of the
    /// single queue).
    QpDone {
        h: u32,
        msg: u32,
    },
    /// Retransmission timer of message `msg` at its sender `h` (loss.rs).
    LossRto {
        h: u32,
        msg: u32,
    },
    /// Host model (pcie.rs): the last DMA write of a message is done.
    HostLanded {
        msg: u32,
    },
}

// Queue entries are (time, seq, Ev): keep them at 32 bytes.
const _: () = assert!(std::mem::size_of::<Ev>() == 16);

/// Where an event runs: a port (its obuf, ibuf or arbiter), an HCA (its
/// app, generator, sink or congestion control), or, for the host model's
/// landing of a message, that message's destination HCA.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Site {
    Port(u32),
    Hca(u32),
    MsgDst(u32),
}

impl Ev {
    pub(super) fn site(&self) -> Site {
        match *self {
            Ev::ArbFlit { port, .. }
            | Ev::ArbPop { port }
            | Ev::ArbTxCred { port, .. }
            | Ev::ArbKick { port }
            | Ev::ObufFlit { port, .. }
            | Ev::ObufRxCred { port, .. }
            | Ev::ObufTick { port }
            | Ev::ObufPop { port }
            | Ev::ObufPopTimer { port }
            | Ev::IbufFlit { port, .. }
            | Ev::IbufFc { port, .. }
            | Ev::IbufSent { port, .. } => Site::Port(port),
            Ev::AppStart { h }
            | Ev::AppInject { h, .. }
            | Ev::AppDone { h }
            | Ev::GenMsg { h, .. }
            | Ev::GenPush { h }
            | Ev::GenSent { h, .. }
            | Ev::SinkFlit { h, .. }
            | Ev::SinkDrain { h }
            | Ev::SinkDrainTimer { h }
            | Ev::SinkHiccup { h }
            | Ev::CctiTimer { h }
            | Ev::QpDone { h, .. }
            | Ev::LossRto { h, .. } => Site::Hca(h),
            Ev::HostLanded { msg } => Site::MsgDst(msg),
        }
    }

    /// Events of the periodic timers (credit tick, sink hiccup, CC timer)
    /// and the pops/drains those timers start. They run forever, so they do
    /// not count as pending work; whatever *useful* thing they do (an FC
    /// packet, a flit on the wire, a consumed flit) schedules foreground
    /// events. See [`Fabric::run_until_completion`] for the deadlock rule.
    #[inline]
    pub(super) fn background(&self) -> bool {
        matches!(
            self,
            Ev::SinkHiccup { .. }
                | Ev::ObufTick { .. }
                | Ev::CctiTimer { .. }
                | Ev::ObufPopTimer { .. }
                | Ev::SinkDrainTimer { .. }
        )
    }
}

impl Fabric {
    /// Process the next event if its time is at most `limit` (which must
    /// not be before the current instant); false if there is none. The
    /// same choice as `peek_source`, with one look at each container on
    /// the common paths: a wheel event at the current instant first (it
    /// was inserted before every now-queue event, or carries a virtual seq
    /// below them), then the now-queue, then the wheel's next instant.
    #[inline(always)]
    pub(super) fn step_until(&mut self, limit: u64) -> bool {
        let now = self.now;
        let (t, seq, ev) = if let Some(x) = self.heap.pop_at(now) {
            x
        } else if let Some(e) = self.nowq.pop_front() {
            (now, e.seq, e.ev)
        } else {
            match self.heap.peek_key() {
                Some((t, _)) if t <= limit => {}
                _ => return false,
            }
            let (t, seq, ev) = self.heap.pop().unwrap();
            if !self.in_range(t) {
                return false;
            }
            (t, seq, ev)
        };
        self.dispatch(t, seq, ev);
        true
    }

    /// Check a popped wheel event's time against the fabric's range.
    #[inline(always)]
    pub(super) fn in_range(&mut self, t: u64) -> bool {
        debug_assert!(t >= self.now);
        if t > MAX_TIME_PS {
            self.fail(format!(
                "simulated time {t} ps is beyond the fabric's range ({MAX_TIME_PS} ps)"
            ));
            return false;
        }
        true
    }

    /// Run one popped event: the bookkeeping every event shares, then its
    /// component's handler.
    #[inline(always)]
    pub(super) fn dispatch(&mut self, t: u64, seq: u64, ev: Ev) {
        if cfg!(debug_assertions) {
            let key = ((t as u128) << 64) | seq as u128;
            // (the local order keeps depth out of the key: order.rs)
            debug_assert!(
                key > self.dbg_last_key || self.events == 0 || self.local_order,
                "event keys must increase"
            );
            // only the assertion above reads it
            self.dbg_last_key = key;
        }
        // (a parallel run's process sees only its own events: its order is
        // checked against the sequential run's reports instead)
        #[cfg(feature = "causal-check")]
        if !self.local_order && self.part.is_none() {
            if let Err(e) = self.causal.pop(t, seq, &ev) {
                self.fail(e);
                return;
            }
        }
        self.cur_seq = seq;
        self.started = true;
        if ev.background() {
            self.bg_pending -= 1;
        } else {
            self.last_fg = t;
        }
        self.now = t;
        if t >= self.next_boundary {
            let k = t / self.tm.cred;
            self.bk_counter = self.counter;
            self.next_boundary = (k + 1) * self.tm.cred;
        }
        self.events += 1;
        // The five per-flit handlers (`arb_flit`, `obuf_flit`, `obuf_pop`,
        // `ibuf_flit`, `ibuf_sent`: about 8 M of 11 M queued events on
        // OneHot), called only here, are inlined into this match: out of
        // line, their call, prologue and epilogue cost ~16 instructions
        // each (inlined, OneHot 200 us takes 2.67 G instructions instead of 2.75 G).
        match ev {
            Ev::AppStart { h } => self.app_next(h as usize),
            Ev::AppInject { h, msg } => self.app_inject(h as usize, msg),
            Ev::AppDone { h } => self.app_done(h as usize),
            Ev::GenMsg { h, msg } => self.gen_new_msg(h as usize, msg),
            Ev::GenPush { h } => self.gen_push(h as usize),
            Ev::GenSent { h, vl } => self.gen_sent(h as usize, vl as usize),
            Ev::ArbFlit { port, input, flit } => self.arb_flit(port as usize, input as usize, flit),
            Ev::ArbPop { port } => self.arb_pop(port as usize),
            Ev::ArbTxCred { port, vl, limit } => {
                self.arb_tx_cred(port as usize, vl as usize, limit)
            }
            Ev::ArbKick { port } => self.arbitrate(port as usize),
            Ev::ObufFlit { port, flit } => self.obuf_flit(port as usize, flit),
            Ev::ObufRxCred { port, vl, limit } => {
                self.obuf_rx_cred(port as usize, vl as usize, limit)
            }
            Ev::ObufTick { port } => self.obuf_tick(port as usize),
            Ev::ObufPop { port } | Ev::ObufPopTimer { port } => self.obuf_pop(port as usize),
            Ev::IbufFlit { port, flit } => self.ibuf_flit(port as usize, flit),
            Ev::IbufFc { port, vl } => self.ibuf_fc(port as usize, vl),
            Ev::IbufSent {
                port,
                vl,
                last,
                out,
            } => self.ibuf_sent(port as usize, vl as usize, last, out as usize),
            Ev::SinkFlit { h, flit } => self.sink_flit(h as usize, flit),
            Ev::SinkDrain { h } | Ev::SinkDrainTimer { h } => self.sink_drain(h as usize),
            Ev::SinkHiccup { h } => self.sink_hiccup(h as usize),
            Ev::CctiTimer { h } => self.ccti_timer(h as usize),
            Ev::QpDone { h, msg } => self.qp_done(h as usize, msg),
            Ev::LossRto { h, msg } => self.loss_rto(h as usize, msg),
            Ev::HostLanded { msg } => self.host_landed(msg),
        }
    }
}
