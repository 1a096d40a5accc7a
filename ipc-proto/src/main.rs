//! `ipc-proto`: helper binary of the wire protocol crate.
//!
//! - `ipc-proto cleanup KEY`: remove the queues and segment a killed run of
//!   KEY left behind.
//! - `ipc-proto bench`: one-way throughput and query round trips over POSIX
//!   message queues and in-process channels.
//! - `ipc-proto conformance --role fabric|scheduler --key KEY ...`: check
//!   a peer under test against docs/protocol.md (see `--help`).
//! - `ipc-proto test-peer ...` (hidden): the second process of the
//!   integration tests.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use ipc_proto::{
    cleanup, inproc, open_scheduler, selftest, Channel, ProtoError, Protocol, QueueGeometry,
    Record, Role, Time,
};
use std::io::Write;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "ipc-proto",
    version,
    about = "Scheduler <-> fabric wire protocol: maintenance and benchmark tool",
    after_help = "Exit codes: 0 success; 1 failure (conformance: a rule failed); 2 bad options; \
3 a system resource is exhausted (the per-user message-queue budget RLIMIT_MSGQUEUE or /dev/shm: \
the message names the limit and the remedy). The co-simulation binaries use the same codes \
(docs/cosim.md)."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Remove the message queues and the control segment of session KEY
    /// (leftovers of a killed run). Missing objects are not an error.
    Cleanup {
        key: String,
        /// Print the removed names as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Measure one-way records/s (batched) and query/reply round trips/s
    /// (mean, p50, p99), over shared memory, POSIX message queues and
    /// in-process channels (two threads; `taskset -c 0` puts both on one CPU).
    Bench {
        /// Records for the one-way measurement.
        #[arg(long, default_value_t = 2_000_000)]
        records: u64,
        /// Query/reply round trips.
        #[arg(long, default_value_t = 100_000)]
        roundtrips: u64,
        /// Which transports to measure.
        #[arg(long, value_enum, default_value_t = Which::All)]
        transport: Which,
        /// One JSON object on stdout instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check a peer under test against docs/protocol.md: the checker plays
    /// the OTHER side in scripted scenarios and prints one line per rule
    /// (PASS/FAIL and a reason); exit status 1 if any rule failed.
    #[command(after_help = CONFORMANCE_HELP)]
    Conformance(ConformanceArgs),
    /// Test peer for the integration tests (prints READY once set up).
    #[command(hide = true)]
    TestPeer {
        #[arg(long)]
        role: PeerRole,
        #[arg(long)]
        key: String,
        #[arg(long, default_value = "notify")]
        protocol: Protocol,
        #[arg(long, default_value_t = 1000)]
        records: u64,
        /// Queue depth (mq_maxmsg) when creating the session.
        #[arg(long, default_value_t = 10)]
        depth: usize,
        /// Set up the session, print READY, then sleep until killed.
        #[arg(long)]
        hold: bool,
        /// Transport of the session the fabric creates (mq or shm).
        #[arg(long, default_value = "mq")]
        transport: ipc_proto::TransportKind,
    },
}

const CONFORMANCE_HELP: &str = "\
Roles: --role names the PEER UNDER TEST.
  --role fabric     the peer is a fabric (ibnet serve, scripts/peers/fabric.py);
                    the checker is the scheduler and scripts every record.
  --role scheduler  the peer is a scheduler (loggopsim --network ipc,
                    scripts/peers/scheduler.py); the checker is a fabric in
                    which every message arrives --latency after its insert.

Sessions: scenario n (see --list) runs in its own session KEY-n, because
several scenarios end a session (a refused record, a killed process). With
--spawn the checker starts the peer for every scenario: `{key}` (and
`{protocol}`) in COMMAND are replaced and the result is run with `sh -c` in
its own process group; the peer's exit status is checked too. Without
--spawn, start a peer on each KEY-n yourself (the checker names the key on
stderr; exit statuses are then not checked).

Examples:
  ipc-proto conformance --role fabric --key t --protocol notify \\
      --spawn 'ibnet serve --key {key} --protocol {protocol} --topology H8_S1'
  ipc-proto conformance --role fabric --key t --protocol notify-v1 \\
      --spawn 'ibnet serve --key {key} --protocol {protocol} --topology H8_S1'
  ipc-proto conformance --role fabric --key t --protocol query --quantum 1ns \\
      --spawn 'ibnet serve --key {key} --protocol query --quantum 1ns'
  ipc-proto conformance --role scheduler --key t --protocol notify \\
      --spawn 'loggopsim -f pingpong.goal --network ipc --key {key} --protocol notify'
  ipc-proto conformance --role fabric --key t --spawn 'python3 scripts/peers/fabric.py --key {key}'

Timing-dependent answers are checked structurally (replies in order,
arrived iff t_a <= t', \"not yet\" = t' + q, strictly increasing batch times,
every handle arrives exactly once, batch counts), never picosecond values.
Exit status: 0 all rules passed, 1 a rule failed, 2 bad options.";

#[derive(clap::Args)]
struct ConformanceArgs {
    /// Role of the peer UNDER TEST: fabric (the checker acts as the
    /// scheduler) or scheduler (the checker acts as the fabric).
    #[arg(long, required_unless_present = "list")]
    role: Option<PeerRole>,
    /// Base session key; scenario n uses KEY-n.
    #[arg(long, required_unless_present = "list")]
    key: Option<String>,
    /// Protocol and wire version the peer speaks: query, notify (both
    /// version 2), notify-v1 or query-v1 (version 1), notify-v3 or
    /// query-v3 (version 3: with one-sided operations), notify-v4
    /// (version 4: with triggered inserts).
    #[arg(long, default_value = "notify")]
    protocol: ipc_proto::ProtocolSpec,
    /// Start the peer for each scenario: COMMAND with {key} (and
    /// {protocol}) substituted, run by `sh -c`.
    #[arg(long, value_name = "COMMAND")]
    spawn: Option<String>,
    /// Query protocol: the fabric's quantum q (1ps, 100ps, 1ns; bare number = ps).
    #[arg(long, value_name = "TIME", default_value = "1ps", value_parser = parse_time)]
    quantum: Time,
    /// Query protocol: the fabric uses an arrival estimate (its first
    /// "not yet" for a message may be later than t' + q). With --role
    /// scheduler the checker's fabric answers first queries with the exact
    /// arrival.
    #[arg(long)]
    estimate: bool,
    /// --role scheduler: latency of every message in the checker's fabric.
    #[arg(long, value_name = "TIME", default_value = "1000ps", value_parser = parse_time)]
    latency: Time,
    /// Bound of every wait for the peer, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// Kill a spawned peer whose scenario has not ended after SECS (a
    /// peer that stopped reading blocks the checker's sends); default
    /// 6 x --timeout, at least 60.
    #[arg(long, value_name = "SECS")]
    stall_limit: Option<f64>,
    /// Run only these scenarios (comma-separated names, see --list).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    only: Vec<String>,
    /// List the scenarios with their numbers and exit.
    #[arg(long)]
    list: bool,
    /// Print the results as one JSON array instead of lines.
    #[arg(long)]
    json: bool,
    /// --role scheduler: transport of the sessions the checker creates (mq
    /// or shm). --role fabric: the peer chooses (e.g. `ibnet serve
    /// --transport shm` in --spawn) and the checker follows.
    #[arg(long, value_name = "mq|shm", default_value = "mq")]
    transport: ipc_proto::TransportKind,
}

/// `1000`, `1000ps`, `1ns`, `2us`, `1ms` -> picoseconds (simtime's
/// syntax: a bare number is picoseconds).
fn parse_time(s: &str) -> Result<Time, String> {
    ipc_proto::time::parse_time_arg(s, ipc_proto::time::TimeUnit::Ps)
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Which {
    All,
    Mq,
    Shm,
    Inproc,
}

#[derive(Clone, Copy, ValueEnum)]
enum PeerRole {
    Scheduler,
    Fabric,
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Cleanup { key, json } => run_cleanup(&key, json),
        Cmd::Bench {
            records,
            roundtrips,
            transport,
            json,
        } => run_bench(records, roundtrips, transport, json),
        Cmd::TestPeer {
            role,
            key,
            protocol,
            records,
            depth,
            hold,
            transport,
        } => run_test_peer(role, &key, protocol, records, depth, hold, transport),
        Cmd::Conformance(a) => match run_conformance(a) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(1),
            Err(e) => {
                eprintln!("ipc-proto conformance: error: {e:#}");
                std::process::exit(2);
            }
        },
    };
    if let Err(e) = r {
        eprintln!("ipc-proto: error: {e:#}");
        // 3 = a resource limit (ipc_proto::EXIT_RESOURCE), as in every
        // binary of the project; everything else (a dead peer too) is 1.
        let code = e
            .downcast_ref::<ProtoError>()
            .map(|p| {
                if p.is_resource_exhausted() {
                    p.exit_code()
                } else {
                    1
                }
            })
            .unwrap_or(1);
        std::process::exit(code);
    }
}

fn run_conformance(a: ConformanceArgs) -> Result<bool> {
    use ipc_proto::conformance::{self, Options};
    let role = |r: PeerRole| match r {
        PeerRole::Fabric => Role::Fabric,
        PeerRole::Scheduler => Role::Scheduler,
    };
    if a.list {
        for (i, s) in conformance::scenarios().iter().enumerate() {
            // With --role, only what applies to it (and --protocol).
            let applies = a.role.is_none_or(|r| s.applies(role(r), a.protocol));
            if applies {
                println!(
                    "{:>2} {:<9} {:<7} {:<20} {}",
                    i + 1,
                    s.role.name(),
                    match (s.protocol, s.min_version) {
                        (Some(p), 1) => p.name().to_string(),
                        (Some(p), v) => format!("{p}-v{v}+"),
                        (None, 1) => "both".to_string(),
                        (None, v) => format!("v{v}+"),
                    },
                    s.name,
                    s.about
                );
            }
        }
        return Ok(true);
    }
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds");
    }
    let opts = Options {
        role: role(a.role.expect("clap requires --role")),
        protocol: a.protocol,
        key: a.key.expect("clap requires --key"),
        spawn: a.spawn,
        quantum: a.quantum,
        estimate: a.estimate,
        latency: a.latency,
        timeout: Duration::from_secs_f64(a.timeout),
        only: a.only,
        stall_limit: match a.stall_limit {
            Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
            Some(_) => bail!("--stall-limit must be a positive number of seconds"),
            None => None,
        },
        transport: a.transport,
    };
    if opts.quantum.0 == 0 {
        bail!("--quantum must be at least 1 ps");
    }
    let json = a.json;
    let report = conformance::run(&opts, |r| {
        if !json {
            println!("{r}");
            let _ = std::io::stdout().flush();
        }
    })
    .map_err(anyhow::Error::msg)?;
    if json {
        let v: Vec<serde_json::Value> = report
            .results
            .iter()
            .map(|r| {
                serde_json::json!({"scenario": r.scenario, "rule": r.rule, "pass": r.pass, "reason": r.reason})
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
    } else {
        println!(
            "{} rules checked, {} failed: {}",
            report.results.len(),
            report.failures(),
            if report.passed() {
                "the peer conforms"
            } else {
                "the peer does NOT conform"
            }
        );
    }
    Ok(report.passed())
}

fn run_cleanup(key: &str, json: bool) -> Result<()> {
    let removed = cleanup(key)?;
    if json {
        println!("{}", serde_json::to_string(&removed)?);
    } else if removed.is_empty() {
        println!("nothing to remove for key {key}");
    } else {
        for n in &removed {
            println!("removed {n}");
        }
    }
    Ok(())
}

fn run_test_peer(
    role: PeerRole,
    key: &str,
    protocol: Protocol,
    n: u64,
    depth: usize,
    hold: bool,
    transport: ipc_proto::TransportKind,
) -> Result<()> {
    let mut ch = match role {
        PeerRole::Fabric => {
            let g = QueueGeometry {
                depth,
                ..QueueGeometry::default()
            };
            // Other sessions of this user may hold the small message-queue
            // budget for a moment (tests run in parallel): retry briefly.
            let start = Instant::now();
            let s = loop {
                let opts = ipc_proto::FabricOptions {
                    transport,
                    queues: g,
                    ..Default::default()
                };
                match ipc_proto::create_fabric_opts(key, protocol, 4, &opts) {
                    Err(ProtoError::QueueBudget { .. })
                        if start.elapsed() < Duration::from_secs(20) =>
                    {
                        std::thread::sleep(Duration::from_millis(50))
                    }
                    r => break r?,
                }
            };
            ready();
            if hold {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            s.wait_for_scheduler(Duration::from_secs(30))?;
            s.connect()?
        }
        PeerRole::Scheduler => {
            let s = open_scheduler(key, Duration::from_secs(10))?;
            if s.protocol() != protocol {
                bail!(
                    "session {key} uses the {} protocol, not {protocol}",
                    s.protocol()
                );
            }
            ready();
            if hold {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            s.connect()?
        }
    };
    let role = match role {
        PeerRole::Fabric => Role::Fabric,
        PeerRole::Scheduler => Role::Scheduler,
    };
    let got = selftest::run_role(&mut ch, role, protocol, n)?;
    println!("OK {got}");
    Ok(())
}

fn ready() {
    let mut o = std::io::stdout();
    let _ = writeln!(o, "READY");
    let _ = o.flush();
}

/// A (scheduler, fabric) pair of connected channels on one transport
/// ("mq", "shm" or "inproc"); for mq and shm both ends live in this process
/// (two threads; pin the process with taskset to put them on one CPU).
fn connect_pair(kind: &str, protocol: Protocol, tag: &str) -> Result<(Channel, Channel)> {
    let transport = match kind {
        "inproc" => return Ok(inproc::pair(protocol)?),
        "shm" => ipc_proto::TransportKind::Shm,
        _ => ipc_proto::TransportKind::Mq,
    };
    let key = format!("ipcbench-{}-{tag}", std::process::id());
    let _ = cleanup(&key);
    let opts = ipc_proto::FabricOptions {
        transport,
        ..Default::default()
    };
    let fab = ipc_proto::create_fabric_opts(&key, protocol, 2, &opts)?;
    let sched = open_scheduler(&key, Duration::from_secs(5))?;
    Ok((sched.connect()?, fab.connect()?))
}

/// One-way: the scheduler streams `n` Inserts and a Finish; the fabric
/// thread receives them. Returns records per second (send start to the
/// fabric having decoded the Finish).
fn bench_oneway(kind: &str, n: u64) -> Result<f64> {
    let (mut s, mut f) = connect_pair(kind, Protocol::Notify, "oneway")?;
    let rx = std::thread::spawn(move || -> Result<u64, ProtoError> {
        let mut got = 0;
        loop {
            match f.recv()? {
                Record::Insert { .. } => got += 1,
                Record::Finish { .. } => return Ok(got),
                _ => {}
            }
        }
    });
    let start = Instant::now();
    for i in 0..n {
        s.send(Record::Insert {
            handle: i,
            time: Time(i),
            src: 0,
            dst: 1,
            size: 1024,
            tag: 0,
        })?;
    }
    s.send(Record::Finish { time: Time(n) })?;
    s.flush()?;
    let got = rx.join().expect("receiver thread panicked")?;
    let secs = start.elapsed().as_secs_f64();
    if got != n {
        bail!("received {got} of {n} records");
    }
    Ok(n as f64 / secs)
}

/// Round trips: Query -> Reply, one at a time. Returns (round trips/s,
/// p50 µs, p99 µs) of the individual round trips.
fn bench_roundtrip(kind: &str, n: u64) -> Result<(f64, f64, f64)> {
    let (mut s, mut f) = connect_pair(kind, Protocol::Query, "rtt")?;
    let rx = std::thread::spawn(move || selftest::fabric_answer(&mut f));
    let mut lat = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        s.send(Record::Query {
            handle: i,
            time: Time(i + 100),
            inserts_sent: s.inserts_sent(),
        })?;
        match s.recv()? {
            Record::Reply { handle, .. } if handle == i => {}
            other => bail!("round trip {i}: got {other:?}"),
        }
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let secs = start.elapsed().as_secs_f64();
    s.send(Record::Finish {
        time: Time(n + 100),
    })?;
    s.flush()?;
    let q = rx.join().expect("fabric thread panicked")?;
    if q != n {
        bail!("fabric answered {q} of {n} queries");
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize];
    Ok((n as f64 / secs, pct(0.5), pct(0.99)))
}

fn run_bench(records: u64, roundtrips: u64, which: Which, json: bool) -> Result<()> {
    let mut rows = Vec::new();
    for (name, w) in [
        ("shm", Which::Shm),
        ("mq", Which::Mq),
        ("inproc", Which::Inproc),
    ] {
        if which != Which::All && which != w {
            continue;
        }
        let ow = bench_oneway(name, records).with_context(|| format!("one-way over {name}"))?;
        let (rt, p50, p99) = bench_roundtrip(name, roundtrips.max(1))
            .with_context(|| format!("round trips over {name}"))?;
        rows.push((name, ow, rt, p50, p99));
    }
    if json {
        let v: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(n, ow, rt, p50, p99)| {
                (
                    n.to_string(),
                    serde_json::json!({
                        "oneway_records_per_s": ow,
                        "roundtrips_per_s": rt,
                        "roundtrip_us": 1e6 / rt,
                        "roundtrip_p50_us": p50,
                        "roundtrip_p99_us": p99,
                    }),
                )
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"records": records, "roundtrips": roundtrips, "results": v})
        );
    } else {
        println!(
            "records={records} roundtrips={roundtrips} (both ends are threads of this process)"
        );
        println!(
            "{:<8} {:>16} {:>14} {:>13} {:>12} {:>12}",
            "transport", "one-way rec/s", "round trips/s", "us/rt (mean)", "p50 us", "p99 us"
        );
        for (n, ow, rt, p50, p99) in rows {
            println!(
                "{n:<8} {ow:>16.0} {rt:>14.0} {:>13.2} {p50:>12.2} {p99:>12.2}",
                1e6 / rt
            );
        }
    }
    Ok(())
}
