//! Receive / unexpected queues with the reference's matching rule, without
//! linear scans.
//!
//! Rule (docs/model/loggops.md section 6): the first entry in FIFO order whose source
//! equals the query's source or either is any-source, and whose tag equals
//! the query's or either is any-tag.
//!
//! Structure: entries live in a slab and carry a per-queue insertion order.
//! Every entry is in exactly one *exact bucket*, keyed by its own (src, tag)
//! values (wildcards are just the value [`ANY`]); a bucket is a FIFO
//! (circular singly-linked list through the slab, so the map holds only the
//! tail index). Optional secondary FIFOs (by tag value, by source value,
//! all entries) serve wildcard queries; they use lazy deletion (an item is
//! `(slot, order)` and is stale once the slot's order differs).
//!
//! Queries, with B = number of buckets probed:
//! - (s, t): the earliest among the heads of buckets (s,t), (ANY,t), (s,ANY),
//!   (ANY,ANY): O(1) expected.
//! - (ANY, t): heads of `by_tag[t]` and `by_tag[ANY]`; (s, ANY): heads of
//!   `by_src[s]`, `by_src[ANY]`; (ANY, ANY): head of `all`. O(1) amortised (each
//!   stale item is popped once).
//! - Removal: the matched entry is always the head of its own exact bucket
//!   (its bucket is a subset of every list it was found in, and lists are in
//!   insertion order), so it is popped in O(1).
//!   Insertion is O(1) expected.
//!
//! Secondary lists are only kept when enabled (the engine enables them when
//! the schedule can issue such queries); a query needing a disabled list
//! falls back to a linear scan, so results are always right.

use crate::hash::FastMap;
use crate::schedule::ANY;
use std::collections::VecDeque;

const NIL: u32 = u32::MAX;
const DEAD: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    src: u32,
    tag: u32,
    item: u32,
    /// next in the exact bucket (circular) or in the free list
    next: u32,
    order: u64,
}

/// Which wildcard query kinds get an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Indexes {
    /// queries (ANY, t)
    pub by_tag: bool,
    /// queries (s, ANY)
    pub by_src: bool,
    /// queries (ANY, ANY)
    pub all: bool,
}

impl Indexes {
    pub const ALL: Indexes = Indexes {
        by_tag: true,
        by_src: true,
        all: true,
    };
}

#[derive(Clone, Debug, Default)]
pub struct MatchQueue {
    entries: Vec<Entry>,
    free: u32,
    exact: FastMap<u64, u32>,
    by_tag: Option<FastMap<u32, VecDeque<(u32, u64)>>>,
    by_src: Option<FastMap<u32, VecDeque<(u32, u64)>>>,
    all: Option<VecDeque<(u32, u64)>>,
    next_order: u64,
    len: usize,
    max_len: usize,
    /// live entries with src == ANY / tag == ANY
    n_src_any: usize,
    n_tag_any: usize,
}

#[inline]
fn key(src: u32, tag: u32) -> u64 {
    ((src as u64) << 32) | tag as u64
}

impl MatchQueue {
    pub fn new(ix: Indexes) -> Self {
        MatchQueue {
            free: NIL,
            by_tag: ix.by_tag.then(FastMap::default),
            by_src: ix.by_src.then(FastMap::default),
            all: ix.all.then(VecDeque::new),
            ..Default::default()
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Largest length seen.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Appends an entry at the end of the FIFO.
    pub fn push(&mut self, src: u32, tag: u32, item: u32) {
        let order = self.next_order;
        self.next_order += 1;
        let e = Entry {
            src,
            tag,
            item,
            next: NIL,
            order,
        };
        let slot = if self.free != NIL {
            let s = self.free;
            self.free = self.entries[s as usize].next;
            self.entries[s as usize] = e;
            s
        } else {
            self.entries.push(e);
            self.entries.len() as u32 - 1
        };
        match self.exact.entry(key(src, tag)) {
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let tail = *o.get();
                let head = self.entries[tail as usize].next;
                self.entries[slot as usize].next = head;
                self.entries[tail as usize].next = slot;
                o.insert(slot);
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                self.entries[slot as usize].next = slot;
                v.insert(slot);
            }
        }
        if let Some(m) = &mut self.by_tag {
            m.entry(tag).or_default().push_back((slot, order));
        }
        if let Some(m) = &mut self.by_src {
            m.entry(src).or_default().push_back((slot, order));
        }
        if let Some(l) = &mut self.all {
            l.push_back((slot, order));
        }
        self.n_src_any += (src == ANY) as usize;
        self.n_tag_any += (tag == ANY) as usize;
        self.len += 1;
        self.max_len = self.max_len.max(self.len);
    }

    #[inline]
    fn bucket_head(&self, src: u32, tag: u32) -> Option<u32> {
        self.exact
            .get(&key(src, tag))
            .map(|&tail| self.entries[tail as usize].next)
    }

    fn list_head(entries: &[Entry], l: &mut VecDeque<(u32, u64)>) -> Option<u32> {
        while let Some(&(slot, order)) = l.front() {
            if entries[slot as usize].order == order {
                return Some(slot);
            }
            l.pop_front();
        }
        None
    }

    fn map_head(
        entries: &[Entry],
        m: &mut FastMap<u32, VecDeque<(u32, u64)>>,
        k: u32,
    ) -> Option<u32> {
        let l = m.get_mut(&k)?;
        let h = Self::list_head(entries, l);
        if h.is_none() {
            m.remove(&k);
        }
        h
    }

    /// Finds and removes the first matching entry; returns (src, tag, item).
    /// (The empty queue, the common case of a receive's unexpected-message
    /// queue, is answered inline, without a call.)
    #[inline]
    pub fn take(&mut self, qsrc: u32, qtag: u32) -> Option<(u32, u32, u32)> {
        if self.len == 0 {
            return None;
        }
        self.take_nonempty(qsrc, qtag)
    }

    fn take_nonempty(&mut self, qsrc: u32, qtag: u32) -> Option<(u32, u32, u32)> {
        if qsrc != ANY && qtag != ANY && self.n_src_any == 0 && self.n_tag_any == 0 {
            return self.take_exact_only(qsrc, qtag);
        }
        let best = match (qsrc == ANY, qtag == ANY) {
            (false, false) => {
                let mut best = self.bucket_head(qsrc, qtag);
                if self.n_src_any > 0 {
                    best = self.earlier(best, self.bucket_head(ANY, qtag));
                }
                if self.n_tag_any > 0 {
                    best = self.earlier(best, self.bucket_head(qsrc, ANY));
                    if self.n_src_any > 0 {
                        best = self.earlier(best, self.bucket_head(ANY, ANY));
                    }
                }
                best
            }
            (true, false) | (false, true) => {
                // One of the two is named: the index by it, where the
                // entries with a wildcard there also match.
                let (index, k, n_any) = if qtag != ANY {
                    (&mut self.by_tag, qtag, self.n_tag_any)
                } else {
                    (&mut self.by_src, qsrc, self.n_src_any)
                };
                match index {
                    Some(m) => {
                        let a = Self::map_head(&self.entries, m, k);
                        let b = if n_any > 0 {
                            Self::map_head(&self.entries, m, ANY)
                        } else {
                            None
                        };
                        self.earlier(a, b)
                    }
                    None => self.scan(qsrc, qtag),
                }
            }
            (true, true) => match &mut self.all {
                Some(l) => Self::list_head(&self.entries, l),
                None => self.scan(qsrc, qtag),
            },
        }?;
        Some(self.remove_head(best))
    }

    /// Fast path: exact query and no wildcard entries, one hash probe.
    #[inline]
    fn take_exact_only(&mut self, qsrc: u32, qtag: u32) -> Option<(u32, u32, u32)> {
        let slot = match self.exact.entry(key(qsrc, qtag)) {
            std::collections::hash_map::Entry::Vacant(_) => return None,
            std::collections::hash_map::Entry::Occupied(o) => {
                let tail = *o.get();
                let head = self.entries[tail as usize].next;
                if head == tail {
                    o.remove();
                } else {
                    self.entries[tail as usize].next = self.entries[head as usize].next;
                }
                head
            }
        };
        let e = self.entries[slot as usize];
        self.entries[slot as usize].order = DEAD;
        self.entries[slot as usize].next = self.free;
        self.free = slot;
        self.len -= 1;
        Some((e.src, e.tag, e.item))
    }

    #[inline]
    fn earlier(&self, a: Option<u32>, b: Option<u32>) -> Option<u32> {
        match (a, b) {
            (Some(x), Some(y)) => {
                if self.entries[y as usize].order < self.entries[x as usize].order {
                    Some(y)
                } else {
                    Some(x)
                }
            }
            (x, None) => x,
            (None, y) => y,
        }
    }

    /// Linear fallback for a wildcard query whose index is disabled.
    fn scan(&self, qsrc: u32, qtag: u32) -> Option<u32> {
        let mut best: Option<u32> = None;
        for (i, e) in self.entries.iter().enumerate() {
            if e.order == DEAD {
                continue;
            }
            if matches(e.src, e.tag, qsrc, qtag)
                && best.is_none_or(|b| e.order < self.entries[b as usize].order)
            {
                best = Some(i as u32);
            }
        }
        best
    }

    /// Removes `slot`, which must be the head of its exact bucket.
    fn remove_head(&mut self, slot: u32) -> (u32, u32, u32) {
        let e = self.entries[slot as usize];
        let k = key(e.src, e.tag);
        let tail = *self.exact.get(&k).expect("entry without bucket");
        debug_assert_eq!(
            self.entries[tail as usize].next, slot,
            "matched entry is not its bucket's head"
        );
        if tail == slot {
            self.exact.remove(&k);
        } else {
            self.entries[tail as usize].next = e.next;
        }
        self.entries[slot as usize].order = DEAD;
        self.entries[slot as usize].next = self.free;
        self.free = slot;
        self.n_src_any -= (e.src == ANY) as usize;
        self.n_tag_any -= (e.tag == ANY) as usize;
        self.len -= 1;
        (e.src, e.tag, e.item)
    }

    /// Live entries in FIFO order: (src, tag, item).
    pub fn entries_in_order(&self) -> Vec<(u32, u32, u32)> {
        let mut v: Vec<&Entry> = self.entries.iter().filter(|e| e.order != DEAD).collect();
        v.sort_by_key(|e| e.order);
        v.into_iter().map(|e| (e.src, e.tag, e.item)).collect()
    }
}

/// The matching predicate (symmetric wildcards).
#[inline]
pub fn matches(esrc: u32, etag: u32, qsrc: u32, qtag: u32) -> bool {
    (esrc == qsrc || esrc == ANY || qsrc == ANY) && (etag == qtag || etag == ANY || qtag == ANY)
}

/// The reference's linear FIFO, used to check [`MatchQueue`] in tests.
#[derive(Clone, Debug, Default)]
pub struct NaiveQueue {
    v: VecDeque<(u32, u32, u32)>,
}

impl NaiveQueue {
    pub fn push(&mut self, src: u32, tag: u32, item: u32) {
        self.v.push_back((src, tag, item));
    }
    pub fn take(&mut self, qsrc: u32, qtag: u32) -> Option<(u32, u32, u32)> {
        let i = self
            .v
            .iter()
            .position(|&(s, t, _)| matches(s, t, qsrc, qtag))?;
        self.v.remove(i)
    }
    pub fn len(&self) -> usize {
        self.v.len()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
}

/// Receive queue of one host for schedules without wildcards (no receive
/// uses any-source or any-tag, no send uses any-tag): every query is exact,
/// so FIFO-with-wildcards reduces to "the oldest posted receive with this
/// (source, tag)".
///
/// Memory-lean layout: the FIFO of each (source, tag) is a circular list
/// threaded through a per-node `link` array shared by all hosts (a receive
/// is posted at most once); the host's open-addressing table (linear
/// probing, backward-shift deletion) holds one u64 per bucket: a 32-bit
/// hash of the key and the bucket's tail node. Keys are read back from the
/// schedule. push/take are O(1) expected.
///
/// When every key fits in 32 bits (`packed`, chosen by the engine when
/// source and tag bit widths allow), the slot stores the key itself instead
/// of its hash, so lookups never touch the schedule.
#[derive(Clone, Debug, Default)]
pub struct ExactRq {
    packed: bool,
    slots: Vec<u64>,
    buckets: u32,
    len: u32,
    max_len: u32,
}

const EMPTY: u64 = u64::MAX;
/// In a slot's lower half: the bucket has more than one entry (only then is
/// the `link` list used; singletons never touch it). Nodes are < 2^31.
const MULTI: u64 = 1 << 31;
const NODE_MASK: u64 = MULTI - 1;

#[inline]
fn hash32(key: u64) -> u32 {
    let mut x = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x >> 32) as u32
}

impl ExactRq {
    /// `packed`: all keys passed in are < 2^32 and are compared directly.
    pub fn new(packed: bool) -> Self {
        ExactRq {
            packed,
            ..Default::default()
        }
    }

    /// The 32-bit tag stored in a slot's upper half for `key`.
    #[inline]
    fn tag32(&self, key: u64) -> u32 {
        if self.packed {
            key as u32
        } else {
            hash32(key)
        }
    }

    #[inline]
    fn home(&self, upper: u32) -> usize {
        if self.packed {
            hash32(upper as u64) as usize
        } else {
            upper as usize
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn max_len(&self) -> usize {
        self.max_len as usize
    }

    /// Ok(slot of `key`), or Err(the empty slot that ends its probe
    /// sequence, where `place` would put it; `usize::MAX` if no table).
    #[inline]
    fn find(&self, key: u64, h: u32, key_of: &impl Fn(u32) -> u64) -> Result<usize, usize> {
        if self.slots.is_empty() {
            return Err(usize::MAX);
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(h) & mask;
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return Err(i);
            }
            if (s >> 32) as u32 == h && (self.packed || key_of((s & NODE_MASK) as u32) == key) {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    fn place(&mut self, v: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home((v >> 32) as u32) & mask;
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = v;
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(8);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; cap]);
        for v in old.into_iter().filter(|&v| v != EMPTY) {
            self.place(v);
        }
    }

    /// Hints the CPU to load the slot where `key` would be probed first
    /// (the engine calls it for the next event while it processes this one).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        if self.slots.is_empty() {
            return;
        }
        let i = self.home(self.tag32(key)) & (self.slots.len() - 1);
        ibcosim_common::prefetch::line(self.slots.as_ptr().wrapping_add(i));
    }

    /// Appends `node` with key (src << 32 | tag); `link` is the shared array.
    #[inline]
    pub fn push(&mut self, key: u64, node: u32, link: &mut [u32], key_of: impl Fn(u32) -> u64) {
        let h = self.tag32(key);
        match self.find(key, h, &key_of) {
            Ok(i) => {
                let s = self.slots[i];
                let tail = (s & NODE_MASK) as u32;
                if s & MULTI == 0 {
                    link[tail as usize] = tail; // start the circular list
                }
                link[node as usize] = link[tail as usize];
                link[tail as usize] = node;
                self.slots[i] = ((h as u64) << 32) | MULTI | node as u64;
            }
            Err(empty) => {
                let v = ((h as u64) << 32) | node as u64;
                if (self.buckets as usize + 1) * 4 > self.slots.len() * 3 {
                    self.grow();
                    self.place(v);
                } else {
                    // the probe that missed ended where `place` would put it
                    self.slots[empty] = v;
                }
                self.buckets += 1;
            }
        }
        self.len += 1;
        self.max_len = self.max_len.max(self.len);
    }

    /// The oldest node with this key, left in place (what `take` would
    /// return).
    pub fn peek(&self, key: u64, link: &[u32], key_of: impl Fn(u32) -> u64) -> Option<u32> {
        let i = self.find(key, self.tag32(key), &key_of).ok()?;
        let s = self.slots[i];
        let tail = (s & NODE_MASK) as u32;
        Some(if s & MULTI == 0 {
            tail
        } else {
            link[tail as usize]
        })
    }

    /// Removes and returns the oldest node with this key.
    #[inline]
    pub fn take(&mut self, key: u64, link: &mut [u32], key_of: impl Fn(u32) -> u64) -> Option<u32> {
        let i = self.find(key, self.tag32(key), &key_of).ok()?;
        let s = self.slots[i];
        let tail = (s & NODE_MASK) as u32;
        let head = if s & MULTI == 0 {
            tail
        } else {
            link[tail as usize]
        };
        if head == tail {
            self.remove_slot(i);
            self.buckets -= 1;
        } else {
            let next = link[head as usize];
            link[tail as usize] = next;
            if next == tail {
                self.slots[i] = s & !MULTI; // one entry left
            }
        }
        self.len -= 1;
        Some(head)
    }

    /// Backward-shift deletion keeps probe sequences intact without tombstones.
    fn remove_slot(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let v = self.slots[j];
            if v == EMPTY {
                break;
            }
            let home = self.home((v >> 32) as u32) & mask;
            // move v into the hole at i if its home is not in (i, j]
            let in_range = if i <= j {
                home > i && home <= j
            } else {
                home > i || home <= j
            };
            if !in_range {
                self.slots[i] = v;
                i = j;
            }
        }
        self.slots[i] = EMPTY;
    }

    /// Live nodes, bucket by bucket (FIFO within a bucket).
    pub fn nodes(&self, link: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        for &s in self.slots.iter().filter(|&&s| s != EMPTY) {
            let tail = (s & NODE_MASK) as u32;
            if s & MULTI == 0 {
                out.push(tail);
                continue;
            }
            let mut n = link[tail as usize];
            loop {
                out.push(n);
                if n == tail {
                    break;
                }
                n = link[n as usize];
            }
        }
        out
    }
}
