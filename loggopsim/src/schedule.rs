//! The in-memory schedule: P ranks, each a DAG of operations.
//!
//! Storage is a struct of arrays over global node ids (rank r owns the ids
//! `rank_start[r]..rank_start[r+1]`, in offset order). The per-operation
//! attributes that repeat a lot (kind, cpu, nic, size, tag) are interned into
//! a small `shapes` table, so a node costs 16 bytes plus 4 per dependency edge.

use crate::hash::FastMap;

/// Any-source (as peer) and any-tag, as the binary layout stores them.
pub const ANY: u32 = u32::MAX;

/// Operation kind; the numeric values are the binary layout's. The
/// ordering rules sort by [`Kind::order`]: SEND before RECV before CALC,
/// and the one-sided kinds (which plain schedules never contain) with the
/// operation they resemble: PUT and GET with SEND (they start a transfer),
/// POLL with RECV (docs/rdma.md "Schedules").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[repr(u8)]
pub enum Kind {
    Send = 1,
    Recv = 2,
    Calc = 3,
    /// One-sided write of `size` bytes to `peer`; completes (for `requires`)
    /// when the target's acknowledgement is back (local completion).
    Put = 4,
    /// One-sided read of `size` bytes from `peer`; completes when the
    /// response data is written at the initiator.
    Get = 5,
    /// On the target of puts: completes when the next put from `peer` with
    /// this tag is fully written here (remote completion, MGEN_rdma_poll).
    Poll = 6,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        match v {
            1 => Some(Kind::Send),
            2 => Some(Kind::Recv),
            3 => Some(Kind::Calc),
            4 => Some(Kind::Put),
            5 => Some(Kind::Get),
            6 => Some(Kind::Poll),
            _ => None,
        }
    }
    /// The sort key of the ordering rules (docs/model/loggops.md section 5): 1 for
    /// send, put and get, 2 for recv and poll, 3 for calc; equal keys keep
    /// their order (stable sorts).
    #[inline]
    pub fn order(self) -> u8 {
        match self {
            Kind::Send | Kind::Put | Kind::Get => 1,
            Kind::Recv | Kind::Poll => 2,
            Kind::Calc => 3,
        }
    }
    /// Put, get or poll (docs/rdma.md).
    pub fn is_one_sided(self) -> bool {
        matches!(self, Kind::Put | Kind::Get | Kind::Poll)
    }
    /// Takes the NIC's send gap like a send (put and get start a transfer).
    pub fn uses_send_nic(self) -> bool {
        matches!(self, Kind::Send | Kind::Put | Kind::Get)
    }
}

/// One operation as written in the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Op {
    pub kind: Kind,
    /// Bytes for send/recv, duration for calc.
    pub size: u64,
    /// Destination (send) or source (recv, may be [`ANY`]); 0 for calc.
    pub peer: u32,
    /// Tag (may be [`ANY`]); 0 for calc.
    pub tag: u32,
    pub cpu: u8,
    pub nic: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Shape {
    kind: Kind,
    cpu: u8,
    nic: u8,
    tag: u32,
    size: u64,
}

/// Flag bit in an edge target: the edge is an `irequires` (start) edge.
pub(crate) const EDGE_START: u32 = 1 << 31;
/// Largest number of nodes (global ids must leave the flag bit free).
pub const MAX_NODES: u64 = (1 << 31) - 1;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    num_ranks: u32,
    max_cpu: u8,
    max_nic: u8,
    rank_start: Vec<u32>,
    /// One 16-byte record per node (array of structs: the engine touches
    /// all fields of a node together, so this is one cache line, not four).
    nodes: Vec<NodeRec>,
    /// Dependents of each node, in dependency-line order; `EDGE_START` marks irequires.
    edges: Vec<u32>,
    shapes: Vec<Shape>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct NodeRec {
    shape: u32,
    peer: u32,
    /// start of this node's dependents in `edges` (the next node's start ends them)
    edge_start: u32,
    /// incoming edges (requires + irequires); the engine counts it down
    depcount: u32,
}

impl Schedule {
    pub fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    pub fn num_nodes(&self) -> u32 {
        self.nodes.len() as u32
    }
    /// max cpu index used + 1 (the same number of CPUs on all hosts).
    pub fn num_cpus(&self) -> u32 {
        self.max_cpu as u32 + 1
    }
    pub fn num_nics(&self) -> u32 {
        self.max_nic as u32 + 1
    }
    pub fn max_cpu(&self) -> u8 {
        self.max_cpu
    }
    pub fn max_nic(&self) -> u8 {
        self.max_nic
    }
    /// Global node ids of rank r.
    pub fn rank_nodes(&self, r: u32) -> std::ops::Range<u32> {
        self.rank_start[r as usize]..self.rank_start[r as usize + 1]
    }
    #[inline]
    pub fn op(&self, node: u32) -> Op {
        let n = &self.nodes[node as usize];
        let s = &self.shapes[n.shape as usize];
        Op {
            kind: s.kind,
            size: s.size,
            peer: n.peer,
            tag: s.tag,
            cpu: s.cpu,
            nic: s.nic,
        }
    }
    #[inline]
    pub fn kind(&self, node: u32) -> Kind {
        self.shapes[self.nodes[node as usize].shape as usize].kind
    }
    /// Number of dependency edges into `node` (during a run: still unsatisfied).
    #[inline]
    pub fn depcount(&self, node: u32) -> u32 {
        self.nodes[node as usize].depcount
    }
    /// Counts one satisfied dependency of `node` down; returns what remains.
    #[inline]
    pub(crate) fn satisfy_one(&mut self, node: u32) -> u32 {
        let c = &mut self.nodes[node as usize].depcount;
        *c = c.saturating_sub(1);
        *c
    }
    #[inline]
    pub(crate) fn raw_edges(&self, node: u32) -> &[u32] {
        let (a, b) = self.edge_bounds(node);
        &self.edges[a..b]
    }
    /// Dependents of `node` through `requires` edges (global ids, in line order).
    pub fn requires_dependents(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        self.raw_edges(node)
            .iter()
            .filter(|e| *e & EDGE_START == 0)
            .copied()
    }
    /// Dependents of `node` through `irequires` edges.
    pub fn irequires_dependents(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        self.raw_edges(node)
            .iter()
            .filter(|e| *e & EDGE_START != 0)
            .map(|e| e & !EDGE_START)
    }
    /// Whether any receive uses any-source / any-tag, any send uses any-tag.
    pub fn wildcard_use(&self) -> WildcardUse {
        let mut w = WildcardUse::default();
        // every shape belongs to some node, so the tags can be read from
        // the (few) shapes; the source is per node
        for s in &self.shapes {
            match s.kind {
                Kind::Recv => w.recv_any_tag |= s.tag == ANY,
                Kind::Send => w.send_any_tag |= s.tag == ANY,
                Kind::Calc | Kind::Put | Kind::Get | Kind::Poll => {}
            }
        }
        w.recv_any_src = self
            .nodes
            .iter()
            .any(|n| n.peer == ANY && self.shapes[n.shape as usize].kind == Kind::Recv);
        w
    }
    /// Whether the schedule holds a put, get or poll: such a
    /// schedule needs binary format 4224 and protocol version 3.
    pub fn uses_one_sided(&self) -> bool {
        self.shapes.iter().any(|s| s.kind.is_one_sided())
    }
    /// Approximate heap bytes held (for reports).
    pub fn heap_bytes(&self) -> usize {
        4 * (self.rank_start.capacity() + self.edges.capacity())
            + std::mem::size_of::<NodeRec>() * self.nodes.capacity()
            + std::mem::size_of::<Shape>() * self.shapes.capacity()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WildcardUse {
    pub recv_any_src: bool,
    pub recv_any_tag: bool,
    pub send_any_tag: bool,
}

/// Errors the builder reports; the readers add the position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("too many operations (limit {MAX_NODES})")]
    TooManyNodes,
    #[error("too many dependency edges (limit 2^32)")]
    TooManyEdges,
    #[error("operation {0} does not exist in this rank")]
    NoSuchOp(u32),
}

/// A dependency cycle found by [`ScheduleBuilder::end_rank`]: local
/// offsets in the rank, each one requiring (or, where `immediate`, irequiring)
/// the next and the last one the first. None of them can ever start, so the
/// schedule is bad input (the run would end with unmatched queues or
/// operations that never completed). Starts at the smallest offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// local offsets, in dependency order
    pub ops: Vec<u32>,
    /// `immediate[i]`: the edge from `ops[i]` to the next is an `irequires`
    pub immediate: Vec<bool>,
}

impl Shape {
    /// The shape as two words (kind, cpu, nic and tag share the first):
    /// equal shapes have equal words and vice versa.
    #[inline]
    fn words(&self) -> (u64, u64) {
        let a = (self.kind as u64)
            | (self.cpu as u64) << 8
            | (self.nic as u64) << 16
            | (self.tag as u64) << 32;
        (a, self.size)
    }
}

/// Builds a [`Schedule`] rank by rank.
pub struct ScheduleBuilder {
    s: Schedule,
    /// shape (packed by [`Shape::words`]) -> id: hashing two words instead
    /// of the five fields (`add_op` runs once per operation)
    shape_ids: FastMap<(u64, u64), u32>,
    cur_rank_first: u32,
    /// (predecessor local offset, dependent local offset | EDGE_START)
    pending: Vec<(u32, u32)>,
    in_rank: bool,
    /// The current rank has an edge whose predecessor does not come before
    /// its dependent in offset order. Without one, offset order is a
    /// topological order and the rank cannot hold a cycle, so `end_rank`
    /// skips the cycle search (generated schedules never set it).
    backward: bool,
    /// the cycle search's buffers (remaining dependencies, free
    /// operations), kept from rank to rank
    indeg: Vec<u32>,
    free: Vec<u32>,
}

impl ScheduleBuilder {
    pub fn new(num_ranks: u32) -> Self {
        let mut s = Schedule {
            num_ranks,
            ..Default::default()
        };
        s.rank_start.push(0);
        ScheduleBuilder {
            s,
            shape_ids: FastMap::default(),
            cur_rank_first: 0,
            pending: Vec::new(),
            in_rank: false,
            backward: false,
            indeg: Vec::new(),
            free: Vec::new(),
        }
    }
    /// Number of ranks completed so far.
    pub fn ranks_done(&self) -> u32 {
        self.s.rank_start.len() as u32 - 1
    }
    pub fn begin_rank(&mut self) {
        debug_assert!(!self.in_rank);
        self.in_rank = true;
        self.cur_rank_first = self.s.nodes.len() as u32;
        self.pending.clear();
        self.backward = false;
    }
    /// Number of operations in the current rank.
    pub fn rank_len(&self) -> u32 {
        self.s.nodes.len() as u32 - self.cur_rank_first
    }
    /// Adds an operation; returns its offset within the rank.
    #[inline]
    pub fn add_op(&mut self, op: Op) -> Result<u32, BuildError> {
        if self.s.nodes.len() as u64 >= MAX_NODES {
            return Err(BuildError::TooManyNodes);
        }
        let sh = Shape {
            kind: op.kind,
            cpu: op.cpu,
            nic: op.nic,
            tag: op.tag,
            size: op.size,
        };
        let next = self.s.shapes.len() as u32;
        let id = *self.shape_ids.entry(sh.words()).or_insert(next);
        if id == next {
            self.s.shapes.push(sh);
        }
        self.s.max_cpu = self.s.max_cpu.max(op.cpu);
        self.s.max_nic = self.s.max_nic.max(op.nic);
        self.s.nodes.push(NodeRec {
            shape: id,
            peer: op.peer,
            edge_start: 0,
            depcount: 0,
        });
        Ok(self.rank_len() - 1)
    }
    /// `dependent requires pred` (or `irequires` when `immediate`), local offsets.
    #[inline]
    pub fn add_dep(
        &mut self,
        dependent: u32,
        pred: u32,
        immediate: bool,
    ) -> Result<(), BuildError> {
        let n = self.rank_len();
        if dependent >= n {
            return Err(BuildError::NoSuchOp(dependent));
        }
        if pred >= n {
            return Err(BuildError::NoSuchOp(pred));
        }
        if self.s.edges.len() + self.pending.len() >= u32::MAX as usize {
            return Err(BuildError::TooManyEdges);
        }
        let flag = if immediate { EDGE_START } else { 0 };
        self.backward |= pred >= dependent;
        self.pending.push((pred, dependent | flag));
        Ok(())
    }
    /// Closes the current rank. A dependency cycle in it is an error (the
    /// rank is stored all the same; the readers stop at the error). The
    /// check is Kahn's algorithm, O(operations + edges) of the rank, and
    /// runs only when some edge points backwards in offset order.
    pub fn end_rank(&mut self) -> Result<(), Cycle> {
        debug_assert!(self.in_rank);
        self.in_rank = false;
        let first = self.cur_rank_first;
        let n = self.rank_len() as usize;
        let base = self.s.edges.len();
        let nodes = &mut self.s.nodes[first as usize..];
        // (add_op leaves depcount at 0)
        for &(_, d) in &self.pending {
            nodes[(d & !EDGE_START) as usize].depcount += 1;
        }
        let global = |d: u32| ((d & !EDGE_START) + first) | (d & EDGE_START);
        if self.pending.is_sorted_by_key(|e| e.0) {
            // Already grouped by predecessor (the binary reader adds each
            // operation's dependents together, in operation order): the
            // edges are the pending list itself.
            self.s
                .edges
                .extend(self.pending.iter().map(|&(_, d)| global(d)));
            let mut k = 0;
            for (i, r) in nodes.iter_mut().enumerate() {
                r.edge_start = (base + k) as u32;
                while k < self.pending.len() && self.pending[k].0 as usize == i {
                    k += 1;
                }
            }
        } else {
            // counting sort of the pending edges by predecessor (stable: line order kept)
            let mut count = vec![0u32; n + 1];
            for &(p, _) in &self.pending {
                count[p as usize + 1] += 1;
            }
            for i in 0..n {
                count[i + 1] += count[i];
            }
            self.s.edges.resize(base + self.pending.len(), 0);
            let mut fill = count.clone();
            for &(p, d) in &self.pending {
                let slot = &mut fill[p as usize];
                self.s.edges[base + *slot as usize] = global(d);
                *slot += 1;
            }
            for (i, r) in nodes.iter_mut().enumerate() {
                r.edge_start = base as u32 + count[i];
            }
        }
        let cycle = if self.backward {
            self.find_cycle(first, n, base)
        } else {
            None
        };
        self.pending.clear();
        self.s.rank_start.push(self.s.nodes.len() as u32);
        match cycle {
            Some(c) => Err(c),
            None => Ok(()),
        }
    }

    /// Kahn's algorithm on the rank just built (nodes `first..first+n`, its
    /// edges from `base`); on a cycle, one cycle, found by walking back
    /// from an operation that never became free (each such operation has a
    /// predecessor that never did either).
    fn find_cycle(&mut self, first: u32, n: usize, base: usize) -> Option<Cycle> {
        let mut indeg = std::mem::take(&mut self.indeg);
        let mut free = std::mem::take(&mut self.free);
        let c = self.kahn(first, n, base, &mut indeg, &mut free);
        self.indeg = indeg;
        self.free = free;
        c
    }

    fn kahn(
        &self,
        first: u32,
        n: usize,
        base: usize,
        indeg: &mut Vec<u32>,
        free: &mut Vec<u32>,
    ) -> Option<Cycle> {
        let nodes = &self.s.nodes[first as usize..];
        indeg.clear();
        indeg.extend(nodes.iter().map(|r| r.depcount));
        free.clear();
        free.extend((0..n as u32).filter(|&i| indeg[i as usize] == 0));
        let mut done = 0usize;
        while let Some(v) = free.pop() {
            done += 1;
            let a = nodes[v as usize].edge_start as usize;
            let b = nodes
                .get(v as usize + 1)
                .map_or(self.s.edges.len(), |r| r.edge_start as usize);
            for &e in &self.s.edges[a.max(base)..b] {
                let d = ((e & !EDGE_START) - first) as usize;
                indeg[d] -= 1;
                if indeg[d] == 0 {
                    free.push(d as u32);
                }
            }
        }
        if done == n {
            return None;
        }
        // one waiting predecessor of every waiting operation, with the kind of edge
        let mut pred: Vec<Option<(u32, bool)>> = vec![None; n];
        for &(p, d) in &self.pending {
            let dl = (d & !EDGE_START) as usize;
            if indeg[dl] > 0 && indeg[p as usize] > 0 && pred[dl].is_none() {
                pred[dl] = Some((p, d & EDGE_START != 0));
            }
        }
        let start = (0..n).find(|&i| indeg[i] > 0)? as u32;
        // walk back until an operation repeats: that one is on a cycle
        let mut seen = vec![false; n];
        let mut v = start;
        while !seen[v as usize] {
            seen[v as usize] = true;
            v = pred[v as usize]?.0;
        }
        let mut ops = Vec::new();
        let mut immediate = Vec::new();
        let on = v;
        loop {
            let (p, imm) = pred[v as usize]?;
            ops.push(v);
            immediate.push(imm);
            v = p;
            if v == on {
                break;
            }
        }
        let k = (0..ops.len()).min_by_key(|&i| ops[i]).unwrap_or(0);
        ops.rotate_left(k);
        immediate.rotate_left(k);
        Some(Cycle { ops, immediate })
    }
    pub fn finish(mut self) -> Schedule {
        debug_assert!(!self.in_rank);
        self.s.nodes.shrink_to_fit();
        self.s.edges.shrink_to_fit();
        self.s
    }
}

impl Schedule {
    /// Join schedules built from consecutive runs of ranks (by several
    /// threads, `binfmt::read_file`) into the one schedule that building
    /// them one after the other gives: node and edge indices shifted by
    /// what precedes them, and shape ids given in order of first
    /// appearance (the parts' own shape lists are in that order, so
    /// interning them part after part assigns the ids the sequential
    /// builder assigns). `None` when the whole would come near the node or
    /// edge limit: the sequential builder then words the error at the
    /// operation where it occurs.
    pub(crate) fn join(num_ranks: u32, parts: Vec<Schedule>) -> Option<Schedule> {
        let nodes: u64 = parts.iter().map(|p| p.nodes.len() as u64).sum();
        let edges: u64 = parts.iter().map(|p| p.edges.len() as u64).sum();
        if nodes >= MAX_NODES || edges >= u32::MAX as u64 - 1 {
            return None;
        }
        let mut it = parts.into_iter();
        let mut s = it.next()?;
        s.num_ranks = num_ranks;
        s.nodes.reserve(nodes as usize - s.nodes.len());
        s.edges.reserve(edges as usize - s.edges.len());
        let mut ids: FastMap<(u64, u64), u32> = s
            .shapes
            .iter()
            .enumerate()
            .map(|(i, sh)| (sh.words(), i as u32))
            .collect();
        let mut map = Vec::new();
        for part in it {
            let node_base = s.nodes.len() as u32;
            let edge_base = s.edges.len() as u32;
            map.clear();
            for sh in &part.shapes {
                let next = s.shapes.len() as u32;
                let id = *ids.entry(sh.words()).or_insert(next);
                if id == next {
                    s.shapes.push(*sh);
                }
                map.push(id);
            }
            s.nodes.extend(part.nodes.iter().map(|n| NodeRec {
                shape: map[n.shape as usize],
                edge_start: n.edge_start + edge_base,
                ..*n
            }));
            s.edges.extend(
                part.edges
                    .iter()
                    .map(|&e| ((e & !EDGE_START) + node_base) | (e & EDGE_START)),
            );
            s.rank_start
                .extend(part.rank_start[1..].iter().map(|&r| r + node_base));
            s.max_cpu = s.max_cpu.max(part.max_cpu);
            s.max_nic = s.max_nic.max(part.max_nic);
        }
        Some(s)
    }
}

impl Schedule {
    #[inline]
    pub(crate) fn edge_bounds(&self, node: u32) -> (usize, usize) {
        let a = self.nodes[node as usize].edge_start as usize;
        let b = match self.nodes.get(node as usize + 1) {
            Some(n) => n.edge_start as usize,
            None => self.edges.len(),
        };
        (a, b)
    }
    /// Hints the CPU to load `node`'s record and the next one (where its
    /// dependents end; no effect on results).
    #[inline]
    pub(crate) fn prefetch_node(&self, node: u32) {
        let p = self.nodes.as_ptr().wrapping_add(node as usize);
        ibcosim_common::prefetch::line(p);
        ibcosim_common::prefetch::line(p.wrapping_add(1));
    }
    /// Hints the CPU to load the start of `node`'s dependents (reads the
    /// node's record, so best after [`Self::prefetch_node`] had time).
    #[inline]
    pub(crate) fn prefetch_edges(&self, node: u32) {
        if let Some(n) = self.nodes.get(node as usize) {
            ibcosim_common::prefetch::line(self.edges.as_ptr().wrapping_add(n.edge_start as usize));
        }
    }
    #[inline]
    pub(crate) fn edge_at(&self, i: usize) -> u32 {
        self.edges[i]
    }
}

impl Schedule {
    /// Largest tag used by a send or receive (any-tag excluded).
    pub fn max_tag(&self) -> u32 {
        self.shapes
            .iter()
            .filter(|s| s.kind != Kind::Calc && s.tag != ANY)
            .map(|s| s.tag)
            .max()
            .unwrap_or(0)
    }

    /// (peer << 32) | tag: the key receives are matched on.
    #[inline]
    pub fn match_key(&self, node: u32) -> u64 {
        let n = &self.nodes[node as usize];
        ((n.peer as u64) << 32) | self.shapes[n.shape as usize].tag as u64
    }
}
