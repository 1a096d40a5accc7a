//! `--network inproc`: the fabric server runs on a second thread of this
//! process and talks to the scheduler over ipc-proto's in-process channels.
//! The records are encoded and batched exactly as over message queues, so
//! this is the same protocol without the kernel in the way.

use super::{CosimArgs, CosimNetwork, FinishHook};
use crate::network::NetError;
use ibnet::server::serve::{build_server, serve_channel, write_summary, ServeError};
use ibnet::server::FabricServer;

/// Build the fabric from `args.fabric`, start its server thread and return
/// the scheduler's backend. Fails (before any simulation) on bad fabric
/// options or when the schedule has more ranks than the fabric maps.
pub fn spawn(args: &CosimArgs, num_ranks: u32) -> Result<CosimNetwork, String> {
    let server = build_fabric(args, num_ranks)?;
    spawn_with(args, server)
}

/// The fabric server of `args` for a schedule of `num_ranks` ranks. In
/// version 1 the fabric gets q and F directly; in version 2 the backend's
/// Config record sets them.
pub fn build_fabric(args: &CosimArgs, num_ranks: u32) -> Result<FabricServer, String> {
    check_ranks(args, build_unchecked(args)?, num_ranks)
}

/// The fabric server of `args`, before the schedule's rank count is known
/// (so that it can be built while the schedule is read; see
/// [`check_ranks`]).
pub fn build_unchecked(args: &CosimArgs) -> Result<FabricServer, String> {
    let v1 = args.protocol.version < 2;
    let mut server = build_server(
        &args.fabric,
        &args.fabric_parallel,
        args.protocol,
        v1.then_some(args.quantum),
        if v1 { args.estimate } else { None },
        args.log_inserts.as_ref(),
        args.log_arrivals.as_ref(),
    )
    .map_err(|e| format!("{e:#}"))?;
    if v1 {
        server.set_estimate_base(args.estimate_base);
    }
    Ok(server)
}

/// `server` if it maps every rank of a `num_ranks`-rank schedule to an HCA.
pub fn check_ranks(
    args: &CosimArgs,
    server: FabricServer,
    num_ranks: u32,
) -> Result<FabricServer, String> {
    let mapped = server.config().rank_hcas.len();
    if (num_ranks as usize) > mapped {
        return Err(format!(
            "the schedule has {num_ranks} ranks but the fabric ({}) maps only {mapped} ranks to HCAs (use a larger topology or a --map file)",
            args.fabric.topology
        ));
    }
    Ok(server)
}

/// The fabric's statistics at the end of a run (to `report` or stderr)
/// and its counters for the scheduler's report.
pub fn report_fabric(
    server: &FabricServer,
    report: Option<&std::path::PathBuf>,
    json: bool,
) -> Result<Vec<(String, u64)>, NetError> {
    match report {
        Some(p) => write_summary(server, json, Some(p))
            .map_err(|e| NetError::Transport(format!("{e:#}")))?,
        None => {
            let text = if json {
                serde_json::to_string_pretty(&server.summary_json()).unwrap_or_default() + "\n"
            } else {
                server.summary()
            };
            eprint!("{text}");
        }
    }
    let st = server.stats();
    Ok(vec![
        (
            "fabric_events".to_string(),
            server.fabric().events_processed(),
        ),
        ("fabric_end_ps".to_string(), server.fabric().now().0),
        ("causality_errors".to_string(), st.causality_errors),
        (
            "causality_error_ps_total".to_string(),
            st.causality_error_ps_total,
        ),
        (
            "causality_error_ps_max".to_string(),
            st.causality_error_ps_max,
        ),
    ])
}

/// Start the fabric thread of a server already built (and checked with
/// [`check_ranks`]) and return the scheduler's backend.
pub fn spawn_with(args: &CosimArgs, mut server: FabricServer) -> Result<CosimNetwork, String> {
    let (sched_end, mut fabric_end) =
        ipc_proto::inproc::pair_versioned(args.protocol.protocol, args.protocol.version)
            .map_err(|e| e.to_string())?;
    let thread = std::thread::Builder::new()
        .name("ibnet-fabric".into())
        .spawn(move || -> (Result<(), ServeError>, FabricServer) {
            let r = serve_channel(&mut fabric_end, &mut server, None);
            drop(fabric_end);
            (r, server)
        })
        .map_err(|e| format!("cannot start the fabric thread: {e}"))?;
    let report = args.fabric_report.clone();
    let json = args.fabric_json;
    let hook: FinishHook = Box::new(move || {
        let (r, server) = thread
            .join()
            .map_err(|_| NetError::Transport("the fabric thread panicked".into()))?;
        r.map_err(|e| NetError::Transport(format!("fabric: {e}")))?;
        report_fabric(&server, report.as_ref(), json)
    });
    CosimNetwork::new_with_base(
        Box::new(sched_end),
        args.quantum,
        args.estimate,
        args.estimate_base,
        format!("ibnet/{} inproc", args.protocol),
        Some(hook),
    )
    .map_err(|e| format!("cannot configure the session: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibnet::server::SetupArgs;
    use ipc_proto::Time;

    fn args(topology: &str) -> CosimArgs {
        let fabric = SetupArgs {
            topology: topology.into(),
            ..SetupArgs::default()
        };
        CosimArgs::new(ipc_proto::ProtocolSpec::NOTIFY_V1, fabric)
    }

    #[test]
    fn startup_errors_are_clear() {
        let e = spawn(&args("H8_S1"), 9).err().unwrap();
        assert_eq!(
            e,
            "the schedule has 9 ranks but the fabric (H8_S1) maps only 8 ranks to HCAs (use a larger topology or a --map file)"
        );
        let e = spawn(&args("H9_S9"), 2).err().unwrap();
        assert!(
            e.contains("H9_S9") && e.contains("neither an existing file nor a built-in"),
            "{e}"
        );
        let mut a = args("H8_S1");
        a.fabric.preset = "nope".into();
        assert!(spawn(&a, 2).err().unwrap().contains("--preset nope"));
    }

    #[test]
    fn finish_joins_the_fabric_and_reports_its_counters() {
        use crate::network::{Envelope, Network};
        let dir = tempfile::tempdir().unwrap();
        let mut a = args("H8_S1");
        a.fabric_report = Some(dir.path().join("fabric.txt"));
        let mut net = spawn(&a, 2).unwrap();
        let h = net.insert(Time(0), Envelope::new(0, 1, 44, 0)).unwrap();
        assert_eq!(
            net.wait_arrivals(Time(0)).unwrap(),
            vec![(h, Time(150_600))]
        );
        net.finish(Time(150_600)).unwrap();
        let st: std::collections::HashMap<String, u64> = net.stats().into_iter().collect();
        assert_eq!(st["fabric_end_ps"], 150_600);
        assert_eq!(st["causality_errors"], 0);
        let text = std::fs::read_to_string(dir.path().join("fabric.txt")).unwrap();
        assert!(
            text.contains("protocol: 1 inserts, 1 NoMoreInserts, 1 arrival batches, 1 arrivals"),
            "{text}"
        );
    }
}
