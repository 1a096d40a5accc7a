//! Software prefetch: a hint to start loading a cache line that a later
//! step will need, so that the misses of a batch overlap (ibnet's
//! co-simulation server on its insert path and its engine, loggopsim's
//! engine, matching and schedule). Never changes a result.

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

#[cfg(test)]
mod tests {
    /// Any address, even one past the end or null, is a valid hint.
    #[test]
    fn any_address_is_allowed() {
        let v = [1u64, 2, 3];
        super::line(v.as_ptr());
        super::line(v.as_ptr().wrapping_add(1000));
        super::line(std::ptr::null::<u8>());
        assert_eq!(v, [1, 2, 3]);
    }
}
