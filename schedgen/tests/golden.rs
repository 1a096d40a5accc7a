//! Golden outputs of docs/model/schedgen.md section 5 (verified against the reference
//! tool chain there), exact text.

use schedgen::cli::generate;
use schedgen::goal::Prelude;
use schedgen::patterns::PatternOptions;

fn gen(name: &str, o: PatternOptions) -> (String, String) {
    generate(name, &o, 0, None).unwrap()
}

fn opts(p: i32, d: i32) -> PatternOptions {
    PatternOptions {
        commsize: p,
        datasize: d,
        ..Default::default()
    }
}

/// The block of rank `r` (statements only).
fn block(text: &str, r: usize) -> String {
    let head = format!("rank {r} {{\n");
    let rest = text
        .split(&head)
        .nth(1)
        .unwrap_or_else(|| panic!("no rank {r} in\n{text}"));
    rest.split("}\n").next().unwrap().to_string()
}

#[test]
fn s5_1_dissemination_exact_file() {
    let expected = "num_ranks 4

rank 0 {
l1: send 180b to 1 tag 0
l2: recv 180b from 3 tag 0
l3: send 180b to 2 tag 0
l3 requires l2
l4: recv 180b from 2 tag 0
}

rank 1 {
l1: send 180b to 2 tag 0
l2: recv 180b from 0 tag 0
l3: send 180b to 3 tag 0
l3 requires l2
l4: recv 180b from 3 tag 0
}

rank 2 {
l1: send 180b to 3 tag 0
l2: recv 180b from 1 tag 0
l3: send 180b to 0 tag 0
l3 requires l2
l4: recv 180b from 0 tag 0
}

rank 3 {
l1: send 180b to 0 tag 0
l2: recv 180b from 2 tag 0
l3: send 180b to 1 tag 0
l3 requires l2
l4: recv 180b from 1 tag 0
}
";
    let (text, summary) = gen("dissemination", opts(4, 180));
    assert_eq!(text, expected);
    assert_eq!(
        summary,
        "8 sends, 8 recvs, 0 execs, and 4 reqs among 4 hosts written"
    );
}

#[test]
fn s5_2_binomialtreebcast() {
    let (text, _) = gen("binomialtreebcast", opts(8, 1));
    assert_eq!(
        block(&text, 0),
        "l1: send 1b to 1 tag 0\nl2: send 1b to 2 tag 0\nl3: send 1b to 4 tag 0\n"
    );
    assert_eq!(
        block(&text, 1),
        "l1: recv 1b from 0 tag 0\nl2: send 1b to 3 tag 0\nl2 requires l1\nl3: send 1b to 5 tag 0\nl3 requires l1\n"
    );
    assert_eq!(
        block(&text, 2),
        "l1: recv 1b from 0 tag 0\nl2: send 1b to 6 tag 0\nl2 requires l1\n"
    );
    assert_eq!(
        block(&text, 3),
        "l1: recv 1b from 1 tag 0\nl2: send 1b to 7 tag 0\nl2 requires l1\n"
    );
    for (r, from) in [(4, 0), (5, 1), (6, 2), (7, 3)] {
        assert_eq!(block(&text, r), format!("l1: recv 1b from {from} tag 0\n"));
    }
    // Root 2: duplicate dependency lines are kept.
    let (text, _) = gen(
        "binomialtreebcast",
        PatternOptions {
            root: 2,
            ..opts(5, 10)
        },
    );
    assert_eq!(
        block(&text, 1),
        "l1: recv 10b from 2 tag 0\nl2: send 10b to 3 tag 0\nl2 requires l1\nl2 requires l1\n"
    );
}

#[test]
fn s5_3_pipelinedring() {
    let o = PatternOptions {
        segmentsize: 2,
        ..opts(4, 5)
    };
    let (text, _) = gen("pipelinedring", o.clone());
    assert_eq!(
        block(&text, 0),
        "l1: send 2b to 1 tag 0\nl2: send 2b to 1 tag 0\nl3: send 1b to 1 tag 0\n"
    );
    let mid = |a: i32, b: i32| {
        format!(
            "l1: recv 2b from {a} tag 0\nl2: send 2b to {b} tag 0\nl2 requires l1\n\
             l3: recv 2b from {a} tag 0\nl4: send 2b to {b} tag 0\nl4 requires l3\n\
             l5: recv 1b from {a} tag 0\nl6: send 1b to {b} tag 0\nl6 requires l5\n"
        )
    };
    assert_eq!(block(&text, 1), mid(0, 2));
    assert_eq!(block(&text, 2), mid(1, 3));
    assert_eq!(
        block(&text, 3),
        "l1: recv 2b from 2 tag 0\nl2: recv 2b from 2 tag 0\nl3: recv 1b from 2 tag 0\n"
    );
    let (text, _) = gen("pipelinedringdep", o);
    assert_eq!(
        block(&text, 1),
        "l1: recv 2b from 0 tag 0\nl2: send 2b to 2 tag 0\nl2 requires l1\n\
         l3: recv 2b from 0 tag 0\nl4: send 2b to 2 tag 0\nl4 requires l3\nl3 requires l2\n\
         l5: recv 1b from 0 tag 0\nl6: send 1b to 2 tag 0\nl6 requires l5\nl5 requires l4\n"
    );
    let (text, _) = gen(
        "pipelinedring",
        PatternOptions {
            segmentsize: 2,
            ..opts(4, 1)
        },
    );
    assert_eq!(block(&text, 0), "l1: send 1b to 1 tag 0\n");
    assert_eq!(
        block(&text, 2),
        "l1: recv 1b from 1 tag 0\nl2: send 1b to 3 tag 0\nl2 requires l1\n"
    );
    assert_eq!(block(&text, 3), "l1: recv 1b from 2 tag 0\n");
}

#[test]
fn s5_4_allreduce_recdoub() {
    let expected = |s: [i32; 3]| {
        format!(
            "l1: send {a}b to 4 tag 0\nl2: recv {a}b from 4 tag 0\nl3: send {b}b to 7 tag 0\nl3 requires l2\n\
             l4: recv {b}b from 7 tag 0\nl5: send {c}b to 1 tag 0\nl5 requires l4\nl6: recv {c}b from 1 tag 0\n\
             l7: send {c}b to 1 tag 0\nl7 requires l6\nl8: recv {c}b from 1 tag 0\nl9: send {b}b to 7 tag 0\n\
             l9 requires l8\nl10: recv {b}b from 7 tag 0\nl11: send {a}b to 4 tag 0\nl11 requires l10\n\
             l12: recv {a}b from 4 tag 0\n",
            a = s[0],
            b = s[1],
            c = s[2]
        )
    };
    let (text, _) = gen("allreduce_recdoub", opts(8, 64));
    assert_eq!(block(&text, 5), expected([32, 16, 8]));
    let (text, _) = gen("allreduce_recdoub", opts(8, 1));
    assert_eq!(block(&text, 5), expected([0, 0, 0]));
    let o = PatternOptions {
        rpl_dep_cmp: 7,
        ..opts(4, 100)
    };
    let (text, _) = generate("allreduce_recdoub", &o, 1, None).unwrap();
    assert_eq!(
        block(&text, 0),
        "l1: send 50b to 1 tag 0\nl2: recv 50b from 1 tag 0\nl3: calc 7 cpu 0\nl4: send 25b to 2 tag 0\n\
         l4 requires l3\nl5: recv 25b from 2 tag 0\nl6: calc 7 cpu 0\nl7: send 25b to 2 tag 0\nl7 requires l6\n\
         l8: recv 25b from 2 tag 0\nl9: calc 7 cpu 0\nl10: send 50b to 1 tag 0\nl10 requires l9\n\
         l11: recv 50b from 1 tag 0\n"
    );
}

#[test]
fn s5_5_linear_alltoall() {
    let (text, _) = gen("linear_alltoall", opts(4, 1));
    assert_eq!(
        block(&text, 1),
        "l1: send 1b to 2 tag 0\nl2: recv 1b from 0 tag 0\nl3: send 1b to 3 tag 0\nl4: recv 1b from 3 tag 0\n\
         l5: send 1b to 0 tag 0\nl6: recv 1b from 2 tag 0\n"
    );
}

#[test]
fn s5_6_linear_alltoallv() {
    let (text, _) = gen("linear_alltoallv", opts(3, 100));
    assert_eq!(
        block(&text, 0),
        "l1: send 84b to 1 tag 0\nl2: recv 100b from 2 tag 0\nl3: send 87b to 2 tag 0\nl4: recv 100b from 1 tag 0\n"
    );
    assert_eq!(
        block(&text, 1),
        "l1: send 16b to 2 tag 0\nl2: recv 84b from 0 tag 0\nl3: send 100b to 0 tag 0\nl4: recv 94b from 2 tag 0\n"
    );
    assert_eq!(
        block(&text, 2),
        "l1: send 100b to 0 tag 0\nl2: recv 16b from 1 tag 0\nl3: send 94b to 1 tag 0\nl4: recv 87b from 0 tag 0\n"
    );
}

#[test]
fn s5_7_nwaydissemination() {
    let o = PatternOptions {
        nway: 2,
        ..opts(9, 5)
    };
    let (text, _) = gen("nwaydissemination", o);
    assert_eq!(
        block(&text, 0),
        "l1: send 5b to 1 tag 0\nl2: send 5b to 2 tag 0\nl3: recv 5b from 8 tag 0\nl4: recv 5b from 7 tag 0\n\
         l5: send 5b to 3 tag 0\nl6: send 5b to 6 tag 0\nl7: calc 5\nl7 requires l4\nl7 requires l3\n\
         l8: calc 5\nl8 requires l3\nl6 requires l7\nl5 requires l8\nl6 requires l8\n\
         l9: recv 5b from 6 tag 0\nl10: recv 5b from 3 tag 0\n"
    );
}

#[test]
fn s5_8_resnet() {
    let (text, summary) = gen("resnet", opts(2, 1));
    assert!(summary.starts_with("create resnet with 2 nodes\n"));
    let b = block(&text, 0);
    assert!(b.starts_with(
        "l1: calc 119000\nl2: calc 23800\nl2 requires l1\nl3: calc 0\nl3 requires l2\n/* Iallreduce begin */\n\
         l4: send 26046368b to 1 tag 16877216\nl5: recv 26046368b from 1 tag 16877216\nl4 requires l3\n\
         l5 requires l3\n/* Iallreduce end */\nl6: calc 23800\nl6 requires l1\nl7: calc 0\nl7 requires l6\n"
    ), "{b}");
    assert!(b.contains("tag 16877225\n"));
    assert_eq!(
        b.lines()
            .filter(|l| l.starts_with('l') && l.contains(": "))
            .count(),
        41
    );
    // --cpu 1 prints `cpu 0` for resnet's calcs.
    let (text, _) = generate("resnet", &opts(2, 1), 1, None).unwrap();
    assert!(text.contains("l1: calc 119000 cpu 0\n"));
}

#[test]
fn s5_9_chained_dissem() {
    let (text, _) = gen("chained_dissem", opts(2, 1));
    let b = block(&text, 0);
    assert!(b.starts_with(
        "/* Iallreduce begin */\nl1: send 10000b to 1 tag 16877216\nl2: recv 10000b from 1 tag 16877216\n\
         /* Iallreduce end */\nl3: send 0b to 9999999 tag 16877216\nl3 requires l1\nl3 requires l2\n\
         /* Iallreduce begin */\nl4: send 10000b to 1 tag 16877217\nl5: recv 10000b from 1 tag 16877217\n\
         /* Iallreduce end */\nl6: send 0b to 9999999 tag 16877217\nl4 requires l3\nl5 requires l3\n\
         l6 requires l4\nl6 requires l5\n"
    ), "{b}");
    assert!(b.contains("l15: send 0b to 9999999"));
    assert!(!b.contains("l16:"));
}

#[test]
fn prelude_and_gather_with_root() {
    let o = PatternOptions {
        root: 2,
        ..opts(4, 3)
    };
    let (text, _) = generate("gather", &o, 0, Some(Prelude { nb: 0, poll: 0 })).unwrap();
    assert_eq!(
        block(&text, 2),
        "l1: calc 0\nl2: recv 3b from 1 tag 0\nl3: recv 3b from 0 tag 0\nl4: recv 3b from 3 tag 0\n"
    );
    assert_eq!(block(&text, 0), "l1: calc 0\nl2: send 3b to 2 tag 0\n");
}

#[test]
fn linbarrier_and_doublering() {
    let (text, _) = gen("linbarrier", opts(3, 99));
    assert_eq!(
        block(&text, 0),
        "l1: calc 0\nl2: recv 1b from 1 tag 0\nl3: send 1b to 1 tag 0\nl1 requires l2\nl3 requires l1\n\
         l4: recv 1b from 2 tag 0\nl5: send 1b to 2 tag 0\nl1 requires l4\nl5 requires l1\n"
    );
    assert_eq!(
        block(&text, 2),
        "l1: send 1b to 0 tag 0\nl2: recv 1b from 0 tag 0\n"
    );
    let (text, _) = gen("doublering", opts(3, 4));
    assert_eq!(
        block(&text, 1),
        "l1: send 4b to 2 tag 0\nl2: recv 4b from 0 tag 0\nl1 requires l2\nl3: send 4b to 0 tag 0\n\
         l4: recv 4b from 2 tag 0\nl3 requires l4\n"
    );
}

#[test]
fn random_bisect_structure_and_seed() {
    for name in ["random_bisect", "random_bisect_fd_sym"] {
        let o = PatternOptions {
            seed: 7,
            ..opts(9, 4)
        };
        let (a, _) = gen(name, o.clone());
        let (b, _) = gen(name, o);
        assert_eq!(a, b, "same seed, same output");
        assert!(a.starts_with("num_ranks 8\n"), "odd P reduced by one");
        let mut partner = [usize::MAX; 8];
        let mut senders = 0;
        for (r, p) in partner.iter_mut().enumerate() {
            let blk = block(&a, r);
            let first = blk.lines().next().unwrap();
            let peer: usize = first.split_whitespace().nth(4).unwrap().parse().unwrap();
            if first.contains(": send") {
                senders += 1;
            }
            *p = peer;
            assert_eq!(
                blk.lines().count(),
                if name == "random_bisect" { 1 } else { 2 }
            );
        }
        assert_eq!(senders, 4);
        for r in 0..8 {
            assert_eq!(partner[partner[r]], r, "pairing is symmetric");
            assert_ne!(partner[r], r);
        }
    }
}

#[test]
fn invalid_options_are_errors() {
    let e = generate("nosuch", &opts(4, 1), 0, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown pattern `nosuch`"), "{e}");
    let e = generate("linear_alltoallv", &opts(4, 0), 0, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("division by zero"), "{e}");
    let e = generate(
        "nwaydissemination",
        &PatternOptions {
            nway: 0,
            ..opts(4, 1)
        },
        0,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--nway"), "{e}");
}
