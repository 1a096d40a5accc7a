//! fixed-latency-peer: a minimal fabric for the co-simulation protocol
//! (docs/protocol.md), used by the end-to-end tests to show that any
//! program speaking the protocol can replace `ibnet serve`.
//!
//! Every message arrives exactly `--latency` ps after its insert time.
//! Query protocol: "not yet" replies carry the arrival time itself as the
//! next time to ask (the scheduler must run with `--estimate`, which allows
//! replies later than t' + q). Notify protocol: on NoMoreInserts, every
//! message with the smallest arrival time is reported as one batch.
//! Version 2 (`--protocol notify` / `query`): it answers the Config with
//! its latency as the minimum latency, and a NoMoreInserts whose horizon
//! lies before the next arrival with a Grant of that arrival time (its
//! exact lookahead).
//!
//! It speaks through ipc-proto's public API only: `create_fabric`,
//! `connect`, `recv`/`send`.

use anyhow::{bail, Context};
use clap::Parser;
use ipc_proto::{ErrorCode, ProtocolSpec, Record, Time};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "Test fabric: every message arrives a fixed latency after its insert")]
struct Args {
    /// Session key (as `ibnet serve --key`).
    #[arg(long)]
    key: String,
    /// query, notify (version 2), notify-v1, query-v1.
    #[arg(long, default_value = "notify")]
    protocol: ProtocolSpec,
    /// Latency in picoseconds.
    #[arg(long)]
    latency: u64,
    /// Number of endpoints (ranks) served.
    #[arg(long, default_value_t = 1024)]
    endpoints: u32,
}

fn main() {
    let a = Args::parse();
    match run(&a) {
        Ok(n) => {
            println!("fixed-latency-peer: {n} messages, latency {} ps", a.latency);
        }
        Err(e) => {
            eprintln!("fixed-latency-peer: error: {e:#}");
            std::process::exit(1);
        }
    }
}

fn run(a: &Args) -> anyhow::Result<u64> {
    let opts = ipc_proto::FabricOptions {
        version: Some(a.protocol.version),
        ..Default::default()
    };
    let session = ipc_proto::create_fabric_opts(&a.key, a.protocol.protocol, a.endpoints, &opts)
        .context("create session")?;
    session.wait_for_scheduler(Duration::from_secs(30))?;
    let mut ch = session.connect()?;
    let mut arrival: HashMap<u64, Time> = HashMap::new();
    let mut pending: BTreeSet<(Time, u64)> = BTreeSet::new();
    let mut n = 0u64;
    loop {
        match ch.recv()? {
            Record::Insert { handle, time, .. } => {
                let t = Time(time.0 + a.latency);
                arrival.insert(handle, t);
                pending.insert((t, handle));
                n += 1;
            }
            Record::Query { handle, time, .. } => {
                let Some(&t) = arrival.get(&handle) else {
                    ch.send(Record::error(
                        ErrorCode::Violation,
                        "query for an unknown handle",
                    ))?;
                    bail!("query for unknown handle {handle}");
                };
                if t <= time {
                    arrival.remove(&handle);
                    pending.remove(&(t, handle));
                }
                ch.send(Record::Reply {
                    handle,
                    time: t,
                    arrived: t <= time,
                })?;
            }
            Record::Config { .. } => {
                ch.send(Record::ConfigAck {
                    min_latency: Time(a.latency.max(1)),
                })?;
            }
            Record::NoMoreInserts { horizon, .. } => {
                let Some(&(t, _)) = pending.first() else {
                    ch.send(Record::error(ErrorCode::Deadlock, "0 stuck: "))?;
                    ch.flush()?;
                    bail!("deadlock: NoMoreInserts with nothing in flight");
                };
                let v2 = ch.version() >= 2;
                if v2 && t > horizon {
                    ch.send(Record::Grant { time: t })?;
                    continue;
                }
                let mut count = 0;
                while let Some(&(t2, h)) = pending.first() {
                    if t2 != t {
                        break;
                    }
                    pending.pop_first();
                    arrival.remove(&h);
                    ch.send(Record::Arrival { handle: h, time: t })?;
                    count += 1;
                }
                let grant = if !v2 {
                    Time(0)
                } else {
                    pending.first().map(|p| p.0).unwrap_or(Time(u64::MAX))
                };
                ch.send(Record::ArrivalBatchEnd {
                    time: t,
                    count,
                    grant,
                })?;
            }
            Record::Finish { .. } => {
                ch.flush()?;
                return Ok(n);
            }
            Record::Error { .. } => bail!("the scheduler failed"),
            other => bail!("unexpected record {other:?}"),
        }
    }
}
