//! The calibration methods of the thesis applied to point-to-point calls
//! and waits (docs/calibration.md): pinning calcs (calibration 1) and call
//! durations minus the link-layer time (calibration 3). Calibration 4 is
//! in `sync.rs`.

use std::path::Path;

use super::gaps::{Ctx, RankState};
use crate::calib::linkmodel::LinkLayer;
use crate::goal::{GoalWriter, Label};

impl Ctx<'_> {
    /// Link-layer time of the given (is_send, size) operations, in schedule
    /// units.
    pub(super) fn link_units(&self, ops: &[(bool, i32)]) -> u64 {
        let Some(m) = self.o.durations else { return 0 };
        if m == LinkLayer::None {
            return 0;
        }
        let ps: u64 = ops
            .iter()
            .map(|&(send, size)| {
                let b = size.max(0) as u64;
                if send {
                    m.send_time_ps(b)
                } else {
                    m.recv_time_ps(b)
                }
            })
            .sum();
        // ps -> trace us -> schedule units.
        (ps as f64 * 1e-6 * self.o.timemult).round() as u64
    }

    /// Writes the calibration calcs of a p2p call after its gap calc:
    /// pinning (new buffer bytes) and the call's duration minus link time.
    /// Each calc requires the one before (the first the gap), and the call's
    /// operations require the last, as in the thesis's ringtest schedule.
    /// With `split_us` (synchronised p2p) the duration is cut where the
    /// operation happens: a calc of `split_us` before the operation and the
    /// rest (minus link time) after it; the label of that last calc is
    /// returned, the rank continues from it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn p2p_extras(
        &mut self,
        w: &mut GoalWriter,
        st: &mut RankState,
        gap: Label,
        ops: &[(Label, bool, i32)],
        buffers: &[(u64, i32)],
        start: f64,
        end: f64,
        split_us: Option<f64>,
        at: (&Path, usize),
    ) -> Option<Label> {
        let mut chain: Vec<Label> = Vec::new();
        if let Some(pm) = self.o.pinning {
            let new: u64 = buffers
                .iter()
                .map(|&(a, len)| st.pins.insert(a, len.max(0) as u64))
                .sum();
            if new > 0 {
                let u = self.units(pm.delay_us(new), at.0, at.1);
                chain.push(w.calc_cpu(u, self.o.cpu));
            }
        }
        let mut post = None;
        if self.o.durations.is_some() {
            let d = self.units(end - start, at.0, at.1);
            let link = self.link_units(&ops.iter().map(|&(_, s, z)| (s, z)).collect::<Vec<_>>());
            match split_us {
                None => chain.push(w.calc_cpu(d.saturating_sub(link), self.o.cpu)),
                Some(pre_us) => {
                    let pre = self.units(pre_us, at.0, at.1).min(d);
                    let rest = d - pre;
                    // The link time is taken from the part after the
                    // operation first (the transfer happens there).
                    let after = rest.saturating_sub(link);
                    let pre = pre.saturating_sub(link.saturating_sub(rest));
                    chain.push(w.calc_cpu(pre, self.o.cpu));
                    post = Some(after);
                }
            }
        }
        if let Some(&last) = chain.last() {
            for &(op, _, _) in ops {
                w.requires(op, last);
            }
            let mut prev = gap;
            for &c in &chain {
                w.requires(c, prev);
                prev = c;
            }
        }
        post.map(|after| {
            let c = w.calc_cpu(after, self.o.cpu);
            for &(op, _, _) in ops {
                w.requires(c, op);
            }
            c
        })
    }
}

/// The calc standing for a Wait/Waitall: `calc 0`, or the call's duration
/// with the durations method (as in the thesis's ringtest schedule).
pub(super) fn wait_calc(
    w: &mut GoalWriter,
    ctx: &mut Ctx,
    start: f64,
    end: f64,
    at: (&Path, usize),
) -> Label {
    if ctx.o.durations.is_some() {
        let d = ctx.units(end - start, at.0, at.1);
        w.calc_cpu(d, ctx.o.cpu)
    } else {
        w.calc_plain(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::block;
    use super::super::TraceOptions;
    use super::*;

    const IDLE: &str = "MPI_Init:-:1000:2000:100\nMPI_Finalize:400:-\n";
    const SEND: &str = "MPI_Init:-:1000:2000:100\n\
                        MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115\n\
                        MPI_Finalize:400:-\n";

    #[test]
    fn durations_put_the_call_time_before_its_operation() {
        // Calibration 3 with no link layer: the call's 5 us follow the gap
        // and precede the send.
        let o = TraceOptions {
            durations: Some(LinkLayer::None),
            ..TraceOptions::default()
        };
        assert_eq!(
            block(&[SEND, IDLE], &o, 0),
            "l1: send 80b to 1 tag 7\nl2: calc 10000\nl1 requires l2\n\
             l3: calc 5000\nl1 requires l3\nl3 requires l2\n\
             l4: calc 285000\nl4 requires l1\n"
        );
    }

    #[test]
    fn pinning_charges_new_buffer_bytes_once() {
        let o = TraceOptions {
            pinning: Some(crate::calib::pinning::PinningModel::default()),
            ..TraceOptions::default()
        };
        let twice = "MPI_Init:-:1000:2000:100\n\
                     MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115\n\
                     MPI_Send:120:4096:10:11,8,8:1:7:0,0,2:125\n\
                     MPI_Finalize:400:-\n";
        let b = block(&[twice, IDLE], &o, 0);
        // the first send gets a pinning calc (l3, required by the send),
        // the second (same buffer) none
        assert!(
            b.starts_with("l1: send 80b to 1 tag 7\nl2: calc 10000\nl1 requires l2\nl3: calc "),
            "{b}"
        );
        assert!(b.contains("l1 requires l3\nl3 requires l2\nl4: send 80b to 1 tag 7\nl5: calc 5000\nl4 requires l5\nl5 requires l1\n"), "{b}");
    }

    #[test]
    fn no_link_time_without_durations_or_link_layer() {
        let plain = TraceOptions::default();
        let ctx = Ctx {
            o: &plain,
            warnings: Vec::new(),
            err: None,
            use_cpu: false,
        };
        assert_eq!(ctx.link_units(&[(true, 1 << 20)]), 0);
        let none = TraceOptions {
            durations: Some(LinkLayer::None),
            ..TraceOptions::default()
        };
        let ctx = Ctx { o: &none, ..ctx };
        assert_eq!(ctx.link_units(&[(true, 1 << 20)]), 0);
    }
}
