//! GOAL text schedules: a hand-written streaming reader and a writer.
//!
//! The reader works line by line (a statement is one line), keeps only the
//! current rank's labels, and reports every problem as `file:line:column:
//! message`. Accepted beyond the reference (docs/model/loggops.md section 2): leading
//! whitespace, trailing `//` and `/* */` comments, CRLF, a missing final
//! newline, and the `{` of a rank block on the next line. Refused beyond
//! the reference: a dependency cycle (none of its operations could ever
//! start; the error names every label of it with its line). A label defined
//! twice in a rank keeps its first definition, as in the reference, with a
//! warning naming both lines.

use crate::hash::FastMap;
use crate::schedule::{Kind, Op, Schedule, ScheduleBuilder, ANY};
use std::io::{BufRead, Read, Write};
use std::path::Path;

/// Any error while loading a schedule (text or binary).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: {msg}")]
    Io { file: String, msg: String },
    #[error("{file}:{line}:{col}: {msg}")]
    Syntax {
        file: String,
        line: u64,
        col: u64,
        msg: String,
    },
    #[error("{file}: byte offset {offset}: {msg}")]
    Binary {
        file: String,
        offset: u64,
        msg: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    Int(u64),
    /// `-N` (only `-1` is meaningful)
    Neg(u64),
    Word(&'a [u8]),
    Colon,
    LBrace,
    RBrace,
}

fn describe(t: Option<Tok<'_>>) -> String {
    match t {
        None => "end of line".into(),
        Some(Tok::Int(v)) => format!("number {v}"),
        Some(Tok::Neg(v)) => format!("number -{v}"),
        Some(Tok::Word(w)) => format!("'{}'", String::from_utf8_lossy(w)),
        Some(Tok::Colon) => "':'".into(),
        Some(Tok::LBrace) => "'{'".into(),
        Some(Tok::RBrace) => "'}'".into(),
    }
}

/// Position-carrying error before the file name is attached.
struct PErr {
    col: usize,
    msg: String,
}

type PResult<T> = Result<T, PErr>;

fn perr<T>(col: usize, msg: impl Into<String>) -> PResult<T> {
    Err(PErr {
        col,
        msg: msg.into(),
    })
}

/// Lexer over one line. `in_comment` carries a `/* */` comment across lines.
struct Lex<'a> {
    s: &'a [u8],
    pos: usize,
    in_comment: bool,
    peeked: Option<(usize, Option<Tok<'a>>)>,
}

impl<'a> Lex<'a> {
    fn new(s: &'a [u8], in_comment: bool) -> Self {
        Lex {
            s,
            pos: 0,
            in_comment,
            peeked: None,
        }
    }
    fn peek(&mut self) -> PResult<(usize, Option<Tok<'a>>)> {
        if self.peeked.is_none() {
            let t = self.lex()?;
            self.peeked = Some(t);
        }
        Ok(self.peeked.unwrap())
    }
    #[inline]
    fn next(&mut self) -> PResult<(usize, Option<Tok<'a>>)> {
        // (not through peek: no round trip of the token through `peeked`)
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }
    fn lex(&mut self) -> PResult<(usize, Option<Tok<'a>>)> {
        let s = self.s;
        loop {
            if self.in_comment {
                match s[self.pos..].windows(2).position(|w| w == b"*/") {
                    Some(p) => {
                        self.pos += p + 2;
                        self.in_comment = false;
                    }
                    None => {
                        self.pos = s.len();
                        return Ok((self.pos + 1, None));
                    }
                }
            }
            while self.pos < s.len() && matches!(s[self.pos], b' ' | b'\t' | b'\r' | 0x0c | 0x0b) {
                self.pos += 1;
            }
            if self.pos >= s.len() {
                return Ok((self.pos + 1, None));
            }
            if s[self.pos] == b'/' && self.pos + 1 < s.len() {
                if s[self.pos + 1] == b'/' {
                    self.pos = s.len();
                    return Ok((self.pos + 1, None));
                }
                if s[self.pos + 1] == b'*' {
                    self.pos += 2;
                    self.in_comment = true;
                    continue;
                }
            }
            break;
        }
        let start = self.pos;
        let col = start + 1;
        let c = s[start];
        match c {
            b'0'..=b'9' => {
                let v = self.number(col)?;
                Ok((col, Some(Tok::Int(v))))
            }
            b'-' => {
                self.pos += 1;
                if self.pos < s.len() && s[self.pos].is_ascii_digit() {
                    let v = self.number(col)?;
                    Ok((col, Some(Tok::Neg(v))))
                } else {
                    perr(col, "'-' must be followed by a number (only -1 is allowed)")
                }
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                while self.pos < s.len()
                    && (s[self.pos].is_ascii_alphanumeric() || s[self.pos] == b'_')
                {
                    self.pos += 1;
                }
                Ok((col, Some(Tok::Word(&s[start..self.pos]))))
            }
            b':' => {
                self.pos += 1;
                Ok((col, Some(Tok::Colon)))
            }
            b'{' => {
                self.pos += 1;
                Ok((col, Some(Tok::LBrace)))
            }
            b'}' => {
                self.pos += 1;
                Ok((col, Some(Tok::RBrace)))
            }
            _ => {
                let ch = std::str::from_utf8(&s[start..])
                    .ok()
                    .and_then(|x| x.chars().next())
                    .map(|c| format!("{c:?}"))
                    .unwrap_or_else(|| format!("byte 0x{c:02x}"));
                perr(col, format!("unexpected character {ch}"))
            }
        }
    }
    fn number(&mut self, col: usize) -> PResult<u64> {
        let s = self.s;
        let mut v: u64 = 0;
        while self.pos < s.len() && s[self.pos].is_ascii_digit() {
            let d = (s[self.pos] - b'0') as u64;
            v = match v.checked_mul(10).and_then(|x| x.checked_add(d)) {
                Some(x) => x,
                None => return perr(col, "number too large (does not fit in 64 bits)"),
            };
            self.pos += 1;
        }
        Ok(v)
    }
    fn expect_word(&mut self, w: &str) -> PResult<()> {
        let (col, t) = self.next()?;
        match t {
            Some(Tok::Word(x)) if x == w.as_bytes() => Ok(()),
            other => perr(col, format!("expected '{w}', found {}", describe(other))),
        }
    }
    fn expect_int(&mut self, what: &str) -> PResult<(usize, u64)> {
        let (col, t) = self.next()?;
        match t {
            Some(Tok::Int(v)) => Ok((col, v)),
            other => perr(col, format!("expected {what}, found {}", describe(other))),
        }
    }
    /// A number or `-1` (returned as None).
    fn expect_int_or_any(&mut self, what: &str) -> PResult<(usize, Option<u64>)> {
        let (col, t) = self.next()?;
        match t {
            Some(Tok::Int(v)) => Ok((col, Some(v))),
            Some(Tok::Neg(1)) => Ok((col, None)),
            Some(Tok::Neg(v)) => perr(col, format!("negative {what} -{v} (only -1 is allowed)")),
            other => perr(col, format!("expected {what}, found {}", describe(other))),
        }
    }
    fn peek_word(&mut self, w: &str) -> PResult<bool> {
        Ok(matches!(self.peek()?.1, Some(Tok::Word(x)) if x == w.as_bytes()))
    }
    fn at_end(&mut self) -> PResult<bool> {
        Ok(self.peek()?.1.is_none())
    }
}

enum State {
    Header,
    Between,
    /// saw `rank R`, waiting for `{`
    ExpectBrace(u32),
    InBlock(u32),
}

struct Parser {
    /// Use the fast path for common statements (goal_fast.rs); off only
    /// in the test that compares both paths.
    fast: bool,
    state: State,
    num_ranks: Option<u32>,
    b: Option<ScheduleBuilder>,
    labels: Labels,
    in_comment: bool,
    /// the file's name in messages
    file: String,
    /// line number of the line being read (1-based)
    line_no: u64,
    /// labels defined twice: (rank, label, line of the first definition, line of this one)
    duplicates: Vec<(u32, String, u64, u64)>,
    /// all duplicate definitions (only the first [`MAX_DUPLICATES_SHOWN`] are kept)
    num_duplicates: u64,
}

/// Duplicate label definitions named one by one in the warnings.
const MAX_DUPLICATES_SHOWN: usize = 10;

/// The words of one-sided operations (docs/rdma.md "Schedules"). They are
/// not keywords: a label may still be called `put`, so plain schedules
/// keep their meaning; they name an operation only where one can stand.
pub(crate) fn is_one_sided_word(w: &[u8]) -> bool {
    matches!(w, b"put" | b"get" | b"poll")
}

/// The GOAL word of an operation kind.
pub fn kind_word(k: Kind) -> &'static str {
    match k {
        Kind::Send => "send",
        Kind::Recv => "recv",
        Kind::Calc => "calc",
        Kind::Put => "put",
        Kind::Get => "get",
        Kind::Poll => "poll",
    }
}

/// The GOAL keywords (never labels).
pub(crate) fn is_keyword(w: &[u8]) -> bool {
    matches!(
        w,
        b"num_ranks"
            | b"rank"
            | b"send"
            | b"recv"
            | b"calc"
            | b"requires"
            | b"irequires"
            | b"to"
            | b"from"
            | b"tag"
            | b"cpu"
            | b"nic"
            | b"b"
    )
}

/// The current rank's labels with their operation's offset and the line
/// that defines them. Labels of up to 15 bytes (nearly all: schedgen
/// writes `l123`) are packed with their length into a u128 key, so defining
/// one allocates nothing; longer ones go to a map of byte strings. The first
/// definition of a label wins (as the reference; a second one is a warning).
#[derive(Default)]
struct Labels {
    short: FastMap<u128, (u32, u64)>,
    long: FastMap<Vec<u8>, (u32, u64)>,
}

impl Labels {
    #[inline]
    fn pack(w: &[u8]) -> Option<u128> {
        if w.len() > 15 {
            return None;
        }
        let mut b = [0u8; 16];
        b[..w.len()].copy_from_slice(w);
        b[15] = w.len() as u8;
        Some(u128::from_le_bytes(b))
    }
    /// Defines `w` at `line`; if it was defined before, keeps that
    /// definition and returns its line.
    #[inline]
    fn define(&mut self, w: &[u8], off: u32, line: u64) -> Option<u64> {
        use std::collections::hash_map::Entry;
        let e = match Self::pack(w) {
            Some(k) => match self.short.entry(k) {
                Entry::Occupied(o) => Some(o.get().1),
                Entry::Vacant(v) => {
                    v.insert((off, line));
                    None
                }
            },
            None => match self.long.entry(w.to_vec()) {
                Entry::Occupied(o) => Some(o.get().1),
                Entry::Vacant(v) => {
                    v.insert((off, line));
                    None
                }
            },
        };
        e
    }
    #[inline]
    fn get(&self, w: &[u8]) -> Option<&u32> {
        match Self::pack(w) {
            Some(k) => self.short.get(&k).map(|v| &v.0),
            None => self.long.get(w).map(|v| &v.0),
        }
    }
    /// Label and defining line of each operation in `offs` that has one
    /// (one pass over the labels; for error messages).
    fn names_of(&self, offs: &[u32]) -> FastMap<u32, (String, u64)> {
        let want: std::collections::HashSet<u32> = offs.iter().copied().collect();
        let mut out = FastMap::default();
        for (k, &(off, line)) in &self.short {
            if want.contains(&off) {
                let b = k.to_le_bytes();
                let name = String::from_utf8_lossy(&b[..b[15] as usize]).into_owned();
                out.insert(off, (name, line));
            }
        }
        for (k, &(off, line)) in &self.long {
            if want.contains(&off) {
                out.insert(off, (String::from_utf8_lossy(k).into_owned(), line));
            }
        }
        out
    }
    fn clear(&mut self) {
        self.short.clear();
        self.long.clear();
    }
}

impl Parser {
    fn new() -> Self {
        Parser {
            fast: true,
            state: State::Header,
            num_ranks: None,
            b: None,
            labels: Labels::default(),
            in_comment: false,
            file: String::new(),
            line_no: 0,
            duplicates: Vec::new(),
            num_duplicates: 0,
        }
    }

    /// Defines a label of the current rank (a second definition is kept
    /// out and noted for a warning).
    #[inline]
    fn define_label(&mut self, w: &[u8], off: u32) {
        if let Some(first) = self.labels.define(w, off, self.line_no) {
            self.num_duplicates += 1;
            if self.duplicates.len() < MAX_DUPLICATES_SHOWN {
                let rank = match self.state {
                    State::InBlock(r) => r,
                    _ => 0,
                };
                self.duplicates.push((
                    rank,
                    String::from_utf8_lossy(w).into_owned(),
                    first,
                    self.line_no,
                ));
            }
        }
    }

    /// The message of a dependency cycle in `rank`: every operation on it
    /// by label and defining line.
    fn cycle_message(&self, rank: u32, c: &crate::schedule::Cycle) -> String {
        const SHOWN: usize = 16;
        let file = &self.file;
        let names = self.labels.names_of(&c.ops);
        let show = |off: u32| match names.get(&off) {
            Some((l, line)) => format!("{l} ({file}:{line})"),
            None => format!("operation {off} of the rank"),
        };
        let word = |imm: bool| if imm { "irequires" } else { "requires" };
        let mut m = format!("rank {rank}: dependency cycle: ");
        for (i, &off) in c.ops.iter().enumerate().take(SHOWN) {
            m.push_str(&show(off));
            m.push(' ');
            m.push_str(word(c.immediate[i]));
            m.push(' ');
        }
        if c.ops.len() > SHOWN {
            m.push_str(&format!("... ({} more) ... ", c.ops.len() - SHOWN));
        }
        m.push_str(&match names.get(&c.ops[0]) {
            Some((l, _)) => l.clone(),
            None => show(c.ops[0]),
        });
        m.push_str(if c.ops.len() == 1 {
            "; the operation can never start"
        } else {
            "; none of these operations can ever start"
        });
        m
    }

    fn line(&mut self, s: &[u8]) -> PResult<()> {
        if self.fast && !self.in_comment {
            if let State::InBlock(_) = self.state {
                if let Some(p) = crate::goal_fast::plan(s, self.num_ranks.unwrap_or(0)) {
                    if self.apply(p) {
                        return Ok(());
                    }
                }
            }
        }
        let mut lx = Lex::new(s, self.in_comment);
        let r = self.line_inner(&mut lx);
        // keep comment state even on success paths that stop early
        self.in_comment = lx.in_comment;
        r
    }

    fn line_inner<'a>(&mut self, lx: &mut Lex<'a>) -> PResult<()> {
        loop {
            let (col, t) = lx.peek()?;
            let Some(t) = t else {
                self.in_comment = lx.in_comment;
                return Ok(());
            };
            match self.state {
                State::Header => {
                    lx.expect_word("num_ranks").map_err(|_| PErr {
                        col,
                        msg: format!(
                            "expected 'num_ranks N' at the start of the schedule, found {}",
                            describe(Some(t))
                        ),
                    })?;
                    let (c, n) = lx.expect_int("the number of ranks")?;
                    if n == 0 {
                        return perr(c, "num_ranks is 0: the schedule is empty");
                    }
                    if n > u32::MAX as u64 - 1 {
                        return perr(c, format!("num_ranks {n} is too large"));
                    }
                    self.num_ranks = Some(n as u32);
                    self.b = Some(ScheduleBuilder::new(n as u32));
                    self.state = State::Between;
                }
                State::Between => {
                    let n = self.num_ranks.unwrap();
                    match t {
                        Tok::Word(w) if w == b"rank" => {
                            lx.next()?;
                            let (c, r) = lx.expect_int("a rank number")?;
                            let expected = self.b.as_ref().unwrap().ranks_done();
                            if expected >= n {
                                return perr(col, format!("more rank blocks than num_ranks {n}"));
                            }
                            if r != expected as u64 {
                                return perr(
                                    c,
                                    format!(
                                        "rank block {r} out of order: expected rank {expected}"
                                    ),
                                );
                            }
                            self.state = State::ExpectBrace(r as u32);
                        }
                        other => {
                            return perr(
                                col,
                                format!("expected 'rank R {{', found {}", describe(Some(other))),
                            );
                        }
                    }
                }
                State::ExpectBrace(r) => match lx.next()? {
                    (_, Some(Tok::LBrace)) => {
                        self.b.as_mut().unwrap().begin_rank();
                        self.labels.clear();
                        self.state = State::InBlock(r);
                    }
                    (c, other) => {
                        return perr(
                            c,
                            format!("expected '{{' after 'rank {r}', found {}", describe(other)),
                        )
                    }
                },
                State::InBlock(r) => {
                    if t == Tok::RBrace {
                        lx.next()?;
                        if let Err(c) = self.b.as_mut().unwrap().end_rank() {
                            return perr(col, self.cycle_message(r, &c));
                        }
                        self.state = State::Between;
                        continue;
                    }
                    self.statement(lx, r)?;
                    let (c, rest) = lx.peek()?;
                    if rest.is_some() {
                        return perr(
                            c,
                            format!("unexpected {} after the statement", describe(rest)),
                        );
                    }
                    self.in_comment = lx.in_comment;
                    return Ok(());
                }
            }
        }
    }

    /// Carry out a fast-path plan; false (and nothing changed) when the
    /// general reader must handle the line (an undefined label, a builder
    /// limit), so that it reports the problem in its words.
    fn apply(&mut self, p: crate::goal_fast::Plan<'_>) -> bool {
        use crate::goal_fast::Plan;
        let b = self.b.as_mut().unwrap();
        match p {
            Plan::Op {
                label,
                kind,
                size,
                peer,
                tag,
            } => {
                let op = Op {
                    kind,
                    size,
                    peer: peer as u32,
                    tag,
                    cpu: 0,
                    nic: 0,
                };
                match b.add_op(op) {
                    Ok(off) => {
                        if let Some(l) = label {
                            self.define_label(l, off);
                        }
                        true
                    }
                    Err(_) => false,
                }
            }
            Plan::Dep {
                dependent,
                pred,
                immediate,
            } => {
                let (Some(&a), Some(&p)) = (self.labels.get(dependent), self.labels.get(pred))
                else {
                    return false;
                };
                b.add_dep(a, p, immediate).is_ok()
            }
        }
    }

    fn label_of(&self, col: usize, w: &[u8]) -> PResult<u32> {
        match self.labels.get(w) {
            Some(&o) => Ok(o),
            None => perr(
                col,
                format!(
                    "undefined label '{}' (labels must be defined above their use)",
                    String::from_utf8_lossy(w)
                ),
            ),
        }
    }

    fn statement<'a>(&mut self, lx: &mut Lex<'a>, _rank: u32) -> PResult<()> {
        let (col, t) = lx.next()?;
        match t {
            Some(Tok::Word(w)) if is_one_sided_word(w) && !self.label_follows(lx)? => {
                // `put`/`get`/`poll` are operation words only where an
                // operation can stand and no label use follows, so a plain
                // schedule that names a label `put` keeps its meaning
                self.operation(lx, col, t).map(|_| ())
            }
            Some(Tok::Word(w)) if !is_keyword(w) => {
                // label definition or dependency
                let (c2, t2) = lx.next()?;
                match t2 {
                    Some(Tok::Colon) => {
                        let (oc, ot) = lx.next()?;
                        let off = self.operation(lx, oc, ot)?;
                        self.define_label(w, off);
                        Ok(())
                    }
                    Some(Tok::Word(k)) if k == b"requires" || k == b"irequires" => {
                        let a = self.label_of(col, w)?;
                        let (c3, t3) = lx.next()?;
                        let Some(Tok::Word(bw)) = t3 else {
                            return perr(
                                c3,
                                format!(
                                    "expected a label after '{}', found {}",
                                    String::from_utf8_lossy(k),
                                    describe(t3)
                                ),
                            );
                        };
                        let bo = self.label_of(c3, bw)?;
                        self.b
                            .as_mut()
                            .unwrap()
                            .add_dep(a, bo, k == b"irequires")
                            .map_err(|e| PErr {
                                col,
                                msg: e.to_string(),
                            })
                    }
                    other => perr(
                        c2,
                        format!(
                            "expected ':' or 'requires'/'irequires' after '{}', found {}",
                            String::from_utf8_lossy(w),
                            describe(other)
                        ),
                    ),
                }
            }
            Some(Tok::Word(w)) if w == b"send" || w == b"recv" || w == b"calc" => {
                self.operation(lx, col, t).map(|_| ())
            }
            other => perr(
                col,
                format!(
                    "expected an operation or a dependency, found {}",
                    describe(other)
                ),
            ),
        }
    }

    /// After a word at the start of a statement: does a label definition
    /// (`:`) or a dependency (`requires`/`irequires`) follow?
    fn label_follows(&self, lx: &mut Lex<'_>) -> PResult<bool> {
        Ok(match lx.peek()?.1 {
            Some(Tok::Colon) => true,
            Some(Tok::Word(k)) => k == b"requires" || k == b"irequires",
            _ => false,
        })
    }

    fn operation<'a>(&mut self, lx: &mut Lex<'a>, col: usize, t: Option<Tok<'a>>) -> PResult<u32> {
        let p = self.num_ranks.unwrap();
        let kind = match t {
            Some(Tok::Word(b"send")) => Kind::Send,
            Some(Tok::Word(b"recv")) => Kind::Recv,
            Some(Tok::Word(b"calc")) => Kind::Calc,
            Some(Tok::Word(b"put")) => Kind::Put,
            Some(Tok::Word(b"get")) => Kind::Get,
            Some(Tok::Word(b"poll")) => Kind::Poll,
            other => {
                return perr(
                    col,
                    format!(
                        "expected 'send', 'recv', 'calc', 'put', 'get' or 'poll', found {}",
                        describe(other)
                    ),
                )
            }
        };
        let mut op = Op {
            kind,
            size: 0,
            peer: 0,
            tag: 0,
            cpu: 0,
            nic: 0,
        };
        match kind {
            Kind::Calc => {
                op.size = lx.expect_int("a duration")?.1;
                if lx.peek_word("cpu")? {
                    lx.next()?;
                    op.cpu = small(lx.expect_int("a cpu number")?, "cpu")?;
                }
            }
            Kind::Send | Kind::Recv | Kind::Put | Kind::Get | Kind::Poll => {
                op.size = lx.expect_int("a size in bytes")?.1;
                lx.expect_word("b")?;
                let verb = kind_word(kind);
                let (pc, peer) = if matches!(kind, Kind::Send | Kind::Put) {
                    lx.expect_word("to")?;
                    let (pc, v) = lx.expect_int_or_any("a destination rank")?;
                    match v {
                        None => {
                            return perr(
                                pc,
                                format!("{verb} to -1: a {verb} needs a concrete destination"),
                            )
                        }
                        Some(v) => (pc, Some(v)),
                    }
                } else {
                    lx.expect_word("from")?;
                    let (pc, v) = lx.expect_int_or_any("a source rank")?;
                    if v.is_none() && kind != Kind::Recv {
                        return perr(
                            pc,
                            format!("{verb} from -1: a {verb} needs a concrete peer (one-sided operations have no any-source)"),
                        );
                    }
                    (pc, v)
                };
                op.peer = match peer {
                    None => ANY,
                    Some(v) if v < p as u64 => v as u32,
                    Some(v) => {
                        return perr(
                            pc,
                            format!("peer {v} is outside 0..{} (num_ranks {p})", p - 1),
                        );
                    }
                };
                if lx.peek_word("tag")? {
                    lx.next()?;
                    let (tc, v) = lx.expect_int_or_any("a tag")?;
                    op.tag = match v {
                        None if kind.is_one_sided() => {
                            return perr(
                                tc,
                                format!(
                                    "{} with tag -1: one-sided operations have no any-tag",
                                    kind_word(kind)
                                ),
                            )
                        }
                        None => ANY,
                        Some(v) => tag_value(tc, v)?,
                    };
                    if op.tag == ANY && kind.is_one_sided() {
                        return perr(
                            tc,
                            format!(
                                "{} with tag {}: that is the any-tag value, and one-sided operations have no any-tag",
                                kind_word(kind),
                                v.unwrap_or(0)
                            ),
                        );
                    }
                }
                if lx.peek_word("cpu")? {
                    lx.next()?;
                    op.cpu = small(lx.expect_int("a cpu number")?, "cpu")?;
                }
                if kind != Kind::Poll && lx.peek_word("nic")? {
                    lx.next()?;
                    op.nic = small(lx.expect_int("a nic number")?, "nic")?;
                }
            }
        }
        if !lx.at_end()? {
            let (c, t) = lx.peek()?;
            if let Some(Tok::Word(w)) = t {
                if w == b"tag" || w == b"cpu" || w == b"nic" {
                    return perr(
                        c,
                        format!(
                            "modifier '{}' out of place (the order is tag, cpu, nic; calc takes only cpu)",
                            String::from_utf8_lossy(w)
                        ),
                    );
                }
            }
        }
        self.b.as_mut().unwrap().add_op(op).map_err(|e| PErr {
            col,
            msg: e.to_string(),
        })
    }

    fn finish(self, lines: u64, last_col: usize) -> Result<Schedule, PErr> {
        let col = last_col;
        match self.state {
            State::Header => {
                perr(col, "empty schedule: expected 'num_ranks N'").map_err(|e| at_eof(e, lines))
            }
            State::ExpectBrace(r) => {
                perr(col, format!("end of file: expected '{{' after 'rank {r}'"))
            }
            State::InBlock(r) => perr(
                col,
                format!("end of file inside rank block {r}: missing '}}'"),
            ),
            State::Between => {
                let b = self.b.unwrap();
                let n = self.num_ranks.unwrap();
                if b.ranks_done() < n {
                    return perr(
                        col,
                        format!(
                            "end of file after {} rank blocks: num_ranks is {n} (missing rank {})",
                            b.ranks_done(),
                            b.ranks_done()
                        ),
                    );
                }
                Ok(b.finish())
            }
        }
    }
}

fn at_eof(e: PErr, _lines: u64) -> PErr {
    e
}

fn small((col, v): (usize, u64), what: &str) -> PResult<u8> {
    if v > 255 {
        perr(col, format!("{what} {v} is above 255"))
    } else {
        Ok(v as u8)
    }
}

/// Tags are 32-bit in the binary layout. Values written by schedgen as
/// sign-extended 32-bit numbers (>= 2^64 - 2^31) are taken modulo 2^32, as
/// the reference's binary layout stores them; 4294967295 is any-tag (the
/// layout cannot tell them apart). Other values above 32 bits are rejected.
fn tag_value(col: usize, v: u64) -> PResult<u32> {
    if v <= u32::MAX as u64 || v >= 0xFFFF_FFFF_8000_0000 {
        Ok(v as u32)
    } else {
        perr(col, format!("tag {v} does not fit in 32 bits"))
    }
}

/// Longest GOAL line accepted (GOAL statements are short; comments too).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Parses GOAL text from any reader. `name` is used in error messages.
pub fn parse_reader<R: BufRead>(name: &str, r: R) -> Result<Schedule, LoadError> {
    parse_reader_with(name, r, true).map(|(s, _)| s)
}

/// [`parse_reader`], also returning the warnings (`file:line: ...`): labels
/// defined twice in a rank, where the first definition counts (as in
/// LogGOPSim; the second labels nothing).
pub fn parse_reader_warnings<R: BufRead>(
    name: &str,
    r: R,
) -> Result<(Schedule, Vec<String>), LoadError> {
    parse_reader_with(name, r, true)
}

fn parse_reader_with<R: BufRead>(
    name: &str,
    mut r: R,
    fast: bool,
) -> Result<(Schedule, Vec<String>), LoadError> {
    let mut p = Parser::new();
    p.fast = fast;
    p.file = name.to_string();
    let mut buf = Vec::with_capacity(256);
    let mut line_no: u64 = 0;
    let mut last_len = 0usize;
    loop {
        buf.clear();
        // At most MAX_LINE_BYTES per line: endless input without newlines
        // (a device, a binary blob) must not fill memory.
        let n = (&mut r)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| LoadError::Io {
                file: name.to_string(),
                msg: e.to_string(),
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.len() > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
            return Err(LoadError::Syntax {
                file: name.to_string(),
                line: line_no,
                col: 1,
                msg: format!("line longer than {MAX_LINE_BYTES} bytes: not a GOAL schedule"),
            });
        }
        let mut s: &[u8] = &buf;
        if s.last() == Some(&b'\n') {
            s = &s[..s.len() - 1];
        }
        if s.last() == Some(&b'\r') {
            s = &s[..s.len() - 1];
        }
        last_len = s.len();
        p.line_no = line_no;
        p.line(s).map_err(|e| LoadError::Syntax {
            file: name.to_string(),
            line: line_no,
            col: e.col as u64,
            msg: e.msg,
        })?;
    }
    let line = line_no.max(1);
    let mut warnings: Vec<String> = p
        .duplicates
        .iter()
        .map(|(rank, label, first, again)| {
            format!(
                "{name}:{again}: rank {rank}: label '{label}' is defined again (first at \
                 {name}:{first}); the first definition counts, this operation has no label"
            )
        })
        .collect();
    if p.num_duplicates > p.duplicates.len() as u64 {
        warnings.push(format!(
            "{name}: {} more labels defined twice",
            p.num_duplicates - p.duplicates.len() as u64
        ));
    }
    let s = p
        .finish(line_no, last_len + 1)
        .map_err(|e| LoadError::Syntax {
            file: name.to_string(),
            line,
            col: e.col as u64,
            msg: e.msg,
        })?;
    Ok((s, warnings))
}

pub fn parse_str(name: &str, text: &str) -> Result<Schedule, LoadError> {
    parse_reader(name, text.as_bytes())
}

pub fn parse_file(path: &Path) -> Result<Schedule, LoadError> {
    parse_file_warnings(path).map(|(s, _)| s)
}

/// [`parse_file`] with the warnings of [`parse_reader_warnings`].
pub fn parse_file_warnings(path: &Path) -> Result<(Schedule, Vec<String>), LoadError> {
    let (f, _) = schedgen::input::open_regular(path).map_err(|msg| LoadError::Io {
        file: path.display().to_string(),
        msg,
    })?;
    parse_reader_warnings(
        &path.display().to_string(),
        std::io::BufReader::with_capacity(1 << 20, f),
    )
}

/// Writes a schedule as GOAL text: operations labelled `l<offset+1>`, then
/// the dependency lines grouped by predecessor (which reproduces the same
/// dependent order when read back).
pub fn write_goal<W: Write>(s: &Schedule, w: &mut W) -> std::io::Result<()> {
    writeln!(w, "num_ranks {}", s.num_ranks())?;
    for r in 0..s.num_ranks() {
        let nodes = s.rank_nodes(r);
        let first = nodes.start;
        writeln!(w, "\nrank {r} {{")?;
        for n in nodes.clone() {
            let op = s.op(n);
            write!(w, "l{}: ", n - first + 1)?;
            match op.kind {
                Kind::Calc => write!(w, "calc {}", op.size)?,
                Kind::Send | Kind::Recv | Kind::Put | Kind::Get | Kind::Poll => {
                    let verb = kind_word(op.kind);
                    let dir = if matches!(op.kind, Kind::Send | Kind::Put) {
                        "to"
                    } else {
                        "from"
                    };
                    write!(w, "{verb} {}b {dir} ", op.size)?;
                    if op.peer == ANY {
                        write!(w, "-1")?
                    } else {
                        write!(w, "{}", op.peer)?
                    }
                    if op.tag == ANY {
                        write!(w, " tag -1")?
                    } else {
                        write!(w, " tag {}", op.tag)?
                    }
                }
            }
            if op.cpu != 0 {
                write!(w, " cpu {}", op.cpu)?;
            }
            if op.nic != 0 && !matches!(op.kind, Kind::Calc | Kind::Poll) {
                write!(w, " nic {}", op.nic)?;
            }
            writeln!(w)?;
        }
        for n in nodes {
            for d in s.requires_dependents(n) {
                writeln!(w, "l{} requires l{}", d - first + 1, n - first + 1)?;
            }
            for d in s.irequires_dependents(n) {
                writeln!(w, "l{} irequires l{}", d - first + 1, n - first + 1)?;
            }
        }
        writeln!(w, "}}")?;
    }
    Ok(())
}

#[cfg(test)]
mod fast_path_tests {
    //! The fast path (goal_fast.rs) and the general reader build the same
    //! schedule, or report the same error, on every line shape.
    use super::*;
    use proptest::prelude::*;

    fn both(text: &str) -> (String, String) {
        let show = |r: Result<Schedule, LoadError>| match r {
            Ok(s) => {
                let mut v = Vec::new();
                write_goal(&s, &mut v).unwrap();
                String::from_utf8(v).unwrap()
            }
            Err(e) => format!("error: {e}"),
        };
        (
            show(parse_reader_with("t.goal", text.as_bytes(), true).map(|(s, _)| s)),
            show(parse_reader_with("t.goal", text.as_bytes(), false).map(|(s, _)| s)),
        )
    }

    /// One statement line from a menu of common and unusual shapes.
    fn line() -> impl Strategy<Value = String> {
        let label = prop_oneof![
            Just("l1".to_string()),
            Just("l2".to_string()),
            Just("x_9".to_string()),
            Just("send".to_string()),
            Just("put".to_string()),
            Just("poll".to_string()),
            Just("a_label_longer_than_fifteen".to_string()),
            "[a-z][a-z0-9_]{0,5}",
        ];
        let num = prop_oneof![
            Just("0".to_string()),
            Just("3".to_string()),
            Just("180".to_string()),
            Just("4294967295".to_string()),
            Just("18446744073709551616".to_string()),
            Just("-1".to_string()),
            (0u64..10).prop_map(|v| v.to_string()),
        ];
        let sp = prop_oneof![Just(" "), Just("  "), Just("\t"), Just("")];
        let op = (
            prop_oneof![
                Just("send"),
                Just("recv"),
                Just("calc"),
                Just("snd"),
                Just("put"),
                Just("get"),
                Just("poll")
            ],
            num.clone(),
            prop_oneof![Just("b"), Just("bytes"), Just("")],
            prop_oneof![Just("to"), Just("from")],
            num.clone(),
            prop_oneof![
                Just("".to_string()),
                num.clone().prop_map(|t| format!(" tag {t}")),
                Just(" cpu 1".to_string()),
                Just(" tag 2 nic 1".to_string()),
                Just(" // c".to_string()),
                Just(" /* c */".to_string()),
            ],
            sp.clone(),
        )
            .prop_map(|(k, n, b, dir, p, tail, s)| {
                if k == "calc" {
                    format!("calc{s} {n}{tail}")
                } else {
                    format!("{k} {n}{s}{b} {dir}{s} {p}{tail}")
                }
            });
        prop_oneof![
            (label.clone(), sp.clone(), op.clone()).prop_map(|(l, s, o)| format!("{l}{s}:{s}{o}")),
            op,
            (
                label.clone(),
                prop_oneof![Just("requires"), Just("irequires"), Just("needs")],
                label
            )
                .prop_map(|(a, k, b)| format!("{a} {k} {b}")),
            Just("".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        #[test]
        fn fast_and_general_paths_agree(lines in proptest::collection::vec(line(), 0..12)) {
            let mut text = String::from("num_ranks 4\nrank 0 {\nl1: calc 1\nl2: calc 2\n");
            for l in &lines {
                text.push_str(l);
                text.push('\n');
            }
            text.push_str("}\nrank 1 {\n}\nrank 2 {\n}\nrank 3 {\n}\n");
            let (fast, general) = both(&text);
            prop_assert_eq!(fast, general, "{}", text);
        }
    }

    #[test]
    fn common_lines_take_the_fast_path() {
        use crate::goal_fast::{plan, Plan};
        use crate::schedule::Kind;
        assert_eq!(
            plan(b"s12: send 180b to 5 tag 12", 8),
            Some(Plan::Op {
                label: Some(b"s12"),
                kind: Kind::Send,
                size: 180,
                peer: 5,
                tag: 12
            })
        );
        assert_eq!(
            plan(b"recv 7 b from 0", 8),
            Some(Plan::Op {
                label: None,
                kind: Kind::Recv,
                size: 7,
                peer: 0,
                tag: 0
            })
        );
        assert_eq!(
            plan(b"s1 irequires r0", 8),
            Some(Plan::Dep {
                dependent: b"s1",
                pred: b"r0",
                immediate: true
            })
        );
        // left to the general reader
        for l in [
            "send 1b to 8",
            "recv 1b from -1",
            "send 1b to 1 cpu 1",
            "calc 5 // x",
            "send 1b to 1 tag 4294967295",
        ] {
            assert_eq!(plan(l.as_bytes(), 8), None, "{l}");
        }
    }
}
