//! Import of the reference model's network descriptions (OMNeT++ NED
//! files, docs/model/fabric.md 9 "Network description"), the subset the reference's
//! examples use:
//!
//! ```text
//! package ib_model.examples.x;          // optional
//! import ib_model.*;                    // any number
//! network NAME
//! {
//!     submodules:
//!         H_1: HCA { parameters: srcLid = 1; @display("..."); }
//!         SW_1: Switch { parameters: numSwitchPorts = 3; gates: port[3]; }
//!     connections:
//!         H_1.port <--> IB4XQDRWire <--> SW_1.port[0];
//! }
//! ```
//!
//! Node order is the declaration order of the submodules and link order is
//! the order of the connections: the reference creates and initialises its
//! modules in this order, which decides the order of same-instant events
//! (docs/model/fabric.md 1.4). Forwarding tables come from the `.fdbs` and
//! `.fdbs.ini` files beside the NED file (see [`NedFiles::by_convention`]),
//! else min-hop tables are computed.
//!
//! Other parameters of a submodule are ignored (the fabric's parameters
//! come from the preset and `--set`), and so is the channel type: every
//! link runs at the rate the parameters give, so all connections must name
//! the same channel type.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::error::{read_text, Loc, TopoError};
use super::ibdm::{read_tables, table_pair};
use super::siblings::{dir_and_stem, table_files, with_extension};
use super::{finish_import, Link, Node, NodeKind, PortRef, Routing, Topology, ValidateOptions};

/// Bounds that keep a malformed file from allocating without limit.
const MAX_NODES: usize = 1 << 20;
const MAX_PORTS: u32 = 254;

/// The files of one NED network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NedFiles {
    pub ned: PathBuf,
    pub fdbs: Option<PathBuf>,
    pub fdbs_ini: Option<PathBuf>,
}

impl NedFiles {
    /// `X.fdbs` and `X.fdbs.ini` beside `X.ned` when both exist; else the
    /// only `*.fdbs` file of the directory together with its `.fdbs.ini`
    /// (the 3h_2s example names its tables differently from its NED file);
    /// else none (min-hop routing).
    pub fn by_convention(ned: &Path) -> Result<NedFiles, TopoError> {
        let (dir, stem) = dir_and_stem(ned);
        let mut found = table_files(dir.join(format!("{stem}.fdbs")));
        if found.is_none() {
            let mut all = with_extension(dir, "fdbs")?;
            if all.len() == 1 {
                found = table_files(all.pop().unwrap());
            }
        }
        let (fdbs, fdbs_ini) = found.unzip();
        Ok(NedFiles {
            ned: ned.to_path_buf(),
            fdbs,
            fdbs_ini,
        })
    }
}

/// Load a NED network with its tables by convention.
pub fn load_ned(path: &Path) -> Result<Topology, TopoError> {
    load_files(
        &NedFiles::by_convention(path)?,
        None,
        &ValidateOptions::default(),
    )
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(u64),
    Str,
    Punct(&'static str),
}

/// Split NED text into tokens with their 1-based line and column.
fn lex(text: &str, file: &Path) -> Result<Vec<(Tok, usize, usize)>, TopoError> {
    let b = text.as_bytes();
    let (mut i, mut line, mut line_start) = (0usize, 1usize, 0usize);
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        let col = i - line_start + 1;
        let here = || Loc {
            col,
            ..Loc::line(file, line)
        };
        match c {
            b'\n' => {
                i += 1;
                line += 1;
                line_start = i;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\n' {
                        return Err(TopoError::parse(here(), "unterminated string"));
                    }
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() {
                    return Err(TopoError::parse(here(), "unterminated string"));
                }
                i += 1;
                out.push((Tok::Str, line, col));
            }
            b'0'..=b'9' => {
                let s = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n: u64 = text[s..i]
                    .parse()
                    .map_err(|_| TopoError::parse(here(), "number too large"))?;
                out.push((Tok::Num(n), line, col));
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'@' => {
                let s = i;
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push((Tok::Ident(text[s..i].to_string()), line, col));
            }
            _ => {
                const PUNCT: [&str; 15] = [
                    "<-->", "-->", "<--", "{", "}", "[", "]", "(", ")", ";", ":", "=", ".", "*",
                    ",",
                ];
                let Some(p) = PUNCT.iter().find(|p| text[i..].starts_with(**p)) else {
                    let ch = text[i..].chars().next().unwrap_or('?');
                    return Err(TopoError::parse(
                        here(),
                        format!("unexpected character {ch:?}"),
                    ));
                };
                i += p.len();
                out.push((Tok::Punct(p), line, col));
            }
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<(Tok, usize, usize)>,
    pos: usize,
    file: &'a Path,
    /// line of the end of the file, for "unexpected end" messages
    last_line: usize,
}

impl Parser<'_> {
    fn loc(&self) -> Loc {
        match self.toks.get(self.pos) {
            Some(&(_, line, col)) => Loc {
                col,
                ..Loc::line(self.file, line)
            },
            None => Loc::line(self.file, self.last_line),
        }
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, TopoError> {
        let found = match self.peek() {
            None => "end of file".to_string(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Num(n)) => format!("`{n}`"),
            Some(Tok::Str) => "a string".to_string(),
            Some(Tok::Punct(p)) => format!("`{p}`"),
        };
        Err(TopoError::parse(
            self.loc(),
            format!("{}, found {found}", msg.into()),
        ))
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == s)
    }
    fn punct(&mut self, p: &str) -> Result<(), TopoError> {
        if self.is_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(format!("expected `{p}`"))
        }
    }
    fn ident(&mut self, what: &str) -> Result<String, TopoError> {
        match self.peek() {
            Some(Tok::Ident(s)) if !s.starts_with('@') => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => self.err(format!("expected {what}")),
        }
    }
    fn num(&mut self, what: &str) -> Result<u64, TopoError> {
        match self.peek() {
            Some(&Tok::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            _ => self.err(format!("expected {what}")),
        }
    }
    /// Skip a balanced `( ... )` (a property's arguments).
    fn skip_parens(&mut self) -> Result<(), TopoError> {
        self.punct("(")?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.peek() {
                None => return self.err("unbalanced `(`"),
                Some(Tok::Punct("(")) => depth += 1,
                Some(Tok::Punct(")")) => depth -= 1,
                _ => {}
            }
            self.pos += 1;
        }
        Ok(())
    }
    /// A dotted name (`a.b.c` or `a.*` is not needed: imports are skipped).
    fn skip_to_semicolon(&mut self) -> Result<(), TopoError> {
        while !self.is_punct(";") {
            if self.peek().is_none() || self.is_punct("{") || self.is_punct("}") {
                return self.err("expected `;`");
            }
            self.pos += 1;
        }
        self.pos += 1;
        Ok(())
    }
}

/// A submodule while parsing.
struct Decl {
    name: String,
    line: usize,
    /// HCA: Some(lid); switch: None
    lid: Option<u16>,
    ports: u16,
}

/// One end of a connection: node index and port (HCA: 0).
fn gate(
    p: &mut Parser,
    by_name: &HashMap<String, usize>,
    decls: &[Decl],
) -> Result<PortRef, TopoError> {
    let at = p.loc();
    let name = p.ident("a submodule name")?;
    let Some(&node) = by_name.get(&name) else {
        return Err(TopoError::parse(at, format!("unknown submodule {name}")));
    };
    p.punct(".")?;
    let g = p.ident("a gate name (`port`)")?;
    if g != "port" {
        return Err(TopoError::parse(
            at,
            format!("{name}.{g}: the only gate is `port`"),
        ));
    }
    let d = &decls[node];
    if d.lid.is_some() {
        if p.is_punct("[") {
            return p.err(format!("HCA {name} has one port, written `{name}.port`"));
        }
        return Ok(PortRef { node, port: 0 });
    }
    if !p.is_punct("[") {
        return p.err(format!(
            "expected `[` (switch {name} has ports port[0..{}])",
            d.ports
        ));
    }
    p.punct("[")?;
    let at = p.loc();
    let i = p.num("a port index")?;
    p.punct("]")?;
    if i >= d.ports as u64 {
        return Err(TopoError::parse(
            at,
            format!("{name}.port[{i}]: {name} has ports port[0..{}]", d.ports),
        ));
    }
    Ok(PortRef {
        node,
        port: i as u16,
    })
}

/// `routing`: None = tables from files if given, else min-hop.
pub(crate) fn load_files(
    files: &NedFiles,
    routing: Option<Routing>,
    opts: &ValidateOptions,
) -> Result<Topology, TopoError> {
    let path = &files.ned;
    let text = read_text(path)?;
    let mut p = Parser {
        toks: lex(&text, path)?,
        pos: 0,
        file: path,
        last_line: text.lines().count().max(1),
    };
    let name = network_header(&mut p)?;
    let mods = submodules(&mut p)?;
    let links = connections(&mut p, &mods)?;
    let fdb = switch_tables(files, &mods)?;
    let nodes = build(&mods.decls, fdb);
    let lines: Vec<usize> = mods.decls.iter().map(|d| d.line).collect();
    finish_import(
        name,
        path,
        nodes,
        &lines,
        links,
        files.fdbs.is_some(),
        routing,
        "routing = \"tables\" needs .fdbs and .fdbs.ini beside it",
        opts,
    )
}

/// Step 1: `package` and `import` lines skipped, `network NAME {` and
/// `submodules:`; the network's name.
fn network_header(p: &mut Parser) -> Result<String, TopoError> {
    if p.is_ident("package") {
        p.pos += 1;
        p.skip_to_semicolon()?;
    }
    while p.is_ident("import") {
        p.pos += 1;
        p.skip_to_semicolon()?;
    }
    if !p.is_ident("network") {
        return p.err("expected `network NAME { ... }` (only network files are read)");
    }
    p.pos += 1;
    let name = p.ident("the network's name")?;
    p.punct("{")?;
    if p.is_ident("parameters") {
        return p.err("network parameters are not supported: expected `submodules:`");
    }
    if !p.is_ident("submodules") {
        return p.err("expected `submodules:`");
    }
    p.pos += 1;
    p.punct(":")?;
    Ok(name)
}

/// The submodules of a network: their declarations, by name, and the
/// HCA of each LID.
struct Submodules {
    decls: Vec<Decl>,
    by_name: HashMap<String, usize>,
    lids: HashMap<u16, usize>,
}

/// A submodule's settings, each with where it was written: `srcLid`,
/// `numSwitchPorts` and the size of its `port[N]` gate vector.
#[derive(Default)]
struct Settings {
    lid: Option<(u64, Loc)>,
    nsp: Option<(u64, Loc)>,
    gates: Option<(u64, Loc)>,
}

/// Step 2: the submodules up to `connections:` (or the network's end).
fn submodules(p: &mut Parser) -> Result<Submodules, TopoError> {
    let mut decls: Vec<Decl> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut lids: HashMap<u16, usize> = HashMap::new();
    while !p.is_ident("connections") && !p.is_punct("}") {
        let at = p.loc();
        let line = at.line;
        let m = p.ident("a submodule `NAME: TYPE { ... }` or `connections:`")?;
        p.punct(":")?;
        let ty_at = p.loc();
        let ty = p.ident("a module type (HCA or Switch)")?;
        let is_hca = match ty.as_str() {
            "HCA" => true,
            "Switch" => false,
            _ => {
                return Err(TopoError::parse(
                    ty_at,
                    format!("module type {ty}: only HCA and Switch are known"),
                ))
            }
        };
        let s = settings(p, &m)?;
        let decl = if is_hca {
            hca_decl(&m, line, &at, s, &lids, &decls)?
        } else {
            switch_decl(&m, line, &at, s)?
        };
        if let Some(lid) = decl.lid {
            lids.insert(lid, decls.len());
        }
        if let Some(&o) = by_name.get(&m) {
            return Err(TopoError::parse(
                at,
                format!(
                    "submodule {m} declared twice (also on line {})",
                    decls[o].line
                ),
            ));
        }
        if decls.len() >= MAX_NODES {
            return Err(TopoError::parse(
                at,
                format!("more than {MAX_NODES} submodules"),
            ));
        }
        by_name.insert(m, decls.len());
        decls.push(decl);
    }
    Ok(Submodules {
        decls,
        by_name,
        lids,
    })
}

/// A submodule's body: `;` or `{ parameters: ... gates: ... }`; unknown
/// parameters and `@` properties are skipped.
fn settings(p: &mut Parser, m: &str) -> Result<Settings, TopoError> {
    let Settings {
        mut lid,
        mut nsp,
        mut gates,
    } = Settings::default();
    if p.is_punct(";") {
        p.pos += 1;
    } else {
        p.punct("{")?;
        while !p.is_punct("}") {
            if p.peek().is_none() {
                return p.err(format!("expected `}}` closing submodule {m}"));
            }
            if (p.is_ident("parameters") || p.is_ident("gates"))
                && matches!(p.toks.get(p.pos + 1), Some((Tok::Punct(":"), ..)))
            {
                p.pos += 2;
                continue;
            }
            if let Some(Tok::Ident(s)) = p.peek() {
                if s.starts_with('@') {
                    p.pos += 1;
                    if p.is_punct("(") {
                        p.skip_parens()?;
                    }
                    p.punct(";")?;
                    continue;
                }
            }
            let key_at = p.loc();
            let key = p.ident("a parameter `name = value;` or a gate `port[N];`")?;
            if p.is_punct("[") {
                // gate vector size
                p.pos += 1;
                let at = p.loc();
                let n = p.num("a gate vector size")?;
                p.punct("]")?;
                p.punct(";")?;
                if key != "port" {
                    return Err(TopoError::parse(
                        key_at,
                        format!("gate {key}: the only gate is `port`"),
                    ));
                }
                gates = Some((n, at));
                continue;
            }
            p.punct("=")?;
            let vat = p.loc();
            match key.as_str() {
                "srcLid" => lid = Some((p.num("a LID")?, vat)),
                "numSwitchPorts" => nsp = Some((p.num("a port count")?, vat)),
                _ => {
                    // another parameter: its value is not used
                    while !p.is_punct(";") {
                        if p.peek().is_none() || p.is_punct("}") || p.is_punct("{") {
                            return p.err(format!("expected `;` after parameter {key}"));
                        }
                        p.pos += 1;
                    }
                }
            }
            p.punct(";")?;
        }
        p.punct("}")?;
    }
    Ok(Settings { lid, nsp, gates })
}

/// An HCA: a LID (1..65535, not used before) and no gate vector.
fn hca_decl(
    m: &str,
    line: usize,
    at: &Loc,
    s: Settings,
    lids: &HashMap<u16, usize>,
    decls: &[Decl],
) -> Result<Decl, TopoError> {
    let Settings { lid, gates, .. } = s;
    let Some((lid, lat)) = lid else {
        return Err(TopoError::parse(
            at.clone(),
            format!("HCA {m} has no srcLid"),
        ));
    };
    if !(1..=65535).contains(&lid) {
        return Err(TopoError::parse(
            lat,
            format!("srcLid {lid}: a LID is 1..65535"),
        ));
    }
    let lid = lid as u16;
    if let Some(&o) = lids.get(&lid) {
        return Err(TopoError::parse(
            lat,
            format!(
                "LID {lid} already used by {} (line {})",
                decls[o].name, decls[o].line
            ),
        ));
    }
    if let Some((_, gat)) = gates {
        return Err(TopoError::parse(
            gat,
            format!("HCA {m} has one port: no gate vector"),
        ));
    }
    Ok(Decl {
        name: m.to_string(),
        line,
        lid: Some(lid),
        ports: 1,
    })
}

/// A switch: its port count from `numSwitchPorts` or `port[N]` (equal
/// when both are given), no LID.
fn switch_decl(m: &str, line: usize, at: &Loc, s: Settings) -> Result<Decl, TopoError> {
    let Settings { lid, nsp, gates } = s;
    if let Some((_, lat)) = lid {
        return Err(TopoError::parse(
            lat,
            format!("switch {m}: srcLid is for HCAs"),
        ));
    }
    let n = match (nsp, gates) {
        (Some((a, _)), Some((b, gat))) if a != b => {
            return Err(TopoError::parse(
                gat,
                format!("switch {m}: numSwitchPorts = {a} but port[{b}]"),
            ))
        }
        (Some((n, at)), _) | (None, Some((n, at))) => (n, at),
        (None, None) => {
            return Err(TopoError::parse(
                at.clone(),
                format!("switch {m} has no numSwitchPorts"),
            ))
        }
    };
    if !(1..=MAX_PORTS as u64).contains(&n.0) {
        return Err(TopoError::parse(
            n.1,
            format!("switch {m}: {} ports (1..={MAX_PORTS})", n.0),
        ));
    }
    Ok(Decl {
        name: m.to_string(),
        line,
        lid: None,
        ports: n.0 as u16,
    })
}

/// Step 3: `connections:` (optional), each a bidirectional link between
/// two free gates, all of one channel type; then the network's end.
fn connections(p: &mut Parser, mods: &Submodules) -> Result<Vec<Link>, TopoError> {
    let (by_name, decls) = (&mods.by_name, &mods.decls);
    let mut links: Vec<Link> = Vec::new();
    let mut used: HashMap<PortRef, usize> = HashMap::new();
    let mut channel: Option<(String, usize)> = None;
    if p.is_ident("connections") {
        p.pos += 1;
        if p.is_ident("allowunconnected") {
            p.pos += 1;
        }
        p.punct(":")?;
        while !p.is_punct("}") {
            if p.peek().is_none() {
                return p.err("expected `}` closing the network");
            }
            let at = p.loc();
            let a = gate(p, by_name, decls)?;
            if !p.is_punct("<-->") {
                return p.err("expected `<-->` (links are bidirectional)");
            }
            p.pos += 1;
            if matches!(p.toks.get(p.pos + 1), Some((Tok::Punct("<-->"), ..))) {
                let cat = p.loc();
                let ch = p.ident("a channel type")?;
                match &channel {
                    None => channel = Some((ch, cat.line)),
                    Some((c, l)) if *c != ch => {
                        return Err(TopoError::parse(
                            cat,
                            format!(
                                "channel {ch}, but line {l} uses {c}: every link runs at the rate the parameters give, so all links must be of one type"
                            ),
                        ))
                    }
                    _ => {}
                }
                p.punct("<-->")?;
            }
            let b = gate(p, by_name, decls)?;
            p.punct(";")?;
            let show = |r: PortRef| {
                if decls[r.node].lid.is_some() {
                    format!("{}.port", decls[r.node].name)
                } else {
                    format!("{}.port[{}]", decls[r.node].name, r.port)
                }
            };
            if a == b {
                return Err(TopoError::parse(
                    at,
                    format!("{} is connected to itself", show(a)),
                ));
            }
            for e in [a, b] {
                if let Some(l) = used.insert(e, at.line) {
                    return Err(TopoError::parse(
                        at,
                        format!("{} is already connected (line {l})", show(e)),
                    ));
                }
            }
            links.push(Link { a, b });
        }
    }
    p.punct("}")?;
    if p.peek().is_some() {
        return p.err("expected the end of the file after the network (one network per file)");
    }
    Ok(links)
}

/// Step 4: the switches' tables from `.fdbs` and `.fdbs.ini`, by node
/// (empty for HCAs, or for every node without tables).
fn switch_tables(files: &NedFiles, mods: &Submodules) -> Result<Vec<Vec<u16>>, TopoError> {
    let (decls, lids, path) = (&mods.decls, &mods.lids, &files.ned);
    let sw: Vec<usize> = (0..decls.len())
        .filter(|&i| decls[i].lid.is_none())
        .collect();
    let mut fdb: Vec<Vec<u16>> = vec![Vec::new(); decls.len()];
    if let Some((f, ini)) = table_pair(&files.fdbs, &files.fdbs_ini, path)? {
        let names: Vec<String> = sw.iter().map(|&i| decls[i].name.clone()).collect();
        let ports: Vec<u16> = sw.iter().map(|&i| decls[i].ports).collect();
        let max_lid = lids.keys().max().copied().unwrap_or(0) as usize;
        let t = read_tables(f, ini, &names, &ports, max_lid, path, true)?;
        for (k, (_, table)) in t.into_iter().enumerate() {
            fdb[sw[k]] = table;
        }
    }
    Ok(fdb)
}

/// Step 5: the topology's nodes in declaration order.
fn build(decls: &[Decl], fdb: Vec<Vec<u16>>) -> Vec<Node> {
    decls
        .iter()
        .zip(fdb)
        .map(|(d, fdb)| Node {
            name: d.name.clone(),
            kind: match d.lid {
                Some(lid) => NodeKind::Hca { lid },
                None => NodeKind::Switch {
                    ports: d.ports,
                    fdb,
                },
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: &str = "package ib_model.examples.x;\n\
                       import ib_model.*;\n\
                       network two\n\
                       {\n\
                       \x20   submodules:\n\
                       \x20       H_1: HCA { parameters: srcLid = 5; @display(\"p=1\"); }\n\
                       \x20       H_2: HCA { parameters: srcLid = 2; }\n\
                       \x20       SW: Switch { parameters: numSwitchPorts = 2; gates: port[2]; }\n\
                       \x20   connections:\n\
                       \x20       H_1.port <--> IB4XQDRWire <--> SW.port[0];\n\
                       \x20       H_2.port <--> SW.port[1];\n\
                       }\n";

    fn parser<'a>(toks: Vec<(Tok, usize, usize)>, file: &'a Path) -> Parser<'a> {
        Parser {
            toks,
            pos: 0,
            file,
            last_line: 99,
        }
    }

    /// The steps up to the submodules of `text`.
    fn steps(text: &str) -> Result<(String, Submodules, Vec<Link>), TopoError> {
        let path = Path::new("t.ned");
        let mut p = parser(lex(text, path)?, path);
        let name = network_header(&mut p)?;
        let mods = submodules(&mut p)?;
        let links = connections(&mut p, &mods)?;
        Ok((name, mods, links))
    }

    #[test]
    fn header_submodules_and_connections() {
        let (name, mods, links) = steps(NET).unwrap();
        assert_eq!(name, "two");
        let decls: Vec<(&str, usize, Option<u16>, u16)> = mods
            .decls
            .iter()
            .map(|d| (d.name.as_str(), d.line, d.lid, d.ports))
            .collect();
        assert_eq!(
            decls,
            [
                ("H_1", 6, Some(5), 1),
                ("H_2", 7, Some(2), 1),
                ("SW", 8, None, 2)
            ]
        );
        assert_eq!(mods.lids, HashMap::from([(5, 0), (2, 1)]));
        assert_eq!(mods.by_name["SW"], 2);
        let port = |node, port| PortRef { node, port };
        assert_eq!(
            links,
            [
                Link {
                    a: port(0, 0),
                    b: port(2, 0)
                },
                Link {
                    a: port(1, 0),
                    b: port(2, 1)
                }
            ]
        );
        let nodes = build(&mods.decls, vec![Vec::new(); 3]);
        assert_eq!(nodes[0].kind, NodeKind::Hca { lid: 5 });
        assert_eq!(
            nodes[2].kind,
            NodeKind::Switch {
                ports: 2,
                fdb: Vec::new()
            }
        );
    }

    #[test]
    fn declarations_are_checked() {
        let e = |from: &str, to: &str| {
            let text = NET.replace(from, to);
            match steps(&text) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{text}"),
            }
        };
        assert!(e("network two", "module two").contains("only network files are read"));
        assert!(e("srcLid = 2", "srcLid = 5").contains("LID 5 already used by H_1 (line 6)"));
        assert!(e("srcLid = 2;", "").contains("HCA H_2 has no srcLid"));
        assert!(e("port[2]", "port[3]").contains("numSwitchPorts = 2 but port[3]"));
        assert!(e("H_2: HCA", "H_1: HCA").contains("declared twice"));
        assert!(e("Switch {", "Router {").contains("only HCA and Switch"));
        assert!(e("SW.port[1]", "SW.port[0]").contains("already connected (line 10)"));
        assert!(e("H_2.port <-->", "H_2.port <--> OtherWire <-->")
            .contains("all links must be of one type"));
    }

    #[test]
    fn tables_come_in_pairs() {
        let (_, mods, _) = steps(NET).unwrap();
        let files = NedFiles {
            ned: "t.ned".into(),
            fdbs: Some("t.fdbs".into()),
            fdbs_ini: None,
        };
        let e = switch_tables(&files, &mods).unwrap_err();
        assert!(e.to_string().contains("must be given together"), "{e}");
        let none = NedFiles {
            fdbs: None,
            ..files
        };
        assert_eq!(
            switch_tables(&none, &mods).unwrap(),
            vec![Vec::<u16>::new(); 3]
        );
    }
}
