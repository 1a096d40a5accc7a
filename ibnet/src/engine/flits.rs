//! The flit store: data flits and CNPs live in a slab (`Fabric::fl`) from
//! creation (generator or sink CNP) to consumption or drop, and move
//! through events and queues by handle ([`FId`]). Why: events stay 16
//! bytes, queues hold 4-byte handles, and a flit is never copied between
//! components; a freed slot is reused, so the slab stays as large as the
//! maximum number of flits in flight.

use super::fabric::Fabric;

// flit flags
pub(super) const F_NOSW: u8 = 1;

pub(super) const F_FECN: u8 = 2;

pub(super) const F_BECN: u8 = 4;

pub(super) const F_CNP: u8 = 8;

pub(super) const F_CAND: u8 = 16;

/// Lossy links (loss.rs): an end-to-end response packet (ACK/NAK).
pub(super) const F_LCTL: u8 = 32;

/// Lossy links: the packet was corrupted on a link (set on its last flit)
/// or discarded by the receiver; the sink drops it.
pub(super) const F_BAD: u8 = 64;

/// Lossy links: a retransmitted data packet.
pub(super) const F_RTX: u8 = 128;

/// Lossy links: on a data flit (never a CNP, the only packet whose BECN
/// bit means anything) the BECN bit marks a retransmission-timeout probe.
pub(super) const F_PROBE: u8 = F_BECN;

#[derive(Clone, Copy, Debug)]
pub(super) struct Flit {
    pub(super) msg: u32,
    pub(super) pkt: u32,
    pub(super) inject: u64,
    /// arrival at the current switch ibuf (ISW reference, FCFS stamp)
    pub(super) t_in: u64,
    pub(super) serial: u32,
    pub(super) src: u16,
    pub(super) dst: u16,
    pub(super) sn: u16,
    pub(super) pkt_flits: u16,
    pub(super) bytes: u16,
    pub(super) vl: u8,
    pub(super) flags: u8,
}

impl Flit {
    #[inline]
    pub(super) fn last(&self) -> bool {
        self.sn + 1 == self.pkt_flits
    }
}

/// Handle of a flit in the flit slab (`Fabric::fl`). Flits are created by
/// the generator (or a sink's CNP), move through events and queues by
/// handle, and are released when consumed or dropped: events stay 16 bytes.
pub(super) type FId = u32;

impl Fabric {
    #[inline]
    pub(super) fn fl_alloc(&mut self, f: Flit) -> FId {
        match self.fl_free.pop() {
            Some(i) => {
                self.fl[i as usize] = f;
                i
            }
            None => {
                self.fl.push(f);
                (self.fl.len() - 1) as FId
            }
        }
    }

    #[inline]
    pub(super) fn fl_release(&mut self, i: FId) {
        self.fl_free.push(i);
    }
}
