//! The fabric's options as a co-simulation gives them (`ibnet serve`,
//! `loggopsim --network inproc|onepiece|flow|penalty|lop`, and the
//! supervisor's checks): topology, parameter preset, `--set` overrides and
//! the rank -> HCA map, declared once ([`FabricOptions`]) and turned into a
//! topology, [`Params`] and the ranks' HCA nodes once ([`resolve`], or its
//! steps), so that every tool reads them alike and names a bad one alike
//! (`--preset NAME: ...`, `--set KEY=VALUE: ...`, the topology loader's
//! and the map reader's own messages).
//!
//! `ibnet run` and `ibnet export` take more (forwarding tables, a
//! parameter file between preset and overrides) and a topology without
//! default, and `scripts/cosim` gives `--topology` the short `-t`; they
//! share the steps ([`open_topology`], [`preset_params`], [`apply_sets`],
//! [`params`]) but not the declaration.

use crate::params::Params;
use crate::topology::{self, Topology};
use std::path::{Path, PathBuf};

/// Fabric settings of a co-simulation (the same options in `ibnet serve`
/// and `loggopsim --network inproc`).
#[derive(clap::Args, Clone, Debug)]
pub struct FabricOptions {
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

impl Default for FabricOptions {
    fn default() -> Self {
        FabricOptions {
            topology: "H8_S6".into(),
            preset: "thesis-ddr".into(),
            set: Vec::new(),
            map: None,
        }
    }
}

/// The options turned into what the fabric is built from.
#[derive(Debug)]
pub struct Resolved {
    pub topology: Topology,
    pub params: Params,
    /// rank -> HCA node (index into `topology.nodes`).
    pub rank_nodes: Vec<usize>,
}

/// The topology `spec` (a file or a built-in name); the error names it.
pub fn open_topology(spec: &str) -> Result<Topology, String> {
    topology::open(spec).map_err(|e| topology::open_error(spec, &e))
}

/// The preset's parameters with the overrides applied in order; the
/// error names the preset or the override.
pub fn params(preset: &str, sets: &[String]) -> Result<Params, String> {
    apply_sets(preset_params(preset)?, sets)
}

/// The parameters of preset `name`; the error names it (`--preset NAME:`).
pub fn preset_params(name: &str) -> Result<Params, String> {
    Params::preset(name).map_err(|e| format!("--preset {name}: {e}"))
}

/// `--set KEY=VALUE` overrides applied to `p` in order (`ibnet run`
/// applies its `--config` file between the preset and them); the error
/// names the override.
pub fn apply_sets(mut p: Params, sets: &[String]) -> Result<Params, String> {
    for kv in sets {
        p = p
            .apply_override(kv)
            .map_err(|e| format!("--set {kv}: {e}"))?;
    }
    Ok(p)
}

/// The ranks' HCA nodes: from the map file, else the topology's own
/// mapping (rank r on its r-th HCA unless the topology says otherwise).
pub fn rank_nodes(map: Option<&Path>, topo: &Topology) -> Result<Vec<usize>, String> {
    match map {
        Some(path) => topology::load_rank_file(path, topo).map_err(|e| e.to_string()),
        None => Ok((0..topo.num_ranks())
            .filter_map(|r| topo.hca_of_rank(r))
            .collect()),
    }
}

/// All of it, in the order the errors are reported: topology, preset,
/// overrides, map.
pub fn resolve(o: &FabricOptions) -> Result<Resolved, String> {
    let topology = open_topology(&o.topology)?;
    let params = params(&o.preset, &o.set)?;
    let rank_nodes = rank_nodes(o.map.as_deref(), &topology)?;
    Ok(Resolved {
        topology,
        params,
        rank_nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_resolve_to_the_default_fabric() {
        let r = resolve(&FabricOptions::default()).unwrap();
        assert_eq!(r.rank_nodes.len(), r.topology.hcas().len());
        assert_eq!(r.params, Params::preset("thesis-ddr").unwrap());
    }

    #[test]
    fn errors_name_the_option() {
        let e = params("nope", &[]).unwrap_err();
        assert!(e.starts_with("--preset nope: "), "{e}");
        let e = params("qdr", &["max_vl=1".into(), "nope=1".into()]).unwrap_err();
        assert!(e.starts_with("--set nope=1: "), "{e}");
        assert!(open_topology("no-such-topology").is_err());
        let o = FabricOptions {
            map: Some("/nonexistent.map".into()),
            ..FabricOptions::default()
        };
        assert!(resolve(&o).unwrap_err().contains("/nonexistent.map"));
    }

    #[test]
    fn steps_compose_to_params() {
        let sets = vec!["max_vl=1".to_string()];
        let stepwise = apply_sets(preset_params("qdr").unwrap(), &sets).unwrap();
        assert_eq!(stepwise, params("qdr", &sets).unwrap());
        assert_eq!(
            apply_sets(preset_params("qdr").unwrap(), &[]).unwrap(),
            preset_params("qdr").unwrap()
        );
    }

    #[test]
    fn overrides_apply_in_order() {
        let p = params("qdr", &["max_vl=1".into(), "max_vl=2".into()]).unwrap();
        let q = params("qdr", &["max_vl=2".into()]).unwrap();
        assert_eq!(p, q);
    }
}
