//! Session setup over POSIX IPC: the fabric creates the queues and the
//! control segment exclusively, the scheduler attaches; an owner guard
//! removes the names on every exit path; `cleanup` removes leftovers.

use crate::channel::Channel;
use crate::control::{ControlSegment, SEGMENT_MAGIC, SEGMENT_SIZE};
use crate::error::{ProtoError, Result};
use crate::liveness::Liveness;
use crate::mq::{pid_alive, MqTransport, Queue};
use crate::names::{Lane, SessionKey};
use crate::record::{Protocol, Role, PROTOCOL_VERSION, RECORD_SIZE};
use crate::shm::{RingGeometry, ShmTransport};
use crate::signals;
use crate::transport::Transport;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mqueue::{mq_getattr, mq_open, mq_unlink, MQ_OFlag, MqAttr};
use nix::sys::mman::{shm_open, shm_unlink};
use nix::sys::stat::{fstat, Mode};
use nix::unistd::ftruncate;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// mq_maxmsg of every queue (the limit on these machines, root included).
pub const QUEUE_DEPTH: usize = 10;
/// Largest mq_msgsize (the machine limit): 128 records.
pub const MESSAGE_SIZE: usize = 8192;
/// mq_msgsize of the queues a fabric creates by default: 16 records.
///
/// Sized for the per-user budget: Linux charges a queue
/// `maxmsg * (msgsize + 96)` bytes of RLIMIT_MSGQUEUE (819200 bytes by
/// default), so full-size queues (10 x 8192 = 82880 bytes each) allow only
/// 9 queues = 4 notify sessions. At 10 x 1024 a queue costs 11200 bytes: 36
/// notify sessions (2 queues) or 24 query sessions (3 queues) fit, at the
/// price of more, smaller messages for large batches (a batch is split
/// every 16 records; a round trip of the chain workload carries 1-2).
pub const DEFAULT_MESSAGE_SIZE: usize = 1024;
/// Bytes of RLIMIT_MSGQUEUE the kernel charges per queued message beyond
/// its payload (struct msg_msg and the priority tree node, 64-bit Linux).
pub const MQ_OVERHEAD_PER_MESSAGE: usize = 96;

/// Which IPC transport a session uses (chosen by the fabric, published in
/// the control segment at offset 64; the scheduler follows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// POSIX message queues (the thesis's transport, docs/protocol.md).
    #[default]
    Mq,
    /// Single-producer single-consumer rings in the session's shared-memory
    /// segment (crate::shm).
    Shm,
}

impl std::str::FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "mq" => Ok(TransportKind::Mq),
            "shm" => Ok(TransportKind::Shm),
            _ => Err(format!("unknown transport {s:?} (expected mq or shm)")),
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TransportKind::Mq => "mq",
            TransportKind::Shm => "shm",
        })
    }
}

/// Everything a fabric chooses when it creates a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FabricOptions {
    pub transport: TransportKind,
    /// Message queues (transport mq).
    pub queues: QueueGeometry,
    /// Rings (transport shm).
    pub rings: RingGeometry,
    /// Wire version of the session (H1): None = version 2
    /// ([`crate::record::DEFAULT_PROTOCOL_VERSION`]); Some(1) for a
    /// version-1 session (run-ahead notify, v1 peers), Some(3) for one
    /// that carries one-sided operations.
    pub version: Option<u32>,
}

impl Default for FabricOptions {
    fn default() -> Self {
        FabricOptions {
            version: None,
            transport: TransportKind::default(),
            queues: QueueGeometry::default(),
            rings: RingGeometry::default(),
        }
    }
}

/// Attributes of the queues a fabric creates. The default is 10 messages
/// of [`DEFAULT_MESSAGE_SIZE`] bytes, sized so that at least 16 sessions
/// fit the default per-user RLIMIT_MSGQUEUE. Peers read the real values
/// with mq_getattr (and from the control segment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGeometry {
    /// mq_maxmsg: 1..=10.
    pub depth: usize,
    /// mq_msgsize: a multiple of 64 in 64..=8192.
    pub message_size: usize,
}

impl Default for QueueGeometry {
    fn default() -> Self {
        QueueGeometry {
            depth: QUEUE_DEPTH,
            message_size: DEFAULT_MESSAGE_SIZE,
        }
    }
}

impl QueueGeometry {
    /// The machine's largest queues (10 x 8192): the thesis's setup.
    pub fn largest() -> QueueGeometry {
        QueueGeometry {
            depth: QUEUE_DEPTH,
            message_size: MESSAGE_SIZE,
        }
    }

    /// RLIMIT_MSGQUEUE bytes one queue of this geometry costs.
    pub fn budget_bytes(&self) -> usize {
        self.depth * (self.message_size + MQ_OVERHEAD_PER_MESSAGE)
    }

    fn validate(&self) -> Result<()> {
        if !(1..=QUEUE_DEPTH).contains(&self.depth)
            || !(RECORD_SIZE..=MESSAGE_SIZE).contains(&self.message_size)
            || !self.message_size.is_multiple_of(RECORD_SIZE)
        {
            return Err(ProtoError::Violation(format!(
                "queue geometry {self:?}: depth must be 1..={QUEUE_DEPTH}, message size a multiple of {RECORD_SIZE} up to {MESSAGE_SIZE}"
            )));
        }
        Ok(())
    }
}

/// Unlink one object name (`*.ctl` is shared memory, the rest are queues).
/// Ok(true) if it existed, Ok(false) if it did not.
pub fn unlink_name(name: &str) -> Result<bool> {
    let r = if name.ends_with(".ctl") {
        shm_unlink(name).map_err(|e| ProtoError::os("shm_unlink", name, e))
    } else {
        mq_unlink(name).map_err(|e| ProtoError::os("mq_unlink", name, e))
    };
    match r {
        Ok(()) => Ok(true),
        Err(ProtoError::Os {
            errno: Errno::ENOENT,
            ..
        }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Remove the leftovers of a (killed) run of `key`: all five possible
/// names. Missing objects are fine; returns the names that were removed.
pub fn cleanup(key: &str) -> Result<Vec<String>> {
    let key = SessionKey::new(key)?;
    let mut removed = Vec::new();
    for n in key.all_object_names() {
        if unlink_name(&n)? {
            removed.push(n);
        }
    }
    Ok(removed)
}

/// Does a queue or segment of this name exist? (Probes with mq_open /
/// shm_open: /dev/mqueue may not be mounted.)
pub fn object_exists(name: &str) -> Result<bool> {
    let r = if name.ends_with(".ctl") {
        shm_open(name, OFlag::O_RDONLY, Mode::empty()).map(drop)
    } else {
        mq_open(name, MQ_OFlag::O_RDONLY, Mode::empty(), None).map(|q| {
            let _ = nix::mqueue::mq_close(q);
        })
    };
    match r {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) => Ok(false),
        Err(e) => Err(ProtoError::os("open", name, e)),
    }
}

/// Current soft RLIMIT_MSGQUEUE in bytes (for error messages).
pub fn msgqueue_rlimit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, initialised rlimit that getrlimit only writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_MSGQUEUE, &mut r) } == 0 {
        r.rlim_cur
    } else {
        0
    }
}

static GUARD_IDS: AtomicU64 = AtomicU64::new(1);

/// Unlinks the names it is responsible for when dropped, when `unlink_now`
/// is called (fatal channel errors), or on SIGINT/SIGTERM/SIGHUP.
pub struct OwnerGuard {
    id: u64,
    names: Vec<String>,
}

impl OwnerGuard {
    pub(crate) fn new() -> OwnerGuard {
        OwnerGuard {
            id: GUARD_IDS.fetch_add(1, Ordering::Relaxed),
            names: Vec::new(),
        }
    }
    pub(crate) fn add(&mut self, name: String) {
        self.names.push(name);
        signals::register(self.id, self.names.clone());
    }
    /// Unlink everything now (idempotent).
    pub fn unlink_now(&mut self) {
        for n in &self.names {
            let _ = unlink_name(n);
        }
    }
}

impl Drop for OwnerGuard {
    fn drop(&mut self) {
        self.unlink_now();
        signals::deregister(self.id);
    }
}

fn open_queue(
    lane: Lane,
    key: &SessionKey,
    flags: MQ_OFlag,
    attr: Option<&MqAttr>,
) -> Result<Queue> {
    let name = key.queue_name(lane);
    let mqd = mq_open(
        name.as_str(),
        flags | MQ_OFlag::O_NONBLOCK,
        Mode::from_bits_truncate(0o600),
        attr,
    )
    .map_err(|e| match e {
        Errno::EEXIST => ProtoError::SessionExists {
            key: key.to_string(),
            name: name.clone(),
        },
        Errno::EMFILE => ProtoError::QueueBudget {
            name: name.clone(),
            limit: msgqueue_rlimit(),
        },
        e => ProtoError::os("mq_open", name.clone(), e),
    })?;
    let a = mq_getattr(&mqd).map_err(|e| ProtoError::os("mq_getattr", name.clone(), e))?;
    let msgsize = a.msgsize() as usize;
    if msgsize < RECORD_SIZE {
        return Err(ProtoError::Violation(format!(
            "queue {name} has mq_msgsize {msgsize}, less than one record"
        )));
    }
    Ok(Queue {
        lane,
        name,
        mqd,
        msgsize,
    })
}

/// What either side holds of a session once it is set up: the key, what
/// the fabric chose, and the objects, which the side's transport takes
/// over.
struct Parts {
    key: SessionKey,
    protocol: Protocol,
    version: u32,
    endpoints: u32,
    transport: TransportKind,
    rings: RingGeometry,
    seg: Arc<ControlSegment>,
    queues: Vec<Queue>,
    guard: OwnerGuard,
}

impl Parts {
    /// The transport of side `role`.
    fn into_transport(self, role: Role) -> Result<Box<dyn Transport>> {
        let Parts {
            protocol,
            transport,
            rings,
            seg,
            queues,
            guard,
            ..
        } = self;
        let live = Liveness::new(role, seg.clone());
        Ok(match transport {
            TransportKind::Mq => {
                let (out, inc): (Vec<Queue>, Vec<Queue>) =
                    queues.into_iter().partition(|q| q.lane.writer() == role);
                Box::new(MqTransport::new(role, out, inc, live, guard))
            }
            TransportKind::Shm => {
                Box::new(ShmTransport::new(role, protocol, seg, rings, live, guard)?)
            }
        })
    }

    /// The channel of side `role` (sends its Hello); it owns the objects
    /// from then on.
    fn connect(self, role: Role) -> Result<Channel> {
        let (protocol, version) = (self.protocol, self.version);
        let t = self.into_transport(role)?;
        Channel::with_version(t, protocol, role, version)
    }
}

/// The fabric's side of a session: owns the objects.
pub struct FabricSession {
    parts: Parts,
}

/// Create the control segment and the queues of `protocol` exclusively,
/// publish the fabric's pid and set the ready flag. Fails with
/// `SessionExists` if any object of the key exists (nothing of the other
/// run is touched); on any failure what was created is removed again.
pub fn create_fabric(key: &str, protocol: Protocol, endpoints: u32) -> Result<FabricSession> {
    create_fabric_opts(key, protocol, endpoints, &FabricOptions::default())
}

/// [`create_fabric`] over message queues with explicit queue attributes.
pub fn create_fabric_with(
    key: &str,
    protocol: Protocol,
    endpoints: u32,
    geometry: QueueGeometry,
) -> Result<FabricSession> {
    let opts = FabricOptions {
        queues: geometry,
        ..FabricOptions::default()
    };
    create_fabric_opts(key, protocol, endpoints, &opts)
}

/// [`create_fabric_with`] for a session of wire version `version` (1 or 2).
pub fn create_fabric_versioned(
    key: &str,
    protocol: Protocol,
    version: u32,
    endpoints: u32,
    geometry: QueueGeometry,
) -> Result<FabricSession> {
    let opts = FabricOptions {
        version: Some(version),
        queues: geometry,
        ..FabricOptions::default()
    };
    create_fabric_opts(key, protocol, endpoints, &opts)
}

/// [`create_fabric`] with every choice explicit (version, transport, geometry).
pub fn create_fabric_opts(
    key: &str,
    protocol: Protocol,
    endpoints: u32,
    opts: &FabricOptions,
) -> Result<FabricSession> {
    let geometry = opts.queues;
    geometry.validate()?;
    let version = opts
        .version
        .unwrap_or(crate::record::DEFAULT_PROTOCOL_VERSION);
    if !crate::record::version_supported(version) {
        return Err(ProtoError::VersionMismatch {
            ours: PROTOCOL_VERSION,
            theirs: version,
        });
    }
    opts.rings.validate()?;
    let key = SessionKey::new(key)?;
    let _creating = signals::creating();
    let mut guard = OwnerGuard::new();
    let ctl = key.segment_name();
    let fd = shm_open(
        ctl.as_str(),
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| match e {
        Errno::EEXIST => ProtoError::SessionExists {
            key: key.to_string(),
            name: ctl.clone(),
        },
        e => ProtoError::os("shm_open", ctl.clone(), e),
    })?;
    guard.add(ctl.clone());
    let len = match opts.transport {
        TransportKind::Mq => SEGMENT_SIZE,
        TransportKind::Shm => opts.rings.segment_size(protocol),
    };
    ftruncate(&fd, len as i64).map_err(|e| ProtoError::os("ftruncate", ctl.clone(), e))?;
    if opts.transport == TransportKind::Shm {
        // Reserve the pages now: touching a page of a full tmpfs later
        // would kill the process with SIGBUS instead of a clear error.
        // SAFETY: `fd` is an open descriptor owned by this function for the
        // whole call; posix_fallocate takes no pointers.
        let r = unsafe { libc::posix_fallocate(fd.as_raw_fd(), 0, len as libc::off_t) };
        if r != 0 {
            return Err(ProtoError::ShmExhausted {
                name: ctl.clone(),
                errno: Errno::from_raw(r),
            });
        }
    }
    let seg = Arc::new(ControlSegment::map_len(&fd, &ctl, len)?);
    let attr = MqAttr::new(0, geometry.depth as _, geometry.message_size as _, 0);
    let mut queues = Vec::new();
    if opts.transport == TransportKind::Shm {
        seg.set_transport(
            crate::control::TRANSPORT_SHM,
            opts.rings.slots,
            opts.rings.slot_size,
        );
    }
    for &lane in Lane::of(protocol)
        .iter()
        .filter(|_| opts.transport == TransportKind::Mq)
    {
        let q = open_queue(
            lane,
            &key,
            MQ_OFlag::O_CREAT | MQ_OFlag::O_EXCL | MQ_OFlag::O_RDWR,
            Some(&attr),
        )?;
        guard.add(q.name.clone());
        queues.push(q);
    }
    let (msg_size, depth) = match opts.transport {
        TransportKind::Mq => (geometry.message_size as u32, geometry.depth as u32),
        TransportKind::Shm => (opts.rings.slot_size, opts.rings.slots),
    };
    seg.publish(
        version,
        protocol,
        endpoints,
        std::process::id(),
        msg_size,
        depth,
    );
    Ok(FabricSession {
        parts: Parts {
            key,
            protocol,
            version,
            endpoints,
            transport: opts.transport,
            rings: opts.rings,
            seg,
            queues,
            guard,
        },
    })
}

impl FabricSession {
    /// The raw message-queue transport, without a Channel (no Hello is
    /// sent): for tests that must put arbitrary bytes on the wire. It owns
    /// the objects like a channel does.
    #[doc(hidden)]
    pub fn into_transport(self) -> Result<Box<dyn Transport>> {
        self.parts.into_transport(Role::Fabric)
    }
    /// The session's transport.
    pub fn transport(&self) -> TransportKind {
        self.parts.transport
    }
    pub fn key(&self) -> &SessionKey {
        &self.parts.key
    }
    pub fn protocol(&self) -> Protocol {
        self.parts.protocol
    }
    pub fn endpoints(&self) -> u32 {
        self.parts.endpoints
    }
    pub fn segment(&self) -> &ControlSegment {
        &self.parts.seg
    }
    /// Wait (bounded) until a scheduler has attached; returns its pid.
    pub fn wait_for_scheduler(&self, timeout: Duration) -> Result<u32> {
        self.wait_for_scheduler_watching(timeout, None)
    }
    /// [`FabricSession::wait_for_scheduler`], giving up at once with
    /// `PeerDied` when process `watch` (the scheduler to come, when the
    /// caller knows its pid, e.g. from the supervisor) is gone.
    pub fn wait_for_scheduler_watching(
        &self,
        timeout: Duration,
        watch: Option<u32>,
    ) -> Result<u32> {
        let start = Instant::now();
        let mut n = 0u64;
        loop {
            let pid = self.parts.seg.scheduler_pid();
            if pid != 0 {
                crate::transport::move_to_shared_cpu();
                return Ok(pid);
            }
            n += 1;
            if let Some(w) = watch {
                if n.is_multiple_of(10) && !pid_alive(w) {
                    return Err(ProtoError::PeerDied {
                        peer: Role::Scheduler,
                        pid: w,
                    });
                }
            }
            if start.elapsed() >= timeout {
                return Err(ProtoError::TimedOut {
                    waited: timeout,
                    what: format!("a scheduler to attach to session {}", self.parts.key),
                });
            }
            self.parts.seg.wait_scheduler(start_up_poll(n));
        }
    }
    /// The fabric's channel (sends its Hello). The channel now owns the
    /// objects: they are unlinked when it is dropped or fails. Until a
    /// scheduler attaches there is no pid to watch, so a fabric that sends
    /// more than the queues hold would wait for it without bound: call
    /// [`FabricSession::wait_for_scheduler`] first (or set a timeout).
    pub fn connect(self) -> Result<Channel> {
        self.parts.connect(Role::Fabric)
    }
}

/// The scheduler's side of a session.
pub struct SchedulerSession {
    parts: Parts,
    fabric_pid: u32,
}

/// Wait at most `timeout` for the fabric of `key` to be ready, check magic
/// and version, write our pid, learn protocol and endpoint count and open
/// the queues. From then on this side also removes the session's objects
/// when it ends (the fabric may have been killed).
pub fn open_scheduler(key: &str, timeout: Duration) -> Result<SchedulerSession> {
    open_scheduler_as(key, timeout, std::process::id())
}

/// The pause between two polls while the sides meet (the scheduler for
/// the fabric's ready flag, the fabric for the scheduler's pid): 50 us,
/// doubling up to 1 ms. The sides usually meet within a few ms of each
/// other, and every sleep past the moment the peer got ready is start-up
/// time of the run: a flat 1 ms poll cost about 1 ms per side and run.
/// Where there is a word to wait on (the scheduler's pid, the ready flag
/// of a segment that exists), the pause is a futex wait that the peer
/// ends when it writes the word, so the sides of this build meet at once;
/// the timeout only bounds the wait for a peer that does not wake (an
/// earlier build, another implementation of the protocol), and a
/// scheduler started before the fabric has created the segment still
/// polls for it.
fn start_up_poll(polls: u64) -> Duration {
    Duration::from_micros(50 << polls.min(5)).min(Duration::from_millis(1))
}

/// [`open_scheduler`] claiming the session for `pid` instead of this
/// process (conformance checker: the fabric under test then watches that
/// process, whose death the checker controls).
#[doc(hidden)]
pub fn open_scheduler_as(key: &str, timeout: Duration, pid: u32) -> Result<SchedulerSession> {
    let key = SessionKey::new(key)?;
    signals::install();
    let ctl = key.segment_name();
    let start = Instant::now();
    let mut polls = 0u64;
    let (seg, fd, seg_len) = loop {
        let mut waited = false;
        let state = match shm_open(ctl.as_str(), OFlag::O_RDWR, Mode::empty()) {
            Ok(fd) => {
                let st =
                    fstat(fd.as_raw_fd()).map_err(|e| ProtoError::os("fstat", ctl.clone(), e))?;
                if (st.st_size as usize) < SEGMENT_SIZE {
                    "exists but is not sized yet"
                } else {
                    let seg = ControlSegment::map(&fd, &ctl)?;
                    let magic = seg.magic();
                    if magic == SEGMENT_MAGIC {
                        if !crate::record::version_supported(seg.version()) {
                            return Err(ProtoError::VersionMismatch {
                                ours: PROTOCOL_VERSION,
                                theirs: seg.version(),
                            });
                        }
                        if seg.ready() {
                            break (seg, fd, st.st_size as usize);
                        }
                        // woken when the fabric marks it ready
                        seg.wait_ready(start_up_poll(polls + 1));
                        waited = true;
                        if seg.ready() {
                            break (seg, fd, st.st_size as usize);
                        }
                        "exists but is not ready"
                    } else if magic != 0 {
                        return Err(ProtoError::Violation(format!(
                            "{ctl} is not an ipc-proto control segment (magic {magic:#018x})"
                        )));
                    } else {
                        // being initialised: ready (and woken) soon
                        seg.wait_ready(start_up_poll(polls + 1));
                        waited = true;
                        "exists but is not initialised"
                    }
                }
            }
            Err(Errno::ENOENT) => "does not exist",
            Err(e) => return Err(ProtoError::os("shm_open", ctl.clone(), e)),
        };
        if start.elapsed() >= timeout {
            return Err(ProtoError::TimedOut {
                waited: timeout,
                what: format!("the fabric to make session {key} ready (segment {ctl} {state}; is the fabric running with this key?)"),
            });
        }
        polls += 1;
        if !waited {
            std::thread::sleep(start_up_poll(polls));
        }
    };
    let protocol = u8::try_from(seg.protocol_raw())
        .ok()
        .and_then(Protocol::from_u8)
        .ok_or_else(|| {
            ProtoError::Violation(format!("{ctl}: unknown protocol {}", seg.protocol_raw()))
        })?;
    if seg.record_size() as usize != RECORD_SIZE {
        return Err(ProtoError::Violation(format!(
            "{ctl}: record size {} (expected {RECORD_SIZE})",
            seg.record_size()
        )));
    }
    let (transport, rings, seg) = match seg.transport_raw() {
        crate::control::TRANSPORT_MQ => (TransportKind::Mq, RingGeometry::default(), seg),
        crate::control::TRANSPORT_SHM => {
            let (slots, slot_size) = seg.ring_geometry();
            let rings = RingGeometry { slots, slot_size };
            rings.validate()?;
            let need = rings.segment_size(protocol);
            if seg_len < need {
                return Err(ProtoError::Violation(format!(
                    "{ctl}: {seg_len} bytes, but its rings need {need}"
                )));
            }
            let full = ControlSegment::map_len(&fd, &ctl, need)?;
            (TransportKind::Shm, rings, full)
        }
        other => {
            return Err(ProtoError::Violation(format!(
                "{ctl}: unknown transport {other} (this build knows 0 = mq, 1 = shm)"
            )))
        }
    };
    drop(fd);
    let fabric_pid = seg.fabric_pid();
    if !pid_alive(fabric_pid) {
        return Err(ProtoError::PeerDied {
            peer: Role::Fabric,
            pid: fabric_pid,
        });
    }
    if let Err(other) = seg.claim_scheduler(pid) {
        return Err(ProtoError::Violation(format!(
            "session {key} already has a scheduler (pid {other})"
        )));
    }
    // Attached: from now on we share responsibility for the names.
    let mut guard = OwnerGuard::new();
    for &lane in Lane::of(protocol) {
        guard.add(key.queue_name(lane));
    }
    guard.add(ctl.clone());
    let mut queues = Vec::new();
    for &lane in Lane::of(protocol)
        .iter()
        .filter(|_| transport == TransportKind::Mq)
    {
        let flags = if lane.writer() == Role::Scheduler {
            MQ_OFlag::O_WRONLY
        } else {
            MQ_OFlag::O_RDONLY
        };
        queues.push(open_queue(lane, &key, flags, None)?);
    }
    crate::transport::move_to_shared_cpu();
    Ok(SchedulerSession {
        parts: Parts {
            key,
            protocol,
            version: seg.version(),
            endpoints: seg.endpoints(),
            transport,
            rings,
            seg: Arc::new(seg),
            queues,
            guard,
        },
        fabric_pid,
    })
}

impl SchedulerSession {
    /// The raw transport, without a Channel (see
    /// [`FabricSession::into_transport`]).
    #[doc(hidden)]
    pub fn into_transport(self) -> Result<Box<dyn Transport>> {
        self.parts.into_transport(Role::Scheduler)
    }
    /// The session's transport (the fabric chose it).
    pub fn transport(&self) -> TransportKind {
        self.parts.transport
    }
    pub fn key(&self) -> &SessionKey {
        &self.parts.key
    }
    pub fn protocol(&self) -> Protocol {
        self.parts.protocol
    }
    /// Wire version the fabric chose for the session (1 or 2).
    pub fn version(&self) -> u32 {
        self.parts.version
    }
    pub fn endpoints(&self) -> u32 {
        self.parts.endpoints
    }
    pub fn fabric_pid(&self) -> u32 {
        self.fabric_pid
    }
    pub fn segment(&self) -> &ControlSegment {
        &self.parts.seg
    }
    /// The scheduler's channel (sends its Hello).
    pub fn connect(self) -> Result<Channel> {
        self.parts.connect(Role::Scheduler)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tag: &str) -> String {
        format!("s17-{tag}-{}", std::process::id())
    }

    /// The fabric waiting for the scheduler's pid is woken when the
    /// scheduler claims the session, not at the end of its poll: a wait of
    /// 20 s ends within a few seconds (in practice microseconds). Without
    /// the wake-up it would last the whole 20 s.
    #[test]
    fn a_waiting_fabric_is_woken_when_the_scheduler_attaches() {
        let k = key("wake");
        let fab = create_fabric(&k, Protocol::Notify, 2).unwrap();
        std::thread::scope(|sc| {
            let seg = fab.segment();
            let h = sc.spawn(move || {
                let t = Instant::now();
                seg.wait_scheduler(Duration::from_secs(20));
                t.elapsed()
            });
            std::thread::sleep(Duration::from_millis(100));
            // what `open_scheduler` does to claim the session (without its
            // move to the shared CPU: that setting is read once per process,
            // and a test of transport.rs sets it in a child of this one)
            seg.claim_scheduler(std::process::id()).unwrap();
            let waited = h.join().unwrap();
            assert!(
                waited < Duration::from_secs(5),
                "woken only after {waited:?}"
            );
        });
        let _ = cleanup(&k);
    }

    /// Likewise the scheduler waiting on a segment that exists but is not
    /// ready yet is woken when the fabric publishes it.
    #[test]
    fn a_waiting_scheduler_is_woken_when_the_segment_is_ready() {
        let k = key("ready");
        let fab = create_fabric(&k, Protocol::Notify, 2).unwrap();
        let seg = fab.segment();
        // back to "not ready", as between creation and publication
        seg.atomic_u32(crate::control::offset::READY)
            .store(0, std::sync::atomic::Ordering::Release);
        std::thread::scope(|sc| {
            let h = sc.spawn(move || {
                let t = Instant::now();
                seg.wait_ready(Duration::from_secs(20));
                (t.elapsed(), seg.ready())
            });
            std::thread::sleep(Duration::from_millis(100));
            seg.publish(
                PROTOCOL_VERSION,
                Protocol::Notify,
                2,
                std::process::id(),
                seg.message_size(),
                seg.queue_depth(),
            );
            let (waited, ready) = h.join().unwrap();
            assert!(ready);
            assert!(
                waited < Duration::from_secs(5),
                "woken only after {waited:?}"
            );
        });
        drop(fab);
        let _ = cleanup(&k);
    }
}
