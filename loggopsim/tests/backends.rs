//! The fast backends (docs/backends.md): flow, penalty, lop, next to loggp and the
//! flit fabric (onepiece). Hand-derived flow cases, the thesis schedules
//! on every backend, invariants over all backends, determinism, exact
//! versus poll synchronisation, and clear errors for bad parameters.
//! (The penalty model's Fig. 2 / Fig. 3 tests are unit tests in
//! src/network/penalty.rs.)

use ibnet::server::SetupArgs;
use loggopsim::engine::{Params, Report};
use loggopsim::goal::parse_str;
use loggopsim::network::fabric::CosimArgs;
use loggopsim::network::flow::{FastArgs, FlowNet, FlowTopology};
use loggopsim::network::{fast, registry, Envelope, InFlight, Network};
use loggopsim::Time;
use std::path::{Path, PathBuf};
use std::process::Command;

fn setup(topo: &str) -> SetupArgs {
    SetupArgs {
        topology: topo.into(),
        ..SetupArgs::default()
    }
}

/// thesis-ddr on one switch (H8_S1): 2 GB/s = 500 ps per byte per link
/// direction, 100 ns (ISW 50 + VSW 50) per switch.
fn h8s1(exact: bool) -> FlowNet {
    loggopsim::network::flow::build(&setup("H8_S1"), &FastArgs::default(), exact, 8).unwrap()
}

#[test]
fn preset_numbers() {
    let t = FlowTopology::build(&setup("H8_S1"), &FastArgs::default(), 8).unwrap();
    assert_eq!(t.link_bytes_per_s, 2e9);
    assert_eq!(t.switch_latency_ps, 100_000);
    assert_eq!(t.route(0, 1).unwrap().latency, 100_000);
    assert_eq!(t.route(0, 1).unwrap().links.len(), 2);
    // a self-send loops back at the switch, as in the fabric
    assert_eq!(t.route(3, 3).unwrap().links.len(), 2);
    // qdr: 4 GB/s
    let mut s = setup("H8_S2");
    s.preset = "qdr".into();
    let t = FlowTopology::build(&s, &FastArgs::default(), 8).unwrap();
    assert_eq!(t.link_bytes_per_s, 4e9);
    // factors
    let f = FastArgs {
        latency_factor: 1.5,
        bandwidth_factor: 0.5,
        ..FastArgs::default()
    };
    let t = FlowTopology::build(&setup("H8_S1"), &f, 8).unwrap();
    assert_eq!(t.route(0, 1).unwrap().latency, 150_000);
    assert_eq!(t.link_cap, 0.001);
}

/// One flow: latency + size / rate, in ps: 100 000 + 65 536 x 500.
#[test]
fn one_flow() {
    for exact in [true, false] {
        let mut n = h8s1(exact);
        n.insert(Time(1000), Envelope::new(0, 1, 65_536, 0))
            .unwrap();
        assert_eq!(n.drain(), vec![Time(1000 + 100_000 + 32_768_000)]);
    }
}

/// Two flows into host 2 share its ejection link: half rate each,
/// 65 536 B x 1000 ps/B.
#[test]
fn two_flows_share_a_link() {
    let mut n = h8s1(true);
    n.insert(Time(0), Envelope::new(0, 2, 65_536, 0)).unwrap();
    n.insert(Time(0), Envelope::new(1, 2, 65_536, 0)).unwrap();
    let a = n.wait_exact(Time(0), Time(100_000)).unwrap();
    assert!(a.arrivals.is_empty());
    assert_eq!(n.rate(0), 0.001);
    assert_eq!(n.rate(1), 0.001);
    assert_eq!(n.drain(), vec![Time(100_000 + 65_536_000); 2]);
    // different destinations and sources: no shared link, full rate
    let mut n = h8s1(true);
    n.insert(Time(0), Envelope::new(0, 2, 65_536, 0)).unwrap();
    n.insert(Time(0), Envelope::new(1, 3, 65_536, 0)).unwrap();
    assert_eq!(n.drain(), vec![Time(100_000 + 32_768_000); 2]);
}

/// A flow ending mid-way releases its share: 1000 B and 3000 B into one
/// host share its ejection link (1000 ps/B each) until the first is done
/// at 100 000 + 1 000 000 ps; the second then has 2000 B left at full
/// rate (500 ps/B): + 1 000 000 ps.
#[test]
fn ending_flow_releases_bandwidth() {
    let mut n = h8s1(true);
    n.insert(Time(0), Envelope::new(0, 2, 1000, 0)).unwrap();
    n.insert(Time(0), Envelope::new(1, 2, 3000, 0)).unwrap();
    let a = n.wait_exact(Time(0), Time(u64::MAX)).unwrap();
    assert_eq!(a.arrivals, vec![(0, Time(1_100_000))]);
    assert_eq!(a.grant, Time(2_100_000));
    assert_eq!(n.rate(1), 0.002);
    assert_eq!(n.drain()[1], Time(2_100_000));
    // a late start: the second flow enters at 400 000 when the first has
    // 1000 - 300 000/500 = 400 B left; both at half rate: 400 000 ps; the
    // second then has 2600 B left at full rate: 1 300 000 ps
    let mut n = h8s1(true);
    n.insert(Time(0), Envelope::new(0, 2, 1000, 0)).unwrap();
    n.insert(Time(300_000), Envelope::new(1, 2, 3000, 0))
        .unwrap();
    assert_eq!(n.drain(), vec![Time(800_000), Time(2_100_000)]);
}

/// Max-min on a fat tree: a flow crossing a bottleneck shared with two
/// others gets a third; its other links' spare capacity goes to flows
/// not bottlenecked there (checked as: sum of rates on every link <= C,
/// every flow is bottlenecked somewhere).
#[test]
fn max_min_is_feasible_and_bottlenecked() {
    let args = FastArgs::default();
    let topo = FlowTopology::build(&setup("fattree:16"), &args, 64).unwrap();
    let mut n = FlowNet::new(topo.clone(), true, None);
    let pairs: Vec<(u32, u32)> = (0..40u32).map(|i| (i, (i * 7 + 3) % 64)).collect();
    for &(s, d) in &pairs {
        n.insert(Time(0), Envelope::new(s, d, 1 << 20, 0)).unwrap();
    }
    let maxlat = pairs
        .iter()
        .map(|&(s, d)| topo.route(s, d).unwrap().latency)
        .max()
        .unwrap();
    n.wait_exact(Time(0), Time(maxlat)).unwrap();
    let mut load = std::collections::HashMap::<u32, (f64, Vec<usize>)>::new();
    for (i, &(s, d)) in pairs.iter().enumerate() {
        for l in topo.route(s, d).unwrap().links {
            let e = load.entry(l).or_default();
            e.0 += n.rate(i as u64);
            e.1.push(i);
        }
    }
    let c = topo.link_cap;
    for (l, (sum, _)) in &load {
        assert!(*sum <= c * (1.0 + 1e-9), "link {l} overloaded: {sum} > {c}");
    }
    for (i, &(s, d)) in pairs.iter().enumerate() {
        let r = n.rate(i as u64);
        assert!(r > 0.0);
        // bottleneck: a saturated link where no flow is faster
        let ok = topo.route(s, d).unwrap().links.iter().any(|l| {
            let (sum, fl) = &load[l];
            *sum >= c * (1.0 - 1e-9) && fl.iter().all(|&j| n.rate(j as u64) <= r * (1.0 + 1e-9))
        });
        assert!(ok, "flow {i} ({s}->{d}, rate {r}) has no bottleneck");
    }
}

fn data(rel: &str) -> PathBuf {
    let p = Path::new(env!("IBCOSIM_REFERENCE_DATA_DIR")).join(rel);
    assert!(
        p.exists(),
        "reference data {} is missing (the tests need ../shared/data next to the repository)",
        p.display()
    );
    p
}

fn gen(pattern: &str, ranks: u32, size: u64, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{pattern}-{ranks}-{size}.goal"));
    let st = Command::new(env!("CARGO_BIN_EXE_loggopsim"))
        .args(format!("gen {pattern} -s {ranks} -d {size} -o").split_whitespace())
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(st.status.success(), "{err}");
    out
}

/// Backend `kind` from the registry, on `topo` with the default options
/// (the fabric's report goes to a temporary file).
fn backend(kind: &str, topo: &str, ranks: u32) -> Box<dyn Network> {
    let a = CosimArgs {
        protocol: ipc_proto::ProtocolSpec::NOTIFY,
        quantum: Time(1),
        estimate: None,
        estimate_base: ipc_proto::EstimateBase::Hops,
        key: None,
        connect_timeout: 1.0,
        fabric: setup(topo),
        fabric_parallel: Default::default(),
        fabric_report: Some(
            std::env::temp_dir().join(format!("backends-test-{}.txt", std::process::id())),
        ),
        fabric_json: false,
        log_inserts: None,
        log_arrivals: None,
    };
    registry::find(kind)
        .unwrap()
        .make(registry::Setup {
            cosim: &a,
            fast: &FastArgs::default(),
            num_ranks: ranks,
            prebuilt: None,
        })
        .unwrap_or_else(|e| panic!("{kind}: {}", e.message))
}

/// Every registered backend that runs in this process (`ipc` attaches to a
/// fabric process: tests/networks.rs).
fn in_process() -> impl Iterator<Item = &'static str> {
    registry::all()
        .iter()
        .filter(|b| !b.caps.session_key)
        .map(|b| b.name)
}

fn run(path: &Path, kind: &str, topo: &str) -> Report {
    let s = loggopsim::load_schedule(path).unwrap();
    let n = s.num_ranks();
    fast::run_schedule(s, Params::default(), backend(kind, topo, n)).unwrap()
}

/// Every backend on the thesis's ltest and a dissemination schedule, and
/// on a small all-to-all: all operations complete, and no backend beats
/// LogGP (the engine processes a message no earlier than t + o + L, the
/// networks only add). The contention-aware backends see the all-to-all's
/// contention: flow and penalty are at least the serialisation of one
/// host's 7 x 4096 B at 500 ps/B.
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks"
)]
fn every_backend_on_the_thesis_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let ltest = data("thesis/ltest/ltest.goal");
    let ring = data("thesis/ringtest/ringtest_durations.goal");
    let diss = gen("dissemination", 16, 8, dir.path());
    let a2a = gen("linear_alltoall", 8, 4096, dir.path());
    for (path, topo) in [
        (&ltest, "H8_S1"),
        (&ring, "H8_S1"),
        (&diss, "fattree:16"),
        (&a2a, "H8_S2"),
    ] {
        let mut ranks = 0;
        let base = run(path, "loggp", topo);
        for kind in in_process() {
            let r = run(path, kind, topo);
            ranks = r.finish_times.len();
            assert!(r.ok(), "{kind} on {}: incomplete", path.display());
            assert_eq!(r.finish_times.len(), base.finish_times.len());
            let (mx, mb) = (
                r.finish_times.iter().max().unwrap(),
                base.finish_times.iter().max().unwrap(),
            );
            assert!(mx >= mb, "{kind} on {}: {mx} < LogGP {mb}", path.display());
            // (lop models no contention)
            if path == &a2a && kind != "loggp" && kind != "lop" {
                assert!(*mx >= 7 * 4096 * 500, "{kind}: {mx}");
            }
        }
        assert!(ranks > 0);
    }
}

/// More ranks than the topology maps: a clear error.
#[test]
fn too_many_ranks_is_a_clear_error() {
    let e = fast::build(
        "flow",
        &setup("H8_S1"),
        &FastArgs::default(),
        ipc_proto::ProtocolSpec::NOTIFY,
        9,
    )
    .err()
    .unwrap();
    assert!(
        e.contains("the schedule has 9 ranks but the fabric (H8_S1) maps only 8"),
        "{e}"
    );
}

/// Exact notification and polling give identical results (flow, penalty).
#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the reference IB model's networks"
)]
fn exact_equals_poll() {
    let dir = tempfile::tempdir().unwrap();
    let a2a = gen("linear_alltoall", 16, 20000, dir.path());
    let ltest = data("thesis/ltest/ltest.goal");
    for path in [&a2a, &ltest] {
        for kind in ["flow", "penalty"] {
            let s = loggopsim::load_schedule(path).unwrap();
            let n = s.num_ranks();
            let r: Vec<Report> = [
                ipc_proto::ProtocolSpec::NOTIFY,
                ipc_proto::ProtocolSpec::QUERY,
            ]
            .into_iter()
            .map(|p| {
                let net =
                    fast::build(kind, &setup("fattree:16"), &FastArgs::default(), p, n).unwrap();
                fast::run_schedule(s.clone(), Params::default(), net).unwrap()
            })
            .collect();
            assert_eq!(r[0].finish_times, r[1].finish_times, "{kind}");
        }
    }
}

/// Same input, same bytes: the CLI's finish times twice (the fast models).
#[test]
fn deterministic_output() {
    let dir = tempfile::tempdir().unwrap();
    let a2a = gen("linear_alltoall", 32, 3000, dir.path());
    for kind in registry::fast_names() {
        let out: Vec<Vec<u8>> = (0..2)
            .map(|_| {
                let o = Command::new(env!("CARGO_BIN_EXE_loggopsim"))
                    .arg("-f")
                    .arg(&a2a)
                    .args(["--network", kind, "--topology", "fattree:16", "--json"])
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                // drop the wall-clock fields
                String::from_utf8(o.stdout)
                    .unwrap()
                    .lines()
                    .filter(|l| !(l.contains("wall_") || l.contains("cpu_") || l.contains("per_")))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into_bytes()
            })
            .collect();
        assert_eq!(out[0], out[1], "{kind}");
        assert!(String::from_utf8_lossy(&out[0]).contains("\"finish_times_ps\""));
    }
}

/// Bad parameters: exit 2 and a message naming the option.
#[test]
fn bad_parameters_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("x.goal");
    std::fs::write(
        &g,
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n",
    )
    .unwrap();
    for (words, msg) in [
        (
            "--network flow --latency-factor 0",
            "--latency-factor 0: must be a finite number > 0",
        ),
        (
            "--network penalty --bandwidth-factor=-1",
            "--bandwidth-factor -1: must be",
        ),
        (
            "--network flow --protocol notify-v1",
            "--protocol notify-v1 is not supported",
        ),
        ("--network flow --topology nope", "topology nope"),
        ("--network penalty --preset nope", "--preset nope"),
        (
            "--network flow --set link_speed=abc",
            "parameter `link_speed`: `abc`",
        ),
        ("--network lop --lop-L 1,2", "--lop-L 1,2: expected 6"),
        ("--network lop --lop-set x", "--lop-set x: unknown"),
        ("--network lop --lop-G abc", "--lop-G abc"),
    ] {
        let args: Vec<&str> = words.split_whitespace().collect();
        let o = Command::new(env!("CARGO_BIN_EXE_loggopsim"))
            .arg("-f")
            .arg(&g)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

/// Zero-byte and self messages: a 0-byte message takes the route latency;
/// a self-send uses the host's injection and ejection links.
#[test]
fn zero_bytes_and_self_sends() {
    let mut n = h8s1(true);
    n.insert(Time(0), Envelope::new(0, 1, 0, 0)).unwrap();
    n.insert(Time(0), Envelope::new(4, 4, 1000, 0)).unwrap();
    assert_eq!(n.drain(), vec![Time(100_000), Time(100_000 + 500_000)]);
}

/// The minimum latency handed to the engine is a true lower bound.
#[test]
fn min_latency_is_a_lower_bound() {
    let n = h8s1(true);
    assert_eq!(n.min_latency(), Time(100_000));
    let _ = parse_str; // (schedules are read from files here)
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Random flows on H8_S2 (thesis-ddr): every arrival lies between
        /// its uncontended time (latency + size x 500 ps/B) and the time
        /// at 1/N of the link rate (N flows); exact notification and the
        /// poll answers agree.
        #[test]
        fn arrivals_within_bounds(
            flows in proptest::collection::vec((0u64..2_000_000, 0u32..8, 0u32..8, 0u64..20_000), 1..24)
        ) {
            let mut fl = flows.clone();
            fl.sort_by_key(|f| f.0);
            let topo = FlowTopology::build(&setup("H8_S2"), &FastArgs::default(), 8).unwrap();
            let mut a = FlowNet::new(topo.clone(), true, None);
            for &(t, s, d, b) in &fl {
                a.insert(Time(t), Envelope::new(s, d, b, 0)).unwrap();
            }
            let arr = a.drain();
            let n = fl.len() as u64;
            for (i, &(t, s, d, b)) in fl.iter().enumerate() {
                let lat = topo.route(s, d).unwrap().latency;
                prop_assert!(arr[i].0 >= t + lat + b * 500, "{i}: {:?}", arr[i]);
                prop_assert!(arr[i].0 <= t + lat + b * 500 * n + 1, "{i}: {:?}", arr[i]);
            }
            // poll: query each message at its arrival (in time order)
            let mut p = FlowNet::new(topo, false, None);
            for &(t, s, d, b) in &fl {
                p.insert(Time(t), Envelope::new(s, d, b, 0)).unwrap();
            }
            let mut order: Vec<usize> = (0..fl.len()).collect();
            order.sort_by_key(|&i| (arr[i], i));
            let last_insert = fl.last().unwrap().0;
            for i in order {
                let now = arr[i].max(Time(last_insert));
                let m = InFlight { handle: i as u64, start: Time(fl[i].0) };
                let q = p.query(now, m).unwrap();
                prop_assert_eq!(q, arr[i]);
            }
        }

        /// The LoP parameter lists never panic on arbitrary text.
        #[test]
        fn lop_lists_never_panic(s in ".{0,40}") {
            let a = FastArgs { lop_l: Some(s.clone()), lop_o: Some(s), ..FastArgs::default() };
            let _ = loggopsim::network::lop::build(&a, 4);
        }
    }
}

/// The command line takes every registered backend: `--help` lists each
/// with its help line, and each one that runs in this process runs the
/// ping-pong example through `--network NAME` to the end.
#[test]
fn command_line_takes_every_registered_backend() {
    let bin = env!("CARGO_BIN_EXE_loggopsim");
    let help = Command::new(bin).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for b in registry::all() {
        assert!(help.contains(&format!("- {}:", b.name)), "{}", b.name);
        assert!(help.contains(b.help), "{}", b.name);
    }
    let pp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/pingpong.goal");
    for kind in in_process() {
        let o = Command::new(bin)
            .arg("-f")
            .arg(&pp)
            .args(["--network", kind, "--topology", "H8_S1"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
