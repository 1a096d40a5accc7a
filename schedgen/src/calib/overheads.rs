//! Processing-overhead calibration (thesis 5.3 and 5.5.1): instead of
//! modifying the schedule, the simulator charges LogGOPS `o` (per message)
//! and `O` (per byte) with two parameter sets, one for small (eager) and one
//! for large (rendezvous) messages. The thesis fitted them by linear
//! regression of real minus simulated message travel times on its cluster:
//! small f(x) = 25.9798 us + 0.000155003 us/B * x, large f(x) = 32 us +
//! 0.000065 us/B * x. All other LogGOPS parameters (L, g, G) were 0.

/// Per-message overhead for small messages, picoseconds.
pub const SMALL_O_PS: u64 = 25_979_800;
/// Per-byte overhead for small messages, picoseconds per byte.
pub const SMALL_OBYTE_PS: u64 = 155;
/// Per-message overhead for large messages, picoseconds.
pub const LARGE_O_PS: u64 = 32_000_000;
/// Per-byte overhead for large messages, picoseconds per byte.
pub const LARGE_OBYTE_PS: u64 = 65;

/// The `loggopsim` command line that simulates `goal` with the thesis's
/// fitted overheads (L = g = G = 0, two o/O sets).
pub fn suggested_loggopsim_command(goal: &str) -> String {
    format!(
        "loggopsim -f {goal} -L 0 -g 0 -G 0 -o {SMALL_O_PS} -O {SMALL_OBYTE_PS} \
         --o-large {LARGE_O_PS} --O-large {LARGE_OBYTE_PS}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_values_match_the_regression() {
        // 25.9798 us = 25,979,800 ps; 0.000155003 us/B ~ 155 ps/B.
        assert_eq!(SMALL_O_PS, (25.9798f64 * 1e6).round() as u64);
        assert_eq!(SMALL_OBYTE_PS, (0.000155003f64 * 1e6).round() as u64);
        assert_eq!(LARGE_O_PS, 32 * 1_000_000);
        assert_eq!(LARGE_OBYTE_PS, (0.000065f64 * 1e6).round() as u64);
        let c = suggested_loggopsim_command("x.goal");
        assert!(
            c.contains("-o 25979800 -O 155 --o-large 32000000 --O-large 65"),
            "{c}"
        );
    }
}
