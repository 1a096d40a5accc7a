//! Rank -> HCA mapping files: one `rank hca_name` pair per line; `#`
//! starts a comment; blank lines are ignored. Ranks must be 0..R-1 with no
//! gaps, each on its own HCA.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::{read_text, Loc, TopoError};
use super::fields::fields;
use super::Topology;

/// Read a rank mapping file and resolve it against `topo`.
pub fn load_rank_file(path: &Path, topo: &Topology) -> Result<Vec<usize>, TopoError> {
    parse_rank_file(&read_text(path)?, path, topo)
}

/// Parse rank mapping text (`file` is only used in messages).
pub fn parse_rank_file(text: &str, file: &Path, topo: &Topology) -> Result<Vec<usize>, TopoError> {
    let mut by_rank: BTreeMap<usize, (usize, usize)> = BTreeMap::new(); // rank -> (hca, line)
    let mut by_hca: BTreeMap<usize, (usize, usize)> = BTreeMap::new(); // hca -> (rank, line)
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let loc = || Loc::line(file, lineno);
        let [rank, hca] =
            fields(line, "`rank hca_name`").map_err(|m| TopoError::parse(loc(), m))?;
        let rank: usize = rank.parse().map_err(|_| {
            TopoError::parse(
                loc(),
                format!("rank must be a non-negative integer, found {rank:?}"),
            )
        })?;
        let node = match topo.node_by_name(hca) {
            Some(n) if topo.nodes[n].is_hca() => n,
            Some(_) => {
                return Err(TopoError::parse(
                    loc(),
                    format!("{hca} is a switch, not an HCA"),
                ))
            }
            None => {
                return Err(TopoError::parse(
                    loc(),
                    format!("no HCA named {hca:?} in topology {}", topo.name),
                ))
            }
        };
        if let Some((_, l)) = by_rank.insert(rank, (node, lineno)) {
            return Err(TopoError::parse(
                loc(),
                format!("rank {rank} is mapped twice (first on line {l})"),
            ));
        }
        if let Some((r, l)) = by_hca.insert(node, (rank, lineno)) {
            return Err(TopoError::parse(
                loc(),
                format!("ranks {r} (line {l}) and {rank} are both mapped to HCA {hca}"),
            ));
        }
    }
    let mut out = Vec::with_capacity(by_rank.len());
    for (expect, (rank, (node, _))) in by_rank.into_iter().enumerate() {
        if rank != expect {
            return Err(TopoError::parse(
                Loc::file(file),
                format!(
                    "rank {expect} has no HCA (ranks must be 0..R-1; next mapped rank is {rank})"
                ),
            ));
        }
        out.push(node);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builtin;

    #[test]
    fn rank_file() {
        let t = builtin("H8_S1").unwrap();
        let f = Path::new("r.txt");
        let r = parse_rank_file("# comment\n1 H_1\n0 H_8 # x\n\n", f, &t).unwrap();
        assert_eq!(
            r,
            vec![
                t.node_by_name("H_8").unwrap(),
                t.node_by_name("H_1").unwrap()
            ]
        );
        let e = parse_rank_file("0 H_1\n2 H_2\n", f, &t).unwrap_err();
        assert!(e.to_string().contains("rank 1 has no HCA"), "{e}");
        let e = parse_rank_file("0 H_1\n1 H_1\n", f, &t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "r.txt:2: ranks 0 (line 1) and 1 are both mapped to HCA H_1"
        );
        let e = parse_rank_file("0 H_9\n", f, &t).unwrap_err();
        assert!(
            e.to_string().starts_with("r.txt:1: no HCA named \"H_9\""),
            "{e}"
        );
        let e = parse_rank_file("0 SW_1\n", f, &t).unwrap_err();
        assert!(e.to_string().contains("is a switch"), "{e}");
        let e = parse_rank_file("0\n", f, &t).unwrap_err();
        assert!(e.to_string().starts_with("r.txt:1: expected"), "{e}");
    }
}
