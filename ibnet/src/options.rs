//! The fabric's options: topology, parameter preset, `--set` overrides and
//! the rank -> HCA map, declared once ([`FabricOptions`], flattened into
//! `ibnet run`, `ibnet export`, `ibnet serve`, loggopsim's `--network`
//! backends and the supervisor behind `scripts/cosim`) and turned into a
//! topology, [`Params`] and the ranks' HCA nodes once ([`resolve`], or its
//! steps), so that every tool reads them alike and names a bad one alike
//! (`--preset NAME: ...`, `--set KEY=VALUE: ...`, the topology loader's
//! and the map reader's own messages).
//!
//! Where a command differs it says so on its own command with clap's
//! `mut_arg` and the helpers here: `ibnet run` and `ibnet export` want the
//! topology given ([`topology_required`]), `scripts/cosim` gives it the
//! short `-t`, and `ibnet run`, whose ranks are the topology's own, takes
//! no map ([`map_refused`]). `ibnet run` also reads a `--config` file
//! between the preset and the overrides, so it uses the steps
//! ([`preset_params`], [`apply_sets`]) rather than [`params`].

use crate::params::Params;
use crate::topology::{self, Topology};
use std::path::{Path, PathBuf};

/// `--topology` when it is not given (the co-simulation's network).
pub const DEFAULT_TOPOLOGY: &str = "H8_S6";
/// `--preset` when it is not given (docs/model/fabric.md section 13).
pub const DEFAULT_PRESET: &str = "thesis-ddr";

/// The fabric's options, as every command that builds or checks a fabric
/// takes them.
#[derive(clap::Args, Clone, Debug)]
pub struct FabricOptions {
    /// Topology: a file (TOML, IBDM .topo with .fdbs, the reference's .ned,
    /// ibnetdiscover output) or a built-in name (H8_S1, H8_S2, H8_S4,
    /// H8_S6, M9, fattree:P, chain:N) or generator (kary:K:N,
    /// fattree2:HPL:LEAVES:SPINES, fattree3:HPL:LPP:APP:PODS,
    /// fattree:hosts=N, torus:4x4x4, mesh:8x8, dragonfly:A:P:H:G; options
    /// after commas, e.g. torus:4x4,vls=one; see docs/topology.md).
    #[arg(long, value_name = "FILE|NAME", default_value = DEFAULT_TOPOLOGY)]
    pub topology: String,
    /// Fabric parameter preset: thesis-ddr (the default, docs/model/fabric.md
    /// section 13), qdr (the reference's defaults), hcyang99 (congestion
    /// control), thesis-ch5 / thesis-ch4 (the thesis's chapter-5 and
    /// chapter-4 model generations, docs/thesis.md).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_PRESET)]
    pub preset: String,
    /// Override one fabric parameter, e.g. --set max_vl=1 (repeatable;
    /// applied in order, last).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Rank -> HCA mapping file (`rank hca_name` per line). Default: the
    /// topology's own mapping (rank r on its r-th HCA unless the topology
    /// says otherwise).
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
}

/// The fabric of a co-simulation as logical processes (`ibnet serve`,
/// loggopsim's in-process fabrics; engine/parallel_drive.rs).
#[derive(clap::Args, Clone, Debug)]
pub struct FabricThreads {
    /// Run the co-simulation's fabric as N logical processes on up to N
    /// threads (at most one per core), split by switch groups: every
    /// answer and the report are those of one thread, byte for byte, in
    /// either event order (docs/scaling.md 2.9). Not yet with one-sided
    /// operations, the host model, several send queues, lossy links or
    /// observation outputs.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub fabric_threads: usize,
    /// The partition of --fabric-threads instead of the automatic one: one
    /// line `SWITCH PROCESS` per switch (as `ibnet run --partition`).
    #[arg(long, value_name = "FILE")]
    pub fabric_partition: Option<PathBuf>,
}

impl Default for FabricThreads {
    fn default() -> Self {
        FabricThreads {
            fabric_threads: 1,
            fabric_partition: None,
        }
    }
}

impl Default for FabricOptions {
    fn default() -> Self {
        FabricOptions {
            topology: DEFAULT_TOPOLOGY.into(),
            preset: DEFAULT_PRESET.into(),
            set: Vec::new(),
            map: None,
        }
    }
}

impl FabricOptions {
    /// The options as a command line that parses back to them, for a
    /// process that builds the fabric itself (`scripts/cosim` starts
    /// `ibnet serve`, or loggopsim with an in-process fabric).
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--topology".to_string(),
            self.topology.clone(),
            "--preset".into(),
            self.preset.clone(),
        ];
        for s in &self.set {
            v.extend(["--set".into(), s.clone()]);
        }
        if let Some(m) = &self.map {
            v.extend(["--map".into(), m.to_string_lossy().into_owned()]);
        }
        v
    }
}

/// For `mut_arg("topology", ...)`: a command whose topology has no default
/// (`ibnet run`, `ibnet export`: a standalone run names its network).
pub fn topology_required(a: clap::Arg) -> clap::Arg {
    a.required(true).default_value(None::<&'static str>)
}

/// For `mut_arg("map", ...)`: a command that takes no rank map. The option
/// is left out of the help and refused when given, with an exit status of
/// 2 as for any unknown option.
pub fn map_refused(command: &'static str) -> impl FnOnce(clap::Arg) -> clap::Arg {
    move |a| {
        a.hide(true)
            .value_parser(move |_: &str| -> Result<PathBuf, String> {
                Err(format!(
                    "`{command}` takes no rank map (its ranks are the topology's own)"
                ))
            })
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

    /// A command that flattens the options, as the binaries do.
    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        fabric: FabricOptions,
    }

    fn parse(cmd: clap::Command, args: &[&str]) -> Result<FabricOptions, clap::Error> {
        use clap::FromArgMatches;
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))?;
        Ok(Cli::from_arg_matches(&m)?.fabric)
    }

    fn cli() -> clap::Command {
        <Cli as clap::CommandFactory>::command()
    }

    #[test]
    fn declared_defaults_are_the_default() {
        let o = parse(cli(), &[]).unwrap();
        let d = FabricOptions::default();
        assert_eq!(
            (o.topology.as_str(), o.preset.as_str()),
            ("H8_S6", "thesis-ddr")
        );
        assert_eq!(
            (o.topology, o.preset, o.set, o.map),
            (d.topology, d.preset, d.set, d.map)
        );
        let o = parse(
            cli(),
            &[
                "--topology",
                "M9",
                "--set",
                "a=1",
                "--set",
                "b=2",
                "--map",
                "m",
            ],
        )
        .unwrap();
        assert_eq!(o.topology, "M9");
        assert_eq!(o.set, ["a=1", "b=2"]);
        assert_eq!(o.map, Some(PathBuf::from("m")));
    }

    #[test]
    fn to_args_parses_back() {
        let o = FabricOptions {
            topology: "chain:4".into(),
            preset: "qdr".into(),
            set: vec!["max_vl=1".into(), "seed=2".into()],
            map: Some("ranks.map".into()),
        };
        let args = o.to_args();
        assert_eq!(
            args.join(" "),
            "--topology chain:4 --preset qdr --set max_vl=1 --set seed=2 --map ranks.map"
        );
        let strs: Vec<&str> = args.iter().map(String::as_str).collect();
        let back = parse(cli(), &strs).unwrap();
        assert_eq!((back.topology, back.preset), (o.topology, o.preset));
        assert_eq!((back.set, back.map), (o.set, o.map));
        assert_eq!(
            FabricOptions::default().to_args(),
            ["--topology", "H8_S6", "--preset", "thesis-ddr"]
        );
    }

    #[test]
    fn commands_adjust_the_declaration() {
        let required = cli().mut_arg("topology", topology_required);
        let e = parse(required.clone(), &[]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            parse(required, &["--topology", "M9"]).unwrap().topology,
            "M9"
        );

        let short = cli().mut_arg("topology", |a| a.short('t'));
        assert_eq!(
            parse(short, &["-t", "chain:4"]).unwrap().topology,
            "chain:4"
        );

        let mut no_map = cli().mut_arg("map", map_refused("ibnet run"));
        let e = parse(no_map.clone(), &["--map", "m"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("`ibnet run` takes no rank map"),
            "{e}"
        );
        assert!(!no_map.render_help().to_string().contains("--map"));
        assert_eq!(parse(no_map, &[]).unwrap().map, None);
    }

    #[test]
    fn overrides_apply_in_order() {
        let p = params("qdr", &["max_vl=1".into(), "max_vl=2".into()]).unwrap();
        let q = params("qdr", &["max_vl=2".into()]).unwrap();
        assert_eq!(p, q);
    }
}
