//! Import of IBDM-style networks (docs/model/fabric.md 9): `.topo` (cabling),
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

mod topo_file;

use topo_file::{parse_topo, Cabling};

use super::error::{read_text, Loc, TopoError};
use super::fields::fields;
use super::siblings::{dir_and_stem, table_files, with_extension};
use super::vecfile::{parse_index_file, parse_vectors};
use super::{
    file_stem_name, finish_import, Link, Node, NodeKind, PortRef, Routing, Topology,
    ValidateOptions, NO_ROUTE,
};

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
        let (dir, stem) = dir_and_stem(topo);
        let sib = |ext: &str| dir.join(format!("{stem}.{ext}"));
        let hcas = if sib("hcas").is_file() {
            sib("hcas")
        } else {
            let mut found = with_extension(dir, "hcas")?;
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
        let (fdbs, fdbs_ini) = table_files(sib("fdbs")).unzip();
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

/// A director chassis: several switch ASICs in one box. Its cabled ports
/// are written `L<line>/P<port>` (line card `line`, front port `port`).
///
/// Layout (the reference's own expansion of the 1944-node network,
/// ../shared/data/ibmodel-1944n/is4_3l_1944n.ned, which is IBDM's system
/// definition of the chassis): line card `l` (1-based) is the ASIC
/// `<chassis>_leaf<l>_U1`, its front port `P<m>` is ASIC port `m - 1`;
/// the fabric boards are `<chassis>_spine<k>_U1`; ASIC port
/// `front_ports + k - 1` of every line ASIC `l` is cabled to port `l - 1`
/// of spine `k` (one cable between every line and every spine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChassisDef {
    /// Number of line cards (leaf ASICs).
    pub lines: u16,
    /// Front (external) ports per line card: `P1..=P<front_ports>`.
    pub front_ports: u16,
    /// Number of fabric boards (spine ASICs).
    pub spines: u16,
    /// Ports of every ASIC.
    pub asic_ports: u16,
}

/// Known director chassis by IBDM device type. Only the layouts we can
/// check against the reference are listed; others are refused by name.
pub fn chassis_of(device: &str) -> Option<ChassisDef> {
    match device {
        // Mellanox IS5600: 648 ports = 36 line cards x 18, 18 spines,
        // 36-port InfiniScale IV ASICs.
        "MIS5600" => Some(ChassisDef {
            lines: 36,
            front_ports: 18,
            spines: 18,
            asic_ports: 36,
        }),
        _ => None,
    }
}

/// A cable end while parsing: (is HCA, HCA or switch index, 0-based port).
type End = (bool, usize, u16);

/// A switch (or one ASIC of a director chassis) of a `.topo` file.
struct RawNode {
    name: String,
    device: String,
    max_port: u16,
    /// line where `max_port` is first used
    max_port_line: usize,
    first_line: usize,
    /// Fixed radix (ASICs of a chassis); else by `radix_of(device)`.
    radix: Option<u16>,
}

/// `routing`: None = tables from files if given, else min-hop.
pub(crate) fn load_files(
    files: &IbdmFiles,
    routing: Option<Routing>,
    opts: &ValidateOptions,
) -> Result<Topology, TopoError> {
    let hcas = read_hcas(&files.hcas)?;
    let (switches, raw_links) = read_topo(files, &hcas)?;
    let topo_path = &files.topo;
    let ports = port_counts(&switches, topo_path)?;
    let (ned, fdb_of, order_key) = order_and_tables(files, &switches, &ports, &hcas.lids)?;
    let (nodes, links, lines) = build(
        &hcas.lids, &switches, ned, ports, fdb_of, &order_key, &raw_links,
    );
    finish_import(
        file_stem_name(topo_path),
        topo_path,
        nodes,
        &lines,
        links,
        files.fdbs.is_some(),
        routing,
        "routing = \"tables\" needs .fdbs and .fdbs.ini",
        opts,
    )
}

/// The HCAs of a `.hcas` file, in file order: name and LID, and each
/// name's index.
#[derive(Debug)]
struct Hcas {
    lids: Vec<(String, u16)>,
    index: HashMap<String, usize>,
}

/// Step 1: the `.hcas` file, `<name>/U1/1 <LID>` per line.
fn read_hcas(path: &Path) -> Result<Hcas, TopoError> {
    let hcas_text = read_text(path)?;
    let mut hca_lids: Vec<(String, u16)> = Vec::new();
    let mut hca_index: HashMap<String, usize> = HashMap::new();
    let mut lid_line: HashMap<u16, usize> = HashMap::new();
    for (i, raw) in hcas_text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let loc = || Loc::line(path, lineno);
        let [port_name, lid] =
            fields(line, "`<name>/U1/<port> <LID>`").map_err(|m| TopoError::parse(loc(), m))?;
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
    Ok(Hcas {
        lids: hca_lids,
        index: hca_index,
    })
}

/// Step 2: the `.topo` file's device blocks: the switches (ASICs) and the
/// cables between switch and HCA ports (see [`topo_file`]).
fn read_topo(files: &IbdmFiles, hcas: &Hcas) -> Result<Cabling, TopoError> {
    parse_topo(&read_text(&files.topo)?, &files.topo, &files.hcas, hcas)
}

/// Step 3: each switch's port count: its device's radix (no port above
/// it may be cabled), else the highest port cabled.
fn port_counts(switches: &[RawNode], topo_path: &Path) -> Result<Vec<u16>, TopoError> {
    let mut ports: Vec<u16> = Vec::with_capacity(switches.len());
    for s in switches {
        let n = match s.radix.or_else(|| radix_of(&s.device)) {
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
    Ok(ports)
}

/// The switches' NED names, forwarding tables and order.
type SwitchTables = (Vec<String>, Vec<Option<Vec<u16>>>, Vec<(usize, usize)>);

/// Step 4: the switches' names as the reference writes them and, with
/// `.fdbs`/`.fdbs.ini`, their tables and the order of the `.fdbs.ini`
/// (else file order).
fn order_and_tables(
    files: &IbdmFiles,
    switches: &[RawNode],
    ports: &[u16],
    hca_lids: &[(String, u16)],
) -> Result<SwitchTables, TopoError> {
    let topo_path = &files.topo;
    let ned: Vec<String> = switches.iter().map(|s| ned_name(&s.name)).collect();
    let mut fdb_of: Vec<Option<Vec<u16>>> = vec![None; switches.len()];
    let mut order_key: Vec<(usize, usize)> = (0..switches.len()).map(|i| (usize::MAX, i)).collect();
    let max_lid = hca_lids.iter().map(|h| h.1).max().unwrap_or(0) as usize;
    if let Some((fdbs, ini)) = table_pair(&files.fdbs, &files.fdbs_ini, topo_path)? {
        let t = read_tables(fdbs, ini, &ned, ports, max_lid, topo_path, false)?;
        for (s, (index, table)) in t.into_iter().enumerate() {
            fdb_of[s] = Some(table);
            order_key[s].0 = index;
        }
    }
    order_key.sort();
    Ok((ned, fdb_of, order_key))
}

/// `.fdbs` and `.fdbs.ini` (IBDM and NED imports): both or neither.
pub(crate) fn table_pair<'a>(
    fdbs: &'a Option<PathBuf>,
    ini: &'a Option<PathBuf>,
    path: &Path,
) -> Result<Option<(&'a Path, &'a Path)>, TopoError> {
    match (fdbs, ini) {
        (Some(f), Some(i)) => Ok(Some((f, i))),
        (None, None) => Ok(None),
        _ => Err(TopoError::Invalid(format!(
            "{}: .fdbs and .fdbs.ini must be given together",
            path.display()
        ))),
    }
}

/// Step 5: the topology's nodes (HCAs in `.hcas` order, then switches in
/// table order), links and declaring lines.
fn build(
    hca_lids: &[(String, u16)],
    switches: &[RawNode],
    ned: Vec<String>,
    ports: Vec<u16>,
    mut fdb_of: Vec<Option<Vec<u16>>>,
    order_key: &[(usize, usize)],
    raw_links: &[(End, End)],
) -> (Vec<Node>, Vec<Link>, Vec<usize>) {
    let mut nodes: Vec<Node> = hca_lids
        .iter()
        .map(|(n, lid)| Node {
            name: ned_name(n),
            kind: NodeKind::Hca { lid: *lid },
        })
        .collect();
    let mut node_of_switch = vec![0; switches.len()];
    for &(_, s) in order_key {
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
    // declaring lines: the switches' (HCAs are declared in the .hcas file)
    let mut lines = vec![0usize; nodes.len()];
    for (s, &n) in node_of_switch.iter().enumerate() {
        lines[n] = switches[s].first_line;
    }
    (nodes, links, lines)
}

/// Read the forwarding tables of the switches named `names` (network
/// description names, with `ports[i]` ports each) from a `.fdbs` vector
/// file and its `.fdbs.ini` index file. Returns, per switch, its
/// `fdbIndex` and its table (values >= the port count become `NO_ROUTE`).
/// `net` names the network file in messages. `ignore_unknown`: an index
/// line naming no switch of the network is skipped, as the reference's
/// configuration reader does (the 8-node examples' `.fdbs.ini` lists eight
/// switches for a one-switch network); else it is an error.
pub(crate) fn read_tables(
    fdbs: &Path,
    ini: &Path,
    names: &[String],
    ports: &[u16],
    max_lid: usize,
    net: &Path,
    ignore_unknown: bool,
) -> Result<Vec<(usize, Vec<u16>)>, TopoError> {
    let vectors = parse_vectors(&read_text(fdbs)?, fdbs)?;
    let entries = parse_index_file(&read_text(ini)?, ini, &["fdbIndex"])?;
    let by_name: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut out: Vec<Option<(usize, Vec<u16>)>> = vec![None; names.len()];
    for e in &entries {
        let Some(&s) = by_name.get(e.name.as_str()) else {
            if ignore_unknown {
                continue;
            }
            return Err(TopoError::parse(
                Loc::line(ini, e.line),
                format!("{} is not a switch of {}", e.name, net.display()),
            ));
        };
        let v = e.vector(&vectors, "table", ini, fdbs)?;
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
        // A value >= the port count means "no route" (docs/model/fabric.md 9).
        let table = v
            .values
            .iter()
            .map(|&p| if p >= ports[s] { NO_ROUTE } else { p })
            .collect();
        out[s] = Some((e.index, table));
    }
    out.into_iter()
        .enumerate()
        .map(|(s, t)| {
            t.ok_or_else(|| {
                TopoError::parse(
                    Loc::file(ini),
                    format!("switch {} has no fdbIndex", names[s]),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_switch(name: &str, device: &str, max_port: u16, radix: Option<u16>) -> RawNode {
        RawNode {
            name: name.into(),
            device: device.into(),
            max_port,
            max_port_line: 3,
            first_line: 2,
            radix,
        }
    }

    #[test]
    fn hcas_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.hcas");
        std::fs::write(&p, "# name/U1/port LID\nH-1/U1/1 5\n\nH-2/U1/1 2\n").unwrap();
        let h = read_hcas(&p).unwrap();
        assert_eq!(h.lids, [("H-1".to_string(), 5), ("H-2".to_string(), 2)]);
        assert_eq!(h.index["H-2"], 1);
        for (text, msg) in [
            ("H-1/U1/2 5\n", "HCAs have one port, P1"),
            ("H-1/U1/1 0\n", "LID must be an integer 1..65535"),
            ("H-1/U1/1 5\nH-2/U1/1 5\n", "LID 5 already used on line 1"),
            ("H-1/U1/1 5\nH-1/U1/1 6\n", "HCA H-1 listed twice"),
            ("H-1 5\n", "expected `<name>/U1/<port>`"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_hcas(&p).unwrap_err().to_string();
            assert!(e.contains(msg), "{text:?}: {e}");
        }
    }

    #[test]
    fn port_counts_by_radix_or_use() {
        let sw = [
            raw_switch("a", "NoSuchDevice", 7, None),
            raw_switch("b", "NoSuchDevice", 3, Some(36)),
        ];
        assert_eq!(port_counts(&sw, Path::new("t.topo")).unwrap(), [7, 36]);
        let over = [raw_switch("c", "Dev", 40, Some(36))];
        let e = port_counts(&over, Path::new("t.topo")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.topo:3: c: port P40 used, but a Dev has 36 ports"
        );
    }

    #[test]
    fn tables_come_in_pairs() {
        let (f, i) = (
            Some(PathBuf::from("x.fdbs")),
            Some(PathBuf::from("x.fdbs.ini")),
        );
        let p = Path::new("x.topo");
        assert_eq!(
            table_pair(&f, &i, p).unwrap(),
            Some((Path::new("x.fdbs"), Path::new("x.fdbs.ini")))
        );
        assert_eq!(table_pair(&None, &None, p).unwrap(), None);
        let e = table_pair(&f, &None, p).unwrap_err();
        assert_eq!(
            e.to_string(),
            TopoError::Invalid("x.topo: .fdbs and .fdbs.ini must be given together".into())
                .to_string()
        );
    }

    #[test]
    fn build_puts_hcas_first_and_switches_in_table_order() {
        let hcas = [("H-1".to_string(), 5)];
        let sw = [
            raw_switch("s1", "D", 2, None),
            raw_switch("s2", "D", 2, None),
        ];
        let ned = vec!["S1".to_string(), "S2".to_string()];
        // the table order puts s2 first
        let order = [(0, 1), (1, 0)];
        let links = [
            ((true, 0, 0), (false, 0, 1)),
            ((false, 0, 0), (false, 1, 0)),
        ];
        let (nodes, out_links, lines) = build(
            &hcas,
            &sw,
            ned,
            vec![2, 2],
            vec![None, None],
            &order,
            &links,
        );
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names[1..], ["S2", "S1"]);
        assert_eq!(
            out_links[0],
            Link {
                a: PortRef { node: 0, port: 0 },
                b: PortRef { node: 2, port: 1 }
            }
        );
        assert_eq!(lines, [0, 2, 2]);
    }
}
