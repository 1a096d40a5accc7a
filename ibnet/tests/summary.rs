//! `ibnet routes` and `ibnet topology --summary` (docs/topology.md): hand-derived
//! routes, counts and diameters, a ring whose clockwise routing has a
//! channel-dependency cycle (not deadlock-free), and an incomplete routing.

mod common;
use common::ibnet;

fn json(args: &[&str]) -> serde_json::Value {
    let o = ibnet(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `ibnet topology --summary --json` of a built-in name or a file.
fn summary(topology: &str) -> serde_json::Value {
    json(&["topology", "--summary", "--topology", topology, "--json"])
}

/// Four switches in a ring, one host each, every route clockwise.
/// The ring in a file of its own per call: the tests run in parallel
/// threads of one process, and a pid-named file could be truncated by one
/// test's write while another's ibnet read it.
fn ring(unroutable: bool) -> tempfile::TempPath {
    let p = tempfile::Builder::new()
        .prefix("ring-")
        .suffix(".toml")
        .tempfile()
        .unwrap()
        .into_temp_path();
    let s1 = if unroutable {
        "[255, 0, 1, 255, 1]"
    } else {
        "[255, 0, 1, 1, 1]"
    };
    std::fs::write(
        &p,
        format!(
            r#"name = "ring4"
allow_unroutable = {unroutable}
nodes = [
  {{ hca = "H_1", lid = 1 }}, {{ hca = "H_2", lid = 2 }},
  {{ hca = "H_3", lid = 3 }}, {{ hca = "H_4", lid = 4 }},
  {{ switch = "S1", ports = 3 }}, {{ switch = "S2", ports = 3 }},
  {{ switch = "S3", ports = 3 }}, {{ switch = "S4", ports = 3 }},
]
links = [
  "H_1:0 <-> S1:0", "H_2:0 <-> S2:0", "H_3:0 <-> S3:0", "H_4:0 <-> S4:0",
  "S1:1 <-> S2:2", "S2:1 <-> S3:2", "S3:1 <-> S4:2", "S4:1 <-> S1:2",
]
[fdb]
"S1" = {s1}
"S2" = [255, 1, 0, 1, 1]
"S3" = [255, 1, 1, 0, 1]
"S4" = [255, 1, 1, 1, 0]
"#
        ),
    )
    .unwrap();
    p
}

#[test]
fn routes_are_the_hand_derived_paths() {
    // H8_S1: one switch
    let v = json(&["routes", "--topology", "H8_S1", "H_1", "H_2", "--json"]);
    assert_eq!(v["links"], 2);
    assert_eq!(v["switches"], 1);
    assert_eq!(v["hops"][0]["node"], "H_1");
    assert_eq!(v["hops"][1]["peer"], "H_2");
    // ranks work as well as names; ring: H_1 -> H_4 goes clockwise over
    // S1, S2, S3, S4 (3 inter-switch links + 2 host links)
    let r = ring(false);
    let ring4 = r.to_str().unwrap();
    let v = json(&["routes", "--topology", ring4, "0", "3", "--json"]);
    assert_eq!(v["links"], 5);
    let nodes: Vec<&str> = v["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["H_1", "S1", "S2", "S3", "S4"]);
    assert_eq!(v["hops"][1]["port"], 1);
    // text form
    let o = ibnet(&["routes", "--topology", "fattree:16", "H_1", "H_100"]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.starts_with("route H_1 -> H_100: 4 links, 3 switches"),
        "{t}"
    );
}

#[test]
fn summaries_count_and_check_the_routing() {
    let v = summary("H8_S6");
    assert_eq!(
        (
            v["hosts"].as_u64(),
            v["switches"].as_u64(),
            v["links"].as_u64()
        ),
        (Some(8), Some(6), Some(16))
    );
    assert_eq!(v["diameter_links"], 4);
    assert_eq!(v["routing_complete"], true);
    assert_eq!(v["deadlock_free"], true);
    let v = summary("M9");
    assert_eq!(
        (v["hosts"].as_u64(), v["switches"].as_u64()),
        (Some(648), Some(54))
    );
    assert_eq!(v["links"], 1296);
    assert_eq!(v["deadlock_free"], true);

    // the clockwise ring has the cycle S1[1] -> S2[1] -> S3[1] -> S4[1]
    let r = ring(false);
    let v = summary(r.to_str().unwrap());
    assert_eq!(v["routing_complete"], true);
    assert_eq!(v["deadlock_free"], false);
    let mut c: Vec<String> = v["cycle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    c.sort();
    assert_eq!(c, ["S1[1]", "S2[1]", "S3[1]", "S4[1]"]);
    // diameter: H_1 -> H_4 crosses 4 switches, 5 links
    assert_eq!(v["diameter_links"], 5);

    // S1 has no route to LID 3: two pairs (H_1 and H_4 reach H_3 via S1)
    let r = ring(true);
    let v = summary(r.to_str().unwrap());
    assert_eq!(v["routing_complete"], false);
    assert_eq!(v["unroutable_pairs"], 2);
    let o = ibnet(&["routes", "--topology", r.to_str().unwrap(), "H_1", "H_3"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no route from H_1 to H_3"));
}

#[test]
fn bad_hosts_are_clear_errors() {
    for (a, b, msg) in [
        ("H_1", "H_99", "no host named 'H_99'"),
        ("H_1", "leaf_0", "is a switch"),
        ("0", "64", "rank 64 is not mapped"),
        ("H_1", "H_1", "the same host"),
    ] {
        let o = ibnet(&["routes", "--topology", "H8_S6", a, b]);
        assert_eq!(o.status.code(), Some(2), "{a} {b}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(msg),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = ibnet(&["topology", "--topology", "H8_S6"]);
    assert_eq!(o.status.code(), Some(2));
}
