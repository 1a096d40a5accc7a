//! The parallel engine in the reference's FIFO order of same-instant
//! events (docs/scaling.md 2.7): the same run as the sequential engine's
//! default order, byte for byte, on any partition.
//!
//! The sequential engine orders same-instant events by a global insertion
//! counter: the k-th event scheduled by an event P comes before the k'-th
//! of P' if P ran before P', or P = P' and k < k'. So a process that
//! knows every event's *global index* (its position in the run's
//! processing order) can give its children keys that sort exactly as the
//! counter would: the counter while P runs is `(start + index(P)) <<
//! K_BITS | k`. The processes take each instant and each generation in it
//! together, as the local order's engine (parallel.rs); at each barrier
//! every process also publishes the sorted keys of the events it adds to
//! the next batch (the zero-delay children of its batch, or, at a new
//! instant, its events queued ahead at that instant). A process's event
//! then has the global index `base + rank`, where `base` counts the
//! events of all earlier batches and `rank` the published keys below its
//! own. Every process computes the same numbers.
//!
//! The lazy credit timer gives a woken obuf's wake-up pop a key at the
//! instant it is woken, after the keys were published; so every process
//! runs the always-ticking timer instead (the same report but for the
//! event count, `lazy_equals_naive*` tests) and counts the events the
//! lazy timer would have left out (`FifoPart::skipped`): the ticks and
//! timer pops of an obuf the lazy timer would hold dormant. Each wake-up
//! of such an obuf is seen here: a flit for it is always queued, and a
//! credit update applied where it is scheduled (direct.rs) reports
//! itself (`par_rx_cred_applied`). Direct events are the same run as
//! queued ones in this order too: their proofs rest on the order of
//! events at one node, which the global indices reproduce, and a direct
//! event consumes its counter value (a child number here) as a queued
//! one would, so every key is the same.

use super::dispatch::Ev;
use super::fabric::Fabric;
use super::obuf::may_sleep;
use super::parallel::{first_depth, instant_done, Link, Ran, Stop};
use super::queue::Entry;

/// Bits of the insertion counter for the number of an event's children.
const K_BITS: u32 = 10;

/// A process's state in the FIFO order.
pub(super) struct FifoPart {
    /// global index of the first event of the running batch
    base: u64,
    /// the counter of global index 0 (past the initial events' counters)
    start: u64,
    /// events the lazy credit timer would not have run
    pub(super) skipped: u64,
    lazy_count: bool,
    /// per port: the lazy timer would hold its obuf dormant
    dorm: Vec<bool>,
    /// the running batch, sorted by key, and each event's global rank in it
    batch: Vec<Entry>,
    ranks: Vec<u64>,
}

impl FifoPart {
    pub(super) fn new(f: &Fabric, lazy_count: bool) -> FifoPart {
        FifoPart {
            base: 0,
            start: (f.counter >> K_BITS) + 1,
            skipped: 0,
            lazy_count,
            dorm: vec![false; f.ports.len()],
            batch: Vec::new(),
            ranks: Vec::new(),
        }
    }
}

impl FifoPart {
    /// The insertion counter of a driver's `j`-th injection since the
    /// last run (parallel_drive.rs): past every event scheduled so far.
    pub(super) fn injection_counter(&self, j: u64) -> u64 {
        ((self.start + self.base + (j >> K_BITS)) << K_BITS) | (j & ((1 << K_BITS) - 1))
    }

    /// Skip the global indices that `n` injections took.
    pub(super) fn skip_injections(&mut self, n: u64) {
        self.base += n.div_ceil(1 << K_BITS);
    }
}

/// The sum of the published lists' lengths.
fn total<L: Link + ?Sized>(sh: &L, par: usize) -> u64 {
    let mut n = 0;
    sh.each_list(par, &mut |l| n += l.len() as u64);
    n
}

/// One worker's run of its processes in the FIFO order until `stop`
/// (module doc; the protocol of `parallel::run_group` plus the published
/// keys).
pub(super) fn run_group_fifo<L: Link + ?Sized>(
    group: &mut [(usize, &mut Fabric)],
    sh: &L,
    stop: Stop,
) -> Ran {
    let mut ran = Ran::default();
    let Some(next) = sh.first_instant(group, &mut ran.rounds, &mut ran.waited) else {
        return ran;
    };
    let mut drive = sh.drive(0);
    let resume = sh.any_more(0);
    let (mut t, mut depth) = first_depth(group, resume, next);
    let mut resume = resume;
    let mut par = 1usize;
    let mut ok = true;
    // the first batch of the next instant is published with the last
    // round of an instant (each process's keys at its next event time,
    // `set_front`), so a new instant needs a round of its own only at the
    // start of a run or to take up the current instant again
    let mut staged = false;
    // events in the running batch, over all processes
    let mut size = 0;
    'run: while t <= stop.bound(drive) {
        if !staged {
            // the first batch, published: the events queued ahead at t,
            // or a driver's injections at the current instant
            for (k, f) in group.iter_mut() {
                if resume {
                    f.fifo_take_nowq();
                } else {
                    f.fifo_stage(t);
                }
                let keys = f.fifo_keys();
                sh.set_list(*k, par, keys);
            }
            resume = false;
            if !sh.wait(&mut ran.rounds, &mut ran.waited) {
                ok = false;
                break;
            }
            size = total(sh, par);
            for (_, f) in group.iter_mut() {
                f.fifo_rank(|each| sh.each_list(par, each));
            }
            par ^= 1;
        }
        staged = false;
        loop {
            for (me, f) in group.iter_mut() {
                f.fifo_run_batch(t, depth);
                // the children of the batch, in key order: the next batch
                let keys: Vec<u64> = f.nowq_keys();
                // (the instant can end with this round only if no process
                // has a child: only then is the front wanted)
                let front = if keys.is_empty() {
                    f.fifo_front()
                } else {
                    Vec::new()
                };
                sh.set_list(*me, par, keys);
                f.par_extract();
                ran.sent += sh.post(f, *me, par);
                sh.publish_next(f, *me, par);
                sh.set_front(*me, par, front);
            }
            if !sh.wait(&mut ran.rounds, &mut ran.waited) {
                ok = false;
                break 'run;
            }
            for (me, f) in group.iter_mut() {
                sh.collect(f, *me, par);
            }
            let next_size = total(sh, par);
            for (_, f) in group.iter_mut() {
                f.fifo().base += size;
                f.fifo_take_nowq();
                f.fifo_rank(|each| sh.each_list(par, each));
            }
            let Some(next) = sh.next_instant(par) else {
                ok = false;
                break 'run;
            };
            drive = sh.drive(par);
            if next_size == 0 {
                ran.last = Some(t);
                t = next;
                if t <= stop.bound(drive) && !stop.done(drive) {
                    // the next instant's first batch: the fronts of the
                    // processes whose next event is at t
                    for (_, f) in group.iter_mut() {
                        f.fifo_stage(t);
                        f.fifo_rank(|each| sh.each_front(par, t, each));
                    }
                    staged = true;
                    size = 0;
                    sh.each_front(par, t, &mut |l| size += l.len() as u64);
                }
                par ^= 1;
                break;
            }
            par ^= 1;
            size = next_size;
            depth += 1;
        }
        depth = 0;
        if instant_done(group, &stop, drive) {
            break;
        }
    }
    ran.next = ok.then_some(t);
    ran.drive = drive;
    ran
}

impl Fabric {
    fn fifo(&mut self) -> &mut FifoPart {
        self.part.as_deref_mut().unwrap().fifo.as_mut().unwrap()
    }

    /// Take the events queued ahead at `t` as the next batch.
    fn fifo_stage(&mut self, t: u64) {
        let mut batch = std::mem::take(&mut self.fifo().batch);
        batch.clear();
        while let Some((_, seq, ev)) = self.heap.pop_at(t) {
            batch.push(Entry { seq, ev });
        }
        self.fifo().batch = batch;
    }

    /// The keys of the staged batch, in order.
    fn fifo_keys(&mut self) -> Vec<u64> {
        self.fifo().batch.iter().map(|e| e.seq).collect()
    }

    /// The keys of the now-queue (the running batch's children, created
    /// in key order).
    fn nowq_keys(&mut self) -> Vec<u64> {
        let v: Vec<u64> = self.nowq.pending().iter().map(|e| e.seq).collect();
        debug_assert!(v.is_sorted(), "children are created in key order");
        v
    }

    /// The now-queue (own children and the mail) as the next batch.
    fn fifo_take_nowq(&mut self) {
        let mut batch = std::mem::take(&mut self.fifo().batch);
        batch.clear();
        self.nowq.split_pending_into(&mut batch, |_| false);
        batch.sort_unstable_by_key(|e| e.seq);
        self.fifo().batch = batch;
    }

    /// The global rank of each event of the batch among the published
    /// keys that `lists` visits (every process's list, in order).
    fn fifo_rank(&mut self, lists: impl FnOnce(&mut dyn FnMut(&[u64]))) {
        let fp = self.fifo();
        fp.ranks.clear();
        fp.ranks.resize(fp.batch.len(), 0);
        lists(&mut |list| {
            let mut j = 0;
            for (i, e) in fp.batch.iter().enumerate() {
                while j < list.len() && list[j] < e.seq {
                    j += 1;
                }
                fp.ranks[i] += j as u64;
            }
        });
    }

    /// The keys of the events queued ahead at the next event time, in
    /// order (what `fifo_stage` would take there).
    fn fifo_front(&mut self) -> Vec<u64> {
        let mut v = Vec::new();
        self.heap.front_seqs(&mut v);
        v
    }

    /// Run the batch: each event with the counter of its global index.
    fn fifo_run_batch(&mut self, t: u64, depth: u32) {
        self.part.as_deref_mut().unwrap().depth = depth;
        let batch = std::mem::take(&mut self.fifo().batch);
        for (i, e) in batch.iter().enumerate() {
            if self.fatal.is_some() {
                break;
            }
            if depth == 0 && !self.par_check_owner(t, &e.ev) {
                break;
            }
            let fp = self.fifo();
            let c0 = (fp.start + fp.base + fp.ranks[i]) << K_BITS;
            if c0 >> (64 - super::queue::SEQ_SHIFT) != 0 {
                self.fail("the parallel FIFO order's keys are exhausted (2^34 events)".into());
                break;
            }
            if self.fifo().lazy_count {
                self.fifo_lazy_count(t, &e.ev);
            }
            self.counter = c0;
            self.dispatch(t, e.seq, e.ev);
            if self.counter - c0 >= 1 << K_BITS {
                self.fail(format!(
                    "an event scheduled more than {} events (the parallel FIFO order's limit)",
                    (1 << K_BITS) - 1
                ));
                break;
            }
        }
        let mut batch = batch;
        batch.clear();
        self.fifo().batch = batch;
        debug_assert!(
            !self.heap.has_at(t),
            "nothing is queued ahead at the instant itself"
        );
    }

    /// A credit update of obuf `pi` applied where it was scheduled
    /// (direct.rs): as `fifo_lazy_count` on the queued event.
    pub(super) fn par_rx_cred_applied(&mut self, pi: usize) {
        if let Some(fp) = self.part.as_deref_mut().unwrap().fifo.as_mut() {
            fp.dorm[pi] = false;
        }
    }

    /// Count what the lazy credit timer would not have run (module doc):
    /// an obuf goes dormant at a tick that finds it idle, empty and with
    /// its credits advertised; its later ticks and timer pops are left
    /// out until a flit or a credit update wakes it.
    fn fifo_lazy_count(&mut self, t: u64, ev: &Ev) {
        let nvl = self.nvl;
        let cred = self.tm.cred;
        match *ev {
            Ev::ObufTick { port } => {
                let p = port as usize;
                let dormant_now = self.fifo().dorm[p];
                // (the test of `obuf_tick`, obuf.rs)
                let goes_dormant = t / cred >= 1 && may_sleep(&self.ports[p].ob, nvl);
                if dormant_now {
                    self.fifo().skipped += 1;
                } else if goes_dormant {
                    self.fifo().dorm[p] = true;
                }
            }
            Ev::ObufPopTimer { port } => {
                if self.fifo().dorm[port as usize] {
                    self.fifo().skipped += 1;
                }
            }
            Ev::ObufFlit { port, .. } | Ev::ObufRxCred { port, .. } => {
                self.fifo().dorm[port as usize] = false;
            }
            _ => {}
        }
    }
}
