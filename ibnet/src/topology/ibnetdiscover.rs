//! Import of a real cluster from the standard InfiniBand diagnostics:
//! the topology printed by `ibnetdiscover` and, optionally, the linear
//! forwarding tables printed by `dump_lfts.sh` / `ibroute`.
//!
//! `ibnetdiscover` text (one block per node, blank lines between blocks):
//!
//! ```text
//! vendid=0x2c9
//! switchguid=0x2c90200400001(2c90200400001)
//! Switch  36 "S-0002c90200400001"    # "leaf1" enhanced port 0 lid 1 lmc 0
//! [1]     "H-0002c90300000101"[1](2c90300000102)   # "node01 HCA-1" lid 11 4xQDR
//! [19]    "S-0002c90200400003"[1]  # "spine1" lid 3 4xQDR
//!
//! caguid=0x2c90300000101
//! Ca      2 "H-0002c90300000101"    # "node01 HCA-1"
//! [1](2c90300000102)  "S-0002c90200400001"[1]  # lid 11 lmc 0 "leaf1" lid 1 4xQDR
//! ```
//!
//! Mapping to ibnet: IB switch ports are 1-based (port 0 is the switch's
//! management port), ibnet's are 0-based, so IB port `p` is ibnet port
//! `p - 1` (as for IBDM's `P<n>`). An HCA may have several ports, but only
//! one may be cabled (ibnet HCAs have one port). A host's LID is the one
//! printed for its cabled port. Switch LIDs are not used (ibnet addresses
//! hosts only). Names: a node is named by its description (NodeDescription,
//! spaces become `_`) when that is unique, else by its `ibnetdiscover` id
//! (`H-<guid>`, `S-<guid>`). Node order: hosts by increasing LID (so rank r
//! is the host with the r-th smallest LID), then switches in file order.
//! Link width and speed (`4xQDR`) are not used: every link runs at the rate
//! the parameters give.
//!
//! `dump_lfts.sh` / `ibroute` text, one section per switch:
//!
//! ```text
//! Unicast lids [0x0-0xc] of switch Lid 1 guid 0x0002c90200400001 (leaf1):
//!   Lid  Out   Destination
//!        Port     Info
//! 0x000b 001 : (Channel Adapter portguid 0x0002c90300000102: 'node01 HCA-1')
//! 3 valid lids dumped
//! ```
//!
//! The output port is an IB port number (1-based; 0 is the switch itself).
//! LIDs a table does not list have no route. Without tables ibnet computes
//! min-hop routes.

use std::collections::HashMap;
use std::path::Path;

use super::cables::Cables;
use super::error::{read_text, Loc, TopoError};
use super::{
    file_stem_name, finish_import, Link, Node, NodeKind, PortRef, Routing, Topology,
    ValidateOptions, NO_ROUTE,
};

/// Bounds that keep a malformed file from allocating without limit.
const MAX_NODES: usize = 1 << 20;
const MAX_PORTS: u64 = 254;

/// Does `text` look like `ibnetdiscover` output (a `Switch` or `Ca` node
/// line)? Used to recognise such a file whatever its name.
pub fn looks_like_ibnetdiscover(text: &str) -> bool {
    text.lines().take(10_000).any(|l| {
        let mut f = l.split_whitespace();
        matches!(f.next(), Some("Switch" | "Ca"))
            && f.next().is_some_and(|n| n.parse::<u32>().is_ok())
            && f.next().is_some_and(|id| id.starts_with('"'))
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Switch,
    Ca,
}

struct RawNode {
    kind: Kind,
    id: String,
    desc: String,
    nports: u16,
    line: usize,
    /// HCA: LID and the line it came from
    lid: Option<(u16, usize)>,
    /// HCA: its cabled IB port
    cabled: Option<(u16, usize)>,
}

/// Split a quoted string at the start of `s`: returns (contents, rest).
fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.strip_prefix('"')?;
    let end = s.find('"')?;
    Some((&s[..end], &s[end + 1..]))
}

/// `[n]` at the start of `s`: (n, rest).
fn bracket_num(s: &str) -> Option<(u64, &str)> {
    let s = s.strip_prefix('[')?;
    let end = s.find(']')?;
    let n = s[..end].trim().parse().ok()?;
    Some((n, &s[end + 1..]))
}

/// Skip an optional `(hexguid)` at the start of `s`.
fn skip_guid(s: &str) -> &str {
    if let Some(r) = s.strip_prefix('(') {
        if let Some(end) = r.find(')') {
            return &r[end + 1..];
        }
    }
    s
}

/// The number after the word `lid` in `s` (first occurrence).
fn lid_after(s: &str) -> Option<&str> {
    let mut w = s.split_whitespace();
    while let Some(x) = w.next() {
        if x == "lid" {
            return w.next();
        }
    }
    None
}

fn parse_lid(tok: &str, loc: &Loc) -> Result<u16, TopoError> {
    match tok.parse::<u32>() {
        Ok(l) if (1..=0xBFFF).contains(&l) => Ok(l as u16),
        _ => Err(TopoError::parse(
            loc.clone(),
            format!("LID {tok:?}: a unicast LID is 1..49151"),
        )),
    }
}

/// GUID of an `ibnetdiscover` id `S-0002c90200400001` / `H-...`.
fn guid_of_id(id: &str) -> Option<u64> {
    let hex = id.split_once('-')?.1;
    u64::from_str_radix(hex, 16).ok()
}

/// Load an `ibnetdiscover` topology; with `lfts` its tables, else min-hop.
pub fn load_ibnetdiscover(path: &Path, lfts: Option<&Path>) -> Result<Topology, TopoError> {
    load_files(path, lfts, None, &ValidateOptions::default())
}

pub(crate) fn load_files(
    path: &Path,
    lfts: Option<&Path>,
    routing: Option<Routing>,
    opts: &ValidateOptions,
) -> Result<Topology, TopoError> {
    let text = read_text(path)?;
    let Parsed {
        mut nodes,
        by_id,
        pending,
    } = parse(&text, path)?;
    let links = cable(&mut nodes, &by_id, pending, path)?;
    let lid_owner = check_hosts(&nodes, path)?;
    let (order, names) = order_and_names(&nodes, &by_id);
    let mut tables = match lfts {
        Some(lfts) => read_tables(&nodes, &lid_owner, lfts, path)?,
        None => vec![None; nodes.len()],
    };
    let (out_nodes, out_links) = build(&nodes, &order, names, &mut tables, &links);
    let lines: Vec<usize> = order.iter().map(|&i| nodes[i].line).collect();
    finish_import(
        file_stem_name(path),
        path,
        out_nodes,
        &lines,
        out_links,
        lfts.is_some(),
        routing,
        "routing by tables needs --lfts (dump_lfts.sh output)",
        opts,
    )
}

/// A cable end: (node, IB port).
type End = (usize, u16);

/// A port line's cable, resolved once every node is read.
struct Pending {
    node: usize,
    port: u16,
    peer: String,
    peer_port: u16,
    /// The LID printed for the peer (a host's LID may be given only there).
    peer_lid: Option<u16>,
    line: usize,
}

/// The nodes of a file, by id, and their port lines.
struct Parsed {
    nodes: Vec<RawNode>,
    by_id: HashMap<String, usize>,
    pending: Vec<Pending>,
}

/// Step 1: the node blocks. A blank line ends a block; port lines belong
/// to the block they are in; `key=value` lines are skipped.
fn parse(text: &str, path: &Path) -> Result<Parsed, TopoError> {
    let mut p = Parsed {
        nodes: Vec::new(),
        by_id: HashMap::new(),
        pending: Vec::new(),
    };
    let mut current: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let loc = || Loc::line(path, lineno);
        let line = raw.trim();
        if line.is_empty() {
            current = None;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or("");
        if word == "Switch" || word == "Ca" || word == "Rt" {
            current = Some(node_line(&mut p, line, word, lineno, path)?);
            continue;
        }
        if line.starts_with('[') {
            let Some(cur) = current else {
                return Err(TopoError::parse(
                    loc(),
                    "port line outside a node block (missing `Switch`/`Ca` line?)",
                ));
            };
            let pending = port_line(&mut p.nodes, cur, line, lineno, path)?;
            p.pending.push(pending);
            continue;
        }
        // `key=value` lines (vendid, devid, sysimgguid, switchguid, caguid)
        if line.contains('=') && !line.contains(char::is_whitespace) {
            continue;
        }
        return Err(TopoError::parse(
            loc(),
            format!("unrecognised line {line:?} (expected a `Switch`/`Ca` line, a `[port]` line or `key=value`)"),
        ));
    }
    Ok(p)
}

/// A `Switch`/`Ca` line: the node it starts (its index).
fn node_line(
    p: &mut Parsed,
    line: &str,
    word: &str,
    lineno: usize,
    path: &Path,
) -> Result<usize, TopoError> {
    let loc = || Loc::line(path, lineno);
    let (nodes, by_id) = (&mut p.nodes, &mut p.by_id);
    if word == "Rt" {
        return Err(TopoError::parse(loc(), "routers (Rt) are not supported"));
    }
    let rest = line[word.len()..].trim_start();
    let (n, rest) = rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len()));
    let nports: u64 = n.parse().map_err(|_| {
        TopoError::parse(
            loc(),
            format!("expected a port count after {word}, found {n:?}"),
        )
    })?;
    if !(1..=MAX_PORTS).contains(&nports) {
        return Err(TopoError::parse(
            loc(),
            format!("{word} with {nports} ports (1..={MAX_PORTS})"),
        ));
    }
    let Some((id, rest)) = quoted(rest.trim_start()) else {
        return Err(TopoError::parse(
            loc(),
            format!("expected `{word} <ports> \"<id>\"  # \"<description>\" ...`"),
        ));
    };
    if id.is_empty() {
        return Err(TopoError::parse(loc(), "empty node id"));
    }
    let desc = rest
        .trim_start()
        .strip_prefix('#')
        .and_then(|r| quoted(r.trim_start()))
        .map(|(d, _)| d.to_string())
        .unwrap_or_default();
    if let Some(&o) = by_id.get(id) {
        return Err(TopoError::parse(
            loc(),
            format!("node {id} listed twice (also on line {})", nodes[o].line),
        ));
    }
    if nodes.len() >= MAX_NODES {
        return Err(TopoError::parse(
            loc(),
            format!("more than {MAX_NODES} nodes"),
        ));
    }
    by_id.insert(id.to_string(), nodes.len());
    nodes.push(RawNode {
        kind: if word == "Switch" {
            Kind::Switch
        } else {
            Kind::Ca
        },
        id: id.to_string(),
        desc,
        nports: nports as u16,
        line: lineno,
        lid: None,
        cabled: None,
    });
    Ok(nodes.len() - 1)
}

/// A `[port]` line of node `cur`: its cable, to resolve later (and the
/// host's own LID from a `Ca` block's comment).
fn port_line(
    nodes: &mut [RawNode],
    cur: usize,
    line: &str,
    lineno: usize,
    path: &Path,
) -> Result<Pending, TopoError> {
    let loc = || Loc::line(path, lineno);
    let bad = |what: &str| {
        TopoError::parse(
            loc(),
            format!(
                "{what}: expected `[<port>] \"<peer id>\"[<peer port>]  # ...`, found {line:?}"
            ),
        )
    };
    let (p, rest) = bracket_num(line).ok_or_else(|| bad("bad local port"))?;
    let mut rest = skip_guid(rest).trim_start();
    // `[ext N]` of grouped output
    if rest.starts_with("[ext") {
        rest = rest[rest.find(']').map_or(rest.len(), |e| e + 1)..].trim_start();
    }
    let (peer, rest) = quoted(rest).ok_or_else(|| bad("no peer id"))?;
    let (pp, rest) = bracket_num(rest).ok_or_else(|| bad("no peer port"))?;
    let rest = skip_guid(rest).trim_start();
    let node = &nodes[cur];
    if p == 0 || p > node.nports as u64 {
        return Err(TopoError::parse(
            loc(),
            format!("port {p} of {}: it has ports 1..{}", node.id, node.nports),
        ));
    }
    if pp == 0 || pp > MAX_PORTS {
        return Err(TopoError::parse(
            loc(),
            format!("peer port {pp}: ports are 1..{MAX_PORTS}"),
        ));
    }
    // `# "peer desc" lid L 4xQDR` (switch) or
    // `# lid L lmc M "peer desc" lid PL 4xQDR` (CA)
    let comment = rest.strip_prefix('#').unwrap_or("").trim_start();
    let mut peer_lid = None;
    if node.kind == Kind::Ca {
        if let Some(tok) = comment
            .strip_prefix("lid")
            .and_then(|r| r.split_whitespace().next())
        {
            let lid = parse_lid(tok, &loc())?;
            set_lid(&mut nodes[cur], lid, lineno, path)?;
        }
    }
    // the peer's LID: the `lid` after the peer's quoted description
    if let Some(q) = comment.find('"') {
        if let Some((_, after)) = quoted(&comment[q..]) {
            if let Some(tok) = lid_after(after) {
                peer_lid = Some(parse_lid(tok, &loc())?);
            }
        }
    }
    Ok(Pending {
        node: cur,
        port: p as u16,
        peer: peer.to_string(),
        peer_port: pp as u16,
        peer_lid,
        line: lineno,
    })
}

/// Step 2: the cables. Each is listed from both ends (the second listing
/// must agree); a host may have one cabled port.
fn cable(
    nodes: &mut [RawNode],
    by_id: &HashMap<String, usize>,
    pending: Vec<Pending>,
    path: &Path,
) -> Result<Vec<(End, End)>, TopoError> {
    let mut cables: Cables<End> = Cables::new();
    for Pending {
        node: a_node,
        port: a_port,
        peer,
        peer_port: pp,
        peer_lid,
        line: lineno,
    } in pending
    {
        let loc = Loc::line(path, lineno);
        let Some(&b_node) = by_id.get(&peer) else {
            return Err(TopoError::parse(
                loc,
                format!("peer {peer} is not listed in the file"),
            ));
        };
        if pp > nodes[b_node].nports {
            return Err(TopoError::parse(
                loc,
                format!(
                    "port {pp} of {peer}: it has ports 1..{}",
                    nodes[b_node].nports
                ),
            ));
        }
        if let Some(lid) = peer_lid {
            if nodes[b_node].kind == Kind::Ca {
                set_lid(&mut nodes[b_node], lid, lineno, path)?;
            }
        }
        let (a, b) = ((a_node, a_port), (b_node, pp));
        let show = |e: (usize, u16)| format!("{}[{}]", nodes[e.0].id, e.1);
        cables
            .add(a, b, lineno, show)
            .map_err(|m| TopoError::parse(loc.clone(), m))?;
        for e in [a, b] {
            let n = &mut nodes[e.0];
            if n.kind == Kind::Ca {
                match n.cabled {
                    None => n.cabled = Some((e.1, lineno)),
                    Some((p, _)) if p == e.1 => {}
                    Some((p, l)) => {
                        return Err(TopoError::parse(
                            loc,
                            format!(
                                "{} has ports {p} (line {l}) and {} cabled: ibnet hosts have one port (multi-rail is not supported)",
                                n.id, e.1
                            ),
                        ))
                    }
                }
            }
        }
    }
    Ok(cables.links)
}

/// Step 3: every host has a cable and a LID, no LID is used twice; the
/// owner of each LID.
fn check_hosts(nodes: &[RawNode], path: &Path) -> Result<HashMap<u16, usize>, TopoError> {
    for n in nodes {
        if n.kind == Kind::Ca {
            if n.cabled.is_none() {
                return Err(TopoError::parse(
                    Loc::line(path, n.line),
                    format!("host {} has no cabled port", n.id),
                ));
            }
            if n.lid.is_none() {
                return Err(TopoError::parse(
                    Loc::line(path, n.line),
                    format!("host {} has no LID (no `lid N` on its port lines)", n.id),
                ));
            }
        }
    }
    let mut lid_owner: HashMap<u16, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if let Some((lid, l)) = n.lid {
            if let Some(o) = lid_owner.insert(lid, i) {
                return Err(TopoError::parse(
                    Loc::line(path, l),
                    format!("LID {lid} of {} is also the LID of {}", n.id, nodes[o].id),
                ));
            }
        }
    }
    Ok(lid_owner)
}

/// Step 4: the order of the nodes (hosts by LID, then switches in file
/// order) and their names (the description when unique, else the id), in
/// that order.
fn order_and_names(nodes: &[RawNode], by_id: &HashMap<String, usize>) -> (Vec<usize>, Vec<String>) {
    let sanitize = |d: &str| d.split_whitespace().collect::<Vec<_>>().join("_");
    let mut count: HashMap<String, usize> = HashMap::new();
    for n in nodes {
        *count.entry(sanitize(&n.desc)).or_default() += 1;
    }
    let name_of = |n: &RawNode| {
        let d = sanitize(&n.desc);
        if !d.is_empty() && count[&d] == 1 && !by_id.contains_key(&d) {
            d
        } else {
            n.id.clone()
        }
    };
    let mut order: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].kind == Kind::Ca)
        .collect();
    order.sort_by_key(|&i| nodes[i].lid.map(|l| l.0));
    order.extend((0..nodes.len()).filter(|&i| nodes[i].kind == Kind::Switch));
    let names = order.iter().map(|&i| name_of(&nodes[i])).collect();
    (order, names)
}

/// Step 5 (with `--lfts`): each switch's table, by node, from the
/// `dump_lfts.sh` output; every switch needs one.
fn read_tables(
    nodes: &[RawNode],
    lid_owner: &HashMap<u16, usize>,
    lfts: &Path,
    path: &Path,
) -> Result<Vec<Option<Vec<u16>>>, TopoError> {
    let max_lid = lid_owner.keys().max().copied().unwrap_or(0) as usize;
    let mut tables: Vec<Option<Vec<u16>>> = vec![None; nodes.len()];
    let guid_to_switch: HashMap<u64, usize> = (0..nodes.len())
        .filter(|&i| nodes[i].kind == Kind::Switch)
        .filter_map(|i| guid_of_id(&nodes[i].id).map(|g| (g, i)))
        .collect();
    let raw = read_lfts(lfts)?;
    for (guid, line, entries) in raw {
        let Some(&s) = guid_to_switch.get(&guid) else {
            return Err(TopoError::parse(
                Loc::line(lfts, line),
                format!("switch guid {guid:#018x} is not in {}", path.display()),
            ));
        };
        if tables[s].is_some() {
            return Err(TopoError::parse(
                Loc::line(lfts, line),
                format!("second table of switch {}", nodes[s].id),
            ));
        }
        let mut t = vec![NO_ROUTE; max_lid + 1];
        for (lid, port, l) in entries {
            if port as u16 > nodes[s].nports {
                return Err(TopoError::parse(
                    Loc::line(lfts, l),
                    format!(
                        "LID {lid:#06x} routed to port {port}, but switch {} has ports 1..{}",
                        nodes[s].id, nodes[s].nports
                    ),
                ));
            }
            // port 0 is the switch itself (its own LID): not a host route
            if (lid as usize) < t.len() && port > 0 && lid_owner.contains_key(&lid) {
                t[lid as usize] = port as u16 - 1;
            }
        }
        tables[s] = Some(t);
    }
    if let Some(s) =
        (0..nodes.len()).find(|&i| nodes[i].kind == Kind::Switch && tables[i].is_none())
    {
        return Err(TopoError::parse(
            Loc::file(lfts),
            format!("no table for switch {} ({})", nodes[s].id, nodes[s].desc),
        ));
    }
    Ok(tables)
}

/// Step 6: the topology's nodes and links in the new order (IB port p is
/// ibnet port p - 1; a host's one port is 0).
fn build(
    nodes: &[RawNode],
    order: &[usize],
    names: Vec<String>,
    tables: &mut [Option<Vec<u16>>],
    links: &[(End, End)],
) -> (Vec<Node>, Vec<Link>) {
    let mut new_index = vec![0usize; nodes.len()];
    for (k, &i) in order.iter().enumerate() {
        new_index[i] = k;
    }
    let out_nodes: Vec<Node> = order
        .iter()
        .zip(names)
        .map(|(&i, name)| {
            let n = &nodes[i];
            Node {
                name,
                kind: match n.kind {
                    Kind::Ca => NodeKind::Hca {
                        lid: n.lid.expect("checked").0,
                    },
                    Kind::Switch => NodeKind::Switch {
                        ports: n.nports,
                        fdb: tables[i].take().unwrap_or_default(),
                    },
                },
            }
        })
        .collect();
    let pr = |(n, p): (usize, u16)| PortRef {
        node: new_index[n],
        port: if nodes[n].kind == Kind::Ca { 0 } else { p - 1 },
    };
    let out_links = links
        .iter()
        .map(|&(a, b)| Link { a: pr(a), b: pr(b) })
        .collect();
    (out_nodes, out_links)
}

fn set_lid(n: &mut RawNode, lid: u16, line: usize, path: &Path) -> Result<(), TopoError> {
    match n.lid {
        None => n.lid = Some((lid, line)),
        Some((l, _)) if l == lid => {}
        Some((l, at)) => {
            return Err(TopoError::parse(
                Loc::line(path, line),
                format!("{} has LID {lid} here but LID {l} on line {at}", n.id),
            ))
        }
    }
    Ok(())
}

/// One switch's table: guid, header line, (LID, IB port, line) entries.
type RawLft = (u64, usize, Vec<(u16, u8, usize)>);

/// Parse `dump_lfts.sh` / `ibroute` output.
fn read_lfts(path: &Path) -> Result<Vec<RawLft>, TopoError> {
    let text = read_text(path)?;
    let mut out: Vec<RawLft> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let loc = || Loc::line(path, lineno);
        let line = raw.trim();
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with("Lid")
            || line.starts_with("Port")
            || line.ends_with("lids dumped")
            || line.starts_with("ibwarn")
            || line.starts_with("dump_lfts")
        {
            continue;
        }
        if line.starts_with("Unicast lids") {
            let guid = line
                .split_once(" guid ")
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|g| u64::from_str_radix(g.trim_start_matches("0x"), 16).ok())
                .ok_or_else(|| {
                    TopoError::parse(
                        loc(),
                        "expected `Unicast lids [..] of switch ... guid 0x<guid> (...)`",
                    )
                })?;
            out.push((guid, lineno, Vec::new()));
            continue;
        }
        if line.starts_with("0x") {
            let Some(cur) = out.last_mut() else {
                return Err(TopoError::parse(
                    loc(),
                    "table entry before a `Unicast lids` header",
                ));
            };
            let mut f = line.split_whitespace();
            let lid = f
                .next()
                .and_then(|l| u32::from_str_radix(&l[2..], 16).ok())
                .filter(|&l| l <= 0xFFFF);
            let port = f.next().and_then(|p| p.parse::<u8>().ok());
            let (Some(lid), Some(port)) = (lid, port) else {
                return Err(TopoError::parse(
                    loc(),
                    format!("expected `0x<lid> <port> : (...)`, found {line:?}"),
                ));
            };
            if cur.2.len() >= 1 << 16 {
                return Err(TopoError::parse(
                    loc(),
                    "more than 65536 entries in one table",
                ));
            }
            cur.2.push((lid as u16, port, lineno));
            continue;
        }
        return Err(TopoError::parse(
            loc(),
            format!("unrecognised line {line:?} (expected dump_lfts.sh / ibroute output)"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leaf switch with two hosts; host 2's LID is given only on the
    /// switch's port line.
    const TWO_HOSTS: &str = r#"switchguid=0x2
Switch  4 "S-0000000000000002"    # "leaf 1" enhanced port 0 lid 1 lmc 0
[1]     "H-0000000000000011"[1](12)   # "node01" lid 11 4xQDR
[2]     "H-0000000000000021"[1]   # "node02" lid 7 4xQDR

caguid=0x11
Ca      2 "H-0000000000000011"    # "node01"
[1](12)  "S-0000000000000002"[1]  # lid 11 lmc 0 "leaf 1" lid 1 4xQDR

Ca      1 "H-0000000000000021"    # "node02"
[1]  "S-0000000000000002"[2]  # "leaf 1" lid 1 4xQDR
"#;

    fn path() -> &'static Path {
        Path::new("t.ibnd")
    }

    #[test]
    fn parse_reads_nodes_and_port_lines() {
        let p = parse(TWO_HOSTS, path()).unwrap();
        let ids: Vec<(&str, &str, u16, usize)> = p
            .nodes
            .iter()
            .map(|n| (n.id.as_str(), n.desc.as_str(), n.nports, n.line))
            .collect();
        assert_eq!(
            ids,
            [
                ("S-0000000000000002", "leaf 1", 4, 2),
                ("H-0000000000000011", "node01", 2, 7),
                ("H-0000000000000021", "node02", 1, 10)
            ]
        );
        assert_eq!(p.by_id["H-0000000000000021"], 2);
        // host 1's own LID from its block's comment
        assert_eq!(p.nodes[1].lid, Some((11, 8)));
        let cables: Vec<(usize, u16, &str, u16, Option<u16>)> = p
            .pending
            .iter()
            .map(|c| (c.node, c.port, c.peer.as_str(), c.peer_port, c.peer_lid))
            .collect();
        assert_eq!(
            cables,
            [
                (0, 1, "H-0000000000000011", 1, Some(11)),
                (0, 2, "H-0000000000000021", 1, Some(7)),
                (1, 1, "S-0000000000000002", 1, Some(1)),
                (2, 1, "S-0000000000000002", 2, Some(1)),
            ]
        );
    }

    #[test]
    fn parse_errors_name_the_line() {
        let e = |t: &str| match parse(t, path()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{t:?} parsed"),
        };
        assert!(e("Rt 2 \"R-1\"\n").contains("routers (Rt) are not supported"));
        assert!(e("[1] \"S-1\"[1]\n").contains("outside a node block"));
        assert!(e("Switch 300 \"S-1\"\n").contains("300 ports"));
        assert!(e("Switch 2 \"S-1\"\n[3] \"S-2\"[1]\n").contains("port 3 of S-1"));
        assert!(
            e("Switch 2 \"S-1\"\n\nSwitch 2 \"S-1\"\n").contains("listed twice (also on line 1)")
        );
        assert!(e("hello world\n").contains("unrecognised line"));
    }

    #[test]
    fn cables_are_listed_from_both_ends() {
        let mut p = parse(TWO_HOSTS, path()).unwrap();
        let links = cable(&mut p.nodes, &p.by_id, p.pending, path()).unwrap();
        assert_eq!(links, [((0, 1), (1, 1)), ((0, 2), (2, 1))]);
        // host 2's LID came from the switch's line
        assert_eq!(p.nodes[2].lid, Some((7, 4)));
        assert_eq!(p.nodes[2].cabled, Some((1, 4)));
        let lids = check_hosts(&p.nodes, path()).unwrap();
        assert_eq!(lids, HashMap::from([(11, 1), (7, 2)]));
        // a host with two cabled ports
        let bad = TWO_HOSTS.replace(
            "[2]     \"H-0000000000000021\"[1]   # \"node02\" lid 7",
            "[2]     \"H-0000000000000011\"[2]   # \"node01\"",
        );
        let mut p = parse(&bad, path()).unwrap();
        let e = cable(&mut p.nodes, &p.by_id, p.pending, path()).unwrap_err();
        assert!(e.to_string().contains("multi-rail is not supported"), "{e}");
    }

    #[test]
    fn hosts_by_lid_named_by_unique_descriptions() {
        let mut p = parse(TWO_HOSTS, path()).unwrap();
        let links = cable(&mut p.nodes, &p.by_id, p.pending, path()).unwrap();
        let (order, names) = order_and_names(&p.nodes, &p.by_id);
        assert_eq!(order, [2, 1, 0]);
        assert_eq!(names, ["node02", "node01", "leaf_1"]);
        let mut tables = vec![None; 3];
        let (nodes, out_links) = build(&p.nodes, &order, names, &mut tables, &links);
        assert_eq!(nodes[0].kind, NodeKind::Hca { lid: 7 });
        assert_eq!(
            out_links[0],
            Link {
                a: PortRef { node: 2, port: 0 },
                b: PortRef { node: 1, port: 0 }
            }
        );
        assert_eq!(out_links[1].a, PortRef { node: 2, port: 1 });
    }
}
