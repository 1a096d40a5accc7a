//! A native ibnet TOML description (docs/topology.md): the `nodes` list,
//! the `links` list and the `[fdb]` tables, each read by its own step.

use std::collections::HashMap;

use serde::Deserialize;

use super::super::error::{Loc, TopoError};
use super::super::{
    file_stem_name, route, validate, Link, Node, NodeKind, PortRef, Routing, Topology, NO_ROUTE,
};
use super::{RawTopo, TomlFile};

/// One entry of `nodes`: `{ hca = "name", lid = L }` or
/// `{ switch = "name", ports = P }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    hca: Option<String>,
    switch: Option<String>,
    lid: Option<u16>,
    ports: Option<u16>,
}

/// The topology a native description gives, routed by `routing` (else by
/// its `[fdb]` tables when it has them, else min-hop).
pub(super) fn build_native(
    raw: &RawTopo,
    file: &TomlFile,
    routing: Option<Routing>,
) -> Result<Topology, TopoError> {
    let (mut nodes, by_name) = read_nodes(raw, file)?;
    let links = read_links(raw, file, &nodes, &by_name)?;
    // (node i is the i-th entry of `nodes`)
    validate::check_cabled(&nodes, &links, |i| {
        raw.nodes
            .iter()
            .flatten()
            .nth(i)
            .map_or(Loc::file(file.path), |rn| file.at(rn.span()))
    })?;
    let routing = read_tables(raw, file, &mut nodes, &by_name, routing)?;
    let name = raw
        .name
        .clone()
        .unwrap_or_else(|| file_stem_name(file.path));
    let mut t = Topology::new(name, nodes, links);
    route(&mut t, routing).map_err(|e| e.in_file(file.path))?;
    Ok(t)
}

/// Step 1: the `nodes` list, in order, and each name's index. HCAs
/// without a LID get the lowest free LIDs, in node order.
fn read_nodes(
    raw: &RawTopo,
    file: &TomlFile,
) -> Result<(Vec<Node>, HashMap<String, usize>), TopoError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut explicit_lids: HashMap<u16, usize> = HashMap::new();
    let mut wants_lid: Vec<usize> = Vec::new();
    for rn in raw.nodes.iter().flatten() {
        let err = |m: String| TopoError::parse(file.at(rn.span()), m);
        let (name, kind) = node_kind(rn.get_ref()).map_err(err)?;
        match kind {
            NodeKind::Hca { lid: 0 } => wants_lid.push(nodes.len()),
            NodeKind::Hca { lid } => {
                if let Some(&o) = explicit_lids.get(&lid) {
                    return Err(err(format!(
                        "HCA {name}: LID {lid} is already used by {}",
                        nodes[o].name
                    )));
                }
                explicit_lids.insert(lid, nodes.len());
            }
            NodeKind::Switch { .. } => {}
        }
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains("<->") {
            return Err(err(format!(
                "bad node name {name:?} (no whitespace, not empty)"
            )));
        }
        if by_name.insert(name.clone(), nodes.len()).is_some() {
            return Err(err(format!("node name {name:?} declared twice")));
        }
        nodes.push(Node { name, kind });
    }
    let mut next = 1u16;
    for i in wants_lid {
        while explicit_lids.contains_key(&next) {
            next = next.checked_add(1).ok_or_else(|| {
                TopoError::parse(Loc::file(file.path), "more HCAs than LIDs (65535)")
            })?;
        }
        nodes[i].kind = NodeKind::Hca { lid: next };
        explicit_lids.insert(next, i);
    }
    Ok((nodes, by_name))
}

/// One entry of `nodes`: its name and kind (an HCA without a LID gets
/// LID 0 until one is handed out), or the message why it is wrong.
fn node_kind(n: &RawNode) -> Result<(String, NodeKind), String> {
    match (&n.hca, &n.switch) {
        (Some(h), None) => {
            if n.ports.is_some() {
                return Err(format!("HCA {h}: HCAs have one port; drop `ports`"));
            }
            if n.lid == Some(0) {
                return Err(format!("HCA {h}: LID 0 is invalid (LIDs start at 1)"));
            }
            Ok((
                h.clone(),
                NodeKind::Hca {
                    lid: n.lid.unwrap_or(0),
                },
            ))
        }
        (None, Some(s)) => {
            if n.lid.is_some() {
                return Err(format!("switch {s}: switches have no LID in this model"));
            }
            let ports = match n.ports {
                Some(p) if (1..=255).contains(&p) => p,
                Some(p) => return Err(format!("switch {s}: ports = {p}, must be 1..=255")),
                None => return Err(format!("switch {s}: missing `ports`")),
            };
            Ok((
                s.clone(),
                NodeKind::Switch {
                    ports,
                    fdb: Vec::new(),
                },
            ))
        }
        _ => Err("a node needs exactly one of `hca = \"name\"` or `switch = \"name\"`".into()),
    }
}

/// Step 2: the `links` list, `"node:port <-> node:port"` each; no port
/// carries two links.
fn read_links(
    raw: &RawTopo,
    file: &TomlFile,
    nodes: &[Node],
    by_name: &HashMap<String, usize>,
) -> Result<Vec<Link>, TopoError> {
    let all = raw.links.as_deref().unwrap_or_default();
    let mut links = Vec::with_capacity(all.len());
    let mut used: HashMap<PortRef, usize> = HashMap::new();
    for (k, ls) in all.iter().enumerate() {
        let err = |m: String| TopoError::parse(file.at(ls.span()), m);
        let s = ls.get_ref();
        let Some((l, r)) = s.split_once("<->") else {
            return Err(err(format!(
                "link {s:?}: expected \"node:port <-> node:port\""
            )));
        };
        let mut end = |e: &str| -> Result<PortRef, String> {
            let p = port_ref(s, e, nodes, by_name)?;
            match used.insert(p, k) {
                Some(j) => Err(format!(
                    "link {s:?}: port {} of {} is already used by link {:?}",
                    p.port,
                    nodes[p.node].name,
                    all[j].get_ref()
                )),
                None => Ok(p),
            }
        };
        let a = end(l).map_err(err)?;
        let b = end(r).map_err(err)?;
        links.push(Link { a, b });
    }
    Ok(links)
}

/// The end `e` (`node:port`) of link `s`, or the message why it names no
/// port.
fn port_ref(
    s: &str,
    e: &str,
    nodes: &[Node],
    by_name: &HashMap<String, usize>,
) -> Result<PortRef, String> {
    let e = e.trim();
    let Some((name, port)) = e.rsplit_once(':') else {
        return Err(format!("link {s:?}: {e:?} is not `node:port`"));
    };
    let Some(&node) = by_name.get(name.trim()) else {
        return Err(format!("link {s:?}: unknown node {:?}", name.trim()));
    };
    let port: u16 = port
        .trim()
        .parse()
        .map_err(|_| format!("link {s:?}: port {:?} is not a number", port.trim()))?;
    let np = nodes[node].num_ports();
    if port >= np {
        return Err(format!(
            "link {s:?}: port {port} of {} is out of range (ports 0..={})",
            nodes[node].name,
            np - 1
        ));
    }
    Ok(PortRef { node, port })
}

/// Step 3: the routing and the `[fdb]` tables, which only routing by
/// tables takes (then every switch needs one).
fn read_tables(
    raw: &RawTopo,
    file: &TomlFile,
    nodes: &mut [Node],
    by_name: &HashMap<String, usize>,
    routing: Option<Routing>,
) -> Result<Routing, TopoError> {
    let max_lid = nodes.iter().filter_map(Node::lid).max().unwrap_or(0) as usize;
    let has_fdb = raw.fdb.as_ref().is_some_and(|f| !f.is_empty());
    let routing = Routing::chosen(routing, has_fdb);
    if routing != Routing::Tables && has_fdb {
        return Err(TopoError::parse(
            Loc::file(file.path),
            format!(
                "[fdb] tables are given, but routing = \"{}\" would replace them; drop one",
                routing.as_str()
            ),
        ));
    }
    for (name, table) in raw.fdb.iter().flatten() {
        let loc = || file.at(name.span());
        let name = name.get_ref();
        let Some(&i) = by_name.get(name) else {
            return Err(TopoError::parse(
                loc(),
                format!("[fdb]: unknown switch {name:?}"),
            ));
        };
        let NodeKind::Switch { ports, fdb } = &mut nodes[i].kind else {
            return Err(TopoError::parse(loc(), format!("[fdb]: {name} is an HCA")));
        };
        check_table(name, table.get_ref(), *ports, max_lid)
            .map_err(|m| TopoError::parse(loc(), m))?;
        *fdb = table.get_ref().clone();
    }
    if routing == Routing::Tables {
        if let Some(n) = nodes
            .iter()
            .find(|n| matches!(&n.kind, NodeKind::Switch { fdb, .. } if fdb.is_empty()))
        {
            return Err(TopoError::parse(
                Loc::file(file.path),
                format!(
                    "routing = \"tables\" but switch {} has no [fdb] entry",
                    n.name
                ),
            ));
        }
    }
    Ok(routing)
}

/// The `[fdb]` table `v` of switch `name` (with `ports` ports) covers
/// every LID up to `max_lid` and names only its ports or [`NO_ROUTE`].
fn check_table(name: &str, v: &[u16], ports: u16, max_lid: usize) -> Result<(), String> {
    if v.len() <= max_lid {
        return Err(format!(
            "[fdb] {name}: {} entries, must cover LIDs 0..={max_lid}",
            v.len()
        ));
    }
    match v
        .iter()
        .enumerate()
        .find(|(_, &p)| p >= ports && p != NO_ROUTE)
    {
        Some((lid, p)) => Err(format!(
            "[fdb] {name}: LID {lid} -> port {p}, but the switch has {ports} ports (use 255 for no route)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const TEXT: &str = r#"
nodes = [
  { hca = "a", lid = 2 },
  { hca = "b" },
  { switch = "s", ports = 3 },
  { hca = "c" },
]
links = ["a:0 <-> s:0", "s:1 <-> b:0", "c:0 <-> s:2"]
"#;

    fn raw(text: &str) -> RawTopo {
        toml::from_str(text).unwrap()
    }

    /// `text` as the file `dir/t.toml`.
    fn file(text: &str) -> TomlFile<'_> {
        TomlFile {
            path: Path::new("dir/t.toml"),
            text,
        }
    }

    /// The error of reading the nodes and links of `text`.
    fn err(text: &str) -> String {
        let (raw, f) = (raw(text), file(text));
        read_nodes(&raw, &f)
            .and_then(|(nodes, by_name)| read_links(&raw, &f, &nodes, &by_name))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn nodes_in_order_with_the_lowest_free_lids() {
        let (nodes, by_name) = read_nodes(&raw(TEXT), &file(TEXT)).unwrap();
        let lids: Vec<Option<u16>> = nodes.iter().map(Node::lid).collect();
        assert_eq!(lids, [Some(2), Some(1), None, Some(3)]);
        assert_eq!(nodes[2].num_ports(), 3);
        assert_eq!((by_name["s"], by_name["c"]), (2, 3));
    }

    #[test]
    fn links_name_node_and_port() {
        let (raw, f) = (raw(TEXT), file(TEXT));
        let (nodes, by_name) = read_nodes(&raw, &f).unwrap();
        let links = read_links(&raw, &f, &nodes, &by_name).unwrap();
        let ends: Vec<(usize, u16, usize, u16)> = links
            .iter()
            .map(|l| (l.a.node, l.a.port, l.b.node, l.b.port))
            .collect();
        assert_eq!(ends, [(0, 0, 2, 0), (2, 1, 1, 0), (3, 0, 2, 2)]);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        for (text, msg) in [
            (
                "nodes = [\n  { hca = \"a\", ports = 1 },\n]\n",
                "dir/t.toml:2:3: HCA a: HCAs have one port; drop `ports`",
            ),
            (
                "nodes = [{ hca = \"a\", lid = 1 }, { hca = \"b\", lid = 1 }]\n",
                "dir/t.toml:1:34: HCA b: LID 1 is already used by a",
            ),
            (
                "nodes = [{ switch = \"s\" }]\n",
                "dir/t.toml:1:10: switch s: missing `ports`",
            ),
            (
                "nodes = [{ hca = \"a b\" }]\n",
                "dir/t.toml:1:10: bad node name \"a b\" (no whitespace, not empty)",
            ),
            (
                "nodes = [{ hca = \"a\" }]\nlinks = [\"a:0 <-> a:0\"]\n",
                "dir/t.toml:2:10: link \"a:0 <-> a:0\": port 0 of a is already used by link \"a:0 <-> a:0\"",
            ),
            (
                "nodes = [{ hca = \"a\" }]\nlinks = [\"a:1 <-> x:0\"]\n",
                "dir/t.toml:2:10: link \"a:1 <-> x:0\": port 1 of a is out of range (ports 0..=0)",
            ),
        ] {
            assert_eq!(err(text), msg, "{text:?}");
        }
    }

    #[test]
    fn tables_cover_every_lid_with_real_ports() {
        assert_eq!(check_table("s", &[255, 0, 2], 3, 2), Ok(()));
        assert_eq!(
            check_table("s", &[255, 0], 3, 2).unwrap_err(),
            "[fdb] s: 2 entries, must cover LIDs 0..=2"
        );
        assert_eq!(
            check_table("s", &[255, 0, 3], 3, 2).unwrap_err(),
            "[fdb] s: LID 2 -> port 3, but the switch has 3 ports (use 255 for no route)"
        );
    }

    #[test]
    fn fdb_tables_only_with_routing_by_tables() {
        let text = format!("{TEXT}[fdb]\ns = [255, 1, 0, 2]\n");
        let (raw, f) = (raw(&text), file(&text));
        let (mut nodes, by_name) = read_nodes(&raw, &f).unwrap();
        assert_eq!(
            read_tables(&raw, &f, &mut nodes, &by_name, None).unwrap(),
            Routing::Tables
        );
        assert_eq!(nodes[2].fdb(), Some(&[255, 1, 0, 2][..]));
        let e = read_tables(&raw, &f, &mut nodes, &by_name, Some(Routing::MinHop)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dir/t.toml: [fdb] tables are given, but routing = \"minhop\" would replace them; drop one"
        );
    }
}
