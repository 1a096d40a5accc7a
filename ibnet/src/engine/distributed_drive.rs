//! A distributed run driven as the sequential engine is (engine/driven.rs):
//! the closed loops of `ibnet run --distributed`. Every process runs the
//! same driver and must get the same answers, so what one process alone
//! knows is told to every other after each run to the next completion.
//!
//! - **Injections.** Every process takes every injection in the same
//!   order: the process that owns the source HCA creates the message (as
//!   `Parallel::inject` does, with the same insertion counter in the FIFO
//!   order, parallel_drive.rs); the others check it as
//!   [`Fabric::inject`] would (`check_inject`), so an injection that is
//!   refused is refused everywhere, with the same error.
//! - **Numbers.** The driver's number of a message is its injection
//!   order, which every process counts. A completion happens where the
//!   message's destination is, and names the message by its number at
//!   its source's process; each process therefore tells the others which
//!   of its numbers its injections since the last exchange took.
//! - **After each run to the next completion** every process tells every
//!   other its completions (with the key of the event that made each, so
//!   that all are in the sequential run's order), its clock and a fatal
//!   error it had. The answer is then computed alike in every process, as
//!   `Parallel::run_until_completion_or` computes it from its parts.

use super::app::MsgId;
use super::distributed::{Distributed, Transport};
use super::driven::Driven;
use super::fabric::FabricError;
use super::parallel::Stop;
use super::parallel_drive::{completion_outcome, sends_only, Ending};
use super::rdma::OpKind;
use super::run::RunOutcome;
use crate::Time;

/// The driver's messages, the same in every process but `global`'s own
/// row and `maps`.
#[derive(Default)]
pub(crate) struct Book {
    /// per process: its message number -> the driver's number
    global: Vec<Vec<u32>>,
    /// this process's (message number, driver's number) pairs not told yet
    maps: Vec<(u32, u32)>,
    /// injections since the last run
    pub(super) injected: u64,
    /// the driver's messages so far
    count: u32,
    /// of those, not completed
    in_flight: usize,
    /// completed, by the driver's number
    done: Vec<bool>,
    /// the fatal error another process had
    remote_error: Option<FabricError>,
}

/// What a process tells every other after a run to the next completion.
#[derive(serde::Serialize, serde::Deserialize)]
struct Told {
    maps: Vec<(u32, u32)>,
    /// (key of the event that completed it, message at its home process,
    /// time)
    done: Vec<((u64, u32, u64), u64, u64)>,
    now: u64,
    error: Option<FabricError>,
}

impl<T: Transport> Distributed<T> {
    /// Tell every other process what completed here since the last time
    /// (completions of plain runs in between included, so that every
    /// process counts them) and the numbers of this process's injections;
    /// hear theirs. Returns every
    /// completion (the driver's number, time) in the sequential run's
    /// order and the latest clock, or None if the transport failed.
    fn tell(&mut self) -> Option<(Vec<(MsgId, Time)>, u64)> {
        let me = self.transport.rank();
        let n = self.transport.size();
        let f = &mut self.fabric;
        let part = f.part.as_deref_mut().expect("a process of a parallel run");
        let keys: Vec<(u64, u32, u64)> = part.done_keys.drain(..).collect();
        let done: Vec<_> = f
            .completions
            .drain(..)
            .zip(keys)
            .map(|((id, t), key)| (key, part.canon[id as usize], t.0))
            .collect();
        let mine = Told {
            maps: std::mem::take(&mut self.book.maps),
            done,
            now: f.now,
            error: f.fatal.clone(),
        };
        let bytes = match postcard::to_stdvec(&mine) {
            Ok(b) => b,
            Err(e) => return self.broken(format!("encoding the completions: {e}")),
        };
        let out = (0..n)
            .map(|k| if k == me { Vec::new() } else { bytes.clone() })
            .collect();
        let got = match self.transport.exchange(out) {
            Ok(g) => g,
            Err(e) => return self.broken(e),
        };
        let mut told = Vec::with_capacity(n);
        for (k, b) in got.iter().enumerate() {
            if k == me {
                told.push(None);
                continue;
            }
            match postcard::from_bytes::<Told>(b) {
                Ok(t) => told.push(Some(t)),
                Err(e) => return self.broken(format!("decoding process {k}'s completions: {e}")),
            }
        }
        told[me] = Some(mine);
        let book = &mut self.book;
        book.global.resize(n, Vec::new());
        let mut now = 0;
        let mut all = Vec::new();
        // (every process's numbers first: a completion here may be of a
        // message another process injected since the last exchange)
        for (k, t) in told.into_iter().enumerate() {
            let t = t.expect("every process told");
            for (id, g) in t.maps {
                let row = &mut book.global[k];
                if row.len() <= id as usize {
                    row.resize(id as usize + 1, u32::MAX);
                }
                row[id as usize] = g;
            }
            now = now.max(t.now);
            if k != me && book.remote_error.is_none() {
                book.remote_error = t.error;
            }
            all.extend(t.done);
        }
        // (one event's completions are in one process, in its order)
        all.sort_by_key(|&(key, _, _)| key);
        let mut out = Vec::with_capacity(all.len());
        for (_, canon, t) in all {
            let g = book
                .global
                .get((canon >> 32) as usize)
                .and_then(|row| row.get(canon as u32 as usize))
                .copied()
                .filter(|&g| (g as usize) < book.done.len());
            let Some(g) = g else {
                return self.broken(format!(
                    "internal error of the distributed run: a completion of message {canon:#x}, \
                     which no process injected"
                ));
            };
            book.done[g as usize] = true;
            book.in_flight -= 1;
            out.push((g as MsgId, Time(t)));
        }
        Some((out, now))
    }

    /// The transport failed: the run stops here.
    fn broken<R>(&mut self, e: String) -> Option<R> {
        self.transport_error = Some(e);
        self.stopped = true;
        None
    }
}

impl<T: Transport> Ending for Distributed<T> {
    fn align_now(&mut self, t: u64) {
        if t > self.fabric.now {
            self.fabric.advance_to(t);
        }
    }
    fn failed(&self) -> bool {
        self.error().is_some()
    }
    fn saw_deadlock(&mut self) {
        self.fabric.deadlock_seen = true;
    }
}

impl<T: Transport> Driven for Distributed<T> {
    fn now(&self) -> Time {
        self.fabric.now()
    }

    /// As of the last round.
    fn events_processed(&self) -> u64 {
        self.events_all
    }

    fn in_flight(&self) -> usize {
        self.book.in_flight
    }

    fn in_flight_ids(&self) -> Vec<MsgId> {
        let done = &self.book.done;
        (0..done.len() as MsgId)
            .filter(|&g| !done[g as usize])
            .collect()
    }

    /// This process's, or another's as it told it.
    fn error(&self) -> Option<&FabricError> {
        self.fabric.error().or(self.book.remote_error.as_ref())
    }

    fn hca_of_lid(&self, lid: u16) -> Option<usize> {
        self.fabric.hca_of_lid(lid)
    }

    fn inject(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
    ) -> Result<MsgId, FabricError> {
        let me = self.transport.rank();
        let f = &mut self.fabric;
        let n = f.hcas.len();
        if src_hca >= n {
            return Err(FabricError::NoSuchHca(src_hca, n));
        }
        if self.book.count == 0 && f.has_app_traffic() {
            return Err(FabricError::BadMessage(
                "a parallel run takes a driver's injections only when no HCA has traffic of its own"
                    .into(),
            ));
        }
        let g = self.book.count;
        if self.owner[f.hcas[src_hca].node as usize] as usize == me {
            if let Some(c) = f
                .part
                .as_ref()
                .and_then(|p| p.fifo.as_ref())
                .map(|fp| fp.injection_counter(self.book.injected))
            {
                f.counter = c;
            }
            let id = f.inject(at, src_hca, dst_hca, bytes)? as u32;
            f.part.as_deref_mut().unwrap().injected_msg(id, g);
            self.book.maps.push((id, g));
        } else {
            f.check_inject(at, src_hca, dst_hca, bytes)?;
        }
        self.book.count += 1;
        self.book.injected += 1;
        self.book.in_flight += 1;
        self.book.done.push(false);
        Ok(g as MsgId)
    }

    /// Sends only, as on threads.
    fn inject_op(
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

    /// As `Parallel::run_until_completion_or`, with the same outcomes in
    /// every process.
    fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome {
        if self.stopped || self.error().is_some() {
            return RunOutcome::Fatal;
        }
        if self.book.in_flight == 0 {
            return RunOutcome::Idle;
        }
        let stop = Stop {
            limit: limit.0,
            completion: true,
            quiet: self.fabric.quiet_terms(),
        };
        let ran = self.run(stop);
        if self.transport_error.is_some() {
            return RunOutcome::Fatal;
        }
        let Some((done, last)) = self.tell() else {
            return RunOutcome::Fatal;
        };
        completion_outcome(self, &ran, limit.0, last, |_| done)
    }
}
