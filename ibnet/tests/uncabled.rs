//! A switch that no cable reaches carries no traffic and changes no result:
//! it is a mistake in the topology (a lost link section, a misspelt name).
//! Every loader (TOML, IBDM .topo, NED, ibnetdiscover) refuses it with the
//! file and line that declare the switch; `ibnet run` and `ibnet topology
//! --summary` exit 2. Also: errors name the topology's path once.

mod common;
use common::ibnet;
use std::path::Path;

use ibnet::topology;

const WHY: &str = "has no cables: nothing connects it to the network (a missing link section \
                   or a misspelt name?); remove it or cable it";

fn load_err(p: &Path) -> String {
    topology::load(p).unwrap_err().to_string()
}

const TOML: &str = r#"name = "iso"
nodes = [
  { hca = "H_1", lid = 1 },
  { hca = "H_2", lid = 2 },
  { switch = "SW_1", ports = 4 },
  { switch = "SW_2", ports = 4 },
]
links = ["H_1:0 <-> SW_1:0", "H_2:0 <-> SW_1:1"]
"#;

/// `text` in a file `name` of a fresh directory (removed with the
/// returned guard).
fn written(name: &str, text: impl AsRef<[u8]>) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    std::fs::write(&p, text).unwrap();
    (d, p)
}

#[test]
fn toml_switch_without_cables_is_refused_with_its_line() {
    let (_d, p) = written("iso.toml", TOML);
    assert_eq!(
        load_err(&p),
        format!("{}:6:3: switch SW_2 {WHY}", p.display())
    );
    // cabled to the other switch: accepted
    std::fs::write(
        &p,
        TOML.replace(
            r#""H_2:0 <-> SW_1:1"]"#,
            r#""H_2:0 <-> SW_1:1", "SW_1:2 <-> SW_2:0"]"#,
        ),
    )
    .unwrap();
    topology::load(&p).expect("a cabled switch is fine");
}

#[test]
fn ned_switch_without_cables_is_refused_with_its_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("iso.ned");
    std::fs::write(
        &p,
        "network x\n{\n submodules:\n  H_1: HCA { parameters: srcLid = 1; }\n  \
         H_2: HCA { parameters: srcLid = 2; }\n  S: Switch { parameters: numSwitchPorts = 2; }\n  \
         T: Switch { parameters: numSwitchPorts = 2; }\n connections:\n  H_1.port <--> S.port[0];\n  \
         H_2.port <--> S.port[1];\n}\n",
    )
    .unwrap();
    assert_eq!(load_err(&p), format!("{}:7: switch T {WHY}", p.display()));
}

#[test]
fn ibdm_switch_without_cables_is_refused_with_its_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("iso.hcas"), "H-1/U1/1 1\nH-2/U1/1 2\n").unwrap();
    let p = d.path().join("iso.topo");
    std::fs::write(
        &p,
        "MTS3600 L\n   P1 -> Cougar H-1 P1\n   P2 -> Cougar H-2 P1\n\nMTS3600 Z\n",
    )
    .unwrap();
    assert_eq!(
        load_err(&p),
        format!("{}:5: switch Z_U1 {WHY}", p.display())
    );
}

#[test]
fn ibnetdiscover_switch_without_cables_is_refused_with_its_line() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cluster8.ibnetdiscover");
    let mut text = std::fs::read_to_string(data).unwrap();
    let line = text.lines().count() + 6;
    text.push_str(
        "\nvendid=0x2c9\ndevid=0xc738\nsysimgguid=0x2c90200400009\n\
         switchguid=0x2c90200400009(2c90200400009)\n\
         Switch\t36 \"S-0002c90200400009\"\t\t# \"MF0;lonely:SX6036/U1\" enhanced port 0 lid 11 lmc 0\n",
    );
    let (_d, p) = written("iso.ibnd", text);
    assert_eq!(
        load_err(&p),
        format!("{}:{line}: switch MF0;lonely:SX6036/U1 {WHY}", p.display())
    );
}

/// The command line: `ibnet topology --summary` and `ibnet run` refuse it
/// (exit 2), and name the file once.
#[test]
fn summary_and_run_refuse_an_uncabled_switch() {
    let (_d, p) = written("iso.toml", TOML);
    let want = format!("ibnet: error: {}:6:3: switch SW_2 {WHY}\n", p.display());
    let path = p.to_str().unwrap();
    let o = ibnet(&["topology", "--topology", path, "--summary"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), want);
    let run = ["run", "--topology", path];
    let o = ibnet(&[&run[..], &["--traffic", "shift:1", "--until", "1us"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), want);
}

/// Errors named the path twice: `topology X: X:2:1: ...`.
#[test]
fn topology_errors_name_the_path_once() {
    let (_d, p) = written("bad.toml", "garbage = [\n");
    let o = ibnet(&["topology", "--topology", p.to_str().unwrap(), "--summary"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "ibnet: error: {}:2:1: invalid array: expected `]`\n",
            p.display()
        )
    );
    // a problem that does not name the file gets it in front, once
    let e = topology::open_error("x.toml", &topology::TopoError::Routing("no spine".into()));
    assert_eq!(e, "topology x.toml: routing: no spine");
}
