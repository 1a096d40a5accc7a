//! A whole trace file read into checked call records: `#` header lines,
//! then one line per MPI call, `MPI_Name:field:field:...`, with the call
//! time first and the return time last (MPI_Init: `-` instead of the call
//! time; MPI_Finalize: a single time followed by `-`), docs/tracing.md.
//!
//! Unlike the translator, which reads lines as the reference does, this
//! reading checks what every well-formed trace satisfies (known shape,
//! integer microsecond times, return >= call, times never decreasing, CPU
//! time at return not before the one at the call) and stops at the first
//! line that does not, naming its line and column. `mpi-tracer summary`
//! and `mpi-tracer compare` take run times and call counts from it.

use std::collections::BTreeMap;
use std::path::Path;

use super::{lines_from, split_cpu_times, CpuTimes, TraceError};

/// One MPI call.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number in the file.
    pub line: usize,
    /// Function name, e.g. `MPI_Send`.
    pub name: String,
    /// Call time in microseconds (`None` for MPI_Init, which has `-`).
    pub call_us: Option<u64>,
    /// Return time in microseconds (for MPI_Finalize the single time given).
    pub return_us: u64,
    /// Every `:`-separated field after the name, as written (without the
    /// trailing `cpu=` fields).
    pub fields: Vec<String>,
    /// The thread CPU time (ns) at the call and at its return, from the
    /// optional trailing `:cpu=C0:C1` fields (`-` for an unknown value;
    /// MPI_Finalize has only C0). `None` in traces without CPU times
    /// (liballprof's, the thesis's, older tracers').
    pub cpu_ns: Option<CpuTimes>,
}

/// A parsed trace file of one rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// Value of the `# clockdiff:` header (written at MPI_Init).
    pub clockdiff_init: Option<f64>,
    /// Value of the `# Finalize clockdiff:` header.
    pub clockdiff_finalize: Option<f64>,
    pub records: Vec<Record>,
}

/// Parses a time field: decimal digits only (microseconds since the epoch).
fn parse_time(
    file: &Path,
    line: usize,
    col: usize,
    field: &str,
    what: &str,
) -> Result<u64, TraceError> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TraceError::column(
            file,
            line,
            col,
            format!("{what} `{field}` is not an integer number of microseconds"),
        ));
    }
    field.parse().map_err(|_| {
        TraceError::column(file, line, col, format!("{what} `{field}` is out of range"))
    })
}

/// Leading floating-point number of a header value (`-289.201736 s (...)`);
/// `None` when there is none (the header is informative here).
fn header_number(rest: &str) -> Option<f64> {
    rest.split_whitespace().next()?.parse().ok()
}

impl Trace {
    /// Parses the text of one trace file; `file` is only used in messages.
    pub fn parse(file: &Path, text: &str) -> Result<Trace, TraceError> {
        let syntax = |line, col, msg: String| TraceError::column(file, line, col, msg);
        let mut trace = Trace::default();
        let mut last_time: Option<(u64, usize)> = None;
        for l in lines_from(text, 0) {
            let line_no = l.lineno;
            // Every trailing `\r`, not only the one of a `\r\n` end.
            let line = l.text.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            if let Some(h) = line.strip_prefix('#') {
                let h = h.trim_start();
                if let Some(rest) = h.strip_prefix("Finalize clockdiff:") {
                    trace.clockdiff_finalize = header_number(rest);
                } else if let Some(rest) = h.strip_prefix("clockdiff:") {
                    trace.clockdiff_init = header_number(rest);
                }
                continue;
            }
            if !line.starts_with("MPI_") {
                return Err(syntax(
                    line_no,
                    1,
                    "line starts neither with `#` nor with `MPI_`".into(),
                ));
            }
            let (call_line, cpu_ns) =
                split_cpu_times(line).map_err(|e| syntax(line_no, e.col, e.msg))?;
            if let Some((Some(a), Some(b))) = cpu_ns {
                if b < a {
                    return Err(syntax(
                        line_no,
                        call_line.len() + 2,
                        format!("CPU time at return {b} ns is before the one at the call {a} ns"),
                    ));
                }
            }
            let mut parts = call_line.split(':');
            let name = parts.next().unwrap_or_default().to_string();
            let fields: Vec<String> = parts.map(str::to_string).collect();
            // Column (1-based) where field k (0-based) starts.
            let col_of = |k: usize| -> usize {
                name.len() + 2 + fields[..k].iter().map(|f| f.len() + 1).sum::<usize>()
            };
            if name.len() <= 4
                || !name[4..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(syntax(line_no, 1, format!("bad function name `{name}`")));
            }
            let shape = |msg: &str| syntax(line_no, name.len() + 1, msg.into());
            let (call_us, return_us) = match name.as_str() {
                "MPI_Init" => {
                    if fields.len() != 4 || fields[0] != "-" {
                        return Err(shape("MPI_Init must be `MPI_Init:-:argc:argv:return`"));
                    }
                    let end = parse_time(file, line_no, col_of(3), &fields[3], "return time")?;
                    (None, end)
                }
                "MPI_Finalize" => {
                    if fields.len() != 2 || fields[1] != "-" {
                        return Err(shape("MPI_Finalize must be `MPI_Finalize:time:-`"));
                    }
                    let t = parse_time(file, line_no, col_of(0), &fields[0], "time")?;
                    (Some(t), t)
                }
                _ => {
                    if fields.len() < 2 {
                        return Err(shape("a call needs at least a call time and a return time"));
                    }
                    let last = fields.len() - 1;
                    let call = parse_time(file, line_no, col_of(0), &fields[0], "call time")?;
                    let ret =
                        parse_time(file, line_no, col_of(last), &fields[last], "return time")?;
                    if ret < call {
                        return Err(syntax(
                            line_no,
                            col_of(last),
                            format!("return time {ret} is before the call time {call}"),
                        ));
                    }
                    (Some(call), ret)
                }
            };
            let first = call_us.unwrap_or(return_us);
            if let Some((prev, prev_line)) = last_time {
                if first < prev {
                    return Err(syntax(
                        line_no,
                        name.len() + 2,
                        format!("time {first} is earlier than {prev} on line {prev_line}"),
                    ));
                }
            }
            last_time = Some((return_us, line_no));
            trace.records.push(Record {
                line: line_no,
                name,
                call_us,
                return_us,
                fields,
                cpu_ns,
            });
        }
        Ok(trace)
    }

    /// Reads and parses one file (UTF-8 text, else an error).
    pub fn read(file: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(file).map_err(|source| TraceError::Io {
            file: file.to_path_buf(),
            source,
        })?;
        Trace::parse(file, &text)
    }

    /// Number of calls of function `name`.
    pub fn count(&self, name: &str) -> usize {
        self.records.iter().filter(|r| r.name == name).count()
    }

    /// Number of calls per function name.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for r in &self.records {
            *m.entry(r.name.clone()).or_insert(0) += 1;
        }
        m
    }

    /// Return time of MPI_Init.
    pub fn init_return_us(&self) -> Option<u64> {
        self.records
            .iter()
            .find(|r| r.name == "MPI_Init")
            .map(|r| r.return_us)
    }

    /// The MPI_Finalize time (the thesis calls it Finalize's return time).
    pub fn finalize_us(&self) -> Option<u64> {
        self.records
            .iter()
            .rev()
            .find(|r| r.name == "MPI_Finalize")
            .map(|r| r.return_us)
    }

    /// Run time as the thesis defines it: MPI_Finalize time minus the return
    /// time of MPI_Init, in microseconds.
    pub fn run_time_us(&self) -> Option<u64> {
        self.finalize_us()?.checked_sub(self.init_return_us()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Trace, TraceError> {
        Trace::parse(Path::new("t.txt"), text)
    }

    #[test]
    fn records_headers_and_line_numbers() {
        let text = "# clockdiff: -2.5 s (x)\r\n\r\nMPI_Init:-:1:2:100\r\r\n\
                    MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115\n\
                    #Finalize clockdiff: 1.25\nMPI_Finalize:150:-";
        let t = parse(text).unwrap();
        assert_eq!(t.clockdiff_init, Some(-2.5));
        assert_eq!(t.clockdiff_finalize, Some(1.25));
        let lines: Vec<usize> = t.records.iter().map(|r| r.line).collect();
        assert_eq!(lines, [3, 4, 6]);
        assert_eq!(t.records[0].call_us, None);
        assert_eq!(t.records[0].return_us, 100);
        assert_eq!(t.records[0].fields, ["-", "1", "2", "100"]);
        assert_eq!(t.records[1].call_us, Some(110));
        assert_eq!(t.records[1].fields.len(), 8);
        assert_eq!(t.records[2].call_us, Some(150));
        assert_eq!(t.records[2].return_us, 150);
        assert_eq!(t.count("MPI_Send"), 1);
        assert_eq!(t.counts().get("MPI_Init"), Some(&1));
        assert_eq!(t.run_time_us(), Some(50));
        // A header without a number is kept as absent.
        assert_eq!(parse("# clockdiff: n/a\n").unwrap().clockdiff_init, None);
    }

    #[test]
    fn errors_name_line_and_column() {
        for (text, msg) in [
            // "MPI_Send:12:x:5": the return time field starts at column 15.
            (
                "# h\nMPI_Send:12:x:5\n",
                "t.txt:2:15: return time 5 is before the call time 12",
            ),
            (
                "MPI_Barrier:1x:0,0,2:5\n",
                "t.txt:1:13: call time `1x` is not an integer number of microseconds",
            ),
            (
                "MPI_Init:-:1:2:100\nMPI_Barrier:99:0,0,2:120\n",
                "t.txt:2:13: time 99 is earlier than 100 on line 1",
            ),
            (
                "hello\n",
                "t.txt:1:1: line starts neither with `#` nor with `MPI_`",
            ),
            (
                "MPI_Finalize:10\n",
                "t.txt:1:13: MPI_Finalize must be `MPI_Finalize:time:-`",
            ),
            (
                "MPI_Se-nd:1:2\n",
                "t.txt:1:1: bad function name `MPI_Se-nd`",
            ),
            (
                "MPI_Wait:1\n",
                "t.txt:1:9: a call needs at least a call time and a return time",
            ),
            // A malformed CPU time: the column of `cpu=`.
            (
                "MPI_Init:-:1:2:100:cpu=x5:6\n",
                "t.txt:1:20: cpu= `x5` is not a CPU time (non-negative integer nanoseconds or `-`)",
            ),
            (
                "MPI_Init:-:1:2:100:cpu=7:6\n",
                "t.txt:1:20: CPU time at return 6 ns is before the one at the call 7 ns",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err().to_string(), msg, "{text}");
        }
        let err = Trace::read(Path::new("/nonexistent/t.txt")).unwrap_err();
        assert!(matches!(err, TraceError::Io { .. }), "{err}");
        assert!(err.to_string().starts_with("/nonexistent/t.txt: "), "{err}");
    }

    #[test]
    fn cpu_fields_are_split_off_and_checked() {
        let text = "# cputime: ...\nMPI_Init:-:1:2:100:cpu=5000:5000\n\
                    MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115:cpu=9000:9500\n\
                    MPI_Finalize:150:-:cpu=20000:-\n";
        let t = parse(text).unwrap();
        assert_eq!(t.records[0].cpu_ns, Some((Some(5000), Some(5000))));
        assert_eq!(t.records[0].fields.len(), 4);
        assert_eq!(t.records[1].return_us, 115);
        assert_eq!(t.records[1].cpu_ns, Some((Some(9000), Some(9500))));
        assert_eq!(t.records[2].cpu_ns, Some((Some(20000), None)));
        assert_eq!(t.run_time_us(), Some(50));
        // Without the fields (liballprof, the thesis): None.
        let t = parse("MPI_Init:-:1:2:100\nMPI_Finalize:150:-\n").unwrap();
        assert_eq!(t.records[0].cpu_ns, None);
    }

    #[test]
    fn run_time_needs_init_and_finalize() {
        let t = parse("MPI_Init:-:1:2:100\nMPI_Barrier:101:0,0,2:120\n").unwrap();
        assert_eq!(t.run_time_us(), None);
        let t = parse("MPI_Init:-:1:2:100\nMPI_Finalize:150:-\n").unwrap();
        assert_eq!(t.run_time_us(), Some(50));
    }
}
