//! Lossy links and end-to-end retransmission (engine/loss.rs,
//! docs/rdma.md "Lossy links and retransmission").

mod common;
use common::*;
use ibnet::topology::builtin;
use ibnet::{Fabric, Params, Time};
use proptest::prelude::*;

fn lossy(rate: f64, seed: u64) -> Params {
    let mut p = Params::qdr();
    p.link_packet_error_rate = rate;
    p.seed = seed;
    p
}

/// Run `flows` (src, dst, bytes), all injected at t = 0, on H8_S1 to the
/// end; every message must complete. Returns the fabric and the
/// completion time of each flow (ps).
fn run_all(p: &Params, flows: &[(usize, usize, u64)]) -> (Fabric, Vec<u64>) {
    let topo = builtin("H8_S1").unwrap();
    let mut f = Fabric::new(&topo, p).unwrap();
    let done = completion_times(&mut f, flows);
    assert_eq!(f.in_flight(), 0, "every message completes");
    (f, done)
}

/// Two 1 MiB messages from every host of H8_S1 (to i+1 and i+3): 16 MiB,
/// 8192 packets of 2048 B, each crossing two links.
fn many() -> Vec<(usize, usize, u64)> {
    (0..8)
        .flat_map(|i| [(i, (i + 1) % 8, 1 << 20), (i, (i + 3) % 8, 1 << 20)])
        .collect()
}

#[test]
fn lossless_reports_have_no_loss_section() {
    let (f, _) = run_all(&Params::qdr(), &[(0, 1, 4096)]);
    let j = serde_json::to_string(&f.report()).unwrap();
    assert!(!j.contains("loss"), "{j}");
    // and the parameters serialise without the new keys
    let pj = serde_json::to_string(&Params::qdr()).unwrap();
    for k in ["send_queues", "link_packet_error_rate", "rto_ns"] {
        assert!(!pj.contains(k), "{k} in {pj}");
    }
}

#[test]
fn rate_1e4_every_message_completes_and_is_deterministic() {
    let p = lossy(1e-4, 7);
    let (f, t1) = run_all(&p, &many());
    let r = f.report_with(true);
    let l = r.loss.clone().expect("loss section");
    // 8192 packets x 2 links x 1e-4: about 1.6 corruptions expected;
    // seed 7 gives these (deterministic)
    assert!(l.packets_corrupted > 0, "{l:?}");
    assert!(l.packets_retransmitted >= l.packets_corrupted, "{l:?}");
    assert!(
        l.messages_retransmitted > 0 && l.messages_delayed > 0,
        "{l:?}"
    );
    assert!(l.acks_sent >= 16, "{l:?}");
    assert!(l.messages_delayed <= l.messages_retransmitted, "{l:?}");
    assert!(l.added_latency_max_ps > 0 && l.added_latency_total_ps >= l.added_latency_max_ps);
    assert_eq!(r.messages_completed, 16);
    // the same seed: byte-identical report
    let (g, t2) = run_all(&p, &many());
    assert_eq!(t1, t2);
    let a = serde_json::to_string(&f.report_with(true)).unwrap();
    let b = serde_json::to_string(&g.report_with(true)).unwrap();
    assert_eq!(a, b);
    // another seed: a different run
    let (h, t3) = run_all(&lossy(1e-4, 8), &many());
    let c = serde_json::to_string(&h.report_with(true)).unwrap();
    assert_ne!(a, c);
    assert_ne!(t1, t3);
    // and lossless is faster for the delayed messages, never slower
    let (_, t0) = run_all(&Params::qdr(), &many());
    assert!(t0.iter().zip(&t1).all(|(a, b)| a <= b), "{t0:?} {t1:?}");
    assert!(t0.iter().zip(&t1).any(|(a, b)| a < b));
}

/// Case 1 of docs/model/fabric.md sec. 11 (one 64-byte packet H_1 -> H_2 through
/// one switch) with the packet lost and recovered by the timeout: the
/// first seed for which exactly the original copy is corrupted and the
/// probe and its ACK get through (rate 0.5).
#[test]
fn single_loss_timeout_exact() {
    let rto_ns = 10_000;
    for seed in 1..200 {
        let mut p = lossy(0.5, seed);
        p.msg_mtu = 64;
        p.rto_ns = rto_ns as f64;
        let mut f = Fabric::new(&two_hosts_one_switch(), &p).unwrap();
        let id = f.inject(Time(0), 0, 1, 64).unwrap();
        let (t, ms) = f.run_until_completion().unwrap();
        assert_eq!(ms, vec![id]);
        f.run_until(Time(t.0 + 3 * rto_ns * 1000));
        let l = f.report().loss.unwrap();
        if !(l.packets_corrupted == 1
            && l.responses_corrupted == 0
            && l.timeouts == 1
            && l.packets_retransmitted == 1)
        {
            continue;
        }
        // Lossless (sec. 11 case 1): the flit leaves H_1 at 17 ns, reaches
        // H_2 at 117 ns, is consumed at 136.693 ns. Lossy: the corrupted
        // copy still arrives at 117 ns and is discarded; the timer started
        // when it left H_1 (17 ns) expires at 17 + rto = 10017 ns; the
        // probe is generated then, stamped and sent after Tgpop (16 ns) at
        // 10033 ns, crosses the switch (ISW + VSW = 100 ns) to arrive at
        // 10133 ns and is consumed after the drain (19.693 ns).
        assert_eq!(t.0, ns(10_133) + 19_693, "seed {seed}");
        let (lat, done) = f.message_times(id).unwrap();
        assert_eq!(done, Some(t));
        // network latency from the first copy's stamp (17 ns)
        assert_eq!(lat, Some(Time(ns(10_133 - 17))));
        // added latency: the receiver's hole lasted from the corrupted
        // copy's arrival to the accepted copy's
        assert_eq!(l.added_latency_max_ps, ns(10_133 - 117));
        assert_eq!(l.added_latency_total_ps, ns(10_133 - 117));
        assert_eq!(
            (
                l.discarded_corrupted,
                l.naks_sent,
                l.acks_sent,
                l.probes_sent
            ),
            (1, 0, 1, 1)
        );
        // the ACK stopped the timer: nothing more was sent
        assert_eq!(f.report().flits_generated, 2);
        return;
    }
    panic!("no seed in 1..200 gives the single-loss case");
}

/// A lost middle packet is recovered by the receiver's NAK (go-back-N),
/// with no timeout: the first seed where that happens at rate 0.02.
#[test]
fn nak_go_back_n() {
    for seed in 1..200 {
        let mut p = lossy(0.02, seed);
        p.rto_ns = 1e6; // far beyond the run: only NAKs can recover
        let (f, _) = run_all(&p, &[(0, 1, 64 * 2048)]);
        let l = f.report().loss.unwrap();
        if l.timeouts == 0 && l.naks_sent > 0 && l.responses_corrupted == 0 {
            assert!(l.discarded_out_of_sequence > 0, "{l:?}");
            assert!(l.packets_retransmitted >= l.packets_corrupted, "{l:?}");
            assert_eq!(l.acks_sent, 1);
            return;
        }
    }
    panic!("no seed with a NAK-only recovery");
}

#[test]
fn bad_values_are_rejected() {
    for kv in [
        "link_packet_error_rate=1.0",
        "link_packet_error_rate=-0.1",
        "link_bit_error_rate=1.5",
        "rto_ns=0",
        "send_queues=many",
    ] {
        let p = Params::qdr().apply_override(kv).unwrap();
        let e = Fabric::new(&builtin("H8_S1").unwrap(), &p).err();
        assert!(e.is_some(), "{kv} accepted");
        let key = kv.split('=').next().unwrap();
        assert!(e.unwrap().to_string().contains(key), "{kv}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Heavy loss on a small all-to-some run: everything completes, the
    /// counters are consistent, with one or several send queues.
    #[test]
    fn recovery_always_completes(
        seed in 0u64..1_000_000,
        rate in prop_oneof![Just(0.01), Just(0.05), Just(0.2)],
        sq in prop_oneof![Just("single"), Just("per-destination"), Just("per-message")],
        kb in 1u64..24,
        preset in prop_oneof![Just("qdr"), Just("thesis-ddr"), Just("hcyang99")],
    ) {
        let mut p = Params::preset(preset).unwrap();
        p.link_packet_error_rate = rate;
        p.seed = seed;
        p.rto_ns = 20_000.0;
        p.send_queues = sq.into();
        // Retransmission bursts can overfill an obuf through the
        // reference's admission quirk (docs/model/fabric.md Q4, a fatal
        // model condition, thesis-ddr at 20 % loss): this property is
        // about loss recovery, so the obuf grows instead (and counts it).
        p.elastic_obuf = true;
        let flows: Vec<_> = (0..4)
            .flat_map(|i| [(i, (i + 1) % 4, kb * 1024), (i, (i + 2) % 4, kb * 1024 + 100)])
            .collect();
        let (f, _) = run_all(&p, &flows);
        let l = f.report().loss.unwrap();
        prop_assert_eq!(f.report().messages_completed, 8);
        prop_assert!(l.acks_sent >= 8);
        prop_assert!(l.packets_retransmitted >= l.probes_sent);
        // a corrupted copy is discarded, so something was sent again
        prop_assert!(l.packets_corrupted == 0 || l.packets_retransmitted > 0);
        // a message completes late only after a retransmission of it
        prop_assert!(l.messages_delayed <= l.messages_retransmitted);
    }
}

/// Put and get (engine/rdma.rs) with several send queues, lossy links
/// and the host model: every operation reaches each of its points once.
#[test]
fn one_sided_ops_with_queue_pairs_and_loss() {
    use ibnet::{OpKind, OpPoint};
    for sq in ["single", "per-destination", "per-message"] {
        for (rate, host) in [(0.0, false), (0.02, false), (0.02, true)] {
            let mut p = lossy(rate, 5);
            p.send_queues = sq.into();
            p.rto_ns = 20_000.0;
            p.host_model = host;
            let topo = builtin("H8_S1").unwrap();
            let mut f = Fabric::new(&topo, &p).unwrap();
            let mut want = 0;
            for i in 0..4 {
                for (d, kind) in [((i + 1) % 4, OpKind::Put), ((i + 2) % 4, OpKind::Get)] {
                    f.inject_op(Time(0), i, d, 20_000, kind).unwrap();
                    want += if kind == OpKind::Put { 2 } else { 1 };
                }
                f.inject(Time(0), i, (i + 3) % 4, 9_000).unwrap();
                want += 1;
            }
            while f.run_until_completion().is_some() {}
            assert!(f.error().is_none(), "{:?}", f.error());
            assert_eq!(f.in_flight(), 0, "{sq} {rate} {host}");
            let ev = f.take_op_events();
            assert_eq!(ev.len(), want, "{sq} {rate} {host}");
            let mut seen = std::collections::HashSet::new();
            for (id, pt, _) in &ev {
                assert!(seen.insert((*id, format!("{pt:?}"))), "{id} {pt:?} twice");
            }
            assert!(ev.iter().any(|(_, pt, _)| *pt == OpPoint::GetDone));
        }
    }
}

/// A bit error rate instead of a packet error rate: the packet's bytes on
/// the wire set its probability; both at once is an error.
#[test]
fn bit_error_rate() {
    let mut p = Params::qdr();
    p.link_bit_error_rate = 1e-7; // 2048-B packets: 1.6e-3 per link
    let (f, _) = run_all(&p, &many()[..4]);
    let r = f.report();
    let l = r.loss.clone().unwrap();
    assert!(
        l.packets_corrupted > 0 && l.packets_retransmitted > 0,
        "{l:?}"
    );
    assert_eq!(r.messages_completed, 4);
    let j = serde_json::to_string(&r).unwrap();
    assert!(j.contains("\"link_bit_error_rate\":1e-7"), "{j}");
    p.link_packet_error_rate = 1e-4;
    let e = Fabric::new(&builtin("H8_S1").unwrap(), &p).err().unwrap();
    assert!(e.to_string().contains("not both"), "{e}");
}
