//! Building the served fabric from command-line style settings: topology,
//! parameter preset and overrides, rank -> HCA mapping. Shared by
//! `ibnet serve` and by the scheduler's in-process backend.

use crate::engine::Fabric;
use crate::params::Params;
use crate::topology::{self, Topology};
use ipc_proto::Time;
use std::path::PathBuf;

/// Fabric settings of a co-simulation (the same options in `ibnet serve`
/// and `loggopsim --network inproc`).
#[derive(clap::Args, Clone, Debug)]
pub struct SetupArgs {
    /// Topology: a file (TOML, IBDM .topo) or a built-in name (H8_S1, H8_S2,
    /// H8_S4, H8_S6, M9, fattree:P, chain:N).
    #[arg(long, value_name = "TOPOLOGY", default_value = "H8_S6")]
    pub topology: String,
    /// Fabric parameter preset (thesis-ddr is the co-simulation default,
    /// docs/model/fabric.md section 13; qdr; hcyang99; thesis-ch5 and thesis-ch4, the
    /// thesis's chapter-5 and chapter-4 model generations, docs/thesis.md).
    #[arg(long, value_name = "NAME", default_value = "thesis-ddr")]
    pub preset: String,
    /// Override one fabric parameter, e.g. --set max_vl=1 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Rank -> HCA mapping file (`rank hca_name` per line). Default: rank r
    /// runs on the r-th HCA of the topology (or the topology's own mapping).
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
}

impl Default for SetupArgs {
    fn default() -> Self {
        SetupArgs {
            topology: "H8_S6".into(),
            preset: "thesis-ddr".into(),
            set: Vec::new(),
            map: None,
        }
    }
}

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
        let topology =
            topology::open(&a.topology).map_err(|e| topology::open_error(&a.topology, &e))?;
        let mut params =
            Params::preset(&a.preset).map_err(|e| format!("--preset {}: {e}", a.preset))?;
        for kv in &a.set {
            params = params
                .apply_override(kv)
                .map_err(|e| format!("--set {kv}: {e}"))?;
        }
        let hcas = topology.hcas();
        // a large network: run again with the heap on huge pages (the
        // inputs read so far are valid; no IPC object exists yet;
        // hugepages.rs)
        crate::hugepages::use_for(hcas.len(), "ibnet serve");
        let rank_nodes: Vec<usize> = match &a.map {
            Some(path) => topology::load_rank_file(path, &topology).map_err(|e| e.to_string())?,
            None => (0..topology.num_ranks())
                .filter_map(|r| topology.hca_of_rank(r))
                .collect(),
        };
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
