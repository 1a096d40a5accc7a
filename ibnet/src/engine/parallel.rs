//! The fabric as several logical processes on several threads (`ibnet
//! run --threads N`): the same run as the sequential engine, byte for
//! byte, for any number of processes and threads and any partition of the
//! nodes (docs/scaling.md 2.6). This file is the engine and the local
//! event order's protocol (`event_order = "local"`, order.rs);
//! `parallel_fifo.rs` is the protocol of the reference's FIFO order.
//!
//! # How
//!
//! Every logical process holds a whole [`Fabric`], built like the
//! sequential one, and *owns* a set of topology nodes (`partition.rs`): it
//! runs only the events at its nodes and touches only their state. A
//! worker thread runs one or more processes (process k on worker k % w,
//! at most one worker per core: more would only wait for each other's
//! cores). The processes take the instants together and, within an
//! instant, the generations of the local order together (depth 0: the
//! events queued ahead; depth d + 1: the zero-delay events that depth d
//! scheduled):
//!
//! 1. each process runs its events of instant T at the current depth, in
//!    key order (`par_batch`), then moves the events it scheduled at
//!    other processes' nodes into their mailboxes (`par_extract`) and
//!    publishes whether it has a next batch and the time of its next
//!    event queued ahead;
//! 2. one barrier of the workers; each process takes its mail into its
//!    next batch (`par_import`); while any process has a next batch, the
//!    next depth; else all take the smallest published time as the next
//!    instant.
//!
//! So a run passes one barrier per generation, and no other.
//!
//! Why that is the sequential run: the local order's key of an event
//! (time, depth, origin node, origin's counter) is computed at the node
//! that schedules it, from that node's events alone, so every process
//! gives every event the key the sequential run gives it; a batch is
//! exactly the sequential run's batch restricted to the process's nodes;
//! and events at different nodes within one batch commute (the partition
//! property test of the local order, `tests/engine.rs`). What crosses
//! processes is only
//! what crosses a link: zero-delay flit and FC-packet arrivals (every
//! delay of the model is inside one node, order.rs). An FC packet's
//! handler reads the sending obuf's advertised counters; they travel with
//! it and are written into the receiver's copy of that obuf, which nothing
//! else there reads or writes.
//!
//! Flits live in each process's own slab: a crossing flit is copied into
//! the receiver's. Messages are numbered per process; a flit carries its
//! message's home (process, number), and the first flit of a message that
//! reaches a process brings a copy of the record (a *ghost*, where the
//! sink counts its packets). At the end, [`Parallel::into_fabric`] merges
//! the processes into one fabric for the report: each port and HCA from its
//! owner, the counters summed, and the messages numbered as the sequential
//! run numbers them, by the key of the event that created them.
//!
//! What a parallel run does not support yet (refused by
//! [`Parallel::new`]): several send queues, lossy links, the host model
//! and flit traces; one-sided operations (put, get) are refused where
//! they are injected (`parallel_drive.rs`, and before the run by the
//! command line and the co-simulation's server). A driver's sends (closed
//! loops, the co-simulation) are supported: `parallel_drive.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use rustc_hash::FxHashMap;

use super::app::Msg;
use super::dispatch::{Ev, Site};
use super::fabric::{Fabric, FabricError, Hca, Port, MAX_TIME_PS, NONE};
use super::flits::Flit;
use super::order::node_of;
use super::queue::Entry;
use crate::Time;

/// At most this many logical processes (a message record's "sent to"
/// set is a u64).
pub const MAX_THREADS: usize = 64;

/// Each process's count of messages in flight starts here: a message
/// created at one process completes at another, whose count goes down.
pub(super) const IN_FLIGHT_BIAS: usize = 1 << 40;

/// The home of a flit of no message (a CNP).
const NO_MSG: u64 = u64::MAX;

/// `Part::keys` of a ghost (a copy of another thread's message).
const GHOST: (u64, u32, u64) = (u64::MAX, u32::MAX, u64::MAX);

/// A logical process's part of a parallel run (`Fabric::part`).
pub(super) struct Part {
    pub(super) me: usize,
    /// owner thread of every topology node
    pub(super) owner: Vec<u16>,
    /// the same per port and per HCA: the owner of the node an event at
    /// that site runs at, without a look at the (often another
    /// process's, so uncached) port record (`Part::owner_of`)
    port_owner: Vec<u16>,
    hca_owner: Vec<u16>,
    /// depth of the running batch
    pub(super) depth: u32,
    /// per message of this process: the key (time, depth, seq) of the
    /// event that created it, or `GHOST`
    keys: Vec<(u64, u32, u64)>,
    /// per message of this process: home process << 32 | number there
    pub(super) canon: Vec<u64>,
    /// per message of this process: the processes it was sent to (bits)
    sent_to: Vec<u64>,
    /// ghosts by home (thread, number)
    ghosts: FxHashMap<u64, u32>,
    /// events for the other processes from the running batch
    pub(super) out: Vec<Vec<Cross>>,
    /// delayed link arrivals for the other processes (`Cross::Later`), and
    /// the earliest of them since the last published next time
    pub(super) later: Vec<Vec<Cross>>,
    pub(super) later_min: u64,
    /// per (port, VL) of this process: what the FC packets on their way
    /// to it carry, in the order they arrive (they come in with the round
    /// after they are sent, but arrive a link delay later, and a stretch
    /// alone may send two on one VL before the first arrives)
    fc_on_the_way: FxHashMap<(u32, u8), std::collections::VecDeque<(u64, u64)>>,
    /// while the process runs alone: the horizon (else 0)
    pub(super) alone_until: u64,
    /// the earliest arrival of the FC packets sent to other processes
    /// since the last promise, and the arrival times of those on their
    /// way to this process: an FC packet may let its receiver's arbiter
    /// send at once (lookahead.rs)
    pub(super) fc_sent_min: u64,
    pub(super) fc_in: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    scratch: Vec<Entry>,
    /// the reference's FIFO order (parallel_fifo.rs), if not the local one
    pub(super) fifo: Option<super::parallel_fifo::FifoPart>,
    /// op points (completions) when the running call began
    pub(super) points0: u64,
    /// per entry of `Fabric::completions`: the key (time, depth, seq) of
    /// the event that completed it, which orders completions of several
    /// processes as the sequential run found them
    pub(super) done_keys: Vec<(u64, u32, u64)>,
    /// the same per entry of the op points' log (`RdmaState::events`)
    pub(super) point_keys: Vec<(u64, u32, u64)>,
    /// the lookahead's view of the cut ports (the local order only)
    pub(super) look: Option<super::lookahead::Look>,
}

impl Part {
    /// Put the delayed arrivals for the other processes into this round's
    /// outboxes (a link's propagation delay, `Fabric::par_sched_link`).
    pub(super) fn mail_later(&mut self) {
        for (out, later) in self.out.iter_mut().zip(&mut self.later) {
            if !later.is_empty() {
                out.append(later);
            }
        }
    }

    /// The process that runs `ev` (its node's owner).
    #[inline(always)]
    fn owner_of(&self, msgs: &[Msg], ev: &Ev) -> usize {
        (match ev.site() {
            Site::Port(p) => self.port_owner[p as usize],
            Site::Hca(h) => self.hca_owner[h as usize],
            Site::MsgDst(m) => self.hca_owner[msgs[m as usize].dst_hca as usize],
        }) as usize
    }

    /// Message `id` was injected by a driver, its `g`-th: its place in
    /// the sequential run's numbering (a driven run has no other
    /// messages, parallel_drive.rs).
    pub(super) fn injected_msg(&mut self, id: u32, g: u32) {
        self.keys[id as usize] = (0, 0, g as u64);
    }

    /// Message `id` was created by the running event.
    pub(super) fn home_msg(&mut self, id: u32, t: u64, seq: u64) {
        debug_assert_eq!(self.keys.len(), id as usize);
        self.keys.push((t, self.depth, seq));
        self.canon.push(((self.me as u64) << 32) | id as u64);
        self.sent_to.push(0);
    }
}

/// An event for another process.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) enum Cross {
    /// a data flit or CNP arriving at an ibuf; `msg` is the record of its
    /// message, the first time this thread sends one of it there
    Flit {
        seq: u64,
        port: u32,
        flit: Flit,
        canon: u64,
        msg: Option<Box<Msg>>,
    },
    /// an FC packet arriving at an ibuf, with what the sender advertised
    Fc {
        seq: u64,
        port: u32,
        vl: u8,
        fctbs: u64,
        fccl: u64,
    },
    /// any other event (no handle of the sender's in it)
    Plain { seq: u64, ev: Ev },
    /// a link's arrival at `at`, after the link's propagation delay
    /// (`link_delay_ns`): into the receiver's queue of events ahead
    Later { at: u64, inner: Box<Cross> },
}

/// A barrier that spins for a few microseconds, then yields its core for
/// a while, then sleeps (other threads or programs may want the cores: a
/// spinning waiter would hold the core of the thread it waits for); a
/// thread that panics poisons it, and every waiter then stops.
pub(super) struct SpinBarrier {
    n: usize,
    count: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// spins and yields before sleeping
    spins: u32,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

pub(super) struct Poisoned;

/// Spins of a barrier's waiter before it yields its core (a few
/// microseconds: two threads with a core each meet within that).
const YIELD_AFTER: u32 = 2000;

impl SpinBarrier {
    fn new(n: usize) -> SpinBarrier {
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        SpinBarrier {
            n,
            count: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            // (threads that share cores sleep almost at once)
            spins: if n <= cores {
                YIELD_AFTER + 100_000
            } else {
                100
            },
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    pub(super) fn wait(&self) -> Result<(), Poisoned> {
        let g = self.generation.load(Ordering::Acquire);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.count.store(0, Ordering::Relaxed);
            self.generation.store(g + 1, Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _l = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                self.wake.notify_all();
            }
            return Ok(());
        }
        for i in 0..self.spins {
            if self.generation.load(Ordering::Acquire) != g {
                return Ok(());
            }
            // (the partner may be waiting for this core: a busy machine,
            // or other programs; spinning on would only delay it)
            if i >= YIELD_AFTER {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        let mut l = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while self.generation.load(Ordering::SeqCst) == g {
            if self.poisoned.load(Ordering::Relaxed) {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return Err(Poisoned);
            }
            // (the timeout only bounds the wait for a poisoning)
            l = self
                .wake
                .wait_timeout(l, std::time::Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Poisons the barrier if its thread unwinds.
struct PoisonOnPanic<'a>(&'a SpinBarrier);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

/// What the threads share during a run: the barrier, two sets (by the
/// parity of the barrier) of per-thread words and of mailboxes.
pub(super) struct Shared {
    pub(super) n: usize,
    pub(super) barrier: SpinBarrier,
    /// next event time per thread (`FAILED`: a fatal error there)
    pub(super) next: [Vec<AtomicU64>; 2],
    /// per thread: it has a next batch, or sent events
    pub(super) more: [Vec<AtomicBool>; 2],
    /// mailbox of (from, to) at `from * n + to`
    pub(super) mail: [Vec<Mutex<Vec<Cross>>>; 2],
    /// per process: the sorted keys of the events it adds to the next
    /// batch (the FIFO order, parallel_fifo.rs)
    pub(super) lists: [Vec<Mutex<Vec<u64>>>; 2],
    /// per process: its `Drive` words
    pub(super) drives: [Vec<Mutex<Drive>>; 2],
    /// per process: the keys of its events at its next event time
    pub(super) fronts: [Vec<Mutex<Vec<u64>>>; 2],
    /// per process: its lookahead promise (lookahead.rs)
    pub(super) promise: [Vec<AtomicU64>; 2],
}

pub(super) const FAILED: u64 = u64::MAX;
pub(super) const NO_EVENT: u64 = u64::MAX - 1;

/// What a process publishes each round for a driver's run to the next
/// completion ([`Parallel::run_until_completion_or`]): whether a message
/// completed there since the run began, and the terms of the deadlock rule
/// (run.rs). Aggregated over the processes by [`Link::drive`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Drive {
    /// a completion (an op point) since the run began
    pub(super) found: bool,
    /// foreground events pending
    pub(super) fg: u64,
    /// time of the last foreground event
    pub(super) last_fg: u64,
    /// sink FIFOs holding flits
    pub(super) held: u64,
}

impl Drive {
    pub(super) fn of(f: &Fabric) -> Drive {
        Drive {
            found: f.part.as_ref().is_some_and(|p| f.rdma.points > p.points0),
            fg: f.fg_pending(),
            last_fg: f.last_fg,
            held: f.sink_held,
        }
    }

    /// Every process's words, combined as the sequential engine sees them.
    pub(super) fn sum(all: impl Iterator<Item = Drive>) -> Drive {
        all.fold(Drive::default(), |a, b| Drive {
            found: a.found || b.found,
            fg: a.fg + b.fg,
            last_fg: a.last_fg.max(b.last_fg),
            held: a.held + b.held,
        })
    }
}

/// Where a run of the processes stops: at a time limit, and for a driver
/// also after the first instant with a completion, or where the deadlock
/// rule says nothing more can complete (`Fabric::run_until_completion_or`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Stop {
    pub(super) limit: u64,
    pub(super) completion: bool,
    /// the quiet window's two terms (run.rs): without and with flits held
    /// in a sink FIFO
    pub(super) quiet: (u64, u64),
}

impl Stop {
    pub(super) fn at(limit: u64) -> Stop {
        Stop {
            limit,
            completion: false,
            quiet: (0, 0),
        }
    }

    /// The latest instant the run may process, from the processes' words
    /// at the end of the last instant (the bound of
    /// `Fabric::run_until_completion_or`, which does not change within an
    /// instant once the instant has begun).
    pub(super) fn bound(&self, d: Drive) -> u64 {
        if self.completion && d.fg == 0 {
            let quiet = if d.held > 0 {
                self.quiet.1
            } else {
                self.quiet.0
            };
            self.limit.min(d.last_fg.saturating_add(quiet))
        } else {
            self.limit
        }
    }

    /// Whether the run ends after the instant that ended with `d`.
    pub(super) fn done(&self, d: Drive) -> bool {
        self.completion && d.found
    }
}

/// What the run loops (`run_group`, `parallel_fifo::run_group_fifo`) need
/// of the processes' exchange: words and lists published before a round,
/// read after it, and the mail. [`Shared`] is the exchange of processes
/// on threads of one program; `distributed.rs`'s wire is that of
/// processes in several programs (MPI ranks). Parity `par` is that of
/// the round: what a process publishes for one round is read by the
/// others after it, while they already publish for the next.
pub(super) trait Link {
    /// Publish process `k`'s next event time queued ahead (or its failure).
    fn publish_next(&self, f: &mut Fabric, k: usize, par: usize);
    /// Publish whether process `k` has a next batch or sent events.
    fn set_more(&self, k: usize, par: usize, more: bool);
    /// Publish the sorted keys of the events process `k` adds to the next
    /// batch (the FIFO order).
    fn set_list(&self, k: usize, par: usize, keys: Vec<u64>);
    /// Hand process `me`'s outboxes over: the events sent.
    fn post(&self, f: &mut Fabric, me: usize, par: usize) -> u64;
    /// The round: wait for every process (counting the round and the wall
    /// time waited); false if the run must stop (another thread panicked,
    /// a peer failed).
    fn wait(&self, rounds: &mut u64, waited: &mut u64) -> bool;
    /// Take process `me`'s mail into its next batch.
    fn collect(&self, f: &mut Fabric, me: usize, par: usize);
    /// Whether any process published that it has a next batch.
    fn any_more(&self, par: usize) -> bool;
    /// The smallest published time; None if a process failed.
    fn next_instant(&self, par: usize) -> Option<u64>;
    /// Call `each` with every process's published list, in process order.
    fn each_list(&self, par: usize, each: &mut dyn FnMut(&[u64]));
    /// Every process's [`Drive`] words of the round, combined (published
    /// with `publish_next`).
    fn drive(&self, par: usize) -> Drive;
    /// Publish the keys of process `k`'s events queued ahead at its next
    /// event time (the FIFO order: the next instant's first batch, should
    /// the instant end with this round).
    fn set_front(&self, k: usize, par: usize, keys: Vec<u64>);
    /// Call `each` with the published fronts of the processes whose next
    /// event time is `t`, in process order.
    fn each_front(&self, par: usize, t: u64, each: &mut dyn FnMut(&[u64]));
    /// Publish process `k`'s lookahead promise: the earliest time at
    /// which it could send another process an event (lookahead.rs).
    fn set_promise(&self, k: usize, par: usize, promise: u64);
    /// The smallest published promise: no process receives anything
    /// before it.
    fn horizon(&self, par: usize) -> u64;

    /// The first instant of a run (in the round of parity 0): the
    /// smallest next event time of all processes; None if one failed or
    /// the run must stop.
    fn first_instant(
        &self,
        group: &mut [(usize, &mut Fabric)],
        rounds: &mut u64,
        waited: &mut u64,
    ) -> Option<u64> {
        for (k, f) in group.iter_mut() {
            self.publish_next(f, *k, 0);
            // (a driver's injections at the current instant wait there)
            self.set_more(*k, 0, f.nowq.len() > 0);
        }
        if !self.wait(rounds, waited) {
            return None;
        }
        self.next_instant(0)
    }
}

/// Counters of a parallel run (`Parallel::stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParallelStats {
    /// barriers passed (one per generation of an instant the processes
    /// take together, and one after each stretch they run alone)
    pub rounds: u64,
    /// stretches of instants the processes ran alone, each up to the
    /// horizon of their lookahead promises (lookahead.rs)
    pub alone: u64,
    /// events handed from one thread to another
    pub crossings: u64,
    /// wall time the threads waited at barriers, summed over threads
    /// (ns): the load imbalance within generations and the barriers' own
    /// latency
    pub wait_ns: u64,
    /// OS threads of the last run
    pub workers: usize,
}

/// The fabric as logical processes on threads: see the module doc.
pub struct Parallel {
    /// one fabric per logical process
    pub(super) parts: Vec<Fabric>,
    pub(super) owner: Vec<u16>,
    /// a driver's injections since the last run (parallel_drive.rs)
    pub(super) injected: u64,
    /// a driver's messages: (process, number there) by the number the
    /// sequential engine gives it (the order of the injections)
    pub(super) home_of: Vec<(u16, u32)>,
    /// per process: the driver's number of each of its messages
    pub(super) global: Vec<Vec<u32>>,
    /// OS threads that run the processes (process k on thread k % workers)
    workers: usize,
    stats: ParallelStats,
}

impl Parallel {
    /// A parallel run of `parts.len()` logical processes: `parts` are fabrics built
    /// alike (same network, parameters and traffic), none run yet, in the
    /// local event order; `owner[node]` is the thread of every topology
    /// node (`partition.rs`).
    pub fn new(parts: Vec<Fabric>, owner: Vec<u16>) -> Result<Parallel, String> {
        Parallel::with_lazy_count(parts, owner, false)
    }

    /// As [`Parallel::new`]; in the reference's FIFO order, `lazy_count`
    /// counts the events as the lazy credit timer would (the processes
    /// run the always-ticking timer, parallel_fifo.rs).
    pub fn with_lazy_count(
        mut parts: Vec<Fabric>,
        owner: Vec<u16>,
        lazy_count: bool,
    ) -> Result<Parallel, String> {
        let n = parts.len();
        if n == 0 {
            return Err(format!(
                "a parallel run takes 1 to {MAX_THREADS} processes, not 0"
            ));
        }
        let (nodes, ports) = (parts[0].node_names.len(), parts[0].ports.len());
        if parts
            .iter()
            .any(|f| f.node_names.len() != nodes || f.ports.len() != ports)
        {
            return Err("the processes' fabrics differ".into());
        }
        for (k, f) in parts.iter_mut().enumerate() {
            f.make_part(k, n, &owner, lazy_count)?;
        }
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        Ok(Parallel {
            workers: n.min(cores),
            parts,
            owner,
            injected: 0,
            home_of: Vec::new(),
            global: vec![Vec::new(); n],
            stats: ParallelStats::default(),
        })
    }

    /// Logical processes.
    pub fn processes(&self) -> usize {
        self.parts.len()
    }

    /// OS threads that run them: by default as many as the processes, at
    /// most one per core (more would only wait for each other's cores).
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Run the processes on `w` OS threads (1 to the number of
    /// processes); the results do not depend on it.
    pub fn set_workers(&mut self, w: usize) {
        self.workers = w.clamp(1, self.parts.len());
    }

    /// The owner thread of every topology node.
    pub fn owner(&self) -> &[u16] {
        &self.owner
    }

    pub fn stats(&self) -> ParallelStats {
        self.stats
    }

    /// The clock: every process's after a run, but after a fatal error
    /// the failed process's, at the error's instant (the others may have
    /// run past it alone, lookahead.rs).
    pub fn now(&self) -> Time {
        match self.earliest_failed() {
            Some(f) => f.now(),
            None => self.parts.iter().map(|f| f.now()).max().unwrap_or(Time(0)),
        }
    }

    /// Events processed, as the sequential engine counts them.
    pub fn events_processed(&self) -> u64 {
        self.parts
            .iter()
            .map(|f| {
                let skipped = f
                    .part
                    .as_ref()
                    .and_then(|p| p.fifo.as_ref())
                    .map_or(0, |fp| fp.skipped);
                f.events - skipped
            })
            .sum()
    }

    /// As [`Fabric::switches_between`] (every process holds every
    /// forwarding table).
    pub fn switches_between(&self, src_hca: usize, dst_hca: usize) -> Result<usize, FabricError> {
        self.parts[0].switches_between(src_hca, dst_hca)
    }

    /// The obuf reports of [`Fabric::report`], as of now, each from the
    /// process that owns its port: what the windowed observation outputs
    /// read (`crate::observe`).
    pub fn obuf_reports(&self) -> Vec<crate::stats::ObufReport> {
        let f0 = &self.parts[0];
        (0..f0.ports.len())
            .filter(|&pi| f0.ports[pi].peer != super::fabric::NONE)
            .map(|pi| {
                let k = self.owner[f0.ports[pi].node as usize] as usize;
                self.parts[k].obuf_report(pi)
            })
            .collect()
    }

    /// As [`Fabric::hca_of_lid`] (every process knows every HCA).
    pub fn hca_of_lid(&self, lid: u16) -> Option<usize> {
        self.parts[0].hca_of_lid(lid)
    }

    /// As [`Fabric::set_pulse`]: counted as the processes run.
    pub fn set_pulse(&mut self, p: &'static std::sync::atomic::AtomicU64) {
        for f in &mut self.parts {
            f.set_pulse(p);
        }
    }

    /// The fatal error that stopped the run (the earliest process's that
    /// has one, the first of those at one instant).
    pub fn error(&self) -> Option<&FabricError> {
        self.earliest_failed().and_then(|f| f.error())
    }

    /// The process whose fatal error came first (the first of those at
    /// one instant): a process that runs alone may fail, or run on, after
    /// another has failed (lookahead.rs), and the earliest error is the
    /// sequential run's.
    fn earliest_failed(&self) -> Option<&Fabric> {
        self.parts
            .iter()
            .filter(|f| f.error().is_some())
            .min_by_key(|f| f.now)
    }

    /// Process every event with time <= t in all processes; afterwards
    /// `now() == max(now, t)`, as [`Fabric::run_until`].
    pub fn run_until(&mut self, t: Time) {
        if self.error().is_some() {
            return;
        }
        self.run(Stop::at(t.0.min(MAX_TIME_PS)));
        if self.error().is_none() {
            for f in &mut self.parts {
                if t.0 > f.now {
                    f.advance_to(t.0);
                }
            }
        }
    }

    /// Run the processes on their threads until `stop`: how it ended.
    pub(super) fn run(&mut self, stop: Stop) -> Ran {
        let n = self.parts.len();
        // a driver's injections since the last run (parallel_fifo.rs)
        let injected = std::mem::take(&mut self.injected);
        for f in &mut self.parts {
            f.par_begin(injected);
        }
        let slots = || (0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
        let flags = || (0..n).map(|_| AtomicBool::new(false)).collect::<Vec<_>>();
        let lists = || (0..n).map(|_| Mutex::new(Vec::new())).collect::<Vec<_>>();
        let drives = || {
            (0..n)
                .map(|_| Mutex::new(Drive::default()))
                .collect::<Vec<_>>()
        };
        let boxes = || {
            (0..n * n)
                .map(|_| Mutex::new(Vec::new()))
                .collect::<Vec<_>>()
        };
        let w = self.workers.min(n);
        let sh = Shared {
            n,
            barrier: SpinBarrier::new(w),
            next: [slots(), slots()],
            more: [flags(), flags()],
            mail: [boxes(), boxes()],
            lists: [lists(), lists()],
            drives: [drives(), drives()],
            fronts: [lists(), lists()],
            promise: [slots(), slots()],
        };
        let fifo = !self.parts[0].local_order;
        // logical process k runs on worker k % w
        let mut groups: Vec<Vec<(usize, &mut Fabric)>> = (0..w).map(|_| Vec::new()).collect();
        for (k, f) in self.parts.iter_mut().enumerate() {
            groups[k % w].push((k, f));
        }
        let ran = std::thread::scope(|s| {
            let sh = &sh;
            let handles: Vec<_> = groups
                .into_iter()
                .map(|mut g| {
                    s.spawn(move || {
                        let _guard = PoisonOnPanic(&sh.barrier);
                        let r = if fifo {
                            super::parallel_fifo::run_group_fifo(&mut g, sh, stop)
                        } else {
                            run_group(&mut g, sh, stop)
                        };
                        for (_, f) in g {
                            if f.local_order {
                                f.local_release();
                            }
                        }
                        r
                    })
                })
                .collect();
            let all: Vec<Ran> = handles
                .into_iter()
                .enumerate()
                .map(|(i, h)| {
                    h.join().unwrap_or_else(|e| {
                        // (the others stopped at the poisoned barrier)
                        let what = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        let procs: Vec<String> = (i..n).step_by(w).map(|k| k.to_string()).collect();
                        panic!(
                            "thread {i} of the parallel run (processes {}) panicked: {what}",
                            procs.join(", ")
                        )
                    })
                })
                .collect();
            // (every worker saw the same rounds and instants)
            Ran {
                sent: all.iter().map(|r| r.sent).sum(),
                waited: all.iter().map(|r| r.waited).sum(),
                ..all[0]
            }
        });
        self.stats.rounds += ran.rounds;
        self.stats.alone += ran.alone;
        self.stats.crossings += ran.sent;
        self.stats.wait_ns += ran.waited;
        self.stats.workers = w;
        ran
    }

    /// One fabric holding the whole run, for its report: each port and
    /// HCA from its owner, the counters summed, the messages numbered as
    /// the sequential run numbers them. Not to be run further.
    pub fn into_fabric(self) -> Fabric {
        let Parallel {
            mut parts, owner, ..
        } = self;
        let outs: Vec<PartOut> = parts
            .iter_mut()
            .enumerate()
            .map(|(k, f)| f.part_out(k != 0))
            .collect();
        parts.truncate(1);
        merge(parts.pop().unwrap(), outs, &owner)
    }
}

/// What a logical process gives the merged fabric ([`merge`]): the ports
/// and HCAs it owns, its message records, and its counters. Processes in
/// other programs send it over their transport (distributed.rs).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct PartOut {
    /// owned ports and HCAs by global index (none for process 0, whose
    /// fabric is the merged one)
    ports: Vec<(u32, Port)>,
    hcas: Vec<(u32, Hca)>,
    msgs: Vec<Msg>,
    /// per message: the key of the event that created it, or `GHOST`
    keys: Vec<(u64, u32, u64)>,
    /// ghosts: (home process << 32 | number there, number here)
    ghosts: Vec<(u64, u32)>,
    /// bias + created - completed here
    in_flight: usize,
    /// its clock (after a fatal error, the failed process's is the
    /// run's)
    now: u64,
    /// events processed, as the sequential run counts them
    events: u64,
    direct_applied: u64,
    flits_generated: u64,
    flits_consumed: u64,
    flits_dropped: u64,
    sink_held: u64,
    pending_done: usize,
    last_fg: u64,
    deadlock_seen: bool,
    rdma_points: u64,
    fg_pending: u64,
    fatal: Option<FabricError>,
}

impl Fabric {
    /// This process's [`PartOut`], taking its messages (and, with
    /// `state`, its owned ports and HCAs) out of it.
    pub(super) fn part_out(&mut self, state: bool) -> PartOut {
        let part = self.part.take().expect("a parallel run's process");
        let (ports, hcas) = if state {
            let mine = |node: u32| part.owner[node as usize] as usize == part.me;
            let ports = std::mem::take(&mut self.ports)
                .into_iter()
                .enumerate()
                .filter(|(_, p)| mine(p.node))
                .map(|(i, p)| (i as u32, p))
                .collect();
            let hcas = std::mem::take(&mut self.hcas)
                .into_iter()
                .enumerate()
                .filter(|(_, h)| mine(h.node))
                .map(|(i, h)| (i as u32, h))
                .collect();
            (ports, hcas)
        } else {
            (Vec::new(), Vec::new())
        };
        let skipped = part.fifo.as_ref().map_or(0, |fp| fp.skipped);
        let out = PartOut {
            ports,
            hcas,
            msgs: std::mem::take(&mut self.msgs),
            keys: part.keys,
            ghosts: part.ghosts.into_iter().collect(),
            in_flight: self.in_flight,
            now: self.now,
            events: self.events - skipped,
            direct_applied: self.direct_applied,
            flits_generated: self.flits_generated,
            flits_consumed: self.flits_consumed,
            flits_dropped: self.flits_dropped,
            sink_held: self.sink_held,
            pending_done: self.pending_done,
            last_fg: self.last_fg,
            deadlock_seen: self.deadlock_seen,
            rdma_points: self.rdma.points,
            fg_pending: self.fg_pending(),
            fatal: self.fatal.clone(),
        };
        self.part = None;
        out
    }
}

/// The fabric of the whole run from process 0's fabric `f` and every
/// process's [`PartOut`] (`outs[k]` of process k; the first without
/// ports and HCAs): each port and HCA from its owner, the counters
/// summed, and the messages numbered as the sequential run numbers them,
/// by the key of the event that created each.
pub(super) fn merge(mut f: Fabric, mut outs: Vec<PartOut>, owner: &[u16]) -> Fabric {
    let n = outs.len();
    let hca_node: Vec<u32> = f.hcas.iter().map(|h| h.node).collect();
    let ghosts: Vec<FxHashMap<u64, u32>> = outs
        .iter()
        .map(|o| o.ghosts.iter().copied().collect())
        .collect();
    // the messages, in the order of the events that created them
    let mut order = Vec::new();
    for (k, o) in outs.iter().enumerate() {
        for (i, key) in o.keys.iter().enumerate() {
            if *key != GHOST {
                order.push((*key, k, i));
            }
        }
    }
    order.sort_unstable();
    let mut msgs = Vec::with_capacity(order.len());
    for (g, &(_, k, i)) in order.iter().enumerate() {
        let mut m = outs[k].msgs[i].clone();
        m.op = g as u32;
        let d = owner[hca_node[m.dst_hca as usize] as usize] as usize;
        if d != k {
            let canon = ((k as u64) << 32) | i as u64;
            if let Some(&j) = ghosts[d].get(&canon) {
                let r = &outs[d].msgs[j as usize];
                m.arrived_pkts = r.arrived_pkts;
                m.consumed_pkts = r.consumed_pkts;
                m.last_consumed = r.last_consumed;
                m.enough_at = r.enough_at;
                m.net_latency = r.net_latency;
                m.done = r.done;
            }
        }
        msgs.push(m);
    }
    for o in outs.iter_mut().skip(1) {
        for (p, port) in o.ports.drain(..) {
            f.ports[p as usize] = port;
        }
        for (h, hca) in o.hcas.drain(..) {
            f.hcas[h as usize] = hca;
        }
    }
    // (each process's count is its bias + created - completed there)
    f.in_flight = outs.iter().map(|o| o.in_flight).sum::<usize>() - n * IN_FLIGHT_BIAS;
    f.events = outs.iter().map(|o| o.events).sum();
    f.now = outs.iter().map(|o| o.now).max().unwrap_or(f.now);
    // (the earliest, as `Parallel::error`)
    f.fatal = outs
        .iter()
        .filter(|o| o.fatal.is_some())
        .min_by_key(|o| o.now)
        .and_then(|o| o.fatal.clone());
    for o in &outs[1..] {
        f.direct_applied += o.direct_applied;
        f.flits_generated += o.flits_generated;
        f.flits_consumed += o.flits_consumed;
        f.flits_dropped += o.flits_dropped;
        f.sink_held += o.sink_held;
        f.pending_done += o.pending_done;
        f.last_fg = f.last_fg.max(o.last_fg);
        f.deadlock_seen |= o.deadlock_seen;
        f.rdma.points += o.rdma_points;
        f.fg_elsewhere += o.fg_pending;
    }
    f.msgs = msgs;
    f.completions.clear();
    f.part = None;
    f
}

impl Link for Shared {
    fn publish_next(&self, f: &mut Fabric, k: usize, par: usize) {
        self.next[par][k].store(next_word(f), Ordering::Relaxed);
        *self.drives[par][k].lock().unwrap() = Drive::of(f);
    }

    fn drive(&self, par: usize) -> Drive {
        Drive::sum(self.drives[par].iter().map(|d| *d.lock().unwrap()))
    }

    fn set_front(&self, k: usize, par: usize, keys: Vec<u64>) {
        *self.fronts[par][k].lock().unwrap() = keys;
    }

    fn each_front(&self, par: usize, t: u64, each: &mut dyn FnMut(&[u64])) {
        for k in 0..self.n {
            if self.next[par][k].load(Ordering::Relaxed) == t {
                each(&self.fronts[par][k].lock().unwrap());
            }
        }
    }

    fn set_more(&self, k: usize, par: usize, more: bool) {
        self.more[par][k].store(more, Ordering::Relaxed);
    }

    fn set_promise(&self, k: usize, par: usize, promise: u64) {
        self.promise[par][k].store(promise, Ordering::Relaxed);
    }

    fn horizon(&self, par: usize) -> u64 {
        (0..self.n)
            .map(|k| self.promise[par][k].load(Ordering::Relaxed))
            .min()
            .unwrap_or(0)
    }

    fn set_list(&self, k: usize, par: usize, keys: Vec<u64>) {
        *self.lists[par][k].lock().unwrap() = keys;
    }

    fn post(&self, f: &mut Fabric, me: usize, par: usize) -> u64 {
        let mut sent = 0;
        let part = f.part.as_deref_mut().unwrap();
        part.mail_later();
        for (k, out) in part.out.iter_mut().enumerate() {
            if !out.is_empty() {
                sent += out.len() as u64;
                std::mem::swap(&mut *self.mail[par][me * self.n + k].lock().unwrap(), out);
            }
        }
        sent
    }

    fn wait(&self, rounds: &mut u64, waited: &mut u64) -> bool {
        let w0 = std::time::Instant::now();
        let ok = self.barrier.wait().is_ok();
        *waited += w0.elapsed().as_nanos() as u64;
        *rounds += 1;
        ok
    }

    fn collect(&self, f: &mut Fabric, me: usize, par: usize) {
        for k in (0..self.n).filter(|&k| k != me) {
            let slot = &self.mail[par][k * self.n + me];
            let mut v = std::mem::take(&mut *slot.lock().unwrap());
            for c in v.drain(..) {
                f.par_import(c);
            }
            *slot.lock().unwrap() = v;
        }
    }

    fn any_more(&self, par: usize) -> bool {
        (0..self.n).any(|k| self.more[par][k].load(Ordering::Relaxed))
    }

    fn next_instant(&self, par: usize) -> Option<u64> {
        min_instant((0..self.n).map(|k| self.next[par][k].load(Ordering::Relaxed)))
    }

    fn each_list(&self, par: usize, each: &mut dyn FnMut(&[u64])) {
        for k in 0..self.n {
            each(&self.lists[par][k].lock().unwrap());
        }
    }
}

/// The word a process publishes for its next instant: the time of its
/// next event queued ahead, `NO_EVENT`, or `FAILED` after a fatal error.
pub(super) fn next_word(f: &mut Fabric) -> u64 {
    if f.fatal.is_some() {
        FAILED
    } else {
        let m = f
            .part
            .as_deref_mut()
            .map_or(NO_EVENT, |p| std::mem::replace(&mut p.later_min, NO_EVENT));
        f.heap_next_time().unwrap_or(NO_EVENT).min(m)
    }
}

/// The smallest of the published words; None if a process failed.
pub(super) fn min_instant(words: impl Iterator<Item = u64>) -> Option<u64> {
    let mut t = NO_EVENT;
    for v in words {
        if v == FAILED {
            return None;
        }
        t = t.min(v);
    }
    Some(t)
}

/// How a worker's run of its processes ended (every worker's is the
/// same but for `sent` and `waited`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Ran {
    /// events its processes sent to other processes
    pub(super) sent: u64,
    /// wall time it waited at barriers (ns)
    pub(super) waited: u64,
    pub(super) rounds: u64,
    /// stretches of instants the processes ran alone (lookahead.rs)
    pub(super) alone: u64,
    /// the last instant processed, if any
    pub(super) last: Option<u64>,
    /// the processes' words after it
    pub(super) drive: Drive,
    /// every process's next event time (`NO_EVENT`: none); None if a
    /// process failed or the run had to stop
    pub(super) next: Option<u64>,
}

/// After an instant: count the processes' pulse, and whether the run
/// stops there.
pub(super) fn instant_done(group: &mut [(usize, &mut Fabric)], stop: &Stop, drive: Drive) -> bool {
    for (_, f) in group.iter_mut() {
        f.count_pulse();
    }
    stop.done(drive)
}

/// The first instant of a run and its first depth: the current instant
/// again, after the depth its last generation had, when a driver's
/// injections wait in the now-queues; else the next instant from depth 0.
pub(super) fn first_depth(group: &[(usize, &mut Fabric)], resume: bool, next: u64) -> (u64, u32) {
    let f = &group[0].1;
    if resume {
        (f.now, f.part.as_ref().unwrap().depth + 1)
    } else {
        (next, 0)
    }
}

/// One worker's run of its logical processes in the local order (module
/// doc) until `stop`.
pub(super) fn run_group<L: Link + ?Sized>(
    group: &mut [(usize, &mut Fabric)],
    sh: &L,
    stop: Stop,
) -> Ran {
    let mut ran = Ran::default();
    // the first instant; after it, each generation's barrier also carries
    // every process's next time and words, for when the instant ends
    let Some(next) = sh.first_instant(group, &mut ran.rounds, &mut ran.waited) else {
        return ran;
    };
    let mut drive = sh.drive(0);
    let (mut t, mut depth) = first_depth(group, sh.any_more(0), next);
    let mut par = 1usize;
    let mut ok = true;
    // (a driver's run stops at the instant of a completion, which only
    // the rounds tell every process)
    let look = !stop.completion;
    let mut horizon = 0;
    'run: while t <= stop.bound(drive) {
        loop {
            for (me, f) in group.iter_mut() {
                f.par_batch(t, depth);
                let kept = f.par_extract();
                let n = sh.post(f, *me, par);
                ran.sent += n;
                // (with a link delay, what crosses is for later instants)
                sh.set_more(*me, par, kept || (n > 0 && f.tm.link == 0));
                sh.publish_next(f, *me, par);
                if look {
                    // (a process with more events at this instant goes on)
                    let d = f.tm.link;
                    let p = if d > 0 {
                        // (every crossing is a delayed arrival: one that
                        // starts at t arrives at t + d at the earliest)
                        if kept {
                            t + d
                        } else {
                            f.par_promise(t)
                        }
                    } else if kept || n > 0 {
                        t + 1
                    } else {
                        f.par_promise(t)
                    };
                    sh.set_promise(*me, par, p);
                }
            }
            if !sh.wait(&mut ran.rounds, &mut ran.waited) {
                ok = false;
                break 'run;
            }
            for (me, f) in group.iter_mut() {
                sh.collect(f, *me, par);
            }
            let any = sh.any_more(par);
            let Some(next) = sh.next_instant(par) else {
                ok = false;
                break 'run;
            };
            drive = sh.drive(par);
            if look {
                horizon = sh.horizon(par);
            }
            par ^= 1;
            if !any {
                ran.last = Some(t);
                t = next;
                break;
            }
            depth += 1;
        }
        depth = 0;
        if instant_done(group, &stop, drive) {
            break;
        }
        if look && t < horizon && t < stop.limit {
            // Every process runs its instants before the horizon alone;
            // then they take the horizon together, whether or not they
            // have events there (its rounds tell them the next instant).
            // The limit is always taken together, so that every process
            // counts its generations alike should a driver's injections
            // take that instant up again (`first_depth`).
            let h = horizon.min(stop.limit);
            for (_, f) in group.iter_mut() {
                f.par_alone(h);
            }
            ran.alone += 1;
            t = h;
            if group.first().is_some_and(|(_, f)| f.tm.link > 0) {
                // the delayed arrivals sent while alone (at h or later:
                // the promises) reach their processes before h begins
                for (me, f) in group.iter_mut() {
                    ran.sent += sh.post(f, *me, par);
                }
                if !sh.wait(&mut ran.rounds, &mut ran.waited) {
                    ok = false;
                    break 'run;
                }
                for (me, f) in group.iter_mut() {
                    sh.collect(f, *me, par);
                }
                par ^= 1;
            }
        }
    }
    ran.next = ok.then_some(t);
    ran.drive = drive;
    ran
}

impl super::fabric::Port {
    /// Drop what only the port's own process reads (`Fabric::shed_others`).
    pub(super) fn shed(&mut self) {
        self.ib.q = Vec::new();
        self.arb.hoq = Vec::new();
    }
}

impl Fabric {
    /// Make this fabric process `k` of `n` of a parallel run with
    /// `owner`'s partition (it is built like the sequential one, not run
    /// yet): keep only its own initial events, drop the others' state,
    /// and start its process state.
    pub(super) fn make_part(
        &mut self,
        k: usize,
        n: usize,
        owner: &[u16],
        lazy_count: bool,
    ) -> Result<(), String> {
        if n == 0 || n > MAX_THREADS || k >= n {
            return Err(format!(
                "a parallel run takes 1 to {MAX_THREADS} processes, not {n}"
            ));
        }
        let nodes = self.node_names.len();
        if owner.len() != nodes || owner.iter().any(|&o| o as usize >= n) {
            return Err(format!(
                "the partition must name one of the {n} processes for each of the {nodes} nodes"
            ));
        }
        if let Some(why) = self.parallel_unsupported() {
            return Err(why);
        }
        // Keep only this process's initial events (every replica queued
        // every node's).
        let mut mine = Vec::new();
        while let Some((t, seq, ev)) = self.heap.pop() {
            if owner[node_of(&self.ports, &self.hcas, &self.msgs, &ev) as usize] as usize == k {
                mine.push((t, seq, ev));
            }
        }
        self.heap = super::wheel::Wheel::new();
        if self.local_order {
            self.heap.set_key_groups(self.local.key_group_shift());
        }
        self.bg_pending = 0;
        for (t, seq, ev) in mine {
            self.push_key(t, seq, ev);
        }
        self.in_flight += IN_FLIGHT_BIAS;
        self.shed_others(owner, k);
        let msgs = self.msgs.len();
        self.direct_report = !self.local_order && lazy_count;
        self.part = Some(Box::new(Part {
            me: k,
            owner: owner.to_vec(),
            port_owner: self.ports.iter().map(|p| owner[p.node as usize]).collect(),
            hca_owner: self.hcas.iter().map(|h| owner[h.node as usize]).collect(),
            depth: 0,
            keys: vec![(0, 0, 0); msgs],
            canon: (0..msgs as u64).map(|i| ((k as u64) << 32) | i).collect(),
            sent_to: vec![0; msgs],
            ghosts: FxHashMap::default(),
            out: (0..n).map(|_| Vec::new()).collect(),
            later: (0..n).map(|_| Vec::new()).collect(),
            later_min: NO_EVENT,
            fc_on_the_way: FxHashMap::default(),
            alone_until: 0,
            fc_sent_min: NO_EVENT,
            fc_in: Default::default(),
            scratch: Vec::new(),
            fifo: (!self.local_order)
                .then(|| super::parallel_fifo::FifoPart::new(self, lazy_count)),
            points0: 0,
            done_keys: Vec::new(),
            point_keys: Vec::new(),
            look: self
                .local_order
                .then(|| super::lookahead::Look::new(self, owner, k)),
        }));
        self.watch = self.local_order;
        Ok(())
    }

    /// As process `k` of a parallel run with `owner`'s partition, drop
    /// what this fabric holds for the other processes' nodes: only their
    /// identity, their obufs' advertised counters (`node_of`, an FC
    /// packet's arrival) and their forwarding tables (a driver's
    /// injection checks its route through every switch) are read here;
    /// their input queues and HoQ slots are not. [`Parallel::new`] does it; a caller
    /// that builds the processes one by one saves memory by doing it after
    /// each.
    pub fn shed_others(&mut self, owner: &[u16], k: usize) {
        for p in 0..self.ports.len() {
            let node = self.ports[p].node as usize;
            if owner.get(node).is_some_and(|&o| o as usize != k) {
                self.ports[p].shed();
            }
        }
    }

    /// As [`Fabric::shed_others`], and also drop the other processes'
    /// switches' forwarding tables: for a run that creates messages only
    /// at its own HCAs and routes only through its own switches (`ibnet
    /// run`), not for a driver's, whose injections check whole routes.
    pub fn shed_other_tables(&mut self, owner: &[u16], k: usize) {
        for p in 0..self.ports.len() {
            let port = &self.ports[p];
            if port.sw != NONE
                && port.local == 0
                && owner
                    .get(port.node as usize)
                    .is_some_and(|&o| o as usize != k)
            {
                self.lfts[port.sw as usize] = Vec::new();
            }
        }
    }

    /// Why this fabric cannot run in parallel, if it cannot.
    pub(super) fn parallel_unsupported(&self) -> Option<String> {
        let why = if !self.local_order && self.lazy {
            "in the reference's FIFO order each process runs the always-ticking credit timer \
             (lazy_credit_timer = false; parallel_fifo.rs)"
        } else if !self.local_order && self.tm.link > 0 {
            "links with a propagation delay (link_delay_ns) run on several processes in the \
             local event order only (--set event_order=local)"
        } else if self.started || !self.msgs.is_empty() {
            "the fabric has run or has messages already"
        } else if self.qp.is_some() {
            "several send queues per HCA are not supported in a parallel run yet"
        } else if self.loss.is_some() {
            "lossy links are not supported in a parallel run yet"
        } else if self.host_model_on() {
            "the host model is not supported in a parallel run yet"
        } else if self.trace.is_some() {
            "flit traces are not supported in a parallel run yet"
        } else if self.local.shuffle.is_some() {
            "the shuffled test order is sequential"
        } else {
            return None;
        };
        Some(why.into())
    }

    /// Time of the next event queued ahead.
    pub(super) fn heap_next_time(&mut self) -> Option<u64> {
        self.heap.peek_key().map(|k| k.0)
    }

    /// Run this thread's events of instant `t` at `depth`: the wheel's at
    /// depth 0, the now-queue's (one batch) after.
    pub(super) fn par_batch(&mut self, t: u64, depth: u32) {
        self.part.as_deref_mut().unwrap().depth = depth;
        self.local_batch(t, depth == 0);
    }

    /// Whether this process owns the node of `ev`; if not, an internal
    /// error: every delay of the model is inside one node (order.rs), so
    /// no process queues an event ahead at another's node.
    #[inline(always)]
    pub(super) fn par_check_owner(&mut self, t: u64, ev: &Ev) -> bool {
        let part = self.part.as_deref().unwrap();
        part.owner_of(&self.msgs, ev) == part.me || self.par_not_owner(t, ev)
    }

    #[cold]
    #[inline(never)]
    fn par_not_owner(&mut self, t: u64, ev: &Ev) -> bool {
        let node = node_of(&self.ports, &self.hcas, &self.msgs, ev) as usize;
        self.now = t;
        self.fail(format!(
            "internal error of the parallel engine: an event of node {} queued ahead in \
             another process",
            self.node_names[node]
        ));
        false
    }

    /// Move the next batch's events at other processes' nodes to their
    /// outboxes; whether this thread keeps a next batch.
    pub(super) fn par_extract(&mut self) -> bool {
        let mut part = self.part.take().unwrap();
        let mut scratch = std::mem::take(&mut part.scratch);
        let me = part.me;
        let msgs = &self.msgs;
        self.nowq
            .split_pending_into(&mut scratch, |e| part.owner_of(msgs, &e.ev) == me);
        for e in scratch.drain(..) {
            let to = part.owner_of(&self.msgs, &e.ev);
            let c = self.par_export(&mut part, e, to);
            part.out[to].push(c);
        }
        part.scratch = scratch;
        self.part = Some(part);
        self.nowq.len() > 0
    }

    /// An event for thread `to`, with what it needs of this thread.
    fn par_export(&mut self, part: &mut Part, e: Entry, to: usize) -> Cross {
        if e.ev.background() {
            self.bg_pending -= 1;
        }
        match e.ev {
            Ev::IbufFlit { port, flit } => {
                let fl = self.fl[flit as usize];
                self.fl_release(flit);
                // (a CNP belongs to no message)
                let (canon, msg) = if fl.msg == NONE {
                    (NO_MSG, None)
                } else {
                    let m = fl.msg as usize;
                    let msg = (part.sent_to[m] >> to & 1 == 0).then(|| {
                        part.sent_to[m] |= 1 << to;
                        Box::new(self.msgs[m].clone())
                    });
                    (part.canon[m], msg)
                };
                Cross::Flit {
                    seq: e.seq,
                    port,
                    flit: fl,
                    canon,
                    msg,
                }
            }
            Ev::IbufFc { port, vl } => {
                let ob = &self.ports[self.ports[port as usize].peer as usize].ob;
                Cross::Fc {
                    seq: e.seq,
                    port,
                    vl,
                    fctbs: ob.vl[vl as usize].sent_fctbs,
                    fccl: ob.vl[vl as usize].sent_fccl,
                }
            }
            ev => {
                debug_assert!(
                    !matches!(
                        ev,
                        Ev::ArbFlit { .. }
                            | Ev::ObufFlit { .. }
                            | Ev::SinkFlit { .. }
                            | Ev::AppInject { .. }
                            | Ev::GenMsg { .. }
                            | Ev::QpDone { .. }
                            | Ev::LossRto { .. }
                            | Ev::HostLanded { .. }
                    ),
                    "a zero-delay event with a thread's handle crosses a link: {ev:?}"
                );
                Cross::Plain { seq: e.seq, ev }
            }
        }
    }

    /// A link's arrival at `at` (after the link's propagation delay, so
    /// later than now) in a parallel run: queued ahead if this process
    /// owns the peer, else sent to its owner with the next round's mail,
    /// with the key it has here (the local order keys it at the sender's
    /// node, so every partition gives it the same place).
    pub(super) fn par_sched_link(&mut self, at: u64, ev: Ev) {
        let seq = self.counter << super::queue::SEQ_SHIFT;
        self.counter += 1;
        let part = self.part.as_deref().unwrap();
        let to = part.owner_of(&self.msgs, &ev);
        if to == part.me {
            self.push_key(at, seq, ev);
            return;
        }
        let fc = matches!(ev, Ev::IbufFc { .. });
        if at < part.alone_until {
            let (me, h) = (part.me, part.alone_until);
            self.fail(format!(
                "internal error of the parallel engine: process {me} sent an arrival at \
                 {at} ps, before the horizon {h} ps its lookahead promised"
            ));
            return;
        }
        let mut part = self.part.take().unwrap();
        if fc {
            part.fc_sent_min = part.fc_sent_min.min(at);
        }
        let c = self.par_export(&mut part, Entry { seq, ev }, to);
        part.later[to].push(Cross::Later {
            at,
            inner: Box::new(c),
        });
        part.later_min = part.later_min.min(at);
        self.part = Some(part);
    }

    /// Queue an event from another thread into the next batch.
    pub(super) fn par_import(&mut self, c: Cross) {
        let (c, at) = match c {
            Cross::Later { at, inner } => (*inner, Some(at)),
            c => (c, None),
        };
        let (seq, ev) = match c {
            Cross::Flit {
                seq,
                port,
                mut flit,
                canon,
                msg,
            } => {
                let Some(id) = self.par_msg(canon, msg) else {
                    self.fail(format!(
                        "internal error of the parallel engine: a flit of message {canon:#x} \
                         came without its record"
                    ));
                    return;
                };
                flit.msg = id;
                let flit = self.fl_alloc(flit);
                (seq, Ev::IbufFlit { port, flit })
            }
            Cross::Fc {
                seq,
                port,
                vl,
                fctbs,
                fccl,
            } => {
                if let Some(at) = at {
                    // (a link delay later: written into the sender's obuf
                    // copy when it arrives, `par_fc_arrives`)
                    let part = self.part.as_deref_mut().unwrap();
                    part.fc_on_the_way
                        .entry((port, vl))
                        .or_default()
                        .push_back((fctbs, fccl));
                    part.fc_in.push(std::cmp::Reverse(at));
                } else {
                    let peer = self.ports[port as usize].peer as usize;
                    let v = &mut self.ports[peer].ob.vl[vl as usize];
                    v.sent_fctbs = fctbs;
                    v.sent_fccl = fccl;
                }
                (seq, Ev::IbufFc { port, vl })
            }
            Cross::Plain { seq, ev } => (seq, ev),
            Cross::Later { .. } => unreachable!(),
        };
        if let Some(at) = at {
            self.push_key(at, seq, ev);
            return;
        }
        if ev.background() {
            self.bg_pending += 1;
        }
        self.nowq.push_back(Entry { seq, ev });
    }

    /// A delayed FC packet from another process arrives at port `pi`:
    /// what it carries goes into this process's copy of the sender's obuf,
    /// where the handler reads it (a packet from this process's own obuf
    /// finds its values there already). It and those before it leave
    /// `Part::fc_in` here, not only when a promise is made: a run to the
    /// next completion makes none, and the heap would grow.
    #[cold]
    pub(super) fn par_fc_arrives(&mut self, pi: usize, vl: u8) {
        let now = self.now;
        let part = self.part.as_deref_mut().unwrap();
        while part.fc_in.peek().is_some_and(|r| r.0 <= now) {
            part.fc_in.pop();
        }
        if let Some(q) = part.fc_on_the_way.get_mut(&(pi as u32, vl)) {
            if let Some((fctbs, fccl)) = q.pop_front() {
                let peer = self.ports[pi].peer as usize;
                let v = &mut self.ports[peer].ob.vl[vl as usize];
                v.sent_fctbs = fctbs;
                v.sent_fccl = fccl;
            }
        }
    }

    /// This thread's number of the message `canon` (home thread << 32 |
    /// number there), made a ghost from `msg` if it is new here.
    fn par_msg(&mut self, canon: u64, msg: Option<Box<Msg>>) -> Option<u32> {
        if canon == NO_MSG {
            return Some(NONE);
        }
        let part = self.part.as_deref_mut().unwrap();
        if (canon >> 32) as usize == part.me {
            return Some(canon as u32);
        }
        if let Some(&id) = part.ghosts.get(&canon) {
            return Some(id);
        }
        let m = msg?;
        let id = self.msgs.len() as u32;
        self.msgs.push(*m);
        part.keys.push(GHOST);
        part.canon.push(canon);
        part.sent_to.push(0);
        part.ghosts.insert(canon, id);
        Some(id)
    }
}
