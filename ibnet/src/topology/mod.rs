//! Network topologies: the data model shared by the fabric engine and the
//! topology loaders, generators and routing.
//!
//! CONTRACT between the engine (`crate::engine`) and this module. The engine
//! only reads a finished, validated [`Topology`]; everything that builds one
//! (TOML files, IBDM .topo/.fdbs import, generators, routing) lives here.
//!
//! - `nodes` are in declaration order. Order matters: the engine initialises
//!   modules depth-first in this order (docs/model/fabric.md 1.4), so it fixes
//!   same-instant FIFO order.
//! - HCAs have exactly one port, numbered 0. Switch ports are 0-based
//!   (IBDM's `P<n>` is port n-1).
//! - Every LID in use is in 1..=max_lid and belongs to exactly one HCA.
//! - `fdb` of a switch is indexed by destination LID; the value is the
//!   0-based output port; `NO_ROUTE` (255) means no route. Element 0 is
//!   `NO_ROUTE` by convention.
//! - `ranks` maps MPI rank r to the node index of an HCA.
//!   Default (empty): rank r is the r-th HCA in node order.

/// Forwarding-table value meaning "no route".
pub const NO_ROUTE: u16 = 255;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Host channel adapter: one port (0), one LID.
    Hca { lid: u16 },
    /// Switch with `ports` fully meshed ports and its linear forwarding table.
    Switch { ports: u16, fdb: Vec<u16> },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
}

/// One end of a link: node index and 0-based port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRef {
    pub node: usize,
    pub port: u16,
}

/// A full-duplex cable between two ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub a: PortRef,
    pub b: PortRef,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub name: String,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// rank -> node index of an HCA. Empty means the default mapping
    /// (rank r is the r-th HCA in node order).
    pub ranks: Vec<usize>,
    /// Service level (= VL: the engine does not remap VLs) of every route,
    /// indexed `src_lid * (max_lid + 1) + dst_lid`. Empty (the default):
    /// no per-route SL, a message travels on its sender's send queue.
    /// Generators that need virtual lanes for deadlock freedom (torus
    /// dateline, dragonfly) fill it, as a subnet manager hands out an SL per
    /// path record; the engine then sends every message on its route's SL.
    pub sl: Vec<u8>,
}

mod builtin;
mod cables;
mod dstseq;
mod error;
mod fields;
pub mod gen;
mod ibdm;
mod ibnetdiscover;
mod layers;
mod ned;
mod ranks;
mod routing;
mod siblings;
pub mod summary;
mod toml_format;
mod validate;
pub mod vecfile;

pub use builtin::builtin;
pub use dstseq::{load_dst_seq, DstSeqs};
pub use error::{Loc, TopoError};
pub use gen::explain;
pub use ibdm::{chassis_of, load_ibdm, ChassisDef, IbdmFiles};
pub use ibnetdiscover::{load_ibnetdiscover, looks_like_ibnetdiscover};
pub use ned::{load_ned, NedFiles};
pub use ranks::{load_rank_file, parse_rank_file};
pub use routing::{route, Routing};
pub use toml_format::{load, load_toml_str, open, open_error, open_with, to_toml, to_toml_routed};
pub use validate::ValidateOptions;

impl Node {
    pub fn is_hca(&self) -> bool {
        matches!(self.kind, NodeKind::Hca { .. })
    }
    pub fn is_switch(&self) -> bool {
        matches!(self.kind, NodeKind::Switch { .. })
    }
    /// Number of ports: 1 for an HCA.
    pub fn num_ports(&self) -> u16 {
        match &self.kind {
            NodeKind::Hca { .. } => 1,
            NodeKind::Switch { ports, .. } => *ports,
        }
    }
    pub fn lid(&self) -> Option<u16> {
        match self.kind {
            NodeKind::Hca { lid } => Some(lid),
            NodeKind::Switch { .. } => None,
        }
    }
    pub fn fdb(&self) -> Option<&[u16]> {
        match &self.kind {
            NodeKind::Hca { .. } => None,
            NodeKind::Switch { fdb, .. } => Some(fdb),
        }
    }
}

/// A network file's name without directory and extension (the name of the
/// network it describes).
pub(crate) fn file_stem_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The last step of every network-file import (IBDM `.topo`, NED,
/// ibnetdiscover): refuse a switch without cables (at `lines[node]`, the
/// line of `path` that declares it), route the network `name` (by its own
/// tables when it has them, else min-hop, unless `routing` says otherwise;
/// `no_tables` explains what a tables routing lacks) and validate it,
/// errors naming `path`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish_import(
    name: String,
    path: &std::path::Path,
    nodes: Vec<Node>,
    lines: &[usize],
    links: Vec<Link>,
    have_tables: bool,
    routing: Option<Routing>,
    no_tables: &str,
    opts: &ValidateOptions,
) -> Result<Topology, TopoError> {
    validate::check_cabled(&nodes, &links, |i| {
        Loc::line(path, lines.get(i).copied().unwrap_or(0))
    })?;
    let mut t = Topology::new(name, nodes, links);
    let routing = Routing::chosen(routing, have_tables);
    if routing == Routing::Tables && !have_tables {
        return Err(TopoError::Invalid(format!(
            "{}: {no_tables}",
            path.display()
        )));
    }
    route(&mut t, routing).map_err(|e| e.in_file(path))?;
    t.validate_with(opts).map_err(|e| e.in_file(path))?;
    Ok(t)
}

impl Topology {
    /// A topology of `nodes` and `links`, without a rank map or per-route
    /// SLs (both the defaults); its tables are what `nodes` holds.
    pub fn new(name: String, nodes: Vec<Node>, links: Vec<Link>) -> Topology {
        Topology {
            name,
            nodes,
            links,
            ranks: Vec::new(),
            sl: Vec::new(),
        }
    }
    /// Node indices of the HCAs, in node order.
    pub fn hcas(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].is_hca())
            .collect()
    }
    /// Node indices of the switches, in node order.
    pub fn switches(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].is_switch())
            .collect()
    }
    /// `(LID, node index)` of every HCA, in increasing LID order.
    pub fn hcas_by_lid(&self) -> Vec<(u16, usize)> {
        let mut hcas: Vec<(u16, usize)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((n.lid()?, i)))
            .collect();
        hcas.sort_unstable();
        hcas
    }
    /// Number of MPI ranks: the explicit mapping's length, else the number
    /// of HCAs.
    pub fn num_ranks(&self) -> usize {
        if self.ranks.is_empty() {
            self.hcas().len()
        } else {
            self.ranks.len()
        }
    }
    /// Node index of the HCA that runs rank `r` (default mapping: the r-th
    /// HCA in node order).
    pub fn hca_of_rank(&self, r: usize) -> Option<usize> {
        if self.ranks.is_empty() {
            self.nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.is_hca())
                .nth(r)
                .map(|(i, _)| i)
        } else {
            self.ranks.get(r).copied()
        }
    }
    /// Rank placed on HCA node `hca`, if any.
    pub fn rank_of_hca(&self, hca: usize) -> Option<usize> {
        if self.ranks.is_empty() {
            self.hcas().iter().position(|&h| h == hca)
        } else {
            self.ranks.iter().position(|&h| h == hca)
        }
    }
    /// LID of node `i` if it is an HCA.
    pub fn lid_of_hca(&self, i: usize) -> Option<u16> {
        self.nodes.get(i).and_then(Node::lid)
    }
    /// Node index of the HCA with LID `lid` (linear scan; build a map for
    /// hot paths, or use [`Router`]).
    pub fn hca_by_lid(&self, lid: u16) -> Option<usize> {
        self.nodes.iter().position(|n| n.lid() == Some(lid))
    }
    /// Node index by name (linear scan).
    pub fn node_by_name(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
    /// Largest LID in use (0 when there are no HCAs).
    pub fn max_lid(&self) -> u16 {
        self.nodes.iter().filter_map(Node::lid).max().unwrap_or(0)
    }
    /// The port at the other end of the cable plugged into `p` (linear scan
    /// over the links; [`Router`] has an indexed version).
    pub fn peer(&self, p: PortRef) -> Option<PortRef> {
        self.links.iter().find_map(|l| {
            if l.a == p {
                Some(l.b)
            } else if l.b == p {
                Some(l.a)
            } else {
                None
            }
        })
    }
    /// SL (= VL) of the route from LID `src` to LID `dst`; 0 when the
    /// topology assigns no per-route SLs.
    pub fn route_sl(&self, src: u16, dst: u16) -> u8 {
        if self.sl.is_empty() {
            return 0;
        }
        let stride = self.max_lid() as usize + 1;
        self.sl
            .get(src as usize * stride + dst as usize)
            .copied()
            .unwrap_or(0)
    }
    /// Number of VLs the per-route SLs need (1 without per-route SLs).
    pub fn vls_needed(&self) -> usize {
        self.sl.iter().copied().max().unwrap_or(0) as usize + 1
    }
    /// Indexed lookups for repeated path queries.
    pub fn router(&self) -> Router<'_> {
        Router::new(self)
    }
    /// The output ports a packet from HCA node `src` to HCA node `dst` leaves
    /// through, hop by hop by the forwarding tables: first `src`'s port 0,
    /// then one port per switch. Its length is the number of links
    /// traversed.
    pub fn path(&self, src: usize, dst: usize) -> Result<Vec<PortRef>, TopoError> {
        self.router().path(src, dst)
    }
    /// Number of links traversed from HCA `src` to HCA `dst` (the thesis's
    /// "hops": host-switch-host is 2).
    pub fn hops(&self, src: usize, dst: usize) -> Result<usize, TopoError> {
        self.router().hops(src, dst)
    }
    /// Mean of `hops` over all ordered pairs of distinct HCAs (uniform
    /// random traffic without self-sends).
    pub fn average_hops(&self) -> Result<f64, TopoError> {
        let r = self.router();
        let h = self.hcas();
        let (mut sum, mut n) = (0usize, 0usize);
        for &s in &h {
            for &d in &h {
                if s != d {
                    sum += r.hops(s, d)?;
                    n += 1;
                }
            }
        }
        Ok(if n == 0 { 0.0 } else { sum as f64 / n as f64 })
    }
    /// Full validation: structure plus every HCA reaching every other HCA by
    /// the tables without loops.
    pub fn validate(&self) -> Result<(), TopoError> {
        self.validate_with(&ValidateOptions::default())
    }
    pub fn validate_with(&self, opts: &ValidateOptions) -> Result<(), TopoError> {
        validate::validate(self, opts)
    }
}

/// Precomputed peer and LID indices over a [`Topology`].
pub struct Router<'a> {
    topo: &'a Topology,
    /// `peers[node][port]`
    peers: Vec<Vec<Option<PortRef>>>,
    /// LID -> node index
    by_lid: Vec<Option<usize>>,
}

impl<'a> Router<'a> {
    pub fn new(topo: &'a Topology) -> Router<'a> {
        let mut peers: Vec<Vec<Option<PortRef>>> = topo
            .nodes
            .iter()
            .map(|n| vec![None; n.num_ports() as usize])
            .collect();
        for l in &topo.links {
            for (x, y) in [(l.a, l.b), (l.b, l.a)] {
                if let Some(slot) = peers
                    .get_mut(x.node)
                    .and_then(|v| v.get_mut(x.port as usize))
                {
                    *slot = Some(y);
                }
            }
        }
        let mut by_lid = vec![None; topo.max_lid() as usize + 1];
        for (i, n) in topo.nodes.iter().enumerate() {
            if let Some(lid) = n.lid() {
                by_lid[lid as usize] = Some(i);
            }
        }
        Router {
            topo,
            peers,
            by_lid,
        }
    }
    pub fn peer(&self, p: PortRef) -> Option<PortRef> {
        self.peers
            .get(p.node)
            .and_then(|v| v.get(p.port as usize))
            .copied()
            .flatten()
    }
    pub fn hca_by_lid(&self, lid: u16) -> Option<usize> {
        self.by_lid.get(lid as usize).copied().flatten()
    }
    /// See [`Topology::path`].
    pub fn path(&self, src: usize, dst: usize) -> Result<Vec<PortRef>, TopoError> {
        let t = self.topo;
        let name = |i: usize| t.nodes[i].name.clone();
        let (Some(_), Some(lid)) = (t.lid_of_hca(src), t.lid_of_hca(dst)) else {
            return Err(TopoError::Invalid(format!(
                "path: node {src} or {dst} is not an HCA"
            )));
        };
        let mut out = vec![PortRef { node: src, port: 0 }];
        let mut cur = PortRef { node: src, port: 0 };
        let mut visited = vec![false; t.nodes.len()];
        loop {
            let Some(next) = self.peer(cur) else {
                return Err(TopoError::Unroutable {
                    switch: name(cur.node),
                    lid,
                    hca: name(dst),
                    detail: format!(" (port {} is not connected)", cur.port),
                });
            };
            let n = next.node;
            if n == dst {
                return Ok(out);
            }
            let NodeKind::Switch { ports, fdb } = &t.nodes[n].kind else {
                return Err(TopoError::Unroutable {
                    switch: name(cur.node),
                    lid,
                    hca: name(dst),
                    detail: format!(" (the route ends at HCA {})", name(n)),
                });
            };
            if visited[n] {
                let mut cycle: Vec<String> = out.iter().skip(1).map(|p| name(p.node)).collect();
                cycle.push(name(n));
                return Err(TopoError::Loop { lid, cycle });
            }
            visited[n] = true;
            let port = fdb.get(lid as usize).copied().unwrap_or(NO_ROUTE);
            if port >= *ports {
                return Err(TopoError::Unroutable {
                    switch: name(n),
                    lid,
                    hca: name(dst),
                    detail: String::new(),
                });
            }
            cur = PortRef { node: n, port };
            out.push(cur);
        }
    }
    pub fn hops(&self, src: usize, dst: usize) -> Result<usize, TopoError> {
        self.path(src, dst).map(|p| p.len())
    }
}
