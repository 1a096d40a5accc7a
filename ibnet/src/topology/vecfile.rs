//! Readers for the reference model's small text formats (docs/model/fabric.md 9):
//! vector files (`.fdbs`, `.dstSeq`) and index files (`.fdbs.ini`,
//! `.dstSeq.ini`).

use std::collections::BTreeMap;
use std::path::Path;

use super::error::{Loc, TopoError};

/// One vector of a vector file with the line where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vector {
    pub values: Vec<u16>,
    /// 1-based line of the first record of this vector.
    pub line: usize,
}

/// Parse a vector file.
///
/// Each line is `<index>: v v v ...` (values separated by spaces and/or
/// commas). Lines with an index already seen append to that vector. A line
/// without an index (the spec allows it) continues numbering: it belongs to
/// the vector after the previous line's (vector 0 on the first line); this
/// is our interpretation, documented in docs/topology.md. A blank line is an
/// error (Q16: the reference crashes on it).
pub fn parse_vectors(text: &str, file: &Path) -> Result<BTreeMap<usize, Vector>, TopoError> {
    let mut out: BTreeMap<usize, Vector> = BTreeMap::new();
    let mut prev: Option<usize> = None;
    // `lines()` drops one final newline, so "a\nb\n" has no blank line but
    // "a\n\nb" and "a\n\n" do.
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            return Err(TopoError::parse(
                Loc::line(file, lineno),
                "blank line in vector file (every line must be `<index>: values...`)",
            ));
        }
        let trimmed = line.trim_start();
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        let (index, rest, rest_col) = if digits > 0 && trimmed.as_bytes().get(digits) == Some(&b':')
        {
            let idx: usize = trimmed[..digits]
                .parse()
                .map_err(|_| TopoError::parse(Loc::line(file, lineno), "vector index too large"))?;
            (
                idx,
                &trimmed[digits + 1..],
                line.len() - trimmed.len() + digits + 2,
            )
        } else {
            // the vector after the previous line's (an overflow is an
            // error, not a wrap: found by the NED fuzz test)
            let next = match prev {
                None => 0,
                Some(p) => p.checked_add(1).ok_or_else(|| {
                    TopoError::parse(
                        Loc::line(file, lineno),
                        "vector index too large (a line without an index follows index 18446744073709551615)",
                    )
                })?,
            };
            (next, trimmed, line.len() - trimmed.len() + 1)
        };
        prev = Some(index);
        let vec = out.entry(index).or_insert_with(|| Vector {
            values: Vec::new(),
            line: lineno,
        });
        let mut col = rest_col;
        for tok in rest.split([' ', '\t', ',']) {
            if !tok.is_empty() {
                let v: u16 = tok.parse().map_err(|_| {
                    TopoError::parse(
                        Loc {
                            col,
                            ..Loc::line(file, lineno)
                        },
                        format!("expected a non-negative integer (at most 65535), found {tok:?}"),
                    )
                })?;
                vec.values.push(v);
            }
            col += tok.len() + 1;
        }
    }
    Ok(out)
}

/// One `name = index` assignment of an index file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// Module instance name, e.g. `SW_L0_0_0_U1` or `H_3_U1`.
    pub name: String,
    pub index: usize,
    pub line: usize,
}

impl IndexEntry {
    /// The vector of `vectors` (read from `file`) this entry of the index
    /// file `ini` names; the error calls it a `what` (a table, a
    /// destination sequence).
    pub(crate) fn vector<'v>(
        &self,
        vectors: &'v BTreeMap<usize, Vector>,
        what: &str,
        ini: &Path,
        file: &Path,
    ) -> Result<&'v Vector, TopoError> {
        vectors.get(&self.index).ok_or_else(|| {
            TopoError::parse(
                Loc::line(ini, self.line),
                format!(
                    "{} uses {what} {}, which {} does not have",
                    self.name,
                    self.index,
                    file.display()
                ),
            )
        })
    }
}

/// Parse an OMNeT++-style index file (`.fdbs.ini`, `.dstSeq.ini`), keeping
/// the assignments whose parameter name is one of `params`.
///
/// Keys look like `**.SW_L0_0_0_U1.pktfwd.fdbIndex` or
/// `**H_3_U1.app.dstSeqVecIdx`: the instance name is the component two
/// before the parameter (`<instance>.<submodule>.<param>`). Section headers,
/// comments (`#`, `;`), blank lines and other parameters are ignored.
pub fn parse_index_file(
    text: &str,
    file: &Path,
    params: &[&str],
) -> Result<Vec<IndexEntry>, TopoError> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with(';')
            || line.starts_with('[')
        {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(TopoError::parse(
                Loc::line(file, lineno),
                format!("expected `key = value`, found {line:?}"),
            ));
        };
        let key = key.trim();
        let comps: Vec<&str> = key
            .trim_start_matches('*')
            .trim_start_matches('.')
            .split('.')
            .collect();
        let param = *comps.last().unwrap_or(&"");
        if !params.contains(&param) {
            continue;
        }
        // `**.SW_1**.fdbIndex` (the 3h_2s example): the instance followed by
        // `**`, any submodule path
        let short = (comps.len() == 2)
            .then(|| comps[0].strip_suffix("**"))
            .flatten();
        if comps.len() < 3 && short.is_none() {
            return Err(TopoError::parse(
                Loc::line(file, lineno),
                format!("key {key:?}: expected `**.<instance>.<submodule>.{param}`"),
            ));
        }
        let name = short.unwrap_or_else(|| comps[comps.len() - 3]);
        if name.is_empty() || name.contains('*') || name.contains('[') {
            return Err(TopoError::parse(
                Loc::line(file, lineno),
                format!("key {key:?}: wildcard or empty instance names are not supported"),
            ));
        }
        let value = value.split('#').next().unwrap_or("").trim();
        let index: usize = value.parse().map_err(|_| {
            TopoError::parse(
                Loc::line(file, lineno),
                format!("{param} of {name}: expected a non-negative integer, found {value:?}"),
            )
        })?;
        if let Some(prev) = seen.insert(name.to_string(), lineno) {
            return Err(TopoError::parse(
                Loc::line(file, lineno),
                format!("{name} is assigned twice (first on line {prev})"),
            ));
        }
        out.push(IndexEntry {
            name: name.to_string(),
            index,
            line: lineno,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("t.vec")
    }

    #[test]
    fn vectors_append_and_separators() {
        let v = parse_vectors("0: 1 2,3\n1: 4\n0: 5\n", p()).unwrap();
        assert_eq!(v[&0].values, vec![1, 2, 3, 5]);
        assert_eq!(v[&1].values, vec![4]);
        assert_eq!(v[&1].line, 2);
    }

    #[test]
    fn vectors_without_index_continue_numbering() {
        let v = parse_vectors("7 8\n3: 1\n9\n", p()).unwrap();
        assert_eq!(v[&0].values, vec![7, 8]);
        assert_eq!(v[&3].values, vec![1]);
        assert_eq!(v[&4].values, vec![9]);
    }

    #[test]
    fn no_index_after_the_largest_index_is_an_error() {
        let e = parse_vectors("18446744073709551615: 1\n2\n", p()).unwrap_err();
        assert!(
            e.to_string().starts_with("t.vec:2: vector index too large"),
            "{e}"
        );
    }

    #[test]
    fn blank_line_is_error_with_line() {
        let e = parse_vectors("0: 1\n\n1: 2\n", p()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.vec:2: blank line in vector file (every line must be `<index>: values...`)"
        );
        let e = parse_vectors("0: 1\n   \n", p()).unwrap_err();
        assert!(e.to_string().starts_with("t.vec:2:"), "{e}");
    }

    #[test]
    fn bad_number_has_column() {
        let e = parse_vectors("0: 1\n1: 2 x3\n", p()).unwrap_err();
        assert!(e.to_string().starts_with("t.vec:2:6:"), "{e}");
        let e = parse_vectors("0: -1\n", p()).unwrap_err();
        assert!(e.to_string().contains("\"-1\""), "{e}");
    }

    #[test]
    fn index_file() {
        let t = "[General]\n**.SW_A_U1.pktfwd.fdbIndex = 3\n**H_1_U1.gen.dstSeqIndex = 0\nfoo.bar = 1\n";
        let e = parse_index_file(t, p(), &["fdbIndex"]).unwrap();
        assert_eq!(
            e,
            vec![IndexEntry {
                name: "SW_A_U1".into(),
                index: 3,
                line: 2
            }]
        );
        let e = parse_index_file(t, p(), &["dstSeqIndex"]).unwrap();
        assert_eq!(e[0].name, "H_1_U1");
        // the spec's spelling
        let e = parse_index_file(
            "**H_3_U1.app.dstSeqVecIdx = 2\n",
            p(),
            &["dstSeqVecIdx", "dstSeqIndex"],
        )
        .unwrap();
        assert_eq!(
            e,
            vec![IndexEntry {
                name: "H_3_U1".into(),
                index: 2,
                line: 1
            }]
        );
        let err = parse_index_file("**.A.p.fdbIndex = x\n", p(), &["fdbIndex"]).unwrap_err();
        assert!(err.to_string().starts_with("t.vec:1:"), "{err}");
        let err = parse_index_file(
            "**.A.p.fdbIndex = 1\n**.A.p.fdbIndex = 2\n",
            p(),
            &["fdbIndex"],
        )
        .unwrap_err();
        assert!(err.to_string().contains("twice"), "{err}");
    }

    #[test]
    fn an_index_names_a_vector_of_the_file() {
        let v = parse_vectors(
            "0: 1 2
4: 3
",
            p(),
        )
        .unwrap();
        let e = parse_index_file(
            "**.S_U1.pktfwd.fdbIndex = 4\n",
            Path::new("t.ini"),
            &["fdbIndex"],
        )
        .unwrap();
        assert_eq!(
            e[0].vector(&v, "table", Path::new("t.ini"), p())
                .unwrap()
                .values,
            [3]
        );
        let e = parse_index_file(
            "\n**.S_U1.pktfwd.fdbIndex = 2\n",
            Path::new("t.ini"),
            &["fdbIndex"],
        )
        .unwrap();
        let err = e[0]
            .vector(&v, "table", Path::new("t.ini"), p())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.ini:2: S_U1 uses table 2, which t.vec does not have"
        );
    }
}
