//! Scenarios for a scheduler under test: the checker is a fixed-latency
//! fabric (every message arrives `--latency` after its insert). The
//! scheduler decides what it sends; the checker checks every record and,
//! in the fault scenarios, answers its first wait with something the
//! scheduler must refuse.

use super::peer::StandIn;
use super::{err, Ctx, Scenario};
use crate::channel::Channel;
use crate::names::Lane;
use crate::record::{Protocol, Record, Role, PROTOCOL_VERSION, RECORD_SIZE};
use crate::session::FabricSession;
use crate::time::Time;
use crate::ProtoError;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// Endpoints the checker's fabric serves.
const ENDPOINTS: u32 = 1024;
const DEATH_LIMIT: Duration = Duration::from_secs(3);

pub fn scenarios() -> Vec<Scenario> {
    let s = |name, about, run| Scenario {
        name,
        role: Role::Scheduler,
        protocol: None,
        min_version: 1,
        about,
        run,
    };
    vec![
        s("run", "a whole run against a fixed-latency fabric: Hello, insert/query/NoMoreInserts times, handles, batches, Finish, exit 0", run),
        s("segment-version", "a segment of version 2 is refused (no attach, non-zero exit)", segment_version),
        s("hello-version", "a fabric Hello with version 2 is refused (non-zero exit)", hello_version),
        s("bad-record", "an answer with a non-zero unused byte is refused (non-zero exit)", bad_record),
        s("bad-answer", "notify: a batch end whose count is wrong; query: \"arrived\" after the query time: refused", bad_answer),
        s("fabric-death", "the fabric's death is noticed within about a second (non-zero exit)", fabric_death),
    ]
}

/// What the checker does at the scheduler's first wait.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    None,
    BadRecord,
    BadAnswer,
    Death,
}

fn create(ctx: &mut Ctx) -> Result<FabricSession, String> {
    let start = Instant::now();
    loop {
        let opts = crate::session::FabricOptions {
            version: Some(ctx.opts.protocol.version),
            transport: ctx.opts.transport,
            ..Default::default()
        };
        match crate::session::create_fabric_opts(
            &ctx.key,
            ctx.opts.protocol.protocol,
            ENDPOINTS,
            &opts,
        ) {
            Ok(s) => return Ok(s),
            // Another session of this user may hold the small queue budget
            // for a moment.
            Err(ProtoError::QueueBudget { .. }) if start.elapsed() < ctx.opts.timeout => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => return Err(format!("cannot create the session: {e}")),
        }
    }
}

/// Create the session, start the scheduler, wait until it attached.
fn setup(ctx: &mut Ctx) -> Result<(FabricSession, u32), String> {
    let s = create(ctx)?;
    ctx.start_peer()?;
    let pid = ctx
        .wait_for(|step| s.wait_for_scheduler(step))
        .map_err(|e| format!("no scheduler attached: {e}"))?;
    Ok((s, pid))
}

struct InFlight {
    arrival: Time,
    order: u64,
    told_not_yet: Option<Time>,
}

/// The checker's fabric: fixed latency, every record checked.
struct Fabric<'c> {
    ch: &'c mut Channel,
    protocol: Protocol,
    latency: Time,
    q: Time,
    estimate: bool,
    clock: Time,
    order: u64,
    inserts: u64,
    flight: BTreeMap<u64, InFlight>,
    last_reported: Time,
    early: VecDeque<Record>,
    problems: BTreeMap<&'static str, String>,
    checks: BTreeMap<&'static str, u64>,
    waits: u64,
    batches: u64,
    max_batch: usize,
    /// v2: Grants sent, and whether Config arrived.
    grants: u64,
    configured: bool,
}

enum End {
    Finished(Time),
    /// The fault was injected at the scheduler's first wait.
    Injected,
}

impl<'c> Fabric<'c> {
    fn check(&mut self, rule: &'static str, ok: bool, why: impl FnOnce() -> String) {
        *self.checks.entry(rule).or_default() += 1;
        if !ok {
            self.problems.entry(rule).or_insert_with(why);
        }
    }

    /// The grant of a batch at `ta` (v2): the next arrival of a message
    /// already inserted, u64::MAX if none; 0 in version 1.
    fn grant_after(&self, ta: Time) -> Time {
        if self.ch.version() < 2 {
            return Time(0);
        }
        self.flight
            .values()
            .map(|m| m.arrival)
            .filter(|&a| a > ta)
            .min()
            .unwrap_or(Time(u64::MAX))
    }

    fn next(&mut self) -> Result<Record, String> {
        if let Some(r) = self.early.pop_front() {
            return Ok(r);
        }
        self.ch.recv().map_err(err)
    }

    /// While the scheduler waits for an answer it must not send anything
    /// (best effort: whatever already arrived is looked at).
    fn check_waiting(&mut self, what: &str) -> Result<(), String> {
        if let Some(r) = self.ch.try_recv().map_err(err)? {
            let name = r.kind_name();
            self.check("waits-for-answer", false, || {
                format!("sent {name} before the answer to its {what}")
            });
            self.early.push_back(r);
        } else {
            self.check("waits-for-answer", true, String::new);
        }
        Ok(())
    }

    fn serve(&mut self, fault: Fault, stand_in: &mut Option<StandIn>) -> Result<End, String> {
        loop {
            let rec = self.next()?;
            match rec {
                Record::Insert {
                    handle,
                    time,
                    src,
                    dst,
                    ..
                } => {
                    if self.ch.version() >= 2 {
                        let c = self.configured;
                        self.check("config-first", c, || {
                            "version 2: an Insert before the Config record".to_string()
                        });
                    }
                    let clock = self.clock;
                    self.check("insert-times", time >= clock, || {
                        format!(
                            "Insert {handle} at {time} ps, before the fabric's clock {clock} ps"
                        )
                    });
                    let dup = self.flight.contains_key(&handle);
                    self.check("handles", !dup, || {
                        format!("Insert reuses handle {handle} while it is in flight")
                    });
                    self.check("ranks", src < ENDPOINTS && dst < ENDPOINTS, || {
                        format!(
                            "Insert {handle}: rank {src} -> {dst}, the fabric serves {ENDPOINTS}"
                        )
                    });
                    self.inserts += 1;
                    self.flight.insert(
                        handle,
                        InFlight {
                            arrival: Time(time.0 + self.latency.0),
                            order: self.order,
                            told_not_yet: None,
                        },
                    );
                    self.order += 1;
                }
                Record::Query {
                    handle,
                    time,
                    inserts_sent,
                } => {
                    let (clock, n) = (self.clock, self.inserts);
                    self.check("query-times", time >= clock, || {
                        format!("Query {handle} at {time} ps, before the fabric's clock {clock} ps")
                    });
                    self.check("inserts-sent", inserts_sent == n, || {
                        format!(
                            "Query {handle} counts {inserts_sent} inserts; {n} were sent before it"
                        )
                    });
                    self.check_waiting("Query")?;
                    self.waits += 1;
                    self.clock = self.clock.max(time);
                    let Some(m) = self.flight.get_mut(&handle) else {
                        self.check("query-handle", false, || {
                            format!("Query for unknown or already arrived handle {handle}")
                        });
                        return Err(format!("Query for unknown handle {handle}"));
                    };
                    if let Some(ny) = m.told_not_yet {
                        let ok = time >= ny;
                        *self.checks.entry("requery-time").or_default() += 1;
                        if !ok {
                            self.problems.entry("requery-time").or_insert_with(|| {
                                format!("Query {handle} at {time} ps, but the fabric said to ask again at {ny} ps")
                            });
                        }
                    }
                    match fault {
                        Fault::None => {}
                        Fault::BadRecord => {
                            let mut b = Record::Reply {
                                handle,
                                time: Time(time.0 + self.q.0),
                                arrived: false,
                            }
                            .encode();
                            b[RECORD_SIZE - 1] = 0x5a;
                            self.ch.send_raw_message(Lane::Rep, &b).map_err(err)?;
                            return Ok(End::Injected);
                        }
                        Fault::BadAnswer => {
                            self.ch
                                .send(Record::Reply {
                                    handle,
                                    time: Time(time.0 + 1),
                                    arrived: true,
                                })
                                .map_err(err)?;
                            self.ch.flush().map_err(err)?;
                            return Ok(End::Injected);
                        }
                        Fault::Death => {
                            if let Some(s) = stand_in {
                                s.die();
                            }
                            return Ok(End::Injected);
                        }
                    }
                    let reply = if m.arrival <= time {
                        let t = m.arrival;
                        self.flight.remove(&handle);
                        self.last_reported = self.last_reported.max(t);
                        Record::Reply {
                            handle,
                            time: t,
                            arrived: true,
                        }
                    } else {
                        let mut next = Time(time.0 + self.q.0);
                        if self.estimate && m.told_not_yet.is_none() {
                            next = next.max(m.arrival);
                        }
                        m.told_not_yet = Some(next);
                        Record::Reply {
                            handle,
                            time: next,
                            arrived: false,
                        }
                    };
                    self.ch.send(reply).map_err(err)?;
                }
                Record::NoMoreInserts { time, horizon } => {
                    let clock = self.clock;
                    let v2 = self.ch.version() >= 2;
                    // v2: the scheduler's clock may lag the fabric's (an
                    // arrival runs at t + o + L); its horizon may not.
                    let (what, at) = if v2 {
                        ("horizon", horizon)
                    } else {
                        ("time", time)
                    };
                    self.check("wait-times", at >= clock, || {
                        format!("NoMoreInserts with {what} {at} ps, before the fabric's clock {clock} ps")
                    });
                    if v2 {
                        self.check("horizon", horizon >= time, || {
                            format!("NoMoreInserts at {time} ps with horizon {horizon} ps (the horizon is the next event, not before now)")
                        });
                    } else {
                        self.check("horizon", horizon.0 == 0, || {
                            format!("version 1: NoMoreInserts with a non-zero horizon field ({horizon})")
                        });
                    }
                    let empty = self.flight.is_empty();
                    self.check("nmi-in-flight", !empty, || {
                        format!("NoMoreInserts at {time} ps with nothing in flight")
                    });
                    self.check_waiting("NoMoreInserts")?;
                    self.waits += 1;
                    if empty {
                        let _ = self.ch.send(Record::error(
                            crate::ErrorCode::Deadlock,
                            "NoMoreInserts with nothing in flight",
                        ));
                        return Err("the scheduler waits with nothing in flight".into());
                    }
                    let ta = self.flight.values().map(|m| m.arrival).min().unwrap();
                    if v2 && ta > horizon {
                        // Exact notify: nothing completes up to the
                        // horizon; the fabric has simulated through it and
                        // grants the next arrival (its lookahead).
                        self.ch.send(Record::Grant { time: ta }).map_err(err)?;
                        self.ch.flush().map_err(err)?;
                        self.clock = self.clock.max(horizon);
                        self.grants += 1;
                        continue;
                    }
                    let mut done: Vec<(u64, u64)> = self
                        .flight
                        .iter()
                        .filter(|(_, m)| m.arrival == ta)
                        .map(|(&h, m)| (m.order, h))
                        .collect();
                    done.sort();
                    match fault {
                        Fault::None => {}
                        Fault::BadRecord => {
                            let mut b = Record::Arrival {
                                handle: done[0].1,
                                time: ta,
                            }
                            .encode()
                            .to_vec();
                            b[RECORD_SIZE - 1] = 0x5a;
                            b.extend_from_slice(
                                &Record::ArrivalBatchEnd {
                                    time: ta,
                                    count: 1,
                                    grant: self.grant_after(ta),
                                }
                                .encode(),
                            );
                            self.ch.send_raw_message(Lane::Arr, &b).map_err(err)?;
                            return Ok(End::Injected);
                        }
                        Fault::BadAnswer => {
                            let mut b = Vec::new();
                            for &(_, h) in &done {
                                b.extend_from_slice(
                                    &Record::Arrival {
                                        handle: h,
                                        time: ta,
                                    }
                                    .encode(),
                                );
                            }
                            let wrong = done.len() as u32 + 1;
                            b.extend_from_slice(
                                &Record::ArrivalBatchEnd {
                                    time: ta,
                                    count: wrong,
                                    grant: self.grant_after(ta),
                                }
                                .encode(),
                            );
                            self.ch.send_raw_message(Lane::Arr, &b).map_err(err)?;
                            return Ok(End::Injected);
                        }
                        Fault::Death => {
                            if let Some(s) = stand_in {
                                s.die();
                            }
                            return Ok(End::Injected);
                        }
                    }
                    for &(_, h) in &done {
                        self.flight.remove(&h);
                        self.ch
                            .send(Record::Arrival {
                                handle: h,
                                time: ta,
                            })
                            .map_err(err)?;
                    }
                    let grant = self.grant_after(ta);
                    self.ch
                        .send(Record::ArrivalBatchEnd {
                            time: ta,
                            count: done.len() as u32,
                            grant,
                        })
                        .map_err(err)?;
                    self.ch.flush().map_err(err)?;
                    self.clock = ta;
                    self.last_reported = ta;
                    self.batches += 1;
                    self.max_batch = self.max_batch.max(done.len());
                }
                Record::Config {
                    quantum,
                    estimate_milli,
                    ..
                } => {
                    let first = !self.configured && self.inserts == 0 && self.waits == 0;
                    self.check("config-first", first, || {
                        "Config is not the scheduler's first record (or came twice)".to_string()
                    });
                    let q_ok = quantum.0 >= 1
                        && (self.protocol == Protocol::Notify
                            || (quantum == self.q && (estimate_milli != 0) == self.estimate));
                    let (q, est) = (self.q, self.estimate);
                    self.check("config", q_ok, || {
                        format!("Config q={quantum} F={}/1000; the checker was told q={q}, estimate={est}", estimate_milli)
                    });
                    self.configured = true;
                    self.ch
                        .send(Record::ConfigAck {
                            min_latency: self.latency,
                        })
                        .map_err(err)?;
                    self.ch.flush().map_err(err)?;
                }
                Record::Finish { time } => {
                    let last = self.last_reported;
                    self.check("finish-time", time >= last, || {
                        format!("Finish at {time} ps, before the last arrival it was told of ({last} ps)")
                    });
                    return Ok(End::Finished(time));
                }
                Record::Error { code, .. } => {
                    return Err(format!(
                        "the scheduler sent Error{{code={code}}}: {}",
                        rec.error_detail().unwrap_or_default()
                    ))
                }
                other => return Err(format!("unexpected record {other:?}")),
            }
        }
    }

    fn report(&self, ctx: &mut Ctx) {
        for (&rule, &n) in &self.checks {
            match self.problems.get(rule) {
                Some(p) => ctx.fail(rule, p.clone()),
                None => ctx.pass(rule, format!("{n} checks")),
            }
        }
    }
}

fn fabric<'c>(ctx: &Ctx, ch: &'c mut Channel) -> Fabric<'c> {
    Fabric {
        protocol: ch.protocol(),
        ch,
        latency: ctx.opts.latency,
        q: ctx.opts.quantum,
        estimate: ctx.opts.estimate,
        clock: Time(0),
        order: 0,
        inserts: 0,
        flight: BTreeMap::new(),
        last_reported: Time(0),
        early: VecDeque::new(),
        problems: BTreeMap::new(),
        checks: BTreeMap::new(),
        waits: 0,
        batches: 0,
        max_batch: 0,
        grants: 0,
        configured: false,
    }
}

fn expect_exit(ctx: &mut Ctx, rule: &'static str, pid: u32, want_zero: bool, within: Duration) {
    match ctx.wait_peer_exit(pid, within) {
        Ok(Some(code)) => {
            let ok = (code == 0) == want_zero;
            let out = if ok {
                String::new()
            } else {
                format!(": {}", ctx.peer_output())
            };
            ctx.rule(
                rule,
                ok,
                format!(
                    "exited with status {code} (expected {}){out}",
                    if want_zero { "0" } else { "non-zero" }
                ),
            );
        }
        Ok(None) => ctx.rule(
            rule,
            !want_zero || ctx.peer.is_none(),
            if ctx.peer.is_none() {
                "exited (status not observable without --spawn)"
            } else {
                "killed by a signal"
            },
        ),
        Err(e) => ctx.fail(rule, format!("the scheduler did not exit: {e}")),
    }
}

fn run(ctx: &mut Ctx) -> Result<(), String> {
    let (s, pid) = setup(ctx)?;
    let mut ch = s.connect().map_err(err)?;
    ch.set_timeout(Some(ctx.opts.timeout));
    let mut f = fabric(ctx, &mut ch);
    let end = f.serve(Fault::None, &mut None)?;
    let (inserts, waits, batches, max_batch, protocol) =
        (f.inserts, f.waits, f.batches, f.max_batch, f.protocol);
    f.report(ctx);
    match ch.peer_hello() {
        Some(h) => ctx.rule(
            "hello",
            h.pid == pid,
            format!(
                "Hello version {}, scheduler speaking {}, pid {} (segment: {pid})",
                h.version,
                ch.protocol(),
                h.pid
            ),
        ),
        None => ctx.fail("hello", "no Hello received"),
    }
    if let End::Finished(t) = end {
        ctx.pass(
            "traffic",
            format!(
                "{inserts} inserts, {waits} {}, {} until Finish at {t} ps",
                if protocol == Protocol::Query {
                    "queries"
                } else {
                    "NoMoreInserts"
                },
                if protocol == Protocol::Notify {
                    format!("{batches} batches (largest {max_batch})")
                } else {
                    "replies".into()
                }
            ),
        );
    }
    let after = ch.recv_timeout(Duration::from_millis(300));
    ctx.rule(
        "silent-after-finish",
        !matches!(after, Ok(Some(_))),
        match &after {
            Ok(Some(r)) => format!("the scheduler sent {r:?} after Finish"),
            _ => "nothing received after Finish".into(),
        },
    );
    expect_exit(ctx, "finish", pid, true, ctx.opts.timeout);
    Ok(())
}

/// Serve until the scheduler's first wait, inject `fault`, then expect
/// the scheduler to stop with a non-zero status (and never Finish).
fn faulty(ctx: &mut Ctx, fault: Fault) -> Result<(), String> {
    let mut stand_in = if fault == Fault::Death {
        Some(StandIn::start()?)
    } else {
        None
    };
    let s = create(ctx)?;
    if let Some(si) = &stand_in {
        s.segment().debug_set_fabric_pid(si.pid());
    }
    ctx.start_peer()?;
    let pid = ctx
        .wait_for(|step| s.wait_for_scheduler(step))
        .map_err(|e| format!("no scheduler attached: {e}"))?;
    let mut ch = s.connect().map_err(err)?;
    ch.set_timeout(Some(ctx.opts.timeout));
    let mut f = fabric(ctx, &mut ch);
    let injected_at = Instant::now();
    match f.serve(fault, &mut stand_in)? {
        End::Finished(_) => {
            return Err(
                "the scheduler finished without ever waiting for the fabric: nothing to inject"
                    .into(),
            )
        }
        End::Injected => {}
    }
    let rule = match fault {
        Fault::BadRecord => "record-check",
        Fault::BadAnswer => "answer-check",
        _ => "peer-death",
    };
    // Whatever it sends now must not be a Finish.
    let mut finished = false;
    let mut error_code = None;
    let limit = if fault == Fault::Death {
        DEATH_LIMIT
    } else {
        ctx.opts.timeout
    };
    let status = loop {
        match ctx.wait_peer_exit(pid, Duration::from_millis(50)) {
            Ok(code) => break Ok(code),
            Err(e) if injected_at.elapsed() > limit => break Err(e),
            Err(_) => {}
        }
        if fault != Fault::Death {
            match ch.try_recv() {
                Ok(Some(Record::Finish { .. })) => finished = true,
                Ok(Some(Record::Error { code, .. })) => error_code = Some(code),
                _ => {}
            }
        }
    };
    let waited = injected_at.elapsed().as_secs_f64();
    match status {
        Ok(code) => {
            let ok = !finished && code.is_none_or(|c| c != 0);
            ctx.rule(
                rule,
                ok,
                format!(
                    "the scheduler stopped {waited:.2} s later{}{}{}",
                    code.map(|c| format!(" with status {c}"))
                        .unwrap_or_default(),
                    error_code
                        .map(|c| format!(", after sending Error{{code={c}}}"))
                        .unwrap_or_default(),
                    if finished {
                        ", but it sent Finish first: the fault went unnoticed"
                    } else {
                        ""
                    }
                ),
            );
        }
        Err(e) => ctx.fail(rule, format!("the scheduler kept running: {e}")),
    }
    Ok(())
}

fn bad_record(ctx: &mut Ctx) -> Result<(), String> {
    faulty(ctx, Fault::BadRecord)
}
fn bad_answer(ctx: &mut Ctx) -> Result<(), String> {
    faulty(ctx, Fault::BadAnswer)
}
fn fabric_death(ctx: &mut Ctx) -> Result<(), String> {
    faulty(ctx, Fault::Death)
}

fn segment_version(ctx: &mut Ctx) -> Result<(), String> {
    let s = create(ctx)?;
    s.segment().debug_set_version(PROTOCOL_VERSION + 1);
    ctx.start_peer()?;
    let watch = if ctx.peer.is_some() {
        ctx.opts.timeout
    } else {
        DEATH_LIMIT
    };
    let start = Instant::now();
    let mut claimed = 0;
    let mut exited = None;
    while start.elapsed() < watch {
        claimed = s.segment().scheduler_pid();
        if claimed != 0 {
            break;
        }
        if let Some(p) = &mut ctx.peer {
            if let Some(st) = p.wait_timeout(Duration::from_millis(20)) {
                exited = Some(st.code());
                break;
            }
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    ctx.rule(
        "version-check",
        claimed == 0 && (ctx.peer.is_none() || exited.is_some_and(|c| c != Some(0))),
        if claimed != 0 {
            format!(
                "the scheduler (pid {claimed}) attached to a version-{} segment",
                PROTOCOL_VERSION + 1
            )
        } else {
            match exited {
                Some(Some(c)) => format!("refused: exited with status {c} without attaching"),
                Some(None) => "refused: killed by a signal".into(),
                None if ctx.peer.is_none() => format!("did not attach within {watch:?}"),
                None => format!("did not attach, but still running after {watch:?}"),
            }
        },
    );
    Ok(())
}

fn hello_version(ctx: &mut Ctx) -> Result<(), String> {
    let (s, pid) = setup(ctx)?;
    let protocol = s.protocol();
    let mut t = s.into_transport().map_err(err)?;
    let lane = Lane::outgoing(protocol, Role::Fabric)[0];
    let hello = Record::Hello {
        version: PROTOCOL_VERSION + 1,
        protocol,
        role: Role::Fabric,
        pid: std::process::id(),
    };
    t.send_message(lane, &hello.encode()).map_err(err)?;
    let start = Instant::now();
    let mut finished = false;
    let status = loop {
        match ctx.wait_peer_exit(pid, Duration::from_millis(50)) {
            Ok(code) => break Ok(code),
            Err(e) if start.elapsed() > ctx.opts.timeout => break Err(e),
            Err(_) => {}
        }
        // Drain (so it never blocks on a full queue) and look for Finish.
        while let Ok(Some((_, m))) = t.recv_message(Duration::ZERO) {
            let mut recs = VecDeque::new();
            if crate::record::decode_message(&m, &mut recs).is_ok() {
                finished |= recs.iter().any(|r| matches!(r, Record::Finish { .. }));
            }
        }
    };
    match status {
        Ok(code) => ctx.rule(
            "version-check",
            !finished && code.is_none_or(|c| c != 0),
            format!(
                "the scheduler stopped{}{}",
                code.map(|c| format!(" with status {c}"))
                    .unwrap_or_default(),
                if finished {
                    " after sending Finish: it ignored the version"
                } else {
                    ""
                }
            ),
        ),
        Err(e) => ctx.fail("version-check", format!("the scheduler kept running: {e}")),
    }
    Ok(())
}
