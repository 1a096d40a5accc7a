//! `ibnet export --simgrid`: a topology and its routes as a SimGrid
//! platform file (SimGrid 3.32, platform DTD version 4.1), so that SimGrid
//! or SMPI runs the same network as loggopsim's `--network flow`.
//!
//! What the file holds (one `<zone routing="Full">`):
//! - one `<host>` per HCA, named as in ibnet, with a nominal speed
//!   (ibnet models no computation; set your own) and, when the HCA runs a
//!   rank, a property `ibnet_rank`;
//! - two `<link>`s per full-duplex cable, one per direction, so that each
//!   direction is its own resource as in the flow backend. A link is named
//!   after the output port it leaves and the port it enters,
//!   `NODE[PORT]->PEER[PEER_PORT]` (the hop as `ibnet routes` prints it).
//!   Bandwidth and latency come from [`FlowLevel`]: the link rate after
//!   8b/10b in bytes/s, and ISW + VSW on a direction leaving a switch, 0 on
//!   one leaving an HCA;
//! - one `<route symmetrical="NO">` per ordered pair of hosts, the links in
//!   the order ibnet's forwarding tables take them (the fabric's and the
//!   flow backend's path), including a host to itself (looping back at its
//!   first switch, as in the fabric) when the tables route it.
//!
//! The output is streamed (no O(N^2) memory), but a file has N^2 routes,
//! so hosts above `max_hosts` are refused: see [`DEFAULT_MAX_HOSTS`].

use std::io::Write;

use crate::flowlevel::FlowLevel;
use crate::topology::{PortRef, Topology};

/// Default bound on the number of hosts: 1024 hosts are 1 048 576 routes
/// (a fattree:16), a file of a few hundred MB. Raise it with `--max-hosts`.
pub const DEFAULT_MAX_HOSTS: usize = 1024;

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    pub hosts: usize,
    pub links: usize,
    pub routes: usize,
}

/// An export that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the topology has {hosts} hosts, above the limit of {max} ({routes} routes, one per ordered host pair); raise it with --max-hosts {hosts} if you want the file anyway")]
    TooLarge {
        hosts: usize,
        max: usize,
        routes: usize,
    },
    #[error("no route from {src} to {dst}: {detail}")]
    NoRoute {
        src: String,
        dst: String,
        detail: String,
    },
    #[error("writing the platform: {0}")]
    Io(#[from] std::io::Error),
}

/// Escape a string for an XML attribute value (double-quoted). `>` is
/// legal there and stays, so link names read `H_1[0]->SW_1[0]`.
fn attr(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Text safe inside an XML comment (no `--`).
fn comment(s: &str) -> String {
    let mut o = s.replace("--", "- -");
    if o.ends_with('-') {
        o.push(' ');
    }
    o
}

/// The name of the link direction leaving `from` towards `to`.
pub fn link_name(t: &Topology, from: PortRef, to: PortRef) -> String {
    format!(
        "{}[{}]->{}[{}]",
        t.nodes[from.node].name, from.port, t.nodes[to.node].name, to.port
    )
}

/// Write the platform of `topo` with the numbers of `fl` to `w`.
/// `rank_nodes[r]` is the HCA node of rank r (for the `ibnet_rank`
/// properties); `preset` only labels the header comment.
pub fn write_platform<W: Write>(
    w: &mut W,
    topo: &Topology,
    fl: &FlowLevel,
    rank_nodes: &[usize],
    preset: &str,
    max_hosts: usize,
) -> Result<ExportStats, ExportError> {
    let hcas = topo.hcas();
    if hcas.len() > max_hosts {
        return Err(ExportError::TooLarge {
            hosts: hcas.len(),
            max: max_hosts,
            routes: hcas.len() * hcas.len(),
        });
    }
    let router = topo.router();
    let mut rank_of = vec![None; topo.nodes.len()];
    for (r, &n) in rank_nodes.iter().enumerate() {
        if rank_of[n].is_none() {
            rank_of[n] = Some(r);
        }
    }
    // the name of the link direction leaving each output port
    let out_name: Vec<Vec<Option<String>>> = topo
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (0..n.num_ports())
                .map(|p| {
                    let from = PortRef { node: i, port: p };
                    router.peer(from).map(|to| attr(&link_name(topo, from, to)))
                })
                .collect()
        })
        .collect();

    writeln!(w, "<?xml version='1.0'?>")?;
    writeln!(
        w,
        "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">"
    )?;
    writeln!(w, "<platform version=\"4.1\">")?;
    writeln!(
        w,
        "<!-- {} -->",
        comment(&format!(
            "written by ibnet export (simgrid): topology {}, preset {}; every link direction {} bytes/s (link rate after 8b/10b), {} ps per switch (ISW + VSW) on a direction leaving a switch, 0 leaving a host. To run it as loggopsim's flow backend does: cfg network/model:CM02, network/TCP-gamma:0, network/crosstraffic:0, network/solver:fairbottleneck (docs/backends.md, SimGrid bridge)",
            topo.name, preset, fl.link_bytes_per_s, fl.switch_latency_ps
        ))
    )?;
    writeln!(w, "<zone id=\"{}\" routing=\"Full\">", attr(&topo.name))?;
    for &h in &hcas {
        let name = attr(&topo.nodes[h].name);
        match rank_of[h] {
            Some(r) => writeln!(
                w,
                "  <host id=\"{name}\" speed=\"1Gf\"><prop id=\"ibnet_rank\" value=\"{r}\"/></host>"
            )?,
            None => writeln!(w, "  <host id=\"{name}\" speed=\"1Gf\"/>")?,
        }
    }
    let mut links = 0;
    for (i, ports) in out_name.iter().enumerate() {
        let lat = fl.out_latency_ps(topo.nodes[i].is_switch());
        for name in ports.iter().flatten() {
            writeln!(
                w,
                "  <link id=\"{name}\" bandwidth=\"{}Bps\" latency=\"{lat}ps\"/>",
                fl.link_bytes_per_s
            )?;
            links += 1;
        }
    }
    let mut routes = 0;
    for &s in &hcas {
        for &d in &hcas {
            let path = match router.path(s, d) {
                Ok(p) => p,
                // a host cabled straight to another host has no switch
                // to loop back at: SimGrid uses its loopback instead
                Err(_) if s == d => continue,
                Err(e) => {
                    return Err(ExportError::NoRoute {
                        src: topo.nodes[s].name.clone(),
                        dst: topo.nodes[d].name.clone(),
                        detail: e.to_string(),
                    })
                }
            };
            write!(
                w,
                "  <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">",
                attr(&topo.nodes[s].name),
                attr(&topo.nodes[d].name)
            )?;
            for p in path {
                let name = out_name[p.node][p.port as usize]
                    .as_deref()
                    .expect("a routed port is connected");
                write!(w, "<link_ctn id=\"{name}\"/>")?;
            }
            writeln!(w, "</route>")?;
            routes += 1;
        }
    }
    writeln!(w, "</zone>")?;
    writeln!(w, "</platform>")?;
    w.flush()?;
    Ok(ExportStats {
        hosts: hcas.len(),
        links,
        routes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builtin;

    fn export(name: &str, max: usize) -> Result<(String, ExportStats), ExportError> {
        let t = builtin(name).unwrap();
        let fl = FlowLevel::from_preset("thesis-ddr", &[]).unwrap();
        let ranks: Vec<usize> = (0..t.num_ranks())
            .filter_map(|r| t.hca_of_rank(r))
            .collect();
        let mut out = Vec::new();
        let st = write_platform(&mut out, &t, &fl, &ranks, "thesis-ddr", max)?;
        Ok((String::from_utf8(out).unwrap(), st))
    }

    /// H8_S2: 8 hosts, 9 cables (8 host cables + 1 between the switches),
    /// so 18 link directions; 8 x 8 routes (self-routes loop back at the
    /// host's switch).
    #[test]
    fn h8_s2_counts_and_values() {
        let (x, st) = export("H8_S2", DEFAULT_MAX_HOSTS).unwrap();
        assert_eq!(
            st,
            ExportStats {
                hosts: 8,
                links: 18,
                routes: 64
            }
        );
        assert_eq!(x.matches("<route ").count(), 64);
        assert_eq!(x.matches("<link id=").count(), 18);
        assert_eq!(x.matches("<host id=").count(), 8);
        // thesis-ddr: 2 GB/s everywhere; 100 ns leaving a switch, 0 leaving a host
        assert!(x.contains(
            "<link id=\"H_1[0]->SW_1[0]\" bandwidth=\"2000000000Bps\" latency=\"0ps\"/>"
        ));
        assert!(x.contains(
            "<link id=\"SW_1[4]->SW_2[4]\" bandwidth=\"2000000000Bps\" latency=\"100000ps\"/>"
        ));
        // H_1 -> H_5: host cable, the inter-switch cable, H_5's cable
        assert!(x.contains("<route src=\"H_1\" dst=\"H_5\" symmetrical=\"NO\"><link_ctn id=\"H_1[0]->SW_1[0]\"/><link_ctn id=\"SW_1[4]->SW_2[4]\"/><link_ctn id=\"SW_2[0]->H_5[0]\"/></route>"));
        assert!(x.contains("<route src=\"H_3\" dst=\"H_3\" symmetrical=\"NO\"><link_ctn id=\"H_3[0]->SW_1[2]\"/><link_ctn id=\"SW_1[2]->H_3[0]\"/></route>"));
        assert!(x.contains(
            "<host id=\"H_6\" speed=\"1Gf\"><prop id=\"ibnet_rank\" value=\"5\"/></host>"
        ));
        // the comment holds no "--"
        let c = x.split("<!--").nth(1).unwrap().split("-->").next().unwrap();
        assert!(!c.contains("--"));
    }

    #[test]
    fn limit() {
        let e = export("H8_S2", 7).unwrap_err();
        assert!(
            e.to_string().contains("8 hosts, above the limit of 7"),
            "{e}"
        );
        assert!(export("H8_S2", 8).is_ok());
    }

    /// A switch without an entry for a destination: the export names the
    /// pair and the switch (H8_S2 with SW_1's entry for H_5's LID 5 gone).
    #[test]
    fn incomplete_routing_is_an_error() {
        let mut t = builtin("H8_S2").unwrap();
        let sw1 = t.node_by_name("SW_1").unwrap();
        if let crate::topology::NodeKind::Switch { fdb, .. } = &mut t.nodes[sw1].kind {
            fdb[5] = crate::topology::NO_ROUTE;
        }
        let fl = FlowLevel::from_preset("thesis-ddr", &[]).unwrap();
        let e = write_platform(&mut Vec::new(), &t, &fl, &[], "thesis-ddr", 8).unwrap_err();
        let m = e.to_string();
        assert!(m.starts_with("no route from H_1 to H_5:"), "{m}");
        assert!(m.contains("SW_1"), "{m}");
    }

    #[test]
    fn escaping() {
        assert_eq!(attr("a<b>&\"'"), "a&lt;b>&amp;&quot;&apos;");
        assert_eq!(comment("x--y-"), "x- -y- ");
    }
}
