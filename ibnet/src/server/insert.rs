//! Inserts (docs/protocol.md 2.1, 3.1): a rank's message or one-sided
//! operation mapped to its HCAs and injected at its own time.

use super::{FabricServer, ServerError, Slot, OP_GET, OP_PUT};
use crate::engine::FabricError;
use ipc_proto::{Protocol, Time};
use std::io::Write;

impl FabricServer {
    /// Hints the CPU to load what an Insert from rank `src` to rank `dst`
    /// reads in the server and the fabric, for a caller that knows inserts
    /// ahead of handling them: the records of an arrived message (the
    /// serve loop) or a send the scheduler has just released (one-piece
    /// mode). Each insert otherwise waits on these cache misses in turn
    /// (the fabric's own work since the last round has evicted them);
    /// announced together, they overlap. Only loads; no effect on results.
    pub fn prefetch_insert(&self, src: u32, dst: u32) {
        let hcas = &self.cfg.rank_hcas;
        if let (Some(&s), Some(&d)) = (hcas.get(src as usize), hcas.get(dst as usize)) {
            self.hops_cache.prefetch(s, d);
            self.fabric.prefetch_injection(s, d);
        }
    }

    pub(super) fn hca_of(&self, rank: u32, what: &str, handle: u64) -> Result<usize, ServerError> {
        self.cfg.rank_hcas.get(rank as usize).copied().ok_or_else(|| {
            ServerError::Config(format!(
                "Insert {handle}: {what} rank {rank} has no HCA (the fabric maps {} ranks on {} HCAs)",
                self.cfg.rank_hcas.len(),
                self.fabric.num_hcas()
            ))
        })
    }

    /// A message (`op` 0) or a one-sided operation (`OP_PUT`, `OP_GET`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_any(
        &mut self,
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
        op: u8,
        ack_handle: u64,
    ) -> Result<(), ServerError> {
        let now = self.fabric.now();
        if time < now {
            return Err(ServerError::Violation(format!(
                "Insert {handle} at {} ps is in the fabric's past (fabric time {} ps)",
                time.0, now.0
            )));
        }
        let src_hca = self.hca_of(src, "source", handle)?;
        let dst_hca = self.hca_of(dst, "destination", handle)?;
        if self.by_handle.contains_key(&handle) || self.ack_handles.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "Insert reuses handle {handle}, which is still in flight"
            )));
        }
        if op == OP_PUT
            && (self.by_handle.contains_key(&ack_handle)
                || self.ack_handles.contains_key(&ack_handle))
        {
            return Err(ServerError::Violation(format!(
                "InsertOp reuses handle {ack_handle} (ack_handle), which is still in flight"
            )));
        }
        // A 0-byte MPI message still crosses the wire as a header-only
        // packet; the fabric's packetiser needs at least one byte, so it is
        // injected as 1 byte (deviation noted in docs/cosim.md).
        let bytes = size.max(1);
        let injected = match op {
            0 => self.fabric.inject(time, src_hca, dst_hca, bytes),
            _ => self.fabric.inject_op(
                time,
                src_hca,
                dst_hca,
                bytes,
                if op == OP_PUT {
                    crate::engine::OpKind::Put
                } else {
                    crate::engine::OpKind::Get
                },
            ),
        };
        let id = injected.map_err(|e| match e {
            FabricError::InPast { .. } => ServerError::Violation(format!("Insert {handle}: {e}")),
            e => ServerError::Fabric(format!("Insert {handle}: {e}")),
        })?;
        // Fabric ids are dense over the messages it creates; with
        // one-sided operations it also creates acks and responses, whose
        // ids get placeholder slots (never reported).
        debug_assert!(id >= self.slots.next_id(), "fabric ids increase");
        while self.slots.next_id() < id {
            self.slots.push(Slot::placeholder());
        }
        // (one route lookup per insert: it is on the per-message path)
        let sw = self.hops(src_hca, dst_hca);
        let base = Time(sw as u64 * self.switch_fixed);
        // a get's first packet is its (header-only) read request
        let lb = self.lower_bound_sw(sw, if op == OP_GET { 1 } else { bytes });
        if self.cfg.version >= 2 && self.cfg.protocol == Protocol::Notify {
            self.earliest.push(time.0, lb.0, id);
        }
        self.slots.push(Slot {
            handle,
            insert_time: time,
            arrived: None,
            promised: None,
            queried: false,
            base,
            lb,
            op,
            ack_handle,
            remote: None,
        });
        self.by_handle.insert(handle, id);
        if op == OP_PUT {
            self.ack_handles.insert(ack_handle, id);
        }
        self.stats.inserts += 1;
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.fabric.in_flight() as u64);
        if let Some(w) = &mut self.insert_log {
            writeln!(w, "{handle} {} {src} {dst} {size}", time.0)
                .map_err(|e| ServerError::Log(e.to_string()))?;
        }
        Ok(())
    }

    /// An Insert without a record (one-piece mode): what
    /// [`FabricServer::handle`] does with `Insert{handle, time, src, dst,
    /// size}`.
    pub fn insert_message(
        &mut self,
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
    ) -> Result<(), ServerError> {
        self.check_direct("Insert")?;
        self.insert_any(handle, time, src, dst, size, 0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::server;
    use super::*;

    #[test]
    fn ranks_map_to_hcas() {
        let s = server("H8_S1", Protocol::Notify, 1, None);
        assert_eq!(s.hca_of(3, "source", 1).unwrap(), 3);
        assert_eq!(
            s.hca_of(8, "destination", 42).unwrap_err().to_string(),
            "configuration error: Insert 42: destination rank 8 has no HCA (the fabric maps 8 ranks on 8 HCAs)"
        );
    }
}
