//! GOAL grammar: accepted forms and one test per error case. Every error
//! must name file:line:column and say what is wrong in plain words.

use loggopsim::goal::{parse_str, LoadError};
use loggopsim::schedule::{Kind, ANY};

fn err(text: &str) -> (u64, u64, String) {
    match parse_str("t.goal", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(LoadError::Syntax {
            file,
            line,
            col,
            msg,
        }) => {
            assert_eq!(file, "t.goal");
            let shown = LoadError::Syntax {
                file: file.clone(),
                line,
                col,
                msg: msg.clone(),
            }
            .to_string();
            assert!(
                shown.starts_with(&format!("t.goal:{line}:{col}: ")),
                "{shown}"
            );
            (line, col, msg)
        }
        Err(e) => panic!("unexpected error kind {e}"),
    }
}

fn two(body0: &str) -> String {
    format!("num_ranks 2\nrank 0 {{\n{body0}\n}}\nrank 1 {{\n}}\n")
}

#[test]
fn accepts_full_grammar_and_relaxations() {
    let text = "// leading comment\r\nnum_ranks 3\r\n\r\n/* block\r\n comment */\r\nrank 0 {\r\n\tl1: send 10 b to 1 tag 5 cpu 1 nic 2 // trailing\r\n  l2: recv 7b from -1 tag -1 cpu 0 nic 1\r\nl3: calc 99 cpu 3\r\n calc 1\r\nl3 requires l1\r\nl_x2: send 0b to 2\r\nl_x2 irequires l2\r\nl1: calc 5\r\n  }\r\nrank 1 {\n}\nrank 2\n{\nl1: recv 0b from 0\n}";
    let s = parse_str("t.goal", text).unwrap();
    assert_eq!(s.num_ranks(), 3);
    assert_eq!(s.num_cpus(), 4);
    assert_eq!(s.num_nics(), 3);
    let r0: Vec<_> = s.rank_nodes(0).collect();
    assert_eq!(r0.len(), 6, "duplicate label still creates an operation");
    let op = s.op(r0[0]);
    assert_eq!(
        (op.kind, op.size, op.peer, op.tag, op.cpu, op.nic),
        (Kind::Send, 10, 1, 5, 1, 2)
    );
    let op = s.op(r0[1]);
    assert_eq!((op.kind, op.peer, op.tag), (Kind::Recv, ANY, ANY));
    assert_eq!(s.op(r0[3]).size, 1);
    // l3 requires l1; l_x2 irequires l2; "first definition counts" for l1
    assert_eq!(
        s.requires_dependents(r0[0]).collect::<Vec<_>>(),
        vec![r0[2]]
    );
    assert_eq!(
        s.irequires_dependents(r0[1]).collect::<Vec<_>>(),
        vec![r0[4]]
    );
    assert_eq!(s.depcount(r0[2]), 1);
    assert_eq!(s.rank_nodes(2).len(), 1);
}

#[test]
fn schedgen_sign_extended_tag_is_taken_modulo_2_32() {
    let s = parse_str("t.goal", &two("l1: send 1b to 1 tag 18446744071562067974")).unwrap();
    assert_eq!(s.op(0).tag, 0x8000_0006);
}

#[test]
fn error_undefined_label() {
    let (l, c, m) = err(&two("l1: calc 5\nl1 requires l9"));
    assert_eq!((l, c), (4, 13));
    assert!(m.contains("undefined label 'l9'"), "{m}");
}

#[test]
fn error_label_used_before_definition() {
    let (l, c, m) = err(&two("l2 requires l1\nl1: calc 5\nl2: calc 1"));
    assert_eq!((l, c), (3, 1));
    assert!(m.contains("undefined label 'l2'"), "{m}");
}

#[test]
fn error_rank_blocks_out_of_order() {
    let (l, c, m) = err("num_ranks 2\nrank 1 {\n}\nrank 0 {\n}\n");
    assert_eq!((l, c), (2, 6));
    assert!(
        m.contains("out of order") && m.contains("expected rank 0"),
        "{m}"
    );
}

#[test]
fn error_fewer_blocks_than_num_ranks() {
    let (l, _c, m) = err("num_ranks 3\nrank 0 {\n}\nrank 1 {\n}\n");
    assert_eq!(l, 5);
    assert!(m.contains("missing rank 2"), "{m}");
}

#[test]
fn error_more_blocks_than_num_ranks() {
    let (l, c, m) = err("num_ranks 1\nrank 0 {\n}\nrank 1 {\n}\n");
    assert_eq!((l, c), (4, 1));
    assert!(m.contains("more rank blocks than num_ranks 1"), "{m}");
}

#[test]
fn error_peer_out_of_range() {
    let (l, c, m) = err(&two("l1: send 5b to 2"));
    assert_eq!((l, c), (3, 16));
    assert!(m.contains("peer 2 is outside 0..1"), "{m}");
}

#[test]
fn error_cpu_above_255() {
    let (l, c, m) = err(&two("l1: calc 5 cpu 256"));
    assert_eq!((l, c), (3, 16));
    assert!(m.contains("cpu 256 is above 255"), "{m}");
}

#[test]
fn error_nic_above_255() {
    let (_, c, m) = err(&two("l1: send 5b to 1 tag 0 cpu 0 nic 300"));
    assert_eq!(c, 34);
    assert!(m.contains("nic 300 is above 255"), "{m}");
}

#[test]
fn error_number_overflow() {
    let (_, c, m) = err(&two("l1: calc 18446744073709551616"));
    assert_eq!(c, 10);
    assert!(m.contains("does not fit in 64 bits"), "{m}");
}

#[test]
fn error_send_to_any() {
    let (_, c, m) = err(&two("l1: send 5b to -1"));
    assert_eq!(c, 16);
    assert!(m.contains("send to -1"), "{m}");
}

#[test]
fn error_missing_b_suffix() {
    let (_, c, m) = err(&two("l1: send 5 to 1"));
    assert_eq!(c, 12);
    assert!(m.contains("expected 'b'"), "{m}");
}

#[test]
fn error_modifiers_out_of_order() {
    let (_, c, m) = err(&two("l1: send 5b to 1 cpu 0 tag 3"));
    assert_eq!(c, 24);
    assert!(m.contains("out of place"), "{m}");
}

#[test]
fn error_negative_number_other_than_minus_one() {
    let (_, c, m) = err(&two("l1: recv 5b from -2"));
    assert_eq!(c, 18);
    assert!(m.contains("only -1"), "{m}");
}

#[test]
fn error_missing_closing_brace() {
    let (l, _, m) = err("num_ranks 1\nrank 0 {\nl1: calc 5\n");
    assert_eq!(l, 3);
    assert!(m.contains("missing '}'"), "{m}");
}

#[test]
fn error_empty_file() {
    let (l, c, m) = err("");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("empty schedule"), "{m}");
}

#[test]
fn error_num_ranks_zero() {
    let (_, c, m) = err("num_ranks 0\n");
    assert_eq!(c, 11);
    assert!(m.contains("empty"), "{m}");
}

#[test]
fn error_missing_num_ranks() {
    let (l, c, m) = err("rank 0 {\n}\n");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("num_ranks"), "{m}");
}

#[test]
fn error_unexpected_character() {
    let (_, c, m) = err(&two("l1: calc 5 $"));
    assert_eq!(c, 12);
    assert!(m.contains("unexpected character '$'"), "{m}");
}

#[test]
fn error_garbage_after_statement() {
    let (_, c, m) = err(&two("l1: calc 5 to"));
    assert_eq!(c, 12);
    assert!(m.contains("after the statement"), "{m}");
}

#[test]
fn error_tag_too_large() {
    let (_, c, m) = err(&two("l1: send 1b to 1 tag 4294967296"));
    assert_eq!(c, 22);
    assert!(m.contains("32 bits"), "{m}");
}

#[test]
fn error_keyword_as_label() {
    let (_, c, m) = err(&two("tag: calc 5"));
    assert_eq!(c, 1);
    assert!(m.contains("expected an operation or a dependency"), "{m}");
}

#[test]
fn error_unknown_operation() {
    let (_, c, m) = err(&two("l1: compute 5"));
    assert_eq!(c, 5);
    assert!(
        m.contains("expected 'send', 'recv', 'calc', 'put', 'get' or 'poll'"),
        "{m}"
    );
}

#[test]
fn error_missing_brace_after_rank() {
    let (l, _, m) = err("num_ranks 1\nrank 0\n");
    assert_eq!(l, 2);
    assert!(m.contains("expected '{'"), "{m}");
}
