//! The CPU time of this process, for the reports' `cpu_time_s` (the
//! scheduler's command line and the Python package print the same figure).

/// CPU time consumed by this process so far, in seconds (0 if the clock
/// cannot be read).
pub fn process_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clock counts this process's work and never goes back.
    #[test]
    fn grows_with_work() {
        let a = process_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = process_seconds();
        assert!(a > 0.0 && b > a, "{a} then {b}");
    }
}
