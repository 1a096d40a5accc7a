//! Building the served fabric from command-line style settings: topology,
//! parameter preset and overrides, rank -> HCA mapping. Shared by
//! `ibnet serve` and by the scheduler's in-process backend.

use crate::engine::Fabric;
use crate::options;
use crate::params::Params;
use crate::topology::Topology;
use ipc_proto::Time;

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

/// Parse a query quantum such as `1ns`, `100ps`, `10ps`, `1ps` (a bare
/// number means picoseconds). Must be at least 1 ps.
pub fn parse_quantum(s: &str) -> Result<Time, String> {
    let t = simtime::parse_time_arg(s, simtime::TimeUnit::Ps)?;
    if t.0 == 0 {
        return Err(format!("`{s}`: the quantum must be at least 1 ps"));
    }
    Ok(t)
}
