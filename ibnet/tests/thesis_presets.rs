//! The thesis's simulated single-message travel times (Tables
//! 5.3.1/5.3.2; idle H8_S6, H_1 -> H_2) under thesis-ddr (unchanged) and
//! thesis-ch5, and the per-packet sink gap (`sink_packet_gap_periods`) by
//! hand. See docs/thesis.md.

use std::process::Command;

static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs `ibnet` with the words of `args`, then the name of a fresh CSV
/// file (so `args` ends with the option that takes it), then `extra`; the
/// CSV's text.
fn ibnet_csv(tag: &str, args: &str, extra: &[&str]) -> String {
    let csv = std::env::temp_dir().join(format!(
        "ibnet-{tag}-{}.csv",
        SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .args(args.split_whitespace())
        .arg(&csv)
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    text
}

/// Latency (ps) of the first message of `param:1=2` with `bytes` bytes.
fn travel_ps(bytes: u64, extra: &[&str]) -> u64 {
    let text = ibnet_csv(
        &format!("thesis-{}-{bytes}", std::process::id()),
        &format!(
            "run --topology H8_S6 --traffic param:1=2 --set msg_length={bytes} \
             --set start_stat_col_ns=0 --until 240us --messages-csv"
        ),
        extra,
    );
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
    // the thesis-ddr column of docs/thesis.md, "Tables 5.3.1/5.3.2"
    assert_eq!(travel_ps(4, &["--preset", "thesis-ddr"]), 119_600);
    assert_eq!(travel_ps(400000, &["--preset", "thesis-ddr"]), 212_099_400);
}

/// Travel time (ps) as the thesis measures it (sec. 5.2.4, Appendix E):
/// the message is inserted into the idle fabric at `currtime_l` (here
/// 10 us, away from the start-up instants of the credit loop) and travels
/// until its last flit is consumed at the receiving sink; H_1 -> H_2 on
/// H8_S6, as `loggopsim --network inproc` inserts it.
fn integration_travel_ps(preset: &str, bytes: u64) -> u64 {
    let p = ibnet::Params::preset(preset).unwrap();
    let mut fab = ibnet::Fabric::new(&ibnet::topology::builtin("H8_S6").unwrap(), &p).unwrap();
    let t0 = 10_000_000;
    fab.inject(ibnet::Time(t0), 0, 1, bytes).unwrap();
    let (t, ids) = fab.run_until_completion().unwrap();
    assert_eq!(ids.len(), 1);
    t.0 - t0
}

#[test]
fn thesis_ch5_matches_thesis_table() {
    for (bytes, thesis_us) in THESIS {
        let ps = integration_travel_ps("thesis-ch5", bytes);
        let us = ps as f64 / 1e6;
        if bytes == 4 {
            // 4 B + 20 B header = one 24-byte flit, handed to the generator at
            // insertion (no app gap) and to the arbiter at once (no pop delay), on
            // the wire at once, at H_2 100 ns later (ISW 50 + VSW 50 ns; the first
            // bit), consumed 24 x 0.525 = 12.6 ns after its arrival: 112.6 ns;
            // thesis 111.5 ns, within 2 ns
            assert_eq!(ps, 112_600);
            assert!((us - thesis_us).abs() < 0.002);
        } else {
            let dev = (us - thesis_us) / thesis_us;
            // 48000 B: +1.18% (26.308 us against the thesis's "26", which is
            // given to 2 digits: 25.5..26.5 us); documented in docs/thesis.md.
            // Every other row is within 1%.
            let tol = if bytes == 48000 { 0.012 } else { 0.01 };
            assert!(
                dev.abs() < tol,
                "{bytes} B: ours {us} us, thesis {thesis_us} us ({:+.2}%)",
                dev * 100.0
            );
        }
    }
    // thesis-ddr in the same measurement: 2.0 to 3.4% short on every
    // multi-packet row (docs/thesis.md, "Tables 5.3.1/5.3.2")
    let ddr = integration_travel_ps("thesis-ddr", 400_000);
    assert_eq!(ddr, 212_099_400);
}

/// (consume time in ps) per (packet, flit) from `ibnet run --trace`, node H_2.
fn consumes(extra: &[&str], bytes: u64) -> Vec<(u32, u32, u64)> {
    consumes_until(extra, bytes, "1400ns")
}

/// As [`consumes`], the run ending at `until`.
fn consumes_until(extra: &[&str], bytes: u64, until: &str) -> Vec<(u32, u32, u64)> {
    let text = ibnet_csv(
        &format!("thesis-trace-{}", std::process::id()),
        &format!(
            "run --topology H8_S1 --traffic param:1=2 --set msg_length={bytes} \
             --until {until} --trace-nodes H_2 --trace"
        ),
        extra,
    );
    // t_ps,kind,node,port,msg,pkt,sn
    text.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[1] == "Consume" && r[4] == "0")
        .map(|r| {
            (
                r[5].parse().unwrap(),
                r[6].parse().unwrap(),
                r[0].parse().unwrap(),
            )
        })
        .collect()
}

/// The per-packet sink gap by hand, thesis-ddr on H8_S1 (one switch), one
/// message of 2256 B = packet 0 of 2176 B (34 full flits) + packet 1 of
/// 100 + 20 = 120 B (a 64-byte and a 56-byte flit).
///
/// Flit k reaches H_2 at 117 + 32k ns (docs/model/fabric.md sec. 13 worked check:
/// injection 1 ns + 16 ns pop delay, 100 ns switch, 32 ns per flit on the
/// DDR wire; packet 1 follows at most an FC packet (4 ns) later, so flits
/// 34 and 35 arrive by 1213 ns). The sink drains 33.6 ns per full flit,
/// slower than the wire, so its FIFO never empties: flit k is consumed at
/// 150.6 + 33.6k ns; packet 0's last flit (k = 33) at 1259.4 ns.
/// - gap 0: flit 34 at 1259.4 + 33.6 = 1293.0 ns, flit 35 at 1326.6 ns.
/// - gap 1: the timer re-armed after flit 33 waits one more full-flit drain
///   period (33.6 ns): flit 34 at 1326.6 ns, flit 35 at 1360.2 ns.
/// Packet 0 is unchanged; every flit of packet 1 is exactly 33.6 ns later.
#[test]
fn sink_packet_gap_by_hand() {
    let base = consumes(&["--preset", "thesis-ddr"], 2256);
    let gap = consumes(
        &[
            "--preset",
            "thesis-ddr",
            "--set",
            "sink_packet_gap_periods=1",
        ],
        2256,
    );
    assert_eq!(base.len(), 36);
    assert_eq!(gap.len(), 36);
    for k in 0..34u64 {
        assert_eq!(base[k as usize], (0, k as u32, 150_600 + 33_600 * k));
    }
    assert_eq!(base[34], (1, 0, 1_293_000));
    assert_eq!(base[35], (1, 1, 1_326_600));
    assert_eq!(&gap[..34], &base[..34]);
    assert_eq!(gap[34], (1, 0, 1_326_600));
    assert_eq!(gap[35], (1, 1, 1_360_200));
    // two periods: twice the delay
    let gap2 = consumes(
        &[
            "--preset",
            "thesis-ddr",
            "--set",
            "sink_packet_gap_periods=2",
        ],
        2256,
    );
    assert_eq!(gap2[35], (1, 1, 1_393_800));
}

/// The gap parameter is validated and named in errors; the reports of
/// presets without it do not mention it (golden files unchanged).
#[test]
fn sink_packet_gap_parameter_checks() {
    let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .args(["run", "--topology", "H8_S1", "--traffic", "param:1=2"])
        .args(["--set", "sink_packet_gap_periods=-1", "--until", "1us"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sink_packet_gap_periods"));
    let json = |preset: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_ibnet"))
            .args(["run", "--topology", "H8_S1", "--traffic", "param:1=2"])
            .args([
                "--preset",
                preset,
                "--until",
                "1us",
                "--json",
                "--no-wall-time",
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(!json("thesis-ddr").contains("sink_packet_gap_periods"));
    assert!(json("thesis-ch5").contains("\"sink_packet_gap_periods\": 1"));
    // thesis-ch4's fabric is thesis-ddr's
    assert_eq!(
        ibnet::Params::preset("thesis-ch4").unwrap(),
        ibnet::Params::preset("thesis-ddr").unwrap()
    );
}

/// Ruled out as the per-packet loss: the sink rule of thesis sec. 3.2.6 ("the
/// external event ... causes the sink to schedule a pop event (unless one is
/// scheduled already) with a certain delay") never acts inside a multi-packet
/// message of the thesis's model, because the sink's FIFO never runs empty:
/// the sink (33.6 ns per 64-byte flit) is slower than the DDR wire (32 ns)
/// from the first flit on, and nothing upstream leaves a gap of 54.4 ns (34 x
/// 1.6 ns) at a packet boundary. So that rule cannot be the per-packet loss of
/// Tables 5.3.1/5.3.2 (docs/thesis.md, "The per-packet loss: candidates
/// measured").
///
/// thesis-ch5 without its per-packet gap, H8_S1, one 16000-byte message =
/// 7 packets of 34 full flits + one of 908 + 20 = 928 B (14 full flits and a
/// 32-byte one): 253 flits. Flit 0 leaves H_1 at 5 ns (the HCA's first FC
/// packet goes out at 1 ns and takes 4 ns; the credits for the packet arrive
/// in the switch's FC packet at 1 ns), reaches H_2 at 105 ns (ISW + VSW), is
/// consumed 33.6 ns later at 138.6 ns; every later flit exactly one
/// full-flit drain (33.6 ns) after the one before, also across the seven
/// packet boundaries and for the short last flit (its tick is timed by the
/// full flit before it): flit i at 138.6 + 33.6 i ns, the last (i = 252) at
/// 8605.8 ns. With the gap (thesis-ch5 as shipped) each of the 7 boundaries
/// adds exactly 33.6 ns.
#[test]
fn sink_never_idles_inside_a_message() {
    let base = consumes_until(
        &[
            "--preset",
            "thesis-ch5",
            "--set",
            "sink_packet_gap_periods=0",
        ],
        16000,
        "9us",
    );
    assert_eq!(base.len(), 253);
    for (i, &(pkt, sn, t)) in base.iter().enumerate() {
        assert_eq!(
            t,
            138_600 + 33_600 * i as u64,
            "flit {i} (packet {pkt}, flit {sn})"
        );
    }
    assert_eq!(base[252], (7, 14, 8_605_800));
    let gap = consumes_until(&["--preset", "thesis-ch5"], 16000, "9us");
    assert_eq!(gap.len(), 253);
    for (i, &(pkt, _, t)) in gap.iter().enumerate() {
        assert_eq!(t, base[i].2 + 33_600 * pkt as u64);
    }
}
