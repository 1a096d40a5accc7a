//! Command-line entry points, wired into the `loggopsim` binary as the
//! `gen` and `trace2goal` subcommands.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::calib::linkmodel::{LinkLayer, LINK_LAYER_NAMES};
use crate::calib::overheads::suggested_loggopsim_command;
use crate::calib::pinning::{PinningModel, DEFAULT_PIN_A_US, DEFAULT_PIN_B_US_PER_BYTE};
use crate::goal::{GoalWriter, Prelude};
use crate::patterns::{self, PatternOptions};
use crate::trace::{self, TraceOptions};

/// Options shared by the reference's trace mode (docs/model/schedgen.md 1 and 4) and
/// our calibration flags (docs/calibration.md).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TraceArgs {
    /// Start-position file (`<byte offset> <time>` per rank): continue each
    /// trace from there; rewritten at the end (use with --traces-nops).
    #[arg(long = "traces-start")]
    pub traces_start: Option<PathBuf>,
    /// Stop each rank after this many translated collectives (0 = all).
    #[arg(long = "traces-nops", default_value_t = 0)]
    pub traces_nops: u64,
    /// Extrapolation factor: replicate the traced ranks this many times.
    #[arg(long = "traces-extr", default_value_t = 1)]
    pub traces_extr: u32,
    /// Non-zero: add `/* ... begin/end */` comments around translated calls.
    #[arg(long = "traces-print", default_value_t = 0)]
    pub traces_print: i32,
    /// Ignore point-to-point calls (and waits).
    #[arg(long = "traces-nop2p")]
    pub traces_nop2p: bool,
    /// Ignore collective calls.
    #[arg(long = "traces-nocolls")]
    pub traces_nocolls: bool,
    /// Start blocking collectives this many trace time units (us) earlier;
    /// a unit suffix is converted to whole microseconds (`5us`, `2000ns`).
    #[arg(long = "traces-nbcify", default_value = "0", value_parser = trace_us_int, value_name = "TIME")]
    pub traces_nbcify: i64,
    /// Unknown MPI calls are errors instead of warnings.
    #[arg(long)]
    pub strict: bool,
    /// Thesis Schedgen1.1 tags: p2p tags exactly as traced, collectives
    /// 1000000+n (the reference folds the communicator into the tag).
    #[arg(long = "raw-tags")]
    pub raw_tags: bool,
    /// Fail (instead of warning) when the traces describe more ranks than
    /// there are trace files; the missing file names are listed.
    #[arg(long = "require-all")]
    pub require_all: bool,
    /// Calibration 1: insert a memory-pinning calc (a + b * new bytes)
    /// before point-to-point transfers that use not-yet-seen buffer bytes.
    #[arg(long)]
    pub pinning: bool,
    /// Pinning constant a, microseconds (or with a unit: 165.894us).
    #[arg(long = "pin-a", default_value_t = DEFAULT_PIN_A_US, value_parser = us_f64, value_name = "TIME")]
    pub pin_a: f64,
    /// Pinning per-byte cost b, microseconds per byte (or with a unit per byte).
    #[arg(long = "pin-b", default_value_t = DEFAULT_PIN_B_US_PER_BYTE, value_parser = us_f64, value_name = "TIME")]
    pub pin_b: f64,
    /// Calibration 2: print the loggopsim command line with the thesis's
    /// fitted processing overheads (small: o=25979800 O=155; large:
    /// o=32000000 O=65) to stderr.
    #[arg(long = "print-overheads")]
    pub print_overheads: bool,
    /// Calibration 3: each MPI call's duration minus the link-layer time of
    /// its sends/receives (see --link-model) becomes a calc.
    #[arg(long)]
    pub durations: bool,
    /// Link layer that --durations subtracts: the one of the network the
    /// schedule will be simulated on. `thesis-ddr`: the analytic model of
    /// the fabric's thesis-era preset (for runs on the flit-level fabric);
    /// `none`: nothing (for the LogGOPS/LogGP backend, which at L=o=g=G=O=0
    /// charges nothing for a message).
    #[arg(
        long = "link-model",
        visible_alias = "preset",
        value_name = "MODEL",
        default_value = "thesis-ddr",
        value_parser = LINK_LAYER_NAMES.to_vec()
    )]
    pub link_model: String,
    /// Calibration 4: read all ranks together, put their times on rank 0's
    /// clock (`# clockdiff:` headers), start each rank at its MPI_Init
    /// return and delay early ranks so all enter each collective's
    /// communication at the same simulated time (the delay comes out of the
    /// collective's own calc). A rank's simulated run time is then its
    /// finish time minus its start skew (`mpi-tracer compare --start-skew`).
    #[arg(long = "sync-collectives")]
    pub sync_collectives: bool,
    /// With --durations: place the operations of each matched blocking
    /// MPI_Send/MPI_Recv pair where both calls overlap on the common clock
    /// (`min(max(send start, recv start), send end)`), splitting each call's
    /// duration there, so a receiver does not wait again for a sender that
    /// lingered in MPI_Send after the transfer. Uses the same common clock
    /// and start skew as --sync-collectives.
    #[arg(long = "sync-p2p")]
    pub sync_p2p: bool,
    /// How collectives become messages: `textbook` (LogGOPSim's algorithms
    /// of docs/model/schedgen.md: dissemination, binomial trees, linear exchange),
    /// `ompi` (the algorithm Open MPI's coll/tuned fixed rules pick for the
    /// call's size and communicator size; alias `ompi-tuned`), `mpich`
    /// (MPICH's default selection). docs/prediction.md lists the rules.
    #[arg(
        long = "collectives",
        value_name = "SET",
        default_value = "textbook",
        value_parser = crate::collectives::LIBRARY_NAMES.to_vec()
    )]
    pub collectives: String,
    /// How the computation between two MPI calls is measured: `cpu` (the
    /// thread CPU time the tracer records in `:cpu=` fields; not inflated
    /// when a rank waits for a core on a busy machine, and ~0 while a rank
    /// sleeps) or `wall` (the wall-clock gap). Default for trace2goal: cpu,
    /// but wall with --durations, --sync-collectives or --sync-p2p (they
    /// replay this machine's timeline); traces without CPU times fall back
    /// to wall with a warning. `gen trace` defaults to wall (the reference).
    #[arg(long = "compute", value_name = "MEASURE", value_parser = crate::trace::COMPUTE_NAMES.to_vec())]
    pub compute: Option<String>,
}

/// Arguments of `loggopsim gen PATTERN [options]`.
#[derive(clap::Args, Debug, Clone)]
pub struct GenArgs {
    /// Pattern name (docs/model/schedgen.md section 3), or `trace` for the reference's
    /// trace mode (timemult default 1000 as in the reference).
    pub pattern: String,
    /// Number of ranks P.
    #[arg(short = 's', long, default_value_t = 8)]
    pub commsize: i32,
    /// Bytes per basic message.
    #[arg(short = 'd', long, default_value_t = 1)]
    pub datasize: i32,
    /// Output GOAL file (`-` for stdout; the summary then goes to stderr).
    #[arg(
        short = 'o',
        long = "filename",
        visible_alias = "output",
        default_value = "schedule.goal"
    )]
    pub filename: PathBuf,
    /// Root rank R of rooted patterns.
    #[arg(long, default_value_t = 0)]
    pub root: i32,
    /// Segment size of the pipelined rings.
    #[arg(long, default_value_t = 1)]
    pub segmentsize: i32,
    /// Fan-out of nwaydissemination (>= 1).
    #[arg(long, default_value_t = 1)]
    pub nway: i32,
    /// If given (even 0): local-work prelude of this length in every rank
    /// (schedule units; a unit suffix converts to picoseconds: `5us`).
    #[arg(long, value_parser = sched_time, value_name = "TIME")]
    pub nb: Option<i64>,
    /// Split the prelude into calcs of this length (0: one calc).
    #[arg(long = "nb-poll", default_value = "0", value_parser = sched_time, value_name = "TIME")]
    pub nb_poll: i64,
    /// CPU index; non-zero switches on the `cpu` suffix of CPU calcs.
    #[arg(long, default_value_t = 0)]
    pub cpu: u64,
    /// allreduce_recdoub: replace dependencies by fixed calcs of this length.
    /// (-1: off; schedule units, or with a unit suffix converted to ps.)
    #[arg(long = "rpl-dep-cmp", default_value = "-1", allow_hyphen_values = true, value_parser = sched_time_or_off, value_name = "TIME")]
    pub rpl_dep_cmp: i64,
    /// linear_alltoallv: skew ratio.
    #[arg(long = "a2av-skew-ratio", default_value_t = 1)]
    pub a2av_skew_ratio: i32,
    /// linear_alltoallv: the rank after the root sends d to everyone.
    #[arg(long)]
    pub outcast: bool,
    /// Seed of random_bisect* (default: the current time in seconds, as the
    /// reference).
    #[arg(long)]
    pub seed: Option<u32>,
    /// Trace mode: rank 0's trace file.
    #[arg(long)]
    pub traces: Option<PathBuf>,
    /// Trace mode: multiplier from trace microseconds to schedule units.
    #[arg(long, default_value_t = 1000.0)]
    pub timemult: f64,
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Arguments of `loggopsim trace2goal --traces FIRST_TRACE_FILE -o OUT.goal`.
#[derive(clap::Args, Debug, Clone)]
pub struct Trace2GoalArgs {
    /// First trace file (pmpi-trace-rank-0.txt); the others are found by
    /// name (`-0` replaced by `-1`, `-2`, ... while the files exist).
    #[arg(long)]
    pub traces: std::path::PathBuf,
    /// Multiplier from trace microseconds to schedule picoseconds.
    #[arg(long, default_value_t = 1_000_000.0)]
    pub timemult: f64,
    /// Output GOAL file (`-` for stdout).
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "filename",
        default_value = "schedule.goal"
    )]
    pub output: PathBuf,
    /// If given (even 0): local-work prelude of this length in every rank
    /// (schedule units; a unit suffix converts to picoseconds: `5us`).
    #[arg(long, value_parser = sched_time, value_name = "TIME")]
    pub nb: Option<i64>,
    /// Split the prelude into calcs of this length (0: one calc).
    #[arg(long = "nb-poll", default_value = "0", value_parser = sched_time, value_name = "TIME")]
    pub nb_poll: i64,
    /// CPU index; non-zero switches on the `cpu` suffix of CPU calcs.
    #[arg(long, default_value_t = 0)]
    pub cpu: u64,
    #[command(flatten)]
    pub trace: TraceArgs,
}

fn prelude(nb: Option<i64>, poll: i64) -> Option<Prelude> {
    nb.map(|nb| Prelude { nb, poll })
}

/// Most calcs the `--nb`/`--nb-poll` prelude may write per rank.
pub const MAX_PRELUDE_CALCS: i64 = 1_000_000;

fn check_prelude(p: Option<Prelude>) -> anyhow::Result<()> {
    if let Some(p) = p {
        if p.poll > 0 && (p.nb / p.poll) >= MAX_PRELUDE_CALCS {
            anyhow::bail!(
                "--nb {} with --nb-poll {} would write {} calcs per rank (limit {MAX_PRELUDE_CALCS})",
                p.nb,
                p.poll,
                p.nb / p.poll + 1
            );
        }
    }
    Ok(())
}

/// A schedule-unit time from the command line: a bare number as it is, or
/// a number with a unit suffix (ps, ns, us, ms, s) in picoseconds, the unit
/// loggopsim uses. Overflow and negative values are errors.
pub fn sched_time(s: &str) -> Result<i64, String> {
    let t = simtime::parse_time_arg(s, simtime::TimeUnit::Ps)?;
    i64::try_from(t.as_ps()).map_err(|_| format!("`{s}` is too large (at most {} ps)", i64::MAX))
}

/// [`sched_time`], or `-1` for "off".
fn sched_time_or_off(s: &str) -> Result<i64, String> {
    if s.trim() == "-1" {
        return Ok(-1);
    }
    sched_time(s)
}

/// Trace time (whole microseconds): a bare number is microseconds.
fn trace_us_int(s: &str) -> Result<i64, String> {
    let t = simtime::parse_time_arg(s, simtime::TimeUnit::Us)?;
    let ps = t.as_ps();
    if ps % 1_000_000 != 0 {
        return Err(format!(
            "`{s}` is not a whole number of microseconds (trace time unit)"
        ));
    }
    i64::try_from(ps / 1_000_000).map_err(|_| format!("`{s}` is too large"))
}

/// A duration in microseconds as a float: a bare number is microseconds;
/// `ps`, `ns`, `us`, `ms`, `s` suffixes are converted.
pub fn us_f64(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')
        })
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let f = match unit {
        "" | "us" => 1.0,
        "ps" => 1e-6,
        "ns" => 1e-3,
        "ms" => 1e3,
        "s" => 1e6,
        u => {
            return Err(format!(
                "`{s}`: unknown time unit `{u}` (known: ps, ns, us, ms, s)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a number (with an optional unit: 165.894us)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("`{s}` must be a non-negative finite number"));
    }
    Ok(v * f)
}

fn write_output(path: &Path, text: &str, summary: &str) -> anyhow::Result<()> {
    if path == Path::new("-") {
        std::io::stdout().write_all(text.as_bytes())?;
        eprintln!("{summary}");
    } else {
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("{summary}");
    }
    Ok(())
}

/// Builds the library's trace options from the command line.
pub fn trace_options(
    t: &TraceArgs,
    timemult: f64,
    cpu: u64,
    pre: Option<Prelude>,
) -> anyhow::Result<TraceOptions> {
    if !(timemult.is_finite() && timemult > 0.0) {
        anyhow::bail!("--timemult must be a positive number (got {timemult})");
    }
    if t.pinning && !(t.pin_a >= 0.0 && t.pin_b >= 0.0) {
        anyhow::bail!("--pin-a and --pin-b must be non-negative");
    }
    Ok(TraceOptions {
        timemult,
        nops: t.traces_nops,
        extr: t.traces_extr,
        print: t.traces_print != 0,
        nop2p: t.traces_nop2p,
        nocolls: t.traces_nocolls,
        nbcify: t.traces_nbcify,
        cpu,
        prelude: pre,
        strict: t.strict,
        raw_tags: t.raw_tags,
        pinning: t.pinning.then_some(PinningModel {
            a_us: t.pin_a,
            b_us_per_byte: t.pin_b,
        }),
        durations: if t.durations {
            Some(LinkLayer::by_name(&t.link_model).ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown --link-model `{}` (known: {})",
                    t.link_model,
                    LINK_LAYER_NAMES.join(", ")
                )
            })?)
        } else {
            None
        },
        sync_collectives: t.sync_collectives,
        sync_p2p: t.sync_p2p,
        collectives: crate::collectives::Library::by_name(if t.collectives.is_empty() {
            "textbook"
        } else {
            &t.collectives
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown --collectives `{}` (known: {})",
                t.collectives,
                crate::collectives::LIBRARY_NAMES.join(", ")
            )
        })?,
        require_all: t.require_all,
        start_file: t.traces_start.clone(),
        compute: match t.compute.as_deref() {
            Some(name) => {
                let c = crate::trace::Compute::by_name(name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown --compute `{name}` (known: {})",
                        crate::trace::COMPUTE_NAMES.join(", ")
                    )
                })?;
                if c == crate::trace::Compute::Cpu && (t.sync_collectives || t.sync_p2p) {
                    anyhow::bail!(
                        "--compute cpu cannot be combined with --sync-collectives or --sync-p2p: \
                         they place every rank on the traces' common wall clock (use --compute wall)"
                    );
                }
                c
            }
            None if t.durations || t.sync_collectives || t.sync_p2p => crate::trace::Compute::Wall,
            None => crate::trace::Compute::Cpu,
        },
    })
}

fn run_trace(first: &Path, out: &Path, t: &TraceArgs, o: TraceOptions) -> anyhow::Result<()> {
    let tr = trace::translate(first, &o)?;
    for wmsg in &tr.warnings {
        eprintln!("warning: {wmsg}");
    }
    write_output(out, &tr.goal, &tr.counts.to_string())?;
    if t.print_overheads {
        eprintln!(
            "processing-overhead calibration (thesis 5.3): {}",
            suggested_loggopsim_command(&out.display().to_string())
        );
    }
    Ok(())
}

pub fn run_gen(args: &GenArgs) -> anyhow::Result<()> {
    let pre = prelude(args.nb, args.nb_poll);
    check_prelude(pre)?;
    if args.pattern == "trace" {
        let Some(first) = &args.traces else {
            anyhow::bail!(
                "trace mode needs --traces FILE (rank 0's trace, e.g. pmpi-trace-rank-0.txt)"
            );
        };
        let mut o = trace_options(&args.trace, args.timemult, args.cpu, pre)?;
        if args.trace.compute.is_none() {
            // The reference's trace mode measures wall-clock gaps.
            o.compute = crate::trace::Compute::Wall;
        }
        return run_trace(first, &args.filename, &args.trace, o);
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(0)
    });
    let o = PatternOptions {
        commsize: args.commsize,
        datasize: args.datasize,
        root: args.root,
        segmentsize: args.segmentsize,
        nway: args.nway,
        rpl_dep_cmp: args.rpl_dep_cmp,
        a2av_skew_ratio: args.a2av_skew_ratio,
        outcast: args.outcast,
        seed,
    };
    let text = generate(&args.pattern, &o, args.cpu, pre)?;
    let (goal, summary) = text;
    write_output(&args.filename, &goal, &summary)
}

/// Generates a pattern's GOAL text and the reference's console summary.
pub fn generate(
    name: &str,
    o: &PatternOptions,
    cpu: u64,
    pre: Option<Prelude>,
) -> anyhow::Result<(String, String)> {
    patterns::validate(name, o)?;
    let p = patterns::effective_ranks(name, o.commsize);
    let mut w = GoalWriter::new(p as i64, cpu, pre);
    patterns::write_pattern(&mut w, name, o)?;
    let (goal, counts) = w.finish();
    let summary = if name == "resnet" {
        format!("create resnet with {} nodes\n{counts}", o.commsize)
    } else {
        counts.to_string()
    };
    Ok((goal, summary))
}

pub fn run_trace2goal(args: &Trace2GoalArgs) -> anyhow::Result<()> {
    check_prelude(prelude(args.nb, args.nb_poll))?;
    let o = trace_options(
        &args.trace,
        args.timemult,
        args.cpu,
        prelude(args.nb, args.nb_poll),
    )?;
    run_trace(&args.traces, &args.output, &args.trace, o)
}
