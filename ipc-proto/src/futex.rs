//! Futex wait and wake on a u32 in memory shared between processes (the
//! shared-memory rings' doorbells, and the control segment's words the
//! two sides wait on while they meet). Shared, not PRIVATE, futexes: the
//! waker is another process.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleep while `word` holds `expected`, at most `timeout`; returns at once
/// if it holds something else. Spurious returns are possible: callers look
/// at the word again.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call
    // (in a shared mapping or our own memory); the kernel only reads it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wake every waiter on `word`.
pub(crate) fn wake(word: &AtomicU32) {
    // SAFETY: as above.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
