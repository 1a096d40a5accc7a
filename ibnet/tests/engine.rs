//! Engine properties: lazy credit timers equal the always-ticking model,
//! credit back-pressure, zero-load latency, closed-loop traffic, the
//! injection API and configuration errors.

mod common;
use common::*;
use ibnet::engine::TraceRec;
use ibnet::topology::{builtin, Topology};
use ibnet::traffic::{run_closed_loop, TrafficSpec};
use ibnet::{Fabric, Params, Time, TrafficMode};

/// Every HCA silent but those in `modes`, and the flit trace on.
fn start_traced(f: &mut Fabric, modes: &[(usize, TrafficMode)]) {
    for h in 0..f.num_hcas() {
        f.set_traffic(h, TrafficMode::Silent).unwrap();
    }
    for (h, m) in modes {
        f.set_traffic(*h, m.clone()).unwrap();
    }
    f.enable_trace();
}

/// Two non-empty traces equal record for record (the first differing
/// record named).
fn assert_same_trace(ta: &[TraceRec], tb: &[TraceRec]) {
    assert!(!ta.is_empty());
    assert_eq!(ta.len(), tb.len());
    for (i, (a, b)) in ta.iter().zip(tb).enumerate() {
        assert_eq!(a, b, "trace record {i} differs");
    }
}

fn trace_run(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
    lazy: bool,
) -> (Vec<TraceRec>, ibnet::Report, u64) {
    let mut q = p.clone();
    q.lazy_credit_timer = lazy;
    let mut f = Fabric::new(topo, &q).unwrap();
    assert_eq!(f.lazy_credit_timer_active(), lazy);
    start_traced(&mut f, modes);
    f.run_until(Time(until));
    assert!(f.error().is_none(), "{:?}", f.error());
    let ev = f.events_processed();
    let mut r = f.report_with(true);
    r.events_processed = 0;
    (f.take_trace(), r, ev)
}

fn assert_lazy_equals_naive(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
) {
    let (ta, ra, ea) = trace_run(topo, p, modes, until, true);
    let (tb, rb, eb) = trace_run(topo, p, modes, until, false);
    assert_same_trace(&ta, &tb);
    assert_eq!(ra, rb, "reports differ");
    assert!(ea < eb, "lazy mode should save events: {ea} vs {eb}");
}

/// Direct events (engine/direct.rs: credit updates applied where they are
/// scheduled, no-op arbiter kicks dropped) against queuing every event:
/// the same flit trace, the same report and the same event count; and the
/// direct path was taken.
fn assert_direct_equals_queued(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
) {
    let run = |direct: bool| {
        let mut f = Fabric::new(topo, p).unwrap();
        f.set_direct_events(direct);
        start_traced(&mut f, modes);
        f.run_until(Time(until));
        // a model error (an obuf too small for the traffic overflows, as
        // in the reference) must be the same error at the same instant
        let err = format!("{:?}", f.error());
        let applied = f.direct_events_applied();
        (f.take_trace(), f.report_with(true), applied, err)
    };
    let (ta, ra, na, ea) = run(true);
    let (tb, rb, nb, eb) = run(false);
    assert_eq!(ea, eb, "errors differ");
    assert_same_trace(&ta, &tb);
    if ea == "None" {
        assert_eq!(ra, rb, "reports differ (events_processed included)");
    } else {
        // A fatal model error stops the run in the middle of an instant.
        // The fully queued engine never reaches the events queued behind
        // the failing one, while the direct engine has already counted
        // the no-op kicks it dropped at this instant (direct.rs: counted
        // when dropped). Only that count may differ; the trace above and
        // every other figure may not.
        let (mut xa, mut xb) = (ra.clone(), rb.clone());
        assert!(
            xa.events_processed >= xb.events_processed
                && xa.events_processed - xb.events_processed <= na,
            "after {ea}: direct {} events, queued {}",
            xa.events_processed,
            xb.events_processed
        );
        xa.events_processed = 0;
        xb.events_processed = 0;
        assert_eq!(xa, xb, "reports differ beyond events_processed after {ea}");
    }
    assert_eq!(nb, 0);
    // a quarter of all events are credit updates; most go direct
    assert!(
        na * 10 > ra.events_processed,
        "direct events {na} of {}",
        ra.events_processed
    );
}

#[test]
fn direct_events_equal_queued() {
    let t = builtin("fattree:4").unwrap();
    let n = t.hcas().len();
    let mut modes = Vec::new();
    for h in 0..n {
        let lid = t.nodes[t.hcas()[(h + 1) % n]].lid().unwrap();
        modes.push((h, TrafficMode::SeqOnce(vec![lid; 3])));
    }
    assert_direct_equals_queued(&t, &Params::qdr(), &modes, 30_000_000);
    // the always-ticking credit timer (ticks at every period)
    let mut naive = Params::qdr();
    naive.lazy_credit_timer = false;
    assert_direct_equals_queued(&t, &naive, &modes, 30_000_000);
    // incast (congestion, back-pressure), two VLs, the thesis preset
    let t = incast(3);
    let modes: Vec<_> = (0..3).map(|h| (h, TrafficMode::SeqLoop(vec![4]))).collect();
    assert_direct_equals_queued(&t, &Params::qdr(), &modes, 30_000_000);
    let mut v = Params::qdr();
    v.max_vl = 1;
    v.msg_sq = 1;
    assert_direct_equals_queued(&t, &v, &modes, 30_000_000);
    let mut q = Params::thesis_ddr();
    q.msg_length = 10000;
    assert_direct_equals_queued(&t, &q, &modes, 30_000_000);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// The same with random traffic on small, congested networks: the
    /// no-op kick rules (direct.rs) must hold whatever blocks an arbiter --
    /// full obufs (small), the per-input limit on packets being sent, VL
    /// credits with one to four VLs under both table variants, FCFS
    /// arbitration, congestion control. (Dropping every kick of an arbiter
    /// whose pop timer is not pending, a wrong rule, fails here.)
    #[test]
    fn direct_events_equal_queued_random(
        case in cases(),
        delay in 0usize..3,
    ) {
        let (t, mut p, modes) = case.build();
        with_link_delay(&mut p, delay);
        assert_direct_equals_queued(&t, &p, &modes, 100_000_000);
    }
}

/// Links with a propagation delay (`link_delay_ns`): none, 1 ns or 5 ns
/// by `pick`, shorter than the credit period.
fn with_link_delay(p: &mut Params, pick: usize) {
    p.link_delay_ns = [0.0f64, 1.0, 5.0][pick].min(p.cred_min_time_ns / 2.0);
}

/// A link's propagation delay adds itself to every link a message
/// crosses, and nothing else, when nothing else is in the way: one
/// one-packet message alone from one host of `chain:3` to the other
/// (host, three switches, host: four links), injected once every port
/// knows its peer's credits, completes 4 x d later, for any d, in either
/// order. (Injected at 0, it would also wait for the first FC packets,
/// which take d to arrive.)
#[test]
fn link_delay_adds_one_delay_per_link_crossed() {
    let t = builtin("chain:3").unwrap();
    let hcas = t.hcas();
    assert_eq!(hcas.len(), 2);
    let done = |order: &str, d_ns: f64| {
        let mut p = Params::qdr();
        p.event_order = order.into();
        p.link_delay_ns = d_ns;
        let mut f = Fabric::new(&t, &p).unwrap();
        start(&mut f, &[]);
        f.inject(Time(2_000_000), 0, 1, 1024).unwrap();
        f.run_until(Time(100_000_000));
        let r = f.report_with(true);
        assert_eq!(r.messages_completed, 1, "{order}, {d_ns} ns");
        r.messages.unwrap()[0].completed_ps.unwrap()
    };
    for order in ["fifo", "local"] {
        let base = done(order, 0.0);
        for d_ns in [0.001, 5.0, 37.5, 255.0] {
            let d = (d_ns * 1000.0) as u64;
            assert_eq!(done(order, d_ns), base + 4 * d, "{order}, {d_ns} ns");
        }
    }
}

#[test]
fn lazy_equals_naive_with_link_delay() {
    let t = incast(3);
    let modes: Vec<_> = (0..3).map(|h| (h, TrafficMode::SeqLoop(vec![4]))).collect();
    for d in [1.0, 5.0, 200.0] {
        let mut p = Params::qdr();
        p.link_delay_ns = d;
        assert_lazy_equals_naive(&t, &p, &modes, 60_000_000);
    }
}

#[test]
fn lazy_equals_naive_single_flow_with_idle_gaps() {
    // one message, a long idle period, another message (seq_once of 3)
    let p = qdr(1600, 6400);
    let t = two_hosts_one_switch();
    assert_lazy_equals_naive(
        &t,
        &p,
        &[
            (0, TrafficMode::SeqOnce(vec![2, 2, 2])),
            (1, TrafficMode::SeqOnce(vec![1])),
        ],
        40_000_000,
    );
}

#[test]
fn lazy_equals_naive_incast_and_thesis() {
    let p = Params::qdr();
    let t = incast(3);
    let modes: Vec<_> = (0..3).map(|h| (h, TrafficMode::SeqLoop(vec![4]))).collect();
    assert_lazy_equals_naive(&t, &p, &modes, 60_000_000);
    let mut q = Params::thesis_ddr();
    q.msg_length = 10000;
    assert_lazy_equals_naive(&t, &q, &modes, 30_000_000);
    let mut v = Params::qdr();
    v.max_vl = 1;
    v.msg_sq = 1;
    assert_lazy_equals_naive(&t, &v, &modes, 30_000_000);
}

#[test]
fn lazy_equals_naive_fat_tree_shift() {
    let t = builtin("fattree:4").unwrap();
    let n = t.hcas().len();
    let p = Params::qdr();
    let mut modes = Vec::new();
    for h in 0..n {
        let lid = t.nodes[t.hcas()[(h + 1) % n]].lid().unwrap();
        modes.push((h, TrafficMode::SeqOnce(vec![lid; 3])));
    }
    assert_lazy_equals_naive(&t, &p, &modes, 30_000_000);
}

#[test]
fn credit_backpressure_stalls_and_resumes_without_loss() {
    // H_2's sink is ON (not draining) from 1 ns for 20 us: its 200 credits
    // fill, the switch stalls, H_1 stalls; then everything drains.
    let mut p = Params::qdr();
    p.hiccup_duration_ns = 20_000.0;
    let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 19_000);
    let r = f.report();
    let h1_sent = r
        .obufs
        .iter()
        .find(|o| o.node == "H_1")
        .unwrap()
        .data_flits_sent;
    let sw_sent = r
        .obufs
        .iter()
        .find(|o| o.node == "SW_1" && o.port == 1)
        .unwrap()
        .data_flits_sent;
    assert_eq!(r.flits_consumed, 0);
    // H_2's ibuf has 200 static credits; a packet (32 flits) starts only if
    // all its flits fit: 6 packets = 192 flits pass the switch, then it stalls.
    assert_eq!(sw_sent, 192);
    assert!((200..2048).contains(&h1_sent), "{h1_sent}");
    let tr = f.take_trace();
    let last_send = tr
        .iter()
        .filter(|r| r.kind == ibnet::engine::TraceKind::Send && r.node == 0)
        .map(|r| r.t)
        .max()
        .unwrap();
    assert!(
        last_send < 12_000_000,
        "H_1 must stall well before 19 us (last send {last_send})"
    );
    run_to(&mut f, 100_000);
    let r = f.report();
    assert_eq!(r.flits_generated, 2048);
    assert_eq!(r.flits_consumed, 2048);
    assert_eq!(r.flits_in_flight, 0);
    assert_eq!(r.flits_dropped, 0);
    assert_eq!(r.messages_completed, 1);
    // the first consumption happens when the hiccup ends (20.001 us) plus 1 ns
    let tr = f.take_trace();
    let first = tr
        .iter()
        .filter(|r| r.kind == ibnet::engine::TraceKind::Consume)
        .map(|r| r.t)
        .min()
        .unwrap();
    assert_eq!(first, 20_002_000);
}

/// `p` with every link's propagation delay `d_ns`.
fn delayed(mut p: Params, d_ns: f64) -> Params {
    p.link_delay_ns = d_ns;
    p
}

#[test]
fn zero_load_matches_simulation() {
    let cases: Vec<(Topology, Params, u64)> = vec![
        (two_hosts_one_switch(), Params::qdr(), 64),
        (two_hosts_one_switch(), Params::qdr(), 6400),
        (two_hosts_one_switch(), Params::qdr(), 131072),
        (two_hosts_one_switch(), Params::qdr(), 400_000),
        (two_hosts_one_switch(), Params::thesis_ddr(), 2048),
        (two_hosts_one_switch(), Params::thesis_ddr(), 10000),
        (two_hosts_one_switch(), Params::thesis_ddr(), 12),
        (builtin("chain:3").unwrap(), Params::qdr(), 131072),
        (builtin("chain:3").unwrap(), Params::thesis_ddr(), 65536),
        // thesis-ch5 (docs/thesis.md): the per-packet sink gap
        // (sink_packet_gap_periods = 1)
        (two_hosts_one_switch(), Params::thesis_ch5(), 10000),
        (two_hosts_one_switch(), Params::thesis_ch5(), 400_000),
        (builtin("chain:3").unwrap(), Params::thesis_ch5(), 65536),
        (builtin("chain:3").unwrap(), Params::thesis_ch5(), 4),
        // links with a propagation delay (link_delay_ns), messages
        // within the static credits (a longer credit loop can make a
        // longer message wait for credits, which the formula leaves out)
        (two_hosts_one_switch(), delayed(Params::qdr(), 37.5), 6400),
        (
            builtin("chain:3").unwrap(),
            delayed(Params::qdr(), 5.0),
            12800,
        ),
        (
            builtin("chain:3").unwrap(),
            delayed(Params::thesis_ddr(), 200.0),
            64,
        ),
    ];
    for (t, p, bytes) in cases {
        let mut f = Fabric::new(&t, &p).unwrap();
        let n = f.num_hcas();
        let at = Time(50_000_000); // well after start-up, away from a credit tick
        f.run_until(at);
        let z = f.zero_load_latency(0, n - 1, bytes);
        let id = f.inject(at, 0, n - 1, bytes).unwrap();
        let (t_done, ids) = f.run_until_completion().unwrap();
        assert_eq!(ids, vec![id]);
        assert_eq!(
            t_done.0 - at.0,
            z.0,
            "{} {} bytes (preset sink {})",
            t.name,
            bytes,
            p.sink_pop_dly_per_byte_ns
        );
    }
}

#[test]
fn dissemination_closed_loop() {
    // 8 ranks on one switch, 64-byte messages: every round is a permutation
    // without contention, so each round takes the zero-load latency
    // 1 + 16 + 100 + 19.693 ns = 136.693 ns; 3 rounds per iteration.
    let t = builtin("H8_S1").unwrap();
    let mut f = Fabric::new(&t, &Params::qdr()).unwrap();
    let ranks: Vec<usize> = (0..8).collect();
    let z = f.zero_load_latency(0, 1, 64);
    assert_eq!(z, Time(136_693));
    let s = run_closed_loop(
        &mut f,
        &TrafficSpec::Dissemination {
            bytes: 64,
            count: 2,
        },
        &ranks,
        None,
    )
    .unwrap();
    assert_eq!(s.messages, 8 * 3 * 2);
    assert_eq!(s.end_ps, 6 * 136_693);
    assert_eq!(f.in_flight(), 0);
}

#[test]
fn chain_closed_loop() {
    let t = builtin("H8_S1").unwrap();
    let mut f = Fabric::new(&t, &Params::qdr()).unwrap();
    let ranks: Vec<usize> = (0..8).collect();
    let s = run_closed_loop(
        &mut f,
        &TrafficSpec::Chain {
            bytes: 64,
            count: 4,
        },
        &ranks,
        None,
    )
    .unwrap();
    assert_eq!(s.messages, 32);
    // every rank's sends are paced by its receives: 4 rounds of one hop each
    assert_eq!(s.end_ps, 4 * 136_693);
}

#[test]
fn run_until_completion_batches_same_instant() {
    // two symmetric messages complete at the same instant
    let t = builtin("H8_S1").unwrap();
    let mut f = Fabric::new(&t, &Params::qdr()).unwrap();
    let a = f.inject(Time(0), 0, 1, 4096).unwrap();
    let b = f.inject(Time(0), 2, 3, 4096).unwrap();
    let c = f.inject(Time(0), 4, 5, 8192).unwrap();
    let (t1, ids) = f.run_until_completion().unwrap();
    assert_eq!(ids, vec![a, b]);
    assert_eq!(f.in_flight(), 1);
    let (t2, ids) = f.run_until_completion().unwrap();
    assert!(t2 > t1);
    assert_eq!(ids, vec![c]);
    assert!(
        f.take_completions().is_empty(),
        "returned completions are not reported twice"
    );
    assert!(f.run_until_completion().is_none());
    // run_until leaves completions in the buffer
    let d = f.inject(t2, 1, 0, 64).unwrap();
    f.run_until(Time(t2.0 + 1_000_000));
    assert_eq!(f.take_completions(), vec![(d, Time(t2.0 + 136_693))]);
    assert_eq!(f.now(), Time(t2.0 + 1_000_000));
    assert!(f.next_event_time().is_some());
}

#[test]
fn configuration_errors() {
    let t = two_hosts_one_switch();
    // Q10: a 4096-byte MTU packet (64 flits) can never fit the HCA obuf
    let mut p = Params::qdr();
    p.msg_mtu = 4096;
    let e = Fabric::new(&t, &p).err().unwrap().to_string();
    assert!(e.contains("obuf") && e.contains("64 flits"), "{e}");
    let mut p = Params::qdr();
    p.max_static = vec![20; 8];
    let e = Fabric::new(&t, &p).err().unwrap().to_string();
    assert!(e.contains("static credits"), "{e}");
    // unroutable: a LID no HCA has, a table without the route
    let mut f = Fabric::new(&t, &Params::qdr()).unwrap();
    let e = f
        .set_traffic(0, TrafficMode::Param { dst_lid: 7 })
        .unwrap_err()
        .to_string();
    assert!(e.contains("LID 7"), "{e}");
    let mut t2 = t.clone();
    if let ibnet::topology::NodeKind::Switch { fdb, .. } = &mut t2.nodes[2].kind {
        fdb[2] = 255;
    }
    let mut f = Fabric::new(&t2, &Params::qdr()).unwrap();
    let e = f.inject(Time(0), 0, 1, 64).unwrap_err().to_string();
    assert!(e.contains("no route") && e.contains("SW_1"), "{e}");
    // routes are remembered once checked (Fabric::routes_ok), failures
    // never: the same unroutable pair fails again, the routable direction
    // works every time
    f.inject(Time(0), 1, 0, 64).unwrap();
    f.inject(Time(0), 1, 0, 64).unwrap();
    let again = f.inject(Time(0), 0, 1, 64).unwrap_err().to_string();
    assert_eq!(again, e);
    // legacy packet count: a message below the MTU cannot be sent (Q1)
    let mut p = Params::qdr();
    p.legacy_packet_count = true;
    let mut f = Fabric::new(&t, &p).unwrap();
    assert!(f.inject(Time(0), 0, 1, 100).is_err());
    // malformed parameters
    assert!(Params::qdr()
        .apply_override("max_vl=9")
        .unwrap()
        .check()
        .is_err());
    assert!(Params::qdr()
        .apply_override("isw_delay_ns=-5")
        .unwrap()
        .check()
        .is_err());
    assert!(Params::qdr()
        .apply_override("link_speed=XDR")
        .unwrap()
        .check()
        .is_err());
}

#[test]
fn legacy_packet_count_loses_data_like_the_reference() {
    // Q1: 400000 B at MTU 2048 sends 6218 flits with the legacy rule, 6250 fixed
    for (legacy, flits) in [(true, 6218u64), (false, 6250)] {
        let mut p = Params::qdr();
        p.legacy_packet_count = legacy;
        p.msg_length = 400_000;
        let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
        run_to(&mut f, 300_000);
        assert_eq!(f.report().flits_consumed, flits);
    }
}

#[test]
fn two_vls_share_a_link() {
    // maxVL = 1 (table arbitration, one FC packet per VL): a lone flit on
    // either VL still takes 100 ns; two streams on VL 1 into one port both
    // progress and nothing lands on VL 0.
    for sq in [0u8, 1] {
        let mut p = Params::qdr();
        p.max_vl = 1;
        p.msg_sq = sq;
        p.msg_mtu = 64;
        p.msg_length = 64;
        let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
        run_to(&mut f, 2000);
        let r = f.report();
        assert_eq!(r.sinks[1].msg_network_latency_ps.min, 100_000, "VL {sq}");
        assert_eq!(r.sinks[1].vl_total_flits[sq as usize], 1);
        // one FC packet per VL at start-up on every link
        assert!(
            r.obufs.iter().all(|o| o.fc_packets_sent >= 2),
            "{:?}",
            r.obufs
        );
    }
    let mut p1 = Params::qdr();
    p1.max_vl = 1;
    p1.msg_sq = 1;
    let t = incast(2);
    let mut g = Fabric::new(&t, &p1).unwrap();
    g.set_traffic(2, TrafficMode::Silent).unwrap();
    g.set_traffic(0, TrafficMode::SeqLoop(vec![3])).unwrap();
    g.set_traffic(1, TrafficMode::SeqLoop(vec![3])).unwrap();
    g.run_until(Time(200_000_000));
    assert!(g.error().is_none(), "{:?}", g.error());
    let r = g.report();
    let per_src: Vec<u64> = r.generators.iter().map(|x| x.flits_sent).collect();
    assert!(per_src[0] > 1000 && per_src[1] > 1000, "{per_src:?}");
    assert_eq!(r.sinks[2].vl_total_flits[0], 0);
    assert_eq!(r.flits_generated, r.flits_consumed + r.flits_in_flight);
}

#[test]
fn length_set_and_random_destinations() {
    let mut p = Params::qdr();
    p.msg_len_mode = "set".into();
    p.msg_len_set = vec![64, 4096];
    p.msg_len_prob = vec![1.0, 3.0];
    let t = builtin("H8_S1").unwrap();
    let run = |p: &Params| {
        let mut f = Fabric::new(&t, p).unwrap();
        for h in 0..8 {
            f.set_traffic(
                h,
                TrafficMode::SeqRand(vec![((h + 1) % 8 + 1) as u16, ((h + 3) % 8 + 1) as u16]),
            )
            .unwrap();
        }
        f.run_until(Time(100_000_000));
        f.report_with(true)
    };
    let a = run(&p);
    let b = run(&p);
    assert_eq!(a, b, "seeded runs are reproducible");
    let msgs = a.messages.unwrap();
    assert!(msgs.iter().all(|m| m.bytes == 64 || m.bytes == 4096));
    let small = msgs.iter().filter(|m| m.bytes == 64).count();
    assert!(
        small > 0 && small < msgs.len() / 2,
        "{small} of {}",
        msgs.len()
    );
    let dsts: std::collections::HashSet<u16> = msgs
        .iter()
        .filter(|m| m.src_lid == 1)
        .map(|m| m.dst_lid)
        .collect();
    assert_eq!(dsts.len(), 2);
    let mut q = p.clone();
    q.seed = 7;
    assert_ne!(run(&q).messages, Some(msgs));
    // mismatched set and probabilities is an error (Q2)
    let mut bad = Params::qdr();
    bad.msg_len_mode = "set".into();
    bad.msg_len_set = vec![64];
    assert!(Fabric::new(&t, &bad).is_err());
}

fn vl_shares(iba: bool) -> (u64, u64) {
    // H_1 streams on VL 0 (High table), H_2 on VL 1 (Low table), both to H_3:
    // the switch output to H_3 is the bottleneck.
    let mut p = Params::qdr();
    p.max_vl = 1;
    p.high_vl_arb_entries = "0:255".into();
    p.low_vl_arb_entries = "1:255".into();
    p.vl_high_limit = 1;
    p.iba_vl_arb = iba;
    p.sink_pop_dly_per_byte_ns = 0.1; // the wire, not the sink, limits
    let t = incast(2);
    let mut f = Fabric::new(&t, &p).unwrap();
    f.set_send_queue(0, 0).unwrap();
    f.set_send_queue(1, 1).unwrap();
    assert!(f.set_send_queue(1, 2).is_err());
    f.set_traffic(0, TrafficMode::SeqLoop(vec![3])).unwrap();
    f.set_traffic(1, TrafficMode::SeqLoop(vec![3])).unwrap();
    f.set_traffic(2, TrafficMode::Silent).unwrap();
    f.run_until(Time(300_000_000));
    assert!(f.error().is_none(), "{:?}", f.error());
    let r = f.report();
    assert_eq!(r.flits_generated, r.flits_consumed + r.flits_in_flight);
    (r.sinks[2].vl_total_flits[0], r.sinks[2].vl_total_flits[1])
}

#[test]
fn vl_arbitration_high_limit_modes() {
    let (h, l) = vl_shares(true);
    // IBA mode: 64 High flits (vl_high_limit 1 x 4 KiB), then one Low packet
    // of 32 flits: High gets about 2/3 of the bottleneck
    let share = h as f64 / (h + l) as f64;
    assert!(
        l > 0 && (0.6..0.72).contains(&share),
        "IBA: high {h} low {l}"
    );
    let (h2, l2) = vl_shares(false);
    // Q6 reproduced: the counter goes negative and Low stays first forever
    assert!(h2 > 0 && l2 > 2 * h2, "legacy: high {h2} low {l2}");
    assert_ne!((h, l), (h2, l2), "the Q6 quirk changes the shares");
}

/// Single-flit messages with idle gaps between them: an obuf that went
/// dormant and wakes after the 1 ns wake-up pop of its tick would have run
/// must not send an FC packet before the next tick (that pop left the FC
/// pointer past the last VL). Before the fix the lazy mode sent one extra
/// FC packet here (bytes_sent 7232 instead of 7168 on one obuf).
#[test]
fn lazy_equals_naive_after_wakeup_pop() {
    let t = builtin("fattree:8").unwrap();
    let run = |lazy: bool| {
        let mut p = Params::qdr();
        p.msg_mtu = 64;
        p.lazy_credit_timer = lazy;
        let mut f = Fabric::new(&t, &p).unwrap();
        let ranks = ibnet::traffic::rank_hcas(&t);
        run_closed_loop(
            &mut f,
            &TrafficSpec::Dissemination {
                bytes: 64,
                count: 20,
            },
            &ranks,
            None,
        )
        .unwrap();
        let mut r = f.report_with(true);
        let ev = r.events_processed;
        r.events_processed = 0;
        (r, ev)
    };
    let (ra, ea) = run(true);
    let (rb, eb) = run(false);
    for (a, b) in ra.obufs.iter().zip(&rb.obufs) {
        assert_eq!(a, b);
    }
    assert_eq!(ra, rb);
    assert!(ea < eb, "{ea} {eb}");
}

/// At a hiccup's ON->OFF switch the drain restart (1 ns later) is scheduled
/// before the next ON toggle. With a 1 ns OFF phase both fall on the same
/// instant and the drain must win: the flit that waited through the ON
/// phase (1 ns .. 1001 ns) is consumed at 1002 ns. In the other order the
/// sink would turn ON first at every OFF and never consume anything.
#[test]
fn hiccup_off_drain_runs_before_next_toggle() {
    let mut p = Params::qdr();
    p.msg_mtu = 64;
    p.msg_length = 64;
    p.hiccup_duration_ns = 1000.0;
    p.hiccup_delay_ns = 1.0;
    let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 5_000);
    let tr = f.take_trace();
    let consumed: Vec<u64> = tr
        .iter()
        .filter(|r| r.kind == ibnet::engine::TraceKind::Consume)
        .map(|r| r.t)
        .collect();
    assert_eq!(consumed, vec![ns(1002)]);
}

/// A run in the local event order (engine/order.rs), its events of one
/// instant and depth grouped by node in the order of a random permutation
/// of the nodes when `shuffle` is given: the flit trace in a canonical
/// order (stable by time and node, so each node's own sequence of records
/// is kept; messages named by their first record), the report and the
/// error.
fn local_run(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
    shuffle: Option<u64>,
) -> (Vec<TraceRec>, ibnet::Report, String) {
    local_run_with(topo, p, modes, until, shuffle, true)
}

/// `local_run`, with the direct events of engine/direct.rs on or off.
fn local_run_with(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
    shuffle: Option<u64>,
    direct: bool,
) -> (Vec<TraceRec>, ibnet::Report, String) {
    let mut q = p.clone();
    q.event_order = "local".into();
    let mut f = Fabric::new(topo, &q).unwrap();
    f.set_direct_events(direct);
    if let Some(seed) = shuffle {
        f.shuffle_local_order(seed).unwrap();
    }
    start_traced(&mut f, modes);
    f.run_until(Time(until));
    let err = format!("{:?}", f.error());
    let mut tr = f.take_trace();
    tr.sort_by_key(|r| (r.t, r.node));
    // message ids count the messages in the order the run creates them,
    // across nodes: name each by its first record instead
    let mut names = std::collections::HashMap::new();
    for r in &mut tr {
        let k = names.len() as u32;
        r.msg = *names.entry(r.msg).or_insert(k);
    }
    // and the report's messages by source and injection
    let mut rep = f.report_with(true);
    if let Some(m) = rep.messages.as_mut() {
        m.sort_by_key(|m| (m.src_lid, m.injected_ps, m.first_flit_stamp_ps));
        for m in m.iter_mut() {
            m.id = 0;
        }
    }
    (tr, rep, err)
}

/// The instant of a model error in `format!("{:?}", f.error())`, None
/// without one.
fn error_instant(e: &str) -> Option<u64> {
    let at = e.find(" t: ")? + 4;
    e[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Random traffic on a small network: the cases of the engine's property
/// tests (`cases`).
#[derive(Clone, Debug)]
struct Case {
    topo: usize,
    ddr: bool,
    max_vl: u8,
    iba: bool,
    fcfs: bool,
    cc: bool,
    being_sent: u32,
    obuf: u32,
    mtu_flits: u32,
    pkts: u64,
    dests: Vec<Vec<usize>>,
}

/// Small fat trees and an incast with one, two or four VLs, both VL
/// arbitration variants, FCFS, congestion control on and off, random obuf
/// sizes, packet sizes and destinations.
fn cases() -> impl proptest::strategy::Strategy<Value = Case> {
    use proptest::prelude::*;
    (
        0usize..5,
        any::<bool>(),
        prop_oneof![Just(0u8), Just(1u8), Just(3u8)],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        1u32..3,
        6u32..40,
        1u32..5,
        1u64..5,
        proptest::collection::vec(proptest::collection::vec(0usize..64, 1..4), 8),
    )
        .prop_map(
            |(topo, ddr, max_vl, iba, fcfs, cc, being_sent, obuf, mtu_flits, pkts, dests)| Case {
                topo,
                ddr,
                max_vl,
                iba,
                fcfs,
                cc,
                being_sent,
                obuf,
                mtu_flits,
                pkts,
                dests,
            },
        )
}

impl Case {
    /// The network, its parameters and every HCA's traffic.
    fn build(&self) -> (Topology, Params, Vec<(usize, TrafficMode)>) {
        let Case {
            topo,
            ddr,
            max_vl,
            iba,
            fcfs,
            cc,
            being_sent,
            obuf,
            mtu_flits,
            pkts,
            ref dests,
        } = *self;
        let t = match topo {
            0 => builtin("H8_S1").unwrap(),
            1 => builtin("H8_S2").unwrap(),
            2 => builtin("H8_S4").unwrap(),
            3 => builtin("fattree:4").unwrap(),
            _ => incast(4),
        };
        let mut p = if ddr {
            Params::thesis_ddr()
        } else {
            Params::qdr()
        };
        p.max_vl = max_vl;
        p.msg_sq = max_vl.min(1);
        p.iba_vl_arb = iba;
        p.use_fcfs_rq_arb = fcfs;
        p.cc_enabled = cc;
        p.max_being_sent = being_sent;
        p.obuf_size_switch = obuf;
        p.obuf_size_hca = obuf;
        p.msg_mtu = mtu_flits * p.flit_size;
        p.msg_length = pkts * p.msg_mtu as u64;
        let n = t.hcas().len();
        let lids: Vec<u16> = (0..n).map(|i| t.lid_of_hca(i).unwrap()).collect();
        let mut modes = Vec::new();
        for h in 0..n {
            let row: Vec<u16> = dests[h % dests.len()]
                .iter()
                .map(|&d| lids[(h + 1 + d % (n - 1)) % n])
                .collect();
            modes.push((h, TrafficMode::SeqLoop(row)));
        }
        (t, p, modes)
    }
}

#[test]
fn local_order_equals_fifo_without_cross_ties() {
    // One flow through one switch: no node ever receives from two links at
    // one instant, so the two orders run the same events in the same order
    // (order.rs), flit for flit, with the same event count.
    let t = two_hosts_one_switch();
    let p = Params::qdr();
    let modes = [(0, TrafficMode::SeqOnce(vec![2, 2, 2]))];
    let (ta, ra, _) = trace_run(&t, &p, &modes, 40_000_000, true);
    let (tb, mut rb, eb) = local_run(&t, &p, &modes, 40_000_000, None);
    assert_eq!(eb, "None");
    let mut ta = ta;
    ta.sort_by_key(|r| (r.t, r.node));
    assert_same_trace(&ta, &tb);
    assert!(rb.events_processed > 0);
    rb.events_processed = 0;
    assert_eq!(ra, rb);
}

#[test]
fn local_order_differs_from_fifo_at_cross_ties_and_is_deterministic() {
    // fattree:4 with every host sending to its neighbour: flits meet at
    // switches, and the local order takes same-instant arrivals by node
    // number instead of by the global insertion counter
    let t = builtin("fattree:4").unwrap();
    let modes = to_the_next(&t);
    let (ta, _, _) = trace_run(&t, &Params::qdr(), &modes, 30_000_000, true);
    let (tb, rb, eb) = local_run(&t, &Params::qdr(), &modes, 30_000_000, None);
    let (tc, rc, _) = local_run(&t, &Params::qdr(), &modes, 30_000_000, None);
    assert_eq!(eb, "None");
    assert_eq!(tb, tc);
    assert_eq!(rb, rc);
    let mut ta = ta;
    ta.sort_by_key(|r| (r.t, r.node));
    assert_ne!(ta, tb, "expected a cross tie to take a different order");
}

#[test]
fn local_order_lazy_equals_naive() {
    let t = builtin("fattree:4").unwrap();
    let n = t.hcas().len();
    let modes: Vec<_> = (0..n)
        .map(|h| {
            let lid = t.nodes[t.hcas()[(h + 1) % n]].lid().unwrap();
            (h, TrafficMode::SeqOnce(vec![lid; 3]))
        })
        .collect();
    let mut p = Params::qdr();
    p.event_order = "local".into();
    assert_lazy_equals_naive(&t, &p, &modes, 30_000_000);
    let t = incast(3);
    let modes: Vec<_> = (0..3).map(|h| (h, TrafficMode::SeqLoop(vec![4]))).collect();
    assert_lazy_equals_naive(&t, &p, &modes, 60_000_000);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// The local order is computable by each node alone: running the
    /// events of one instant and depth grouped by node, in any order of
    /// the nodes, gives the same run (every node's own flit records, the
    /// report, the event count, an error), so any partition of the nodes
    /// into logical processes would. Also: its lazy credit timer equals
    /// the always-ticking one, and its direct events (engine/direct.rs)
    /// equal queuing every event.
    #[test]
    fn local_order_is_partition_independent_random(
        case in cases(),
        seed in proptest::num::u64::ANY,
        delay in 0usize..3,
    ) {
        let (t, mut p, modes) = case.build();
        with_link_delay(&mut p, delay);
        let (mut ta, ra, ea) = local_run(&t, &p, &modes, 60_000_000, None);
        let (mut tb, rb, eb) = local_run(&t, &p, &modes, 60_000_000, Some(seed));
        // A model error (an obuf overflow) stops the run in the middle of
        // an instant: what the nodes did at that instant before it, and
        // which of two nodes failing at that instant is named, depend on
        // the order of the nodes. The instant may not.
        proptest::prop_assert_eq!(error_instant(&ea), error_instant(&eb));
        proptest::prop_assert!(!ta.is_empty());
        if ea != "None" {
            let end = ta.last().unwrap().t;
            ta.retain(|r| r.t < end);
            tb.retain(|r| r.t < end);
        }
        proptest::prop_assert!(ta == tb, "flit records differ");
        proptest::prop_assert!(ea != "None" || ra == rb, "reports differ");
        let mut naive = p.clone();
        naive.lazy_credit_timer = false;
        let (mut tc, rc, ec) = local_run(&t, &naive, &modes, 60_000_000, None);
        proptest::prop_assert_eq!(&ea, &ec);
        if ea != "None" {
            let end = tb.last().map_or(0, |r| r.t) + 1;
            tc.retain(|r| r.t < end);
        }
        let (mut ra, mut rc) = (ra, rc);
        ra.events_processed = 0;
        rc.events_processed = 0;
        proptest::prop_assert!(ta == tc, "lazy and naive flit records differ");
        proptest::prop_assert!(ra == rc, "lazy and naive reports differ");
        let (mut td, mut rd, ed) = local_run_with(&t, &p, &modes, 60_000_000, None, false);
        proptest::prop_assert_eq!(&ea, &ed);
        if ea != "None" {
            let end = tb.last().map_or(0, |r| r.t) + 1;
            td.retain(|r| r.t < end);
        } else {
            // the same count: a dropped kick counts as processed
            proptest::prop_assert_eq!(rd.events_processed, rb.events_processed);
        }
        rd.events_processed = 0;
        proptest::prop_assert!(ta == td, "direct and queued flit records differ");
        proptest::prop_assert!(ea != "None" || ra == rd, "direct and queued reports differ");
    }
}

/// The sequential run in `order` ("fifo" or "local"), untraced: its
/// full report (with every message, numbered by the run), its error, and
/// whether its lazy credit timer was on.
fn sequential_report(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
    order: &str,
) -> (ibnet::Report, String, bool) {
    let mut q = p.clone();
    q.event_order = order.into();
    let mut f = Fabric::new(topo, &q).unwrap();
    start(&mut f, modes);
    f.run_until(Time(until));
    let lazy = f.lazy_credit_timer_active();
    (f.report_with(true), format!("{:?}", f.error()), lazy)
}

/// The same run on `owner`'s processes (parallel.rs), built as `ibnet
/// run --threads` builds them (in the FIFO order: the always-ticking
/// timer, every event queued, the lazy timer's count when `lazy`), on
/// `workers` threads, in `steps` calls of `run_until`: the merged report
/// and the error.
#[allow(clippy::too_many_arguments)]
fn parallel_report(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
    order: &str,
    lazy: bool,
    owner: Vec<u16>,
    steps: u64,
    workers: usize,
) -> (ibnet::Report, String, ibnet::engine::ParallelStats) {
    let mut q = p.clone();
    q.event_order = order.into();
    let fifo = order == "fifo";
    if fifo {
        q.lazy_credit_timer = false;
    }
    let parts = process_fabrics(topo, &q, modes, &owner);
    let mut par = ibnet::engine::Parallel::with_lazy_count(parts, owner, fifo && lazy).unwrap();
    par.set_workers(workers);
    for i in 1..=steps {
        par.run_until(Time(
            until / steps * i + if i == steps { until % steps } else { 0 },
        ));
    }
    let err = format!("{:?}", par.error());
    let stats = par.stats();
    (par.into_fabric().report_with(true), err, stats)
}

/// Processes in several programs, here threads joined by memory: what
/// MPI does for `ibnet run --distributed` (engine/distributed.rs).
struct MemNet {
    n: usize,
    /// (from, to) at `from * n + to`
    slots: Vec<std::sync::Mutex<Vec<u8>>>,
    barrier: std::sync::Barrier,
}

impl MemNet {
    /// `n` programs, nothing sent yet.
    fn new(n: usize) -> std::sync::Arc<MemNet> {
        std::sync::Arc::new(MemNet {
            n,
            slots: (0..n * n)
                .map(|_| std::sync::Mutex::new(Vec::new()))
                .collect(),
            barrier: std::sync::Barrier::new(n),
        })
    }
}

struct MemEnd {
    net: std::sync::Arc<MemNet>,
    me: usize,
}

impl ibnet::engine::Transport for MemEnd {
    fn rank(&self) -> usize {
        self.me
    }
    fn size(&self) -> usize {
        self.net.n
    }
    fn exchange(&mut self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
        let (n, me) = (self.net.n, self.me);
        assert_eq!(out.len(), n);
        assert!(out[me].is_empty());
        for (k, b) in out.into_iter().enumerate() {
            *self.net.slots[me * n + k].lock().unwrap() = b;
        }
        self.net.barrier.wait();
        let got = (0..n)
            .map(|k| std::mem::take(&mut *self.net.slots[k * n + me].lock().unwrap()))
            .collect();
        self.net.barrier.wait();
        Ok(got)
    }
    fn gather(&mut self, mine: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>, String> {
        let n = self.net.n;
        *self.net.slots[self.me * n].lock().unwrap() = mine;
        self.net.barrier.wait();
        let all = (self.me == 0).then(|| {
            (0..n)
                .map(|k| std::mem::take(&mut *self.net.slots[k * n].lock().unwrap()))
                .collect()
        });
        self.net.barrier.wait();
        Ok(all)
    }
}

/// The same run as [`parallel_report`], each process in a program of its
/// own (a thread with its own fabric) exchanging bytes
/// (engine/distributed.rs): process 0's merged report and error, and
/// every process's events as of the last round.
fn distributed_report(
    topo: &Topology,
    p: &Params,
    modes: &[(usize, TrafficMode)],
    until: u64,
    order: &str,
    lazy: bool,
    owner: Vec<u16>,
    steps: u64,
) -> (ibnet::Report, String, u64) {
    let mut q = p.clone();
    q.event_order = order.into();
    let fifo = order == "fifo";
    if fifo {
        q.lazy_credit_timer = false;
    }
    let n = *owner.iter().max().unwrap() as usize + 1;
    let net = MemNet::new(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|me| {
                let (net, owner, q) = (net.clone(), owner.clone(), q.clone());
                s.spawn(move || {
                    let mut f = Fabric::new(topo, &q).unwrap();
                    start(&mut f, modes);
                    let end = MemEnd { net, me };
                    let mut d =
                        ibnet::engine::Distributed::new(f, owner, fifo && lazy, end).unwrap();
                    for i in 1..=steps {
                        d.run_until(Time(
                            until / steps * i + if i == steps { until % steps } else { 0 },
                        ));
                        if d.stopped() {
                            break;
                        }
                    }
                    assert_eq!(d.transport_error(), None);
                    let events = d.events_processed();
                    d.finish(me as u64).unwrap().map(|fin| {
                        assert_eq!(fin.peak_memory_kb, (0..n as u64).collect::<Vec<_>>());
                        assert_eq!(fin.stats.workers, n);
                        (
                            fin.fabric.report_with(true),
                            format!("{:?}", fin.fabric.error()),
                            events,
                        )
                    })
                })
            })
            .collect();
        let mut results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(results[1..].iter().all(|r| r.is_none()));
        results.swap_remove(0).expect("process 0 merges")
    })
}

/// The fabrics of the processes of a parallel run with `owner`'s
/// partition in `q`'s order, built as `ibnet run --threads` builds them
/// (each without the others' input queues and HoQ slots; in the FIFO
/// order: the always-ticking timer and every event queued).
fn process_fabrics(
    topo: &Topology,
    q: &Params,
    modes: &[(usize, TrafficMode)],
    owner: &[u16],
) -> Vec<Fabric> {
    let fifo = q.event_order != "local";
    let mut q = q.clone();
    if fifo {
        q.lazy_credit_timer = false;
    }
    let threads = *owner.iter().max().unwrap() as usize + 1;
    (0..threads)
        .map(|k| {
            let mut f = Fabric::new_process(topo, &q, owner, k).unwrap();
            start(&mut f, modes);
            f
        })
        .collect()
}

/// The nodes dealt at random to `threads` processes (the last one holds
/// node 0, so that every process count is used).
fn random_owner(nodes: usize, threads: usize, seed: u64) -> Vec<u16> {
    let mut s = seed;
    (0..nodes)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if i == 0 {
                threads as u16 - 1
            } else {
                ((s >> 33) % threads as u64) as u16
            }
        })
        .collect()
}

/// `owner` with every HCA moved to its switch's process: no host link
/// joins two processes, so the local order's lookahead promises more
/// than the next instant (engine/lookahead.rs; a process with a host on
/// a cut link promises nothing).
fn hosts_with_their_switches(t: &Topology, mut owner: Vec<u16>) -> Vec<u16> {
    for l in &t.links {
        if t.nodes[l.a.node].is_hca() {
            owner[l.a.node] = owner[l.b.node];
        } else if t.nodes[l.b.node].is_hca() {
            owner[l.b.node] = owner[l.a.node];
        }
    }
    owner
}

fn start(f: &mut Fabric, modes: &[(usize, TrafficMode)]) {
    for h in 0..f.num_hcas() {
        f.set_traffic(h, TrafficMode::Silent).unwrap();
    }
    for (h, m) in modes {
        f.set_traffic(*h, m.clone()).unwrap();
    }
}

/// Every host of `t` streaming to the next one.
fn to_the_next(t: &Topology) -> Vec<(usize, TrafficMode)> {
    let n = t.hcas().len();
    (0..n)
        .map(|h| {
            let lid = t.nodes[t.hcas()[(h + 1) % n]].lid().unwrap();
            (h, TrafficMode::SeqLoop(vec![lid]))
        })
        .collect()
}

/// The automatic partition keeps whole leaf groups and spreads the
/// other switches so that no process holds much more work (connected
/// ports) than another: placing each by its neighbours alone gave 92 and
/// 200 ports on `kary:4:3` in three, 234 and 414 on `kary:6:3` in four.
#[test]
fn partitions_by_switch_groups_balance_the_ports() {
    for topo in ["kary:4:3", "kary:6:3", "kary:8:3", "fattree3:4:4:4:8", "M9"] {
        let t = builtin(topo).unwrap();
        let f = Fabric::new(&t, &Params::qdr()).unwrap();
        for threads in 2..=4 {
            let part = f.partition(threads);
            let ports: Vec<usize> = part.sizes.iter().map(|s| s.2).collect();
            let (lo, hi) = (ports.iter().min().unwrap(), ports.iter().max().unwrap());
            assert!(
                *hi as f64 <= 1.2 * *lo as f64,
                "{topo} in {threads}: {part:?}"
            );
            // (a leaf's HCAs stay with it)
            assert!(part.sizes.iter().all(|s| s.1 > 0), "{topo}: {part:?}");
        }
    }
}

#[test]
fn parallel_run_equals_the_sequential_engine_on_fat_trees() {
    // by switch groups into 1 to 4 processes, in 3 calls of run_until:
    // fattree:8 in the local order, fattree:4 (cross ties at its
    // switches, where the orders differ) in the reference's
    for (topo, order, until) in [
        ("fattree:8", "local", 20_000_000),
        ("fattree:4", "fifo", 30_000_000),
    ] {
        let t = builtin(topo).unwrap();
        let n = t.hcas().len();
        let modes = to_the_next(&t);
        let mut p = Params::qdr();
        p.msg_length = 4096;
        let (want, e, lazy) = sequential_report(&t, &p, &modes, until, order);
        assert_eq!(e, "None");
        assert!(lazy);
        assert!(
            want.messages_completed > 10 * n as u64,
            "{}",
            want.messages_completed
        );
        let f = Fabric::new(&t, &p).unwrap();
        for threads in 1..=4 {
            let part = f.partition(threads);
            assert_eq!(part.sizes.len(), threads);
            // whole leaf groups, as even as they go
            let group = if topo == "fattree:8" { 4 } else { 2 };
            assert!(
                part.sizes
                    .iter()
                    .all(|s| s.1 % group == 0 && s.1.abs_diff(n / threads) <= group),
                "{part:?}"
            );
            let (got, e, stats) = parallel_report(
                &t,
                &p,
                &modes,
                until,
                order,
                lazy,
                part.owner,
                3,
                threads.min(2),
            );
            assert_eq!(e, "None");
            assert!(
                got == want,
                "{topo} {order}, {threads} processes: the report differs"
            );
            assert!(threads == 1 || stats.crossings > 0);
            // the local order's processes run stretches alone
            // (lookahead.rs), the FIFO order's take every instant together
            if order == "local" {
                assert!(stats.alone > 0, "{stats:?}");
            } else {
                assert!(stats.rounds > 1000 && stats.alone == 0, "{stats:?}");
            }
        }
    }
}

#[test]
fn parallel_run_refuses_what_it_cannot_run() {
    // in the FIFO order the processes need the always-ticking timer and
    // every event queued (parallel_fifo.rs)
    let t = builtin("fattree:4").unwrap();
    let fifo = || Fabric::new(&t, &Params::qdr()).unwrap();
    let e = ibnet::engine::Parallel::new(vec![fifo(), fifo()], vec![0; t.nodes.len()])
        .err()
        .unwrap();
    assert!(e.contains("always-ticking credit timer"), "{e}");
    let mut q = Params::qdr();
    q.event_order = "local".into();
    let local = || Fabric::new(&t, &q).unwrap();
    let e = ibnet::engine::Parallel::new(vec![local(), local()], vec![2; t.nodes.len()])
        .err()
        .unwrap();
    assert!(e.contains("one of the 2 processes"), "{e}");
    let mut traced = local();
    traced.enable_trace();
    let e = ibnet::engine::Parallel::new(vec![local(), traced], vec![0; t.nodes.len()])
        .err()
        .unwrap();
    assert!(e.contains("flit traces"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// A parallel run of 1 to 4 logical processes on 1 or 2 threads, with
    /// the nodes dealt to the processes at random (any partition, not
    /// only switch groups) and the run cut into several calls, gives the
    /// sequential run's report byte for byte, in either order: every
    /// statistic, counter (events processed included) and message,
    /// numbered alike. With `programs`, each process is a program of its
    /// own that exchanges bytes with the others (what MPI ranks do,
    /// distributed.rs), here over memory.
    #[test]
    fn parallel_run_equals_the_sequential_engine_random(
        case in cases(),
        fifo in proptest::bool::ANY,
        threads in 1usize..5,
        seed in proptest::num::u64::ANY,
        steps in 1u64..4,
        workers in 1usize..3,
        programs in proptest::bool::ANY,
        delay in 0usize..3,
    ) {
        let (t, mut p, modes) = case.build();
        let until = 40_000_000;
        let order = if fifo { "fifo" } else { "local" };
        // (links with a delay run on processes in the local order only)
        if !fifo {
            with_link_delay(&mut p, delay);
        }
        let (want, ea, lazy) = sequential_report(&t, &p, &modes, until, order);
        let mut owner = random_owner(t.nodes.len(), threads, seed);
        if seed & 1 == 0 {
            owner = hosts_with_their_switches(&t, owner);
        }
        let (got, eb) = if programs {
            let (got, eb, events) =
                distributed_report(&t, &p, &modes, until, order, lazy, owner, steps);
            // (every process's count as of the last round: all of them)
            proptest::prop_assert!(eb != "None" || events == got.events_processed);
            (got, eb)
        } else {
            let (got, eb, _) =
                parallel_report(&t, &p, &modes, until, order, lazy, owner, steps, workers);
            (got, eb)
        };
        // (a model error stops each process at its instant; which node's
        // is named and what other processes did at it may differ)
        proptest::prop_assert_eq!(error_instant(&ea), error_instant(&eb));
        proptest::prop_assert!(ea != "None" || got == want, "{} order: reports differ", order);
    }
}

/// A closed loop (the driver of `ibnet run --traffic dissemination`)
/// over processes in several programs (engine/distributed_drive.rs): the
/// summary and the report are the sequential engine's, in either order,
/// on 2 and 3 processes; a time limit that stops a chain with messages in
/// flight too; and put, which the processes refuse, is refused in every
/// one of them with the same error.
#[test]
fn a_closed_loop_in_several_programs_is_the_sequential_run() {
    let t = builtin("fattree:8").unwrap();
    let ranks = ibnet::traffic::rank_hcas(&t);
    let dissemination = TrafficSpec::Dissemination {
        bytes: 3000,
        count: 3,
    };
    let chain = TrafficSpec::Chain {
        bytes: 9000,
        count: 5,
    };
    for (order, spec, until) in [
        ("fifo", &dissemination, None),
        ("local", &dissemination, None),
        ("fifo", &chain, Some(Time(3_000_000))),
    ] {
        let mut q = Params::qdr();
        q.event_order = order.into();
        let fifo = order == "fifo";
        if fifo {
            q.lazy_credit_timer = false;
        }
        let mut seq = Fabric::new(&t, &q).unwrap();
        let want_summary = run_closed_loop(&mut seq, spec, &ranks, until).unwrap();
        let want = seq.report_with(true);
        assert_eq!(want_summary.stopped_at_limit, until.is_some());
        for n in [2usize, 3] {
            let owner = random_owner(t.nodes.len(), n, 7 + n as u64);
            let got = in_programs(&t, &q, &owner, |d| {
                run_closed_loop(d, spec, &ranks, until).map_err(|e| e.to_string())
            });
            let (summary, report) = got.unwrap();
            assert_eq!(summary, want_summary, "{order} on {n} programs");
            assert!(report == want, "{order} on {n} programs: reports differ");
        }
    }
    // put is refused by every process alike
    let mut q = Params::qdr();
    q.lazy_credit_timer = false;
    let owner = random_owner(t.nodes.len(), 2, 1);
    let put = TrafficSpec::Op {
        kind: ibnet::engine::OpKind::Put,
        bytes: 100,
        src: 1,
        dst: 2,
        count: 1,
    };
    let err = in_programs(&t, &q, &owner, |d| {
        run_closed_loop(d, &put, &ranks, None).map_err(|e| e.to_string())
    })
    .unwrap_err();
    assert!(err.contains("one-sided operations"), "{err}");
}

/// Run `drive` in one program per process of `owner` (threads joined by
/// [`MemNet`]), each with its own fabric; process 0's answer and merged
/// report. Every program must give the same answer.
fn in_programs<R: PartialEq + std::fmt::Debug + Send>(
    t: &Topology,
    q: &Params,
    owner: &[u16],
    drive: impl Fn(&mut ibnet::engine::Distributed<MemEnd>) -> Result<R, String> + Sync,
) -> Result<(R, ibnet::Report), String> {
    let n = *owner.iter().max().unwrap() as usize + 1;
    let net = MemNet::new(n);
    let answers: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|me| {
                let (net, owner, drive) = (net.clone(), owner.to_vec(), &drive);
                s.spawn(move || {
                    let f = Fabric::new(t, q).unwrap();
                    let end = MemEnd { net, me };
                    let mut d = ibnet::engine::Distributed::new(f, owner, false, end).unwrap();
                    let r = drive(&mut d);
                    assert_eq!(d.transport_error(), None);
                    let fin = d.finish(0).unwrap();
                    (r, fin.map(|fin| fin.fabric.report_with(true)))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (k, (r, _)) in answers.iter().enumerate() {
        assert_eq!(r, &answers[0].0, "program {k} answered otherwise");
    }
    let (r, report) = answers.into_iter().next().unwrap();
    r.map(|r| (r, report.unwrap()))
}

/// What a co-simulation does with a fabric: inject, run to the next
/// completion (with a limit), take the completions. The sequential engine
/// and the parallel one answer alike (parallel_drive.rs).
trait Driven {
    fn inject(&mut self, at: Time, src: usize, dst: usize, bytes: u64) -> Result<u64, String>;
    fn run_to_completion(&mut self, limit: Time) -> ibnet::engine::RunOutcome;
    fn completions(&mut self) -> Vec<(u64, Time)>;
    fn run_to(&mut self, t: Time);
    fn now(&self) -> Time;
    fn in_flight(&self) -> usize;
}

impl Driven for Fabric {
    fn inject(&mut self, at: Time, src: usize, dst: usize, bytes: u64) -> Result<u64, String> {
        Fabric::inject(self, at, src, dst, bytes).map_err(|e| e.to_string())
    }
    fn run_to_completion(&mut self, limit: Time) -> ibnet::engine::RunOutcome {
        self.run_until_completion_or(limit)
    }
    fn completions(&mut self) -> Vec<(u64, Time)> {
        self.take_completions()
    }
    fn run_to(&mut self, t: Time) {
        self.run_until(t)
    }
    fn now(&self) -> Time {
        Fabric::now(self)
    }
    fn in_flight(&self) -> usize {
        Fabric::in_flight(self)
    }
}

impl Driven for ibnet::engine::Parallel {
    fn inject(&mut self, at: Time, src: usize, dst: usize, bytes: u64) -> Result<u64, String> {
        ibnet::engine::Parallel::inject(self, at, src, dst, bytes).map_err(|e| e.to_string())
    }
    fn run_to_completion(&mut self, limit: Time) -> ibnet::engine::RunOutcome {
        self.run_until_completion_or(limit)
    }
    fn completions(&mut self) -> Vec<(u64, Time)> {
        self.take_completions()
    }
    fn run_to(&mut self, t: Time) {
        self.run_until(t)
    }
    fn now(&self) -> Time {
        ibnet::engine::Parallel::now(self)
    }
    fn in_flight(&self) -> usize {
        ibnet::engine::Parallel::in_flight(self)
    }
}

/// A driver's session, the same for any [`Driven`]: bursts of random
/// injections (some at the current instant, some ahead), runs to the next
/// completion under a limit, a reply injected at each completion's
/// instant for some of them, and now and then a plain run and the
/// completions taken. The log of every answer.
fn drive_session(d: &mut dyn Driven, hcas: usize, seed: u64, steps: usize) -> Vec<String> {
    let mut s = seed | 1;
    let mut rnd = move |n: u64| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) % n
    };
    let mut log = Vec::new();
    for step in 0..steps {
        let now = d.now().0;
        for _ in 0..rnd(4) {
            let src = rnd(hcas as u64) as usize;
            let dst = rnd(hcas as u64) as usize;
            let at = now + if rnd(2) == 0 { 0 } else { rnd(3_000_000) };
            let bytes = 1 + rnd(4_000);
            log.push(format!(
                "inject {src}->{dst} {bytes} B at {at}: {:?}",
                d.inject(Time(at), src, dst, bytes)
            ));
        }
        if rnd(5) == 0 {
            // a plain run: its completions wait to be taken
            d.run_to(Time(now + rnd(5_000_000)));
            log.push(format!("ran to {}: in flight {}", d.now().0, d.in_flight()));
            log.push(format!("taken: {:?}", d.completions()));
        }
        let limit = Time(d.now().0 + 1 + rnd(30_000_000));
        let out = d.run_to_completion(limit);
        log.push(format!(
            "step {step}: {out:?} now {} in flight {}",
            d.now().0,
            d.in_flight()
        ));
        if let ibnet::engine::RunOutcome::Completed(t, ids) = &out {
            for id in ids {
                if rnd(2) == 0 {
                    continue;
                }
                let src = (*id as usize * 7 + 3) % hcas;
                let dst = rnd(hcas as u64) as usize;
                log.push(format!(
                    "reply to {id} at {}: {:?}",
                    t.0,
                    d.inject(*t, src, dst, 3000)
                ));
            }
        }
        if matches!(out, ibnet::engine::RunOutcome::Fatal) {
            break;
        }
        if rnd(4) == 0 {
            log.push(format!("taken: {:?}", d.completions()));
        }
    }
    log.push(format!("taken at the end: {:?}", d.completions()));
    log
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// A driver's session (injections between runs, runs to the next
    /// completion with the deadlock rule, completions taken) on 1 to 4
    /// processes with a random partition answers as the sequential engine
    /// does, every answer, and ends with its report, in either order.
    #[test]
    fn a_driven_parallel_run_answers_as_the_sequential_engine(
        case in cases(),
        fifo in proptest::bool::ANY,
        threads in 1usize..5,
        seed in proptest::num::u64::ANY,
        workers in 1usize..3,
        delay in 0usize..3,
    ) {
        let (t, p, _) = case.build();
        let order = if fifo { "fifo" } else { "local" };
        let mut q = p.clone();
        q.event_order = order.into();
        // (links with a delay run on processes in the local order only)
        if !fifo {
            with_link_delay(&mut q, delay);
        }
        let silent: Vec<(usize, TrafficMode)> = Vec::new();
        // In the FIFO order the processes run the always-ticking credit
        // timer (parallel_fifo.rs), and so does the reference here: the
        // deadlock rule's verdict can differ between the two timers when
        // the fabric is deadlocked with every obuf dormant (docs/scaling.md
        // 2.9); every other answer is the same.
        let mut sq = q.clone();
        if fifo {
            sq.lazy_credit_timer = false;
        }
        let mut seq = Fabric::new(&t, &sq).unwrap();
        start(&mut seq, &silent);
        let hcas = seq.num_hcas();
        let want = drive_session(&mut seq, hcas, seed, 30);
        let want_report = seq.report_with(true);
        let mut owner = random_owner(t.nodes.len(), threads, seed);
        if seed & 2 == 0 {
            owner = hosts_with_their_switches(&t, owner);
        }
        let parts = process_fabrics(&t, &q, &silent, &owner);
        // (and counts its events: the always-ticking timer's)
        let lazy = false;
        let mut par = ibnet::engine::Parallel::with_lazy_count(parts, owner, lazy).unwrap();
        par.set_workers(workers);
        let got = drive_session(&mut par, hcas, seed, 30);
        for (i, (a, b)) in want.iter().zip(&got).enumerate() {
            proptest::prop_assert_eq!(a, b, "{} order: answer {} differs", order, i);
        }
        proptest::prop_assert_eq!(want.len(), got.len());
        let fatal = want.iter().any(|l| l.contains("Fatal"));
        let got_report = par.into_fabric().report_with(true);
        proptest::prop_assert!(fatal || got_report == want_report, "{} order: reports differ", order);
    }
}
