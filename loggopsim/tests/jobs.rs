//! Several jobs on one fabric (docs/jobs.md): placements (hand-checked on the
//! built-in topologies), the merged rank space, per-job finish times and
//! slowdowns (hand-derived on the flow model), the single-leaf warning,
//! overlap and overflow errors, determinism, and a bounded property test of
//! the job and map parsers and of the placer.

use loggopsim::jobs::{self, JobNeed, Placement};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_loggopsim");

/// Ping-pong of 1000 B: rank 0 sends, rank 1 answers when it has it.
const PINGPONG: &str = "num_ranks 2\nrank 0 {\ns: send 1000b to 1 tag 0\nr: recv 1000b from 1 tag 0\nr requires s\n}\nrank 1 {\nr: recv 1000b from 0 tag 0\ns: send 1000b to 0 tag 0\ns requires r\n}\n";
/// All-to-all of two ranks, 1000 B each way, both sends at t = 0.
const EXCHANGE: &str = "num_ranks 2\nrank 0 {\ns: send 1000b to 1 tag 0\nr: recv 1000b from 1 tag 0\n}\nrank 1 {\ns: send 1000b to 0 tag 0\nr: recv 1000b from 0 tag 0\n}\n";
/// LogGOPS parameters 0: the network alone sets the times.
const ZERO: [&str; 10] = ["-L", "0", "-o", "0", "-g", "0", "-G", "0", "-O", "0"];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// stdout, the PERFORMANCE line's measured wall time and speed masked
/// (`Time: T s \t Speed: V ev/s`), so that runs compare.
fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| match l.strip_prefix("PERFORMANCE: ") {
            Some(rest) => {
                let f: Vec<&str> = rest.split(" \t ").collect();
                format!(
                    "PERFORMANCE: {} \t {} \t Time: T s \t Speed: V ev/s\n",
                    f[0], f[1]
                )
            }
            None => format!("{l}\n"),
        })
        .collect()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn topo(name: &str) -> ibnet::topology::Topology {
    ibnet::topology::open(name).unwrap()
}

/// Places jobs of the given sizes and placements; HCA names per job.
fn place(t: &str, jobs: &[(u32, Placement, Option<&str>)]) -> Result<Vec<Vec<String>>, String> {
    let topo = topo(t);
    let needs: Vec<JobNeed> = jobs
        .iter()
        .enumerate()
        .map(|(j, (n, p, m))| JobNeed {
            label: format!("job {j}"),
            ranks: *n,
            placement: p,
            map_text: *m,
        })
        .collect();
    jobs::place(&topo, &needs).map(|v| {
        v.iter()
            .map(|hs| hs.iter().map(|&h| topo.nodes[h].name.clone()).collect())
            .collect()
    })
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// H8_S2: SW_1 holds H_1..H_4, SW_2 holds H_5..H_8 (docs/topology.md).
#[test]
fn linear_takes_the_next_free_hosts_in_rank_order() {
    let p = place(
        "H8_S2",
        &[(3, Placement::Linear, None), (2, Placement::Linear, None)],
    )
    .unwrap();
    assert_eq!(
        p,
        vec![names(&["H_1", "H_2", "H_3"]), names(&["H_4", "H_5"])]
    );
}

#[test]
fn round_robin_takes_one_host_per_leaf_in_turn() {
    // Leaves SW_1, SW_2: job 0 gets H_1 (SW_1), H_5 (SW_2), H_2 (SW_1);
    // job 1 starts again at SW_1: its next free host H_3, then SW_2's H_6.
    let p = place(
        "H8_S2",
        &[
            (3, Placement::RoundRobin, None),
            (2, Placement::RoundRobin, None),
        ],
    )
    .unwrap();
    assert_eq!(
        p,
        vec![names(&["H_1", "H_5", "H_2"]), names(&["H_3", "H_6"])]
    );
    // fattree:4 (= H8_S6): leaf l holds H_{2l+1}, H_{2l+2}.
    let p = place("fattree:4", &[(5, Placement::RoundRobin, None)]).unwrap();
    assert_eq!(p, vec![names(&["H_1", "H_3", "H_5", "H_7", "H_2"])]);
}

#[test]
fn maps_are_placed_first_and_others_fill_around_them() {
    // Job 1's map takes H_2 (by name) and H_1 (index 0 of the rank order);
    // job 0 (linear, listed first) gets the next free ones: H_3, H_4.
    let p = place(
        "H8_S2",
        &[
            (2, Placement::Linear, None),
            (
                2,
                Placement::Map("m.txt".into()),
                Some("# hosts of job 1\nH_2\n\n0 # index\n"),
            ),
        ],
    )
    .unwrap();
    assert_eq!(p, vec![names(&["H_3", "H_4"]), names(&["H_2", "H_1"])]);
}

#[test]
fn random_is_seeded_and_reproducible() {
    let a = place("fattree:8", &[(6, Placement::Random(7), None)]).unwrap();
    let b = place("fattree:8", &[(6, Placement::Random(7), None)]).unwrap();
    assert_eq!(a, b);
    // Distinct hosts of the topology.
    let mut s = a[0].clone();
    s.sort();
    s.dedup();
    assert_eq!(s.len(), 6);
    // The seed matters: 20 seeds give more than one placement.
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..20 {
        seen.insert(place("fattree:8", &[(6, Placement::Random(seed), None)]).unwrap());
    }
    assert!(seen.len() > 10, "{seen:?}");
    // The sequence is fixed by the seed on every platform (SplitMix64):
    // this placement may never change between versions.
    assert_eq!(
        place("H8_S2", &[(3, Placement::Random(42), None)]).unwrap(),
        vec![names(&["H_6", "H_7", "H_3"])]
    );
    // Random avoids hosts taken by earlier jobs.
    let p = place(
        "H8_S2",
        &[
            (6, Placement::Linear, None),
            (2, Placement::Random(1), None),
        ],
    )
    .unwrap();
    let mut r = p[1].clone();
    r.sort();
    assert_eq!(r, names(&["H_7", "H_8"]));
}

#[test]
fn overlap_and_overflow_are_errors_naming_the_jobs() {
    let e = place(
        "H8_S2",
        &[
            (1, Placement::Map("a.txt".into()), Some("H_3\n")),
            (2, Placement::Map("b.txt".into()), Some("H_1\nH_3\n")),
        ],
    )
    .unwrap_err();
    assert_eq!(
        e,
        "job 0 and job 1 overlap: both place a rank on HCA H_3 (rank 1 of job 1); jobs must use \
         distinct HCAs"
    );
    let e = place(
        "H8_S2",
        &[
            (5, Placement::Linear, None),
            (4, Placement::RoundRobin, None),
        ],
    )
    .unwrap_err();
    assert_eq!(
        e,
        "job 1 does not fit: it needs 4 HCAs but only 3 of the 8 HCAs of topology H8_S2 are free \
         (job 0 holds 5); use a larger --topology (e.g. fattree:P)"
    );
    let bad = |text: &str| {
        place("H8_S2", &[(2, Placement::Map("m.txt".into()), Some(text))]).unwrap_err()
    };
    assert_eq!(
        bad("H_1\nSW_1\n"),
        "job 0: m.txt:2: SW_1 is a switch, not an HCA"
    );
    assert_eq!(
        bad("H_1\nH_9\n"),
        "job 0: m.txt:2: no HCA named \"H_9\" in topology H8_S2"
    );
    assert_eq!(
        bad("H_1\n8\n"),
        "job 0: m.txt:2: HCA index 8 is out of range (topology H8_S2 has 8 HCAs, 0..7)"
    );
    assert_eq!(
        bad("H_1\n0\n"),
        "job 0: m.txt:2: HCA H_1 is given twice (ranks 0 and 1)"
    );
    assert_eq!(
        bad("H_1\n"),
        "job 0: m.txt: 1 HCAs for a job of 2 ranks (one HCA per rank, one per line)"
    );
    assert_eq!(
        bad("H_1\nH_2\nH_3\n"),
        "job 0: m.txt:3: more lines than the job's 2 ranks (one HCA per rank)"
    );
    assert_eq!(
        bad("H_1 H_2\n"),
        "job 0: m.txt:1: expected one HCA (a name or an index) per line, found \"H_1 H_2\""
    );
}

#[test]
fn cli_overlap_overflow_and_bad_specs_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let pp = write(d.path(), "pp.goal", PINGPONG);
    let m = write(d.path(), "m.txt", "H_1\nH_2\n");
    let pp = pp.to_str().unwrap();
    let a = format!("{pp}:map:{}", m.display());
    let o = run(&[
        "--network",
        "flow",
        "--topology",
        "H8_S2",
        "--job",
        &a,
        "--job",
        &a,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains(&format!(
            "job 0 ({pp}) and job 1 ({pp}) overlap: both place a rank on HCA H_1"
        )),
        "{}",
        err(&o)
    );
    let o = run(&[
        "--network",
        "flow",
        "--topology",
        "H8_S1",
        "--job",
        pp,
        "--job",
        pp,
        "--job",
        pp,
        "--job",
        pp,
        "--job",
        pp,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains(&format!(
            "job 4 ({pp}) does not fit: it needs 2 HCAs but only 0 of the 8 HCAs of topology H8_S1 are free"
        )),
        "{}",
        err(&o)
    );
    let o = run(&["--job", &format!("{pp}:random:x")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("seed must be an integer"), "{}", err(&o));
    let o = run(&["--job", "/nonexistent/x.goal"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("job 0: /nonexistent/x.goal: "),
        "{}",
        err(&o)
    );
    let o = run(&["-f", pp, "--job", pp]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[
        "--network",
        "flow",
        "--job",
        pp,
        "--map",
        m.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--map cannot be combined with --job"),
        "{}",
        err(&o)
    );
    let o = run(&["--network", "ipc", "--key", "k", "--job", pp, "--slowdown"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--slowdown needs a fabric per alone run"),
        "{}",
        err(&o)
    );
}

/// The flow model, thesis-ddr: 500 ps/B per link direction, 100 ns per
/// switch on the route; LogGOPS parameters 0.
///
/// Round-robin on H8_S2: the ping-pong on H_1 (SW_1), H_5 (SW_2); the
/// exchange on H_2 (SW_1), H_6 (SW_2). Alone, each 1000 B message takes
/// 2 x 100 ns + 1000 x 500 ps = 700 ns: ping-pong 1.4 us, exchange 0.7 us.
/// Together, the ping (H_1 -> H_5) and the exchange's H_2 -> H_6 start at
/// 0 and share the link SW_1 -> SW_2 max-min: 1000 ps/B each, arrival
/// 200 ns + 1 us = 1.2 us. The reply H_5 -> H_1 starts at 1.2 us with the
/// link SW_2 -> SW_1 free again (the exchange's H_6 -> H_2 ended at 0.7
/// us): 1.2 + 0.7 = 1.9 us. Slowdowns 1.9/1.4 and 1.2/0.7.
#[test]
fn flow_slowdown_hand_derived() {
    let d = tempfile::tempdir().unwrap();
    let pp = write(d.path(), "pp.goal", PINGPONG);
    let x = write(d.path(), "x.goal", EXCHANGE);
    let jp = format!("{}:round-robin", pp.display());
    let jx = format!("{}:round-robin", x.display());
    let mut args = vec![
        "--network",
        "flow",
        "--topology",
        "H8_S2",
        "--job",
        &jp,
        "--job",
        &jx,
        "--slowdown",
        "--json",
    ];
    args.extend(ZERO);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(!err(&o).contains("warning"), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(
        v["finish_times_ps"],
        serde_json::json!([1900000, 1200000, 700000, 1200000])
    );
    let j = &v["jobs"];
    assert_eq!(j[0]["hcas"], serde_json::json!(["H_1", "H_5"]));
    assert_eq!(j[1]["hcas"], serde_json::json!(["H_2", "H_6"]));
    assert_eq!(j[0]["leaf_switches"], serde_json::json!(["SW_1", "SW_2"]));
    assert_eq!(j[0]["finish_time_ps"], 1900000);
    assert_eq!(j[0]["alone_finish_time_ps"], 1400000);
    assert_eq!(
        j[0]["finish_times_ps"],
        serde_json::json!([1900000, 1200000])
    );
    assert_eq!(
        j[0]["alone_finish_times_ps"],
        serde_json::json!([1400000, 700000])
    );
    assert_eq!(j[0]["slowdown"].as_f64().unwrap(), 1900000.0 / 1400000.0);
    assert_eq!(j[1]["first_global_rank"], 2);
    assert_eq!(j[1]["finish_time_ps"], 1200000);
    assert_eq!(j[1]["alone_finish_time_ps"], 700000);
    assert_eq!(j[1]["slowdown"].as_f64().unwrap(), 1200000.0 / 700000.0);
    assert_eq!(j[1]["single_switch"], false);
}

/// Both ping-pong ranks on SW_1 (linear: H_1, H_2), the exchange across
/// the switches (map: H_3, H_5): the ping-pong uses only its own host
/// cables, 100 ns + 500 ns per message = 1.2 us together and alone:
/// slowdown exactly 1, and the warning says why.
#[test]
fn one_leaf_gives_slowdown_one_and_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let pp = write(d.path(), "pp.goal", PINGPONG);
    let x = write(d.path(), "x.goal", EXCHANGE);
    let m = write(d.path(), "m.txt", "H_3\nH_5\n");
    let jp = pp.display().to_string();
    let jx = format!("{}:map:{}", x.display(), m.display());
    let mut args = vec![
        "--network",
        "flow",
        "--topology",
        "H8_S2",
        "--job",
        &jp,
        "--job",
        &jx,
        "--slowdown",
    ];
    args.extend(ZERO);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.contains(&format!(
            "Job 0: {jp} (2 ranks, global 0..2, placement linear) on H_1 H_2 (leaves SW_1)\n  \
             finish: 1200000 ps (1.2 us); alone: 1200000 ps (1.2 us); slowdown: 1.000000\n  \
             rank 0 (global 0, H_1): 1200000 ps; alone: 1200000 ps\n  \
             rank 1 (global 1, H_2): 600000 ps; alone: 600000 ps\n"
        )),
        "{text}"
    );
    let stderr = err(&o);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warnings,
        vec![format!(
            "loggopsim: warning: job 0 ({jp}): all 2 ranks are on leaf switch SW_1: its traffic \
             never leaves that switch, so it cannot contend with other jobs for inter-switch \
             links (place it with round-robin, random:SEED or map:FILE)"
        )]
    );
}

/// A one-rank job cannot send anything off its leaf either.
#[test]
fn one_rank_job_is_warned_about() {
    let d = tempfile::tempdir().unwrap();
    let c = write(d.path(), "c.goal", "num_ranks 1\nrank 0 {\nc: calc 7\n}\n");
    let x = write(d.path(), "x.goal", EXCHANGE);
    let jc = c.display().to_string();
    let jx = format!("{}:round-robin", x.display());
    let o = run(&[
        "--network",
        "flow",
        "--topology",
        "H8_S2",
        "--job",
        &jc,
        "--job",
        &jx,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(
        err(&o),
        format!(
            "loggopsim: warning: job 0 ({jc}): its only rank is on leaf switch SW_1: its traffic \
             never leaves that switch, so it cannot contend with other jobs for inter-switch \
             links (place it with round-robin, random:SEED or map:FILE)\n"
        )
    );
    // round-robin after H_1: SW_1's next free host H_2, then SW_2's H_5.
    assert!(
        out(&o).contains("on H_2 H_5 (leaves SW_1 SW_2)"),
        "{}",
        out(&o)
    );
}

/// More than 16 HCAs: the job line counts them (the per-rank lines and
/// --json name them).
#[test]
fn long_jobs_count_their_hosts() {
    let d = tempfile::tempdir().unwrap();
    let mut g = String::from("num_ranks 17\n");
    for r in 0..17 {
        g.push_str(&format!("rank {r} {{\nc: calc 9\n}}\n"));
    }
    let c = write(d.path(), "c.goal", &g);
    let jc = format!("{}:round-robin", c.display());
    // fattree:8: leaves of 4 hosts, leaf l holds H_{4l+1}..H_{4l+4};
    // round-robin over 8 leaves: 8 + 8 + 1 hosts.
    let o = run(&["--network", "flow", "--topology", "fattree:8", "--job", &jc]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.contains(&format!(
            "Job 0: {} (17 ranks, global 0..17, placement round-robin) on 17 HCAs under 8 leaf switches\n  finish: 9 ps (9 ps)\n",
            c.display()
        )),
        "{text}"
    );
    assert!(text.contains("  rank 8 (global 8, H_2): 9 ps\n"), "{text}");
    assert!(
        text.contains("  rank 16 (global 16, H_3): 9 ps\n"),
        "{text}"
    );
}

/// The flit-level fabric (onepiece) on H8_S2, 16000 B messages (several
/// packets): sharing SW_1 -> SW_2 slows the ping-pong down; on one leaf it
/// is not slowed at all.
#[test]
fn onepiece_slowdown_across_and_within_a_leaf() {
    let d = tempfile::tempdir().unwrap();
    let pp = write(d.path(), "pp.goal", &PINGPONG.replace("1000b", "16000b"));
    let x = write(d.path(), "x.goal", &EXCHANGE.replace("1000b", "16000b"));
    let m = write(d.path(), "m.txt", "H_3\nH_5\n");
    let slow = |jp: &str, jx: &str| -> (f64, f64) {
        let mut args = vec![
            "--network",
            "onepiece",
            "--topology",
            "H8_S2",
            "--job",
            jp,
            "--job",
            jx,
            "--slowdown",
            "--json",
        ];
        args.extend(ZERO);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        (
            v["jobs"][0]["slowdown"].as_f64().unwrap(),
            v["jobs"][1]["slowdown"].as_f64().unwrap(),
        )
    };
    let (a, b) = slow(
        &format!("{}:round-robin", pp.display()),
        &format!("{}:round-robin", x.display()),
    );
    assert!(a > 1.2 && b > 1.2, "{a} {b}");
    let (a, b) = slow(
        &pp.display().to_string(),
        &format!("{}:map:{}", x.display(), m.display()),
    );
    assert_eq!((a, b), (1.0, 1.0));
}

/// One job placed linearly is the plain run: the same report, then the
/// job section. LogGP: jobs never interact, so every slowdown is exactly 1
/// and a job's times are its times alone.
#[test]
fn one_job_equals_the_plain_run_and_loggp_jobs_do_not_interact() {
    let d = tempfile::tempdir().unwrap();
    let pp = write(d.path(), "pp.goal", PINGPONG);
    let x = write(d.path(), "x.goal", EXCHANGE);
    let p = pp.to_str().unwrap();
    let plain = run(&["--network", "flow", "--topology", "H8_S2", "-f", p]);
    let job = run(&["--network", "flow", "--topology", "H8_S2", "--job", p]);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(job.status.code(), Some(0));
    assert!(out(&job).starts_with(&out(&plain)), "{}", out(&job));
    assert!(out(&job).len() > out(&plain).len());

    let xs = x.to_str().unwrap();
    let o = run(&["--job", p, "--job", xs, "--job", p, "--slowdown", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("note: --network loggp has no topology"));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    for j in v["jobs"].as_array().unwrap() {
        assert_eq!(j["slowdown"].as_f64(), Some(1.0));
        assert_eq!(j["finish_times_ps"], j["alone_finish_times_ps"]);
        assert_eq!(j["hcas"], serde_json::json!([]));
    }
    // Default parameters: L=2500 o=1500 g=1000 G=6 ps. The ping-pong's
    // rank 0 sends at 0 (o until 1500), the message arrives at
    // 1500 + 2500 + 999*6 = 9994; rank 1 receives until 9994 + 1500 =
    // 11494, sends until 12994, the reply arrives at 12994 + 2500 + 5994 =
    // 21488, received until 22988.
    assert_eq!(v["jobs"][0]["finish_time_ps"], 22988);
    assert_eq!(v["jobs"][2]["finish_time_ps"], 22988);
    assert_eq!(v["jobs"][2]["first_global_rank"], 4);
}

#[test]
fn print_map_and_determinism() {
    let d = tempfile::tempdir().unwrap();
    let pp = write(d.path(), "pp.goal", PINGPONG);
    let x = write(d.path(), "x.goal", EXCHANGE);
    let jp = format!("{}:random:3", pp.display());
    let jx = format!("{}:round-robin", x.display());
    let o = run(&[
        "--topology",
        "H8_S2",
        "--job",
        &jp,
        "--job",
        &jx,
        "--print-map",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let lines: Vec<String> = out(&o).lines().map(String::from).collect();
    assert_eq!(lines.len(), 4);
    for (r, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("{r} H_")), "{l}");
    }
    // Byte-identical output twice (text and JSON without the wall clock).
    let mut args = vec![
        "--network",
        "flow",
        "--topology",
        "H8_S2",
        "--job",
        &jp,
        "--job",
        &jx,
        "--slowdown",
    ];
    args.extend(ZERO);
    let a = run(&args);
    let b = run(&args);
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(out(&a), out(&b));
    assert_eq!(a.stderr, b.stderr);
    let o2 = run(&[
        "--topology",
        "H8_S2",
        "--job",
        &jp,
        "--job",
        &jx,
        "--print-map",
    ]);
    assert_eq!(o.stdout, o2.stdout);
}

fn placement_strategy() -> impl Strategy<Value = Placement> {
    prop_oneof![
        Just(Placement::Linear),
        Just(Placement::RoundRobin),
        any::<u64>().prop_map(Placement::Random),
        "[a-z:/._-]{1,12}".prop_map(|f| Placement::Map(PathBuf::from(f))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Arbitrary text never panics the job parser; a well-formed
    /// FILE:PLACEMENT parses back to its parts.
    #[test]
    fn job_spec_parser(s in "\\PC{0,40}", file in "[a-zA-Z0-9_./-]{1,20}", pl in placement_strategy()) {
        let _ = jobs::parse_job_spec(&s);
        let _ = jobs::parse_placement(&s);
        let spec = jobs::parse_job_spec(&format!("{file}:{pl}")).unwrap();
        prop_assert_eq!(spec.file, PathBuf::from(&file));
        prop_assert_eq!(spec.placement, pl);
        let spec = jobs::parse_job_spec(&file).unwrap();
        prop_assert_eq!(spec.placement, Placement::Linear);
    }

    /// The placer on random job mixes: either an error, or every job gets
    /// exactly its number of distinct HCAs, no HCA is shared, and a map
    /// job gets the hosts its map names.
    #[test]
    fn placer(sizes in proptest::collection::vec((1u32..6, 0u8..4, any::<u64>()), 1..5),
              map_text in "[H_0-9\n#]{0,30}") {
        let topo = ibnet::topology::open("fattree:6").unwrap(); // 18 HCAs
        let mut pls = Vec::new();
        for (_, k, seed) in &sizes {
            pls.push(match k {
                0 => Placement::Linear,
                1 => Placement::RoundRobin,
                2 => Placement::Random(*seed),
                _ => Placement::Map(PathBuf::from("m.txt")),
            });
        }
        let needs: Vec<JobNeed> = sizes.iter().zip(&pls).enumerate().map(|(j, ((n, _, _), p))| JobNeed {
            label: format!("job {j}"),
            ranks: *n,
            placement: p,
            map_text: Some(&map_text),
        }).collect();
        let first = jobs::place(&topo, &needs);
        // Reproducible: the same jobs give the same hosts (or error).
        prop_assert_eq!(&first, &jobs::place(&topo, &needs));
        match first {
            Err(e) => prop_assert!(e.starts_with("job "), "{}", e),
            Ok(p) => {
                let mut all: Vec<usize> = p.iter().flatten().copied().collect();
                for (j, hs) in p.iter().enumerate() {
                    prop_assert_eq!(hs.len() as u32, sizes[j].0);
                }
                let n = all.len();
                all.sort();
                all.dedup();
                prop_assert_eq!(all.len(), n);
                prop_assert!(all.iter().all(|&h| topo.nodes[h].is_hca()));
            }
        }
    }
}

/// Merging keeps each job's DAG: a merged run of two jobs on LogGP gives
/// each job's ranks their times alone (checked above on the CLI); here the
/// renumbering itself: sends and receives shift by the job's first rank,
/// any-source stays any-source.
#[test]
fn merge_renumbers_peers() {
    use loggopsim::schedule::{Kind, ANY};
    let a = loggopsim::goal::parse_str("a.goal", PINGPONG).unwrap();
    let b = loggopsim::goal::parse_str(
        "b.goal",
        "num_ranks 2\nrank 0 {\nr: recv 8b from -1 tag 0\n}\nrank 1 {\ns: send 8b to 0 tag 0\nc: calc 5\nc requires s\n}\n",
    )
    .unwrap();
    let m = jobs::merge(&[&a, &b]).unwrap();
    assert_eq!(m.num_ranks(), 4);
    assert_eq!(m.num_nodes(), a.num_nodes() + b.num_nodes());
    let peers = |r: u32| -> Vec<(Kind, u32)> {
        m.rank_nodes(r)
            .map(|n| (m.op(n).kind, m.op(n).peer))
            .collect()
    };
    assert_eq!(peers(0), vec![(Kind::Send, 1), (Kind::Recv, 1)]);
    assert_eq!(peers(2), vec![(Kind::Recv, ANY)]);
    assert_eq!(peers(3), vec![(Kind::Send, 2), (Kind::Calc, 0)]);
    let n = m.rank_nodes(3).start;
    assert_eq!(m.requires_dependents(n).collect::<Vec<_>>(), vec![n + 1]);
    assert_eq!(m.depcount(n + 1), 1);
}
