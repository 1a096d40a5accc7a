//! Traffic patterns shared by the helper binary's test-peer mode, the
//! integration tests and the benchmark. Not part of the stable API.

use crate::channel::Channel;
use crate::error::{ProtoError, Result};
use crate::record::{Protocol, Record, Role};
use crate::time::Time;

/// Arrivals per ArrivalBatchEnd in the stream pattern.
pub const STREAM_BATCH: u64 = 10;

fn violation(msg: String) -> ProtoError {
    ProtoError::Violation(msg)
}

/// Scheduler side of the duplex stream (notify protocol): send `n` Inserts
/// and a Finish *before reading anything*, then receive `n` Arrivals (with
/// batch ends) and check their order and content. With `n` far above the
/// queues' capacity this deadlocks unless a blocked sender drains its own
/// incoming queue. Returns the number of Arrivals received.
pub fn scheduler_stream(ch: &mut Channel, n: u64) -> Result<u64> {
    for i in 0..n {
        ch.send(Record::Insert {
            handle: i,
            time: Time(i),
            src: (i % 7) as u32,
            dst: (i % 5) as u32,
            size: i * 3,
            tag: (i % 11) as u32,
        })?;
    }
    ch.send(Record::Finish { time: Time(n) })?;
    ch.flush()?;
    let mut got = 0u64;
    while got < n {
        match ch.recv()? {
            Record::Arrival { handle, time } => {
                if handle != got || time != Time(got * 2) {
                    return Err(violation(format!(
                        "arrival {got}: got handle {handle} time {time}"
                    )));
                }
                got += 1;
            }
            Record::ArrivalBatchEnd { .. } => {}
            other => return Err(violation(format!("scheduler got unexpected {other:?}"))),
        }
    }
    Ok(got)
}

/// Fabric side of the duplex stream: send `n` Arrivals (a batch end every
/// STREAM_BATCH) before reading, then receive `n` Inserts and the Finish.
pub fn fabric_stream(ch: &mut Channel, n: u64) -> Result<u64> {
    let mut in_batch = 0;
    for i in 0..n {
        ch.send(Record::Arrival {
            handle: i,
            time: Time(i * 2),
        })?;
        in_batch += 1;
        if in_batch == STREAM_BATCH || i + 1 == n {
            ch.send(Record::ArrivalBatchEnd {
                time: Time(i * 2),
                count: in_batch as u32,
                grant: Time(0),
            })?;
            in_batch = 0;
        }
    }
    ch.flush()?;
    let mut got = 0u64;
    loop {
        match ch.recv()? {
            Record::Insert {
                handle,
                time,
                src,
                dst,
                size,
                tag,
            } => {
                let i = got;
                if handle != i
                    || time != Time(i)
                    || src != (i % 7) as u32
                    || dst != (i % 5) as u32
                    || size != i * 3
                    || tag != (i % 11) as u32
                {
                    return Err(violation(format!("insert {i}: got handle {handle}")));
                }
                got += 1;
            }
            Record::Finish { time } => {
                if got != n || time != Time(n) {
                    return Err(violation(format!("Finish after {got} of {n} inserts")));
                }
                return Ok(got);
            }
            other => return Err(violation(format!("fabric got unexpected {other:?}"))),
        }
    }
}

/// Scheduler side of `n` query round trips (query protocol), each
/// preceded by one Insert when `with_inserts`.
pub fn scheduler_roundtrips(ch: &mut Channel, n: u64, with_inserts: bool) -> Result<()> {
    for i in 0..n {
        if with_inserts {
            ch.send(Record::Insert {
                handle: i,
                time: Time(i),
                src: 0,
                dst: 1,
                size: 64,
                tag: 0,
            })?;
        }
        let q = Record::Query {
            handle: i,
            time: Time(i + 100),
            inserts_sent: ch.inserts_sent(),
        };
        ch.send(q)?;
        match ch.recv()? {
            Record::Reply {
                handle,
                time,
                arrived,
            } if handle == i && time == Time(i + 150) && arrived == (i % 2 == 0) => {}
            other => return Err(violation(format!("round trip {i}: got {other:?}"))),
        }
    }
    ch.send(Record::Finish {
        time: Time(n + 100),
    })?;
    ch.flush()
}

/// Fabric side of the round trips: answer every Query (after checking that
/// all Inserts it counts were delivered first) until Finish.
pub fn fabric_answer(ch: &mut Channel) -> Result<u64> {
    let mut inserts = 0u64;
    let mut queries = 0u64;
    loop {
        match ch.recv()? {
            Record::Insert { .. } => inserts += 1,
            Record::Query {
                handle,
                time,
                inserts_sent,
            } => {
                if inserts_sent != inserts {
                    return Err(violation(format!(
                        "query {handle} counts {inserts_sent} inserts, {inserts} delivered"
                    )));
                }
                queries += 1;
                ch.send(Record::Reply {
                    handle,
                    time: Time(time.0 + 50),
                    arrived: handle % 2 == 0,
                })?;
            }
            Record::Finish { .. } => return Ok(queries),
            other => return Err(violation(format!("fabric got unexpected {other:?}"))),
        }
    }
}

/// Run the pattern of `role` for `protocol`: stream (notify) or round trips
/// with inserts (query).
pub fn run_role(ch: &mut Channel, role: Role, protocol: Protocol, n: u64) -> Result<u64> {
    match (role, protocol) {
        (Role::Scheduler, Protocol::Notify) => scheduler_stream(ch, n),
        (Role::Fabric, Protocol::Notify) => fabric_stream(ch, n),
        (Role::Scheduler, Protocol::Query) => scheduler_roundtrips(ch, n, true).map(|_| n),
        (Role::Fabric, Protocol::Query) => fabric_answer(ch),
    }
}
