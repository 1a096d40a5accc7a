//! Where the two sides run: both on one CPU (the default) or wherever the
//! kernel puts them.
//!
//! Why one CPU: under every protocol of the co-simulation the two sides
//! alternate. The scheduler works until it has sent its inserts and its
//! horizon (notify) or its query; then the fabric works until it answers;
//! neither has anything to do while the other works (docs/protocol.md
//! sections 2, 3, 3a). Two CPUs therefore buy no parallelism, only a
//! cross-CPU wake-up per round trip: on this kind of VM about 50 us, against
//! 7-10 us when the woken side runs on the waker's CPU (and a spinning
//! waiter on the same CPU would only steal the other side's time, so the
//! sides block at once: `IBCOSIM_SPIN_US=0` unless the user set it). One CPU
//! per session also leaves the other CPUs to the other sessions of a
//! parameter sweep. The CPU is the one the kernel placed the supervisor on
//! when it started (exec balancing picks an idle one), within the CPUs the
//! supervisor may use; each side moves there once the two have met (until
//! then they work independently: the fabric builds its topology while the
//! scheduler reads its schedule, on two CPUs when there are two).
//! `--placement free` leaves placement to the kernel.

/// The CPU both sides should share, given the CPUs this process may use
/// and the one it runs on; `None` when there is no choice to make (one CPU
/// allowed) or nothing is known.
pub fn choose(allowed: &[usize], current: Option<usize>) -> Option<usize> {
    if allowed.len() < 2 {
        return None;
    }
    match current {
        Some(c) if allowed.contains(&c) => Some(c),
        _ => Some(allowed[0]),
    }
}

/// The CPUs this process may use (sched_getaffinity).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The CPU both sides will share: the one the kernel placed the
/// supervisor on (within the CPUs it may use), or `None` when there is
/// nothing to choose. The supervisor itself is not restricted: it passes
/// the CPU to the sides (`IBCOSIM_PIN_CPU`), which move there once they
/// have met (`ipc_proto::transport::move_to_shared_cpu`), so their
/// start-up work runs in parallel.
pub fn shared_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let cur = unsafe { libc::sched_getcpu() };
    choose(&allowed_cpus(), usize::try_from(cur).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_cpu_is_kept_when_allowed() {
        assert_eq!(choose(&[0, 1, 2, 3], Some(2)), Some(2));
        assert_eq!(
            choose(&[1, 3], Some(0)),
            Some(1),
            "not allowed: the first allowed"
        );
        assert_eq!(choose(&[1, 3], None), Some(1));
        assert_eq!(choose(&[5], Some(5)), None, "one CPU: nothing to choose");
        assert_eq!(choose(&[], Some(0)), None);
    }

    #[test]
    fn the_shared_cpu_is_an_allowed_one() {
        let allowed = allowed_cpus();
        match shared_cpu() {
            Some(c) => assert!(
                allowed.len() >= 2 && allowed.contains(&c),
                "{c} of {allowed:?}"
            ),
            None => assert!(allowed.len() < 2, "{allowed:?}"),
        }
    }
}
