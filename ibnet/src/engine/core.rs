//! State and event handlers of the fabric engine. See `engine/mod.rs` for
//! the ordering rules; section numbers refer to ibfabric.md.

use std::collections::{HashMap, VecDeque};

use ipc_proto::Time;
use thiserror::Error;

use super::trace::{TraceKind, TraceRec};
use crate::params::{parse_arb_table, ArbEntry, ConfigError, Params, Timing};
use crate::stats::*;
use crate::topology::{NodeKind, Topology};

/// Identifier of a message: its index in injection/creation order.
pub type MsgId = u64;

/// Errors at run time (API misuse or a fatal model condition).
#[derive(Debug, Error, Clone, PartialEq)]
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

/// Standalone destination modes of the reference app (sec. 5.1).
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficMode {
    /// `param` mode with dstLid = 0: the app never sends.
    Silent,
    /// `param` mode with a fixed destination LID.
    Param {
        dst_lid: u16,
    },
    SeqOnce(Vec<u16>),
    SeqLoop(Vec<u16>),
    /// Uniform random entry each time (seeded by `Params::seed` and the HCA).
    SeqRand(Vec<u16>),
}

/// Outcome of [`Fabric::run_until_completion_or`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// One or more messages completed at this instant (the first completion
    /// instant at or before the limit); the whole instant was processed.
    Completed(Time, Vec<MsgId>),
    /// No message completes at any time up to and including the limit:
    /// every event with time <= limit was processed and `now() == limit`.
    Limit,
    /// Nothing is in flight: no completion can come without a new
    /// injection. Nothing was processed and `now()` is unchanged.
    Idle,
    /// Messages are in flight and none can ever complete (see the deadlock
    /// rule at [`Fabric::run_until_completion`]).
    Deadlock,
    /// A fatal model condition stopped the run: see [`Fabric::error`].
    Fatal,
}

/// The last simulated instant the fabric accepts (2^62 ps, about 53 days).
/// Every delay is at most [`crate::params::MAX_DELAY_PS`], so no time
/// computation can overflow; an event or injection beyond this is an error.
pub const MAX_TIME_PS: u64 = 1 << 62;

const SEQ_SHIFT: u32 = 20;
const NONE: u32 = u32::MAX;
const NS: u64 = 1000;

// flit flags
const F_NOSW: u8 = 1;
const F_FECN: u8 = 2;
const F_BECN: u8 = 4;
const F_CNP: u8 = 8;
const F_CAND: u8 = 16;

#[derive(Clone, Copy, Debug)]
struct Flit {
    msg: u32,
    pkt: u32,
    inject: u64,
    /// arrival at the current switch ibuf (ISW reference, FCFS stamp)
    t_in: u64,
    serial: u32,
    src: u16,
    dst: u16,
    sn: u16,
    pkt_flits: u16,
    bytes: u16,
    vl: u8,
    flags: u8,
}

impl Flit {
    #[inline]
    fn last(&self) -> bool {
        self.sn + 1 == self.pkt_flits
    }
}

/// Handle of a flit in the flit slab (`Fabric::fl`). Flits are created by
/// the generator (or a sink's CNP), move through events and queues by
/// handle, and are released when consumed or dropped: events stay 16 bytes.
type FId = u32;

#[derive(Clone, Copy, Debug)]
enum Ev {
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
    /// `timer`: scheduled by the credit timer (a tick or a lazy obuf's
    /// catch-up), not by a transmission; see [`Ev::background`].
    ObufPop {
        port: u32,
        timer: bool,
    },
    IbufFlit {
        port: u32,
        flit: FId,
    },
    /// FC packet for `vl` from the peer obuf: the values it carries are the
    /// peer's `sent_fctbs`/`sent_fccl`, which cannot change before this
    /// zero-delay event runs (the peer's link is busy for the FC packet).
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
    /// `timer`: started by the hiccup toggle to OFF, not by a flit.
    SinkDrain {
        h: u32,
        timer: bool,
    },
    SinkHiccup {
        h: u32,
    },
    CctiTimer {
        h: u32,
    },
}

// Queue entries are (time, seq, Ev): keep them at 32 bytes.
const _: () = assert!(std::mem::size_of::<Ev>() == 16);

impl Ev {
    /// Events of the periodic timers (credit tick, sink hiccup, CC timer)
    /// and the pops/drains those timers start. They run forever, so they do
    /// not count as pending work; whatever *useful* thing they do (an FC
    /// packet, a flit on the wire, a consumed flit) schedules foreground
    /// events. See [`Fabric::run_until_completion`] for the deadlock rule.
    #[inline]
    fn background(&self) -> bool {
        matches!(
            self,
            Ev::SinkHiccup { .. }
                | Ev::ObufTick { .. }
                | Ev::CctiTimer { .. }
                | Ev::ObufPop { timer: true, .. }
                | Ev::SinkDrain { timer: true, .. }
        )
    }
}

/// Queued event of the now-queue.
#[derive(Clone, Copy)]
struct Entry {
    key: u128,
    ev: Ev,
}

struct Msg {
    src: u32,
    dst_hca: u32,
    dst_lid: u16,
    vl: u8,
    bytes: u64,
    npkts: u32,
    full_pkt: u32,
    last_pkt: u32,
    injected: u64,
    first_stamp: Option<u64>,
    arrived_pkts: u32,
    consumed_pkts: u32,
    /// arrival of the repFirstPackets-th packet end
    enough_at: Option<u64>,
    net_latency: Option<u64>,
    done: Option<u64>,
}

#[derive(Default)]
struct App {
    mode: Option<TrafficMode>,
    pos: usize,
    busy: bool,
    queue: VecDeque<u32>,
    rng: u64,
    msgs_made: u64,
    /// send queue (= VL) of this app's messages; None = `msg_sq`
    sq: Option<u8>,
}

struct Gen {
    cur: u32,
    pkt: u32,
    sn: u16,
    pkt_flits: u16,
    pkt_last_bytes: u16,
    vlq: Vec<VecDeque<FId>>,
    cnpq: VecDeque<FId>,
    push_pending: bool,
    serial: HashMap<u16, u32>,
    bytes_sent: u64,
    flits_sent: u64,
    first_flit: Option<u64>,
}

#[derive(Default)]
struct SinkSt {
    fifo: VecDeque<FId>,
    drain_pending: bool,
    /// time of the pending drain (valid while `drain_pending`)
    drain_at: u64,
    hiccup_on: bool,
    lat: Stat,
    f2f: Stat,
    pft: Stat,
    wait: Stat,
    last_consumed: u64,
    bytes_after_start: u64,
    /// every flit's bytes (the bandwidth of a run shorter than the window)
    bytes_total: u64,
    vl_flits: [u64; 8],
    ooo_next: HashMap<u16, u32>,
    ooo_window: Stat,
    ooo: u64,
    inorder: u64,
    cnps_in: u64,
    cnps_out: u64,
    enough_lat: Stat,
    enough_gap: Stat,
}

struct Cc {
    /// CCT index per flow key (destination LID, or 0 = the whole app)
    ccti: HashMap<u16, u32>,
    ccti_max: u32,
    first_inj: Option<u64>,
    timer_pending: bool,
}

struct Hca {
    node: u32,
    lid: u16,
    port: u32,
    app: App,
    gen: Gen,
    sink: SinkSt,
    cc: Cc,
}

struct Obuf {
    q: VecDeque<FId>,
    size: usize,
    pop_pending: bool,
    inside: bool,
    fctbs: [u64; 8],
    fccl: [u64; 8],
    sent_fctbs: [u64; 8],
    sent_fccl: [u64; 8],
    fc_vl: u8,
    prev_data: bool,
    dormant: bool,
    last_tick: u64,
    bytes: u64,
    data_flits: u64,
    fc_pkts: u64,
    busy: u64,
    first_tx: Option<u64>,
    qdepth: Stat,
    sources: Stat,
    overflows: u64,
}

struct Ibuf {
    free: [i64; 8],
    max_free: [i64; 8],
    abr: [u64; 8],
    /// Q[out * nvl + vl]
    q: Vec<VecDeque<FId>>,
    cur_msg: u32,
    cur_pkt: u32,
    cur_src: u16,
    cur_out: u16,
    nbs: u32,
    last: u64,
    free_stat: Vec<Stat>,
    drops: u64,
}

struct Arb {
    inputs: u16,
    /// flit handle per (input, VL), NONE = empty
    hoq: Vec<FId>,
    /// per (input, VL): the packet length in flits when the HoQ holds a
    /// first flit, else 0 (the round-robin scan reads only this array)
    hoq_first: Vec<u16>,
    t_arr: Vec<u64>,
    res: Vec<bool>,
    fccl: [u64; 8],
    fctbs: [u64; 8],
    pop_pending: bool,
    inside: bool,
    last_vl: u8,
    last_port: [u16; 8],
    last: u64,
    // table arbitration (maxVL > 0)
    high: [ArbEntry; 8],
    low: [ArbEntry; 8],
    used_high: [u32; 8],
    used_low: [u32; 8],
    idx_high: usize,
    idx_low: usize,
    last_high: bool,
    high_left: i64,
    // CC marking
    mark_ctr: u32,
}

struct Port {
    node: u32,
    local: u16,
    /// HCA index, or NONE for a switch port
    hca: u32,
    /// switch index, or NONE
    sw: u32,
    /// global index of port 0 of this node
    base: u32,
    nports: u16,
    peer: u32,
    ob: Obuf,
    ib: Ibuf,
    arb: Arb,
}

/// The fabric: topology state plus the event queue.
pub struct Fabric {
    p: Params,
    tm: Timing,
    nvl: usize,
    topo_name: String,
    node_names: Vec<String>,
    ports: Vec<Port>,
    hcas: Vec<Hca>,
    /// flit slab and its free list
    fl: Vec<Flit>,
    fl_free: Vec<FId>,
    lfts: Vec<Vec<u16>>,
    lid_to_hca: Vec<u32>,
    msgs: Vec<Msg>,
    completions: Vec<(MsgId, Time)>,
    in_flight: usize,
    heap: super::wheel::Wheel<Ev>,
    dbg_last_key: u128,
    /// Zero-delay events scheduled at the current instant, FIFO. Their keys
    /// are larger than those of every heap event at this instant except
    /// virtual-sequence ones, so `step` takes whichever key is smaller.
    nowq: super::wheel::Fifo<Entry>,
    counter: u64,
    cur_seq: u64,
    now: u64,
    started: bool,
    events: u64,
    fg_pending: u64,
    /// Time of the last foreground event processed (deadlock rule).
    last_fg: u64,
    /// Flits waiting in sink FIFOs (deadlock rule: hiccups matter then).
    sink_held: u64,
    lazy: bool,
    next_boundary: u64,
    bk_counter: u64,
    fatal: Option<FabricError>,
    trace: Option<Vec<TraceRec>>,
    flits_generated: u64,
    flits_consumed: u64,
    flits_dropped: u64,
    /// messages completed but not yet returned by take_completions
    pending_done: usize,
}

#[inline]
fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Fabric {
    /// Build the fabric and schedule the initialisation events (sec. 1.4).
    /// Every configuration error is reported here.
    pub fn new(topo: &Topology, params: &Params) -> Result<Fabric, ConfigError> {
        let tm = Timing::new(params)?;
        let p = params.clone();
        let nvl = p.max_vl as usize + 1;
        check_topology(topo)?;
        // Q10: a packet must fit the HCA and switch obuf (strictly) and the
        // peer's static credits, else the source hangs silently.
        let max_pkt = p
            .packets(p.msg_mtu as u64 + (p.msg_mtu as u64) * 2)
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let (pf, _) = p.flits_of(max_pkt[0]);
        let min_static = (0..nvl)
            .map(|v| p.max_static[v] as u64 * p.width as u64 / 4)
            .min()
            .unwrap_or(0);
        let has_switch = topo.nodes.iter().any(|n| n.is_switch());
        if pf > u16::MAX as u32 {
            return Err(ConfigError::Invalid(format!(
                "a packet of {pf} flits (MTU {} B, flit {} B) has more than 65535 flits",
                p.msg_mtu, p.flit_size
            )));
        }
        if pf as u64 >= p.obuf_size_hca as u64 {
            return Err(ConfigError::Invalid(format!(
                "a packet of {pf} flits (MTU {} B) can never start at an HCA: the obuf holds {} flits and admission needs strictly more free slots than the packet (Q10)",
                p.msg_mtu, p.obuf_size_hca
            )));
        }
        if has_switch && pf as u64 >= p.obuf_size_switch as u64 {
            return Err(ConfigError::Invalid(format!(
                "a packet of {pf} flits (MTU {} B) can never start at a switch: obuf_size_switch is {} (Q10)",
                p.msg_mtu, p.obuf_size_switch
            )));
        }
        if pf as u64 > min_static {
            return Err(ConfigError::Invalid(format!(
                "a packet of {pf} flits (MTU {} B) exceeds the static credits ({min_static} flits per VL) and could never be sent (Q10)",
                p.msg_mtu
            )));
        }
        if p.cc_enabled && p.flit_size as u64 > u16::MAX as u64 {
            return Err(ConfigError::Invalid("flit_size too large for CC".into()));
        }
        let high = parse_arb_table("high_vl_arb_entries", &p.high_vl_arb_entries)?;
        let low = parse_arb_table("low_vl_arb_entries", &p.low_vl_arb_entries)?;
        // Lazy credit timer is exact only when every delay that reaches an
        // obuf is shorter than the credit period (see mod.rs).
        let lazy = p.lazy_credit_timer
            && tm.cred > NS
            && tm.vsw + 64 * NS < tm.cred
            && tm.wire.iter().all(|&w| w < tm.cred)
            && tm.wire_fc < tm.cred;

        let max_lid = topo.max_lid() as usize;
        let mut lid_to_hca = vec![NONE; max_lid + 1];
        let mut ports: Vec<Port> = Vec::new();
        let mut hcas: Vec<Hca> = Vec::new();
        let mut lfts: Vec<Vec<u16>> = Vec::new();
        let mut node_base = vec![0u32; topo.nodes.len()];
        let mk_ob = |size: u32| Obuf {
            q: VecDeque::new(),
            size: size as usize,
            pop_pending: false,
            inside: false,
            fctbs: [0; 8],
            fccl: [0; 8],
            sent_fctbs: [u64::MAX; 8],
            sent_fccl: [u64::MAX; 8],
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
        };
        let statics: Vec<i64> = (0..8)
            .map(|v| p.max_static.get(v).copied().unwrap_or(0) as i64 * p.width as i64 / 4)
            .collect();
        let mk_ib = |nout: usize| {
            let mut free = [0i64; 8];
            free[..nvl].copy_from_slice(&statics[..nvl]);
            Ibuf {
                free,
                max_free: free,
                abr: [0; 8],
                q: (0..nout * nvl).map(|_| VecDeque::new()).collect(),
                cur_msg: NONE,
                cur_pkt: 0,
                cur_src: 0,
                cur_out: 0,
                nbs: 0,
                last: 0,
                free_stat: vec![Stat::default(); nvl],
                drops: 0,
            }
        };
        let mk_arb = |inputs: u16| Arb {
            inputs,
            hoq: vec![NONE; inputs as usize * nvl],
            hoq_first: vec![0; inputs as usize * nvl],
            t_arr: vec![0; inputs as usize * nvl],
            res: vec![false; inputs as usize * nvl],
            fccl: [0; 8],
            fctbs: [0; 8],
            pop_pending: false,
            inside: false,
            last_vl: 0,
            last_port: [0; 8],
            last: 0,
            high,
            low,
            used_high: [0; 8],
            used_low: [0; 8],
            idx_high: 0,
            idx_low: 0,
            last_high: false,
            high_left: p.vl_high_limit as i64 * 64,
            mark_ctr: 0,
        };
        for (ni, n) in topo.nodes.iter().enumerate() {
            node_base[ni] = ports.len() as u32;
            match &n.kind {
                NodeKind::Hca { lid } => {
                    let h = hcas.len() as u32;
                    lid_to_hca[*lid as usize] = h;
                    hcas.push(Hca {
                        node: ni as u32,
                        lid: *lid,
                        port: ports.len() as u32,
                        app: App {
                            rng: p.seed ^ ((h as u64 + 1) * 0x1000_0000_01B3),
                            ..App::default()
                        },
                        gen: Gen {
                            cur: NONE,
                            pkt: 0,
                            sn: 0,
                            pkt_flits: 0,
                            pkt_last_bytes: 0,
                            vlq: (0..nvl).map(|_| VecDeque::new()).collect(),
                            cnpq: VecDeque::new(),
                            push_pending: false,
                            serial: HashMap::new(),
                            bytes_sent: 0,
                            flits_sent: 0,
                            first_flit: None,
                        },
                        sink: SinkSt::default(),
                        cc: Cc {
                            ccti: HashMap::new(),
                            ccti_max: 0,
                            first_inj: None,
                            timer_pending: false,
                        },
                    });
                    ports.push(Port {
                        node: ni as u32,
                        local: 0,
                        hca: h,
                        sw: NONE,
                        base: ports.len() as u32,
                        nports: 1,
                        peer: NONE,
                        ob: mk_ob(p.obuf_size_hca),
                        ib: mk_ib(1),
                        arb: mk_arb(1),
                    });
                }
                NodeKind::Switch { ports: np, fdb } => {
                    let s = lfts.len() as u32;
                    lfts.push(fdb.clone());
                    let base = ports.len() as u32;
                    for i in 0..*np {
                        ports.push(Port {
                            node: ni as u32,
                            local: i,
                            hca: NONE,
                            sw: s,
                            base,
                            nports: *np,
                            peer: NONE,
                            ob: mk_ob(p.obuf_size_switch),
                            ib: mk_ib(*np as usize),
                            arb: mk_arb(*np),
                        });
                    }
                }
            }
        }
        for l in &topo.links {
            let a = node_base[l.a.node] + l.a.port as u32;
            let b = node_base[l.b.node] + l.b.port as u32;
            ports[a as usize].peer = b;
            ports[b as usize].peer = a;
        }
        let mut f = Fabric {
            p,
            tm,
            nvl,
            topo_name: topo.name.clone(),
            node_names: topo.nodes.iter().map(|n| n.name.clone()).collect(),
            ports,
            hcas,
            fl: Vec::new(),
            fl_free: Vec::new(),
            lfts,
            lid_to_hca,
            msgs: Vec::new(),
            completions: Vec::new(),
            in_flight: 0,
            heap: super::wheel::Wheel::new(),
            dbg_last_key: 0,
            nowq: super::wheel::Fifo::with_capacity(256),
            counter: 0,
            cur_seq: 0,
            now: 0,
            started: false,
            events: 0,
            fg_pending: 0,
            last_fg: 0,
            sink_held: 0,
            lazy,
            next_boundary: 0,
            bk_counter: 0,
            fatal: None,
            trace: None,
            flits_generated: 0,
            flits_consumed: 0,
            flits_dropped: 0,
            pending_done: 0,
        };
        f.init_events(topo);
        Ok(f)
    }

    /// Initialisation, depth-first in declaration order (sec. 1.4): HCA =
    /// app, gen, sink, obuf, ibuf, vlarb; switch = ports, each obuf, ibuf.
    fn init_events(&mut self, topo: &Topology) {
        let mut pi = 0usize;
        for n in &topo.nodes {
            let np = n.num_ports() as usize;
            for _ in 0..np {
                let port = &self.ports[pi];
                let hca = port.hca;
                let connected = port.peer != NONE;
                if hca != NONE && port.local == 0 {
                    self.sched(0, Ev::AppStart { h: hca });
                    self.sched(NS, Ev::SinkHiccup { h: hca });
                }
                if connected {
                    self.sched(0, Ev::ObufTick { port: pi as u32 });
                    for v in 0..self.nvl {
                        let ib = &self.ports[pi].ib;
                        let l = ib.abr[v] + ib.free[v] as u64;
                        self.sched(
                            NS,
                            Ev::ObufRxCred {
                                port: pi as u32,
                                vl: v as u8,
                                limit: l,
                            },
                        );
                    }
                }
                pi += 1;
            }
        }
    }

    // ------------------------------------------------------------------
    // event queue

    #[inline(always)]
    fn sched(&mut self, at: u64, ev: Ev) {
        let seq = self.counter << SEQ_SHIFT;
        self.counter += 1;
        if at == self.now && self.started {
            if !ev.background() {
                self.fg_pending += 1;
            }
            self.nowq.push_back(Entry {
                key: ((at as u128) << 64) | seq as u128,
                ev,
            });
        } else {
            self.push_key(at, seq, ev);
        }
    }

    #[inline]
    fn peek_time(&mut self) -> Option<u64> {
        self.peek_source().map(|(t, _)| t)
    }

    /// Time of the next event and whether it comes from the now-queue.
    /// Heap events at the current instant were inserted before every
    /// now-queue event (or carry a virtual seq below them): they go first.
    #[inline(always)]
    fn peek_source(&mut self) -> Option<(u64, bool)> {
        if self.heap.has_at(self.now) {
            return Some((self.now, false));
        }
        match self.nowq.front() {
            Some(a) => Some(((a.key >> 64) as u64, true)),
            None => self.heap.peek_key().map(|k| (k.0, false)),
        }
    }

    #[inline(always)]
    fn push_key(&mut self, at: u64, seq: u64, ev: Ev) {
        if !ev.background() {
            self.fg_pending += 1;
        }
        self.heap.push(at, seq, ev);
    }

    /// Virtual sequence number of an event inserted by the (possibly
    /// skipped) credit tick of obuf `pi` in the current period.
    #[inline]
    fn virt_seq(&self, pi: usize) -> u64 {
        ((self.bk_counter.max(1) - 1) << SEQ_SHIFT) | (1 + pi as u64)
    }

    // ------------------------------------------------------------------
    // public API

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

    /// Send queue (SL = VL) of the messages of HCA `h` (default `msg_sq`).
    pub fn set_send_queue(&mut self, h: usize, vl: u8) -> Result<(), FabricError> {
        if h >= self.hcas.len() {
            return Err(FabricError::NoSuchHca(h, self.hcas.len()));
        }
        if vl as usize >= self.nvl {
            return Err(FabricError::BadMessage(format!(
                "send queue {vl} above max_vl {}",
                self.nvl - 1
            )));
        }
        self.hcas[h].app.sq = Some(vl);
        Ok(())
    }

    /// Configure the standalone app of HCA `h` (before the first event).
    pub fn set_traffic(&mut self, h: usize, mode: TrafficMode) -> Result<(), FabricError> {
        if self.started {
            return Err(FabricError::AlreadyStarted);
        }
        if h >= self.hcas.len() {
            return Err(FabricError::NoSuchHca(h, self.hcas.len()));
        }
        let dsts: Vec<u16> = match &mode {
            TrafficMode::Silent => vec![],
            TrafficMode::Param { dst_lid } => {
                if *dst_lid == 0 {
                    vec![]
                } else {
                    vec![*dst_lid]
                }
            }
            TrafficMode::SeqOnce(v) | TrafficMode::SeqLoop(v) | TrafficMode::SeqRand(v) => {
                v.clone()
            }
        };
        for d in dsts {
            self.check_route(h, d)?;
        }
        // one message sizing check (fails early for legacy B < M)
        if !matches!(mode, TrafficMode::Silent) && self.p.msg_len_mode == "param" {
            self.p
                .packet_layout(self.p.msg_length)
                .map_err(|e| FabricError::BadMessage(e.to_string()))?;
        }
        self.hcas[h].app.mode = Some(mode);
        Ok(())
    }

    fn check_route(&self, h: usize, lid: u16) -> Result<usize, FabricError> {
        let src = self.node_names[self.hcas[h].node as usize].clone();
        let err = |d: String| FabricError::Unroutable {
            src: src.clone(),
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

    /// External traffic: at `at` the app of HCA `src_hca` receives a message
    /// of `bytes` for HCA `dst_hca`. Messages queue FIFO in the app; the app
    /// hands one at a time to the generator, `msg2msg_gap` after it arrives
    /// (idle app) or after the generator reported the previous one fully
    /// generated ("done"), exactly as the reference app paces its messages.
    pub fn inject(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
    ) -> Result<MsgId, FabricError> {
        if at.0 < self.now {
            return Err(FabricError::InPast {
                at: at.0,
                now: self.now,
            });
        }
        if at.0 > MAX_TIME_PS {
            return Err(FabricError::BadMessage(format!(
                "injection time {} ps is beyond the fabric's range ({MAX_TIME_PS} ps)",
                at.0
            )));
        }
        let n = self.hcas.len();
        if src_hca >= n {
            return Err(FabricError::NoSuchHca(src_hca, n));
        }
        if dst_hca >= n {
            return Err(FabricError::NoSuchHca(dst_hca, n));
        }
        let lid = self.hcas[dst_hca].lid;
        self.check_route(src_hca, lid)?;
        let id = self
            .new_msg(src_hca as u32, lid, bytes, at.0)
            .map_err(FabricError::BadMessage)?;
        self.sched(
            at.0,
            Ev::AppInject {
                h: src_hca as u32,
                msg: id,
            },
        );
        Ok(id as MsgId)
    }

    fn new_msg(&mut self, src: u32, dst_lid: u16, bytes: u64, t: u64) -> Result<u32, String> {
        let pk = self.p.packet_layout(bytes).map_err(|e| e.to_string())?;
        if self.msgs.len() >= (NONE - 1) as usize {
            return Err(format!("more than {} messages in one run", NONE - 1));
        }
        let id = self.msgs.len() as u32;
        self.msgs.push(Msg {
            src,
            dst_hca: self.lid_to_hca[dst_lid as usize],
            dst_lid,
            vl: self.hcas[src as usize].app.sq.unwrap_or(self.p.msg_sq),
            bytes,
            npkts: pk.count,
            full_pkt: pk.full,
            last_pkt: pk.last,
            injected: t,
            first_stamp: None,
            arrived_pkts: 0,
            consumed_pkts: 0,
            enough_at: None,
            net_latency: None,
            done: None,
        });
        self.in_flight += 1;
        Ok(id)
    }

    /// Process every event with time <= t; afterwards now() == max(now, t).
    pub fn run_until(&mut self, t: Time) {
        while self.fatal.is_none() {
            match self.peek_source() {
                Some((et, from_now)) if et <= t.0 => {
                    self.step_from(from_now);
                }
                _ => break,
            }
        }
        if self.fatal.is_none() && t.0 > self.now {
            self.advance_to(t.0);
        }
    }

    /// Move the clock forward to `t` (no event is pending before it).
    fn advance_to(&mut self, t: u64) {
        if t > MAX_TIME_PS {
            self.fail(format!(
                "time limit {t} ps is beyond the fabric's range ({MAX_TIME_PS} ps)"
            ));
        } else {
            self.now = t;
        }
    }

    /// Run until at least one message completes (last flit consumed), then
    /// finish that instant; return the instant and the messages completed at
    /// it (they are removed from the `take_completions` buffer). None when
    /// nothing is in flight, when the messages in flight can never complete
    /// (deadlock), or after a fatal error (see [`Fabric::error`]).
    ///
    /// Deadlock rule (issue 19, cosim-protocol.md 3a: a fabric that only
    /// stalls is not deadlocked). Foreground events are every event except
    /// the periodic timers (credit tick, sink hiccup toggle, CC timer) and
    /// the obuf pop / sink drain that a tick or a hiccup end starts
    /// ([`Ev::background`]). Anything useful a timer does -- an FC packet,
    /// a flit on the wire, a consumed flit -- schedules foreground events;
    /// a timer that finds nothing to do schedules only timer events, and
    /// what it looks at (credit counters, obuf and sink queues, the
    /// in-packet flag) changes only in foreground events. So once no
    /// foreground event is pending, if every timer has run a full cycle
    /// (with the pop or drain it starts) since the last foreground event
    /// without scheduling one, each later cycle will do exactly the same
    /// nothing: that is a deadlock. The cycle bound used is
    /// `Tcred + 1 ns`, plus `hiccupDuration + hiccupDelay + 1 ns` while a
    /// sink FIFO holds flits (only then can a hiccup end matter); CC timers
    /// only change the pacing of future pushes, which are foreground
    /// events already. A sink that stalls for a finite time, a credit
    /// timer of any period and CC back-off are therefore progress, and a
    /// true deadlock is reported after at most one such cycle of simulated
    /// time (never a hang: the timers' events in that cycle are bounded).
    pub fn run_until_completion(&mut self) -> Option<(Time, Vec<MsgId>)> {
        match self.run_until_completion_or(Time(u64::MAX)) {
            RunOutcome::Completed(t, ids) => Some((t, ids)),
            _ => None,
        }
    }

    /// As [`Fabric::run_until_completion`], but stop at `limit` (inclusive)
    /// if no message completes by then: the first completion instant
    /// `t <= limit` ([`RunOutcome::Completed`]), or every event with time
    /// `<= limit` processed and `now() == limit` ([`RunOutcome::Limit`]),
    /// whichever comes first. With `limit = Time(u64::MAX)` this is
    /// `run_until_completion`.
    pub fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome {
        if self.fatal.is_some() {
            return RunOutcome::Fatal;
        }
        if self.in_flight == 0 {
            return RunOutcome::Idle;
        }
        let mark = self.completions.len();
        let mut found: Option<u64> = None;
        loop {
            if self.fatal.is_some() {
                break;
            }
            let Some(t) = self.peek_time() else { break };
            if let Some(ft) = found {
                if t > ft {
                    break;
                }
            } else {
                if t > limit.0 {
                    break;
                }
                if self.fg_pending == 0 && t > self.last_fg.saturating_add(self.quiet_window()) {
                    return RunOutcome::Deadlock;
                }
            }
            self.step();
            if found.is_none() && self.completions.len() > mark {
                found = Some(self.now);
            }
        }
        let Some(ft) = found else {
            if self.fatal.is_some() {
                return RunOutcome::Fatal;
            }
            if self.peek_time().is_none() {
                // nothing at all is left: the timers cannot be running
                return RunOutcome::Deadlock;
            }
            if limit.0 > self.now {
                self.advance_to(limit.0);
                if self.fatal.is_some() {
                    return RunOutcome::Fatal;
                }
            }
            return RunOutcome::Limit;
        };
        let done: Vec<(MsgId, Time)> = self.completions.drain(mark..).collect();
        let ids: Vec<MsgId> = done
            .iter()
            .filter(|(_, t)| t.0 == ft)
            .map(|(i, _)| *i)
            .collect();
        RunOutcome::Completed(Time(ft), ids)
    }

    /// Simulated time after the last foreground event during which, with no
    /// foreground event pending, every periodic timer has run a full cycle
    /// (see the deadlock rule at [`Fabric::run_until_completion`]).
    fn quiet_window(&self) -> u64 {
        let mut w = self.tm.cred + NS;
        if self.sink_held > 0 {
            w += self.tm.hiccup_on + self.tm.hiccup_off + NS;
        }
        w
    }

    /// A provable lower bound on the time of the next completion of a
    /// message already in the fabric, None when nothing is in flight (or
    /// after a fatal error). A completion is the consumption of a last flit
    /// by a sink drain: either a drain already pending, or one scheduled
    /// by a later event, at least `min(1 ns, drain time of 1 byte)` after
    /// it. Cheap (O(HCAs)) and weak; messages injected later are not
    /// covered (they cannot complete before their injection time).
    pub fn completion_lower_bound(&mut self) -> Option<Time> {
        if self.in_flight == 0 || self.fatal.is_some() {
            return None;
        }
        let next = self.peek_time()?;
        let dmin = self.tm.drain.get(1).copied().unwrap_or(0).min(NS);
        let mut lb = next + dmin;
        for h in &self.hcas {
            if h.sink.drain_pending {
                lb = lb.min(h.sink.drain_at);
            }
        }
        Some(Time(lb.max(self.now)))
    }

    /// Completions since the last call, in order.
    pub fn take_completions(&mut self) -> Vec<(MsgId, Time)> {
        std::mem::take(&mut self.completions)
    }

    /// Messages injected (or created by standalone apps) and not completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn next_event_time(&mut self) -> Option<Time> {
        self.peek_time().map(Time)
    }

    pub fn events_processed(&self) -> u64 {
        self.events
    }

    /// Message record: (network latency, completion time) if known.
    pub fn message_times(&self, id: MsgId) -> Option<(Option<Time>, Option<Time>)> {
        self.msgs
            .get(id as usize)
            .map(|m| (m.net_latency.map(Time), m.done.map(Time)))
    }

    /// Ids of the messages still in flight (for deadlock reports).
    pub fn in_flight_ids(&self) -> Vec<MsgId> {
        (0..self.msgs.len())
            .filter(|&i| self.msgs[i].done.is_none())
            .map(|i| i as MsgId)
            .collect()
    }

    // ------------------------------------------------------------------
    // main loop

    fn step(&mut self) {
        if let Some((_, from_now)) = self.peek_source() {
            self.step_from(from_now);
        }
    }

    /// Process the next event; `take_now` as decided by `peek_source`.
    #[inline(always)]
    fn step_from(&mut self, take_now: bool) {
        let (key, ev) = if take_now {
            let e = self.nowq.pop_front().unwrap();
            (e.key, e.ev)
        } else {
            let Some((t, seq, ev)) = self.heap.pop() else {
                return;
            };
            (((t as u128) << 64) | seq as u128, ev)
        };
        let t = (key >> 64) as u64;
        debug_assert!(
            key > self.dbg_last_key || self.events == 0,
            "event keys must increase"
        );
        self.dbg_last_key = key;
        self.cur_seq = key as u64;
        if !self.started {
            self.started = true;
        }
        if !ev.background() {
            self.fg_pending -= 1;
            self.last_fg = t;
        }
        debug_assert!(t >= self.now);
        if t > MAX_TIME_PS {
            self.fail(format!(
                "simulated time {t} ps is beyond the fabric's range ({MAX_TIME_PS} ps)"
            ));
            return;
        }
        self.now = t;
        if t >= self.next_boundary {
            let k = t / self.tm.cred;
            self.bk_counter = self.counter;
            self.next_boundary = (k + 1) * self.tm.cred;
        }
        self.events += 1;
        match ev {
            Ev::AppStart { h } => self.app_next(h as usize),
            Ev::AppInject { h, msg } => {
                self.hcas[h as usize].app.queue.push_back(msg);
                if !self.hcas[h as usize].app.busy {
                    self.app_next(h as usize);
                }
            }
            Ev::AppDone { h } => {
                self.hcas[h as usize].app.busy = false;
                self.app_next(h as usize);
            }
            Ev::GenMsg { h, msg } => self.gen_new_msg(h as usize, msg),
            Ev::GenPush { h } => {
                self.hcas[h as usize].gen.push_pending = false;
                self.gen_one(h as usize);
            }
            Ev::GenSent { h, vl } => self.gen_sent(h as usize, vl as usize),
            Ev::ArbFlit { port, input, flit } => self.arb_flit(port as usize, input as usize, flit),
            Ev::ArbPop { port } => {
                self.ports[port as usize].arb.pop_pending = false;
                self.arbitrate(port as usize);
            }
            Ev::ArbTxCred { port, vl, limit } => {
                self.ports[port as usize].arb.fccl[vl as usize] = limit;
                self.arbitrate(port as usize);
            }
            Ev::ArbKick { port } => self.arbitrate(port as usize),
            Ev::ObufFlit { port, flit } => self.obuf_flit(port as usize, flit),
            Ev::ObufRxCred { port, vl, limit } => {
                let pi = port as usize;
                if self.ports[pi].ob.dormant {
                    self.obuf_wake(pi);
                }
                self.ports[pi].ob.fccl[vl as usize] = limit;
            }
            Ev::ObufTick { port } => self.obuf_tick(port as usize),
            Ev::ObufPop { port, .. } => self.obuf_pop(port as usize),
            Ev::IbufFlit { port, flit } => self.ibuf_flit(port as usize, flit),
            Ev::IbufFc { port, vl } => {
                let pi = port as usize;
                let peer = &self.ports[self.ports[pi].peer as usize].ob;
                let (fctbs, fccl) = (peer.sent_fctbs[vl as usize], peer.sent_fccl[vl as usize]);
                self.sched(
                    t,
                    Ev::ArbTxCred {
                        port,
                        vl,
                        limit: fccl,
                    },
                );
                let ib = &mut self.ports[pi].ib;
                let v = vl as usize;
                if ib.abr[v] < fctbs {
                    ib.abr[v] = fctbs;
                }
                let l = ib.abr[v] + ib.free[v] as u64;
                self.sched(t, Ev::ObufRxCred { port, vl, limit: l });
            }
            Ev::IbufSent {
                port,
                vl,
                last,
                out,
            } => self.ibuf_sent(port as usize, vl as usize, last, out as usize),
            Ev::SinkFlit { h, flit } => self.sink_flit(h as usize, flit),
            Ev::SinkDrain { h, .. } => self.sink_drain(h as usize),
            Ev::SinkHiccup { h } => self.sink_hiccup(h as usize),
            Ev::CctiTimer { h } => self.ccti_timer(h as usize),
        }
    }

    #[inline]
    fn fl_alloc(&mut self, f: Flit) -> FId {
        match self.fl_free.pop() {
            Some(i) => {
                self.fl[i as usize] = f;
                i
            }
            None => {
                self.fl.push(f);
                (self.fl.len() - 1) as FId
            }
        }
    }

    #[inline]
    fn fl_release(&mut self, i: FId) {
        self.fl_free.push(i);
    }

    fn fail(&mut self, msg: String) {
        if self.fatal.is_none() {
            self.fatal = Some(FabricError::Fatal { t: self.now, msg });
        }
    }

    #[inline]
    fn trace(&mut self, kind: TraceKind, pi: usize, id: FId) {
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

    // ------------------------------------------------------------------
    // app (sec. 5.1)

    fn app_next(&mut self, h: usize) {
        let now = self.now;
        let app = &mut self.hcas[h].app;
        let msg = if let Some(m) = app.queue.pop_front() {
            Some(m)
        } else {
            let dst = match &app.mode {
                None | Some(TrafficMode::Silent) => None,
                Some(TrafficMode::Param { dst_lid }) => (*dst_lid != 0).then_some(*dst_lid),
                Some(TrafficMode::SeqOnce(v)) => {
                    let d = v.get(app.pos).copied();
                    app.pos += 1;
                    d
                }
                Some(TrafficMode::SeqLoop(v)) => {
                    if v.is_empty() {
                        None
                    } else {
                        let d = v[app.pos % v.len()];
                        app.pos += 1;
                        Some(d)
                    }
                }
                Some(TrafficMode::SeqRand(v)) => {
                    if v.is_empty() {
                        None
                    } else {
                        let r = splitmix(&mut app.rng);
                        Some(v[(r % v.len() as u64) as usize])
                    }
                }
            };
            match dst {
                None => None,
                Some(d) => {
                    let bytes = if self.p.msg_len_mode == "set" {
                        let r = splitmix(&mut app.rng);
                        let u = (r >> 11) as f64 / (1u64 << 53) as f64;
                        let tot: f64 = self.p.msg_len_prob.iter().sum();
                        let mut acc = 0.0;
                        let mut pick = *self.p.msg_len_set.last().unwrap();
                        for (i, pr) in self.p.msg_len_prob.iter().enumerate() {
                            acc += pr / tot;
                            if u < acc {
                                pick = self.p.msg_len_set[i];
                                break;
                            }
                        }
                        pick
                    } else {
                        self.p.msg_length
                    };
                    app.msgs_made += 1;
                    match self.new_msg(h as u32, d, bytes, now) {
                        Ok(m) => Some(m),
                        Err(e) => {
                            self.fail(format!("app of HCA {h}: {e}"));
                            None
                        }
                    }
                }
            }
        };
        if let Some(m) = msg {
            self.hcas[h].app.busy = true;
            self.sched(
                now + self.tm.gap,
                Ev::GenMsg {
                    h: h as u32,
                    msg: m,
                },
            );
        }
    }

    // ------------------------------------------------------------------
    // generator (sec. 5.2)

    fn gen_new_msg(&mut self, h: usize, m: u32) {
        let msg = &self.msgs[m as usize];
        let (pf, pl) = self.p.flits_of(if msg.npkts == 1 {
            msg.last_pkt
        } else {
            msg.full_pkt
        });
        let g = &mut self.hcas[h].gen;
        g.cur = m;
        g.pkt = 0;
        g.sn = 0;
        g.pkt_flits = pf as u16;
        g.pkt_last_bytes = pl as u16;
        if g.push_pending {
            return;
        }
        self.gen_one(h);
    }

    fn gen_one(&mut self, h: usize) {
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
        // create the flit
        let last_in_pkt = g.sn + 1 == g.pkt_flits;
        let serial = if g.sn == 0 {
            let s = g.serial.entry(m.dst_lid).or_insert(0);
            *s += 1;
            *s
        } else {
            0
        };
        let flit = Flit {
            msg: g.cur,
            pkt: g.pkt,
            inject: 0,
            t_in: 0,
            serial,
            src: hca.lid,
            dst: m.dst_lid,
            sn: g.sn,
            pkt_flits: g.pkt_flits,
            bytes: if last_in_pkt {
                g.pkt_last_bytes
            } else {
                self.p.flit_size as u16
            },
            vl: v as u8,
            flags: F_NOSW,
        };
        // advance
        let mut msg_done = false;
        if last_in_pkt {
            g.pkt += 1;
            g.sn = 0;
            if g.pkt == m.npkts {
                msg_done = true;
                g.cur = NONE;
            } else {
                let b = if g.pkt + 1 == m.npkts {
                    m.last_pkt
                } else {
                    m.full_pkt
                };
                let (pf, pl) = self.p.flits_of(b);
                g.pkt_flits = pf as u16;
                g.pkt_last_bytes = pl as u16;
            }
        } else {
            g.sn += 1;
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
    fn push_period(&self, h: usize, dst: u16) -> u64 {
        if self.p.cc_enabled {
            let key = if self.p.cc_per_destination { dst } else { 0 };
            let i = self.hcas[h].cc.ccti.get(&key).copied().unwrap_or(0);
            self.tm.cc_base + self.tm.cct[i as usize]
        } else {
            self.tm.push
        }
    }

    fn gen_send_flit(&mut self, h: usize, id: FId) {
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
        if flit.flags & F_CNP == 0 && flit.pkt == 0 && flit.sn == 0 {
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

    fn gen_sent(&mut self, h: usize, v: usize) {
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

    // ------------------------------------------------------------------
    // VL arbiter (sec. 5.3)

    /// isHoQFree: true iff empty and unreserved; reserves on success.
    #[inline]
    fn hoq_free(&mut self, port: usize, input: usize, v: usize) -> bool {
        let a = &mut self.ports[port].arb;
        let i = input * self.nvl + v;
        if a.hoq[i] == NONE && !a.res[i] {
            a.res[i] = true;
            true
        } else {
            false
        }
    }

    fn arb_flit(&mut self, pi: usize, input: usize, id: FId) {
        let nvl = self.nvl;
        let a = &mut self.ports[pi].arb;
        let f = &self.fl[id as usize];
        let vl = f.vl;
        let first = if f.sn == 0 { f.pkt_flits } else { 0 };
        let i = input * nvl + vl as usize;
        if !a.res[i] || a.hoq[i] != NONE {
            let msg = format!("arbiter HoQ ({input}, {vl}) not reserved or occupied");
            self.fail(msg);
            return;
        }
        a.hoq[i] = id;
        a.hoq_first[i] = first;
        a.t_arr[i] = self.now;
        a.res[i] = false;
        self.arbitrate(pi);
    }

    /// Round-robin input pick for VL v from `last_port + 1`, wrapping.
    #[inline]
    fn rr_pick(a: &Arb, nvl: usize, v: usize, start_after: u16, credits: i64) -> Option<usize> {
        let n = a.inputs as usize;
        let mut p = start_after as usize;
        for _ in 0..n {
            p += 1;
            if p == n {
                p = 0;
            }
            // 0 = empty or a continuation flit
            let len = a.hoq_first[p * nvl + v];
            if len != 0 && len as i64 <= credits {
                return Some(p);
            }
        }
        None
    }

    fn fcfs_pick(
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
            let id = a.hoq[p * nvl + v];
            if id != NONE {
                let f = &fl[id as usize];
                if f.sn == 0 && best.is_none_or(|(t, _)| f.t_in < t) {
                    best = Some((f.t_in, p));
                }
            }
        }
        let (_, p) = best?;
        (fl[a.hoq[p * nvl + v] as usize].pkt_flits as i64 <= credits).then_some(p)
    }

    fn pick(&self, a: &Arb, v: usize, start: u16) -> Option<usize> {
        let credits = a.fccl[v] as i64 - a.fctbs[v] as i64;
        if self.p.use_fcfs_rq_arb {
            Self::fcfs_pick(a, &self.fl, self.nvl, v, start, credits)
        } else {
            Self::rr_pick(a, self.nvl, v, start, credits)
        }
    }

    /// Table arbitration (maxVL > 0), Q6 reproduced; with `iba_vl_arb` the
    /// IBA-style variant: all 8 entries, an entry keeps sending while
    /// `used < weight`, `used` restarts only when the index moves to it.
    fn table_select(&mut self, pi: usize) -> Option<(usize, usize)> {
        if self.p.iba_vl_arb {
            return self.table_select_iba(pi);
        }
        let n = self.nvl;
        let high_first = self.ports[pi].arb.high_left > 0;
        for pass in 0..2 {
            let use_high = high_first == (pass == 0);
            let mut a = std::mem::replace(&mut self.ports[pi].arb, dummy_arb());
            let start = a.last_port[a.last_vl as usize];
            let idx = if use_high { a.idx_high } else { a.idx_low };
            let mut res = None;
            for i in 0..=n {
                let e = (idx + i) % n;
                let (ent, used) = if use_high {
                    (a.high[e], &mut a.used_high[e])
                } else {
                    (a.low[e], &mut a.used_low[e])
                };
                if i >= 1 {
                    *used = 0;
                }
                if ent.weight == 0 || *used > ent.weight || ent.vl as usize >= n {
                    continue;
                }
                let v = ent.vl as usize;
                if let Some(p) = self.pick(&a, v, start) {
                    res = Some((p, v, e));
                    break;
                }
            }
            if let Some((p, v, e)) = res {
                if use_high {
                    a.idx_high = e;
                } else {
                    a.idx_low = e;
                }
                a.last_high = use_high;
                self.ports[pi].arb = a;
                return Some((p, v));
            }
            self.ports[pi].arb = a;
        }
        None
    }

    fn table_select_iba(&mut self, pi: usize) -> Option<(usize, usize)> {
        let nvl = self.nvl;
        let high_first = self.ports[pi].arb.high_left > 0;
        for pass in 0..2 {
            let use_high = high_first == (pass == 0);
            let mut a = std::mem::replace(&mut self.ports[pi].arb, dummy_arb());
            let start = a.last_port[a.last_vl as usize];
            let idx = if use_high { a.idx_high } else { a.idx_low };
            let mut res = None;
            for i in 0..=8 {
                let e = (idx + i) % 8;
                let (ent, used) = if use_high {
                    (a.high[e], a.used_high[e])
                } else {
                    (a.low[e], a.used_low[e])
                };
                let used = if i == 0 { used } else { 0 };
                if ent.weight == 0 || used >= ent.weight || ent.vl as usize >= nvl {
                    continue;
                }
                let v = ent.vl as usize;
                if let Some(p) = self.pick(&a, v, start) {
                    res = Some((p, v, e, i));
                    break;
                }
            }
            if let Some((p, v, e, i)) = res {
                if i > 0 {
                    if use_high {
                        a.used_high[e] = 0;
                    } else {
                        a.used_low[e] = 0;
                    }
                }
                if use_high {
                    a.idx_high = e;
                } else {
                    a.idx_low = e;
                }
                a.last_high = use_high;
                self.ports[pi].arb = a;
                return Some((p, v));
            }
            self.ports[pi].arb = a;
        }
        None
    }

    fn arbitrate(&mut self, pi: usize) {
        let nvl = self.nvl;
        if self.ports[pi].arb.pop_pending {
            return;
        }
        let (p, v, first);
        if self.ports[pi].arb.inside {
            let a = &mut self.ports[pi].arb;
            v = a.last_vl as usize;
            p = a.last_port[v] as usize;
            let id = a.hoq[p * nvl + v];
            if id == NONE {
                return;
            }
            let is_last = self.fl[id as usize].last();
            if is_last {
                a.inside = false;
            }
            if nvl > 1 && !self.p.iba_vl_arb {
                // Q6 reproduced: only continuation flits count
                if a.last_high {
                    a.high_left -= 1;
                } else if is_last && a.high_left == 0 {
                    a.high_left = self.p.vl_high_limit as i64 * 64;
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
            let f = &self.fl[port.arb.hoq[p * nvl + v] as usize];
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
        let id = std::mem::replace(&mut a.hoq[i], NONE);
        a.hoq_first[i] = 0;
        let flit = &mut self.fl[id as usize];
        let t_arr = a.t_arr[i];
        if nvl > 1 {
            if a.last_high {
                a.used_high[a.idx_high] += 1;
            } else {
                a.used_low[a.idx_low] += 1;
            }
            if self.p.iba_vl_arb {
                // every High flit counts; a Low packet ends the Low turn
                if a.last_high {
                    a.high_left -= 1;
                } else if flit.last() && a.high_left <= 0 {
                    a.high_left = self.p.vl_high_limit as i64 * 64;
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
        a.fctbs[v] += 1;
        a.res[i] = false;
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
            self.sched(
                now,
                Ev::IbufSent {
                    port: ii,
                    vl: v as u8,
                    last,
                    out: self.ports[pi].local,
                },
            );
        } else {
            let h = self.ports[pi].hca;
            self.sched(now, Ev::GenSent { h, vl: v as u8 });
        }
    }

    // ------------------------------------------------------------------
    // output buffer (sec. 5.4)

    fn obuf_wake(&mut self, pi: usize) {
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
        let pend = now < tstar + NS || (now == tstar + NS && cur < seq);
        if pend {
            ob.pop_pending = true;
            self.push_key(
                tstar + NS,
                seq,
                Ev::ObufPop {
                    port: pi as u32,
                    timer: true,
                },
            );
        } else if !ob.inside {
            // The always-ticking model's wake-up pop at tstar + 1 ns has
            // already run: between packets it scanned every VL (all in
            // sync while dormant) and left the FC pointer past the last
            // one, so no FC packet may go out before the next tick.
            ob.fc_vl = self.nvl as u8;
        }
        self.push_key(tstar + cred, seq, Ev::ObufTick { port: pi as u32 });
    }

    fn obuf_tick(&mut self, pi: usize) {
        let now = self.now;
        let cred = self.tm.cred;
        let k = now / cred;
        let virt = self.lazy && k >= 1;
        let seq = self.virt_seq(pi);
        let ob = &mut self.ports[pi].ob;
        ob.fc_vl = 0;
        ob.last_tick = now;
        if virt && !ob.pop_pending && ob.q.is_empty() && (ob.inside || synced(ob, self.nvl)) {
            ob.dormant = true;
            ob.qdepth.add(0);
            return;
        }
        let need_pop = !ob.pop_pending;
        if need_pop {
            ob.pop_pending = true;
        }
        let qlen = ob.q.len() as u64;
        ob.qdepth.add(qlen);
        if virt {
            if need_pop {
                self.push_key(
                    now + NS,
                    seq,
                    Ev::ObufPop {
                        port: pi as u32,
                        timer: true,
                    },
                );
            }
            self.push_key(now + cred, seq, Ev::ObufTick { port: pi as u32 });
        } else {
            if need_pop {
                self.sched(
                    now + NS,
                    Ev::ObufPop {
                        port: pi as u32,
                        timer: true,
                    },
                );
            }
            self.sched(now + cred, Ev::ObufTick { port: pi as u32 });
        }
    }

    fn obuf_flit(&mut self, pi: usize, flit: FId) {
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

    fn obuf_transmit_data(&mut self, pi: usize, id: FId) {
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
        ob.fctbs[flit.vl as usize] += 1;
        let w = self.tm.wire[flit.bytes as usize];
        ob.bytes += flit.bytes as u64;
        ob.data_flits += 1;
        ob.busy += w;
        ob.sources.add(flit.src as u64);
        if ob.first_tx.is_none() {
            ob.first_tx = Some(now);
        }
        ob.pop_pending = true;
        self.trace(TraceKind::Send, pi, id);
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
        self.sched(
            now,
            Ev::IbufFlit {
                port: peer,
                flit: id,
            },
        );
        self.sched(
            now + w,
            Ev::ObufPop {
                port: pi as u32,
                timer: false,
            },
        );
    }

    fn obuf_pop(&mut self, pi: usize) {
        let now = self.now;
        let nvl = self.nvl;
        let ob = &mut self.ports[pi].ob;
        ob.pop_pending = false;
        if ob.prev_data {
            self.sched(now, Ev::ArbKick { port: pi as u32 });
        }
        let ob = &mut self.ports[pi].ob;
        if !ob.inside {
            while (ob.fc_vl as usize) < nvl {
                let v = ob.fc_vl as usize;
                ob.fc_vl += 1;
                if ob.fctbs[v] != ob.sent_fctbs[v] || ob.fccl[v] != ob.sent_fccl[v] {
                    ob.sent_fctbs[v] = ob.fctbs[v];
                    ob.sent_fccl[v] = ob.fccl[v];
                    let w = self.tm.wire_fc;
                    ob.bytes += 8;
                    ob.fc_pkts += 1;
                    ob.busy += w;
                    if ob.first_tx.is_none() {
                        ob.first_tx = Some(now);
                    }
                    ob.pop_pending = true;
                    ob.prev_data = false;
                    let peer = self.ports[pi].peer;
                    self.sched(
                        now,
                        Ev::IbufFc {
                            port: peer,
                            vl: v as u8,
                        },
                    );
                    self.sched(
                        now + w,
                        Ev::ObufPop {
                            port: pi as u32,
                            timer: false,
                        },
                    );
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

    // ------------------------------------------------------------------
    // input buffer (sec. 5.5)

    fn ibuf_flit(&mut self, pi: usize, id: FId) {
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
            if (flit.pkt_flits as i64) > ib.free[v] && !self.p.lossy_mode {
                let msg = format!(
                    "packet of {} flits does not fit the {} free credits of VL {v}",
                    flit.pkt_flits, ib.free[v]
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
            if self.p.cc_enabled && is_sw && out < nports && flit.flags & (F_CNP | F_FECN) == 0 {
                let base = self.ports[pi].base as usize;
                let mut q = 0usize;
                for j in 0..nports as usize {
                    q += self.ports[base + j].ib.q[out as usize * nvl + v].len();
                }
                if q > self.p.cc_threshold as usize {
                    flit.flags |= F_CAND;
                }
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
        if self.p.lossy_mode && flit.sn == 0 && (flit.pkt_flits as i64) > self.ports[pi].ib.free[v]
        {
            // lossy: drop the whole packet
            self.ports[pi].ib.cur_out = u16::MAX;
            self.ports[pi].ib.drops += 1;
            self.flits_dropped += 1;
            self.fl_release(id);
            return;
        }
        let ib = &mut self.ports[pi].ib;
        ib.free[v] -= 1;
        ib.abr[v] += 1;
        ib.q[out as usize * nvl + v].push_back(id);
        let l = ib.abr[v] + ib.free[v] as u64;
        let fs = ib.free[v] as u64;
        ib.free_stat[v].add(fs);
        let l = if self.p.lossy_mode {
            ib.abr[v] + ib.max_free[v] as u64
        } else {
            l
        };
        self.sched(
            now,
            Ev::ObufRxCred {
                port: pi as u32,
                vl: v as u8,
                limit: l,
            },
        );
        self.ibuf_handoff(pi, out as usize, v);
    }

    fn ibuf_handoff(&mut self, pi: usize, o: usize, v: usize) {
        let nvl = self.nvl;
        let qi = o * nvl + v;
        if self.ports[pi].ib.q[qi].is_empty() {
            return;
        }
        let now = self.now;
        if self.ports[pi].hca != NONE {
            let f = self.ports[pi].ib.q[qi].pop_front().unwrap();
            let h = self.ports[pi].hca;
            self.sched(now, Ev::SinkFlit { h, flit: f });
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

    fn ibuf_sent(&mut self, pi: usize, v: usize, last: bool, o: usize) {
        let now = self.now;
        let ib = &mut self.ports[pi].ib;
        ib.free[v] += 1;
        if ib.free[v] > ib.max_free[v] {
            self.fail(format!("credits above the maximum on VL {v}"));
            return;
        }
        let l = if self.p.lossy_mode {
            ib.abr[v] + ib.max_free[v] as u64
        } else {
            ib.abr[v] + ib.free[v] as u64
        };
        self.sched(
            now,
            Ev::ObufRxCred {
                port: pi as u32,
                vl: v as u8,
                limit: l,
            },
        );
        if self.ports[pi].hca == NONE {
            if last {
                self.ports[pi].ib.nbs -= 1;
                let base = self.ports[pi].base;
                for j in 0..self.ports[pi].nports as u32 {
                    self.sched(now, Ev::ArbKick { port: base + j });
                }
            }
            self.ibuf_handoff(pi, o, v);
        }
    }

    // ------------------------------------------------------------------
    // sink (sec. 5.6) and statistics (sec. 8)

    fn sink_flit(&mut self, h: usize, id: FId) {
        let now = self.now;
        let flit = self.fl[id as usize];
        if flit.dst != self.hcas[h].lid {
            self.fail(format!(
                "flit for LID {} reached the sink of LID {}",
                flit.dst, self.hcas[h].lid
            ));
            return;
        }
        let pi = self.hcas[h].port as usize;
        if flit.flags & F_CNP != 0 {
            // BECN: raise the CCT index of the flow towards the CNP's
            // sender; consumed at once, credit freed.
            let key = if self.p.cc_per_destination {
                flit.src
            } else {
                0
            };
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
                    vl: flit.vl,
                    last: true,
                    out: 0,
                },
            );
            return;
        }
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
            if flit.pkt + 1 == m.npkts {
                if let Some(st) = m.first_stamp {
                    s.f2f.add(now - st);
                }
            }
        }
        if flit.last() {
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
            self.sched(
                now + d,
                Ev::SinkDrain {
                    h: h as u32,
                    timer: false,
                },
            );
        }
        self.hcas[h].sink.fifo.push_back(id);
        self.sink_held += 1;
        if fecn {
            self.send_cnp(h, flit.src, flit.vl);
        }
    }

    fn send_cnp(&mut self, h: usize, to: u16, _vl: u8) {
        self.hcas[h].sink.cnps_out += 1;
        let f = Flit {
            msg: NONE,
            pkt: 0,
            inject: 0,
            t_in: 0,
            serial: 0,
            src: self.hcas[h].lid,
            dst: to,
            sn: 0,
            pkt_flits: 1,
            bytes: self.p.flit_size as u16,
            vl: 0,
            flags: F_NOSW | F_CNP | F_BECN,
        };
        let port = self.hcas[h].port as usize;
        let f = self.fl_alloc(f);
        if self.hcas[h].gen.cnpq.is_empty() && self.hoq_free(port, 0, 0) {
            self.gen_send_flit(h, f);
        } else {
            self.hcas[h].gen.cnpq.push_back(f);
        }
    }

    fn sink_drain(&mut self, h: usize) {
        let now = self.now;
        let s = &mut self.hcas[h].sink;
        s.drain_pending = false;
        if s.hiccup_on || s.fifo.is_empty() {
            return;
        }
        let f = s.fifo.pop_front().unwrap();
        s.drain_pending = true;
        self.sink_held -= 1;
        let d = self.tm.drain[self.fl[f as usize].bytes as usize];
        // consume, then re-arm (sec. 5.6 and the reference's order; the two
        // events get consecutive sequence numbers, so either order gives
        // the same run)
        self.consume(h, f);
        self.hcas[h].sink.drain_at = now + d;
        self.sched(
            now + d,
            Ev::SinkDrain {
                h: h as u32,
                timer: false,
            },
        );
    }

    fn consume(&mut self, h: usize, id: FId) {
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
        if f.last() {
            let m = &mut self.msgs[f.msg as usize];
            m.consumed_pkts += 1;
            if m.consumed_pkts == m.npkts {
                m.done = Some(now);
                self.in_flight -= 1;
                self.completions.push((f.msg as MsgId, Time(now)));
                self.pending_done += 1;
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
    }

    fn sink_hiccup(&mut self, h: usize) {
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
                self.sched(
                    now + NS,
                    Ev::SinkDrain {
                        h: h as u32,
                        timer: true,
                    },
                );
            }
            self.sched(now + self.tm.hiccup_off, Ev::SinkHiccup { h: h as u32 });
        }
    }

    // ------------------------------------------------------------------
    // congestion control timers (sec. 12.1 item 6), armed only while the
    // index is above its minimum, on the phase of the first injection.

    fn ccti_timer_arm(&mut self, h: usize) {
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

    fn ccti_timer(&mut self, h: usize) {
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

    // ------------------------------------------------------------------
    // report

    /// Statistics of sec. 8, per-port utilisation and counters.
    pub fn report(&self) -> Report {
        self.report_with(false)
    }

    /// As [`Fabric::report`], optionally with every message's timing.
    pub fn report_with(&self, messages: bool) -> Report {
        let now = self.now;
        // A run that ends before the statistics start (default 100 us)
        // would report 0 B/s everywhere: take its bandwidth from t = 0
        // (the caller warns: the sampled statistics stay empty).
        let start = if now > self.tm.start_stat {
            self.tm.start_stat
        } else {
            0
        };
        let sinks = self
            .hcas
            .iter()
            .map(|h| {
                let s = &h.sink;
                let bytes = if start == self.tm.start_stat {
                    s.bytes_after_start
                } else {
                    s.bytes_total
                };
                let bw = if now > start {
                    bytes as f64 / ((now - start) as f64 * 1e-12) / 1e6
                } else {
                    0.0
                };
                SinkReport {
                    name: self.node_names[h.node as usize].clone(),
                    lid: h.lid,
                    msg_network_latency_ps: s.lat.summary(),
                    msg_first2first_network_latency_ps: s.f2f.summary(),
                    packet_fabric_time_ps: s.pft.summary(),
                    waiting_time_ps: s.wait.summary(),
                    time_last_packet_consumed_ps: s.last_consumed,
                    sink_bw_mbps: bw,
                    bytes_arrived_after_start: s.bytes_after_start,
                    vl_total_flits: s.vl_flits[..self.nvl].to_vec(),
                    ooo_window_pkts: s.ooo_window.summary(),
                    ooo_packets: s.ooo,
                    in_order_packets: s.inorder,
                    oo_io_packets_ratio: if s.inorder == 0 {
                        0.0
                    } else {
                        s.ooo as f64 / s.inorder as f64
                    },
                    num_srcs: s.ooo_next.len() as u64,
                    enough_pkts_network_latency_ps: s.enough_lat.summary(),
                    last_to_enough_pkt_arrival_ps: s.enough_gap.summary(),
                    cnps_received: s.cnps_in,
                    cnps_sent: s.cnps_out,
                    ccti: h.cc.ccti.values().copied().max().unwrap_or(0),
                    ccti_max: h.cc.ccti_max,
                }
            })
            .collect();
        let generators = self
            .hcas
            .iter()
            .map(|h| GenReport {
                name: self.node_names[h.node as usize].clone(),
                bytes_sent: h.gen.bytes_sent,
                flits_sent: h.gen.flits_sent,
                bw_bytes_per_sec: match h.gen.first_flit {
                    Some(t0) if now > t0 => h.gen.bytes_sent as f64 / ((now - t0) as f64 * 1e-12),
                    _ => 0.0,
                },
            })
            .collect();
        let mut obufs = Vec::new();
        let mut ibufs = Vec::new();
        for port in &self.ports {
            if port.peer == NONE {
                continue;
            }
            let ob = &port.ob;
            let peer = &self.ports[port.peer as usize];
            // samples of skipped ticks of a dormant obuf are zeros
            let mut qd = ob.qdepth.clone();
            if ob.dormant {
                qd.add_n(0, now / self.tm.cred - ob.last_tick / self.tm.cred);
            }
            obufs.push(ObufReport {
                node: self.node_names[port.node as usize].clone(),
                port: port.local,
                peer: Some(format!(
                    "{}[{}]",
                    self.node_names[peer.node as usize], peer.local
                )),
                output_bw_bytes_per_sec: match ob.first_tx {
                    Some(t0) if now > t0 => ob.bytes as f64 / ((now - t0) as f64 * 1e-12),
                    _ => 0.0,
                },
                bytes_sent: ob.bytes,
                data_flits_sent: ob.data_flits,
                fc_packets_sent: ob.fc_pkts,
                utilisation: if now > 0 {
                    ob.busy.min(now) as f64 / now as f64
                } else {
                    0.0
                },
                busy_ps: ob.busy,
                queue_depth: qd.summary(),
                flits_sources: ob.sources.summary(),
                elastic_overflows: ob.overflows,
            });
            ibufs.push(IbufReport {
                node: self.node_names[port.node as usize].clone(),
                port: port.local,
                free_credits: port.ib.free_stat.iter().map(|s| s.summary()).collect(),
                dropped_flits: port.ib.drops,
            });
        }
        let completed = self.msgs.iter().filter(|m| m.done.is_some()).count() as u64;
        Report {
            topology: self.topo_name.clone(),
            now_ps: now,
            stat_window_start_ps: start,
            events_processed: self.events,
            flits_generated: self.flits_generated,
            flits_consumed: self.flits_consumed,
            flits_in_flight: self.flits_generated - self.flits_consumed - self.flits_dropped,
            flits_dropped: self.flits_dropped,
            messages_injected: self.msgs.len() as u64,
            messages_completed: completed,
            messages_in_flight: self.in_flight as u64,
            sinks,
            generators,
            obufs,
            ibufs,
            messages: messages.then(|| {
                self.msgs
                    .iter()
                    .enumerate()
                    .map(|(i, m)| MsgReport {
                        id: i as u64,
                        src_lid: self.hcas[m.src as usize].lid,
                        dst_lid: m.dst_lid,
                        bytes: m.bytes,
                        injected_ps: m.injected,
                        first_flit_stamp_ps: m.first_stamp,
                        network_latency_ps: m.net_latency,
                        completed_ps: m.done,
                    })
                    .collect()
            }),
        }
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

    #[doc(hidden)]
    pub fn msg_dst_hca(&self, id: MsgId) -> usize {
        self.msgs[id as usize].dst_hca as usize
    }

    #[doc(hidden)]
    pub fn msg_src_hca(&self, id: MsgId) -> usize {
        self.msgs[id as usize].src as usize
    }
}

fn synced(ob: &Obuf, nvl: usize) -> bool {
    (0..nvl).all(|v| ob.fctbs[v] == ob.sent_fctbs[v] && ob.fccl[v] == ob.sent_fccl[v])
}

fn dummy_arb() -> Arb {
    Arb {
        inputs: 0,
        hoq: Vec::new(),
        hoq_first: Vec::new(),
        t_arr: Vec::new(),
        res: Vec::new(),
        fccl: [0; 8],
        fctbs: [0; 8],
        pop_pending: false,
        inside: false,
        last_vl: 0,
        last_port: [0; 8],
        last: 0,
        high: [ArbEntry::default(); 8],
        low: [ArbEntry::default(); 8],
        used_high: [0; 8],
        used_low: [0; 8],
        idx_high: 0,
        idx_low: 0,
        last_high: false,
        high_left: 0,
        mark_ctr: 0,
    }
}

/// Structural checks the engine relies on (the topology module validates
/// routes; these keep the engine from indexing out of bounds).
fn check_topology(t: &Topology) -> Result<(), ConfigError> {
    let err = |m: String| Err(ConfigError::Topology(m));
    if !t.nodes.iter().any(|n| n.is_hca()) {
        return err(format!("{}: no HCA", t.name));
    }
    let mut seen_lid = std::collections::HashSet::new();
    for n in &t.nodes {
        match &n.kind {
            NodeKind::Hca { lid } => {
                if *lid == 0 {
                    return err(format!("HCA {} has LID 0", n.name));
                }
                if !seen_lid.insert(*lid) {
                    return err(format!("LID {lid} is used twice (again by {})", n.name));
                }
            }
            NodeKind::Switch { ports, .. } => {
                if *ports == 0 {
                    return err(format!("switch {} has no ports", n.name));
                }
            }
        }
    }
    let mut used = std::collections::HashSet::new();
    for l in &t.links {
        for e in [l.a, l.b] {
            let Some(n) = t.nodes.get(e.node) else {
                return err(format!(
                    "link to node index {} which does not exist",
                    e.node
                ));
            };
            if e.port >= n.num_ports() {
                return err(format!(
                    "link to port {} of {} which has {} ports",
                    e.port,
                    n.name,
                    n.num_ports()
                ));
            }
            if !used.insert(e) {
                return err(format!("port {} of {} is cabled twice", e.port, n.name));
            }
        }
    }
    for n in t.nodes.iter().filter(|n| n.is_hca()) {
        let i = t.nodes.iter().position(|x| std::ptr::eq(x, n)).unwrap();
        if !used.contains(&crate::topology::PortRef { node: i, port: 0 }) {
            return err(format!("HCA {} is not connected", n.name));
        }
    }
    Ok(())
}
