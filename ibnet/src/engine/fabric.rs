//! The fabric as a whole: the containers of every component's state (one
//! [`Port`] per switch or HCA port: obuf, ibuf, VL arbiter; one [`Hca`] per
//! HCA: app, generator, sink, congestion control), the error type and the
//! small read-only API. Construction is in `build.rs`, the event queue in
//! `queue.rs`, the run loops in `run.rs`, the dispatch in `dispatch.rs`;
//! each component's handlers are in its own module.
//!
//! Why one struct with `impl Fabric` blocks per component instead of one
//! struct per component: a handler of one component routinely reads the
//! state of its neighbours in the same instant (an arbiter checks the free
//! space of its obuf and the being-sent count of the chosen ibuf; an ibuf
//! asks its arbiter's HoQ; the CC detection counts the queues of every
//! ibuf of the switch). The reference model does that through direct
//! method calls; here every component reaches the others through the one
//! `Fabric`, and a component module owns its state type, its constructor
//! and its handlers.

use thiserror::Error;

use super::app::{App, Msg, MsgId};
use super::cc::Cc;
use super::dispatch::Ev;
use super::flits::{FId, Flit};
use super::gen::Gen;
use super::ibuf::Ibuf;
use super::obuf::Obuf;
use super::queue::Entry;
use super::sink::SinkSt;
use super::trace::{TraceKind, TraceRec};
use super::vlarb::Arb;
use crate::params::{Params, Timing};
use crate::Time;

/// Errors at run time (API misuse or a fatal model condition).
#[derive(Debug, Error, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FabricError {
    #[error("inject at {at} ps is before the fabric's current time {now} ps")]
    InPast { at: u64, now: u64 },
    #[error("HCA index {0} out of range ({1} HCAs)")]
    NoSuchHca(usize, usize),
    /// Kept for API compatibility; no longer produced: a self-send is legal
    /// (it loops back at the first switch, as in the reference).
    #[error("a message from HCA {0} to itself cannot be sent")]
    SelfSend(usize),
    #[error("no route from {src} to LID {lid}: {detail}")]
    Unroutable {
        src: String,
        lid: u16,
        detail: String,
    },
    #[error("bad message: {0}")]
    BadMessage(String),
    #[error("obuf overflow at {node} port {port}, t = {t} ps: {len} flits queued, size {size} (Q4; set elastic_obuf = true to let it grow)")]
    ObufOverflow {
        node: String,
        port: u16,
        t: u64,
        len: usize,
        size: usize,
    },
    #[error("fatal model condition at t = {t} ps: {msg}")]
    Fatal { t: u64, msg: String },
    #[error("traffic must be configured before the simulation starts")]
    AlreadyStarted,
}

/// The last simulated instant the fabric accepts (2^62 ps, about 53 days).
/// Every delay is at most [`crate::params::MAX_DELAY_PS`], so no time
/// computation can overflow; an event or injection beyond this is an error.
pub const MAX_TIME_PS: u64 = 1 << 62;

/// "No such index" in the u32 index fields (no flit in a HoQ slot, no
/// peer port, no HCA at a switch port, no message in service).
pub(super) const NONE: u32 = u32::MAX;

/// One nanosecond in picoseconds.
pub(super) const NS: u64 = 1000;

/// An HCA's own components (its port's obuf, ibuf and arbiter are in
/// `Fabric::ports[port]`).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Hca {
    /// topology node index
    pub(super) node: u32,
    pub(super) lid: u16,
    /// global index of the HCA's port
    pub(super) port: u32,
    pub(super) app: App,
    pub(super) gen: Gen,
    pub(super) sink: SinkSt,
    pub(super) cc: Cc,
}

/// A port of a switch or an HCA: the obuf that transmits on its link,
/// the ibuf that receives from it, and the VL arbiter that feeds the obuf
/// (from the node's ibufs at a switch, from the generator at an HCA).
/// Ports are numbered globally in node order, then port order.
///
/// Field order is the memory layout (`repr(C)`): the identity
/// fields and the head of each component's state are what every flit
/// touches; each component puts its per-flit fields first. Every port
/// starts on a cache line (`align(64)`), so that the identity fields and
/// the obuf's per-flit head share the port's first line in every port
/// instead of straddling two in three ports out of four (OneHot 200 us:
/// 44.9 M -> 42.4 M simulated L1 data misses). Aligning the ibuf and the
/// arbiter on lines of their own as well made it worse (44.8 M).
#[repr(C, align(64))]
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Port {
    /// topology node index
    pub(super) node: u32,
    /// port number within the node
    pub(super) local: u16,
    pub(super) nports: u16,
    /// HCA index, or NONE for a switch port
    pub(super) hca: u32,
    /// switch index, or NONE
    pub(super) sw: u32,
    /// global index of port 0 of this node
    pub(super) base: u32,
    /// global index of the port at the other end of the link, or NONE
    pub(super) peer: u32,
    pub(super) ob: Obuf,
    pub(super) ib: Ibuf,
    pub(super) arb: Arb,
}

/// The fabric: every component's state plus the event queue.
pub struct Fabric {
    // configuration
    pub(super) p: Params,
    pub(super) tm: Timing,
    pub(super) nvl: usize,
    pub(super) topo_name: String,
    pub(super) node_names: Vec<String>,
    // components
    pub(super) ports: Vec<Port>,
    pub(super) hcas: Vec<Hca>,
    /// flit slab and its free list
    pub(super) fl: Vec<Flit>,
    pub(super) fl_free: Vec<FId>,
    /// forwarding table per switch (LID -> output port)
    pub(super) lfts: Vec<Vec<u16>>,
    /// Routes already checked by `inject`, one bit per (source HCA,
    /// destination HCA), allocated at the first injection on networks of
    /// up to [`ROUTE_BITS_MAX_HCAS`] HCAs (2 MiB at most): the forwarding
    /// tables and links never change during a run, so a route that was
    /// checked once stays valid, and the walk over its switches (a few
    /// cold cache lines per message on the co-simulation's per-message
    /// path) is done once per pair.
    pub(super) routes_ok: Vec<u64>,
    pub(super) lid_to_hca: Vec<u32>,
    /// SL (= VL) per route, `src_lid * (max_lid + 1) + dst_lid`
    /// (`Topology::sl`); empty: messages use their sender's send queue.
    pub(super) route_sl: Vec<u8>,
    // messages (app.rs)
    pub(super) msgs: Vec<Msg>,
    pub(super) completions: Vec<(MsgId, Time)>,
    pub(super) in_flight: usize,
    // event queue (queue.rs, dispatch.rs)
    /// delayed events (timing wheel)
    pub(super) heap: super::wheel::Wheel<Ev>,
    pub(super) dbg_last_key: u128,
    /// Progress counter for a liveness heartbeat (the co-simulation server
    /// passes ipc-proto's): incremented every `PULSE_EVENTS` events.
    pub(super) pulse: Option<&'static std::sync::atomic::AtomicU64>,
    /// event count at which the pulse is next incremented
    pub(super) next_pulse: u64,
    /// direct events on (direct.rs; off only to test that they change
    /// nothing) and how many were applied
    pub(super) direct: bool,
    /// a credit update applied directly is reported to the parallel FIFO
    /// order's count of the lazy timer's events (parallel_fifo.rs; beside
    /// `direct`, which the same test has just read)
    pub(super) direct_report: bool,
    /// a parallel run's lookahead watches the arbiters' hand-offs
    /// (lookahead.rs)
    pub(super) watch: bool,
    pub(super) direct_applied: u64,
    /// Zero-delay events scheduled at the current instant, FIFO. Their keys
    /// are larger than those of every heap event at this instant except
    /// virtual-sequence ones, so `step` takes whichever key is smaller.
    pub(super) nowq: super::wheel::Fifo<Entry>,
    /// insertion counter: the seq of the next scheduled event
    pub(super) counter: u64,
    /// seq of the event being processed
    pub(super) cur_seq: u64,
    pub(super) now: u64,
    pub(super) started: bool,
    pub(super) events: u64,
    /// background events queued (`Ev::background`; `fg_pending()` is the
    /// rest, for the deadlock rule, run.rs)
    pub(super) bg_pending: u64,
    /// Time of the last foreground event processed (deadlock rule).
    pub(super) last_fg: u64,
    /// Flits waiting in sink FIFOs (deadlock rule: hiccups matter then).
    pub(super) sink_held: u64,
    // lazy credit timer (obuf.rs, mod.rs)
    pub(super) lazy: bool,
    /// `event_order = "local"` (order.rs) and its state
    pub(super) local_order: bool,
    pub(super) local: super::order::LocalOrder,
    /// start of the next credit period
    pub(super) next_boundary: u64,
    /// insertion counter at the first event of the current credit period
    pub(super) bk_counter: u64,
    /// the causal key of every event, checked (causal.rs)
    #[cfg(feature = "causal-check")]
    pub(super) causal: super::causal::Causal,
    // outcome and counters
    pub(super) fatal: Option<FabricError>,
    pub(super) trace: Option<Vec<TraceRec>>,
    pub(super) flits_generated: u64,
    pub(super) flits_consumed: u64,
    pub(super) flits_dropped: u64,
    /// messages completed but not yet returned by take_completions
    pub(super) pending_done: usize,
    /// several send queues per HCA (qp.rs); None = the single queue
    pub(super) qp: Option<Box<super::qp::QpState>>,
    /// lossy links and end-to-end recovery (loss.rs); None = lossless
    pub(super) loss: Option<Box<super::loss::LossState>>,
    /// one-sided operations (rdma.rs)
    pub(super) rdma: super::rdma::RdmaState,
    /// `run_until_completion_or` found the fabric deadlocked (stall.rs)
    pub(super) deadlock_seen: bool,
    /// This fabric is one thread's replica in a parallel run
    /// (parallel.rs): which nodes it owns and its message bookkeeping.
    pub(super) part: Option<Box<super::parallel::Part>>,
    /// Foreground events queued in the other threads of a parallel run,
    /// once merged into this fabric for its report (`fg_pending`).
    pub(super) fg_elsewhere: u64,
}

/// Networks up to this many HCAs remember their checked routes
/// (`Fabric::routes_ok`: n^2 bits, 2 MiB at 4096 HCAs).
pub(super) const ROUTE_BITS_MAX_HCAS: usize = 4096;

impl Fabric {
    /// Current simulated time.
    pub fn now(&self) -> Time {
        Time(self.now)
    }

    pub fn params(&self) -> &Params {
        &self.p
    }

    /// Number of HCAs (in node order).
    pub fn num_hcas(&self) -> usize {
        self.hcas.len()
    }

    /// LID of HCA number `h`.
    pub fn hca_lid(&self, h: usize) -> u16 {
        self.hcas[h].lid
    }

    /// HCA number of a LID.
    pub fn hca_of_lid(&self, lid: u16) -> Option<usize> {
        self.lid_to_hca
            .get(lid as usize)
            .copied()
            .filter(|&h| h != NONE)
            .map(|h| h as usize)
    }

    /// Record every flit checkpoint (tests; costs memory).
    pub fn enable_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    pub fn take_trace(&mut self) -> Vec<TraceRec> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The fatal error that stopped the simulation, if any.
    pub fn error(&self) -> Option<&FabricError> {
        self.fatal.as_ref()
    }

    /// Hints the CPU to load what [`Fabric::inject`] of a message from
    /// HCA `h` to HCA `dst` reads first (the destination's LID, the route
    /// check's bit): for a caller that knows a batch of injections ahead
    /// (the co-simulation server). Only loads; no effect on results.
    pub fn prefetch_injection(&self, h: usize, dst: usize) {
        let n = self.hcas.len();
        if h >= n || dst >= n {
            return;
        }
        crate::prefetch::line(self.hcas.as_ptr().wrapping_add(dst));
        let bit = h * n + dst;
        if n <= ROUTE_BITS_MAX_HCAS && !self.routes_ok.is_empty() {
            crate::prefetch::line(self.routes_ok.as_ptr().wrapping_add(bit / 64));
        }
    }

    /// [`Fabric::check_route`] of `h` to HCA `dst`, each pair walked once.
    #[inline]
    pub(super) fn check_route_once(&mut self, h: usize, dst: usize) -> Result<(), FabricError> {
        let n = self.hcas.len();
        if n > ROUTE_BITS_MAX_HCAS {
            return self.check_route(h, self.hcas[dst].lid).map(|_| ());
        }
        let bit = h * n + dst;
        if self
            .routes_ok
            .get(bit / 64)
            .is_some_and(|w| w >> (bit % 64) & 1 == 1)
        {
            return Ok(());
        }
        self.check_route(h, self.hcas[dst].lid)?;
        if self.routes_ok.is_empty() {
            self.routes_ok = vec![0; (n * n).div_ceil(64)];
        }
        self.routes_ok[bit / 64] |= 1 << (bit % 64);
        Ok(())
    }

    pub(super) fn check_route(&self, h: usize, lid: u16) -> Result<usize, FabricError> {
        // (the name is cloned only for an error: this runs once per
        // injected message, on the co-simulation's per-message path)
        let err = |d: String| FabricError::Unroutable {
            src: self.node_names[self.hcas[h].node as usize].clone(),
            lid,
            detail: d,
        };
        let Some(dh) = self.hca_of_lid(lid) else {
            return Err(err("no HCA has this LID".into()));
        };
        // A message to oneself is legal: the first switch sends it back out
        // of its arrival port (the "not yet through any switch" flag allows
        // that, sec. 5.5); the 2-hot example sequences contain such sends.
        let mut pi = self.hcas[h].port as usize;
        let mut switches = 0usize;
        for _ in 0..=self.ports.len() {
            let peer = self.ports[pi].peer;
            if peer == NONE {
                return Err(err(format!(
                    "port {} of {} is not connected",
                    self.ports[pi].local, self.node_names[self.ports[pi].node as usize]
                )));
            }
            let q = &self.ports[peer as usize];
            if q.hca != NONE {
                if q.hca as usize == dh {
                    return Ok(switches);
                }
                return Err(err(format!(
                    "route ends at HCA {}",
                    self.node_names[q.node as usize]
                )));
            }
            switches += 1;
            let lft = &self.lfts[q.sw as usize];
            let out = lft.get(lid as usize).copied().unwrap_or(255);
            let name = &self.node_names[q.node as usize];
            if out >= q.nports {
                return Err(err(format!(
                    "switch {name} has no route (table entry {out})"
                )));
            }
            if q.nports > 1 && out == q.local && switches > 1 {
                return Err(err(format!(
                    "switch {name} sends it back out of its arrival port {out}"
                )));
            }
            pi = (q.base + out as u32) as usize;
        }
        Err(err("forwarding loop".into()))
    }

    /// Zero-load latency (injection to last flit consumed) of a lone
    /// message, derived from the timing rules without simulation. See
    /// `crate::zeroload` for the derivation and its assumptions.
    pub fn zero_load_latency(&self, src_hca: usize, dst_hca: usize, bytes: u64) -> Time {
        let switches = self
            .check_route(src_hca, self.hcas[dst_hca].lid)
            .unwrap_or(0);
        Time(crate::zeroload::latency(&self.p, &self.tm, switches, bytes))
    }

    /// Route length in switches between two HCAs.
    pub fn switches_between(&self, src_hca: usize, dst_hca: usize) -> Result<usize, FabricError> {
        self.check_route(src_hca, self.hcas[dst_hca].lid)
    }

    #[doc(hidden)]
    pub fn lazy_credit_timer_active(&self) -> bool {
        self.lazy
    }

    pub(super) fn fail(&mut self, msg: String) {
        if self.fatal.is_none() {
            self.fatal = Some(FabricError::Fatal { t: self.now, msg });
        }
    }

    #[inline]
    pub(super) fn trace(&mut self, kind: TraceKind, pi: usize, id: FId) {
        if let Some(tr) = self.trace.as_mut() {
            let f = &self.fl[id as usize];
            let port = &self.ports[pi];
            tr.push(TraceRec {
                t: self.now,
                kind,
                node: port.node,
                port: port.local,
                msg: f.msg,
                pkt: f.pkt,
                sn: f.sn,
            });
        }
    }
}
