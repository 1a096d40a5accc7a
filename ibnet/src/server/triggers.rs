//! Version 4's triggered inserts (docs/protocol.md): arming and disarming
//! the scheduler's reaction to an arrival, and passing an instant whose
//! completions are all armed by inserting the reactions in place.

use super::{Armed, FabricServer, ServerError};
use ipc_proto::Time;

impl FabricServer {
    /// Version 4: may the completion instant `ta`, whose points are
    /// `out[from..]`, be passed? Only when every point is armed and each
    /// reaction's insert time lies below the grant this instant's batch
    /// would carry (so the scheduler would have made that insert before
    /// asking again, and no later stop can come before it). Then the
    /// reactions are inserted, in the scheduler's order (reaction instant,
    /// then seq). Either way the triggers of these points are used up.
    pub(super) fn pass_on_triggers(
        &mut self,
        ta: Time,
        from: usize,
        out: &[(u64, Time)],
    ) -> Result<bool, ServerError> {
        if self.armed.is_empty() {
            return Ok(false);
        }
        let pts = &out[from..];
        let all = self.triggers_ok && pts.iter().all(|(h, _)| self.armed.contains_key(h));
        let mut fire: Vec<(u64, u64, u64, u64, Armed)> = Vec::with_capacity(pts.len());
        for &(h, _) in pts {
            if let Some(a) = self.armed.remove(&h) {
                self.armed_rank.remove(&a.src);
                fire.push((0, a.seq, 0, h, a));
            }
        }
        if !all {
            return Ok(false);
        }
        let grant = self.lookahead().max(ta.0 + 1);
        for f in &mut fire {
            let a = f.4;
            let tproc = ta.0.max(a.not_before);
            match tproc.checked_add(a.delay) {
                Some(t_ins) if t_ins < grant => {
                    f.0 = tproc;
                    f.2 = t_ins;
                }
                _ => return Ok(false),
            }
        }
        // A reaction f that sends to a rank g reacting at this same
        // instant: g was armed as the only message in flight there. f's
        // message arrives no earlier than f's insert time plus the minimum
        // latency; g's reaction is decided (its insert made) by g's insert
        // time. Later than that, f's message could change g's reaction:
        // stop instead.
        let min_lat = self.min_latency().0;
        if fire.iter().any(|f| {
            fire.iter()
                .any(|g| g.4.src == f.4.dst && g.2 >= f.2.saturating_add(min_lat))
        }) {
            return Ok(false);
        }
        fire.sort_by_key(|f| (f.0, f.1));
        for (_, _, t_ins, h, a) in fire {
            // the destination's own armed message (still in flight) no
            // longer is the only one there: its trigger is dropped, as
            // the scheduler's insert would have disarmed it
            if let Some(h0) = self.armed_rank.remove(&a.dst) {
                self.armed.remove(&h0);
            }
            self.insert_any(a.new_handle, Time(t_ins), a.src, a.dst, a.size, 0, 0)?;
            self.fired.push((h, Time(t_ins), a.new_handle));
            self.stats.triggers_fired += 1;
        }
        self.stats.instants_passed += 1;
        Ok(true)
    }

    /// Version 4: the triggers armed on these reported points are gone.
    pub(super) fn drop_triggers(&mut self, pts: &[(u64, Time)]) {
        if self.armed.is_empty() {
            return;
        }
        for (h, _) in pts {
            if let Some(a) = self.armed.remove(h) {
                self.armed_rank.remove(&a.src);
            }
        }
    }

    /// Version 4 Trigger: arm message `handle` (in flight, not armed).
    pub(super) fn arm(&mut self, handle: u64, a: Armed) -> Result<(), ServerError> {
        if !self.by_handle.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "Trigger on handle {handle}, which is not in flight"
            )));
        }
        if self.by_handle.contains_key(&a.new_handle)
            || self.ack_handles.contains_key(&a.new_handle)
        {
            return Err(ServerError::Violation(format!(
                "Trigger on {handle} would insert handle {}, which is still in flight",
                a.new_handle
            )));
        }
        self.hca_of(a.src, "source", a.new_handle)?;
        self.hca_of(a.dst, "destination", a.new_handle)?;
        if self.armed.contains_key(&handle) {
            return Err(ServerError::Violation(format!(
                "a second Trigger on handle {handle}"
            )));
        }
        if let Some(h0) = self.armed_rank.get(&a.src) {
            return Err(ServerError::Violation(format!(
                "Trigger on handle {handle} for rank {}, which has a trigger armed already (on handle {h0})",
                a.src
            )));
        }
        self.armed.insert(handle, a);
        self.armed_rank.insert(a.src, handle);
        self.stats.triggers_armed += 1;
        Ok(())
    }

    /// Version 4 Disarm: withdraw the trigger armed on `handle`.
    pub(super) fn disarm(&mut self, handle: u64) -> Result<(), ServerError> {
        let Some(a) = self.armed.remove(&handle) else {
            return Err(ServerError::Violation(format!(
                "Disarm of handle {handle}, which has no trigger armed"
            )));
        };
        self.armed_rank.remove(&a.src);
        self.stats.triggers_disarmed += 1;
        Ok(())
    }

    /// Version 4: the triggers fired in the last wait (handle armed on,
    /// insert time, new handle), as the Fired records carry them.
    pub fn fired(&self) -> &[(u64, Time, u64)] {
        &self.fired
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ins, server_with};
    use super::*;
    use crate::params::Params;
    use ipc_proto::{Protocol, ProtocolSpec};

    fn armed(src: u32, new_handle: u64) -> Armed {
        Armed {
            not_before: 0,
            delay: 0,
            new_handle,
            size: 8,
            seq: 0,
            dst: 1,
            src,
        }
    }

    #[test]
    fn arming_rules() {
        let spec = ProtocolSpec::new(Protocol::Notify, 4);
        let mut s = server_with("H8_S1", Params::thesis_ddr(), spec, 1, None);
        s.configured = true;
        let mut out = Vec::new();
        s.handle(ins(1, 0, 0, 1, 8), &mut out).unwrap();
        let err = |r: Result<(), ServerError>| r.unwrap_err().to_string();
        assert!(err(s.arm(9, armed(1, 5))).contains("not in flight"));
        assert!(err(s.arm(1, armed(1, 1))).contains("still in flight"));
        assert!(err(s.arm(1, armed(99, 5))).contains("has no HCA"));
        s.arm(1, armed(1, 5)).unwrap();
        assert!(err(s.arm(1, armed(2, 6))).contains("a second Trigger"));
        assert!(err(s.disarm(7)).contains("no trigger armed"));
        s.disarm(1).unwrap();
        assert_eq!((s.stats.triggers_armed, s.stats.triggers_disarmed), (1, 1));
        assert!(s.fired().is_empty());
    }
}
