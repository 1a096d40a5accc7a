//! `--network flow`: a flow-level network (SimGrid's CM02-style max-min
//! model, portals4-simgrid-bxi.txt) on the same topology, routing and rank
//! map as the flit-level fabric.
//!
//! Model. Every message is a flow along its route (ibnet's forwarding
//! tables; a self-send loops back at the first switch, as in the fabric).
//! Each direction of every full-duplex cable is a resource (the HCA's
//! cable is the host's injection and ejection link). A flow inserted at
//! `t` first waits its route latency, then joins the bandwidth sharing at
//! `t + latency` and completes when its bytes are served; the rates are
//! max-min fair over the resources of the flows in their bandwidth phase
//! (progressive filling). This is exactly SimGrid's CM02 behaviour with
//! latency and bandwidth factors 1, no TCP-window bound, no cross traffic
//! and equal shares (its fair-bottleneck solver; CM02's default solver
//! weights each share by 1 / route latency). `ibnet export --simgrid`
//! writes the same network as a SimGrid platform (docs/backends.md,
//! "SimGrid bridge"; tests/e2e/simgrid.rs).
//!
//! Numbers from the fabric preset (`--preset`, `--set`), derived by
//! [`ibnet::flowlevel::FlowLevel`] (shared with `ibnet export --simgrid`):
//! - link capacity C = `wire_rate_bps() / 8` bytes/s = link_width x
//!   link_speed x 0.8 (8b/10b) / 8, the same on every link direction
//!   (thesis-ddr: 4 x 5 Gb/s x 0.8 = 16 Gb/s = 2 GB/s = 500 ps per byte;
//!   qdr: 4 GB/s). Packet headers, credits and the sink's drain rate are
//!   not modelled (the bandwidth factor can absorb them);
//! - route latency = switches on the route x (ISW + VSW), each delay
//!   rounded to ps as the fabric does (`isw_delay_ns`, `vsw_delay_ns`;
//!   thesis-ddr: 100 ns per switch). As per-link latencies (the SimGrid
//!   export): a link direction leaving a switch has ISW + VSW, a link
//!   direction leaving an HCA has 0.
//! - correction factors (SimGrid's `network/latency-factor` and
//!   `network/bandwidth-factor`): each switch hop's latency x
//!   `latency_factor`, rounded to the nearest ps; every capacity x
//!   `bandwidth_factor`.
//!
//! Incremental solving: the rates change only when a flow enters the
//! bandwidth phase or completes. All such events of one instant are
//! applied together, then max-min is re-solved only on the connected
//! component (flows linked through shared resources) of the changed
//! flows; other flows keep their rates and their completion events. A
//! heap holds entry and completion times (completion events are
//! invalidated by a per-flow generation number).
//!
//! Rounding (determinism): rates are f64 bytes/ps and remaining bytes f64;
//! both are updated only at events, in a fixed order. A completion time is
//! `T + ceil(remaining / rate)` ps, except that a quotient within 1e-12
//! (relative; at least 1e-9 ps) of an integer is taken as that integer (so 65536 B at
//! 500 ps/B is exactly 32 768 000 ps, not one more). A flow whose rate is
//! unchanged (bit-identical) by a re-solve keeps its completion event, so
//! re-solving does not move it by re-rounding. Every message takes at
//! least 1 ps. Runs are bit-reproducible.
//!
//! Synchronisation with the scheduler: a flow inserted at `t` changes no
//! rate before `t + latency`, and a new flow can make others faster or
//! slower (max-min is not monotone), so an arrival is final only once no
//! later insert can reach it. Exact mode (`--protocol notify`, the
//! default): `wait_exact(now, horizon)` advances the model through the
//! instants up to `horizon`, stops at the first instant with completions
//! and reports them; the grant is the next event instant; the engine lowers
//! it to `t + min_latency()` after each insert. Poll mode
//! (`--protocol query`): `query` advances to `now` and answers the
//! arrival, or a lower bound `now + remaining / (fastest possible rate)`.
//! Both give the same results. Notify-v1 is refused (it inserts into the
//! model's past).
//!
//! [`penalty`](super::penalty) is a thin layer over this machinery: it sets
//! per-flow rate bounds from the Martinasso-Mehaut penalties.

use super::{Answer, Handle, NetError, Network, SyncMode};
use crate::hash::FastMap;
use crate::Time;
use ibnet::flowlevel::FlowLevel;
use ibnet::server::SetupArgs;
use ibnet::topology::{self, NodeKind, PortRef, Topology, NO_ROUTE};

/// Command-line options of the fast backends (flow, penalty, lop).
#[derive(clap::Args, Clone, Debug)]
pub struct FastArgs {
    /// flow, penalty: latency correction factor (SimGrid's
    /// network/latency-factor): every route latency is multiplied by it.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub latency_factor: f64,
    /// flow, penalty: bandwidth correction factor (SimGrid's
    /// network/bandwidth-factor): every link capacity is multiplied by it.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub bandwidth_factor: f64,
    /// lop: built-in parameter set of L(p) and o(p) (infinihost-send: the
    /// LoP paper's fitted Send/Receive functions for MTPB 23108 HCAs).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "infinihost-send",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_set: String,
    /// lop: L(p) = l1 + l2/(l3 + p) + l4 (1 - exp(l5 (p - l6))), six
    /// numbers in microseconds (comma-separated), replacing the set's.
    #[arg(
        long = "lop-L",
        value_name = "L1,..,L6",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_l: Option<String>,
    /// lop: o(p) = o1 + o2/(o3 + p), three numbers in microseconds,
    /// replacing the set's.
    #[arg(
        long = "lop-o",
        value_name = "O1,O2,O3",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_o: Option<String>,
    /// lop: time per byte added to large messages beyond the first byte
    /// (LoP models 1-byte messages; ps per byte or with a unit, e.g. 0.5ns).
    #[arg(
        long = "lop-G",
        value_name = "TIME",
        default_value = "0",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_g: String,
    /// penalty: reading of the paper's rule (b). table (default): rule (b)
    /// only when every competing sender is back-pressured by full-bandwidth
    /// senders alone, otherwise rule (c); reproduces every printed penalty
    /// of Fig. 2 and Fig. 3. printed: the rules as printed (Fig. 2 exact;
    /// Fig. 3's f gets 10/7 instead of the table's 1.5) (docs/backends.md).
    #[arg(
        long = "penalty-rule-b",
        value_name = "READING",
        value_enum,
        default_value_t = PenaltyRuleB::Table,
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub penalty_rule_b: PenaltyRuleB,
}

/// Reading of the Martinasso-Mehaut rule (b) (see [`super::penalty`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PenaltyRuleB {
    /// The rules as printed: (b) whenever outdeg(s) = 1.
    Printed,
    /// (b) only when every competing sender's destinations are contended
    /// by out-degree-1 senders alone ("pure back pressure"); else (c).
    /// The default: the one reading that gives every number the paper
    /// prints (Fig. 2 and all steps of Fig. 3).
    #[default]
    Table,
}

impl Default for FastArgs {
    fn default() -> Self {
        FastArgs {
            latency_factor: 1.0,
            bandwidth_factor: 1.0,
            lop_set: "infinihost-send".into(),
            lop_l: None,
            lop_o: None,
            lop_g: "0".into(),
            penalty_rule_b: PenaltyRuleB::Table,
        }
    }
}

/// The resources and routes of a topology for the flow models.
#[derive(Clone, Debug)]
pub struct FlowTopology {
    /// Capacity in bytes per ps of every resource (link direction).
    pub cap: Vec<f64>,
    /// Resource id of the output port (node, port): `out_id[node][port]`.
    out_id: Vec<Vec<u32>>,
    /// Peer of (node, port).
    peer: Vec<Vec<Option<PortRef>>>,
    /// rank -> HCA node index.
    pub rank_node: Vec<usize>,
    /// LID of each node (HCAs).
    lid: Vec<u16>,
    nodes: Vec<(bool, Vec<u16>, u16)>,
    names: Vec<String>,
    /// Per-switch latency in ps (ISW + VSW, times the latency factor, rounded).
    pub hop_latency: u64,
    /// Whether a route can avoid switches (an HCA cabled to an HCA).
    hca_to_hca: bool,
    /// Link capacity in bytes/s before the bandwidth factor.
    pub link_bytes_per_s: f64,
    /// ISW + VSW in ps before the latency factor.
    pub switch_latency_ps: u64,
    /// Link capacity in bytes per ps after the bandwidth factor.
    pub link_cap: f64,
}

/// A route: its resources (link directions in order) and latency.
#[derive(Clone, Debug)]
pub struct Route {
    pub links: Vec<u32>,
    pub latency: u64,
    /// Fastest rate the flow could ever get (min capacity on the route).
    pub max_rate: f64,
}

fn check_factor(name: &str, v: f64) -> Result<(), String> {
    if !(v.is_finite() && v > 0.0) {
        return Err(format!(
            "--{name} {v}: must be a finite number > 0 (1 = no correction)"
        ));
    }
    Ok(())
}

impl FlowTopology {
    /// Load the topology, preset, overrides and rank map exactly as the
    /// fabric backends do (`SetupArgs`), for a schedule of `num_ranks`.
    pub fn build(a: &SetupArgs, fast: &FastArgs, num_ranks: u32) -> Result<FlowTopology, String> {
        check_factor("latency-factor", fast.latency_factor)?;
        check_factor("bandwidth-factor", fast.bandwidth_factor)?;
        let topo =
            topology::open(&a.topology).map_err(|e| topology::open_error(&a.topology, &e))?;
        // link rate and per-switch latency: ibnet's derivation, shared
        // with `ibnet export --simgrid`
        let fl = FlowLevel::from_preset(&a.preset, &a.set)?;
        let rank_node: Vec<usize> = match &a.map {
            Some(path) => topology::load_rank_file(path, &topo).map_err(|e| e.to_string())?,
            None => (0..topo.num_ranks())
                .filter_map(|r| topo.hca_of_rank(r))
                .collect(),
        };
        if (num_ranks as usize) > rank_node.len() {
            return Err(format!(
                "the schedule has {num_ranks} ranks but the fabric ({}) maps only {} ranks to HCAs (use a larger topology or a --map file)",
                a.topology,
                rank_node.len()
            ));
        }
        Ok(Self::from_topology(
            &topo,
            rank_node,
            fl.link_bytes_per_s,
            fl.switch_latency_ps,
            fast,
        ))
    }

    /// From a loaded topology: `bytes_per_s` per link direction,
    /// `switch_latency_ps` per switch traversed.
    pub fn from_topology(
        topo: &Topology,
        rank_node: Vec<usize>,
        bytes_per_s: f64,
        switch_latency_ps: u64,
        fast: &FastArgs,
    ) -> FlowTopology {
        let mut out_id: Vec<Vec<u32>> = topo
            .nodes
            .iter()
            .map(|n| vec![u32::MAX; n.num_ports() as usize])
            .collect();
        let mut peer: Vec<Vec<Option<PortRef>>> = topo
            .nodes
            .iter()
            .map(|n| vec![None; n.num_ports() as usize])
            .collect();
        let mut cap = Vec::new();
        let c = bytes_per_s * fast.bandwidth_factor / 1e12;
        let mut hca_to_hca = false;
        for l in &topo.links {
            for (x, y) in [(l.a, l.b), (l.b, l.a)] {
                out_id[x.node][x.port as usize] = cap.len() as u32;
                peer[x.node][x.port as usize] = Some(y);
                cap.push(c);
            }
            if topo.nodes[l.a.node].is_hca() && topo.nodes[l.b.node].is_hca() {
                hca_to_hca = true;
            }
        }
        let nodes = topo
            .nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::Hca { lid } => (true, Vec::new(), *lid),
                NodeKind::Switch { ports, fdb } => (false, fdb.clone(), *ports),
            })
            .collect();
        let lid = topo.nodes.iter().map(|n| n.lid().unwrap_or(0)).collect();
        FlowTopology {
            cap,
            out_id,
            peer,
            rank_node,
            lid,
            nodes,
            names: topo.nodes.iter().map(|n| n.name.clone()).collect(),
            hop_latency: (switch_latency_ps as f64 * fast.latency_factor).round() as u64,
            hca_to_hca,
            link_bytes_per_s: bytes_per_s,
            switch_latency_ps,
            link_cap: c,
        }
    }

    /// The lower bound of every route latency (>= 1 ps).
    pub fn min_latency(&self) -> u64 {
        if self.hca_to_hca {
            1
        } else {
            self.hop_latency.max(1)
        }
    }

    /// Route from rank `src` to rank `dst` by the forwarding tables.
    pub fn route(&self, src: u32, dst: u32) -> Result<Route, String> {
        let (Some(&s), Some(&d)) = (
            self.rank_node.get(src as usize),
            self.rank_node.get(dst as usize),
        ) else {
            return Err(format!("rank {src} or {dst} is not mapped to an HCA"));
        };
        let lid = self.lid[d];
        let mut cur = PortRef { node: s, port: 0 };
        let mut links = vec![self.out_id[s][0]];
        let mut switches = 0u64;
        let limit = self.nodes.len() + 1;
        loop {
            let Some(next) = self.peer[cur.node][cur.port as usize] else {
                return Err(format!(
                    "no route from {} to {}: port {} of {} is not connected",
                    self.names[s], self.names[d], cur.port, self.names[cur.node]
                ));
            };
            if next.node == d {
                break;
            }
            let (is_hca, fdb, ports) = &self.nodes[next.node];
            if *is_hca || links.len() > limit {
                return Err(format!(
                    "no route from {} to {} (the route ends at {} or loops)",
                    self.names[s], self.names[d], self.names[next.node]
                ));
            }
            let port = fdb.get(lid as usize).copied().unwrap_or(NO_ROUTE);
            if port >= *ports {
                return Err(format!(
                    "no route from {} to {}: switch {} has no entry for LID {lid}",
                    self.names[s], self.names[d], self.names[next.node]
                ));
            }
            switches += 1;
            cur = PortRef {
                node: next.node,
                port,
            };
            links.push(self.out_id[cur.node][port as usize]);
        }
        let max_rate = links
            .iter()
            .map(|&l| self.cap[l as usize])
            .fold(f64::INFINITY, f64::min);
        Ok(Route {
            links,
            latency: (switches * self.hop_latency).max(1),
            max_rate,
        })
    }
}

/// Completion after `x` ps (see the module docs: ceil, snapping quotients
/// within 1e-12 relative of an integer).
pub fn ceil_ps(x: f64) -> u64 {
    if x <= 0.0 {
        return 0;
    }
    let r = x.round();
    if (x - r).abs() <= 1e-12 * x.max(1e3) {
        r as u64
    } else {
        x.ceil() as u64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// In its latency phase (not sharing bandwidth yet).
    Latency,
    Active,
    Done,
}

#[derive(Clone, Debug)]
struct Flow {
    route: u32,
    src: u32,
    dst: u32,
    remaining: f64,
    rate: f64,
    /// Time `remaining` refers to.
    last: u64,
    gen: u32,
    st: St,
    entry: u64,
    arrival: u64,
}

/// Per-flow rate bounds from the active flows (the penalty layer).
pub trait Bounds {
    /// Recompute `bound` for the flows of `comp` (indices into `flows`);
    /// the engine calls it before each max-min solve of a component.
    fn bounds(&mut self, view: &FlowView<'_>, comp: &[u32], out: &mut Vec<f64>);
    /// Whether host links take part in max-min (the penalty model
    /// replaces them by its NIC model).
    fn host_links_shared(&self) -> bool {
        true
    }
    fn name(&self) -> &str;
}

/// What a [`Bounds`] layer sees: the active flows by source and
/// destination host.
pub struct FlowView<'a> {
    pub src: &'a dyn Fn(u32) -> u32,
    pub dst: &'a dyn Fn(u32) -> u32,
    /// Active flows from host h.
    pub out: &'a dyn Fn(u32) -> &'a [u32],
    /// Active flows into host h.
    pub inn: &'a dyn Fn(u32) -> &'a [u32],
    /// Capacity of a host link in bytes per ps.
    pub host_cap: f64,
}

/// The flow backend (and, with a [`Bounds`] layer, the penalty backend).
pub struct FlowNet {
    topo: FlowTopology,
    name: String,
    mode: SyncMode,
    routes: Vec<Route>,
    route_of: FastMap<(u32, u32), u32>,
    flows: Vec<Flow>,
    /// Active flows per resource; resources >= topo.cap.len() are the
    /// per-host pseudo resources of the penalty layer (out then in).
    res_flows: Vec<Vec<u32>>,
    /// Parallel to `res_flows`: which of the flow's resources (its index
    /// in `flow_res`) the entry is, to fix `fpos` after a swap_remove.
    res_k: Vec<Vec<u8>>,
    /// Per flow, from `foff[f]`: its position in each of its resources' lists.
    fpos: Vec<u32>,
    foff: Vec<u32>,
    /// Per flow, from `foff[f]`, `flen[f]` entries: its resources
    /// (`flow_res`, recorded when it enters the bandwidth phase).
    fres: Vec<u32>,
    flen: Vec<u8>,
    /// Events: (time, kind 0 = entry / 1 = completion, flow, gen).
    /// One pending event per flow: its entry (latency phase) or its
    /// completion (active), ordered by (time, flow).
    heap: IdxHeap,
    now: u64,
    layer: Option<Box<dyn Bounds>>,
    nres: usize,
    nhosts: u32,
    // counters
    solves: u64,
    fill_rounds: u64,
    solved_flows: u64,
    max_active: u64,
    active: u64,
    // scratch
    mark_res: Vec<u32>,
    mark_flow: Vec<u32>,
    epoch: u32,
    flow_pos: Vec<u32>,
    res_rem: Vec<f64>,
    res_cnt: Vec<u32>,
}

impl FlowNet {
    /// A flow backend on `topo`; `exact` selects the Exact sync mode
    /// (else Poll).
    pub fn new(topo: FlowTopology, exact: bool, layer: Option<Box<dyn Bounds>>) -> FlowNet {
        let nres = topo.cap.len();
        let nhosts = topo.rank_node.len() as u32;
        let extra = if layer.is_some() {
            2 * nhosts as usize
        } else {
            0
        };
        let name = match &layer {
            Some(l) => l.name().to_string(),
            None => "flow (max-min)".to_string(),
        };
        FlowNet {
            topo,
            name,
            mode: if exact {
                SyncMode::Exact
            } else {
                SyncMode::Poll
            },
            routes: Vec::new(),
            route_of: FastMap::default(),
            flows: Vec::new(),
            res_flows: vec![Vec::new(); nres + extra],
            res_k: vec![Vec::new(); nres + extra],
            fpos: Vec::new(),
            foff: Vec::new(),
            fres: Vec::new(),
            flen: Vec::new(),
            heap: IdxHeap::default(),
            now: 0,
            layer,
            nres,
            nhosts,
            solves: 0,
            fill_rounds: 0,
            solved_flows: 0,
            max_active: 0,
            active: 0,
            mark_res: vec![0; nres + extra],
            mark_flow: Vec::new(),
            epoch: 0,
            flow_pos: Vec::new(),
            res_rem: Vec::new(),
            res_cnt: Vec::new(),
        }
    }

    pub fn topology(&self) -> &FlowTopology {
        &self.topo
    }

    fn route_id(&mut self, src: u32, dst: u32) -> Result<u32, NetError> {
        if let Some(&r) = self.route_of.get(&(src, dst)) {
            return Ok(r);
        }
        let r = self.topo.route(src, dst).map_err(NetError::Protocol)?;
        self.routes.push(r);
        let id = self.routes.len() as u32 - 1;
        self.route_of.insert((src, dst), id);
        Ok(id)
    }

    /// The resources a flow occupies in the bandwidth phase.
    fn flow_res(&self, f: u32, out: &mut Vec<u32>) {
        out.clear();
        let fl = &self.flows[f as usize];
        let links = &self.routes[fl.route as usize].links;
        if self.layer.as_ref().is_some_and(|l| !l.host_links_shared()) {
            // penalty: the NICs are modelled by the penalties; only the
            // switch-to-switch links are shared max-min
            if links.len() > 2 {
                out.extend_from_slice(&links[1..links.len() - 1]);
            }
        } else {
            out.extend_from_slice(links);
        }
        if self.layer.is_some() {
            out.push(self.nres as u32 + fl.src);
            out.push(self.nres as u32 + self.nhosts + fl.dst);
        }
    }

    fn cap_of(&self, r: u32) -> f64 {
        self.topo
            .cap
            .get(r as usize)
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// Apply every event at the earliest instant `<= limit`; returns the
    /// instant and the completions (flow ids) or None.
    fn step_instant(&mut self, limit: u64) -> Option<(u64, Vec<u32>)> {
        let (t, _) = self.heap.peek()?;
        if t > limit {
            return None;
        }
        let mut changed: Vec<u32> = Vec::new();
        let mut done: Vec<u32> = Vec::new();
        let mut res = Vec::new();
        while let Some((t2, f)) = self.heap.peek() {
            if t2 != t {
                break;
            }
            self.heap.pop();
            if self.flows[f as usize].st == St::Active {
                // completes: leaves its resources
                self.flow_res(f, &mut res);
                let off = self.foff[f as usize] as usize;
                for (k, &r) in res.iter().enumerate() {
                    let p = self.fpos[off + k] as usize;
                    let v = &mut self.res_flows[r as usize];
                    let vk = &mut self.res_k[r as usize];
                    debug_assert_eq!(v[p], f);
                    v.swap_remove(p);
                    vk.swap_remove(p);
                    if p < v.len() {
                        let (g, kg) = (v[p], vk[p]);
                        self.fpos[self.foff[g as usize] as usize + kg as usize] = p as u32;
                    }
                }
                let fl = &mut self.flows[f as usize];
                fl.st = St::Done;
                fl.arrival = t;
                fl.remaining = 0.0;
                self.active -= 1;
                done.push(f);
                changed.push(f);
            } else {
                // enters the bandwidth phase
                self.flow_res(f, &mut res);
                let off = self.fpos.len() as u32;
                self.foff[f as usize] = off;
                self.flen[f as usize] = res.len() as u8;
                self.fres.extend_from_slice(&res);
                for (k, &r) in res.iter().enumerate() {
                    let v = &mut self.res_flows[r as usize];
                    self.fpos.push(v.len() as u32);
                    v.push(f);
                    self.res_k[r as usize].push(k as u8);
                }
                let fl = &mut self.flows[f as usize];
                fl.st = St::Active;
                fl.last = t;
                self.active += 1;
                self.max_active = self.max_active.max(self.active);
                changed.push(f);
            }
        }
        self.now = t;
        self.resolve(t, &changed);
        done.sort_unstable();
        Some((t, done))
    }

    /// Re-solve max-min on the component of the changed flows at time `t`.
    fn resolve(&mut self, t: u64, changed: &[u32]) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark_res.iter_mut().for_each(|m| *m = 0);
            self.mark_flow.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let ep = self.epoch;
        if self.mark_flow.len() < self.flows.len() {
            self.mark_flow.resize(self.flows.len(), 0);
        }
        // BFS over resources from the changed flows' resources
        let mut res_stack: Vec<u32> = Vec::new();
        let mut comp_res: Vec<u32> = Vec::new();
        let mut comp: Vec<u32> = Vec::new();
        let mut tmp = Vec::new();
        for &f in changed {
            self.flow_res(f, &mut tmp);
            for &r in &tmp {
                if self.mark_res[r as usize] != ep {
                    self.mark_res[r as usize] = ep;
                    res_stack.push(r);
                }
            }
            if self.flows[f as usize].st == St::Active && self.mark_flow[f as usize] != ep {
                self.mark_flow[f as usize] = ep;
                comp.push(f);
            }
        }
        while let Some(r) = res_stack.pop() {
            comp_res.push(r);
            for i in 0..self.res_flows[r as usize].len() {
                let f = self.res_flows[r as usize][i];
                if self.mark_flow[f as usize] == ep {
                    continue;
                }
                self.mark_flow[f as usize] = ep;
                comp.push(f);
                let off = self.foff[f as usize] as usize;
                for &r2 in &self.fres[off..off + self.flen[f as usize] as usize] {
                    if self.mark_res[r2 as usize] != ep {
                        self.mark_res[r2 as usize] = ep;
                        res_stack.push(r2);
                    }
                }
            }
        }
        if comp.is_empty() {
            return;
        }
        // (the BFS order is deterministic: no sort needed)
        self.solves += 1;
        self.solved_flows += comp.len() as u64;
        // bring remaining bytes to t
        for &f in &comp {
            let fl = &mut self.flows[f as usize];
            if fl.last < t {
                fl.remaining -= fl.rate * (t - fl.last) as f64;
                if fl.remaining < 0.0 {
                    fl.remaining = 0.0;
                }
                fl.last = t;
            }
        }
        // bounds from the layer
        let mut bounds = Vec::new();
        if let Some(mut layer) = self.layer.take() {
            {
                let flows = &self.flows;
                let rf = &self.res_flows;
                let nres = self.nres;
                let nh = self.nhosts as usize;
                let src = |f: u32| flows[f as usize].src;
                let dst = |f: u32| flows[f as usize].dst;
                let out = |h: u32| rf[nres + h as usize].as_slice();
                let inn = |h: u32| rf[nres + nh + h as usize].as_slice();
                let view = FlowView {
                    src: &src,
                    dst: &dst,
                    out: &out,
                    inn: &inn,
                    host_cap: self.topo.link_cap,
                };
                layer.bounds(&view, &comp, &mut bounds);
            }
            self.layer = Some(layer);
        }
        // progressive filling: per resource its remaining capacity and
        // unfrozen flows (scratch arrays indexed by resource); each round
        // freezes the flows of the tightest resource (lowest id on ties)
        // or the flows whose bound is lower, scanning the component's
        // resources (few distinct levels in practice; no heap churn)
        let n = comp.len();
        let mut rate = vec![0.0f64; n];
        let mut frozen = vec![false; n];
        if self.flow_pos.len() < self.flows.len() {
            self.flow_pos.resize(self.flows.len(), 0);
        }
        for (i, &f) in comp.iter().enumerate() {
            self.flow_pos[f as usize] = i as u32;
        }
        let nr = self.res_flows.len();
        if self.res_rem.len() < nr {
            self.res_rem.resize(nr, 0.0);
            self.res_cnt.resize(nr, 0);
        }
        let mut live: Vec<u32> = Vec::with_capacity(comp_res.len());
        for &r in &comp_res {
            let cnt = self.res_flows[r as usize].len() as u32;
            let c = self.cap_of(r);
            self.res_rem[r as usize] = c;
            self.res_cnt[r as usize] = cnt;
            if cnt > 0 && c.is_finite() {
                live.push(r);
            }
        }
        let mut by_bound: Vec<usize> = (0..n)
            .filter(|&i| bounds.get(i).is_some_and(|b| b.is_finite()))
            .collect();
        by_bound.sort_by(|&a, &b| bounds[a].total_cmp(&bounds[b]).then(a.cmp(&b)));
        let mut bi = 0;
        let mut left = n;
        let mut to_freeze: Vec<usize> = Vec::new();
        let mut tight: Vec<u32> = Vec::new();
        while left > 0 {
            self.fill_rounds += 1;
            // tightest live resource
            // (all resources at the minimal share saturate together: one
            // round freezes the flows of every one of them)
            let mut share = f64::INFINITY;
            let mut link = None;
            tight.clear();
            live.retain(|&r| self.res_cnt[r as usize] > 0);
            for &r in &live {
                let s = self.res_rem[r as usize] / self.res_cnt[r as usize] as f64;
                if s < share {
                    share = s;
                    link = Some(r);
                    tight.clear();
                    tight.push(r);
                } else if s == share {
                    tight.push(r);
                }
            }
            while bi < by_bound.len() && frozen[by_bound[bi]] {
                bi += 1;
            }
            to_freeze.clear();
            if bi < by_bound.len() && bounds[by_bound[bi]] <= share {
                let b = bounds[by_bound[bi]];
                while bi < by_bound.len() && (frozen[by_bound[bi]] || bounds[by_bound[bi]] == b) {
                    if !frozen[by_bound[bi]] {
                        to_freeze.push(by_bound[bi]);
                    }
                    bi += 1;
                }
                for &i in &to_freeze {
                    rate[i] = b;
                }
            } else if link.is_some() {
                for &r in &tight {
                    for &f in &self.res_flows[r as usize] {
                        let i = self.flow_pos[f as usize] as usize;
                        if !frozen[i] {
                            frozen[i] = true;
                            to_freeze.push(i);
                            rate[i] = share;
                        }
                    }
                }
                for &i in &to_freeze {
                    frozen[i] = false;
                }
            } else {
                // unconstrained (only infinite resources and no bound):
                // cannot happen with real links; give the link rate
                for i in 0..n {
                    if !frozen[i] {
                        to_freeze.push(i);
                        rate[i] = self.topo.link_cap;
                    }
                }
            }
            for &i in &to_freeze {
                frozen[i] = true;
                left -= 1;
                let f = comp[i] as usize;
                let off = self.foff[f] as usize;
                for &r in &self.fres[off..off + self.flen[f] as usize] {
                    let r = r as usize;
                    self.res_rem[r] = (self.res_rem[r] - rate[i]).max(0.0);
                    self.res_cnt[r] -= 1;
                }
            }
        }
        // new completion events
        for (i, &f) in comp.iter().enumerate() {
            let fl = &mut self.flows[f as usize];
            if fl.rate == rate[i] && fl.gen > 0 && fl.remaining > 0.0 {
                continue; // unchanged: keep its completion event
            }
            fl.rate = rate[i];
            fl.gen = fl.gen.wrapping_add(1).max(1);
            let dt = if fl.remaining <= 0.0 {
                0
            } else {
                ceil_ps(fl.remaining / fl.rate)
            };
            self.heap.set(f, t.saturating_add(dt));
        }
    }

    /// Process instants `<= limit` until one has completions.
    fn advance_to_completion(&mut self, limit: u64) -> Option<(u64, Vec<u32>)> {
        loop {
            let (t, done) = self.step_instant(limit)?;
            if !done.is_empty() {
                return Some((t, done));
            }
        }
    }

    fn next_event(&mut self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |(t, _)| t)
    }

    /// Arrival time of a finished flow (for tests and tools).
    pub fn arrival(&self, h: Handle) -> Option<Time> {
        self.flows
            .get(h as usize)
            .filter(|f| f.st == St::Done)
            .map(|f| Time(f.arrival))
    }

    /// Run the model to the end with no further inserts; returns every
    /// flow's arrival time by handle (for tests and the backend study).
    pub fn drain(&mut self) -> Vec<Time> {
        while self.advance_to_completion(u64::MAX).is_some() {}
        self.flows.iter().map(|f| Time(f.arrival)).collect()
    }

    /// The current rate of flow `h` in bytes per ps (0 when not active).
    pub fn rate(&self, h: Handle) -> f64 {
        self.flows
            .get(h as usize)
            .filter(|f| f.st == St::Active)
            .map_or(0.0, |f| f.rate)
    }
}

impl Network for FlowNet {
    fn name(&self) -> &str {
        &self.name
    }
    fn mode(&self) -> SyncMode {
        self.mode
    }
    fn insert(
        &mut self,
        now: Time,
        src: u32,
        dst: u32,
        size: u64,
        _tag: u32,
    ) -> Result<Handle, NetError> {
        if now.0 < self.now {
            return Err(NetError::Protocol(format!(
                "insert at {} ps is in the flow model's past ({} ps)",
                now.0, self.now
            )));
        }
        let route = self.route_id(src, dst)?;
        let lat = self.routes[route as usize].latency;
        let entry = now.0.checked_add(lat).ok_or_else(|| {
            NetError::Protocol(format!("time overflow: {} ps + latency {lat} ps", now.0))
        })?;
        let f = self.flows.len() as u32;
        self.flows.push(Flow {
            route,
            src,
            dst,
            remaining: size as f64,
            rate: 0.0,
            last: entry,
            gen: 0,
            st: St::Latency,
            entry,
            arrival: 0,
        });
        self.foff.push(0);
        self.flen.push(0);
        self.heap.set(f, entry);
        Ok(f as Handle)
    }

    fn query(
        &mut self,
        _start: Time,
        now: Time,
        _src: u32,
        _dst: u32,
        _size: u64,
        handle: Handle,
    ) -> Result<Time, NetError> {
        // no later insert changes anything at or before `now`
        while self.step_instant(now.0).is_some() {}
        let fl = self
            .flows
            .get(handle as usize)
            .ok_or_else(|| NetError::Protocol(format!("query of unknown handle {handle}")))?;
        let max_rate = self.routes[fl.route as usize].max_rate;
        Ok(match fl.st {
            St::Done => Time(fl.arrival),
            St::Latency => Time(
                fl.entry
                    .saturating_add(ceil_ps(fl.remaining / max_rate))
                    .max(now.0 + 1),
            ),
            St::Active => {
                let left = fl.remaining - fl.rate * (now.0 - fl.last) as f64;
                let lb = if left > 0.0 {
                    ceil_ps(left / max_rate)
                } else {
                    1
                };
                Time(now.0 + lb.max(1))
            }
        })
    }

    fn wait_exact(&mut self, now: Time, horizon: Time) -> Result<Answer, NetError> {
        let _ = now;
        match self.advance_to_completion(horizon.0) {
            Some((t, done)) => {
                let arrivals = done.into_iter().map(|f| (f as Handle, Time(t))).collect();
                Ok(Answer {
                    arrivals,
                    grant: Time(self.next_event()),
                    fired: Vec::new(),
                })
            }
            None => {
                let g = self.next_event();
                // nothing up to the horizon: the next event is beyond it
                Ok(Answer {
                    arrivals: Vec::new(),
                    grant: Time(g),
                    fired: Vec::new(),
                })
            }
        }
    }

    fn min_latency(&self) -> Time {
        Time(self.topo.min_latency())
    }

    fn stats(&self) -> Vec<(String, u64)> {
        vec![
            ("messages".into(), self.flows.len() as u64),
            ("solves".into(), self.solves),
            ("fill_rounds".into(), self.fill_rounds),
            ("solved_flows".into(), self.solved_flows),
            ("max_active_flows".into(), self.max_active),
        ]
    }
}

/// Build `--network flow` for `num_ranks` ranks: Exact mode when `exact`.
pub fn build(
    fabric: &SetupArgs,
    fast: &FastArgs,
    exact: bool,
    num_ranks: u32,
) -> Result<FlowNet, String> {
    let topo = FlowTopology::build(fabric, fast, num_ranks)?;
    Ok(FlowNet::new(topo, exact, None))
}

/// A binary min-heap of flows keyed by (time, flow id), with one entry per
/// flow that can be moved in place (no stale entries).
#[derive(Clone, Debug, Default)]
struct IdxHeap {
    heap: Vec<u32>,
    /// Position of each flow in `heap` (u32::MAX: absent).
    pos: Vec<u32>,
    key: Vec<u64>,
}

impl IdxHeap {
    #[inline]
    fn k(&self, f: u32) -> (u64, u32) {
        (self.key[f as usize], f)
    }
    fn peek(&self) -> Option<(u64, u32)> {
        self.heap.first().map(|&f| self.k(f))
    }
    fn set(&mut self, f: u32, t: u64) {
        let i = f as usize;
        if self.pos.len() <= i {
            self.pos.resize(i + 1, u32::MAX);
            self.key.resize(i + 1, 0);
        }
        self.key[i] = t;
        if self.pos[i] == u32::MAX {
            self.heap.push(f);
            self.pos[i] = self.heap.len() as u32 - 1;
        }
        let p = self.pos[i] as usize;
        self.up(p);
        let p = self.pos[i] as usize;
        self.down(p);
    }
    fn pop(&mut self) -> Option<u32> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        self.pos[top as usize] = u32::MAX;
        if last != top {
            self.heap[0] = last;
            self.pos[last as usize] = 0;
            self.down(0);
        }
        Some(top)
    }
    fn up(&mut self, mut p: usize) {
        while p > 0 {
            let q = (p - 1) / 2;
            if self.k(self.heap[p]) < self.k(self.heap[q]) {
                self.swap(p, q);
                p = q;
            } else {
                break;
            }
        }
    }
    fn down(&mut self, mut p: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * p + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.k(self.heap[r]) < self.k(self.heap[l]) {
                r
            } else {
                l
            };
            if self.k(self.heap[c]) < self.k(self.heap[p]) {
                self.swap(p, c);
                p = c;
            } else {
                break;
            }
        }
    }
    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a] as usize] = a as u32;
        self.pos[self.heap[b] as usize] = b as u32;
    }
}
