//! Collective algorithms as GOAL sub-schedules: for one rank `me` of a
//! communicator of `p` ranks, the sends and receives the algorithm makes
//! and the order it makes them in (`requires` edges). The structure
//! follows the published algorithms as MPI libraries implement them
//! (Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective
//! Communication Operations in MPICH"; Open MPI's `coll/base`
//! descriptions), written from their descriptions, not from their code.
//!
//! What a sub-schedule models: who talks to whom, how many bytes, and
//! which message must have arrived before the next may go. What it does
//! not: reduction arithmetic (no calc), memory copies, segmentation
//! (Open MPI's fixed rules pass segment size 0 to the algorithms, i.e. one
//! segment), eager/rendezvous protocol (the simulator's business).
//!
//! Conventions shared by every generator:
//! - a send/receive written with no `requires` starts when the collective
//!   starts (the translator connects it to the previous call);
//! - "blocking" steps (a sendrecv followed by a wait) make every operation
//!   of the next step require every operation of the step before;
//! - sizes are bytes; a block split into parts uses whole elements of the
//!   datatype (`dsize` bytes each) with the first parts one element larger,
//!   as the libraries do.

use crate::goal::{GoalWriter, Label};

/// A size in bytes that must fit the GOAL writer's `i32`.
fn sz(bytes: i64) -> Result<i32, String> {
    i32::try_from(bytes).map_err(|_| {
        format!(
            "a message of {bytes} bytes in the collective is larger than {} bytes",
            i32::MAX
        )
    })
}

/// Non-negative remainder.
fn md(a: i64, p: i64) -> i32 {
    a.rem_euclid(p) as i32
}

/// Largest power of two <= p (p >= 1).
pub fn pof2_floor(p: i32) -> i32 {
    let mut x = 1;
    while (x as i64) * 2 <= p as i64 {
        x *= 2;
    }
    x
}

/// Number of steps of a doubling algorithm: smallest k with 2^k >= p.
pub fn ceil_log2(p: i32) -> u32 {
    let mut k = 0;
    while (1i64 << k) < p as i64 {
        k += 1;
    }
    k
}

/// `count` elements split into `parts` blocks, the first `count % parts`
/// one element larger; returned in bytes.
pub fn split_blocks(count: i64, dsize: i64, parts: i32) -> Vec<i64> {
    let parts = parts.max(1) as i64;
    let (q, r) = (count / parts, count % parts);
    (0..parts).map(|i| (q + i64::from(i < r)) * dsize).collect()
}

/// Operations of one step; the next step's operations require them all.
#[derive(Default)]
struct Steps {
    prev: Vec<Label>,
    cur: Vec<Label>,
}

impl Steps {
    fn send(&mut self, w: &mut GoalWriter, bytes: i64, to: i32) -> Result<Label, String> {
        let l = w.send(sz(bytes)?, to);
        self.dep(w, l);
        Ok(l)
    }
    fn recv(&mut self, w: &mut GoalWriter, bytes: i64, from: i32) -> Result<Label, String> {
        let l = w.recv(sz(bytes)?, from);
        self.dep(w, l);
        Ok(l)
    }
    fn dep(&mut self, w: &mut GoalWriter, l: Label) {
        for &x in &self.prev {
            w.requires(l, x);
        }
        self.cur.push(l);
    }
    /// Closes a step (no-op if it wrote nothing).
    fn next(&mut self) {
        if !self.cur.is_empty() {
            self.prev = std::mem::take(&mut self.cur);
        }
    }
}

// ---------------------------------------------------------------- barrier

/// Barrier by recursive doubling (Open MPI `barrier` alg 3): with
/// `q = pof2_floor(p)`, ranks `q..p` first send a zero-byte message to
/// `me - q` and at the end receive one from it; ranks below `q` receive
/// from `me + q` (if it exists) first, then exchange with `me ^ 2^k` for
/// k = 0..log2 q, then release `me + q`.
pub fn barrier_recursive_doubling(w: &mut GoalWriter, me: i32, p: i32) -> Result<(), String> {
    let q = pof2_floor(p);
    let mut st = Steps::default();
    if me >= q {
        st.send(w, 0, me - q)?;
        st.next();
        st.recv(w, 0, me - q)?;
        return Ok(());
    }
    if me + q < p {
        st.recv(w, 0, me + q)?;
        st.next();
    }
    let mut mask = 1;
    while mask < q {
        let peer = me ^ mask;
        st.send(w, 0, peer)?;
        st.recv(w, 0, peer)?;
        st.next();
        mask <<= 1;
    }
    if me + q < p {
        st.send(w, 0, me + q)?;
    }
    Ok(())
}

/// Dissemination barrier (Bruck et al.; Open MPI `barrier` alg 4 "bruck",
/// MPICH's default): ceil(log2 p) rounds, round k sends a zero-byte message
/// to `me + 2^k` and receives from `me - 2^k`; a round starts when the
/// previous round's message has arrived.
pub fn barrier_dissemination(w: &mut GoalWriter, me: i32, p: i32) -> Result<(), String> {
    let mut st = Steps::default();
    let mut dist = 1i64;
    while dist < p as i64 {
        st.send(w, 0, md(me as i64 + dist, p as i64))?;
        st.recv(w, 0, md(me as i64 - dist, p as i64))?;
        st.next();
        dist *= 2;
    }
    Ok(())
}

/// Linear barrier (Open MPI `barrier` alg 1): every rank sends a zero-byte
/// message to rank 0 and waits for its reply; rank 0 receives from
/// 1..p-1 in order and then sends to all.
pub fn barrier_linear(w: &mut GoalWriter, me: i32, p: i32) -> Result<(), String> {
    let mut st = Steps::default();
    if me == 0 {
        for i in 1..p {
            st.recv(w, 0, i)?;
            st.next();
        }
        for i in 1..p {
            st.send(w, 0, i)?;
        }
    } else {
        st.send(w, 0, 0)?;
        st.next();
        st.recv(w, 0, 0)?;
    }
    Ok(())
}

/// Double-ring barrier (Open MPI `barrier` alg 2): a zero-byte token goes
/// twice round the ring 0 -> 1 -> ... -> p-1 -> 0.
pub fn barrier_double_ring(w: &mut GoalWriter, me: i32, p: i32) -> Result<(), String> {
    let (left, right) = (md(me as i64 - 1, p as i64), md(me as i64 + 1, p as i64));
    let mut st = Steps::default();
    for _ in 0..2 {
        if me == 0 {
            st.send(w, 0, right)?;
            st.next();
            st.recv(w, 0, left)?;
        } else {
            st.recv(w, 0, left)?;
            st.next();
            st.send(w, 0, right)?;
        }
        st.next();
    }
    Ok(())
}

/// Tree barrier (Open MPI `barrier` alg 6): a fan-in over the hypercube to
/// rank 0 (at distance 2^k, the rank whose bit k is set sends to the one
/// whose bit is clear, after its own subtree reported), then the mirror
/// fan-out.
pub fn barrier_tree(w: &mut GoalWriter, me: i32, p: i32) -> Result<(), String> {
    let depth = 1i64 << ceil_log2(p);
    let mut st = Steps::default();
    let mut jump = 1i64;
    let mut up = Vec::new();
    while jump < depth {
        let partner = me as i64 ^ jump;
        if partner & (jump - 1) == 0 && partner < p as i64 {
            up.push((jump, partner as i32));
            if partner > me as i64 {
                st.recv(w, 0, partner as i32)?;
            } else {
                st.send(w, 0, partner as i32)?;
            }
            st.next();
        }
        jump <<= 1;
    }
    for &(_, partner) in up.iter().rev() {
        if partner > me {
            st.send(w, 0, partner)?;
        } else {
            st.recv(w, 0, partner)?;
        }
        st.next();
    }
    Ok(())
}

/// Two ranks: one zero-byte exchange.
pub fn exchange_pair(w: &mut GoalWriter, me: i32, p: i32, bytes: i64) -> Result<(), String> {
    if p == 2 {
        let peer = 1 - me;
        w.send(sz(bytes)?, peer);
        w.recv(sz(bytes)?, peer);
    }
    Ok(())
}

// ------------------------------------------------------------------ trees

/// Rank relative to the root (`shift` mapping of Open MPI and MPICH).
fn rel(me: i32, root: i32, p: i32) -> i64 {
    (me as i64 - root as i64).rem_euclid(p as i64)
}

/// Real rank of relative rank `v`.
fn real(v: i64, root: i32, p: i32) -> i32 {
    md(v + root as i64, p as i64)
}

/// Linear broadcast (Open MPI `bcast` alg 1): the root sends the whole
/// message to every other rank at once (non-blocking sends).
pub fn bcast_linear(w: &mut GoalWriter, me: i32, p: i32, root: i32, n: i64) -> Result<(), String> {
    if me == root {
        for v in 1..p as i64 {
            w.send(sz(n)?, real(v, root, p));
        }
    } else {
        w.recv(sz(n)?, root);
    }
    Ok(())
}

/// Chain broadcast (Open MPI `bcast` alg 2 with fan-out 1, and alg 3
/// "pipeline" with one segment): relative rank v receives from v-1 and
/// then sends to v+1.
pub fn bcast_chain(w: &mut GoalWriter, me: i32, p: i32, root: i32, n: i64) -> Result<(), String> {
    let v = rel(me, root, p);
    let mut st = Steps::default();
    if v > 0 {
        st.recv(w, n, real(v - 1, root, p))?;
        st.next();
    }
    if v + 1 < p as i64 {
        st.send(w, n, real(v + 1, root, p))?;
    }
    Ok(())
}

/// Binary-tree broadcast (Open MPI `bcast` alg 5): heap numbering of the
/// relative ranks, v receives from (v-1)/2 and then sends to 2v+1, 2v+2.
pub fn bcast_binary(w: &mut GoalWriter, me: i32, p: i32, root: i32, n: i64) -> Result<(), String> {
    knary_bcast(w, me, p, root, n, 2)
}

fn knary_bcast(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    n: i64,
    k: i64,
) -> Result<(), String> {
    let v = rel(me, root, p);
    let mut st = Steps::default();
    if v > 0 {
        st.recv(w, n, real((v - 1) / k, root, p))?;
        st.next();
    }
    for c in 1..=k {
        let child = k * v + c;
        if child < p as i64 {
            st.send(w, n, real(child, root, p))?;
        }
    }
    Ok(())
}

/// K-nomial tree broadcast (Open MPI `bcast` alg 7, radix `k`, default 4):
/// relative rank v receives from v - (v mod k^(j+1)) where k^j is the
/// lowest non-zero digit of v in base k, then sends to v + i*k^m for every
/// lower digit position m (highest first) and i = 1..k-1.
pub fn bcast_knomial(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    n: i64,
    k: i64,
) -> Result<(), String> {
    let v = rel(me, root, p);
    let p64 = p as i64;
    let mut st = Steps::default();
    let mut mask = 1i64;
    while mask < p64 {
        if v % (k * mask) != 0 {
            st.recv(w, n, real(v - v % (k * mask), root, p))?;
            st.next();
            break;
        }
        mask *= k;
    }
    // mask: the digit position of the parent link (or >= p for the root).
    mask /= k;
    while mask > 0 {
        for i in 1..k {
            let child = v + i * mask;
            if child < p64 {
                st.send(w, n, real(child, root, p))?;
            }
        }
        mask /= k;
    }
    Ok(())
}

/// Linear reduce (Open MPI `reduce` alg 1): every rank sends its vector to
/// the root, which receives them one after the other (rank p-1 first, as
/// the basic linear algorithm does).
pub fn reduce_linear(w: &mut GoalWriter, me: i32, p: i32, root: i32, n: i64) -> Result<(), String> {
    if me == root {
        let mut st = Steps::default();
        for i in (0..p).rev().filter(|&i| i != root) {
            st.recv(w, n, i)?;
            st.next();
        }
    } else {
        w.send(sz(n)?, root);
    }
    Ok(())
}

/// Chain reduce (Open MPI `reduce` algs 2 and 3 with one segment): the
/// mirror of [`bcast_chain`]: relative rank v receives from v+1, then
/// sends to v-1.
pub fn reduce_chain(w: &mut GoalWriter, me: i32, p: i32, root: i32, n: i64) -> Result<(), String> {
    let v = rel(me, root, p);
    let mut st = Steps::default();
    if v + 1 < p as i64 {
        st.recv(w, n, real(v + 1, root, p))?;
        st.next();
    }
    if v > 0 {
        st.send(w, n, real(v - 1, root, p))?;
    }
    Ok(())
}

/// Binary-tree reduce (Open MPI `reduce` algs 4 and 6; the in-order
/// variant has the same tree shape for a commutative operation):
/// relative rank v receives from 2v+1 and 2v+2, then sends to (v-1)/2.
pub fn reduce_binary(w: &mut GoalWriter, me: i32, p: i32, root: i32, n: i64) -> Result<(), String> {
    let v = rel(me, root, p);
    let mut st = Steps::default();
    for c in [2 * v + 1, 2 * v + 2] {
        if c < p as i64 {
            st.recv(w, n, real(c, root, p))?;
        }
    }
    st.next();
    if v > 0 {
        st.send(w, n, real((v - 1) / 2, root, p))?;
    }
    Ok(())
}

/// Binomial scatter (MPICH; Open MPI `scatter` alg 2, broadcast's scatter
/// phase): relative rank v receives from its parent the blocks of its
/// whole subtree, then hands each child (largest subtree first) the
/// blocks of the child's subtree. `blocks[i]` is relative rank i's block.
fn binomial_scatter(
    w: &mut GoalWriter,
    st: &mut Steps,
    me: i32,
    p: i32,
    root: i32,
    blocks: &[i64],
) -> Result<(), String> {
    let v = rel(me, root, p);
    let p64 = p as i64;
    let span = |from: i64, len: i64| -> i64 {
        let to = (from + len).min(p64);
        blocks[from as usize..to as usize].iter().sum()
    };
    // Parent link: the lowest set bit of v.
    let mut mask = 1i64;
    while mask < p64 {
        if v & mask != 0 {
            st.recv(w, span(v, mask), real(v - mask, root, p))?;
            st.next();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if v + mask < p64 {
            st.send(w, span(v + mask, mask), real(v + mask, root, p))?;
        }
        mask >>= 1;
    }
    st.next();
    Ok(())
}

/// Binomial gather (MPICH; Open MPI `gather` alg 2): the mirror of
/// [`binomial_scatter`]: receive each child's subtree blocks (smallest
/// subtree first), then send the own subtree's blocks to the parent.
fn binomial_gather(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    blocks: &[i64],
) -> Result<(), String> {
    let v = rel(me, root, p);
    let p64 = p as i64;
    let span = |from: i64, len: i64| -> i64 {
        let to = (from + len).min(p64);
        blocks[from as usize..to as usize].iter().sum()
    };
    let mut st = Steps::default();
    let mut mask = 1i64;
    while mask < p64 {
        if v & mask != 0 {
            st.next();
            st.send(w, span(v, mask), real(v - mask, root, p))?;
            break;
        }
        if v + mask < p64 {
            st.recv(w, span(v + mask, mask), real(v + mask, root, p))?;
        }
        mask <<= 1;
    }
    Ok(())
}

/// Binomial scatter of `b` bytes per rank.
pub fn scatter_binomial(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    b: i64,
) -> Result<(), String> {
    let blocks = vec![b; p as usize];
    binomial_scatter(w, &mut Steps::default(), me, p, root, &blocks)
}

/// Binomial gather of `b` bytes per rank.
pub fn gather_binomial(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    b: i64,
) -> Result<(), String> {
    let blocks = vec![b; p as usize];
    binomial_gather(w, me, p, root, &blocks)
}

/// Linear scatter (Open MPI `scatter` alg 1): the root sends each rank its
/// block with blocking sends in rank order; `nonblocking` (alg 3) posts
/// them all at once.
pub fn scatter_linear(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    b: i64,
    nonblocking: bool,
) -> Result<(), String> {
    if me == root {
        let mut st = Steps::default();
        for i in (0..p).filter(|&i| i != root) {
            st.send(w, b, i)?;
            if !nonblocking {
                st.next();
            }
        }
    } else {
        w.recv(sz(b)?, root);
    }
    Ok(())
}

/// Linear gather (Open MPI `gather` alg 1): every rank sends its block to
/// the root, which receives them in rank order with blocking receives.
/// `sync` (alg 3, "linear_sync"): the root first sends each rank a
/// zero-byte go-ahead and receives its block before the next rank's
/// go-ahead (Open MPI splits the block into a first segment and the rest;
/// the split is not modelled).
pub fn gather_linear(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    b: i64,
    sync: bool,
) -> Result<(), String> {
    let mut st = Steps::default();
    if me == root {
        for i in (0..p).filter(|&i| i != root) {
            if sync {
                st.send(w, 0, i)?;
            }
            st.recv(w, b, i)?;
            st.next();
        }
    } else {
        if sync {
            st.recv(w, 0, root)?;
            st.next();
        }
        st.send(w, b, root)?;
    }
    Ok(())
}

// -------------------------------------------------------------- allreduce

/// The ranks left after folding a non-power-of-two communicator (MPICH and
/// Open MPI recursive doubling / Rabenseifner): with `rem = p - q`, among
/// the first `2 rem` ranks the even ones hand their vector to the odd
/// neighbour and sit out; the rest renumber to 0..q.
struct Fold {
    q: i32,
    rem: i32,
}

impl Fold {
    fn new(p: i32) -> Self {
        let q = pof2_floor(p);
        Fold { q, rem: p - q }
    }
    /// New rank of `me`, or None for a rank that sits out.
    fn newrank(&self, me: i32) -> Option<i32> {
        if me < 2 * self.rem {
            (me % 2 == 1).then_some(me / 2)
        } else {
            Some(me - self.rem)
        }
    }
    /// Real rank of new rank `nr`.
    fn real(&self, nr: i32) -> i32 {
        if nr < self.rem {
            nr * 2 + 1
        } else {
            nr + self.rem
        }
    }
    /// The fold-in step: returns None for a rank that sits out (which then
    /// only waits for the result).
    fn fold_in(
        &self,
        w: &mut GoalWriter,
        st: &mut Steps,
        me: i32,
        n: i64,
    ) -> Result<Option<i32>, String> {
        if me < 2 * self.rem {
            if me % 2 == 0 {
                st.send(w, n, me + 1)?;
                st.next();
                st.recv(w, n, me + 1)?;
                return Ok(None);
            }
            st.recv(w, n, me - 1)?;
            st.next();
        }
        Ok(self.newrank(me))
    }
    fn fold_out(&self, w: &mut GoalWriter, st: &mut Steps, me: i32, n: i64) -> Result<(), String> {
        if me < 2 * self.rem && me % 2 == 1 {
            st.send(w, n, me - 1)?;
        }
        Ok(())
    }
}

/// Recursive-doubling allreduce (MPICH short messages; Open MPI
/// `allreduce` alg 3): fold to a power of two, log2 q exchanges of the
/// whole vector with new rank `nr ^ 2^k`, unfold.
pub fn allreduce_recursive_doubling(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    n: i64,
) -> Result<(), String> {
    let f = Fold::new(p);
    let mut st = Steps::default();
    let Some(nr) = f.fold_in(w, &mut st, me, n)? else {
        return Ok(());
    };
    let mut mask = 1;
    while mask < f.q {
        let peer = f.real(nr ^ mask);
        st.send(w, n, peer)?;
        st.recv(w, n, peer)?;
        st.next();
        mask <<= 1;
    }
    f.fold_out(w, &mut st, me, n)
}

/// Ring allreduce (Open MPI `allreduce` alg 4, and alg 5 "segmented ring"
/// which with segment size 0 is the plain ring): the vector in p blocks;
/// p-1 reduce-scatter steps then p-1 allgather steps, each sending one
/// block to `me + 1` and receiving one from `me - 1`; a step starts when
/// the step before has completed (its send forwards what was received). In step k rank r sends block (r - k) mod p
/// and receives block (r - k - 1) mod p; the allgather phase continues
/// with block (r + 1 - k) mod p.
pub fn allreduce_ring(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    count: i64,
    dsize: i64,
) -> Result<(), String> {
    if p == 1 {
        return Ok(());
    }
    if count < p as i64 {
        // Fewer elements than ranks: recursive doubling (Open MPI's ring
        // falls back to it).
        return allreduce_recursive_doubling(w, me, p, count * dsize);
    }
    let blocks = split_blocks(count, dsize, p);
    let (p64, r) = (p as i64, me as i64);
    let (left, right) = (md(r - 1, p64), md(r + 1, p64));
    let mut st = Steps::default();
    for phase in 0..2 {
        for k in 0..p64 - 1 {
            let (sb, rb) = if phase == 0 {
                (md(r - k, p64), md(r - k - 1, p64))
            } else {
                (md(r + 1 - k, p64), md(r - k, p64))
            };
            st.send(w, blocks[sb as usize], right)?;
            st.recv(w, blocks[rb as usize], left)?;
            st.next();
        }
    }
    Ok(())
}

/// Recursive halving reduce-scatter + recursive doubling allgather on the
/// folded power-of-two group (Rabenseifner; MPICH long messages, Open MPI
/// `allreduce` alg 6). In halving step k (distance 2^k) a rank keeps half
/// of its current window (the lower half if its bit k is clear) and
/// exchanges the other half with `nr ^ 2^k`; the allgather retraces the
/// steps in reverse with the kept halves. Window halves are split by
/// elements (lower half floor(len/2)).
pub fn allreduce_rabenseifner(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    count: i64,
    dsize: i64,
) -> Result<(), String> {
    let f = Fold::new(p);
    let n = count * dsize;
    if count < f.q as i64 {
        // Fewer elements than the power-of-two group: recursive doubling
        // (both libraries fall back to it).
        return allreduce_recursive_doubling(w, me, p, n);
    }
    let mut st = Steps::default();
    let Some(nr) = f.fold_in(w, &mut st, me, n)? else {
        return Ok(());
    };
    let windows = halving_windows(nr, f.q, count);
    for (k, &(kept, given)) in windows.iter().enumerate() {
        let peer = f.real(nr ^ (1 << k));
        st.send(w, given * dsize, peer)?;
        st.recv(w, kept * dsize, peer)?;
        st.next();
    }
    for (k, &(kept, given)) in windows.iter().enumerate().rev() {
        let peer = f.real(nr ^ (1 << k));
        st.send(w, kept * dsize, peer)?;
        st.recv(w, given * dsize, peer)?;
        st.next();
    }
    f.fold_out(w, &mut st, me, n)
}

/// For each halving step of new rank `nr` among `q`: (elements kept,
/// elements handed to the partner).
fn halving_windows(nr: i32, q: i32, count: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut len = count;
    let mut mask = 1;
    while mask < q {
        let lower = len / 2;
        let upper = len - lower;
        let (kept, given) = if nr & mask == 0 {
            (lower, upper)
        } else {
            (upper, lower)
        };
        out.push((kept, given));
        len = kept;
        mask <<= 1;
    }
    out
}

/// Rabenseifner's reduce (MPICH long messages; Open MPI `reduce` alg 7):
/// the reduce-scatter of [`allreduce_rabenseifner`], then the pieces are
/// gathered to the root's new rank by retracing the halving steps from the
/// largest distance down: at distance 2^k, among the ranks whose
/// root-relative new rank `v = nr ^ nroot` has no bit above k set, the one
/// with bit k set sends its window to the one with bit k clear. A root that
/// sat out the fold (even rank below 2 rem) gets the result from new rank 0.
pub fn reduce_rabenseifner(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    count: i64,
    dsize: i64,
) -> Result<(), String> {
    let f = Fold::new(p);
    let n = count * dsize;
    if count < f.q as i64 {
        // Fewer elements than the power-of-two group: a binomial tree
        // (MPICH's rule never gets here; Open MPI falls back likewise).
        crate::patterns::binomial_reduce(w, me, p, root, sz(n)?);
        return Ok(());
    }
    let mut st = Steps::default();
    let root_nr = f.newrank(root);
    if me < 2 * f.rem && me % 2 == 0 {
        st.send(w, n, me + 1)?;
        st.next();
        if me == root {
            st.recv(w, n, f.real(0))?;
        }
        return Ok(());
    }
    if me < 2 * f.rem {
        st.recv(w, n, me - 1)?;
        st.next();
    }
    let nr = f
        .newrank(me)
        .expect("a rank that did not sit out has a new rank");
    let windows = halving_windows(nr, f.q, count);
    for (k, &(kept, given)) in windows.iter().enumerate() {
        let peer = f.real(nr ^ (1 << k));
        st.send(w, given * dsize, peer)?;
        st.recv(w, kept * dsize, peer)?;
        st.next();
    }
    let nroot = root_nr.unwrap_or(0);
    let v = nr ^ nroot;
    for (k, &(kept, given)) in windows.iter().enumerate().rev() {
        let bit = 1 << k;
        if v >> (k + 1) != 0 {
            break;
        }
        let peer = f.real(nr ^ bit);
        if v & bit != 0 {
            st.send(w, kept * dsize, peer)?;
            st.next();
            break;
        }
        st.recv(w, given * dsize, peer)?;
        st.next();
    }
    if root_nr.is_none() && nr == 0 {
        st.send(w, n, root)?;
    }
    Ok(())
}

// -------------------------------------------------------------- allgather

/// Recursive-doubling allgather (MPICH for power-of-two sizes; Open MPI
/// `allgather` alg 3): step k exchanges the 2^k blocks gathered so far with
/// `me ^ 2^k`. Only for a power of two `p`: otherwise Bruck's algorithm is
/// written (as Open MPI does).
pub fn allgather_recursive_doubling(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    b: i64,
) -> Result<(), String> {
    if pof2_floor(p) != p {
        return allgather_bruck(w, me, p, b);
    }
    let mut st = Steps::default();
    let mut mask = 1;
    while mask < p {
        let peer = me ^ mask;
        st.send(w, b * mask as i64, peer)?;
        st.recv(w, b * mask as i64, peer)?;
        st.next();
        mask <<= 1;
    }
    Ok(())
}

/// Bruck allgather (MPICH short non-power-of-two; Open MPI `allgather`
/// alg 2): ceil(log2 p) steps; step k sends the min(2^k, p - 2^k) blocks
/// gathered so far to `me - 2^k` and receives as many from `me + 2^k`.
pub fn allgather_bruck(w: &mut GoalWriter, me: i32, p: i32, b: i64) -> Result<(), String> {
    let (p64, r) = (p as i64, me as i64);
    let mut st = Steps::default();
    let mut dist = 1i64;
    while dist < p64 {
        let blocks = dist.min(p64 - dist);
        st.send(w, b * blocks, md(r - dist, p64))?;
        st.recv(w, b * blocks, md(r + dist, p64))?;
        st.next();
        dist *= 2;
    }
    Ok(())
}

/// Ring allgather (MPICH long messages; Open MPI `allgather` alg 4): p-1
/// steps, each sending one block to `me + 1` and receiving one from
/// `me - 1` (a blocking sendrecv: a step starts when the one before has
/// completed; its send forwards the block received there).
/// `blocks[i]` is rank i's block (bytes).
pub fn allgather_ring_blocks(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    blocks: &[i64],
) -> Result<(), String> {
    let (p64, r) = (p as i64, me as i64);
    let (left, right) = (md(r - 1, p64), md(r + 1, p64));
    let mut st = Steps::default();
    for k in 0..p64 - 1 {
        st.send(w, blocks[md(r - k, p64) as usize], right)?;
        st.recv(w, blocks[md(r - k - 1, p64) as usize], left)?;
        st.next();
    }
    Ok(())
}

/// Ring allgather of `b` bytes per rank.
pub fn allgather_ring(w: &mut GoalWriter, me: i32, p: i32, b: i64) -> Result<(), String> {
    allgather_ring_blocks(w, me, p, &vec![b; p as usize])
}

/// Neighbour-exchange allgather (Open MPI `allgather` alg 5, even p; odd p
/// falls back to the ring as Open MPI does): step 0 swaps the own block
/// with the even/odd neighbour, then p/2 - 1 steps swap the two blocks
/// received last with the left and right neighbour alternately.
pub fn allgather_neighbor(w: &mut GoalWriter, me: i32, p: i32, b: i64) -> Result<(), String> {
    if p % 2 != 0 {
        return allgather_ring(w, me, p, b);
    }
    let (p64, r) = (p as i64, me as i64);
    let even = me % 2 == 0;
    let n0 = if even { md(r + 1, p64) } else { md(r - 1, p64) };
    let n1 = if even { md(r - 1, p64) } else { md(r + 1, p64) };
    let mut st = Steps::default();
    st.send(w, b, n0)?;
    st.recv(w, b, n0)?;
    st.next();
    for i in 1..p / 2 {
        let peer = if i % 2 == 1 { n1 } else { n0 };
        st.send(w, 2 * b, peer)?;
        st.recv(w, 2 * b, peer)?;
        st.next();
    }
    Ok(())
}

// --------------------------------------------------------------- alltoall

/// Pairwise all-to-all (MPICH long messages; Open MPI `alltoall` alg 2):
/// p-1 blocking steps; step k sends to `me + k` and receives from `me - k`.
/// With `xor_if_pof2` (MPICH's `MPIR_Alltoall_intra_pairwise`) and p a
/// power of two, step k exchanges with `me ^ k` in both directions
/// instead; Open MPI's pairwise always uses `me + k` / `me - k`.
pub fn alltoall_pairwise(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    b: i64,
    xor_if_pof2: bool,
) -> Result<(), String> {
    let (p64, r) = (p as i64, me as i64);
    let xor = xor_if_pof2 && p64 > 0 && p64 & (p64 - 1) == 0;
    let mut st = Steps::default();
    for k in 1..p64 {
        let (to, from) = if xor {
            let peer = (r ^ k) as i32;
            (peer, peer)
        } else {
            (md(r + k, p64), md(r - k, p64))
        };
        st.send(w, b, to)?;
        st.recv(w, b, from)?;
        st.next();
    }
    Ok(())
}

/// Bruck all-to-all (MPICH short messages, Open MPI `alltoall` alg 3
/// "modified bruck"): ceil(log2 p) steps; step k sends to `me + 2^k` and
/// receives from `me - 2^k` the blocks whose index has bit k set (there
/// are that many of the p blocks); each step needs the previous one's data.
pub fn alltoall_bruck(w: &mut GoalWriter, me: i32, p: i32, b: i64) -> Result<(), String> {
    let (p64, r) = (p as i64, me as i64);
    let mut st = Steps::default();
    let mut dist = 1i64;
    while dist < p64 {
        let blocks = (0..p64).filter(|i| i & dist != 0).count() as i64;
        st.send(w, b * blocks, md(r + dist, p64))?;
        st.recv(w, b * blocks, md(r - dist, p64))?;
        st.next();
        dist *= 2;
    }
    Ok(())
}

/// Throttled non-blocking all-to-all (MPICH medium messages, "scattered"):
/// the peers `me + i` (receives) and `me - i` (sends), i = 0..p-1 without
/// the rank itself, in batches of `batch` (MPIR_CVAR_ALLTOALL_THROTTLE,
/// default 32); a batch starts when the one before has completed.
pub fn alltoall_scattered(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    b: i64,
    batch: i64,
) -> Result<(), String> {
    let (p64, r) = (p as i64, me as i64);
    let mut st = Steps::default();
    let mut i = 0i64;
    while i < p64 {
        for j in i..(i + batch).min(p64) {
            let from = md(r + j, p64);
            if from as i64 != r {
                st.recv(w, b, from)?;
            }
        }
        for j in i..(i + batch).min(p64) {
            let to = md(r - j, p64);
            if to as i64 != r {
                st.send(w, b, to)?;
            }
        }
        st.next();
        i += batch;
    }
    Ok(())
}

// ------------------------------------------------------- bcast (composed)

/// Broadcast as a binomial scatter of p blocks followed by an allgather
/// (MPICH medium/long messages; Open MPI `bcast` algs 8 and 9): `ring`
/// selects the ring allgather, otherwise recursive doubling (power-of-two
/// p; a non-power-of-two p uses the ring). The blocks are ceil(n/p) bytes,
/// the last ones smaller or empty, as MPICH splits the buffer.
pub fn bcast_scatter_allgather(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    n: i64,
    ring: bool,
) -> Result<(), String> {
    let p64 = p as i64;
    let chunk = (n + p64 - 1) / p64.max(1);
    let blocks: Vec<i64> = (0..p64).map(|i| (n - i * chunk).clamp(0, chunk)).collect();
    let mut st = Steps::default();
    binomial_scatter(w, &mut st, me, p, root, &blocks)?;
    // The allgather works on relative ranks (block i belongs to relative
    // rank i); its first operations wait for the scatter.
    let v = rel(me, root, p) as i32;
    let mut sub = st;
    if !ring && pof2_floor(p) == p {
        let mut mask = 1i64;
        while mask < p64 {
            let peer_v = v as i64 ^ mask;
            // The 2^k blocks of my aligned group and of the partner's.
            let mine_lo = (v as i64) & !(mask - 1);
            let theirs_lo = peer_v & !(mask - 1);
            let sum = |lo: i64| {
                blocks[lo as usize..(lo + mask) as usize]
                    .iter()
                    .sum::<i64>()
            };
            sub.send(w, sum(mine_lo), real(peer_v, root, p))?;
            sub.recv(w, sum(theirs_lo), real(peer_v, root, p))?;
            sub.next();
            mask <<= 1;
        }
    } else {
        let (left, right) = (real(v as i64 - 1, root, p), real(v as i64 + 1, root, p));
        for k in 0..p64 - 1 {
            sub.send(w, blocks[md(v as i64 - k, p64) as usize], right)?;
            sub.recv(w, blocks[md(v as i64 - k - 1, p64) as usize], left)?;
            sub.next();
        }
    }
    Ok(())
}
