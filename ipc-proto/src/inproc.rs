//! In-process transport: two threads of one process, crossbeam channels.
//! Messages are still encoded records, so the in-process run exercises the
//! same code as the real one and is a fair baseline for the IPC overhead.

use crate::channel::Channel;
use crate::error::{ProtoError, Result};
use crate::names::Lane;
use crate::record::{Protocol, Role};
use crate::transport::Transport;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// Same limit as a POSIX queue message, so batching behaves identically.
pub const INPROC_MESSAGE_SIZE: usize = 8192;

type Msg = (Lane, Vec<u8>);

/// One end of an in-process pair. Channels are unbounded, so a send never
/// blocks and no deadlock is possible.
pub struct InprocTransport {
    role: Role,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
}

impl InprocTransport {
    fn died(&self) -> ProtoError {
        ProtoError::PeerDied {
            peer: self.role.peer(),
            pid: std::process::id(),
        }
    }
}

impl Transport for InprocTransport {
    fn max_message_size(&self) -> usize {
        INPROC_MESSAGE_SIZE
    }
    fn send_message(&mut self, lane: Lane, msg: &[u8]) -> Result<()> {
        self.tx.send((lane, msg.to_vec())).map_err(|_| self.died())
    }
    fn recv_message(&mut self, wait: Duration) -> Result<Option<Msg>> {
        match self.rx.recv_timeout(wait) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(self.died()),
        }
    }
    fn name(&self) -> &'static str {
        "inproc"
    }
}

/// Two raw transports connected to each other (scheduler end, fabric end).
pub fn transport_pair() -> (InprocTransport, InprocTransport) {
    let (stx, frx) = unbounded();
    let (ftx, srx) = unbounded();
    (
        InprocTransport {
            role: Role::Scheduler,
            tx: stx,
            rx: srx,
        },
        InprocTransport {
            role: Role::Fabric,
            tx: ftx,
            rx: frx,
        },
    )
}

/// A connected pair of channels for two threads of one process:
/// `(scheduler end, fabric end)`. Both Hellos are already queued.
pub fn pair(protocol: Protocol) -> Result<(Channel, Channel)> {
    pair_versioned(protocol, crate::record::DEFAULT_PROTOCOL_VERSION)
}

/// [`pair`] for a session of wire version `version` (1 or 2).
pub fn pair_versioned(protocol: Protocol, version: u32) -> Result<(Channel, Channel)> {
    let (s, f) = transport_pair();
    let s = Channel::with_version(Box::new(s), protocol, Role::Scheduler, version)?;
    let f = Channel::with_version(Box::new(f), protocol, Role::Fabric, version)?;
    Ok((s, f))
}
