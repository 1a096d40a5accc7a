//! `signals::leave_to_program`: a process that handles the signals itself
//! gets no handler thread, and its sessions still remove their objects
//! when they are dropped. (A test binary of its own: the choice is for the
//! whole process.)

use ipc_proto::{signals, FabricOptions, Protocol, TransportKind};

#[test]
fn no_handler_and_dropped_sessions_remove_their_objects() {
    assert!(signals::leave_to_program());
    let key = format!("signals-left-{}", std::process::id());
    let opts = FabricOptions {
        transport: TransportKind::Shm,
        ..FabricOptions::default()
    };
    let s = ipc_proto::create_fabric_opts(&key, Protocol::Notify, 2, &opts).unwrap();
    let ctl = format!("/{key}.ctl");
    assert!(ipc_proto::object_exists(&ctl).unwrap());
    assert!(!signals::handler_installed());
    // asking again changes nothing
    assert!(signals::leave_to_program());
    drop(s);
    assert!(!ipc_proto::object_exists(&ctl).unwrap());
}
