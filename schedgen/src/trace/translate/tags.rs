//! The tags a translated operation carries (docs/model/schedgen.md 4.5):
//! the reference folds the communicator into the tag (`maketag`); the
//! thesis's Schedgen 1.1 (`--raw-tags`) keeps point-to-point tags as in the
//! trace and gives the n-th collective 1000000 + n.

use crate::goal::maketag;
use crate::trace::reader::{Call, Fields};

/// A point-to-point tag field: any C long, or with raw tags one that fits
/// the 32 bits of an MPI tag.
pub(super) fn tag_field(f: &Fields, k: usize, what: &str, raw: bool) -> Result<i64, String> {
    if raw {
        f.tag32(k, what)
    } else {
        f.int(k, what)
    }
}

/// The tag of a point-to-point operation with tag `t` on communicator `comm`.
pub(super) fn p2p_tag(raw: bool, comm: i64, t: i64) -> u64 {
    if raw {
        t as u64
    } else {
        maketag(comm, t)
    }
}

/// The tag of the rank's `n`-th translated collective (from 0) on the
/// communicator with handle `comm`. Iallreduce keeps the plain number, as
/// the reference.
pub(super) fn coll_tag(call: Call, raw: bool, comm: i64, n: u64) -> u64 {
    let t = 1_000_000 + n as i64;
    if call == Call::Iallreduce || raw {
        t as u64
    } else {
        maketag(comm, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_to_point_tags() {
        assert_eq!(p2p_tag(false, 0, 7), 7);
        assert_eq!(p2p_tag(false, 1, 7), 1 << 24 | 7);
        assert_eq!(p2p_tag(true, 1, 7), 7);
        // a negative trace tag, sign-extended as the reference prints it
        assert_eq!(p2p_tag(true, 0, -1), u64::MAX);
        let f = Fields::split("MPI_Send:1:2:3:4:5:6:7:4294967296");
        assert_eq!(tag_field(&f, 8, "tag", false), Ok(1 << 32));
        assert!(tag_field(&f, 8, "tag", true).is_err());
    }

    #[test]
    fn collective_tags() {
        assert_eq!(coll_tag(Call::Barrier, false, 0, 0), 1_000_000);
        assert_eq!(coll_tag(Call::Barrier, false, 1, 2), 1 << 24 | 1_000_002);
        assert_eq!(coll_tag(Call::Barrier, true, 1, 2), 1_000_002);
        assert_eq!(coll_tag(Call::Iallreduce, false, 1, 3), 1_000_003);
    }
}
