//! Issue 16: the thesis's simulated single-message travel times (Tables
//! 5.3.1/5.3.2; idle H8_S6, H_1 -> H_2) under thesis-ddr (unchanged) and the
//! candidate chapter-5 config configs/thesis/thesis-ch5-candidate.toml.
//! See docs/thesis.md.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Latency (ps) of the first message of `param:1=2` with `bytes` bytes.
fn travel_ps(bytes: u64, extra: &[&str]) -> u64 {
    let csv = std::env::temp_dir().join(format!(
        "ibnet-thesis-{}-{bytes}-{}.csv",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .args(["run", "--topology", "H8_S6", "--traffic", "param:1=2"])
        .args(["--set", &format!("msg_length={bytes}")])
        .args(["--set", "start_stat_col_ns=0", "--until", "240us"])
        .arg("--messages-csv")
        .arg(&csv)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
    row[9].parse().unwrap()
}

/// (bytes, thesis simulated travel time in us)
const THESIS: [(u64, f64); 10] = [
    (4, 0.1115),
    (16000, 8.8),
    (32000, 17.5),
    (48000, 26.0),
    (64000, 35.0),
    (80000, 44.0),
    (160000, 87.0),
    (240000, 131.0),
    (320000, 174.0),
    (400000, 218.0),
];

#[test]
fn thesis_ddr_travel_times_unchanged() {
    // the values in issue 16's "ibnet thesis-ddr today" column
    assert_eq!(travel_ps(4, &["--preset", "thesis-ddr"]), 119_600);
    assert_eq!(travel_ps(400000, &["--preset", "thesis-ddr"]), 212_099_400);
}

#[test]
fn ch5_candidate_matches_thesis_table() {
    let cfg = repo().join("configs/thesis/thesis-ch5-candidate.toml");
    let cfg = cfg.to_str().unwrap();
    for (bytes, thesis_us) in THESIS {
        let ps = travel_ps(bytes, &["--config", cfg]);
        let us = ps as f64 / 1e6;
        if bytes == 4 {
            // 4 B + 8 B LRH = one 12-byte flit: consumed 12 x 0.525 = 6.3 ns after
            // arrival; thesis 111.5 ns, within 2 ns
            assert_eq!(ps, 111_300);
            assert!((us - thesis_us).abs() < 0.002);
        } else {
            let dev = (us - thesis_us) / thesis_us;
            // 80000 B is -1.03% (thesis "44" has 2 digits): documented in docs/thesis.md
            let tol = if bytes == 80000 { 0.011 } else { 0.01 };
            assert!(
                dev.abs() < tol,
                "{bytes} B: ours {us} us, thesis {thesis_us} us"
            );
        }
    }
}
