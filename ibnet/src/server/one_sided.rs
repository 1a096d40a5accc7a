//! Protocol version 3 in the fabric server: one-sided
//! operations. An InsertOp is injected with `Fabric::inject_op`; the
//! fabric's completion points (`take_op_events`) become the arrivals of
//! their handles: a put's remote completion (Delivered) under its
//! `handle`, its local completion (Acked) under its `ack_handle`, a get's
//! completion (GetDone) under its `handle`; a message's delivery under its
//! handle as always. In a version-3 session every arrival comes from the
//! op events, which for messages are exactly the completions of version 2.

use super::{FabricServer, ServerError, Slot};
use crate::engine::OpPoint;
use crate::Time;
use std::io::Write;

/// `Slot::op` of a put.
pub(super) const OP_PUT: u8 = 1;
/// `Slot::op` of a get.
pub(super) const OP_GET: u8 = 2;

impl Slot {
    /// A slot for a fabric id that is not an operation of the scheduler
    /// (an ack or a response the fabric created).
    pub(super) fn placeholder() -> Slot {
        Slot {
            handle: u64::MAX,
            insert_time: Time(0),
            arrived: Some(Time(0)),
            promised: None,
            queried: false,
            base: Time(0),
            lb: Time(0),
            op: 0,
            ack_handle: 0,
            remote: None,
        }
    }

    /// The time of the point named by the handle (`ack`: the put's ack
    /// handle), once reached.
    pub(super) fn point_time(&self, ack: bool) -> Option<Time> {
        if self.op == OP_PUT && !ack {
            self.remote
        } else {
            self.arrived
        }
    }
}

impl FabricServer {
    /// Takes the fabric's completion points since the last call into the
    /// slots; returns (handle, time) of each, in the fabric's order.
    pub(super) fn collect_points(&mut self) -> Result<Vec<(u64, Time)>, ServerError> {
        let events = self.fabric.take_op_events();
        let mut out = Vec::with_capacity(events.len());
        for (id, point, t) in events {
            let Some(slot) = self.slots.get_mut(id) else {
                continue;
            };
            let handle = match point {
                OpPoint::Delivered if slot.op == OP_PUT => {
                    slot.remote = Some(t);
                    slot.handle
                }
                OpPoint::Acked => {
                    slot.arrived = Some(t);
                    slot.ack_handle
                }
                OpPoint::Delivered | OpPoint::GetDone => {
                    slot.arrived = Some(t);
                    slot.handle
                }
            };
            if let Some(p) = slot.promised {
                if point != OpPoint::Acked && t < p {
                    self.stats.note_causality_error(p.0 - t.0);
                }
            }
            if self.cfg.protocol == ipc_proto::Protocol::Notify {
                // notify: reported now (query: when asked)
                if point == OpPoint::Acked {
                    self.ack_handles.remove(&handle);
                } else {
                    self.by_handle.remove(&handle);
                }
            }
            if let Some(w) = &mut self.arrival_log {
                writeln!(w, "{handle} {}", t.0).map_err(|e| ServerError::Log(e.to_string()))?;
            }
            out.push((handle, t));
        }
        Ok(out)
    }
}
