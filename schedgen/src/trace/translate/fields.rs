//! What the fields of a record mean beyond their syntax: message sizes
//! (count x datatype size, kept in a C int as the reference), count
//! arrays, roots and peers (docs/model/schedgen.md 4.2).

use crate::trace::reader::Fields;

/// Reads the count array that starts at field `k` (a pointer, then P
/// values) and returns the values and the next field index.
pub(super) fn count_array(
    f: &Fields,
    k: usize,
    p: usize,
    what: &str,
) -> Result<(Vec<i64>, usize), String> {
    let mut v = Vec::with_capacity(p.min(f.len()));
    for i in 0..p {
        v.push(f.int(k + 1 + i, what)?);
    }
    Ok((v, k + 1 + p))
}

/// Largest message the translator writes: the reference computes sizes in
/// a C `int`, and GOAL sizes from traces are kept in that range (a larger
/// product would wrap to a negative or zero size).
pub const MAX_MESSAGE_BYTES: i64 = i32::MAX as i64;

/// `count * datatype size` in bytes, checked: both non-negative and the
/// product at most [`MAX_MESSAGE_BYTES`].
pub fn message_bytes(count: i64, dsize: i64) -> Result<i32, String> {
    if count < 0 {
        return Err(format!("negative count {count}"));
    }
    if dsize < 0 {
        return Err(format!("negative datatype size {dsize}"));
    }
    match count.checked_mul(dsize) {
        Some(b) if b <= MAX_MESSAGE_BYTES => Ok(b as i32),
        _ => Err(format!(
            "message of {count} x {dsize} bytes is larger than {MAX_MESSAGE_BYTES} bytes \
             (the translator's limit, a C int as in the reference)"
        )),
    }
}

/// `message_bytes` of the count in field `ck` and the datatype size in `dk`.
pub(super) fn size_of(f: &Fields, ck: usize, cw: &str, dk: usize, dw: &str) -> Result<i32, String> {
    let c = f.int(ck, cw)?;
    let d = f.int(dk, dw)?;
    message_bytes(c, d).map_err(|e| format!("fields {ck} ({cw}) and {dk} ({dw}): {e}"))
}

/// Per-peer sizes of a counts array times a datatype size.
pub(super) fn sizes_of(counts: &[i64], dsize: i64, what: &str) -> Result<Vec<i32>, String> {
    counts
        .iter()
        .map(|&c| message_bytes(c, dsize).map_err(|e| format!("{what}: {e}")))
        .collect()
}

/// A root rank read from a trace must name one of the `p` ranks.
pub(super) fn check_root(root: i32, p: i32) -> Result<i32, String> {
    if (0..p).contains(&root) {
        Ok(root)
    } else {
        Err(format!("root {root} is outside 0..{}", p - 1))
    }
}

/// A point-to-point peer from a trace, shifted to the extrapolation copy
/// (`off`), must be one of the `total` ranks (a receive may use -1, any
/// source). A peer beyond the trace files found used to be written and only
/// failed when simulated.
pub(super) fn check_peer(
    peer: i32,
    is_recv: bool,
    off: i32,
    total: i32,
    hn: usize,
) -> Result<i32, String> {
    if is_recv && peer == -1 {
        return Ok(-1);
    }
    if peer < 0 {
        return Err(format!(
            "peer {peer} is not a rank (MPI_PROC_NULL and other special ranks are not supported)"
        ));
    }
    if peer as usize >= hn {
        return Err(format!(
            "peer {peer} is outside 0..{}: only {hn} trace file(s) were found (the traces of \
             the other ranks are missing; see --require-all)",
            hn - 1
        ));
    }
    let p = peer + off;
    debug_assert!(p < total);
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(message_bytes(10, 8), Ok(80));
        assert_eq!(message_bytes(0, 8), Ok(0));
        assert!(message_bytes(-1, 8).unwrap_err().contains("negative count"));
        assert!(message_bytes(1, -8)
            .unwrap_err()
            .contains("negative datatype size"));
        assert_eq!(message_bytes(MAX_MESSAGE_BYTES, 1), Ok(i32::MAX));
        assert!(message_bytes(MAX_MESSAGE_BYTES, 2).is_err());
        assert!(message_bytes(i64::MAX, i64::MAX).is_err());
        let f = Fields::split("MPI_Send:110:4096:10:11,8,8");
        assert_eq!(size_of(&f, 3, "count", 5, "dsize"), Ok(80));
        assert_eq!(sizes_of(&[1, 2], 4, "c"), Ok(vec![4, 8]));
        assert!(sizes_of(&[1, -2], 4, "c").unwrap_err().starts_with("c: "));
    }

    #[test]
    fn count_arrays_are_a_pointer_and_p_values() {
        let f = Fields::split("X:1:99:3:4:5:6");
        assert_eq!(count_array(&f, 2, 3, "c"), Ok((vec![3, 4, 5], 6)));
        assert!(count_array(&f, 2, 5, "c").is_err());
    }

    #[test]
    fn roots_and_peers() {
        assert_eq!(check_root(3, 4), Ok(3));
        assert!(check_root(4, 4).is_err());
        assert!(check_root(-1, 4).is_err());
        // a receive from any source stays -1; peers shift to the copy
        assert_eq!(check_peer(-1, true, 2, 4, 2), Ok(-1));
        assert!(check_peer(-1, false, 2, 4, 2).is_err());
        assert_eq!(check_peer(1, false, 2, 4, 2), Ok(3));
        assert!(check_peer(2, false, 0, 4, 2)
            .unwrap_err()
            .contains("only 2 trace file(s)"));
    }
}
