//! `backend="cosim"`: the two-process co-simulation of `scripts/cosim`
//! with both sides in this process. The fabric server (`ibnet::server`,
//! what `ibnet serve` runs) creates the session and serves it on a
//! thread; the scheduler attaches with the registry's `ipc` backend (what
//! `loggopsim --network ipc` runs). The two talk over the real transport,
//! shared-memory rings or POSIX message queues, as the two processes do.
//! The sides get the options the supervisor gives them
//! (cosim/src/options.rs): the fabric serves a version-2 protocol as
//! version 3 (one-sided operations), and with the query protocol it is
//! given q, F and the estimate base too.
//!
//! Ending: the scheduler's side ends first (Finish, or the Abort record
//! its backend sends when it is dropped early: an error, or Ctrl-C turned
//! into KeyboardInterrupt), then the fabric thread is joined; each side's
//! channel unlinks the session's objects when it is dropped. This process
//! handles SIGINT itself: ipc-proto's signal thread, which would exit the
//! process on it, handles SIGTERM and SIGHUP only
//! (`ipc_proto::signals::leave_sigint_to_program` when the module is
//! imported).

use crate::simulate::{build_error, SimOpts};
use crate::{input, Fail, R};
use ibnet::server::serve::{build_server, serve_channel, ServeError};
use ibnet::server::{FabricServer, ServerError};
use ipc_proto::{FabricOptions, ProtoError, Protocol};
use loggopsim::network::fabric::CosimArgs;
use loggopsim::network::registry::{self, Setup};
use loggopsim::network::Network;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

static RUNS: AtomicU64 = AtomicU64::new(0);

/// The session key: the caller's, or one unique to this run
/// (`ibcosim-py-PID-N`).
pub(crate) fn session_key(a: &CosimArgs) -> String {
    a.key.clone().unwrap_or_else(|| {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        format!("ibcosim-py-{}-{n}", std::process::id())
    })
}

/// The fabric's server, as the supervisor starts `ibnet serve`.
fn fabric_server(a: &SimOpts, cosim: &CosimArgs, num_ranks: u32) -> R<FabricServer> {
    let spec = cosim.protocol.with_one_sided();
    let query = spec.protocol == Protocol::Query;
    let mut server = build_server(
        &cosim.fabric,
        &cosim.fabric_parallel,
        spec,
        query.then_some(cosim.quantum),
        if query { cosim.estimate } else { None },
        cosim.log_inserts.as_ref(),
        cosim.log_arrivals.as_ref(),
    )
    .map_err(|e| input(format!("{e:#}")))?;
    if query {
        server.set_estimate_base(cosim.estimate_base);
        server.pin_config();
    }
    let mut server =
        loggopsim::network::inproc::check_ranks(cosim, server, num_ranks).map_err(input)?;
    if let Some(cfg) = a.observe() {
        let topo = ibnet::options::open_topology(&cosim.fabric.topology).map_err(input)?;
        server
            .observe(cfg, topo)
            .map_err(|e| input(format!("{e:#}")))?;
    }
    Ok(server)
}

/// The fabric thread: create the session (its outcome goes to `ready`),
/// wait for the scheduler (until `cancel`), serve until Finish.
fn serve(
    key: String,
    protocol: Protocol,
    opts: FabricOptions,
    mut server: FabricServer,
    cancel: Arc<AtomicBool>,
    ready: mpsc::SyncSender<Result<(), ProtoError>>,
) -> (Result<(), ServeError>, FabricServer) {
    let endpoints = server.config().rank_hcas.len() as u32;
    let session = match ipc_proto::create_fabric_opts(&key, protocol, endpoints, &opts) {
        Ok(s) => {
            let _ = ready.send(Ok(()));
            s
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return (Ok(()), server);
        }
    };
    loop {
        match session.wait_for_scheduler(Duration::from_millis(100)) {
            Ok(_) => break,
            Err(ProtoError::TimedOut { .. }) if !cancel.load(Ordering::SeqCst) => continue,
            Err(e) => return (Err(e.into()), server),
        }
    }
    let mut ch = match session.connect() {
        Ok(c) => c,
        Err(e) => return (Err(e.into()), server),
    };
    let r = serve_channel(&mut ch, &mut server, None);
    drop(ch);
    (r, server)
}

/// Runs `f` on the scheduler's side of a session whose fabric this
/// process serves; returns its result and the fabric's JSON report (as
/// `ibnet serve --json`).
pub(crate) fn run<T>(
    a: &SimOpts,
    cosim: &CosimArgs,
    num_ranks: u32,
    f: impl FnOnce(Box<dyn Network>) -> R<T>,
) -> R<(T, String)> {
    let key = session_key(cosim);
    if cosim.key.is_some() {
        // the leftovers of a killed run with this key must not stop this one
        let _ = ipc_proto::cleanup(&key);
    }
    let server = fabric_server(a, cosim, num_ranks)?;
    let spec = cosim.protocol.with_one_sided();
    let opts = FabricOptions {
        transport: a.transport,
        version: Some(spec.version),
        ..FabricOptions::default()
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let thread = {
        let (key, cancel) = (key.clone(), cancel.clone());
        std::thread::Builder::new()
            .name("ibnet-fabric".into())
            .spawn(move || serve(key, spec.protocol, opts, server, cancel, ready_tx))
            .map_err(|e| Fail::Sim(format!("cannot start the fabric thread: {e}")))?
    };
    let join = |t: std::thread::JoinHandle<_>| {
        t.join()
            .map_err(|_| Fail::Sim("the fabric thread panicked".into()))
    };
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = join(thread);
            return Err(Fail::Sim(format!("cannot create session {key}: {e}")));
        }
        Err(_) => {
            let _ = join(thread)?;
            return Err(Fail::Sim("the fabric thread ended at once".into()));
        }
    }
    // the scheduler's side: the registry's `ipc` backend, attached by key
    let sched = CosimArgs {
        key: Some(key),
        ..cosim.clone()
    };
    let setup = Setup {
        cosim: &sched,
        fast: &a.fast,
        num_ranks,
        prebuilt: None,
    };
    let ipc = registry::find("ipc").expect("ipc is registered");
    let net = match ipc.make(setup) {
        Ok(n) => n,
        Err(e) => {
            cancel.store(true, Ordering::SeqCst);
            let _ = join(thread);
            return Err(build_error(e));
        }
    };
    let r = f(net);
    let (served, server) = join(thread)?;
    match (r, served) {
        (Err(Fail::Interrupted), _) => Err(Fail::Interrupted),
        (Ok(t), Ok(())) => {
            let json = serde_json::to_string(&server.summary_json())
                .map_err(|e| Fail::Sim(format!("the fabric's report: {e}")))?;
            Ok((t, json))
        }
        // the scheduler failed first: its message (the fabric saw its Abort)
        (Err(e), Err(ServeError::Server(ServerError::Peer { .. }))) => Err(e),
        // the fabric failed first (a deadlock, a fabric error): its message
        (_, Err(e)) => Err(Fail::Sim(format!("fabric: {e}"))),
        (Err(e), Ok(())) => Err(e),
    }
}

/// The objects of session `key` that exist now (its control segment and
/// queues, as `ipc-proto cleanup KEY` would look for them).
#[pyo3::pyfunction]
pub(crate) fn session_objects(py: pyo3::Python<'_>, key: &str) -> pyo3::PyResult<Vec<String>> {
    let k = ipc_proto::SessionKey::new(key).map_err(|e| input(e).into_py(py))?;
    Ok(k.all_object_names()
        .into_iter()
        .filter(|n| ipc_proto::object_exists(n).unwrap_or(false))
        .collect())
}
