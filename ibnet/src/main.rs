//! `ibnet`: command line of the flit-level InfiniBand fabric simulator.
//!
//! - `ibnet run`: the fabric alone with standalone traffic; prints the
//!   reference's sink/obuf summaries or a JSON report.
//! - `ibnet serve`: the co-simulation server (ibnet::server).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use ibnet::engine::Parallel;
use ibnet::options::{self, FabricOptions};
use ibnet::traffic::{apply_app_traffic, rank_hcas, ClosedLoopSummary, TrafficSpec};
use ibnet::units::parse_time;
use ibnet::{topology, Fabric, Params, Report, Time};
use serde::Serialize;

#[derive(Parser)]
#[command(
    name = "ibnet",
    version,
    propagate_version = true,
    about = "Flit-level InfiniBand fabric simulator (docs/model/fabric.md)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the fabric alone with standalone traffic.
    #[command(after_help = "\
Traffic specs (--traffic, repeatable):
  param:SRC=DST[,SRC=DST...]      app of LID SRC streams to LID DST (reference `param` mode)
  seq_loop:FILE.dstSeq[:INI]      destination sequences, cyclic (INI defaults to FILE.dstSeq.ini)
  seq_once:FILE.dstSeq[:INI]      each row once
  seq_rand:FILE.dstSeq[:INI]      uniform random entry (seed: --set seed=N)
  shift:K                         HCA i streams to HCA i+K (mod n)
  perm[:SEED]                     HCA i streams to HCA p(i), p a random permutation in one cycle
                                  through every HCA (none to itself), the same for a SEED (default 1)
  dissemination[:BYTES[:COUNT]]   closed loop: rank r sends to r+2^k after receiving round k-1
  chain[:BYTES[:COUNT]]           closed loop: rank r sends to r+1 after each receive
  put:BYTES:SRC:DST[:COUNT]       closed loop: LID SRC puts BYTES to LID DST, the next put when the
                                  ack is back (one-sided, docs/rdma.md)
  get:BYTES:SRC:DST[:COUNT]       closed loop: LID SRC gets BYTES from LID DST, one after another
Message length and MTU of the app modes: --set msg_length=N --set msg_mtu=N.

Examples:
  ibnet run --topology /data/is1_3l_32n.topo --traffic seq_loop:/data/32n_1hot.dstSeq --until 2ms
  ibnet run --topology M9 --traffic shift:1 --until 100us --json
  ibnet run --topology H8_S6 --preset thesis-ddr --traffic dissemination:1024:10 --json --latencies
  ibnet run --topology H8_S1 --traffic put:2097152:1:2 --set host_model=true --set pcie=gen3x16

Times on the command line need a unit (ps, ns, us, ms, s); every printed time names its unit;
JSON keys carry the unit (`_ps`, `_s`, `_mbps`) and values are numbers.
The sink and queue statistics of the reference start at start_stat_col_ns (100 us); a run that
ends earlier computes the sink bandwidth from t = 0 and warns (stderr and JSON `warnings`).

Memory: a network of 1024 HCAs or more runs with its heap on transparent huge pages (it executes
itself once with GLIBC_TUNABLES glibc.malloc.hugetlb=1 and says so on stderr; the 1944-node
network runs about 1.25x faster, results identical; regular patterns such as shift on a fat tree
may run slower: IBNET_HUGEPAGES=off). IBNET_HUGEPAGES=on|off|auto (default auto).

Exit codes: 0 success; 1 fatal model condition or deadlock; 2 bad options, files or parameters.")]
    Run(RunArgs),
    /// Co-simulation server (see `ibnet serve --help`).
    Serve,
    /// Print the route between two hosts: every switch and port on the way.
    #[command(
        after_help = "SRC and DST are host names (H_1) or rank numbers (0, 1, ...).\n\
Example: ibnet routes --topology fattree:16 H_1 H_100"
    )]
    Routes(RoutesArgs),
    /// Describe a topology: hosts, switches, links, diameter, and whether
    /// the routing is complete and deadlock-free.
    #[command(
        after_help = "Deadlock freedom: the channel dependency graph of all routes (each output port a route uses is a channel; consecutive channels of a route depend on each other) has no cycle.\n\
Example: ibnet topology --summary --topology M9"
    )]
    Topology(TopologyArgs),
    /// Export a topology and its routes for another simulator (--simgrid:
    /// a SimGrid platform file).
    #[command(after_help = "\
--simgrid writes a SimGrid 3.32 platform (DTD 4.1, one Full-routing zone): a host per HCA \
(named as in ibnet, property ibnet_rank), two links per cable (one per direction, each its own \
resource), named NODE[PORT]->PEER[PORT] as `ibnet routes` prints the hop, and one route per ordered \
host pair (symmetrical=\"NO\") along ibnet's forwarding tables. The numbers are those of \
`loggopsim --network flow` for the same --preset/--set: bandwidth = link rate after 8b/10b in \
bytes/s (thesis-ddr 2 GB/s), latency = ISW + VSW on a direction leaving a switch (thesis-ddr \
100 ns), 0 on one leaving a host.

To reproduce --network flow in SimGrid run with --cfg=network/model:CM02 \
--cfg=network/TCP-gamma:0 --cfg=network/crosstraffic:0 --cfg=network/solver:fairbottleneck \
(docs/backends.md, \"SimGrid bridge\", says why each).

The file has N^2 routes for N hosts (M9, 648 hosts: 419 904 routes); topologies above \
--max-hosts (default 1024) are refused.

Example: ibnet export --simgrid --topology fattree:4 --preset thesis-ddr -o fattree4.xml

Exit codes: 0 written; 2 bad options, topology, parameters, routing or output file.")]
    Export(ExportArgs),
}

#[derive(clap::Args)]
#[command(mut_arg("topology", options::topology_required))]
struct ExportArgs {
    /// Write a SimGrid platform file (the only format so far).
    #[arg(long)]
    simgrid: bool,
    /// The link rate and switch latency come from the preset and overrides;
    /// the map gives the hosts' ibnet_rank properties.
    #[command(flatten)]
    fabric: FabricOptions,
    /// Output file (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Refuse topologies with more hosts than this (the file has one
    /// route per ordered host pair).
    #[arg(long, value_name = "N", default_value_t = ibnet::simgrid::DEFAULT_MAX_HOSTS)]
    max_hosts: usize,
}

#[derive(clap::Args)]
struct RoutesArgs {
    /// Topology (as for `ibnet run`).
    #[arg(long, value_name = "FILE|NAME")]
    topology: String,
    /// Forwarding tables of an ibnetdiscover topology: dump_lfts.sh /
    /// ibroute output (without it, min-hop routes are computed).
    #[arg(long, value_name = "FILE")]
    lfts: Option<PathBuf>,
    /// Source host (name or rank).
    src: String,
    /// Destination host (name or rank).
    dst: String,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct TopologyArgs {
    /// Topology (as for `ibnet run`).
    #[arg(long, value_name = "FILE|NAME")]
    topology: String,
    /// Forwarding tables of an ibnetdiscover topology: dump_lfts.sh /
    /// ibroute output (without it, min-hop routes are computed).
    #[arg(long, value_name = "FILE")]
    lfts: Option<PathBuf>,
    /// Print the summary (the only mode so far).
    #[arg(long)]
    summary: bool,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// A host given by name or rank.
fn host_of(t: &topology::Topology, s: &str) -> Result<usize> {
    if let Some(i) = t.node_by_name(s) {
        if t.lid_of_hca(i).is_some() {
            return Ok(i);
        }
        anyhow::bail!("'{s}' is a switch, not a host");
    }
    if let Ok(r) = s.parse::<usize>() {
        return t.hca_of_rank(r).ok_or_else(|| {
            anyhow::anyhow!(
                "rank {r} is not mapped (the topology has {} ranks)",
                t.num_ranks()
            )
        });
    }
    anyhow::bail!(
        "no host named '{s}' in the topology (give a host name such as H_1, or a rank number)"
    )
}

fn routes(a: &RoutesArgs) -> Result<i32> {
    let t = topology::open_with(&a.topology, a.lfts.as_deref())
        .map_err(|e| anyhow::anyhow!(topology::open_error(&a.topology, &e)))?;
    if let Some(note) = topology::explain(&a.topology) {
        eprintln!("ibnet: {note}");
    }
    let src = host_of(&t, &a.src)?;
    let dst = host_of(&t, &a.dst)?;
    let sl = t.route_sl(
        t.lid_of_hca(src).unwrap_or(0),
        t.lid_of_hca(dst).unwrap_or(0),
    );
    if src == dst {
        anyhow::bail!("source and destination are the same host");
    }
    let hops = match topology::summary::route_hops(&t, src, dst) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("ibnet: no route from {} to {}: {e}", a.src, a.dst);
            return Ok(1);
        }
    };
    if a.json {
        let v = serde_json::json!({
            "src": t.nodes[src].name, "dst": t.nodes[dst].name,
            "links": hops.len(), "switches": hops.len() - 1, "sl": sl, "hops": hops,
        });
        println!("{v}");
    } else {
        println!(
            "route {} -> {}: {} links, {} switches{}",
            t.nodes[src].name,
            t.nodes[dst].name,
            hops.len(),
            hops.len() - 1,
            if t.sl.is_empty() {
                String::new()
            } else {
                format!(", SL {sl} (= VL on every hop)")
            }
        );
        for h in &hops {
            println!("  {}[{}] -> {}[{}]", h.node, h.port, h.peer, h.peer_port);
        }
    }
    Ok(0)
}

fn topology_summary(a: &TopologyArgs) -> Result<i32> {
    if !a.summary {
        anyhow::bail!("nothing to do: give --summary");
    }
    let t = topology::open_with(&a.topology, a.lfts.as_deref())
        .map_err(|e| anyhow::anyhow!(topology::open_error(&a.topology, &e)))?;
    if let Some(note) = topology::explain(&a.topology) {
        eprintln!("ibnet: {note}");
    }
    let s = topology::summary::summarize(&t);
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
    } else {
        println!("topology {}", a.topology);
        println!(
            "hosts {}, switches {}, links {}",
            s.hosts, s.switches, s.links
        );
        println!(
            "diameter {} links ({} switches); mean route {:.3} links",
            s.diameter_links,
            s.diameter_links.saturating_sub(1),
            s.mean_links
        );
        if s.routing_complete {
            println!("routing: complete (every host reaches every other)");
        } else {
            println!(
                "routing: INCOMPLETE, {} pairs without a route, e.g.",
                s.unroutable_pairs
            );
            for u in &s.unroutable {
                println!("  {u}");
            }
        }
        if s.vls > 1 {
            println!(
                "VLs: {} (an SL per route; the engine needs max_vl >= {})",
                s.vls,
                s.vls - 1
            );
        }
        if s.deadlock_free {
            println!("deadlock-free: yes (the channel dependency graph has no cycle)");
        } else {
            println!(
                "deadlock-free: NO, channel dependency cycle: {}",
                s.cycle.join(" -> ")
            );
        }
    }
    Ok(0)
}

#[derive(clap::Args)]
#[command(
    mut_arg("topology", options::topology_required),
    mut_arg("map", options::map_refused("ibnet run"))
)]
struct RunArgs {
    /// Topology, preset and overrides (the ranks are the topology's own).
    #[command(flatten)]
    fabric: FabricOptions,
    /// Forwarding tables of an ibnetdiscover topology: dump_lfts.sh /
    /// ibroute output (without it, min-hop routes are computed).
    #[arg(long, value_name = "FILE")]
    lfts: Option<PathBuf>,
    /// TOML file of parameter overrides (flat `key = value`; `preset = "..."`
    /// allowed), applied after the preset and before the --set overrides.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Traffic specification (repeatable; see below).
    #[arg(long, value_name = "SPEC")]
    traffic: Vec<String>,
    /// Run the fabric as N logical processes on up to N threads (at most
    /// one per core). The results are byte-identical to one thread, for
    /// every N, in either event order (the reference's by default, or
    /// --set event_order=local, which synchronises less). The nodes are
    /// split by switch groups (pods of a fat tree, dragonfly groups, torus
    /// slabs), printed on stderr, or as --partition gives them. Closed-loop
    /// sends (dissemination, chain) run too, driven as on one thread. Not
    /// yet with put/get, the flit trace, several send queues, lossy links
    /// or the host model. Whether it is faster depends on the
    /// network, the order and the cores (on 2 cores and hundreds of hosts,
    /// two threads in the local order run 1.1-1.6x faster than one thread
    /// of it and up to 1.5x faster than one thread of the reference order,
    /// which itself gains about 1.1x; with links that have a propagation
    /// delay, --set link_delay_ns, the delay is lookahead and two threads
    /// ran 1.5-2x faster on the 1944-node network): docs/scaling.md 2.9,
    /// 2.11 and 2.12 have the measurements.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        help_heading = "Parallel run"
    )]
    threads: usize,
    /// The partition of a --threads run instead of the automatic one: a
    /// text file with one line `SWITCH PROCESS` per switch (processes 0
    /// to N-1, `#` comments); an HCA goes with its switch unless it has a
    /// line of its own.
    #[arg(long, value_name = "FILE", help_heading = "Parallel run")]
    partition: Option<PathBuf>,
    /// Run the fabric's logical processes as the MPI ranks of this
    /// program, one process per rank: `mpirun -n K ibnet run ...
    /// --distributed` (on one or many machines) gives the same report as
    /// one thread, byte for byte. The partition is by switch groups into
    /// K, or --partition's. Rank 0 prints the report and the progress.
    /// Needs an ibnet built with the cargo feature `mpi` (Open MPI;
    /// scripts/install-deps installs it). Not with --threads; the same
    /// limits as --threads otherwise.
    #[arg(long, help_heading = "Parallel run")]
    distributed: bool,
    /// Simulated time limit with a unit (2ms, 100us, 1500ns, 7ps). Default:
    /// 2ms for open-loop traffic, none for closed-loop patterns.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<Time>,
    /// Print the JSON report instead of the text summaries.
    #[arg(long)]
    json: bool,
    /// Include every message's timing in the JSON report.
    #[arg(long)]
    latencies: bool,
    /// Leave wall-clock figures out of the JSON (byte-identical reruns).
    #[arg(long)]
    no_wall_time: bool,
    /// Also write the JSON report to FILE (a copy; stdout is unchanged).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Progress on stderr: a bar on a terminal, plain periodic lines
    /// (about one per second) otherwise. Default: the bar when stderr is a
    /// terminal and --json is not given; when stderr is not a terminal (a
    /// log), one plain line every 30 s of wall time, so that a long batch
    /// run shows how far it got and a short one prints nothing.
    #[arg(long)]
    progress: bool,
    /// Wall-clock seconds between two plain progress lines [default: 1
    /// with --progress, 30 for the lines of a log without it].
    #[arg(long, value_name = "SECONDS")]
    progress_interval: Option<f64>,
    /// Link statistics over time: one CSV row per link direction per
    /// window (flits, bytes, busy time, utilisation, mean queue depth; see
    /// docs/observe.md).
    #[arg(long, value_name = "FILE", help_heading = "Observation")]
    link_stats: Option<PathBuf>,
    /// Heat map of link utilisation (SVG): links by windows.
    #[arg(long, value_name = "FILE", help_heading = "Observation")]
    heatmap: Option<PathBuf>,
    /// Window of --link-stats, --heatmap and --trace, with a unit.
    #[arg(long, value_name = "TIME", value_parser = parse_time, default_value = "1us", help_heading = "Observation")]
    window: Time,
    /// One CSV row per message: inject, first flit, completion, latency
    /// (ps) and switch hops.
    #[arg(long, value_name = "FILE", help_heading = "Observation")]
    messages_csv: Option<PathBuf>,
    /// Per-flit trace as CSV (inject, send, recv, consume checkpoints).
    #[arg(long, value_name = "FILE", help_heading = "Observation")]
    trace: Option<PathBuf>,
    /// Trace only these nodes (comma-separated names, e.g. H_1,SW_0).
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        help_heading = "Observation"
    )]
    trace_nodes: Vec<String>,
    /// Trace from this simulated time on (with a unit).
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Observation")]
    trace_from: Option<Time>,
    /// Trace up to this simulated time (with a unit).
    #[arg(long, value_name = "TIME", value_parser = parse_time, help_heading = "Observation")]
    trace_until: Option<Time>,
}

#[derive(Serialize)]
struct RunInfo {
    until_ps: Option<u64>,
    sim_time_ps: u64,
    events_processed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    wall_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events_per_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sim_time_per_wall_s: Option<f64>,
    /// The heap was on transparent huge pages (hugepages.rs): reported
    /// with the wall time, since it changes only the speed.
    #[serde(skip_serializing_if = "Option::is_none")]
    huge_pages: Option<bool>,
    /// A parallel run: its logical processes (--threads), the OS threads
    /// that ran them, barrier rounds and events handed between processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_threads: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_rounds: Option<u64>,
    /// stretches of instants the processes ran alone (lookahead)
    #[serde(skip_serializing_if = "Option::is_none")]
    alone_stretches: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    crossings: Option<u64>,
    /// wall seconds the threads waited at barriers, summed over threads
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_wait_s: Option<f64>,
    /// MPI ranks of a --distributed run (one logical process each)
    #[serde(skip_serializing_if = "Option::is_none")]
    mpi_ranks: Option<usize>,
    /// a --distributed run: each rank's peak resident memory (MB), in
    /// rank order
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_rss_mb_per_rank: Option<Vec<f64>>,
    lazy_credit_timer: bool,
}

#[derive(Serialize)]
struct JsonOut<'a> {
    ibnet: &'static str,
    topology: &'a str,
    preset: &'a str,
    traffic: &'a [String],
    params: &'a Params,
    run: RunInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    closed_loop: Option<ClosedLoopSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    report: Report,
}

/// Exit code 2 for user input errors.
fn export(a: &ExportArgs) -> Result<i32> {
    if !a.simgrid {
        anyhow::bail!("nothing to do: give the format, --simgrid (the only one so far)");
    }
    let fab = options::resolve(&a.fabric).map_err(anyhow::Error::msg)?;
    let fl = ibnet::flowlevel::FlowLevel::from_params(&fab.params).map_err(anyhow::Error::msg)?;
    let write = |w: &mut dyn Write| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, w);
        ibnet::simgrid::write_platform(
            &mut w,
            &fab.topology,
            &fl,
            &fab.rank_nodes,
            &a.fabric.preset,
            a.max_hosts,
        )
    };
    let start = Instant::now();
    let stats = match &a.output {
        Some(path) => {
            let mut f =
                std::fs::File::create(path).with_context(|| format!("-o {}", path.display()))?;
            match write(&mut f) {
                Ok(s) => s,
                Err(e) => {
                    drop(f);
                    let _ = std::fs::remove_file(path);
                    return Err(anyhow::anyhow!(e))
                        .with_context(|| format!("-o {}", path.display()));
                }
            }
        }
        None => write(&mut std::io::stdout().lock())?,
    };
    eprintln!(
        "ibnet: SimGrid platform: {} hosts, {} links, {} routes ({:.3} s)",
        stats.hosts,
        stats.links,
        stats.routes,
        start.elapsed().as_secs_f64()
    );
    Ok(0)
}

struct UserError(anyhow::Error);

/// The MPI transport of `--distributed`, or why there is none.
#[cfg(feature = "mpi")]
mod cluster {
    pub use ibnet::mpi_transport::Mpi;

    pub fn open() -> Result<Mpi, String> {
        Mpi::init()
    }
}

#[cfg(not(feature = "mpi"))]
mod cluster {
    /// (no value: this build has no MPI)
    pub enum Mpi {}

    impl ibnet::engine::Transport for Mpi {
        fn rank(&self) -> usize {
            match *self {}
        }
        fn size(&self) -> usize {
            match *self {}
        }
        fn exchange(&mut self, _: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
            match *self {}
        }
        fn gather(&mut self, _: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>, String> {
            match *self {}
        }
    }

    pub fn open() -> Result<Mpi, String> {
        Err(
            "this ibnet was built without MPI: build it with `cargo build --release -p ibnet \
             --features mpi` (it needs Open MPI and libclang; scripts/install-deps installs \
             both)"
                .into(),
        )
    }
}

fn main() {
    // a large network may run itself again with its heap on huge pages
    ibnet::hugepages::allow_reexec();
    #[cfg(feature = "server")]
    if std::env::args().nth(1).as_deref() == Some("serve") {
        ibnet::server::serve::main_serve();
    }
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Run(a) => match run(&a) {
            Ok(c) => c,
            Err(UserError(e)) => {
                // (under mpirun every rank reads the same input and says
                // so; the others name themselves)
                let line = match launched_rank().filter(|&r| a.distributed && r != 0) {
                    Some(r) => format!("ibnet: rank {r}: error: {e:#}\n"),
                    None => format!("ibnet: error: {e:#}\n"),
                };
                // one write: the ranks share mpirun's stderr, and a line
                // written in pieces (eprintln! writes each piece of its
                // format) interleaves with another rank's
                let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
                2
            }
        },
        Cmd::Routes(a) => routes(&a).unwrap_or_else(|e| {
            eprintln!("ibnet: error: {e:#}");
            2
        }),
        Cmd::Topology(a) => topology_summary(&a).unwrap_or_else(|e| {
            eprintln!("ibnet: error: {e:#}");
            2
        }),
        Cmd::Export(a) => export(&a).unwrap_or_else(|e| {
            eprintln!("ibnet: error: {e:#}");
            2
        }),
        // with the "server" feature `serve` is handled above
        Cmd::Serve => {
            eprintln!("ibnet: error: this ibnet was built without the co-simulation server (cargo feature \"server\")");
            2
        }
    };
    std::process::exit(code);
}

fn params_from(a: &RunArgs) -> Result<Params> {
    // the steps of ibnet::options, with the --config file between them
    let mut p = options::preset_params(&a.fabric.preset).map_err(anyhow::Error::msg)?;
    if let Some(f) = &a.config {
        let text = ibnet::input::read_text(f)
            .map_err(|e| anyhow::anyhow!("--config {}", e.describe(f)))?;
        p = p
            .apply_toml(&text, &f.display().to_string())
            .context("--config")?;
    }
    p = options::apply_sets(p, &a.fabric.set).map_err(anyhow::Error::msg)?;
    p.check()?;
    Ok(p)
}

fn run(a: &RunArgs) -> std::result::Result<i32, UserError> {
    let u = |e: anyhow::Error| UserError(e);
    if let Some(i) = a
        .progress_interval
        .filter(|i| !(i.is_finite() && *i >= 0.0))
    {
        return Err(u(anyhow::anyhow!(
            "--progress-interval {i}: expected seconds >= 0"
        )));
    }
    let params = params_from(a).map_err(u)?;
    check_threads(a).map_err(u)?;
    let spec = &a.fabric.topology;
    let mut topo = topology::open_with(spec, a.lfts.as_deref())
        .map_err(|e| UserError(anyhow::anyhow!(topology::open_error(spec, &e))))?;
    // a large network: run again with the heap on huge pages (hugepages.rs)
    ibnet::hugepages::use_for(topo.hcas().len(), "ibnet");
    if let Some(note) = topology::explain(spec) {
        eprintln!("ibnet: {note}");
    }
    // A parallel run builds each process's fabric of its own below; this
    // one (for the partition and the checks of the traffic) then holds no
    // input queues or HoQ slots, which are most of a network's memory
    // before it runs.
    let parallel = a.threads > 1 || a.distributed;
    let built = if parallel {
        Fabric::new_process(&topo, &params, &vec![u16::MAX; topo.nodes.len()], 0)
    } else {
        Fabric::new(&topo, &params)
    };
    let mut fabric = built.map_err(|e| {
        // name where the parameters came from
        let mut from = format!("--preset {}", a.fabric.preset);
        if let Some(c) = &a.config {
            from += &format!(", --config {}", c.display());
        }
        for s in &a.fabric.set {
            from += &format!(", --set {s}");
        }
        UserError(anyhow::anyhow!("{e} (parameters: {from})"))
    })?;
    let mut specs = Vec::new();
    for s in &a.traffic {
        specs.push(TrafficSpec::parse(s).map_err(|e| UserError(anyhow::anyhow!(e)))?);
    }
    let closed: Vec<&TrafficSpec> = specs.iter().filter(|s| s.is_closed_loop()).collect();
    if closed.len() > 1 {
        return Err(u(anyhow::anyhow!(
            "at most one closed-loop traffic pattern per run"
        )));
    }
    for s in specs.iter().filter(|s| !s.is_closed_loop()) {
        apply_app_traffic(&mut fabric, &topo, s).map_err(|e| UserError(anyhow::anyhow!(e)))?;
    }
    for s in &closed {
        ibnet::traffic::check_op_traffic(&fabric, s).map_err(|e| UserError(anyhow::anyhow!(e)))?;
    }
    let obs_cfg = ibnet::observe::ObserveConfig {
        window: a.window,
        link_stats: a.link_stats.clone(),
        heatmap: a.heatmap.clone(),
        messages: a.messages_csv.clone(),
        trace: a.trace.clone(),
        trace_nodes: a.trace_nodes.clone(),
        trace_from: a.trace_from.unwrap_or(Time(0)),
        trace_until: a.trace_until,
    };
    // the window of the link statistics and heat map (every rank of a
    // distributed run steps it; rank 0 alone writes the files)
    let obs_window = (a.link_stats.is_some() || a.heatmap.is_some()).then_some(a.window);
    let writes_files = !(a.distributed && launched_rank().is_some_and(|r| r != 0));
    let mut observers = if obs_cfg.any() && writes_files {
        Some(ibnet::observe::Observers::new(obs_cfg, &topo, &mut fabric).map_err(u)?)
    } else {
        None
    };
    let until = a.until.or(if closed.is_empty() {
        Some(Time(2_000_000_000))
    } else {
        None
    });
    let tty = std::io::stderr().is_terminal();
    let show_progress = a.progress || (tty && !a.json);
    // A log (stderr not a terminal) gets plain lines with or without
    // --progress, only less often without it: a run of the 1944-node
    // network for 2 ms takes a quarter of an hour, and its log should say
    // it is alive and how far.
    let every = a.progress_interval.unwrap_or(if show_progress {
        1.0
    } else {
        LOG_PROGRESS_EVERY_S
    });
    // (a parallel run's processes may run another timer, same results)
    let lazy_active = fabric.lazy_credit_timer_active();
    let t0 = Instant::now();
    let mut closed_summary = None;
    let mut run_error: Option<String> = None;
    let mut par_stats = None;
    // the logical processes of a parallel run (1: the sequential engine)
    let mut procs = a.threads;
    // a distributed run's peak memory per process
    let mut rank_peaks: Option<Vec<u64>> = None;
    if a.threads > 1 || a.distributed {
        // (after the topology: a large one may have run the program again
        // on huge pages, hugepages.rs)
        let mpi = if a.distributed {
            let m = cluster::open().map_err(|e| u(anyhow::anyhow!("--distributed: {e}")))?;
            procs = ibnet::engine::Transport::size(&m);
            Some(m)
        } else {
            None
        };
        if procs > ibnet::engine::MAX_THREADS {
            return Err(u(anyhow::anyhow!(
                "--distributed: {procs} ranks; at most {} processes",
                ibnet::engine::MAX_THREADS
            )));
        }
        let rank = mpi.as_ref().map_or(0, ibnet::engine::Transport::rank);
        let partition = match &a.partition {
            None => fabric.partition(procs),
            Some(f) => {
                let text = ibnet::input::read_text(f)
                    .map_err(|e| u(anyhow::anyhow!("--partition {}", e.describe(f))))?;
                fabric
                    .partition_from(&text, &f.display().to_string(), procs)
                    .map_err(|e| u(anyhow::anyhow!("--partition: {e}")))?
            }
        };
        // one process after the other, each without the others' state
        let processes = ibnet::processes::Processes::new(
            &topo,
            &params,
            &specs,
            partition,
            fabric.lazy_credit_timer_active(),
        );
        let lazy_count = processes.lazy_count;
        let how = match &a.partition {
            None => "by switch groups".to_string(),
            Some(f) => format!("as {} gives them", f.display()),
        };
        let mut lines = PlainProgress::new(!tty && rank == 0, until, every);
        let pb = progress_bar(show_progress && tty && rank == 0);
        // (each step starts and joins the threads, or is a round of every
        // rank: 1% steps)
        let steps = if show_progress || !tty { 100 } else { 1 };
        if let Some(m) = mpi {
            // this rank's process only
            drop(fabric);
            let mine = processes.build(rank).map_err(|e| u(anyhow::anyhow!(e)))?;
            let partition = processes.into_partition();
            // (the message records name each message's switch hops)
            if a.messages_csv.is_none() {
                drop_topology_tables(&mut topo);
            }
            let mut d =
                ibnet::engine::Distributed::new(mine, partition.owner.clone(), lazy_count, m)
                    .map_err(|e| u(anyhow::anyhow!("--distributed: {e}")))?;
            if rank == 0 {
                eprintln!("ibnet: {procs} logical processes on {procs} MPI ranks, nodes {how}:");
                for line in partition.describe() {
                    eprintln!("ibnet:   {line}");
                }
            }
            let mut windows = ibnet::observe::RankWindows::new(observers.as_mut(), obs_window);
            if let Some(spec) = closed.first() {
                // every rank drives alike (engine/distributed_drive.rs);
                // rank 0 reports
                if let Some(pb) = pb {
                    pb.finish_and_clear();
                }
                let mut lines =
                    PlainProgress::new((show_progress || !tty) && rank == 0, until, every);
                (closed_summary, run_error) = closed_loop(
                    &mut d,
                    spec,
                    &rank_hcas(&topo),
                    until,
                    &mut lines,
                    obs_window.map(|_| {
                        &mut windows
                            as &mut dyn ibnet::traffic::WindowHook<ibnet::engine::Distributed<_>>
                    }),
                );
            } else {
                let limit = until.expect("open-loop traffic has a time limit");
                run_stepped(limit, steps, pb, &mut lines, |t| {
                    windows.run_until(&mut d, t);
                    (d.now(), d.events_processed(), d.stopped())
                });
            }
            // (a failed write of rank 0's files is reported after every
            // rank has finished: the others wait for it at the end)
            let obs_err = windows.err.take();
            if let Some(e) = d.transport_error() {
                return Err(u(anyhow::anyhow!("--distributed: rank {rank}: {e}")));
            }
            let stopped = d.stopped();
            let finished = d.finish(peak_memory_kb());
            if let Some(e) = obs_err {
                return Err(u(e));
            }
            match finished {
                Ok(Some(fin)) => {
                    fabric = fin.fabric;
                    par_stats = Some(fin.stats);
                    rank_peaks = Some(fin.peak_memory_kb);
                }
                // (rank 0 reports; a fatal model error is in its report,
                // and every rank exits as rank 0 does: a closed loop's
                // deadlock or limit is known to every rank)
                Ok(None) => return Ok(if stopped || run_error.is_some() { 1 } else { 0 }),
                Err(e) => return Err(u(anyhow::anyhow!("--distributed: rank {rank}: {e}"))),
            }
        } else {
            drop(fabric);
            let mut par = processes
                .parallel()
                .map_err(|e| u(anyhow::anyhow!("--threads {procs}: {e}")))?;
            let partition = processes.into_partition();
            // (the message records name each message's switch hops)
            if a.messages_csv.is_none() {
                drop_topology_tables(&mut topo);
            }
            eprintln!(
                "ibnet: {procs} logical processes on {} threads (at most one per core), nodes {how}:",
                par.workers(),
            );
            for line in partition.describe() {
                eprintln!("ibnet:   {line}");
            }
            if let Some(spec) = closed.first() {
                if let Some(pb) = pb {
                    pb.finish_and_clear();
                }
                let mut lines = PlainProgress::new(show_progress || !tty, until, every);
                let mut hook = observers.as_mut().map(ibnet::observe::Windows::new);
                (closed_summary, run_error) = closed_loop(
                    &mut par,
                    spec,
                    &rank_hcas(&topo),
                    until,
                    &mut lines,
                    hook.as_mut()
                        .map(|h| h as &mut dyn ibnet::traffic::WindowHook<Parallel>),
                );
                if let Some(e) = hook.and_then(|h| h.err) {
                    return Err(u(e));
                }
            } else {
                let limit = until.expect("open-loop traffic has a time limit");
                let mut obs_err = None;
                run_stepped(limit, steps, pb, &mut lines, |t| {
                    match observers.as_mut() {
                        Some(obs) => {
                            if let Err(e) = obs.run_parallel_until(&mut par, t) {
                                obs_err = Some(e);
                            }
                        }
                        None => par.run_until(t),
                    }
                    let stop = obs_err.is_some() || par.error().is_some();
                    (par.now(), par.events_processed(), stop)
                });
                if let Some(e) = obs_err {
                    return Err(u(e));
                }
            }
            par_stats = Some(par.stats());
            fabric = par.into_fabric();
        }
    } else if let Some(spec) = closed.first() {
        let mut lines = PlainProgress::new(show_progress || !tty, until, every);
        let mut hook = observers.as_mut().map(ibnet::observe::Windows::new);
        (closed_summary, run_error) = closed_loop(
            &mut fabric,
            spec,
            &rank_hcas(&topo),
            until,
            &mut lines,
            hook.as_mut()
                .map(|h| h as &mut dyn ibnet::traffic::WindowHook),
        );
        if let Some(e) = hook.and_then(|h| h.err) {
            return Err(u(e));
        }
    } else if let Some(limit) = until {
        let mut lines = PlainProgress::new(!tty, until, every);
        let pb = progress_bar(show_progress && tty);
        let steps = if show_progress || !tty { 1000 } else { 1 };
        for i in 1..=steps {
            let step_end = step_end(limit, i, steps);
            // observers: stop at every window end inside this step
            match observers.as_mut() {
                Some(obs) => obs.run_until(&mut fabric, step_end).map_err(u)?,
                None => fabric.run_until(step_end),
            }
            if let Some(pb) = &pb {
                pb.set_position(i / 10);
                pb.set_message(format!("{} events", fabric.events_processed()));
            }
            lines.tick(fabric.now(), fabric.events_processed(), None);
            if fabric.error().is_some() {
                break;
            }
        }
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
    }
    let wall = t0.elapsed().as_secs_f64();
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
    for w in &warnings {
        eprintln!("ibnet: warning: {w}");
    }
    // (on stderr only: the report of a parallel run is one thread's)
    if let Some(s) = par_stats {
        let per_round = fabric.events_processed() as f64 / s.rounds.max(1) as f64;
        if per_round < THIN_ROUNDS {
            eprintln!(
                "ibnet: note: {per_round:.0} events per barrier round ({} rounds): too few for \
                 {procs} processes to run faster than one (docs/scaling.md 2.6, 2.10)",
                s.rounds
            );
        }
    }
    #[cfg(feature = "causal-check")]
    {
        let c = fabric.causal_check();
        eprintln!(
            "ibnet: causal order check: {} events in key order, {} same-instant comparisons, {} past the parents, longest walk {} levels",
            c.events, c.comparisons, c.deep, c.max_depth
        );
        eprintln!(
            "ibnet: causal order check: {} same-node same-instant pairs, {} of them with parents at one instant on two other nodes",
            c.node_pairs, c.cross_ties
        );
        for (kinds, n) in fabric.causal_cross_ties().iter().take(8) {
            eprintln!("ibnet:   {n} {kinds}");
        }
    }
    let wall_opt = (!a.no_wall_time).then_some(wall);
    let info = RunInfo {
        until_ps: until.map(|t| t.0),
        sim_time_ps: fabric.now().0,
        events_processed: fabric.events_processed(),
        wall_s: wall_opt,
        events_per_sec: wall_opt.map(|w| fabric.events_processed() as f64 / w.max(1e-9)),
        sim_time_per_wall_s: wall_opt.map(|w| fabric.now().as_secs_f64() / w.max(1e-9)),
        huge_pages: wall_opt.map(|_| ibnet::hugepages::active()),
        // (how the run was split, like the wall time, is left out of a
        // --no-wall-time report: the results are the same)
        threads: wall_opt.and(par_stats).map(|_| procs),
        worker_threads: wall_opt.and(par_stats).map(|s| s.workers),
        sync_rounds: wall_opt.and(par_stats).map(|s| s.rounds),
        alone_stretches: wall_opt.and(par_stats).map(|s| s.alone),
        crossings: wall_opt.and(par_stats).map(|s| s.crossings),
        sync_wait_s: wall_opt.and(par_stats).map(|s| s.wait_ns as f64 * 1e-9),
        mpi_ranks: wall_opt.and(par_stats).and(a.distributed.then_some(procs)),
        peak_rss_mb_per_rank: wall_opt.and(rank_peaks.as_ref()).map(|v| {
            v.iter()
                .map(|&kb| (kb as f64 / 1024.0 * 10.0).round() / 10.0)
                .collect()
        }),
        lazy_credit_timer: lazy_active,
    };
    let out = JsonOut {
        ibnet: env!("CARGO_PKG_VERSION"),
        topology: spec,
        preset: &a.fabric.preset,
        traffic: &a.traffic,
        params: &params,
        run: info,
        closed_loop: closed_summary,
        error: run_error.clone(),
        warnings,
        report,
    };
    let json = serde_json::to_string_pretty(&out).expect("report serialises");
    if let Some(f) = &a.report {
        std::fs::write(f, &json)
            .map_err(|e| UserError(anyhow::anyhow!("writing {}: {e}", f.display())))?;
    }
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let _ = writeln!(stdout, "{json}");
    } else {
        let _ = print_text(&mut stdout, &out);
    }
    if let Some(e) = run_error {
        eprintln!("ibnet: {e}");
        return Ok(1);
    }
    Ok(0)
}

/// A closed-loop pattern on either engine, with the progress lines and
/// the observers' window ends: its summary, or the error that ended it.
fn closed_loop<F: ibnet::engine::Driven>(
    f: &mut F,
    spec: &TrafficSpec,
    ranks: &[usize],
    until: Option<Time>,
    lines: &mut PlainProgress,
    window: Option<&mut dyn ibnet::traffic::WindowHook<F>>,
) -> (Option<ClosedLoopSummary>, Option<String>) {
    let r = ibnet::traffic::run_closed_loop_observed(
        f,
        spec,
        ranks,
        until,
        &mut |f, m| lines.tick(f.now(), f.events_processed(), Some((m, f.in_flight()))),
        window,
    );
    match r {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Drop the topology's forwarding tables once the processes of a parallel
/// run are built from it: each fabric holds its own copy of the tables it
/// uses, and nothing after the build reads the topology's.
fn drop_topology_tables(topo: &mut ibnet::topology::Topology) {
    for n in &mut topo.nodes {
        if let ibnet::topology::NodeKind::Switch { fdb, .. } = &mut n.kind {
            *fdb = Vec::new();
        }
    }
}

/// This process's rank as the MPI launcher gave it (Open MPI, or the
/// PMI/PMIx variables of other launchers), before MPI is initialised.
fn launched_rank() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// This process's peak resident memory so far (KB; 0 if unknown).
fn peak_memory_kb() -> u64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } == 0 {
        u.ru_maxrss.max(0) as u64
    } else {
        0
    }
}

/// A parallel run to `limit` in `steps` steps, with the progress bar (in
/// percent) and the log lines: `step(t)` runs to t and gives the clock,
/// the events so far and whether the run stopped.
fn run_stepped(
    limit: Time,
    steps: u64,
    pb: Option<indicatif::ProgressBar>,
    lines: &mut PlainProgress,
    mut step: impl FnMut(Time) -> (Time, u64, bool),
) {
    for i in 1..=steps {
        let (now, events, stopped) = step(step_end(limit, i, steps));
        if let Some(pb) = &pb {
            pb.set_position(i);
            pb.set_message(format!("{events} events"));
        }
        lines.tick(now, events, None);
        if stopped {
            break;
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
}

/// End of step `i` of `steps` of a run to `limit`.
fn step_end(limit: Time, i: u64, steps: u64) -> Time {
    Time(limit.0 / steps * i + if i == steps { limit.0 % steps } else { 0 })
}

/// The progress bar of a run to a time limit on a terminal.
fn progress_bar(on: bool) -> Option<indicatif::ProgressBar> {
    on.then(|| {
        let pb = indicatif::ProgressBar::new(100);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}% simulated, {elapsed} {msg}")
                .unwrap(),
        );
        pb
    })
}

/// `--threads` against the rest of the command line.
fn check_threads(a: &RunArgs) -> Result<()> {
    let n = a.threads;
    if n == 0 || n > ibnet::engine::MAX_THREADS {
        anyhow::bail!(
            "--threads {n}: expected 1 to {}",
            ibnet::engine::MAX_THREADS
        );
    }
    if a.distributed && n != 1 {
        anyhow::bail!("--distributed runs one logical process per MPI rank: leave out --threads");
    }
    if n == 1 && !a.distributed {
        if a.partition.is_some() {
            anyhow::bail!("--partition needs --threads 2 or more, or --distributed");
        }
        return Ok(());
    }
    let how = if a.distributed {
        "--distributed".to_string()
    } else {
        format!("--threads {n}")
    };
    let refuse = |what: &str| anyhow::anyhow!("{how} does not support {what} yet");
    let specs: Vec<TrafficSpec> = a
        .traffic
        .iter()
        .filter_map(|s| TrafficSpec::parse(s).ok())
        .collect();
    if specs.iter().any(TrafficSpec::is_closed_loop) {
        if specs.iter().any(|t| matches!(t, TrafficSpec::Op { .. })) {
            return Err(refuse("one-sided operations (put, get)"));
        }
        if specs.iter().any(|t| !t.is_closed_loop()) {
            return Err(refuse("closed-loop traffic beside open-loop traffic"));
        }
    }
    // (the message records are written from the merged report at the end,
    // the link statistics from every process's ports at every window end,
    // gathered at rank 0 in a distributed run; the flit trace would need
    // every process's records merged in order)
    if a.trace.is_some() {
        return Err(refuse("the flit trace (--trace)"));
    }
    Ok(())
}

/// Events per barrier round below which a parallel run says that its
/// rounds cost more than they save: measured on 2 cores, 164 events per
/// round still gained 1.35-1.5x (the 1944-node network at 20 us), 22
/// gained 1.18x and 5 lost 4x (docs/scaling.md 2.6).
const THIN_ROUNDS: f64 = 20.0;

/// Seconds of wall time between two plain progress lines when stderr is
/// not a terminal and --progress was not given.
const LOG_PROGRESS_EVERY_S: f64 = 30.0;

/// Plain progress lines on stderr (no terminal control), at most one per
/// second of wall time: simulated time, events, messages completed.
struct PlainProgress {
    on: bool,
    every: f64,
    until: Option<Time>,
    start: Instant,
    last: Instant,
}

impl PlainProgress {
    fn new(on: bool, until: Option<Time>, every: f64) -> PlainProgress {
        let now = Instant::now();
        PlainProgress {
            on,
            every,
            until,
            start: now,
            last: now,
        }
    }

    fn tick(&mut self, now: Time, events: u64, messages: Option<(u64, usize)>) {
        if !self.on || self.last.elapsed().as_secs_f64() < self.every {
            return;
        }
        self.last = Instant::now();
        let sim = now.0;
        let mut line = format!(
            "ibnet: progress: simulated {}",
            simtime::format_ps_human(sim)
        );
        if let Some(u) = self.until.filter(|u| u.0 > 0) {
            line += &format!(
                " of {} ({:.1}%)",
                simtime::format_ps_human(u.0),
                sim as f64 * 100.0 / u.0 as f64
            );
        }
        line += &format!(", {events} events");
        if let Some((m, in_flight)) = messages {
            line += &format!(", {m} messages sent, {in_flight} in flight");
        }
        line += &format!(", wall {:.1} s", self.start.elapsed().as_secs_f64());
        eprintln!("{line}");
    }
}

fn ns(ps: f64) -> String {
    format!("{:.3} ns", ps / 1000.0)
}

/// The reference's end-of-run summaries (sec. 8), one block per module.
fn print_text(w: &mut impl Write, o: &JsonOut) -> std::io::Result<()> {
    let r = &o.report;
    writeln!(
        w,
        "ibnet run: topology {} preset {} until {}{}",
        o.topology,
        o.preset,
        o.run
            .until_ps
            .map(|t| format!("{t} ps"))
            .unwrap_or("-".into()),
        // a model other than the reference's says so (docs/scaling.md 1.7)
        if o.params.event_order == "fifo" {
            String::new()
        } else {
            format!(" event order {}", o.params.event_order)
        }
    )?;
    for s in &r.sinks {
        let l = &s.msg_network_latency_ps;
        writeln!(w, "{}.sink:", s.name)?;
        if l.count > 0 {
            writeln!(
                w,
                "  Msg-Network-Latency: count {} mean {} stddev {} min {} max {}",
                l.count,
                ns(l.mean),
                ns(l.stddev),
                ns(l.min as f64),
                ns(l.max as f64)
            )?;
            let f = &s.msg_first2first_network_latency_ps;
            writeln!(
                w,
                "  Msg-First2First-Network-Latency: count {} mean {} min {} max {}",
                f.count,
                ns(f.mean),
                ns(f.min as f64),
                ns(f.max as f64)
            )?;
        }
        let p = &s.packet_fabric_time_ps;
        if p.count > 0 {
            writeln!(
                w,
                "  Packet Fabric Time: count {} mean {} min {} max {}",
                p.count,
                ns(p.mean),
                ns(p.min as f64),
                ns(p.max as f64)
            )?;
            let q = &s.waiting_time_ps;
            writeln!(
                w,
                "  Waiting time statistics: count {} mean {} min {} max {}",
                q.count,
                ns(q.mean),
                ns(q.min as f64),
                ns(q.max as f64)
            )?;
        }
        writeln!(
            w,
            "  Time last packet consumed: {}",
            ns(s.time_last_packet_consumed_ps as f64)
        )?;
        writeln!(w, "  Sink-BW-MBps: {:.3}", s.sink_bw_mbps)?;
        for (v, n) in s.vl_total_flits.iter().enumerate() {
            writeln!(w, "  VL-{v}-total-flits: {n}")?;
        }
        writeln!(
            w,
            "  OOO-Packets: {} OO-IO-Packets-Ratio: {:.6} Num-SRCs: {}",
            s.ooo_packets, s.oo_io_packets_ratio, s.num_srcs
        )?;
        if s.cnps_received + s.cnps_sent > 0 {
            writeln!(
                w,
                "  CC: CNPs sent {} received {} CCTI {} (max {})",
                s.cnps_sent, s.cnps_received, s.ccti, s.ccti_max
            )?;
        }
    }
    for ob in &r.obufs {
        writeln!(
            w,
            "{}.port[{}].obuf: Output BW (Byte/Sec): {:.1} utilisation {:.4} data flits {} FC packets {} queue depth mean {:.3} max {}",
            ob.node, ob.port, ob.output_bw_bytes_per_sec, ob.utilisation, ob.data_flits_sent, ob.fc_packets_sent, ob.queue_depth.mean, ob.queue_depth.max
        )?;
    }
    writeln!(
        w,
        "flits generated {} consumed {} in flight {} dropped {}; messages {} completed {}",
        r.flits_generated,
        r.flits_consumed,
        r.flits_in_flight,
        r.flits_dropped,
        r.messages_injected,
        r.messages_completed
    )?;
    if let Some(st) = &r.stall {
        write!(w, "{}", st.text())?;
    }
    if let Some(x) = &r.rdma {
        writeln!(
            w,
            "one-sided: {} puts, {} gets; control packets of {} B: {} acks, {} coalesced acks, {} read requests",
            x.puts,
            x.gets,
            x.control_packet_bytes,
            x.ack_packets,
            x.partial_ack_packets,
            x.read_request_packets
        )?;
    }
    if let Some(l) = &r.loss {
        writeln!(
            w,
            "lossy links (packet error rate {} or bit error rate {} per link, rto {}): {} data and {} ACK/NAK packets corrupted; \
             discarded {} corrupted, {} out of sequence, {} duplicates; {} NAKs, {} ACKs, {} timeouts; \
             {} packets retransmitted ({} probes) in {} messages; added latency total {}, max {} ({} messages)",
            l.link_packet_error_rate,
            l.link_bit_error_rate,
            ns(l.rto_ps as f64),
            l.packets_corrupted,
            l.responses_corrupted,
            l.discarded_corrupted,
            l.discarded_out_of_sequence,
            l.discarded_duplicates,
            l.naks_sent,
            l.acks_sent,
            l.timeouts,
            l.packets_retransmitted,
            l.probes_sent,
            l.messages_retransmitted,
            ns(l.added_latency_total_ps as f64),
            ns(l.added_latency_max_ps as f64),
            l.messages_delayed
        )?;
    }
    if let Some(hm) = &r.host {
        for h in &hm.hcas {
            if h.tx_commands + h.rx_commands == 0 {
                continue;
            }
            writeln!(
                w,
                "{}.host: PCIe {} read {} B (busy {}) written {} B (busy {}), NIC commands TX {} RX {}",
                h.name,
                hm.pcie,
                h.dma_bytes_read,
                ns(h.dma_read_busy_ps as f64),
                h.dma_bytes_written,
                ns(h.dma_write_busy_ps as f64),
                h.tx_commands,
                h.rx_commands
            )?;
        }
    }
    if let Some(c) = &o.closed_loop {
        writeln!(
            w,
            "closed loop {}: {} ranks, {} messages, last completion {}",
            c.pattern,
            c.ranks,
            c.messages,
            ns(c.end_ps as f64)
        )?;
    }
    write!(
        w,
        "events {} simulated {}",
        o.run.events_processed,
        ns(o.run.sim_time_ps as f64)
    )?;
    if let (Some(ws), Some(eps)) = (o.run.wall_s, o.run.events_per_sec) {
        write!(w, " wall {ws:.3} s ({eps:.0} events/s)")?;
    }
    writeln!(w)?;
    if let Some(e) = &o.error {
        writeln!(w, "ERROR: {e}")?;
    }
    Ok(())
}
