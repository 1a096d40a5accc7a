//! ipc-proto: everything the scheduler (`loggopsim`) and the fabric
//! (`ibnet`) need to talk, and nothing about scheduling or networks.
//! The wire specification and the contract it implements (the rules by
//! number) are in `docs/protocol.md`.
//!
//! # API overview
//!
//! - Records: [`Record`] (`Hello`, `Insert`, `NoMoreInserts`, `Query`,
//!   `Reply`, `Arrival`, `ArrivalBatchEnd`, `Finish`, `Error`; version 2:
//!   `Config`, `ConfigAck`, `Grant`), each a
//!   64-byte little-endian layout ([`Record::encode`], [`Record::decode`],
//!   [`decode_message`]); [`PROTOCOL_VERSION`], [`Protocol`] (`Query`,
//!   `Notify`), [`ProtocolSpec`] (protocol + session version, the
//!   `--protocol` names), [`Role`] (`Scheduler`, `Fabric`), [`ErrorCode`].
//! - Endpoints: [`Channel`] (aliases [`SchedulerEnd`], [`FabricEnd`]) with
//!   `send` (buffered, up to 128 records per queue message), `flush`,
//!   `recv` (blocking; fails with [`ProtoError::PeerDied`] within ~1 s of
//!   the peer's death; optional overall timeout via `set_timeout` gives
//!   [`ProtoError::TimedOut`]), `recv_timeout`, `try_recv`.
//! - Transports: the [`Transport`] trait, shared-memory rings
//!   ([`shm::ShmTransport`]) and POSIX message queues
//!   ([`mq::MqTransport`]), both built by the session functions, and
//!   in-process crossbeam channels ([`inproc::pair`]).
//! - Sessions over POSIX IPC: [`create_fabric`] (exclusive creation of the
//!   queues and the control segment `/<key>.ctl`) -> [`FabricSession`];
//!   [`open_scheduler`] (bounded wait for readiness) -> [`SchedulerSession`];
//!   both `.connect()` into a [`Channel`]. The objects are unlinked when the
//!   channel (or session) is dropped, when it fails, and on
//!   SIGINT/SIGTERM/SIGHUP (exit status 128 + signal). [`cleanup`] removes
//!   the leftovers of a killed run.
//! - Conformance: [`conformance::run`] plays the other side of a session
//!   against a peer under test (any language) and checks the rules of
//!   docs/protocol.md scenario by scenario (`ipc-proto conformance`).
//!
//! Signals: the first session installs a signal-hook handler thread for
//! SIGINT/SIGTERM/SIGHUP (also when SIGINT was inherited as ignored, as
//! for `cmd &` in a script; SIGHUP inherited as ignored under `nohup`
//! stays ignored). A program with a non-signal-hook handler of its own must
//! call [`signals::unlink_registered`] from it.
//!
//! Transports: [`TransportKind::Mq`] (POSIX message queues, the thesis's
//! and docs/protocol.md's) or [`TransportKind::Shm`] (rings in the
//! session's shared-memory segment, [`shm`]), chosen by the fabric
//! ([`create_fabric_opts`]) and published in the control segment; the
//! scheduler follows. Liveness of the peer (pid and heartbeat):
//! [`liveness`]. Resource exhaustion (RLIMIT_MSGQUEUE, /dev/shm) is
//! [`ProtoError::is_resource_exhausted`]; binaries exit with
//! [`EXIT_RESOURCE`] (3) then.
//!
//! ```
//! use ipc_proto::{inproc, Protocol, Record, Time};
//! let (mut s, mut f) = inproc::pair(Protocol::Notify).unwrap();
//! s.send(Record::Insert { handle: 1, time: Time(5), src: 0, dst: 1, size: 8, tag: 0 }).unwrap();
//! s.send(Record::NoMoreInserts { time: Time(5), horizon: Time(u64::MAX) }).unwrap();
//! s.flush().unwrap();
//! assert!(matches!(f.recv().unwrap(), Record::Insert { handle: 1, .. }));
//! assert!(matches!(f.recv().unwrap(), Record::NoMoreInserts { .. }));
//! f.send(Record::Arrival { handle: 1, time: Time(900) }).unwrap();
//! f.send(Record::ArrivalBatchEnd { time: Time(900), count: 1, grant: Time(901) }).unwrap();
//! f.flush().unwrap(); // or any f.recv(): records stay buffered until then
//! assert_eq!(s.recv().unwrap(), Record::Arrival { handle: 1, time: Time(900) });
//! ```

pub mod channel;
pub mod conformance;
pub mod control;
pub mod error;
mod futex;
pub mod inproc;
pub mod liveness;
pub mod mq;
pub mod names;
pub mod record;
pub mod session;
pub mod shm;
pub mod signals;
pub mod time;
pub mod transport;

pub use channel::{Channel, ChannelStats, FabricEnd, PeerHello, PeerWait, SchedulerEnd};
pub use error::{ProtoError, EXIT_RESOURCE};
pub use names::{Lane, SessionKey};
pub use record::{
    decode_message, estimate_to_milli, version_supported, ErrorCode, EstimateBase, OpKind,
    Protocol, ProtocolSpec, Record, Role, DEFAULT_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION,
    PROTOCOL_VERSION, RECORD_SIZE,
};
pub use session::{
    cleanup, create_fabric, create_fabric_opts, create_fabric_versioned, create_fabric_with,
    object_exists, open_scheduler, open_scheduler_as, FabricOptions, FabricSession, QueueGeometry,
    SchedulerSession, TransportKind,
};
pub use shm::RingGeometry;
pub use time::Time;
pub use transport::Transport;
#[doc(hidden)]
pub mod selftest;
