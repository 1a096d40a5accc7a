//! ibnet's own TOML topology format (docs/topology.md), its writer, and the
//! `load` entry point that also accepts IBDM `.topo` files and TOML files
//! with an `[ibdm]` table.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

mod native;

use super::error::{read_text, Loc, TopoError};
use super::ibdm::{self, IbdmFiles};
use super::{NodeKind, PortRef, Routing, Topology, ValidateOptions};
use native::{build_native, RawNode};

/// The TOML file being read: its path (for messages, and the base of the
/// relative paths inside it) and its text.
struct TomlFile<'a> {
    path: &'a Path,
    text: &'a str,
}

impl TomlFile<'_> {
    /// The place of a span of the text.
    fn at(&self, span: std::ops::Range<usize>) -> Loc {
        Loc::at_offset(self.path, self.text, span.start)
    }
    /// A path named inside the file: relative to the file's directory.
    fn rel(&self, p: &str) -> PathBuf {
        self.path.parent().unwrap_or(Path::new(".")).join(p)
    }
    /// The tables `fdbs` and `fdbs_ini` an import `table` names: both
    /// (then as paths) or neither.
    fn tables(
        &self,
        fdbs: &Option<String>,
        ini: &Option<String>,
        table: &str,
    ) -> Result<Option<(PathBuf, PathBuf)>, TopoError> {
        match (fdbs, ini) {
            (Some(f), Some(i)) => Ok(Some((self.rel(f), self.rel(i)))),
            (None, None) => Ok(None),
            _ => Err(TopoError::parse(
                Loc::file(self.path),
                format!("{table}: fdbs and fdbs_ini must be given together"),
            )),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopo {
    name: Option<String>,
    routing: Option<Spanned<String>>,
    allow_unroutable: Option<bool>,
    nodes: Option<Vec<Spanned<RawNode>>>,
    links: Option<Vec<Spanned<String>>>,
    ranks: Option<Vec<Spanned<String>>>,
    rank_file: Option<Spanned<String>>,
    fdb: Option<BTreeMap<Spanned<String>, Spanned<Vec<u16>>>>,
    ibdm: Option<RawIbdm>,
    ned: Option<RawNed>,
    ibnetdiscover: Option<RawIbnd>,
}

/// `[ned]`: the reference's network description; tables by convention
/// unless both are named.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNed {
    file: String,
    fdbs: Option<String>,
    fdbs_ini: Option<String>,
}

/// `[ibnetdiscover]`: a real cluster's topology, optionally its tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIbnd {
    file: String,
    lfts: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIbdm {
    topo: String,
    hcas: Option<String>,
    fdbs: Option<String>,
    fdbs_ini: Option<String>,
}

/// Load a topology file: `*.topo` is imported as IBDM (sibling files by
/// naming convention, see [`IbdmFiles::by_convention`]); `*.ned` as the
/// reference's network description (see [`super::NedFiles`]); a file
/// whose text looks like `ibnetdiscover` output (and is not `*.toml`) as
/// such, with min-hop routes (tables: [`open_with`]); anything else is
/// read as ibnet TOML (which may itself point at IBDM files with an
/// `[ibdm]` table). The result is routed and validated.
pub fn load(path: &Path) -> Result<Topology, TopoError> {
    if path.extension().is_some_and(|e| e == "topo") {
        let files = IbdmFiles::by_convention(path)?;
        return ibdm::load_files(&files, None, &ValidateOptions::default());
    }
    if path.extension().is_some_and(|e| e == "ned") {
        return super::load_ned(path);
    }
    let text = read_text(path)?;
    if path.extension().is_none_or(|e| e != "toml")
        && super::ibnetdiscover::looks_like_ibnetdiscover(&text)
    {
        return super::ibnetdiscover::load_files(path, None, None, &ValidateOptions::default());
    }
    load_toml_str(&text, path)
}

/// [`open`] with the forwarding tables of an `ibnetdiscover` topology
/// from `lfts` (`dump_lfts.sh` / `ibroute` output). `lfts` with any other
/// kind of topology is an error.
pub fn open_with(spec: &str, lfts: Option<&Path>) -> Result<Topology, TopoError> {
    let Some(lfts) = lfts else {
        return open(spec);
    };
    let path = Path::new(spec);
    let is_ibnd = path.is_file()
        && !path
            .extension()
            .is_some_and(|e| e == "toml" || e == "topo" || e == "ned")
        && super::ibnetdiscover::looks_like_ibnetdiscover(&read_text(path)?);
    if !is_ibnd {
        return Err(TopoError::Invalid(format!(
            "--lfts {}: forwarding tables from dump_lfts go with an ibnetdiscover topology file, and {spec} is not one",
            lfts.display()
        )));
    }
    super::ibnetdiscover::load_files(path, Some(lfts), None, &ValidateOptions::default())
}

/// Command-line convenience: `spec` is a path to a topology file (see
/// [`load`]) if such a file exists, else a built-in name (see
/// [`super::builtin()`]).
pub fn open(spec: &str) -> Result<Topology, TopoError> {
    let path = Path::new(spec);
    if path.exists() {
        return load(path);
    }
    match super::builtin(spec) {
        Err(TopoError::UnknownBuiltin(_)) => Err(TopoError::Invalid(format!(
            "{spec:?} is neither an existing file nor a built-in topology \
             (H8_S1, H8_S2, H8_S4, H8_S6, M9, fattree:P, fattree:P:L, chain:N, kary:K:N, \
             fattree2:HPL:LEAVES:SPINES, fattree3:HPL:LPP:APP:PODS, fattree:hosts=N, torus:4x4, \
             mesh:8x8, dragonfly:A:P:H:G; see docs/topology.md)"
        ))),
        r => r,
    }
}

/// The message of an [`open`] / [`open_with`] error for `spec`, naming the
/// file once: an error about the file already starts with its path
/// (`file:line: ...`) and is kept as it is; any other (a built-in name, an
/// option) gets `topology SPEC: ` in front.
pub fn open_error(spec: &str, e: &TopoError) -> String {
    let m = e.to_string();
    match m.strip_prefix(spec) {
        Some(rest) if rest.starts_with(':') => m,
        _ => format!("topology {spec}: {m}"),
    }
}

/// Parse ibnet TOML text; `path` names the file in messages and is the base
/// for relative paths inside it.
pub fn load_toml_str(text: &str, path: &Path) -> Result<Topology, TopoError> {
    let file = TomlFile { path, text };
    let raw: RawTopo = toml::from_str(text).map_err(|e| {
        let loc = match e.span() {
            Some(s) => file.at(s),
            None => Loc::file(path),
        };
        TopoError::parse(loc, e.message().trim().replace('\n', ": "))
    })?;
    let opts = ValidateOptions {
        allow_unroutable: raw.allow_unroutable.unwrap_or(false),
    };
    let routing = match &raw.routing {
        None => None,
        Some(r) => Some(Routing::parse(r.get_ref()).ok_or_else(|| {
            TopoError::parse(
                file.at(r.span()),
                format!(
                    "routing must be \"minhop\", \"updown\", \"ftree\" or \"tables\", found {:?}",
                    r.get_ref()
                ),
            )
        })?),
    };

    check_imports(&raw, path)?;
    let mut t = match load_import(&raw, &file, routing, &opts)? {
        Some(mut t) => {
            if let Some(n) = &raw.name {
                t.name = n.clone();
            }
            t
        }
        None => build_native(&raw, &file, routing)?,
    };
    place_ranks(&mut t, &raw, &file)?;
    t.validate_with(&opts).map_err(|e| e.in_file(path))?;
    Ok(t)
}

/// At most one import table, and none beside a native description.
fn check_imports(raw: &RawTopo, path: &Path) -> Result<(), TopoError> {
    let imports = [
        raw.ibdm.is_some(),
        raw.ned.is_some(),
        raw.ibnetdiscover.is_some(),
    ];
    if imports.iter().filter(|&&x| x).count() > 1 {
        return Err(TopoError::parse(
            Loc::file(path),
            "give at most one of the tables [ibdm], [ned], [ibnetdiscover]",
        ));
    }
    if imports.contains(&true) && (raw.nodes.is_some() || raw.links.is_some() || raw.fdb.is_some())
    {
        let which =
            ["[ibdm]", "[ned]", "[ibnetdiscover]"][imports.iter().position(|&x| x).unwrap()];
        return Err(TopoError::parse(
            Loc::file(path),
            format!("a file with an {which} table must not also have nodes, links or fdb"),
        ));
    }
    Ok(())
}

/// The topology an import table (`[ned]`, `[ibnetdiscover]`, `[ibdm]`)
/// names, its files relative to the TOML file; none without such a table.
fn load_import(
    raw: &RawTopo,
    file: &TomlFile,
    routing: Option<Routing>,
    opts: &ValidateOptions,
) -> Result<Option<Topology>, TopoError> {
    let (path, rel) = (file.path, |p: &str| file.rel(p));
    let t = if let Some(n) = &raw.ned {
        let mut files = super::ned::NedFiles::by_convention(&rel(&n.file))
            .map_err(|e| import_context(e, path, "[ned]"))?;
        if let Some((f, i)) = file.tables(&n.fdbs, &n.fdbs_ini, "[ned]")? {
            (files.fdbs, files.fdbs_ini) = (Some(f), Some(i));
        }
        super::ned::load_files(&files, routing, opts).map_err(|e| import_context(e, path, "[ned]"))
    } else if let Some(n) = &raw.ibnetdiscover {
        let lfts = n.lfts.as_ref().map(|l| rel(l));
        super::ibnetdiscover::load_files(&rel(&n.file), lfts.as_deref(), routing, opts)
            .map_err(|e| import_context(e, path, "[ibnetdiscover]"))
    } else if let Some(ib) = &raw.ibdm {
        let topo = rel(&ib.topo);
        let mut files = match &ib.hcas {
            Some(h) => IbdmFiles {
                topo: topo.clone(),
                hcas: rel(h),
                fdbs: None,
                fdbs_ini: None,
            },
            None => IbdmFiles::by_convention(&topo).map_err(|e| ibdm_context(e, path))?,
        };
        // (with `hcas` named, no tables unless named too)
        if let Some((f, i)) = file.tables(&ib.fdbs, &ib.fdbs_ini, "[ibdm]")? {
            (files.fdbs, files.fdbs_ini) = (Some(f), Some(i));
        }
        ibdm::load_files(&files, routing, opts).map_err(|e| ibdm_context(e, path))
    } else {
        return Ok(None);
    };
    t.map(Some)
}

/// `ranks` (HCA names, rank order) or `rank_file`: the rank map.
fn place_ranks(t: &mut Topology, raw: &RawTopo, file: &TomlFile) -> Result<(), TopoError> {
    let at = |span: std::ops::Range<usize>| file.at(span);
    match (&raw.ranks, &raw.rank_file) {
        (Some(_), Some(f)) => {
            return Err(TopoError::parse(
                at(f.span()),
                "give either ranks or rank_file, not both",
            ))
        }
        (Some(list), None) => {
            let mut placed: HashMap<usize, usize> = HashMap::new();
            for (r, name) in list.iter().enumerate() {
                let node = match t.node_by_name(name.get_ref()) {
                    Some(n) if t.nodes[n].is_hca() => n,
                    Some(_) => {
                        return Err(TopoError::parse(
                            at(name.span()),
                            format!("rank {r}: {} is a switch", name.get_ref()),
                        ))
                    }
                    None => {
                        return Err(TopoError::parse(
                            at(name.span()),
                            format!("rank {r}: no HCA named {:?}", name.get_ref()),
                        ))
                    }
                };
                if let Some(q) = placed.insert(node, r) {
                    return Err(TopoError::parse(
                        at(name.span()),
                        format!(
                            "ranks {q} and {r} are both mapped to HCA {}",
                            name.get_ref()
                        ),
                    ));
                }
                t.ranks.push(node);
            }
        }
        (None, Some(f)) => t.ranks = super::load_rank_file(&file.rel(f.get_ref()), t)?,
        (None, None) => {}
    }
    Ok(())
}

/// An IBDM file named by the `[ibdm]` table of `toml` cannot be read: say
/// which TOML file named it (parse errors already name the IBDM file).
fn ibdm_context(e: TopoError, toml: &Path) -> TopoError {
    import_context(e, toml, "[ibdm]")
}

/// A file an import table (`[ibdm]`, `[ned]`, `[ibnetdiscover]`) names
/// cannot be read (missing, a directory or device, too large): say which
/// TOML file and table named it. Errors at a line of the imported file
/// name that file and line and stay as they are.
fn import_context(e: TopoError, toml: &Path, table: &str) -> TopoError {
    match e {
        TopoError::Io { .. } => TopoError::parse(Loc::file(toml), format!("{table}: {e}")),
        TopoError::Parse { ref loc, .. } if loc.line == 0 => {
            TopoError::parse(Loc::file(toml), format!("{table}: {e}"))
        }
        e => e,
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Write `t` in ibnet's TOML format with explicit forwarding tables
/// (`routing = "tables"`), so that loading the text gives back `t`.
pub fn to_toml(t: &Topology) -> String {
    write_toml(t, None)
}

/// Write `t` without tables, with `routing = "<routing>"`: the file then
/// describes the cabling and the routing algorithm (used for
/// configs/topologies/). Loading it recomputes the tables.
pub fn to_toml_routed(t: &Topology, routing: Routing) -> String {
    write_toml(t, Some(routing))
}

fn write_toml(t: &Topology, routing: Option<Routing>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# ibnet topology (format: docs/topology.md)");
    let _ = writeln!(s, "name = {}", quote(&t.name));
    let _ = writeln!(
        s,
        "routing = \"{}\"",
        routing.unwrap_or(Routing::Tables).as_str()
    );
    let _ = writeln!(s, "\n# node order = engine initialisation order");
    let _ = writeln!(s, "nodes = [");
    for n in &t.nodes {
        match &n.kind {
            NodeKind::Hca { lid } => {
                let _ = writeln!(s, "  {{ hca = {}, lid = {lid} }},", quote(&n.name));
            }
            NodeKind::Switch { ports, .. } => {
                let _ = writeln!(s, "  {{ switch = {}, ports = {ports} }},", quote(&n.name));
            }
        }
    }
    let _ = writeln!(s, "]\n\n# \"node:port <-> node:port\", ports 0-based");
    let _ = writeln!(s, "links = [");
    for l in &t.links {
        let e = |p: PortRef| format!("{}:{}", t.nodes[p.node].name, p.port);
        let _ = writeln!(s, "  {},", quote(&format!("{} <-> {}", e(l.a), e(l.b))));
    }
    let _ = writeln!(s, "]");
    if !t.ranks.is_empty() {
        let names: Vec<String> = t.ranks.iter().map(|&h| quote(&t.nodes[h].name)).collect();
        let _ = writeln!(
            s,
            "\n# rank r runs on ranks[r]\nranks = [{}]",
            names.join(", ")
        );
    }
    if routing.is_none() {
        let _ = writeln!(
            s,
            "\n# forwarding tables: entry L = output port for LID L (255 = none)"
        );
        let _ = writeln!(s, "[fdb]");
        for n in &t.nodes {
            if let NodeKind::Switch { fdb, .. } = &n.kind {
                let v: Vec<String> = fdb.iter().map(u16::to_string).collect();
                let _ = writeln!(s, "{} = [{}]", quote(&n.name), v.join(", "));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawTopo {
        toml::from_str(text).unwrap()
    }

    fn path() -> &'static Path {
        Path::new("dir/t.toml")
    }

    #[test]
    fn one_import_table_and_nothing_beside_it() {
        check_imports(&raw("[ned]\nfile = \"a.ned\"\n"), path()).unwrap();
        let e = check_imports(
            &raw("[ned]\nfile = \"a.ned\"\n[ibnetdiscover]\nfile = \"b\"\n"),
            path(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("at most one of the tables"), "{e}");
        let e = check_imports(&raw("links = []\n[ned]\nfile = \"a.ned\"\n"), path()).unwrap_err();
        assert!(
            e.to_string()
                .contains("a file with an [ned] table must not also have nodes, links or fdb"),
            "{e}"
        );
    }

    /// `text` as the file `dir/t.toml`.
    fn file(text: &str) -> TomlFile<'_> {
        TomlFile { path: path(), text }
    }

    #[test]
    fn import_tables_come_in_pairs_beside_the_file() {
        let (f, i) = (Some("t.fdbs".to_string()), Some("t.fdbs.ini".to_string()));
        assert_eq!(
            file("").tables(&f, &i, "[ned]").unwrap(),
            Some((PathBuf::from("dir/t.fdbs"), PathBuf::from("dir/t.fdbs.ini")))
        );
        assert_eq!(file("").tables(&None, &None, "[ned]").unwrap(), None);
        assert_eq!(
            file("")
                .tables(&f, &None, "[ibdm]")
                .unwrap_err()
                .to_string(),
            "dir/t.toml: [ibdm]: fdbs and fdbs_ini must be given together"
        );
    }

    #[test]
    fn imports_name_the_table_that_named_a_missing_file() {
        let opts = ValidateOptions::default();
        assert!(load_import(&raw("name = \"x\"\n"), &file(""), None, &opts)
            .unwrap()
            .is_none());
        let e =
            load_import(&raw("[ned]\nfile = \"no.ned\"\n"), &file(""), None, &opts).unwrap_err();
        assert!(e.to_string().contains("[ned]"), "{e}");
        let e = load_import(
            &raw("[ned]\nfile = \"no.ned\"\nfdbs = \"x.fdbs\"\n"),
            &file(""),
            None,
            &opts,
        )
        .unwrap_err();
        assert!(e.to_string().contains("[ned]"), "{e}");
    }

    #[test]
    fn ranks_name_distinct_hcas() {
        let mut t = crate::topology::builtin("H8_S1").unwrap();
        t.ranks.clear();
        let text = "ranks = [\"H_3\", \"H_1\"]\n";
        place_ranks(&mut t, &raw(text), &file(text)).unwrap();
        assert_eq!(t.ranks.len(), 2);
        assert_eq!(t.nodes[t.ranks[0]].name, "H_3");
        for (text, msg) in [
            (
                "ranks = [\"H_1\", \"H_1\"]\n",
                "ranks 0 and 1 are both mapped to HCA H_1",
            ),
            ("ranks = [\"nope\"]\n", "rank 0: no HCA named \"nope\""),
        ] {
            let mut t = crate::topology::builtin("H8_S1").unwrap();
            t.ranks.clear();
            let e = place_ranks(&mut t, &raw(text), &file(text)).unwrap_err();
            assert!(e.to_string().contains(msg), "{e}");
        }
    }
}
