//! Rounding a completion to the ps (docs/backends.md, "flow": ceil, but a
//! quotient within 1e-12 relative of an integer is that integer).

/// Completion after `x` ps (see the module docs: ceil, snapping quotients
/// within 1e-12 relative of an integer).
pub fn ceil_ps(x: f64) -> u64 {
    if x <= 0.0 {
        return 0;
    }
    let r = x.round();
    if (x - r).abs() <= 1e-12 * x.max(1e3) {
        r as u64
    } else {
        x.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::ceil_ps;

    #[test]
    fn ceil_with_snapping() {
        // 65536 B at 500 ps/B: exactly 32 768 000 ps, also through f64
        assert_eq!(ceil_ps(65536.0 / (1.0 / 500.0)), 32_768_000);
        assert_eq!(ceil_ps(0.0), 0);
        assert_eq!(ceil_ps(-3.0), 0);
        assert_eq!(ceil_ps(0.2), 1);
        assert_eq!(ceil_ps(10.5), 11);
        // within 1e-12 relative (at least 1e-9 ps) of an integer: that integer
        assert_eq!(ceil_ps(1e6 * (1.0 + 1e-13)), 1_000_000);
        assert_eq!(ceil_ps(1e6 * (1.0 + 1e-9)), 1_000_001);
        assert_eq!(ceil_ps(7.0 + 5e-10), 7);
        assert_eq!(ceil_ps(7.0 + 5e-8), 8);
    }
}
