//! The trace translator: the per-rank state machine of docs/model/schedgen.md 4.4-4.7
//! plus the extensions (more collectives) and the thesis's calibration
//! methods (docs/calibration.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::reader::{recognise, Call, Fields, Recognised, TraceError};
use crate::calib::linkmodel::LinkLayer;
use crate::calib::pinning::{IntervalSet, PinningModel};
use crate::collectives::{self, Coll as LibColl, Library};
use crate::goal::{maketag, Counts, DepKind, GoalWriter, Label, Prelude};
use crate::patterns;

/// Options of trace mode (docs/model/schedgen.md section 1 trace options, plus ours).
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// Multiplier from trace time units (microseconds) to schedule units.
    pub timemult: f64,
    /// Stop each rank after this many translated collectives (0 = all).
    pub nops: u64,
    /// Extrapolation factor E (>= 1).
    pub extr: u32,
    /// Debug comments in the GOAL file.
    pub print: bool,
    pub nop2p: bool,
    pub nocolls: bool,
    pub nbcify: i64,
    /// `--cpu`.
    pub cpu: u64,
    pub prelude: Option<Prelude>,
    /// Unknown MPI calls are errors instead of warnings.
    pub strict: bool,
    /// Thesis Schedgen1.1 tags: p2p tags as in the trace, collectives
    /// 1000000 + n (no communicator in the tag).
    pub raw_tags: bool,
    /// Calibration 1: memory pinning calcs before p2p transfers.
    pub pinning: Option<PinningModel>,
    /// Calibration 3: MPI call durations minus the link-layer time of the
    /// network the schedule will be simulated on ([`LinkLayer::None`] for
    /// the LogGOPS backend at zero parameters) as calcs.
    pub durations: Option<LinkLayer>,
    /// Calibration 4: synchronised collectives on the traces' common clock
    /// (absolute times corrected by each file's `# clockdiff:`); each rank
    /// also starts with a calc of its start skew (see [`start_skews_us`]).
    pub sync_collectives: bool,
    /// Calibration 4 for point-to-point: with `durations`, a blocking
    /// Send/Recv pair's operations are placed where both calls overlap on
    /// the common clock (implies the common clock and the start skew).
    pub sync_p2p: bool,
    /// `--collectives`: the textbook algorithms, or those Open MPI / MPICH
    /// would pick for each call (crate::collectives).
    pub collectives: Library,
    /// Fail when the traces declare more ranks than files exist.
    pub require_all: bool,
    /// `--traces-start FILE`: resume positions (read, then rewritten).
    pub start_file: Option<PathBuf>,
    /// `--compute`: how a computation gap between two MPI calls is
    /// measured. [`Compute::Wall`] (the reference's, and this library's
    /// default) or [`Compute::Cpu`] (the thread CPU time the tracer records
    /// beside the wall times; traces without it fall back to wall time with
    /// a warning).
    pub compute: Compute,
}

/// How the computation between two MPI calls is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// The wall-clock gap: next call's start minus the previous call's end.
    Wall,
    /// The thread CPU time used in the gap (the trace's `:cpu=C0:C1`
    /// fields), at most the wall-clock gap. Not inflated when the rank
    /// waited for a core; a rank that sleeps computes nothing.
    Cpu,
}

/// The names `--compute` accepts.
pub const COMPUTE_NAMES: &[&str] = &["cpu", "wall"];

impl Compute {
    pub fn by_name(s: &str) -> Option<Compute> {
        match s {
            "cpu" => Some(Compute::Cpu),
            "wall" => Some(Compute::Wall),
            _ => None,
        }
    }
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            timemult: 1000.0,
            nops: 0,
            extr: 1,
            print: false,
            nop2p: false,
            nocolls: false,
            nbcify: 0,
            cpu: 0,
            prelude: None,
            strict: false,
            raw_tags: false,
            pinning: None,
            durations: None,
            sync_collectives: false,
            sync_p2p: false,
            collectives: Library::Textbook,
            require_all: false,
            start_file: None,
            compute: Compute::Wall,
        }
    }
}

/// The translated schedule and what was noticed on the way.
#[derive(Debug, Clone)]
pub struct Translation {
    pub goal: String,
    pub counts: Counts,
    /// Warnings (unknown calls, skipped collectives, missing ranks, ...),
    /// each naming file and line where there is one.
    pub warnings: Vec<String>,
    /// The trace files used, rank order.
    pub files: Vec<PathBuf>,
}

/// File name of rank `h` given rank 0's name (4.1): the `-0...` run is
/// replaced by `-h`. Errors if `-0` does not occur exactly once in the file
/// name (the directory may contain any, e.g. `/tmp/run-0/`) or the name is a
/// `.bz2` file.
pub fn trace_file_names(first: &Path, h: usize) -> Result<PathBuf, TraceError> {
    let Some(name) = first.file_name() else {
        return Err(TraceError::File {
            file: first.to_path_buf(),
            msg: "not a file name".into(),
        });
    };
    let dir = first.parent().unwrap_or(Path::new(""));
    let s = name.to_string_lossy();
    if s.contains(".bz2") {
        return Err(TraceError::File {
            file: first.to_path_buf(),
            msg: "compressed (.bz2) traces are not supported; decompress them first".into(),
        });
    }
    let hits: Vec<usize> = s.match_indices("-0").map(|(i, _)| i).collect();
    if hits.len() != 1 {
        return Err(TraceError::File {
            file: first.to_path_buf(),
            msg: format!(
                "the file name of rank 0's trace must contain `-0` exactly once (found {}), \
                 e.g. pmpi-trace-rank-0.txt",
                hits.len()
            ),
        });
    }
    let i = hits[0];
    let rest = &s[i + 1..];
    let zeros = rest.bytes().take_while(|&b| b == b'0').count();
    Ok(dir.join(format!("{}-{}{}", &s[..i], h, &rest[zeros..])))
}

/// One rank's trace, kept in memory.
struct RankTrace {
    file: PathBuf,
    text: String,
    lines: Vec<String>,
}

/// One line of a trace with its number and the byte offset just after it.
struct Record<'a> {
    lineno: usize,
    text: &'a str,
    end: u64,
}

/// Splits `text[from..]` into records; line numbers continue the count of
/// newlines before `from`.
fn records_from(text: &str, from: usize) -> impl Iterator<Item = Record<'_>> {
    let mut from = from.min(text.len());
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let mut lineno = text.as_bytes()[..from]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    let mut pos = from;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let rest = &text[pos..];
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], pos + i + 1),
            None => (rest, text.len()),
        };
        lineno += 1;
        pos = next;
        Some(Record {
            lineno,
            text: line.strip_suffix('\r').unwrap_or(line),
            end: next as u64,
        })
    })
}

/// `--traces-start` state: per rank, the byte offset to continue from and
/// the t0 to continue with (docs/model/schedgen.md 4.7).
#[derive(Debug, Clone)]
pub struct StartFile {
    pub entries: Vec<(u64, f64)>,
}

impl StartFile {
    /// Reads FILE; a missing file means offset 0 and time 0 for every rank.
    pub fn read(path: &Path) -> Result<Self, TraceError> {
        if !path.exists() {
            return Ok(StartFile {
                entries: Vec::new(),
            });
        }
        let text = crate::input::read_text_limited(path, crate::input::MAX_SMALL_TEXT_BYTES)
            .map_err(|msg| TraceError::File {
                file: path.to_path_buf(),
                msg,
            })?;
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let mut it = line.split_whitespace();
            let off = it.next().and_then(|x| x.parse::<u64>().ok());
            let t = it.next().and_then(|x| x.parse::<f64>().ok());
            match (off, t) {
                (Some(o), Some(t)) => entries.push((o, t)),
                _ => {
                    return Err(TraceError::line(
                        path,
                        i + 1,
                        "expected `<byte offset> <time>`",
                    ))
                }
            }
        }
        Ok(StartFile { entries })
    }

    fn get(&self, h: usize) -> (u64, f64) {
        self.entries.get(h).copied().unwrap_or((0, 0.0))
    }

    /// The file's text: one `<offset> <time>` line per rank, the time with
    /// up to 30 significant digits (C's `%.30g`).
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(o, t)| format!("{o} {}\n", fmt_g30(*t)))
            .collect()
    }
}

/// C `printf("%.30g")` of a double.
pub fn fmt_g30(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return format!("{v}");
    }
    let sci = format!("{:.29e}", v);
    let (mant, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..30).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    } else {
        trim(&format!("{:.*}", (29 - exp).max(0) as usize, v))
    }
}

/// A collective's fields relevant to the translation.
struct Coll {
    start: f64,
    end: f64,
    comm_handle: i64,
    comm_size: i64,
}

fn coll_fields(call: Call, f: &Fields) -> Result<Coll, String> {
    // (handle field, size field, end field) for the fixed layouts of 4.2;
    // variable layouts (counts arrays) are located from the end of the line.
    let n = f.len() - 1;
    let (h, s, e) = match call {
        Call::Barrier => (2, 4, 5),
        Call::Allreduce => (9, 11, 12),
        Call::Iallreduce => (9, 11, 13),
        Call::Bcast => (8, 10, 11),
        Call::Allgather | Call::Alltoall => (12, 14, 15),
        Call::Reduce => (10, 12, 13),
        Call::Gather | Call::Scatter => (13, 15, 16),
        // comm triple is the last three fields before the end time.
        _ => (n.saturating_sub(3), n.saturating_sub(1), n),
    };
    Ok(Coll {
        start: f.time(1, "start time")?,
        end: f.time(e, "end time")?,
        comm_handle: f.int(h, "communicator handle")?,
        comm_size: f.int(s, "communicator size")?,
    })
}

fn is_collective(call: Call) -> bool {
    matches!(
        call,
        Call::Barrier
            | Call::Allreduce
            | Call::Iallreduce
            | Call::Bcast
            | Call::Allgather
            | Call::Reduce
            | Call::Alltoall
            | Call::Alltoallv
            | Call::Allgatherv
            | Call::Gather
            | Call::Gatherv
            | Call::Scatter
            | Call::Scatterv
            | Call::ReduceScatter
    )
}

fn is_p2p(call: Call) -> bool {
    matches!(
        call,
        Call::Send
            | Call::Rsend
            | Call::Recv
            | Call::Isend
            | Call::Irecv
            | Call::Sendrecv
            | Call::Wait
            | Call::Waitall
    )
}

/// Reads the count array that starts at field `k` (a pointer, then P
/// values) and returns the values and the next field index.
fn count_array(f: &Fields, k: usize, p: usize, what: &str) -> Result<(Vec<i64>, usize), String> {
    let mut v = Vec::with_capacity(p.min(f.len()));
    for i in 0..p {
        v.push(f.int(k + 1 + i, what)?);
    }
    Ok((v, k + 1 + p))
}

/// Largest message the translator writes: the reference computes sizes in
/// a C `int`, and GOAL sizes from traces are kept in that range (a larger
/// product used to wrap to a negative or zero size).
pub const MAX_MESSAGE_BYTES: i64 = i32::MAX as i64;

/// `count * datatype size` in bytes, checked: both non-negative and the
/// product at most [`MAX_MESSAGE_BYTES`].
pub fn message_bytes(count: i64, dsize: i64) -> Result<i32, String> {
    if count < 0 {
        return Err(format!("negative count {count}"));
    }
    if dsize < 0 {
        return Err(format!("negative datatype size {dsize}"));
    }
    match count.checked_mul(dsize) {
        Some(b) if b <= MAX_MESSAGE_BYTES => Ok(b as i32),
        _ => Err(format!(
            "message of {count} x {dsize} bytes is larger than {MAX_MESSAGE_BYTES} bytes \
             (the translator's limit, a C int as in the reference)"
        )),
    }
}

/// `message_bytes` of the count in field `ck` and the datatype size in `dk`.
fn size_of(f: &Fields, ck: usize, cw: &str, dk: usize, dw: &str) -> Result<i32, String> {
    let c = f.int(ck, cw)?;
    let d = f.int(dk, dw)?;
    message_bytes(c, d).map_err(|e| format!("fields {ck} ({cw}) and {dk} ({dw}): {e}"))
}

/// Per-peer sizes of a counts array times a datatype size.
fn sizes_of(counts: &[i64], dsize: i64, what: &str) -> Result<Vec<i32>, String> {
    counts
        .iter()
        .map(|&c| message_bytes(c, dsize).map_err(|e| format!("{what}: {e}")))
        .collect()
}

/// A root rank read from a trace must name one of the `p` ranks.
fn check_root(root: i32, p: i32) -> Result<i32, String> {
    if (0..p).contains(&root) {
        Ok(root)
    } else {
        Err(format!("root {root} is outside 0..{}", p - 1))
    }
}

/// Per-rank translation state (4.4).
struct RankState {
    t0: f64,
    after: Vec<(Option<Label>, DepKind)>,
    before: Vec<(Option<Label>, DepKind)>,
    pending: HashMap<u64, Label>,
    nops: u64,
    /// Schedule time still to be taken out of later gaps (sync collectives).
    debt: u64,
    pins: IntervalSet,
    init_end: Option<f64>,
    /// Thread CPU time (ns) at the end of the call that started the current
    /// gap (with `Compute::Cpu`; `None` until known).
    cpu0: Option<u64>,
    /// The current record's CPU times (ns) at the call and at its return.
    rec_cpu: (Option<u64>, Option<u64>),
}

impl RankState {
    fn new() -> Self {
        RankState {
            t0: 0.0,
            after: Vec::new(),
            before: Vec::new(),
            pending: HashMap::new(),
            nops: 0,
            debt: 0,
            pins: IntervalSet::new(),
            init_end: None,
            cpu0: None,
            rec_cpu: (None, None),
        }
    }
}

struct Ctx<'a> {
    o: &'a TraceOptions,
    warnings: Vec<String>,
    /// The first error found by a helper that cannot return one (a
    /// negative or too large time); checked after every trace line.
    err: Option<TraceError>,
    /// Gaps are measured in thread CPU time (`Compute::Cpu` and every trace
    /// has CPU times).
    use_cpu: bool,
}

impl Ctx<'_> {
    /// Converts a trace duration (us) to schedule units, rounding half away
    /// from zero. A negative duration (the trace's times go backwards) or
    /// one that does not fit in 64 bits is an error (recorded in `err`):
    /// the reference wraps it to a huge unsigned value, which gave a
    /// schedule whose times overflow.
    fn units(&mut self, us: f64, file: &Path, line: usize) -> u64 {
        let v = (us * self.o.timemult).round();
        if v.is_nan() || v < 0.0 {
            self.fail(TraceError::line(
                file,
                line,
                format!(
                    "negative operation time {v} (the times in the trace go backwards; \
                     the reference would write it as a huge unsigned number)"
                ),
            ));
            0
        } else if v >= u64::MAX as f64 {
            self.fail(TraceError::line(
                file,
                line,
                format!("operation time {v} does not fit in 64 bits"),
            ));
            0
        } else {
            v as u64
        }
    }

    fn fail(&mut self, e: TraceError) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Closes a gap at (tb, te) (4.4) and returns the calc's label.
    fn close_gap(
        &mut self,
        w: &mut GoalWriter,
        st: &mut RankState,
        tb: f64,
        te: f64,
        at: (&Path, usize),
    ) -> Label {
        let wall = tb - st.t0;
        let us = match (self.use_cpu, st.cpu0, st.rec_cpu.0) {
            // CPU time of the gap, never more than its wall time (the two
            // clocks differ in resolution; a gap cannot use more CPU than
            // time passed on one thread).
            (true, Some(c0), Some(c1)) if wall >= 0.0 => {
                (c1.saturating_sub(c0) as f64 / 1000.0).min(wall)
            }
            _ => wall,
        };
        let mut dur = self.units(us, at.0, at.1);
        if st.debt > 0 && dur < (1u64 << 63) {
            let take = st.debt.min(dur);
            dur -= take;
            st.debt -= take;
        }
        let c = w.calc_cpu(dur, self.o.cpu);
        for (x, k) in st.before.drain(..) {
            if let Some(x) = x {
                w.dep(x, c, k);
            }
        }
        for (y, k) in st.after.drain(..) {
            if let Some(y) = y {
                w.dep(c, y, k);
            }
        }
        st.t0 = te;
        st.cpu0 = st.rec_cpu.1.or(st.rec_cpu.0);
        c
    }

    /// Link-layer time of the given (is_send, size) operations, in schedule
    /// units.
    fn link_units(&self, ops: &[(bool, i32)]) -> u64 {
        let Some(m) = self.o.durations else { return 0 };
        if m == LinkLayer::None {
            return 0;
        }
        let ps: u64 = ops
            .iter()
            .map(|&(send, size)| {
                let b = size.max(0) as u64;
                if send {
                    m.send_time_ps(b)
                } else {
                    m.recv_time_ps(b)
                }
            })
            .sum();
        // ps -> trace us -> schedule units.
        (ps as f64 * 1e-6 * self.o.timemult).round() as u64
    }

    /// Writes the calibration calcs of a p2p call after its gap calc:
    /// pinning (new buffer bytes) and the call's duration minus link time.
    /// Each calc requires the one before (the first the gap), and the call's
    /// operations require the last, as in the thesis's ringtest schedule.
    /// With `split_us` (synchronised p2p) the duration is cut where the
    /// operation happens: a calc of `split_us` before the operation and the
    /// rest (minus link time) after it; the label of that last calc is
    /// returned, the rank continues from it.
    #[allow(clippy::too_many_arguments)]
    fn p2p_extras(
        &mut self,
        w: &mut GoalWriter,
        st: &mut RankState,
        gap: Label,
        ops: &[(Label, bool, i32)],
        buffers: &[(u64, i32)],
        start: f64,
        end: f64,
        split_us: Option<f64>,
        at: (&Path, usize),
    ) -> Option<Label> {
        let mut chain: Vec<Label> = Vec::new();
        if let Some(pm) = self.o.pinning {
            let new: u64 = buffers
                .iter()
                .map(|&(a, len)| st.pins.insert(a, len.max(0) as u64))
                .sum();
            if new > 0 {
                let u = self.units(pm.delay_us(new), at.0, at.1);
                chain.push(w.calc_cpu(u, self.o.cpu));
            }
        }
        let mut post = None;
        if self.o.durations.is_some() {
            let d = self.units(end - start, at.0, at.1);
            let link = self.link_units(&ops.iter().map(|&(_, s, z)| (s, z)).collect::<Vec<_>>());
            match split_us {
                None => chain.push(w.calc_cpu(d.saturating_sub(link), self.o.cpu)),
                Some(pre_us) => {
                    let pre = self.units(pre_us, at.0, at.1).min(d);
                    let rest = d - pre;
                    // The link time is taken from the part after the
                    // operation first (the transfer happens there).
                    let after = rest.saturating_sub(link);
                    let pre = pre.saturating_sub(link.saturating_sub(rest));
                    chain.push(w.calc_cpu(pre, self.o.cpu));
                    post = Some(after);
                }
            }
        }
        if let Some(&last) = chain.last() {
            for &(op, _, _) in ops {
                w.requires(op, last);
            }
            let mut prev = gap;
            for &c in &chain {
                w.requires(c, prev);
                prev = c;
            }
        }
        post.map(|after| {
            let c = w.calc_cpu(after, self.o.cpu);
            for &(op, _, _) in ops {
                w.requires(c, op);
            }
            c
        })
    }
}

/// Translates the traces whose rank-0 file is `first`.
pub fn translate(first: &Path, o: &TraceOptions) -> Result<Translation, TraceError> {
    if o.extr < 1 {
        return Err(TraceError::Other("--traces-extr must be at least 1".into()));
    }
    if o.nbcify < 0 {
        return Err(TraceError::Other(format!(
            "--traces-nbcify must be non-negative (got {})",
            o.nbcify
        )));
    }
    let traces = read_traces(first)?;
    let hn = traces.len();
    let mut ctx = Ctx {
        o,
        warnings: Vec::new(),
        err: None,
        use_cpu: false,
    };
    check_missing_ranks(first, &traces, &mut ctx)?;
    if o.compute == Compute::Cpu {
        let without: Vec<&RankTrace> = traces.iter().filter(|t| !has_cpu_times(t)).collect();
        if without.is_empty() {
            ctx.use_cpu = true;
        } else {
            ctx.warnings.push(format!(
                "{} of {hn} trace file(s) have no CPU times (no `:cpu=` fields, e.g. {}: written \
                 by liballprof or an older mpi-tracer); computation is measured in wall-clock \
                 time (--compute wall) instead of thread CPU time",
                without.len(),
                without[0].file.display()
            ));
        }
    }

    let sync = if o.sync_collectives || o.sync_p2p {
        Some(sync_targets(&traces, &mut ctx)?)
    } else {
        None
    };
    translate_all(o, traces, hn, ctx, sync)
}

/// Longest trace line accepted (a counts array of a million ranks fits).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Reads the consecutive trace files whose rank-0 file is `first` (4.1).
fn read_traces(first: &Path) -> Result<Vec<RankTrace>, TraceError> {
    let mut traces = Vec::new();
    loop {
        let f = trace_file_names(first, traces.len())?;
        match std::fs::metadata(&f) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) if !traces.is_empty() => {
                return Err(TraceError::File {
                    file: f,
                    msg: e.to_string(),
                })
            }
            _ => {}
        }
        // Bounded: regular files of at most MAX_TRACE_BYTES.
        let bytes =
            crate::input::read_limited(&f, crate::input::MAX_TRACE_BYTES).map_err(|msg| {
                TraceError::File {
                    file: f.clone(),
                    msg,
                }
            })?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        drop(bytes);
        if let Some(i) = text.lines().position(|l| l.len() > MAX_LINE_BYTES) {
            return Err(TraceError::line(
                &f,
                i + 1,
                format!("line longer than {MAX_LINE_BYTES} bytes: not a liballprof trace"),
            ));
        }
        // An empty file, or one without a single MPI call line, is not a
        // trace (it used to give an empty schedule with exit 0).
        if !text
            .lines()
            .any(|l| matches!(recognise(l), Ok(Recognised::Known { .. })))
        {
            return Err(TraceError::File {
                file: f,
                msg: if text.trim().is_empty() {
                    "the trace is empty".into()
                } else {
                    "no MPI call records (lines like `MPI_Init:...`): not a liballprof trace".into()
                },
            });
        }
        let lines = text.lines().map(str::to_string).collect();
        traces.push(RankTrace {
            file: f,
            text,
            lines,
        });
    }
    if traces.is_empty() {
        return Err(TraceError::File {
            file: first.to_path_buf(),
            msg: "trace file not found".into(),
        });
    }
    Ok(traces)
}

fn translate_all(
    o: &TraceOptions,
    traces: Vec<RankTrace>,
    hn: usize,
    mut ctx: Ctx,
    sync: Option<SyncPlan>,
) -> Result<Translation, TraceError> {
    let start_file = match &o.start_file {
        Some(p) => Some(StartFile::read(p)?),
        None => None,
    };
    let e_total = o.extr as usize;
    let mut w = GoalWriter::new((hn * e_total) as i64, o.cpu, o.prelude);
    let mut stops: Vec<Option<(u64, f64)>> = vec![None; hn];
    for e in 0..e_total {
        for (h, tr) in traces.iter().enumerate() {
            let delays = sync
                .as_ref()
                .map(|s| (s.start[h], s.delays[h].as_slice(), &s.p2p[h]));
            let start = start_file.as_ref().map(|f| f.get(h));
            if let Some(s) = translate_rank(&mut w, &mut ctx, tr, h, e, hn, delays, start)? {
                stops[h] = Some(s);
            }
            if w.is_full() {
                return Err(TraceError::File {
                    file: tr.file.clone(),
                    msg: format!(
                        "the schedule exceeds the {} bytes trace2goal builds in memory",
                        crate::goal::MAX_GOAL_BYTES
                    ),
                });
            }
        }
    }
    if let (Some(path), Some(old)) = (&o.start_file, &start_file) {
        // Rewrite: where the early stop was reached the new position,
        // otherwise the old values.
        let entries = (0..hn)
            .map(|h| stops[h].unwrap_or_else(|| old.get(h)))
            .collect();
        std::fs::write(path, StartFile { entries }.render()).map_err(|e| TraceError::File {
            file: path.clone(),
            msg: format!("cannot rewrite start file: {e}"),
        })?;
    }
    let (goal, counts) = w.finish();
    Ok(Translation {
        goal,
        counts,
        warnings: ctx.warnings,
        files: traces.into_iter().map(|t| t.file).collect(),
    })
}

/// The world size the traces declare: the largest communicator size on
/// any MPI_Comm_rank / MPI_Comm_size line of rank 0.
fn declared_world_size(tr: &RankTrace) -> Option<i64> {
    tr.lines
        .iter()
        .filter(|l| l.starts_with("MPI_Comm_rank:") || l.starts_with("MPI_Comm_size:"))
        .filter_map(|l| Fields::split(l).int(4, "comm size").ok())
        .max()
}

fn check_missing_ranks(
    first: &Path,
    traces: &[RankTrace],
    ctx: &mut Ctx,
) -> Result<(), TraceError> {
    let Some(world) = declared_world_size(&traces[0]) else {
        return Ok(());
    };
    let h = traces.len() as i64;
    if world <= h {
        return Ok(());
    }
    // List at most a few names: the size comes from the trace and may be
    // anything up to 2^63.
    const LIST: i64 = 8;
    let mut missing: Vec<String> = (h..world.min(h.saturating_add(LIST)))
        .map(|r| trace_file_names(first, r as usize).map(|p| p.display().to_string()))
        .collect::<Result<_, _>>()?;
    if world - h > LIST {
        missing.push(format!("... ({} more)", world - h - LIST));
    }
    let msg = format!(
        "the traces describe {world} ranks (communicator size in {}) but only {h} trace file(s) exist; \
         missing: {}",
        traces[0].file.display(),
        missing.join(", ")
    );
    if ctx.o.require_all {
        return Err(TraceError::Other(msg));
    }
    ctx.warnings.push(format!(
        "{msg}; translating the {h} available rank(s) only (collectives over {world} ranks are skipped)"
    ));
    Ok(())
}

/// Calibration 4's plan: per rank, its start skew and the delay (trace us)
/// to insert before each translated collective so that every rank enters
/// it at the same time on the common clock.
struct SyncPlan {
    /// Clock-corrected MPI_Init return minus the earliest rank's, us.
    start: Vec<f64>,
    delays: Vec<Vec<f64>>,
    /// Per rank: line number of a blocking Send/Recv -> time from the
    /// call's start to its operation, us (only with `sync_p2p`).
    p2p: Vec<HashMap<usize, f64>>,
}

/// A point-to-point call as the p2p synchronisation sees it.
struct P2pCall {
    line: usize,
    blocking: bool,
    start: f64,
    end: f64,
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
fn place_p2p(
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
fn clock_offset_us(tr: &RankTrace, ctx: &mut Ctx) -> Result<f64, TraceError> {
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
fn sync_targets(traces: &[RankTrace], ctx: &mut Ctx) -> Result<SyncPlan, TraceError> {
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

/// Per rank, the start skew `--sync-collectives` gives it: its MPI_Init
/// return on rank 0's clock minus the earliest rank's, us. A rank's
/// simulated run time is then its finish time minus this (what
/// `mpi-tracer compare --start-skew` subtracts).
pub fn start_skews_us(first: &Path) -> Result<Vec<f64>, TraceError> {
    let o = TraceOptions {
        sync_collectives: true,
        ..TraceOptions::default()
    };
    let traces = read_traces(first)?;
    let mut ctx = Ctx {
        o: &o,
        warnings: Vec::new(),
        err: None,
        use_cpu: false,
    };
    Ok(sync_targets(&traces, &mut ctx)?.start)
}

/// Whether a trace records thread CPU times: its MPI_Init record ends in
/// `:cpu=...` (the tracer writes them on every record or on none).
fn has_cpu_times(tr: &RankTrace) -> bool {
    tr.lines
        .iter()
        .find(|l| l.starts_with("MPI_Init:"))
        .is_some_and(|l| l.contains(":cpu="))
}

/// The `:cpu=C0[:C1]` fields at the end of a record (ns; `-` unknown).
/// `Ok(None)` when the record has none.
#[allow(clippy::type_complexity)]
fn record_cpu(line: &str) -> Result<Option<(Option<u64>, Option<u64>)>, String> {
    let Some(i) = line.rfind(":cpu=") else {
        return Ok(None);
    };
    let mut it = line[i + 5..].split(':');
    let val = |s: Option<&str>, what: &str| -> Result<Option<u64>, String> {
        match s {
            None | Some("-") => Ok(None),
            Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                format!("{what} `{v}` is not a CPU time (integer nanoseconds or `-`)")
            }),
        }
    };
    let c0 = val(it.next(), "cpu=")?;
    let c1 = val(it.next(), "the CPU time at return after cpu=")?;
    if it.next().is_some() {
        return Err("more than two values after `cpu=` (expected `:cpu=C0:C1`)".into());
    }
    Ok(Some((c0, c1)))
}

/// Display name used in the `--traces-print` comments.
fn print_name(call: Call) -> &'static str {
    match call {
        Call::Send => "Send",
        Call::Rsend => "Rsend",
        Call::Recv => "Recv",
        Call::Isend => "Isend",
        Call::Irecv => "Irecv",
        Call::Sendrecv => "Sendrecv",
        Call::Barrier => "Barrier",
        Call::Allreduce => "Allreduce",
        Call::Iallreduce => "Iallreduce",
        Call::Bcast => "Bcast",
        Call::Allgather => "Allgather",
        Call::Reduce => "Reduce",
        Call::Alltoall => "Alltoall",
        Call::Alltoallv => "Alltoallv",
        Call::Allgatherv => "Allgatherv",
        Call::Gather => "Gather",
        Call::Gatherv => "Gatherv",
        Call::Scatter => "Scatter",
        Call::Scatterv => "Scatterv",
        Call::ReduceScatter => "Reduce_scatter",
        _ => "call",
    }
}

#[allow(clippy::too_many_arguments)]
fn translate_rank(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    tr: &RankTrace,
    h: usize,
    e: usize,
    hn: usize,
    sync: Option<(f64, &[f64], &HashMap<usize, f64>)>,
    start: Option<(u64, f64)>,
) -> Result<Option<(u64, f64)>, TraceError> {
    let o = ctx.o;
    let sync_delays = sync.map(|(_, d, _)| d);
    let me_block = (h + hn * e) as i64;
    let total = (hn * o.extr as usize) as i32;
    let off = (hn * e) as i32;
    w.start_rank(me_block);
    let mut st = RankState::new();
    let mut coll_index = 0usize;
    let mut skipped = 0usize;
    let mut stop = None;
    // With --traces-start, the first line is processed, then reading jumps
    // to the saved offset with t0 := the saved time (4.7).
    let records: Box<dyn Iterator<Item = Record>> = match start {
        Some((off, _)) => Box::new(
            records_from(&tr.text, 0)
                .take(1)
                .chain(records_from(&tr.text, off as usize)),
        ),
        None => Box::new(records_from(&tr.text, 0)),
    };
    let mut pending_t0 = start.map(|(_, t)| t);
    for (idx, rec) in records.enumerate() {
        if let Some(e) = ctx.err.take() {
            return Err(e);
        }
        if idx == 1 {
            if let Some(t) = pending_t0.take() {
                st.t0 = t;
                // The saved position has no CPU time: that gap is wall time.
                st.cpu0 = None;
            }
        }
        let lineno = rec.lineno;
        let line = rec.text;
        let at = (tr.file.as_path(), lineno);
        let lerr = |m: String| TraceError::line(&tr.file, lineno, m);
        let (call, canonical) = match recognise(line).map_err(lerr)? {
            Recognised::Known { call, canonical } => (call, canonical),
            Recognised::NotACall => continue,
            Recognised::Unknown(name) => {
                let msg = format!(
                    "{}:{lineno}: unknown MPI call `{name}` ignored",
                    tr.file.display()
                );
                if o.strict {
                    return Err(lerr(format!("unknown MPI call `{name}` (--strict)")));
                }
                if e == 0 {
                    ctx.warnings.push(msg);
                }
                continue;
            }
        };
        let name = line.split(':').next().unwrap_or("");
        if name != canonical
            && e == 0
            && !(name == "MPI_Ssend" || name.len() > 14 && canonical.starts_with(&name[..14]))
        {
            ctx.warnings.push(format!(
                "{}:{lineno}: `{name}` is treated as {canonical} (same function number in the reference)",
                tr.file.display()
            ));
        }
        if o.nop2p && is_p2p(call) || o.nocolls && (is_collective(call)) {
            continue;
        }
        if ctx.use_cpu {
            st.rec_cpu = match record_cpu(line).map_err(lerr)? {
                Some(c) => c,
                None if call == Call::Ignored => (None, None),
                None => {
                    return Err(lerr(
                        "no `:cpu=` fields on this record although the trace's MPI_Init has \
                         them (a damaged trace; --compute wall ignores them)"
                            .into(),
                    ))
                }
            };
        }
        let f = Fields::split(line);
        let tag_of = |comm: i64, t: i64| {
            if o.raw_tags {
                t as u64
            } else {
                maketag(comm, t)
            }
        };
        match call {
            Call::Ignored => {}
            Call::Init => {
                // The reference asserts t0 == 0 here (a second Init aborts it,
                // except right after a --traces-start jump to offset 0).
                if st.init_end.is_some() && st.t0 != 0.0 {
                    return Err(lerr("second MPI_Init in this trace".into()));
                }
                let end = f.time(4, "end time").map_err(lerr)?;
                st.t0 = end;
                st.cpu0 = st.rec_cpu.1.or(st.rec_cpu.0);
                st.init_end = Some(end);
                st.after = vec![(None, DepKind::Requires)];
                // Calibration 4: this rank starts when it left MPI_Init on
                // the common clock, so the first gap waits for the skew.
                let skew = sync.map_or(0.0, |(s, _, _)| s);
                if skew > 0.0 {
                    let u = ctx.units(skew, at.0, at.1);
                    if u > 0 {
                        let c = w.calc_cpu(u, o.cpu);
                        st.after = vec![(Some(c), DepKind::Requires)];
                    }
                }
            }
            Call::Send | Call::Rsend | Call::Recv | Call::Isend | Call::Irecv => {
                let start = f.time(1, "start time").map_err(lerr)?;
                let buf = f.addr(2, "buffer").map_err(lerr)?;
                let size = size_of(&f, 3, "count", 5, "datatype size").map_err(lerr)?;
                let peer = f.int32(7, "peer").map_err(lerr)?;
                let tag = if o.raw_tags {
                    f.tag32(8, "tag")
                } else {
                    f.int(8, "tag")
                }
                .map_err(lerr)?;
                let comm = f.int(9, "communicator").map_err(lerr)?;
                let end_field = if matches!(call, Call::Send | Call::Rsend) {
                    12
                } else {
                    13
                };
                let end = f.time(end_field, "end time").map_err(lerr)?;
                let is_send = matches!(call, Call::Send | Call::Rsend | Call::Isend);
                let peer = check_peer(peer, !is_send, off, total, hn).map_err(lerr)?;
                w.set_tag(tag_of(comm, tag));
                if o.print {
                    w.comment(&format!("{} begin", print_name(call)));
                }
                let op = if is_send {
                    w.send(size, peer)
                } else {
                    w.recv(size, peer)
                };
                st.before = vec![(Some(op), DepKind::Requires)];
                let gap = ctx.close_gap(w, &mut st, start, end, at);
                let split = sync.and_then(|(_, _, p)| p.get(&lineno)).copied();
                let post = ctx.p2p_extras(
                    w,
                    &mut st,
                    gap,
                    &[(op, is_send, size)],
                    &[(buf, size)],
                    start,
                    end,
                    split,
                    at,
                );
                let kind = if matches!(call, Call::Isend | Call::Irecv) {
                    let req = f.addr(12, "request").map_err(lerr)?;
                    st.pending.insert(req, op);
                    DepKind::IRequires
                } else {
                    DepKind::Requires
                };
                st.after = vec![(Some(post.unwrap_or(op)), kind)];
                if o.print {
                    w.comment(&format!("{} end", print_name(call)));
                }
            }
            Call::Wait => {
                let start = f.time(1, "start time").map_err(lerr)?;
                let req = f.addr(2, "request").map_err(lerr)?;
                let end = f.time(4, "end time").map_err(lerr)?;
                let Some(target) = st.pending.remove(&req) else {
                    continue;
                };
                if o.print {
                    w.comment("wait");
                }
                let wc = wait_calc(w, ctx, start, end, at);
                w.requires(wc, target);
                st.before = vec![(Some(wc), DepKind::Requires)];
                ctx.close_gap(w, &mut st, start, end, at);
                st.after = vec![(Some(wc), DepKind::Requires)];
            }
            Call::Waitall => {
                let start = f.time(1, "start time").map_err(lerr)?;
                let count = f.int(2, "count").map_err(lerr)?;
                let array = f.addr(3, "request array").map_err(lerr)?;
                let end = f.time(5, "end time").map_err(lerr)?;
                let wc = wait_calc(w, ctx, start, end, at);
                // The requests array[0..count] (8-byte handles) that are
                // pending, in array order. Looked up from the pending side:
                // `count` comes from the trace and may be up to 2^63 (a loop
                // over it hung, found by the fuzz test).
                let count = count.max(0) as u64;
                let mut hits: Vec<(u64, Label)> = st
                    .pending
                    .iter()
                    .filter_map(|(&req, &l)| {
                        let d = req.wrapping_sub(array);
                        (d % 8 == 0 && d / 8 < count).then_some((d / 8, l))
                    })
                    .collect();
                hits.sort_unstable();
                for (_, l) in hits {
                    w.requires(wc, l);
                }
                // Reference quirk: only the first request is forgotten.
                st.pending.remove(&array);
                st.before = vec![(Some(wc), DepKind::Requires)];
                ctx.close_gap(w, &mut st, start, end, at);
                st.after = vec![(Some(wc), DepKind::Requires)];
            }
            Call::Sendrecv => {
                let start = f.time(1, "start time").map_err(lerr)?;
                let sbuf = f.addr(2, "send buffer").map_err(lerr)?;
                let sb = size_of(&f, 3, "send count", 5, "send datatype size").map_err(lerr)?;
                let dest = f.int32(7, "dest").map_err(lerr)?;
                let stag = if o.raw_tags {
                    f.tag32(8, "send tag")
                } else {
                    f.int(8, "send tag")
                }
                .map_err(lerr)?;
                let rbuf = f.addr(9, "recv buffer").map_err(lerr)?;
                let rb = size_of(&f, 10, "recv count", 12, "recv datatype size").map_err(lerr)?;
                let source = f.int32(14, "source").map_err(lerr)?;
                let comm = f.int(16, "communicator").map_err(lerr)?;
                let end = f.time(20, "end time").map_err(lerr)?;
                // Reference quirk: the receive uses the send tag too.
                w.set_tag(tag_of(comm, stag));
                if o.print {
                    w.comment("Sendrecv begin");
                }
                let dest = check_peer(dest, false, off, total, hn).map_err(lerr)?;
                let source = check_peer(source, true, off, total, hn).map_err(lerr)?;
                let s = w.send(sb, dest);
                let r = w.recv(rb, source);
                st.before = vec![(Some(s), DepKind::Requires), (Some(r), DepKind::Requires)];
                let gap = ctx.close_gap(w, &mut st, start, end, at);
                ctx.p2p_extras(
                    w,
                    &mut st,
                    gap,
                    &[(s, true, sb), (r, false, rb)],
                    &[(sbuf, sb), (rbuf, rb)],
                    start,
                    end,
                    None,
                    at,
                );
                st.after = vec![(Some(s), DepKind::Requires), (Some(r), DepKind::Requires)];
                if o.print {
                    w.comment("Sendrecv end");
                }
            }
            Call::Finalize => {
                let start = f.time(1, "start time").map_err(lerr)?;
                st.before = vec![(None, DepKind::Requires)];
                ctx.close_gap(w, &mut st, start, start, at);
            }
            c if is_collective(c) => {
                let coll = coll_fields(c, &f).map_err(lerr)?;
                if coll.comm_size != hn as i64 {
                    skipped += 1;
                    if e == 0 && skipped == 1 {
                        ctx.warnings.push(format!(
                            "{}:{lineno}: {canonical} over a communicator of size {} skipped \
                             (only {hn} trace file(s))",
                            tr.file.display(),
                            coll.comm_size
                        ));
                    }
                    continue;
                }
                let t = 1_000_000 + st.nops as i64;
                let tag = if c == Call::Iallreduce || o.raw_tags {
                    t as u64
                } else {
                    maketag(coll.comm_handle, t)
                };
                w.set_tag(tag);
                if o.print {
                    w.comment(&format!("{} begin", print_name(c)));
                }
                w.clear_sets();
                let lib = o.collectives;
                let chosen = if lib == Library::Textbook {
                    None
                } else {
                    library_call(c, &f, total).map_err(lerr)?
                };
                match chosen {
                    Some(call) => {
                        let alg = collectives::choose(
                            lib,
                            call.coll,
                            total as i64,
                            call.count,
                            call.dsize,
                        )
                        .expect("a library set chooses");
                        if let Some(note) = alg.approximation() {
                            let msg = format!("{canonical}: {note}");
                            if !ctx.warnings.contains(&msg) {
                                ctx.warnings.push(msg);
                            }
                        }
                        collectives::write(w, lib, alg, &call, me_block as i32, total)
                            .map_err(lerr)?;
                    }
                    None => write_collective(w, c, &f, me_block as i32, total).map_err(lerr)?,
                }
                // Sync delay (calibration 4) is taken out of the collective's
                // own duration so the rank's total time is unchanged.
                let sync_us = sync_delays
                    .and_then(|d| d.get(coll_index))
                    .copied()
                    .unwrap_or(0.0);
                let sync_units = ctx.units(sync_us, at.0, at.1);
                let mut cdur = 0u64;
                let mut c_plain = true;
                if o.durations.is_some() {
                    let d = ctx.units(coll.end - coll.start, at.0, at.1);
                    let link = ctx.link_units(w.ops_since_clear());
                    cdur = d.saturating_sub(link);
                    c_plain = false;
                }
                if sync_units > 0 {
                    let take = sync_units.min(cdur);
                    cdur -= take;
                    match st.debt.checked_add(sync_units - take) {
                        Some(d) => st.debt = d,
                        None => return Err(lerr("synchronisation delays overflow 64 bits".into())),
                    }
                }
                let cl = if c_plain {
                    w.calc_plain(0)
                } else {
                    w.calc_cpu(cdur, o.cpu)
                };
                for x in w.end_set() {
                    w.requires(cl, x);
                }
                let start_set = w.start_set();
                for &x in &start_set {
                    st.before.push((Some(x), DepKind::Requires));
                }
                let mut vs = coll.start - o.nbcify as f64;
                let mut nbcify = o.nbcify;
                if vs < st.t0 {
                    vs = st.t0;
                    nbcify = (coll.start - st.t0).trunc() as i64;
                }
                if nbcify < 0 {
                    return Err(lerr(format!(
                        "the collective starts {} us before the end of the previous call \
                         (the times in the trace go backwards)",
                        nbcify.unsigned_abs()
                    )));
                }
                if nbcify != 0 {
                    let n = w.calc_cpu(nbcify as u64, o.cpu);
                    w.irequires(n, cl);
                }
                let gap = ctx.close_gap(w, &mut st, vs, coll.end, at);
                if sync_units > 0 {
                    let s = w.calc_cpu(sync_units, o.cpu);
                    w.requires(s, gap);
                    for &x in &start_set {
                        w.requires(x, s);
                    }
                }
                st.after = vec![(Some(cl), DepKind::Requires)];
                if c == Call::Iallreduce {
                    let req = f.time(12, "request").map_err(lerr)?;
                    st.pending.insert(req as u64, cl);
                }
                st.nops += 1;
                coll_index += 1;
                if o.print {
                    w.comment(&format!("{} end", print_name(c)));
                }
                if o.nops > 0 && st.nops >= o.nops {
                    stop = Some((rec.end, st.t0));
                    break;
                }
            }
            _ => {}
        }
    }
    if let Some(e) = ctx.err.take() {
        return Err(e);
    }
    if skipped > 1 && e == 0 {
        ctx.warnings.push(format!(
            "{}: {} more collective(s) over a communicator of another size than {hn} skipped",
            tr.file.display(),
            skipped - 1
        ));
    }
    w.end_rank();
    Ok(stop)
}

/// A point-to-point peer from a trace, shifted to the extrapolation copy
/// (`off`), must be one of the `total` ranks (a receive may use -1, any
/// source). A peer beyond the trace files found used to be written and only
/// failed when simulated.
fn check_peer(peer: i32, is_recv: bool, off: i32, total: i32, hn: usize) -> Result<i32, String> {
    if is_recv && peer == -1 {
        return Ok(-1);
    }
    if peer < 0 {
        return Err(format!(
            "peer {peer} is not a rank (MPI_PROC_NULL and other special ranks are not supported)"
        ));
    }
    if peer as usize >= hn {
        return Err(format!(
            "peer {peer} is outside 0..{}: only {hn} trace file(s) were found (the traces of \
             the other ranks are missing; see --require-all)",
            hn - 1
        ));
    }
    let p = peer + off;
    debug_assert!(p < total);
    Ok(p)
}

/// The calc standing for a Wait/Waitall: `calc 0`, or the call's duration
/// with the durations method (as in the thesis's ringtest schedule).
fn wait_calc(w: &mut GoalWriter, ctx: &mut Ctx, start: f64, end: f64, at: (&Path, usize)) -> Label {
    if ctx.o.durations.is_some() {
        let d = ctx.units(end - start, at.0, at.1);
        w.calc_cpu(d, ctx.o.cpu)
    } else {
        w.calc_plain(0)
    }
}

/// The call as the library decision rules see it, for the collectives
/// that have rules (None: the textbook mapping is used, e.g. the `v`
/// variants, Reduce_scatter, and Iallreduce, which Open MPI runs in its
/// non-blocking component).
fn library_call(c: Call, f: &Fields, p: i32) -> Result<Option<collectives::Call>, String> {
    let call =
        |coll, ck: usize, dk: usize, root: Option<usize>| -> Result<collectives::Call, String> {
            let count = f.int(ck, "count")?;
            let dsize = f.int(dk, "datatype size")?;
            // The same limits as the textbook translation (a C int).
            message_bytes(count, dsize).map_err(|e| format!("fields {ck} and {dk}: {e}"))?;
            let root = match root {
                Some(k) => check_root(f.int32(k, "root")?, p)?,
                None => 0,
            };
            Ok(collectives::Call {
                coll,
                count,
                dsize,
                root,
            })
        };
    Ok(Some(match c {
        Call::Barrier => collectives::Call {
            coll: LibColl::Barrier,
            count: 0,
            dsize: 0,
            root: 0,
        },
        Call::Allreduce => call(LibColl::Allreduce, 4, 6, None)?,
        Call::Bcast => call(LibColl::Bcast, 3, 5, Some(7))?,
        Call::Reduce => call(LibColl::Reduce, 4, 6, Some(9))?,
        Call::Allgather => call(LibColl::Allgather, 3, 5, None)?,
        Call::Alltoall => call(LibColl::Alltoall, 3, 5, None)?,
        // Gather: each rank's block is the send side; Scatter: the
        // receive side (the other side only matters at the root).
        Call::Gather => call(LibColl::Gather, 3, 5, Some(12))?,
        Call::Scatter => call(LibColl::Scatter, 8, 10, Some(12))?,
        _ => return Ok(None),
    }))
}

/// Writes a collective's communication pattern for rank `me` of `p` ranks.
fn write_collective(
    w: &mut GoalWriter,
    c: Call,
    f: &Fields,
    me: i32,
    p: i32,
) -> Result<(), String> {
    let pu = p as usize;
    match c {
        Call::Barrier => patterns::dissemination(w, me, p, 1),
        Call::Allreduce | Call::Iallreduce => {
            let size = size_of(f, 4, "count", 6, "datatype size")?;
            patterns::dissemination(w, me, p, size)
        }
        Call::Allgather => {
            let size = size_of(f, 3, "send count", 5, "send datatype size")?;
            patterns::dissemination(w, me, p, size)
        }
        Call::Alltoall => {
            let size = size_of(f, 3, "send count", 5, "send datatype size")?;
            patterns::linear_alltoall(w, me, p, size)
        }
        Call::Bcast => {
            let size = size_of(f, 3, "count", 5, "datatype size")?;
            let root = check_root(f.int32(7, "root")?, p)?;
            patterns::binomial_bcast(w, me, p, root, size)
        }
        Call::Reduce => {
            let size = size_of(f, 4, "count", 6, "datatype size")?;
            let root = check_root(f.int32(9, "root")?, p)?;
            patterns::binomial_reduce(w, me, p, root, size)
        }
        // Extensions. Layouts follow liballprof: a counts array is its
        // address followed by P values.
        Call::Alltoallv => {
            // start, sbuf, scounts(1+P), sdispls(1+P), sdt(3), rbuf,
            // rcounts(1+P), rdispls(1+P), rdt(3), comm(3), end
            let (sc, k) = count_array(f, 3, pu, "send counts")?;
            let (_, k) = count_array(f, k, pu, "send displacements")?;
            let ssize = f.int(k + 1, "send datatype size")?;
            let (rc, k) = count_array(f, k + 4, pu, "recv counts")?;
            let (_, k) = count_array(f, k, pu, "recv displacements")?;
            let rsize = f.int(k + 1, "recv datatype size")?;
            let sb = sizes_of(&sc, ssize, "send counts")?;
            let rb = sizes_of(&rc, rsize, "recv counts")?;
            linear_exchange(w, me, p, |t| sb[t], |s| rb[s]);
        }
        Call::Allgatherv => {
            // start, sbuf, scount, sdt(3), rbuf, rcounts(1+P), displs(1+P), rdt(3), comm(3), end
            let ssz = size_of(f, 3, "send count", 5, "send datatype size")?;
            let (rc, k) = count_array(f, 8, pu, "recv counts")?;
            let (_, k) = count_array(f, k, pu, "displacements")?;
            let rsize = f.int(k + 1, "recv datatype size")?;
            let rb = sizes_of(&rc, rsize, "recv counts")?;
            linear_exchange(w, me, p, |_| ssz, |s| rb[s]);
        }
        Call::Gather | Call::Scatter => {
            // start, sbuf, scount, sdt(3), rbuf, rcount, rdt(3), root, comm(3), end
            let ssz = size_of(f, 3, "send count", 5, "send datatype size")?;
            let rsz = size_of(f, 8, "recv count", 10, "recv datatype size")?;
            let root = check_root(f.int32(12, "root")?, p)?;
            if c == Call::Gather {
                linear_rooted(w, me, p, root, true, |_| rsz, ssz);
            } else {
                linear_rooted(w, me, p, root, false, |_| ssz, rsz);
            }
        }
        Call::Gatherv => {
            // start, sbuf, scount, sdt(3), rbuf, rcounts(1+P), displs(1+P), rdt(3), root, comm(3), end
            let ssz = size_of(f, 3, "send count", 5, "send datatype size")?;
            let (rc, k) = count_array(f, 8, pu, "recv counts")?;
            let (_, k) = count_array(f, k, pu, "displacements")?;
            let rsize = f.int(k + 1, "recv datatype size")?;
            let root = check_root(f.int32(k + 3, "root")?, p)?;
            let rb = sizes_of(&rc, rsize, "recv counts")?;
            linear_rooted(w, me, p, root, true, |s| rb[s], ssz);
        }
        Call::Scatterv => {
            // start, sbuf, scounts(1+P), displs(1+P), sdt(3), rbuf, rcount, rdt(3), root, comm(3), end
            let (sc, k) = count_array(f, 3, pu, "send counts")?;
            let (_, k) = count_array(f, k, pu, "displacements")?;
            let ssize = f.int(k + 1, "send datatype size")?;
            let rsz = size_of(f, k + 4, "recv count", k + 6, "recv datatype size")?;
            let root = check_root(f.int32(k + 8, "root")?, p)?;
            let sb = sizes_of(&sc, ssize, "send counts")?;
            linear_rooted(w, me, p, root, false, |t| sb[t], rsz);
        }
        Call::ReduceScatter => {
            // start, sbuf, rbuf, rcounts(1+P) from field 4, dt(3), op, comm(3), end
            let (rc, k) = count_array(f, 4, pu, "recv counts")?;
            let dsize = f.int(k + 1, "datatype size")?;
            let rb = sizes_of(&rc, dsize, "recv counts")?;
            let mine = rb.get(me as usize).copied().unwrap_or(0);
            // Pairwise exchange: block t goes to rank t; rank me receives
            // its own block's contribution from every other rank.
            linear_exchange(w, me, p, |t| rb[t], |_| mine);
        }
        _ => unreachable!("not a collective"),
    }
    Ok(())
}

/// Linear exchange in the order of 3.10: step 1..P-1, send to me+step, then
/// receive from me-step; sizes per destination / per source.
fn linear_exchange(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    send: impl Fn(usize) -> i32,
    recv: impl Fn(usize) -> i32,
) {
    for step in 1..p as i64 {
        let t = (me as i64 + step).rem_euclid(p as i64) as usize;
        let s = (me as i64 - step).rem_euclid(p as i64) as usize;
        w.send(send(t), t as i32);
        w.recv(recv(s), s as i32);
    }
}

/// Linear gather (root receives from 1..P-1 mapped through swap, as 3.8)
/// or scatter; `root_size(peer)` is the root's per-peer size, `leaf_size`
/// the size every other rank sends/receives.
fn linear_rooted(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    gather: bool,
    root_size: impl Fn(usize) -> i32,
    leaf_size: i32,
) {
    let swap = |x: i32| {
        if x == 0 {
            root
        } else if x == root {
            0
        } else {
            x
        }
    };
    if me == root {
        for i in 1..p {
            let peer = swap(i);
            if gather {
                w.recv(root_size(peer as usize), peer);
            } else {
                w.send(root_size(peer as usize), peer);
            }
        }
    } else if gather {
        w.send(leaf_size, root);
    } else {
        w.recv(leaf_size, root);
    }
}
