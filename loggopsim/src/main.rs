//! `loggopsim`: command line of the LogGOPS simulator.
//!
//! Exit codes: 0 success; 1 simulation failure (unmatched receive/unexpected
//! queues at the end, operations that never completed, network error);
//! 2 usage or input errors (bad options, unreadable or malformed schedule,
//! and a time overflow: a schedule or parameters whose times exceed
//! 2^64-2 ps are bad input).

use anyhow::Context;
use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use loggopsim::engine::{NoTrace, Params, Sim, TraceEvent, Tracer};
use loggopsim::network::registry::{self, Backend, Prebuilt};
use loggopsim::network::Network;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "loggopsim",
    version,
    about = "LogGOPS simulator of GOAL schedules (same per-host finish times as LogGOPSim)",
    long_about = "Simulates a GOAL schedule (text, or LogGOPSim's binary layout, detected by content) \
with the LogGOPS model and prints per-host finish times in picoseconds (`Host 0: 5654 ps`; \
--loggopsim-output prints LogGOPSim's exact bytes instead).\n\n\
Times on the command line take a unit suffix (ps, ns, us, ms, s: `-L 2.5ns`, `-o 1us`); \
a bare number is in picoseconds (-L -o -g -G -O, as in LogGOPSim; -G and -O per byte).\n\n\
Examples:\n  loggopsim -f app.goal\n  loggopsim -f app.goal -L 2500 -o 1.5ns --json\n  \
loggopsim -f app.goal --report run.txt --progress\n  \
loggopsim convert app.goal app.bin\n  loggopsim gen dissemination -s 8\n  \
loggopsim --network flow --topology H8_S2 --job pp.goal:round-robin --job a2a.goal --slowdown\n\n\
Exit codes: 0 ok, 1 simulation failure (unmatched queues, operations never completed, \
network error; with --network ipc also: the fabric died, stopped or failed), 2 usage/input \
error (including a time overflow). 3 (a system resource such as the message-queue budget \
RLIMIT_MSGQUEUE or /dev/shm is exhausted) comes from the fabric side (ibnet serve), which \
creates the IPC objects; scripts/cosim passes it on.",
    disable_version_flag = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    sim: SimArgs,
    /// Print the version.
    #[arg(short = 'V', long = "version", action = ArgAction::Version)]
    version: Option<bool>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Generate a GOAL schedule from a pattern (LogGOPSim's Schedgen).
    Gen(schedgen::cli::GenArgs),
    /// Translate liballprof MPI traces into a GOAL schedule.
    #[command(name = "trace2goal")]
    Trace2Goal(schedgen::cli::Trace2GoalArgs),
    /// Convert a schedule between GOAL text and the binary layout (magic 4223; 4224 when it has put/get/poll).
    Convert(ConvertArgs),
}

#[derive(Args, Debug)]
struct ConvertArgs {
    /// Input schedule (text or binary, detected by content).
    input: PathBuf,
    /// Output file.
    output: PathBuf,
    /// Output format; default: the other one.
    #[arg(long, value_enum)]
    to: Option<Format>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Binary,
}

#[derive(Args, Debug)]
struct SimArgs {
    /// Schedule to simulate (GOAL text or binary layout).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "jobs"
    )]
    file: Option<PathBuf>,
    /// Several jobs on one fabric (repeatable; docs/jobs.md): a schedule and
    /// where its ranks go, FILE[:PLACEMENT] with PLACEMENT linear (the next
    /// free HCAs in rank order; the default), round-robin (one host per leaf
    /// switch in turn), random:SEED (seeded, reproducible) or map:FILE (one
    /// HCA name or index per rank and line). Job j's ranks follow those of
    /// jobs 0..j-1 in the merged rank space; per-job finish times are printed
    /// after the report.
    #[arg(
        long = "job",
        value_name = "FILE[:PLACEMENT]",
        help_heading = "Several jobs (--job)"
    )]
    jobs: Vec<String>,
    /// With --job: also run each job alone on the same HCAs (same backend
    /// and options; not --network ipc) and print its slowdown (finish time
    /// together / alone). -v, --timeline, --qstat and the fabric logs cover
    /// the merged run only; --fabric-report FILE gets FILE.alone-jobJ.
    #[arg(long, requires = "jobs", help_heading = "Several jobs (--job)")]
    slowdown: bool,
    /// With --job: print the merged rank map (`rank hca_name` lines, the
    /// format of --map and `ibnet serve --map`) and exit; scripts/cosim uses
    /// it to give the fabric process the jobs' placement.
    #[arg(
        long = "print-map",
        requires = "jobs",
        help_heading = "Several jobs (--job)"
    )]
    print_map: bool,
    /// Latency L (ps, or with a unit: 2.5ns).
    #[arg(short = 'L', default_value = "2500", value_parser = time_ps, value_name = "TIME")]
    l: u64,
    /// Per-message CPU overhead o (ps, or with a unit).
    #[arg(short = 'o', default_value = "1500", value_parser = time_ps, value_name = "TIME")]
    o: u64,
    /// Gap between messages g (NIC; ps, or with a unit).
    #[arg(short = 'g', default_value = "1000", value_parser = time_ps, value_name = "TIME")]
    g: u64,
    /// Gap per byte G (NIC; ps per byte, or with a unit per byte).
    #[arg(short = 'G', default_value = "6", value_parser = time_ps, value_name = "TIME")]
    big_g: u64,
    /// CPU overhead per byte O (ps per byte, or with a unit per byte).
    #[arg(short = 'O', default_value = "0", value_parser = time_ps, value_name = "TIME")]
    big_o: u64,
    /// Eager threshold S in bytes (larger messages use rendezvous).
    #[arg(short = 'S', default_value_t = 65535)]
    s: u64,
    /// Second parameter set: o for messages above --large-threshold (ps, or with a unit).
    #[arg(long = "o-large", value_parser = time_ps, value_name = "TIME")]
    o_large: Option<u64>,
    /// Second parameter set: O for messages above --large-threshold (ps per byte, or with a unit).
    #[arg(long = "O-large", value_parser = time_ps, value_name = "TIME")]
    big_o_large: Option<u64>,
    /// Threshold of the second parameter set (default: S).
    #[arg(long = "large-threshold")]
    large_threshold: Option<u64>,
    /// Print a trace line for every event (stdout).
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Format of the -v lines: `native` (one line per event, times with
    /// units) or `loggopsim` (LogGOPSim's own -v text: bare ps numbers,
    /// for a mechanical diff against LogGOPSim listings such as the
    /// thesis's Appendix J; docs/thesis.md lists the lines it leaves out).
    #[arg(
        long = "verbose-format",
        value_enum,
        default_value = "native",
        value_name = "FORMAT"
    )]
    verbose_format: VerboseFormat,
    /// Write a timeline (osend/orecv/loclop/transmission lines) to FILE
    /// (LogGOPSim's -V; here -V is --version as in every binary of the project).
    #[arg(long = "timeline", value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Show progress on stderr: a spinner on a terminal, otherwise a plain
    /// line every few seconds (events, simulated time).
    #[arg(long)]
    progress: bool,
    /// Also write the report (text or JSON, as printed) to FILE; stdout is unchanged.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Print LogGOPSim's exact text output (bare numbers; the maximum's
    /// seconds computed as if times were ns) instead of the native one with units.
    #[arg(long = "loggopsim-output")]
    loggopsim_output: bool,
    /// When a send hands its message to the network: at the start of the
    /// send (`start`, the default, the thesis's chapter 5) or after the
    /// sender's overhead o (`after-o`, the thesis's chapter-4 integration).
    /// The LogGP backend computes arrivals from t + o + L either way.
    #[arg(
        long = "insert-at",
        value_enum,
        default_value = "start",
        value_name = "WHEN"
    )]
    insert_at: InsertAt,
    /// CPU noise trace (lines `start<TAB>duration`).
    #[arg(long = "noise-trace", value_name = "FILE")]
    noise_trace: Option<PathBuf>,
    /// Seed of the per-host offsets into the noise trace.
    #[arg(long = "noise-seed", default_value_t = 0)]
    noise_seed: u64,
    /// Write per-host maximum RQ/UQ lengths to PREFIX.qstat.
    #[arg(long, value_name = "PREFIX")]
    qstat: Option<String>,
    /// Print the maximum finishing time (`Maximum finishing time at host
    /// H: T`) instead of one line per host, as LogGOPSim's --batchmode
    /// (and as with more than 16 hosts); the header and PERFORMANCE lines
    /// stay, so a run prints three lines.
    #[arg(long)]
    batchmode: bool,
    /// Print a JSON report instead of the text output.
    #[arg(long)]
    json: bool,
    /// Network backend.
    #[arg(long, value_parser = registry::value_parser(), default_value = "loggp")]
    network: &'static Backend,
    /// Options of the co-simulation backends (ipc, inproc).
    #[command(flatten)]
    cosim: loggopsim::network::fabric::CosimArgs,
    /// Options of the fast backends (flow, penalty, lop).
    #[command(flatten)]
    fast: loggopsim::network::flow::FastArgs,
}

/// An error that exits with a specific code.
#[derive(Debug)]
struct Exit(i32, String);
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}
impl std::error::Error for Exit {}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Some(Cmd::Gen(a)) => schedgen::cli::run_gen(&a).map(|_| 0),
        Some(Cmd::Trace2Goal(a)) => schedgen::cli::run_trace2goal(&a).map(|_| 0),
        Some(Cmd::Convert(a)) => convert(&a).map(|_| 0),
        None => simulate(&cli.sim),
    };
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let code = e.downcast_ref::<Exit>().map(|x| x.0).unwrap_or(2);
            eprintln!("loggopsim: error: {e:#}");
            std::process::exit(code);
        }
    }
}

/// Clap parser of a command-line time: unit suffix or picoseconds.
fn time_ps(s: &str) -> Result<u64, String> {
    ipc_proto::time::parse_time_arg(s, ipc_proto::time::TimeUnit::Ps).map(|t| t.as_ps())
}

fn input_err(e: impl std::fmt::Display) -> anyhow::Error {
    Exit(2, e.to_string()).into()
}

fn convert(a: &ConvertArgs) -> anyhow::Result<()> {
    let s = loggopsim::load_schedule(&a.input).map_err(input_err)?;
    let is_bin = {
        use std::io::Read;
        let mut b = [0u8; 8];
        let mut f = std::fs::File::open(&a.input)?;
        f.read(&mut b)? == 8 && u64::from_le_bytes(b) == loggopsim::binfmt::MAGIC
    };
    let to =
        a.to.unwrap_or(if is_bin { Format::Text } else { Format::Binary });
    let f = std::fs::File::create(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    let mut w = std::io::BufWriter::new(f);
    match to {
        Format::Text => loggopsim::goal::write_goal(&s, &mut w)?,
        Format::Binary => loggopsim::binfmt::write(&s, &mut w)?,
    }
    w.flush()?;
    Ok(())
}

fn params(a: &SimArgs) -> Params {
    Params {
        l: a.l,
        o: a.o,
        g: a.g,
        big_g: a.big_g,
        big_o: a.big_o,
        s: a.s,
        o_large: a.o_large,
        big_o_large: a.big_o_large,
        large_threshold: a.large_threshold,
    }
}

fn make_network(
    a: &SimArgs,
    cosim: &loggopsim::network::fabric::CosimArgs,
    num_ranks: u32,
    prebuilt: Option<Prebuilt>,
) -> anyhow::Result<Box<dyn Network>> {
    a.network
        .make(registry::Setup {
            cosim,
            fast: &a.fast,
            num_ranks,
            prebuilt,
        })
        .map_err(|e| Exit(e.code, e.message).into())
}

/// The `-v` line of an event: its Debug form with ` ps` after every time
/// field (`Calc { host: 0, cpu: 0, node: 0, start: 0 ps, end: 100 ps }`).
fn with_ps_units(debug: &str) -> String {
    const TIME_FIELDS: &[&str] = &[
        "start", "end", "time", "sent", "arrived", "from", "to", "now",
    ];
    let mut out = String::with_capacity(debug.len() + 32);
    let mut rest = debug;
    while let Some(i) = rest.find(": ") {
        let key_start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |k| k + 1);
        let key = &rest[key_start..i];
        out.push_str(&rest[..i + 2]);
        rest = &rest[i + 2..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..digits]);
        rest = &rest[digits..];
        if digits > 0 && TIME_FIELDS.contains(&key) {
            out.push_str(" ps");
        }
    }
    out.push_str(rest);
    out
}

/// Tracer for -v and --timeline.
struct CliTracer {
    verbose: Option<std::io::BufWriter<std::io::Stdout>>,
    timeline: Option<std::io::BufWriter<std::fs::File>>,
    p: Params,
    /// -v in LogGOPSim's text format
    loggopsim_format: bool,
    err: Option<std::io::Error>,
}

impl CliTracer {
    fn write(&mut self, e: &TraceEvent) -> std::io::Result<()> {
        if let Some(v) = &mut self.verbose {
            if self.loggopsim_format {
                loggopsim::verbose::write_event(v, e, &self.p)?;
            } else {
                writeln!(v, "{}", with_ps_units(&format!("{e:?}")))?;
            }
        }
        if let Some(t) = &mut self.timeline {
            match *e {
                TraceEvent::Calc {
                    host,
                    cpu,
                    start,
                    end,
                    ..
                } => writeln!(t, "loclop {host} {cpu} {start} {end} 0.0 0.0 1.0;")?,
                TraceEvent::Send {
                    host,
                    cpu,
                    start,
                    end,
                    ..
                } => writeln!(t, "osend {host} {cpu} {start} {end} 1.0 0.0 0.0;")?,
                TraceEvent::MsgReceived {
                    host,
                    cpu,
                    src,
                    size,
                    sent,
                    arrived,
                    start,
                    end,
                    ..
                } => {
                    writeln!(t, "orecv {host} {cpu} {start} {end} 0.0 1.0 0.0;")?;
                    let o = self.p.overheads(size).0;
                    writeln!(
                        t,
                        "transmission {src} {host} {} {arrived} {size} {} 0.0 0.0 0.0;",
                        sent + o,
                        self.p.big_g
                    )?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Tracer for CliTracer {
    fn event(&mut self, e: &TraceEvent) {
        if self.err.is_none() {
            if let Err(x) = self.write(e) {
                self.err = Some(x);
            }
        }
    }
}

/// The options that depend on the backend's capabilities (the session
/// key of `--network ipc`, checked before anything is read or attached;
/// with `slowdown`, also `--slowdown`, checked after the job specs); a
/// refusal is bad input.
fn check_backend(a: &SimArgs, slowdown: bool) -> anyhow::Result<()> {
    let r = registry::Request {
        key: a.cosim.key.as_deref(),
        print_map: a.print_map,
        slowdown: slowdown && a.slowdown,
    };
    registry::check(a.network, &r).map_err(input_err)
}

fn simulate(a: &SimArgs) -> anyhow::Result<i32> {
    check_backend(a, false)?;
    if !a.jobs.is_empty() {
        return simulate_jobs(a);
    }
    let Some(file) = &a.file else {
        return Err(Exit(
            2,
            "no schedule given: use -f FILE or --job FILE[:PLACEMENT] (see --help)".into(),
        )
        .into());
    };
    // One-piece: the fabric is built while the schedule is read (on two
    // CPUs both at once; the run itself is one thread, the fabric called
    // by the scheduler's). A schedule error is still reported first.
    let (sched, prebuilt) = if a.network.caps.prebuild {
        std::thread::scope(|sc| {
            // the main thread's stack size (8 MiB), as the build had there
            let fabric = std::thread::Builder::new()
                .name("fabric-build".into())
                .stack_size(8 << 20)
                .spawn_scoped(sc, || loggopsim::network::inproc::build_unchecked(&a.cosim));
            let sched = loggopsim::load_schedule(file);
            let fabric = match fabric {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err("building the fabric panicked".into())),
                // no thread to be had: build it here, after the schedule
                Err(_) => loggopsim::network::inproc::build_unchecked(&a.cosim),
            };
            (sched, Some(fabric))
        })
    } else {
        (loggopsim::load_schedule(file), None)
    };
    let sched = sched.map_err(input_err)?;
    let noise = load_noise(a, sched.num_ranks())?;
    if a.network.caps.topology {
        check_fabric_sizes(file, &sched)?;
    }
    let o = execute(a, &a.cosim, sched, noise, true, prebuilt)?;
    emit(a, &o, None)
}

fn load_noise(a: &SimArgs, ranks: u32) -> anyhow::Result<Option<loggopsim::noise::Noise>> {
    Ok(match &a.noise_trace {
        Some(nf) => {
            let text =
                schedgen::input::read_text_limited(nf, schedgen::input::MAX_SMALL_TEXT_BYTES)
                    .map_err(|e| input_err(format!("{}: {e}", nf.display())))?;
            Some(
                loggopsim::noise::Noise::parse(
                    &nf.display().to_string(),
                    &text,
                    ranks,
                    a.noise_seed,
                )
                .map_err(input_err)?,
            )
        }
        None => None,
    })
}

/// What one simulation run produced.
struct Outcome {
    rep: loggopsim::engine::Report,
    name: String,
    params: Params,
    wall: f64,
    cpu: f64,
}

/// Runs `sched` on the backend of `a` with the fabric options `cosim`
/// (`trace`: honour -v and --timeline).
fn execute(
    a: &SimArgs,
    cosim: &loggopsim::network::fabric::CosimArgs,
    sched: loggopsim::schedule::Schedule,
    noise: Option<loggopsim::noise::Noise>,
    trace: bool,
    prebuilt: Option<Prebuilt>,
) -> anyhow::Result<Outcome> {
    let p = params(a);
    let cosim_given = cosim;
    // put/get need a version-3 session; where this process
    // builds the fabric (inproc, onepiece) a version-2 protocol is raised
    let raised;
    let cosim = if sched.uses_one_sided()
        && a.network.caps.fabric_in_process
        && cosim.protocol.version == 2
    {
        raised = loggopsim::network::fabric::CosimArgs {
            protocol: cosim.protocol.with_one_sided(),
            ..cosim.clone()
        };
        &raised
    } else {
        cosim
    };
    // a server prebuilt for another protocol (raised above) is not used
    let prebuilt = prebuilt.filter(|_| std::ptr::eq(cosim, cosim_given));
    let net = make_network(a, cosim, sched.num_ranks(), prebuilt)?;
    if trace && (a.verbose || a.timeline.is_some()) {
        let tl = match &a.timeline {
            Some(f) => Some(std::io::BufWriter::new(
                std::fs::File::create(f).map_err(|e| input_err(format!("{}: {e}", f.display())))?,
            )),
            None => None,
        };
        let tr = CliTracer {
            verbose: a
                .verbose
                .then(|| std::io::BufWriter::new(std::io::stdout())),
            timeline: tl,
            p,
            loggopsim_format: a.verbose_format == VerboseFormat::Loggopsim,
            err: None,
        };
        let sim = Sim::with_tracer(sched, p, net, tr)?;
        run(sim, a, noise, |t| {
            if let Some(e) = t.err.take() {
                return Err(e);
            }
            if let Some(v) = &mut t.verbose {
                v.flush()?;
            }
            if let Some(v) = &mut t.timeline {
                v.flush()?;
            }
            Ok(())
        })
    } else {
        let sim = Sim::with_tracer(sched, p, net, NoTrace)?;
        run(sim, a, noise, |_| Ok(()))
    }
}

/// A rank map written for the fabric backends (`--map` format), removed
/// when dropped.
struct TempMap(PathBuf);
impl TempMap {
    fn write(
        topo: &ibnet::topology::Topology,
        hcas: &[usize],
        tag: &str,
    ) -> anyhow::Result<TempMap> {
        let mut text = String::from("# rank -> HCA map of loggopsim --job (temporary)\n");
        for (r, &h) in hcas.iter().enumerate() {
            text.push_str(&format!("{r} {}\n", topo.nodes[h].name));
        }
        let path =
            std::env::temp_dir().join(format!("loggopsim-jobs-{}-{tag}.map", std::process::id()));
        std::fs::write(&path, text)
            .with_context(|| format!("cannot write the rank map {}", path.display()))?;
        Ok(TempMap(path))
    }
}
impl Drop for TempMap {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `--job`: place the jobs, merge them into one schedule, run it, and
/// (with --slowdown) each job alone on the same HCAs; per-job report.
fn simulate_jobs(a: &SimArgs) -> anyhow::Result<i32> {
    use loggopsim::jobs;
    let specs: Vec<jobs::JobSpec> = a
        .jobs
        .iter()
        .map(|s| jobs::parse_job_spec(s).map_err(|e| input_err(format!("--job {s:?}: {e}"))))
        .collect::<anyhow::Result<_>>()?;
    if a.cosim.fabric.map.is_some() {
        return Err(input_err(
            "--map cannot be combined with --job: give a job's hosts with its placement \
             (FILE:map:HOSTS)",
        ));
    }
    check_backend(a, true)?;
    let labels: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(j, s)| format!("job {j} ({})", s.file.display()))
        .collect();
    let mut scheds = Vec::with_capacity(specs.len());
    for (j, s) in specs.iter().enumerate() {
        // (the reader's errors start with the file's name)
        let sc =
            loggopsim::load_schedule(&s.file).map_err(|e| input_err(format!("job {j}: {e}")))?;
        if a.network.caps.topology {
            check_fabric_sizes(&s.file, &sc)?;
        }
        scheds.push(sc);
    }
    let uses_topology = a.network.caps.topology || a.print_map;
    let mut placed: Option<(ibnet::topology::Topology, Vec<Vec<usize>>)> = None;
    if uses_topology {
        let t = &a.cosim.fabric.topology;
        let topo =
            ibnet::topology::open(t).map_err(|e| input_err(ibnet::topology::open_error(t, &e)))?;
        let mut texts: Vec<Option<String>> = Vec::new();
        for (j, s) in specs.iter().enumerate() {
            texts.push(match &s.placement {
                jobs::Placement::Map(f) => Some(
                    schedgen::input::read_text_limited(f, schedgen::input::MAX_SMALL_TEXT_BYTES)
                        .map_err(|e| {
                            input_err(format!("{}: map {}: {e}", labels[j], f.display()))
                        })?,
                ),
                _ => None,
            });
        }
        let needs: Vec<jobs::JobNeed> = specs
            .iter()
            .enumerate()
            .map(|(j, s)| jobs::JobNeed {
                label: labels[j].clone(),
                ranks: scheds[j].num_ranks(),
                placement: &s.placement,
                map_text: texts[j].as_deref(),
            })
            .collect();
        let p = jobs::place(&topo, &needs).map_err(input_err)?;
        placed = Some((topo, p));
    }
    let global: Vec<usize> = placed
        .as_ref()
        .map(|(_, p)| p.iter().flatten().copied().collect())
        .unwrap_or_default();
    if a.print_map {
        let (topo, _) = placed.as_ref().expect("placed");
        let mut so = std::io::stdout().lock();
        for (r, &h) in global.iter().enumerate() {
            writeln!(so, "{r} {}", topo.nodes[h].name)?;
        }
        so.flush()?;
        return Ok(0);
    }
    let mut leaves: Vec<Vec<String>> = vec![Vec::new(); specs.len()];
    match &placed {
        Some((topo, p)) => {
            for (j, hcas) in p.iter().enumerate() {
                let ls = jobs::leaves_of(topo, hcas);
                leaves[j] = ls
                    .iter()
                    .map(|l| l.map_or("(none)".to_string(), |n| topo.nodes[n].name.clone()))
                    .collect();
                if ls.len() == 1 {
                    let who = if hcas.len() == 1 {
                        "its only rank is".to_string()
                    } else {
                        format!("all {} ranks are", hcas.len())
                    };
                    eprintln!(
                        "loggopsim: warning: {}: {who} on leaf switch {}: its traffic never \
                         leaves that switch, so it cannot contend with other jobs for \
                         inter-switch links (place it with round-robin, random:SEED or map:FILE)",
                        labels[j], leaves[j][0]
                    );
                }
            }
        }
        None => eprintln!(
            "loggopsim: note: --network loggp has no topology: placements are not used (job j's \
             ranks follow jobs 0..j-1) and jobs cannot slow each other down"
        ),
    }
    // (merge checks that the ranks fit u32 before the offsets are summed)
    let merged = jobs::merge(&scheds.iter().collect::<Vec<_>>()).map_err(input_err)?;
    let firsts: Vec<u32> = scheds
        .iter()
        .scan(0u32, |acc, s| {
            let f = *acc;
            *acc += s.num_ranks();
            Some(f)
        })
        .collect();
    let noise = load_noise(a, merged.num_ranks())?;
    // The fabric backends in this process read the placement from a map file.
    let in_process_fabric = a.network.caps.map_in_process;
    let mut cosim = a.cosim.clone();
    let _map = match &placed {
        Some((topo, _)) if in_process_fabric => {
            let m = TempMap::write(topo, &global, "all")?;
            cosim.fabric.map = Some(m.0.clone());
            Some(m)
        }
        _ => None,
    };
    let o = execute(a, &cosim, merged, noise, true, None)?;
    if !o.rep.ok() {
        return emit(a, &o, None);
    }
    let mut results = Vec::with_capacity(specs.len());
    for (j, s) in specs.iter().enumerate() {
        let n = scheds[j].num_ranks();
        let f0 = firsts[j] as usize;
        let times = o.rep.finish_times[f0..f0 + n as usize].to_vec();
        results.push(jobs::JobResult {
            job: j,
            schedule: s.file.display().to_string(),
            placement: s.placement.to_string(),
            num_ranks: n,
            first_global_rank: firsts[j],
            hcas: placed
                .as_ref()
                .map(|(t, p)| p[j].iter().map(|&h| t.nodes[h].name.clone()).collect())
                .unwrap_or_default(),
            single_switch: leaves[j].len() == 1,
            leaf_switches: std::mem::take(&mut leaves[j]),
            finish_time_ps: times.iter().copied().max().unwrap_or(0),
            finish_times_ps: times,
            alone_finish_time_ps: None,
            alone_finish_times_ps: None,
            slowdown: None,
        });
    }
    if a.slowdown {
        for (j, sc) in scheds.into_iter().enumerate() {
            let mut cosim_j = a.cosim.clone();
            // The merged run's fabric report and logs stay as they are:
            // an alone run writes its report next to it (FILE.alone-jobJ)
            // and no logs.
            cosim_j.fabric_report = a.cosim.fabric_report.as_ref().map(|f| {
                let mut s = f.clone().into_os_string();
                s.push(format!(".alone-job{j}"));
                PathBuf::from(s)
            });
            cosim_j.log_inserts = None;
            cosim_j.log_arrivals = None;
            let _mj = match &placed {
                Some((topo, p)) if in_process_fabric => {
                    let m = TempMap::write(topo, &p[j], &format!("job{j}"))?;
                    cosim_j.fabric.map = Some(m.0.clone());
                    Some(m)
                }
                _ => None,
            };
            let noise_j = load_noise(a, sc.num_ranks())?;
            let oj = execute(a, &cosim_j, sc, noise_j, false, None)?;
            if !oj.rep.ok() {
                return Err(Exit(
                    1,
                    format!(
                        "{} alone: the run left unmatched or incomplete operations",
                        labels[j]
                    ),
                )
                .into());
            }
            let alone = oj.rep.finish_times.clone();
            let amax = alone.iter().copied().max().unwrap_or(0);
            let r = &mut results[j];
            r.slowdown = (amax > 0).then(|| r.finish_time_ps as f64 / amax as f64);
            r.alone_finish_time_ps = Some(amax);
            r.alone_finish_times_ps = Some(alone);
        }
    }
    emit(a, &o, Some(&results))
}

/// Largest message the flit-level fabric simulates.
const FABRIC_MAX_MESSAGE_BYTES: u64 = registry::MAX_MESSAGE_BYTES;

fn check_fabric_sizes(
    file: &std::path::Path,
    s: &loggopsim::schedule::Schedule,
) -> anyhow::Result<()> {
    for r in 0..s.num_ranks() {
        for n in s.rank_nodes(r) {
            let op = s.op(n);
            if op.kind == loggopsim::schedule::Kind::Send && op.size > FABRIC_MAX_MESSAGE_BYTES {
                return Err(Exit(
                    2,
                    format!(
                        "{}: rank {r}: a send of {} bytes is larger than the largest message the \
                         fabric simulates ({FABRIC_MAX_MESSAGE_BYTES} bytes, 1 TiB); the LogGP \
                         backend (--network loggp) has no such limit",
                        file.display(),
                        op.size
                    ),
                )
                .into());
            }
        }
    }
    Ok(())
}

/// `--verbose-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum VerboseFormat {
    /// one line per event, times with units
    Native,
    /// LogGOPSim's -v text
    Loggopsim,
}

/// `--insert-at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum InsertAt {
    /// at the start of the send (t)
    Start,
    /// after the sender's overhead (t + o)
    #[value(name = "after-o")]
    AfterO,
}

fn run<T: Tracer>(
    mut sim: Sim<Box<dyn Network>, T>,
    a: &SimArgs,
    noise: Option<loggopsim::noise::Noise>,
    flush: impl FnOnce(&mut T) -> std::io::Result<()>,
) -> anyhow::Result<Outcome> {
    if let Some(n) = noise {
        sim.set_noise(n);
    }
    sim.set_insert_after_o(a.insert_at == InsertAt::AfterO);
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    let bar = (a.progress && tty).then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}").unwrap());
        b
    });
    // Not a terminal: plain lines, one at the start, then every 5 s, and
    // one at the end.
    let mut plain_next = (a.progress && !tty).then(|| 5.0f64);
    if plain_next.is_some() {
        eprintln!(
            "loggopsim: progress: started, {} operations on {} ranks",
            sim.schedule_ops(),
            sim.schedule_ranks()
        );
    }
    let t0 = Instant::now();
    let c0 = ibcosim_common::cpu::process_seconds();
    let mut res = Ok(());
    loop {
        match sim.step() {
            Ok(Some(t)) => {
                if sim.processed().is_multiple_of(1 << 16) {
                    // progress for the IPC heartbeat (a hung scheduler stops it)
                    ipc_proto::liveness::beat();
                    if let Some(b) = &bar {
                        b.set_message(format!(
                            "{} events, simulated time {}",
                            sim.events(),
                            ipc_proto::time::format_ps_human(t.as_ps())
                        ));
                        b.tick();
                    }
                    if let Some(next) = &mut plain_next {
                        let el = t0.elapsed().as_secs_f64();
                        if el >= *next {
                            eprintln!(
                                "loggopsim: progress: {el:.1} s wall, {} events, simulated time {} ps ({})",
                                sim.events(),
                                t.as_ps(),
                                ipc_proto::time::format_ps_human(t.as_ps())
                            );
                            *next = el + 5.0;
                        }
                    }
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
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if plain_next.is_some() {
        eprintln!(
            "loggopsim: progress: finished, {wall:.1} s wall, {} events, simulated time {} ps ({})",
            sim.events(),
            sim.now().as_ps(),
            ipc_proto::time::format_ps_human(sim.now().as_ps())
        );
    }
    flush(sim.tracer_mut()).context("writing the trace/timeline")?;
    res.map_err(|e| {
        // A time overflow comes from the schedule or the parameters: bad input.
        let code = if matches!(e, loggopsim::engine::SimError::TimeOverflow { .. }) {
            2
        } else {
            1
        };
        Exit(code, format!("simulation failed: {e}"))
    })?;
    Ok(Outcome {
        rep: sim.report(),
        name: sim.network().name().to_string(),
        params: *sim.params(),
        wall,
        cpu,
    })
}

/// Prints the report of a run (and the jobs' section) and returns the exit code.
fn emit(
    a: &SimArgs,
    o: &Outcome,
    jobs: Option<&[loggopsim::jobs::JobResult]>,
) -> anyhow::Result<i32> {
    let (rep, name, params, wall, cpu) = (&o.rep, &o.name, &o.params, o.wall, o.cpu);
    if let Some(prefix) = &a.qstat {
        let path = format!("{prefix}.qstat");
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(&path).with_context(|| format!("cannot create {path}"))?,
        );
        writeln!(f, "# host max_rq max_uq")?;
        for h in 0..rep.num_hosts as usize {
            writeln!(f, "{h} {} {}", rep.max_rq[h], rep.max_uq[h])?;
        }
        f.flush()?;
    }
    let mut out = if a.json {
        loggopsim::report::json(name, rep, params, wall, cpu)
    } else {
        let f = if a.loggopsim_output {
            loggopsim::report::TextFormat::LogGopSim
        } else {
            loggopsim::report::TextFormat::Native
        };
        loggopsim::report::text_as(name, rep, params, wall, a.batchmode, f)
    };
    if let Some(j) = jobs {
        if a.json {
            out = loggopsim::jobs::add_to_json_report(&out, j);
        } else {
            out.push_str(&loggopsim::jobs::text(j, a.batchmode));
        }
    }
    if let Some(path) = &a.report {
        std::fs::write(path, out.as_bytes())
            .map_err(|e| Exit(2, format!("--report {}: {e}", path.display())))?;
    }
    let mut so = std::io::stdout().lock();
    so.write_all(out.as_bytes())?;
    so.flush()?;
    let stat = |k: &str| {
        rep.network_stats
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| *v)
    };
    if let (Some(late), Some(lag)) = (stat("late_arrivals"), stat("max_arrival_lag_ps")) {
        if late > 0 {
            eprintln!(
                "loggopsim: warning: {late} arrivals were reported for times before the scheduler's \
                 clock (largest lag {lag} ps): the notify-v1 protocol lets the scheduler run ahead of \
                 messages in flight (docs/protocol.md rule 3); with several CPUs per host or g > o \
                 results may differ from the query protocol at 1 ps, which is exact, as is \
                 --protocol notify (version 2)"
            );
        }
    }
    if !rep.leftovers.is_empty() {
        eprintln!("loggopsim: error: unmatched receive/unexpected queues at the end of the run");
        return Ok(1);
    }
    if rep.incomplete_ops > 0 {
        eprintln!(
            "loggopsim: error: {} operations never completed",
            rep.incomplete_ops
        );
        return Ok(1);
    }
    Ok(0)
}
