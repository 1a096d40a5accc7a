//! Construction of the fabric from a topology and parameters: every
//! configuration check (a bad configuration fails here, never later) and
//! the initialisation events of sec. 1.4.

use super::app::App;
use super::cc::Cc;
use super::dispatch::Ev;
use super::fabric::{Fabric, Hca, Port, NONE, NS};
use super::gen::Gen;
use super::ibuf::Ibuf;
use super::obuf::Obuf;
use super::sink::SinkSt;
use super::vlarb::Arb;
use crate::params::{parse_arb_table, ConfigError, Params, Timing};
use crate::topology::{NodeKind, Topology};

/// Structural checks the engine relies on (the topology module validates
/// routes; these keep the engine from indexing out of bounds).
pub(super) fn check_topology(t: &Topology) -> Result<(), ConfigError> {
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

/// A topology with an SL per route (torus dateline, dragonfly) needs those
/// VLs configured and served: at most `max_vl`, each with a weight in a VL
/// arbitration table (a VL without one is never sent), and `msg_sq` left
/// at 0 (the route's SL replaces the send queue).
fn check_route_sls(
    t: &Topology,
    p: &Params,
    high: &[crate::params::ArbEntry; 8],
    low: &[crate::params::ArbEntry; 8],
) -> Result<(), ConfigError> {
    if t.sl.is_empty() {
        return Ok(());
    }
    let stride = t.max_lid() as usize + 1;
    if t.sl.len() != stride * stride {
        return Err(ConfigError::Topology(format!(
            "{}: the per-route SL table has {} entries, expected (max LID + 1)^2 = {}",
            t.name,
            t.sl.len(),
            stride * stride
        )));
    }
    let need = t.vls_needed();
    if need > p.max_vl as usize + 1 {
        return Err(ConfigError::Topology(format!(
            "{}: its routing needs {need} VLs for deadlock freedom (an SL per route), but the \
             preset has max_vl = {} ({} VL); give --set max_vl={} (and weights for those VLs \
             in low_vl_arb_entries), or a routing that needs fewer VLs",
            t.name,
            p.max_vl,
            p.max_vl as usize + 1,
            need - 1
        )));
    }
    for v in 0..need as u8 {
        let served = high
            .iter()
            .chain(low.iter())
            .any(|e| e.vl == v && e.weight > 0);
        if !served {
            return Err(ConfigError::Topology(format!(
                "{}: its routing sends on VL {v}, but no VL arbitration entry gives VL {v} a \
                 weight, so it would never be sent; add `{v}:W` to low_vl_arb_entries",
                t.name
            )));
        }
    }
    if p.msg_sq != 0 {
        return Err(ConfigError::Topology(format!(
            "{}: the topology assigns an SL per route (it needs {need} VLs); msg_sq must stay 0",
            t.name
        )));
    }
    Ok(())
}

impl Fabric {
    /// Build the fabric and schedule the initialisation events (sec. 1.4).
    /// Every configuration error is reported here.
    pub fn new(topo: &Topology, params: &Params) -> Result<Fabric, ConfigError> {
        Fabric::build(topo, params, None)
    }

    /// The fabric of process `k` of a parallel run with `owner`'s
    /// partition (`Fabric::shed_others`): the other processes' nodes get
    /// no input queues and HoQ slots from the start, so that a process's
    /// peak memory is its own part's (a network's input queues and HoQ
    /// slots are most of what it allocates before it runs).
    pub fn new_process(
        topo: &Topology,
        params: &Params,
        owner: &[u16],
        k: usize,
    ) -> Result<Fabric, ConfigError> {
        Fabric::build(topo, params, Some((owner, k)))
    }

    fn build(
        topo: &Topology,
        params: &Params,
        process: Option<(&[u16], usize)>,
    ) -> Result<Fabric, ConfigError> {
        // (a node of another process of a parallel run)
        let shed = |node: usize| {
            process.is_some_and(|(o, k)| o.get(node).is_some_and(|&x| x as usize != k))
        };
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

        let local_order = p.event_order == "local";
        if local_order && topo.nodes.len() >= super::order::MAX_NODES {
            return Err(ConfigError::Invalid(format!(
                "event_order = \"local\" holds networks of fewer than {} nodes",
                super::order::MAX_NODES
            )));
        }
        check_route_sls(topo, &p, &high, &low)?;
        let max_lid = topo.max_lid() as usize;
        let mut lid_to_hca = vec![NONE; max_lid + 1];
        let mut ports: Vec<Port> = Vec::new();
        let mut hcas: Vec<Hca> = Vec::new();
        let mut lfts: Vec<Vec<u16>> = Vec::new();
        let mut node_base = vec![0u32; topo.nodes.len()];
        let statics: Vec<i64> = (0..8)
            .map(|v| p.max_static.get(v).copied().unwrap_or(0) as i64 * p.width as i64 / 4)
            .collect();
        let high_left = p.vl_high_limit as i64 * 64;
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
                        gen: Gen::new(nvl),
                        sink: SinkSt::default(),
                        cc: Cc::new(),
                    });
                    ports.push(Port {
                        node: ni as u32,
                        local: 0,
                        hca: h,
                        sw: NONE,
                        base: ports.len() as u32,
                        nports: 1,
                        peer: NONE,
                        ob: Obuf::new(p.obuf_size_hca as usize, nvl),
                        ib: Ibuf::new(1, nvl, &statics),
                        arb: Arb::new(1, nvl, high, low, high_left),
                    });
                    if shed(ni) {
                        ports.last_mut().unwrap().shed();
                    }
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
                            ob: Obuf::new(p.obuf_size_switch as usize, nvl),
                            ib: Ibuf::new(*np as usize, nvl, &statics),
                            arb: Arb::new(*np, nvl, high, low, high_left),
                        });
                        if shed(ni) {
                            ports.last_mut().unwrap().shed();
                        }
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
        #[cfg(feature = "causal-check")]
        let nports_cred = (ports.len(), tm.cred);
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
            routes_ok: Vec::new(),
            lid_to_hca,
            route_sl: topo.sl.clone(),
            msgs: Vec::new(),
            completions: Vec::new(),
            in_flight: 0,
            heap: super::wheel::Wheel::new(),
            dbg_last_key: 0,
            pulse: None,
            next_pulse: super::run::PULSE_EVENTS,
            direct: true,
            direct_report: false,
            watch: false,
            direct_applied: 0,
            nowq: super::wheel::Fifo::with_capacity(256),
            counter: 0,
            cur_seq: 0,
            now: 0,
            started: false,
            events: 0,
            bg_pending: 0,
            last_fg: 0,
            deadlock_seen: false,
            sink_held: 0,
            lazy,
            local_order,
            local: super::order::LocalOrder::new(topo.nodes.len()),
            next_boundary: 0,
            bk_counter: 0,
            #[cfg(feature = "causal-check")]
            causal: super::causal::Causal::new(nports_cred.0, nports_cred.1),
            fatal: None,
            trace: None,
            flits_generated: 0,
            flits_consumed: 0,
            flits_dropped: 0,
            pending_done: 0,
            part: None,
            fg_elsewhere: 0,
            rdma: Default::default(),
            qp: None,
            loss: None,
        };
        #[cfg(feature = "causal-check")]
        {
            let ports = f.ports.iter().map(|p| p.node).collect();
            let hcas = f.hcas.iter().map(|h| h.node).collect();
            f.causal.set_nodes(ports, hcas);
        }
        f.qp = super::qp::QpState::new(&f.p, f.hcas.len());
        f.loss = super::loss::LossState::new(&f.p, f.hcas.len());
        if f.p.host_model {
            let htm = crate::hostparams::host_timing(&f.p)?;
            f.rdma.host = Some(Box::new(super::pcie::HostModel::new(htm, f.hcas.len())));
        }
        if f.local_order {
            f.heap.set_key_groups(f.local.key_group_shift());
        }
        f.init_events(topo);
        Ok(f)
    }

    /// Initialisation, depth-first in declaration order (sec. 1.4): HCA =
    /// app, gen, sink, obuf, ibuf, vlarb; switch = ports, each obuf, ibuf.
    pub(super) fn init_events(&mut self, topo: &Topology) {
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
                        let l = ib.vl[v].abr + ib.vl[v].free as u64;
                        self.queue_rx_cred(NS, pi, v as u8, l);
                    }
                }
                pi += 1;
            }
        }
    }
}
