//! Point-to-point calls (docs/model/schedgen.md 4.5): Send, Rsend, Recv,
//! Isend, Irecv and Sendrecv become a send and/or a receive, after the gap
//! calc that precedes them, with the calibration calcs of `calib.rs`.

use super::fields::{check_peer, size_of};
use super::gaps::{Ctx, RankState};
use super::rank::{print_name, Line, RankInfo};
use super::tags::{p2p_tag, tag_field};
use crate::goal::{DepKind, GoalWriter};
use crate::trace::reader::{Call, TraceError};

/// The calls this module translates (and Wait/Waitall, which `--nop2p`
/// drops with them).
pub(super) fn is_p2p(call: Call) -> bool {
    matches!(
        call,
        Call::Send
            | Call::Rsend
            | Call::Recv
            | Call::Isend
            | Call::Irecv
            | Call::Sendrecv
            | Call::Wait
            | Call::Waitall
    )
}

/// Send, Rsend, Recv, Isend, Irecv: one operation; a non-blocking one is
/// remembered by its request for the Wait that completes it.
pub(super) fn on_send_recv(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    info: &RankInfo,
    line: &Line,
) -> Result<(), TraceError> {
    let o = ctx.o;
    let (f, call, at) = (&line.f, line.call, line.at());
    let lerr = |m: String| line.err(m);
    let start = f.time(1, "start time").map_err(lerr)?;
    let buf = f.addr(2, "buffer").map_err(lerr)?;
    let size = size_of(f, 3, "count", 5, "datatype size").map_err(lerr)?;
    let peer = f.int32(7, "peer").map_err(lerr)?;
    let tag = tag_field(f, 8, "tag", o.raw_tags).map_err(lerr)?;
    let comm = f.int(9, "communicator").map_err(lerr)?;
    let end_field = if matches!(call, Call::Send | Call::Rsend) {
        12
    } else {
        13
    };
    let end = f.time(end_field, "end time").map_err(lerr)?;
    let is_send = matches!(call, Call::Send | Call::Rsend | Call::Isend);
    let peer = check_peer(peer, !is_send, info.off, info.total, info.hn).map_err(lerr)?;
    w.set_tag(p2p_tag(o.raw_tags, comm, tag));
    if o.print {
        w.comment(&format!("{} begin", print_name(call)));
    }
    let op = if is_send {
        w.send(size, peer)
    } else {
        w.recv(size, peer)
    };
    st.before = vec![(Some(op), DepKind::Requires)];
    let gap = ctx.close_gap(w, st, start, end, at);
    let split = info.sync.and_then(|s| s.p2p.get(&line.no)).copied();
    let post = ctx.p2p_extras(
        w,
        st,
        gap,
        &[(op, is_send, size)],
        &[(buf, size)],
        start,
        end,
        split,
        at,
    );
    let kind = if matches!(call, Call::Isend | Call::Irecv) {
        let req = f.addr(12, "request").map_err(lerr)?;
        st.pending.insert(req, op);
        DepKind::IRequires
    } else {
        DepKind::Requires
    };
    st.after = vec![(Some(post.unwrap_or(op)), kind)];
    if o.print {
        w.comment(&format!("{} end", print_name(call)));
    }
    Ok(())
}

/// Sendrecv: a send and a receive that both follow the gap.
pub(super) fn on_sendrecv(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    st: &mut RankState,
    info: &RankInfo,
    line: &Line,
) -> Result<(), TraceError> {
    let o = ctx.o;
    let (f, at) = (&line.f, line.at());
    let lerr = |m: String| line.err(m);
    let start = f.time(1, "start time").map_err(lerr)?;
    let sbuf = f.addr(2, "send buffer").map_err(lerr)?;
    let sb = size_of(f, 3, "send count", 5, "send datatype size").map_err(lerr)?;
    let dest = f.int32(7, "dest").map_err(lerr)?;
    let stag = tag_field(f, 8, "send tag", o.raw_tags).map_err(lerr)?;
    let rbuf = f.addr(9, "recv buffer").map_err(lerr)?;
    let rb = size_of(f, 10, "recv count", 12, "recv datatype size").map_err(lerr)?;
    let source = f.int32(14, "source").map_err(lerr)?;
    let comm = f.int(16, "communicator").map_err(lerr)?;
    let end = f.time(20, "end time").map_err(lerr)?;
    // Reference quirk: the receive uses the send tag too.
    w.set_tag(p2p_tag(o.raw_tags, comm, stag));
    if o.print {
        w.comment("Sendrecv begin");
    }
    let dest = check_peer(dest, false, info.off, info.total, info.hn).map_err(lerr)?;
    let source = check_peer(source, true, info.off, info.total, info.hn).map_err(lerr)?;
    let s = w.send(sb, dest);
    let r = w.recv(rb, source);
    st.before = vec![(Some(s), DepKind::Requires), (Some(r), DepKind::Requires)];
    let gap = ctx.close_gap(w, st, start, end, at);
    ctx.p2p_extras(
        w,
        st,
        gap,
        &[(s, true, sb), (r, false, rb)],
        &[(sbuf, sb), (rbuf, rb)],
        start,
        end,
        None,
        at,
    );
    st.after = vec![(Some(s), DepKind::Requires), (Some(r), DepKind::Requires)];
    if o.print {
        w.comment("Sendrecv end");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::block;
    use super::super::TraceOptions;

    const IDLE: &str = "MPI_Init:-:1000:2000:100\nMPI_Finalize:400:-\n";

    #[test]
    fn a_blocking_send_and_its_receive() {
        // Send 10 x 8 bytes at 110..115 to rank 1, tag 7 on communicator 0
        // (maketag(0, 7) = 7); the gap 100..110 us is a calc of 10000
        // (x1000), the last gap 115..400 one of 285000.
        let r0 = "MPI_Init:-:1000:2000:100\n\
                  MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115\n\
                  MPI_Finalize:400:-\n";
        let r1 = "MPI_Init:-:1000:2000:100\n\
                  MPI_Recv:120:4096:10:11,8,8:0:7:0,1,2:6000:130\n\
                  MPI_Finalize:400:-\n";
        let o = TraceOptions::default();
        assert_eq!(
            block(&[r0, r1], &o, 0),
            "l1: send 80b to 1 tag 7\nl2: calc 10000\nl1 requires l2\n\
             l3: calc 285000\nl3 requires l1\n"
        );
        assert_eq!(
            block(&[r0, r1], &o, 1),
            "l1: recv 80b from 0 tag 7\nl2: calc 20000\nl1 requires l2\n\
             l3: calc 270000\nl3 requires l1\n"
        );
    }

    #[test]
    fn a_sendrecv_is_a_send_and_a_receive_with_the_send_tag() {
        // 2 x 8 bytes to rank 1 with tag 5, 3 x 8 bytes from rank 1 (its
        // receive tag 6 is replaced by the send tag, as the reference).
        let r0 = "MPI_Init:-:1000:2000:100\n\
                  MPI_Sendrecv:110:4096:2:11,8,8:1:5:8192:3:11,8,8:1:6:0,0,2:-:120\n\
                  MPI_Finalize:400:-\n";
        assert_eq!(
            block(&[r0, IDLE], &TraceOptions::default(), 0),
            "l1: send 16b to 1 tag 5\nl2: recv 24b from 1 tag 5\nl3: calc 10000\n\
             l1 requires l3\nl2 requires l3\nl4: calc 280000\nl4 requires l1\nl4 requires l2\n"
        );
    }

    #[test]
    fn raw_tags_and_extrapolated_peers() {
        // Communicator 1: maketag(1, 7) = 1 << 24 | 7; with raw tags 7.
        // In the second copy (extrapolation 2) rank 0 is rank 2, its peer 3.
        let r0 = "MPI_Init:-:1000:2000:100\n\
                  MPI_Send:110:4096:1:11,8,8:1:7:1,0,2:115\n";
        let o = TraceOptions {
            extr: 2,
            ..TraceOptions::default()
        };
        assert!(block(&[r0, IDLE], &o, 0).starts_with("l1: send 8b to 1 tag 16777223\n"));
        assert!(block(&[r0, IDLE], &o, 2).starts_with("l1: send 8b to 3 tag 16777223\n"));
        let raw = TraceOptions {
            raw_tags: true,
            ..TraceOptions::default()
        };
        assert!(block(&[r0, IDLE], &raw, 0).starts_with("l1: send 8b to 1 tag 7\n"));
    }
}
