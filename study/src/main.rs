//! `study`: the efficiency study of the thesis (section 4.8) and its
//! scaling study (Table 4.8.1), as one command. See docs/efficiency.md.

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;
use study::efficiency::{EffConfig, Runner};
use study::scaling::{self, ScalingConfig};
use study::setups::{self, Bins, Setup, Transport, Workload};
use study::{plot, report};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    /// POSIX message queues (two processes; the thesis's transport).
    Ipc,
    /// Shared-memory rings (two processes).
    Shm,
    /// The fabric on a thread of the scheduler.
    Inproc,
    /// The fabric engine called by the scheduler's thread.
    Onepiece,
}

#[derive(Parser, Debug)]
#[command(
    name = "study",
    version,
    about = "The thesis's efficiency study: the fabric alone, LogGOPS alone, polling (query) at several \
quanta with and without the arrival estimate, and notification, on the same traffic",
    long_about = None,
    after_help = "\
Configurations:
  (default)  dissemination among 128 ranks on fattree:16 (2-level, 16-port switches), 180 B
             messages, budget 10 s per run; under a minute on 2 cores
  --full     648 ranks on M9 (the thesis's case), budget 60 s, plus the scaling study
  --tiny     2 ranks on chain:1 (one switch, two HCAs), one run each (the test suite's configuration)

Every setup runs with L=o=g=G=O=0 and the thesis-ddr fabric preset unless overridden. A run
longer than the budget is stopped, reported as over budget and extrapolated from the simulated
time it reached and its recent rate (the notify run's final time is the whole). A setup is repeated up
to --runs times while its total wall time stays within the budget; the table shows the median.

Outputs (in --out, default results/): NAME.md (also printed), NAME.csv, NAME-quantum.png/.svg,
and with the scaling study NAME-scaling.csv, NAME-scaling.png/.svg.

Examples:
  study                                  # the default configuration
  study --full                           # the thesis's 648-rank case and the scaling study
  study --scaling-only --scaling-ports 16,22 --scaling-counts 15,30
  study --quanta 1ns,100ps --factors 2 --estimate-quanta 1ns --runs 5 --budget 20"
)]
struct Cli {
    /// The test suite's configuration (2 ranks on chain:1, a few seconds).
    #[arg(long, conflicts_with = "full")]
    tiny: bool,
    /// The thesis's full case: 648 ranks on M9, with the scaling study.
    #[arg(long)]
    full: bool,
    /// Also run the scaling study (included with --full).
    #[arg(long)]
    scaling: bool,
    /// Run only the scaling study.
    #[arg(long, conflicts_with = "no_scaling")]
    scaling_only: bool,
    /// Skip the scaling study (also with --full).
    #[arg(long)]
    no_scaling: bool,
    /// Ranks of the dissemination.
    #[arg(long)]
    ranks: Option<u32>,
    /// Topology (built-in name or file, as `ibnet --topology`).
    #[arg(long)]
    topology: Option<String>,
    /// Message size of the dissemination in bytes (the thesis: 180).
    #[arg(long)]
    bytes: Option<u64>,
    /// Repetitions of the dissemination [default: 100, so that process
    /// start-up is a small part of every run (the study prints its share);
    /// --full and --tiny: 1, the thesis's single dissemination].
    #[arg(long)]
    count: Option<u64>,
    /// Fabric parameter preset.
    #[arg(long, default_value = "thesis-ddr")]
    preset: String,
    /// Override a fabric parameter in every fabric run, e.g. --set lazy_credit_timer=false (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Quanta of the polling runs, comma-separated (1ns, 100ps, ...; a bare number is ps).
    #[arg(long, value_delimiter = ',', value_parser = parse_ps, default_value = "1ns,100ps,10ps,1ps")]
    quanta: Vec<u64>,
    /// Arrival-estimate factors F, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    factors: Vec<f64>,
    /// Quanta at which the estimate factors are run.
    #[arg(long, value_delimiter = ',', value_parser = parse_ps, default_value = "1ns,100ps")]
    estimate_quanta: Vec<u64>,
    /// Transport of the polling runs (the thesis: message queues).
    #[arg(long, value_enum, default_value = "ipc")]
    query_transport: TransportArg,
    /// Runs per setup; the wall time is their median [default: 3, --tiny 1].
    #[arg(long)]
    runs: Option<usize>,
    /// Wall-time budget of one run, in seconds [default: 10, --full 60, --tiny 60].
    #[arg(long)]
    budget: Option<f64>,
    /// Scaling study: port counts P of fattree:P (P*P/2 HCAs) [default: 16,22,28,32; --tiny 4,6].
    #[arg(long, value_delimiter = ',')]
    scaling_ports: Option<Vec<u32>>,
    /// Scaling study: messages per rank [default: 15,30,45; --tiny 2,4].
    #[arg(long, value_delimiter = ',')]
    scaling_counts: Option<Vec<u64>>,
    /// Scaling study: message size in bytes.
    #[arg(long, default_value_t = 1000)]
    scaling_bytes: u64,
    /// Name of the result files [default: efficiency, efficiency-full, efficiency-tiny].
    #[arg(long)]
    name: Option<String>,
    /// Directory of the result files.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Directory of loggopsim, ibnet and ipc-proto [default: $IBCOSIM_BIN_DIR, else this program's directory].
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Run every simulator process on this one CPU (sched_setaffinity). On a
    /// virtual machine an idle CPU can take tens of microseconds to wake, which
    /// dominates polling round trips between two CPUs; one CPU avoids that.
    #[arg(long, value_name = "CPU")]
    pin_cpu: Option<usize>,
    /// Print the command lines of the runs on stderr.
    #[arg(short, long)]
    verbose: bool,
}

/// "1ns" -> 1000, "100ps" -> 100, "2us" -> 2_000_000, "7" -> 7 (ps):
/// simtime's syntax, with this tool's hint when the text is no time at all.
fn parse_ps(s: &str) -> Result<u64, String> {
    use simtime::{BareNumber, TimeArgErrorKind as K, TimeUnit};
    let t = simtime::parse_time(s, BareNumber::In(TimeUnit::Ps)).map_err(|e| match e.kind {
        K::NotATime | K::NotANumber | K::UnknownUnit(_) => {
            format!("`{}`: expected a time like 1ns, 100ps or 10 (ps)", s.trim())
        }
        _ => e.to_string(),
    })?;
    if t.as_ps() == 0 {
        return Err(format!("`{}`: must be > 0", s.trim()));
    }
    Ok(t.as_ps())
}

/// Writes one output file into the output directory; returns its path for
/// the list of files written.
fn write_out(dir: &Path, file: &str, text: &str) -> anyhow::Result<PathBuf> {
    let p = dir.join(file);
    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}

fn bin_dir(cli: &Cli) -> anyhow::Result<PathBuf> {
    if let Some(d) = &cli.bin_dir {
        return Ok(d.clone());
    }
    if let Ok(d) = std::env::var("IBCOSIM_BIN_DIR") {
        if !d.is_empty() {
            return Ok(PathBuf::from(d));
        }
    }
    let exe = std::env::current_exe().context("locating this program")?;
    Ok(exe
        .parent()
        .context("this program's directory")?
        .to_path_buf())
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(&cli) {
        eprintln!("study: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    if cli.runs == Some(0) {
        bail!("--runs must be at least 1");
    }
    if let Some(b) = cli.budget {
        if !(b > 0.0 && b.is_finite()) {
            bail!("--budget must be a positive number of seconds");
        }
    }
    if cli.factors.iter().any(|f| !(*f > 0.0 && f.is_finite())) {
        bail!("--factors must be positive numbers");
    }
    let bins = Bins::in_dir(&bin_dir(cli)?)?;
    let (cfg_name, ranks, topo, runs, budget) = if cli.tiny {
        ("efficiency-tiny", 2, "chain:1", 1, 60.0)
    } else if cli.full {
        ("efficiency-full", 648, "M9", 3, 60.0)
    } else {
        ("efficiency", 128, "fattree:16", 3, 10.0)
    };
    let runs = cli.runs.unwrap_or(runs);
    let (ports, counts) = if cli.tiny {
        (vec![4, 6], vec![2, 4])
    } else {
        (vec![16, 22, 28, 32], vec![15, 30, 45])
    };
    let ports = cli.scaling_ports.clone().unwrap_or(ports);
    let counts = cli.scaling_counts.clone().unwrap_or(counts);
    if ports.iter().any(|p| *p < 2 || p % 2 == 1) || counts.contains(&0) {
        bail!("--scaling-ports must be even numbers >= 2 and --scaling-counts positive");
    }
    let name = cli.name.clone().unwrap_or_else(|| cfg_name.to_string());
    let budget = Duration::from_secs_f64(cli.budget.unwrap_or(budget));
    let do_scaling = !cli.no_scaling && (cli.scaling || cli.scaling_only || cli.full);
    let do_eff = !cli.scaling_only;

    std::fs::create_dir_all(&cli.out).with_context(|| format!("creating {}", cli.out.display()))?;
    let work = tempfile::Builder::new()
        .prefix("study-")
        .tempdir()
        .context("creating a work directory")?;
    let started = std::process::Command::new("date")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut md = format!(
        "# Efficiency study `{name}`\n\nRun {started} on {}{}.\n\n",
        report::machine_info(),
        cli.pin_cpu
            .map(|c| format!("; every simulator process pinned to CPU {c}"))
            .unwrap_or_default()
    );
    let mut written: Vec<PathBuf> = Vec::new();
    let mut failed: Vec<String> = Vec::new();

    if do_eff {
        let bytes = cli.bytes.unwrap_or(180);
        let ranks = cli.ranks.unwrap_or(ranks);
        if ranks < 2 {
            bail!("--ranks must be at least 2");
        }
        let count = cli
            .count
            .unwrap_or(if cli.tiny || cli.full { 1 } else { 100 });
        if count == 0 {
            bail!("--count must be at least 1");
        }
        let goal = work.path().join(format!("dissemination-{ranks}.goal"));
        setups::make_goal_repeated(&bins, ranks, bytes, count, &goal)?;
        let cfg = EffConfig {
            workload: Workload {
                ranks,
                bytes,
                count,
                topology: cli.topology.clone().unwrap_or_else(|| topo.to_string()),
                preset: cli.preset.clone(),
                sets: cli.set.clone(),
                goal,
            },
            quanta: cli.quanta.clone(),
            factors: cli.factors.clone(),
            estimate_quanta: cli.estimate_quanta.clone(),
            query_transport: match cli.query_transport {
                TransportArg::Ipc => Transport::Ipc,
                TransportArg::Shm => Transport::Shm,
                TransportArg::Inproc => Transport::Inproc,
                TransportArg::Onepiece => Transport::OnePiece,
            },
            runs,
            budget,
        };
        eprintln!("efficiency study: {}", cfg.workload.describe());
        let mut runner = Runner {
            bins: &bins,
            work: work.path(),
            key_prefix: format!("study{}", std::process::id()),
            counter: 0,
            verbose: cli.verbose,
            pin_cpu: cli.pin_cpu,
        };
        let res = runner.run_study(&cfg)?;
        // Process start-up and session set-up: the same notify setup on a
        // schedule of one message (2 ranks), against the notify run.
        let startup_line = {
            let tiny_goal = work.path().join("startup.goal");
            std::fs::write(
                &tiny_goal,
                "num_ranks 2\n\nrank 0 {\ns: send 1b to 1 tag 0\n}\n\nrank 1 {\nr: recv 1b from 0 tag 0\n}\n",
            )?;
            let tiny = Workload {
                ranks: 2,
                bytes: 1,
                count: 1,
                goal: tiny_goal,
                ..cfg.workload.clone()
            };
            let setup = Setup::Notify {
                transport: Transport::Ipc,
                version: 2,
            };
            let startup = runner
                .run_once(&setup, &tiny, Some(cfg.budget))
                .ok()
                .map(|(r, _)| r.wall_s);
            let notify = res
                .rows
                .iter()
                .find(|r| r.setup == setup)
                .and_then(|r| r.wall_for_plot());
            match (startup, notify) {
                (Some(s), Some(n)) if n > 0.0 => format!(
                    "Process start-up and session set-up (the same notify setup on a one-message schedule): {s:.3} s, {:.1}% of the notify (message queues) run of {n:.3} s.\n\n",
                    100.0 * s / n
                ),
                _ => "Process start-up share: not measured (a run failed).\n\n".into(),
            }
        };
        failed.extend(
            res.rows
                .iter()
                .filter(|r| matches!(r.status, study::efficiency::Status::Failed(_)))
                .map(|r| r.setup.label()),
        );
        md.push_str(&format!(
            "## Five setups on the same traffic\n\nTraffic: {}. Runs per setup: up to {} (median; a setup is repeated only while its total stays within the budget). Budget per run: {} s. Reference final time (errors, extrapolation): {} ps from {}.\n\n",
            cfg.workload.describe(),
            cfg.runs,
            cfg.budget.as_secs_f64(),
            res.reference_ps.map(|t| t.to_string()).unwrap_or_else(|| "n/a".into()),
            res.reference_from
        ));
        md.push_str(&startup_line);
        md.push_str(&report::eff_markdown(&res));
        md.push_str(&format!(
            "\n\"-\": does not apply to the setup; \"n/a\": not reported by the simulators (a stopped run reports nothing but its progress and peak memory). \
Round trips: queries (query) or NoMoreInserts/arrival-batch exchanges (notify). IPC messages: message-queue messages (or channel sends) of the scheduler; \
the fabric's own message count is not in its report, so fabric→scheduler traffic is given in records. \
Over-budget runs are extrapolated to the reference final time from the fabric's progress line: the wall time at the rate of simulated-time progress over the second half of the run, the round trips in proportion to the simulated time reached. \
Peak RSS: `ru_maxrss` of each child (`wait4`); a forked child starts with a copy of the study's anonymous memory, so each value includes at most {:.1} MiB of the study's own.\n",
            res.rows.iter().map(|r| r.sample.parent_anon_kb).max().unwrap_or(0) as f64 / 1024.0,
        ));
        let pivot = report::eff_pivot(&res);
        if !pivot.is_empty() {
            md.push_str("\nPolling wall time [s] by quantum and estimate factor (the layout of the thesis's Table 4.8; \"~\": extrapolated):\n\n");
            md.push_str(&pivot);
        }
        written.push(write_out(
            &cli.out,
            &format!("{name}.csv"),
            &report::eff_csv(&res),
        )?);
        written.extend(plot::quantum_plot(
            &res,
            &cli.out.join(format!("{name}-quantum")),
        )?);
    }

    if do_scaling {
        let scfg = ScalingConfig {
            ports,
            counts,
            bytes: cli.scaling_bytes,
            preset: cli.preset.clone(),
            sets: cli.set.clone(),
            runs,
            budget,
            pin_cpu: cli.pin_cpu,
        };
        let rows = scaling::run(&scfg, &bins, work.path())?;
        failed.extend(
            rows.iter()
                .filter(|r| r.status == "failed")
                .map(|r| format!("scaling {} x {}", r.topology, r.count)),
        );
        let mut fits = scaling::fits(&rows, |r| Some(r.wall_s), "wall time");
        fits.extend(scaling::fits(&rows, |r| r.loop_s, "event-loop time"));
        md.push_str(&format!(
            "\n## Scaling (chain pattern, fabric alone)\n\nFabric preset {}{}. Each rank sends N messages of {} B to rank+1, each send after a receive (the first without): `ibnet run --traffic chain:{}:N`. \"Events w/o sends\": the same network idle until the same simulated time (`ibnet run --until T`). Wall time: the whole process (median of up to {} runs); event loop: ibnet's own `run.wall_s`.\n\n",
            scfg.preset,
            scfg.sets.iter().map(|kv| format!(" --set {kv}")).collect::<String>(),
            scfg.bytes,
            scfg.bytes,
            scfg.runs
        ));
        md.push_str(&report::scaling_markdown(&rows, &fits));
        let stem = format!("{name}-scaling");
        written.push(write_out(
            &cli.out,
            &format!("{stem}.csv"),
            &report::scaling_csv(&rows),
        )?);
        written.extend(plot::scaling_plot(&rows, &cli.out.join(stem))?);
    }

    written.insert(0, write_out(&cli.out, &format!("{name}.md"), &md)?);
    print!("{md}");
    eprintln!("written:");
    for p in &written {
        eprintln!("  {}", p.display());
    }
    if !failed.is_empty() {
        bail!(
            "{} run(s) failed (marked in the table; the reasons are above): {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_ps;

    #[test]
    fn quanta() {
        assert_eq!(parse_ps("1ns"), Ok(1000));
        assert_eq!(parse_ps("100ps"), Ok(100));
        assert_eq!(parse_ps("7"), Ok(7));
        assert_eq!(parse_ps("2us"), Ok(2_000_000));
        assert!(parse_ps("0ps").is_err());
        assert!(parse_ps("fast")
            .unwrap_err()
            .contains("expected a time like 1ns"));
        assert!(parse_ps("1.5ps").unwrap_err().contains("whole number"));
    }
}
