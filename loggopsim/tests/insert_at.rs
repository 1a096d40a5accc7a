//! `--insert-at start|after-o` (docs/thesis.md): the thesis's chapter-4
//! integration handed a message to the fabric after the sender's overhead
//! o, chapter 5 at the start of the send. With one message on an idle
//! network the receiver finishes exactly o later under after-o, on every
//! network backend and protocol; the sender's finish does not move; LogGP
//! computes arrivals from t + o + L in both cases and is unchanged.

use std::process::Command;

const O: u64 = 1500;

fn finish_times(net: &[&str], insert_at: &str, goal: &std::path::Path) -> Vec<u64> {
    let o = O.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_loggopsim"))
        .args([
            "-f",
            goal.to_str().unwrap(),
            "-L",
            "0",
            "-o",
            &o,
            "-g",
            "0",
            "-G",
            "0",
        ])
        .args(["-O", "0", "--insert-at", insert_at])
        .args(net)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{net:?} {insert_at}: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.strip_prefix("Host "))
        .map(|l| {
            let (_, v) = l.split_once(": ").unwrap();
            v.trim_end_matches(" ps").parse().unwrap()
        })
        .collect()
}

/// The one-message schedule, in a file of its own per test: the tests of
/// this binary run in parallel threads of one process, and a file named
/// after the pid was rewritten (truncated) by one while another read it.
fn goal() -> tempfile::NamedTempFile {
    let f = tempfile::Builder::new()
        .prefix("insert-at-")
        .suffix(".goal")
        .tempfile()
        .unwrap();
    std::fs::write(
        f.path(),
        "num_ranks 2\nrank 0 {\ns: send 1000b to 1 tag 3\n}\nrank 1 {\nr: recv 1000b from 0 tag 3\n}\n",
    )
    .unwrap();
    f
}

#[test]
fn after_o_delays_the_arrival_by_o_on_every_fabric_backend_and_protocol() {
    let g = goal();
    for net in [
        &[
            "--network",
            "onepiece",
            "--topology",
            "H8_S1",
            "--protocol",
            "notify",
        ][..],
        &[
            "--network",
            "onepiece",
            "--topology",
            "H8_S1",
            "--protocol",
            "notify-v1",
        ],
        &[
            "--network",
            "onepiece",
            "--topology",
            "H8_S1",
            "--protocol",
            "query",
        ],
        &[
            "--network",
            "inproc",
            "--topology",
            "H8_S1",
            "--protocol",
            "notify",
        ],
        &["--network", "flow", "--topology", "H8_S1"],
    ] {
        let start = finish_times(net, "start", g.path());
        let after = finish_times(net, "after-o", g.path());
        assert_eq!(start.len(), 2, "{net:?}");
        // the sender: its overhead, either way
        assert_eq!(start[0], O, "{net:?}");
        assert_eq!(after[0], O, "{net:?}");
        // the receiver: travel time + its overhead, o later under after-o
        assert!(start[1] > 2 * O, "{net:?}: {start:?}");
        assert_eq!(after[1], start[1] + O, "{net:?}: {start:?} {after:?}");
    }
}

#[test]
fn loggp_is_the_same_either_way() {
    let g = goal();
    let net = &["--network", "loggp"][..];
    let start = finish_times(net, "start", g.path());
    assert_eq!(start, finish_times(net, "after-o", g.path()));
    // LogGP with L = 0: arrival at o, received after another o
    assert_eq!(start, vec![O, 2 * O]);
}

#[test]
fn a_bad_value_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_loggopsim"))
        .args(["-f", "x.goal", "--insert-at", "later"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("after-o"));
}
