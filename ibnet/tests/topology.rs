//! Integration tests of `ibnet::topology`: thesis networks, the reference's
//! 32-node IBDM network (read from ../shared at test time, GPL data, not
//! copied), generators, routing, file formats and their error messages.

use std::path::{Path, PathBuf};

use ibnet::topology::{
    builtin, load, load_dst_seq, load_ibdm, load_toml_str, parse_rank_file, route, to_toml,
    to_toml_routed, NodeKind, PortRef, Routing, TopoError, Topology, NO_ROUTE,
};

fn data_dir() -> PathBuf {
    let d =
        PathBuf::from(std::env::var("IBMODEL_32N_DIR").unwrap_or_else(|_| {
            concat!(env!("IBCOSIM_REFERENCE_DATA_DIR"), "/ibmodel-32n").into()
        }));
    assert!(
        d.join("is1_3l_32n.topo").is_file(),
        "32-node reference data not found in {} (set IBMODEL_32N_DIR)",
        d.display()
    );
    d
}

fn load_32n() -> Topology {
    let d = data_dir();
    load_ibdm(
        &d.join("is1_3l_32n.topo"),
        &d.join("ftree.hcas"),
        Some(&d.join("is1_3l_32n.fdbs")),
        Some(&d.join("is1_3l_32n.fdbs.ini")),
    )
    .unwrap()
}

fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/topologies")
}

/// Truncate to `d` decimals, the way the thesis reports 20/7 as 2.85.
fn trunc(x: f64, d: i32) -> f64 {
    let m = 10f64.powi(d);
    (x * m + 1e-9).floor() / m
}

// ---------------------------------------------------------------- thesis

#[test]
fn thesis_average_hops_h8() {
    // hops = links traversed (thesis 4.7.3: "traversed links"), averaged
    // over all ordered pairs of distinct hosts.
    let cases = [
        ("H8_S1", 2.0, 2.0, 0),
        ("H8_S2", 18.0 / 7.0, 2.57, 2),
        ("H8_S4", 20.0 / 7.0, 2.85, 2),
        ("H8_S6", 26.0 / 7.0, 3.7, 1),
    ];
    for (name, exact, thesis, decimals) in cases {
        let t = builtin(name).unwrap();
        assert_eq!(t.hcas().len(), 8, "{name}");
        let avg = t.average_hops().unwrap();
        assert!((avg - exact).abs() < 1e-12, "{name}: {avg} != {exact}");
        assert_eq!(trunc(avg, decimals), thesis, "{name}: {avg}");
        assert_eq!(trunc(avg, 2), trunc(exact, 2), "{name}");
    }
    assert_eq!(builtin("H8_S1").unwrap().switches().len(), 1);
    assert_eq!(builtin("H8_S2").unwrap().switches().len(), 2);
    assert_eq!(builtin("H8_S4").unwrap().switches().len(), 4);
    assert_eq!(builtin("H8_S6").unwrap().switches().len(), 6);
}

#[test]
fn h8_s1_every_pair_two_hops() {
    let t = builtin("H8_S1").unwrap();
    let h = t.hcas();
    for &s in &h {
        for &d in &h {
            if s != d {
                assert_eq!(t.hops(s, d).unwrap(), 2);
                let p = t.path(s, d).unwrap();
                // switch output port = destination's index (H_k on port k-1)
                assert_eq!(p[1].port as usize, d);
            }
        }
    }
}

#[test]
fn fat_tree_sizes_match_thesis() {
    // (P, HCAs, switches) from thesis 4.8 (H128_S24 .. H512_S48) and M9.
    for (p, hcas, switches) in [
        (16, 128, 24),
        (22, 242, 33),
        (28, 392, 42),
        (32, 512, 48),
        (36, 648, 54),
    ] {
        let t = builtin(&format!("fattree:{p}")).unwrap();
        assert_eq!(t.hcas().len(), hcas, "P={p}");
        assert_eq!(t.switches().len(), switches, "P={p}");
        let spines = t
            .nodes
            .iter()
            .filter(|n| n.name.starts_with("spine_"))
            .count();
        assert_eq!(spines, p / 2);
        assert!(t
            .switches()
            .iter()
            .all(|&s| t.nodes[s].num_ports() == p as u16));
        let lids: Vec<u16> = t.hcas().iter().map(|&h| t.lid_of_hca(h).unwrap()).collect();
        assert_eq!(lids, (1..=hcas as u16).collect::<Vec<_>>());
    }
    let m9 = builtin("M9").unwrap();
    let mut f36 = builtin("fattree:36").unwrap();
    f36.name = "M9".into();
    assert_eq!(m9, f36);
}

#[test]
fn updown_spine_is_lid_mod_spines() {
    for p in [4usize, 8, 16] {
        let t = builtin(&format!("fattree:{p}")).unwrap();
        let half = p / 2;
        let r = t.router();
        let h = t.hcas();
        for &s in &h {
            for &d in &h {
                if s == d {
                    continue;
                }
                let path = r.path(s, d).unwrap();
                let same_leaf = (s / half) == (d / half); // HCAs are nodes 0..N-1 in leaf order
                if same_leaf {
                    assert_eq!(path.len(), 2);
                    continue;
                }
                assert_eq!(path.len(), 4, "P={p} {s}->{d}");
                let lid = t.lid_of_hca(d).unwrap() as usize;
                // leaf leaves through up-port P/2 + (lid mod spines) ...
                assert_eq!(path[1].port as usize, half + lid % half);
                // ... to spine number lid mod spines ...
                assert_eq!(t.nodes[path[2].node].name, format!("spine_{}", lid % half));
                // ... which goes down on the port numbered like the destination leaf
                assert_eq!(path[2].port as usize, d / half);
                assert_eq!(path[3].port as usize, d % half);
            }
        }
    }
}

#[test]
fn m9_routes_and_hops() {
    let t = builtin("M9").unwrap();
    t.validate().unwrap();
    // 17 of 647 destinations share the leaf (2 links), the rest cross a spine (4)
    let exact = (17.0 * 2.0 + 630.0 * 4.0) / 647.0;
    assert!((t.average_hops().unwrap() - exact).abs() < 1e-12);
}

#[test]
fn minhop_on_fat_tree_uses_lowest_port() {
    let mut t = builtin("fattree:4").unwrap();
    route(&mut t, Routing::MinHop).unwrap();
    t.validate().unwrap();
    // every leaf sends all remote traffic to spine_0 (port 2, lowest up-port)
    let leaf0 = t.node_by_name("leaf_0").unwrap();
    let NodeKind::Switch { fdb, .. } = &t.nodes[leaf0].kind else {
        panic!()
    };
    assert_eq!(fdb, &vec![NO_ROUTE, 0, 1, 2, 2, 2, 2, 2, 2]);
    assert!((t.average_hops().unwrap() - 26.0 / 7.0).abs() < 1e-12);
}

// ---------------------------------------------------------------- 32-node IBDM import

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn import_32n_structure() {
    let t = load_32n();
    let hcas = t.hcas();
    assert_eq!(hcas.len(), 32);
    assert_eq!(t.switches().len(), 20);
    assert!(t.switches().iter().all(|&s| t.nodes[s].num_ports() == 8));
    for (i, &h) in hcas.iter().enumerate() {
        assert_eq!(t.lid_of_hca(h), Some(i as u16 + 1));
        assert_eq!(t.nodes[h].name, format!("H_{}_U1", i + 1));
        assert_eq!(t.hca_by_lid(i as u16 + 1), Some(h));
    }
    // HCAs first, then switches in fdbIndex order
    assert_eq!(t.nodes[32].name, "SW_L0_0_0_U1");
    assert_eq!(t.nodes[36].name, "SW_L1_0_0_U1");
    assert_eq!(t.nodes[51].name, "SW_L2_3_1_U1");
    // 32 host cables + 64 leaf-L1 + 64 L1-L0... each cable once
    assert_eq!(t.links.len(), 32 + 32 + 32);
    // H-1 P1 <-> SW-L2-0-0 P1 is port 0 <-> port 0
    let sw = t.node_by_name("SW_L2_0_0_U1").unwrap();
    assert_eq!(
        t.peer(PortRef { node: 0, port: 0 }),
        Some(PortRef { node: sw, port: 0 })
    );
    // SW-L2-0-0 P8 -> SW-L1-0-1 P2
    let l1 = t.node_by_name("SW_L1_0_1_U1").unwrap();
    assert_eq!(
        t.peer(PortRef { node: sw, port: 7 }),
        Some(PortRef { node: l1, port: 1 })
    );
    // table 12 belongs to SW_L2_0_0: LID 5 -> port 4 (first line "12: 255 0 1 2 3 4 ...")
    let NodeKind::Switch { fdb, .. } = &t.nodes[sw].kind else {
        panic!()
    };
    assert_eq!(fdb.len(), 33);
    assert_eq!(&fdb[..5], &[NO_ROUTE, 0, 1, 2, 3]);
    t.validate().unwrap();
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn import_32n_hops() {
    let t = load_32n();
    let r = t.router();
    let h = t.hcas();
    for &s in &h {
        let mut count = [0usize; 8];
        for &d in &h {
            if s != d {
                count[r.hops(s, d).unwrap()] += 1;
            }
        }
        // 3 hosts on the same leaf, 4 on the sibling leaf, 24 across the top
        assert_eq!(count, [0, 0, 3, 0, 4, 0, 24, 0], "from {}", t.nodes[s].name);
    }
    assert!((t.average_hops().unwrap() - 166.0 / 31.0).abs() < 1e-12);
    // same leaf, same pod, other pod
    assert_eq!(t.hops(0, 1).unwrap(), 2);
    assert_eq!(t.hops(0, 4).unwrap(), 4);
    assert_eq!(t.hops(0, 31).unwrap(), 6);
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn import_32n_by_convention_and_wrapper() {
    let d = data_dir();
    let explicit = load_32n();
    // .topo: X.hcas does not exist, the only *.hcas next to it is used
    let by_conv = load(&d.join("is1_3l_32n.topo")).unwrap();
    assert_eq!(by_conv, explicit);
    // the TOML wrapper in configs/ (paths relative to the TOML file)
    let wrapped = load(&configs_dir().join("ibmodel-32n.toml")).unwrap();
    assert_eq!(wrapped.nodes, explicit.nodes);
    assert_eq!(wrapped.links, explicit.links);
    // without tables ibnet computes min-hop routes with the same hop counts
    let mh = load_ibdm(
        &d.join("is1_3l_32n.topo"),
        &d.join("ftree.hcas"),
        None,
        None,
    )
    .unwrap();
    assert_ne!(mh.nodes, explicit.nodes);
    assert!((mh.average_hops().unwrap() - 166.0 / 31.0).abs() < 1e-12);
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn dst_sequences_load() {
    let d = data_dir();
    let t = load_32n();
    for (f, first) in [
        ("32n_1hot", vec![3u16, 9, 15, 19, 21, 24]),
        (
            "32n_2hot",
            vec![6, 7, 8, 11, 13, 14, 16, 18, 20, 22, 23, 25, 26, 27, 29],
        ),
    ] {
        let s = load_dst_seq(
            &d.join(format!("{f}.dstSeq")),
            &d.join(format!("{f}.dstSeq.ini")),
        )
        .unwrap();
        assert_eq!(s.num_vectors(), 32, "{f}");
        assert_eq!(s.index_of.len(), 32);
        let per_hca = s.resolve(&t).unwrap();
        assert_eq!(per_hca.len(), 32);
        assert_eq!(per_hca[0], first, "{f}");
        assert!(per_hca.iter().all(|v| !v.is_empty()));
        // the names H_i_U1 also match a topology whose HCAs are called H_i
        let fat = builtin("fattree:8").unwrap();
        assert_eq!(s.resolve(&fat).unwrap()[0], first);
    }
}

// ---------------------------------------------------------------- TOML format

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn toml_round_trip() {
    let mut nets: Vec<Topology> = ["H8_S1", "H8_S2", "H8_S4", "H8_S6", "fattree:8", "chain:3"]
        .iter()
        .map(|n| builtin(n).unwrap())
        .collect();
    nets.push(load_32n());
    let mut ranked = builtin("H8_S2").unwrap();
    ranked.ranks = vec![7, 6, 5, 4];
    nets.push(ranked);
    for t in nets {
        let text = to_toml(&t);
        let back = load_toml_str(&text, Path::new("roundtrip.toml")).unwrap();
        assert_eq!(back, t, "{}", t.name);
    }
}

#[test]
fn configs_are_generated_and_load() {
    // Regenerate with: IBNET_REGEN_CONFIGS=1 cargo test -p ibnet --test topology configs
    let regen = std::env::var_os("IBNET_REGEN_CONFIGS").is_some();
    for (file, name, routing) in [
        ("H8_S1.toml", "H8_S1", Routing::MinHop),
        ("H8_S2.toml", "H8_S2", Routing::MinHop),
        ("H8_S4.toml", "H8_S4", Routing::MinHop),
        ("H8_S6.toml", "H8_S6", Routing::UpDown),
        ("H128_S24.toml", "fattree:16", Routing::UpDown),
        ("M9.toml", "M9", Routing::UpDown),
    ] {
        let t = builtin(name).unwrap();
        let path = configs_dir().join(file);
        let text = to_toml_routed(&t, routing);
        if regen {
            std::fs::write(&path, &text).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap();
        assert_eq!(on_disk, text, "{} is stale; regenerate", path.display());
        assert_eq!(load(&path).unwrap(), t, "{file}");
    }
}

#[test]
fn toml_defaults_lids_and_ranks() {
    let text = r#"
name = "tiny"
nodes = [
  { hca = "a", lid = 2 },
  { switch = "s", ports = 3 },
  { hca = "b" },
  { hca = "c" },
]
links = ["a:0 <-> s:0", "s:1 <-> b:0", "c:0<->s:2"]
ranks = ["c", "a"]
"#;
    let t = load_toml_str(text, Path::new("tiny.toml")).unwrap();
    assert_eq!(t.lid_of_hca(0), Some(2));
    assert_eq!(t.lid_of_hca(2), Some(1));
    assert_eq!(t.lid_of_hca(3), Some(3));
    assert_eq!(t.hcas(), vec![0, 2, 3]);
    assert_eq!(t.hca_of_rank(0), Some(3));
    assert_eq!(t.hca_of_rank(1), Some(0));
    assert_eq!(t.hca_of_rank(2), None);
    assert_eq!(t.num_ranks(), 2);
    let NodeKind::Switch { fdb, .. } = &t.nodes[1].kind else {
        panic!()
    };
    assert_eq!(fdb, &vec![NO_ROUTE, 1, 0, 2]);
    // default rank mapping: r-th HCA in node order
    let d = builtin("H8_S1").unwrap();
    assert_eq!(d.hca_of_rank(7), Some(7));
    assert_eq!(d.hca_of_rank(8), None);
}

#[test]
fn rank_file_in_toml() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ranks.txt"), "0 H_2\n1 H_1\n").unwrap();
    let mut text = to_toml_routed(&builtin("H8_S1").unwrap(), Routing::MinHop);
    text = text.replacen(
        "routing = \"minhop\"",
        "routing = \"minhop\"\nrank_file = \"ranks.txt\"",
        1,
    );
    let p = dir.path().join("t.toml");
    std::fs::write(&p, &text).unwrap();
    let t = load(&p).unwrap();
    assert_eq!(t.ranks, vec![1, 0]);
    // two ranks on one HCA
    std::fs::write(dir.path().join("ranks.txt"), "0 H_2\n1 H_2\n").unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(
        e.contains("ranks.txt:2: ranks 0 (line 1) and 1 are both mapped to HCA H_2"),
        "{e}"
    );
    let e = parse_rank_file("1 H_1\n", Path::new("r"), &t)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank 0 has no HCA"), "{e}");
}

// ---------------------------------------------------------------- errors

fn toml_err(text: &str) -> String {
    load_toml_str(text, Path::new("net.toml"))
        .unwrap_err()
        .to_string()
}

const STAR: &str =
    "nodes = [\n  { hca = \"a\" },\n  { hca = \"b\" },\n  { switch = \"s\", ports = 2 },\n]\n";

#[test]
fn error_unknown_node_in_link() {
    let e = toml_err(&format!(
        "{STAR}links = [\n  \"a:0 <-> s:0\",\n  \"x:0 <-> s:1\",\n]\n"
    ));
    assert_eq!(e, "net.toml:8:3: link \"x:0 <-> s:1\": unknown node \"x\"");
}

#[test]
fn error_port_out_of_range() {
    let e = toml_err(&format!(
        "{STAR}links = [\"a:0 <-> s:0\", \"b:0 <-> s:2\"]\n"
    ));
    assert_eq!(
        e,
        "net.toml:6:25: link \"b:0 <-> s:2\": port 2 of s is out of range (ports 0..=1)"
    );
    let e = toml_err(&format!("{STAR}links = [\"a:1 <-> s:0\"]\n"));
    assert!(
        e.contains("port 1 of a is out of range (ports 0..=0)"),
        "{e}"
    );
}

#[test]
fn error_duplicate_port() {
    let e = toml_err(&format!(
        "{STAR}links = [\"a:0 <-> s:0\", \"b:0 <-> s:0\"]\n"
    ));
    assert_eq!(
        e,
        "net.toml:6:25: link \"b:0 <-> s:0\": port 0 of s is already used by link \"a:0 <-> s:0\""
    );
}

#[test]
fn error_unroutable_lid() {
    let base = format!("{STAR}links = [\"a:0 <-> s:0\", \"b:0 <-> s:1\"]\n");
    let bad = format!("{base}[fdb]\ns = [255, 0, 255]\n");
    let e = toml_err(&bad);
    assert_eq!(e, "net.toml: switch s has no route to LID 2 (HCA b)");
    // explicitly allowed
    let ok = format!("allow_unroutable = true\n{bad}");
    let t = load_toml_str(&ok, Path::new("net.toml")).unwrap();
    assert!(t.hops(1, 0).is_ok());
    assert!(matches!(
        t.hops(0, 1).unwrap_err(),
        TopoError::Unroutable { lid: 2, .. }
    ));
    // disconnected HCA with computed routes
    let e = toml_err(&format!("{STAR}links = [\"a:0 <-> s:0\"]\n"));
    assert_eq!(e, "net.toml: invalid topology: HCA b is not connected");
    // table too short, table port out of range
    let e = toml_err(&format!("{base}[fdb]\ns = [255, 0]\n"));
    assert!(
        e.starts_with("net.toml:8:1: [fdb] s: 2 entries, must cover LIDs 0..=2"),
        "{e}"
    );
    let e = toml_err(&format!("{base}[fdb]\ns = [255, 0, 7]\n"));
    assert!(
        e.contains("LID 2 -> port 7, but the switch has 2 ports"),
        "{e}"
    );
}

#[test]
fn error_forwarding_loop() {
    let text = r#"
nodes = [{ hca = "a" }, { hca = "b" }, { switch = "s1", ports = 2 }, { switch = "s2", ports = 3 }]
links = ["a:0 <-> s1:0", "s1:1 <-> s2:0", "b:0 <-> s2:2"]
[fdb]
s1 = [255, 0, 1]
s2 = [255, 0, 0]
"#;
    let e = toml_err(text);
    assert_eq!(e, "net.toml: forwarding loop towards LID 2: s1 -> s2 -> s1");
}

#[test]
fn error_bad_toml() {
    let e = toml_err("nodes = [\n  { hca = \"a\" \n");
    assert_eq!(e, "net.toml:2:15: invalid inline table: expected `}`");
    let e = toml_err("nodes = [{ hca = \"a\", lid = 70000 }]\n");
    assert_eq!(
        e,
        "net.toml:1:29: invalid value: integer `70000`, expected u16"
    );
    let e = toml_err("colour = 3\n");
    assert!(e.starts_with("net.toml:1:1: unknown field `colour`"), "{e}");
    let e = toml_err("routing = \"fast\"\n");
    assert_eq!(
        e,
        "net.toml:1:11: routing must be \"minhop\", \"updown\", \"ftree\" or \"tables\", found \"fast\""
    );
    let e = toml_err("nodes = [{ hca = \"a\", switch = \"b\" }]\n");
    assert!(
        e.starts_with("net.toml:1:10: a node needs exactly one of"),
        "{e}"
    );
    let e = toml_err("nodes = [{ switch = \"b\" }]\n");
    assert_eq!(e, "net.toml:1:10: switch b: missing `ports`");
    let e = toml_err("nodes = [{ hca = \"a\", lid = 1 }, { hca = \"b\", lid = 1 }]\n");
    assert!(e.contains("LID 1 is already used by a"), "{e}");
    let e = toml_err(&format!("routing = \"minhop\"\n{STAR}links = [\"a:0 <-> s:0\", \"b:0 <-> s:1\"]\n[fdb]\ns = [255, 0, 1]\n"));
    assert!(e.contains("would replace them"), "{e}");
}

#[test]
fn error_updown_needs_fat_tree() {
    let t = to_toml_routed(&builtin("H8_S4").unwrap(), Routing::UpDown);
    let e = toml_err(&t);
    assert_eq!(e, "net.toml: routing: updown needs a 2-level fat tree, but no switch is free of HCAs (no spines)");
}

#[test]
fn open_path_or_builtin() {
    let t = ibnet::topology::open("H8_S6").unwrap();
    assert_eq!(t, builtin("H8_S6").unwrap());
    let p = configs_dir().join("H8_S2.toml");
    assert_eq!(
        ibnet::topology::open(p.to_str().unwrap()).unwrap(),
        builtin("H8_S2").unwrap()
    );
    let e = ibnet::topology::open("nope.toml").unwrap_err().to_string();
    assert!(
        e.contains("\"nope.toml\" is neither an existing file nor a built-in topology"),
        "{e}"
    );
}

#[test]
fn error_missing_file() {
    let e = load(Path::new("/nonexistent/x.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/nonexistent/x.toml: cannot read:"), "{e}");
}

/// Copies of the 32-node inputs in a temp dir, with one file altered.
fn altered_32n(file: &str, edit: impl Fn(&str) -> String) -> (tempfile::TempDir, PathBuf) {
    let src = data_dir();
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "is1_3l_32n.topo",
        "ftree.hcas",
        "is1_3l_32n.fdbs",
        "is1_3l_32n.fdbs.ini",
    ] {
        let text = std::fs::read_to_string(src.join(f)).unwrap();
        let text = if f == file { edit(&text) } else { text };
        std::fs::write(dir.path().join(f), text).unwrap();
    }
    let topo = dir.path().join("is1_3l_32n.topo");
    (dir, topo)
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn error_blank_line_in_fdbs() {
    let (_d, topo) = altered_32n("is1_3l_32n.fdbs", |t| t.replacen('\n', "\n\n", 3));
    let e = load(&topo).unwrap_err().to_string();
    assert!(e.ends_with("is1_3l_32n.fdbs:2: blank line in vector file (every line must be `<index>: values...`)"), "{e}");
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn error_unroutable_in_fdbs() {
    // table 12 (SW_L2_0_0) loses its route to LID 5: entry 5 becomes 255
    let (_d, topo) = altered_32n("is1_3l_32n.fdbs", |t| {
        t.lines()
            .map(|l| {
                if let Some(rest) = l.strip_prefix("12: ") {
                    let mut v: Vec<&str> = rest.split(' ').collect();
                    v[5] = "255";
                    format!("12: {}\n", v.join(" "))
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    });
    let e = load(&topo).unwrap_err().to_string();
    assert!(
        e.ends_with("is1_3l_32n.topo: switch SW_L2_0_0_U1 has no route to LID 5 (HCA H_5_U1)"),
        "{e}"
    );
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn error_topo_and_hcas() {
    let (_d, topo) = altered_32n("is1_3l_32n.topo", |t| {
        t.replacen(
            "\tP8 -> MTS800 SW-L1-0-1 P2",
            "\tP9 -> MTS800 SW-L1-0-1 P2",
            1,
        )
    });
    let e = load(&topo).unwrap_err().to_string();
    assert!(
        e.contains("is1_3l_32n.topo:9: SW-L2-0-0: port P9 used, but a MTS800 has 8 ports"),
        "{e}"
    );
    let (_d, topo) = altered_32n("is1_3l_32n.topo", |t| {
        t.replacen("P2 -> Cougar H-2 P1", "P2 -> Cougar H-1 P1", 1)
    });
    let e = load(&topo).unwrap_err().to_string();
    assert!(
        e.contains("is1_3l_32n.topo:3: H-1 P1 is already cabled to SW-L2-0-0 P1 (line 2)"),
        "{e}"
    );
    let (_d, topo) = altered_32n("ftree.hcas", |t| t.replacen("H-2/U1/1 2", "H-2/U1/1 1", 1));
    let e = load(&topo).unwrap_err().to_string();
    assert!(
        e.contains("ftree.hcas:2: LID 1 already used on line 1"),
        "{e}"
    );
    let (_d, topo) = altered_32n("is1_3l_32n.fdbs.ini", |t| {
        t.replacen("fdbIndex = 19", "fdbIndex = 40", 1)
    });
    let e = load(&topo).unwrap_err().to_string();
    assert!(
        e.contains("is1_3l_32n.fdbs.ini:21: SW_L2_3_1_U1 uses table 40"),
        "{e}"
    );
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's 32-node network (ibmodel-32n)"
)]
fn error_dstseq() {
    let d = data_dir();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(d.join("32n_1hot.dstSeq")).unwrap();
    std::fs::write(dir.path().join("x.dstSeq"), text.replacen('\n', "\n\n", 1)).unwrap();
    let e = load_dst_seq(&dir.path().join("x.dstSeq"), &d.join("32n_1hot.dstSeq.ini"))
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with(
            "x.dstSeq:2: blank line in vector file (every line must be `<index>: values...`)"
        ),
        "{e}"
    );
    std::fs::write(
        dir.path().join("x.dstSeq"),
        text.replacen("0: 3 ", "0: 99 ", 1),
    )
    .unwrap();
    let s = load_dst_seq(&dir.path().join("x.dstSeq"), &d.join("32n_1hot.dstSeq.ini")).unwrap();
    let e = s.resolve(&load_32n()).unwrap_err().to_string();
    assert!(
        e.ends_with("x.dstSeq:1: sequence 0: LID 99 belongs to no HCA of is1_3l_32n"),
        "{e}"
    );
}

// ---------------------------------------------------------------- properties

mod props {
    use super::*;
    use proptest::prelude::*;

    /// A random connected network: switches joined by a random spanning
    /// tree plus extra cables, HCAs hung on random switches.
    fn random_net(parents: &[usize], extra: &[(usize, usize)], hosts: &[usize]) -> String {
        let n = parents.len() + 1;
        let mut deg = vec![0u16; n];
        let mut links = Vec::new();
        let cable = |a: usize, b: usize, deg: &mut Vec<u16>, links: &mut Vec<String>| {
            links.push(format!("\"S{a}:{} <-> S{b}:{}\"", deg[a], deg[b]));
            deg[a] += 1;
            deg[b] += 1;
        };
        for (i, &p) in parents.iter().enumerate() {
            cable(i + 1, p % (i + 1), &mut deg, &mut links);
        }
        for &(a, b) in extra {
            let (a, b) = (a % n, b % n);
            if a != b {
                cable(a, b, &mut deg, &mut links);
            }
        }
        let mut nodes = Vec::new();
        for (k, &h) in hosts.iter().enumerate() {
            let s = h % n;
            nodes.push(format!("{{ hca = \"H{k}\" }}"));
            links.push(format!("\"H{k}:0 <-> S{s}:{}\"", deg[s]));
            deg[s] += 1;
        }
        for (s, d) in deg.iter().enumerate() {
            nodes.push(format!("{{ switch = \"S{s}\", ports = {} }}", (*d).max(1)));
        }
        format!(
            "nodes = [{}]\nlinks = [{}]\n",
            nodes.join(", "),
            links.join(", ")
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn minhop_is_valid_shortest_and_round_trips(
            parents in prop::collection::vec(0usize..100, 0..8),
            extra in prop::collection::vec((0usize..100, 0usize..100), 0..6),
            hosts in prop::collection::vec(0usize..100, 2..10),
        ) {
            let text = random_net(&parents, &extra, &hosts);
            let t = load_toml_str(&text, Path::new("p.toml")).unwrap();
            t.validate().unwrap();
            // hops = 2 + shortest switch-graph distance between attachment switches
            let n = parents.len() + 1;
            let mut adj = vec![vec![false; n]; n];
            for (i, &p) in parents.iter().enumerate() { adj[i + 1][p % (i + 1)] = true; adj[p % (i + 1)][i + 1] = true; }
            for &(a, b) in &extra { adj[a % n][b % n] = true; adj[b % n][a % n] = true; }
            let dist = |s: usize, d: usize| {
                let mut dd = vec![usize::MAX; n]; dd[s] = 0; let mut q = std::collections::VecDeque::from([s]);
                while let Some(x) = q.pop_front() { for y in 0..n { if adj[x][y] && dd[y] == usize::MAX { dd[y] = dd[x] + 1; q.push_back(y); } } }
                dd[d]
            };
            let h = t.hcas();
            for (i, &s) in h.iter().enumerate() {
                for (j, &d) in h.iter().enumerate() {
                    if i != j {
                        prop_assert_eq!(t.hops(s, d).unwrap(), 2 + dist(hosts[i] % n, hosts[j] % n));
                    }
                }
            }
            let back = load_toml_str(&to_toml(&t), Path::new("p.toml")).unwrap();
            prop_assert_eq!(back, t);
        }
    }
}
