//! One-sided operations (put, get, poll) in the GOAL readers,
//! the binary format and the engine. Hand-derived LogGP times; defaults
//! L=2500 o=1500 g=1000 G=6 O=0 S=65535 (docs/rdma.md "LogGP costs").

use loggopsim::binfmt;
use loggopsim::engine::{Params, Report, Sim, TraceEvent};
use loggopsim::goal::{parse_str, write_goal};
use loggopsim::network::LogGp;
use loggopsim::schedule::Kind;

fn run_p(text: &str, p: Params) -> Report {
    let s = parse_str("case.goal", text).expect("parse");
    let mut sim = Sim::new(s, p, LogGp::new()).unwrap();
    sim.run().unwrap();
    sim.report()
}

fn ok_times(text: &str) -> Vec<u64> {
    let r = run_p(text, Params::default());
    assert!(
        r.ok(),
        "leftovers {:?} incomplete {}",
        r.leftovers,
        r.incomplete_ops
    );
    r.finish_times
}

/// Put of 1000 B at 0: the CPU is busy until o = 1500; the data event is at
/// the target at 0 + o + L = 4000 and written in (s-1)G = 999 x 6 = 5994:
/// remote completion 9994 (the poll's `calc 0` ends there); the
/// acknowledgement arrives after L: local completion 12494 (the put's
/// dependent `calc 0`).
#[test]
fn put_remote_and_local_completion() {
    let t = ok_times(
        "num_ranks 2
rank 0 {
l1: put 1000b to 1 tag 3
l2: calc 0
l2 requires l1
}
rank 1 {
l1: poll 1000b from 0 tag 3
l2: calc 0
l2 requires l1
}
",
    );
    assert_eq!(t, vec![12494, 9994]);
    let c = Params::default().one_sided_times(1000).unwrap();
    assert_eq!((c.put_remote, c.put_local), (9994, 12494));
}

/// Get of 1000 B at 0: request event at the target at o + L = 4000, the
/// target NIC answers at once, the response arrives after L (6500) and is
/// written in 5994: complete at 12494 = o + 2L + (s-1)G. The target has no
/// operation and spends nothing (finish 0).
#[test]
fn get_is_request_plus_response() {
    let t = ok_times(
        "num_ranks 2
rank 0 {
l1: get 1000b from 1 tag 0
l2: calc 0
l2 requires l1
}
rank 1 {
}
",
    );
    assert_eq!(t, vec![12494, 0]);
    assert_eq!(
        Params::default().one_sided_times(1000).unwrap().get_done,
        12494
    );
}

/// A poll posted after the data is written completes at once (at its own
/// start, 20000); the put's remote completion (9994) was kept for it.
#[test]
fn late_poll_completes_at_its_start() {
    let t = ok_times(
        "num_ranks 2
rank 0 {
l1: put 1000b to 1 tag 3
}
rank 1 {
l1: calc 20000
l2: poll 1000b from 0 tag 3
l3: calc 5
l2 requires l1
l3 requires l2
}
",
    );
    assert_eq!(t, vec![1500, 20005]);
}

/// A put and a send as roots: a put sorts with the sends, so line order
/// decides: the put goes first. Put at 0: nexto 1500, nextgs 1000 + 999 x
/// 6 = 6994; data at o + L = 4000, written 9994, acknowledged 12494; the
/// first poll on rank 1 takes 9994. The send waits for max(1500, 6994):
/// nexto 8494, its message at 6994 + 4000 = 10994, received by 12548. The
/// second put requires the first's local completion: it starts at 12494
/// (its CPU ends at 13994, rank 0's finish), data at 16494, written 22488
/// (second poll, then calc 1: 22489), acknowledged 24988.
#[test]
fn put_takes_the_nic_gap_and_polls_are_fifo() {
    let t = ok_times(
        "num_ranks 2
rank 0 {
l1: put 1000b to 1 tag 3
l2: send 10b to 1
l3: calc 0
l3 requires l1
l4: put 1000b to 1 tag 3
l4 requires l1
l4 irequires l3
}
rank 1 {
l1: recv 10b from 0
l2: poll 1000b from 0 tag 3
l3: poll 1000b from 0 tag 3
l4: calc 1
l3 requires l2
l4 requires l3
}
",
    );
    assert_eq!(t, vec![13994, 22489]);
}

/// Put to self and get from self follow the network's loopback rule; in
/// LogGP that is L as for any message: the same times as to a peer.
#[test]
fn loopback_put_and_get() {
    let t = ok_times(
        "num_ranks 1
rank 0 {
l1: put 1000b to 0 tag 1
l2: poll 1000b from 0 tag 1
l3: calc 0
l3 requires l1
l4: get 1000b from 0
l4 requires l3
l5: calc 0
l5 requires l4
}
",
    );
    // put local at 12494; the get starts there: + 12494 = 24988
    assert_eq!(t, vec![24988]);
}

/// The trace shows the new operations with their points.
#[test]
fn trace_shows_one_sided_points() {
    let s = parse_str(
        "t.goal",
        "num_ranks 2\nrank 0 {\nl1: put 1000b to 1 tag 3\n}\nrank 1 {\nl1: poll 1000b from 0 tag 3\n}\n",
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut sim = Sim::with_tracer(s, Params::default(), LogGp::new(), |e: &TraceEvent| {
        if let TraceEvent::OneSided { what, end, .. } = e {
            seen.push((*what, *end));
        }
    })
    .unwrap();
    sim.run().unwrap();
    let r = sim.report();
    assert!(r.ok());
    assert!(r
        .network_stats
        .contains(&("unmatched_polls".to_string(), 0)));
    drop(sim);
    assert_eq!(
        seen,
        vec![
            ("put_start", 1500),
            ("put_remote", 9994),
            ("poll_done", 9994),
            ("put_local", 12494)
        ]
    );
}

/// A poll that no put satisfies leaves the run incomplete and is counted.
#[test]
fn unmatched_poll_is_reported() {
    let r = run_p(
        "num_ranks 2\nrank 0 {\nl1: put 8b to 1 tag 1\n}\nrank 1 {\nl1: poll 8b from 0 tag 2\n}\n",
        Params::default(),
    );
    assert_eq!(r.incomplete_ops, 1);
    assert!(r
        .network_stats
        .contains(&("unmatched_polls".to_string(), 1)));
}

#[test]
fn grammar_words_and_errors() {
    // `put`, `get`, `poll` stay usable as labels
    let s = parse_str(
        "l.goal",
        "num_ranks 2\nrank 0 {\nput: calc 5\nget: put 8b to 1 tag 2 cpu 1 nic 1\nget requires put\npoll: get 16 b from 1\n}\nrank 1 {\npoll 8b from 0 tag 2\n}\n",
    )
    .unwrap();
    let kinds: Vec<Kind> = (0..s.num_nodes()).map(|n| s.op(n).kind).collect();
    assert_eq!(kinds, vec![Kind::Calc, Kind::Put, Kind::Get, Kind::Poll]);
    let op = s.op(1);
    assert_eq!((op.size, op.peer, op.tag, op.cpu, op.nic), (8, 1, 2, 1, 1));
    assert!(s.uses_one_sided());
    let err = |text: &str| {
        parse_str(
            "e.goal",
            &format!("num_ranks 2\nrank 0 {{\n{text}\n}}\nrank 1 {{\n}}\n"),
        )
        .unwrap_err()
        .to_string()
    };
    let e = err("put 8b to -1");
    assert!(e.contains("e.goal:3") && e.contains("put to -1"), "{e}");
    let e = err("get 8b from -1");
    assert!(e.contains("no any-source"), "{e}");
    let e = err("poll 8b from 1 tag -1");
    assert!(e.contains("no any-tag"), "{e}");
    let e = err("put 8b to 2");
    assert!(e.contains("outside 0..1"), "{e}");
    let e = err("poll 8b from 1 nic 1");
    assert!(e.contains("e.goal:3"), "{e}");
}

/// GOAL and binary round trips; plain schedules keep magic 4223, one-sided
/// ones carry 4224 and a 4223 file with a put is refused.
#[test]
fn formats_round_trip() {
    let text = "num_ranks 2\nrank 0 {\nl1: put 8b to 1 tag 2\nl2: get 9b from 1 tag 4 cpu 1\nl2 requires l1\n}\nrank 1 {\nl1: poll 8b from 0 tag 2\n}\n";
    let s = parse_str("r.goal", text).unwrap();
    let mut g = Vec::new();
    write_goal(&s, &mut g).unwrap();
    let s2 = parse_str("r2.goal", std::str::from_utf8(&g).unwrap()).unwrap();
    let mut g2 = Vec::new();
    write_goal(&s2, &mut g2).unwrap();
    assert_eq!(g, g2);
    let mut b = Vec::new();
    binfmt::write(&s, &mut b).unwrap();
    assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 4224);
    let s3 = binfmt::read("r.bin", std::io::Cursor::new(&b), b.len() as u64).unwrap();
    let mut g3 = Vec::new();
    write_goal(&s3, &mut g3).unwrap();
    assert_eq!(g, g3);
    // the same bytes under the old magic: refused with the reason
    b[0..8].copy_from_slice(&4223u64.to_le_bytes());
    let e = binfmt::read("r.bin", std::io::Cursor::new(&b), b.len() as u64)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("magic 4223") && e.contains("put/get/poll"),
        "{e}"
    );
    // plain schedules: magic 4223 as before
    let p = parse_str(
        "p.goal",
        "num_ranks 2\nrank 0 {\nsend 8b to 1\n}\nrank 1 {\nrecv 8b from 0\n}\n",
    )
    .unwrap();
    let mut b = Vec::new();
    binfmt::write(&p, &mut b).unwrap();
    assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 4223);
}
