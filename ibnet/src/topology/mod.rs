//! Network topologies: the data model shared by the fabric engine and the
//! topology loaders, generators and routing.
//!
//! CONTRACT between the engine (`crate::engine`) and this module. The engine
//! only reads a finished, validated [`Topology`]; everything that builds one
//! (TOML files, IBDM .topo/.fdbs import, generators, routing) lives here.
//!
//! - `nodes` are in declaration order. Order matters: the engine initialises
//!   modules depth-first in this order (ibfabric.md 1.4), so it fixes
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
}
