//! Congestion control (docs/model/fabric.md section 12) on an incast.

mod common;
use common::*;
use ibnet::{Fabric, Params, Time, TrafficMode};

/// Senders H_1..H_3 stream to H_4 through one switch; H_1 alternates with
/// messages to H_5 (the victim flow, whose path is not congested).
fn run(cc: bool) -> (ibnet::Report, u64) {
    let mut p = Params::hcyang99();
    p.cc_enabled = cc;
    p.cc_per_destination = true;
    p.msg_length = 16 * 2048;
    p.start_stat_col_ns = 0.0;
    // incast(4): H_1..H_4 and H_5 on ports 0..4
    let t = incast(4);
    let mut f = Fabric::new(&t, &p).unwrap();
    f.set_traffic(0, TrafficMode::SeqLoop(vec![4, 5])).unwrap();
    f.set_traffic(1, TrafficMode::SeqLoop(vec![4])).unwrap();
    f.set_traffic(2, TrafficMode::SeqLoop(vec![4])).unwrap();
    f.run_until(Time(2_000_000_000));
    assert!(f.error().is_none(), "{:?}", f.error());
    let r = f.report_with(true);
    let victim = network_latencies(&r, |m| m.dst_lid == 5);
    assert!(victim.len() > 10);
    let mean = victim.iter().sum::<u64>() / victim.len() as u64;
    (r, mean)
}

#[test]
fn incast_with_cc() {
    let (off, victim_off) = run(false);
    let (on, victim_on) = run(true);
    let cnps: u64 = on.sinks.iter().map(|s| s.cnps_received).sum();
    let cnps_sent: u64 = on.sinks.iter().map(|s| s.cnps_sent).sum();
    assert!(cnps > 0 && cnps_sent >= cnps, "{cnps} {cnps_sent}");
    assert_eq!(off.sinks.iter().map(|s| s.cnps_sent).sum::<u64>(), 0);
    // the senders' CCT index was raised
    assert!(
        on.sinks[..3].iter().all(|s| s.ccti_max > 0),
        "{:?}",
        on.sinks.iter().map(|s| s.ccti_max).collect::<Vec<_>>()
    );
    assert_eq!(
        on.sinks[4].ccti_max, 0,
        "the victim receiver is never notified"
    );
    assert!(
        victim_on < victim_off,
        "victim latency with CC {victim_on} ps, without {victim_off} ps"
    );
    // nothing lost
    for r in [&off, &on] {
        assert_eq!(r.flits_generated, r.flits_consumed + r.flits_in_flight);
    }
}
