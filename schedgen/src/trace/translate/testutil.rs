//! Test helpers: hand-written traces translated from memory.

use std::path::Path;

use super::files::RankTrace;
use super::{translate_traces, TraceError, TraceOptions, Translation};

/// Translates the traces of ranks 0, 1, ... given as texts.
pub(super) fn translate_texts(texts: &[&str], o: &TraceOptions) -> Result<Translation, TraceError> {
    let traces = texts
        .iter()
        .enumerate()
        .map(|(h, t)| RankTrace {
            file: format!("t/pmpi-trace-rank-{h}.txt").into(),
            text: t.to_string(),
            lines: t.lines().map(str::to_string).collect(),
        })
        .collect();
    translate_traces(Path::new("t/pmpi-trace-rank-0.txt"), traces, o)
}

/// The warnings of translating one rank's trace `text` with the default
/// options, and the error the same trace gives when `strict` has set the
/// option that turns such a warning into an error.
pub(super) fn warnings_then_error(
    text: &str,
    strict: impl FnOnce(&mut TraceOptions),
) -> (Vec<String>, TraceError) {
    let mut o = TraceOptions::default();
    let t = translate_texts(&[text], &o).unwrap();
    strict(&mut o);
    (t.warnings, translate_texts(&[text], &o).unwrap_err())
}

/// Rank `r`'s block of the translation of `texts`: its lines between
/// `rank r {` and `}`.
pub(super) fn block(texts: &[&str], o: &TraceOptions, r: usize) -> String {
    let t = translate_texts(texts, o).unwrap();
    rank_block(&t.goal, r)
}

/// Rank `r`'s block of a GOAL text.
pub(super) fn rank_block(goal: &str, r: usize) -> String {
    let start = format!("rank {r} {{\n");
    let body = goal.split(&start).nth(1).expect("the rank's block");
    body[..body.find("}\n").expect("the block's end")].to_string()
}
