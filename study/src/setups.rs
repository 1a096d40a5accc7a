//! The five setups of the thesis's section 4.8, how each is started, and
//! what is read from the simulators' JSON reports.

use crate::proc::{ProcSpec, RunResult};
use anyhow::{anyhow, Context};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the workspace's binaries are.
#[derive(Clone, Debug)]
pub struct Bins {
    pub loggopsim: PathBuf,
    pub ibnet: PathBuf,
    pub ipc_proto: PathBuf,
}

impl Bins {
    pub fn in_dir(dir: &Path) -> anyhow::Result<Bins> {
        let b = Bins {
            loggopsim: dir.join("loggopsim"),
            ibnet: dir.join("ibnet"),
            ipc_proto: dir.join("ipc-proto"),
        };
        for p in [&b.loggopsim, &b.ibnet, &b.ipc_proto] {
            if !p.exists() {
                anyhow::bail!(
                    "{} not found (build the workspace binaries, or pass --bin-dir)",
                    p.display()
                );
            }
        }
        Ok(b)
    }
}

/// The traffic and network every setup runs: a dissemination among
/// `ranks` ranks with `bytes`-byte messages on `topology`, and a GOAL
/// schedule of the same traffic for the scheduler.
#[derive(Clone, Debug)]
pub struct Workload {
    pub ranks: u32,
    pub bytes: u64,
    /// Repetitions of the dissemination (each rank starts repetition i+1
    /// after its last round of repetition i), so that a run is long enough
    /// for process start-up not to dominate.
    pub count: u64,
    pub topology: String,
    pub preset: String,
    /// Fabric parameter overrides (`--set KEY=VALUE`), for every fabric run.
    pub sets: Vec<String>,
    pub goal: PathBuf,
}

impl Workload {
    pub fn describe(&self) -> String {
        let mut s = format!(
            "dissemination among {} ranks, {} B messages, {} time(s), topology {}, fabric preset {}",
            self.ranks, self.bytes, self.count, self.topology, self.preset
        );
        for kv in &self.sets {
            s.push_str(&format!(" --set {kv}"));
        }
        s.push_str(", L=o=g=G=O=0");
        s
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Two processes over POSIX message queues (the thesis's transport).
    Ipc,
    /// Two processes over shared-memory rings (scripts/cosim's default).
    Shm,
    /// One process, the fabric on a thread (in-process channels).
    Inproc,
    /// One process, the fabric engine called by the scheduler's thread.
    OnePiece,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Ipc => "mq",
            Transport::Shm => "shm",
            Transport::Inproc => "inproc",
            Transport::OnePiece => "onepiece",
        }
    }
    /// Two processes (a fabric process of its own).
    pub fn two_processes(self) -> bool {
        matches!(self, Transport::Ipc | Transport::Shm)
    }
    /// Words for tables and figures.
    pub fn describe(self) -> &'static str {
        match self {
            Transport::Ipc => "message queues",
            Transport::Shm => "shared memory",
            Transport::Inproc => "in-process thread",
            Transport::OnePiece => "one-piece",
        }
    }
}

/// One setup of the study.
#[derive(Clone, Debug, PartialEq)]
pub enum Setup {
    /// `ibnet run` with its built-in closed-loop dissemination.
    FabricAlone,
    /// `loggopsim` with the LogGP backend (L=o=g=G=O=0).
    LogGops,
    /// Polling; `estimate` is the arrival-estimate factor F.
    Query {
        quantum_ps: u64,
        estimate: Option<f64>,
        transport: Transport,
    },
    /// Notification; `version` 2 is exact notify (docs/protocol.md rule 3a),
    /// 1 the thesis's run-ahead notify (`notify-v1`).
    Notify { transport: Transport, version: u8 },
}

/// "1 ns", "100 ps".
pub fn fmt_quantum(ps: u64) -> String {
    if ps >= 1000 && ps.is_multiple_of(1000) {
        format!("{} ns", ps / 1000)
    } else {
        format!("{ps} ps")
    }
}

impl Setup {
    pub fn label(&self) -> String {
        match self {
            Setup::FabricAlone => "fabric alone".into(),
            Setup::LogGops => "LogGOPS alone (LogGP)".into(),
            Setup::Query {
                quantum_ps,
                estimate,
                transport,
            } => {
                let t = if *transport == Transport::Ipc {
                    String::new()
                } else {
                    format!(", {}", transport.name())
                };
                // (polling is exact under both protocol versions)
                match estimate {
                    None => format!("query q={}{t}", fmt_quantum(*quantum_ps)),
                    Some(f) => format!("query q={} F={f}{t}", fmt_quantum(*quantum_ps)),
                }
            }
            Setup::Notify { transport, version } => {
                format!("notify v{version} ({})", transport.name())
            }
        }
    }

    pub fn protocol(&self) -> &'static str {
        match self {
            Setup::FabricAlone | Setup::LogGops => "",
            Setup::Query { .. } => "query",
            Setup::Notify { version: 1, .. } => "notify-v1",
            Setup::Notify { .. } => "notify",
        }
    }

    pub fn transport(&self) -> Option<Transport> {
        match self {
            Setup::Query { transport, .. } | Setup::Notify { transport, .. } => Some(*transport),
            _ => None,
        }
    }

    /// Polling runs can be long: they may be stopped for the budget.
    pub fn may_exceed_budget(&self) -> bool {
        matches!(self, Setup::Query { .. })
    }

    /// The children to start, fabric first (it creates the IPC objects).
    pub fn procs(&self, w: &Workload, bins: &Bins, key: &str, work: &Path) -> Vec<ProcSpec> {
        let fabric_report = work.join("fabric.json").display().to_string();
        let sched_base = |net: &str| -> Vec<String> {
            let mut v: Vec<String> = vec!["-f".into(), w.goal.display().to_string()];
            for p in ["-L", "-o", "-g", "-G", "-O"] {
                v.push(p.into());
                v.push("0".into());
            }
            v.extend(["--json".into(), "--network".into(), net.into()]);
            v
        };
        let fabric_opts = || -> Vec<String> {
            let mut v: Vec<String> = vec![
                "--topology".into(),
                w.topology.clone(),
                "--preset".into(),
                w.preset.clone(),
            ];
            for kv in &w.sets {
                v.push("--set".into());
                v.push(kv.clone());
            }
            v
        };
        let proto_opts = |protocol: &str, q: Option<u64>, f: Option<f64>| -> Vec<String> {
            let mut v: Vec<String> = vec!["--protocol".into(), protocol.into()];
            if let Some(q) = q {
                v.push("--quantum".into());
                v.push(format!("{q}ps"));
            }
            if let Some(f) = f {
                v.push("--estimate".into());
                v.push(f.to_string());
            }
            v
        };
        let cosim =
            |protocol: &str, q: Option<u64>, f: Option<f64>, t: Transport| -> Vec<ProcSpec> {
                let poll = protocol == "query";
                match t {
                    Transport::Ipc | Transport::Shm => {
                        let mut fa: Vec<String> = vec!["serve".into(), "--key".into(), key.into()];
                        fa.extend([
                            "--transport".into(),
                            if t == Transport::Shm { "shm" } else { "mq" }.into(),
                        ]);
                        fa.extend(proto_opts(protocol, q, f));
                        fa.extend(fabric_opts());
                        fa.extend(["--json".into(), "--report".into(), fabric_report.clone()]);
                        if poll {
                            fa.push("--progress".into());
                        }
                        let mut fabric = ProcSpec::new("fabric", bins.ibnet.clone(), fa);
                        fabric.pty = poll;
                        let mut sa = sched_base("ipc");
                        sa.extend(proto_opts(protocol, q, f));
                        sa.extend(["--key".into(), key.into()]);
                        vec![
                            fabric,
                            ProcSpec::new("scheduler", bins.loggopsim.clone(), sa),
                        ]
                    }
                    Transport::Inproc | Transport::OnePiece => {
                        let mut sa = sched_base(if t == Transport::Inproc {
                            "inproc"
                        } else {
                            "onepiece"
                        });
                        sa.extend(proto_opts(protocol, q, f));
                        sa.extend(fabric_opts());
                        sa.extend([
                            "--fabric-report".into(),
                            fabric_report.clone(),
                            "--fabric-json".into(),
                        ]);
                        if poll {
                            sa.push("--progress".into());
                        }
                        let mut s = ProcSpec::new("scheduler", bins.loggopsim.clone(), sa);
                        s.pty = poll;
                        vec![s]
                    }
                }
            };
        match self {
            Setup::FabricAlone => {
                let mut a: Vec<String> = vec!["run".into()];
                a.extend(fabric_opts());
                a.extend([
                    "--traffic".into(),
                    format!("dissemination:{}:{}", w.bytes, w.count),
                    "--json".into(),
                ]);
                vec![ProcSpec::new("fabric", bins.ibnet.clone(), a)]
            }
            Setup::LogGops => vec![ProcSpec::new(
                "scheduler",
                bins.loggopsim.clone(),
                sched_base("loggp"),
            )],
            Setup::Query {
                quantum_ps,
                estimate,
                transport,
            } => cosim("query", Some(*quantum_ps), *estimate, *transport),
            Setup::Notify { transport, version } => cosim(
                if *version == 1 { "notify-v1" } else { "notify" },
                None,
                None,
                *transport,
            ),
        }
    }
}

/// What one run measured. `None` = the side did not report it (printed
/// "n/a"); fields that make no sense for a setup are left out by the table.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub wall_s: f64,
    /// The scheduler's own simulation-loop time (its JSON `wall_time_s`).
    pub sched_loop_s: Option<f64>,
    pub sched_events: Option<u64>,
    pub fabric_events: Option<u64>,
    /// Message-queue messages / records sent by the scheduler.
    pub sched_messages: Option<u64>,
    pub sched_records: Option<u64>,
    /// Records the scheduler received from the fabric.
    pub fabric_records: Option<u64>,
    pub inserts: Option<u64>,
    pub queries: Option<u64>,
    /// Blocking exchanges: queries (query) or NoMoreInserts (notify).
    pub round_trips: Option<u64>,
    pub sched_rss_kb: Option<u64>,
    pub fabric_rss_kb: Option<u64>,
    /// The study's anonymous memory when it forked the children (KiB): the
    /// most each peak above can include of the study's own memory.
    pub parent_anon_kb: u64,
    pub final_ps: Option<u64>,
    pub causality_errors: Option<u64>,
    pub causality_max_ps: Option<u64>,
}

/// The fields the study reads from `loggopsim --json` (others are skipped
/// while parsing, so big reports cost no memory).
#[derive(Deserialize, Default)]
struct SchedJson {
    processed_events: Option<u64>,
    #[serde(rename = "max_finish_time_ps")]
    max_finish_time: Option<u64>,
    wall_time_s: Option<f64>,
    #[serde(default)]
    network_stats: HashMap<String, u64>,
}

/// `ibnet run --json`.
#[derive(Deserialize, Default)]
pub struct RunJson {
    #[serde(default)]
    pub run: RunInfo,
    pub closed_loop: Option<ClosedLoop>,
    pub report: Option<RunReport>,
}

#[derive(Deserialize, Default)]
pub struct RunInfo {
    pub events_processed: Option<u64>,
    pub wall_s: Option<f64>,
}

#[derive(Deserialize, Default)]
pub struct ClosedLoop {
    pub end_ps: Option<u64>,
    pub ranks: Option<u64>,
}

#[derive(Deserialize, Default)]
pub struct RunReport {
    #[serde(default)]
    pub sinks: Vec<Named>,
    #[serde(default)]
    pub obufs: Vec<Node>,
}

#[derive(Deserialize, Default)]
pub struct Named {
    pub name: String,
}

#[derive(Deserialize, Default)]
pub struct Node {
    pub node: String,
}

/// The fabric's statistics (`ibnet serve --json`, `--fabric-json`).
#[derive(Deserialize, Default)]
struct FabricJson {
    #[serde(default)]
    server: HashMap<String, serde_json::Value>,
    fabric: Option<RunInfo>,
}

/// Parse a JSON report from a file without holding the whole text.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> anyhow::Result<T> {
    let f = std::fs::File::open(path).with_context(|| format!("{what}: {}", path.display()))?;
    serde_json::from_reader(std::io::BufReader::new(f)).with_context(|| {
        let head: String = std::fs::read_to_string(path)
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        format!("{what}: not a JSON report: {head:?}")
    })
}

impl Setup {
    /// Read the measurements of a finished (successful) run.
    pub fn sample(&self, r: &RunResult, w: &Workload, work: &Path) -> anyhow::Result<Sample> {
        let mut s = Sample {
            wall_s: r.wall_s,
            parent_anon_kb: r.parent_anon_kb,
            ..Sample::default()
        };
        if let Some(p) = r.proc("scheduler") {
            s.sched_rss_kb = Some(p.maxrss_kb);
        }
        if let Some(p) = r.proc("fabric") {
            s.fabric_rss_kb = Some(p.maxrss_kb);
        }
        match self {
            Setup::FabricAlone => {
                let p = r
                    .proc("fabric")
                    .ok_or_else(|| anyhow!("no fabric process"))?;
                let j: RunJson = read_json(&p.stdout_path, "ibnet run --json")?;
                let cl = j.closed_loop.unwrap_or_default();
                s.fabric_events = j.run.events_processed;
                s.final_ps = cl.end_ps;
                // `ibnet run` makes every HCA of the topology a rank: the
                // traffic equals the schedule's only if the counts agree.
                let ranks = cl.ranks;
                if ranks != Some(w.ranks as u64) {
                    anyhow::bail!(
                        "ibnet run's closed loop ran among {} ranks (every HCA of {}), the schedule has {}: choose a topology with exactly {} HCAs",
                        ranks.map(|r| r.to_string()).unwrap_or_else(|| "n/a".into()),
                        w.topology,
                        w.ranks,
                        w.ranks
                    );
                }
            }
            Setup::LogGops | Setup::Query { .. } | Setup::Notify { .. } => {
                let p = r
                    .proc("scheduler")
                    .ok_or_else(|| anyhow!("no scheduler process"))?;
                let j: SchedJson = read_json(&p.stdout_path, "loggopsim --json")?;
                s.sched_events = j.processed_events;
                s.final_ps = j.max_finish_time;
                s.sched_loop_s = j.wall_time_s;
                if matches!(self, Setup::LogGops) {
                    // LogGP alone: no network statistics, no fabric
                    return Ok(s);
                }
                let ns = |k: &str| j.network_stats.get(k).copied();
                s.sched_messages = ns("messages_sent");
                s.sched_records = ns("records_sent");
                s.fabric_records = ns("records_received");
                s.inserts = ns("inserts");
                let fpath = work.join("fabric.json");
                let f: Option<FabricJson> = read_json(&fpath, "fabric statistics").ok();
                if let Some(f) = &f {
                    s.fabric_events = f.fabric.as_ref().and_then(|x| x.events_processed);
                    s.causality_errors = f.server.get("causality_errors").and_then(|v| v.as_u64());
                    s.causality_max_ps = f
                        .server
                        .get("causality_error_ps_max")
                        .and_then(|v| v.as_u64());
                } else {
                    s.fabric_events = ns("fabric_events");
                    s.causality_errors = ns("causality_errors");
                }
                if matches!(self, Setup::Query { .. }) {
                    s.queries = ns("queries");
                    s.round_trips = s.queries;
                } else {
                    s.round_trips = ns("no_more_inserts");
                }
            }
        }
        Ok(s)
    }
}

/// Write the dissemination schedule: once, with `loggopsim gen` (the
/// thesis's schedule); repeated `count` times, the GOAL form of ibnet's
/// closed-loop `dissemination:BYTES:COUNT` (round k of repetition i after
/// the receive of the round before and after the rank's previous send), so
/// that the fabric alone runs the same traffic.
pub fn make_goal_repeated(
    bins: &Bins,
    ranks: u32,
    bytes: u64,
    count: u64,
    out: &Path,
) -> anyhow::Result<()> {
    if count <= 1 {
        return make_goal(bins, ranks, bytes, out);
    }
    use std::io::Write;
    let f = std::fs::File::create(out).with_context(|| format!("{}", out.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let n = ranks as u64;
    let rounds = 64 - (n - 1).leading_zeros() as u64;
    writeln!(w, "num_ranks {n}")?;
    for r in 0..n {
        writeln!(w, "\nrank {r} {{")?;
        let mut prev: Option<u64> = None;
        for i in 0..count {
            for k in 0..rounds {
                let t = i * rounds + k;
                writeln!(w, "s{t}: send {bytes}b to {} tag {t}", (r + (1 << k)) % n)?;
                writeln!(
                    w,
                    "r{t}: recv {bytes}b from {} tag {t}",
                    (r + n - (1 << k) % n) % n
                )?;
                if let Some(p) = prev {
                    writeln!(w, "s{t} requires r{p}\ns{t} requires s{p}")?;
                }
                prev = Some(t);
            }
        }
        writeln!(w, "}}")?;
    }
    w.flush()?;
    Ok(())
}

/// Write the dissemination schedule with `loggopsim gen`.
pub fn make_goal(bins: &Bins, ranks: u32, bytes: u64, out: &Path) -> anyhow::Result<()> {
    let o = std::process::Command::new(&bins.loggopsim)
        .args([
            "gen",
            "dissemination",
            "-s",
            &ranks.to_string(),
            "-d",
            &bytes.to_string(),
            "-o",
        ])
        .arg(out)
        .output()
        .with_context(|| format!("running {}", bins.loggopsim.display()))?;
    if !o.status.success() {
        anyhow::bail!(
            "loggopsim gen dissemination failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl() -> Workload {
        Workload {
            ranks: 8,
            bytes: 180,
            count: 1,
            topology: "H8_S6".into(),
            preset: "thesis-ddr".into(),
            sets: vec![],
            goal: "/tmp/x.goal".into(),
        }
    }

    fn bins() -> Bins {
        Bins {
            loggopsim: "/b/loggopsim".into(),
            ibnet: "/b/ibnet".into(),
            ipc_proto: "/b/ipc-proto".into(),
        }
    }

    #[test]
    fn labels() {
        assert_eq!(
            Setup::Query {
                quantum_ps: 1000,
                estimate: Some(2.0),
                transport: Transport::Ipc
            }
            .label(),
            "query q=1 ns F=2"
        );
        assert_eq!(
            Setup::Notify {
                transport: Transport::Inproc,
                version: 2
            }
            .label(),
            "notify v2 (inproc)"
        );
        assert_eq!(fmt_quantum(100), "100 ps");
    }

    #[test]
    fn query_over_ipc_passes_q_and_f_to_both_sides() {
        let s = Setup::Query {
            quantum_ps: 100,
            estimate: Some(3.0),
            transport: Transport::Ipc,
        };
        let p = s.procs(&wl(), &bins(), "k1", Path::new("/w"));
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].role, "fabric");
        assert!(p[0].pty);
        let f = p[0].display();
        assert!(f.starts_with("/b/ibnet serve --key k1 --transport mq --protocol query --quantum 100ps --estimate 3 --topology H8_S6 --preset thesis-ddr"), "{f}");
        let sc = p[1].display();
        assert!(sc.contains("-L 0 -o 0 -g 0 -G 0 -O 0"), "{sc}");
        assert!(
            sc.ends_with("--network ipc --protocol query --quantum 100ps --estimate 3 --key k1"),
            "{sc}"
        );
    }

    #[test]
    fn fabric_alone_runs_the_same_dissemination() {
        let p = Setup::FabricAlone.procs(&wl(), &bins(), "k", Path::new("/w"));
        assert_eq!(
            p[0].display(),
            "/b/ibnet run --topology H8_S6 --preset thesis-ddr --traffic dissemination:180:1 --json"
        );
    }
}
