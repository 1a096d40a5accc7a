//! Property tests: matching equals the linear reference, text/binary round
//! trips, random matched DAGs never deadlock, runs are deterministic, and
//! grouping of blocked events changes nothing.

use loggopsim::binfmt;
use loggopsim::engine::{Params, Report, Sim, SimError, TraceEvent};
use loggopsim::goal::{parse_str, write_goal};
use loggopsim::matching::{Indexes, MatchQueue, NaiveQueue};
use loggopsim::network::LogGp;
use loggopsim::schedule::ANY;
use proptest::prelude::*;

fn wild(v: u8) -> u32 {
    if v == 3 {
        ANY
    } else {
        v as u32
    }
}

fn check_matching(ops: &[(bool, u8, u8)], ix: Indexes) {
    let mut q = MatchQueue::new(ix);
    let mut n = NaiveQueue::default();
    for (i, &(is_query, s, t)) in ops.iter().enumerate() {
        if is_query {
            assert_eq!(q.take(wild(s), wild(t)), n.take(wild(s), wild(t)), "op {i}");
        } else {
            q.push(wild(s), wild(t), i as u32);
            n.push(wild(s), wild(t), i as u32);
        }
        assert_eq!(q.len(), n.len());
    }
    let rest: Vec<_> = std::iter::from_fn(|| n.take(ANY, ANY)).collect();
    assert_eq!(q.entries_in_order(), rest);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn matching_equals_linear_fifo(ops in proptest::collection::vec((any::<bool>(), 0u8..4, 0u8..4), 0..200)) {
        check_matching(&ops, Indexes::ALL);
        check_matching(&ops, Indexes::default()); // linear fallback for wildcard queries
        check_matching(&ops, Indexes { by_tag: true, by_src: false, all: false });
    }
}

/// Tiny deterministic generator driven by a proptest seed.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Arbitrary (not necessarily runnable) schedule text.
fn random_text(seed: u64) -> String {
    let mut r = Lcg(seed);
    let p = 1 + r.next(4);
    text_of(&mut r, p)
}

/// Arbitrary schedule text of `p` ranks.
fn text_of(r: &mut Lcg, p: u64) -> String {
    let mut out = format!("num_ranks {p}\n");
    for rank in 0..p {
        out += &format!("rank {rank} {{\n");
        let n = r.next(8);
        for i in 0..n {
            let line = match r.next(3) {
                0 => format!("l{}: calc {} cpu {}", i + 1, r.next(1000), r.next(3)),
                1 => format!(
                    "l{}: send {}b to {} tag {} cpu {} nic {}",
                    i + 1,
                    r.next(100000),
                    r.next(p),
                    [0, 1, 7, u64::MAX][r.next(4) as usize] as i64,
                    r.next(2),
                    r.next(3)
                ),
                _ => {
                    let src = if r.next(4) == 0 { -1 } else { r.next(p) as i64 };
                    let tag = if r.next(4) == 0 { -1 } else { r.next(5) as i64 };
                    format!(
                        "l{}: recv {}b from {} tag {} nic {}",
                        i + 1,
                        r.next(100),
                        src,
                        tag,
                        r.next(2)
                    )
                }
            };
            out += &line;
            out.push('\n');
        }
        // dependencies along a random order of the operations, so that
        // edges point both ways in offset order but never form a cycle (a
        // cycle is bad input: the reader refuses it)
        let mut order: Vec<u64> = (0..n).collect();
        for k in (1..n as usize).rev() {
            order.swap(k, r.next(k as u64 + 1) as usize);
        }
        for _ in 0..r.next(2 * n + 1) {
            if n > 0 {
                let kw = if r.next(3) == 0 {
                    "irequires"
                } else {
                    "requires"
                };
                let (a, b) = (r.next(n) as usize, r.next(n) as usize);
                if a != b {
                    let (later, earlier) = (order[a.max(b)], order[a.min(b)]);
                    out += &format!("l{} {kw} l{}\n", later + 1, earlier + 1);
                }
            }
        }
        out += "}\n";
    }
    out
}

/// A runnable schedule: a global sequence of calcs and messages (unique
/// tags), each operation depending only on earlier operations of its rank.
fn random_dag(seed: u64, ncpu: u64, nnic: u64) -> String {
    random_dag_sized(seed, ncpu, nnic, 6, 40)
}

fn random_dag_sized(seed: u64, ncpu: u64, nnic: u64, maxp: u64, maxitems: u64) -> String {
    let mut r = Lcg(seed);
    let p = 1 + r.next(maxp) as usize;
    let mut ranks: Vec<Vec<String>> = vec![vec![]; p];
    let mut deps: Vec<Vec<String>> = vec![vec![]; p];
    let items = r.next(maxitems);
    // `limit`: number of leading operations of the rank it may depend on (a
    // self-message's receive must not depend on its own send)
    let add = |r: &mut Lcg,
               rank: usize,
               op: String,
               limit: usize,
               ranks: &mut Vec<Vec<String>>,
               deps: &mut Vec<Vec<String>>| {
        let k = ranks[rank].len() + 1;
        ranks[rank].push(format!("l{k}: {op}"));
        for _ in 0..r.next(3) {
            if limit > 0 {
                let kw = if r.next(4) == 0 {
                    "irequires"
                } else {
                    "requires"
                };
                deps[rank].push(format!("l{k} {kw} l{}", 1 + r.next(limit as u64)));
            }
        }
    };
    for tag in 0..items {
        if r.next(4) == 0 {
            let h = r.next(p as u64) as usize;
            let op = format!("calc {} cpu {}", r.next(5000), r.next(ncpu));
            let lim = ranks[h].len();
            add(&mut r, h, op, lim, &mut ranks, &mut deps);
        } else {
            let (a, b) = (r.next(p as u64) as usize, r.next(p as u64) as usize);
            let size = [0u64, 1, 100, 1000, 70000][r.next(5) as usize];
            let s = format!(
                "send {size}b to {b} tag {tag} cpu {} nic {}",
                r.next(ncpu),
                r.next(nnic)
            );
            let src = if r.next(5) == 0 {
                "-1".to_string()
            } else {
                a.to_string()
            };
            let v = format!(
                "recv {size}b from {src} tag {tag} cpu {} nic {}",
                r.next(ncpu),
                r.next(nnic)
            );
            let (la, lb) = (ranks[a].len(), ranks[b].len());
            add(&mut r, a, s, la, &mut ranks, &mut deps);
            add(&mut r, b, v, lb, &mut ranks, &mut deps);
        }
    }
    let mut out = format!("num_ranks {p}\n");
    for i in 0..p {
        out += &format!("rank {i} {{\n");
        // dependency lines may come after all operations (labels defined above)
        for l in ranks[i].iter().chain(deps[i].iter()) {
            out += l;
            out.push('\n');
        }
        out += "}\n";
    }
    out
}

fn sim(text: &str, grouping: bool) -> (Report, Vec<TraceEvent>) {
    let s = parse_str("p.goal", text).unwrap();
    let mut trace = Vec::new();
    let rep = {
        let mut sim = Sim::with_tracer(s, Params::default(), LogGp::new(), |e: &TraceEvent| {
            if !matches!(e, TraceEvent::Reinsert { .. }) {
                trace.push(e.clone())
            }
        })
        .unwrap();
        sim.set_grouping(grouping);
        sim.run().unwrap();
        sim.report()
    };
    (rep, trace)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn text_binary_text_round_trip(seed in any::<u64>()) {
        let text = random_text(seed);
        let s1 = match parse_str("r.goal", &text) { Ok(s) => s, Err(e) => panic!("{e}\n{text}") };
        let mut t1 = Vec::new();
        write_goal(&s1, &mut t1).unwrap();
        let s2 = parse_str("r2.goal", std::str::from_utf8(&t1).unwrap()).unwrap();
        let mut t2 = Vec::new();
        write_goal(&s2, &mut t2).unwrap();
        prop_assert_eq!(&t1, &t2);
        let mut b1 = Vec::new();
        binfmt::write(&s1, &mut b1).unwrap();
        let s3 = binfmt::read("r.bin", std::io::Cursor::new(&b1), b1.len() as u64).unwrap();
        let mut t3 = Vec::new();
        write_goal(&s3, &mut t3).unwrap();
        prop_assert_eq!(&t1, &t3);
        let mut b2 = Vec::new();
        binfmt::write(&s3, &mut b2).unwrap();
        prop_assert_eq!(b1, b2);
    }

    #[test]
    fn random_matched_dag_never_deadlocks(seed in any::<u64>(), ncpu in 1u64..3, nnic in 1u64..3) {
        let text = random_dag(seed, ncpu, nnic);
        let (r, _) = sim(&text, true);
        prop_assert!(r.ok(), "leftovers {:?} incomplete {}\n{}", r.leftovers, r.incomplete_ops, text);
    }

    #[test]
    fn runs_are_deterministic(seed in any::<u64>()) {
        let text = random_dag(seed, 2, 2);
        let (r1, t1) = sim(&text, true);
        let (r2, t2) = sim(&text, true);
        let p = Params::default();
        prop_assert_eq!(loggopsim::report::text("LogGP", &r1, &p, 0.0, false), loggopsim::report::text("LogGP", &r2, &p, 0.0, false));
        prop_assert_eq!(t1, t2);
    }

    #[test]
    fn grouping_blocked_events_changes_nothing(seed in any::<u64>(), ncpu in 1u64..3, nnic in 1u64..3, dense in any::<bool>()) {
        // dense: few ranks, many messages -> long runs of blocked events
        let text = if dense { random_dag_sized(seed, ncpu, nnic, 3, 150) } else { random_dag(seed, ncpu, nnic) };
        let (r1, t1) = sim(&text, true);
        let (r2, t2) = sim(&text, false);
        prop_assert_eq!(&r1.finish_times, &r2.finish_times);
        prop_assert_eq!(r1.events, r2.events);
        prop_assert_eq!(t1, t2);
    }
}

/// Many sends and messages contending on one host: the grouped engine must
/// process exactly the same events in the same order as literal re-insertion.
#[test]
fn grouping_on_all_to_all_and_fan_in() {
    let mut t = String::from("num_ranks 6\n");
    for me in 0..6 {
        t += &format!("rank {me} {{\n");
        let mut k = 0;
        for step in 1..6 {
            k += 1;
            t += &format!("l{k}: send 1000b to {} tag 0\n", (me + step) % 6);
            k += 1;
            t += &format!("l{k}: recv 1000b from {} tag 0\n", (me + 6 - step) % 6);
            k += 1;
            t += &format!("l{k}: calc {}\n", 700 * step);
        }
        t += "}\n";
    }
    let (r1, t1) = sim(&t, true);
    let (r2, t2) = sim(&t, false);
    assert!(r1.ok());
    assert_eq!(r1.finish_times, r2.finish_times);
    assert_eq!(t1, t2);
    assert!(
        r1.processed < r2.processed,
        "grouping was not exercised: {} vs {}",
        r1.processed,
        r2.processed
    );
}

#[test]
fn binary_rejects_consumed_magic_and_garbage() {
    let s = parse_str("x.goal", "num_ranks 1\nrank 0 {\nl1: calc 5\n}\n").unwrap();
    let mut b = Vec::new();
    binfmt::write(&s, &mut b).unwrap();
    let mut consumed = b.clone();
    consumed[..8].copy_from_slice(&2342u64.to_le_bytes());
    let e = binfmt::read(
        "c.bin",
        std::io::Cursor::new(&consumed),
        consumed.len() as u64,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("2342") && e.contains("consumed"), "{e}");
    let short = &b[..b.len() - 3];
    let e = binfmt::read("s.bin", std::io::Cursor::new(short), short.len() as u64)
        .unwrap_err()
        .to_string();
    assert!(e.contains("s.bin"), "{e}");
    let mut bad = b.clone();
    // node type byte of node 0: 8 (magic) + 4+1+1+16 (header) + 8 (counts) + 4 (one root) + 4 (depcount)
    bad[8 + 22 + 8 + 4 + 4] = 9;
    let e = binfmt::read("t.bin", std::io::Cursor::new(&bad), bad.len() as u64)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad type 9"), "{e}");
}

#[test]
fn binary_layout_of_a_small_schedule() {
    let s = parse_str("x.goal", "num_ranks 1\nrank 0 {\nl1: calc 5\nl2: send 3b to 0 tag -1\nl2 requires l1\nl3: recv 3b from -1\n}\n").unwrap();
    let mut b = Vec::new();
    binfmt::write(&s, &mut b).unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    assert_eq!(u64_at(0), 4223);
    assert_eq!(u32_at(8), 1);
    let (start, end) = (u64_at(14), u64_at(22));
    assert_eq!(start, 22, "block follows the 22-byte header after base");
    let blk = 8 + start as usize;
    assert_eq!(u32_at(blk), 3); // nodes
    assert_eq!(u32_at(blk + 4), 2); // roots: l1, l3
    assert_eq!((u32_at(blk + 8), u32_at(blk + 12)), (0, 2));
    let n1 = blk + 16 + 39; // second node record
    assert_eq!(u32_at(n1), 1); // depcount
    assert_eq!(b[n1 + 4], 1); // type send
    assert_eq!(u32_at(n1 + 17), u32::MAX); // any tag
    let app = blk + 16 + 3 * 39;
    assert_eq!(u32_at(app), 1); // l1's dependent is offset 1
    assert_eq!(end as usize + 8, b.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The exact-only receive queue equals the linear FIFO on exact queries,
    /// including through table growth and backward-shift deletions.
    #[test]
    fn exact_rq_equals_linear_fifo(ops in proptest::collection::vec((any::<bool>(), 0u32..6, 0u32..40), 0..400), packed in any::<bool>()) {
        use loggopsim::matching::ExactRq;
        let mut keys: Vec<u64> = Vec::new();
        let mut link = vec![0u32; ops.len()];
        let mut q = ExactRq::new(packed);
        let mut n = NaiveQueue::default();
        for (i, &(is_query, s, t)) in ops.iter().enumerate() {
            let key = if packed { ((s as u64) << 16) | t as u64 } else { ((s as u64) << 32) | t as u64 };
            keys.push(key);
            if is_query {
                let got = q.take(key, &mut link, |x| keys[x as usize]);
                prop_assert_eq!(got, n.take(s, t).map(|e| e.2));
            } else {
                q.push(key, i as u32, &mut link, |x| keys[x as usize]);
                n.push(s, t, i as u32);
            }
            prop_assert_eq!(q.len(), n.len());
        }
        let mut a = q.nodes(&link);
        let mut b: Vec<u32> = std::iter::from_fn(|| n.take(ANY, ANY)).map(|e| e.2).collect();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Damaged text never panics the parser (an error or a schedule), and
    /// whatever parses also simulates without panicking.
    #[test]
    fn damaged_text_never_panics(seed in any::<u64>(), edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let mut b = random_text(seed).into_bytes();
        for (pos, byte) in edits {
            if b.is_empty() { break; }
            let i = pos % b.len();
            b[i] = byte;
        }
        let text = String::from_utf8_lossy(&b).into_owned();
        if let Ok(s) = parse_str("d.goal", &text) {
            let mut sim = Sim::new(s, Params::default(), LogGp::new()).unwrap();
            // A damaged size or duration may overflow time: an error, not a panic.
            match sim.run() {
                Ok(()) | Err(SimError::TimeOverflow { .. }) => {}
                Err(e) => panic!("{e}"),
            }
            let _ = sim.report();
        }
    }

    /// Damaged binary files never panic the reader.
    #[test]
    fn damaged_binary_never_panics(seed in any::<u64>(), edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let s = parse_str("r.goal", &random_text(seed)).unwrap();
        let mut b = Vec::new();
        binfmt::write(&s, &mut b).unwrap();
        for (pos, byte) in edits {
            let i = 8 + pos % (b.len() - 8);
            b[i] = byte;
        }
        b.truncate(8 + cut % (b.len() - 7));
        if let Ok(s) = binfmt::read("d.bin", std::io::Cursor::new(&b), b.len() as u64) {
            let mut sim = Sim::new(s, Params::default(), LogGp::new()).unwrap();
            match sim.run() {
                Ok(()) | Err(SimError::TimeOverflow { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
}

/// Linear all-to-all (schedgen 3.10) on 64 ranks, 1024 B: grouped and
/// literal re-insertion process the same events in the same order.
#[test]
fn grouping_on_linear_all_to_all_64() {
    let p = 64;
    let mut t = format!("num_ranks {p}\n");
    for me in 0..p {
        t += &format!("rank {me} {{\n");
        for step in 1..p {
            t += &format!(
                "l{}: send 1024b to {} tag 0\n",
                2 * step - 1,
                (me + step) % p
            );
            t += &format!(
                "l{}: recv 1024b from {} tag 0\n",
                2 * step,
                (me + p - step) % p
            );
        }
        t += "}\n";
    }
    let (r1, t1) = sim(&t, true);
    let (r2, t2) = sim(&t, false);
    assert!(r1.ok());
    assert_eq!(r1.finish_times, r2.finish_times);
    assert_eq!(r1.events, 2 * 64 * 63 + 64 * 63);
    assert!(t1 == t2);
    assert!(
        r1.processed * 5 < r2.processed,
        "{} vs {}",
        r1.processed,
        r2.processed
    );
}

/// Pipelined ring (schedgen 3.6, segment size 1) on 64 ranks with 32
/// segments: grouped and literal re-insertion agree event by event.
#[test]
fn grouping_on_pipelined_ring() {
    let (p, m) = (64, 32);
    let mut t = format!("num_ranks {p}\n");
    for v in 0..p {
        t += &format!("rank {v} {{\n");
        let mut k = 0;
        for _ in 0..m {
            let (mut rv, mut sv) = (None, None);
            if v >= 1 {
                k += 1;
                rv = Some(k);
                t += &format!("l{k}: recv 1b from {} tag 0\n", v - 1);
            }
            if v + 1 < p {
                k += 1;
                sv = Some(k);
                t += &format!("l{k}: send 1b to {} tag 0\n", v + 1);
            }
            if let (Some(r), Some(s)) = (rv, sv) {
                t += &format!("l{s} requires l{r}\n");
            }
        }
        t += "}\n";
    }
    let (r1, t1) = sim(&t, true);
    let (r2, t2) = sim(&t, false);
    assert!(r1.ok());
    assert_eq!(r1.finish_times, r2.finish_times);
    assert!(t1 == t2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A binary schedule read by several threads (runs of ranks joined in
    /// rank order) is the schedule the sequential reader builds, shape ids
    /// and all; a damaged one gets the sequential reader's error.
    #[test]
    fn parallel_read_equals_sequential(seed in any::<u64>(), p in 2u64..24, threads in 2usize..5,
                                       edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3)) {
        let s = parse_str("r.goal", &text_of(&mut Lcg(seed), p)).unwrap();
        let mut b = Vec::new();
        binfmt::write(&s, &mut b).unwrap();
        for &(pos, byte) in &edits {
            let i = 8 + pos % (b.len() - 8);
            b[i] = byte;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.bin");
        std::fs::write(&path, &b).unwrap();
        let name = path.display().to_string();
        let seq = binfmt::read(&name, std::io::Cursor::new(&b), b.len() as u64);
        if edits.is_empty() {
            // the parallel path itself, not the fallback, made it
            let par = binfmt::read_file_parallel(&path, threads);
            prop_assert!(par.is_some(), "the parallel read refused a clean file");
            prop_assert!(par.unwrap() == *seq.as_ref().unwrap());
        }
        match (seq, binfmt::read_file_threads(&path, threads, 0)) {
            (Ok(a), Ok(b)) => prop_assert!(a == b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "sequential {:?}, parallel {:?}", a.is_ok(), b.is_ok()),
        }
    }
}
