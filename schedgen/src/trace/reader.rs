//! The one reader of liballprof traces (docs/model/schedgen.md 4.2, 4.3):
//! splitting a file into numbered lines ([`lines_from`]), recognising a
//! line's function, taking its fields apart, the tracer's CPU-time fields
//! ([`split_cpu_times`]), and a whole file read into checked call records
//! ([`Trace`], the reading of `mpi-tracer summary` and `compare`).
//!
//! The translator takes lines as the reference does (unknown lines are
//! warned about and skipped, fields read like `%i`/`%lf`); [`Trace`]
//! checks what every well-formed trace satisfies and stops at the first
//! line that does not. Both split a file with [`lines_from`] and take the
//! CPU times off with [`split_cpu_times`].

mod records;

use std::path::{Path, PathBuf};

pub use records::{Record, Trace};

/// A trace problem with the file and line it comes from.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{file}:{line}: {msg}")]
    Line {
        file: PathBuf,
        line: usize,
        msg: String,
    },
    /// A problem at a column of a line (1-based), for the readers that
    /// point at the field.
    #[error("{file}:{line}:{col}: {msg}")]
    Column {
        file: PathBuf,
        line: usize,
        col: usize,
        msg: String,
    },
    #[error("{file}: {msg}")]
    File { file: PathBuf, msg: String },
    /// A file that could not be read as text.
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Other(String),
}

impl TraceError {
    pub fn line(file: &Path, line: usize, msg: impl Into<String>) -> Self {
        TraceError::Line {
            file: file.to_path_buf(),
            line,
            msg: msg.into(),
        }
    }

    pub fn column(file: &Path, line: usize, col: usize, msg: impl Into<String>) -> Self {
        TraceError::Column {
            file: file.to_path_buf(),
            line,
            col,
            msg: msg.into(),
        }
    }
}

/// One line of a trace with its number and the byte offset just after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number in the file.
    pub lineno: usize,
    /// The line without its end (`\n` or `\r\n`).
    pub text: &'a str,
    /// Byte offset just after the line's end.
    pub end: u64,
}

/// Splits `text[from..]` into lines; line numbers continue the count of
/// newlines before `from` (the translator's --traces-start resumes at a
/// saved offset).
pub fn lines_from(text: &str, from: usize) -> impl Iterator<Item = Line<'_>> {
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
        Some(Line {
            lineno,
            text: line.strip_suffix('\r').unwrap_or(line),
            end: next as u64,
        })
    })
}

/// The MPI functions the translator knows, after the reference's name hash
/// (so `MPI_Ssend` is `Rsend`, `MPI_Ibarrier` is `Finalize`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    Init,
    Send,
    Rsend,
    Recv,
    Isend,
    Irecv,
    Wait,
    Waitall,
    Sendrecv,
    Barrier,
    Allreduce,
    Iallreduce,
    Bcast,
    Allgather,
    Reduce,
    Alltoall,
    Finalize,
    // Extensions beyond the reference (it ignores these).
    Alltoallv,
    Allgatherv,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    ReduceScatter,
    /// Known calls without communication meaning (Comm_rank, Test, ...);
    /// their time becomes part of the next gap.
    Ignored,
}

/// Canonical names of every recognised function.
const NAMES: &[(&str, Call)] = &[
    ("MPI_Init", Call::Init),
    ("MPI_Send", Call::Send),
    ("MPI_Rsend", Call::Rsend),
    ("MPI_Recv", Call::Recv),
    ("MPI_Isend", Call::Isend),
    ("MPI_Irecv", Call::Irecv),
    ("MPI_Wait", Call::Wait),
    ("MPI_Waitall", Call::Waitall),
    ("MPI_Sendrecv", Call::Sendrecv),
    ("MPI_Barrier", Call::Barrier),
    ("MPI_Allreduce", Call::Allreduce),
    ("MPI_Iallreduce", Call::Iallreduce),
    ("MPI_Bcast", Call::Bcast),
    ("MPI_Allgather", Call::Allgather),
    ("MPI_Reduce", Call::Reduce),
    ("MPI_Alltoall", Call::Alltoall),
    ("MPI_Finalize", Call::Finalize),
    ("MPI_Alltoallv", Call::Alltoallv),
    ("MPI_Allgatherv", Call::Allgatherv),
    ("MPI_Gather", Call::Gather),
    ("MPI_Gatherv", Call::Gatherv),
    ("MPI_Scatter", Call::Scatter),
    ("MPI_Scatterv", Call::Scatterv),
    ("MPI_Reduce_scatter", Call::ReduceScatter),
    ("MPI_Comm_rank", Call::Ignored),
    ("MPI_Comm_size", Call::Ignored),
    ("MPI_Iprobe", Call::Ignored),
    ("MPI_Test", Call::Ignored),
    ("MPI_Testall", Call::Ignored),
    ("MPI_Get_count", Call::Ignored),
    ("MPI_Scan", Call::Ignored),
    ("MPI_Exscan", Call::Ignored),
];

/// The reference's function number: sum over the first at most 14
/// characters of i * (code >> 1), i = 1, 2, ...
pub fn function_number(name: &str) -> u64 {
    name.bytes()
        .take(14)
        .enumerate()
        .map(|(i, c)| (i as u64 + 1) * (c as u64 >> 1))
        .sum()
}

/// Result of recognising a line's function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recognised {
    /// A known function; `canonical` differs from the written name when the
    /// reference's hash aliases it (e.g. MPI_Ssend -> MPI_Rsend).
    Known { call: Call, canonical: &'static str },
    /// Starts with `MPI_` but is not a function we know.
    Unknown(String),
    /// Header, empty line or other text.
    NotACall,
}

/// Recognises the function of a line by the reference's number.
pub fn recognise(line: &str) -> Result<Recognised, String> {
    let name = line.split(':').next().unwrap_or("");
    let num = function_number(name);
    if let Some(&(canonical, call)) = NAMES.iter().find(|(n, _)| function_number(n) == num) {
        if !line.starts_with("MPI_") {
            return Err(format!(
                "`{name}` has the function number of {canonical} but does not start with MPI_ \
                 (the reference stops here)"
            ));
        }
        if !line.contains(':') {
            return Ok(Recognised::Unknown(name.to_string()));
        }
        return Ok(Recognised::Known { call, canonical });
    }
    if line.starts_with("MPI_") {
        Ok(Recognised::Unknown(name.to_string()))
    } else {
        Ok(Recognised::NotACall)
    }
}

/// The fields of one line: `f(0)` is the name, `f(k)` the text between the
/// k-th and (k+1)-th separator (`:` or `,`).
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    parts: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    pub fn split(line: &'a str) -> Self {
        Fields {
            parts: line.split([':', ',']).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.parts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    fn get(&self, k: usize, what: &str) -> Result<&'a str, String> {
        self.parts.get(k).copied().ok_or_else(|| {
            format!(
                "field {k} ({what}) missing: the line has only {} fields",
                self.parts.len().saturating_sub(1)
            )
        })
    }

    /// An integer read like `%i` (decimal, 0x hex, leading-0 octal; trailing
    /// junk ignored), saturated to 64 bits.
    pub fn int(&self, k: usize, what: &str) -> Result<i64, String> {
        let s = self.get(k, what)?;
        parse_c_int(s).ok_or_else(|| format!("field {k} ({what}): `{s}` is not an integer"))
    }

    /// An MPI tag written into the schedule as traced (`--raw-tags`): a C
    /// `int`, so -2^31..2^31-1 (negative ones are written sign-extended, as
    /// the GOAL reader takes them). Anything wider is refused with the
    /// field's text: the GOAL tag is 32 bits (the binary layout's u32), so
    /// it could not be written exactly.
    pub fn tag32(&self, k: usize, what: &str) -> Result<i64, String> {
        let v = self.int(k, what)?;
        if v < i32::MIN as i64 || v > i32::MAX as i64 {
            return Err(format!(
                "field {k} ({what}): tag {} does not fit in 32 bits (an MPI tag is a C int, \
                 -2147483648..2147483647; GOAL tags are 32-bit)",
                self.get(k, what)?.trim()
            ));
        }
        Ok(v)
    }

    /// An integer truncated to its low 32 bits (C `int` behaviour).
    pub fn int32(&self, k: usize, what: &str) -> Result<i32, String> {
        Ok(self.int(k, what)? as i32)
    }

    /// An unsigned 64-bit value (addresses).
    pub fn addr(&self, k: usize, what: &str) -> Result<u64, String> {
        let s = self.get(k, what)?;
        parse_c_int(s)
            .map(|v| v as u64)
            .ok_or_else(|| format!("field {k} ({what}): `{s}` is not an address"))
    }

    /// A time (double).
    pub fn time(&self, k: usize, what: &str) -> Result<f64, String> {
        let s = self.get(k, what)?;
        parse_c_double(s).ok_or_else(|| format!("field {k} ({what}): `{s}` is not a number"))
    }
}

/// The tracer's CPU times of one record, in ns: at the call (C0) and at
/// its return (C1), `None` where the clock could not be read (`-`).
pub type CpuTimes = (Option<u64>, Option<u64>);

/// A malformed `cpu=` field: why, and the 1-based column where the field
/// starts (the tracer's summary names it; the translator names the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuFieldError {
    pub col: usize,
    pub msg: String,
}

/// The one reader of the tracer's `:cpu=C0:C1` fields (docs/tracing.md,
/// "CPU times"), used by the translator and by `mpi-tracer summary`: they
/// follow the last liballprof field, so they are found from the end of the
/// line. Returns the record without them and the times, or the record as
/// it is and `None` when it has none (liballprof's and the thesis's
/// traces). C1 may be missing (MPI_Finalize writes only C0).
pub fn split_cpu_times(line: &str) -> Result<(&str, Option<CpuTimes>), CpuFieldError> {
    let Some(i) = line.rfind(":cpu=") else {
        return Ok((line, None));
    };
    let err = |msg: String| CpuFieldError { col: i + 2, msg };
    let values: Vec<&str> = line[i + 5..].split(':').collect();
    if values.len() > 2 {
        return Err(err(format!(
            "`cpu=` must be followed by at most one more field (C1), found {}",
            values.len() - 1
        )));
    }
    let val = |s: &str, what: &str| -> Result<Option<u64>, CpuFieldError> {
        match s.trim() {
            "-" => Ok(None),
            v => v.parse::<u64>().map(Some).map_err(|_| {
                err(format!(
                    "{what} `{s}` is not a CPU time (non-negative integer nanoseconds or `-`)"
                ))
            }),
        }
    };
    let c0 = val(values[0], "cpu=")?;
    let c1 = match values.get(1) {
        Some(s) => val(s, "the CPU time at return")?,
        None => None,
    };
    Ok((&line[..i], Some((c0, c1))))
}

/// `sscanf("%i")`-like integer parsing: leading blanks, optional sign, base
/// prefix; stops at the first non-digit; saturates to the i64 range.
pub fn parse_c_int(s: &str) -> Option<i64> {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if t.len() > 1 && (t.starts_with("0x") || t.starts_with("0X")) {
        (16, &t[2..])
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    let mut val: i128 = 0;
    let mut any = false;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        any = true;
        val = (val * radix as i128 + d as i128).min(i64::MAX as i128 + 1);
    }
    if !any {
        return None;
    }
    let v = if neg { -val } else { val };
    Some(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// `%lf`-like parsing: the longest numeric prefix.
pub fn parse_c_double(s: &str) -> Option<f64> {
    let t = s.trim_start();
    let end = t
        .char_indices()
        .take_while(|&(i, c)| {
            c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+') && i == 0)
                || c == 'e'
                || c == 'E'
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    // Back off trailing characters that do not form a number (e.g. "12e").
    // At most 1024 characters are considered: backing off is quadratic, and
    // a line may be megabytes of digits (no real number is that long).
    let mut e = end.min(1024);
    while e > 0 {
        if let Ok(v) = t[..e].parse::<f64>() {
            return Some(v);
        }
        e -= 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_aliases_of_spec_4_3() {
        assert_eq!(function_number("MPI_Ssend"), function_number("MPI_Rsend"));
        assert_eq!(
            function_number("MPI_Ibarrier"),
            function_number("MPI_Finalize")
        );
        assert_eq!(
            function_number("MPI_Alltoallw"),
            function_number("MPI_Alltoallv")
        );
        assert!(matches!(
            recognise("MPI_Ssend:1:2"),
            Ok(Recognised::Known {
                call: Call::Rsend,
                canonical: "MPI_Rsend"
            })
        ));
        assert_eq!(
            recognise("MPI_Send :1:2"),
            Ok(Recognised::Unknown("MPI_Send ".into()))
        );
        assert_eq!(recognise("# hostname: x"), Ok(Recognised::NotACall));
        assert_eq!(
            recognise("MPI_Waitany:1:2"),
            Ok(Recognised::Unknown("MPI_Waitany".into()))
        );
        // Every canonical name has its own number except the documented aliases.
        for (i, (a, _)) in NAMES.iter().enumerate() {
            for (b, _) in &NAMES[i + 1..] {
                assert_ne!(function_number(a), function_number(b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(parse_c_int("  42abc"), Some(42));
        assert_eq!(parse_c_int("0x10"), Some(16));
        assert_eq!(parse_c_int("010"), Some(8));
        assert_eq!(parse_c_int("-1"), Some(-1));
        assert_eq!(parse_c_int("-"), None);
        assert_eq!(parse_c_int("99999999999999999999999"), Some(i64::MAX));
        assert_eq!(parse_c_double("1302767374553965"), Some(1302767374553965.0));
        assert_eq!(parse_c_double("1.5x"), Some(1.5));
        assert_eq!(parse_c_double("x"), None);
    }

    #[test]
    fn cpu_times_are_split_off_the_end() {
        let l = "MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115:cpu=9000:9500";
        assert_eq!(
            split_cpu_times(l),
            Ok((
                "MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115",
                Some((Some(9000), Some(9500)))
            ))
        );
        assert_eq!(
            split_cpu_times("MPI_Finalize:150:-:cpu=20000:-"),
            Ok(("MPI_Finalize:150:-", Some((Some(20000), None))))
        );
        assert_eq!(
            split_cpu_times("MPI_Finalize:150:-:cpu=7"),
            Ok(("MPI_Finalize:150:-", Some((Some(7), None))))
        );
        assert_eq!(
            split_cpu_times("MPI_Init:-:1:2:100"),
            Ok(("MPI_Init:-:1:2:100", None))
        );
        // errors name the column where `cpu=` starts
        let e = split_cpu_times("MPI_Init:-:1:2:100:cpu=x5:6").unwrap_err();
        assert_eq!(e.col, 20);
        assert!(e.msg.contains("`x5` is not a CPU time"), "{}", e.msg);
        let e = split_cpu_times("MPI_Init:-:1:2:100:cpu=5:-1").unwrap_err();
        assert!(
            e.msg.starts_with("the CPU time at return `-1`"),
            "{}",
            e.msg
        );
        let e = split_cpu_times("MPI_Init:-:1:2:100:cpu=5:6:7").unwrap_err();
        assert!(e.msg.contains("at most one more field"), "{}", e.msg);
    }

    #[test]
    fn lines_with_numbers_and_offsets() {
        let text = "a\r\nbb\n\nccc";
        let r: Vec<(usize, &str, u64)> = lines_from(text, 0)
            .map(|r| (r.lineno, r.text, r.end))
            .collect();
        assert_eq!(r, [(1, "a", 3), (2, "bb", 6), (3, "", 7), (4, "ccc", 10)]);
        // from an offset, line numbers continue
        let r: Vec<(usize, &str)> = lines_from(text, 6).map(|r| (r.lineno, r.text)).collect();
        assert_eq!(r, [(3, ""), (4, "ccc")]);
        assert_eq!(lines_from(text, 99).count(), 0);
    }

    #[test]
    fn error_positions() {
        let f = Path::new("t.txt");
        assert_eq!(TraceError::line(f, 3, "x").to_string(), "t.txt:3: x");
        assert_eq!(TraceError::column(f, 3, 7, "y").to_string(), "t.txt:3:7: y");
    }

    #[test]
    fn field_numbering() {
        let f = Fields::split("MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115");
        assert_eq!(f.int(3, "count").unwrap(), 10);
        assert_eq!(f.int(5, "size").unwrap(), 8);
        assert_eq!(f.time(12, "end").unwrap(), 115.0);
        assert!(f.int(13, "x").unwrap_err().contains("missing"));
    }
}
