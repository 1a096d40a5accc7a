//! The scheduler's end of a fabric session: where its records go and the
//! fabric's answers come from. A [`Channel`] (message queues, shared
//! memory, in-process channels: `ipc`, `inproc`) or the fabric server
//! itself (`onepiece`, [`super::onepiece`]) implements it, so that
//! [`super::CosimNetwork`] holds the protocol once for every transport.

use crate::network::{Envelope, Handle, NetError};
use ibnet::server::ExactAnswer;
use ipc_proto::{Channel, ChannelStats, ProtoError, Protocol, Record, Time};

/// Where the scheduler's records go and the fabric's answers come from.
pub trait Link {
    fn send(&mut self, r: Record) -> Result<(), ProtoError>;
    /// The next answer (blocking for a channel).
    fn recv(&mut self) -> Result<Record, ProtoError>;
    /// The Arrival records already received and next in line, moved into
    /// `out` (a fast path for arrival batches; a link without one takes
    /// none and `recv` delivers them one by one).
    fn take_arrivals(&mut self, out: &mut Vec<(Handle, Time)>) -> usize {
        let _ = out;
        0
    }
    fn flush(&mut self) -> Result<(), ProtoError>;
    /// Inserts sent so far (what a Query carries).
    fn inserts_sent(&self) -> u64;
    fn protocol(&self) -> Protocol;
    /// Wire version of the session.
    fn version(&self) -> u32;
    fn stats(&self) -> ChannelStats {
        ChannelStats::default()
    }
    /// Wall-clock time spent waiting for the fabric's records (a channel to
    /// another process or thread; None in one-piece mode).
    fn peer_wait(&self) -> Option<std::time::Duration> {
        None
    }
    /// The full text of the fabric's last error, when the link knows more
    /// than the 48 bytes of an Error record (one-piece mode).
    fn error_text(&self) -> Option<String> {
        None
    }
    /// Called after Finish was sent: extra counters for the report.
    fn finished(&mut self) -> Result<Vec<(String, u64)>, NetError> {
        Ok(Vec::new())
    }
    /// One-piece mode: see `Network::prefetch_insert`.
    fn prefetch_insert(&self, src: u32, dst: u32) {
        let _ = (src, dst);
    }
    /// One-piece mode: `Insert{handle, time, src, dst, size}` handed to
    /// the fabric without building a record (the tag does not reach it). `None`: this link has no such
    /// path, send the record. A failure of the fabric surfaces, as for the
    /// record, as an Error record at the next `recv`.
    fn insert_direct(
        &mut self,
        handle: Handle,
        time: Time,
        env: Envelope,
    ) -> Option<Result<(), ProtoError>> {
        let _ = (handle, time, env);
        None
    }
    /// One-piece mode, exact notify: `NoMoreInserts{now, horizon}` and its
    /// answer without records: the arrivals appended to `batch` and the
    /// batch end or grant returned. `None`: no such path (or the fabric
    /// has failed: the Error record waits at `recv`), use the records.
    fn wait_exact_direct(
        &mut self,
        now: Time,
        horizon: Time,
        batch: &mut Vec<(Handle, Time)>,
        fired: &mut Vec<(Handle, Time, Handle)>,
    ) -> Option<ExactAnswer> {
        let _ = (now, horizon, batch, fired);
        None
    }
}

impl Link for Channel {
    fn send(&mut self, r: Record) -> Result<(), ProtoError> {
        Channel::send(self, r)
    }
    fn recv(&mut self) -> Result<Record, ProtoError> {
        Channel::recv(self)
    }
    fn take_arrivals(&mut self, out: &mut Vec<(Handle, Time)>) -> usize {
        Channel::take_arrivals(self, out)
    }
    fn flush(&mut self) -> Result<(), ProtoError> {
        Channel::flush(self)
    }
    fn inserts_sent(&self) -> u64 {
        Channel::inserts_sent(self)
    }
    fn protocol(&self) -> Protocol {
        Channel::protocol(self)
    }
    fn version(&self) -> u32 {
        Channel::version(self)
    }
    fn stats(&self) -> ChannelStats {
        Channel::stats(self)
    }
    fn peer_wait(&self) -> Option<std::time::Duration> {
        Some(Channel::peer_wait(self).waited)
    }
}
