//! Session setup over POSIX IPC: the fabric creates the queues and the
//! control segment exclusively, the scheduler attaches; an owner guard
//! removes the names on every exit path; `cleanup` removes leftovers.

use crate::channel::Channel;
use crate::control::{ControlSegment, SEGMENT_MAGIC, SEGMENT_SIZE};
use crate::error::{ProtoError, Result};
use crate::mq::{pid_alive, MqTransport, Queue};
use crate::names::{Lane, SessionKey};
use crate::record::{Protocol, Role, PROTOCOL_VERSION, RECORD_SIZE};
use crate::signals;
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
/// mq_msgsize of every queue: 128 records.
pub const MESSAGE_SIZE: usize = 8192;

/// Attributes of the queues a fabric creates. The defaults are the
/// machine limits (10 messages of 8192 bytes); smaller queues cost less of
/// the per-user RLIMIT_MSGQUEUE budget. Peers read the real values with
/// mq_getattr (and from the control segment).
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
            message_size: MESSAGE_SIZE,
        }
    }
}

impl QueueGeometry {
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

/// The fabric's side of a session: owns the objects.
pub struct FabricSession {
    key: SessionKey,
    protocol: Protocol,
    endpoints: u32,
    seg: Arc<ControlSegment>,
    queues: Vec<Queue>,
    guard: OwnerGuard,
}

/// Create the control segment and the queues of `protocol` exclusively,
/// publish the fabric's pid and set the ready flag. Fails with
/// `SessionExists` if any object of the key exists (nothing of the other
/// run is touched); on any failure what was created is removed again.
pub fn create_fabric(key: &str, protocol: Protocol, endpoints: u32) -> Result<FabricSession> {
    create_fabric_with(key, protocol, endpoints, QueueGeometry::default())
}

/// [`create_fabric`] with explicit queue attributes.
pub fn create_fabric_with(
    key: &str,
    protocol: Protocol,
    endpoints: u32,
    geometry: QueueGeometry,
) -> Result<FabricSession> {
    geometry.validate()?;
    let key = SessionKey::new(key)?;
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
    ftruncate(&fd, SEGMENT_SIZE as i64).map_err(|e| ProtoError::os("ftruncate", ctl.clone(), e))?;
    let seg = Arc::new(ControlSegment::map(&fd, &ctl)?);
    let attr = MqAttr::new(0, geometry.depth as _, geometry.message_size as _, 0);
    let mut queues = Vec::new();
    for &lane in Lane::of(protocol) {
        let q = open_queue(
            lane,
            &key,
            MQ_OFlag::O_CREAT | MQ_OFlag::O_EXCL | MQ_OFlag::O_RDWR,
            Some(&attr),
        )?;
        guard.add(q.name.clone());
        queues.push(q);
    }
    seg.publish(
        PROTOCOL_VERSION,
        protocol,
        endpoints,
        std::process::id(),
        geometry.message_size as u32,
        geometry.depth as u32,
    );
    Ok(FabricSession {
        key,
        protocol,
        endpoints,
        seg,
        queues,
        guard,
    })
}

impl FabricSession {
    /// The raw message-queue transport, without a Channel (no Hello is
    /// sent): for tests that must put arbitrary bytes on the wire. It owns
    /// the objects like a channel does.
    #[doc(hidden)]
    pub fn into_transport(self) -> MqTransport {
        let (out, inc): (Vec<Queue>, Vec<Queue>) = self
            .queues
            .into_iter()
            .partition(|q| q.lane.writer() == Role::Fabric);
        MqTransport::new(Role::Fabric, out, inc, self.seg, self.guard)
    }
    pub fn key(&self) -> &SessionKey {
        &self.key
    }
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    pub fn endpoints(&self) -> u32 {
        self.endpoints
    }
    pub fn segment(&self) -> &ControlSegment {
        &self.seg
    }
    /// Wait (bounded) until a scheduler has attached; returns its pid.
    pub fn wait_for_scheduler(&self, timeout: Duration) -> Result<u32> {
        let start = Instant::now();
        loop {
            let pid = self.seg.scheduler_pid();
            if pid != 0 {
                return Ok(pid);
            }
            if start.elapsed() >= timeout {
                return Err(ProtoError::TimedOut {
                    waited: timeout,
                    what: format!("a scheduler to attach to session {}", self.key),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    /// The fabric's channel (sends its Hello). The channel now owns the
    /// objects: they are unlinked when it is dropped or fails. Until a
    /// scheduler attaches there is no pid to watch, so a fabric that sends
    /// more than the queues hold would wait for it without bound: call
    /// [`FabricSession::wait_for_scheduler`] first (or set a timeout).
    pub fn connect(self) -> Result<Channel> {
        let (out, inc): (Vec<Queue>, Vec<Queue>) = self
            .queues
            .into_iter()
            .partition(|q| q.lane.writer() == Role::Fabric);
        let t = MqTransport::new(Role::Fabric, out, inc, self.seg, self.guard);
        Channel::new(Box::new(t), self.protocol, Role::Fabric)
    }
}

/// The scheduler's side of a session.
pub struct SchedulerSession {
    key: SessionKey,
    protocol: Protocol,
    endpoints: u32,
    fabric_pid: u32,
    seg: Arc<ControlSegment>,
    queues: Vec<Queue>,
    guard: OwnerGuard,
}

/// Wait at most `timeout` for the fabric of `key` to be ready, check magic
/// and version, write our pid, learn protocol and endpoint count and open
/// the queues. From then on this side also removes the session's objects
/// when it ends (the fabric may have been killed).
pub fn open_scheduler(key: &str, timeout: Duration) -> Result<SchedulerSession> {
    open_scheduler_as(key, timeout, std::process::id())
}

/// [`open_scheduler`] claiming the session for `pid` instead of this
/// process (conformance checker: the fabric under test then watches that
/// process, whose death the checker controls).
#[doc(hidden)]
pub fn open_scheduler_as(key: &str, timeout: Duration, pid: u32) -> Result<SchedulerSession> {
    let key = SessionKey::new(key)?;
    let ctl = key.segment_name();
    let start = Instant::now();
    let seg = loop {
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
                        if seg.version() != PROTOCOL_VERSION {
                            return Err(ProtoError::VersionMismatch {
                                ours: PROTOCOL_VERSION,
                                theirs: seg.version(),
                            });
                        }
                        if seg.ready() {
                            break seg;
                        }
                        "exists but is not ready"
                    } else if magic != 0 {
                        return Err(ProtoError::Violation(format!(
                            "{ctl} is not an ipc-proto control segment (magic {magic:#018x})"
                        )));
                    } else {
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
        std::thread::sleep(Duration::from_millis(5));
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
    for &lane in Lane::of(protocol) {
        let flags = if lane.writer() == Role::Scheduler {
            MQ_OFlag::O_WRONLY
        } else {
            MQ_OFlag::O_RDONLY
        };
        queues.push(open_queue(lane, &key, flags, None)?);
    }
    Ok(SchedulerSession {
        key,
        protocol,
        endpoints: seg.endpoints(),
        fabric_pid,
        seg: Arc::new(seg),
        queues,
        guard,
    })
}

impl SchedulerSession {
    /// The raw transport, without a Channel (see
    /// [`FabricSession::into_transport`]).
    #[doc(hidden)]
    pub fn into_transport(self) -> MqTransport {
        let (out, inc): (Vec<Queue>, Vec<Queue>) = self
            .queues
            .into_iter()
            .partition(|q| q.lane.writer() == Role::Scheduler);
        MqTransport::new(Role::Scheduler, out, inc, self.seg, self.guard)
    }
    pub fn key(&self) -> &SessionKey {
        &self.key
    }
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    pub fn endpoints(&self) -> u32 {
        self.endpoints
    }
    pub fn fabric_pid(&self) -> u32 {
        self.fabric_pid
    }
    pub fn segment(&self) -> &ControlSegment {
        &self.seg
    }
    /// The scheduler's channel (sends its Hello).
    pub fn connect(self) -> Result<Channel> {
        let (out, inc): (Vec<Queue>, Vec<Queue>) = self
            .queues
            .into_iter()
            .partition(|q| q.lane.writer() == Role::Scheduler);
        let t = MqTransport::new(Role::Scheduler, out, inc, self.seg, self.guard);
        Channel::new(Box::new(t), self.protocol, Role::Scheduler)
    }
}
