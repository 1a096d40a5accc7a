//! The trace files of one run (docs/model/schedgen.md 4.1): their names,
//! reading them into memory, and the ranks the traces declare but no file
//! holds.

use std::path::{Path, PathBuf};

use super::gaps::Ctx;
use crate::trace::reader::{recognise, Fields, Recognised, TraceError};

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
pub(super) struct RankTrace {
    pub(super) file: PathBuf,
    pub(super) text: String,
    pub(super) lines: Vec<String>,
}

/// Longest trace line accepted (a counts array of a million ranks fits).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Reads the consecutive trace files whose rank-0 file is `first` (4.1).
pub(super) fn read_traces(first: &Path) -> Result<Vec<RankTrace>, TraceError> {
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
        // trace (not an empty schedule with exit 0).
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

/// The world size the traces declare: the largest communicator size on
/// any MPI_Comm_rank / MPI_Comm_size line of rank 0.
pub(super) fn declared_world_size(tr: &RankTrace) -> Option<i64> {
    tr.lines
        .iter()
        .filter(|l| l.starts_with("MPI_Comm_rank:") || l.starts_with("MPI_Comm_size:"))
        .filter_map(|l| Fields::split(l).int(4, "comm size").ok())
        .max()
}

pub(super) fn check_missing_ranks(
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

#[cfg(test)]
mod tests {
    use super::super::testutil::warnings_then_error;
    use super::*;

    #[test]
    fn names_of_the_other_ranks() {
        let f = |s: &str, h| trace_file_names(Path::new(s), h).map(|p| p.display().to_string());
        assert_eq!(
            f("/tmp/run-0/pmpi-trace-rank-0.txt", 12).unwrap(),
            "/tmp/run-0/pmpi-trace-rank-12.txt"
        );
        assert_eq!(f("t-000.txt", 3).unwrap(), "t-3.txt");
        assert!(f("t-0-0.txt", 1).is_err());
        assert!(f("trace.txt", 1).is_err());
        assert!(f("t-0.txt.bz2", 1).is_err());
    }

    #[test]
    fn ranks_the_traces_declare_but_no_file_holds() {
        let r0 = "MPI_Init:-:1000:2000:100\nMPI_Comm_size:101:0,0,4:102\nMPI_Finalize:400:-\n";
        let (warnings, e) = warnings_then_error(r0, |o| o.require_all = true);
        let msg = "the traces describe 4 ranks (communicator size in t/pmpi-trace-rank-0.txt) \
                   but only 1 trace file(s) exist; missing: t/pmpi-trace-rank-1.txt, \
                   t/pmpi-trace-rank-2.txt, t/pmpi-trace-rank-3.txt";
        assert_eq!(
            warnings,
            [format!(
                "{msg}; translating the 1 available rank(s) only (collectives over 4 ranks \
                 are skipped)"
            )]
        );
        assert_eq!(e.to_string(), msg);
    }
}
