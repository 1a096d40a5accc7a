//! Hand-derived timing cases. Defaults unless noted: L=2500 o=1500 g=1000
//! G=6 O=0 S=65535. Notation: nexto/nextgs/nextgr as in docs/model/loggops.md section 4.

use loggopsim::engine::{Params, Report, Sim};
use loggopsim::goal::parse_str;
use loggopsim::network::LogGp;

fn run_p(text: &str, p: Params) -> Report {
    let s = parse_str("case.goal", text).expect("parse");
    let mut sim = Sim::new(s, p, LogGp::new()).unwrap();
    sim.run().unwrap();
    sim.report()
}

fn run(text: &str) -> Report {
    run_p(text, Params::default())
}

fn ok_times(r: &Report) -> Vec<u64> {
    assert!(
        r.ok(),
        "leftovers: {:?}, incomplete {}",
        r.leftovers,
        r.incomplete_ops
    );
    r.finish_times.clone()
}

const WORKED: &str = "num_ranks 2

rank 0 {
l1: calc 100 cpu 0
l2: send 10b to 1 tag 0 cpu 0 nic 0
l3: recv 10b from 1 tag 0 cpu 0 nic 0
l2 requires l1
}

rank 1 {
l1: calc 100 cpu 0
l2: send 10b to 0 tag 0 cpu 0 nic 0
l3: recv 10b from 0 tag 0 cpu 0 nic 0
l2 requires l1
}
";

/// Thesis worked example. calc 0..100; send at 100: nexto = 1600, message
/// event at 100+o+L = 4100; receiver: 4100 + o + max(9*O, 9*G) = 4100+1500+54.
/// Events: 4 roots + 2 sends + 2 messages = 8.
#[test]
fn worked_example_5654() {
    let r = run(WORKED);
    assert_eq!(ok_times(&r), vec![5654, 5654]);
    assert_eq!(r.events, 8);
}

/// Eager at exactly S (65535 B): send completes at once, the dependent calc
/// starts at nexto = 1500 -> 1510. Receiver: 4000 + 1500 + 65534*6 = 398704.
#[test]
fn eager_at_exactly_s() {
    let r = run("num_ranks 2\nrank 0 {\nl1: send 65535b to 1\nl2: calc 10\nl2 requires l1\n}\nrank 1 {\nl1: recv 65535b from 0\n}\n");
    assert_eq!(ok_times(&r), vec![1510, 398704]);
}

/// Rendezvous above S (65536 B): the send completes when the receiver
/// matches the message at t=4000 (raising the sender's nexto to 4000), so
/// the calc runs 4000..4010. Receiver: 4000 + 1500 + 65535*6 = 398710.
#[test]
fn rendezvous_above_s() {
    let r = run("num_ranks 2\nrank 0 {\nl1: send 65536b to 1\nl2: calc 10\nl2 requires l1\n}\nrank 1 {\nl1: recv 65536b from 0\n}\n");
    assert_eq!(ok_times(&r), vec![4010, 398710]);
}

/// Rendezvous matched in the RECV handler (message first in the UQ): rank 1
/// computes 0..100000, so the message (event at 4000) waits until 100000,
/// is taken in (nexto = 100000 + 1500 + 69999*6 = 521494) and goes to the UQ;
/// the receive (released at 100000, seq after the message's) then matches
/// it and completes the send at 100000: the sender's nexto becomes 100000.
#[test]
fn rendezvous_matched_from_uq() {
    let r = run("num_ranks 2\nrank 0 {\nl1: send 70000b to 1\n}\nrank 1 {\nl1: calc 100000\nl2: recv 70000b from 0\nl2 requires l1\n}\n");
    assert_eq!(ok_times(&r), vec![100000, 521494]);
}

/// irequires vs requires with two CPUs (section 9.2). The send starts at 0
/// (nexto[0] = 1500). irequires: the calc on cpu 1 may start at the send's
/// start, 0 -> ends 50, host time max(1500, 50) = 1500. requires: no
/// earlier than the send's CPU end 1500 -> 1550. Receiver: 4000+1500+54.
#[test]
fn irequires_and_requires_on_two_cpus() {
    let base = "num_ranks 2\nrank 0 {\nl1: send 10b to 1\nl2: calc 50 cpu 1\nl2 DEP l1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n";
    let r = run(&base.replace("DEP", "irequires"));
    assert_eq!(ok_times(&r), vec![1500, 5554]);
    assert_eq!(r.num_cpus, 2);
    let r = run(&base.replace("DEP", "requires"));
    assert_eq!(ok_times(&r), vec![1550, 5554]);
}

/// Dependencies carry time across CPUs: calc 100 on cpu 0, then calc 200 on
/// cpu 1 requiring it: 100..300 (the reference would give 200).
#[test]
fn requires_across_cpus() {
    let r = run("num_ranks 1\nrank 0 {\nl1: calc 100\nl2: calc 200 cpu 1\nl2 requires l1\n}\n");
    assert_eq!(ok_times(&r), vec![300]);
}

/// Two NICs, 1000-byte messages. Send A (nic 0) at 0: nexto = 1500,
/// nextgs[0] = 1000 + 999*6 = 6994, message at 4000. Send B (nic 1) waits for
/// the CPU only: 1500, nexto = 3000, message at 5500. Receiver (both
/// messages use cpu 0): A at 4000 -> nexto = 4000+1500+5994 = 11494; B waits
/// until 11494 -> 11494+7494 = 18988. With one NIC B waits for nextgs = 6994
/// instead: sender ends at 6994+1500 = 8494, receiver unchanged.
#[test]
fn two_nics_vs_one() {
    let two = "num_ranks 2\nrank 0 {\nl1: send 1000b to 1 tag 0 cpu 0 nic 0\nl2: send 1000b to 1 tag 0 cpu 0 nic 1\n}\nrank 1 {\nl1: recv 1000b from 0 tag 0 cpu 0 nic 0\nl2: recv 1000b from 0 tag 0 cpu 0 nic 1\n}\n";
    let r = run(two);
    assert_eq!(ok_times(&r), vec![3000, 18988]);
    assert_eq!(r.num_nics, 2);
    let one = two.replace(" nic 1", " nic 0");
    assert_eq!(ok_times(&run(&one)), vec![8494, 18988]);
}

/// Any-source: rank 0 posts (ANY,5) then (2,5). Rank 1's message (event at
/// 4000) takes the first one; rank 2 sends at 1000 (after calc), event at
/// 5000, waits for rank 0's CPU (5554) and takes (2,5): 5554+1554 = 7108.
#[test]
fn any_source_fifo() {
    let r = run("num_ranks 3\nrank 0 {\nl1: recv 10b from -1 tag 5\nl2: recv 10b from 2 tag 5\n}\nrank 1 {\nl1: send 10b to 0 tag 5\n}\nrank 2 {\nl1: calc 1000\nl2: send 10b to 0 tag 5\nl2 requires l1\n}\n");
    assert_eq!(ok_times(&r), vec![7108, 1500, 2500]);
}

/// Any-tag on a receive: (1, ANY) matches tag 7: 4000+1554 = 5554.
#[test]
fn any_tag_receive() {
    let r = run("num_ranks 2\nrank 0 {\nl1: recv 10b from 1 tag -1\n}\nrank 1 {\nl1: send 10b to 0 tag 7\n}\n");
    assert_eq!(ok_times(&r), vec![5554, 1500]);
}

/// Wildcard receives searching the UQ. Messages are taken in on cpu 0
/// (the send's cpu index): from rank 1 (tag 3) at 4000 -> nexto 5554; from
/// rank 2 (tag 4, sent at 100, event 4100) waits -> 7108; both to the UQ.
/// The receives run on cpu 1 after calc 10000: (ANY,ANY) must take the
/// earliest (tag 3), then (ANY,4) the other. Host time max(7108, 10000).
#[test]
fn wildcards_search_uq_in_fifo_order() {
    let r = run("num_ranks 3\nrank 0 {\nl1: calc 10000 cpu 1\nl2: recv 10b from -1 tag -1 cpu 1\nl3: recv 10b from -1 tag 4 cpu 1\nl2 requires l1\nl3 requires l1\n}\nrank 1 {\nl1: send 10b to 0 tag 3\n}\nrank 2 {\nl1: calc 100\nl2: send 10b to 0 tag 4\nl2 requires l1\n}\n");
    assert_eq!(ok_times(&r), vec![10000, 1500, 1600]);
}

/// Zero-size message (section 9.3: (s-1) taken as 0): sender 1500,
/// receiver 4000 + 1500 = 5500.
#[test]
fn zero_size_message() {
    let r = run("num_ranks 2\nrank 0 {\nl1: send 0b to 1\n}\nrank 1 {\nl1: recv 0b from 0\n}\n");
    assert_eq!(ok_times(&r), vec![1500, 5500]);
}

/// Second parameter set (section 10), o_large=3000, O_large=1, threshold S.
/// 70000 B: sender nexto = 3000 + 69999*1 = 72999, event at 3000+2500 = 5500;
/// receiver 5500 + 3000 + max(69999, 419994) = 428494; rendezvous completes
/// at 5500 (nexto stays 72999). A 10-byte message keeps o = 1500.
#[test]
fn second_parameter_set() {
    let p = Params {
        o_large: Some(3000),
        big_o_large: Some(1),
        ..Params::default()
    };
    let r = run_p(
        "num_ranks 2\nrank 0 {\nl1: send 70000b to 1\n}\nrank 1 {\nl1: recv 70000b from 0\n}\n",
        p,
    );
    assert_eq!(ok_times(&r), vec![72999, 428494]);
    let r = run_p(
        "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n",
        p,
    );
    assert_eq!(ok_times(&r), vec![1500, 5554]);
    // without the second set: 1500 + 0 and 4000 + 1500 + 419994
    let r = run_p(
        "num_ranks 2\nrank 0 {\nl1: send 70000b to 1\n}\nrank 1 {\nl1: recv 70000b from 0\n}\n",
        Params::default(),
    );
    assert_eq!(ok_times(&r), vec![4000, 425494]);
}

/// O per byte: O=10 > G=6: sender 1500 + 9*10 = 1590, receiver
/// 4000 + 1500 + max(90, 54) = 5590.
#[test]
fn per_byte_cpu_overhead() {
    let p = Params {
        big_o: 10,
        ..Params::default()
    };
    let r = run_p(
        "num_ranks 2\nrank 0 {\nl1: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n",
        p,
    );
    assert_eq!(ok_times(&r), vec![1590, 5590]);
}

/// Roots are sorted SEND before CALC: the send goes at 0 (event 4000,
/// receiver 5554), the calc waits until 1500 -> 1510. Had the calc gone
/// first the receiver would end at 5564.
#[test]
fn roots_sorted_by_type() {
    let r = run("num_ranks 2\nrank 0 {\nl1: calc 10\nl2: send 10b to 1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n");
    assert_eq!(ok_times(&r), vec![1510, 5554]);
}

/// Unmatched queues are reported, with their entries.
#[test]
fn leftovers_reported() {
    let r = run("num_ranks 2\nrank 0 {\nl1: recv 10b from 1 tag 1\n}\nrank 1 {\nl1: send 12b to 0 tag 2\n}\n");
    assert!(!r.ok());
    assert_eq!(r.leftovers.len(), 1);
    let h = &r.leftovers[0];
    assert_eq!(h.host, 0);
    assert_eq!(
        (h.receives[0].src, h.receives[0].tag, h.receives[0].size),
        (1, 1, 10)
    );
    assert_eq!(
        (
            h.unexpected[0].src,
            h.unexpected[0].tag,
            h.unexpected[0].size
        ),
        (1, 2, 12)
    );
}

/// A dependency cycle would leave operations that never run: the reader
/// refuses it (tests/bad_input.rs checks the messages and exit codes).
#[test]
fn dependency_cycle_detected() {
    let e = parse_str(
        "case.goal",
        "num_ranks 1\nrank 0 {\nl1: calc 1\nl2: calc 2\nl1 requires l2\nl2 requires l1\nl3: calc 5\n}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("case.goal:8:1: rank 0: dependency cycle: "),
        "{e}"
    );
}

fn thesis(path: &str) -> String {
    let p = std::path::Path::new(env!("IBCOSIM_REFERENCE_DATA_DIR"))
        .join("thesis")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Golden values (our engine; checked by hand for the first exchange:
/// rank 0 calc 0..73000000, 400000-byte rendezvous send at 73000000, event
/// at 73004000, rank 1 takes it in at 73004000 + 1500 + 399999*6).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's schedules and traces"
)]
fn ltest_golden() {
    let r = run(&thesis("ltest/ltest.goal"));
    assert_eq!(ok_times(&r), vec![7066109880, 7094708386]);
    assert_eq!(r.events, 102);
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's schedules and traces"
)]
fn ringtest_golden() {
    let r = run(&thesis("ringtest/ringtest_durations.goal"));
    assert_eq!(ok_times(&r), vec![6730921861, 6747919361]);
    assert_eq!(r.events, 30);
}

/// Section 9.1: 20 receives with the same (source, tag) released at once by
/// one calc are posted in program order (stable sort), so the k-th message
/// (size k) matches the k-th receive. All of rank 1's sends are roots, sent
/// at 0, 1054+..., so messages arrive in order.
#[test]
fn many_released_receives_keep_program_order() {
    let mut t = String::from("num_ranks 2\nrank 0 {\nl1: calc 10\n");
    for k in 1..=20 {
        t += &format!(
            "l{}: recv {k}b from 1 tag 0\nl{} requires l1\n",
            k + 1,
            k + 1
        );
    }
    t += "}\nrank 1 {\n";
    for k in 1..=20 {
        t += &format!("l{k}: send {k}b to 0 tag 0\n");
    }
    t += "}\n";
    let s = parse_str("m.goal", &t).unwrap();
    let mut matched = Vec::new();
    let rep = {
        let mut sim = Sim::with_tracer(
            s,
            Params::default(),
            LogGp::new(),
            |e: &loggopsim::engine::TraceEvent| {
                if let loggopsim::engine::TraceEvent::MsgReceived {
                    size,
                    node: Some(n),
                    ..
                } = e
                {
                    matched.push((*size, *n));
                }
            },
        )
        .unwrap();
        sim.run().unwrap();
        sim.report()
    };
    assert!(rep.ok());
    // receive of size k is node k (rank 0 starts at node 0 with the calc)
    assert_eq!(
        matched,
        (1..=20).map(|k| (k as u64, k as u32)).collect::<Vec<_>>()
    );
}
