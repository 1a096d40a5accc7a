//! Transparent huge pages for the heap of large networks.
//!
//! Why: the engine's state for a large network is spread over many small
//! allocations (per-port queues, arbiters, buffers: about 167 MB for the
//! reference's 1944-node network) that every flit hop touches in no
//! particular order, so nearly every access needs a fresh TLB entry, and a
//! page walk is dear under virtualisation. With the heap on 2 MB pages the
//! 1944-node network ran 1.16-1.31x faster (docs/scaling.md 1.3);
//! networks of a few hundred HCAs (M9: 648) and small ones (OneHot) gained
//! nothing measurable, so only networks of at least [`MIN_HCAS`] HCAs use
//! them by default. Not every large run gains: regular traffic
//! (`fattree:64` with `shift:7`) ran 6-17 % slower, paying for the huge
//! page faults without a TLB to save; `IBNET_HUGEPAGES=off` then.
//!
//! How: glibc's malloc (2.35 and later) puts its heap on transparent huge
//! pages when the tunable `glibc.malloc.hugetlb=1` is set (it advises the
//! kernel with MADV_HUGEPAGE; the system's THP mode must be `madvise`, the
//! usual default). Tunables are read once, at process start, so a large
//! run executes itself again, at once, with the tunable added to
//! `GLIBC_TUNABLES`: same pid, arguments, descriptors and environment,
//! before anything is printed or any IPC object exists. Nothing else
//! changes: results are identical (no result depends on where memory is).
//!
//! `IBNET_HUGEPAGES=auto` (default) | `on` (any size) | `off`. A user's own
//! `glibc.malloc.hugetlb` setting in `GLIBC_TUNABLES` is left alone, and
//! nothing is done when THP is `always` (already huge) or `never`, or when
//! the binary cannot be executed again (the run goes on without).

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

/// Only a binary that says so may be executed again: `ibnet` does, at the
/// top of `main`; a library user (loggopsim builds the fabric on a thread
/// of its own, in-process) does not, so that nothing restarts under it.
static ALLOWED: AtomicBool = AtomicBool::new(false);

/// Let [`use_for`] execute this binary again (call before anything else).
pub fn allow_reexec() {
    ALLOWED.store(true, Ordering::SeqCst);
}

/// The environment variable that chooses (`auto`, `on`, `off`).
pub const ENV: &str = "IBNET_HUGEPAGES";
/// Set in the re-executed process (so it does not execute itself again,
/// and says once that it runs on huge pages).
const MARK: &str = "IBNET_HUGEPAGES_ACTIVE";
/// Networks from this many HCAs on use huge pages by default.
pub const MIN_HCAS: usize = 1024;
const TUNABLE: &str = "glibc.malloc.hugetlb";

/// Should a process about to build a network of `hcas` HCAs execute itself
/// again with the tunable? `mode`: the value of [`ENV`]; `tunables`: of
/// `GLIBC_TUNABLES`; `thp`: the contents of
/// /sys/kernel/mm/transparent_hugepage/enabled (None if unreadable).
pub fn wanted(mode: Option<&str>, hcas: usize, tunables: Option<&str>, thp: Option<&str>) -> bool {
    let on = match mode.map(str::trim) {
        Some("off") | Some("0") | Some("no") => false,
        Some("on") | Some("1") | Some("yes") => true,
        _ => hcas >= MIN_HCAS,
    };
    on && !tunables.is_some_and(|t| t.contains(TUNABLE))
        && thp.is_some_and(|t| t.contains("[madvise]"))
}

/// Is this process the one re-executed for huge pages?
pub fn active() -> bool {
    std::env::var_os(MARK).is_some()
}

/// Before building a network of `hcas` HCAs: execute this binary again
/// with the heap on huge pages if [`wanted`]. Returns only if not (or if
/// the exec failed); in the re-executed process, prints `note` once.
pub fn use_for(hcas: usize, note: &str) {
    if active() {
        eprintln!("{note}: {hcas} HCAs, the heap on transparent huge pages ({ENV}=off to disable)");
        return;
    }
    if !ALLOWED.load(Ordering::SeqCst) {
        return;
    }
    let mode = std::env::var(ENV).ok();
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok();
    if !wanted(mode.as_deref(), hcas, tunables.as_deref(), thp.as_deref()) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let t = match tunables {
        Some(t) if !t.is_empty() => format!("{t}:{TUNABLE}=1"),
        _ => format!("{TUNABLE}=1"),
    };
    let mut args = std::env::args_os();
    let arg0: OsString = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    use std::os::unix::process::CommandExt;
    // exec returns only on failure: then go on with the ordinary heap
    let _ = std::process::Command::new(&exe)
        .arg0(arg0)
        .args(args)
        .env("GLIBC_TUNABLES", t)
        .env(MARK, "1")
        .exec();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_networks_only_by_default_and_never_against_the_user() {
        let m = Some("always [madvise] never\n");
        assert!(wanted(None, 1944, None, m));
        assert!(!wanted(None, 648, None, m), "below MIN_HCAS");
        assert!(wanted(Some("on"), 8, None, m));
        assert!(!wanted(Some("off"), 1944, None, m));
        assert!(wanted(
            Some("auto"),
            1024,
            Some("glibc.malloc.arena_max=2"),
            m
        ));
        assert!(
            !wanted(None, 1944, Some("glibc.malloc.hugetlb=0"), m),
            "the user's own setting wins"
        );
        assert!(!wanted(None, 1944, None, Some("[always] madvise never")));
        assert!(!wanted(None, 1944, None, Some("always madvise [never]")));
        assert!(!wanted(None, 1944, None, None));
    }
}
