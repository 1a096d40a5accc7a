//! Building the served fabric from command-line style settings: topology,
//! parameter preset and overrides, rank -> HCA mapping. Shared by
//! `ibnet serve` and by the scheduler's in-process backend.

use crate::engine::{Fabric, Parallel, MAX_THREADS};
use crate::options;
use crate::options::FabricThreads;
use crate::params::Params;
use crate::topology::Topology;
use ipc_proto::Time;

use super::ServedFabric;

/// The fabric's options (declared once, in `crate::options`); the name
/// the server's users know.
pub use crate::options::FabricOptions as SetupArgs;

/// A ready fabric and its rank mapping.
pub struct FabricSetup {
    pub topology: Topology,
    pub params: Params,
    pub fabric: Fabric,
    /// rank -> HCA number (index among the HCAs in node order).
    pub rank_hcas: Vec<usize>,
}

impl FabricSetup {
    /// Load the topology, apply preset and overrides, build the fabric and
    /// resolve the rank mapping. Errors name the offending input.
    pub fn build(a: &SetupArgs) -> Result<FabricSetup, String> {
        let topology = options::open_topology(&a.topology)?;
        let params = options::params(&a.preset, &a.set)?;
        let hcas = topology.hcas();
        // a large network: run again with the heap on huge pages (the
        // inputs read so far are valid; no IPC object exists yet;
        // hugepages.rs)
        crate::hugepages::use_for(hcas.len(), "ibnet serve");
        let rank_nodes = options::rank_nodes(a.map.as_deref(), &topology)?;
        let rank_hcas = rank_nodes
            .iter()
            .map(|node| {
                hcas.iter()
                    .position(|h| h == node)
                    .expect("rank mapped to an HCA node")
            })
            .collect();
        let fabric =
            Fabric::new(&topology, &params).map_err(|e| format!("fabric parameters: {e}"))?;
        Ok(FabricSetup {
            topology,
            params,
            fabric,
            rank_hcas,
        })
    }
}

impl FabricSetup {
    /// The fabric to serve: this one, or with `--fabric-threads N` N
    /// logical processes built like it (engine/parallel_drive.rs), and the
    /// lines that describe their partition.
    pub fn served(self, t: &FabricThreads) -> Result<(ServedFabric, Vec<String>), String> {
        let n = t.fabric_threads;
        if n == 0 || n > MAX_THREADS {
            return Err(format!("--fabric-threads {n}: expected 1 to {MAX_THREADS}"));
        }
        if n == 1 {
            if t.fabric_partition.is_some() {
                return Err("--fabric-partition needs --fabric-threads 2 or more".into());
            }
            return Ok((self.fabric.into(), Vec::new()));
        }
        let partition = match &t.fabric_partition {
            None => self.fabric.partition(n),
            Some(f) => {
                let text = crate::input::read_text(f)
                    .map_err(|e| format!("--fabric-partition {}", e.describe(f)))?;
                self.fabric
                    .partition_from(&text, &f.display().to_string(), n)
                    .map_err(|e| format!("--fabric-partition: {e}"))?
            }
        };
        // in the reference's FIFO order each process runs the
        // always-ticking credit timer (as `ibnet run --threads`,
        // engine/parallel_fifo.rs)
        let fifo = self.params.event_order != "local";
        let lazy = self.fabric.lazy_credit_timer_active();
        let hcas = self.fabric.num_hcas();
        drop(self.fabric);
        let mut pp = self.params.clone();
        if fifo {
            pp.lazy_credit_timer = false;
        }
        let mut parts = Vec::with_capacity(n);
        for k in 0..n {
            let mut f = Fabric::new_process(&self.topology, &pp, &partition.owner, k)
                .map_err(|e| format!("fabric parameters: {e}"))?;
            f.shed_others(&partition.owner, k);
            parts.push(f);
        }
        let par = Parallel::with_lazy_count(parts, partition.owner.clone(), fifo && lazy)
            .map_err(|e| format!("--fabric-threads {n}: {e}"))?;
        let mut lines = vec![format!(
            "the fabric as {n} logical processes on {} threads (at most one per core), nodes {}:",
            par.workers(),
            match &t.fabric_partition {
                None => "by switch groups".to_string(),
                Some(f) => format!("as {} gives them", f.display()),
            }
        )];
        lines.extend(partition.describe().into_iter().map(|l| format!("  {l}")));
        Ok((ServedFabric::parallel(par, self.params, lazy, hcas), lines))
    }
}

/// Parse a query quantum such as `1ns`, `100ps`, `10ps`, `1ps` (a bare
/// number means picoseconds). Must be at least 1 ps.
pub fn parse_quantum(s: &str) -> Result<Time, String> {
    let t = simtime::parse_time_arg(s, simtime::TimeUnit::Ps)?;
    if t.0 == 0 {
        return Err(format!("`{s}`: the quantum must be at least 1 ps"));
    }
    Ok(t)
}
