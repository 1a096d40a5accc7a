//! Lossy links and end-to-end recovery (docs/rdma.md "Lossy links
//! and retransmission"). Off unless `link_packet_error_rate > 0`.
//!
//! Corruption: each time the last flit of a data packet or of an ACK/NAK
//! starts on a link (every hop, the HCA's own link included), the packet
//! is corrupted with probability `link_packet_error_rate` (or, with
//! `link_bit_error_rate` b, 1 - (1 - b)^(8 n) for its n bytes), drawn from one
//! splitmix64 stream seeded by `seed` in event order (deterministic). The
//! fabric is cut-through: a switch has forwarded most of a packet before
//! its CRC can be checked, so a corrupted packet is not stopped at the
//! switch; it is marked bad (IB's end-bad-packet delimiter), still uses
//! links, buffers and credits, and is discarded by the destination. CNPs
//! (congestion control) are not subject to errors.
//!
//! Receiver (per message, RC's expected PSN = packet index): a packet that
//! is not bad and is the expected one is accepted; anything else is
//! discarded after it drains (it frees its credits as usual). A good
//! out-of-sequence packet triggers a NAK carrying the expected PSN, once
//! per expected PSN (RC's rule), or again for a timeout probe. The packet
//! that completes the message triggers an ACK; a probe duplicate of a
//! completed message is ACKed again.
//!
//! ACK/NAK: one flit of `flit_size` bytes (as a CNP: the fabric's header
//! is `pkt_header_bytes`, 0 in the qdr preset, so a response is the
//! smallest packet the fabric carries), queued at the receiving HCA's
//! generator with the CNPs (served first, VL 0), consumed at once by the
//! sender's sink.
//!
//! Sender: go-back-N. A NAK for PSN k of a message not yet ACKed
//! retransmits packets k .. (packets of the message generated so far),
//! unless a running retransmission of that message will still send k. The
//! retransmission timer of a message starts when the message's last packet
//! first leaves the sender's port (the last flit starts on the wire) and
//! restarts whenever a packet of the message leaves the port after that;
//! on expiry (`rto_ns` without a transmission, message not ACKed) the last
//! packet is sent again as a probe, which makes the receiver answer with
//! its state (NAK or ACK). Retransmissions go first at the generator's next
//! packet boundary (before new packets of any send queue) and are paced by
//! the push timer like any packet; their packets carry new serials.
//!
//! Added latency of a message: the time its receiver held a sequence hole,
//! summed over the holes: from the arrival of the first discarded packet
//! it still needed (a corrupted copy of the expected packet or later, or a
//! good later packet) to the acceptance of the expected one. 0 when no loss
//! touched the message. It measures the receiver's wait for recovery, not
//! the whole delay of the message's completion (go-back-N also pushes the
//! packets after a hole later). The deadlock rule is unaffected: a pending timer is a
//! foreground event.

use std::collections::VecDeque;

use super::app::splitmix;
use super::app::PktPos;
use super::dispatch::Ev;
use super::fabric::{Fabric, NONE};
use super::flits::{FId, F_BAD, F_CNP, F_LCTL, F_NOSW, F_PROBE, F_RTX};
use crate::params::{ps, Params};
use crate::stats::LossReport;

pub(super) struct LossState {
    /// per-packet error rate, or 0 when `ber` is used
    per: f64,
    /// bit error rate (0 = use `per`)
    ber: f64,
    rto: u64,
    rng: u64,
    hcas: Vec<LossHca>,
    /// per message id, grown on demand
    msgs: Vec<LossMsg>,
    st: LossReport,
}

#[derive(Default)]
struct LossHca {
    /// retransmissions waiting for a packet boundary, FIFO
    rtxq: VecDeque<Rtx>,
    /// the retransmission in progress
    act: Option<RtxAct>,
    /// ACK/NAKs waiting for the arbiter's VL-0 head-of-queue slot at a
    /// packet boundary
    ctlq: VecDeque<FId>,
}

struct Rtx {
    msg: u32,
    from: u32,
    probe: bool,
}

#[derive(Clone, Copy)]
struct RtxAct {
    msg: u32,
    /// the packet after the last to resend
    to: u32,
    pos: PktPos,
    probe: bool,
}

#[derive(Default, Clone)]
struct LossMsg {
    // receiver
    expected: u32,
    nak_for: Option<u32>,
    /// arrival of the first discarded packet of the current sequence hole
    hole_since: Option<u64>,
    /// time spent with a sequence hole so far
    added: u64,
    // sender
    acked: bool,
    tail_sent: bool,
    timer: bool,
    deadline: u64,
    retransmitted: bool,
}

impl LossState {
    /// None when links are lossless.
    pub(super) fn new(p: &Params, nhca: usize) -> Option<Box<LossState>> {
        if p.link_packet_error_rate <= 0.0 && p.link_bit_error_rate <= 0.0 {
            return None;
        }
        Some(Box::new(LossState {
            per: p.link_packet_error_rate,
            ber: p.link_bit_error_rate,
            rto: ps(p.rto_ns).max(1),
            // a stream of its own ("losslink"), distinct from the apps'
            rng: p.seed ^ 0x6C6F_7373_6C69_6E6B,
            hcas: (0..nhca).map(|_| LossHca::default()).collect(),
            msgs: Vec::new(),
            st: LossReport {
                link_packet_error_rate: p.link_packet_error_rate,
                link_bit_error_rate: p.link_bit_error_rate,
                rto_ps: ps(p.rto_ns).max(1),
                ..LossReport::default()
            },
        }))
    }

    fn msg(&mut self, m: u32) -> &mut LossMsg {
        let i = m as usize;
        if i >= self.msgs.len() {
            self.msgs.resize(i + 1, LossMsg::default());
        }
        &mut self.msgs[i]
    }

    /// The state of message `m` and the statistics, both mutable.
    fn split(&mut self, m: u32) -> (&mut LossMsg, &mut LossReport) {
        self.msg(m);
        (&mut self.msgs[m as usize], &mut self.st)
    }
}

/// Probability that a packet of `bytes` bytes is corrupted when each bit
/// is flipped with probability `ber`: 1 - (1 - ber)^(8 bytes), computed
/// without cancellation for small rates.
pub(super) fn packet_error_rate(ber: f64, bytes: u64) -> f64 {
    -((8 * bytes) as f64 * (-ber).ln_1p()).exp_m1()
}

impl Fabric {
    fn ls(&mut self) -> &mut LossState {
        self.loss.as_mut().expect("lossy links")
    }

    /// The report section (None when lossless).
    pub(super) fn loss_report(&self) -> Option<LossReport> {
        self.loss.as_ref().map(|l| l.st.clone())
    }

    /// The last flit of packet `id` starts on the link of port `pi`: the
    /// retransmission timer (at the sender's own port) and the error draw.
    pub(super) fn loss_wire(&mut self, pi: usize, id: FId) {
        let f = self.fl[id as usize];
        if f.flags & F_CNP != 0 {
            return;
        }
        let h = self.ports[pi].hca;
        if h != NONE && f.flags & F_LCTL == 0 {
            let now = self.now;
            let last = f.pkt + 1 == self.msgs[f.msg as usize].npkts;
            let l = self.ls();
            let rto = l.rto;
            let lm = l.msg(f.msg);
            lm.tail_sent |= last;
            if lm.tail_sent && !lm.acked {
                lm.deadline = now + rto;
                if !lm.timer {
                    lm.timer = true;
                    self.sched(now + rto, Ev::LossRto { h, msg: f.msg });
                }
            }
        }
        if f.flags & F_BAD == 0 {
            // the packet's bytes on the wire: full flits and its last flit
            let bytes = (f.pkt_flits as u64 - 1) * self.p.flit_size as u64 + f.bytes as u64;
            let l = self.ls();
            let per = if l.ber > 0.0 {
                packet_error_rate(l.ber, bytes)
            } else {
                l.per
            };
            let r = splitmix(&mut l.rng);
            let u = (r >> 11) as f64 / (1u64 << 53) as f64;
            if u < per {
                if f.flags & F_LCTL != 0 {
                    l.st.responses_corrupted += 1;
                } else {
                    l.st.packets_corrupted += 1;
                }
                self.fl[id as usize].flags |= F_BAD;
            }
        }
    }

    /// The last flit of a data packet reached the sink of HCA `h`: accept
    /// it (true) or mark it discarded; answer with an ACK or NAK.
    pub(super) fn loss_accept(&mut self, h: usize, id: FId) -> bool {
        let now = self.now;
        let f = self.fl[id as usize];
        let npkts = self.msgs[f.msg as usize].npkts;
        let probe = f.flags & F_PROBE != 0;
        let (lm, st) = self.ls().split(f.msg);
        let mut reply = None;
        let mut added = None;
        if f.pkt >= lm.expected && (f.flags & F_BAD != 0 || f.pkt > lm.expected) {
            // a packet the receiver needs is missing from here on
            lm.hole_since.get_or_insert(now);
        }
        let ok = if f.flags & F_BAD != 0 {
            st.discarded_corrupted += 1;
            false
        } else if f.pkt == lm.expected {
            lm.expected += 1;
            lm.nak_for = None;
            if let Some(t) = lm.hole_since.take() {
                lm.added += now - t;
            }
            if lm.expected == npkts {
                reply = Some(npkts);
                added = Some(lm.added);
            }
            true
        } else if f.pkt > lm.expected {
            st.discarded_out_of_sequence += 1;
            if lm.nak_for != Some(lm.expected) || probe {
                lm.nak_for = Some(lm.expected);
                reply = Some(lm.expected);
            }
            false
        } else {
            st.discarded_duplicates += 1;
            if probe {
                reply = Some(lm.expected);
            }
            false
        };
        if let Some(a) = added {
            if a > 0 {
                st.messages_delayed += 1;
                st.added_latency_total_ps += a;
                st.added_latency_max_ps = st.added_latency_max_ps.max(a);
            }
        }
        if !ok {
            self.fl[id as usize].flags |= F_BAD;
        }
        if let Some(psn) = reply {
            self.loss_respond(h, f.src, f.msg, psn);
        }
        ok
    }

    /// Send the receiver's expected PSN of `msg` back to its sender (an
    /// ACK when it is the packet count, else a NAK), as a CNP is sent.
    fn loss_respond(&mut self, h: usize, to: u16, msg: u32, psn: u32) {
        let npkts = self.msgs[msg as usize].npkts;
        let l = self.ls();
        if psn == npkts {
            l.st.acks_sent += 1;
        } else {
            l.st.naks_sent += 1;
        }
        let f = self.control_flit(h, to, msg, psn, F_NOSW | F_LCTL);
        let f = self.fl_alloc(f);
        self.ls().hcas[h].ctlq.push_back(f);
        if self.ls().hcas[h].ctlq.len() == 1 {
            self.loss_ctl_sent(h);
        }
    }

    /// Hand the next queued ACK/NAK of HCA `h` to its arbiter if the VL-0
    /// head-of-queue slot is free and no data packet on VL 0 is half
    /// handed over (a packet's flits must stay contiguous): the next flit
    /// of VL 0 starts a packet, or none is queued and the generator is not
    /// inside a VL-0 packet. Called when the response is made and on every
    /// "sent"(0); true if it sent one.
    pub(super) fn loss_ctl_sent(&mut self, h: usize) -> bool {
        if self.ls().hcas[h].ctlq.is_empty() {
            return false;
        }
        let safe = match self.hcas[h].gen.vlq[0].front() {
            Some(&f) => self.fl[f as usize].sn == 0,
            None => self.gen_mid_packet_vl(h) != Some(0),
        };
        let port = self.hcas[h].port as usize;
        if !safe || !self.hoq_free(port, 0, 0) {
            return false;
        }
        let f = self.ls().hcas[h].ctlq.pop_front().expect("queued");
        self.gen_send_flit(h, f);
        true
    }

    /// VL of the packet the generator of HCA `h` has partly created (the
    /// reference generator, a send queue or a retransmission), if any.
    fn gen_mid_packet_vl(&self, h: usize) -> Option<u8> {
        let vl_of = |m: u32| self.msgs[m as usize].vl;
        if let Some(a) = self.loss.as_ref().and_then(|l| l.hcas[h].act) {
            if a.pos.sn > 0 {
                return Some(vl_of(a.msg));
            }
        }
        if let Some(m) = self.qp_mid_packet(h) {
            return Some(vl_of(m));
        }
        let g = &self.hcas[h].gen;
        (self.qp.is_none() && g.pos.sn > 0).then(|| vl_of(g.cur))
    }

    /// An ACK/NAK reached the sink of the sender `h`: consumed at once
    /// (its credit freed), then acted on unless it was corrupted.
    pub(super) fn loss_ctl_arrived(&mut self, h: usize, id: FId) {
        let now = self.now;
        let f = self.fl[id as usize];
        self.fl_release(id);
        if f.flags & F_BAD != 0 {
            self.ls().st.discarded_corrupted += 1;
        } else {
            let npkts = self.msgs[f.msg as usize].npkts;
            let lm = self.ls().msg(f.msg);
            if f.pkt == npkts {
                lm.acked = true;
            } else if !lm.acked {
                self.loss_request(h, f.msg, f.pkt, false);
            }
        }
        let pi = self.hcas[h].port;
        self.sched(
            now,
            Ev::IbufSent {
                port: pi,
                vl: f.vl,
                last: true,
                out: 0,
            },
        );
    }

    /// Queue a retransmission of message `m` from packet `from` (go-back-N)
    /// or a probe, merged with one already queued or running; wake an idle
    /// generator.
    fn loss_request(&mut self, h: usize, m: u32, from: u32, probe: bool) {
        let lh = &mut self.ls().hcas[h];
        if let Some(a) = lh.act {
            if a.msg == m && (probe || a.pos.pkt <= from) {
                return;
            }
        }
        if let Some(r) = lh.rtxq.iter_mut().find(|r| r.msg == m) {
            if !probe {
                r.from = if r.probe { from } else { r.from.min(from) };
                r.probe = false;
            }
        } else {
            lh.rtxq.push_back(Rtx {
                msg: m,
                from,
                probe,
            });
        }
        if !self.hcas[h].gen.push_pending {
            self.gen_one(h);
        }
    }

    /// The retransmission timer of message `m` at its sender `h`.
    pub(super) fn loss_rto(&mut self, h: usize, m: u32) {
        let now = self.now;
        let npkts = self.msgs[m as usize].npkts;
        let lm = self.ls().msg(m);
        lm.timer = false;
        if lm.acked {
            return;
        }
        if now < lm.deadline {
            lm.timer = true;
            let d = lm.deadline;
            self.sched(
                d,
                Ev::LossRto {
                    h: h as u32,
                    msg: m,
                },
            );
            return;
        }
        self.ls().st.timeouts += 1;
        self.loss_request(h, m, npkts - 1, true);
    }

    /// generate-one for a retransmission (at a packet boundary of the
    /// normal generator, qp.rs): true if it took the turn (made a flit or
    /// waits for room in its VL queue).
    pub(super) fn loss_gen_one(&mut self, h: usize) -> bool {
        if self.ls().hcas[h].act.is_none() {
            loop {
                let Some(r) = self.ls().hcas[h].rtxq.pop_front() else {
                    return false;
                };
                let npkts = self.msgs[r.msg as usize].npkts;
                if self.ls().msg(r.msg).acked {
                    continue;
                }
                let to = if r.probe {
                    npkts
                } else {
                    self.first_pass_generated(h, r.msg)
                };
                if r.from >= to {
                    continue;
                }
                let pos = PktPos::start(&self.p, &self.msgs[r.msg as usize], r.from);
                self.ls().hcas[h].act = Some(RtxAct {
                    msg: r.msg,
                    to,
                    pos,
                    probe: r.probe,
                });
                break;
            }
        }
        let mut a = self.ls().hcas[h].act.expect("retransmission");
        let (v, dst) = {
            let m = &self.msgs[a.msg as usize];
            (m.vl as usize, m.dst_lid)
        };
        if self.hcas[h].gen.vlq[v].len() >= self.p.max_queued_per_vl as usize {
            return true;
        }
        let pos = a.pos;
        if pos.sn == 0 {
            let (lm, st) = self.ls().split(a.msg);
            st.packets_retransmitted += 1;
            if a.probe {
                st.probes_sent += 1;
            }
            if !lm.retransmitted {
                lm.retransmitted = true;
                st.messages_retransmitted += 1;
            }
        }
        let more = a.pos.advance(&self.p, &self.msgs[a.msg as usize], a.to);
        let flags = F_RTX | if a.probe { F_PROBE } else { 0 };
        self.ls().hcas[h].act = more.then_some(a);
        let bytes = pos.bytes(self.p.flit_size);
        self.gen_emit(h, a.msg, pos.pkt, pos.sn, pos.pkt_flits, bytes, flags);
        self.gen_rearm(h, dst);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::packet_error_rate;

    #[test]
    fn bit_to_packet_error_rate() {
        // 1 - (1 - b)^(8 n): one byte at b = 1/2 is 1 - 2^-8
        assert_eq!(packet_error_rate(0.5, 1), 1.0 - 1.0 / 256.0);
        // 2048 B at 1e-12: 16384 bits, about 16384e-12 (minus the square term)
        let p = packet_error_rate(1e-12, 2048);
        let want = 16384e-12 - 16384.0 * 16383.0 / 2.0 * 1e-24;
        assert!((p - want).abs() < 1e-20, "{p}");
        assert_eq!(packet_error_rate(0.0, 2048), 0.0);
    }
}
