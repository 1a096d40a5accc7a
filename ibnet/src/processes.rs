//! The logical processes of a standalone run (`ibnet run --threads N` and
//! `--distributed`, the Python package's `fabric_run(threads=N)`): each
//! process's fabric built as the sequential run's, with its traffic, and
//! without the other processes' state (docs/scaling.md 2.6, 4.1).

use crate::engine::{Fabric, Parallel, Partition};
use crate::params::Params;
use crate::topology::Topology;
use crate::traffic::{apply_app_traffic, TrafficSpec};

/// How to build the processes of one run.
pub struct Processes<'a> {
    topo: &'a Topology,
    specs: &'a [TrafficSpec],
    /// the processes' parameters (in the FIFO order the always-ticking
    /// credit timer)
    params: Params,
    pub partition: Partition,
    /// count the events as the sequential engine's lazy credit timer would
    pub lazy_count: bool,
}

impl<'a> Processes<'a> {
    /// The processes of a run of `topo` with `params` and the traffic
    /// `specs` (open-loop patterns are set up in every process; a closed
    /// loop is driven from outside), split as `partition` says;
    /// `lazy_active` is whether the sequential engine would run its lazy
    /// credit timer.
    pub fn new(
        topo: &'a Topology,
        params: &Params,
        specs: &'a [TrafficSpec],
        partition: Partition,
        lazy_active: bool,
    ) -> Processes<'a> {
        // In the reference's FIFO order every process runs the
        // always-ticking credit timer, and the run counts its events as
        // the lazy timer would
        // (engine/parallel_fifo.rs).
        let fifo = params.event_order != "local";
        let mut params = params.clone();
        if fifo {
            params.lazy_credit_timer = false;
        }
        Processes {
            topo,
            specs,
            params,
            partition,
            lazy_count: fifo && lazy_active,
        }
    }

    /// Process `k`'s fabric, not run yet.
    pub fn build(&self, k: usize) -> Result<Fabric, String> {
        let owner = &self.partition.owner;
        let mut f =
            Fabric::new_process(self.topo, &self.params, owner, k).map_err(|e| e.to_string())?;
        for s in self.specs.iter().filter(|s| !s.is_closed_loop()) {
            apply_app_traffic(&mut f, self.topo, s)?;
        }
        f.shed_others(owner, k);
        // (an open-loop run routes a message through its own switches
        // only; a closed loop's injections check the whole route)
        if !self.specs.iter().any(TrafficSpec::is_closed_loop) {
            f.shed_other_tables(owner, k);
        }
        Ok(f)
    }

    /// The partition, once the processes are built.
    pub fn into_partition(self) -> Partition {
        self.partition
    }

    /// Every process, on threads.
    pub fn parallel(&self) -> Result<Parallel, String> {
        let n = self.partition.sizes.len();
        let mut parts = Vec::with_capacity(n);
        for k in 0..n {
            parts.push(self.build(k)?);
        }
        Parallel::with_lazy_count(parts, self.partition.owner.clone(), self.lazy_count)
    }
}
