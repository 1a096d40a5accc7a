//! Ctrl-C / SIGTERM / SIGHUP: unlink every registered session's objects,
//! then exit with 128 + signal number (130, 143, 129).
//!
//! The handler is installed with `ctrlc` on the first session created or
//! opened in the process. `ctrlc` does not say which signal arrived, so a
//! tiny async-signal-safe handler is chained in front of ctrlc's for
//! SIGINT/SIGTERM/SIGHUP: it records the signal number in an atomic and
//! calls ctrlc's handler. If the program already installed its own ctrlc
//! handler, ours cannot be installed: that program must call
//! [`unlink_registered`] from its handler (documented in the crate docs).

use crate::session::unlink_name;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

static REGISTRY: Mutex<Option<HashMap<u64, Vec<String>>>> = Mutex::new(None);
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];
static CHAINED: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

extern "C" fn record_signal(signo: libc::c_int) {
    LAST_SIGNAL.store(signo, Ordering::SeqCst);
    for (i, s) in SIGNALS.iter().enumerate() {
        if *s as libc::c_int == signo {
            let f = CHAINED[i].load(Ordering::SeqCst);
            if f != 0 {
                // SAFETY: stored from a SigHandler::Handler of this signature.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(f) };
                f(signo);
            }
        }
    }
}

/// Whether our signal handler is active in this process.
pub fn handler_installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}

pub(crate) fn install() {
    INSTALL.call_once(|| {
        let ok = ctrlc::try_set_handler(|| {
            let sig = LAST_SIGNAL.load(Ordering::SeqCst);
            let sig = if sig == 0 { libc::SIGINT } else { sig };
            let removed = unlink_registered();
            eprintln!(
                "ipc-proto: caught signal {sig}; removed {} IPC object(s); exiting",
                removed
            );
            std::process::exit(128 + sig);
        })
        .is_ok();
        if !ok {
            return;
        }
        for (i, s) in SIGNALS.iter().enumerate() {
            let act = SigAction::new(
                SigHandler::Handler(record_signal),
                SaFlags::SA_RESTART,
                SigSet::empty(),
            );
            // SAFETY: record_signal only touches atomics and calls ctrlc's
            // async-signal-safe handler.
            if let Ok(old) = unsafe { sigaction(*s, &act) } {
                match old.handler() {
                    SigHandler::Handler(f) => CHAINED[i].store(f as usize, Ordering::SeqCst),
                    _ => {
                        // Not ctrlc's plain handler: put it back untouched.
                        let _ = unsafe { sigaction(*s, &old) };
                    }
                }
            }
        }
        INSTALLED.store(true, Ordering::SeqCst);
    });
}

/// Set the object names guard `id` is responsible for.
pub(crate) fn register(id: u64, names: Vec<String>) {
    install();
    let mut r = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    r.get_or_insert_with(HashMap::new).insert(id, names);
}

pub(crate) fn deregister(id: u64) {
    let mut r = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = r.as_mut() {
        m.remove(&id);
    }
}

/// Unlink the objects of every live session guard in this process; returns
/// how many objects were removed. For programs with their own signal
/// handler.
pub fn unlink_registered() -> usize {
    let names: Vec<String> = {
        let r = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        r.as_ref()
            .map(|m| m.values().flatten().cloned().collect())
            .unwrap_or_default()
    };
    names
        .iter()
        .filter(|n| matches!(unlink_name(n), Ok(true)))
        .count()
}
