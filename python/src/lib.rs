//! `ibcosim._native`: the Rust side of the Python package `ibcosim`.
//!
//! Every function is a thin layer over the workspace's library crates, doing
//! what the command lines (`loggopsim`, `loggopsim gen|trace2goal`, `ibnet
//! run|topology|routes`) do with the same library calls. Options arrive as
//! command-line words (the Python side turns keyword arguments into them)
//! and are parsed by the same clap definitions (`CosimArgs`, `FastArgs`,
//! `GenArgs`, `Trace2GoalArgs`) or by copies of the binaries' small ones
//! with the same defaults, so that a value means what it means on the
//! command line. Reports go back as JSON text with the binaries' keys.
//!
//! `simulate.rs` runs a schedule on a backend of loggopsim's registry (or
//! `cosim`), `served.rs` holds `cosim`: the co-simulation's two sides in
//! this process over shared memory or message queues.
//!
//! Errors become the Python exceptions of `ibcosim.errors`: `InputError`
//! for what the binaries report with exit code 2 (bad options, files,
//! parameters), `SimulationError` for exit code 1 (a failed run).

// pyo3 0.22's #[pyfunction] expansion converts PyErr into itself
#![allow(clippy::useless_conversion)]

mod served;
mod simulate;

use clap::Parser;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::time::Instant;

// ---------------------------------------------------------------- errors

/// An error and the exception class it becomes.
enum Fail {
    /// bad input (the binaries' exit code 2)
    Input(String),
    /// an input file that cannot be opened or read (also exit code 2)
    Io(String),
    /// a failed run (exit code 1)
    Sim(String),
    /// stopped by a signal (the pending KeyboardInterrupt is raised)
    Interrupted,
}

impl Fail {
    fn into_py(self, py: Python<'_>) -> PyErr {
        let (class, msg) = match self {
            Fail::Input(m) => ("InputError", m),
            Fail::Io(m) => ("FileError", m),
            Fail::Sim(m) => ("SimulationError", m),
            Fail::Interrupted => return pyo3::exceptions::PyKeyboardInterrupt::new_err(()),
        };
        match py
            .import_bound("ibcosim.errors")
            .and_then(|m| m.getattr(class))
        {
            Ok(cls) => match cls.call1((msg.clone(),)) {
                Ok(v) => PyErr::from_value_bound(v),
                Err(e) => e,
            },
            Err(_) => pyo3::exceptions::PyValueError::new_err(msg),
        }
    }
}

type R<T> = Result<T, Fail>;

fn input(e: impl std::fmt::Display) -> Fail {
    Fail::Input(e.to_string())
}

/// clap's message for bad options, without its usage lines.
fn clap_err(e: clap::Error) -> Fail {
    let s = e.render().to_string();
    let first = s
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_string();
    Fail::Input(first)
}

// ------------------------------------------------------------- progress

/// Calls a Python callable now and then (with the GIL) from a run that
/// released it, and checks for signals (Ctrl-C stops the run with
/// KeyboardInterrupt).
struct Progress {
    cb: Option<PyObject>,
    last: Instant,
    every: f64,
    /// a signal handler raised (KeyboardInterrupt): the run stops
    interrupted: Option<PyErr>,
}

impl Progress {
    fn new(cb: Option<PyObject>) -> Progress {
        Progress {
            cb,
            last: Instant::now(),
            every: 0.5,
            interrupted: None,
        }
    }
    fn has_callback(&self) -> bool {
        self.cb.is_some()
    }
    fn due(&self) -> bool {
        self.last.elapsed().as_secs_f64() >= self.every
    }
    /// Call back with a dict of `items` (when due, or `force`); false
    /// when the run must stop (a signal).
    fn call(&mut self, items: &[(&str, f64)], force: bool) -> bool {
        if !(force || self.due()) {
            return self.interrupted.is_none();
        }
        self.last = Instant::now();
        Python::with_gil(|py| {
            if let Err(e) = py.check_signals() {
                self.interrupted = Some(e);
                return;
            }
            if let Some(cb) = &self.cb {
                let d = PyDict::new_bound(py);
                for (k, v) in items {
                    let _ = d.set_item(*k, *v);
                }
                // a failing progress callback must not stop the run
                if let Err(e) = cb.call1(py, (d,)) {
                    e.print(py);
                }
            }
        });
        self.interrupted.is_none()
    }
}

// ------------------------------------------------------------ schedules

/// A schedule in memory (loggopsim's compact form).
#[pyclass(module = "ibcosim._native", name = "NativeSchedule")]
#[derive(Clone)]
struct NativeSchedule {
    s: loggopsim::schedule::Schedule,
}

#[pymethods]
impl NativeSchedule {
    #[getter]
    fn num_ranks(&self) -> u32 {
        self.s.num_ranks()
    }
    #[getter]
    fn num_cpus(&self) -> u32 {
        self.s.num_cpus()
    }
    #[getter]
    fn num_nics(&self) -> u32 {
        self.s.num_nics()
    }
    #[getter]
    fn uses_one_sided(&self) -> bool {
        self.s.uses_one_sided()
    }
    /// Operations per kind and bytes sent: a dict.
    fn stats(&self, py: Python<'_>) -> PyResult<PyObject> {
        use loggopsim::schedule::Kind;
        let (mut sends, mut recvs, mut calcs, mut other, mut bytes) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        for r in 0..self.s.num_ranks() {
            for n in self.s.rank_nodes(r) {
                let op = self.s.op(n);
                match op.kind {
                    Kind::Send => {
                        sends += 1;
                        bytes += op.size;
                    }
                    Kind::Recv => recvs += 1,
                    Kind::Calc => calcs += 1,
                    _ => other += 1,
                }
            }
        }
        let d = PyDict::new_bound(py);
        d.set_item("num_ranks", self.s.num_ranks())?;
        d.set_item("num_ops", sends + recvs + calcs + other)?;
        d.set_item("sends", sends)?;
        d.set_item("recvs", recvs)?;
        d.set_item("calcs", calcs)?;
        d.set_item("other_ops", other)?;
        d.set_item("bytes_sent", bytes)?;
        Ok(d.into_any().unbind())
    }
    /// Write as GOAL text (`binary=False`) or LogGOPSim's binary layout.
    #[pyo3(signature = (path, binary=false))]
    fn write(&self, py: Python<'_>, path: PathBuf, binary: bool) -> PyResult<()> {
        let r = (|| -> std::io::Result<()> {
            use std::io::Write;
            let f = std::fs::File::create(&path)?;
            let mut w = std::io::BufWriter::new(f);
            if binary {
                loggopsim::binfmt::write(&self.s, &mut w)?;
            } else {
                loggopsim::goal::write_goal(&self.s, &mut w)?;
            }
            w.flush()
        })();
        r.map_err(|e| input(format!("cannot write {}: {e}", path.display())).into_py(py))
    }
    fn __repr__(&self) -> String {
        format!("<NativeSchedule: {} ranks>", self.s.num_ranks())
    }
}

/// Read a schedule (GOAL text or binary, detected by content) as loggopsim
/// does; returns the schedule and the reader's warnings.
#[pyfunction]
fn load_schedule(py: Python<'_>, path: PathBuf) -> PyResult<(NativeSchedule, Vec<String>)> {
    let r = py.allow_threads(|| loggopsim::load_schedule_warnings(&path));
    match r {
        Ok((s, w)) => Ok((NativeSchedule { s }, w)),
        Err(e @ loggopsim::goal::LoadError::Io { .. }) => Err(Fail::Io(e.to_string()).into_py(py)),
        Err(e) => Err(input(e).into_py(py)),
    }
}

#[derive(Parser)]
#[command(name = "loggopsim gen", no_binary_name = true)]
struct GenCli {
    #[command(flatten)]
    a: schedgen::cli::GenArgs,
}

#[derive(Parser)]
#[command(name = "loggopsim trace2goal", no_binary_name = true)]
struct T2gCli {
    #[command(flatten)]
    a: schedgen::cli::Trace2GoalArgs,
}

/// `loggopsim gen WORDS`: the GOAL file is written where `-o` says.
#[pyfunction]
fn gen(py: Python<'_>, words: Vec<String>) -> PyResult<()> {
    let cli = GenCli::try_parse_from(&words).map_err(|e| clap_err(e).into_py(py))?;
    py.allow_threads(|| schedgen::cli::run_gen(&cli.a))
        .map_err(|e| input(format!("{e:#}")).into_py(py))
}

/// `loggopsim trace2goal WORDS`.
#[pyfunction]
fn trace2goal(py: Python<'_>, words: Vec<String>) -> PyResult<()> {
    let cli = T2gCli::try_parse_from(&words).map_err(|e| clap_err(e).into_py(py))?;
    py.allow_threads(|| schedgen::cli::run_trace2goal(&cli.a))
        .map_err(|e| input(format!("{e:#}")).into_py(py))
}

// ----------------------------------------------------------- topologies

fn open_topology(spec: &str, lfts: Option<&Path>) -> R<ibnet::topology::Topology> {
    ibnet::topology::open_with(spec, lfts).map_err(|e| input(ibnet::topology::open_error(spec, &e)))
}

/// `ibnet topology --summary --json` plus the hosts (name, LID, rank),
/// switches (name, ports) and links (both ends) as JSON text.
#[pyfunction]
#[pyo3(signature = (spec, lfts=None))]
fn topology(py: Python<'_>, spec: String, lfts: Option<PathBuf>) -> PyResult<String> {
    py.allow_threads(|| -> R<String> {
        let t = open_topology(&spec, lfts.as_deref())?;
        let s = ibnet::topology::summary::summarize(&t);
        let mut rank_of = vec![None; t.nodes.len()];
        for r in 0..t.num_ranks() {
            if let Some(h) = t.hca_of_rank(r) {
                rank_of[h] = Some(r);
            }
        }
        let hosts: Vec<serde_json::Value> = t
            .hcas()
            .into_iter()
            .map(|i| {
                serde_json::json!({
                    "name": t.nodes[i].name, "lid": t.lid_of_hca(i), "rank": rank_of[i],
                })
            })
            .collect();
        let switches: Vec<serde_json::Value> = t
            .switches()
            .into_iter()
            .map(|i| {
                let ports = match &t.nodes[i].kind {
                    ibnet::topology::NodeKind::Switch { ports, .. } => *ports,
                    _ => 0,
                };
                serde_json::json!({ "name": t.nodes[i].name, "ports": ports })
            })
            .collect();
        let links: Vec<serde_json::Value> = t
            .links
            .iter()
            .map(|l| {
                serde_json::json!({
                    "node_a": t.nodes[l.a.node].name, "port_a": l.a.port,
                    "node_b": t.nodes[l.b.node].name, "port_b": l.b.port,
                })
            })
            .collect();
        let v = serde_json::json!({
            "name": t.name,
            "note": ibnet::topology::explain(&spec),
            "summary": s,
            "hosts": hosts,
            "switches": switches,
            "links": links,
        });
        Ok(v.to_string())
    })
    .map_err(|e| e.into_py(py))
}

/// A host given by name or rank (as `ibnet routes`).
fn host_of(t: &ibnet::topology::Topology, s: &str) -> R<usize> {
    if let Some(i) = t.node_by_name(s) {
        if t.lid_of_hca(i).is_some() {
            return Ok(i);
        }
        return Err(input(format!("'{s}' is a switch, not a host")));
    }
    if let Ok(r) = s.parse::<usize>() {
        return t.hca_of_rank(r).ok_or_else(|| {
            input(format!(
                "rank {r} is not mapped (the topology has {} ranks)",
                t.num_ranks()
            ))
        });
    }
    Err(input(format!(
        "no host named '{s}' in the topology (give a host name such as H_1, or a rank number)"
    )))
}

/// `ibnet routes --json SRC DST`.
#[pyfunction]
#[pyo3(signature = (spec, src, dst, lfts=None))]
fn route(
    py: Python<'_>,
    spec: String,
    src: String,
    dst: String,
    lfts: Option<PathBuf>,
) -> PyResult<String> {
    py.allow_threads(|| -> R<String> {
        let t = open_topology(&spec, lfts.as_deref())?;
        let s = host_of(&t, &src)?;
        let d = host_of(&t, &dst)?;
        if s == d {
            return Err(input("source and destination are the same host"));
        }
        let sl = t.route_sl(t.lid_of_hca(s).unwrap_or(0), t.lid_of_hca(d).unwrap_or(0));
        let hops = ibnet::topology::summary::route_hops(&t, s, d)
            .map_err(|e| Fail::Sim(format!("no route from {src} to {dst}: {e}")))?;
        Ok(serde_json::json!({
            "src": t.nodes[s].name, "dst": t.nodes[d].name,
            "links": hops.len(), "switches": hops.len() - 1, "sl": sl, "hops": hops,
        })
        .to_string())
    })
    .map_err(|e| e.into_py(py))
}

// ----------------------------------------------------------- fabric run

fn parse_time(s: &str) -> Result<ibnet::Time, String> {
    ibnet::units::parse_time(s)
}

/// The options of `ibnet run` (src/main.rs `RunArgs`) that concern a run
/// in this process, with the same names and defaults.
#[derive(Parser, Debug)]
#[command(name = "ibnet run", no_binary_name = true)]
struct RunOpts {
    #[arg(long)]
    topology: String,
    #[arg(long)]
    lfts: Option<PathBuf>,
    #[arg(long, default_value = "thesis-ddr")]
    preset: String,
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long = "set")]
    set: Vec<String>,
    #[arg(long)]
    traffic: Vec<String>,
    #[arg(long, value_parser = parse_time)]
    until: Option<ibnet::Time>,
    #[arg(long)]
    latencies: bool,
    #[arg(long)]
    link_stats: Option<PathBuf>,
    #[arg(long)]
    heatmap: Option<PathBuf>,
    #[arg(long, value_parser = parse_time, default_value = "1us")]
    window: ibnet::Time,
    #[arg(long)]
    messages_csv: Option<PathBuf>,
    /// logical processes on threads (`ibnet run --threads`)
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn fabric_params(a: &RunOpts) -> anyhow::Result<ibnet::Params> {
    use anyhow::Context;
    let mut p =
        ibnet::Params::preset(&a.preset).with_context(|| format!("--preset {}", a.preset))?;
    if let Some(f) = &a.config {
        let text = ibnet::input::read_text(f)
            .map_err(|e| anyhow::anyhow!("--config {}", e.describe(f)))?;
        p = p
            .apply_toml(&text, &f.display().to_string())
            .context("--config")?;
    }
    for kv in &a.set {
        p = p
            .apply_override(kv)
            .with_context(|| format!("--set {kv}"))?;
    }
    p.check()?;
    Ok(p)
}

/// A closed-loop pattern on either engine, with the progress callback and
/// the observers' window ends: its summary, or the run's error.
fn closed_loop<F: ibnet::engine::Driven>(
    f: &mut F,
    spec: &ibnet::traffic::TrafficSpec,
    ranks: &[usize],
    until: Option<ibnet::Time>,
    prog: &mut Progress,
    until_ps: f64,
    observers: Option<&mut ibnet::observe::Observers>,
) -> R<(Option<ibnet::traffic::ClosedLoopSummary>, Option<String>)>
where
    for<'a> ibnet::observe::Windows<'a>: ibnet::traffic::WindowHook<F>,
{
    let mut hook = observers.map(ibnet::observe::Windows::new);
    let r = ibnet::traffic::run_closed_loop_observed(
        f,
        spec,
        ranks,
        until,
        &mut |f, m| loop_progress(prog, f, m, until_ps),
        hook.as_mut()
            .map(|h| h as &mut dyn ibnet::traffic::WindowHook<F>),
    );
    if let Some(e) = hook.and_then(|h| h.err) {
        return Err(input(format!("{e:#}")));
    }
    Ok(match r {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e.to_string())),
    })
}

/// An open-loop run to `limit` in `steps` steps, `step(t)` running to t
/// and giving the clock, the events and whether the run failed; the
/// progress callback after each (it may interrupt the run).
fn run_steps(
    limit: ibnet::Time,
    steps: u64,
    prog: &mut Progress,
    until_ps: f64,
    mut step: impl FnMut(ibnet::Time) -> R<(ibnet::Time, u64, bool)>,
) -> R<()> {
    for i in 1..=steps {
        let end = limit.0 / steps * i + if i == steps { limit.0 % steps } else { 0 };
        let (now, events, failed) = step(ibnet::Time(end))?;
        if prog.due()
            && !prog.call(
                &[
                    ("sim_time_ps", now.0 as f64),
                    ("until_ps", until_ps),
                    ("events", events as f64),
                ],
                false,
            )
        {
            return Err(Fail::Interrupted);
        }
        if failed {
            break;
        }
    }
    Ok(())
}

/// The progress of a closed loop after a completion instant, `m`
/// messages sent. (A signal stops the open-loop runs only: the
/// closed-loop driver has no way to stop early.)
fn loop_progress<F: ibnet::engine::Driven>(prog: &mut Progress, f: &F, m: u64, until_ps: f64) {
    if prog.due() {
        let _ = prog.call(
            &[
                ("sim_time_ps", f.now().0 as f64),
                ("until_ps", until_ps),
                ("events", f.events_processed() as f64),
                ("messages", m as f64),
            ],
            false,
        );
    }
}

/// `ibnet run WORDS --json --no-wall-time` (plus the wall time): the JSON
/// report as text with `ibnet run`'s keys; the run's error, if any, is in
/// its `error` field (exit code 1 on the command line).
#[pyfunction]
#[pyo3(signature = (words, progress=None))]
fn fabric_run(py: Python<'_>, words: Vec<String>, progress: Option<PyObject>) -> PyResult<String> {
    use ibnet::traffic::{apply_app_traffic, rank_hcas, TrafficSpec};
    use ibnet::{Fabric, Time};
    let a = RunOpts::try_parse_from(&words).map_err(|e| clap_err(e).into_py(py))?;
    let mut prog = Progress::new(progress);
    py.allow_threads(|| -> R<String> {
        let u = |e: anyhow::Error| input(format!("{e:#}"));
        let params = fabric_params(&a).map_err(u)?;
        let topo = open_topology(&a.topology, a.lfts.as_deref())?;
        let mut fabric = Fabric::new(&topo, &params).map_err(|e| {
            let mut from = format!("--preset {}", a.preset);
            if let Some(c) = &a.config {
                from += &format!(", --config {}", c.display());
            }
            for s in &a.set {
                from += &format!(", --set {s}");
            }
            input(format!("{e} (parameters: {from})"))
        })?;
        let mut specs = Vec::new();
        for s in &a.traffic {
            specs.push(TrafficSpec::parse(s).map_err(input)?);
        }
        let closed: Vec<&TrafficSpec> = specs.iter().filter(|s| s.is_closed_loop()).collect();
        if closed.len() > 1 {
            return Err(input("at most one closed-loop traffic pattern per run"));
        }
        for s in specs.iter().filter(|s| !s.is_closed_loop()) {
            apply_app_traffic(&mut fabric, &topo, s).map_err(input)?;
        }
        for s in &closed {
            ibnet::traffic::check_op_traffic(&fabric, s).map_err(input)?;
        }
        let obs_cfg = ibnet::observe::ObserveConfig {
            window: a.window,
            link_stats: a.link_stats.clone(),
            heatmap: a.heatmap.clone(),
            messages: a.messages_csv.clone(),
            trace: None,
            trace_nodes: Vec::new(),
            trace_from: Time(0),
            trace_until: None,
        };
        let mut observers = if obs_cfg.any() {
            Some(ibnet::observe::Observers::new(obs_cfg, &topo, &mut fabric).map_err(u)?)
        } else {
            None
        };
        let until = a.until.or(if closed.is_empty() {
            Some(Time(2_000_000_000))
        } else {
            None
        });
        let until_ps = until.map_or(0.0, |t| t.0 as f64);
        let t0 = Instant::now();
        let mut closed_summary = None;
        let mut run_error: Option<String> = None;
        let mut processes = None;
        // (a parallel run's processes may run another credit timer, with
        // the same results)
        let lazy_active = fabric.lazy_credit_timer_active();
        if a.threads != 1 {
            // the logical processes of `ibnet run --threads` (docs/scaling.md 2.6)
            if a.threads == 0 || a.threads > ibnet::engine::MAX_THREADS {
                return Err(input(format!(
                    "threads={}: expected 1 to {}",
                    a.threads,
                    ibnet::engine::MAX_THREADS
                )));
            }
            if specs.iter().any(|s| matches!(s, TrafficSpec::Op { .. })) {
                return Err(input(format!(
                    "threads={} does not support one-sided operations (put, get) yet",
                    a.threads
                )));
            }
            if !closed.is_empty() && specs.iter().any(|s| !s.is_closed_loop()) {
                return Err(input(format!(
                    "threads={} does not support closed-loop traffic beside open-loop traffic yet",
                    a.threads
                )));
            }
            let procs = ibnet::processes::Processes::new(
                &topo,
                &params,
                &specs,
                fabric.partition(a.threads),
                fabric.lazy_credit_timer_active(),
            );
            let mut par = procs.parallel().map_err(input)?;
            if let Some(spec) = closed.first() {
                (closed_summary, run_error) = closed_loop(
                    &mut par,
                    spec,
                    &rank_hcas(&topo),
                    until,
                    &mut prog,
                    until_ps,
                    observers.as_mut(),
                )?;
            } else if let Some(limit) = until {
                // (each step starts and joins the threads: 1% steps)
                run_steps(limit, 100, &mut prog, until_ps, |t| {
                    match observers.as_mut() {
                        Some(obs) => obs.run_parallel_until(&mut par, t).map_err(u)?,
                        None => par.run_until(t),
                    }
                    Ok((par.now(), par.events_processed(), par.error().is_some()))
                })?;
            }
            processes = Some((a.threads, par.stats()));
            fabric = par.into_fabric();
        } else if let Some(spec) = closed.first() {
            (closed_summary, run_error) = closed_loop(
                &mut fabric,
                spec,
                &rank_hcas(&topo),
                until,
                &mut prog,
                until_ps,
                observers.as_mut(),
            )?;
        } else if let Some(limit) = until {
            // as `ibnet run` when stderr is not a terminal: 1000 steps
            run_steps(limit, 1000, &mut prog, until_ps, |t| {
                match observers.as_mut() {
                    Some(obs) => obs.run_until(&mut fabric, t).map_err(u)?,
                    None => fabric.run_until(t),
                }
                Ok((
                    fabric.now(),
                    fabric.events_processed(),
                    fabric.error().is_some(),
                ))
            })?;
        }
        let wall = t0.elapsed().as_secs_f64();
        if prog.cb.is_some() {
            let _ = prog.call(
                &[
                    ("sim_time_ps", fabric.now().0 as f64),
                    ("until_ps", until_ps),
                    ("events", fabric.events_processed() as f64),
                    ("done", 1.0),
                ],
                true,
            );
        }
        if run_error.is_none() {
            if let Some(e) = fabric.error() {
                run_error = Some(e.to_string());
            }
        }
        if let Some(obs) = observers {
            obs.finish(&mut fabric, &topo).map_err(u)?;
        }
        let report = fabric.report_with(a.latencies);
        let mut warnings = Vec::new();
        if run_error.is_none() {
            warnings.extend(report.early_end_warning(params.start_stat_col_ns));
        }
        let mut run = serde_json::json!({
            "until_ps": until.map(|t| t.0),
            "sim_time_ps": fabric.now().0,
            "events_processed": fabric.events_processed(),
            "wall_s": wall,
            "events_per_sec": fabric.events_processed() as f64 / wall.max(1e-9),
            "sim_time_per_wall_s": fabric.now().as_secs_f64() / wall.max(1e-9),
            "lazy_credit_timer": lazy_active,
        });
        if let Some((n, st)) = processes {
            run["threads"] = n.into();
            run["sync_rounds"] = st.rounds.into();
            run["crossings"] = st.crossings.into();
            run["sync_wait_s"] = (st.wait_ns as f64 * 1e-9).into();
        }
        let mut out = serde_json::json!({
            "ibnet": env!("CARGO_PKG_VERSION"),
            "topology": a.topology,
            "preset": a.preset,
            "traffic": a.traffic,
            "params": params,
            "run": run,
            "report": report,
        });
        if let Some(c) = closed_summary {
            out["closed_loop"] = serde_json::to_value(c).expect("serialises");
        }
        if let Some(e) = run_error {
            out["error"] = serde_json::Value::String(e);
        }
        if !warnings.is_empty() {
            out["warnings"] = serde_json::json!(warnings);
        }
        Ok(out.to_string())
    })
    .map_err(|e| e.into_py(py))
}

/// The presets of the fabric (`--preset NAME`) and their parameters.
#[pyfunction]
#[pyo3(signature = (name, set=Vec::new()))]
fn preset(py: Python<'_>, name: String, set: Vec<String>) -> PyResult<String> {
    let r = (|| -> anyhow::Result<String> {
        use anyhow::Context;
        let mut p = ibnet::Params::preset(&name).with_context(|| format!("--preset {name}"))?;
        for kv in &set {
            p = p
                .apply_override(kv)
                .with_context(|| format!("--set {kv}"))?;
        }
        p.check()?;
        Ok(serde_json::to_string(&p)?)
    })();
    r.map_err(|e| input(format!("{e:#}")).into_py(py))
}

// ----------------------------------------------------------------- jobs

/// `loggopsim --job`'s placement: the HCAs (names) of each job on the
/// topology. `jobs`: (label, ranks, placement) with placement as after
/// `FILE:` (linear, round-robin, random:SEED, map:FILE).
#[pyfunction]
fn place_jobs(
    py: Python<'_>,
    spec: String,
    jobs: Vec<(String, u32, String)>,
) -> PyResult<Vec<Vec<String>>> {
    py.allow_threads(|| -> R<Vec<Vec<String>>> {
        use loggopsim::jobs;
        let topo = open_topology(&spec, None)?;
        let mut placements = Vec::new();
        let mut texts: Vec<Option<String>> = Vec::new();
        for (label, _, pl) in &jobs {
            let js = jobs::parse_job_spec(&format!("job:{pl}"))
                .map_err(|e| input(format!("{label}: placement {pl:?}: {e}")))?;
            // (a word that is no placement stays part of the file name)
            if js.file != Path::new("job") {
                return Err(input(format!(
                    "{label}: placement {pl:?}: expected linear, round-robin, random:SEED or map:FILE"
                )));
            }
            let p = js.placement;
            texts.push(match &p {
                jobs::Placement::Map(f) => Some(
                    schedgen::input::read_text_limited(f, schedgen::input::MAX_SMALL_TEXT_BYTES)
                        .map_err(|e| input(format!("{label}: map {}: {e}", f.display())))?,
                ),
                _ => None,
            });
            placements.push(p);
        }
        let needs: Vec<jobs::JobNeed> = jobs
            .iter()
            .enumerate()
            .map(|(j, (label, ranks, _))| jobs::JobNeed {
                label: label.clone(),
                ranks: *ranks,
                placement: &placements[j],
                map_text: texts[j].as_deref(),
            })
            .collect();
        let placed = jobs::place(&topo, &needs).map_err(input)?;
        Ok(placed
            .iter()
            .map(|hs| hs.iter().map(|&h| topo.nodes[h].name.clone()).collect())
            .collect())
    })
    .map_err(|e| e.into_py(py))
}

/// `loggopsim --job`'s merged schedule: job j's ranks follow those of
/// jobs 0..j-1.
#[pyfunction]
fn merge_schedules(py: Python<'_>, parts: Vec<NativeSchedule>) -> PyResult<NativeSchedule> {
    let refs: Vec<&loggopsim::schedule::Schedule> = parts.iter().map(|p| &p.s).collect();
    loggopsim::jobs::merge(&refs)
        .map(|s| NativeSchedule { s })
        .map_err(|e| input(e).into_py(py))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<NativeSchedule>()?;
    m.add_function(wrap_pyfunction!(load_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(gen, m)?)?;
    m.add_function(wrap_pyfunction!(trace2goal, m)?)?;
    m.add_function(wrap_pyfunction!(topology, m)?)?;
    m.add_function(wrap_pyfunction!(route, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::backends, m)?)?;
    m.add_function(wrap_pyfunction!(served::session_objects, m)?)?;
    // Ctrl-C is Python's (KeyboardInterrupt, then the run unwinds and its
    // sessions unlink their objects): ipc-proto's signal thread, which
    // would exit the interpreter on it, handles SIGTERM and SIGHUP only.
    ipc_proto::signals::leave_sigint_to_program();
    m.add_function(wrap_pyfunction!(fabric_run, m)?)?;
    m.add_function(wrap_pyfunction!(preset, m)?)?;
    m.add_function(wrap_pyfunction!(place_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(merge_schedules, m)?)?;
    Ok(())
}
