//! The parallel engine's logical processes in several programs: one
//! process per program (an MPI rank of `ibnet run --distributed`), each
//! with its own fabric, exchanging over a [`Transport`] what processes on
//! threads exchange in memory (parallel.rs). The run is the same run,
//! byte for byte: the same protocol (one round per generation, plus the
//! FIFO order's key lists), the same events crossing, the same merge.
//!
//! The engine stays free of I/O: a [`Transport`] moves opaque bytes
//! between the programs (MPI in `ibnet`'s `mpi` feature, memory in the
//! tests); this file encodes what a round carries.
//!
//! A round's message from process j to process k holds j's published
//! words (its next instant, whether it has a next batch, its events so
//! far), j's key list (the FIFO order), and the events j sends k. At the
//! end every process sends process 0 what it owns and counted
//! (`parallel::PartOut`), and process 0 merges them into the report's
//! fabric.

use std::cell::RefCell;

use super::fabric::Fabric;
use super::parallel::{
    merge, min_instant, next_word, Cross, Drive, Link, ParallelStats, PartOut, Ran, Stop,
};
use crate::Time;

/// Moves bytes between the processes of a distributed run. Every process
/// calls the methods in the same order, the same number of times.
pub trait Transport {
    /// This process's number, 0 to `size() - 1`.
    fn rank(&self) -> usize;
    /// The number of processes.
    fn size(&self) -> usize;
    /// Send `out[k]` to each process k (this process's own slot is empty)
    /// and return what each process sent this one (the own slot empty).
    fn exchange(&mut self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String>;
    /// Process 0 gets every process's `mine`, in process order (its own
    /// first); the others get None.
    fn gather(&mut self, mine: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>, String>;
}

/// What one process sends another in a round.
#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Packet {
    next: u64,
    promise: u64,
    more: bool,
    events: u64,
    drive: Drive,
    list: Vec<u64>,
    front: Vec<u64>,
    mail: Vec<Cross>,
}

/// What process 0 gathers at the end.
#[derive(serde::Serialize, serde::Deserialize)]
struct Final {
    out: PartOut,
    stats: ParallelStats,
    peak_memory_kb: u64,
}

/// The end of a distributed run, at process 0 ([`Distributed::finish`]).
pub struct Finished {
    /// the fabric of the whole run, for its report (as
    /// [`super::Parallel::into_fabric`]'s)
    pub fabric: Fabric,
    /// the run's counters: rounds, crossings and wall time waited summed
    /// over the processes, `workers` the number of processes
    pub stats: ParallelStats,
    /// every process's peak memory as it gave it to `finish`, in process
    /// order
    pub peak_memory_kb: Vec<u64>,
}

/// The exchange of one process over a transport: [`Link`] for the run
/// loops. What the process publishes is kept until the round
/// (`wait`), which sends it and keeps what the others sent.
struct Wire<'t> {
    me: usize,
    n: usize,
    transport: RefCell<&'t mut dyn Transport>,
    st: RefCell<WireState>,
}

#[derive(Default)]
struct WireState {
    /// this process's words for the coming round
    mine: Packet,
    /// outgoing events per process
    mail: Vec<Vec<Cross>>,
    /// per process, what it sent in the last round (own slot: this
    /// process's own words)
    got: Vec<Packet>,
    /// why the transport failed
    error: Option<String>,
}

impl Wire<'_> {
    fn new(transport: &mut dyn Transport) -> Wire<'_> {
        let (me, n) = (transport.rank(), transport.size());
        Wire {
            me,
            n,
            transport: RefCell::new(transport),
            st: RefCell::new(WireState {
                mail: (0..n).map(|_| Vec::new()).collect(),
                got: (0..n).map(|_| Packet::default()).collect(),
                ..WireState::default()
            }),
        }
    }

    /// The round itself: encode, exchange, decode.
    fn round(&self) -> Result<(), String> {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let mut out = Vec::with_capacity(self.n);
        for k in 0..self.n {
            if k == self.me {
                out.push(Vec::new());
                continue;
            }
            let p = Packet {
                next: st.mine.next,
                promise: st.mine.promise,
                more: st.mine.more,
                events: st.mine.events,
                drive: st.mine.drive,
                list: st.mine.list.clone(),
                front: st.mine.front.clone(),
                mail: std::mem::take(&mut st.mail[k]),
            };
            out.push(postcard::to_stdvec(&p).map_err(|e| format!("encoding a round: {e}"))?);
        }
        let got = self.transport.borrow_mut().exchange(out)?;
        if got.len() != self.n {
            return Err(format!(
                "the transport returned {} messages, not {}",
                got.len(),
                self.n
            ));
        }
        for (k, bytes) in got.into_iter().enumerate() {
            st.got[k] = if k == self.me {
                Packet {
                    next: st.mine.next,
                    promise: st.mine.promise,
                    more: st.mine.more,
                    events: st.mine.events,
                    drive: st.mine.drive,
                    list: std::mem::take(&mut st.mine.list),
                    front: std::mem::take(&mut st.mine.front),
                    mail: Vec::new(),
                }
            } else {
                postcard::from_bytes(&bytes)
                    .map_err(|e| format!("decoding process {k}'s round: {e}"))?
            };
        }
        st.mine.more = false;
        Ok(())
    }
}

impl Link for Wire<'_> {
    fn publish_next(&self, f: &mut Fabric, _k: usize, _par: usize) {
        let mut st = self.st.borrow_mut();
        st.mine.next = next_word(f);
        st.mine.drive = Drive::of(f);
        st.mine.events = f.events
            - f.part
                .as_ref()
                .and_then(|p| p.fifo.as_ref())
                .map_or(0, |fp| fp.skipped);
    }

    fn set_more(&self, _k: usize, _par: usize, more: bool) {
        self.st.borrow_mut().mine.more = more;
    }

    fn set_promise(&self, _k: usize, _par: usize, promise: u64) {
        self.st.borrow_mut().mine.promise = promise;
    }

    fn horizon(&self, _par: usize) -> u64 {
        self.st
            .borrow()
            .got
            .iter()
            .map(|p| p.promise)
            .min()
            .unwrap_or(0)
    }

    fn set_list(&self, _k: usize, _par: usize, keys: Vec<u64>) {
        self.st.borrow_mut().mine.list = keys;
    }

    fn post(&self, f: &mut Fabric, _me: usize, _par: usize) -> u64 {
        let mut st = self.st.borrow_mut();
        let part = f.part.as_deref_mut().unwrap();
        part.mail_later();
        let mut sent = 0;
        for (k, out) in part.out.iter_mut().enumerate() {
            sent += out.len() as u64;
            st.mail[k].append(out);
        }
        sent
    }

    fn wait(&self, rounds: &mut u64, waited: &mut u64) -> bool {
        let w0 = std::time::Instant::now();
        let r = self.round();
        *waited += w0.elapsed().as_nanos() as u64;
        *rounds += 1;
        match r {
            Ok(()) => true,
            Err(e) => {
                self.st.borrow_mut().error = Some(e);
                false
            }
        }
    }

    fn collect(&self, f: &mut Fabric, me: usize, _par: usize) {
        let mut st = self.st.borrow_mut();
        for k in (0..self.n).filter(|&k| k != me) {
            for c in st.got[k].mail.drain(..) {
                f.par_import(c);
            }
        }
    }

    fn any_more(&self, _par: usize) -> bool {
        self.st.borrow().got.iter().any(|p| p.more)
    }

    fn next_instant(&self, _par: usize) -> Option<u64> {
        min_instant(self.st.borrow().got.iter().map(|p| p.next))
    }

    fn drive(&self, _par: usize) -> Drive {
        Drive::sum(self.st.borrow().got.iter().map(|p| p.drive))
    }

    fn set_front(&self, _k: usize, _par: usize, keys: Vec<u64>) {
        self.st.borrow_mut().mine.front = keys;
    }

    fn each_front(&self, _par: usize, t: u64, each: &mut dyn FnMut(&[u64])) {
        for p in &self.st.borrow().got {
            if p.next == t {
                each(&p.front);
            }
        }
    }

    fn each_list(&self, _par: usize, each: &mut dyn FnMut(&[u64])) {
        for p in &self.st.borrow().got {
            each(&p.list);
        }
    }
}

/// One logical process of a distributed run: this program's part of the
/// fabric and its transport to the others (module doc).
pub struct Distributed<T: Transport> {
    pub(super) fabric: Fabric,
    pub(super) transport: T,
    pub(super) owner: Vec<u16>,
    stats: ParallelStats,
    /// every process's events at the last round
    pub(super) events_all: u64,
    /// a process failed (a fatal model error, here or elsewhere) or the
    /// transport did
    pub(super) stopped: bool,
    pub(super) transport_error: Option<String>,
    /// a driver's messages (distributed_drive.rs)
    pub(super) book: super::distributed_drive::Book,
}

impl<T: Transport> Distributed<T> {
    /// Process `transport.rank()` of a run of `transport.size()`
    /// processes: `fabric` is built like the sequential one (same network,
    /// parameters and traffic in every process), not run yet; `owner` is
    /// the partition (`partition.rs`), the same in every process;
    /// `lazy_count` as in [`super::Parallel::with_lazy_count`].
    pub fn new(
        mut fabric: Fabric,
        owner: Vec<u16>,
        lazy_count: bool,
        transport: T,
    ) -> Result<Distributed<T>, String> {
        fabric.make_part(transport.rank(), transport.size(), &owner, lazy_count)?;
        Ok(Distributed {
            fabric,
            transport,
            owner,
            stats: ParallelStats {
                workers: 1,
                ..ParallelStats::default()
            },
            events_all: 0,
            stopped: false,
            transport_error: None,
            book: Default::default(),
        })
    }

    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    pub fn processes(&self) -> usize {
        self.transport.size()
    }

    pub fn now(&self) -> Time {
        self.fabric.now()
    }

    /// Events processed by all processes, as of the last round.
    pub fn events_processed(&self) -> u64 {
        self.events_all
    }

    /// This process's counters of the run (rounds, crossings from here,
    /// wall time waited here).
    pub fn stats(&self) -> ParallelStats {
        self.stats
    }

    /// Whether the run stopped early: a fatal model error in some process
    /// (process 0's merged fabric names it) or a transport failure
    /// ([`Distributed::transport_error`]).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    pub fn transport_error(&self) -> Option<&str> {
        self.transport_error.as_deref()
    }

    /// Process every event with time <= t in all processes; every process
    /// calls it with the same `t`.
    pub fn run_until(&mut self, t: Time) {
        if self.stopped {
            return;
        }
        self.run(Stop::at(t.0.min(super::fabric::MAX_TIME_PS)));
        if !self.stopped && t.0 > self.fabric.now {
            self.fabric.advance_to(t.0);
        }
    }

    /// Run every process until `stop` (the protocol of the threads'
    /// engine, over the transport); a failure here or elsewhere, or of
    /// the transport, stops the run for good.
    pub(super) fn run(&mut self, stop: Stop) -> Ran {
        let fifo = !self.fabric.local_order;
        let me = self.transport.rank();
        // (a driver's injections since the last run, parallel_fifo.rs)
        let injected = std::mem::take(&mut self.book.injected);
        self.fabric.par_begin(injected);
        let wire = Wire::new(&mut self.transport);
        let mut group = [(me, &mut self.fabric)];
        let ran = if fifo {
            super::parallel_fifo::run_group_fifo(&mut group, &wire, stop)
        } else {
            super::parallel::run_group(&mut group, &wire, stop)
        };
        let failed = ran.next.is_none();
        let st = wire.st.into_inner();
        self.events_all = st.got.iter().map(|p| p.events).sum();
        if let Some(e) = st.error {
            self.transport_error = Some(e);
            self.stopped = true;
        }
        if failed || self.fabric.fatal.is_some() {
            self.stopped = true;
        }
        self.stats.rounds += ran.rounds;
        self.stats.alone += ran.alone;
        self.stats.crossings += ran.sent;
        self.stats.wait_ns += ran.waited;
        if self.fabric.local_order {
            self.fabric.local_release();
        }
        ran
    }

    /// The obuf reports of [`Fabric::report`] as of now, each from the
    /// process that owns its port (as [`super::Parallel::obuf_reports`]):
    /// process 0 gets them, the others None. Every process calls it at the
    /// same point of the run (the windows of the observation outputs).
    pub fn obuf_reports(&mut self) -> Result<Option<Vec<crate::stats::ObufReport>>, String> {
        let me = self.transport.rank();
        let f = &self.fabric;
        let owned = |pi: usize| {
            f.ports[pi].peer != super::fabric::NONE
                && self.owner[f.ports[pi].node as usize] as usize == me
        };
        let mine: Vec<(u32, crate::stats::ObufReport)> = (0..f.ports.len())
            .filter(|&pi| owned(pi))
            .map(|pi| (pi as u32, f.obuf_report(pi)))
            .collect();
        let bytes =
            postcard::to_stdvec(&mine).map_err(|e| format!("encoding the link counters: {e}"))?;
        let Some(all) = self.transport.gather(bytes)? else {
            return Ok(None);
        };
        let mut by_port: Vec<Option<crate::stats::ObufReport>> = vec![None; f.ports.len()];
        for (k, b) in all.iter().enumerate() {
            let theirs: Vec<(u32, crate::stats::ObufReport)> = postcard::from_bytes(b)
                .map_err(|e| format!("decoding process {k}'s link counters: {e}"))?;
            for (pi, r) in theirs {
                let slot = by_port
                    .get_mut(pi as usize)
                    .ok_or_else(|| format!("process {k} reported port {pi}, past the network"))?;
                *slot = Some(r);
            }
        }
        (0..f.ports.len())
            .filter(|&pi| f.ports[pi].peer != super::fabric::NONE)
            .map(|pi| {
                by_port[pi]
                    .take()
                    .ok_or_else(|| format!("no process reported port {pi}"))
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Some)
    }

    /// End the run: process 0 gets the whole run ([`Finished`]); the
    /// others get None. `peak_memory_kb` is this process's peak memory,
    /// which the caller measures (the engine does no I/O).
    pub fn finish(mut self, peak_memory_kb: u64) -> Result<Option<Finished>, String> {
        let me = self.transport.rank();
        let out = self.fabric.part_out(me != 0);
        let bytes = postcard::to_stdvec(&Final {
            out,
            stats: self.stats,
            peak_memory_kb,
        })
        .map_err(|e| format!("encoding the process's results: {e}"))?;
        let Some(all) = self.transport.gather(bytes)? else {
            return Ok(None);
        };
        let mut outs = Vec::with_capacity(all.len());
        let mut peaks = Vec::with_capacity(all.len());
        let mut stats = ParallelStats {
            workers: all.len(),
            crossings: 0,
            wait_ns: 0,
            ..self.stats
        };
        for (k, b) in all.iter().enumerate() {
            let fin: Final = postcard::from_bytes(b)
                .map_err(|e| format!("decoding process {k}'s results: {e}"))?;
            stats.crossings += fin.stats.crossings;
            stats.wait_ns += fin.stats.wait_ns;
            peaks.push(fin.peak_memory_kb);
            outs.push(fin.out);
        }
        Ok(Some(Finished {
            fabric: merge(self.fabric, outs, &self.owner),
            stats,
            peak_memory_kb: peaks,
        }))
    }
}
