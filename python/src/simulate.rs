//! `simulate`: a schedule on a network backend, as `loggopsim -f FILE
//! --network NAME --json` runs it. The backends are loggopsim's registry
//! (`loggopsim::network::registry`: names, help lines, capabilities,
//! constructors); `cosim` adds the two-process co-simulation with both
//! sides in this process (`served.rs`). On the flit-level backends the
//! fabric can be observed over time: the link statistics of `ibnet run
//! --link-stats`, per window (`ibnet::server::FabricServer::observe`).

use crate::{clap_err, input, Fail, NativeSchedule, Progress, R};
use clap::{Parser, ValueEnum};
use loggopsim::engine::{NoTrace, Params, Sim, TraceEvent, Tracer};
use loggopsim::network::fabric::CosimArgs;
use loggopsim::network::registry::{self, Backend, BuildError, Request, Setup};
use loggopsim::network::Network;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::time::Instant;

/// The Python package's own backend name: `ipc` with the fabric served by
/// this process (`served.rs`).
pub(crate) const SERVED: &str = "cosim";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum InsertAt {
    Start,
    #[value(name = "after-o")]
    AfterO,
}

fn time_ps(s: &str) -> Result<u64, String> {
    ipc_proto::time::parse_time_arg(s, ipc_proto::time::TimeUnit::Ps).map(|t| t.as_ps())
}

fn window(s: &str) -> Result<ibnet::Time, String> {
    ibnet::units::parse_time(s)
}

/// The simulation options of `loggopsim` (src/main.rs `SimArgs`) that
/// concern a run in this process, with the same names and defaults, and
/// the package's own: the observation of the fabric and the transport of
/// `cosim`.
#[derive(Parser, Debug)]
#[command(name = "loggopsim", no_binary_name = true)]
pub(crate) struct SimOpts {
    #[arg(short = 'L', default_value = "2500", value_parser = time_ps)]
    l: u64,
    #[arg(short = 'o', default_value = "1500", value_parser = time_ps)]
    o: u64,
    #[arg(short = 'g', default_value = "1000", value_parser = time_ps)]
    g: u64,
    #[arg(short = 'G', default_value = "6", value_parser = time_ps)]
    big_g: u64,
    #[arg(short = 'O', default_value = "0", value_parser = time_ps)]
    big_o: u64,
    #[arg(short = 'S', default_value_t = 65535)]
    s: u64,
    #[arg(long = "o-large", value_parser = time_ps)]
    o_large: Option<u64>,
    #[arg(long = "O-large", value_parser = time_ps)]
    big_o_large: Option<u64>,
    #[arg(long = "large-threshold")]
    large_threshold: Option<u64>,
    #[arg(long = "insert-at", value_enum, default_value = "start")]
    insert_at: InsertAt,
    #[arg(long = "noise-trace")]
    noise_trace: Option<PathBuf>,
    #[arg(long = "noise-seed", default_value_t = 0)]
    noise_seed: u64,
    /// A registered backend, or `cosim`.
    #[arg(long, default_value = "loggp")]
    network: String,
    #[command(flatten)]
    pub(crate) cosim: CosimArgs,
    #[command(flatten)]
    pub(crate) fast: loggopsim::network::flow::FastArgs,
    /// The fabric's link statistics per window, as `ibnet run
    /// --link-stats FILE` writes them (flit-level backends).
    #[arg(long = "link-stats")]
    link_stats: Option<PathBuf>,
    /// Their window length.
    #[arg(long = "window", value_parser = window, default_value = "1us")]
    window: ibnet::Time,
    /// `cosim`: the transport of the session (shm or mq).
    #[arg(long, default_value = "shm")]
    pub(crate) transport: ipc_proto::TransportKind,
}

impl SimOpts {
    fn params(&self) -> Params {
        Params {
            l: self.l,
            o: self.o,
            g: self.g,
            big_g: self.big_g,
            big_o: self.big_o,
            s: self.s,
            o_large: self.o_large,
            big_o_large: self.big_o_large,
            large_threshold: self.large_threshold,
        }
    }

    /// The observation asked for, if any.
    pub(crate) fn observe(&self) -> Option<ibnet::server::ObserveConfig> {
        self.link_stats
            .as_ref()
            .map(|p| ibnet::server::ObserveConfig {
                window: self.window,
                link_stats: Some(p.clone()),
                ..Default::default()
            })
    }
}

/// The registry's backend for `name` (`cosim`: `ipc`, served here).
fn backend(name: &str) -> R<&'static Backend> {
    if name == SERVED {
        return Ok(registry::find("ipc").expect("ipc is registered"));
    }
    registry::lookup(name).map_err(|e| input(format!("{e}, or {SERVED}")))
}

/// A constructor's error as the command line's exit code says (2: the
/// user's options; 1: the other side failed).
pub(crate) fn build_error(e: BuildError) -> Fail {
    if e.code == 2 {
        Fail::Input(e.message)
    } else {
        Fail::Sim(e.message)
    }
}

fn check_fabric_sizes(name: &str, s: &loggopsim::schedule::Schedule) -> R<()> {
    let max = registry::MAX_MESSAGE_BYTES;
    for r in 0..s.num_ranks() {
        for n in s.rank_nodes(r) {
            let op = s.op(n);
            if op.kind == loggopsim::schedule::Kind::Send && op.size > max {
                return Err(input(format!(
                    "{name}: rank {r}: a send of {} bytes is larger than the largest message the \
                     fabric simulates ({max} bytes, 1 TiB); the LogGP backend (--network loggp) \
                     has no such limit",
                    op.size
                )));
            }
        }
    }
    Ok(())
}

/// The messages a run delivered (receiver side), column by column.
#[derive(Default)]
pub(crate) struct MsgLog {
    src: Vec<u32>,
    dst: Vec<u32>,
    bytes: Vec<u64>,
    tag: Vec<u32>,
    sent_ps: Vec<u64>,
    arrived_ps: Vec<u64>,
    recv_start_ps: Vec<u64>,
    recv_end_ps: Vec<u64>,
}

impl Tracer for MsgLog {
    fn event(&mut self, e: &TraceEvent) {
        if let TraceEvent::MsgReceived {
            host,
            src,
            size,
            tag,
            sent,
            arrived,
            start,
            end,
            ..
        } = *e
        {
            self.src.push(src);
            self.dst.push(host);
            self.bytes.push(size);
            self.tag.push(tag);
            self.sent_ps.push(sent);
            self.arrived_ps.push(arrived);
            self.recv_start_ps.push(start);
            self.recv_end_ps.push(end);
        }
    }
}

/// Steps `sim` to the end (as loggopsim's run loop) with progress calls.
fn run_sim<T: Tracer>(
    sim: &mut Sim<Box<dyn Network>, T>,
    a: &SimOpts,
    noise: Option<loggopsim::noise::Noise>,
    progress: &mut Progress,
) -> R<String> {
    if let Some(n) = noise {
        sim.set_noise(n);
    }
    sim.set_insert_after_o(a.insert_at == InsertAt::AfterO);
    let t0 = Instant::now();
    let c0 = ibcosim_common::cpu::process_seconds();
    let mut res = Ok(());
    loop {
        match sim.step() {
            Ok(Some(t)) => {
                if sim.processed().is_multiple_of(1 << 12)
                    && progress.due()
                    && !progress.call(
                        &[
                            ("events", sim.events() as f64),
                            ("sim_time_ps", t.as_ps() as f64),
                            ("wall_s", t0.elapsed().as_secs_f64()),
                        ],
                        false,
                    )
                {
                    return Err(Fail::Interrupted);
                }
            }
            Ok(None) => break,
            Err(e) => {
                res = Err(e);
                break;
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = ibcosim_common::cpu::process_seconds() - c0;
    if progress.has_callback() {
        let _ = progress.call(
            &[
                ("events", sim.events() as f64),
                ("sim_time_ps", sim.now().as_ps() as f64),
                ("wall_s", wall),
                ("done", 1.0),
            ],
            true,
        );
    }
    res.map_err(|e| {
        let m = format!("simulation failed: {e}");
        if matches!(e, loggopsim::engine::SimError::TimeOverflow { .. }) {
            Fail::Input(m)
        } else {
            Fail::Sim(m)
        }
    })?;
    let rep = sim.report();
    Ok(loggopsim::report::json(
        sim.network().name(),
        &rep,
        sim.params(),
        wall,
        cpu,
    ))
}

/// Runs `sched` on `net` to the end; the network is dropped (and its
/// session ended) before this returns.
pub(crate) fn run_on(
    sched: loggopsim::schedule::Schedule,
    a: &SimOpts,
    net: Box<dyn Network>,
    noise: Option<loggopsim::noise::Noise>,
    messages: bool,
    prog: &mut Progress,
) -> R<(String, Option<MsgLog>)> {
    let p = a.params();
    let mk = |e: loggopsim::engine::SimError| input(format!("{e}"));
    if messages {
        let mut sim = Sim::with_tracer(sched, p, net, MsgLog::default()).map_err(mk)?;
        let j = run_sim(&mut sim, a, noise, prog)?;
        Ok((j, Some(std::mem::take(sim.tracer_mut()))))
    } else {
        let mut sim = Sim::with_tracer(sched, p, net, NoTrace).map_err(mk)?;
        let j = run_sim(&mut sim, a, noise, prog)?;
        Ok((j, None))
    }
}

fn load_noise(a: &SimOpts, ranks: u32) -> R<Option<loggopsim::noise::Noise>> {
    let Some(nf) = &a.noise_trace else {
        return Ok(None);
    };
    let text = schedgen::input::read_text_limited(nf, schedgen::input::MAX_SMALL_TEXT_BYTES)
        .map_err(|e| input(format!("{}: {e}", nf.display())))?;
    loggopsim::noise::Noise::parse(&nf.display().to_string(), &text, ranks, a.noise_seed)
        .map(Some)
        .map_err(input)
}

/// The fabric server of a flit-level backend in this process, observing
/// the run as `a` asks (the registry's constructors take it prebuilt).
fn observed_server(
    a: &SimOpts,
    cosim: &CosimArgs,
    num_ranks: u32,
) -> R<Option<registry::Prebuilt>> {
    let Some(cfg) = a.observe() else {
        return Ok(None);
    };
    let mut server = loggopsim::network::inproc::build_fabric(cosim, num_ranks).map_err(input)?;
    let topo = ibnet::options::open_topology(&cosim.fabric.topology).map_err(input)?;
    server
        .observe(cfg, topo)
        .map_err(|e| input(format!("{e:#}")))?;
    Ok(Some(Ok(server)))
}

/// The registry's rows: name, help line and each capability.
#[pyfunction]
pub(crate) fn backends(py: Python<'_>) -> PyResult<Vec<PyObject>> {
    registry::all()
        .iter()
        .map(|b| {
            let d = PyDict::new_bound(py);
            d.set_item("name", b.name)?;
            d.set_item("help", b.help)?;
            for (k, v) in b.caps.flags() {
                d.set_item(k, v)?;
            }
            Ok(d.into_any().unbind())
        })
        .collect()
}

/// Run `schedule` as `loggopsim WORDS --json` does (without -f: the
/// schedule is given). Returns the JSON report (loggopsim's), the fabric's
/// own report (JSON text: inproc, onepiece, cosim) and the message records
/// (a dict of columns) when `messages`.
#[pyfunction]
#[pyo3(signature = (schedule, words, name, messages=false, progress=None))]
pub(crate) fn simulate(
    py: Python<'_>,
    schedule: &NativeSchedule,
    words: Vec<String>,
    name: String,
    messages: bool,
    progress: Option<PyObject>,
) -> PyResult<(String, Option<String>, Option<PyObject>)> {
    let mut a = SimOpts::try_parse_from(&words).map_err(|e| clap_err(e).into_py(py))?;
    let served = a.network == SERVED;
    let b = backend(&a.network).map_err(|e| e.into_py(py))?;
    if !served {
        let req = Request {
            key: a.cosim.key.as_deref(),
            ..Request::default()
        };
        registry::check(b, &req).map_err(|e| input(e).into_py(py))?;
    } else if let Some(k) = a.cosim.key.as_deref() {
        ipc_proto::SessionKey::new(k).map_err(|e| input(format!("key: {e}")).into_py(py))?;
    }
    if a.link_stats.is_some() && !(served || b.caps.fabric_in_process) {
        return Err(input(format!(
            "link statistics need a flit-level fabric in this process (inproc, onepiece or \
             {SERVED}), not --network {}",
            a.network
        ))
        .into_py(py));
    }
    let sched = schedule.s.clone();
    let dir = tempfile::tempdir()
        .map_err(|e| Fail::Input(format!("temporary directory: {e}")).into_py(py))?;
    let report_path = dir.path().join("fabric.json");
    let in_process = b.caps.fabric_in_process;
    if in_process && a.cosim.fabric_report.is_none() {
        a.cosim.fabric_report = Some(report_path.clone());
        a.cosim.fabric_json = true;
    }
    let mut prog = Progress::new(progress);
    let r = py.allow_threads(|| -> R<(String, Option<MsgLog>, Option<String>)> {
        let noise = load_noise(&a, sched.num_ranks())?;
        if b.caps.topology {
            check_fabric_sizes(&name, &sched)?;
        }
        // put/get need a version-3 session; where this process builds the
        // fabric a version-2 protocol is raised (as loggopsim does)
        let cosim = if sched.uses_one_sided() && in_process && a.cosim.protocol.version == 2 {
            CosimArgs {
                protocol: a.cosim.protocol.with_one_sided(),
                ..a.cosim.clone()
            }
        } else {
            a.cosim.clone()
        };
        let n = sched.num_ranks();
        if served {
            let ((json, log), fabric) = crate::served::run(&a, &cosim, n, |net| {
                run_on(sched, &a, net, noise, messages, &mut prog)
            })?;
            return Ok((json, log, Some(fabric)));
        }
        let prebuilt = if in_process {
            observed_server(&a, &cosim, n)?
        } else {
            None
        };
        let setup = Setup {
            cosim: &cosim,
            fast: &a.fast,
            num_ranks: n,
            prebuilt,
        };
        let net = b.make(setup).map_err(build_error)?;
        let (json, log) = run_on(sched, &a, net, noise, messages, &mut prog)?;
        let fabric = if in_process {
            a.cosim
                .fabric_report
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
        } else {
            None
        };
        Ok((json, log, fabric))
    });
    let (json, log, fabric) = r.map_err(|e| e.into_py(py))?;
    let msgs = match log {
        Some(m) => {
            let d = PyDict::new_bound(py);
            d.set_item("src", m.src)?;
            d.set_item("dst", m.dst)?;
            d.set_item("bytes", m.bytes)?;
            d.set_item("tag", m.tag)?;
            d.set_item("sent_ps", m.sent_ps)?;
            d.set_item("arrived_ps", m.arrived_ps)?;
            d.set_item("recv_start_ps", m.recv_start_ps)?;
            d.set_item("recv_end_ps", m.recv_end_ps)?;
            Some(d.into_any().unbind())
        }
        None => None,
    };
    Ok((json, fabric, msgs))
}
