//! `ipc-proto`: helper binary of the wire protocol crate.
//!
//! - `ipc-proto cleanup KEY`: remove the queues and segment a killed run of
//!   KEY left behind.
//! - `ipc-proto bench`: one-way throughput and query round trips over POSIX
//!   message queues and in-process channels.
//! - `ipc-proto test-peer ...` (hidden): the second process of the
//!   integration tests.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use ipc_proto::{
    cleanup, create_fabric, create_fabric_with, inproc, open_scheduler, selftest, Channel,
    ProtoError, Protocol, QueueGeometry, Record, Role, Time,
};
use std::io::Write;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "ipc-proto",
    version,
    about = "Scheduler <-> fabric wire protocol: maintenance and benchmark tool"
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
    /// Measure one-way records/s (batched) and query/reply round trips/s,
    /// over POSIX message queues and in-process channels (two threads).
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
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Which {
    All,
    Mq,
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
        } => run_test_peer(role, &key, protocol, records, depth, hold),
    };
    if let Err(e) = r {
        eprintln!("ipc-proto: error: {e:#}");
        // Distinct status for "peer died" so callers can tell it apart.
        let died = e
            .downcast_ref::<ProtoError>()
            .is_some_and(|p| matches!(p, ProtoError::PeerDied { .. }));
        std::process::exit(if died { 3 } else { 1 });
    }
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
                match create_fabric_with(key, protocol, 4, g) {
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

/// A (scheduler, fabric) pair of connected channels on one transport;
/// for message queues both ends live in this process (two threads).
fn connect_pair(mq: bool, protocol: Protocol, tag: &str) -> Result<(Channel, Channel)> {
    if !mq {
        return Ok(inproc::pair(protocol)?);
    }
    let key = format!("ipcbench-{}-{tag}", std::process::id());
    let _ = cleanup(&key);
    let fab = create_fabric(&key, protocol, 2)?;
    let sched = open_scheduler(&key, Duration::from_secs(5))?;
    Ok((sched.connect()?, fab.connect()?))
}

/// One-way: the scheduler streams `n` Inserts and a Finish; the fabric
/// thread receives them. Returns records per second (send start to the
/// fabric having decoded the Finish).
fn bench_oneway(mq: bool, n: u64) -> Result<f64> {
    let (mut s, mut f) = connect_pair(mq, Protocol::Notify, "oneway")?;
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

/// Round trips: Query -> Reply, one at a time. Returns round trips/s.
fn bench_roundtrip(mq: bool, n: u64) -> Result<f64> {
    let (mut s, mut f) = connect_pair(mq, Protocol::Query, "rtt")?;
    let rx = std::thread::spawn(move || selftest::fabric_answer(&mut f));
    let start = Instant::now();
    selftest::scheduler_roundtrips(&mut s, n, false)?;
    let secs = start.elapsed().as_secs_f64();
    let q = rx.join().expect("fabric thread panicked")?;
    if q != n {
        bail!("fabric answered {q} of {n} queries");
    }
    Ok(n as f64 / secs)
}

fn run_bench(records: u64, roundtrips: u64, which: Which, json: bool) -> Result<()> {
    let mut rows = Vec::new();
    for (name, mq) in [("mq", true), ("inproc", false)] {
        if (which == Which::Mq && !mq) || (which == Which::Inproc && mq) {
            continue;
        }
        let ow = bench_oneway(mq, records).with_context(|| format!("one-way over {name}"))?;
        let rt =
            bench_roundtrip(mq, roundtrips).with_context(|| format!("round trips over {name}"))?;
        rows.push((name, ow, rt));
    }
    if json {
        let v: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(n, ow, rt)| {
                (
                    n.to_string(),
                    serde_json::json!({
                        "oneway_records_per_s": ow,
                        "roundtrips_per_s": rt,
                        "roundtrip_us": 1e6 / rt,
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
            "{:<8} {:>18} {:>16} {:>14}",
            "transport", "one-way rec/s", "round trips/s", "us/round trip"
        );
        for (n, ow, rt) in rows {
            println!("{n:<8} {ow:>18.0} {rt:>16.0} {:>14.2}", 1e6 / rt);
        }
    }
    Ok(())
}
