//! The fabric a co-simulation server drives: the sequential engine, or
//! the parallel one (`--fabric-threads N`, engine/parallel_drive.rs),
//! which answers every call as the sequential engine does.
//!
//! A parallel fabric is merged into one for its report (the first
//! `report` call, at the end of a run; `Parallel::into_fabric`); it is not
//! run after that.

use std::cell::{OnceCell, RefCell};

use crate::engine::{Fabric, FabricError, MsgId, OpKind, OpPoint, Parallel, RunOutcome};
use crate::params::Params;
use crate::stats::Report;
use crate::Time;

/// One engine or logical processes (module doc).
pub enum ServedFabric {
    One(Box<Fabric>),
    Many(Box<Many>),
}

/// A parallel fabric and, once merged for its report, the merged one.
pub struct Many {
    par: RefCell<Option<Parallel>>,
    merged: OnceCell<Fabric>,
    params: Params,
    lazy: bool,
    hcas: usize,
}

/// Why a call cannot be answered by a merged parallel fabric.
fn merged_error() -> FabricError {
    FabricError::BadMessage(
        "the parallel fabric was merged for its report and runs no further".into(),
    )
}

impl ServedFabric {
    /// The parallel fabric; `lazy` is whether the sequential engine would
    /// run its lazy credit timer (the processes run the always-ticking
    /// one in the FIFO order).
    pub fn parallel(par: Parallel, params: Params, lazy: bool, hcas: usize) -> ServedFabric {
        ServedFabric::Many(Box::new(Many {
            par: RefCell::new(Some(par)),
            merged: OnceCell::new(),
            params,
            lazy,
            hcas,
        }))
    }

    /// The logical processes, if parallel.
    pub fn processes(&self) -> Option<usize> {
        match self {
            ServedFabric::One(_) => None,
            ServedFabric::Many(m) => Some(m.with(|p| p.processes(), |_| 0)),
        }
    }

    pub fn now(&self) -> Time {
        match self {
            ServedFabric::One(f) => f.now(),
            ServedFabric::Many(m) => m.with(|p| p.now(), |f| f.now()),
        }
    }

    pub fn in_flight(&self) -> usize {
        match self {
            ServedFabric::One(f) => f.in_flight(),
            ServedFabric::Many(m) => m.with(|p| p.in_flight(), |f| f.in_flight()),
        }
    }

    pub fn events_processed(&self) -> u64 {
        match self {
            ServedFabric::One(f) => f.events_processed(),
            ServedFabric::Many(m) => m.with(|p| p.events_processed(), |f| f.events_processed()),
        }
    }

    pub fn error(&self) -> Option<FabricError> {
        match self {
            ServedFabric::One(f) => f.error().cloned(),
            ServedFabric::Many(m) => m.with(|p| p.error().cloned(), |f| f.error().cloned()),
        }
    }

    pub fn num_hcas(&self) -> usize {
        match self {
            ServedFabric::One(f) => f.num_hcas(),
            ServedFabric::Many(m) => m.hcas,
        }
    }

    pub fn params(&self) -> &Params {
        match self {
            ServedFabric::One(f) => f.params(),
            ServedFabric::Many(m) => &m.params,
        }
    }

    pub fn lazy_credit_timer_active(&self) -> bool {
        match self {
            ServedFabric::One(f) => f.lazy_credit_timer_active(),
            ServedFabric::Many(m) => m.lazy,
        }
    }

    pub fn switches_between(&self, src_hca: usize, dst_hca: usize) -> Result<usize, FabricError> {
        match self {
            ServedFabric::One(f) => f.switches_between(src_hca, dst_hca),
            ServedFabric::Many(m) => m.with(
                |p| p.switches_between(src_hca, dst_hca),
                |f| f.switches_between(src_hca, dst_hca),
            ),
        }
    }

    pub fn inject_order_free(&self) -> bool {
        match self {
            ServedFabric::One(f) => f.inject_order_free(),
            // (no host model, one send queue and no traffic of the HCAs'
            // own: what a parallel run takes)
            ServedFabric::Many(_) => true,
        }
    }

    pub fn prefetch_injection(&self, h: usize, dst: usize) {
        if let ServedFabric::One(f) = self {
            f.prefetch_injection(h, dst);
        }
    }

    pub fn set_pulse(&mut self, p: &'static std::sync::atomic::AtomicU64) {
        match self {
            ServedFabric::One(f) => f.set_pulse(p),
            ServedFabric::Many(m) => {
                if let Some(par) = m.par.get_mut() {
                    par.set_pulse(p);
                }
            }
        }
    }

    pub fn inject(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
    ) -> Result<MsgId, FabricError> {
        match self {
            ServedFabric::One(f) => f.inject(at, src_hca, dst_hca, bytes),
            ServedFabric::Many(m) => m.par_mut()?.inject(at, src_hca, dst_hca, bytes),
        }
    }

    pub fn inject_op(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
        kind: OpKind,
    ) -> Result<MsgId, FabricError> {
        match self {
            ServedFabric::One(f) => f.inject_op(at, src_hca, dst_hca, bytes, kind),
            ServedFabric::Many(_) => Err(FabricError::BadMessage(
                "one-sided operations are not supported on a parallel fabric yet \
                 (leave out --fabric-threads)"
                    .into(),
            )),
        }
    }

    pub fn take_op_events(&mut self) -> Vec<(MsgId, OpPoint, Time)> {
        match self {
            ServedFabric::One(f) => f.take_op_events(),
            ServedFabric::Many(m) => m.par_mut().map_or(Vec::new(), |p| p.take_op_events()),
        }
    }

    pub fn take_completions(&mut self) -> Vec<(MsgId, Time)> {
        match self {
            ServedFabric::One(f) => f.take_completions(),
            ServedFabric::Many(m) => m.par_mut().map_or(Vec::new(), |p| p.take_completions()),
        }
    }

    pub fn in_flight_ids(&self) -> Vec<MsgId> {
        match self {
            ServedFabric::One(f) => f.in_flight_ids(),
            ServedFabric::Many(m) => m.with(|p| p.in_flight_ids(), |f| f.in_flight_ids()),
        }
    }

    pub fn run_until(&mut self, t: Time) {
        match self {
            ServedFabric::One(f) => f.run_until(t),
            ServedFabric::Many(m) => {
                if let Ok(p) = m.par_mut() {
                    p.run_until(t);
                }
            }
        }
    }

    pub fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome {
        match self {
            ServedFabric::One(f) => f.run_until_completion_or(limit),
            ServedFabric::Many(m) => match m.par_mut() {
                Ok(p) => p.run_until_completion_or(limit),
                Err(_) => RunOutcome::Fatal,
            },
        }
    }

    /// As [`Fabric::completion_lower_bound`] (for a parallel fabric in
    /// the FIFO order possibly lower: its processes run the always-ticking
    /// credit timer, whose next tick may come before the lazy timer's
    /// next event; still a lower bound).
    pub fn completion_lower_bound(&mut self) -> Option<Time> {
        match self {
            ServedFabric::One(f) => f.completion_lower_bound(),
            ServedFabric::Many(m) => m.par_mut().ok()?.completion_lower_bound(),
        }
    }

    pub fn report(&self) -> Report {
        self.report_with(false)
    }

    pub fn report_with(&self, messages: bool) -> Report {
        match self {
            ServedFabric::One(f) => f.report_with(messages),
            ServedFabric::Many(m) => m.merged().report_with(messages),
        }
    }

    /// The sequential engine, for what only it does (observers); None
    /// for a parallel fabric.
    pub fn as_one_mut(&mut self) -> Option<&mut Fabric> {
        match self {
            ServedFabric::One(f) => Some(f),
            ServedFabric::Many(_) => None,
        }
    }
}

impl From<Fabric> for ServedFabric {
    fn from(f: Fabric) -> ServedFabric {
        ServedFabric::One(Box::new(f))
    }
}

impl Many {
    /// `run(parallel)` before the merge, `merged(fabric)` after it.
    fn with<R>(&self, run: impl FnOnce(&Parallel) -> R, merged: impl FnOnce(&Fabric) -> R) -> R {
        if let Some(f) = self.merged.get() {
            return merged(f);
        }
        run(self
            .par
            .borrow()
            .as_ref()
            .expect("a parallel fabric before its merge"))
    }

    fn par_mut(&mut self) -> Result<&mut Parallel, FabricError> {
        self.par.get_mut().as_mut().ok_or_else(merged_error)
    }

    fn merged(&self) -> &Fabric {
        self.merged.get_or_init(|| {
            self.par
                .borrow_mut()
                .take()
                .expect("a parallel fabric before its merge")
                .into_fabric()
        })
    }
}
