//! One-sided operations over the fabric backends (protocol
//! version 3, `InsertOp`) and the approximate backends (composed from
//! messages).
//!
//! - a put and a get through the scheduler (in-process thread and
//!   one-piece) end exactly at the fabric engine's own completion points
//!   (`Fabric::inject_op`, `take_op_events`) when the LogGP endpoint terms
//!   are 0;
//! - every backend runs a put/get/poll schedule to completion;
//! - a version-2 session is refused for a schedule with put/get, with the
//!   reason, while a plain schedule still runs on it;
//! - property test: random put/get/poll schedules give the same per-rank
//!   times under notify v3 (thread and one-piece) as under query v3 at
//!   1 ps, with no late arrival.

use ibnet::server::{FabricSetup, SetupArgs};
use ibnet::{OpKind, OpPoint};
use ipc_proto::{ProtocolSpec, Time};
use loggopsim::engine::{Params, Report, Sim};
use loggopsim::goal::parse_str;
use loggopsim::network::fabric::CosimArgs;
use loggopsim::network::flow::FastArgs;
use loggopsim::network::{registry, Network};
use proptest::prelude::*;

fn setup(topology: &str) -> SetupArgs {
    SetupArgs {
        topology: topology.into(),
        ..SetupArgs::default()
    }
}

fn args(spec: ProtocolSpec, topology: &str) -> CosimArgs {
    CosimArgs {
        protocol: spec,
        quantum: Time(1),
        // query: F = 1 (a lower bound, so still exact at 1 ps)
        estimate: (spec.protocol == ipc_proto::Protocol::Query).then_some(1.0),
        estimate_base: ipc_proto::EstimateBase::Hops,
        key: None,
        connect_timeout: 1.0,
        fabric: setup(topology),
        fabric_parallel: Default::default(),
        fabric_report: Some(
            std::env::temp_dir().join(format!("one-sided-fabric-{}.txt", std::process::id())),
        ),
        fabric_json: false,
        log_inserts: None,
        log_arrivals: None,
    }
}

/// The default parameters with every LogGOPS cost 0.
fn zero() -> Params {
    let mut p = Params::default();
    (p.l, p.o, p.g, p.big_g, p.big_o) = (0, 0, 0, 0, 0);
    p
}

/// Backend `kind` from the registry (the fast models read `spec` as
/// notify = exact).
fn backend(kind: &str, spec: ProtocolSpec, topology: &str, ranks: u32) -> Box<dyn Network> {
    registry::find(kind)
        .unwrap()
        .make(registry::Setup {
            cosim: &args(spec, topology),
            fast: &FastArgs::default(),
            num_ranks: ranks,
            prebuilt: None,
        })
        .unwrap_or_else(|e| panic!("{kind}: {}", e.message))
}

/// The registered backends but LogGP that run in this process (`ipc`
/// attaches to a fabric process); with `fabric`, only the flit fabric's.
fn backends(fabric: bool) -> impl Iterator<Item = &'static str> {
    registry::all()
        .iter()
        .filter(move |b| {
            b.name != "loggp" && !b.caps.session_key && (!fabric || b.caps.fabric_in_process)
        })
        .map(|b| b.name)
}

fn run(goal: &str, p: Params, kind: &str, spec: ProtocolSpec, topology: &str) -> Report {
    let s = parse_str("t.goal", goal).unwrap();
    let n = s.num_ranks();
    let mut sim = Sim::new(s, p, backend(kind, spec, topology, n)).unwrap();
    sim.run()
        .unwrap_or_else(|e| panic!("{kind} {spec} on {topology}: {e}\n{goal}"));
    sim.report()
}

/// The fabric's own points of one operation on a fresh H8_S1 fabric.
fn fabric_points(src: usize, dst: usize, bytes: u64, kind: OpKind) -> Vec<(OpPoint, u64)> {
    let mut st = FabricSetup::build(&setup("H8_S1")).unwrap();
    let (a, b) = (st.rank_hcas[src], st.rank_hcas[dst]);
    let f = &mut st.fabric;
    f.inject_op(ibnet::Time(0), a, b, bytes, kind).unwrap();
    let mut ev = Vec::new();
    while f.run_until_completion().is_some() {
        ev.extend(f.take_op_events().into_iter().map(|(_, p, t)| (p, t.0)));
    }
    assert!(f.error().is_none());
    ev
}

const PUT: &str = "num_ranks 2\nrank 0 {\nl1: put 1000b to 1 tag 3\nl2: calc 0\nl2 requires l1\n}\nrank 1 {\nl1: poll 1000b from 0 tag 3\nl2: calc 0\nl2 requires l1\n}\n";
const GET: &str = "num_ranks 2\nrank 0 {\nl1: get 1000b from 1 tag 3\nl2: calc 0\nl2 requires l1\n}\nrank 1 {\n}\n";

/// With o = L = g = G = 0 the scheduler adds nothing: the put's poll ends
/// at the fabric's Delivered, its `requires` point at Acked, the get at
/// GetDone, to the picosecond, in every transport and protocol.
#[test]
fn fabric_put_and_get_equal_the_engine_values() {
    let put = fabric_points(0, 1, 1000, OpKind::Put);
    assert_eq!(put.len(), 2);
    assert_eq!((put[0].0, put[1].0), (OpPoint::Delivered, OpPoint::Acked));
    let get = fabric_points(0, 1, 1000, OpKind::Get);
    assert_eq!(get.len(), 1);
    assert_eq!(get[0].0, OpPoint::GetDone);
    // the acknowledgement costs a real (header-only) packet's trip
    assert!(put[1].1 > put[0].1);
    for (kind, spec) in [
        ("inproc", ProtocolSpec::NOTIFY_V3),
        ("onepiece", ProtocolSpec::NOTIFY_V3),
        ("onepiece", ProtocolSpec::QUERY_V3),
    ] {
        let r = run(PUT, zero(), kind, spec, "H8_S1");
        assert!(r.ok(), "{kind} {spec}");
        assert_eq!(r.finish_times, vec![put[1].1, put[0].1], "{kind} {spec}");
        let r = run(GET, zero(), kind, spec, "H8_S1");
        assert!(r.ok(), "{kind} {spec}");
        assert_eq!(r.finish_times, vec![get[0].1, 0], "{kind} {spec}");
    }
}

/// A put to itself and a get from itself follow the fabric's loopback
/// rule: the scheduler's times are the fabric's points of the same
/// operation from an HCA to itself.
#[test]
fn loopback_put_and_get_follow_the_fabric() {
    let put = fabric_points(1, 1, 1000, OpKind::Put);
    let get = fabric_points(1, 1, 1000, OpKind::Get);
    assert_eq!(put.len(), 2);
    let goal = "num_ranks 2\nrank 0 {\n}\nrank 1 {\nl1: put 1000b to 1 tag 3\nl2: calc 0\nl2 requires l1\nl3: poll 1000b from 1 tag 3\nl4: calc 0\nl4 requires l3\n}\n";
    let r = run(goal, zero(), "onepiece", ProtocolSpec::NOTIFY_V3, "H8_S1");
    // rank 1 ends with the later point, the acknowledgement
    assert!(r.ok());
    assert_eq!(r.finish_times, vec![0, put[1].1]);
    let goal =
        "num_ranks 2\nrank 0 {\n}\nrank 1 {\nl1: get 1000b from 1\nl2: calc 0\nl2 requires l1\n}\n";
    let r = run(goal, zero(), "onepiece", ProtocolSpec::NOTIFY_V3, "H8_S1");
    assert_eq!(r.finish_times, vec![0, get[0].1]);
}

/// With G > 0 the target NIC's (s-1)G comes after the delivery, and the
/// acknowledgement leaves after it: remote = Delivered + 999 G, local =
/// Acked + 999 G, get = GetDone + 999 G (docs/rdma.md "LogGP costs").
#[test]
fn fabric_points_plus_the_endpoint_terms() {
    let put = fabric_points(0, 1, 1000, OpKind::Put);
    let get = fabric_points(0, 1, 1000, OpKind::Get);
    let p = Params { big_g: 3, ..zero() };
    let r = run(PUT, p, "onepiece", ProtocolSpec::NOTIFY_V3, "H8_S1");
    assert_eq!(r.finish_times, vec![put[1].1 + 2997, put[0].1 + 2997]);
    let r = run(GET, p, "onepiece", ProtocolSpec::NOTIFY_V3, "H8_S1");
    assert_eq!(r.finish_times, vec![get[0].1 + 2997, 0]);
}

const MIXED: &str = "num_ranks 4
rank 0 {
l1: put 4096b to 1 tag 1
l2: get 2048b from 2 tag 2
l3: calc 100
l3 requires l1
l3 requires l2
l4: send 64b to 3
l4 requires l3
}
rank 1 {
l1: poll 4096b from 0 tag 1
l2: put 100b to 1 tag 7
l2 requires l1
l3: poll 100b from 1 tag 7
}
rank 2 {
l1: get 0b from 2
l2: put 0b to 3 tag 9
l2 requires l1
}
rank 3 {
l1: recv 64b from 0
l2: poll 0b from 2 tag 9
}
";

/// Every backend completes a schedule with puts, gets (also of 0 bytes and
/// to self) and polls, no earlier than LogGP with the same parameters.
#[test]
fn every_backend_runs_one_sided_operations() {
    let p = Params::default();
    let base = run(MIXED, p, "loggp", ProtocolSpec::NOTIFY, "H8_S1");
    assert!(base.ok());
    let mb = *base.finish_times.iter().max().unwrap();
    for kind in backends(false) {
        let r = run(MIXED, p, kind, ProtocolSpec::NOTIFY_V3, "H8_S1");
        assert!(r.ok(), "{kind}: {:?} {}", r.leftovers, r.incomplete_ops);
        let m = *r.finish_times.iter().max().unwrap();
        assert!(m >= mb, "{kind}: {m} < LogGP {mb}");
    }
}

/// A fabric session of version 2 (or 1) cannot carry put/get: refused
/// before the run with the reason; a plain schedule still runs on it.
#[test]
fn version_2_session_refused_for_one_sided_schedules() {
    for spec in [
        ProtocolSpec::NOTIFY,
        ProtocolSpec::QUERY,
        ProtocolSpec::NOTIFY_V1,
    ] {
        let s = parse_str("t.goal", PUT).unwrap();
        let net = backend("onepiece", spec, "H8_S1", 2);
        let e = Sim::new(s, zero(), net).err().expect("refused").to_string();
        assert!(
            e.contains("need protocol version 3")
                && e.contains(&format!("wire version {}", spec.version))
                && e.contains("-v3 on both sides"),
            "{e}"
        );
        let plain = "num_ranks 2\nrank 0 {\nsend 8b to 1\n}\nrank 1 {\nrecv 8b from 0\n}\n";
        let r = run(plain, zero(), "onepiece", spec, "H8_S1");
        assert!(r.ok());
    }
}

/// A random schedule of puts, gets, polls and calcs on `ranks` ranks: each
/// put gets a poll on its target (distinct tags), each rank's operations
/// form a chain with random `requires` gaps.
fn arb_case() -> impl Strategy<Value = (String, Params, &'static str)> {
    (
        prop_oneof![Just("H8_S1"), Just("H8_S2"), Just("fattree:4")],
        2u32..5,
        // small sizes: the reference polls every picosecond
        proptest::collection::vec((0u8..3, 0u32..5, 0u32..5, 0u64..300, any::<bool>()), 1..10),
        (0u64..3000, 0u64..2000, 0u64..2000, 0u64..4),
    )
        .prop_map(|(topo, ranks, ops, (l, o, g, big_g))| {
            let mut body: Vec<Vec<String>> = vec![Vec::new(); ranks as usize];
            let mut polls: Vec<Vec<String>> = vec![Vec::new(); ranks as usize];
            for (i, &(k, a, b, size, chain)) in ops.iter().enumerate() {
                let (src, dst) = ((a % ranks) as usize, (b % ranks) as usize);
                let line = match k {
                    0 => {
                        polls[dst].push(format!("poll {size}b from {src} tag {i}"));
                        format!("put {size}b to {dst} tag {i}")
                    }
                    1 => format!("get {size}b from {dst} tag {i}"),
                    _ => format!("calc {}", size * 10),
                };
                body[src].push(if chain { format!("*{line}") } else { line });
            }
            let mut text = format!("num_ranks {ranks}\n");
            for r in 0..ranks as usize {
                text.push_str(&format!("rank {r} {{\n"));
                let mut n = 0;
                for line in body[r].iter().chain(polls[r].iter()) {
                    n += 1;
                    let (dep, l) = match line.strip_prefix('*') {
                        Some(l) => (true, l),
                        None => (false, line.as_str()),
                    };
                    text.push_str(&format!("l{n}: {l}\n"));
                    if dep && n > 1 {
                        text.push_str(&format!("l{n} requires l{}\n", n - 1));
                    }
                }
                text.push_str("}\n");
            }
            let p = Params {
                l,
                o,
                g,
                big_g,
                big_o: 0,
                ..Params::default()
            };
            (text, p, topo)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, max_shrink_iters: 100, ..ProptestConfig::default() })]

    /// notify v3 (thread and one-piece) == query v3 at 1 ps (one-piece),
    /// per rank to the picosecond, no late arrival.
    #[test]
    fn exact_notify_equals_polling_with_one_sided((goal, p, topo) in arb_case()) {
        let reference = run(&goal, p, "onepiece", ProtocolSpec::QUERY_V3, topo);
        prop_assert!(reference.ok());
        for kind in backends(true) {
            let r = run(&goal, p, kind, ProtocolSpec::NOTIFY_V3, topo);
            prop_assert_eq!(&r.finish_times, &reference.finish_times, "{} on {}\n{}", kind, topo, goal);
            let late = r.network_stats.iter().find(|(k, _)| k == "late_arrivals").map(|x| x.1);
            prop_assert_eq!(late, Some(0));
        }
    }
}

/// The ring barrier of scripts/rdma-barriers: p - 1 steps; in step s rank
/// i puts a flag to i + 1 and polls for the flag of i - 1.
fn ring_barrier(p: u32) -> String {
    let mut t = format!("num_ranks {p}\n");
    for i in 0..p {
        t += &format!("rank {i} {{\n");
        for s in 1..p {
            t += &format!(
                "p{s}: put 8b to {} tag {s}\nw{s}: poll 8b from {} tag {s}\n",
                (i + 1) % p,
                (i + p - 1) % p
            );
            if s > 1 {
                t += &format!("p{s} requires w{}\n", s - 1);
            }
        }
        t += &format!("done: calc 0\ndone requires w{}\n}}\n", p - 1);
    }
    t
}

/// The recursive-doubling barrier of scripts/rdma-barriers (with the extra
/// pre- and post-steps when p is not a power of two).
fn rd_barrier(p: u32) -> String {
    let n = 31 - p.leading_zeros();
    let m = 1u32 << n;
    let r = p - m;
    let mut t = format!("num_ranks {p}\n");
    for i in 0..p {
        t += &format!("rank {i} {{\n");
        let mut last: Option<String> = None;
        if i >= m {
            t += &format!(
                "pre: put 8b to {} tag 100\npost: poll 8b from {} tag 200\n",
                i - m,
                i - m
            );
            last = Some("post".into());
        } else {
            if i < r {
                t += &format!("wpre: poll 8b from {} tag 100\n", i + m);
                last = Some("wpre".into());
            }
            for k in 1..=n {
                let partner = i ^ (1 << (k - 1));
                t += &format!(
                    "p{k}: put 8b to {partner} tag {k}\nw{k}: poll 8b from {partner} tag {k}\n"
                );
                if let Some(l) = &last {
                    t += &format!("p{k} requires {l}\n");
                }
                last = Some(format!("w{k}"));
            }
            if i < r {
                t += &format!("ppost: put 8b to {} tag 200\n", i + m);
                t += &format!("ppost requires {}\n", last.as_ref().unwrap());
            }
        }
        t += "done: calc 0\n";
        if let Some(l) = &last {
            t += &format!("done requires {l}\n");
        }
        t += "}\n";
    }
    t
}

fn barrier_time(goal: &str) -> u64 {
    let r = run(
        goal,
        zero(),
        "onepiece",
        ProtocolSpec::NOTIFY_V3,
        "fattree:8",
    );
    assert!(r.ok(), "{goal}");
    *r.finish_times.iter().max().unwrap()
}

/// docs/rdma.md "Barriers from puts" (NSIM-ACE section 4.2): on fattree:8
/// recursive doubling beats the ring at every size from 4 to 32, the ring
/// grows linearly once it spans leaf switches (every further 8 processes
/// add the same time within 1 %), and recursive doubling is faster at a
/// power of two than just below it.
#[test]
fn put_barriers_ring_linear_and_recursive_doubling_faster() {
    let mut ring = Vec::new();
    let mut rd = Vec::new();
    for p in (4..=32).step_by(4) {
        let (a, b) = (barrier_time(&ring_barrier(p)), barrier_time(&rd_barrier(p)));
        assert!(b < a, "p={p}: recursive doubling {b} ps, ring {a} ps");
        ring.push(a);
        rd.push(b);
    }
    // ring at 8, 16, 24, 32 (indices 1, 3, 5, 7): equal increments
    let inc: Vec<f64> = [1usize, 3, 5]
        .iter()
        .map(|&i| (ring[i + 2] - ring[i]) as f64)
        .collect();
    for d in &inc {
        assert!((d / inc[0] - 1.0).abs() < 0.01, "ring increments {inc:?}");
    }
    // powers of two: 16 < 12 and 32 < 28
    assert!(rd[3] < rd[2] && rd[7] < rd[6], "{rd:?}");
    // the committed figure's data (scripts/rdma-barriers, same rules)
    let csv = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/figures/rdma-barriers.csv"),
    )
    .unwrap();
    for (i, p) in (4..=32).step_by(4).enumerate() {
        assert!(csv.contains(&format!("ring,{p},{},", ring[i])), "ring {p}");
        assert!(
            csv.contains(&format!("recursive-doubling,{p},{},", rd[i])),
            "rd {p}"
        );
    }
}
