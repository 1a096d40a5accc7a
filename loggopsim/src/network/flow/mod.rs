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
//!   thesis-ddr: 100 ns per switch), plus every link's propagation delay
//!   (`link_delay_ns`, 0 in the reference model). As per-link latencies
//!   (the SimGrid export): a link direction leaving a switch has ISW +
//!   VSW, a link direction leaving an HCA has 0, each plus the delay.
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
//!
//! Modules: `args.rs` (the options), `routes.rs` (resources and routes),
//! `instants.rs` (advancing by instants), `resolve.rs` (re-solving a
//! component), `maxmin.rs` (progressive filling), `rounding.rs`
//! (completion times), `heap.rs` (the event queue), `bounds.rs` (the
//! interface of the penalty layer), `backend.rs` (the
//! [`Network`](super::Network) side).

mod args;
mod backend;
mod bounds;
mod heap;
mod instants;
mod maxmin;
mod resolve;
mod rounding;
mod routes;

pub use args::{FastArgs, PenaltyRuleB};
pub use bounds::{Bounds, FlowView};
pub use rounding::ceil_ps;
pub use routes::{FlowTopology, Route};

use super::{Handle, NetError, SyncMode};
use crate::hash::FastMap;
use crate::Time;
use heap::IdxHeap;
use ibnet::server::SetupArgs;
use maxmin::MaxMin;

/// The phase of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// In its latency phase (not sharing bandwidth yet).
    Latency,
    Active,
    Done,
}

/// A message in the model (its handle is its index in `FlowNet::flows`).
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
    /// the max-min solver's scratch space
    maxmin: MaxMin,
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
            maxmin: MaxMin::default(),
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

/// The network of the flow modules' unit tests: H8_S1 at 1e9 B/s (1e-3
/// B/ps) with no switch latency (routes take 1 ps).
#[cfg(test)]
fn test_net(exact: bool) -> FlowNet {
    let t = ibnet::topology::builtin("H8_S1").unwrap();
    let ranks = (0..8).map(|r| t.hca_of_rank(r).unwrap()).collect();
    FlowNet::new(
        FlowTopology::from_topology(&t, ranks, 1e9, 0, &FastArgs::default()),
        exact,
        None,
    )
}

/// The test network (exact mode) with `flows` (source, destination,
/// bytes) inserted at time 0: the network and the flows' handles.
#[cfg(test)]
fn test_net_with<const K: usize>(flows: [(u32, u32, u64); K]) -> (FlowNet, [u32; K]) {
    use super::{Envelope, Network};
    let mut n = test_net(true);
    let handles = flows.map(|(src, dst, size)| {
        n.insert(Time(0), Envelope::new(src, dst, size, 0)).unwrap() as u32
    });
    (n, handles)
}
