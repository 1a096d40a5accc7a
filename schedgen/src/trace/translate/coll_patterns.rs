//! The communication pattern a collective record becomes: the textbook
//! algorithms of docs/model/schedgen.md 3 (with linear exchanges for the
//! `v` variants), or the call as the library decision rules of
//! crate::collectives see it.

use super::fields::{check_root, count_array, message_bytes, size_of, sizes_of};
use crate::collectives::{self, Coll as LibColl};
use crate::goal::GoalWriter;
use crate::patterns;
use crate::trace::reader::{Call, Fields};

/// The call as the library decision rules see it, for the collectives
/// that have rules (None: the textbook mapping is used, e.g. the `v`
/// variants, Reduce_scatter, and Iallreduce, which Open MPI runs in its
/// non-blocking component).
pub(super) fn library_call(
    c: Call,
    f: &Fields,
    p: i32,
) -> Result<Option<collectives::Call>, String> {
    let call =
        |coll, ck: usize, dk: usize, root: Option<usize>| -> Result<collectives::Call, String> {
            let count = f.int(ck, "count")?;
            let dsize = f.int(dk, "datatype size")?;
            // The same limits as the textbook translation (a C int).
            message_bytes(count, dsize).map_err(|e| format!("fields {ck} and {dk}: {e}"))?;
            let root = match root {
                Some(k) => check_root(f.int32(k, "root")?, p)?,
                None => 0,
            };
            Ok(collectives::Call {
                coll,
                count,
                dsize,
                root,
            })
        };
    Ok(Some(match c {
        Call::Barrier => collectives::Call {
            coll: LibColl::Barrier,
            count: 0,
            dsize: 0,
            root: 0,
        },
        Call::Allreduce => call(LibColl::Allreduce, 4, 6, None)?,
        Call::Bcast => call(LibColl::Bcast, 3, 5, Some(7))?,
        Call::Reduce => call(LibColl::Reduce, 4, 6, Some(9))?,
        Call::Allgather => call(LibColl::Allgather, 3, 5, None)?,
        Call::Alltoall => call(LibColl::Alltoall, 3, 5, None)?,
        // Gather: each rank's block is the send side; Scatter: the
        // receive side (the other side only matters at the root).
        Call::Gather => call(LibColl::Gather, 3, 5, Some(12))?,
        Call::Scatter => call(LibColl::Scatter, 8, 10, Some(12))?,
        _ => return Ok(None),
    }))
}

/// Writes a collective's communication pattern for rank `me` of `p` ranks.
pub(super) fn write_collective(
    w: &mut GoalWriter,
    c: Call,
    f: &Fields,
    me: i32,
    p: i32,
) -> Result<(), String> {
    let pu = p as usize;
    match c {
        Call::Barrier => patterns::dissemination(w, me, p, 1),
        Call::Allreduce | Call::Iallreduce => {
            let size = size_of(f, 4, "count", 6, "datatype size")?;
            patterns::dissemination(w, me, p, size)
        }
        Call::Allgather => {
            let size = size_of(f, 3, "send count", 5, "send datatype size")?;
            patterns::dissemination(w, me, p, size)
        }
        Call::Alltoall => {
            let size = size_of(f, 3, "send count", 5, "send datatype size")?;
            patterns::linear_alltoall(w, me, p, size)
        }
        Call::Bcast => {
            let size = size_of(f, 3, "count", 5, "datatype size")?;
            let root = check_root(f.int32(7, "root")?, p)?;
            patterns::binomial_bcast(w, me, p, root, size)
        }
        Call::Reduce => {
            let size = size_of(f, 4, "count", 6, "datatype size")?;
            let root = check_root(f.int32(9, "root")?, p)?;
            patterns::binomial_reduce(w, me, p, root, size)
        }
        // Extensions. Layouts follow liballprof: a counts array is its
        // address followed by P values.
        Call::Alltoallv => {
            // start, sbuf, scounts(1+P), sdispls(1+P), sdt(3), rbuf,
            // rcounts(1+P), rdispls(1+P), rdt(3), comm(3), end
            let (sc, k) = count_array(f, 3, pu, "send counts")?;
            let (_, k) = count_array(f, k, pu, "send displacements")?;
            let ssize = f.int(k + 1, "send datatype size")?;
            let (rc, k) = count_array(f, k + 4, pu, "recv counts")?;
            let (_, k) = count_array(f, k, pu, "recv displacements")?;
            let rsize = f.int(k + 1, "recv datatype size")?;
            let sb = sizes_of(&sc, ssize, "send counts")?;
            let rb = sizes_of(&rc, rsize, "recv counts")?;
            linear_exchange(w, me, p, |t| sb[t], |s| rb[s]);
        }
        Call::Allgatherv => {
            // start, sbuf, scount, sdt(3), rbuf, rcounts(1+P), displs(1+P), rdt(3), comm(3), end
            let ssz = size_of(f, 3, "send count", 5, "send datatype size")?;
            let (rc, k) = count_array(f, 8, pu, "recv counts")?;
            let (_, k) = count_array(f, k, pu, "displacements")?;
            let rsize = f.int(k + 1, "recv datatype size")?;
            let rb = sizes_of(&rc, rsize, "recv counts")?;
            linear_exchange(w, me, p, |_| ssz, |s| rb[s]);
        }
        Call::Gather | Call::Scatter => {
            // start, sbuf, scount, sdt(3), rbuf, rcount, rdt(3), root, comm(3), end
            let ssz = size_of(f, 3, "send count", 5, "send datatype size")?;
            let rsz = size_of(f, 8, "recv count", 10, "recv datatype size")?;
            let root = check_root(f.int32(12, "root")?, p)?;
            if c == Call::Gather {
                linear_rooted(w, me, p, root, true, |_| rsz, ssz);
            } else {
                linear_rooted(w, me, p, root, false, |_| ssz, rsz);
            }
        }
        Call::Gatherv => {
            // start, sbuf, scount, sdt(3), rbuf, rcounts(1+P), displs(1+P), rdt(3), root, comm(3), end
            let ssz = size_of(f, 3, "send count", 5, "send datatype size")?;
            let (rc, k) = count_array(f, 8, pu, "recv counts")?;
            let (_, k) = count_array(f, k, pu, "displacements")?;
            let rsize = f.int(k + 1, "recv datatype size")?;
            let root = check_root(f.int32(k + 3, "root")?, p)?;
            let rb = sizes_of(&rc, rsize, "recv counts")?;
            linear_rooted(w, me, p, root, true, |s| rb[s], ssz);
        }
        Call::Scatterv => {
            // start, sbuf, scounts(1+P), displs(1+P), sdt(3), rbuf, rcount, rdt(3), root, comm(3), end
            let (sc, k) = count_array(f, 3, pu, "send counts")?;
            let (_, k) = count_array(f, k, pu, "displacements")?;
            let ssize = f.int(k + 1, "send datatype size")?;
            let rsz = size_of(f, k + 4, "recv count", k + 6, "recv datatype size")?;
            let root = check_root(f.int32(k + 8, "root")?, p)?;
            let sb = sizes_of(&sc, ssize, "send counts")?;
            linear_rooted(w, me, p, root, false, |t| sb[t], rsz);
        }
        Call::ReduceScatter => {
            // start, sbuf, rbuf, rcounts(1+P) from field 4, dt(3), op, comm(3), end
            let (rc, k) = count_array(f, 4, pu, "recv counts")?;
            let dsize = f.int(k + 1, "datatype size")?;
            let rb = sizes_of(&rc, dsize, "recv counts")?;
            let mine = rb.get(me as usize).copied().unwrap_or(0);
            // Pairwise exchange: block t goes to rank t; rank me receives
            // its own block's contribution from every other rank.
            linear_exchange(w, me, p, |t| rb[t], |_| mine);
        }
        _ => unreachable!("not a collective"),
    }
    Ok(())
}

/// Linear exchange in the order of 3.10: step 1..P-1, send to me+step, then
/// receive from me-step; sizes per destination / per source.
pub(super) fn linear_exchange(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    send: impl Fn(usize) -> i32,
    recv: impl Fn(usize) -> i32,
) {
    for step in 1..p as i64 {
        let t = (me as i64 + step).rem_euclid(p as i64) as usize;
        let s = (me as i64 - step).rem_euclid(p as i64) as usize;
        w.send(send(t), t as i32);
        w.recv(recv(s), s as i32);
    }
}

/// Linear gather (root receives from 1..P-1 mapped through swap, as 3.8)
/// or scatter; `root_size(peer)` is the root's per-peer size, `leaf_size`
/// the size every other rank sends/receives.
pub(super) fn linear_rooted(
    w: &mut GoalWriter,
    me: i32,
    p: i32,
    root: i32,
    gather: bool,
    root_size: impl Fn(usize) -> i32,
    leaf_size: i32,
) {
    let swap = |x: i32| {
        if x == 0 {
            root
        } else if x == root {
            0
        } else {
            x
        }
    };
    if me == root {
        for i in 1..p {
            let peer = swap(i);
            if gather {
                w.recv(root_size(peer as usize), peer);
            } else {
                w.send(root_size(peer as usize), peer);
            }
        }
    } else if gather {
        w.send(leaf_size, root);
    } else {
        w.recv(leaf_size, root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operations `f` writes for rank `me` of `p`, as `send S to P` /
    /// `recv S from P` lines.
    fn ops(p: i32, me: i32, f: impl FnOnce(&mut GoalWriter)) -> Vec<String> {
        let mut w = GoalWriter::new(p as i64, 0, None);
        w.start_rank(me as i64);
        f(&mut w);
        w.end_rank();
        let (goal, _) = w.finish();
        goal.lines()
            .filter_map(|l| l.split_once(": ").map(|(_, op)| op))
            .filter(|op| op.starts_with("send") || op.starts_with("recv"))
            .map(|op| op.split(" tag").next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn linear_exchange_steps() {
        assert_eq!(
            ops(3, 0, |w| linear_exchange(
                w,
                0,
                3,
                |t| 10 + t as i32,
                |s| 20 + s as i32
            )),
            [
                "send 11b to 1",
                "recv 22b from 2",
                "send 12b to 2",
                "recv 21b from 1"
            ]
        );
    }

    #[test]
    fn linear_gather_and_scatter_swap_the_root_with_rank_0() {
        assert_eq!(
            ops(3, 2, |w| linear_rooted(
                w,
                2,
                3,
                2,
                true,
                |p| p as i32 + 1,
                9
            )),
            ["recv 2b from 1", "recv 1b from 0"]
        );
        assert_eq!(
            ops(3, 1, |w| linear_rooted(w, 1, 3, 2, false, |_| 5, 9)),
            ["recv 9b from 2"]
        );
    }

    #[test]
    fn library_calls_of_the_records() {
        // MPI_Bcast: count 4, datatype size 8, root 1
        let f = Fields::split("MPI_Bcast:1:4096:4:11,8,8:1:0,0,2:2");
        let c = library_call(Call::Bcast, &f, 2).unwrap().unwrap();
        assert_eq!((c.count, c.dsize, c.root), (4, 8, 1));
        assert!(library_call(Call::Alltoallv, &f, 2).unwrap().is_none());
        let bad_root = Fields::split("MPI_Bcast:1:4096:4:11,8,8:5:0,0,2:2");
        assert!(library_call(Call::Bcast, &bad_root, 2).is_err());
    }
}
