//! `--network inproc`: the fabric server runs on a second thread of this
//! process and talks to the scheduler over ipc-proto's in-process channels.
//! The records are encoded and batched exactly as over message queues, so
//! this is the same protocol without the kernel in the way.

use super::fabric::{CosimArgs, CosimNetwork, FinishHook};
use super::NetError;
use ibnet::server::serve::{build_server, serve_channel, write_summary, ServeError};
use ibnet::server::FabricServer;

/// Build the fabric from `args.fabric`, start its server thread and return
/// the scheduler's backend. Fails (before any simulation) on bad fabric
/// options or when the schedule has more ranks than the fabric maps.
pub fn spawn(args: &CosimArgs, num_ranks: u32) -> Result<CosimNetwork, String> {
    let mut server = build_server(
        &args.fabric,
        args.protocol,
        args.quantum,
        args.estimate,
        args.log_inserts.as_ref(),
        args.log_arrivals.as_ref(),
    )
    .map_err(|e| format!("{e:#}"))?;
    let mapped = server.config().rank_hcas.len();
    if (num_ranks as usize) > mapped {
        return Err(format!(
            "the schedule has {num_ranks} ranks but the fabric ({}) maps only {mapped} ranks to HCAs (use a larger topology or a --map file)",
            args.fabric.topology
        ));
    }
    let (sched_end, mut fabric_end) =
        ipc_proto::inproc::pair(args.protocol).map_err(|e| e.to_string())?;
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
        match &report {
            Some(p) => write_summary(&server, json, Some(p))
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
        ])
    });
    Ok(CosimNetwork::new(
        sched_end,
        args.quantum,
        args.estimate.is_some(),
        format!("ibnet/{} inproc", args.protocol),
        Some(hook),
    ))
}
