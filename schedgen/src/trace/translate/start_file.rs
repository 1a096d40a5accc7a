//! `--traces-start`: the positions to resume each rank's trace from
//! (docs/model/schedgen.md 4.7), and C's `%.30g` they are written with.

use std::path::Path;

use crate::trace::reader::TraceError;

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

    pub(super) fn get(&self, h: usize) -> (u64, f64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_and_read_back() {
        let s = StartFile {
            entries: vec![(12, 100.0), (0, 1.5), (7, 0.0)],
        };
        assert_eq!(s.render(), "12 100\n0 1.5\n7 0\n");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("start");
        std::fs::write(&p, s.render() + "\n").unwrap();
        let back = StartFile::read(&p).unwrap();
        assert_eq!(back.entries, s.entries);
        assert_eq!(back.get(1), (0, 1.5));
        assert_eq!(back.get(9), (0, 0.0), "a rank beyond the file starts at 0");
        std::fs::write(&p, "12\n").unwrap();
        assert!(StartFile::read(&p).unwrap_err().to_string().contains(":1"));
        // a missing file: every rank from the start
        assert!(StartFile::read(&dir.path().join("none"))
            .unwrap()
            .entries
            .is_empty());
    }

    #[test]
    fn thirty_significant_digits() {
        assert_eq!(fmt_g30(0.0), "0");
        assert_eq!(fmt_g30(-2.25), "-2.25");
        assert_eq!(
            fmt_g30(2f64.powi(100)),
            "1.26765060022822940149670320538e+30"
        );
        assert_eq!(fmt_g30(0.0001), "0.000100000000000000004792173602386");
        assert_eq!(fmt_g30(0.00001), "1.00000000000000008180305391403e-05");
    }
}
