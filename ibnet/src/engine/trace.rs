//! Optional per-flit trace (tests and debugging): the four checkpoints of
//! the thesis (handed to the arbiter, sent on a link, received, consumed).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TraceKind {
    /// Generator stamped the flit (injection time = event time + Tgpop).
    Inject,
    /// First bit on the wire from an obuf (node, port).
    Send,
    /// Arrival at an ibuf (node, port).
    Recv,
    /// Consumed by the sink of HCA `node`.
    Consume,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TraceRec {
    pub t: u64,
    pub kind: TraceKind,
    /// Topology node index.
    pub node: u32,
    pub port: u16,
    pub msg: u32,
    pub pkt: u32,
    pub sn: u16,
}
