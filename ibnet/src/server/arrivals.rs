//! The arrival bookkeeping: completions reported from the fabric into the
//! messages' slots (and the arrival log), the slots by message id, and the
//! handles of messages still in flight.

use super::{FabricServer, ServerError, Slot, OP_PUT};
use crate::engine::MsgId;
use ipc_proto::Time;
use std::io::Write;

impl FabricServer {
    /// The points of completion instant `ta` into `out`, the slots marked.
    pub(super) fn report_completions(
        &mut self,
        ta: Time,
        ids: Vec<MsgId>,
        out: &mut Vec<(u64, Time)>,
    ) -> Result<(), ServerError> {
        if self.ops {
            let points = self.collect_points()?;
            if let Some(&(h, t)) = points.iter().find(|p| p.1 != ta) {
                return Err(ServerError::Fabric(format!(
                    "internal: point of handle {h} at {} ps in the batch of {} ps",
                    t.0, ta.0
                )));
            }
            out.extend_from_slice(&points);
            return Ok(());
        }
        for id in &ids {
            let slot = self
                .slots
                .get_mut(*id)
                .expect("the slot of a message in flight");
            slot.arrived = Some(ta);
            let handle = slot.handle;
            self.by_handle.remove(&handle);
            out.push((handle, ta));
            if let Some(w) = &mut self.arrival_log {
                writeln!(w, "{handle} {}", ta.0).map_err(|e| ServerError::Log(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// The slot of a message the scheduler may still ask about (a bug
    /// otherwise: slots are dropped only once reported).
    pub(super) fn slot(&self, id: MsgId) -> &Slot {
        self.slots
            .get(id)
            .expect("the slot of a message not yet reported")
    }

    pub(super) fn slot_mut(&mut self, id: MsgId) -> &mut Slot {
        self.slots
            .get_mut(id)
            .expect("the slot of a message not yet reported")
    }

    /// Drop the slots at the front whose messages have arrived and been
    /// reported under every handle they have (`book::Window`).
    pub(super) fn trim_slots(&mut self) {
        let (by_handle, acks) = (&self.by_handle, &self.ack_handles);
        self.slots.trim(|s| {
            s.arrived.is_some()
                && !by_handle.contains_key(&s.handle)
                && (s.op != OP_PUT || !acks.contains_key(&s.ack_handle))
        });
    }

    pub(super) fn stuck_handles(&self) -> Vec<u64> {
        self.fabric
            .in_flight_ids()
            .into_iter()
            .filter_map(|id| self.slots.get(id))
            .map(|s| s.handle)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ins, server};
    use ipc_proto::Protocol;

    #[test]
    fn slots_of_messages_in_flight() {
        let mut s = server("H8_S1", Protocol::Notify, 1, None);
        let mut out = Vec::new();
        s.handle(ins(7, 0, 0, 1, 44), &mut out).unwrap();
        s.handle(ins(8, 0, 2, 3, 44), &mut out).unwrap();
        let mut stuck = s.stuck_handles();
        stuck.sort();
        assert_eq!(stuck, [7, 8]);
        let id = s.by_handle.get(&7).unwrap();
        assert_eq!(s.slot(id).handle, 7);
        // nothing arrived: nothing to drop
        s.trim_slots();
        assert_eq!(s.slot(id).arrived, None);
    }
}
