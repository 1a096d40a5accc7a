//! Zero-load latency of a lone message, derived from the timing rules of
//! docs/model/fabric.md without running the event simulation.
//!
//! The message is followed flit by flit through closed-form recurrences,
//! one per pipeline stage:
//!
//! - app to generator: `msg2msg_gap`;
//! - generator (sec. 5.2): flit k is created at the push ticks; it goes to
//!   the HoQ at `s_k = max(c_k, d_{k-1})` (the "sent" of flit k-1 frees the
//!   slot); generation pauses while the VL queue holds `max_queued_per_vl`
//!   flits and resumes `Tpush` after the "sent" that pops it;
//! - HCA arbiter: `d_k = max(s_k + Tgpop_k, d_{k-1} + Tarb_{k-1})`, and a
//!   packet head also waits until the obuf has more free slots than the
//!   packet (retried when a queued flit starts on the wire);
//! - obuf: `x_k = max(d_k, x_{k-1} + Twire_{k-1})`; the flit reaches the
//!   next node `link_delay_ns` later (0 in the reference model);
//! - each switch: ISW hand-off when the HoQ is free, then the arbiter
//!   (`Tarb` switch), the VSW hand-off and the obuf, with the hand-off rule
//!   (`last + 1 ns`) of sec. 5.3;
//! - sink (sec. 5.6): `c_0 = a_0 + D_0`; `c_k = c_{k-1} + D_{k-1} + G_k` if
//!   `a_k < c_{k-1} + D_{k-1} + G_k`, else `a_k + D_k`, where `G_k` is the
//!   per-packet gap when flit k heads a packet (`sink_packet_gap_periods`).
//!
//! Assumptions (true for a lone message on an otherwise idle fabric with the
//! shipped presets): credits never limit (packets are at most the static
//! credits), flow-control packets fit into the gaps at packet boundaries, and
//! the injection is not within 1 ns after a credit tick of the source obuf
//! (Appendix A.3). With a link delay, the credits' longer way back can
//! hold up a message longer than the static credits, which the formula
//! leaves out (it is then a lower bound). The test `zero_load_matches_simulation` checks it against
//! the engine.

use crate::params::{Params, Timing};

const NS: u64 = 1000;

/// Latency in ps from injection (the app receives the message) to the
/// consumption of its last flit, over `switches` switches.
pub fn latency(p: &Params, tm: &Timing, switches: usize, bytes: u64) -> u64 {
    let Ok(pkts) = p.packets(bytes) else { return 0 };
    latency_packets(p, tm, switches, &pkts)
}

/// [`latency`] of a message made of packets of these byte sizes (headers
/// included): also a control packet of one-sided operations (docs/rdma.md).
pub fn latency_packets(p: &Params, tm: &Timing, switches: usize, pkts: &[u32]) -> u64 {
    // flits: (bytes, is packet head, packet flits)
    let mut fl: Vec<(usize, bool, usize)> = Vec::new();
    for &b in pkts {
        let (n, last) = p.flits_of(b);
        for i in 0..n {
            let by = if i + 1 == n { last } else { p.flit_size } as usize;
            fl.push((by, i == 0, n as usize));
        }
    }
    let n = fl.len();
    let t0 = 0u64;
    let gen_start = t0 + tm.gap;
    // --- generator + HCA arbiter + HCA obuf
    let mut c = vec![0u64; n]; // creation
    let mut s = vec![0u64; n]; // sent to HoQ
    let mut d = vec![0u64; n]; // leaves the arbiter
    let mut x = vec![0u64; n]; // starts on the wire
    let maxq = p.max_queued_per_vl as usize;
    let osize = p.obuf_size_hca as usize;
    for k in 0..n {
        // creation time
        c[k] = if k == 0 {
            gen_start
        } else {
            c[k - 1] + tm.push
        };
        if k > 0 {
            // VL queue occupancy at the push tick: created, not yet sent
            loop {
                let q = (0..k).filter(|&j| c[j] <= c[k] && s[j] > c[k]).count();
                if q < maxq {
                    break;
                }
                // resume Tpush after the next "sent" that pops the queue
                let next = (0..k)
                    .filter(|&j| d[j] >= c[k])
                    .map(|j| d[j])
                    .min()
                    .unwrap_or(c[k]);
                c[k] = next + tm.push;
            }
        }
        s[k] = if k == 0 { c[k] } else { c[k].max(d[k - 1]) };
        let h = s[k] + tm.gpop[fl[k].0];
        let mut dk = if k == 0 {
            h
        } else {
            h.max(d[k - 1] + tm.arb_hca[fl[k - 1].0])
        };
        if fl[k].1 && k > 0 {
            // obuf admission: size - queued > packet flits
            loop {
                let q = (0..k).filter(|&j| d[j] <= dk && x[j] > dk).count();
                if osize as isize - q as isize > fl[k].2 as isize {
                    break;
                }
                dk = (0..k)
                    .filter(|&j| x[j] > dk)
                    .map(|j| x[j])
                    .min()
                    .unwrap_or(dk + 1);
            }
        }
        d[k] = dk;
        x[k] = if k == 0 {
            d[k]
        } else {
            d[k].max(x[k - 1] + tm.wire[fl[k - 1].0])
        };
    }
    // --- switches (each link delays what crosses it by `link_delay_ns`)
    let mut arr = x;
    arr.iter_mut().for_each(|a| *a += tm.link);
    for _ in 0..switches {
        let mut hand = vec![0u64; n];
        let mut dd = vec![0u64; n];
        let mut o = vec![0u64; n];
        let mut xx = vec![0u64; n];
        let (mut last_ib, mut last_arb) = (0u64, 0u64);
        for k in 0..n {
            // ISW hand-off when the HoQ slot is free (previous flit sent)
            let now = if k == 0 {
                arr[k]
            } else {
                arr[k].max(dd[k - 1])
            };
            hand[k] = handoff(arr[k] + tm.isw, now, &mut last_ib);
            dd[k] = if k == 0 {
                hand[k]
            } else {
                hand[k].max(dd[k - 1] + tm.arb_sw[fl[k - 1].0])
            };
            o[k] = handoff(hand[k] + tm.vsw, dd[k], &mut last_arb);
            xx[k] = if k == 0 {
                o[k]
            } else {
                o[k].max(xx[k - 1] + tm.wire[fl[k - 1].0])
            };
        }
        xx.iter_mut().for_each(|a| *a += tm.link);
        arr = xx;
    }
    // --- sink
    let mut cons = 0u64;
    for k in 0..n {
        let dk = tm.drain[fl[k].0];
        cons = if k == 0 {
            arr[0] + dk
        } else {
            // flit k heads a packet: the sink idled the per-packet gap
            // after flit k-1 (0 unless sink_packet_gap_periods is set)
            let gap = if fl[k].1 { tm.pkt_gap } else { 0 };
            let tick = cons + tm.drain[fl[k - 1].0] + gap;
            if arr[k] < tick {
                tick
            } else {
                arr[k] + dk
            }
        };
    }
    cons - t0
}

fn handoff(target: u64, now: u64, last: &mut u64) -> u64 {
    let mut t = target;
    if t <= *last {
        t = *last + NS;
    }
    if t > now {
        *last = t;
        t
    } else {
        *last = now;
        now
    }
}

/// A provable lower bound (ps) of the travel time, injection to the last
/// flit consumed, of ANY message of `bytes` over `switches` switches, on
/// an idle or loaded fabric (unlike [`latency`], which is the lone
/// message's exact time and relies on the assumptions above: with the qdr
/// preset it is not a lower bound, so it must not promise arrivals).
///
/// Each rule used only ever delays a flit (docs/model/fabric.md 5): a flit leaves
/// a switch no earlier than ISW + VSW after it arrived (its first bit); on
/// every link the flits of one message follow each other (a flit starts
/// on the wire no earlier than the previous one's wire time after it); the
/// sink consumes flit k no earlier than flit k-1's consumption plus that
/// one's drain time, and the first one no earlier than its arrival (not
/// its arrival plus its drain: a sink busy with another message's flit
/// consumes it at that flit's tick; the property test of exact notify
/// found this). With flits f_0..f_{n-1}:
///
///   switches x (ISW + VSW) + max(sum_{k<n-1} wire(f_k), sum_{k<n-1} drain(f_k))
///
/// which is the thesis's per-hop base plus the message's serialisation on
/// a link or in the sink, whichever is slower. The generator, arbiters,
/// credits and the application gap are left out (they only add).
pub fn lower_bound(p: &Params, tm: &Timing, switches: usize, bytes: u64) -> u64 {
    let hops = switches as u64 * (tm.isw + tm.vsw) + (switches as u64 + 1) * tm.link;
    let Ok(l) = p.packet_layout(bytes.max(1)) else {
        return hops;
    };
    let f = p.flit_size as usize;
    // (flits, bytes of the last flit) of a full and of the last packet
    let (nf, lf) = p.flits_of(l.full);
    let (nl, ll) = p.flits_of(l.last);
    let full_pkts = l.count as u64 - 1;
    let sum = |t: &[u64]| -> u64 {
        let full = (nf as u64 - 1) * t[f] + t[lf as usize];
        let last = (nl as u64 - 1) * t[f] + t[ll as usize];
        full_pkts * full + last
    };
    // the last flit of the message is the last packet's last one
    let last_flit = ll as usize;
    let wire = sum(&tm.wire) - tm.wire[last_flit];
    let drain = sum(&tm.drain) - tm.drain[last_flit];
    hops + wire.max(drain)
}

#[cfg(test)]
mod bound_tests {
    use super::*;
    use crate::engine::Fabric;
    use crate::topology::builtin;

    /// The bound never exceeds a lone message's exact travel time (the
    /// engine's, which the fastest any message can travel), in every
    /// preset, route length and size tried; and it is more than the
    /// per-hop base alone once a message has several flits.
    #[test]
    fn lower_bound_is_below_every_lone_message() {
        for preset in ["thesis-ddr", "qdr", "hcyang99"] {
            let p = Params::preset(preset).unwrap();
            let tm = Timing::new(&p).unwrap();
            for topo in ["H8_S1", "H8_S2", "H8_S6"] {
                let t = builtin(topo).unwrap();
                for bytes in [
                    1u64, 44, 64, 100, 1000, 2048, 2049, 4312, 10_000, 65_536, 400_000,
                ] {
                    for dst in [1usize, 7] {
                        let mut fab = Fabric::new(&t, &p).unwrap();
                        let sw = fab.switches_between(0, dst).unwrap();
                        fab.inject(crate::Time(0), 0, dst, bytes).unwrap();
                        let (ta, _) = fab.run_until_completion().unwrap();
                        let lb = lower_bound(&p, &tm, sw, bytes);
                        assert!(
                            lb <= ta.0,
                            "{preset} {topo} {bytes} B to {dst}: bound {lb} > travel {}",
                            ta.0
                        );
                        assert!(lb >= sw as u64 * (tm.isw + tm.vsw));
                    }
                }
            }
        }
        // thesis-ddr, one switch, 400 kB: the serialisation dominates
        let p = Params::thesis_ddr();
        let tm = Timing::new(&p).unwrap();
        assert!(lower_bound(&p, &tm, 1, 400_000) > 100 * lower_bound(&p, &tm, 1, 1));
    }
}
