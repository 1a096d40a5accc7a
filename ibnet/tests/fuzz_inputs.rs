//! Bounded fuzz tests of every ibnet reader: topology TOML,
//! IBDM `.topo`/`.hcas`/`.fdbs`/`.fdbs.ini`, parameter files (presets,
//! `--config`) and `--set`, destination sequences (`.dstSeq` + `.ini`),
//! rank files and the vector/index file parsers. Seeds are the shipped files and the
//! reference's 32-node data (read from ../shared); each case applies random
//! mutations (byte flips, inserted bytes including invalid UTF-8, deleted
//! ranges, extreme numbers, duplicated/dropped/swapped lines).
//!
//! Asserted for every case: no panic, bounded time (a watchdog thread), and
//! a rejection is an error whose message names the file. Through the binary
//! (fewer cases, a process each): exit 0 or 2, never a panic or a signal,
//! and on exit 2 a message naming the file (or the `--set` key).
//!
//! Case counts (library + binary): about 5,000 in a few seconds;
//! `IBNET_FUZZ_SCALE=N` multiplies them for a longer search.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ibnet::topology::{self, vecfile};
use ibnet::{Fabric, Params};
use proptest::prelude::*;

const SHARED: &str = concat!(env!("IBCOSIM_REFERENCE_DATA_DIR"), "/ibmodel-32n");
const CONFIGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs");

fn shared(name: &str) -> PathBuf {
    common::reference_file(SHARED, name, "the fuzz seeds need")
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Run `f` on a worker thread; fail if it panics or takes longer than
/// `limit` (a hang is reported instead of hanging the suite).
fn bounded<T: Send + 'static>(
    limit: Duration,
    what: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("PANIC on {what}: {msg}")
        }
        Err(_) => panic!("no answer within {limit:?} (hang?) on {what}"),
    }
}

// ---------------------------------------------------------------- mutations

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "1e17",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "65535",
    "65536",
    "255",
    "256",
    "nan",
    "inf",
    "0.0004",
    "-0",
    "1e-300",
    "99999999999999999999999999",
    "",
    "x",
];

#[derive(Clone, Debug)]
enum Mut {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Number(usize, usize),
    DupLine(usize),
    DropLine(usize),
    SwapLines(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mut> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mut::Flip(p, b)),
        (
            any::<usize>(),
            prop::collection::vec(
                prop_oneof![
                    any::<u8>(),
                    Just(0xff),
                    Just(b'\n'),
                    Just(b':'),
                    Just(b'='),
                    Just(b'[')
                ],
                1..6
            )
        )
            .prop_map(|(p, v)| Mut::Insert(p, v)),
        (any::<usize>(), 1usize..40).prop_map(|(p, n)| Mut::Delete(p, n)),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(p, e)| Mut::Number(p, e)),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(p, e)| Mut::Number(p, e)),
        any::<usize>().prop_map(Mut::DupLine),
        any::<usize>().prop_map(Mut::DropLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mut::SwapLines(a, b)),
        any::<usize>().prop_map(Mut::Truncate),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mut>> {
    prop::collection::vec(mutation(), 1..5)
}

fn lines(t: &[u8]) -> Vec<Vec<u8>> {
    t.split(|&b| b == b'\n').map(|l| l.to_vec()).collect()
}

fn apply(seed: &[u8], muts: &[Mut]) -> Vec<u8> {
    let mut t = seed.to_vec();
    for m in muts {
        let n = t.len().max(1);
        match m {
            Mut::Flip(p, b) => {
                if !t.is_empty() {
                    t[p % n] = *b;
                }
            }
            Mut::Insert(p, v) => {
                let at = p % (t.len() + 1);
                t.splice(at..at, v.iter().copied());
            }
            Mut::Delete(p, k) => {
                if !t.is_empty() {
                    let a = p % n;
                    let b = (a + k).min(t.len());
                    t.drain(a..b);
                }
            }
            Mut::Number(p, e) => {
                // replace the p-th run of digits
                let mut runs = Vec::new();
                let mut i = 0;
                while i < t.len() {
                    if t[i].is_ascii_digit() {
                        let s = i;
                        while i < t.len() && (t[i].is_ascii_digit() || t[i] == b'.') {
                            i += 1;
                        }
                        runs.push((s, i));
                    } else {
                        i += 1;
                    }
                }
                if !runs.is_empty() {
                    let (a, b) = runs[p % runs.len()];
                    t.splice(a..b, EXTREMES[*e].bytes());
                }
            }
            Mut::DupLine(p) | Mut::DropLine(p) => {
                let mut ls = lines(&t);
                let i = p % ls.len();
                if matches!(m, Mut::DupLine(_)) {
                    let l = ls[i].clone();
                    ls.insert(i, l);
                } else {
                    ls.remove(i);
                }
                t = ls.join(&b'\n');
            }
            Mut::SwapLines(a, b) => {
                let mut ls = lines(&t);
                let k = ls.len();
                ls.swap(a % k, b % k);
                t = ls.join(&b'\n');
            }
            Mut::Truncate(p) => {
                let k = p % (t.len() + 1);
                t.truncate(k);
            }
        }
    }
    t
}

/// Case count times `IBNET_FUZZ_SCALE` (default 1) for longer runs.
fn scaled(n: u32) -> u32 {
    n * std::env::var("IBNET_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

const LIMIT: Duration = Duration::from_secs(20);

/// A loaded topology must also build a fabric (or give a config error)
/// without panicking.
fn build_fabric(t: &topology::Topology) {
    let _ = Fabric::new(t, &Params::qdr());
}

/// `load` in a [`bounded`] thread; a topology it loads must also build a
/// fabric. The error's text if it rejects the input.
fn load_bounded<E: ToString>(
    what: String,
    load: impl FnOnce() -> Result<topology::Topology, E> + Send + 'static,
) -> Result<(), String> {
    bounded(LIMIT, what, move || {
        let r = load();
        if let Ok(t) = &r {
            build_fabric(t)
        }
        r.map(|_| ()).map_err(|e| e.to_string())
    })
}

/// The files `seeds` written into `dir` under their own names, the one at
/// `which` mutated by `muts`.
fn write_mutated(dir: &Path, seeds: &[PathBuf], which: usize, muts: &[Mut]) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (i, seed) in seeds.iter().enumerate() {
        let mut t = read(seed);
        if i == which {
            t = apply(&t, muts);
        }
        let p = dir.join(seed.file_name().unwrap());
        std::fs::write(&p, &t).unwrap();
        paths.push(p);
    }
    paths
}

fn assert_names<P: AsRef<Path>>(msg: &str, files: &[P]) {
    assert!(
        files
            .iter()
            .any(|f| msg.contains(&*f.as_ref().file_name().unwrap().to_string_lossy())),
        "the error does not name the file ({:?}): {msg}",
        files
            .iter()
            .map(|f| f.as_ref().display().to_string())
            .collect::<Vec<_>>()
    );
    assert!(!msg.trim().is_empty());
}

/// A file an `[ibdm]` table names that is a directory (a case the TOML fuzz
/// found: a mutated path `../../shared/data`): the error names the TOML file
/// and the table, not only the directory.
#[test]
fn import_of_a_directory_names_the_toml_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    {
        let f = dir.path().join("dir.toml");
        std::fs::write(
            &f,
            "name = \"x\"\n[ibdm]\ntopo = \"data\"\nhcas = \"data\"\n",
        )
        .unwrap();
        let e = topology::load(&f).unwrap_err().to_string();
        assert_names(&e, &[&f]);
        assert!(e.contains("[ibdm]") && e.contains("is a directory"), "{e}");
    }
}

// ------------------------------------------------------------ library fuzz

fn toml_seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = ["H8_S1.toml", "H8_S2.toml", "ibmodel-32n.toml"]
        .iter()
        .map(|f| read(&Path::new(CONFIGS).join("topologies").join(f)))
        .collect();
    // the [ibdm] seed's paths are relative to configs/topologies: make them absolute
    let abs = shared("is1_3l_32n.topo")
        .parent()
        .unwrap()
        .display()
        .to_string();
    v[2] = String::from_utf8(v[2].clone())
        .unwrap()
        .replace("../../../shared/data/ibmodel-32n", &abs)
        .into_bytes();
    v.push(topology::to_toml(&topology::builtin("chain:3").unwrap()).into_bytes());
    v.push(topology::to_toml(&topology::builtin("H8_S4").unwrap()).into_bytes());
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(1000), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn topology_toml_never_panics(seed in 0usize..5, muts in mutations()) {
        let seeds = toml_seeds();
        let text = apply(&seeds[seed], &muts);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fuzz.toml");
        std::fs::write(&f, &text).unwrap();
        // the ibmodel-32n.toml seed points at ../shared: keep its relative paths valid
        let f2 = f.clone();
        let shared_dir = Path::new(CONFIGS).join("topologies");
        let r = load_bounded(format!("{:?}", String::from_utf8_lossy(&text)), move || {
            topology::load(&f2)
        });
        if let Err(e) = r {
            // errors in files the TOML points at name those files
            if !e.contains("is1_3l_32n") && !e.contains(".hcas") {
                assert_names(&e, &[&f]);
            }
        }
        let _ = shared_dir;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(800), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn ibdm_files_never_panic(which in 0usize..4, muts in mutations()) {
        let names = ["is1_3l_32n.topo", "ftree.hcas", "is1_3l_32n.fdbs", "is1_3l_32n.fdbs.ini"];
        let dir = tempfile::tempdir().unwrap();
        let seeds: Vec<PathBuf> = names.iter().map(|n| shared(n)).collect();
        let paths = write_mutated(dir.path(), &seeds, which, &muts);
        let ps = paths.clone();
        let r = load_bounded(format!("{} {muts:?}", names[which]), move || {
            topology::load_ibdm(&ps[0], &ps[1], Some(&ps[2]), Some(&ps[3]))
        });
        if let Err(e) = r {
            assert_names(&e, &paths);
        }
    }

    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn dstseq_files_never_panic(ini in any::<bool>(), muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("32n_1hot.dstSeq");
        let i = dir.path().join("32n_1hot.dstSeq.ini");
        let mut dt = read(&shared("32n_1hot.dstSeq"));
        let mut it = read(&shared("32n_1hot.dstSeq.ini"));
        if ini { it = apply(&it, &muts) } else { dt = apply(&dt, &muts) }
        std::fs::write(&d, &dt).unwrap();
        std::fs::write(&i, &it).unwrap();
        let (d2, i2) = (d.clone(), i.clone());
        let r = bounded(LIMIT, format!("ini={ini} {muts:?}"), move || {
            let topo = topology::builtin("fattree:8").unwrap();
            topology::load_dst_seq(&d2, &i2)
                .and_then(|s| s.resolve(&topo))
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        if let Err(e) = r {
            assert_names(&e, &[&d, &i]);
        }
    }
}

fn preset_seeds() -> Vec<String> {
    ibnet::params::PRESETS
        .iter()
        .map(|n| {
            std::fs::read_to_string(Path::new(CONFIGS).join("presets").join(format!("{n}.toml")))
                .unwrap()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(1000), failure_persistence: None, ..ProptestConfig::default() })]

    /// Parameter files: a rejection names the file; an accepted file gives
    /// parameters that pass every check and build a fabric without a panic.
    #[test]
    fn parameter_files_never_panic(seed in 0usize..3, muts in mutations()) {
        let seeds = preset_seeds();
        let text = apply(seeds[seed].as_bytes(), &muts);
        let r = bounded(LIMIT, format!("{:?}", String::from_utf8_lossy(&text)), move || {
            let text = match ibnet::input::text_of(text) {
                Ok(t) => t,
                Err(e) => return Err(e.describe(Path::new("fuzz.toml"))),
            };
            let p = Params::qdr().apply_toml(&text, "fuzz.toml").map_err(|e| e.to_string())?;
            p.check().map_err(|e| format!("accepted by apply_toml but not by check: {e}")).unwrap();
            let _ = Fabric::new(&topology::builtin("H8_S1").unwrap(), &p);
            Ok(())
        });
        if let Err(e) = r {
            prop_assert!(e.contains("fuzz.toml"), "{}", e);
        }
    }

    /// `--set key=value` with random keys and values.
    #[test]
    fn set_overrides_never_panic(
        key in prop::sample::select((*ibnet::params::PARAM_KEYS).clone()),
        value in prop_oneof![
            prop::sample::select(EXTREMES.to_vec()).prop_map(|s| s.to_string()),
            "[0-9.e+-]{1,24}",
            any::<String>(),
            Just("\"abc\"".to_string()),
            Just("[1, 2, 99999999999]".to_string()),
        ],
        preset in prop::sample::select(ibnet::params::PRESETS.to_vec()),
    ) {
        let kv = format!("{key}={value}");
        let kv2 = kv.clone();
        let r = bounded(LIMIT, kv.clone(), move || {
            let p = Params::preset(preset).unwrap().apply_override(&kv2).map_err(|e| e.to_string())?;
            p.check().map_err(|e| e.to_string())?;
            let _ = Fabric::new(&topology::builtin("H8_S1").unwrap(), &p);
            Ok::<(), String>(())
        });
        if let Err(e) = r {
            prop_assert!(e.contains(&key) || e.contains("key=value") || e.contains("max_vl") || e.contains("msg_sq") || e.contains("max_static") || e.contains("Q10") || e.contains("msg_len"), "{}: {}", kv, e);
        }
    }

    /// The vector and index file parsers on arbitrary text.
    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn vector_and_index_parsers_never_panic(
        which in 0usize..2,
        muts in mutations(),
        junk in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let seed = if which == 0 {
            read(&shared("is1_3l_32n.fdbs"))
        } else {
            read(&shared("is1_3l_32n.fdbs.ini"))
        };
        let mut text = apply(&seed, &muts);
        text.extend_from_slice(&junk);
        let text = String::from_utf8_lossy(&text).into_owned();
        let r = bounded(LIMIT, text.clone(), move || {
            let f = Path::new("v.fdbs");
            if which == 0 {
                vecfile::parse_vectors(&text, f).map(|_| ()).map_err(|e| e.to_string())
            } else {
                vecfile::parse_index_file(&text, f, &["fdbIndex"]).map(|_| ()).map_err(|e| e.to_string())
            }
        });
        if let Err(e) = r {
            prop_assert!(e.contains("v.fdbs"), "{}", e);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(500), failure_persistence: None, ..ProptestConfig::default() })]

    /// Rank files (`rank_file =` in TOML) on mutated rank lists.
    #[test]
    fn rank_files_never_panic(muts in mutations(), n in 1usize..9) {
        let mut seed = String::from("# rank  hca\n");
        for r in 0..n {
            seed += &format!("{r} H_{}\n", (r * 3) % 8 + 1);
        }
        let text = apply(seed.as_bytes(), &muts);
        let r = bounded(LIMIT, format!("{:?}", String::from_utf8_lossy(&text)), move || {
            let topo = topology::builtin("H8_S1").unwrap();
            let text = match ibnet::input::text_of(text) {
                Ok(t) => t,
                Err(e) => return Err(e.describe(Path::new("r.txt"))),
            };
            topology::parse_rank_file(&text, Path::new("r.txt"), &topo)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        if let Err(e) = r {
            prop_assert!(e.contains("r.txt"), "{}", e);
        }
    }
}

// -------------------------------------------------------- through the binary

fn ibnet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ibnet"))
}

/// Run the binary with a watchdog: (exit code, stderr).
fn run_bounded(args: &[&str], cwd: Option<&Path>) -> (i32, String) {
    let mut c = ibnet();
    c.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let mut child = c.spawn().unwrap();
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            let code = match st.code() {
                Some(c) => c,
                None => panic!("ibnet {args:?} killed by a signal: {st:?}\n{err}"),
            };
            return (code, err);
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ibnet {args:?} did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn check_exit(args: &[&str], code: i32, err: &str, names: &[&str]) {
    assert!(code == 0 || code == 2, "ibnet {args:?}: exit {code}\n{err}");
    assert!(!err.contains("panicked"), "ibnet {args:?}: {err}");
    if code == 2 {
        assert!(
            names.iter().any(|n| err.contains(n)),
            "ibnet {args:?}: exit 2 without naming {names:?}: {err}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(40), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn binary_topology_files(seed in 0usize..5, muts in mutations()) {
        let text = apply(&toml_seeds()[seed], &muts);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fz.toml");
        std::fs::write(&f, &text).unwrap();
        let args = ["run", "--topology", f.to_str().unwrap(), "--until", "2ns"];
        let (code, err) = run_bounded(&args, None);
        check_exit(&args, code, &err, &["fz.toml", "is1_3l_32n", ".hcas"]);
    }

    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn binary_ibdm_files(which in 0usize..2, muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        for n in ["is1_3l_32n.topo", "ftree.hcas", "is1_3l_32n.fdbs", "is1_3l_32n.fdbs.ini"] {
            let mut t = read(&shared(n));
            if (which == 0 && n.ends_with(".topo")) || (which == 1 && n.ends_with(".fdbs")) {
                t = apply(&t, &muts);
            }
            std::fs::write(dir.path().join(n), &t).unwrap();
        }
        // no directory part: the file is found in the working directory
        let args = ["run", "--topology", "is1_3l_32n.topo", "--until", "2ns"];
        let (code, err) = run_bounded(&args, Some(dir.path()));
        check_exit(&args, code, &err, &["is1_3l_32n", "ftree.hcas"]);
    }

    #[test]
    fn binary_config_files(seed in 0usize..3, muts in mutations()) {
        let text = apply(preset_seeds()[seed].as_bytes(), &muts);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("cf.toml");
        std::fs::write(&f, &text).unwrap();
        let args = ["run", "--topology", "H8_S1", "--config", f.to_str().unwrap(), "--until", "2ns"];
        let (code, err) = run_bounded(&args, None);
        check_exit(&args, code, &err, &["cf.toml"]);
    }

    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn binary_dstseq_files(muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("q.dstSeq");
        std::fs::write(&d, apply(&read(&shared("32n_1hot.dstSeq")), &muts)).unwrap();
        std::fs::write(dir.path().join("q.dstSeq.ini"), read(&shared("32n_1hot.dstSeq.ini"))).unwrap();
        let spec = format!("seq_loop:{}", d.display());
        let topo = shared("is1_3l_32n.topo");
        let args = ["run", "--topology", topo.to_str().unwrap(), "--traffic", &spec, "--until", "1us"];
        let (code, err) = run_bounded(&args, None);
        check_exit(&args, code, &err, &["q.dstSeq"]);
    }
}

// ------------------------------ imports of real networks (docs/topology.md)

const SHARED_ALL: &str = env!("IBCOSIM_REFERENCE_DATA_DIR");
const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// A small NED network in the reference's style (min-hop routes: no tables).
const NED_SEED: &str = "package x;\n\nimport ib_model.*;\n\nnetwork n3\n{\n\tsubmodules:\n\
\t\tH_1_U1: HCA { parameters: srcLid = 1; @display(\"p=1,2\"); }\n\
\t\tH_2_U1: HCA { parameters: srcLid = 2; }\n\
\t\tH_3_U1: HCA { parameters: srcLid = 3; }\n\
\t\tSW_1: Switch {\n\t\tparameters: numSwitchPorts = 3;\n\t\t\tgates: port[3];\n\t\t}\n\
\t\tSW_2: Switch { parameters: numSwitchPorts = 2; gates: port[2]; }\n\
\tconnections:\n\
\t\tH_1_U1.port <--> IB4XQDRWire <--> SW_1.port[0];\n\
\t\tH_2_U1.port <--> IB4XQDRWire <--> SW_1.port[1];\n\
\t\tSW_1.port[2] <--> IB4XQDRWire <--> SW_2.port[0];\n\
\t\tSW_2.port[1] <--> IB4XQDRWire <--> H_3_U1.port;\n}\n";

/// A leaf switch pair around a director chassis (L<line>/P<port> ports).
const CHASSIS_SEED: &str = "MTS3600 SW-A\n   P1 -> Cougar H-1 P1\n   P2 -> Cougar H-2 P1\n   P3 -> MIS5600 CH L1/P1\n   P4 -> MIS5600 CH L2/P1\n\nMTS3600 SW-B\n   P1 -> Cougar H-3 P1\n   P2 -> Cougar H-4 P1\n   P3 -> MIS5600 CH L3/P18\n   P4 -> MIS5600 CH L4/P18\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(300), failure_persistence: None, ..ProptestConfig::default() })]

    /// NED files: the reference's 3h_2s example (with its tables beside it)
    /// and a small NED without tables.
    #[test]
    #[cfg_attr(not(reference_data), ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)")]
    fn ned_files_never_panic(seed in 0usize..2, tables in any::<bool>(), muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        let d3 = Path::new(SHARED_ALL).join("ibmodel-3h2s");
        assert!(d3.exists(), "{} is missing: the fuzz seeds need ../shared", d3.display());
        let (name, seed_text) = match seed {
            0 => ("p2p_3h_2s.ned", read(&d3.join("p2p_3h_2s.ned"))),
            _ => ("n3.ned", NED_SEED.as_bytes().to_vec()),
        };
        let mut files = vec![dir.path().join(name)];
        if seed == 0 {
            for f in ["3h_2s.fdbs", "3h_2s.fdbs.ini"] {
                let mut t = read(&d3.join(f));
                // mutate a table file instead of the NED
                if tables && f.ends_with(".fdbs") {
                    t = apply(&t, &muts);
                }
                std::fs::write(dir.path().join(f), &t).unwrap();
                files.push(dir.path().join(f));
            }
        }
        let text = if seed == 0 && tables { seed_text } else { apply(&seed_text, &muts) };
        std::fs::write(&files[0], &text).unwrap();
        let f = files[0].clone();
        let r = load_bounded(format!("{name} {muts:?}"), move || topology::load(&f));
        if let Err(e) = r {
            assert_names(&e, &files);
        }
    }

    /// ibnetdiscover output and dump_lfts tables (our cluster8 example).
    #[test]
    fn ibnetdiscover_files_never_panic(which in 0usize..2, muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        let seeds = ["cluster8.ibnetdiscover", "cluster8.lfts"].map(|n| Path::new(TESTDATA).join(n));
        let paths = write_mutated(dir.path(), &seeds, which, &muts);
        let ps = paths.clone();
        let r = load_bounded(format!("{which} {muts:?}"), move || {
            topology::open_with(ps[0].to_str().unwrap(), Some(&ps[1]))
        });
        if let Err(e) = r {
            assert_names(&e, &paths);
        }
    }

    /// IBDM .topo with director-chassis ports.
    #[test]
    fn chassis_topo_never_panics(muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        let topo = dir.path().join("c.topo");
        let hcas = dir.path().join("c.hcas");
        std::fs::write(&topo, apply(CHASSIS_SEED.as_bytes(), &muts)).unwrap();
        std::fs::write(&hcas, "H-1/U1/1 1\nH-2/U1/1 2\nH-3/U1/1 3\nH-4/U1/1 4\n").unwrap();
        let (t2, h2) = (topo.clone(), hcas.clone());
        let r = load_bounded(format!("{muts:?}"), move || {
            topology::load_ibdm(&t2, &h2, None, None)
        });
        if let Err(e) = r {
            assert_names(&e, &[&topo, &hcas]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled(30), failure_persistence: None, ..ProptestConfig::default() })]

    /// Through the binary: `--topology X.ibnetdiscover --lfts X.lfts` and
    /// `--topology X.ned` exit 0 or 2 (naming the file), never panic.
    #[test]
    fn binary_import_files(which in 0usize..3, muts in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        for (i, n) in ["cluster8.ibnetdiscover", "cluster8.lfts"].iter().enumerate() {
            let mut t = read(&Path::new(TESTDATA).join(n));
            if i == which {
                t = apply(&t, &muts);
            }
            std::fs::write(dir.path().join(n), &t).unwrap();
        }
        let ned = dir.path().join("n3.ned");
        std::fs::write(&ned, apply(NED_SEED.as_bytes(), &muts)).unwrap();
        let args: Vec<&str> = if which < 2 {
            vec!["run", "--topology", "cluster8.ibnetdiscover", "--lfts", "cluster8.lfts", "--until", "2ns"]
        } else {
            vec!["run", "--topology", "n3.ned", "--until", "2ns"]
        };
        let (code, err) = run_bounded(&args, Some(dir.path()));
        check_exit(&args, code, &err, &["cluster8", "n3.ned"]);
    }
}

/// The seeds of the import fuzz tests are valid networks (else the fuzzing
/// would only ever exercise error paths).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks (fuzz seeds)"
)]
fn import_seeds_load() {
    let dir = tempfile::tempdir().unwrap();
    let ned = dir.path().join("n3.ned");
    std::fs::write(&ned, NED_SEED).unwrap();
    let t = topology::load(&ned).unwrap();
    assert_eq!(
        (t.hcas().len(), t.switches().len(), t.links.len()),
        (3, 2, 4)
    );
    let t = topology::load(&Path::new(SHARED_ALL).join("ibmodel-3h2s/p2p_3h_2s.ned")).unwrap();
    assert_eq!((t.hcas().len(), t.switches().len()), (3, 2));
    let topo = dir.path().join("c.topo");
    let hcas = dir.path().join("c.hcas");
    std::fs::write(&topo, CHASSIS_SEED).unwrap();
    std::fs::write(&hcas, "H-1/U1/1 1\nH-2/U1/1 2\nH-3/U1/1 3\nH-4/U1/1 4\n").unwrap();
    let t = topology::load_ibdm(&topo, &hcas, None, None).unwrap();
    assert_eq!(t.switches().len(), 2 + 54);
    let d = Path::new(TESTDATA);
    let t = topology::open_with(
        d.join("cluster8.ibnetdiscover").to_str().unwrap(),
        Some(&d.join("cluster8.lfts")),
    )
    .unwrap();
    assert_eq!(t.hcas().len(), 8);
}
