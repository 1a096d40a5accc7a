//! Structure rules of the ibnet crate that the compiler does not check.
//!
//! - The engine is sans-I/O and depends on no IPC code: no source file of
//!   the crate outside `src/server/` names `ipc_proto`, and the dependency
//!   on ipc-proto is optional (feature `server`), so
//!   `cargo build -p ibnet --no-default-features` builds the engine, the
//!   topologies and `ibnet run` without it.
//! - The engine keeps one module per component of the model.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_ipc_outside_the_server() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "{} source files found", files.len());
    let server = src.join("server");
    let mut offenders = Vec::new();
    for f in &files {
        if f.starts_with(&server) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        if text.contains("ipc_proto") {
            offenders.push(f.display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "these files outside src/server use ipc_proto: {offenders:?}"
    );
    let toml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let dep = toml
        .lines()
        .find(|l| l.trim_start().starts_with("ipc-proto"))
        .expect("ipc-proto dependency line");
    assert!(dep.contains("optional = true"), "{dep}");
    assert!(toml.contains("server = [\"dep:ipc-proto\"]"));
}

#[test]
fn one_module_per_component() {
    let eng = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    for m in [
        "app", "gen", "vlarb", "obuf", "ibuf", "sink", "cc", "dispatch", "queue", "wheel", "flits",
        "report", "build", "run", "fabric",
    ] {
        let p = eng.join(format!("{m}.rs"));
        assert!(p.exists(), "{} missing", p.display());
    }
    // the dispatch stays short: one arm per event kind
    let d = std::fs::read_to_string(eng.join("dispatch.rs")).unwrap();
    let body = &d[d.find("match ev {").expect("dispatch match")..];
    let body = &body[..body.find("\n        }\n").unwrap()];
    assert!(body.lines().count() < 40, "{} lines", body.lines().count());
}
