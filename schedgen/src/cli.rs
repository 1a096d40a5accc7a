//! Command-line entry points, wired into the `loggopsim` binary as the
//! `gen` and `trace2goal` subcommands.

/// Arguments of `loggopsim gen PATTERN [options]`.
#[derive(clap::Args, Debug, Clone)]
pub struct GenArgs {
    /// Pattern name (see schedgen.md section 3).
    pub pattern: String,
}

/// Arguments of `loggopsim trace2goal --traces FIRST_TRACE_FILE -o OUT.goal`.
#[derive(clap::Args, Debug, Clone)]
pub struct Trace2GoalArgs {
    /// First trace file (pmpi-trace-rank-0.txt); the others are found by name.
    #[arg(long)]
    pub traces: std::path::PathBuf,
}

pub fn run_gen(args: &GenArgs) -> anyhow::Result<()> {
    anyhow::bail!("gen {}: not implemented yet", args.pattern)
}

pub fn run_trace2goal(args: &Trace2GoalArgs) -> anyhow::Result<()> {
    anyhow::bail!("trace2goal {}: not implemented yet", args.traces.display())
}
