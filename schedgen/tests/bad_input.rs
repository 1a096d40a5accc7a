//! Bad traces and options are clear errors (file and line), never
//! a hang, unbounded memory or a silently wrong schedule. Each test here
//! fails on the code before the fix.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use schedgen::patterns::{validate, PatternOptions};
use schedgen::trace::{translate, TraceOptions};

fn trace_dir(files: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (r, text) in files.iter().enumerate() {
        std::fs::write(d.path().join(format!("t-{r}.txt")), text).unwrap();
    }
    d
}

/// Why the translation of `t-0.txt` in `d` (default options) fails.
fn t0_error(d: &tempfile::TempDir) -> String {
    translate(&d.path().join("t-0.txt"), &TraceOptions::default())
        .unwrap_err()
        .to_string()
}

/// Why the translation of rank 0 of the trace files `files` fails.
fn rank0_error(files: &[&str]) -> String {
    t0_error(&trace_dir(files))
}

/// Runs a translation on a thread and fails if it takes more than 20 s.
fn translate_bounded(
    first: &Path,
    o: TraceOptions,
) -> Result<schedgen::trace::Translation, String> {
    let (tx, rx) = mpsc::channel();
    let first = first.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(translate(&first, &o).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("translation did not finish within 20 s")
}

/// A communicator size of 10^9 (or a comm field without commas)
/// made the missing-rank check build 10^9 file names.
#[test]
fn huge_communicator_size_is_bounded() {
    for comm in ["6575584,0,1000000000", "1000000000000"] {
        let t = format!("MPI_Init:-:1:2:100\nMPI_Comm_rank:200:{comm}:6:300\nMPI_Finalize:400:-\n");
        let d = trace_dir(&[&t]);
        let tr = translate_bounded(&d.path().join("t-0.txt"), TraceOptions::default()).unwrap();
        let w = tr
            .warnings
            .iter()
            .find(|w| w.contains("missing"))
            .expect("warning");
        assert!(w.contains("t-1.txt, ") && w.contains("t-2.txt, "), "{w}");
        assert!(w.contains("more)"), "{w}");
        assert!(
            w.len() < 2000,
            "the warning lists a bounded number of names"
        );
        let o = TraceOptions {
            require_all: true,
            ..Default::default()
        };
        let e = translate_bounded(&d.path().join("t-0.txt"), o).unwrap_err();
        assert!(e.contains("describe") && e.contains("t-8.txt"), "{e}");
    }
}

const PAIR0: &str = "MPI_Init:-:1000:2000:100\nMPI_Send:110:4096:COUNT:11,DT,DT:1:7:0,0,2:115\nMPI_Finalize:400:-\n";
const PAIR1: &str = "MPI_Init:-:1000:2000:100\nMPI_Recv:110:4096:COUNT:11,DT,DT:0:7:0,1,2:6000:130\nMPI_Finalize:400:-\n";

fn pair(count: &str, dt: &str) -> tempfile::TempDir {
    trace_dir(&[
        &PAIR0.replace("COUNT", count).replace("DT", dt),
        &PAIR1.replace("COUNT", count).replace("DT", dt),
    ])
}

/// Count x datatype size beyond a C int wrapped to a negative or
/// zero size.
#[test]
fn oversized_messages_are_errors_with_file_and_line() {
    for (count, dt) in [
        ("536870912", "4"),
        ("1073741824", "4"),
        ("-1", "4"),
        ("4", "-8"),
    ] {
        let d = pair(count, dt);
        let e = t0_error(&d);
        assert!(e.contains("t-0.txt:2: "), "{count}x{dt}: {e}");
        assert!(
            e.contains("larger than 2147483647 bytes") || e.contains("negative"),
            "{e}"
        );
    }
    // The largest size that fits is written as it is.
    let d = pair("536870911", "4");
    let t = translate(&d.path().join("t-0.txt"), &TraceOptions::default()).unwrap();
    assert!(t.goal.contains("send 2147483644b to 1"), "{}", t.goal);
    // Collectives too: an allreduce of 2^29 ints.
    let coll = "MPI_Init:-:1:2:100\nMPI_Allreduce:110:1:2:536870912:1,4,4:3:0,0,1:120\nMPI_Finalize:400:-\n";
    let e = rank0_error(&[coll]);
    assert!(
        e.contains("t-0.txt:2: ") && e.contains("larger than"),
        "{e}"
    );
}

/// Empty, random and header-only files are not traces.
#[test]
fn empty_and_random_traces_are_errors() {
    let mut rnd = Vec::new();
    let mut x = 0x9e3779b97f4a7c15u64;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rnd.push(x as u8);
    }
    let d = tempfile::tempdir().unwrap();
    for (name, bytes, want) in [
        ("e-0.txt", b"".to_vec(), "the trace is empty"),
        ("r-0.txt", rnd, "not a liballprof trace"),
        (
            "h-0.txt",
            b"# only a header\n\n".to_vec(),
            "not a liballprof trace",
        ),
    ] {
        let f = d.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        let e = translate(&f, &TraceOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(name) && e.contains(want), "{e}");
    }
}

/// A device or FIFO as a trace is refused at once.
#[test]
fn devices_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("z-0.txt");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let e = translate_bounded(&link, TraceOptions::default()).unwrap_err();
    assert!(
        e.contains("z-0.txt") && e.contains("not a regular file"),
        "{e}"
    );
}

/// Peers beyond the trace files found, and bad roots.
#[test]
fn out_of_range_peers_and_roots_are_errors() {
    let t = "MPI_Init:-:1:2:100\nMPI_Send:110:4096:1:11,8,8:3:7:0,0,2:115\nMPI_Finalize:400:-\n";
    let e = rank0_error(&[t, t]);
    assert!(e.contains("t-0.txt:2: peer 3 is outside 0..1"), "{e}");
    let t = "MPI_Init:-:1:2:100\nMPI_Send:110:4096:1:11,8,8:-2:7:0,0,2:115\nMPI_Finalize:400:-\n";
    let e = rank0_error(&[t]);
    assert!(e.contains("t-0.txt:2: peer -2 is not a rank"), "{e}");
    let b = "MPI_Init:-:1:2:100\nMPI_Bcast:110:1:8:1,4,4:5:0,0,1:120\nMPI_Finalize:400:-\n";
    let e = rank0_error(&[b]);
    assert!(e.contains("t-0.txt:2: root 5 is outside 0..0"), "{e}");
}

/// `gen -s 0` wrote a file with `num_ranks 0`.
#[test]
fn gen_needs_at_least_one_rank() {
    let o = |s| PatternOptions {
        commsize: s,
        ..Default::default()
    };
    let e = validate("dissemination", &o(0)).unwrap_err().to_string();
    assert!(e.contains("--commsize must be at least 1"), "{e}");
    assert!(validate("dissemination", &o(-3)).is_err());
    assert!(validate("dissemination", &o(1)).is_ok());
    // random_bisect reduces odd P by one: P = 1 would be 0 ranks.
    let e = validate("random_bisect", &o(1)).unwrap_err().to_string();
    assert!(e.contains("at least 2 ranks"), "{e}");
}

mod start_file_fuzz {
    use proptest::prelude::*;
    use schedgen::trace::translate::StartFile;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

        /// `--traces-start FILE`: any content is read or refused with the
        /// file and line, never a panic; an accepted file renders back.
        #[test]
        fn start_files(bytes in proptest::collection::vec(any::<u8>(), 0..200),
                       good in proptest::collection::vec((any::<u64>(), -1e30f64..1e30), 0..5),
                       use_good in any::<bool>()) {
            let d = tempfile::tempdir().unwrap();
            let f = d.path().join("start.txt");
            let text: Vec<u8> = if use_good {
                good.iter().map(|(o, t)| format!("{o} {t}\n")).collect::<String>().into_bytes()
            } else {
                bytes
            };
            std::fs::write(&f, &text).unwrap();
            match StartFile::read(&f) {
                Ok(s) => {
                    if use_good {
                        prop_assert_eq!(s.entries.len(), good.len());
                    }
                    let _ = s.render();
                }
                Err(e) => {
                    prop_assert!(!use_good, "{}", e);
                    prop_assert!(e.to_string().contains("start.txt"), "{}", e);
                }
            }
        }
    }
}
