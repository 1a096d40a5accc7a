//! The GOAL reader's fast path: the statement shapes that make up nearly all
//! of a generated schedule, recognised by a direct byte scan.
//!
//! Why: the general reader (goal.rs) builds a token stream with positions
//! and error context for every token; on schedules of hundreds of thousands
//! of lines that was most of the scheduler's own time, which in a
//! co-simulation adds to the fabric's. The fast path accepts only
//!
//! - `[LABEL:] send N b to P [tag T]`
//! - `[LABEL:] recv N b from P [tag T]`
//! - `[LABEL:] calc N`
//! - `[LABEL:] put N b to P [tag T]`, `[LABEL:] get N b from P [tag T]`,
//!   `[LABEL:] poll N b from P [tag T]` (docs/rdma.md)
//! - `LABEL requires LABEL`, `LABEL irequires LABEL`
//!
//! with blanks between tokens, no comment, no `cpu`/`nic`, no `-1`, and it
//! returns a plan only when the line is valid with every value in range. On
//! anything else it returns None *without side effects* and the general
//! reader handles the line, so errors, their positions and every accepted
//! corner of the grammar are the general reader's. A property test
//! (tests in goal.rs) checks that both paths build the same schedule.

/// What a recognised line does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan<'a> {
    Op {
        label: Option<&'a [u8]>,
        kind: crate::schedule::Kind,
        size: u64,
        peer: u64,
        tag: u32,
    },
    Dep {
        dependent: &'a [u8],
        pred: &'a [u8],
        immediate: bool,
    },
}

struct Cur<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline]
    fn blanks(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\r' | 0x0c | 0x0b)
        {
            self.i += 1;
        }
    }
    /// A word as the general lexer reads it: a letter, then letters,
    /// digits and `_`.
    #[inline]
    fn word(&mut self) -> Option<&'a [u8]> {
        self.blanks();
        let start = self.i;
        if start >= self.s.len() || !self.s[start].is_ascii_alphabetic() {
            return None;
        }
        self.i += 1;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        Some(&self.s[start..self.i])
    }
    #[inline]
    fn keyword(&mut self, k: &[u8]) -> bool {
        self.word() == Some(k)
    }
    /// A decimal number (None on overflow, as the general reader then
    /// reports it).
    #[inline]
    fn number(&mut self) -> Option<u64> {
        self.blanks();
        let start = self.i;
        let mut v: u64 = 0;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            v = v
                .checked_mul(10)?
                .checked_add((self.s[self.i] - b'0') as u64)?;
            self.i += 1;
        }
        (self.i > start).then_some(v)
    }
    #[inline]
    fn colon(&mut self) -> bool {
        self.blanks();
        if self.i < self.s.len() && self.s[self.i] == b':' {
            self.i += 1;
            true
        } else {
            false
        }
    }
    #[inline]
    fn at_end(&mut self) -> bool {
        self.blanks();
        self.i == self.s.len()
    }
}

/// The plan of one line inside a rank block, or None for the general reader.
/// `ranks`: num_ranks (peers must be below it).
pub(crate) fn plan(s: &[u8], ranks: u32) -> Option<Plan<'_>> {
    let mut c = Cur { s, i: 0 };
    let first = c.word()?;
    // `put 8 b to 1` is an operation but `put: ...` / `put requires x`
    // use a label; the number that must follow the word decides
    let one_sided_op = crate::goal::is_one_sided_word(first) && {
        let save = c.i;
        let n = c.number().is_some();
        c.i = save;
        n
    };
    let (label, kind_word) = if crate::goal::is_keyword(first) || one_sided_op {
        (None, first)
    } else {
        // LABEL: op, or LABEL requires LABEL
        let save = c.i;
        if c.colon() {
            (Some(first), c.word()?)
        } else {
            c.i = save;
            let k = c.word()?;
            let immediate = match k {
                b"requires" => false,
                b"irequires" => true,
                _ => return None,
            };
            let pred = c.word()?;
            if crate::goal::is_keyword(pred) || !c.at_end() {
                return None;
            }
            return Some(Plan::Dep {
                dependent: first,
                pred,
                immediate,
            });
        }
    };
    use crate::schedule::Kind;
    let kind = match kind_word {
        b"send" => Kind::Send,
        b"recv" => Kind::Recv,
        b"calc" => Kind::Calc,
        b"put" => Kind::Put,
        b"get" => Kind::Get,
        b"poll" => Kind::Poll,
        _ => return None,
    };
    let size = c.number()?;
    if kind == Kind::Calc {
        return c.at_end().then_some(Plan::Op {
            label,
            kind,
            size,
            peer: 0,
            tag: 0,
        });
    }
    if !c.keyword(b"b") {
        return None;
    }
    if !c.keyword(if matches!(kind, Kind::Send | Kind::Put) {
        b"to"
    } else {
        b"from"
    }) {
        return None;
    }
    let peer = c.number()?;
    if peer >= ranks as u64 {
        return None;
    }
    let mut tag = 0u32;
    if !c.at_end() {
        if !c.keyword(b"tag") {
            return None;
        }
        let t = c.number()?;
        // the general reader's tag rule (goal::tag_value) for the common
        // range; anything else goes to it
        if t > u32::MAX as u64 - 1 {
            return None;
        }
        tag = t as u32;
        if !c.at_end() {
            return None;
        }
    }
    Some(Plan::Op {
        label,
        kind,
        size,
        peer,
        tag,
    })
}
