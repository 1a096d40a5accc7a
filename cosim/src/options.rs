//! The supervisor's command line, turned into validated settings and the two
//! sides' command lines.

use clap::Parser;
use std::path::{Path, PathBuf};

const AFTER_HELP: &str = "\
Supervision: a side that dies is noticed by the other within ~0.1 s; a side
stopped (SIGSTOP), frozen or hung (alive but making no progress: neither
waiting for its peer nor simulating) is detected within 5 s (its heartbeat
in the control segment stops; IBCOSIM_STALL_TIMEOUT=SECS changes the limit)
and killed, and the supervisor itself names a side that stays stopped for
5 s. The side that failed first is named on stderr (\"cosim: the fabric
(ibnet) failed ...\"). Waiting sides spin for up to 1 ms before they sleep
(IBCOSIM_SPIN_US=MICROSECONDS changes it), only 5 us when their recent waits
were longer than 150 us (IBCOSIM_SPIN_ADAPT=0 turns that off; docs/cosim.md).
Long runs print a plain progress line every IBCOSIM_PROGRESS_SECS (default
10) seconds when stderr is not a terminal (batch logs); on a terminal the scheduler shows a
spinner.

The LogGOPS parameters default to L=o=g=G=O=0 (time unit: picoseconds; the
fabric supplies the transfer times); pass e.g. `-- -o 1500000` to change them.

Output: the scheduler's report (per-rank finish times), then the fabric's
statistics; with --json one object {\"scheduler\": ..., \"fabric\": ...}.
Polling at 1ps costs one round trip per simulated ps a message is in
flight; add `--estimate 1` or use a coarser quantum for large runs.

Binaries: loggopsim and ibnet from IBCOSIM_BIN_DIR, else from this
program's own directory (scripts/cosim builds them on first use).

Exit status: 0 on success, otherwise the status of the side that failed
first: 1 simulation or protocol failure (also: a side died or was stopped);
2 bad options or input (nothing was started); 3 a system resource is
exhausted (message-queue budget RLIMIT_MSGQUEUE with --transport mq, or
/dev/shm; the message names the limit and the remedy); 128+N the failing
side (or the supervisor) was killed by signal N. See docs/cosim.md.";

/// Raw command line (scripts/cosim passes its arguments through).
#[derive(Parser, Debug)]
#[command(
    name = "cosim",
    bin_name = "scripts/cosim",
    version,
    about = "Run an MPI schedule (GOAL) on a simulated InfiniBand fabric: the scheduler \
(loggopsim) and the fabric (ibnet serve) as two processes coupled by the protocol, \
supervised. With no arguments: the built-in example (examples/pingpong.goal on H8_S6, \
thesis-ddr, notify over shared memory).",
    after_help = AFTER_HELP,
    mut_arg("topology", |a| a.short('t'))
)]
pub struct Args {
    /// GOAL schedule (text or LogGOPSim binary) [default: examples/pingpong.goal, the built-in example]
    #[arg(short = 'f', long = "schedule", value_name = "FILE")]
    pub schedule: Option<PathBuf>,
    /// The fabric's topology (also `-t`), preset, overrides and rank map,
    /// as `ibnet serve` takes them (ibnet::options).
    #[command(flatten)]
    pub fabric: ibnet::options::FabricOptions,
    /// The fabric as logical processes (passed on to the side that builds
    /// it, ibnet serve or loggopsim).
    #[command(flatten)]
    pub fabric_parallel: ibnet::options::FabricThreads,
    /// One of several jobs on the fabric instead of -f (repeatable; PL = linear | round-robin
    /// | random:SEED | map:FILE; per-job finish times after the report; docs/jobs.md)
    #[arg(long = "job", value_name = "FILE[:PL]")]
    pub jobs: Vec<String>,
    /// notify | query (protocol version 2, exact) | notify-v1 | query-v1 (version 1: the
    /// thesis's run-ahead notify) | notify-v3 | query-v3 (version 3: with put/get) | notify-v4
    /// (version 4: triggered inserts, fewer round trips, same results)
    #[arg(short = 'p', long, value_name = "P", default_value = "notify")]
    pub protocol: String,
    /// shm | mq (two processes over shared-memory rings or POSIX message queues; ipc = shm)
    /// | inproc (fabric on a thread) | onepiece (fabric engine called by the scheduler's thread)
    #[arg(long, value_name = "T", default_value = "shm")]
    pub transport: String,
    /// same-cpu (the default with --wait block): both sides share one CPU, since they
    /// alternate and never work at once (a wake-up on the same CPU is several times cheaper
    /// than across CPUs; other CPUs stay free for other sessions) | free (the default with
    /// --wait poll): the kernel places them
    #[arg(long, value_name = "P")]
    pub placement: Option<String>,
    /// How a side waits for the other: block (default: poll briefly, then sleep; one CPU per
    /// session) | poll (each side polls on a CPU of its own and never sleeps while its peer
    /// works: no wake-up or context switch per round trip; on this project's VM the 648-rank
    /// dissemination's coupling costs 3-18% of the fabric's time instead of 15-35%, small runs
    /// gain nothing; two CPUs busy per session: for dedicated machines, not parameter sweeps)
    #[arg(long, value_name = "W", default_value = "block")]
    pub wait: String,
    /// Query protocol precision, e.g. 1ns, 100ps, 1ps [default: 1ps]
    #[arg(short = 'q', long, value_name = "TIME")]
    pub quantum: Option<String>,
    /// Query protocol arrival estimate factor F, a multiple of 0.001 (off by default; the
    /// query protocols only)
    #[arg(long, value_name = "F")]
    pub estimate: Option<String>,
    /// What F multiplies: hops (per-hop fixed latencies, the thesis's) | zero-load (lower bound
    /// incl. serialisation) [default: hops]
    #[arg(long, value_name = "B")]
    pub estimate_base: Option<String>,
    /// Session key for the IPC objects, 1-64 of A-Z a-z 0-9 _ - [default: cosim-<pid>]
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Write the insert and arrival logs of the fabric into DIR
    #[arg(long, value_name = "DIR")]
    pub fabric_log: Option<PathBuf>,
    /// Machine-readable reports (loggopsim and ibnet)
    #[arg(long)]
    pub json: bool,
    /// Progress on stderr (a spinner on a terminal; plain lines every few seconds otherwise)
    /// [default: on when stderr is a terminal]
    #[arg(long)]
    pub progress: bool,
    /// Extra loggopsim options, after `--`
    #[arg(last = true, value_name = "LOGGOPSIM OPTIONS")]
    pub extra: Vec<String>,
}

/// How the two sides are coupled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Shm,
    Mq,
    Inproc,
    Onepiece,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Shm => "shm",
            Transport::Mq => "mq",
            Transport::Inproc => "inproc",
            Transport::Onepiece => "onepiece",
        }
    }
    /// One process (no IPC session).
    pub fn in_process(self) -> bool {
        matches!(self, Transport::Inproc | Transport::Onepiece)
    }
}

/// Validated settings and the command lines of the sides.
#[derive(Debug)]
pub struct Settings {
    pub key: String,
    pub key_given: bool,
    pub transport: Transport,
    /// Both sides on one CPU (`--placement same-cpu`).
    pub same_cpu: bool,
    /// How the sides wait for each other (`--wait`).
    pub wait: ipc_proto::transport::WaitMode,
    pub protocol: String,
    pub json: bool,
    pub loggopsim: PathBuf,
    pub ibnet: PathBuf,
    /// The scheduler's arguments without the network part.
    pub sched_args: Vec<String>,
    /// Arguments both sides take (query: q, F, base).
    pub proto_args: Vec<String>,
    /// The fabric's topology, preset, overrides, rank map.
    pub fabric_args: Vec<String>,
    /// --log-inserts/--log-arrivals.
    pub log_args: Vec<String>,
    pub extra: Vec<String>,
    /// Seconds between plain progress lines when stderr is not a terminal (0: none).
    pub progress_secs: u64,
    /// `--job` specifications (several jobs on one fabric), and the
    /// topology they are placed on.
    pub jobs: Vec<String>,
    pub topology: String,
}

/// A refusal before anything starts (exit 2).
#[derive(Debug)]
pub struct Refusal(pub String);

fn key_ok(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Settings {
    /// `root` is the repository (for the built-in example), `bindir` where
    /// loggopsim and ibnet are, `stderr_tty` whether stderr is a terminal.
    pub fn from_args(
        a: Args,
        root: &Path,
        bindir: &Path,
        stderr_tty: bool,
    ) -> Result<Settings, Refusal> {
        let protocol = a.protocol.clone();
        if ![
            "query",
            "notify",
            "query-v1",
            "notify-v1",
            "query-v3",
            "notify-v3",
            "notify-v4",
        ]
        .contains(&protocol.as_str())
        {
            return Err(Refusal(format!(
                "--protocol must be query, notify, query-v1, notify-v1, query-v3, notify-v3 or notify-v4, not '{protocol}'"
            )));
        }
        let wait = ipc_proto::transport::WaitMode::parse(&a.wait)
            .ok_or_else(|| Refusal(format!("--wait must be block or poll, not '{}'", a.wait)))?;
        let poll = wait == ipc_proto::transport::WaitMode::Poll;
        let same_cpu = match a.placement.as_deref() {
            None => !poll,
            Some("same-cpu") if poll => {
                return Err(Refusal(
                    "--wait poll needs each side on a CPU of its own: it cannot be combined with --placement same-cpu (use --placement free, the default with --wait poll)".into(),
                ))
            }
            Some("same-cpu") => true,
            Some("free") => false,
            Some(p) => {
                return Err(Refusal(format!(
                    "--placement must be same-cpu or free, not '{p}'"
                )))
            }
        };
        let transport = match a.transport.as_str() {
            "shm" | "ipc" => Transport::Shm,
            "mq" => Transport::Mq,
            "inproc" => Transport::Inproc,
            "onepiece" => Transport::Onepiece,
            t => {
                return Err(Refusal(format!(
                    "--transport must be shm, mq, ipc, inproc or onepiece, not '{t}'"
                )))
            }
        };
        if poll && transport.in_process() {
            return Err(Refusal(format!(
                "--wait poll applies to the two-process transports (shm, mq), not to --transport {}",
                transport.name()
            )));
        }
        let key_given = a.key.is_some();
        let key = a
            .key
            .unwrap_or_else(|| format!("cosim-{}", std::process::id()));
        if !key_ok(&key) {
            return Err(Refusal(format!(
                "invalid session key '{key}': use 1-64 characters from A-Z a-z 0-9 _ -"
            )));
        }
        let query = protocol.starts_with("query");
        // The protocol's options, checked once here (not by both sides).
        let quantum = a.quantum.unwrap_or_else(|| "1ps".into());
        ibnet::server::parse_quantum(&quantum)
            .map_err(|e| Refusal(format!("invalid value '{quantum}' for '--quantum': {e}")))?;
        if let Some(f) = &a.estimate {
            if !query {
                // (loggopsim's words when the fabric refuses its Config)
                return Err(Refusal(format!(
                    "--estimate {f}: an arrival estimate (F) only exists in the query protocol (-p query, query-v1 or query-v3), not in -p {protocol}"
                )));
            }
            let v: f64 = f.trim().parse().map_err(|_| {
                Refusal(format!(
                    "invalid value '{f}' for '--estimate': not a number"
                ))
            })?;
            ipc_proto::estimate_to_milli(v)
                .map_err(|e| Refusal(format!("invalid value '{f}' for '--estimate': {e}")))?;
        }
        if let Some(b) = &a.estimate_base {
            b.parse::<ipc_proto::EstimateBase>()
                .map_err(|e| Refusal(format!("invalid value '{b}' for '--estimate-base': {e}")))?;
        }
        if !a.jobs.is_empty() && a.fabric.map.is_some() {
            return Err(Refusal(
                "--map and --job exclude each other: give a job's hosts with FILE:map:HOSTS".into(),
            ));
        }
        if !a.jobs.is_empty() && a.schedule.is_some() {
            return Err(Refusal(
                "-f and --job exclude each other: give every job with --job".into(),
            ));
        }
        let schedule = a
            .schedule
            .unwrap_or_else(|| root.join("examples").join("pingpong.goal"));
        let sched_ranks = if a.jobs.is_empty() {
            Some(crate::precheck::schedule_ranks(&schedule).map_err(Refusal)?)
        } else {
            None
        };
        // The fabric's inputs, as `ibnet serve` will read them.
        let mapped = crate::precheck::fabric(&a.fabric).map_err(Refusal)?;
        if let Some(n) = sched_ranks.filter(|&n| n as usize > mapped) {
            return Err(Refusal(format!(
                "the schedule has {n} ranks but the fabric (topology {}) maps only {mapped} ranks to HCAs (use a larger topology or a --map file)",
                a.fabric.topology
            )));
        }
        let topology = a.fabric.topology.clone();
        // as the side that builds the fabric reads them again
        let mut fabric_args = a.fabric.to_args();
        if a.fabric_parallel.fabric_threads != 1 {
            fabric_args.push("--fabric-threads".into());
            fabric_args.push(a.fabric_parallel.fabric_threads.to_string());
        }
        if let Some(p) = &a.fabric_parallel.fabric_partition {
            fabric_args.push("--fabric-partition".into());
            fabric_args.push(p.to_string_lossy().into_owned());
        }
        let mut sched_args = Vec::new();
        if a.jobs.is_empty() {
            sched_args.push("-f".to_string());
            sched_args.push(schedule.to_string_lossy().into_owned());
        }
        for j in &a.jobs {
            sched_args.push("--job".into());
            sched_args.push(j.clone());
        }
        sched_args.push("--protocol".into());
        sched_args.push(protocol.clone());
        if a.json {
            sched_args.push("--json".into());
        }
        // LogGOPS parameters: 0 unless given after `--` (loggopsim refuses
        // an option given twice).
        for p in ["L", "o", "g", "G", "O"] {
            let flag = format!("-{p}");
            let given = a.extra.iter().any(|x| {
                x == &flag
                    || (x.starts_with(&flag)
                        && x[flag.len()..].starts_with(|c: char| c.is_ascii_digit()))
            });
            if !given {
                sched_args.push(flag);
                sched_args.push("0".into());
            }
        }
        let mut proto_args = Vec::new();
        if query {
            // Both sides need q and F in version 1; in version 2 the
            // scheduler's Config carries them and the fabric insists only
            // on what it is given.
            proto_args.push("--quantum".into());
            proto_args.push(quantum);
            if let Some(f) = a.estimate {
                proto_args.push("--estimate".into());
                proto_args.push(f);
            }
            if let Some(b) = a.estimate_base {
                proto_args.push("--estimate-base".into());
                proto_args.push(b);
            }
        }
        if a.progress || stderr_tty {
            sched_args.push("--progress".into());
        }
        let progress_secs = std::env::var("IBCOSIM_PROGRESS_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10);
        let mut log_args = Vec::new();
        if let Some(d) = a.fabric_log {
            if std::fs::create_dir_all(&d).is_err() {
                return Err(Refusal(format!("cannot create {}", d.display())));
            }
            let d = d.to_string_lossy().into_owned();
            log_args = vec![
                "--log-inserts".into(),
                format!("{d}/inserts.log"),
                "--log-arrivals".into(),
                format!("{d}/arrivals.log"),
            ];
        }
        Ok(Settings {
            key,
            key_given,
            transport,
            same_cpu,
            wait,
            protocol,
            json: a.json,
            loggopsim: bindir.join("loggopsim"),
            ibnet: bindir.join("ibnet"),
            sched_args,
            proto_args,
            fabric_args,
            log_args,
            extra: a.extra,
            progress_secs,
            jobs: a.jobs,
            topology,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> Result<Settings, Refusal> {
        let mut v = vec!["cosim"];
        v.extend_from_slice(args);
        let a = Args::try_parse_from(v).unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        Settings::from_args(a, root, Path::new("/bin"), false)
    }

    #[test]
    fn loggops_parameters_default_to_zero_unless_given_after_the_separator() {
        let s = settings(&["--", "-o", "1500", "-L2500"]).unwrap();
        let a = s.sched_args.join(" ");
        assert!(a.ends_with("--protocol notify -g 0 -G 0 -O 0"), "{a}");
        assert_eq!(s.extra, ["-o", "1500", "-L2500"]);
        assert_eq!(s.transport, Transport::Shm);
        assert!(s.proto_args.is_empty());
    }

    #[test]
    fn the_fabric_options_reach_the_fabric_side_as_given() {
        let s = settings(&["-t", "H8_S1", "--set", "max_vl=1", "--preset", "qdr"]).unwrap();
        assert_eq!(
            s.fabric_args,
            [
                "--topology",
                "H8_S1",
                "--preset",
                "qdr",
                "--set",
                "max_vl=1"
            ]
        );
        assert_eq!(s.topology, "H8_S1");
        let s = settings(&[]).unwrap();
        assert_eq!(
            s.fabric_args,
            ["--topology", "H8_S6", "--preset", "thesis-ddr"]
        );
    }

    #[test]
    fn wait_poll_lets_the_kernel_place_the_sides() {
        use ipc_proto::transport::WaitMode;
        let s = settings(&[]).unwrap();
        assert_eq!((s.wait, s.same_cpu), (WaitMode::Block, true));
        let s = settings(&["--wait", "poll"]).unwrap();
        assert_eq!((s.wait, s.same_cpu), (WaitMode::Poll, false));
        let s = settings(&["--wait", "block", "--placement", "free"]).unwrap();
        assert_eq!((s.wait, s.same_cpu), (WaitMode::Block, false));
    }

    #[test]
    fn query_passes_quantum_and_estimate_to_both_sides() {
        let s = settings(&["-p", "query", "-q", "100ps", "--estimate", "2"]).unwrap();
        assert_eq!(s.proto_args, ["--quantum", "100ps", "--estimate", "2"]);
    }

    #[test]
    fn refusals_name_the_problem() {
        let e = |a: &[&str]| settings(a).unwrap_err().0;
        assert!(e(&["--key", "a/b"]).contains("invalid session key 'a/b'"));
        assert!(e(&["--key", &"k".repeat(65)]).contains("invalid session key"));
        assert!(e(&["-p", "poll"]).contains("--protocol must be"));
        assert!(e(&["--transport", "tcp"]).contains("--transport must be"));
        assert!(e(&["-f", "/nonexistent.goal"]).contains("cannot read schedule"));
        assert!(settings(&["--transport", "ipc"]).unwrap().transport == Transport::Shm);
        assert!(e(&["--job", "a.goal", "--map", "m.txt"]).contains("exclude each other"));
        assert!(e(&["--wait", "spin"]).contains("--wait must be block or poll, not 'spin'"));
        assert!(e(&["--wait", "poll", "--placement", "same-cpu"]).contains("cannot be combined"));
        assert!(
            e(&["--wait", "poll", "--transport", "onepiece"]).contains("two-process transports")
        );
        assert!(e(&["--placement", "near"]).contains("--placement must be same-cpu or free"));
        let s = settings(&["--job", "a.goal:linear", "--job", "b.goal"]).unwrap();
        assert!(s
            .sched_args
            .join(" ")
            .starts_with("--job a.goal:linear --job b.goal --protocol"));
    }
}
