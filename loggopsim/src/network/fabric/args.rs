//! The fabric backends' command-line options (protocol, quantum, estimate,
//! session key, the fabric's own options and reports), flattened into
//! loggopsim's. The fabric's topology, preset, overrides and rank map are
//! `ibnet::options::FabricOptions` (`fabric`, also named `SetupArgs`), the
//! one declaration `ibnet run`, `ibnet export`, `ibnet serve` and `cosim`
//! flatten too.

use ipc_proto::{EstimateBase, ProtocolSpec, Time};
use std::path::PathBuf;

/// The `--help` sections of the co-simulation and fabric options.
const COSIM: &str = "Co-simulation (--network ipc|inproc|onepiece)";
const FABRIC: &str = "Fabric (--network inproc|onepiece; for ipc give them to ibnet serve)";

/// Command-line options of the co-simulation backends (`--network ipc` and
/// `--network inproc`). Flattened into loggopsim's options.
#[derive(clap::Args, Clone, Debug)]
pub struct CosimArgs {
    /// Co-simulation protocol: notify (exact notification, protocol
    /// version 2: results equal query at 1 ps), query (polling, engine
    /// unchanged), notify-v1 (the thesis's run-ahead notification, version
    /// 1: may process events past an arrival still in flight; for the
    /// efficiency study and version-1 peers), query-v1 (polling with
    /// version-1 peers), notify-v3 / query-v3 (version 3: with put/get),
    /// notify-v4 (version 4: triggered inserts, fewer round trips, the
    /// same results; docs/protocol.md).
    #[arg(
        long,
        default_value = "notify",
        help_heading = COSIM
    )]
    pub protocol: ProtocolSpec,
    /// Query protocol: precision q (1ns, 100ps, 10ps, 1ps, any value; a
    /// bare number is ps). The fabric answers "not yet" with t' + q.
    #[arg(long, value_name = "TIME", default_value = "1ps", value_parser = ibnet::server::parse_quantum, help_heading = COSIM)]
    pub quantum: Time,
    /// Query protocol: arrival-estimate factor F (multiple of 0.001); the
    /// first query of a message is answered max(t'+q, t_insert + F x the
    /// per-hop fixed latencies of its route), the thesis's estimate. F = 1
    /// never errs; real arrivals before a promise are counted as causality
    /// errors. Version 2 sends q and F to the fabric (Config record).
    #[arg(
        long,
        value_name = "F",
        help_heading = COSIM
    )]
    pub estimate: Option<f64>,
    /// Query protocol: what F multiplies: hops (the thesis's per-hop fixed
    /// latencies, the default) or zero-load (a lower bound of the zero-load
    /// travel time that includes the message's serialisation: still never
    /// late, and far fewer 1 ps polls for large messages).
    #[arg(
        long,
        value_name = "BASE",
        default_value = "hops",
        help_heading = COSIM
    )]
    pub estimate_base: EstimateBase,
    /// ipc: session key of the fabric (`ibnet serve --key KEY`).
    #[arg(
        long,
        value_name = "KEY",
        help_heading = COSIM
    )]
    pub key: Option<String>,
    /// ipc: how long to wait for the fabric to be ready, in seconds.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 30.0,
        help_heading = COSIM
    )]
    pub connect_timeout: f64,
    #[command(
        flatten,
        next_help_heading = FABRIC
    )]
    pub fabric: ibnet::options::FabricOptions,
    /// inproc and onepiece: the fabric as logical processes.
    #[command(
        flatten,
        next_help_heading = FABRIC
    )]
    pub fabric_parallel: ibnet::options::FabricThreads,
    /// inproc: write the fabric's statistics to FILE (default: stderr).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = FABRIC
    )]
    pub fabric_report: Option<PathBuf>,
    /// inproc: the fabric's statistics as JSON.
    #[arg(
        long,
        help_heading = FABRIC
    )]
    pub fabric_json: bool,
    /// inproc: write the fabric's insert log (handle time_ps src dst bytes).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = FABRIC
    )]
    pub log_inserts: Option<PathBuf>,
    /// inproc: write the fabric's arrival log (handle time_ps).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = FABRIC
    )]
    pub log_arrivals: Option<PathBuf>,
}

impl CosimArgs {
    /// The options as an empty command line gives them, with `protocol`
    /// and the fabric `fabric`: for callers that build a backend without
    /// parsing a command line.
    pub fn new(protocol: ProtocolSpec, fabric: ibnet::options::FabricOptions) -> CosimArgs {
        CosimArgs {
            protocol,
            quantum: Time(1),
            estimate: None,
            estimate_base: EstimateBase::Hops,
            key: None,
            connect_timeout: 30.0,
            fabric,
            fabric_parallel: Default::default(),
            fabric_report: None,
            fabric_json: false,
            log_inserts: None,
            log_arrivals: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        cosim: CosimArgs,
    }

    /// `new` keeps the command line's defaults.
    #[test]
    fn new_equals_the_empty_command_line() {
        let parsed =
            Cli::parse_from(["loggopsim", "--protocol", "query-v3", "--topology", "H8_S2"]);
        let fabric = ibnet::options::FabricOptions {
            topology: "H8_S2".into(),
            ..Default::default()
        };
        let built = CosimArgs::new(ProtocolSpec::QUERY_V3, fabric);
        assert_eq!(format!("{:?}", parsed.cosim), format!("{built:?}"));
        assert_eq!(built.connect_timeout, 30.0);
        assert_eq!(built.quantum, Time(1));
    }
}
