//! App (sec. 5.1): the traffic source of an HCA. Standalone modes (the
//! reference's `param` and `seq_*` destination modes) and externally
//! injected messages ([`Fabric::inject`], the co-simulation) both end up
//! in the same FIFO of messages; the app hands one message at a time to
//! the generator, `msg2msg_gap` after it arrives or after the generator
//! reported the previous one generated. Also the message table.

use std::collections::VecDeque;

use super::dispatch::Ev;
use super::fabric::{Fabric, FabricError, MAX_TIME_PS, NONE};
use crate::Time;

/// Identifier of a message: its index in injection/creation order.
pub type MsgId = u64;

/// Standalone destination modes of the reference app (sec. 5.1).
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficMode {
    /// `param` mode with dstLid = 0: the app never sends.
    Silent,
    /// `param` mode with a fixed destination LID.
    Param {
        dst_lid: u16,
    },
    SeqOnce(Vec<u16>),
    SeqLoop(Vec<u16>),
    /// Uniform random entry each time (seeded by `Params::seed` and the HCA).
    SeqRand(Vec<u16>),
}

pub(super) struct Msg {
    pub(super) src: u32,
    pub(super) dst_hca: u32,
    pub(super) dst_lid: u16,
    pub(super) vl: u8,
    pub(super) bytes: u64,
    pub(super) npkts: u32,
    pub(super) full_pkt: u32,
    pub(super) last_pkt: u32,
    pub(super) injected: u64,
    pub(super) first_stamp: Option<u64>,
    pub(super) arrived_pkts: u32,
    pub(super) consumed_pkts: u32,
    /// arrival of the repFirstPackets-th packet end
    pub(super) enough_at: Option<u64>,
    pub(super) net_latency: Option<u64>,
    pub(super) done: Option<u64>,
}

#[derive(Default)]
pub(super) struct App {
    pub(super) mode: Option<TrafficMode>,
    pub(super) pos: usize,
    pub(super) busy: bool,
    pub(super) queue: VecDeque<u32>,
    pub(super) rng: u64,
    pub(super) msgs_made: u64,
    /// send queue (= VL) of this app's messages; None = `msg_sq`
    pub(super) sq: Option<u8>,
}

#[inline]
pub(super) fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Fabric {
    /// Send queue (SL = VL) of the messages of HCA `h` (default `msg_sq`).
    pub fn set_send_queue(&mut self, h: usize, vl: u8) -> Result<(), FabricError> {
        if h >= self.hcas.len() {
            return Err(FabricError::NoSuchHca(h, self.hcas.len()));
        }
        if !self.route_sl.is_empty() {
            return Err(FabricError::BadMessage(format!(
                "send queue {vl}: the topology assigns an SL per route (deadlock freedom), \
                 so send queues cannot be chosen"
            )));
        }
        if vl as usize >= self.nvl {
            return Err(FabricError::BadMessage(format!(
                "send queue {vl} above max_vl {}",
                self.nvl - 1
            )));
        }
        self.hcas[h].app.sq = Some(vl);
        Ok(())
    }

    /// Configure the standalone app of HCA `h` (before the first event).
    pub fn set_traffic(&mut self, h: usize, mode: TrafficMode) -> Result<(), FabricError> {
        if self.started {
            return Err(FabricError::AlreadyStarted);
        }
        if h >= self.hcas.len() {
            return Err(FabricError::NoSuchHca(h, self.hcas.len()));
        }
        let dsts: Vec<u16> = match &mode {
            TrafficMode::Silent => vec![],
            TrafficMode::Param { dst_lid } => {
                if *dst_lid == 0 {
                    vec![]
                } else {
                    vec![*dst_lid]
                }
            }
            TrafficMode::SeqOnce(v) | TrafficMode::SeqLoop(v) | TrafficMode::SeqRand(v) => {
                v.clone()
            }
        };
        for d in dsts {
            self.check_route(h, d)?;
        }
        // one message sizing check (fails early for legacy B < M)
        if !matches!(mode, TrafficMode::Silent) && self.p.msg_len_mode == "param" {
            self.p
                .packet_layout(self.p.msg_length)
                .map_err(|e| FabricError::BadMessage(e.to_string()))?;
        }
        self.hcas[h].app.mode = Some(mode);
        Ok(())
    }

    /// External traffic: at `at` the app of HCA `src_hca` receives a message
    /// of `bytes` for HCA `dst_hca`. Messages queue FIFO in the app; the app
    /// hands one at a time to the generator, `msg2msg_gap` after it arrives
    /// (idle app) or after the generator reported the previous one fully
    /// generated ("done"), exactly as the reference app paces its messages.
    pub fn inject(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
    ) -> Result<MsgId, FabricError> {
        if at.0 < self.now {
            return Err(FabricError::InPast {
                at: at.0,
                now: self.now,
            });
        }
        if at.0 > MAX_TIME_PS {
            return Err(FabricError::BadMessage(format!(
                "injection time {} ps is beyond the fabric's range ({MAX_TIME_PS} ps)",
                at.0
            )));
        }
        let n = self.hcas.len();
        if src_hca >= n {
            return Err(FabricError::NoSuchHca(src_hca, n));
        }
        if dst_hca >= n {
            return Err(FabricError::NoSuchHca(dst_hca, n));
        }
        let lid = self.hcas[dst_hca].lid;
        self.check_route(src_hca, lid)?;
        let id = self
            .new_msg(src_hca as u32, lid, bytes, at.0)
            .map_err(FabricError::BadMessage)?;
        self.sched(
            at.0,
            Ev::AppInject {
                h: src_hca as u32,
                msg: id,
            },
        );
        Ok(id as MsgId)
    }

    pub(super) fn new_msg(
        &mut self,
        src: u32,
        dst_lid: u16,
        bytes: u64,
        t: u64,
    ) -> Result<u32, String> {
        let pk = self.p.packet_layout(bytes).map_err(|e| e.to_string())?;
        if self.msgs.len() >= (NONE - 1) as usize {
            return Err(format!("more than {} messages in one run", NONE - 1));
        }
        let id = self.msgs.len() as u32;
        self.msgs.push(Msg {
            src,
            dst_hca: self.lid_to_hca[dst_lid as usize],
            dst_lid,
            vl: if self.route_sl.is_empty() {
                self.hcas[src as usize].app.sq.unwrap_or(self.p.msg_sq)
            } else {
                // the route's SL (check_route_sls keeps it within max_vl)
                let stride = self.lid_to_hca.len();
                self.route_sl[self.hcas[src as usize].lid as usize * stride + dst_lid as usize]
            },
            bytes,
            npkts: pk.count,
            full_pkt: pk.full,
            last_pkt: pk.last,
            injected: t,
            first_stamp: None,
            arrived_pkts: 0,
            consumed_pkts: 0,
            enough_at: None,
            net_latency: None,
            done: None,
        });
        self.in_flight += 1;
        Ok(id)
    }

    /// Message record: (network latency, completion time) if known.
    pub fn message_times(&self, id: MsgId) -> Option<(Option<Time>, Option<Time>)> {
        self.msgs
            .get(id as usize)
            .map(|m| (m.net_latency.map(Time), m.done.map(Time)))
    }

    /// Ids of the messages still in flight (for deadlock reports).
    pub fn in_flight_ids(&self) -> Vec<MsgId> {
        (0..self.msgs.len())
            .filter(|&i| self.msgs[i].done.is_none())
            .map(|i| i as MsgId)
            .collect()
    }

    #[doc(hidden)]
    pub fn msg_dst_hca(&self, id: MsgId) -> usize {
        self.msgs[id as usize].dst_hca as usize
    }

    #[doc(hidden)]
    pub fn msg_src_hca(&self, id: MsgId) -> usize {
        self.msgs[id as usize].src as usize
    }

    /// A message injected for this HCA's app (AppInject): queued FIFO;
    /// an idle app takes it at once.
    #[inline]
    pub(super) fn app_inject(&mut self, h: usize, msg: u32) {
        if self.qp.is_some() {
            return self.qp_inject(h, msg);
        }
        self.hcas[h].app.queue.push_back(msg);
        if !self.hcas[h].app.busy {
            self.app_next(h);
        }
    }

    /// The generator reported the message in service fully generated.
    #[inline]
    pub(super) fn app_done(&mut self, h: usize) {
        self.hcas[h].app.busy = false;
        self.app_next(h);
    }

    pub(super) fn app_next(&mut self, h: usize) {
        let now = self.now;
        let app = &mut self.hcas[h].app;
        let msg = if let Some(m) = app.queue.pop_front() {
            Some(m)
        } else {
            let dst = match &app.mode {
                None | Some(TrafficMode::Silent) => None,
                Some(TrafficMode::Param { dst_lid }) => (*dst_lid != 0).then_some(*dst_lid),
                Some(TrafficMode::SeqOnce(v)) => {
                    let d = v.get(app.pos).copied();
                    app.pos += 1;
                    d
                }
                Some(TrafficMode::SeqLoop(v)) => {
                    if v.is_empty() {
                        None
                    } else {
                        let d = v[app.pos % v.len()];
                        app.pos += 1;
                        Some(d)
                    }
                }
                Some(TrafficMode::SeqRand(v)) => {
                    if v.is_empty() {
                        None
                    } else {
                        let r = splitmix(&mut app.rng);
                        Some(v[(r % v.len() as u64) as usize])
                    }
                }
            };
            match dst {
                None => None,
                Some(d) => {
                    let bytes = if self.p.msg_len_mode == "set" {
                        let r = splitmix(&mut app.rng);
                        let u = (r >> 11) as f64 / (1u64 << 53) as f64;
                        let tot: f64 = self.p.msg_len_prob.iter().sum();
                        let mut acc = 0.0;
                        let mut pick = *self.p.msg_len_set.last().unwrap();
                        for (i, pr) in self.p.msg_len_prob.iter().enumerate() {
                            acc += pr / tot;
                            if u < acc {
                                pick = self.p.msg_len_set[i];
                                break;
                            }
                        }
                        pick
                    } else {
                        self.p.msg_length
                    };
                    app.msgs_made += 1;
                    match self.new_msg(h as u32, d, bytes, now) {
                        Ok(m) => Some(m),
                        Err(e) => {
                            self.fail(format!("app of HCA {h}: {e}"));
                            None
                        }
                    }
                }
            }
        };
        if let Some(m) = msg {
            self.hcas[h].app.busy = true;
            self.sched(
                now + self.tm.gap,
                Ev::GenMsg {
                    h: h as u32,
                    msg: m,
                },
            );
        }
    }
}
