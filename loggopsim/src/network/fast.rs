//! Library entry points of the fast backends (flow, penalty, lop), for
//! the command line and for tools (the backend study): build a backend by
//! name, or run a schedule on one.

use super::flow::FastArgs;
use super::Network;
use crate::engine::{Params, Report, Sim, SimError};
use crate::schedule::Schedule;
use ibnet::server::SetupArgs;
use ipc_proto::{Protocol, ProtocolSpec};

/// Build backend `kind` (a registered fast model: "flow", "penalty" or
/// "lop", `super::registry`) for `num_ranks`
/// ranks. flow and penalty read `fabric` (topology, preset, overrides,
/// rank map) and sync by `protocol`: notify (version 2) = exact
/// notification, query = polling; notify-v1 is refused. Errors are the
/// user's (exit 2 on the command line).
pub fn build(
    kind: &str,
    fabric: &SetupArgs,
    fast: &FastArgs,
    protocol: ProtocolSpec,
    num_ranks: u32,
) -> Result<Box<dyn Network>, String> {
    let exact = match (protocol.protocol, protocol.version >= 2) {
        (Protocol::Notify, true) => true,
        (Protocol::Query, _) => false,
        _ => {
            return Err(format!(
                "--network {kind}: --protocol {protocol} is not supported (use notify, the default, or query)"
            ))
        }
    };
    match super::registry::find(kind).and_then(|b| b.fast_build) {
        Some(build) => build(fabric, fast, exact, num_ranks),
        None => Err(format!(
            "unknown fast backend `{kind}` (known: {:?})",
            super::registry::fast_names()
        )),
    }
}

/// Run `sched` with LogGOPS parameters `params` on `net` to the end and
/// return the report (per-rank finish times in `finish_times`, ps).
pub fn run_schedule(
    sched: Schedule,
    params: Params,
    net: Box<dyn Network>,
) -> Result<Report, SimError> {
    let mut sim = Sim::new(sched, params, net)?;
    sim.run()?;
    Ok(sim.report())
}
