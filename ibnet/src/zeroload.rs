//! Zero-load latency of a lone message, derived from the timing rules of
//! ibfabric.md without running the event simulation.
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
//! - obuf: `x_k = max(d_k, x_{k-1} + Twire_{k-1})`;
//! - each switch: ISW hand-off when the HoQ is free, then the arbiter
//!   (`Tarb` switch), the VSW hand-off and the obuf, with the hand-off rule
//!   (`last + 1 ns`) of sec. 5.3;
//! - sink (sec. 5.6): `c_0 = a_0 + D_0`; `c_k = c_{k-1} + D_{k-1}` if
//!   `a_k < c_{k-1} + D_{k-1}`, else `a_k + D_k`.
//!
//! Assumptions (true for a lone message on an otherwise idle fabric with the
//! shipped presets): credits never limit (packets are at most the static
//! credits), flow-control packets fit into the gaps at packet boundaries, and
//! the injection is not within 1 ns after a credit tick of the source obuf
//! (Appendix A.3). The test `zero_load_matches_simulation` checks it against
//! the engine.

use crate::params::{Params, Timing};

const NS: u64 = 1000;

/// Latency in ps from injection (the app receives the message) to the
/// consumption of its last flit, over `switches` switches.
pub fn latency(p: &Params, tm: &Timing, switches: usize, bytes: u64) -> u64 {
    let Ok(pkts) = p.packets(bytes) else { return 0 };
    // flits: (bytes, is packet head, packet flits)
    let mut fl: Vec<(usize, bool, usize)> = Vec::new();
    for &b in &pkts {
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
    // --- switches
    let mut arr = x;
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
        arr = xx;
    }
    // --- sink
    let mut cons = 0u64;
    for k in 0..n {
        let dk = tm.drain[fl[k].0];
        cons = if k == 0 {
            arr[0] + dk
        } else {
            let tick = cons + tm.drain[fl[k - 1].0];
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
