//! Software prefetch: a hint to start loading a cache line that a later
//! step will need, so that the misses of a batch overlap (the
//! co-simulation server's insert path, `server/mod.rs`, and loggopsim's
//! engine, which uses this one helper too). Never changes a result.

/// Hints the CPU to load the cache line of `p`. Any address is allowed: a
/// prefetch never faults and has no observable effect.
#[inline(always)]
pub fn line<X>(p: *const X) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch has no observable effect and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
