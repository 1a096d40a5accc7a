//! `signals::leave_sigint_to_program`: SIGINT stays the program's (here a
//! flag of its own), SIGTERM and SIGHUP still remove the sessions'
//! objects, and dropped sessions remove theirs. (A test binary of its own:
//! the choice is for the whole process.)

use ipc_proto::{signals, FabricOptions, Protocol, TransportKind};
use std::sync::atomic::{AtomicBool, Ordering};

static CAUGHT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    CAUGHT.store(true, Ordering::SeqCst);
}

#[test]
fn sigint_is_the_programs_and_dropped_sessions_remove_their_objects() {
    // SAFETY: a plain handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    assert!(signals::leave_sigint_to_program());
    assert!(signals::handler_installed());
    assert!(!signals::handled_signals().contains(&libc::SIGINT));
    assert!(signals::handled_signals().contains(&libc::SIGTERM));
    let key = format!("signals-left-{}", std::process::id());
    let opts = FabricOptions {
        transport: TransportKind::Shm,
        ..FabricOptions::default()
    };
    let s = ipc_proto::create_fabric_opts(&key, Protocol::Notify, 2, &opts).unwrap();
    let ctl = format!("/{key}.ctl");
    assert!(ipc_proto::object_exists(&ctl).unwrap());
    // Ctrl-C reaches the program's handler and the process goes on
    // SAFETY: raising a signal whose handler is installed above.
    unsafe {
        libc::raise(libc::SIGINT);
    }
    assert!(CAUGHT.load(Ordering::SeqCst));
    // asking again changes nothing
    assert!(signals::leave_sigint_to_program());
    drop(s);
    assert!(!ipc_proto::object_exists(&ctl).unwrap());
}
