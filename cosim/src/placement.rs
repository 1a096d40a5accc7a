//! Where the two sides run: both on one CPU (the default) or wherever the
//! kernel puts them.
//!
//! Why one CPU: under every protocol of the co-simulation the two sides
//! alternate. The scheduler works until it has sent its inserts and its
//! horizon (notify) or its query; then the fabric works until it answers;
//! neither has anything to do while the other works (cosim-protocol.md
//! sections 2, 3, 3a). Two CPUs therefore buy no parallelism, only a
//! cross-CPU wake-up per round trip: on this kind of VM about 50 us, against
//! 7-10 us when the woken side runs on the waker's CPU (and a spinning
//! waiter on the same CPU would only steal the other side's time, so the
//! sides block at once: `IBCOSIM_SPIN_US=0` unless the user set it). One CPU
//! per session also leaves the other CPUs to the other sessions of a
//! parameter sweep. The CPU is the one the kernel placed the supervisor on
//! when it started (exec balancing picks an idle one), within the CPUs the
//! supervisor may use; `--placement free` leaves placement to the kernel.

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

/// Restrict this process (and so the sides it starts, which inherit it) to
/// one CPU. Returns the CPU, or `None` when nothing was changed.
pub fn pin_to_one_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let cur = unsafe { libc::sched_getcpu() };
    let cpu = choose(&allowed_cpus(), usize::try_from(cur).ok())?;
    // SAFETY: as above; the set holds one valid CPU index.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return None;
        }
    }
    Some(cpu)
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
    fn pinning_a_child_process_leaves_it_one_allowed_cpu() {
        // in a child, so that the test binary's other threads keep their CPUs
        match unsafe { libc::fork() } {
            0 => {
                let before = allowed_cpus();
                let got = pin_to_one_cpu();
                let after = allowed_cpus();
                let ok = if before.len() < 2 {
                    got.is_none() && after == before
                } else {
                    got.is_some() && after == vec![got.unwrap()] && before.contains(&after[0])
                };
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            pid if pid > 0 => {
                let mut st = 0;
                unsafe { libc::waitpid(pid, &mut st, 0) };
                assert!(
                    libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
                    "status {st}"
                );
            }
            _ => panic!("fork failed"),
        }
    }
}
