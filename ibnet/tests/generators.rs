//! Topology generators (docs/topology.md, "Generated networks"): hand-computed
//! node and link counts, hand-derived routes and SLs, deadlock freedom by the
//! per-VL channel dependency graph, saturated runs (dateline torus completes
//! where the one-VL torus deadlocks; dragonflies complete), ftree's
//! contention-free shift, clear errors for bad names, and a property test over
//! random small parameters.

mod common;
use common::{ibnet, words};
use std::collections::HashMap;

use ibnet::topology::summary::summarize;
use ibnet::topology::{builtin, PortRef, Topology};
use proptest::prelude::*;

fn topo(name: &str) -> Topology {
    builtin(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (hosts, switches, links, VLs) from the summary; also asserts that the
/// routing is complete and deadlock-free.
fn counts(name: &str) -> (usize, usize, usize, usize) {
    let s = summarize(&topo(name));
    assert!(s.routing_complete, "{name}: {:?}", s.unroutable);
    assert!(s.deadlock_free, "{name}: cycle {:?}", s.cycle);
    (s.hosts, s.switches, s.links, s.vls)
}

#[test]
fn node_and_link_counts() {
    // kary:K:N: K^N hosts, N*K^(N-1) switches, K^N host cables plus
    // (N-1) levels of K^(N-1) switches with K up cables each
    assert_eq!(counts("kary:4:2"), (16, 8, 16 + 16, 1));
    assert_eq!(counts("kary:2:3"), (8, 12, 8 + 2 * 8, 1));
    assert_eq!(counts("kary:3:3"), (27, 27, 27 + 2 * 27, 1));
    // fattree2:HPL:L:S: HPL*L hosts, L+S switches, HPL*L + L*S cables
    assert_eq!(counts("fattree2:4:4:2"), (16, 6, 16 + 8, 1));
    assert_eq!(counts("fattree2:3:5:3"), (15, 8, 15 + 15, 1));
    // fattree3:HPL:LPP:APP:PODS: Al-Fares k=4 is 2:2:2:4: 16 hosts, 8
    // leaves + 8 aggs + 4 cores, 16 + 4*2*2 + 4*2*2 cables
    assert_eq!(counts("fattree3:2:2:2:4"), (16, 20, 48, 1));
    // fattree:hosts=16,radix=8 = fattree:8:4 (4 leaves x 4 hosts, 4 spines)
    assert_eq!(counts("fattree:hosts=16,radix=8"), (16, 8, 32, 1));
    assert_eq!(counts("fattree:hosts=37"), (54, 21, 54 + 3 * 18, 1));
    // torus: nsw*hps hosts, one + cable per switch and dimension
    assert_eq!(counts("torus:4x4"), (16, 16, 16 + 32, 4));
    assert_eq!(counts("torus:4x3x2:2"), (48, 24, 48 + 72, 2));
    assert_eq!(counts("torus:3x3"), (9, 9, 9 + 18, 1));
    assert_eq!(counts("torus:8"), (8, 8, 16, 2));
    // mesh: (n-1) cables per line of each dimension
    assert_eq!(counts("mesh:4x4"), (16, 16, 16 + 2 * 4 * 3, 1));
    assert_eq!(counts("mesh:2x3x2:3"), (36, 12, 36 + (6 + 8 + 6), 1));
    // dragonfly:A:P:H:G: G*A*P hosts, G*A routers, hosts + G*A(A-1)/2
    // local + one global cable per pair of groups (G = A*H+1)
    assert_eq!(counts("dragonfly:2:1:1"), (6, 6, 6 + 3 + 3, 2));
    assert_eq!(counts("dragonfly:4:2:2:9"), (72, 36, 72 + 54 + 36, 2));
    // G = 5 < A*H+1 = 9: m = floor(8/4) = 2 cables per pair of groups
    assert_eq!(counts("dragonfly:4:2:2:5"), (40, 20, 40 + 30 + 2 * 10, 2));
    // balanced dragonfly:1 = 2:1:1 with G = 3
    assert_eq!(counts("dragonfly:1"), counts("dragonfly:2:1:1"));
}

/// (node names, output ports) of the route, and its SL.
fn route(t: &Topology, src: &str, dst: &str) -> (Vec<String>, Vec<u16>, u8) {
    let s = t.node_by_name(src).unwrap();
    let d = t.node_by_name(dst).unwrap();
    let p = t.path(s, d).unwrap();
    let sl = t.route_sl(t.lid_of_hca(s).unwrap(), t.lid_of_hca(d).unwrap());
    (
        p.iter().map(|x| t.nodes[x.node].name.clone()).collect(),
        p.iter().map(|x| x.port).collect(),
        sl,
    )
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn hand_derived_routes() {
    // kary:4:2, H_1 -> H_16 (index 15, leaf 3): sw0_0 goes up through
    // port K + (15 mod 4) = 7 to sw1_3 (down port 0); sw1_3 goes down its
    // port 3 to sw0_3, which delivers on port 15 mod 4 = 3.
    let t = topo("kary:4:2");
    assert_eq!(
        route(&t, "H_1", "H_16"),
        (
            names(&["H_1", "sw0_0", "sw1_3", "sw0_3"]),
            vec![0, 7, 3, 3],
            0
        )
    );
    // kary:2:3, H_1 -> H_8 (index 7): leaf up port 2 + (7 mod 2) = 3 to
    // sw1_1; up port 2 + (7/2 mod 2) = 3 to sw2_3; down port w_1 = 1 to
    // sw1_3; down port 1 to leaf sw0_3; host port 1.
    let t = topo("kary:2:3");
    assert_eq!(
        route(&t, "H_1", "H_8"),
        (
            names(&["H_1", "sw0_0", "sw1_1", "sw2_3", "sw1_3", "sw0_3"]),
            vec![0, 3, 3, 1, 1, 1],
            0
        )
    );
    // fattree2:4:4:2, H_1 -> H_16: spine 15 mod 2 = 1 (leaf port 4+1),
    // spine_1 port 3 to leaf_3, host port 3.
    let t = topo("fattree2:4:4:2");
    assert_eq!(
        route(&t, "H_1", "H_16"),
        (
            names(&["H_1", "leaf_0", "spine_1", "leaf_3"]),
            vec![0, 5, 3, 3],
            0
        )
    );
    // fattree3:2:2:2:4, H_1 -> H_16 (index 15, pod 3, leaf 1, port 1):
    // leaf_0_0 up to agg 15 mod 2 = 1 (port 2+1); agg_0_1 up to core
    // 7 mod 2 = 1 (port 2+1); core_1_1 down port 3 (pod 3); agg_3_1 down
    // port 1 (leaf 1); leaf_3_1 host port 1.
    let t = topo("fattree3:2:2:2:4");
    assert_eq!(
        route(&t, "H_1", "H_16"),
        (
            names(&["H_1", "leaf_0_0", "agg_0_1", "core_1_1", "agg_3_1", "leaf_3_1"]),
            vec![0, 3, 3, 3, 1, 1],
            0
        )
    );
    // torus:4x4 (ports: 0 host, 1 +x, 2 -x, 3 +y, 4 -y). H_1 (0,0) -> H_11
    // (switch 10 = (2,2)): x first, 2 is a tie so +, then y +; no wrap: SL 0.
    let t = topo("torus:4x4");
    assert_eq!(
        route(&t, "H_1", "H_11"),
        (
            names(&["H_1", "sw_0_0", "sw_1_0", "sw_2_0", "sw_2_1", "sw_2_2"]),
            vec![0, 1, 1, 3, 3, 0],
            0
        )
    );
    // H_4 (3,0) -> H_1 (0,0): one hop + over the x wrap-around: SL bit 0
    assert_eq!(
        route(&t, "H_4", "H_1"),
        (names(&["H_4", "sw_3_0", "sw_0_0"]), vec![0, 1, 0], 1)
    );
    // H_16 (3,3) -> H_1: wraps in x and in y: SL 3
    assert_eq!(route(&t, "H_16", "H_1").2, 3);
    // H_2 (1,0) -> H_4 (3,0): distance 2, + without wrap: SL 0
    assert_eq!(route(&t, "H_2", "H_4").2, 0);
    // mesh:4x4, H_4 (3,0) -> H_1: three hops -x (port 2)
    let t = topo("mesh:4x4");
    assert_eq!(
        route(&t, "H_4", "H_1"),
        (
            names(&["H_4", "sw_3_0", "sw_2_0", "sw_1_0", "sw_0_0"]),
            vec![0, 2, 2, 2, 0],
            0
        )
    );
    // dragonfly:2:1:1 (G = 3; ports 0 host, 1 local, 2 global). Group 0's
    // global port k=1 (router 1) goes to group 0+2, arriving on its port
    // (3-2-1) = 0 (router 0). H_1 (g0r0) -> H_5 (g2r0): local, global,
    // host. SL 0 (group 0 < 2); back H_5 -> H_1: g2r0's port k=0 goes to
    // group 0 port 1 (g0r1), then local: SL 1 (group 2 > 0).
    let t = topo("dragonfly:2:1:1");
    assert_eq!(
        route(&t, "H_1", "H_5"),
        (
            names(&["H_1", "g0_r0", "g0_r1", "g2_r0"]),
            vec![0, 1, 2, 0],
            0
        )
    );
    assert_eq!(
        route(&t, "H_5", "H_1"),
        (
            names(&["H_5", "g2_r0", "g0_r1", "g0_r0"]),
            vec![0, 2, 1, 0],
            1
        )
    );
    // the fixed built-ins keep their names and up/down tables
    let t = topo("fattree:8:2");
    assert_eq!(route(&t, "H_1", "H_5").1, vec![0, 5, 1, 0]);
}

/// Most routes of the permutation i -> i+k (HCA order) sharing one channel.
fn max_shift_load(t: &Topology, k: usize) -> usize {
    let h = t.hcas();
    let r = t.router();
    let mut load: HashMap<PortRef, usize> = HashMap::new();
    for i in 0..h.len() {
        for p in r.path(h[i], h[(i + k) % h.len()]).unwrap() {
            *load.entry(p).or_default() += 1;
        }
    }
    load.into_values().max().unwrap()
}

#[test]
fn ftree_shift_is_contention_free() {
    for name in [
        "fattree:8,routing=ftree",
        "kary:4:2",
        "kary:2:4",
        "kary:3:3",
        "fattree3:2:2:2:4",
        "fattree2:4:8:4",
    ] {
        let t = topo(name);
        for k in 1..t.hcas().len() {
            assert_eq!(max_shift_load(&t, k), 1, "{name} shift {k}");
        }
    }
    // min-hop on the same tree puts a leaf's up-traffic on one port
    assert!(max_shift_load(&topo("fattree:8,routing=minhop"), 4) > 1);
}

#[test]
fn summary_vls_and_cycles() {
    let o = ibnet(&["topology", "--summary", "--topology", "torus:4x4", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deadlock_free"], true);
    assert_eq!(v["vls"], 4);
    // the same torus on one VL: the x ring of row 0 or another ring closes
    let o = ibnet(&words(
        "topology --summary --topology torus:4x4,vls=one --json",
    ));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deadlock_free"], false);
    assert_eq!(v["vls"], 1);
    let cycle: Vec<String> = serde_json::from_value(v["cycle"].clone()).unwrap();
    assert_eq!(cycle.len(), 4, "{cycle:?}"); // one ring of 4 channels
    let o = ibnet(&["topology", "--summary", "--topology", "torus:4x4,vls=one"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("deadlock-free: NO, channel dependency cycle: sw_"),
        "{out}"
    );
    // routes print the SL
    let o = ibnet(&["routes", "--topology", "torus:4x4", "H_16", "H_1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("SL 3"), "{out}");
    // the by-host-count form says what it picked
    let o = ibnet(&[
        "topology",
        "--summary",
        "--topology",
        "fattree:hosts=16,radix=8",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is fattree:8:4"));
}

fn run(args: &[&str]) -> (i32, String) {
    let o = ibnet(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

#[test]
fn saturated_torus_completes_with_dateline_and_deadlocks_without() {
    // ring of 8, dissemination rounds 1, 2, 4: in round 3 every host sends
    // 16 KiB four hops +, which closes the ring on one VL
    let (code, out) = run(&words(
        "run --topology torus:8,vls=one --traffic dissemination:16384:3",
    ));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("deadlock"), "{out}");
    let (code, out) = run(&words(
        "run --topology torus:8 --set max_vl=1 --traffic dissemination:16384:3",
    ));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("8 ranks, 72 messages"), "{out}");
    // a 2-D torus at full load (shift, streaming) for 20 us: no fatal
    let (code, out) = run(&words(
        "run --topology torus:4x4 --set max_vl=3 --traffic shift:5 --until 20us",
    ));
    assert_eq!(code, 0, "{out}");
    // too few VLs, or a VL without arbitration weight: refused, exit 2
    let (code, out) = run(&["run", "--topology", "torus:4x4", "--traffic", "shift:1"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("needs 4 VLs") && out.contains("max_vl=3"),
        "{out}"
    );
    let (code, out) = run(&words(
        "run --topology torus:4x4x4 --set max_vl=7 --set total_buffer_size=4000 --traffic shift:1",
    ));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("VL 4") && out.contains("low_vl_arb_entries"),
        "{out}"
    );
}

#[test]
fn dragonfly_runs_complete() {
    for (t, vl) in [
        ("dragonfly:2:1:1", "1"),
        ("dragonfly:2:2:1", "1"),
        ("dragonfly:2:2:1,routing=valiant,seed=3", "3"),
    ] {
        let s = summarize(&topo(t));
        assert!(s.deadlock_free && s.routing_complete, "{t}");
        let (code, out) = run(&[
            "run",
            "--topology",
            t,
            "--set",
            &format!("max_vl={vl}"),
            "--traffic",
            "dissemination:16384:2",
        ]);
        assert_eq!(code, 0, "{t}: {out}");
        assert!(out.contains("last completion"), "{t}: {out}");
    }
}

#[test]
fn valiant_detours_through_a_seeded_intermediate_group() {
    let a = topo("dragonfly:4:2:2:9,routing=valiant,seed=7");
    let b = topo("dragonfly:4:2:2:9,routing=valiant,seed=7");
    assert_eq!(a, b);
    let min = summarize(&topo("dragonfly:4:2:2:9"));
    let val = summarize(&a);
    assert!(val.mean_links > min.mean_links);
    assert!(val.deadlock_free && val.routing_complete);
    assert_eq!(min.diameter_links, 5); // host, local, global, local, host
    assert_eq!(val.diameter_links, 7); // one more local and global
}

#[test]
fn bad_generator_names_exit_2() {
    for (name, want) in [
        ("torus:4x0", "each dimension must be in 2..=64"),
        ("torus:", "expected torus:N0xN1x"),
        ("mesh:4x4:0", "HPS (hosts per switch) must be in"),
        ("torus:4x4x4x4", "needs 2^4 = 16 VLs"),
        ("torus:4x4,vls=two", "vls=two"),
        ("torus:4x4,foo=1", "unknown option \"foo\""),
        ("kary:1:3", "K (switch half-radix) must be in 2..=127"),
        ("kary:4", "expected kary:K:N"),
        ("kary:16:4", "at most 16384"),
        ("fattree2:4:4", "expected fattree2:HPL:LEAVES:SPINES"),
        ("fattree3:2:2:2:x", "PODS must be a whole number"),
        ("fattree:hosts=1000", "at most 36 leaves"),
        ("fattree:hosts=16,radix=7", "must be even"),
        ("dragonfly:4:2:2:10", "G (groups) must be in 1..=9"),
        (
            "dragonfly:4:2:2:9,routing=ugal",
            "expected minimal or valiant",
        ),
        ("fattree:8,routing=dor", "routing=dor is not available"),
        ("fattree:8,routing", "is not key=value"),
    ] {
        let o = ibnet(&["topology", "--summary", "--topology", name]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(
            err.contains(name.split(',').next().unwrap()),
            "{name}: {err}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Every generator with small random parameters routes every pair and
    /// is deadlock-free per the channel dependency graph of each VL.
    #[test]
    fn generators_route_completely_without_deadlock(
        kind in 0usize..7,
        a in 1usize..5,
        b in 1usize..5,
        c in 1usize..4,
        d in 2usize..6,
        valiant in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let name = match kind {
            0 => format!("kary:{}:{}", a + 1, c),
            1 => format!("fattree2:{a}:{b}:{c}"),
            2 => format!("fattree3:{a}:{b}:{c}:{d}"),
            3 => format!("torus:{}x{}:{c}", d, a + 1),
            4 => format!("mesh:{}x{}x{}", d, a + 1, b + 1),
            5 => format!("torus:{}x{}x{}", d, a + 1, c + 1),
            _ => format!(
                "dragonfly:{a}:{c}:{b}:{}{}",
                (d % (a * b + 1)) + 1,
                if valiant { format!(",routing=valiant,seed={seed}") } else { String::new() }
            ),
        };
        let t = builtin(&name).unwrap();
        let s = summarize(&t);
        prop_assert!(s.routing_complete, "{}: {:?}", name, s.unroutable);
        prop_assert!(s.deadlock_free, "{}: {:?}", name, s.cycle);
        prop_assert!(s.vls <= 8);
    }
}

/// Flits consumed by a streaming run of uniform random traffic (every host
/// draws each message's destination uniformly among the others; seq_rand
/// over a generated destination file) up to `until`.
fn uniform_consumed(topo_args: &[&str], hosts: usize, until: &str) -> u64 {
    let dir = std::env::temp_dir().join(format!("gen-uniform-{}-{hosts}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let seq = dir.join("u.dstSeq");
    let mut v = String::new();
    let mut ini = String::new();
    for i in 0..hosts {
        let others: Vec<String> = (1..=hosts)
            .filter(|&j| j != i + 1)
            .map(|j| j.to_string())
            .collect();
        v += &format!("{i}: {}\n", others.join(" "));
        ini += &format!("**H_{}.gen.dstSeqIndex = {i}\n", i + 1);
    }
    std::fs::write(&seq, v).unwrap();
    std::fs::write(dir.join("u.dstSeq.ini"), ini).unwrap();
    let traffic = format!("seq_rand:{}", seq.display());
    let mut args = vec!["run"];
    args.extend_from_slice(topo_args);
    args.extend_from_slice(&[
        "--set",
        "msg_length=4096",
        "--traffic",
        &traffic,
        "--until",
        until,
    ]);
    let (code, out) = run(&args);
    assert_eq!(code, 0, "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("flits generated"))
        .unwrap_or_else(|| panic!("{out}"));
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

#[test]
fn uniform_random_at_full_load_keeps_flowing() {
    // Saturated uniform random traffic on a dateline torus and a
    // dragonfly: the second 40 us deliver about as much as the first (a
    // deadlock would stop delivery; the streaming run has no end to wait
    // for).
    for (args, hosts) in [
        (&["--topology", "torus:4x4", "--set", "max_vl=3"][..], 16),
        (
            &["--topology", "dragonfly:2:2:1", "--set", "max_vl=1"][..],
            12,
        ),
    ] {
        let a = uniform_consumed(args, hosts, "40us");
        let b = uniform_consumed(args, hosts, "80us");
        assert!(a > 1000, "{args:?}: {a}");
        assert!(b - a > a / 2, "{args:?}: {a} then {b}");
    }
}

#[test]
fn ftree_from_a_toml_file() {
    use ibnet::topology::{load_toml_str, to_toml_routed, Routing};
    // the cabling of fattree:8 written with routing = "ftree" loads to the
    // same tables as the generator option
    let t = topo("fattree:8");
    let text = to_toml_routed(&t, Routing::Ftree);
    assert!(text.contains("routing = \"ftree\""));
    let u = load_toml_str(&text, std::path::Path::new("f8.toml")).unwrap();
    let v = topo("fattree:8,routing=ftree");
    assert_eq!(u.nodes, v.nodes);
    assert_ne!(u.nodes, t.nodes); // ftree differs from up/down (LID vs index)
                                  // a ring is not a fat tree
    let ring = "nodes = [{ hca = \"H_1\", lid = 1 }, { hca = \"H_2\", lid = 2 }, \
        { hca = \"H_3\", lid = 3 }, { switch = \"A\", ports = 3 }, { switch = \"B\", ports = 3 }, \
        { switch = \"C\", ports = 3 }]\n\
        links = [\"H_1:0 <-> A:0\", \"H_2:0 <-> B:0\", \"H_3:0 <-> C:0\", \"A:1 <-> B:2\", \
        \"B:1 <-> C:2\", \"C:1 <-> A:2\"]\nrouting = \"ftree\"\n";
    let e = load_toml_str(ring, std::path::Path::new("ring.toml")).unwrap_err();
    assert!(e.to_string().contains("ring.toml"), "{e}");
    assert!(e.to_string().contains("not a fat tree"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// Generator names from small random pieces: an answer (topology or
    /// error), never a panic; every error names the input.
    #[test]
    fn generator_names_never_panic(
        kind in prop::sample::select(vec![
            "kary", "fattree2", "fattree3", "fattree", "torus", "mesh", "dragonfly", "H8_S6",
        ]),
        body in "[0-5x:=a-z,]{0,9}",
    ) {
        let name = format!("{kind}:{body}");
        if let Err(e) = builtin(&name) {
            let msg = e.to_string();
            prop_assert!(msg.contains(kind), "{}: {}", name, msg);
        }
    }
}
