//! Scenarios for a fabric under test: the checker is the scheduler and
//! scripts every record. Timing answers are checked structurally only.

use super::peer::StandIn;
use super::{err, Ctx, Scenario};
use crate::channel::Channel;
use crate::names::Lane;
use crate::record::{ErrorCode, Protocol, Record, Role, PROTOCOL_VERSION, RECORD_SIZE};
use crate::session::{open_scheduler_as, SchedulerSession};
use crate::time::Time;
use crate::ProtoError;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Far-future query time offset (1 s): every message must have arrived.
const FAR: u64 = 1_000_000_000_000;
/// Step-by-step queries (following "not yet" replies) before the drain
/// jumps to the far future; keeps q = 1 ps runs short.
const STEP_QUERY_BUDGET: u64 = 3000;
/// A spec'd "about a second" to notice a dead peer, plus slack for a
/// loaded machine.
const DEATH_LIMIT: Duration = Duration::from_secs(3);

pub fn scenarios() -> Vec<Scenario> {
    let s = |name, protocol, about, run| Scenario {
        name,
        role: Role::Fabric,
        protocol,
        min_version: 1,
        about,
        run,
    };
    vec![
        s("handshake", None, "segment fields, the fabric's Hello, one message end to end", handshake),
        s("hello-version", None, "a scheduler Hello with version 2 is refused (Error code 3 or exit)", hello_version),
        s("bad-record", None, "an Insert with a non-zero unused byte is refused", bad_record),
        s("times", None, "inserts at equal and increasing times, and at the fabric's clock", times),
        s("batching", None, "more Inserts than the queue holds, 128 per message, before any wait", batching),
        s("query-before-after", Some(Protocol::Query), "a query before the arrival (not yet) and long after it (arrived, t_a <= t')", query_before_after),
        s("quantum", Some(Protocol::Query), "\"not yet\" replies are exactly t' + q (first may be later with --estimate)", quantum),
        s("no-more-inserts", Some(Protocol::Notify), "NoMoreInserts with messages in flight (a batch) and without (Error code 2)", no_more_inserts),
        s("simultaneous", None, "messages on disjoint pairs at one time: one batch per arrival time", simultaneous),
        s("finish", None, "Finish (with a message in flight): exit 0, nothing sent after, objects removed", finish),
        s("past-insert", None, "an Insert before the fabric's clock is reported (Error code 1)", past_insert),
        s("peer-death", None, "the scheduler's death is noticed within about a second; the checker does not hang either", peer_death),
        Scenario {
            name: "grant",
            role: Role::Fabric,
            protocol: Some(Protocol::Notify),
            min_version: 2,
            about: "version 2: a horizon before any arrival gets a Grant beyond it, honoured by the later batch; a horizon in the fabric's past is refused (Error code 1)",
            run: grant,
        },

    ]
}

/// Version 2 exact notify: Grants (docs/protocol.md rule 3a).
fn grant(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let wait = |ch: &mut Channel, time: u64, horizon: u64| -> Result<Record, String> {
        ch.send(Record::NoMoreInserts {
            time: Time(time),
            horizon: Time(horizon),
        })
        .map_err(err)?;
        ch.recv().map_err(err)
    };
    let mut d = Driver::new(ctx, &mut ch);
    d.insert(Time(0), 0, 1, 128)?;
    drop(d);
    // Nothing can arrive at 0: the answer must be a Grant beyond 0.
    let g1 = match wait(&mut ch, 0, 0)? {
        Record::Grant { time } if time.0 > 0 => {
            ctx.pass(
                "grant-beyond-horizon",
                format!("horizon 0 ps: Grant {time}"),
            );
            time
        }
        other => {
            ctx.fail(
                "grant-beyond-horizon",
                format!("horizon 0 ps with one message inserted at 0 ps answered {other:?}; expected Grant{{time > 0}}"),
            );
            return Ok(());
        }
    };
    // Just before the grant: again a Grant, not earlier than the first.
    let g2 = match wait(&mut ch, 0, g1.0 - 1)? {
        Record::Grant { time } if time >= g1 => {
            ctx.pass(
                "grant-monotone",
                format!("horizon {} ps: Grant {time}", g1.0 - 1),
            );
            time
        }
        other => {
            ctx.fail(
                "grant-monotone",
                format!("horizon {} ps (before the Grant {g1}) answered {other:?}; expected Grant{{time >= {g1}}}", g1.0 - 1),
            );
            return Ok(());
        }
    };
    // No horizon: the batch, not before the grants.
    let ta = match wait(&mut ch, 0, u64::MAX)? {
        Record::Arrival { handle: 0, time } => time,
        other => {
            ctx.fail(
                "grant-honoured",
                format!("horizon u64::MAX answered {other:?}; expected Arrival 0"),
            );
            return Ok(());
        }
    };
    match ch.recv().map_err(err)? {
        Record::ArrivalBatchEnd {
            time, count: 1, grant, ..
        } if time == ta && grant > ta => {}
        other => ctx.fail(
            "grant-honoured",
            format!("Arrival 0 at {ta} followed by {other:?}; expected ArrivalBatchEnd{{{ta}, 1, grant > {ta}}}"),
        ),
    }
    ctx.rule(
        "grant-honoured",
        ta >= g2,
        format!("the message arrives at {ta}, the fabric had granted no arrival before {g2}"),
    );
    // A horizon in the fabric's past (it has simulated to the arrival).
    let mut d = Driver::new(ctx, &mut ch);
    d.insert(ta, 1, 0, 64)?;
    drop(d);
    ch.send(Record::NoMoreInserts {
        time: Time(0),
        horizon: Time(ta.0 - 1),
    })
    .map_err(err)?;
    ch.flush().map_err(err)?;
    expect_refusal(
        ctx,
        &mut ch,
        "past-horizon",
        ErrorCode::Violation,
        pid,
        true,
    );
    Ok(())
}

/// The version-3 fabric scenario; listed after every older scenario so
/// that their numbers (KEY-n) do not change.
pub fn one_sided_scenario() -> Scenario {
    Scenario {
        name: "one-sided",
        role: Role::Fabric,
        protocol: Some(Protocol::Notify),
        min_version: 3,
        about: "version 3: an InsertOp put and get and an Insert; every completion point (put remote and local, get) and the message arrive exactly once, in batches, the put's ack after its data",
        run: one_sided,
    }
}

/// Version 3 (docs/protocol.md 6, "One-sided operations"): a put 0 -> 1
/// (handles 0: remote, 1: local completion), a get by 2 from 3 (handle
/// 2) and a message 4 -> 5 (handle 3), all at time 0; every handle must be
/// reported exactly once, batches must be consistent and in time order,
/// no point before its insert, and the put's local completion after its
/// remote one (the acknowledgement leaves the target after the data).
fn one_sided(ctx: &mut Ctx) -> Result<(), String> {
    let Some((mut ch, _pid)) = attach_needing(ctx, 6, "one-sided-points")? else {
        return Ok(());
    };
    for rec in [
        Record::InsertOp {
            handle: 0,
            time: Time(0),
            src: 0,
            dst: 1,
            size: 4096,
            tag: 1,
            op: crate::record::OpKind::Put,
            ack_handle: 1,
        },
        Record::InsertOp {
            handle: 2,
            time: Time(0),
            src: 2,
            dst: 3,
            size: 4096,
            tag: 2,
            op: crate::record::OpKind::Get,
            ack_handle: 0,
        },
        Record::Insert {
            handle: 3,
            time: Time(0),
            src: 4,
            dst: 5,
            size: 4096,
            tag: 3,
        },
    ] {
        ch.send(rec).map_err(err)?;
    }
    let Waited {
        seen,
        mut problems,
        clock,
        waits: batches,
        ..
    } = wait_for_handles(&mut ch, 4, 16)?;
    if seen.len() < 4 && problems.is_empty() {
        problems.push(format!(
            "after {batches} waits only handles {:?} were reported (expected 0, 1, 2, 3)",
            {
                let mut k: Vec<_> = seen.keys().collect();
                k.sort();
                k
            }
        ));
    }
    rule_unless_problems(ctx, "one-sided-points", &problems, || {
        format!(
            "put remote {}, put local {}, get {}, message {}",
            seen[&0], seen[&1], seen[&2], seen[&3]
        )
    });
    if problems.is_empty() {
        ctx.rule(
            "put-ack-after-data",
            seen[&1] > seen[&0],
            format!(
                "remote completion {}, local completion {}",
                seen[&0], seen[&1]
            ),
        );
    }
    ch.send(Record::Finish { time: clock }).map_err(err)?;
    ch.flush().map_err(err)?;
    Ok(())
}

/// What [`wait_for_handles`] collected.
struct Waited {
    /// handle -> arrival time
    seen: HashMap<u64, Time>,
    /// Fired records (version 4): (armed handle, insert time, new handle)
    fired: Vec<(u64, Time, u64)>,
    problems: Vec<String>,
    /// the last batch's time
    clock: Time,
    waits: u32,
}

/// Notify: wait (NoMoreInserts, horizon never) until handles 0..n have
/// all arrived, at most `max_waits` times or until a rule is broken: each
/// handle once, no Arrival after its batch's end or before the previous
/// batch, batch counts right.
fn wait_for_handles(ch: &mut Channel, n: u64, max_waits: u32) -> Result<Waited, String> {
    let mut w = Waited {
        seen: HashMap::new(),
        fired: Vec::new(),
        problems: Vec::new(),
        clock: Time(0),
        waits: 0,
    };
    while (w.seen.len() as u64) < n && w.waits < max_waits && w.problems.is_empty() {
        w.waits += 1;
        ch.send(Record::NoMoreInserts {
            time: w.clock,
            horizon: Time(u64::MAX),
        })
        .map_err(err)?;
        let mut count = 0u32;
        loop {
            match ch.recv().map_err(err)? {
                Record::Arrival { handle, time } => {
                    count += 1;
                    if handle >= n {
                        w.problems
                            .push(format!("Arrival for unknown handle {handle}"));
                    } else if w.seen.insert(handle, time).is_some() {
                        w.problems.push(format!("handle {handle} reported twice"));
                    }
                    if time < w.clock {
                        w.problems.push(format!(
                            "Arrival {handle} at {time}, before the previous batch ({})",
                            w.clock
                        ));
                    }
                }
                Record::Fired {
                    handle,
                    time,
                    new_handle,
                } => w.fired.push((handle, time, new_handle)),
                Record::ArrivalBatchEnd { time, count: c, .. } => {
                    if c != count {
                        w.problems
                            .push(format!("ArrivalBatchEnd count {c} after {count} Arrivals"));
                    }
                    if w.seen.values().any(|&t| t > time) {
                        w.problems
                            .push(format!("an Arrival after its batch's end ({time})"));
                    }
                    w.clock = time;
                    break;
                }
                Record::Grant { .. } => break,
                other => {
                    w.problems.push(format!("unexpected {other:?}"));
                    break;
                }
            }
        }
    }
    Ok(w)
}

/// The version-4 fabric scenario (triggered inserts), listed last.
pub fn triggers_scenario() -> Scenario {
    Scenario {
        name: "triggers",
        role: Role::Fabric,
        protocol: Some(Protocol::Notify),
        min_version: 4,
        about: "version 4: a fired Trigger (Fired, both arrivals in one batch, the reaction after the armed arrival), a disarmed one (no Fired), a Trigger on an unknown handle refused (Error code 1)",
        run: triggers,
    }
}

/// Version 4 (docs/protocol.md 6, "Triggered inserts"): message 0 (0 -> 1)
/// armed with the reaction "message 1 (1 -> 2) at the arrival"; message 2
/// (3 -> 4, at 10 us) armed and then disarmed. Expected: Fired{0, t_0, 1} in a batch
/// that also reports 0 (at t_0) and ends with message 1's or message 2's
/// arrival, every handle once, message 1 after t_0, no Fired for 2. Then a
/// Trigger on a handle never inserted: Error code 1 (or exit).
fn triggers(ctx: &mut Ctx) -> Result<(), String> {
    let Some((mut ch, pid)) = attach_needing(ctx, 5, "trigger-fired")? else {
        return Ok(());
    };
    let insert = |handle, src, dst| Record::Insert {
        handle,
        time: Time(0),
        src,
        dst,
        size: 1000,
        tag: 0,
    };
    let trigger = |handle, new_handle, src, dst| Record::Trigger {
        handle,
        time: Time(0),
        delay: 0,
        new_handle,
        size: 1000,
        seq: handle,
        dst,
        src,
    };
    // message 2 goes later (10 us), so that message 0's instant holds
    // only armed arrivals
    for rec in [
        insert(0, 0, 1),
        Record::Insert {
            handle: 2,
            time: Time(10_000_000),
            src: 3,
            dst: 4,
            size: 1000,
            tag: 0,
        },
        trigger(0, 1, 1, 2),
        trigger(2, 3, 4, 0),
        Record::Disarm { handle: 2 },
    ] {
        ch.send(rec).map_err(err)?;
    }
    let Waited {
        seen,
        fired,
        mut problems,
        waits,
        ..
    } = wait_for_handles(&mut ch, 3, 8)?;
    if problems.is_empty() && seen.len() < 3 {
        problems.push(format!(
            "after {waits} waits only {} of 3 handles were reported",
            seen.len()
        ));
    }
    if problems.is_empty() {
        let t0 = seen[&0];
        match fired.as_slice() {
            [(0, t, 1)] if *t == t0 && seen[&1] > t0 => {}
            _ => problems.push(format!(
                "expected exactly Fired{{0, {t0}, 1}} with message 1 after it, got {fired:?} (arrivals {seen:?})"
            )),
        }
    }
    rule_unless_problems(ctx, "trigger-fired", &problems, || {
        format!(
            "message 0 at {}, its reaction 1 at {}, message 2 (disarmed) at {}",
            seen[&0], seen[&1], seen[&2]
        )
    });
    // a Trigger on a handle that was never inserted: a violation
    ch.send(trigger(99, 100, 1, 2)).map_err(err)?;
    expect_refusal(
        ctx,
        &mut ch,
        "trigger-unknown-refused",
        ErrorCode::Violation,
        pid,
        false,
    );
    Ok(())
}

/// Attach as the scheduler (claiming `as_pid`, default our own pid).
fn attach(ctx: &mut Ctx, as_pid: Option<u32>) -> Result<SchedulerSession, String> {
    ctx.start_peer()?;
    let pid = as_pid.unwrap_or_else(std::process::id);
    let key = ctx.key.clone();
    let s = ctx
        .wait_for(|step| open_scheduler_as(&key, step, pid))
        .map_err(|e| format!("cannot attach to the fabric: {e}"))?;
    let served = crate::record::ProtocolSpec::new(s.protocol(), s.version());
    if served != ctx.opts.protocol {
        return Err(format!(
            "the fabric serves {served} (the {} protocol, wire version {}), the checker was told {}",
            s.protocol(),
            s.version(),
            ctx.opts.protocol
        ));
    }
    if s.endpoints() < 2 {
        return Err(format!(
            "the fabric serves {} endpoints; the scenarios need at least 2",
            s.endpoints()
        ));
    }
    Ok(s)
}

fn connect(ctx: &Ctx, s: SchedulerSession) -> Result<Channel, String> {
    let mut ch = s.connect().map_err(err)?;
    ch.set_timeout(Some(ctx.opts.timeout));
    if ch.version() >= 2 {
        // Version 2: the configuration exchange comes first.
        ch.send(Record::Config {
            quantum: ctx.opts.quantum,
            estimate_milli: if ctx.opts.estimate { 1000 } else { 0 },
            estimate_base: crate::record::EstimateBase::Hops,
        })
        .map_err(err)?;
        match ch.recv().map_err(err)? {
            Record::ConfigAck { min_latency } if min_latency.0 >= 1 => {}
            other => {
                return Err(format!(
                "expected ConfigAck{{min_latency >= 1 ps}} as the answer to Config, got {other:?}"
            ))
            }
        }
    }
    Ok(ch)
}

/// The NoMoreInserts of the session's version: v2 carries the horizon
/// (u64::MAX: "nothing until an arrival", the v1 meaning), v1 a zero.
fn nmi(ch: &Channel, time: Time) -> Record {
    Record::NoMoreInserts {
        time,
        horizon: if ch.version() >= 2 {
            Time(u64::MAX)
        } else {
            Time(0)
        },
    }
}

fn attach_connect(ctx: &mut Ctx) -> Result<(Channel, u32, u32), String> {
    let s = attach(ctx, None)?;
    let (pid, n) = (s.fabric_pid(), s.endpoints());
    Ok((connect(ctx, s)?, pid, n))
}

/// [`attach_connect`] for a scenario that needs `need` endpoints: with
/// fewer, `rule` fails and there is nothing to run (None).
fn attach_needing(
    ctx: &mut Ctx,
    need: u32,
    rule: &'static str,
) -> Result<Option<(Channel, u32)>, String> {
    let (ch, pid, n) = attach_connect(ctx)?;
    if n < need {
        ctx.fail(
            rule,
            format!("the fabric maps {n} endpoints; this scenario needs {need} (e.g. H8_S1)"),
        );
        return Ok(None);
    }
    Ok(Some((ch, pid)))
}

/// `rule` passes with `ok()`'s text when no problem was found, else fails
/// with the problems.
fn rule_unless_problems(
    ctx: &mut Ctx,
    rule: &'static str,
    problems: &[String],
    ok: impl FnOnce() -> String,
) {
    if problems.is_empty() {
        ctx.pass(rule, ok());
    } else {
        ctx.fail(rule, problems.join("; "));
    }
}

/// What the checker remembers of an inserted message.
#[derive(Clone, Copy, Debug)]
struct Msg {
    time: Time,
}

/// A scripted scheduler: inserts messages and collects every arrival,
/// noting the first violation of each structural rule.
struct Driver<'c> {
    ch: &'c mut Channel,
    protocol: Protocol,
    q: Time,
    estimate: bool,
    next_handle: u64,
    /// What the fabric's clock must be at least (last query / batch time).
    clock: Time,
    latest_insert: Time,
    msgs: BTreeMap<u64, Msg>,
    pending: Vec<u64>,
    arrived: HashMap<u64, Time>,
    not_yet_at: HashMap<u64, Time>,
    queried: HashMap<u64, u64>,
    last_batch: Option<Time>,
    problems: BTreeMap<&'static str, String>,
    checks: BTreeMap<&'static str, u64>,
    max_batch: u32,
    batches: u64,
    queries: u64,
    /// v2: the grant of the last batch / Grant, and the one before it.
    grant: Option<Time>,
    prev_grant: Option<Time>,
}

impl<'c> Driver<'c> {
    fn new(ctx: &Ctx, ch: &'c mut Channel) -> Driver<'c> {
        Driver {
            protocol: ch.protocol(),
            ch,
            q: ctx.opts.quantum,
            estimate: ctx.opts.estimate,
            next_handle: 0,
            clock: Time(0),
            latest_insert: Time(0),
            msgs: BTreeMap::new(),
            pending: Vec::new(),
            arrived: HashMap::new(),
            not_yet_at: HashMap::new(),
            queried: HashMap::new(),
            last_batch: None,
            problems: BTreeMap::new(),
            checks: BTreeMap::new(),
            max_batch: 0,
            batches: 0,
            queries: 0,
            grant: None,
            prev_grant: None,
        }
    }

    fn check(&mut self, rule: &'static str, ok: bool, why: impl FnOnce() -> String) {
        *self.checks.entry(rule).or_default() += 1;
        if !ok {
            self.problems.entry(rule).or_insert_with(why);
        }
    }

    fn insert(&mut self, time: Time, src: u32, dst: u32, size: u64) -> Result<u64, String> {
        let handle = self.next_handle;
        self.next_handle += 1;
        self.ch
            .send(Record::Insert {
                handle,
                time,
                src,
                dst,
                size,
                tag: (handle % 7) as u32,
            })
            .map_err(err)?;
        self.msgs.insert(handle, Msg { time });
        self.pending.push(handle);
        // A grant covers the messages inserted before it; this one can
        // arrive as early as right after its insert.
        if let Some(g) = &mut self.prev_grant {
            *g = (*g).min(Time(time.0.saturating_add(1)));
        }
        self.latest_insert = self.latest_insert.max(time);
        Ok(handle)
    }

    fn recv(&mut self) -> Result<Record, String> {
        match self.ch.recv() {
            Ok(Record::Error { code, detail }) => Err(format!(
                "the fabric sent Error{{code={code}}}: {}",
                Record::Error { code, detail }
                    .error_detail()
                    .unwrap_or_default()
            )),
            Ok(r) => Ok(r),
            Err(e) => Err(err(e)),
        }
    }

    /// Collect the arrival of every pending message.
    fn drain(&mut self) -> Result<(), String> {
        match self.protocol {
            Protocol::Notify => {
                while !self.pending.is_empty() {
                    self.one_batch()?;
                }
            }
            Protocol::Query => self.drain_query()?,
        }
        Ok(())
    }

    fn note_arrival(&mut self, handle: u64, t: Time) {
        let pos = self.pending.iter().position(|&h| h == handle);
        let twice = self.arrived.contains_key(&handle);
        self.check("exactly-once", pos.is_some(), || {
            if twice {
                format!("handle {handle} reported twice")
            } else {
                format!("handle {handle} reported but never inserted")
            }
        });
        if let Some(p) = pos {
            self.pending.remove(p);
            let m = self.msgs[&handle];
            self.check("causality", t >= m.time, || {
                format!(
                    "handle {handle} arrives at {t} ps, before its insert at {} ps",
                    m.time
                )
            });
            self.arrived.insert(handle, t);
        }
    }

    /// Notify: NoMoreInserts, then one batch.
    fn one_batch(&mut self) -> Result<Time, String> {
        let now = self.clock.max(self.latest_insert);
        let r = nmi(self.ch, now);
        self.ch.send(r).map_err(err)?;
        let mut batch = Vec::new();
        let end = loop {
            match self.recv()? {
                Record::Arrival { handle, time } => batch.push((handle, time)),
                Record::ArrivalBatchEnd { time, count, grant } => {
                    if self.ch.version() >= 2 {
                        self.check("batch-grant", grant > time, || {
                            format!("ArrivalBatchEnd at {time} ps grants {grant} ps (must be later than the batch)")
                        });
                        self.grant = Some(grant);
                    } else {
                        self.check("batch-grant", grant.0 == 0, || {
                            format!(
                                "version 1: ArrivalBatchEnd with a non-zero grant field ({grant})"
                            )
                        });
                    }
                    break (time, count);
                }
                other => {
                    return Err(format!(
                        "expected Arrival or ArrivalBatchEnd after NoMoreInserts, got {other:?}"
                    ))
                }
            }
        };
        let (t, count) = end;
        // The channel already refused a count that does not match.
        self.check(
            "batch-terminator",
            count >= 1 && count as usize == batch.len(),
            || {
                format!(
                    "ArrivalBatchEnd count={count} after {} Arrivals",
                    batch.len()
                )
            },
        );
        if let Some(g) = self.prev_grant {
            self.check("grant-honoured", t >= g, || {
                format!("a batch at {t} ps, but the fabric had granted no arrival before {g} ps")
            });
        }
        self.prev_grant = self.grant.take();
        for &(h, ta) in &batch {
            self.check("batch-times", ta == t, || {
                format!("Arrival {h} at {ta} ps inside a batch ending at {t} ps")
            });
            self.note_arrival(h, ta);
        }
        if let Some(prev) = self.last_batch {
            self.check("one-batch-per-time", t > prev, || {
                format!("a batch at {t} ps follows one at {prev} ps (arrival times must strictly increase: simultaneous arrivals belong in one batch)")
            });
        }
        self.last_batch = Some(t);
        self.max_batch = self.max_batch.max(count);
        self.batches += 1;
        self.clock = self.clock.max(t);
        Ok(t)
    }

    /// One Query at `t`; returns the Reply as (time, arrived).
    fn query(&mut self, handle: u64, t: Time) -> Result<(Time, bool), String> {
        let inserts_sent = self.ch.inserts_sent();
        self.ch
            .send(Record::Query {
                handle,
                time: t,
                inserts_sent,
            })
            .map_err(err)?;
        self.queries += 1;
        self.clock = self.clock.max(t);
        let (h, time, arrived) = match self.recv()? {
            Record::Reply {
                handle,
                time,
                arrived,
            } => (handle, time, arrived),
            other => {
                return Err(format!(
                    "expected the Reply to Query {handle}, got {other:?}"
                ))
            }
        };
        self.check("reply-order", h == handle, || {
            format!("Query for handle {handle} answered with a Reply for handle {h}")
        });
        if h != handle {
            return Err(format!("Reply for handle {h} to a Query for {handle}"));
        }
        let first = !self.queried.contains_key(&handle);
        *self.queried.entry(handle).or_default() += 1;
        if arrived {
            self.check("arrived-iff-before-query", time <= t, || {
                format!("Reply {handle}: arrived at {time} ps, after the query time {t} ps")
            });
            if let Some(&ny) = self.not_yet_at.get(&handle) {
                self.check("arrived-iff-before-query", time > ny, || {
                    format!("Reply {handle}: arrived at {time} ps, but a query at {ny} ps was told \"not yet\"")
                });
            }
            self.note_arrival(handle, time);
        } else {
            let expect = Time(t.0 + self.q.0);
            let may_estimate = self.estimate && first;
            let ok = time == expect || (may_estimate && time > expect);
            self.check("quantum", ok, || {
                format!(
                    "Reply {handle} to a query at {t} ps: not yet, next at {time} ps; expected t' + q = {expect} ps{}",
                    if may_estimate { " or later (estimate)" } else { "" }
                )
            });
            if time <= t {
                return Err(format!(
                    "Reply {handle} at {t} ps: \"not yet\" with next time {time} ps <= t' (would never progress)"
                ));
            }
            self.not_yet_at.insert(handle, t);
        }
        Ok((time, arrived))
    }

    /// Query: follow the replies in time order (a tiny discrete-event
    /// loop, so queries never go back in time), then collect what is
    /// left with one query each in the far future.
    fn drain_query(&mut self) -> Result<(), String> {
        let mut heap: BinaryHeap<Reverse<(Time, u64)>> = self
            .pending
            .iter()
            .map(|&h| Reverse((self.msgs[&h].time.max(self.clock), h)))
            .collect();
        let mut budget = STEP_QUERY_BUDGET;
        while let Some(Reverse((t, h))) = heap.pop() {
            if budget == 0 {
                heap.push(Reverse((t, h)));
                break;
            }
            budget -= 1;
            let t = t.max(self.clock);
            let (next, arrived) = self.query(h, t)?;
            if !arrived {
                heap.push(Reverse((next, h)));
            }
        }
        if !self.pending.is_empty() {
            self.collect_late()?;
        }
        Ok(())
    }

    /// Query every pending message once at clock + 1 s: all must be there.
    fn collect_late(&mut self) -> Result<(), String> {
        let far = Time(self.clock.0.max(self.latest_insert.0) + FAR);
        for h in self.pending.clone() {
            let (t, arrived) = self.query(h, far)?;
            self.check("query-after-arrival", arrived && t <= far, || {
                format!("handle {h} not arrived 1 s after the last query (reply time {t} ps)")
            });
            if !arrived {
                return Err(format!("handle {h} never arrives"));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        let t = self.clock.max(self.latest_insert);
        self.ch.send(Record::Finish { time: t }).map_err(err)?;
        self.ch.flush().map_err(err)
    }

    /// Report every rule this driver checked.
    fn report(&self, ctx: &mut Ctx) {
        for (&rule, &n) in &self.checks {
            match self.problems.get(rule) {
                Some(p) => ctx.fail(rule, p.clone()),
                None => ctx.pass(rule, format!("{n} checks{}", self.summary(rule))),
            }
        }
    }

    fn summary(&self, rule: &str) -> String {
        match rule {
            "one-batch-per-time" | "batch-terminator" => {
                format!(" ({} batches, largest {})", self.batches, self.max_batch)
            }
            "exactly-once" => format!(" ({} messages)", self.arrived.len()),
            "quantum" | "reply-order" => format!(" ({} queries)", self.queries),
            _ => String::new(),
        }
    }
}

/// After a Finish or a fatal event: wait for the peer to exit and report
/// its status against `want_zero`.
fn expect_exit(ctx: &mut Ctx, rule: &'static str, pid: u32, want_zero: bool) {
    match ctx.wait_peer_exit(pid, ctx.opts.timeout) {
        Ok(Some(code)) => {
            let ok = (code == 0) == want_zero;
            let out = ctx.peer_output();
            ctx.rule(
                rule,
                ok,
                format!(
                    "exited with status {code} (expected {}){}",
                    if want_zero { "0" } else { "non-zero" },
                    if ok || out.is_empty() {
                        String::new()
                    } else {
                        format!(": {out}")
                    }
                ),
            );
        }
        Ok(None) => ctx.rule(
            rule,
            !want_zero || ctx.peer.is_none(),
            if ctx.peer.is_none() {
                "exited (status not observable without --spawn)".to_string()
            } else {
                "killed by a signal".to_string()
            },
        ),
        Err(e) => ctx.fail(rule, format!("the fabric did not exit: {e}")),
    }
}

/// Wait for the fabric's reaction to something it must refuse: an Error
/// record (code `want`) or its death, and no normal answer.
///
/// With `record_required` a silent exit fails (the spec says the event
/// "must be reported"); otherwise stopping is a valid refusal (a receiver
/// "rejects" a malformed record; the Error record is optional there).
fn expect_refusal(
    ctx: &mut Ctx,
    ch: &mut Channel,
    rule: &'static str,
    want: ErrorCode,
    pid: u32,
    record_required: bool,
) {
    let deadline = Instant::now() + ctx.opts.timeout;
    let mut verdict: Option<(bool, String)> = None;
    while verdict.is_none() && Instant::now() < deadline {
        match ch.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(r @ Record::Error { code, .. })) => {
                let d = r.error_detail().unwrap_or_default();
                verdict = Some((
                    code == want.as_u32(),
                    format!(
                        "Error{{code={code}}} \"{d}\" (expected code {})",
                        want.as_u32()
                    ),
                ));
            }
            Ok(Some(other)) => {
                verdict = Some((false, format!("the fabric answered normally: {other:?}")));
            }
            Ok(None) => {}
            Err(ProtoError::PeerDied { .. }) => {
                verdict = Some((
                    !record_required,
                    format!(
                        "the fabric stopped without sending an Error record{}",
                        if record_required {
                            format!(" (expected Error{{code={}}})", want.as_u32())
                        } else {
                            String::new()
                        }
                    ),
                ));
            }
            Err(e) => verdict = Some((false, format!("receive failed: {e}"))),
        }
    }
    let (ok, why) =
        verdict.unwrap_or((false, format!("no reaction within {:?}", ctx.opts.timeout)));
    ctx.rule(rule, ok, why);
    expect_exit(ctx, "exit-status", pid, false);
}

fn handshake(ctx: &mut Ctx) -> Result<(), String> {
    let s = attach(ctx, None)?;
    let seg = s.segment();
    // Message queues: mq_msgsize <= 8192, mq_maxmsg <= 10; shared-memory
    // rings (H2): slots of up to 1 MiB, up to 1024 per ring.
    let (max_size, max_depth) = match s.transport() {
        crate::session::TransportKind::Mq => (8192, 10),
        crate::session::TransportKind::Shm => (1 << 20, 1024),
    };
    let geometry_ok = seg.message_size() % RECORD_SIZE as u32 == 0
        && (RECORD_SIZE as u32..=max_size).contains(&seg.message_size())
        && (1..=max_depth).contains(&seg.queue_depth());
    let fabric_pid = s.fabric_pid();
    ctx.rule(
        "segment",
        seg.version() == ctx.opts.protocol.version
            && seg.record_size() == RECORD_SIZE as u32
            && geometry_ok,
        format!(
            "magic IBCOSCTL, version {}, protocol {}, {} endpoints, record size {}, {} {} x {} bytes, fabric pid {fabric_pid}",
            seg.version(),
            s.protocol(),
            s.endpoints(),
            seg.record_size(),
            if s.transport() == crate::session::TransportKind::Shm { "rings" } else { "queues" },
            seg.queue_depth(),
            seg.message_size()
        ),
    );
    let mut ch = connect(ctx, s)?;
    let mut d = Driver::new(ctx, &mut ch);
    d.insert(Time(0), 0, 1, 64)?;
    d.drain()?;
    d.finish()?;
    d.report(ctx);
    match ch.peer_hello() {
        Some(h) => ctx.rule(
            "hello",
            h.pid == fabric_pid,
            format!(
                "Hello version {} from the fabric speaking {}, pid {} (segment: {fabric_pid})",
                h.version,
                ch.protocol(),
                h.pid
            ),
        ),
        None => ctx.fail("hello", "no Hello received"),
    }
    expect_exit(ctx, "finish", fabric_pid, true);
    Ok(())
}

fn hello_version(ctx: &mut Ctx) -> Result<(), String> {
    let s = attach(ctx, None)?;
    let pid = s.fabric_pid();
    let protocol = s.protocol();
    let session_version = s.version();
    // The other version this implementation knows: an old (v1) scheduler
    // in a v2 session, or a v2 scheduler in a v1 session.
    let wrong = if session_version >= 2 {
        1
    } else {
        PROTOCOL_VERSION
    };
    let mut t = s.into_transport().map_err(err)?;
    let hello = Record::Hello {
        version: wrong,
        protocol,
        role: Role::Scheduler,
        pid: std::process::id(),
    };
    let mut msg = hello.encode().to_vec();
    msg.extend_from_slice(
        &Record::Insert {
            handle: 0,
            time: Time(0),
            src: 0,
            dst: 1,
            size: 8,
            tag: 0,
        }
        .encode(),
    );
    let wait = match protocol {
        Protocol::Notify => Record::NoMoreInserts {
            time: Time(0),
            horizon: Time(0),
        },
        Protocol::Query => Record::Query {
            handle: 0,
            time: Time(0),
            inserts_sent: 1,
        },
    };
    let lane = if protocol == Protocol::Query {
        Lane::Qry
    } else {
        Lane::Ins
    };
    if lane == Lane::Ins {
        msg.extend_from_slice(&wait.encode());
    }
    t.send_message(Lane::Ins, &msg).map_err(err)?;
    if lane == Lane::Qry {
        t.send_message(Lane::Qry, &wait.encode()).map_err(err)?;
    }
    // Raw receive: the fabric's Hello is fine, an answer is not.
    let deadline = Instant::now() + ctx.opts.timeout;
    let mut verdict = None;
    while verdict.is_none() && Instant::now() < deadline {
        match t.recv_message(Duration::from_millis(200)) {
            Ok(Some((_, m))) => {
                let mut recs = VecDeque::new();
                if let Err(e) = crate::record::decode_message(&m, &mut recs) {
                    verdict = Some((false, format!("undecodable message from the fabric: {e}")));
                }
                for r in recs {
                    match r {
                        Record::Hello { .. } => {}
                        Record::Error { code, .. } => {
                            verdict = Some((
                                code == ErrorCode::VersionMismatch.as_u32(),
                                format!(
                                    "Error{{code={code}}} \"{}\" (expected code 3)",
                                    r.error_detail().unwrap_or_default()
                                ),
                            ))
                        }
                        other => {
                            verdict = Some((
                                false,
                                format!(
                                    "the fabric answered a version-{} Hello: {other:?}",
                                    PROTOCOL_VERSION + 1
                                ),
                            ))
                        }
                    }
                }
            }
            Ok(None) => {}
            Err(ProtoError::PeerDied { .. }) => {
                verdict = Some((true, "the fabric stopped without answering".into()))
            }
            Err(e) => verdict = Some((false, format!("receive failed: {e}"))),
        }
    }
    let (ok, why) =
        verdict.unwrap_or((false, format!("no reaction within {:?}", ctx.opts.timeout)));
    ctx.rule("version-check", ok, why);
    drop(t);
    expect_exit(ctx, "exit-status", pid, false);
    Ok(())
}

/// The record that makes a fabric answer: NoMoreInserts or a Query.
fn send_wait(ch: &mut Channel, handle: u64, t: Time) -> Result<(), String> {
    let r = match ch.protocol() {
        Protocol::Notify => nmi(ch, t),
        Protocol::Query => Record::Query {
            handle,
            time: t,
            inserts_sent: ch.inserts_sent(),
        },
    };
    ch.send(r).map_err(err)?;
    ch.flush().map_err(err)
}

fn bad_record(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let mut b = Record::Insert {
        handle: 0,
        time: Time(0),
        src: 0,
        dst: 1,
        size: 8,
        tag: 0,
    }
    .encode();
    b[RECORD_SIZE - 1] = 0x5a; // an unused byte: must be zero
    ch.send_raw_message(Lane::Ins, &b).map_err(err)?;
    // The channel did not count the raw Insert; the Query says 1.
    let r = match ch.protocol() {
        Protocol::Notify => nmi(&ch, Time(0)),
        Protocol::Query => Record::Query {
            handle: 0,
            time: Time(0),
            inserts_sent: 1,
        },
    };
    let lane = Lane::route(ch.protocol(), Role::Scheduler, r.kind()).unwrap();
    ch.send_raw_message(lane, &r.encode()).map_err(err)?;
    expect_refusal(
        ctx,
        &mut ch,
        "record-check",
        ErrorCode::Violation,
        pid,
        false,
    );
    Ok(())
}

fn times(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let mut d = Driver::new(ctx, &mut ch);
    // Equal times (also twice on one pair), then increasing times.
    d.insert(Time(1000), 0, 1, 64)?;
    d.insert(Time(1000), 1, 0, 64)?;
    d.insert(Time(1000), 0, 1, 64)?;
    d.insert(Time(1500), 0, 1, 1000)?;
    d.insert(Time(250_000), 1, 0, 8)?;
    d.drain()?;
    // At exactly the fabric's clock (not its past), then later.
    let c = d.clock;
    d.insert(c, 0, 1, 100)?;
    d.insert(Time(c.0 + 1), 1, 0, 100)?;
    d.drain()?;
    d.finish()?;
    let n = d.arrived.len();
    d.report(ctx);
    ctx.rule(
        "insert-times",
        n == 7,
        format!("7 inserts at equal, increasing and clock times accepted; {n} arrived"),
    );
    drop(ch);
    expect_exit(ctx, "finish", pid, true);
    Ok(())
}

fn batching(ctx: &mut Ctx) -> Result<(), String> {
    let s = attach(ctx, None)?;
    let pid = s.fabric_pid();
    let per_msg = (s.segment().message_size() as usize / RECORD_SIZE).max(1);
    let depth = s.segment().queue_depth().max(1) as usize;
    let eps = s.endpoints().min(4);
    let mut ch = connect(ctx, s)?;
    // One more Insert than the queue holds: the fabric must read while we
    // are blocked on the full queue (and we drain its queue meanwhile).
    let n = per_msg * depth + 1;
    let mut d = Driver::new(ctx, &mut ch);
    for i in 0..n as u64 {
        let src = (i % eps as u64) as u32;
        d.insert(Time(i / 16 * 10), src, (src + 1) % eps, 8)?;
    }
    d.drain()?;
    d.finish()?;
    let arrived = d.arrived.len();
    d.report(ctx);
    let sent = ch.stats();
    ctx.rule(
        "batching",
        arrived == n,
        format!(
            "{n} Inserts sent in messages of up to {per_msg} records ({} messages in all, queue depth {depth}); {arrived} arrived",
            sent.messages_sent
        ),
    );
    drop(ch);
    expect_exit(ctx, "finish", pid, true);
    Ok(())
}

fn query_before_after(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let mut d = Driver::new(ctx, &mut ch);
    let t0 = Time(10_000);
    let h = d.insert(t0, 0, 1, 256)?;
    let (t1, arrived) = d.query(h, t0)?;
    let before_ok = !arrived;
    let far = Time(t0.0 + FAR);
    let (ta, arrived2) = if arrived {
        (t1, true)
    } else {
        d.query(h, far)?
    };
    let r = d.report_string();
    d.finish()?;
    d.report(ctx);
    ctx.rule(
        "query-before",
        before_ok,
        format!("query at the insert time {t0} ps: arrived={arrived}, time {t1} ps"),
    );
    ctx.rule(
        "query-after",
        arrived2 && ta >= t0 && ta <= far,
        format!("query at {far} ps: arrived={arrived2}, t_a {ta} ps{r}"),
    );
    drop(ch);
    expect_exit(ctx, "finish", pid, true);
    Ok(())
}

impl Driver<'_> {
    fn report_string(&self) -> String {
        if self.problems.is_empty() {
            String::new()
        } else {
            format!(" (problems: {:?})", self.problems)
        }
    }
}

fn quantum(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let mut d = Driver::new(ctx, &mut ch);
    let t0 = Time(5_000);
    let h = d.insert(t0, 0, 1, 4096)?;
    let mut t = t0;
    let mut exact = 0;
    // First query at the insert time, then at odd offsets after each
    // promised time: every "not yet" must be exactly t' + q.
    for off in [0u64, 3, 7, 1] {
        let (next, arrived) = d.query(h, Time(t.0 + off))?;
        if arrived {
            break;
        }
        exact += 1;
        t = next;
    }
    if d.pending.contains(&h) {
        d.collect_late()?;
    }
    d.finish()?;
    d.report(ctx);
    ctx.pass(
        "quantum-steps",
        format!(
            "{exact} \"not yet\" replies checked with q = {} ps",
            ctx.opts.quantum
        ),
    );
    drop(ch);
    expect_exit(ctx, "finish", pid, true);
    Ok(())
}

fn no_more_inserts(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let mut d = Driver::new(ctx, &mut ch);
    d.insert(Time(0), 0, 1, 128)?;
    d.insert(Time(100), 1, 0, 128)?;
    let t = d.one_batch()?;
    ctx.pass(
        "nmi-in-flight",
        format!("NoMoreInserts with 2 messages in flight: a batch at {t} ps"),
    );
    d.drain()?;
    let clock = d.clock;
    d.report(ctx);
    // Nothing in flight now: a deadlock of the simulated system.
    let r = nmi(&ch, clock);
    ch.send(r).map_err(err)?;
    ch.flush().map_err(err)?;
    expect_refusal(ctx, &mut ch, "nmi-deadlock", ErrorCode::Deadlock, pid, true);
    Ok(())
}

fn simultaneous(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, eps) = attach_connect(ctx)?;
    let pairs = (eps / 2).clamp(1, 4);
    let mut d = Driver::new(ctx, &mut ch);
    for round in 0..2u64 {
        let t = Time(round * 1_000_000).max(d.clock);
        for p in 0..pairs {
            d.insert(t, 2 * p, 2 * p + 1, 512)?;
        }
        d.drain()?;
    }
    d.finish()?;
    d.report(ctx);
    drop(ch);
    expect_exit(ctx, "finish", pid, true);
    Ok(())
}

fn finish(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let key = ctx.key.clone();
    let mut d = Driver::new(ctx, &mut ch);
    d.insert(Time(0), 0, 1, 64)?;
    d.drain()?;
    // A message still in flight at Finish is the fabric's business.
    let c = d.clock;
    d.insert(c, 1, 0, 64)?;
    d.finish()?;
    d.report(ctx);
    // Nothing may come after Finish.
    let after = ch.recv_timeout(Duration::from_millis(300));
    ctx.rule(
        "silent-after-finish",
        !matches!(after, Ok(Some(_))),
        match &after {
            Ok(Some(r)) => format!("the fabric sent {r:?} after Finish"),
            _ => "nothing received after Finish".into(),
        },
    );
    expect_exit(ctx, "finish", pid, true);
    // The fabric removes its objects at normal end (our channel has not
    // been dropped yet, so it did not do it for the fabric).
    let k = crate::names::SessionKey::new(&key).map_err(err)?;
    let left: Vec<String> = k
        .all_object_names()
        .into_iter()
        .filter(|n| crate::session::object_exists(n).unwrap_or(true))
        .collect();
    ctx.rule(
        "cleanup",
        left.is_empty(),
        if left.is_empty() {
            "all session objects removed by the fabric".to_string()
        } else {
            format!("left behind: {}", left.join(" "))
        },
    );
    Ok(())
}

fn past_insert(ctx: &mut Ctx) -> Result<(), String> {
    let (mut ch, pid, _) = attach_connect(ctx)?;
    let mut d = Driver::new(ctx, &mut ch);
    let h = d.insert(Time(1_000_000), 0, 1, 64)?;
    match d.protocol {
        Protocol::Notify => {
            d.one_batch()?;
        }
        Protocol::Query => {
            let far = Time(1_000_000 + FAR);
            d.query(h, far)?;
        }
    }
    let clock = d.clock;
    d.report(ctx);
    // Well before the fabric's clock.
    let h2 = 1u64;
    ch.send(Record::Insert {
        handle: h2,
        time: Time(500_000),
        src: 1,
        dst: 0,
        size: 64,
        tag: 0,
    })
    .map_err(err)?;
    send_wait(&mut ch, h2, clock)?;
    expect_refusal(ctx, &mut ch, "past-insert", ErrorCode::Violation, pid, true);
    Ok(())
}

fn peer_death(ctx: &mut Ctx) -> Result<(), String> {
    let mut stand_in = StandIn::start()?;
    let s = attach(ctx, Some(stand_in.pid()))?;
    let pid = s.fabric_pid();
    let mut ch = connect(ctx, s)?;
    ch.send(Record::Insert {
        handle: 0,
        time: Time(0),
        src: 0,
        dst: 1,
        size: 64,
        tag: 0,
    })
    .map_err(err)?;
    ch.flush().map_err(err)?;
    std::thread::sleep(Duration::from_millis(200));
    let killed = Instant::now();
    stand_in.die();
    match ctx.wait_peer_exit(pid, DEATH_LIMIT) {
        Ok(code) => {
            let waited = killed.elapsed();
            let status_ok = code.is_none_or(|c| c != 0);
            ctx.rule(
                "peer-death",
                status_ok,
                format!(
                    "the fabric stopped {:.2} s after the scheduler's registered pid died{}",
                    waited.as_secs_f64(),
                    match code {
                        Some(c) => format!(", status {c}"),
                        None => String::new(),
                    }
                ),
            );
        }
        Err(e) => ctx.fail(
            "peer-death",
            format!("the scheduler's pid died but the fabric is {e}"),
        ),
    }
    // And the checker's own channel notices the fabric is gone.
    let t = Instant::now();
    let r = ch.recv_timeout(DEATH_LIMIT);
    ctx.rule(
        "checker-no-hang",
        matches!(r, Err(ProtoError::PeerDied { .. }))
            || matches!(r, Ok(Some(Record::Error { .. }))),
        format!(
            "checker's receive returned after {:.2} s: {}",
            t.elapsed().as_secs_f64(),
            match r {
                Ok(Some(rec)) => format!("{rec:?}"),
                Ok(None) => "timed out".into(),
                Err(e) => e.to_string(),
            }
        ),
    );
    Ok(())
}
