//! The GOAL text writer shared by every pattern and by trace mode
//! (docs/model/schedgen.md section 2). It reproduces the reference's exact text:
//! labels count 1, 2, ... per rank block, sends/recvs print the current tag,
//! and the start/end sets (2.5) track which sends/recvs of an embedded
//! collective have no predecessor / no successor inside it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A label inside one rank block (`l<k>`).
pub type Label = u64;

/// Dependency kind: `requires` (after completion) or `irequires` (after start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepKind {
    Requires,
    IRequires,
}

/// Counters printed by the reference at the end (2.7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub sends: u64,
    pub recvs: u64,
    pub execs: u64,
    pub reqs: u64,
    pub hosts: u64,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} sends, {} recvs, {} execs, and {} reqs among {} hosts written",
            self.sends, self.recvs, self.execs, self.reqs, self.hosts
        )
    }
}

/// The `--nb` prelude (2.6): local work written at the start of every block.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prelude {
    pub nb: i64,
    pub poll: i64,
}

/// `maketag(comm, t)` of 2.4: `(comm << 24) | t` in 32-bit two's complement,
/// sign-extended to 64 bits and printed unsigned.
pub fn maketag(comm: i64, t: i64) -> u64 {
    let v = ((comm as i32).wrapping_shl(24)) | (t as i32);
    v as i64 as u64
}

/// Writes one GOAL file into memory.
#[derive(Debug)]
pub struct GoalWriter {
    out: String,
    counts: Counts,
    label: Label,
    tag: u64,
    /// `--cpu`: non-zero switches on the ` cpu c` suffix of CPU calcs.
    cpu: u64,
    prelude: Option<Prelude>,
    start_set: BTreeSet<Label>,
    end_set: BTreeSet<Label>,
    /// (is_send, size) of every send/recv since the last `clear_sets`, so
    /// calibration can charge link-layer time to an embedded collective.
    ops_log: Vec<(bool, i32)>,
    in_rank: bool,
    /// The text reached [`MAX_GOAL_BYTES`]: nothing more is written (the
    /// caller checks [`GoalWriter::is_full`] and stops with an error).
    full: bool,
    /// [`MAX_GOAL_BYTES`] unless changed by [`GoalWriter::set_limit`].
    limit: usize,
}

/// Largest GOAL text built in memory (2 GiB): a pattern or a translation
/// that would be larger stops with an error instead of exhausting memory.
pub const MAX_GOAL_BYTES: usize = 2 << 30;

impl GoalWriter {
    /// Starts a file for `num_ranks` ranks. `cpu` is the `--cpu` option.
    pub fn new(num_ranks: i64, cpu: u64, prelude: Option<Prelude>) -> Self {
        let mut out = String::new();
        let _ = writeln!(out, "num_ranks {num_ranks}");
        GoalWriter {
            out,
            counts: Counts::default(),
            label: 0,
            tag: 0,
            cpu,
            prelude,
            start_set: BTreeSet::new(),
            end_set: BTreeSet::new(),
            ops_log: Vec::new(),
            in_rank: false,
            full: false,
            limit: MAX_GOAL_BYTES,
        }
    }

    /// Whether there is room for more text (below [`MAX_GOAL_BYTES`]).
    fn room(&mut self) -> bool {
        if self.out.len() >= self.limit {
            self.full = true;
        }
        !self.full
    }

    /// Changes the size limit of the text (tests).
    pub fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }

    /// The text would exceed the limit; what was written is incomplete.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// The `--cpu` value (used as CPU index by the prelude and trace mode).
    pub fn cpu_option(&self) -> u64 {
        self.cpu
    }

    /// Opens a rank block: resets labels and tag, writes the prelude.
    pub fn start_rank(&mut self, rank: i64) {
        debug_assert!(!self.in_rank, "rank block not closed");
        if self.room() {
            let _ = write!(self.out, "\nrank {rank} {{\n");
        }
        self.counts.hosts += 1;
        self.label = 0;
        self.tag = 0;
        self.in_rank = true;
        if let Some(p) = self.prelude {
            let cpu = self.cpu;
            if p.poll > 0 {
                let mut prev: Option<Label> = None;
                let mut i = 0i64;
                while i < p.nb {
                    let l = self.calc_cpu(p.poll as u64, cpu);
                    if let Some(pr) = prev {
                        self.requires(l, pr);
                    }
                    prev = Some(l);
                    i += p.poll;
                }
            } else {
                self.calc_cpu(p.nb as u64, cpu);
            }
        }
    }

    /// Closes the current rank block.
    pub fn end_rank(&mut self) {
        if self.room() {
            self.out.push_str("}\n");
        }
        self.in_rank = false;
    }

    /// The label of the last operation written in the current rank block
    /// (0 before the first); composed collectives use it to find their
    /// parts' labels.
    pub fn last_label(&self) -> Label {
        self.label
    }

    pub fn set_tag(&mut self, tag: u64) {
        self.tag = tag;
    }

    pub fn tag(&self) -> u64 {
        self.tag
    }

    fn next_label(&mut self) -> Label {
        self.label += 1;
        self.label
    }

    pub fn send(&mut self, size: i32, peer: i32) -> Label {
        let l = self.next_label();
        self.counts.sends += 1;
        if self.room() {
            let _ = writeln!(self.out, "l{l}: send {size}b to {peer} tag {}", self.tag);
            self.ops_log.push((true, size));
            self.start_set.insert(l);
            self.end_set.insert(l);
        }
        l
    }

    pub fn recv(&mut self, size: i32, peer: i32) -> Label {
        let l = self.next_label();
        self.counts.recvs += 1;
        if self.room() {
            let _ = writeln!(self.out, "l{l}: recv {size}b from {peer} tag {}", self.tag);
            self.ops_log.push((false, size));
            self.start_set.insert(l);
            self.end_set.insert(l);
        }
        l
    }

    /// A plain calc (never has a `cpu` suffix), duration printed as i32.
    pub fn calc_plain(&mut self, n: i32) -> Label {
        let l = self.next_label();
        if self.room() {
            let _ = writeln!(self.out, "l{l}: calc {n}");
        }
        self.counts.execs += 1;
        l
    }

    /// A CPU calc: ` cpu c` is appended iff `--cpu` is non-zero (2.3).
    pub fn calc_cpu(&mut self, n: u64, c: u64) -> Label {
        let l = self.next_label();
        if self.cpu != 0 {
            if self.room() {
                let _ = writeln!(self.out, "l{l}: calc {n} cpu {c}");
            }
        } else {
            if self.room() {
                let _ = writeln!(self.out, "l{l}: calc {n}");
            }
        }
        self.counts.execs += 1;
        l
    }

    /// `a requires b`.
    pub fn requires(&mut self, a: Label, b: Label) {
        self.dep(a, b, DepKind::Requires)
    }

    /// `a irequires b`.
    pub fn irequires(&mut self, a: Label, b: Label) {
        self.dep(a, b, DepKind::IRequires)
    }

    pub fn dep(&mut self, a: Label, b: Label, kind: DepKind) {
        let word = match kind {
            DepKind::Requires => "requires",
            DepKind::IRequires => "irequires",
        };
        if self.room() {
            let _ = writeln!(self.out, "l{a} {word} l{b}");
        }
        self.counts.reqs += 1;
        self.start_set.remove(&a);
        self.end_set.remove(&b);
    }

    pub fn comment(&mut self, text: &str) {
        if self.room() {
            let _ = writeln!(self.out, "/* {text} */");
        }
    }

    /// Empties the start and end sets (before an embedded collective).
    pub fn clear_sets(&mut self) {
        self.start_set.clear();
        self.end_set.clear();
        self.ops_log.clear();
    }

    /// (is_send, size) of the sends/recvs written since `clear_sets`.
    pub fn ops_since_clear(&self) -> &[(bool, i32)] {
        &self.ops_log
    }

    /// Start set in increasing label order.
    pub fn start_set(&self) -> Vec<Label> {
        self.start_set.iter().copied().collect()
    }

    /// End set in increasing label order.
    pub fn end_set(&self) -> Vec<Label> {
        self.end_set.iter().copied().collect()
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The finished text.
    pub fn finish(self) -> (String, Counts) {
        (self.out, self.counts)
    }
}

#[cfg(test)]
mod tests {
    /// The text stops growing at the limit (memory bounded).
    #[test]
    fn text_is_bounded() {
        let mut w = GoalWriter::new(2, 0, None);
        w.set_limit(200);
        w.start_rank(0);
        for _ in 0..100_000 {
            let a = w.send(8, 1);
            let b = w.recv(8, 1);
            w.requires(b, a);
        }
        w.end_rank();
        assert!(w.is_full());
        assert_eq!(w.counts().sends, 100_000);
        let (text, _) = w.finish();
        assert!(text.len() < 300, "{}", text.len());
    }

    use super::*;

    #[test]
    fn maketag_examples_of_spec_2_4() {
        assert_eq!(maketag(1, 100000), 16877216);
        assert_eq!(maketag(300, 6), 738197510);
        assert_eq!(maketag(128, 6), 18446744071562067974);
    }

    #[test]
    fn empty_rank_and_layout() {
        let mut w = GoalWriter::new(2, 0, None);
        w.start_rank(0);
        w.end_rank();
        w.start_rank(1);
        let s = w.send(5, 0);
        let c = w.calc_cpu(7, 3);
        w.irequires(s, c);
        w.end_rank();
        let (text, counts) = w.finish();
        assert_eq!(
            text,
            "num_ranks 2\n\nrank 0 {\n}\n\nrank 1 {\nl1: send 5b to 0 tag 0\nl2: calc 7\nl1 irequires l2\n}\n"
        );
        assert_eq!(
            counts.to_string(),
            "1 sends, 0 recvs, 1 execs, and 1 reqs among 2 hosts written"
        );
    }

    #[test]
    fn prelude_with_poll() {
        let mut w = GoalWriter::new(1, 2, Some(Prelude { nb: 10, poll: 4 }));
        w.start_rank(0);
        w.end_rank();
        let (text, _) = w.finish();
        assert_eq!(
            text,
            "num_ranks 1\n\nrank 0 {\nl1: calc 4 cpu 2\nl2: calc 4 cpu 2\nl2 requires l1\nl3: calc 4 cpu 2\nl3 requires l2\n}\n"
        );
    }
}
