//! `loggopsim -v --verbose-format loggopsim`: the event list in the text
//! format of LogGOPSim's own `-v` (the lines its event loop prints for
//! each operation it takes from the active queue), so that event lists
//! such as the thesis's Appendix J can be compared with `diff`.
//!
//! Written from the format of those lines (bare picosecond numbers, the
//! host in brackets); the line texts are facts of the output format.
//! Per event of the scheduler:
//!
//! - calc: `[H] found loclop of length D - t: T (CPU: C)`
//! - send: `[H] found send to P - t: T (CPU: C)`, `-- satisfy local
//!   irequires`, `-- [H] send inserting msg to P, t: T+o+L`, then
//!   `-- [H] eager -- satisfy local requires at t: T+o` (size <= S) or
//!   `-- [H] start rendezvous message to: P (offset: N)`
//! - receive: `[H] found recv from P - t: T (CPU: C)`, `-- satisfy local
//!   irequires`, `++ [H] searching matching queue for src P tag G`, then
//!   `-- found in local UQ` (for a rendezvous message also `-- satisfy
//!   remote requires at host P (offset: N)`) and `-- satisfy local
//!   requires`, or `-- not found in local UQ -- add to RQ`
//! - message: `[H] found msg from P, t: T (CPU: C)`, `-- msg o,g available
//!   (nexto: X, nextgr: Y)`, `++ [H] searching matching queue for src P
//!   tag G`, then `-- found in RQ` (rendezvous: `-- satisfy remote requires
//!   on host P`) or `-- not found in RQ - add to UQ`
//! - an operation that must wait: `-- locop local o not available --
//!   reinserting`, `-- send local o,g not available -- reinserting` or
//!   `-- msg o,g not available -- reinserting`
//!
//! - one-sided operations (docs/rdma.md, not in LogGOPSim):
//!   `[H] WHAT peer P size S tag G - t: T done: E` with WHAT one of
//!   put_start, get_start, put_remote, put_local, get_done, poll_done
//!
//! Not printed (the scheduler's events do not carry them): LogGOPSim's
//! `init ...` lines for the first free operations, its `H (C,N) loclop:
//! ...` / `send to:` / `recvs from:` lines for operations that become
//! free, and the `found` line that precedes a `reinserting` line. Filter
//! them from a LogGOPSim listing before a diff:
//! `grep -v -E '^(init |[0-9]+ \()'` and drop a `found` line directly
//! followed by `reinserting` (docs/thesis.md). `o` is the message's size
//! class overhead (`--o-large`); a receive matched with a wildcard prints
//! the message's source.

use crate::engine::{Params, TraceEvent};
use std::io::Write;

/// Writes the LogGOPSim-format lines of one event.
pub fn write_event(out: &mut impl Write, e: &TraceEvent, p: &Params) -> std::io::Result<()> {
    match *e {
        TraceEvent::Calc {
            host,
            cpu,
            start,
            end,
            ..
        } => writeln!(
            out,
            "[{host}] found loclop of length {} - t: {start} (CPU: {cpu})",
            end - start
        ),
        TraceEvent::Send {
            host,
            cpu,
            node,
            dst,
            size,
            start,
            ..
        } => {
            let o = p.overheads(size).0;
            writeln!(
                out,
                "[{host}] found send to {dst} - t: {start} (CPU: {cpu})"
            )?;
            writeln!(out, "-- satisfy local irequires")?;
            writeln!(
                out,
                "-- [{host}] send inserting msg to {dst}, t: {}",
                start as u128 + o as u128 + p.l as u128
            )?;
            if size <= p.s {
                writeln!(
                    out,
                    "-- [{host}] eager -- satisfy local requires at t: {}",
                    start as u128 + o as u128
                )
            } else {
                writeln!(
                    out,
                    "-- [{host}] start rendezvous message to: {dst} (offset: {node})"
                )
            }
        }
        TraceEvent::RecvPosted {
            host,
            cpu,
            src,
            tag,
            time,
            ..
        } => {
            recv_head(out, host, cpu, src, tag, time)?;
            writeln!(out, "-- not found in local UQ -- add to RQ")
        }
        TraceEvent::RecvMatched {
            host,
            cpu,
            node,
            src,
            tag,
            size,
            time,
        } => {
            recv_head(out, host, cpu, src, tag, time)?;
            writeln!(out, "-- found in local UQ")?;
            if size > p.s {
                writeln!(
                    out,
                    "-- satisfy remote requires at host {src} (offset: {node})"
                )?;
            }
            writeln!(out, "-- satisfy local requires")
        }
        TraceEvent::MsgReceived {
            host,
            cpu,
            src,
            size,
            tag,
            start,
            node,
            prev_o,
            prev_gr,
            ..
        } => {
            writeln!(
                out,
                "[{host}] found msg from {src}, t: {start} (CPU: {cpu})"
            )?;
            writeln!(
                out,
                "-- msg o,g available (nexto: {prev_o}, nextgr: {prev_gr})"
            )?;
            writeln!(
                out,
                "++ [{host}] searching matching queue for src {src} tag {tag}"
            )?;
            match node {
                Some(_) => {
                    writeln!(out, "-- found in RQ")?;
                    if size > p.s {
                        writeln!(out, "-- satisfy remote requires on host {src}")?;
                    }
                    Ok(())
                }
                None => writeln!(out, "-- not found in RQ - add to UQ"),
            }
        }
        TraceEvent::Reinsert { what, .. } => writeln!(
            out,
            "{}",
            match what {
                "calc" => "-- locop local o not available -- reinserting",
                "send" => "-- send local o,g not available -- reinserting",
                _ => "-- msg o,g not available -- reinserting",
            }
        ),
        TraceEvent::Wait { .. } => Ok(()),
        // LogGOPSim has no one-sided operations; one line each
        TraceEvent::OneSided {
            what,
            host,
            peer,
            size,
            tag,
            start,
            end,
            ..
        } => writeln!(
            out,
            "[{host}] {what} peer {peer} size {size} tag {tag} - t: {start} done: {end}"
        ),
    }
}

fn recv_head(
    out: &mut impl Write,
    host: u32,
    cpu: u8,
    src: u32,
    tag: u32,
    time: u64,
) -> std::io::Result<()> {
    writeln!(
        out,
        "[{host}] found recv from {src} - t: {time} (CPU: {cpu})"
    )?;
    writeln!(out, "-- satisfy local irequires")?;
    writeln!(
        out,
        "++ [{host}] searching matching queue for src {src} tag {tag}"
    )
}
