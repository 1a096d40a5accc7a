//! SIGINT / SIGTERM / SIGHUP: unlink every registered session's objects,
//! then exit with 128 + signal number (130, 143, 129).
//!
//! Installed (with `signal-hook`, on a dedicated thread) on the first
//! session created or opened in the process, whatever the inherited
//! dispositions: a process started with `&` from a script inherits SIGINT
//! as *ignored*, and still cleans up on SIGINT, SIGTERM and SIGHUP. The one
//! exception is SIGHUP inherited as ignored (`nohup`): surviving a hang-up
//! is what the user asked for, so it stays ignored (the objects are removed
//! when the run ends, or on SIGINT/SIGTERM). Handlers that the program
//! installed itself with signal-hook keep running (signal-hook chains
//! them); a program with another kind of handler must call
//! [`unlink_registered`] from it.

use crate::session::unlink_name;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

static REGISTRY: Mutex<Option<HashMap<u64, Vec<String>>>> = Mutex::new(None);
/// Held while a session's objects are created and registered, so that a
/// signal arriving between the creation of an object and its registration
/// waits for the registration instead of missing the object.
static CREATING: Mutex<()> = Mutex::new(());

/// Install the handler now and hold off its clean-up until the returned
/// guard is dropped (wrap object creation + registration in it).
pub(crate) fn creating() -> std::sync::MutexGuard<'static, ()> {
    install();
    CREATING.lock().unwrap_or_else(|e| e.into_inner())
}
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether our signal handling is active in this process.
pub fn handler_installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}

/// Is `sig` currently ignored (SIG_IGN) in this process?
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: a query (null new action) of the current disposition.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// SIGINT is the program's ([`leave_sigint_to_program`]).
static SIGINT_LEFT: AtomicBool = AtomicBool::new(false);

/// The signals we handle: INT (unless left to the program), TERM, and HUP
/// unless inherited as ignored.
pub fn handled_signals() -> Vec<libc::c_int> {
    let mut v = vec![SIGTERM];
    if !SIGINT_LEFT.load(Ordering::SeqCst) {
        v.insert(0, SIGINT);
    }
    if !ignored(SIGHUP) {
        v.push(SIGHUP);
    }
    v
}

/// Under the supervisor (scripts/cosim exports IBCOSIM_SUPERVISOR_PID=$$):
/// ask the kernel for SIGTERM when the supervisor dies, even by SIGKILL,
/// so that this side cleans up instead of running on as an orphan.
fn follow_supervisor() {
    let sup = match std::env::var("IBCOSIM_SUPERVISOR_PID")
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
    {
        Some(p) => p,
        None => return,
    };
    // SAFETY: plain system calls without pointers.
    unsafe {
        if libc::getppid() == sup {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            // The supervisor may have died just before the prctl.
            if libc::getppid() != sup {
                libc::raise(libc::SIGTERM);
            }
        }
    }
}

pub(crate) fn install() {
    INSTALL.call_once(|| {
        let mut signals = match Signals::new(handled_signals()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ipc-proto: warning: cannot install the signal handler ({e}); IPC objects may be left behind on SIGINT/SIGTERM/SIGHUP (remove them with `ipc-proto cleanup KEY`)");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("ipc-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let _c = CREATING.lock().unwrap_or_else(|e| e.into_inner());
                    let removed = unlink_registered();
                    // Not eprintln!: when the supervisor was killed, stderr
                    // may be a pipe nobody reads any more, and a panic here
                    // would leave this side running.
                    let _ = writeln!(
                        std::io::stderr(),
                        "ipc-proto: caught signal {sig}; removed {removed} IPC object(s); exiting"
                    );
                    std::process::exit(128 + sig);
                }
            });
        if spawned.is_ok() {
            INSTALLED.store(true, Ordering::SeqCst);
            follow_supervisor();
        }
    });
}

/// For a program that handles SIGINT itself and ends its sessions by
/// dropping them, which unlinks their objects (an interpreter that embeds
/// the library: the Python package turns Ctrl-C into KeyboardInterrupt and
/// unwinds the run): the handler is installed now for SIGTERM and SIGHUP
/// only, so that Ctrl-C no longer exits the process. Returns false when
/// the handler had been installed for SIGINT already (by an earlier
/// session).
pub fn leave_sigint_to_program() -> bool {
    if !INSTALL.is_completed() {
        SIGINT_LEFT.store(true, Ordering::SeqCst);
    }
    install();
    SIGINT_LEFT.load(Ordering::SeqCst)
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
