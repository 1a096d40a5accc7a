//! Import of IBDM-style networks (ibfabric.md 9): `.topo` (cabling),
//! `.hcas` (HCA LIDs), optionally `.fdbs` + `.fdbs.ini` (forwarding tables).
//!
//! Naming: IBDM names become the reference's network-description names,
//! `H-7` -> `H_7_U1`, `SW-L2-0-0` -> `SW_L2_0_0_U1` ('-' -> '_', plus
//! `_U1`), so the names in `.fdbs.ini` / `.dstSeq.ini` match directly.
//! Ports: IBDM `P<n>` is port n-1.
//!
//! Node order (it fixes the engine's initialisation order): HCAs in the
//! order of the `.hcas` file, then switches in increasing `fdbIndex` (when a
//! `.fdbs.ini` is given), then any remaining switches in order of first
//! appearance in the `.topo` file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::error::{read_text, Loc, TopoError};
use super::vecfile::{parse_index_file, parse_vectors};
use super::{route, Link, Node, NodeKind, PortRef, Routing, Topology, ValidateOptions, NO_ROUTE};

/// The files of one IBDM network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbdmFiles {
    pub topo: PathBuf,
    pub hcas: PathBuf,
    /// Forwarding tables; when absent, ibnet computes min-hop routes.
    pub fdbs: Option<PathBuf>,
    /// Required together with `fdbs`.
    pub fdbs_ini: Option<PathBuf>,
}

impl IbdmFiles {
    /// Sibling files of `X.topo` by naming convention: `X.hcas`, or else the
    /// only `*.hcas` file in the same directory; `X.fdbs` and
    /// `X.fdbs.ini` when both exist.
    pub fn by_convention(topo: &Path) -> Result<IbdmFiles, TopoError> {
        // `x.topo` has the parent "" (not "."): read_dir("") fails (issue 12)
        let dir = match topo.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let stem = topo
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sib = |ext: &str| dir.join(format!("{stem}.{ext}"));
        let hcas = if sib("hcas").is_file() {
            sib("hcas")
        } else {
            let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| TopoError::io(dir, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "hcas"))
                .collect();
            found.sort();
            match found.len() {
                1 => found.pop().unwrap(),
                0 => {
                    return Err(TopoError::parse(
                        Loc::file(topo),
                        format!("no {stem}.hcas and no other .hcas file next to it; name the files in a TOML [ibdm] table"),
                    ))
                }
                _ => {
                    return Err(TopoError::parse(
                        Loc::file(topo),
                        format!("no {stem}.hcas and several .hcas files next to it; name the files in a TOML [ibdm] table"),
                    ))
                }
            }
        };
        let (fdbs, ini) = (sib("fdbs"), sib("fdbs.ini"));
        let (fdbs, fdbs_ini) = if fdbs.is_file() && ini.is_file() {
            (Some(fdbs), Some(ini))
        } else {
            (None, None)
        };
        Ok(IbdmFiles {
            topo: topo.to_path_buf(),
            hcas,
            fdbs,
            fdbs_ini,
        })
    }
}

/// Load an IBDM network. With `fdbs` (and `fdbs_ini`) the tables are taken
/// from the files; without, min-hop tables are computed. The result is
/// validated strictly (every HCA reaches every HCA, no loops).
pub fn load_ibdm(
    topo: &Path,
    hcas: &Path,
    fdbs: Option<&Path>,
    fdbs_ini: Option<&Path>,
) -> Result<Topology, TopoError> {
    let files = IbdmFiles {
        topo: topo.to_path_buf(),
        hcas: hcas.to_path_buf(),
        fdbs: fdbs.map(Path::to_path_buf),
        fdbs_ini: fdbs_ini.map(Path::to_path_buf),
    };
    load_files(&files, None, &ValidateOptions::default())
}

/// IBDM name -> network-description name.
pub fn ned_name(ibdm: &str) -> String {
    format!("{}_U1", ibdm.replace('-', "_"))
}

/// Known switch radices by IBDM device type.
fn radix_of(device: &str) -> Option<u16> {
    match device {
        "MTS800" => Some(8),
        "MTS2400" => Some(24),
        "MTS3600" => Some(36),
        _ => None,
    }
}

/// A cable end while parsing: (is HCA, HCA or switch index, 0-based port).
type End = (bool, usize, u16);

struct RawNode {
    name: String,
    device: String,
    max_port: u16,
    /// line where `max_port` is first used
    max_port_line: usize,
    first_line: usize,
}

/// `routing`: None = tables from files if given, else min-hop.
pub(crate) fn load_files(
    files: &IbdmFiles,
    routing: Option<Routing>,
    opts: &ValidateOptions,
) -> Result<Topology, TopoError> {
    // --- .hcas
    let hcas_text = read_text(&files.hcas)?;
    let mut hca_lids: Vec<(String, u16)> = Vec::new();
    let mut hca_index: HashMap<String, usize> = HashMap::new();
    let mut lid_line: HashMap<u16, usize> = HashMap::new();
    for (i, raw) in hcas_text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let loc = || Loc::line(&files.hcas, lineno);
        let f: Vec<&str> = line.split_whitespace().collect();
        let [port_name, lid] = f[..] else {
            return Err(TopoError::parse(
                loc(),
                format!("expected `<name>/U1/<port> <LID>`, found {line:?}"),
            ));
        };
        let parts: Vec<&str> = port_name.split('/').collect();
        if parts.len() != 3 || parts[0].is_empty() {
            return Err(TopoError::parse(
                loc(),
                format!("expected `<name>/U1/<port>`, found {port_name:?}"),
            ));
        }
        if parts[2] != "1" {
            return Err(TopoError::parse(
                loc(),
                format!("{port_name}: HCAs have one port, P1"),
            ));
        }
        let lid: u16 = match lid.parse() {
            Ok(l) if l > 0 => l,
            _ => {
                return Err(TopoError::parse(
                    loc(),
                    format!("LID must be an integer 1..65535, found {lid:?}"),
                ))
            }
        };
        if let Some(l) = lid_line.insert(lid, lineno) {
            return Err(TopoError::parse(
                loc(),
                format!("LID {lid} already used on line {l}"),
            ));
        }
        let name = parts[0].to_string();
        if hca_index.insert(name.clone(), hca_lids.len()).is_some() {
            return Err(TopoError::parse(loc(), format!("HCA {name} listed twice")));
        }
        hca_lids.push((name, lid));
    }

    // --- .topo
    let topo_text = read_text(&files.topo)?;
    let mut switches: Vec<RawNode> = Vec::new();
    let mut sw_index: HashMap<String, usize> = HashMap::new();
    // endpoint: (is_hca, index)
    let mut ends: HashMap<End, (End, usize)> = HashMap::new();
    let mut raw_links: Vec<(End, End)> = Vec::new();
    let mut current: Option<(bool, usize)> = None;
    let topo_path = &files.topo;
    for (i, raw) in topo_text.lines().enumerate() {
        let lineno = i + 1;
        let loc = || Loc::line(topo_path, lineno);
        let line = raw.trim_end();
        if line.trim().is_empty() {
            current = None;
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        let mut endpoint =
            |device: &str, name: &str, lineno: usize| -> Result<(bool, usize), TopoError> {
                if let Some(&h) = hca_index.get(name) {
                    return Ok((true, h));
                }
                if device == "Cougar" {
                    return Err(TopoError::parse(
                        Loc::line(topo_path, lineno),
                        format!("HCA {name} has no LID in {}", files.hcas.display()),
                    ));
                }
                let idx = *sw_index.entry(name.to_string()).or_insert_with(|| {
                    switches.push(RawNode {
                        name: name.to_string(),
                        device: device.to_string(),
                        max_port: 0,
                        max_port_line: lineno,
                        first_line: lineno,
                    });
                    switches.len() - 1
                });
                if switches[idx].device != device {
                    return Err(TopoError::parse(
                        Loc::line(topo_path, lineno),
                        format!(
                            "{name} appears as device {device} but was {} on line {}",
                            switches[idx].device, switches[idx].first_line
                        ),
                    ));
                }
                Ok((false, idx))
            };
        if !raw.starts_with([' ', '\t']) {
            // block header: <device-type> <name>
            let f: Vec<&str> = line.split_whitespace().collect();
            let [device, name] = f[..] else {
                return Err(TopoError::parse(
                    loc(),
                    format!("expected a block header `<device-type> <name>`, found {line:?}"),
                ));
            };
            current = Some(endpoint(device, name, lineno)?);
            continue;
        }
        let Some(cur) = current else {
            return Err(TopoError::parse(
                loc(),
                "port line outside a device block (missing header line?)",
            ));
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        let arrow_ok = |s: &str| s.starts_with('-') && s.ends_with("->");
        let [port, arrow, pdev, pname, pport] = f[..] else {
            return Err(TopoError::parse(
                loc(),
                format!(
                    "expected `P<n> -> <type> <name> P<m>`, found {:?}",
                    line.trim()
                ),
            ));
        };
        if !arrow_ok(arrow) {
            return Err(TopoError::parse(
                loc(),
                format!("expected `->`, found {arrow:?}"),
            ));
        }
        let parse_port = |s: &str| -> Result<u16, TopoError> {
            if s.contains('/') {
                return Err(TopoError::parse(
                    loc(),
                    format!("port {s:?}: director-chassis ports (L<x>/P<m>) are not supported"),
                ));
            }
            match s.strip_prefix('P').and_then(|n| n.parse::<u16>().ok()) {
                Some(n) if (1..=255).contains(&n) => Ok(n - 1),
                _ => Err(TopoError::parse(
                    loc(),
                    format!("expected a port `P<n>` with n in 1..=255, found {s:?}"),
                )),
            }
        };
        let a = (cur.0, cur.1, parse_port(port)?);
        let peer = endpoint(pdev, pname, lineno)?;
        let b = (peer.0, peer.1, parse_port(pport)?);
        for (x, y) in [(a, b), (b, a)] {
            if x.0 && x.2 != 0 {
                return Err(TopoError::parse(
                    loc(),
                    format!("HCA {} has only port P1", hca_lids[x.1].0),
                ));
            }
            if !x.0 {
                let s = &mut switches[x.1];
                if x.2 + 1 > s.max_port {
                    s.max_port = x.2 + 1;
                    s.max_port_line = lineno;
                }
            }
            let _ = y;
        }
        let show = |e: End| {
            let n = if e.0 {
                &hca_lids[e.1].0
            } else {
                &switches[e.1].name
            };
            format!("{n} P{}", e.2 + 1)
        };
        let known_a = ends.get(&a).copied();
        let known_b = ends.get(&b).copied();
        match (known_a, known_b) {
            (None, None) => {
                if a == b {
                    return Err(TopoError::parse(
                        loc(),
                        format!("{} is cabled to itself", show(a)),
                    ));
                }
                ends.insert(a, (b, lineno));
                ends.insert(b, (a, lineno));
                raw_links.push((a, b));
            }
            (Some((pa, _)), Some((pb, _))) if pa == b && pb == a => {} // the same cable seen from the other end
            (Some((other, l)), _) if other != b => {
                return Err(TopoError::parse(
                    loc(),
                    format!(
                        "{} is already cabled to {} (line {l})",
                        show(a),
                        show(other)
                    ),
                ));
            }
            (_, Some((other, l))) => {
                return Err(TopoError::parse(
                    loc(),
                    format!(
                        "{} is already cabled to {} (line {l})",
                        show(b),
                        show(other)
                    ),
                ));
            }
            _ => unreachable!("one end known means the other is known too"),
        }
    }

    // --- port counts
    let mut ports: Vec<u16> = Vec::with_capacity(switches.len());
    for s in &switches {
        let n = match radix_of(&s.device) {
            Some(r) if s.max_port > r => {
                return Err(TopoError::parse(
                    Loc::line(topo_path, s.max_port_line),
                    format!(
                        "{}: port P{} used, but a {} has {r} ports",
                        s.name, s.max_port, s.device
                    ),
                ))
            }
            Some(r) => r,
            None => s.max_port,
        };
        ports.push(n);
    }

    // --- switch order and tables
    let ned: Vec<String> = switches.iter().map(|s| ned_name(&s.name)).collect();
    let mut fdb_of: Vec<Option<Vec<u16>>> = vec![None; switches.len()];
    let mut order_key: Vec<(usize, usize)> = (0..switches.len()).map(|i| (usize::MAX, i)).collect();
    let max_lid = hca_lids.iter().map(|h| h.1).max().unwrap_or(0) as usize;
    match (&files.fdbs, &files.fdbs_ini) {
        (Some(fdbs), Some(ini)) => {
            let vectors = parse_vectors(&read_text(fdbs)?, fdbs)?;
            let entries = parse_index_file(&read_text(ini)?, ini, &["fdbIndex"])?;
            let by_ned: HashMap<&str, usize> = ned
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), i))
                .collect();
            for e in &entries {
                let Some(&s) = by_ned.get(e.name.as_str()) else {
                    return Err(TopoError::parse(
                        Loc::line(ini, e.line),
                        format!("{} is not a switch of {}", e.name, topo_path.display()),
                    ));
                };
                let Some(v) = vectors.get(&e.index) else {
                    return Err(TopoError::parse(
                        Loc::line(ini, e.line),
                        format!(
                            "{} uses table {}, which {} does not have",
                            e.name,
                            e.index,
                            fdbs.display()
                        ),
                    ));
                };
                if v.values.len() <= max_lid {
                    return Err(TopoError::parse(
                        Loc::line(fdbs, v.line),
                        format!(
                            "table {} (switch {}) has {} entries, but LIDs go up to {max_lid}",
                            e.index,
                            e.name,
                            v.values.len()
                        ),
                    ));
                }
                // A value >= the port count means "no route" (ibfabric.md 9).
                let table = v
                    .values
                    .iter()
                    .map(|&p| if p >= ports[s] { NO_ROUTE } else { p })
                    .collect();
                fdb_of[s] = Some(table);
                order_key[s].0 = e.index;
            }
            if let Some(s) = fdb_of.iter().position(Option::is_none) {
                return Err(TopoError::parse(
                    Loc::file(ini),
                    format!("switch {} has no fdbIndex", ned[s]),
                ));
            }
        }
        (None, None) => {}
        _ => {
            return Err(TopoError::Invalid(format!(
                "{}: .fdbs and .fdbs.ini must be given together",
                topo_path.display()
            )))
        }
    }
    order_key.sort();

    // --- assemble
    let mut nodes: Vec<Node> = hca_lids
        .iter()
        .map(|(n, lid)| Node {
            name: ned_name(n),
            kind: NodeKind::Hca { lid: *lid },
        })
        .collect();
    let mut node_of_switch = vec![0; switches.len()];
    for &(_, s) in &order_key {
        node_of_switch[s] = nodes.len();
        nodes.push(Node {
            name: ned[s].clone(),
            kind: NodeKind::Switch {
                ports: ports[s],
                fdb: fdb_of[s].take().unwrap_or_default(),
            },
        });
    }
    let pr = |e: End| PortRef {
        node: if e.0 { e.1 } else { node_of_switch[e.1] },
        port: e.2,
    };
    let links = raw_links
        .iter()
        .map(|&(a, b)| Link { a: pr(a), b: pr(b) })
        .collect();
    let name = topo_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut t = Topology {
        name,
        nodes,
        links,
        ranks: Vec::new(),
        sl: Vec::new(),
    };
    let have_tables = files.fdbs.is_some();
    let routing = routing.unwrap_or(if have_tables {
        Routing::Tables
    } else {
        Routing::MinHop
    });
    if routing == Routing::Tables && !have_tables {
        return Err(TopoError::Invalid(format!(
            "{}: routing = \"tables\" needs .fdbs and .fdbs.ini",
            topo_path.display()
        )));
    }
    route(&mut t, routing).map_err(|e| e.in_file(topo_path))?;
    t.validate_with(opts).map_err(|e| e.in_file(topo_path))?;
    Ok(t)
}
