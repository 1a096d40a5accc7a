//! Calibration 4 (docs/calibration.md): the traces read together on rank
//! 0's clock, the delays that make every rank enter a collective at the
//! same time, and where blocking Send/Recv pairs meet.

use std::collections::HashMap;

use super::collectives::{coll_fields, is_collective};
use super::files::RankTrace;
use super::gaps::Ctx;
use crate::trace::reader::{recognise, Call, Fields, Recognised, TraceError};

/// Calibration 4's plan: per rank, its start skew and the delay (trace us)
/// to insert before each translated collective so that every rank enters
/// it at the same time on the common clock.
pub(super) struct SyncPlan {
    /// Clock-corrected MPI_Init return minus the earliest rank's, us.
    pub(super) start: Vec<f64>,
    pub(super) delays: Vec<Vec<f64>>,
    /// Per rank: line number of a blocking Send/Recv -> time from the
    /// call's start to its operation, us (only with `sync_p2p`).
    pub(super) p2p: Vec<HashMap<usize, f64>>,
}

/// A point-to-point call as the p2p synchronisation sees it.
pub(super) struct P2pCall {
    pub(super) line: usize,
    pub(super) blocking: bool,
    pub(super) start: f64,
    pub(super) end: f64,
}

/// Places the operations of matched blocking Send/Recv pairs (thesis
/// 5.4.1's principle, "if all the communication happened when the function
/// durations for different ranks overlap"): the message can flow once both
/// calls have started, so both operations go to
/// `t = min(max(send start, recv start), send end)` on the common clock
/// (clamped into each call). The k-th send from s to r with tag t matches
/// the k-th receive on r from s with tag t (MPI's non-overtaking order);
/// non-blocking and Sendrecv calls take part in the counting but are not
/// moved, and a rank that receives with a wildcard source or tag (-1) is
/// left out entirely. Only communicators of the world's size are matched
/// (peers and tags are taken as world ranks, as the translator does).
pub(super) fn place_p2p(
    sends: &HashMap<(i64, i64, i64), Vec<P2pCall>>,
    recvs: &HashMap<(i64, i64, i64), Vec<P2pCall>>,
    wildcard: &[bool],
    hn: usize,
) -> Vec<HashMap<usize, f64>> {
    let mut out = vec![HashMap::new(); hn];
    for (key, ss) in sends {
        let &(src, dst, _) = key;
        if wildcard.get(dst as usize).copied().unwrap_or(true) {
            continue;
        }
        let Some(rs) = recvs.get(key) else { continue };
        for (s, r) in ss.iter().zip(rs) {
            if !(s.blocking && r.blocking) {
                continue;
            }
            let t = s.start.max(r.start).min(s.end);
            out[src as usize].insert(s.line, t - s.start);
            out[dst as usize].insert(r.line, t.clamp(r.start, r.end.max(r.start)) - r.start);
        }
    }
    out
}

/// The `# clockdiff:` header of a trace: rank 0's clock minus this rank's,
/// in microseconds although liballprof writes `s` (docs/tracing.md: adding
/// it to this file's times gives rank 0 time). A file without it is taken
/// to share rank 0's clock (offset 0, with a warning).
pub(super) fn clock_offset_us(tr: &RankTrace, ctx: &mut Ctx) -> Result<f64, TraceError> {
    for (i, line) in tr.lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("# clockdiff:") {
            let tok = rest.split_whitespace().next().unwrap_or("");
            return tok
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    TraceError::line(
                        &tr.file,
                        i + 1,
                        format!("`# clockdiff:` needs a number (microseconds), got `{tok}`"),
                    )
                });
        }
        if line.starts_with("MPI_") {
            break;
        }
    }
    ctx.warnings.push(format!(
        "{}: no `# clockdiff:` header before the first call; --sync-collectives assumes \
         this rank shares rank 0's clock",
        tr.file.display()
    ));
    Ok(0.0)
}

/// Reads all ranks' traces together (thesis 5.4.1). Times are put on rank
/// 0's clock: `t + clockdiff`, computed relative to rank 0's MPI_Init
/// return so that the 16-digit epoch times keep sub-microsecond precision
/// in an f64. The simulation starts every rank at 0, so a rank that left
/// MPI_Init s us after the earliest one gets a start calc of s: then
/// simulated time = common-clock time - earliest Init return for every
/// rank, and a collective entered at the same common time is entered at
/// the same simulated time.
pub(super) fn sync_targets(traces: &[RankTrace], ctx: &mut Ctx) -> Result<SyncPlan, TraceError> {
    let o = ctx.o;
    let hn = traces.len() as i64;
    let mut base: Option<f64> = None;
    let mut inits: Vec<f64> = Vec::new();
    let mut entries: Vec<Vec<f64>> = Vec::new();
    let mut sends: HashMap<(i64, i64, i64), Vec<P2pCall>> = HashMap::new();
    let mut recvs: HashMap<(i64, i64, i64), Vec<P2pCall>> = HashMap::new();
    let mut wildcard = vec![false; traces.len()];
    for (me, tr) in traces.iter().enumerate() {
        let offset = clock_offset_us(tr, ctx)?;
        let mut init_end = None;
        let mut v = Vec::new();
        for (i, line) in tr.lines.iter().enumerate() {
            let Ok(Recognised::Known { call, .. }) = recognise(line) else {
                continue;
            };
            let f = Fields::split(line);
            let err = |m: String| TraceError::line(&tr.file, i + 1, m);
            if call == Call::Init {
                let t = f.time(4, "end time").map_err(err)?;
                let b = *base.get_or_insert(t);
                init_end = Some(t - b + offset);
            } else if is_collective(call) && !o.nocolls && o.sync_collectives {
                let c = coll_fields(call, &f).map_err(err)?;
                if c.comm_size == hn {
                    let Some(b) = base else {
                        return Err(err(
                            "collective before MPI_Init (--sync-collectives needs the MPI_Init \
                             record)"
                                .into(),
                        ));
                    };
                    v.push(c.start - b + offset);
                }
            } else if o.sync_p2p
                && !o.nop2p
                && matches!(
                    call,
                    Call::Send | Call::Rsend | Call::Isend | Call::Recv | Call::Irecv
                )
            {
                let Some(b) = base else { continue };
                let is_send = matches!(call, Call::Send | Call::Rsend | Call::Isend);
                let end_field = if matches!(call, Call::Send | Call::Rsend) {
                    12
                } else {
                    13
                };
                let peer = f.int(7, "peer").map_err(err)?;
                let tag = f.int(8, "tag").map_err(err)?;
                let size = f.int(11, "communicator size").map_err(err)?;
                if size != hn {
                    continue;
                }
                let pc = P2pCall {
                    line: i + 1,
                    blocking: matches!(call, Call::Send | Call::Rsend | Call::Recv),
                    start: f.time(1, "start time").map_err(err)? - b + offset,
                    end: f.time(end_field, "end time").map_err(err)? - b + offset,
                };
                let me = me as i64;
                if is_send {
                    sends.entry((me, peer, tag)).or_default().push(pc);
                } else {
                    if peer < 0 || tag < 0 {
                        wildcard[me as usize] = true;
                    }
                    recvs.entry((peer, me, tag)).or_default().push(pc);
                }
            } else if o.sync_p2p && call == Call::Sendrecv {
                // Takes part in the order of its channels but is not moved:
                // mark the channels as unmatched from here on by poisoning
                // the receiver side (simplest faithful choice).
                let dest = f.int(7, "dest").map_err(err)?;
                let stag = f.int(8, "send tag").map_err(err)?;
                let source = f.int(14, "source").map_err(err)?;
                let rtag = f.int(15, "recv tag").map_err(err)?;
                let me = me as i64;
                let nb = |line| P2pCall {
                    line,
                    blocking: false,
                    start: 0.0,
                    end: 0.0,
                };
                sends.entry((me, dest, stag)).or_default().push(nb(i + 1));
                recvs.entry((source, me, rtag)).or_default().push(nb(i + 1));
                if source < 0 || rtag < 0 {
                    wildcard[me as usize] = true;
                }
            }
        }
        let Some(init_end) = init_end else {
            return Err(TraceError::File {
                file: tr.file.clone(),
                msg: "no MPI_Init record (--sync-collectives needs each rank's start)".into(),
            });
        };
        inits.push(init_end);
        entries.push(v);
    }
    let t0 = inits.iter().copied().fold(f64::INFINITY, f64::min);
    let ncoll = entries.iter().map(Vec::len).max().unwrap_or(0);
    let mut delays = vec![Vec::new(); traces.len()];
    for k in 0..ncoll {
        let target = entries
            .iter()
            .filter_map(|v| v.get(k))
            .fold(f64::MIN, |a, &b| a.max(b));
        for (r, v) in entries.iter().enumerate() {
            if let Some(&x) = v.get(k) {
                delays[r].push(target - x);
            }
        }
    }
    let p2p = place_p2p(&sends, &recvs, &wildcard, traces.len());
    Ok(SyncPlan {
        start: inits.iter().map(|&t| t - t0).collect(),
        delays,
        p2p,
    })
}

#[cfg(test)]
mod tests {
    use super::super::TraceOptions;
    use super::*;

    fn call(line: usize, blocking: bool, start: f64, end: f64) -> P2pCall {
        P2pCall {
            line,
            blocking,
            start,
            end,
        }
    }

    #[test]
    fn blocking_pairs_meet_where_both_calls_have_started() {
        let mut sends = HashMap::new();
        let mut recvs = HashMap::new();
        // rank 0 sends at 10..20 (line 2); rank 1 receives at 15..30 (line 5)
        sends.insert(
            (0, 1, 5),
            vec![call(2, true, 10.0, 20.0), call(3, false, 40.0, 41.0)],
        );
        recvs.insert(
            (0, 1, 5),
            vec![call(5, true, 15.0, 30.0), call(6, true, 40.0, 50.0)],
        );
        let p = place_p2p(&sends, &recvs, &[false, false], 2);
        assert_eq!(p[0], HashMap::from([(2, 5.0)]));
        assert_eq!(
            p[1],
            HashMap::from([(5, 0.0)]),
            "the non-blocking send's pair stays"
        );
        // a rank that receives from any source is left out
        assert!(place_p2p(&sends, &recvs, &[false, true], 2)
            .iter()
            .all(HashMap::is_empty));
    }

    fn trace(text: &str) -> RankTrace {
        RankTrace {
            file: "t/pmpi-trace-rank-1.txt".into(),
            text: text.into(),
            lines: text.lines().map(str::to_string).collect(),
        }
    }

    #[test]
    fn clock_offsets_and_start_skews() {
        let o = TraceOptions {
            sync_collectives: true,
            ..TraceOptions::default()
        };
        let mut ctx = Ctx {
            o: &o,
            warnings: Vec::new(),
            err: None,
            use_cpu: false,
        };
        let r0 = trace("# clockdiff: 0\nMPI_Init:-:1000:2000:100\nMPI_Barrier:220:0,0,2:230\n");
        let r1 = trace("# clockdiff: 2.5\nMPI_Init:-:1000:2000:100\nMPI_Barrier:210:0,0,2:230\n");
        assert_eq!(clock_offset_us(&r1, &mut ctx).unwrap(), 2.5);
        assert!(clock_offset_us(&trace("# clockdiff: x\n"), &mut ctx).is_err());
        assert_eq!(
            clock_offset_us(&trace("MPI_Init:-:1:2:3\n"), &mut ctx).unwrap(),
            0.0
        );
        assert_eq!(ctx.warnings.len(), 1);
        // rank 1 left Init 2.5 us later on the common clock and entered the
        // barrier at 212.5 against rank 0's 220
        let plan = sync_targets(&[r0, r1], &mut ctx).unwrap();
        assert_eq!(plan.start, [0.0, 2.5]);
        assert_eq!(plan.delays, [vec![0.0], vec![7.5]]);
    }
}
