//! What the supervisor checks before it starts anything: the schedule's
//! header, the fabric's topology, preset, overrides and rank map, and the
//! protocol's options. A refusal here is exit 2 with one line that names
//! the problem, and no side was started (no process, no IPC object).
//!
//! The checks are the sides' own (ibnet's topology loaders, presets and
//! rank-map reader; ipc-proto's estimate rule) or, for the schedule, its
//! header only: the scheduler reads the whole schedule while the fabric
//! builds its network, in parallel, and a body error is still reported by
//! the scheduler itself.

use std::io::Read;
use std::path::Path;

/// The binary layout's magic numbers (loggopsim/src/binfmt.rs).
const MAGIC: u64 = 4223;
const MAGIC_ONE_SIDED: u64 = 4224;
const MAGIC_CONSUMED: u64 = 2342;

/// How much of a text schedule is looked at for its header (comments and
/// blank lines may come first).
const HEAD_BYTES: u64 = 1 << 20;

/// The schedule's rank count from its header (text `num_ranks N`, or the
/// binary layout's header), or the reason it cannot be one, worded as
/// loggopsim words it.
pub fn schedule_ranks(path: &Path) -> Result<u32, String> {
    let name = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read schedule '{name}': {e}"))?;
    if !meta.is_file() {
        return Err(format!("cannot read schedule '{name}': not a regular file"));
    }
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read schedule '{name}': {e}"))?;
    let mut head = Vec::new();
    f.take(HEAD_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read schedule '{name}': {e}"))?;
    if head.len() >= 8 {
        let magic = u64::from_le_bytes(head[0..8].try_into().unwrap());
        if magic == MAGIC_CONSUMED {
            return Err(format!(
                "{name}: magic 2342: this binary schedule was consumed by the reference simulator and is no longer valid; regenerate it"
            ));
        }
        if magic == MAGIC || magic == MAGIC_ONE_SIDED {
            if head.len() < 14 {
                return Err(format!(
                    "{name}: file too short for a binary schedule header"
                ));
            }
            let p = u32::from_le_bytes(head[8..12].try_into().unwrap());
            if p == 0 {
                return Err(format!("{name}: num_ranks is 0: the schedule is empty"));
            }
            return Ok(p);
        }
    }
    text_header(&head).map_err(|(line, col, msg)| match line {
        0 => format!("{name}: {msg}"),
        _ => format!("{name}:{line}:{col}: {msg}"),
    })
}

/// The first token of a GOAL text must be `num_ranks`, then a positive
/// number. Errors: (line, column, message); line 0 = no position.
fn text_header(s: &[u8]) -> Result<u32, (usize, usize, String)> {
    let mut line = 1;
    let mut line_start = 0;
    let mut i = 0;
    let mut in_comment = false;
    // the next token: (line, column, bytes)
    let mut token = |i: &mut usize| -> Option<(usize, usize, &[u8])> {
        loop {
            if *i >= s.len() {
                return None;
            }
            if in_comment {
                if s[*i..].starts_with(b"*/") {
                    in_comment = false;
                    *i += 2;
                } else {
                    if s[*i] == b'\n' {
                        line += 1;
                        line_start = *i + 1;
                    }
                    *i += 1;
                }
                continue;
            }
            match s[*i] {
                b'\n' => {
                    line += 1;
                    line_start = *i + 1;
                    *i += 1;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => *i += 1,
                b'/' if s[*i..].starts_with(b"//") => {
                    while *i < s.len() && s[*i] != b'\n' {
                        *i += 1;
                    }
                }
                b'/' if s[*i..].starts_with(b"/*") => {
                    in_comment = true;
                    *i += 2;
                }
                c => {
                    let start = *i;
                    let col = start - line_start + 1;
                    if c.is_ascii_alphanumeric() || c == b'_' {
                        while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
                            *i += 1;
                        }
                    } else {
                        *i += 1;
                    }
                    return Some((line, col, &s[start..*i]));
                }
            }
        }
    };
    let describe = |t: &[u8]| -> String {
        if t.first().is_some_and(|c| c.is_ascii_digit()) {
            format!("number {}", String::from_utf8_lossy(t))
        } else if t
            .first()
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            || matches!(t, b":" | b"{" | b"}")
        {
            format!("'{}'", String::from_utf8_lossy(t))
        } else {
            let c = t[0];
            if c.is_ascii() {
                format!("unexpected character {:?}", c as char)
            } else {
                format!("byte 0x{c:02x}")
            }
        }
    };
    let Some((l, c, t)) = token(&mut i) else {
        return Err((0, 0, "empty schedule: expected 'num_ranks N'".into()));
    };
    if t != b"num_ranks" {
        return Err((
            l,
            c,
            format!(
                "expected 'num_ranks N' at the start of the schedule, found {}",
                describe(t)
            ),
        ));
    }
    let after = (l, c + t.len());
    let Some((l, c, t)) = token(&mut i) else {
        return Err((
            after.0,
            after.1,
            "expected the number of ranks after 'num_ranks'".into(),
        ));
    };
    if !t.first().is_some_and(|c| c.is_ascii_digit()) || !t.iter().all(|c| c.is_ascii_digit()) {
        return Err((
            l,
            c,
            format!("expected the number of ranks, found {}", describe(t)),
        ));
    }
    match std::str::from_utf8(t)
        .ok()
        .and_then(|x| x.parse::<u64>().ok())
    {
        Some(0) => Err((l, c, "num_ranks is 0: the schedule is empty".into())),
        Some(n) if n < u32::MAX as u64 => Ok(n as u32),
        _ => Err((
            l,
            c,
            format!("num_ranks {} is too large", String::from_utf8_lossy(t)),
        )),
    }
}

/// The fabric's inputs as `ibnet serve` reads them (topology, preset,
/// `--set` overrides, rank map, in that order: ibnet::options::resolve),
/// without building the network. Returns how many ranks are mapped to
/// HCAs.
pub fn fabric(o: &ibnet::options::FabricOptions) -> Result<usize, String> {
    ibnet::options::resolve(o).map(|r| r.rank_nodes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(s: &str) -> Result<u32, String> {
        text_header(s.as_bytes()).map_err(|(l, c, m)| format!("{l}:{c}: {m}"))
    }

    #[test]
    fn text_headers() {
        let cases: [(&str, Result<u32, &str>); 7] = [
            ("num_ranks 2\nrank 0 {\n}\n", Ok(2)),
            (
                "// a comment\n/* block\n comment */ num_ranks  16 rank",
                Ok(16),
            ),
            (
                "root:x:0:0:root:/root:/bin/bash\n",
                Err("1:1: expected 'num_ranks N' at the start of the schedule, found 'root'"),
            ),
            (
                "\n\n  rank 0 {",
                Err("3:3: expected 'num_ranks N' at the start of the schedule, found 'rank'"),
            ),
            (
                "num_ranks 0",
                Err("1:11: num_ranks is 0: the schedule is empty"),
            ),
            (
                "num_ranks x",
                Err("1:11: expected the number of ranks, found 'x'"),
            ),
            (
                "  // nothing\n",
                Err("0:0: empty schedule: expected 'num_ranks N'"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(header(text), want.map_err(String::from), "{text:?}");
        }
    }

    #[test]
    fn binary_headers_and_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.bin");
        let mut b = 4223u64.to_le_bytes().to_vec();
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        std::fs::write(&p, &b).unwrap();
        assert_eq!(schedule_ranks(&p), Ok(8));
        std::fs::write(&p, 2342u64.to_le_bytes()).unwrap();
        assert!(schedule_ranks(&p).unwrap_err().contains("magic 2342"));
        let e = schedule_ranks(d.path()).unwrap_err();
        assert!(e.ends_with("not a regular file"), "{e}");
        let e = schedule_ranks(&d.path().join("none.goal")).unwrap_err();
        assert!(e.starts_with("cannot read schedule '"), "{e}");
    }

    #[test]
    fn fabric_inputs() {
        let fabric = |topology: &str, preset: &str, set: &[String], map: Option<&str>| {
            fabric(&ibnet::options::FabricOptions {
                topology: topology.into(),
                preset: preset.into(),
                set: set.to_vec(),
                map: map.map(Into::into),
            })
        };
        assert_eq!(fabric("H8_S6", "thesis-ddr", &[], None), Ok(8));
        let e = fabric("nosuch", "thesis-ddr", &[], None).unwrap_err();
        assert!(e.contains("nosuch"), "{e}");
        let e = fabric("H8_S6", "nope", &[], None).unwrap_err();
        assert!(e.starts_with("--preset nope: unknown preset"), "{e}");
        let e = fabric("H8_S6", "qdr", &["bogus=1".into()], None).unwrap_err();
        assert!(e.starts_with("--set bogus=1: "), "{e}");
        let e = fabric("H8_S6", "qdr", &[], Some("/nonexistent.map")).unwrap_err();
        assert!(e.contains("/nonexistent.map"), "{e}");
    }
}
