//! Import of real networks (docs/topology.md): IBDM `.topo` with director-chassis
//! ports, the reference's NED files, and `ibnetdiscover` + `dump_lfts`
//! output. The reference data is read from ../shared beside the checkout
//! (GPL, never copied into the repository); the ibnetdiscover example is
//! our own (ibnet/tests/data/cluster8.*).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ibnet::topology::{self, NodeKind, PortRef, Topology};
use ibnet::traffic::{apply_app_traffic, TrafficSpec};
use ibnet::{Fabric, Params, Time};

const SHARED: &str = env!("IBCOSIM_REFERENCE_DATA_DIR");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn shared(rel: &str) -> PathBuf {
    common::reference_file(SHARED, rel, "this test needs")
}

/// The 1944-node network from its .topo and from its .ned, loaded once for
/// all tests of this file (each load validates 1944 x 1943 routes).
fn net1944(ned: bool) -> &'static Topology {
    static TOPO: OnceLock<Topology> = OnceLock::new();
    static NED: OnceLock<Topology> = OnceLock::new();
    if ned {
        NED.get_or_init(|| {
            topology::load(&shared("ibmodel-1944n/is4_3l_1944n.ned")).expect("NED import")
        })
    } else {
        TOPO.get_or_init(|| {
            topology::load(&shared("ibmodel-1944n/is4_3l_1944n.topo")).expect("IBDM import")
        })
    }
}

fn peer(t: &Topology, node: &str, port: u16) -> (String, u16) {
    let n = t
        .node_by_name(node)
        .unwrap_or_else(|| panic!("no node {node}"));
    let p = t.peer(PortRef { node: n, port }).expect("cabled");
    (t.nodes[p.node].name.clone(), p.port)
}

/// Links as unordered pairs of (name, port), for comparing networks whose
/// node order differs.
fn link_set(t: &Topology) -> BTreeSet<[(String, u16); 2]> {
    t.links
        .iter()
        .map(|l| {
            let mut e = [
                (t.nodes[l.a.node].name.clone(), l.a.port),
                (t.nodes[l.b.node].name.clone(), l.b.port),
            ];
            e.sort();
            e
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (ibmodel-*)"
)]
fn director_chassis_ports_of_the_1944_node_topo() {
    let t = net1944(false);
    assert_eq!(t.hcas().len(), 1944);
    // 108 leaf switches + 3 chassis x (36 line + 18 spine ASICs)
    assert_eq!(t.switches().len(), 108 + 3 * 54);
    // hosts 1944 + leaf uplinks 108 x 18 + chassis-internal 3 x 36 x 18
    assert_eq!(t.links.len(), 1944 + 1944 + 1944);
    // `SW-2-0 P19 -> MIS5600 SWS_0 L1/P1`: line card 1 port 1 is port 0 of
    // ASIC SWS_0_leaf1_U1 (the reference NED's `SW_2_0_U1.port[18] <-->
    // SWS_0_leaf1_U1.port[0]`)
    assert_eq!(peer(t, "SW_2_0_U1", 18), ("SWS_0_leaf1_U1".into(), 0));
    // `SW-2-1 P20 -> MIS5600 SWS_0 L1/P8`
    assert_eq!(peer(t, "SW_2_1_U1", 19), ("SWS_0_leaf1_U1".into(), 7));
    // inside the chassis: line 7's port 18 + (5 - 1) goes to spine 5 port 6
    assert_eq!(peer(t, "SWS_1_leaf7_U1", 22), ("SWS_1_spine5_U1".into(), 6));
    assert_eq!(
        peer(t, "SWS_2_spine18_U1", 35),
        ("SWS_2_leaf36_U1".into(), 35)
    );
    // every ASIC has 36 ports
    for s in t.switches() {
        assert_eq!(t.nodes[s].num_ports(), 36, "{}", t.nodes[s].name);
    }
    // H_1 and H_1944 are on different leaves: leaf, line, spine, line, leaf
    let h = |n: &str| t.node_by_name(n).unwrap();
    assert_eq!(t.hops(h("H_1_U1"), h("H_1944_U1")).unwrap(), 6);
    assert_eq!(t.hops(h("H_1_U1"), h("H_18_U1")).unwrap(), 2);
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (ibmodel-*)"
)]
fn ned_and_topo_of_the_1944_node_network_are_the_same_network() {
    let (a, b) = (net1944(false), net1944(true));
    assert_eq!(a.nodes.len(), b.nodes.len());
    let by_name: HashMap<&str, &NodeKind> =
        a.nodes.iter().map(|n| (n.name.as_str(), &n.kind)).collect();
    for n in &b.nodes {
        assert_eq!(by_name.get(n.name.as_str()), Some(&&n.kind), "{}", n.name);
    }
    assert_eq!(link_set(a), link_set(b));
    // The orders differ: the NED declares hosts sorted by name as text,
    // the IBDM import takes the .hcas (LID) order. Switches agree: the
    // .fdbs.ini indices follow the NED order.
    let first: Vec<&str> = b.nodes[..4].iter().map(|n| n.name.as_str()).collect();
    assert_eq!(first, ["H_1_U1", "H_10_U1", "H_100_U1", "H_1000_U1"]);
    let first: Vec<&str> = a.nodes[..3].iter().map(|n| n.name.as_str()).collect();
    assert_eq!(first, ["H_1_U1", "H_2_U1", "H_3_U1"]);
    let sw = |t: &Topology| -> Vec<String> {
        t.switches()
            .iter()
            .map(|&i| t.nodes[i].name.clone())
            .collect()
    };
    assert_eq!(sw(a), sw(b));
}

/// The reference's RandPermHalfBW configuration (is4_3l_1944n.ini) on a
/// topology, for `until_ps`.
fn rand_perm_half_bw(topo: &Topology, until_ps: u64) -> ibnet::Report {
    let mut p = Params::qdr();
    // [Config RandPermHalfBW] **.gen.genDlyPerByte = 0.53ns (docs/model/fabric.md 7.2)
    p.gen_dly_per_byte_ns = 0.53;
    let mut f = Fabric::new(topo, &p).expect("config");
    let spec = TrafficSpec::parse(&format!(
        "seq_loop:{}:{}",
        shared("ibmodel-1944n/rand_32_perms_1944_nodes.dstSeq").display(),
        shared("ibmodel-1944n/is4_3l_1944n.dstSeq.ini").display()
    ))
    .unwrap();
    apply_app_traffic(&mut f, topo, &spec).unwrap();
    f.run_until(Time(until_ps));
    assert!(f.error().is_none(), "{:?}", f.error());
    let r = f.report();
    assert_eq!(r.flits_dropped, 0);
    assert_eq!(r.flits_generated, r.flits_consumed + r.flits_in_flight);
    r
}

/// 3 us of RandPermHalfBW from the NED (the reference's node order) and
/// from the .topo. No reference results of this network exist to compare
/// with. Hand-checked: every host starts its first message at t = 0 and
/// its generator pushes a flit every 64 B x 0.53 ns/B = 33.92 ns, with no
/// back-pressure yet (200 credits of 64 B flits last 6.8 us), so by 3 us
/// every host has generated floor(3000 / 33.92) + 1 = 89 flits (the 89th
/// at 2984.96 ns). The flits consumed are this engine's numbers (a
/// regression check).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (ibmodel-*)"
)]
fn rand_perm_half_bw_1944_nodes_first_3us() {
    let r = rand_perm_half_bw(net1944(true), 3_000_000);
    assert_eq!(r.messages_injected, 1944);
    assert_eq!(r.flits_generated, 1944 * 89);
    let q = rand_perm_half_bw(net1944(false), 3_000_000);
    assert_eq!(q.flits_generated, 1944 * 89);
    eprintln!(
        "consumed: NED {} topo {}; events {} {}",
        r.flits_consumed, q.flits_consumed, r.events_processed, q.events_processed
    );
    // The two orders give different results already: at t = 0 all 1944
    // hosts start together, so switch arbiters see same-instant arrivals
    // whose order is the node order (docs/model/fabric.md 1.3, 1.4).
    assert_eq!((r.flits_consumed, q.flits_consumed), (102_372, 102_298));
}

/// A NED text of `t` in the reference's style (`H_k: HCA { parameters:
/// srcLid = k; }`, `SW: Switch { ... }`, `A.port <--> IB4XQDRWire <-->
/// B.port[i];`), declaring the nodes in `order` and the links in `t`'s
/// order.
fn ned_text(t: &Topology, name: &str, order: &[usize]) -> String {
    let mut s = format!("package x;\n\nimport ib_model.*;\n\nnetwork {name}\n{{\n\tsubmodules:\n");
    for &i in order {
        let n = &t.nodes[i];
        match &n.kind {
            NodeKind::Hca { lid } => {
                s += &format!("\t\t{}: HCA {{ parameters: srcLid = {lid}; }}\n", n.name)
            }
            NodeKind::Switch { ports, .. } => {
                s += &format!(
                    "\t\t{}: Switch {{\n\t\tparameters: numSwitchPorts = {ports};\n\t\t\tgates: port[{ports}];\n\t\t}}\n",
                    n.name
                )
            }
        }
    }
    s += "\tconnections:\n";
    let g = |p: PortRef| {
        let n = &t.nodes[p.node];
        if n.is_hca() {
            format!("{}.port", n.name)
        } else {
            format!("{}.port[{}]", n.name, p.port)
        }
    };
    for l in &t.links {
        s += &format!("\t\t{} <--> IB4XQDRWire <--> {};\n", g(l.a), g(l.b));
    }
    s + "}\n"
}

/// The 32-node network as a NED file beside its tables (symlinks to
/// ../shared in a temporary directory: nothing is copied).
fn ned32(order_by_name: bool) -> (tempfile::TempDir, Topology) {
    let topo = topology::load(&shared("ibmodel-32n/is1_3l_32n.topo")).expect("topo");
    let mut order: Vec<usize> = (0..topo.nodes.len()).collect();
    if order_by_name {
        // hosts sorted as text, as the reference's NED files declare them
        order.sort_by(|&a, &b| {
            let k = |i: usize| {
                let n = &topo.nodes[i];
                (n.is_switch(), n.name.trim_end_matches("_U1").to_string())
            };
            k(a).cmp(&k(b))
        });
        // switches keep the .fdbs.ini order (already the NED's in 1944n)
        let hcas: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| topo.nodes[i].is_hca())
            .collect();
        order = hcas.into_iter().chain(topo.switches()).collect();
    }
    let dir = tempfile::tempdir().unwrap();
    let ned = dir.path().join("is1_3l_32n.ned");
    std::fs::write(&ned, ned_text(&topo, "is1_3l_32n", &order)).unwrap();
    for f in ["is1_3l_32n.fdbs", "is1_3l_32n.fdbs.ini"] {
        std::os::unix::fs::symlink(shared(&format!("ibmodel-32n/{f}")), dir.path().join(f))
            .unwrap();
    }
    let t = topology::load(&ned).expect("NED import");
    (dir, t)
}

fn onehot32(topo: &Topology, until_ps: u64) -> String {
    let mut f = Fabric::new(topo, &Params::qdr()).expect("config");
    let spec = TrafficSpec::parse(&format!(
        "seq_loop:{}",
        shared("ibmodel-32n/32n_1hot.dstSeq").display()
    ))
    .unwrap();
    apply_app_traffic(&mut f, topo, &spec).unwrap();
    f.run_until(Time(until_ps));
    assert!(f.error().is_none(), "{:?}", f.error());
    serde_json::to_string(&f.report_with(true)).unwrap()
}

/// No NED of the 32-node network is shipped, so write one from the IBDM
/// import in the same node and link order: the NED reader must then give
/// the identical network and a byte-identical report (200 us of OneHot,
/// every message and statistic).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (ibmodel-*)"
)]
fn ned_in_ibdm_order_gives_the_identical_run() {
    let topo = topology::load(&shared("ibmodel-32n/is1_3l_32n.topo")).expect("topo");
    let (_dir, ned) = ned32(false);
    assert_eq!(ned, topo);
    let a = onehot32(&topo, 200_000_000);
    assert_eq!(a, onehot32(&ned, 200_000_000));
    // and through configs/topologies/ibmodel-32n.toml (the same IBDM files)
    let toml = topology::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/topologies/ibmodel-32n.toml"),
    )
    .expect("toml");
    assert_eq!(toml.nodes, topo.nodes);
    assert_eq!(toml.links, topo.links);
}

/// The same network with the hosts declared sorted by name (H_1, H_10,
/// H_11, ..., H_19, H_2, H_20, ...), as the reference's own NED files
/// declare them. Node order decides the order of same-instant events, but
/// in the 32-node OneHot run no tie between hosts changes anything: every
/// per-host and per-port statistic is the same (compared by name; the
/// lists themselves are in node order). This is why the IBDM import (LID
/// order) reproduces the reference here; on the 1944-node network the
/// orders differ within 3 us (above).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (ibmodel-*)"
)]
fn ned_host_order_does_not_matter_for_onehot_32() {
    let (_d, ned) = ned32(true);
    let names: Vec<&str> = ned.nodes[..3].iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["H_1_U1", "H_10_U1", "H_11_U1"]);
    let topo = topology::load(&shared("ibmodel-32n/is1_3l_32n.topo")).expect("topo");
    let by_name = |t: &Topology| {
        let mut f = Fabric::new(t, &Params::qdr()).expect("config");
        let spec = TrafficSpec::parse(&format!(
            "seq_loop:{}",
            shared("ibmodel-32n/32n_1hot.dstSeq").display()
        ))
        .unwrap();
        apply_app_traffic(&mut f, t, &spec).unwrap();
        f.run_until(Time(200_000_000));
        let mut r = f.report();
        r.sinks.sort_by(|a, b| a.name.cmp(&b.name));
        r.obufs
            .sort_by(|a, b| (&a.node, a.port).cmp(&(&b.node, b.port)));
        r.ibufs
            .sort_by(|a, b| (&a.node, a.port).cmp(&(&b.node, b.port)));
        r.generators.sort_by(|a, b| a.name.cmp(&b.name));
        serde_json::to_string(&r).unwrap()
    };
    let (a, b) = (by_name(&topo), by_name(&ned));
    assert!(a.contains("\"flits_consumed\":"));
    assert_eq!(a, b);
}

fn cluster8(lfts: bool) -> Topology {
    let t = Path::new(DATA).join("cluster8.ibnetdiscover");
    let l = Path::new(DATA).join("cluster8.lfts");
    topology::open_with(t.to_str().unwrap(), lfts.then_some(l.as_path())).expect("import")
}

/// Our own ibnetdiscover example: two 36-port switches (LIDs 1, 2) joined
/// by two cables on IB ports 35 and 36, four dual-port HCAs on each (one
/// port cabled), LIDs 3..10.
#[test]
fn ibnetdiscover_cluster_with_dump_lfts_tables() {
    let t = cluster8(true);
    assert_eq!(
        (t.hcas().len(), t.switches().len(), t.links.len()),
        (8, 2, 10)
    );
    // hosts by LID, named by their NodeDescription; then the switches
    let names: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names[0], "node01_mlx4_0");
    assert_eq!(names[7], "node08_mlx4_0");
    assert_eq!(names[8], "MF0;leaf1:SX6036/U1");
    let lids: Vec<u16> = t.hcas().iter().map(|&h| t.lid_of_hca(h).unwrap()).collect();
    assert_eq!(lids, [3, 4, 5, 6, 7, 8, 9, 10]);
    // IB port p is ibnet port p - 1: node05 is on leaf2 IB port 1
    assert_eq!(
        peer(&t, "node05_mlx4_0", 0),
        ("MF0;leaf2:SX6036/U1".into(), 0)
    );
    assert_eq!(
        peer(&t, "MF0;leaf1:SX6036/U1", 35),
        ("MF0;leaf2:SX6036/U1".into(), 35)
    );
    // the tables of dump_lfts: leaf1 sends odd remote LIDs to IB port 35,
    // even ones to 36; switch LIDs (1, 2) are not host routes
    let leaf1 = t.node_by_name("MF0;leaf1:SX6036/U1").unwrap();
    let fdb = t.nodes[leaf1].fdb().unwrap();
    assert_eq!(&fdb[..], &[255, 255, 255, 0, 1, 2, 3, 34, 35, 34, 35]);
    // node01 -> node08 (LID 10): leaf1 IB port 36, leaf2 IB port 4
    let path = t
        .path(
            t.node_by_name("node01_mlx4_0").unwrap(),
            t.node_by_name("node08_mlx4_0").unwrap(),
        )
        .unwrap();
    let ports: Vec<u16> = path.iter().map(|p| p.port).collect();
    assert_eq!(ports, [0, 35, 3]);
    // One message stream node01 -> node08 at the reference defaults: the
    // first 131072-byte message (2048 flits) takes 20N + 80 ns over one
    // switch plus 100 ns for the second (docs/model/fabric.md 11 cases 1, 2):
    // 20 x 2048 + 80 + 100 = 41140 ns.
    let mut f = Fabric::new(&t, &Params::qdr()).unwrap();
    apply_app_traffic(&mut f, &t, &TrafficSpec::parse("param:3=10").unwrap()).unwrap();
    f.run_until(Time(50_000_000));
    let r = f.report_with(true);
    let m = &r.messages.unwrap()[0];
    assert_eq!((m.src_lid, m.dst_lid), (3, 10));
    assert_eq!(m.network_latency_ps, Some(41_140_000));
}

#[test]
fn ibnetdiscover_cluster_without_tables_gets_min_hop_routes() {
    let t = cluster8(false);
    let h = |n: &str| t.node_by_name(n).unwrap();
    assert_eq!(t.hops(h("node01_mlx4_0"), h("node04_mlx4_0")).unwrap(), 2);
    assert_eq!(t.hops(h("node01_mlx4_0"), h("node08_mlx4_0")).unwrap(), 3);
    // the same network as with the tables, only the routes differ
    let u = cluster8(true);
    assert_eq!((t.nodes.len(), &t.links), (u.nodes.len(), &u.links));
}

/// Errors name the file and line.
#[test]
fn import_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let case = |name: &str, text: &str| -> String {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        topology::load(&p).unwrap_err().to_string()
    };
    let ibnd = std::fs::read_to_string(Path::new(DATA).join("cluster8.ibnetdiscover")).unwrap();
    let e = case("a.ibnd", &ibnd.replace("[3]\t\"H-", "[37]\t\"H-"));
    assert!(e.contains("a.ibnd:13:") && e.contains("port 37"), "{e}");
    let e = case("b.ibnd", &ibnd.replace("# lid 9 lmc", "# lid 4 lmc"));
    assert!(e.contains("b.ibnd:") && e.contains("LID"), "{e}");
    let e = case("c.ned", "network x\n{\n submodules:\n  H_1: HCA { parameters: srcLid = 1; }\n  S: Switch { parameters: numSwitchPorts = 2; }\n connections:\n  H_1.port <--> S.port[2];\n}\n");
    assert!(e.contains("c.ned:7:") && e.contains("S.port[2]"), "{e}");
    let e = case("d.ned", "network x\n{\n submodules:\n  H_1: Router;\n}\n");
    assert!(e.contains("d.ned:4:") && e.contains("Router"), "{e}");
    std::fs::write(dir.path().join("e.hcas"), "H-1/U1/1 1\nH-2/U1/1 2\n").unwrap();
    let e = case(
        "e.topo",
        "MTS3600 L\n   P1 -> Cougar H-1 P1\n   P2 -> Cougar H-2 P1\n   P3 -> MIS5600 C L37/P1\n",
    );
    assert!(e.contains("e.topo:4") && e.contains("L37/P1"), "{e}");
    let e = case(
        "e.topo",
        "MTS3600 L\n   P1 -> Cougar H-1 P1\n   P2 -> Cougar H-2 P1\n   P3 -> MIS5600 C P1\n",
    );
    assert!(
        e.contains("e.topo:4") && e.contains("director chassis"),
        "{e}"
    );
    let e = case(
        "e.topo",
        "MTS3600 L\n   P1 -> Cougar H-1 P1\n   P3 -> MIS9999 C L1/P1\n",
    );
    assert!(e.contains("e.topo:3") && e.contains("MIS5600"), "{e}");
}

/// A small network with a director chassis: leaf switches A (H-1, H-2)
/// and B (H-3, H-4), each with two cables into the chassis (A on line
/// cards 1 and 2, B on 3 and 4). Min-hop routes (no tables): a host on A reaches a host on
/// B over A, a line ASIC, a spine ASIC, a line ASIC, B: 6 links.
#[test]
fn small_chassis_network_routes_through_line_and_spine_asics() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.hcas"),
        "H-1/U1/1 1\nH-2/U1/1 2\nH-3/U1/1 3\nH-4/U1/1 4\n",
    )
    .unwrap();
    let topo = dir.path().join("c.topo");
    std::fs::write(&topo, CHASSIS_TOPO).unwrap();
    let t = topology::load(&topo).expect("import");
    assert_eq!((t.hcas().len(), t.switches().len()), (4, 2 + 54));
    assert_eq!(t.links.len(), 4 + 4 + 36 * 18);
    assert_eq!(peer(&t, "SW_A_U1", 2), ("CH_leaf1_U1".into(), 0));
    assert_eq!(peer(&t, "SW_B_U1", 3), ("CH_leaf4_U1".into(), 17));
    let h = |n: &str| t.node_by_name(n).unwrap();
    assert_eq!(t.hops(h("H_1_U1"), h("H_2_U1")).unwrap(), 2);
    assert_eq!(t.hops(h("H_1_U1"), h("H_4_U1")).unwrap(), 6);
}

pub const CHASSIS_TOPO: &str = "\
MTS3600 SW-A
   P1 -> Cougar H-1 P1
   P2 -> Cougar H-2 P1
   P3 -> MIS5600 CH L1/P1
   P4 -> MIS5600 CH L2/P1

MTS3600 SW-B
   P1 -> Cougar H-3 P1
   P2 -> Cougar H-4 P1
   P3 -> MIS5600 CH L3/P18
   P4 -> MIS5600 CH L4/P18
";

/// The command line: `--lfts` goes with an ibnetdiscover file only, and
/// `ibnet routes` shows the tables' choice.
#[test]
fn command_line_lfts() {
    let bin = env!("CARGO_BIN_EXE_ibnet");
    let d = Path::new(DATA);
    let out = std::process::Command::new(bin)
        .args(["routes", "--topology"])
        .arg(d.join("cluster8.ibnetdiscover"))
        .arg("--lfts")
        .arg(d.join("cluster8.lfts"))
        .args(["node01_mlx4_0", "node07_mlx4_0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let s = String::from_utf8_lossy(&out.stdout);
    // LID 9 is odd: IB port 35 = ibnet port 34
    assert!(
        s.contains("MF0;leaf1:SX6036/U1[34] -> MF0;leaf2:SX6036/U1[34]"),
        "{s}"
    );
    let out = std::process::Command::new(bin)
        .args(["topology", "--summary", "--topology", "H8_S2", "--lfts"])
        .arg(d.join("cluster8.lfts"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("cluster8.lfts") && e.contains("ibnetdiscover"),
        "{e}"
    );
}

/// TOML tables `[ibnetdiscover]` and `[ned]`: the computed routing named by
/// `routing` and ranks placed by host name on an imported network.
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (ibmodel-*)"
)]
fn toml_import_tables_with_routing_and_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let d = Path::new(DATA);
    let toml = dir.path().join("c.toml");
    std::fs::write(
        &toml,
        format!(
            "name = \"my cluster\"\nrouting = \"minhop\"\nranks = [\"node08_mlx4_0\", \"node01_mlx4_0\"]\n\n[ibnetdiscover]\nfile = {:?}\n",
            d.join("cluster8.ibnetdiscover")
        ),
    )
    .unwrap();
    let t = topology::load(&toml).expect("toml");
    assert_eq!(t.name, "my cluster");
    assert_eq!(t.num_ranks(), 2);
    assert_eq!(t.nodes[t.hca_of_rank(0).unwrap()].name, "node08_mlx4_0");
    assert_eq!(
        t.hops(t.hca_of_rank(1).unwrap(), t.hca_of_rank(0).unwrap())
            .unwrap(),
        3
    );
    // with the tables named in the table
    std::fs::write(
        &toml,
        format!(
            "[ibnetdiscover]\nfile = {:?}\nlfts = {:?}\n",
            d.join("cluster8.ibnetdiscover"),
            d.join("cluster8.lfts")
        ),
    )
    .unwrap();
    assert_eq!(topology::load(&toml).unwrap(), cluster8(true));
    // [ned] with its tables by convention
    std::fs::write(
        &toml,
        format!("[ned]\nfile = {:?}\n", shared("ibmodel-3h2s/p2p_3h_2s.ned")),
    )
    .unwrap();
    let t = topology::load(&toml).unwrap();
    assert_eq!(t.name, "p2p_3h_2s");
    // 3h_2s.fdbs: SW_2 (table 1) sends LID 3 to port 2, towards SW_1
    let sw2 = t.node_by_name("SW_2").unwrap();
    assert_eq!(t.nodes[sw2].fdb().unwrap()[3], 2);
    // two import tables
    std::fs::write(
        &toml,
        "[ned]\nfile = \"a.ned\"\n[ibnetdiscover]\nfile = \"b\"\n",
    )
    .unwrap();
    let e = topology::load(&toml).unwrap_err().to_string();
    assert!(e.contains("c.toml") && e.contains("at most one"), "{e}");
    // a missing file names the table
    std::fs::write(&toml, "[ibnetdiscover]\nfile = \"nope.txt\"\n").unwrap();
    let e = topology::load(&toml).unwrap_err().to_string();
    assert!(
        e.contains("c.toml") && e.contains("[ibnetdiscover]") && e.contains("nope.txt"),
        "{e}"
    );
}
