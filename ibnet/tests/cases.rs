//! Hand-checkable cases of docs/model/fabric.md section 11 and the worked check of
//! section 13, to the picosecond.

mod common;
use common::*;
use ibnet::engine::TraceKind;
use ibnet::{Fabric, Params, Time, TrafficMode};

const H1: u32 = 0;
const H2: u32 = 1;
const SW: u32 = 2;

#[test]
fn case1_single_flit() {
    let mut f = case_fabric(&qdr(64, 64), TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 1000);
    let tr = f.take_trace();
    let inj = times(&tr, TraceKind::Inject, H1);
    assert_eq!(inj.len(), 1);
    assert_eq!(inj[0].t, ns(1), "generator gets the message at 1 ns");
    assert_eq!(times(&tr, TraceKind::Send, H1)[0].t, ns(17));
    assert_eq!(times(&tr, TraceKind::Recv, SW)[0].t, ns(17));
    assert_eq!(times(&tr, TraceKind::Send, SW)[0].t, ns(117));
    assert_eq!(times(&tr, TraceKind::Recv, H2)[0].t, ns(117));
    assert_eq!(times(&tr, TraceKind::Consume, H2)[0].t, 136_693);
    let r = f.report();
    let s = &r.sinks[1];
    assert_eq!(s.msg_network_latency_ps.count, 1);
    assert_eq!(s.msg_network_latency_ps.min, ns(100));
    assert_eq!(s.time_last_packet_consumed_ps, 136_693);
    assert_eq!(s.packet_fabric_time_ps.min, 119_693);
    assert_eq!(s.packet_fabric_time_ps.count, 1);
    // completion (consumption of the last flit) for the API
    assert_eq!(
        f.message_times(0),
        Some((Some(Time(100_000)), Some(Time(136_693))))
    );
}

fn case2(mtu: u32, len: u64, flits: u64, latency_ns: u64) {
    let mut f = case_fabric(&qdr(mtu, len), TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, latency_ns + 10_000);
    let tr = f.take_trace();
    let sent = times(&tr, TraceKind::Send, H1);
    let recv = times(&tr, TraceKind::Recv, H2);
    assert_eq!(sent.len() as u64, flits);
    assert_eq!(recv.len() as u64, flits);
    for k in 0..flits as usize {
        assert_eq!(sent[k].t, ns(17 + 20 * k as u64), "flit {k} leaves H_1");
        assert_eq!(recv[k].t, ns(117 + 20 * k as u64), "flit {k} reaches H_2");
    }
    let r = f.report();
    assert_eq!(r.sinks[1].msg_network_latency_ps.min, ns(latency_ns));
    assert_eq!(r.sinks[1].msg_network_latency_ps.count, 1);
}

#[test]
fn case2_streams() {
    case2(64, 64, 1, 100);
    case2(1600, 6 * 64, 6, 200);
    case2(2048, 131072, 2048, 41040);
}

#[test]
fn case2_and_4_long_message_and_sink_sawtooth() {
    // 400000 B at MTU 1600: 250 packets of 25 flits, 6250 flits.
    let mut f = case_fabric(&qdr(1600, 400_000), TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 200_000);
    let r = f.report();
    assert_eq!(r.sinks[1].msg_network_latency_ps.min, ns(125_080));
    // case 4: last consumption 125113.930 ns
    assert_eq!(r.sinks[1].time_last_packet_consumed_ps, 125_113_930);
    let tr = f.take_trace();
    let c = times(&tr, TraceKind::Consume, H2);
    assert_eq!(c.len(), 6250);
    for k in 0..=64u64 {
        assert_eq!(c[k as usize].t, 136_693 + 19_693 * k, "c_{k}");
    }
    assert_eq!(c[65].t, 1_436_693, "drain restarts at a_65 + d");
    assert_eq!(
        c[130].t,
        1_436_693 + 1_300_000,
        "pattern repeats every 65 flits"
    );
    assert_eq!(r.flits_consumed, 6250);
}

#[test]
fn case3_back_to_back_messages() {
    let mut f = case_fabric(&qdr(1600, 6400), TrafficMode::SeqLoop(vec![2]));
    run_to(&mut f, 12_000);
    let r = f.report_with(true);
    let lats = network_latencies(&r, |_| true);
    assert!(lats.len() >= 5, "{lats:?}");
    assert_eq!(lats[0], ns(2080));
    for l in &lats[1..] {
        assert_eq!(*l, ns(2084));
    }
}

#[test]
fn case7_wire_limited_ddr() {
    let mut p = qdr(2112, 2112);
    p.link_speed = "DDR".into();
    p.sink_pop_dly_per_byte_ns = 0.525;
    let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 5000);
    let tr = f.take_trace();
    let sent = times(&tr, TraceKind::Send, H1);
    let recv = times(&tr, TraceKind::Recv, H2);
    assert_eq!(recv.len(), 33);
    for k in 0..33u64 {
        assert_eq!(sent[k as usize].t, ns(17 + 32 * k));
        assert_eq!(recv[k as usize].t, ns(117 + 32 * k));
    }
    let r = f.report();
    assert_eq!(r.sinks[1].msg_network_latency_ps.min, ns(1124));
    assert_eq!(r.sinks[1].time_last_packet_consumed_ps, 1_225_800);
}

#[test]
fn thesis_preset_worked_check() {
    let mut p = Params::thesis_ddr();
    p.msg_length = 2048;
    p.start_stat_col_ns = 0.0;
    let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 5000);
    let tr = f.take_trace();
    let sent = times(&tr, TraceKind::Send, H1);
    let recv = times(&tr, TraceKind::Recv, H2);
    let cons = times(&tr, TraceKind::Consume, H2);
    assert_eq!(recv.len(), 33, "32 full flits and one 20-byte flit");
    // the first flit leaves at its injection stamp, then every 32 ns
    for k in 0..33u64 {
        assert_eq!(sent[k as usize].t, ns(17 + 32 * k));
        assert_eq!(recv[k as usize].t, ns(117 + 32 * k));
    }
    // flit k consumed 33.6 + 1.6k ns after its own arrival
    for k in 0..32u64 {
        assert_eq!(
            cons[k as usize].t - recv[k as usize].t,
            33_600 + 1_600 * k,
            "flit {k}"
        );
    }
    let r = f.report();
    assert_eq!(r.sinks[1].msg_network_latency_ps.min, ns(1124));
    assert_eq!(r.sinks[1].time_last_packet_consumed_ps, 1_225_800);
}

#[test]
fn thesis_preset_short_single_flit() {
    // 12 B payload + 20 B header = one 32-byte flit, consumed 0.525 x 32 =
    // 16.8 ns after arrival. Its generator pop delay is 32 x 0.25 = 8 ns,
    // so it is stamped and leaves H_1 at 9 ns and arrives at 109 ns.
    let mut p = Params::thesis_ddr();
    p.msg_length = 12;
    let mut f = case_fabric(&p, TrafficMode::SeqOnce(vec![2]));
    run_to(&mut f, 1000);
    let tr = f.take_trace();
    let recv = times(&tr, TraceKind::Recv, H2);
    let cons = times(&tr, TraceKind::Consume, H2);
    assert_eq!(recv[0].t, ns(109));
    assert_eq!(cons[0].t - recv[0].t, 16_800);
}

#[test]
fn first_fc_packet_carries_full_limit_and_credit_ticks() {
    // Appendix A.1: at 1 ns every obuf sends FC with FCCL = 200. With H_2
    // silent, its obuf sends exactly one FC packet per change.
    let mut f = case_fabric(&qdr(64, 64), TrafficMode::Silent);
    run_to(&mut f, 2000);
    let r = f.report();
    for o in &r.obufs {
        assert_eq!(o.fc_packets_sent, 1, "{o:?}");
        assert_eq!(o.bytes_sent, 8);
    }
    // nothing more happens while idle: the credit timers went dormant
    let ev = f.events_processed();
    run_to(&mut f, 2_000_000);
    assert!(
        f.events_processed() - ev <= 4,
        "idle fabric processed {} events",
        f.events_processed() - ev
    );
}

#[test]
fn inject_api_matches_app_start() {
    let p = qdr(2048, 131072);
    let mut f = Fabric::new(&two_hosts_one_switch(), &p).unwrap();
    let id = f.inject(Time(0), 0, 1, 131072).unwrap();
    let (t, ids) = f.run_until_completion().unwrap();
    assert_eq!(ids, vec![id]);
    let (lat, done) = f.message_times(id).unwrap();
    assert_eq!(lat, Some(Time(ns(41040))));
    assert_eq!(done, Some(t));
    assert!(f.run_until_completion().is_none());
    assert_eq!(f.in_flight(), 0);
    assert!(f.inject(Time(0), 0, 1, 10).is_err(), "inject into the past");
    // a self-send loops back at the first switch, as in the reference
    let me = f.inject(t, 0, 0, 64).unwrap();
    let (_, ids) = f.run_until_completion().unwrap();
    assert_eq!(ids, vec![me]);
    let t = f.now();
    assert!(f.inject(t, 0, 5, 10).is_err(), "no such HCA");
    assert!(f.inject(t, 0, 1, 0).is_err(), "empty message");
}
