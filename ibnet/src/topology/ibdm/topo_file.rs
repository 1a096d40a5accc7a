//! Reading an IBDM `.topo` file (docs/model/fabric.md 9): its device
//! blocks, a header line `<device-type> <name>` followed by indented port
//! lines `P<n> -> <device-type> <name> P<m>`, give the switches (the ASICs
//! of a director chassis included) and the cables. Every cable may be
//! listed from both ends; the HCAs are those of the `.hcas` file.

use std::collections::HashMap;
use std::path::Path;

use super::super::cables::Cables;
use super::super::error::{Loc, TopoError};
use super::super::fields::fields;
use super::{chassis_of, ned_name, ChassisDef, End, Hcas, RawNode};

/// Upper bound on switches (ASICs) in one imported network: keeps a
/// malformed file from allocating without limit.
const MAX_SWITCHES: usize = 65_535;

/// A port as written in a `.topo` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PortTok {
    /// `P<n>` (n >= 1)
    Plain(u16),
    /// `L<line>/P<port>` (both >= 1)
    Chassis(u16, u16),
}

fn parse_port_tok(s: &str) -> Option<PortTok> {
    let num = |t: &str| -> Option<u16> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse::<u16>().ok().filter(|&n| (1..=255).contains(&n))
    };
    if let Some((l, p)) = s.split_once('/') {
        Some(PortTok::Chassis(
            num(l.strip_prefix('L')?)?,
            num(p.strip_prefix('P')?)?,
        ))
    } else {
        Some(PortTok::Plain(num(s.strip_prefix('P')?)?))
    }
}

/// The switches of a `.topo` file and its cables.
pub(super) type Cabling = (Vec<RawNode>, Vec<(End, End)>);

/// The `.topo` text of `path` (`hcas_path` names the `.hcas` file in
/// messages): the switches in order of first appearance, and the cables
/// in order of first listing.
pub(super) fn parse_topo(
    text: &str,
    path: &Path,
    hcas_path: &Path,
    hcas: &Hcas,
) -> Result<Cabling, TopoError> {
    let mut r = Reader {
        path,
        hcas_path,
        hcas,
        switches: Vec::new(),
        sw_index: HashMap::new(),
        chassis: HashMap::new(),
        cables: Cables::new(),
    };
    // the device block we are in: (device type, name)
    let mut current: Option<(String, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim_end();
        if line.trim().is_empty() {
            current = None;
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        if !raw.starts_with([' ', '\t']) {
            current = Some(r.block_header(line, lineno)?);
            continue;
        }
        let Some((device, name)) = &current else {
            return Err(TopoError::parse(
                Loc::line(path, lineno),
                "port line outside a device block (missing header line?)",
            ));
        };
        r.port_line(device, name, line, lineno)?;
    }
    check_unique_names(&r.switches, path)?;
    Ok((r.switches, r.cables.links))
}

/// A device as one line of the file names it.
#[derive(Clone, Copy)]
struct Named<'t> {
    device: &'t str,
    name: &'t str,
    line: usize,
}

/// The switches and cables read so far.
struct Reader<'a> {
    path: &'a Path,
    hcas_path: &'a Path,
    hcas: &'a Hcas,
    switches: Vec<RawNode>,
    sw_index: HashMap<String, usize>,
    /// chassis name -> (index of its first ASIC in `switches`, layout, device)
    chassis: HashMap<String, (usize, ChassisDef, String)>,
    cables: Cables<End>,
}

impl Reader<'_> {
    /// An error at `line` of the file.
    fn err(&self, line: usize, msg: impl Into<String>) -> TopoError {
        TopoError::parse(Loc::line(self.path, line), msg)
    }

    /// A block header `<device-type> <name>`: registers the device.
    fn block_header(&mut self, line: &str, lineno: usize) -> Result<(String, String), TopoError> {
        let [device, name] = fields(line, "a block header `<device-type> <name>`")
            .map_err(|m| self.err(lineno, m))?;
        let at = Named {
            device,
            name,
            line: lineno,
        };
        self.endpoint(at, None)?;
        Ok((device.to_string(), name.to_string()))
    }

    /// A port line `P<n> -> <device-type> <name> P<m>` of the block of
    /// `device` `name`: one cable.
    fn port_line(
        &mut self,
        device: &str,
        name: &str,
        line: &str,
        lineno: usize,
    ) -> Result<(), TopoError> {
        let [port, arrow, pdev, pname, pport] =
            fields(line.trim(), "`P<n> -> <type> <name> P<m>`").map_err(|m| self.err(lineno, m))?;
        if !(arrow.starts_with('-') && arrow.ends_with("->")) {
            return Err(self.err(lineno, format!("expected `->`, found {arrow:?}")));
        }
        let tok = |s: &str| -> Result<PortTok, TopoError> {
            parse_port_tok(s).ok_or_else(|| {
                self.err(
                    lineno,
                    format!(
                        "expected a port `P<n>` or a director-chassis port `L<x>/P<m>` (numbers 1..=255), found {s:?}"
                    ),
                )
            })
        };
        let (ta, tb) = (tok(port)?, tok(pport)?);
        let here = Named {
            device,
            name,
            line: lineno,
        };
        let peer = Named {
            device: pdev,
            name: pname,
            line: lineno,
        };
        let a = self.endpoint(here, Some(ta))?;
        let b = self.endpoint(peer, Some(tb))?;
        let (a, b) = (
            a.expect("a port gives an end"),
            b.expect("a port gives an end"),
        );
        let (hca_lids, switches) = (&self.hcas.lids, &self.switches);
        let show = |e: End| {
            let n = if e.0 {
                &hca_lids[e.1].0
            } else {
                &switches[e.1].name
            };
            format!("{n} P{}", e.2 + 1)
        };
        self.cables
            .add(a, b, lineno, show)
            .map_err(|m| self.err(lineno, m))
    }

    /// One end of a cable: the device and the port as written. `tok`
    /// None: a block header (registers the device only).
    fn endpoint(&mut self, at: Named, tok: Option<PortTok>) -> Result<Option<End>, TopoError> {
        let Named { device, name, line } = at;
        if let Some(&h) = self.hcas.index.get(name) {
            return match tok {
                None => Ok(None),
                Some(PortTok::Plain(1)) => Ok(Some((true, h, 0))),
                _ => Err(self.err(line, format!("HCA {name} has only port P1"))),
            };
        }
        if device == "Cougar" {
            return Err(self.err(
                line,
                format!("HCA {name} has no LID in {}", self.hcas_path.display()),
            ));
        }
        match chassis_of(device) {
            Some(def) => self.chassis_end(def, at, tok),
            None => self.switch_end(at, tok),
        }
    }

    /// A port of the director chassis `at` (layout `def`): the ASIC port
    /// behind its front port `L<line>/P<port>`.
    fn chassis_end(
        &mut self,
        def: ChassisDef,
        at: Named,
        tok: Option<PortTok>,
    ) -> Result<Option<End>, TopoError> {
        let Named { device, name, line } = at;
        let first = match self.chassis.get(name) {
            Some((first, _, dev)) if dev == device => *first,
            Some((_, _, dev)) => {
                return Err(self.err(
                    line,
                    format!("{name} appears as device {device} but was {dev} before"),
                ))
            }
            None => self.add_chassis(def, at)?,
        };
        match tok {
            None => Ok(None),
            Some(PortTok::Chassis(l, p)) if l <= def.lines && p <= def.front_ports => {
                Ok(Some((false, first + (l - 1) as usize, p - 1)))
            }
            Some(PortTok::Chassis(l, p)) => Err(self.err(
                line,
                format!(
                    "{name}: port L{l}/P{p} does not exist: a {device} has lines L1..L{} with ports P1..P{}",
                    def.lines, def.front_ports
                ),
            )),
            Some(PortTok::Plain(p)) => Err(self.err(
                line,
                format!(
                    "{name} is a director chassis ({device}): its ports are written L<line>/P<port>, found P{p}"
                ),
            )),
        }
    }

    /// A director chassis at its first appearance: its ASICs (line cards,
    /// then fabric boards) and their internal cables. Returns the index
    /// of its first ASIC.
    fn add_chassis(&mut self, def: ChassisDef, at: Named) -> Result<usize, TopoError> {
        let Named { device, name, line } = at;
        if let Some(&s) = self.sw_index.get(name) {
            return Err(self.err(
                line,
                format!(
                    "{name} appears as director chassis {device} but was a {} on line {}",
                    self.switches[s].device, self.switches[s].first_line
                ),
            ));
        }
        let n = (def.lines + def.spines) as usize;
        if self.switches.len() + n > MAX_SWITCHES {
            return Err(self.err(line, format!("more than {MAX_SWITCHES} switches")));
        }
        let first = self.switches.len();
        let asic = |label: String| RawNode {
            name: format!("{name}_{label}"),
            device: device.to_string(),
            max_port: def.asic_ports,
            max_port_line: line,
            first_line: line,
            radix: Some(def.asic_ports),
        };
        for l in 1..=def.lines {
            self.switches.push(asic(format!("leaf{l}")));
        }
        for k in 1..=def.spines {
            self.switches.push(asic(format!("spine{k}")));
        }
        // internal cables: line l port front+k-1 <-> spine k port l-1,
        // in the reference's order (by line, then by spine)
        for l in 0..def.lines {
            for k in 0..def.spines {
                let a = (false, first + l as usize, def.front_ports + k);
                let b = (false, first + (def.lines + k) as usize, l);
                self.cables.insert(a, b, line);
            }
        }
        self.chassis
            .insert(name.to_string(), (first, def, device.to_string()));
        Ok(first)
    }

    /// A port `P<n>` of the switch `at` (registered at its first
    /// appearance); the highest port used sets its port count unless its
    /// device has a known radix.
    fn switch_end(&mut self, at: Named, tok: Option<PortTok>) -> Result<Option<End>, TopoError> {
        let Named { device, name, line } = at;
        if self.chassis.contains_key(name) {
            return Err(self.err(
                line,
                format!("{name} appears as device {device} but is a director chassis"),
            ));
        }
        let port = match tok {
            None => None,
            Some(PortTok::Plain(p)) => Some(p - 1),
            Some(PortTok::Chassis(l, p)) => {
                return Err(self.err(
                    line,
                    format!(
                        "port L{l}/P{p} of {name}: director-chassis ports (L<x>/P<m>) need a known chassis type (MIS5600), found device {device:?}"
                    ),
                ))
            }
        };
        let idx = match self.sw_index.get(name) {
            Some(&i) => i,
            None => {
                if self.switches.len() >= MAX_SWITCHES {
                    return Err(self.err(line, format!("more than {MAX_SWITCHES} switches")));
                }
                self.switches.push(RawNode {
                    name: name.to_string(),
                    device: device.to_string(),
                    max_port: 0,
                    max_port_line: line,
                    first_line: line,
                    radix: None,
                });
                self.sw_index
                    .insert(name.to_string(), self.switches.len() - 1);
                self.switches.len() - 1
            }
        };
        let s = &self.switches[idx];
        if s.device != device {
            return Err(self.err(
                line,
                format!(
                    "{name} appears as device {device} but was {} on line {}",
                    s.device, s.first_line
                ),
            ));
        }
        let Some(port) = port else {
            return Ok(None);
        };
        let s = &mut self.switches[idx];
        if port + 1 > s.max_port {
            s.max_port = port + 1;
            s.max_port_line = line;
        }
        Ok(Some((false, idx, port)))
    }
}

/// Two switches must not get the same network-description name (e.g. a
/// switch `X_leaf1` beside a chassis `X`).
fn check_unique_names(switches: &[RawNode], path: &Path) -> Result<(), TopoError> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for s in switches {
        if let Some(l) = seen.insert(ned_name(&s.name), s.first_line) {
            return Err(TopoError::parse(
                Loc::line(path, s.first_line),
                format!(
                    "switch name {} is used twice (also on line {l})",
                    ned_name(&s.name)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hcas() -> Hcas {
        let lids = vec![("H-1".to_string(), 1), ("H-2".to_string(), 2)];
        let index = lids
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        Hcas { lids, index }
    }

    fn parse(text: &str) -> Result<Cabling, TopoError> {
        parse_topo(text, Path::new("t.topo"), Path::new("t.hcas"), &hcas())
    }

    fn err(text: &str) -> String {
        match parse(text) {
            Ok(_) => panic!("{text:?} parsed"),
            Err(e) => e.to_string(),
        }
    }

    const TWO_SWITCHES: &str = "\
# two switches, each with one HCA
MTS3600 SW-1
   P1 -> Cougar H-1 P1
   P3 -> MTS3600 SW-2 P2

MTS3600 SW-2
   P2 -> MTS3600 SW-1 P3
   P5 -> Cougar H-2 P1
";

    #[test]
    fn blocks_give_switches_and_cables_listed_once() {
        let (sw, links) = parse(TWO_SWITCHES).unwrap();
        let names: Vec<(&str, u16, usize, usize)> = sw
            .iter()
            .map(|s| (s.name.as_str(), s.max_port, s.max_port_line, s.first_line))
            .collect();
        assert_eq!(names, [("SW-1", 3, 4, 2), ("SW-2", 5, 8, 4)]);
        assert!(sw
            .iter()
            .all(|s| s.device == "MTS3600" && s.radix.is_none()));
        assert_eq!(
            links,
            [
                ((false, 0, 0), (true, 0, 0)),
                ((false, 0, 2), (false, 1, 1)),
                ((false, 1, 4), (true, 1, 0)),
            ]
        );
    }

    #[test]
    fn a_chassis_expands_to_its_asics_and_internal_cables() {
        let text = "MIS5600 D\n   L2/P3 -> Cougar H-1 P1\n";
        let (sw, links) = parse(text).unwrap();
        // 36 line cards, then 18 fabric boards
        assert_eq!(sw.len(), 54);
        assert_eq!(
            (sw[1].name.as_str(), sw[36].name.as_str()),
            ("D_leaf2", "D_spine1")
        );
        assert_eq!((sw[1].max_port, sw[1].radix), (36, Some(36)));
        // line l port 18+k-1 <-> spine k port l-1, by line then by spine
        assert_eq!(links[0], ((false, 0, 18), (false, 36, 0)));
        assert_eq!(links[19], ((false, 1, 19), (false, 37, 1)));
        assert_eq!(links[36 * 18], ((false, 1, 2), (true, 0, 0)));
    }

    #[test]
    fn errors_name_file_and_line() {
        for (text, msg) in [
            (
                "   P1 -> Cougar H-1 P1\n",
                "t.topo:1: port line outside a device block (missing header line?)",
            ),
            (
                "SW-1\n",
                "t.topo:1: expected a block header `<device-type> <name>`, found \"SW-1\"",
            ),
            (
                "X SW-1\n   P1 => Cougar H-1 P1\n",
                "t.topo:2: expected `->`, found \"=>\"",
            ),
            (
                "X SW-1\n   P0 -> Cougar H-1 P1\n",
                "t.topo:2: expected a port `P<n>` or a director-chassis port `L<x>/P<m>` (numbers 1..=255), found \"P0\"",
            ),
            (
                "X SW-1\n   P1 -> Cougar H-9 P1\n",
                "t.topo:2: HCA H-9 has no LID in t.hcas",
            ),
            (
                "X SW-1\n   P1 -> Cougar H-1 P2\n",
                "t.topo:2: HCA H-1 has only port P1",
            ),
            (
                "X SW-1\n   P1 -> Cougar H-1 P1\n   P1 -> Cougar H-2 P1\n",
                "t.topo:3: SW-1 P1 is already cabled to H-1 P1 (line 2)",
            ),
            (
                "X SW-1\n\nY SW-1\n",
                "t.topo:3: SW-1 appears as device Y but was X on line 1",
            ),
            (
                "MIS5600 D\n   L37/P1 -> Cougar H-1 P1\n",
                "t.topo:2: D: port L37/P1 does not exist: a MIS5600 has lines L1..L36 with ports P1..P18",
            ),
            (
                "X D_leaf1\n   P1 -> Cougar H-1 P1\nMIS5600 D\n",
                "t.topo:3: switch name D_leaf1_U1 is used twice (also on line 1)",
            ),
        ] {
            assert_eq!(err(text), msg, "{text:?}");
        }
    }
}
