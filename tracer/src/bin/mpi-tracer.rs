//! `mpi-tracer`: where the PMPI tracer library is, and what a traced run's
//! files contain (call counts, run time per rank).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mpi_tracer::{compare, trace};

#[derive(Parser, Debug)]
#[command(
    name = "mpi-tracer",
    version,
    about = "liballprof-compatible PMPI tracer: library location and trace summaries",
    long_about = "The tracer is a shared library that intercepts MPI calls through PMPI. Run an \
                  MPI program with it preloaded, e.g.\n\n  mpirun -np 2 -x LD_PRELOAD=$(mpi-tracer \
                  lib) -x PMPI_TRACE_DIR=/tmp/traces ./app\n\nand every rank writes \
                  /tmp/traces/pmpi-trace-rank-N.txt (see docs/tracing.md).\n\nExit status: 0 \
                  success; 1 the library is not built, or the compared simulation failed; 2 bad \
                  input (unreadable or malformed traces or simulator output, rank counts that \
                  differ) or options; 4 compare --max-error-percent exceeded."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Print the path of the tracer library (for LD_PRELOAD); fails with an
    /// explanation if it was not built (no mpicc at build time).
    Lib,
    /// Check every rank's trace in DIR and print, per rank, the run time
    /// (MPI_Finalize time - MPI_Init return, microseconds) and call counts.
    Summary {
        /// Directory holding pmpi-trace-rank-0.txt, -1, ...
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print real (traced) versus simulated run time per rank, with the
    /// relative error: traces in DIR, `loggopsim` output in SIM_OUTPUT.
    Compare(CompareArgs),
}

// The arguments of `compare` (no doc comment: the variant's is its help).
#[derive(clap::Args, Debug)]
struct CompareArgs {
    /// Directory holding pmpi-trace-rank-0.txt, -1, ...
    dir: PathBuf,
    /// File with the simulator's standard output: its `--json` report or
    /// the text format (`Host N: TIME` lines).
    sim_output: PathBuf,
    /// Schedule time units per trace microsecond (trace2goal's
    /// --timemult: 1000 = nanoseconds, 1000000 = picoseconds).
    #[arg(long, default_value_t = 1000.0)]
    timemult: f64,
    /// The schedule was made with `loggopsim trace2goal
    /// --sync-collectives`, which starts each rank at its MPI_Init return
    /// on rank 0's clock (`# clockdiff:`) relative to the earliest rank:
    /// subtract that start skew from each finish time.
    #[arg(long)]
    start_skew: bool,
    /// Exit with status 4 if any rank's |error| exceeds this percentage.
    #[arg(long)]
    max_error_percent: Option<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Exit status when `compare --max-error-percent` is exceeded (3 is the
/// workspace's "a system resource is exhausted").
const EXIT_ERROR_LIMIT: u8 = 4;

/// A failure and its exit status (README, Conventions): 1 a failure of the
/// run, 2 bad input.
struct Failure(u8, anyhow::Error);

fn bad_input(e: anyhow::Error) -> Failure {
    Failure(2, e)
}

fn main() -> ExitCode {
    let cli = Cli::parse(); // usage errors: clap prints them and exits 2
    match run(cli) {
        Ok(code) => code,
        Err(Failure(code, e)) => {
            eprintln!("mpi-tracer: {e:#}");
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.cmd {
        Cmd::Lib => {
            let lib = mpi_tracer::library().map_err(|e| Failure(1, e.into()))?;
            println!("{}", lib.display());
        }
        Cmd::Summary { dir, json } => summary(dir, json).map_err(bad_input)?,
        Cmd::Compare(args) => return compare_cmd(args),
    }
    Ok(ExitCode::SUCCESS)
}

fn summary(dir: PathBuf, json: bool) -> anyhow::Result<()> {
    let files = trace::rank_files(&dir)?;
    let mut ranks = Vec::new();
    for (rank, path) in files.iter().enumerate() {
        let t = trace::Trace::read(path)?;
        let run = t.run_time_us().with_context(|| {
            format!(
                "{}: no MPI_Init/MPI_Finalize pair, cannot compute the run time",
                path.display()
            )
        })?;
        ranks.push((rank, path.clone(), t, run));
    }
    if json {
        let arr: Vec<_> = ranks
            .iter()
            .map(|(rank, path, t, run)| {
                serde_json::json!({
                    "rank": rank,
                    "file": path.display().to_string(),
                    "run_time_us": run,
                    "records": t.records.len(),
                    "counts": t.counts(),
                    "clockdiff_init": t.clockdiff_init,
                    "clockdiff_finalize": t.clockdiff_finalize,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&arr)?);
    } else {
        for (rank, _, t, run) in &ranks {
            let counts: Vec<String> = t.counts().iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("rank {rank}: run_time_us {run} calls {}", counts.join(" "));
        }
    }
    Ok(())
}

fn compare_cmd(args: CompareArgs) -> Result<ExitCode, Failure> {
    let mut real = Vec::new();
    let mut starts = Vec::new();
    for path in trace::rank_files(&args.dir).map_err(|e| bad_input(e.into()))? {
        let t = trace::Trace::read(&path).map_err(|e| bad_input(e.into()))?;
        real.push(
            t.run_time_us()
                .with_context(|| format!("{}: no MPI_Init/MPI_Finalize pair", path.display()))
                .map_err(bad_input)?,
        );
        starts.push((t.init_return_us().unwrap_or(0), t.clockdiff_init));
    }
    let skews = if args.start_skew {
        compare::start_skews_us(&starts)
    } else {
        vec![0.0; real.len()]
    };
    let text = std::fs::read_to_string(&args.sim_output)
        .with_context(|| format!("reading {}", args.sim_output.display()))
        .map_err(bad_input)?;
    let sim = compare::parse_host_times(&text).map_err(|e| {
        // A report of a failed simulation is a failure, not bad input.
        let code = if e.starts_with("the simulation failed") {
            1
        } else {
            2
        };
        Failure(code, anyhow::anyhow!("{}: {e}", args.sim_output.display()))
    })?;
    let rows = compare::compare_with_skews(&real, &sim, args.timemult, &skews)
        .map_err(|e| bad_input(anyhow::Error::msg(e)))?;
    if args.json {
        let v = serde_json::to_string_pretty(&compare::render_json(&rows))
            .map_err(|e| Failure(1, e.into()))?;
        println!("{v}");
    } else {
        print!("{}", compare::render_table(&rows));
    }
    if let Some(limit) = args.max_error_percent {
        let worst = rows
            .iter()
            .map(|r| 100.0 * r.relative_error().abs())
            .fold(0.0, f64::max);
        if worst > limit {
            eprintln!("mpi-tracer: largest error {worst:.3}% exceeds {limit}%");
            return Ok(ExitCode::from(EXIT_ERROR_LIMIT));
        }
    }
    Ok(ExitCode::SUCCESS)
}
