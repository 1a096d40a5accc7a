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

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
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
    /// A one-flit control packet from HCA `h` to LID `to` on VL 0 (a CNP,
    /// a lossy link's ACK or NAK): a full flit naming packet `pkt` of
    /// `msg`.
    pub(super) fn control_flit(&self, h: usize, to: u16, msg: u32, pkt: u32, flags: u8) -> Flit {
        Flit {
            msg,
            pkt,
            inject: 0,
            t_in: 0,
            serial: 0,
            src: self.hcas[h].lid,
            dst: to,
            sn: 0,
            pkt_flits: 1,
            bytes: self.p.flit_size as u16,
            vl: 0,
            flags,
        }
    }

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

/// FIFO of flit handles (the ibuf's per-(output, VL) queues and the obuf's
/// queue): a ring buffer of power-of-two capacity that grows by doubling.
/// Why not `VecDeque`: the compiler kept its `push_back` and `pop_front`
/// out of line (a call each on ~3 M flit moves per 200 us of OneHot);
/// these are small enough to inline everywhere.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct FIdQueue {
    /// capacity 0 or a power of two
    buf: Vec<FId>,
    head: u32,
    len: u32,
}

impl FIdQueue {
    pub(super) fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub(super) fn push_back(&mut self, f: FId) {
        if self.len as usize == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        let i = (self.head as usize + self.len as usize) & mask;
        self.buf[i] = f;
        self.len += 1;
    }

    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<FId> {
        if self.len == 0 {
            return None;
        }
        let f = self.buf[self.head as usize];
        self.head = (self.head + 1) & (self.buf.len() as u32 - 1);
        self.len -= 1;
        Some(f)
    }

    /// Double the capacity (at least 4), the items in order from index 0.
    #[cold]
    fn grow(&mut self) {
        let cap = (2 * self.buf.len()).max(4);
        let mut v = Vec::with_capacity(cap);
        let mask = self.buf.len().wrapping_sub(1);
        for k in 0..self.len as usize {
            v.push(self.buf[(self.head as usize + k) & mask]);
        }
        v.resize(cap, 0);
        self.buf = v;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::FIdQueue;
    use std::collections::VecDeque;

    /// Random pushes and pops (through several growths and wrap-arounds)
    /// give exactly what a `VecDeque` gives.
    #[test]
    fn fid_queue_is_a_fifo() {
        let mut q = FIdQueue::new();
        let mut r = VecDeque::new();
        let mut x: u64 = 7;
        for i in 0..100_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // phases that grow the queue, then drain it
            let grow = (i / 5000) % 2 == 0;
            if (x >> 40) % 3 != 0 || (grow && (x >> 50) % 2 == 0) {
                q.push_back(i);
                r.push_back(i);
            } else {
                assert_eq!(q.pop_front(), r.pop_front());
            }
            assert_eq!(q.len(), r.len());
            assert_eq!(q.is_empty(), r.is_empty());
        }
        while let Some(f) = r.pop_front() {
            assert_eq!(q.pop_front(), Some(f));
        }
        assert_eq!(q.pop_front(), None);
    }
}
