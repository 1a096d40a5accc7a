//! The parallel engine driven as the co-simulation drives the sequential
//! one (`ibnet serve --threads N`, `loggopsim --network inproc|onepiece`
//! with `--fabric-threads N`): injections between runs, runs to the next
//! completion with the deadlock rule, and the completions in the
//! sequential run's order and numbering (docs/scaling.md 2.9).
//!
//! - **Injections.** A message goes to the process that owns its source
//!   HCA. The sequential engine numbers messages in creation order; a
//!   driven parallel run has only injected messages, so the driver's
//!   number is the injection order. In the FIFO order an injection
//!   between runs takes the insertion counter the sequential engine would
//!   give it: past every event scheduled so far and before every event
//!   scheduled later. Every process counts the run's events so far
//!   (`FifoPart::base`), so the j-th injection of a pause gets the
//!   counter of global index `base + j / 1024`, child `j mod 1024`, and
//!   every process skips those indices at the next run. An injection at
//!   the current instant waits in its process's now-queue, and the next
//!   run takes the instant up again at the next depth (`first_depth`).
//! - **To the next completion.** Each round also carries every process's
//!   words for the stopping rule ([`Drive`]): whether a message completed
//!   there, its foreground events pending, its last foreground event and
//!   its sink FIFOs holding flits. Their combination is what the
//!   sequential engine sees at the end of an instant, and its bound
//!   cannot change within an instant once it began (`Stop::bound`), so
//!   the processes decide each instant together, as the sequential engine
//!   decides each event.
//! - **Completions** are ordered by the key (time, depth, seq) of the
//!   event that completed them: the sequential run's processing order
//!   within an instant in either order (a batch runs in key order, and
//!   the FIFO order's global index follows the key).

use super::app::MsgId;
use super::fabric::{Fabric, FabricError};
use super::parallel::{Parallel, Ran, Stop, NO_EVENT};
use super::rdma::{OpKind, OpPoint};
use super::run::RunOutcome;
use crate::Time;

impl Parallel {
    /// Inject a message as [`Fabric::inject`] does: the number the
    /// sequential engine would give it.
    pub fn inject(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
    ) -> Result<MsgId, FabricError> {
        let n = self.parts[0].hcas.len();
        if src_hca >= n {
            return Err(FabricError::NoSuchHca(src_hca, n));
        }
        if self.home_of.is_empty() && self.parts.iter().any(|f| f.has_app_traffic()) {
            return Err(FabricError::BadMessage(
                "a parallel run takes a driver's injections only when no HCA has traffic of its own"
                    .into(),
            ));
        }
        let k = self.owner[self.parts[0].hcas[src_hca].node as usize] as usize;
        let j = self.injected;
        let f = &mut self.parts[k];
        if let Some(c) = f
            .part
            .as_ref()
            .unwrap()
            .fifo
            .as_ref()
            .map(|fp| fp.injection_counter(j))
        {
            f.counter = c;
        }
        let id = f.inject(at, src_hca, dst_hca, bytes)?;
        let g = self.home_of.len() as u32;
        f.part.as_deref_mut().unwrap().injected_msg(id as u32, g);
        let global = &mut self.global[k];
        if global.len() <= id as usize {
            global.resize(id as usize + 1, u32::MAX);
        }
        global[id as usize] = g;
        self.home_of.push((k as u16, id as u32));
        self.injected += 1;
        Ok(g as MsgId)
    }

    /// As [`Fabric::inject_op`], for sends only: a put or get has its
    /// reply generated at the target HCA, which the parallel engine does
    /// not number yet.
    pub fn inject_op(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
        kind: OpKind,
    ) -> Result<MsgId, FabricError> {
        sends_only(kind)?;
        self.inject(at, src_hca, dst_hca, bytes)
    }

    /// As [`Fabric::completion_lower_bound`], over every process.
    pub fn completion_lower_bound(&mut self) -> Option<Time> {
        if self.in_flight() == 0 || self.error().is_some() {
            return None;
        }
        let next = self.parts.iter_mut().filter_map(|f| f.peek_time()).min()?;
        let tm = &self.parts[0].tm;
        let dmin = tm.drain.get(1).copied().unwrap_or(0).min(super::fabric::NS);
        let mut lb = next + dmin;
        for f in &self.parts {
            for h in &f.hcas {
                if h.sink.drain_pending {
                    lb = lb.min(h.sink.drain_at);
                }
            }
        }
        Some(Time(lb.max(self.now().0)))
    }

    /// Messages injected and not completed.
    pub fn in_flight(&self) -> usize {
        self.parts.iter().map(|f| f.in_flight).sum::<usize>()
            - self.parts.len() * super::parallel::IN_FLIGHT_BIAS
    }

    /// As [`Fabric::run_until_completion_or`], with the same outcomes.
    pub fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome {
        if self.error().is_some() {
            return RunOutcome::Fatal;
        }
        if self.in_flight() == 0 {
            return RunOutcome::Idle;
        }
        let marks: Vec<usize> = self.parts.iter().map(|f| f.completions.len()).collect();
        let stop = Stop {
            limit: limit.0,
            completion: true,
            quiet: self.parts[0].quiet_terms(),
        };
        let ran = self.run(stop);
        let last = self.parts.iter().map(|f| f.now).max().unwrap_or(0);
        completion_outcome(self, &ran, limit.0, last, |p| p.drain_completions(&marks))
    }

    /// The op points since the last call, in the sequential run's order
    /// (as [`Fabric::take_op_events`], which also starts the log).
    pub fn take_op_events(&mut self) -> Vec<(MsgId, OpPoint, Time)> {
        let mut all = Vec::new();
        for f in self.parts.iter_mut() {
            f.rdma.log = true;
            let part = f.part.as_deref_mut().unwrap();
            let keys = std::mem::take(&mut part.point_keys);
            for ((id, point, t), key) in std::mem::take(&mut f.rdma.events).into_iter().zip(keys) {
                let g = driver_number(&self.global, part.canon[id as usize]);
                all.push((key, g, point, t));
            }
        }
        all.sort_by_key(|x| x.0);
        all.into_iter()
            .map(|(_, g, p, t)| (g as MsgId, p, t))
            .collect()
    }

    /// The driver's messages not completed, by number.
    pub fn in_flight_ids(&self) -> Vec<MsgId> {
        let mut done = vec![false; self.home_of.len()];
        for f in &self.parts {
            let part = f.part.as_deref().unwrap();
            for (id, m) in f.msgs.iter().enumerate() {
                if m.done.is_some() {
                    done[driver_number(&self.global, part.canon[id]) as usize] = true;
                }
            }
        }
        (0..done.len() as MsgId)
            .filter(|&g| !done[g as usize])
            .collect()
    }

    /// Completions since the last call, in the sequential run's order.
    pub fn take_completions(&mut self) -> Vec<(MsgId, Time)> {
        let marks = vec![0; self.parts.len()];
        self.drain_completions(&marks)
    }

    /// The completions of every process past `marks`, in the sequential
    /// run's order, with the driver's numbers.
    fn drain_completions(&mut self, marks: &[usize]) -> Vec<(MsgId, Time)> {
        let mut all = Vec::new();
        for (k, f) in self.parts.iter_mut().enumerate() {
            let part = f.part.as_deref_mut().unwrap();
            let keys: Vec<(u64, u32, u64)> = part.done_keys.drain(marks[k]..).collect();
            for ((id, t), key) in f.completions.drain(marks[k]..).zip(keys) {
                let g = driver_number(&self.global, part.canon[id as usize]);
                all.push((key, g, t));
            }
        }
        // (one event's completions stay in the order it made them)
        all.sort_by_key(|&(key, _, _)| key);
        all.into_iter().map(|(_, g, t)| (g as MsgId, t)).collect()
    }
}

/// Refuse what the parallel engine cannot run yet: one-sided operations.
pub(super) fn sends_only(kind: OpKind) -> Result<(), FabricError> {
    if kind == OpKind::Send {
        Ok(())
    } else {
        Err(FabricError::BadMessage(
            "one-sided operations (put, get) do not run on several logical processes".into(),
        ))
    }
}

/// What the answer of a run to the next completion needs of a parallel
/// run, on threads or in several programs.
pub(super) trait Ending {
    /// Every process's clock at `t` (the instant the run ended at);
    /// those without an event there are behind it.
    fn align_now(&mut self, t: u64);
    /// A fatal error in some process.
    fn failed(&self) -> bool;
    /// The deadlock rule answered Deadlock (for the report).
    fn saw_deadlock(&mut self);
}

/// The answer of a run to the next completion that ran `ran` under
/// `limit`, as the sequential engine gives it: `last` is the latest clock
/// of the processes, `done` the completions since the run began, with
/// the driver's numbers, in order.
pub(super) fn completion_outcome<E: Ending>(
    e: &mut E,
    ran: &Ran,
    limit: u64,
    last: u64,
    done: impl FnOnce(&mut E) -> Vec<(MsgId, Time)>,
) -> RunOutcome {
    if ran.drive.found {
        let ft = ran.last.expect("a completion at a processed instant");
        e.align_now(ft);
        let ids = done(e)
            .into_iter()
            .filter(|(_, t)| t.0 == ft)
            .map(|(id, _)| id)
            .collect();
        return RunOutcome::Completed(Time(ft), ids);
    }
    if e.failed() {
        // (the failed process's clock is at the error's instant)
        e.align_now(last);
        return RunOutcome::Fatal;
    }
    match ran.next {
        // (a run that had to stop: a process failed)
        None => RunOutcome::Fatal,
        // nothing at all is left, or something is due by the limit but
        // not by the bound: beyond the quiet window with no foreground
        // event pending
        Some(t) if t == NO_EVENT || t <= limit => {
            e.saw_deadlock();
            e.align_now(last);
            RunOutcome::Deadlock
        }
        Some(_) => {
            e.align_now(limit.max(last));
            if e.failed() {
                return RunOutcome::Fatal;
            }
            RunOutcome::Limit
        }
    }
}

impl Ending for Parallel {
    fn align_now(&mut self, t: u64) {
        for f in &mut self.parts {
            if t > f.now {
                f.advance_to(t);
            }
        }
    }
    fn failed(&self) -> bool {
        self.error().is_some()
    }
    fn saw_deadlock(&mut self) {
        self.parts[0].deadlock_seen = true;
    }
}

/// The driver's number of the message `canon` (home process << 32 |
/// number there), from `global` (per process: the driver's number of each
/// of its messages); a copy in another process has its home's number.
fn driver_number(global: &[Vec<u32>], canon: u64) -> u32 {
    global[(canon >> 32) as usize][canon as u32 as usize]
}

impl Fabric {
    /// Whether some HCA has traffic of its own (not only a driver's).
    pub(super) fn has_app_traffic(&self) -> bool {
        self.hcas
            .iter()
            .any(|h| !matches!(h.app.mode, None | Some(super::app::TrafficMode::Silent)))
    }

    /// A process's state at the start of a run: its op points, and in the
    /// FIFO order the global indices the driver's `injected` injections
    /// took.
    pub(super) fn par_begin(&mut self, injected: u64) {
        let points = self.rdma.points;
        let part = self.part.as_deref_mut().unwrap();
        part.points0 = points;
        if let Some(fp) = part.fifo.as_mut() {
            fp.skip_injections(injected);
        }
    }
}
