//! Which side failed first, from what the supervisor saw. A pure function of
//! the observations, so that every rule is unit-tested.

/// One of the two sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Scheduler,
    Fabric,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Scheduler => "scheduler (loggopsim)",
            Side::Fabric => "fabric (ibnet)",
        }
    }
    pub fn other(self) -> Side {
        match self {
            Side::Scheduler => Side::Fabric,
            Side::Fabric => Side::Scheduler,
        }
    }
}

/// What the supervisor observed once both sides ended.
#[derive(Clone, Copy, Debug)]
pub struct Observed {
    /// The side reaped first.
    pub first: Side,
    pub first_status: i32,
    pub other_status: i32,
    /// The other side did not end by itself and was killed by us.
    pub killed_other: bool,
    /// The other side was found stopped (SIGSTOP) after the first ended.
    pub other_stopped: bool,
    /// Did each side's stderr say that its *peer* failed (it only followed)?
    pub first_followed: bool,
    pub other_followed: bool,
    /// Did each side's stderr say that it received an Error record from
    /// its peer (the peer reported a failure; implies `*_followed`)?
    pub first_got_error: bool,
    pub other_got_error: bool,
}

/// How the culprit is described.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// It was found stopped.
    Stopped,
    /// It stopped responding (its peer saw no progress) and was killed.
    Unresponsive,
    /// It exited with this status.
    Status(i32),
}

/// The verdict: the culprit (None: both succeeded) and the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub culprit: Option<(Side, Why)>,
    pub status: i32,
}

fn is_signal(s: i32) -> bool {
    s > 128 && s < 160
}

/// The rules, in order: 1. a side that is stopped; 2. a side killed by a
/// signal we did not send; 3. the only side that failed; 4. of two failed
/// sides, the one that sent an Error record, when only one of them received
/// one (the sender reported the failure; the receiver only followed, and
/// whatever it hit afterwards, e.g. the sender's exit, is a consequence);
/// 5. of two failed sides, the one that does not merely report its peer's
/// failure; 6. the one that exited first. A resource-limit status (3) of either side wins
/// as the exit status, so that scripts can retry later.
// (Rules with the same outcome stay separate: each is one line of the
// documented order.)
#[allow(clippy::if_same_then_else)]
pub fn decide(o: &Observed) -> Verdict {
    let first = o.first;
    let other = first.other();
    let (fs, os) = (o.first_status, o.other_status);
    let (culprit, status) = if o.other_stopped {
        (Some(other), 1)
    } else if fs == 0 && os == 0 {
        (None, 0)
    } else if o.killed_other && fs == 0 {
        (Some(other), 1)
    } else if o.killed_other && o.first_followed {
        // the first side only reported that its peer stopped responding (a
        // hung peer, which then had to be killed)
        (Some(other), fs)
    } else if o.killed_other {
        (Some(first), fs)
    } else if is_signal(fs) && !is_signal(os) {
        (Some(first), fs)
    } else if is_signal(os) && !is_signal(fs) {
        (Some(other), os)
    } else if os == 0 {
        (Some(first), fs)
    } else if fs == 0 {
        (Some(other), os)
    } else if o.first_got_error != o.other_got_error {
        if o.first_got_error {
            (Some(other), os)
        } else {
            (Some(first), fs)
        }
    } else if o.first_followed && !o.other_followed {
        (Some(other), os)
    } else {
        (Some(first), fs)
    };
    let Some(c) = culprit else {
        return Verdict {
            culprit: None,
            status: 0,
        };
    };
    let own = if c == first { fs } else { os };
    let why = if o.other_stopped {
        Why::Stopped
    } else if o.killed_other && c == other && fs != 0 {
        Why::Unresponsive
    } else {
        Why::Status(own)
    };
    let status = if fs == 3 || os == 3 { 3 } else { status };
    Verdict {
        culprit: Some((c, why)),
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(first: Side, fs: i32, os: i32) -> Observed {
        Observed {
            first,
            first_status: fs,
            other_status: os,
            killed_other: false,
            other_stopped: false,
            first_followed: false,
            other_followed: false,
            first_got_error: false,
            other_got_error: false,
        }
    }

    #[test]
    fn the_sender_of_an_error_record_is_named_whoever_ends_first() {
        // The scheduler sent an Error record: the fabric reports it, the
        // scheduler then finds its peer gone. Both only "follow" by their
        // words; the record decides, in either order of exit.
        for first in [Side::Fabric, Side::Scheduler] {
            let mut o = obs(first, 1, 1);
            o.first_followed = true;
            o.other_followed = true;
            if first == Side::Fabric {
                o.first_got_error = true;
            } else {
                o.other_got_error = true;
            }
            let v = decide(&o);
            assert_eq!(
                v.culprit,
                Some((Side::Scheduler, Why::Status(1))),
                "{first:?}"
            );
            assert_eq!(v.status, 1);
        }
        // and the other way round
        for first in [Side::Fabric, Side::Scheduler] {
            let mut o = obs(first, 1, 1);
            o.first_followed = first == Side::Scheduler;
            o.first_got_error = first == Side::Scheduler;
            o.other_followed = first == Side::Fabric;
            o.other_got_error = first == Side::Fabric;
            assert_eq!(decide(&o).culprit.unwrap().0, Side::Fabric, "{first:?}");
        }
    }

    #[test]
    fn both_succeeded() {
        assert_eq!(
            decide(&obs(Side::Fabric, 0, 0)),
            Verdict {
                culprit: None,
                status: 0
            }
        );
    }

    #[test]
    fn a_side_killed_by_a_signal_is_named_even_when_reaped_second() {
        // kill -9 of the scheduler; the fabric noticed and exited 1 first
        let v = decide(&obs(Side::Fabric, 1, 137));
        assert_eq!(v.culprit, Some((Side::Scheduler, Why::Status(137))));
        assert_eq!(v.status, 137);
    }

    #[test]
    fn the_side_that_did_not_merely_follow_is_named() {
        let mut o = obs(Side::Scheduler, 1, 1);
        o.first_followed = true;
        let v = decide(&o);
        assert_eq!(v.culprit, Some((Side::Fabric, Why::Status(1))));
        o.first_followed = false;
        assert_eq!(decide(&o).culprit.unwrap().0, Side::Scheduler);
    }

    #[test]
    fn the_only_failed_side_is_named_and_a_resource_limit_wins() {
        let v = decide(&obs(Side::Scheduler, 0, 3));
        assert_eq!(
            v,
            Verdict {
                culprit: Some((Side::Fabric, Why::Status(3))),
                status: 3
            }
        );
        let v = decide(&obs(Side::Fabric, 3, 1));
        assert_eq!(v.culprit.unwrap().0, Side::Fabric);
        assert_eq!(v.status, 3);
    }

    #[test]
    fn stopped_and_unresponsive_sides() {
        let mut o = obs(Side::Scheduler, 1, 137);
        o.killed_other = true;
        o.other_stopped = true;
        assert_eq!(decide(&o).culprit, Some((Side::Fabric, Why::Stopped)));
        assert_eq!(decide(&o).status, 1);
        o.other_stopped = false;
        o.first_followed = true;
        let v = decide(&o);
        assert_eq!(v.culprit, Some((Side::Fabric, Why::Unresponsive)));
        assert_eq!(v.status, 1);
        // the first side finished, the other had to be killed: it failed
        let mut o = obs(Side::Fabric, 0, 143);
        o.killed_other = true;
        assert_eq!(decide(&o).culprit.unwrap().0, Side::Scheduler);
        assert_eq!(decide(&o).status, 1);
    }
}
