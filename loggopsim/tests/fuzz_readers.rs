//! Bounded fuzz tests of every reader of loggopsim and schedgen:
//! GOAL text, the binary schedule layout, liballprof traces (trace2goal)
//! and the command-line time parser. A few thousand mutated inputs each, in
//! seconds. Asserted: no panic; a rejection is an error naming the file
//! (and line, for text); whatever is accepted is valid downstream (a
//! translated trace parses as GOAL and simulates, an accepted time equals
//! the exact value computed independently).

use loggopsim::binfmt;
use loggopsim::engine::{Params, Sim, SimError};
use loggopsim::goal::{parse_str, LoadError};
use loggopsim::network::LogGp;
use proptest::prelude::*;
use std::time::{Duration, Instant};

const GOAL: &str = "num_ranks 3\n\nrank 0 {\nl1: calc 100 cpu 0\nl2: send 10b to 1 tag 0 cpu 0 nic 0\nl3: recv 70000b from 2 tag 5\nl2 requires l1\nl3 irequires l2\n}\n\nrank 1 {\nl1: recv 10b from -1 tag -1\nl2: send 70000b to 0 tag 5\n/* comment */\nl2 requires l1\n}\n\nrank 2 {\nl1: send 70000b to 0 tag 5\n}\n";

/// A schedule with put, get and poll (binary magic 4224).
const GOAL_ONE_SIDED: &str = "num_ranks 3\n\nrank 0 {\nl1: put 4096b to 1 tag 3\nl2: get 70000b from 2 tag 5 cpu 0 nic 0\nl3: calc 5\nl3 requires l1\nl2 irequires l1\n}\n\nrank 1 {\nput: poll 4096b from 0 tag 3\nl2: put 8b to 1 tag 1\nl3: poll 8b from 1 tag 1\nl2 requires put\n}\n\nrank 2 {\nl1: calc 1\n}\n";

fn base(which: usize) -> &'static str {
    if which.is_multiple_of(2) {
        GOAL
    } else {
        GOAL_ONE_SIDED
    }
}

/// Replaces `edits` bytes and optionally inserts an "interesting" token.
fn mutate(base: &[u8], edits: &[(usize, u8)], insert: Option<(usize, usize)>) -> Vec<u8> {
    const TOKENS: &[&str] = &[
        "18446744073709551615",
        "18446744073709551616",
        "4294967295",
        "2147483648",
        "-1",
        "-2",
        "0",
        ":",
        ",",
        "\n",
        "{",
        "}",
        "\u{0}",
        "\u{feff}",
        "requires",
        "99999999999999999999999999",
        "put",
        "poll",
        "get 1b from",
    ];
    let mut b = base.to_vec();
    for &(pos, byte) in edits {
        if b.is_empty() {
            break;
        }
        let i = pos % b.len();
        b[i] = byte;
    }
    if let Some((pos, tok)) = insert {
        let i = pos % (b.len() + 1);
        let t = TOKENS[tok % TOKENS.len()].as_bytes();
        b.splice(i..i, t.iter().copied());
    }
    b
}

fn simulate_ok_or_overflow(s: loggopsim::schedule::Schedule) {
    let mut sim = Sim::new(s, Params::default(), LogGp::new()).unwrap();
    match sim.run() {
        Ok(()) | Err(SimError::TimeOverflow { .. }) => {}
        Err(e) => panic!("unexpected simulation error: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// GOAL text: errors are `f.goal:LINE:COL: ...`; accepted text simulates.
    #[test]
    fn goal_text(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..5),
                 insert in proptest::option::of((any::<usize>(), any::<usize>())),
                 cut in any::<usize>(), which in any::<usize>()) {
        let mut b = mutate(base(which).as_bytes(), &edits, insert);
        b.truncate(cut % (b.len() + 1) + (b.len() / 2).min(cut % 7));
        let t0 = Instant::now();
        let r = loggopsim::goal::parse_reader("f.goal", &b[..]);
        match r {
            Ok(s) => simulate_ok_or_overflow(s),
            Err(LoadError::Syntax { file, line, .. }) => {
                prop_assert_eq!(file, "f.goal");
                prop_assert!(line >= 1);
            }
            Err(e) => prop_assert!(false, "unexpected error kind: {}", e),
        }
        prop_assert!(t0.elapsed() < Duration::from_secs(2));
    }

    /// Binary layout: errors name the file and a byte offset.
    #[test]
    fn binary_schedule(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..5),
                       tail in proptest::collection::vec(any::<u8>(), 0..3),
                       cut in any::<usize>(), which in any::<usize>()) {
        let s = parse_str("g.goal", base(which)).unwrap();
        let mut b = Vec::new();
        binfmt::write(&s, &mut b).unwrap();
        for &(pos, byte) in &edits {
            let i = 8 + pos % (b.len() - 8);
            b[i] = byte;
        }
        if cut % 4 == 0 {
            b.truncate(8 + cut % (b.len() - 7));
        }
        b.extend_from_slice(&tail);
        match binfmt::read("f.bin", std::io::Cursor::new(&b), b.len() as u64) {
            Ok(s) => {
                // Unedited file plus trailing bytes must be refused (an edit
                // of the rank table may legitimately make a block cover them).
                prop_assert!(!(edits.is_empty() && !tail.is_empty() && cut % 4 != 0), "trailing bytes accepted");
                simulate_ok_or_overflow(s)
            }
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.starts_with("f.bin: "), "{}", m);
            }
        }
    }
}

const TRACE0: &str = "# clockdiff: 0.000000 s\nMPI_Init:-:1000:2000:100\nMPI_Comm_size:101:0,0,2:8:102\nMPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115\nMPI_Recv:120:4096:3:1,4,4:1:8:0,0,2:6000:130\nMPI_Isend:140:4096:5:13,1,1:1:9:0,0,2:7000:141\nMPI_Irecv:142:4096:6:13,1,1:-1:10:0,0,2:7008:143\nMPI_Waitall:150:2:7000:8000:170\nMPI_Barrier:220:0,0,2:230\nMPI_Allreduce:240:1:2:4:1,4,4:3:0,0,2:250\nMPI_Bcast:260:1:8:1,4,4:0:0,0,2:270\nMPI_Finalize:400:-\n";

fn trace1() -> String {
    TRACE0
        .replace(":1:7:0,0,2", ":0:7:0,1,2")
        .replace(":1:8:0,0,2", ":0:8:0,1,2")
        .replace(":1:9:0,0,2", ":0:9:0,1,2")
        .replace(":-1:10:0,0,2", ":-1:10:0,1,2")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// liballprof traces through trace2goal: an accepted trace gives a GOAL
    /// schedule that loggopsim reads and simulates; a rejected one names
    /// the trace file (and line, when a line is at fault).
    #[test]
    fn liballprof_traces(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
                         insert in proptest::option::of((any::<usize>(), any::<usize>())),
                         rank in 0usize..2,
                         durations in any::<bool>(), sync in any::<bool>()) {
        let d = tempfile::tempdir().unwrap();
        let t1 = trace1();
        let base = if rank == 0 { TRACE0 } else { t1.as_str() };
        let bad = mutate(base.as_bytes(), &edits, insert);
        let (f0, f1) = (d.path().join("t-0.txt"), d.path().join("t-1.txt"));
        std::fs::write(&f0, if rank == 0 { &bad[..] } else { TRACE0.as_bytes() }).unwrap();
        std::fs::write(&f1, if rank == 1 { &bad[..] } else { t1.as_bytes() }).unwrap();
        let o = schedgen::trace::TraceOptions {
            timemult: 1_000_000.0,
            durations: durations.then_some(schedgen::calib::linkmodel::LinkLayer::None),
            sync_collectives: sync,
            ..Default::default()
        };
        let t0 = Instant::now();
        match schedgen::trace::translate(&f0, &o) {
            Ok(t) => match parse_str("out.goal", &t.goal) {
                Ok(s) => simulate_ok_or_overflow(s),
                Err(e) => prop_assert!(false, "trace2goal wrote an invalid schedule: {}\n{}", e, t.goal),
            },
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.contains("t-0.txt") || m.contains("t-1.txt") || m.starts_with("--"), "{}", m);
            }
        }
        prop_assert!(t0.elapsed() < Duration::from_secs(5));
    }
}

/// Reference value of a time argument, computed with u128 and exact decimal
/// arithmetic (independent of the parser under test).
fn expected_ps(int: u64, frac: &str, unit_ps: u64) -> Option<u64> {
    // u128 overflow only happens for values far beyond u64: None (an error).
    let mut num: u128 = int as u128;
    let mut den: u128 = 1;
    for c in frac.bytes() {
        num = num.checked_mul(10)?.checked_add((c - b'0') as u128)?;
        den *= 10;
    }
    let total = num.checked_mul(unit_ps as u128)?;
    if total % den != 0 {
        return None;
    }
    u64::try_from(total / den).ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary strings never panic the parser.
    #[test]
    fn time_arg_arbitrary(s in ".{0,40}") {
        let _ = ipc_proto::time::parse_time_arg(&s, ipc_proto::time::TimeUnit::Ps);
    }

    /// Well-formed numbers give exactly the value, or an error exactly when
    /// the value is not a whole number of ps or does not fit in 64 bits.
    #[test]
    fn time_arg_exact(int in prop_oneof![0u64..1000, any::<u64>()],
                      frac in "[0-9]{0,14}", unit in 0usize..6) {
        use ipc_proto::time::TimeUnit::*;
        let (suffix, u) = [("", Ps), ("ps", Ps), ("ns", Ns), ("us", Us), ("ms", Ms), ("s", S)][unit];
        let text = if frac.is_empty() { format!("{int}{suffix}") } else { format!("{int}.{frac}{suffix}") };
        let got = ipc_proto::time::parse_time_arg(&text, Ps);
        match expected_ps(int, &frac, u.ps()) {
            Some(v) => prop_assert_eq!(got, Ok(ipc_proto::Time(v)), "{}", text),
            None => prop_assert!(got.is_err(), "{} -> {:?}", text, got),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Noise traces (`--noise-trace`): errors name file and line; an
    /// accepted trace adds noise without panicking.
    #[test]
    fn noise_traces(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
                    insert in proptest::option::of((any::<usize>(), any::<usize>())),
                    hosts in 1u32..5, seed in any::<u64>(), start in any::<u64>(), len in any::<u64>()) {
        let base = "# noise\n0\t50\n100\t7\n18446744073709551000\t10\n";
        let b = mutate(base.as_bytes(), &edits, insert);
        let text = String::from_utf8_lossy(&b);
        match loggopsim::noise::Noise::parse("n.txt", &text, hosts, seed) {
            Ok(n) => {
                let _ = n.extra(hosts - 1, start, len);
            }
            Err(LoadError::Syntax { file, line, .. }) => {
                prop_assert_eq!(file, "n.txt");
                prop_assert!(line >= 1);
            }
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}

/// A noise trace whose period or total overflows 64 bits was saturated
/// silently; it is an error naming the line.
#[test]
fn noise_overflow_is_an_error() {
    let e = loggopsim::noise::Noise::parse("n.txt", "0\t5\n18446744073709551615\t1\n", 2, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("n.txt:2:1: start 18446744073709551615 + duration 1"),
        "{e}"
    );
    let e = loggopsim::noise::Noise::parse("n.txt", "0\t18446744073709551615\n1\t1\n", 2, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("n.txt:2:1:"), "{e}");
}
