//! The transport loop around [`FabricServer`] and the `ibnet serve` command.

use super::Coupling;
use super::{parse_quantum, FabricServer, FabricSetup, ServerConfig, ServerError, SetupArgs, Step};
use ipc_proto::{Channel, ProtoError, ProtocolSpec, Record};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// `ibnet serve`: the fabric side of a co-simulation (docs/protocol.md)
/// over shared-memory rings (the default, as in scripts/cosim) or POSIX
/// message queues. Creates the session's objects, waits for the
/// scheduler, serves until Finish, prints its statistics and exits 0.
#[derive(clap::Args, Clone, Debug)]
#[command(
    after_help = "Exit codes: 0 after Finish; 1 protocol violation, deadlock, fabric error or \
the scheduler failed/died/stopped; 2 bad options or input files; 3 a system resource is exhausted \
(the per-user message-queue budget RLIMIT_MSGQUEUE, or /dev/shm): the message names the limit and \
the remedy (e.g. --transport shm, fewer concurrent sessions, `ipc-proto cleanup KEY`); 128+N killed \
by signal N (the session's objects are removed on SIGINT, SIGTERM and SIGHUP).\n\n\
Memory: a network of 1024 HCAs or more runs with its heap on transparent huge pages (the process \
executes itself once, before creating the session; IBNET_HUGEPAGES=on|off|auto, `ibnet run --help`).\n\n\
Example (what scripts/cosim runs):\n  ibnet serve --key cosim-42 --protocol notify --topology H8_S6 &\n  \
loggopsim -f app.goal -L 0 -o 0 -g 0 -G 0 -O 0 --network ipc --protocol notify --key cosim-42"
)]
pub struct ServeArgs {
    /// Session key: the IPC objects are /<KEY>.ins, /<KEY>.qry, ... and /<KEY>.ctl.
    #[arg(long)]
    pub key: String,
    /// Synchronisation protocol and wire version: notify (exact
    /// notification, version 2), query (polling, version 2), notify-v3 /
    /// query-v3 (version 3: version 2 plus put/get), notify-v1
    /// (the thesis's run-ahead notification, version 1, for v1 peers),
    /// query-v1 (polling with v1 peers), notify-v4 (version 4: version 3
    /// plus triggered inserts; loggopsim asked for notify version 2 or 3
    /// accepts it and then arms triggers).
    #[arg(long, default_value = "notify")]
    pub protocol: ProtocolSpec,
    /// Query protocol: precision q of "not yet" replies (1ns, 100ps, 1ps, ...).
    /// Version 2: the scheduler's Config record sets q; give it here only
    /// to insist on a value (a different Config is then refused).
    /// Version 1 (query-v1): must equal the scheduler's --quantum; default 1ps.
    #[arg(long, value_name = "TIME", value_parser = parse_quantum)]
    pub quantum: Option<ipc_proto::Time>,
    /// Query protocol: answer a message's first query with
    /// max(t'+q, t_insert + F * per-hop fixed latencies of the route).
    /// Version 2: set by the scheduler's Config (see --quantum).
    #[arg(long, value_name = "F")]
    pub estimate: Option<f64>,
    /// Query protocol: what F multiplies: hops (per-hop fixed latencies,
    /// the thesis's) or zero-load (a lower bound of the zero-load travel
    /// time, serialisation included). Version 2: set by the Config.
    #[arg(long, value_name = "BASE")]
    pub estimate_base: Option<ipc_proto::EstimateBase>,
    #[command(flatten)]
    pub setup: SetupArgs,
    #[command(flatten)]
    pub parallel: crate::options::FabricThreads,
    /// Write every insert (handle time_ps src_rank dst_rank bytes) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_inserts: Option<PathBuf>,
    /// Write every arrival (handle time_ps) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_arrivals: Option<PathBuf>,
    /// Print the statistics as JSON (server counters and the fabric report).
    #[arg(long)]
    pub json: bool,
    /// Write the statistics to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Progress line on stderr.
    #[arg(long)]
    pub progress: bool,
    /// How long to wait for a scheduler to attach, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub attach_timeout: f64,
    /// IPC transport: shm (rings in the shared-memory segment; faster, no
    /// per-user limit; the default, as in scripts/cosim; loggopsim and the
    /// conformance checker speak it) or mq (POSIX message queues,
    /// docs/protocol.md; what any peer speaks, e.g. the Python reference
    /// peers in scripts/peers). The scheduler (loggopsim --network ipc)
    /// follows the fabric's choice.
    #[arg(long, value_name = "shm|mq", default_value = "shm")]
    pub transport: ipc_proto::TransportKind,
    /// Pid of the scheduler process to come (the supervisor knows it): stop
    /// waiting for it to attach as soon as it is gone.
    #[arg(long, value_name = "PID")]
    pub scheduler_pid: Option<u32>,
}

/// Why `serve_channel` ended without Finish.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Server(#[from] ServerError),
    #[error("transport: {0}")]
    Transport(#[from] ProtoError),
}

/// Serve one session on a connected channel until Finish. On a server error
/// the Error record is sent to the scheduler before returning.
pub fn serve_channel(
    ch: &mut Channel,
    server: &mut FabricServer,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<(), ServeError> {
    let mut out = Vec::with_capacity(64);
    let mut n: u64 = 0;
    // Fault injection for the supervision tests: IBCOSIM_TEST_FAULT=hang-fabric
    // makes this side loop forever (busy, no progress) after its first record.
    // IBCOSIM_TEST_FAULT=error-fabric makes it answer its first
    // NoMoreInserts or Query with a forged Error record (code Internal), as
    // a fabric that failed would.
    let fault = std::env::var("IBCOSIM_TEST_FAULT").unwrap_or_default();
    let hang = fault == "hang-fabric";
    let forge_error = fault == "error-fabric";
    // Where the fabric's time goes per round (reported, never used by the
    // model): from the round's first record to its NoMoreInserts or Query
    // it takes in the scheduler's inserts (less any wait for the rest of
    // them, which `peer_wait` counts); from there to its answer it
    // simulates. Three clock reads per round, none per insert.
    let mut round_start: Option<(std::time::Instant, Duration)> = None;
    let mut split = Coupling::default();
    loop {
        // (an Insert already received is taken without recv's call chain)
        let rec = match ch.take_insert() {
            Some(r) => r,
            None => {
                let r = ch.recv()?;
                // a new message of records has come: announce its inserts
                // (FabricServer::prefetch_insert says why)
                if let Record::Insert { src, dst, .. } = r {
                    server.prefetch_insert(src, dst);
                    for (s, d) in ch.queued_inserts() {
                        server.prefetch_insert(s, d);
                    }
                }
                r
            }
        };
        if round_start.is_none() {
            round_start = Some((std::time::Instant::now(), ch.peer_wait().waited));
        }
        let answered =
            matches!(rec, Record::NoMoreInserts { .. } | Record::Query { .. }).then(|| {
                let t = std::time::Instant::now();
                if let Some((t0, w0)) = round_start {
                    let waited = ch.peer_wait().waited.saturating_sub(w0);
                    split.inserting += (t - t0).saturating_sub(waited);
                }
                t
            });
        if hang && n > 0 {
            loop {
                std::hint::spin_loop();
            }
        }
        if forge_error && answered.is_some() {
            let e = ServerError::Fabric("forged by IBCOSIM_TEST_FAULT=error-fabric".into());
            let _ = ch.send(e.to_record());
            let _ = ch.flush();
            return Err(e.into());
        }
        match server.handle(rec, &mut out) {
            Ok(step) => {
                for r in out.drain(..) {
                    ch.send(r)?;
                }
                if let Some(t) = answered {
                    split.answering += t.elapsed();
                    round_start = None;
                }
                if step == Step::Finished {
                    // the coupling's wall-clock figures for the report
                    // (also when the fabric is a thread of the scheduler)
                    split.wait = ch.peer_wait();
                    server.set_coupling(split);
                    ch.flush()?;
                    return Ok(());
                }
            }
            Err(e) => {
                if !matches!(e, ServerError::Peer { .. }) {
                    let _ = ch.send(e.to_record());
                    let _ = ch.flush();
                }
                return Err(e.into());
            }
        }
        n += 1;
        if let Some(b) = progress {
            if n.is_multiple_of(4096) {
                let f = server.fabric();
                b.set_message(format!(
                    "fabric time {} ps, {} events, {} messages in flight, {} records",
                    f.now().0,
                    f.events_processed(),
                    f.in_flight(),
                    n
                ));
                b.tick();
            }
        }
    }
}

/// Fault injection for the supervisor's tests (IBCOSIM_TEST_FAULT=chatter,
/// also in loggopsim): 5000 stderr lines at once, each written as several
/// pieces (as `eprintln!` writes a formatted line), while the other side
/// does the same.
pub fn test_chatter(side: &str) {
    let pad = "x".repeat(64);
    for i in 1..=5000 {
        eprintln!("{side}: chatter line {i} of {}: {pad} {side} {i}", 5000);
    }
}

/// A spinner line on stderr, when asked (scripts/cosim asks the scheduler
/// only, so two spinners never share one terminal line).
pub fn progress_bar(asked: bool) -> Option<indicatif::ProgressBar> {
    asked.then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        b.set_style(indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}").unwrap());
        b
    })
}

fn open_log(p: &PathBuf) -> anyhow::Result<Box<dyn Write + Send>> {
    let f = std::fs::File::create(p)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", p.display()))?;
    Ok(Box::new(std::io::BufWriter::new(f)))
}

/// Write the statistics (text or JSON) to `report` or stdout.
pub fn write_summary(
    server: &FabricServer,
    json: bool,
    report: Option<&PathBuf>,
) -> anyhow::Result<()> {
    let text = if json {
        serde_json::to_string_pretty(&server.summary_json())? + "\n"
    } else {
        server.summary()
    };
    match report {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        None => {
            let mut so = std::io::stdout().lock();
            so.write_all(text.as_bytes())?;
            so.flush()?;
        }
    }
    Ok(())
}

/// Build the server for a session from the common settings. `quantum`
/// and `estimate`: None = not given (q = 1 ps, no estimate; in version 2
/// the scheduler's Config decides), Some = pinned.
#[allow(clippy::too_many_arguments)]
pub fn build_server(
    setup: &SetupArgs,
    threads: &crate::options::FabricThreads,
    protocol: ProtocolSpec,
    quantum: Option<ipc_proto::Time>,
    estimate: Option<f64>,
    log_inserts: Option<&PathBuf>,
    log_arrivals: Option<&PathBuf>,
) -> anyhow::Result<FabricServer> {
    let s = FabricSetup::build(setup).map_err(anyhow::Error::msg)?;
    let mut cfg = ServerConfig::new(protocol, s.rank_hcas.clone());
    cfg.pinned = quantum.is_some() || estimate.is_some();
    cfg.quantum = quantum.unwrap_or(ipc_proto::Time(1));
    cfg.estimate = estimate;
    let (mut fabric, lines) = s.served(threads).map_err(anyhow::Error::msg)?;
    for l in lines {
        eprintln!("ibnet: {l}");
    }
    // a busy engine keeps our heartbeat going; a hung one stops it
    fabric.set_pulse(ipc_proto::liveness::pulse());
    let mut server = FabricServer::new(fabric, cfg)?;
    if let Some(p) = log_inserts {
        server.set_insert_log(open_log(p)?)?;
    }
    if let Some(p) = log_arrivals {
        server.set_arrival_log(open_log(p)?)?;
    }
    Ok(server)
}

/// `ibnet serve`: returns the process exit code (errors are printed).
pub fn run_serve(a: &ServeArgs) -> i32 {
    let mut server = match build_server(
        &a.setup,
        &a.parallel,
        a.protocol,
        a.quantum,
        a.estimate,
        a.log_inserts.as_ref(),
        a.log_arrivals.as_ref(),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ibnet serve: error: {e:#}");
            return 2;
        }
    };
    if let Some(b) = a.estimate_base {
        server.set_estimate_base(b);
        server.pin_config();
    }
    let endpoints = server.config().rank_hcas.len() as u32;
    let opts = ipc_proto::FabricOptions {
        transport: a.transport,
        version: Some(a.protocol.version),
        ..Default::default()
    };
    let session = match ipc_proto::create_fabric_opts(&a.key, a.protocol.protocol, endpoints, &opts)
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ibnet serve: error: cannot create session {}: {e}", a.key);
            return e.exit_code();
        }
    };
    if let Err(e) = session.wait_for_scheduler_watching(
        Duration::from_secs_f64(a.attach_timeout.max(0.0)),
        a.scheduler_pid,
    ) {
        eprintln!("ibnet serve: error: {e}");
        return 1;
    }
    // (the scheduler has attached: it chatters at the same time)
    if std::env::var("IBCOSIM_TEST_FAULT").is_ok_and(|v| v == "chatter") {
        test_chatter("fabric");
    }
    let mut ch = match session.connect() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ibnet serve: error: {e}");
            return 1;
        }
    };
    let bar = progress_bar(a.progress);
    let r = serve_channel(&mut ch, &mut server, bar.as_ref());
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // Drop the channel (unlinks the session's objects) before printing.
    drop(ch);
    match r {
        Ok(()) => match write_summary(&server, a.json, a.report.as_ref()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("ibnet serve: error: {e:#}");
                1
            }
        },
        Err(e) => {
            eprintln!("ibnet serve: error: {e}");
            if let ServeError::Server(ServerError::Deadlock { handles, .. }) = &e {
                if !handles.is_empty() {
                    eprintln!("ibnet serve: messages in flight (scheduler handles): {handles:?}");
                }
            }
            1
        }
    }
}

/// Stand-alone parser for `ibnet serve ...` (used by the binary's
/// dispatcher; the subcommand form is `Serve(ServeArgs)` -> [`run_serve`]).
#[derive(clap::Parser, Debug)]
#[command(
    name = "ibnet serve",
    bin_name = "ibnet serve",
    version,
    about = "Serve a co-simulation: the fabric side of docs/protocol.md over shared memory (default) or POSIX message queues"
)]
pub struct ServeCli {
    #[command(flatten)]
    pub args: ServeArgs,
}

/// `ibnet serve ARGS...`: parse `std::env::args()` after the subcommand
/// word, run, exit with the code of [`run_serve`].
pub fn main_serve() -> ! {
    use clap::Parser;
    let cli = ServeCli::parse_from(std::env::args().skip(1));
    std::process::exit(run_serve(&cli.args))
}
