//! The control segment `/<key>.ctl`: one page of POSIX shared memory with
//! atomics at fixed offsets (layout in docs/protocol.md, frozen by tests).

use crate::error::{ProtoError, Result};
use crate::record::Protocol;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::num::NonZeroUsize;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Size of the segment (one page); only the first 48 bytes are used.
pub const SEGMENT_SIZE: usize = 4096;
/// "IBCOSCTL" read as a little-endian u64.
pub const SEGMENT_MAGIC: u64 = u64::from_le_bytes(*b"IBCOSCTL");

/// Byte offsets of the segment fields.
pub mod offset {
    pub const MAGIC: usize = 0; // u64
    pub const VERSION: usize = 8; // u32
    pub const PROTOCOL: usize = 12; // u32: 0 query, 1 notify
    pub const ENDPOINTS: usize = 16; // u32
    pub const READY: usize = 20; // u32: 0 not yet, 1 ready
    pub const FABRIC_PID: usize = 24; // u32
    pub const SCHEDULER_PID: usize = 28; // u32: 0 until the scheduler attaches
    pub const RECORD_SIZE: usize = 32; // u32
    pub const MESSAGE_SIZE: usize = 36; // u32: mq_msgsize of every queue
    pub const QUEUE_DEPTH: usize = 40; // u32: mq_maxmsg of every queue
                                       // 64..=319: the transport (H2; see crate::shm).
    pub const TRANSPORT: usize = 64; // u32: 0 message queues, 1 shared-memory rings
    pub const RING_SLOTS: usize = 68; // u32: slots per ring (shm)
    pub const RING_SLOT_SIZE: usize = 72; // u32: payload bytes per slot (shm)
    pub const SCHED_DOORBELL: usize = 128; // u32: bumped to wake the scheduler (shm)
    pub const SCHED_WAITING: usize = 132; // u32: nonzero while the scheduler sleeps on its doorbell (shm.rs: 1 any, 2 incoming only)
    pub const FABRIC_DOORBELL: usize = 192; // u32
    pub const FABRIC_WAITING: usize = 196; // u32
    pub const FABRIC_HEARTBEAT: usize = 256; // u64: CLOCK_MONOTONIC ms, every 100 ms
    pub const SCHED_HEARTBEAT: usize = 264; // u64
}

/// Transport codes at [`offset::TRANSPORT`].
pub const TRANSPORT_MQ: u32 = 0;
pub const TRANSPORT_SHM: u32 = 1;

/// A mapped control segment.
pub struct ControlSegment {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping belongs to the ControlSegment (unmapped once, in
// Drop) and is shared memory that every method reads and writes only
// through atomics (or, for the rings, through the shm transport's
// single-writer protocol), so moving the handle to another thread or
// sharing it between threads cannot create a data race.
unsafe impl Send for ControlSegment {}
// SAFETY: as for Send above: all access through &self is atomic.
unsafe impl Sync for ControlSegment {}

impl ControlSegment {
    /// Map `SEGMENT_SIZE` bytes of `fd` (the caller checked the size).
    pub(crate) fn map(fd: &OwnedFd, name: &str) -> Result<ControlSegment> {
        Self::map_len(fd, name, SEGMENT_SIZE)
    }

    /// Map `len` (>= SEGMENT_SIZE) bytes: the control page plus, for the
    /// shared-memory transport, its rings.
    pub(crate) fn map_len(fd: &OwnedFd, name: &str, len: usize) -> Result<ControlSegment> {
        let len = len.max(SEGMENT_SIZE);
        // SAFETY: a fresh MAP_SHARED mapping chosen by the kernel (no fixed
        // address, so no existing mapping is replaced) of a valid open
        // descriptor that the caller sized to at least `len` bytes; the
        // returned pointer is owned by the ControlSegment and unmapped once.
        let p = unsafe {
            mmap(
                None,
                NonZeroUsize::new(len).unwrap(),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                0,
            )
        }
        .map_err(|e| ProtoError::os("mmap", name, e))?;
        Ok(ControlSegment { ptr: p.cast(), len })
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Base address of the mapping (the shm transport's rings live at
    /// offsets >= SEGMENT_SIZE).
    pub(crate) fn base(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn atomic_u32(&self, off: usize) -> &AtomicU32 {
        assert!(off.is_multiple_of(4) && off + 4 <= self.len);
        // SAFETY: the assert keeps the 4 bytes inside the mapping and 4-byte
        // aligned (the mapping is page-aligned); mapped memory is always
        // initialised, AtomicU32 has the layout of u32, and the reference
        // borrows `self`, so it cannot outlive the mapping.
        unsafe { &*(self.ptr.as_ptr().add(off) as *const AtomicU32) }
    }

    /// 0 message queues, 1 shared-memory rings.
    pub fn transport_raw(&self) -> u32 {
        self.u32_at(offset::TRANSPORT).load(Ordering::Acquire)
    }

    /// Shared-memory ring geometry (slots, slot payload bytes).
    pub fn ring_geometry(&self) -> (u32, u32) {
        (
            self.u32_at(offset::RING_SLOTS).load(Ordering::Acquire),
            self.u32_at(offset::RING_SLOT_SIZE).load(Ordering::Acquire),
        )
    }

    /// Fabric, before `publish`: record the transport and ring geometry.
    pub(crate) fn set_transport(&self, transport: u32, slots: u32, slot_size: u32) {
        let r = Ordering::Release;
        self.u32_at(offset::TRANSPORT).store(transport, r);
        self.u32_at(offset::RING_SLOTS).store(slots, r);
        self.u32_at(offset::RING_SLOT_SIZE).store(slot_size, r);
    }

    /// The heartbeat word of `role` (CLOCK_MONOTONIC milliseconds).
    pub fn heartbeat(&self, role: crate::record::Role) -> &AtomicU64 {
        match role {
            crate::record::Role::Fabric => self.u64_at(offset::FABRIC_HEARTBEAT),
            crate::record::Role::Scheduler => self.u64_at(offset::SCHED_HEARTBEAT),
        }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4) && off + 4 <= SEGMENT_SIZE);
        // SAFETY: `off` is one of the fixed, 4-byte aligned offsets of the
        // control page (module `offset`), all below SEGMENT_SIZE <= len;
        // the page-aligned mapping is initialised memory, AtomicU32 has the
        // layout of u32, and the reference borrows `self`.
        unsafe { &*(self.ptr.as_ptr().add(off) as *const AtomicU32) }
    }
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= SEGMENT_SIZE);
        // SAFETY: as in `u32_at`, for one of the fixed 8-byte aligned u64
        // offsets of the control page.
        unsafe { &*(self.ptr.as_ptr().add(off) as *const AtomicU64) }
    }

    pub fn magic(&self) -> u64 {
        self.u64_at(offset::MAGIC).load(Ordering::Acquire)
    }
    pub fn version(&self) -> u32 {
        self.u32_at(offset::VERSION).load(Ordering::Acquire)
    }
    pub fn protocol_raw(&self) -> u32 {
        self.u32_at(offset::PROTOCOL).load(Ordering::Acquire)
    }
    pub fn endpoints(&self) -> u32 {
        self.u32_at(offset::ENDPOINTS).load(Ordering::Acquire)
    }
    pub fn ready(&self) -> bool {
        self.u32_at(offset::READY).load(Ordering::Acquire) == 1
    }
    pub fn fabric_pid(&self) -> u32 {
        self.u32_at(offset::FABRIC_PID).load(Ordering::Acquire)
    }
    pub fn scheduler_pid(&self) -> u32 {
        self.u32_at(offset::SCHEDULER_PID).load(Ordering::Acquire)
    }
    pub fn message_size(&self) -> u32 {
        self.u32_at(offset::MESSAGE_SIZE).load(Ordering::Acquire)
    }
    pub fn queue_depth(&self) -> u32 {
        self.u32_at(offset::QUEUE_DEPTH).load(Ordering::Acquire)
    }
    pub fn record_size(&self) -> u32 {
        self.u32_at(offset::RECORD_SIZE).load(Ordering::Acquire)
    }

    /// Fabric: fill in everything, the magic after the version (so a reader
    /// that sees the magic can trust the version), the ready flag last.
    pub(crate) fn publish(
        &self,
        version: u32,
        protocol: Protocol,
        endpoints: u32,
        fabric_pid: u32,
        message_size: u32,
        queue_depth: u32,
    ) {
        let r = Ordering::Release;
        self.u32_at(offset::VERSION).store(version, r);
        self.u64_at(offset::MAGIC).store(SEGMENT_MAGIC, r);
        self.u32_at(offset::PROTOCOL).store(protocol as u32, r);
        self.u32_at(offset::ENDPOINTS).store(endpoints, r);
        self.u32_at(offset::FABRIC_PID).store(fabric_pid, r);
        self.u32_at(offset::RECORD_SIZE)
            .store(crate::record::RECORD_SIZE as u32, r);
        self.u32_at(offset::MESSAGE_SIZE).store(message_size, r);
        self.u32_at(offset::QUEUE_DEPTH).store(queue_depth, r);
        self.u32_at(offset::READY).store(1, r);
        // a scheduler of this build waiting for it wakes at once
        crate::futex::wake(self.u32_at(offset::READY));
    }

    /// Sleep until the fabric marks the segment ready (or `timeout`).
    pub(crate) fn wait_ready(&self, timeout: std::time::Duration) {
        crate::futex::wait(self.u32_at(offset::READY), 0, timeout);
    }

    /// Sleep until a scheduler claims the session (or `timeout`).
    pub(crate) fn wait_scheduler(&self, timeout: std::time::Duration) {
        crate::futex::wait(self.u32_at(offset::SCHEDULER_PID), 0, timeout);
    }

    /// Scheduler: claim the session. Fails with the pid already there.
    pub(crate) fn claim_scheduler(&self, pid: u32) -> std::result::Result<(), u32> {
        let w = self.u32_at(offset::SCHEDULER_PID);
        w.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire)?;
        // a fabric of this build waiting for it wakes at once
        crate::futex::wake(w);
        Ok(())
    }

    /// Test hook: overwrite the version field (to simulate an old peer).
    #[doc(hidden)]
    pub fn debug_set_version(&self, v: u32) {
        self.u32_at(offset::VERSION).store(v, Ordering::Release);
    }

    /// Test hook (conformance checker): publish another process's pid as
    /// the fabric's, so that its death looks like the fabric's death.
    #[doc(hidden)]
    pub fn debug_set_fabric_pid(&self, pid: u32) {
        self.u32_at(offset::FABRIC_PID)
            .store(pid, Ordering::Release);
    }

    /// Copy of the first 48 bytes (for golden tests and diagnostics).
    pub fn header_bytes(&self) -> [u8; 48] {
        let mut b = [0u8; 48];
        for (i, chunk) in b.chunks_exact_mut(4).enumerate() {
            chunk.copy_from_slice(&self.u32_at(i * 4).load(Ordering::Acquire).to_le_bytes());
        }
        b
    }
}

impl Drop for ControlSegment {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are exactly what mmap returned in
        // `map_len`; this is the only unmap, and no reference handed out by
        // the accessors can outlive `self`.
        unsafe {
            let _ = munmap(self.ptr.cast(), self.len);
        }
    }
}
