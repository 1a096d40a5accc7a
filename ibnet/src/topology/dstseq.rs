//! Destination sequences (`.dstSeq` + `.dstSeq.ini`, docs/model/fabric.md 9) for the
//! app's `seq_once` / `seq_loop` / `seq_rand` modes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::{read_text, Loc, TopoError};
use super::vecfile::{parse_index_file, parse_vectors, Vector};
use super::Topology;

/// A loaded destination-sequence file pair, not yet tied to a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DstSeqs {
    pub dstseq_file: PathBuf,
    pub ini_file: PathBuf,
    /// vector index -> destination LIDs (with the line it starts on)
    pub vectors: BTreeMap<usize, Vector>,
    /// HCA instance name from the ini (e.g. `H_3_U1`) -> (vector index, ini line)
    pub index_of: BTreeMap<String, (usize, usize)>,
}

/// Read a `.dstSeq` vector file and its `.dstSeq.ini` index file. The ini
/// may use `dstSeqVecIdx` (docs/model/fabric.md) or `dstSeqIndex` (the shipped
/// examples) as the parameter name.
pub fn load_dst_seq(dstseq: &Path, ini: &Path) -> Result<DstSeqs, TopoError> {
    let vectors = parse_vectors(&read_text(dstseq)?, dstseq)?;
    let entries = parse_index_file(&read_text(ini)?, ini, &["dstSeqVecIdx", "dstSeqIndex"])?;
    let mut index_of = BTreeMap::new();
    for e in entries {
        e.vector(&vectors, "destination sequence", ini, dstseq)?;
        index_of.insert(e.name, (e.index, e.line));
    }
    Ok(DstSeqs {
        dstseq_file: dstseq.to_path_buf(),
        ini_file: ini.to_path_buf(),
        vectors,
        index_of,
    })
}

impl DstSeqs {
    /// Number of vectors (rows) in the `.dstSeq` file.
    pub fn num_vectors(&self) -> usize {
        self.vectors.len()
    }

    /// The sequence of every HCA of `topo`, in the order of
    /// [`Topology::hcas`]; an HCA the ini does not mention gets an empty
    /// sequence. An ini name matches an HCA named exactly so, or named so
    /// without the reference's `_U1` suffix (`H_3_U1` matches `H_3`). Errors
    /// for ini names that match no HCA and for LIDs no HCA has.
    pub fn resolve(&self, topo: &Topology) -> Result<Vec<Vec<u16>>, TopoError> {
        let hcas = topo.hcas();
        let mut out = vec![Vec::new(); hcas.len()];
        let r = topo.router();
        for (name, &(index, line)) in &self.index_of {
            let short = name.strip_suffix("_U1").unwrap_or(name);
            let pos = hcas
                .iter()
                .position(|&h| topo.nodes[h].name == *name)
                .or_else(|| hcas.iter().position(|&h| topo.nodes[h].name == short));
            let Some(pos) = pos else {
                return Err(TopoError::parse(
                    Loc::line(&self.ini_file, line),
                    format!("no HCA named {name} (or {short}) in topology {}", topo.name),
                ));
            };
            let v = &self.vectors[&index];
            if let Some(&bad) = v.values.iter().find(|&&lid| r.hca_by_lid(lid).is_none()) {
                return Err(TopoError::parse(
                    Loc::line(&self.dstseq_file, v.line),
                    format!(
                        "sequence {index}: LID {bad} belongs to no HCA of {}",
                        topo.name
                    ),
                ));
            }
            out[pos] = v.values.clone();
        }
        Ok(out)
    }
}
