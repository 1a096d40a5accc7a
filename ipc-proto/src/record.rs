//! The records: fixed-size (64-byte) little-endian layouts.
//!
//! Every record occupies exactly [`RECORD_SIZE`] bytes so that a C or Python
//! peer can decode a queue message by slicing it into 64-byte chunks. Byte 0
//! is the kind, bytes 1..8 are reserved (zero), fields start at offset 8 and
//! every byte not covered by a field is zero. `handle` always sits at offset
//! 8 and `time` at offset 16 when a record has them. docs/protocol.md holds
//! the same tables; the golden-bytes tests below freeze them.

use crate::error::ProtoError;
use crate::time::Time;
use std::fmt;

/// Newest version of the wire protocol (records, queues, control segment)
/// this implementation speaks. Bump on any change of a layout, a kind
/// number or a rule. Version 2 adds exact notification (the horizon in
/// NoMoreInserts, Grant, the grant in ArrivalBatchEnd) and the
/// configuration exchange (Config / ConfigAck); version 3 adds one-sided
/// operations (InsertOp, docs/rdma.md); version 4 adds triggered inserts
/// (Trigger, Disarm, Fired: fewer rounds, same results); see
/// docs/protocol.md.
pub const PROTOCOL_VERSION: u32 = 4;

/// The version of a session when nobody asks for another one (`notify`,
/// `query`): version 3 is version 2 plus InsertOp, so sessions without
/// put/get stay at version 2 and keep talking to version-2 peers.
pub const DEFAULT_PROTOCOL_VERSION: u32 = 2;

/// Oldest version this implementation still speaks (version 1: the
/// thesis's run-ahead notify and polling without a configuration record).
/// The version of a session is chosen by the fabric (control segment) and
/// checked by the scheduler and in both Hellos.
pub const MIN_PROTOCOL_VERSION: u32 = 1;

/// Is `v` a version this implementation speaks?
pub fn version_supported(v: u32) -> bool {
    (MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&v)
}

/// Size of every record on the wire, in bytes.
pub const RECORD_SIZE: usize = 64;

/// Length of the `detail` text of an [`Record::Error`] (UTF-8, NUL-padded).
pub const ERROR_DETAIL_LEN: usize = 48;

/// Which synchronisation protocol a session uses (spec sections 2 and 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Polling: Insert / Query / Reply over three queues.
    Query = 0,
    /// Notification: Insert / NoMoreInserts / Arrival over two queues.
    Notify = 1,
}

impl Protocol {
    pub fn from_u8(v: u8) -> Option<Protocol> {
        match v {
            0 => Some(Protocol::Query),
            1 => Some(Protocol::Notify),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Query => "query",
            Protocol::Notify => "notify",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A synchronisation protocol together with the wire version of the
/// session: what `--protocol` selects on every command line.
///
/// | name | protocol | version | |
/// |---|---|---|---|
/// | `query` | query | 2 | polling; q and F travel in the Config record |
/// | `notify` | notify | 2 | exact notification (docs/protocol.md rule 3a) |
/// | `notify-v1` | notify | 1 | the thesis's run-ahead notification (section 3) |
/// | `query-v1` | query | 1 | polling with version-1 peers (q and F given to both sides) |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProtocolSpec {
    pub protocol: Protocol,
    pub version: u32,
}

impl ProtocolSpec {
    pub const QUERY: ProtocolSpec = ProtocolSpec::new(Protocol::Query, 2);
    pub const NOTIFY: ProtocolSpec = ProtocolSpec::new(Protocol::Notify, 2);
    pub const NOTIFY_V1: ProtocolSpec = ProtocolSpec::new(Protocol::Notify, 1);
    pub const QUERY_V1: ProtocolSpec = ProtocolSpec::new(Protocol::Query, 1);
    /// Version 3: version 2 plus one-sided operations (docs/rdma.md).
    pub const NOTIFY_V3: ProtocolSpec = ProtocolSpec::new(Protocol::Notify, 3);
    pub const QUERY_V3: ProtocolSpec = ProtocolSpec::new(Protocol::Query, 3);
    /// Version 4: version 3 plus triggered inserts (exact notify only).
    pub const NOTIFY_V4: ProtocolSpec = ProtocolSpec::new(Protocol::Notify, 4);
    /// All four, in the order of the table above.
    pub const ALL: [ProtocolSpec; 4] = [
        ProtocolSpec::QUERY,
        ProtocolSpec::NOTIFY,
        ProtocolSpec::NOTIFY_V1,
        ProtocolSpec::QUERY_V1,
    ];
    pub const fn new(protocol: Protocol, version: u32) -> ProtocolSpec {
        ProtocolSpec { protocol, version }
    }
    /// The command-line name (`query`, `notify`, `notify-v1`, `query-v1`).
    pub fn name(self) -> String {
        if self.version == DEFAULT_PROTOCOL_VERSION {
            self.protocol.name().to_string()
        } else {
            format!("{}-v{}", self.protocol.name(), self.version)
        }
    }
    /// Exact notification (version 2 or later): horizon and grants.
    pub fn exact_notify(self) -> bool {
        self.protocol == Protocol::Notify && self.version >= 2
    }
    /// The configuration exchange (Config / ConfigAck) is part of the session.
    pub fn has_config(self) -> bool {
        self.version >= 2
    }
    /// One-sided operations (InsertOp) are part of the session (version 3).
    pub fn has_one_sided(self) -> bool {
        self.version >= 3
    }
    /// The same protocol at version 3 when this is version 2 (a session
    /// that must carry put/get); other versions unchanged.
    pub fn with_one_sided(self) -> ProtocolSpec {
        if self.version == 2 {
            ProtocolSpec::new(self.protocol, 3)
        } else {
            self
        }
    }
    /// Triggered inserts (Trigger, Disarm, Fired) are part of the session:
    /// exact notify at version 4.
    pub fn has_triggers(self) -> bool {
        self.protocol == Protocol::Notify && self.version >= 4
    }
    /// Exact notify at version 4 when this is exact notify at version 2
    /// or 3 (a session between two peers of this implementation, which
    /// both speak it); other specs unchanged.
    pub fn with_triggers(self) -> ProtocolSpec {
        if self.protocol == Protocol::Notify && (self.version == 2 || self.version == 3) {
            ProtocolSpec::NOTIFY_V4
        } else {
            self
        }
    }
}

impl fmt::Display for ProtocolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for ProtocolSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<ProtocolSpec, String> {
        match s {
            "query" | "poll" | "polling" | "query-v2" => Ok(ProtocolSpec::QUERY),
            "notify" | "notification" | "notify-v2" => Ok(ProtocolSpec::NOTIFY),
            "notify-v1" => Ok(ProtocolSpec::NOTIFY_V1),
            "query-v1" => Ok(ProtocolSpec::QUERY_V1),
            "notify-v3" => Ok(ProtocolSpec::NOTIFY_V3),
            "query-v3" => Ok(ProtocolSpec::QUERY_V3),
            "notify-v4" => Ok(ProtocolSpec::NOTIFY_V4),
            _ => Err(format!(
                "unknown protocol {s:?} (expected query, notify, notify-v1, query-v1, notify-v3, query-v3 or notify-v4)"
            )),
        }
    }
}

/// How the query protocol's arrival estimate (docs/protocol.md rule 2.5)
/// computes its base, which the factor F multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EstimateBase {
    /// The thesis's base: the fixed per-hop latencies along the route
    /// (switch traversal delays plus wire delays), no serialisation,
    /// generator or sink time.
    #[default]
    Hops = 0,
    /// A lower bound of the zero-load travel time: the per-hop latencies
    /// plus the message's serialisation on a link or in the sink,
    /// whichever is slower (ibnet's `zeroload::lower_bound`), true under
    /// any load in every preset. (The earlier base, the lone message's
    /// exact zero-load latency, is not a lower bound with the qdr preset.)
    ZeroLoad = 1,
}

impl EstimateBase {
    pub fn from_u8(v: u8) -> Option<EstimateBase> {
        match v {
            0 => Some(EstimateBase::Hops),
            1 => Some(EstimateBase::ZeroLoad),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            EstimateBase::Hops => "hops",
            EstimateBase::ZeroLoad => "zero-load",
        }
    }
}

impl fmt::Display for EstimateBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for EstimateBase {
    type Err = String;
    fn from_str(s: &str) -> Result<EstimateBase, String> {
        match s {
            "hops" | "thesis" => Ok(EstimateBase::Hops),
            "zero-load" | "zeroload" => Ok(EstimateBase::ZeroLoad),
            _ => Err(format!(
                "unknown estimate base {s:?} (expected hops or zero-load)"
            )),
        }
    }
}

/// The estimate factor F travels in thousandths (Config record): F = 1.5
/// is 1500; 0 means "no estimate". Errors for F <= 0, non-finite F, F that
/// is not a multiple of 0.001 or too large.
pub fn estimate_to_milli(f: f64) -> Result<u32, String> {
    if !(f.is_finite() && f > 0.0) {
        return Err(format!(
            "the estimate factor must be a positive number, not {f}"
        ));
    }
    let m = (f * 1000.0).round();
    if (m - f * 1000.0).abs() > 1e-6 || m < 1.0 || m > u32::MAX as f64 {
        return Err(format!(
            "the estimate factor {f} must be a multiple of 0.001 between 0.001 and 4294967"
        ));
    }
    Ok(m as u32)
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Protocol, String> {
        match s {
            "query" | "poll" | "polling" => Ok(Protocol::Query),
            "notify" | "notification" => Ok(Protocol::Notify),
            _ => Err(format!("unknown protocol {s:?} (expected query or notify)")),
        }
    }
}

/// Which side of the conversation an endpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The LogGOPS scheduler (`loggopsim`).
    Scheduler = 0,
    /// The network simulator (`ibnet`); it creates the IPC objects.
    Fabric = 1,
}

impl Role {
    pub fn from_u8(v: u8) -> Option<Role> {
        match v {
            0 => Some(Role::Scheduler),
            1 => Some(Role::Fabric),
            _ => None,
        }
    }
    pub fn peer(self) -> Role {
        match self {
            Role::Scheduler => Role::Fabric,
            Role::Fabric => Role::Scheduler,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Role::Scheduler => "scheduler",
            Role::Fabric => "fabric",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error codes carried by [`Record::Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// The peer broke a protocol rule (e.g. an insert into the fabric's past).
    Violation,
    /// The simulated system deadlocked (notify protocol, spec 3.5).
    Deadlock,
    /// Versions or protocols of the two sides do not match.
    VersionMismatch,
    /// Bad configuration detected at startup (e.g. a rank with no HCA).
    Config,
    /// Internal error of the sender; it is about to exit.
    Internal,
    /// The sender aborts the run (e.g. it was interrupted).
    Abort,
    /// A code this version does not know.
    Other(u32),
}

impl ErrorCode {
    pub fn as_u32(self) -> u32 {
        match self {
            ErrorCode::Violation => 1,
            ErrorCode::Deadlock => 2,
            ErrorCode::VersionMismatch => 3,
            ErrorCode::Config => 4,
            ErrorCode::Internal => 5,
            ErrorCode::Abort => 6,
            ErrorCode::Other(v) => v,
        }
    }
    pub fn from_u32(v: u32) -> ErrorCode {
        match v {
            1 => ErrorCode::Violation,
            2 => ErrorCode::Deadlock,
            3 => ErrorCode::VersionMismatch,
            4 => ErrorCode::Config,
            5 => ErrorCode::Internal,
            6 => ErrorCode::Abort,
            v => ErrorCode::Other(v),
        }
    }
}

/// Record kind numbers (byte 0 of every record). Kind 0 is never valid, so
/// zeroed memory is rejected.
pub mod kind {
    pub const HELLO: u8 = 1;
    pub const INSERT: u8 = 2;
    pub const NO_MORE_INSERTS: u8 = 3;
    pub const QUERY: u8 = 4;
    pub const REPLY: u8 = 5;
    pub const ARRIVAL: u8 = 6;
    pub const ARRIVAL_BATCH_END: u8 = 7;
    pub const FINISH: u8 = 8;
    pub const ERROR: u8 = 9;
    /// Version 2 only.
    pub const CONFIG: u8 = 10;
    /// Version 2 only.
    pub const CONFIG_ACK: u8 = 11;
    /// Version 2 only.
    pub const GRANT: u8 = 12;
    /// Version 3 only (one-sided operations).
    pub const INSERT_OP: u8 = 13;
    /// Version 4 only (triggered inserts).
    pub const TRIGGER: u8 = 14;
    pub const DISARM: u8 = 15;
    pub const FIRED: u8 = 16;
    /// The largest kind number of each version.
    pub const LAST_V1: u8 = ERROR;
    pub const LAST_V2: u8 = GRANT;
    pub const LAST_V3: u8 = INSERT_OP;
    pub const LAST_V4: u8 = FIRED;
}

/// The first protocol version that has record kind `k`.
pub fn kind_version(k: u8) -> u32 {
    if k <= kind::LAST_V1 {
        1
    } else if k <= kind::LAST_V2 {
        2
    } else if k <= kind::LAST_V3 {
        3
    } else {
        4
    }
}

/// A one-sided operation in an InsertOp record (offset 44).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpKind {
    /// RDMA write: data src -> dst, acknowledgement dst -> src.
    Put = 1,
    /// RDMA read: request src -> dst, response of `size` bytes dst -> src.
    Get = 2,
}

impl OpKind {
    pub fn from_u8(v: u8) -> Option<OpKind> {
        match v {
            1 => Some(OpKind::Put),
            2 => Some(OpKind::Get),
            _ => None,
        }
    }
}

/// One protocol record. See docs/protocol.md for the byte layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// First record each side sends on its first outgoing queue; checked
    /// (and consumed) by [`crate::Channel`], never returned by `recv`.
    Hello {
        version: u32,
        protocol: Protocol,
        role: Role,
        pid: u32,
    },
    /// Scheduler -> fabric: message `handle` is sent at `time`.
    Insert {
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
        tag: u32,
    },
    /// Scheduler -> fabric (notify): nothing more until an arrival.
    /// Version 2: `horizon` is the time of the scheduler's next finite
    /// event (u64::MAX when none): the fabric answers with the arrivals of
    /// the first completion instant <= horizon, or with a Grant.
    /// Version 1: `horizon` is 0 on the wire (unused).
    NoMoreInserts { time: Time, horizon: Time },
    /// Scheduler -> fabric (query): has `handle` arrived by `time`?
    /// `inserts_sent` counts every Insert the scheduler sent before it.
    Query {
        handle: u64,
        time: Time,
        inserts_sent: u64,
    },
    /// Fabric -> scheduler (query): arrival time, or the next time to ask.
    Reply {
        handle: u64,
        time: Time,
        arrived: bool,
    },
    /// Fabric -> scheduler (notify): `handle` completed at `time`.
    Arrival { handle: u64, time: Time },
    /// Fabric -> scheduler (notify): ends the batch of `count` arrivals
    /// completing at `time`. Version 2: `grant` (> time): no other
    /// message inserted so far completes before it. Version 1: 0.
    ArrivalBatchEnd { time: Time, count: u32, grant: Time },
    /// Scheduler -> fabric: last event processed at `time`; end of run.
    Finish { time: Time },
    /// Either direction: the sender failed; `detail` is NUL-padded UTF-8.
    Error {
        code: u32,
        detail: [u8; ERROR_DETAIL_LEN],
    },
    /// Version 2, scheduler -> fabric, its first record after Hello: the
    /// query protocol's precision q (ps, >= 1) and arrival estimate (factor
    /// F in thousandths, 0 = none; its base). Notify sessions send q = 1,
    /// F = 0.
    Config {
        quantum: Time,
        estimate_milli: u32,
        estimate_base: EstimateBase,
    },
    /// Version 2, fabric -> scheduler, the answer to Config: every message
    /// takes at least `min_latency` (>= 1 ps) from its insert to its
    /// arrival (the scheduler's lookahead after an insert).
    ConfigAck { min_latency: Time },
    /// Version 2, fabric -> scheduler (notify), the answer to a
    /// NoMoreInserts without arrival: no message inserted so far completes
    /// before `time` (> the horizon).
    Grant { time: Time },
    /// Version 3, scheduler -> fabric: one-sided operation `op` starts at
    /// `time`. Each completion point has its own handle and is reported
    /// (Arrival, Reply) and queried like a message under it: `handle` is
    /// the put's remote completion (data written at `dst`) or the get's
    /// completion (response written at `src`); `ack_handle` is the put's
    /// local completion (acknowledgement back at `src`), 0 for a get.
    InsertOp {
        handle: u64,
        time: Time,
        src: u32,
        dst: u32,
        size: u64,
        tag: u32,
        op: OpKind,
        ack_handle: u64,
    },
    /// Version 4, scheduler -> fabric: message `handle` (in flight to rank
    /// `src`, not yet reported) is armed. When it completes at t_a and the
    /// fabric reaches t_ins = max(t_a, `time`) + `delay` with no unarmed
    /// completion before and short of the scheduler's horizon, the fabric
    /// itself inserts message `new_handle` (`src` -> `dst`, `size` bytes)
    /// at t_ins, exactly as the scheduler would have, and goes on instead
    /// of stopping at t_a. `seq` orders the triggers firing at one instant
    /// (by max(t_a, time), then seq). docs/protocol.md, "Triggered inserts".
    Trigger {
        handle: u64,
        time: Time,
        delay: u64,
        new_handle: u64,
        size: u64,
        seq: u64,
        dst: u32,
        src: u32,
    },
    /// Version 4, scheduler -> fabric: the Trigger armed on `handle` is
    /// withdrawn (the scheduler is about to change that rank's state).
    Disarm { handle: u64 },
    /// Version 4, fabric -> scheduler, inside an arrival batch: the Trigger
    /// armed on `handle` fired; message `new_handle` was inserted at `time`.
    Fired {
        handle: u64,
        time: Time,
        new_handle: u64,
    },
}

impl Record {
    /// An Error record; `detail` is truncated (at a char boundary) to 48 bytes.
    pub fn error(code: ErrorCode, detail: &str) -> Record {
        let mut buf = [0u8; ERROR_DETAIL_LEN];
        let mut end = detail.len().min(ERROR_DETAIL_LEN);
        while !detail.is_char_boundary(end) {
            end -= 1;
        }
        buf[..end].copy_from_slice(&detail.as_bytes()[..end]);
        Record::Error {
            code: code.as_u32(),
            detail: buf,
        }
    }

    /// The detail text of an Error record (up to the first NUL), lossy UTF-8.
    pub fn error_detail(&self) -> Option<String> {
        match self {
            Record::Error { detail, .. } => {
                let n = detail.iter().position(|&b| b == 0).unwrap_or(detail.len());
                Some(String::from_utf8_lossy(&detail[..n]).into_owned())
            }
            _ => None,
        }
    }

    pub fn kind(&self) -> u8 {
        match self {
            Record::Hello { .. } => kind::HELLO,
            Record::Insert { .. } => kind::INSERT,
            Record::NoMoreInserts { .. } => kind::NO_MORE_INSERTS,
            Record::Query { .. } => kind::QUERY,
            Record::Reply { .. } => kind::REPLY,
            Record::Arrival { .. } => kind::ARRIVAL,
            Record::ArrivalBatchEnd { .. } => kind::ARRIVAL_BATCH_END,
            Record::Finish { .. } => kind::FINISH,
            Record::Error { .. } => kind::ERROR,
            Record::Config { .. } => kind::CONFIG,
            Record::ConfigAck { .. } => kind::CONFIG_ACK,
            Record::Grant { .. } => kind::GRANT,
            Record::InsertOp { .. } => kind::INSERT_OP,
            Record::Trigger { .. } => kind::TRIGGER,
            Record::Disarm { .. } => kind::DISARM,
            Record::Fired { .. } => kind::FIRED,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind())
    }

    /// Encode into exactly 64 bytes.
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        self.encode_into(&mut b);
        b
    }

    /// Encode into `b` (all 64 bytes written): the channel encodes straight
    /// into its outgoing buffer, without a 64-byte copy per record.
    #[inline]
    pub fn encode_into(&self, b: &mut [u8; RECORD_SIZE]) {
        *b = [0u8; RECORD_SIZE];
        b[0] = self.kind();
        match *self {
            Record::Hello {
                version,
                protocol,
                role,
                pid,
            } => {
                put_u32(b, 8, version);
                b[12] = protocol as u8;
                b[13] = role as u8;
                put_u32(b, 16, pid);
            }
            Record::Insert {
                handle,
                time,
                src,
                dst,
                size,
                tag,
            } => put_insert(b, handle, time, src, dst, size, tag),
            Record::InsertOp {
                handle,
                time,
                src,
                dst,
                size,
                tag,
                op,
                ack_handle,
            } => {
                put_insert(b, handle, time, src, dst, size, tag);
                b[44] = op as u8;
                put_u64(b, 48, ack_handle);
            }
            Record::NoMoreInserts { time, horizon } => {
                put_u64(b, 16, time.0);
                put_u64(b, 24, horizon.0);
            }
            Record::Finish { time } | Record::Grant { time } => {
                put_u64(b, 16, time.0);
            }
            Record::ConfigAck { min_latency } => {
                put_u64(b, 16, min_latency.0);
            }
            Record::Config {
                quantum,
                estimate_milli,
                estimate_base,
            } => {
                put_u64(b, 8, quantum.0);
                put_u32(b, 16, estimate_milli);
                b[20] = estimate_base as u8;
            }
            Record::Query {
                handle,
                time,
                inserts_sent,
            } => {
                put_u64(b, 8, handle);
                put_u64(b, 16, time.0);
                put_u64(b, 24, inserts_sent);
            }
            Record::Reply {
                handle,
                time,
                arrived,
            } => {
                put_u64(b, 8, handle);
                put_u64(b, 16, time.0);
                b[24] = arrived as u8;
            }
            Record::Arrival { handle, time } => {
                put_u64(b, 8, handle);
                put_u64(b, 16, time.0);
            }
            Record::ArrivalBatchEnd { time, count, grant } => {
                put_u64(b, 16, time.0);
                put_u32(b, 24, count);
                put_u64(b, 32, grant.0);
            }
            Record::Error { code, detail } => {
                put_u32(b, 8, code);
                b[16..16 + ERROR_DETAIL_LEN].copy_from_slice(&detail);
            }
            Record::Trigger {
                handle,
                time,
                delay,
                new_handle,
                size,
                seq,
                dst,
                src,
            } => {
                put_u64(b, 8, handle);
                put_u64(b, 16, time.0);
                put_u64(b, 24, delay);
                put_u64(b, 32, new_handle);
                put_u64(b, 40, size);
                put_u64(b, 48, seq);
                put_u32(b, 56, dst);
                put_u32(b, 60, src);
            }
            Record::Disarm { handle } => put_u64(b, 8, handle),
            Record::Fired {
                handle,
                time,
                new_handle,
            } => {
                put_u64(b, 8, handle);
                put_u64(b, 16, time.0);
                put_u64(b, 24, new_handle);
            }
        }
    }

    /// Decode one 64-byte record. Unknown kinds, invalid enum values and
    /// non-zero reserved bytes are protocol violations (a layout drift must
    /// not go unnoticed).
    pub fn decode(b: &[u8]) -> Result<Record, ProtoError> {
        if b.len() != RECORD_SIZE {
            return Err(ProtoError::Violation(format!(
                "record of {} bytes (must be {RECORD_SIZE})",
                b.len()
            )));
        }
        let handle = get_u64(b, 8);
        let time = Time(get_u64(b, 16));
        let rec = match b[0] {
            kind::HELLO => Record::Hello {
                version: get_u32(b, 8),
                protocol: Protocol::from_u8(b[12]).ok_or_else(|| {
                    ProtoError::Violation(format!("Hello with unknown protocol {}", b[12]))
                })?,
                role: Role::from_u8(b[13]).ok_or_else(|| {
                    ProtoError::Violation(format!("Hello with unknown role {}", b[13]))
                })?,
                pid: get_u32(b, 16),
            },
            kind::INSERT => Record::Insert {
                handle,
                time,
                src: get_u32(b, 24),
                dst: get_u32(b, 28),
                size: get_u64(b, 32),
                tag: get_u32(b, 40),
            },
            kind::INSERT_OP => {
                let op = OpKind::from_u8(b[44]).ok_or_else(|| {
                    ProtoError::Violation(format!(
                        "InsertOp with unknown operation {} (1 put, 2 get)",
                        b[44]
                    ))
                })?;
                let ack_handle = get_u64(b, 48);
                if op == OpKind::Get && ack_handle != 0 {
                    return Err(ProtoError::Violation(
                        "InsertOp of a get with a non-zero ack_handle".into(),
                    ));
                }
                if op == OpKind::Put && ack_handle == handle {
                    return Err(ProtoError::Violation(format!(
                        "InsertOp of a put with ack_handle = handle = {handle} (each point needs its own handle)"
                    )));
                }
                Record::InsertOp {
                    handle,
                    time,
                    src: get_u32(b, 24),
                    dst: get_u32(b, 28),
                    size: get_u64(b, 32),
                    tag: get_u32(b, 40),
                    op,
                    ack_handle,
                }
            }
            kind::NO_MORE_INSERTS => Record::NoMoreInserts {
                time,
                horizon: Time(get_u64(b, 24)),
            },
            kind::QUERY => Record::Query {
                handle,
                time,
                inserts_sent: get_u64(b, 24),
            },
            kind::REPLY => Record::Reply {
                handle,
                time,
                arrived: match b[24] {
                    0 => false,
                    1 => true,
                    v => {
                        return Err(ProtoError::Violation(format!(
                            "Reply with arrived={v} (must be 0 or 1)"
                        )))
                    }
                },
            },
            kind::ARRIVAL => Record::Arrival { handle, time },
            kind::ARRIVAL_BATCH_END => Record::ArrivalBatchEnd {
                time,
                count: get_u32(b, 24),
                grant: Time(get_u64(b, 32)),
            },
            kind::CONFIG => Record::Config {
                quantum: Time(get_u64(b, 8)),
                estimate_milli: get_u32(b, 16),
                estimate_base: EstimateBase::from_u8(b[20]).ok_or_else(|| {
                    ProtoError::Violation(format!("Config with unknown estimate base {}", b[20]))
                })?,
            },
            kind::CONFIG_ACK => Record::ConfigAck { min_latency: time },
            kind::GRANT => Record::Grant { time },
            kind::TRIGGER => Record::Trigger {
                handle,
                time,
                delay: get_u64(b, 24),
                new_handle: get_u64(b, 32),
                size: get_u64(b, 40),
                seq: get_u64(b, 48),
                dst: get_u32(b, 56),
                src: get_u32(b, 60),
            },
            kind::DISARM => Record::Disarm { handle },
            kind::FIRED => Record::Fired {
                handle,
                time,
                new_handle: get_u64(b, 24),
            },
            kind::FINISH => Record::Finish { time },
            kind::ERROR => {
                let mut detail = [0u8; ERROR_DETAIL_LEN];
                detail.copy_from_slice(&b[16..16 + ERROR_DETAIL_LEN]);
                Record::Error {
                    code: get_u32(b, 8),
                    detail,
                }
            }
            k => {
                return Err(ProtoError::Violation(format!("unknown record kind {k}")));
            }
        };
        // Every byte outside the fields must be zero: re-encoding must
        // reproduce the input exactly.
        // (One slice comparison, a memcmp; the offset is searched only for
        // the error message: a byte-by-byte search on every record was 40%
        // of the decoding cost.)
        let mut again = [0u8; RECORD_SIZE];
        rec.encode_into(&mut again);
        if again[..] == b[..] {
            return Ok(rec);
        }
        if let Some(off) = (0..RECORD_SIZE).find(|&i| again[i] != b[i]) {
            return Err(ProtoError::Violation(format!(
                "{} record has non-zero reserved byte at offset {off}",
                rec.kind_name()
            )));
        }
        Ok(rec)
    }
}

pub fn kind_name(k: u8) -> &'static str {
    match k {
        kind::HELLO => "Hello",
        kind::INSERT => "Insert",
        kind::NO_MORE_INSERTS => "NoMoreInserts",
        kind::QUERY => "Query",
        kind::REPLY => "Reply",
        kind::ARRIVAL => "Arrival",
        kind::ARRIVAL_BATCH_END => "ArrivalBatchEnd",
        kind::FINISH => "Finish",
        kind::ERROR => "Error",
        kind::CONFIG => "Config",
        kind::CONFIG_ACK => "ConfigAck",
        kind::GRANT => "Grant",
        kind::INSERT_OP => "InsertOp",
        kind::TRIGGER => "Trigger",
        kind::DISARM => "Disarm",
        kind::FIRED => "Fired",
        _ => "unknown",
    }
}

/// Decode a queue message holding any number (>= 1) of records back to back.
pub fn decode_message(msg: &[u8], out: &mut impl Extend<Record>) -> Result<usize, ProtoError> {
    if msg.is_empty() || !msg.len().is_multiple_of(RECORD_SIZE) {
        return Err(ProtoError::Violation(format!(
            "message of {} bytes is not a non-zero multiple of {RECORD_SIZE}",
            msg.len()
        )));
    }
    let mut n = 0;
    for chunk in msg.chunks_exact(RECORD_SIZE) {
        out.extend(std::iter::once(Record::decode(chunk)?));
        n += 1;
    }
    Ok(n)
}

/// The fields an Insert and an InsertOp share, at the same offsets.
fn put_insert(b: &mut [u8], handle: u64, time: Time, src: u32, dst: u32, size: u64, tag: u32) {
    put_u64(b, 8, handle);
    put_u64(b, 16, time.0);
    put_u32(b, 24, src);
    put_u32(b, 28, dst);
    put_u64(b, 32, size);
    put_u32(b, 40, tag);
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hex of the non-zero prefix, to keep the golden strings readable:
    /// the full 64 bytes are compared, the rest must be zero.
    fn golden(rec: Record, hex_prefix: &str) {
        let bytes = rec.encode();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut want = hex_prefix.replace(' ', "");
        while want.len() < RECORD_SIZE * 2 {
            want.push('0');
        }
        assert_eq!(hex, want, "layout of {rec:?} changed");
        assert_eq!(Record::decode(&bytes).unwrap(), rec);
    }

    #[test]
    fn golden_hello() {
        golden(
            Record::Hello {
                version: 1,
                protocol: Protocol::Notify,
                role: Role::Fabric,
                pid: 0x0102_0304,
            },
            "01000000 00000000 01000000 01010000 04030201",
        );
    }

    #[test]
    fn golden_insert() {
        golden(
            Record::Insert {
                handle: 0x1122_3344_5566_7788,
                time: Time(1_000_000),
                src: 3,
                dst: 0xA0B0C0D0,
                size: 65536,
                tag: 42,
            },
            "02000000 00000000 8877665544332211 40420f0000000000 03000000 d0c0b0a0 0000010000000000 2a000000",
        );
    }

    /// Version 4: Trigger (14), Disarm (15), Fired (16).
    #[test]
    fn golden_triggers() {
        golden(
            Record::Trigger {
                handle: 0x1122_3344_5566_7788,
                time: Time(1_000_000),
                delay: 1500,
                new_handle: 9,
                size: 65536,
                seq: 0x0102,
                dst: 0xA0B0C0D0,
                src: 3,
            },
            "0e000000 00000000 8877665544332211 40420f0000000000 dc05000000000000 0900000000000000 0000010000000000 0201000000000000 d0c0b0a0 03000000",
        );
        golden(
            Record::Disarm { handle: 7 },
            "0f000000 00000000 0700000000000000",
        );
        golden(
            Record::Fired {
                handle: 7,
                time: Time(1_000_000),
                new_handle: 9,
            },
            "10000000 00000000 0700000000000000 40420f0000000000 0900000000000000",
        );
        assert_eq!(kind_version(kind::TRIGGER), 4);
        assert_eq!(kind_version(kind::FIRED), 4);
        assert_eq!(kind_version(kind::INSERT_OP), 3);
    }

    /// Version 3: InsertOp (kind 13), op at 44, ack_handle at 48.
    #[test]
    fn golden_insert_op() {
        golden(
            Record::InsertOp {
                handle: 0x1122_3344_5566_7788,
                time: Time(1_000_000),
                src: 3,
                dst: 0xA0B0C0D0,
                size: 65536,
                tag: 42,
                op: OpKind::Put,
                ack_handle: 9,
            },
            "0d000000 00000000 8877665544332211 40420f0000000000 03000000 d0c0b0a0 0000010000000000 2a000000 01000000 0900000000000000",
        );
        golden(
            Record::InsertOp {
                handle: 5,
                time: Time(7),
                src: 0,
                dst: 1,
                size: 8,
                tag: 0,
                op: OpKind::Get,
                ack_handle: 0,
            },
            "0d000000 00000000 0500000000000000 0700000000000000 00000000 01000000 0800000000000000 00000000 02",
        );
        // a get with an ack handle, an unknown op, a put whose two points
        // share a handle: violations
        let mut b = Record::InsertOp {
            handle: 5,
            time: Time(7),
            src: 0,
            dst: 1,
            size: 8,
            tag: 0,
            op: OpKind::Get,
            ack_handle: 0,
        }
        .encode();
        b[48] = 1;
        assert!(Record::decode(&b).is_err());
        b[48] = 0;
        b[44] = 3;
        assert!(Record::decode(&b).is_err());
        b[44] = 1;
        b[48] = 5;
        assert!(Record::decode(&b).is_err());
    }

    #[test]
    fn golden_no_more_inserts_finish() {
        golden(
            Record::NoMoreInserts {
                time: Time(u64::MAX),
                horizon: Time(0),
            },
            "03000000 00000000 0000000000000000 ffffffffffffffff",
        );
        // version 2: the horizon at offset 24
        golden(
            Record::NoMoreInserts {
                time: Time(0x10),
                horizon: Time(u64::MAX),
            },
            "03000000 00000000 0000000000000000 1000000000000000 ffffffffffffffff",
        );
        golden(
            Record::Finish { time: Time(258) },
            "08000000 00000000 0000000000000000 0201000000000000",
        );
    }

    #[test]
    fn golden_query_reply() {
        golden(
            Record::Query {
                handle: 7,
                time: Time(0x10),
                inserts_sent: 9,
            },
            "04000000 00000000 0700000000000000 1000000000000000 0900000000000000",
        );
        golden(
            Record::Reply {
                handle: 7,
                time: Time(0x20),
                arrived: true,
            },
            "05000000 00000000 0700000000000000 2000000000000000 01",
        );
    }

    #[test]
    fn golden_arrival_and_batch_end() {
        golden(
            Record::Arrival {
                handle: 1,
                time: Time(2),
            },
            "06000000 00000000 0100000000000000 0200000000000000",
        );
        golden(
            Record::ArrivalBatchEnd {
                time: Time(2),
                count: 5,
                grant: Time(0),
            },
            "07000000 00000000 0000000000000000 0200000000000000 05000000",
        );
        // version 2: the grant at offset 32
        golden(
            Record::ArrivalBatchEnd {
                time: Time(2),
                count: 5,
                grant: Time(0x0304),
            },
            "07000000 00000000 0000000000000000 0200000000000000 05000000 00000000 0403000000000000",
        );
    }

    #[test]
    fn golden_version_2_records() {
        golden(
            Record::Config {
                quantum: Time(1000),
                estimate_milli: 2500,
                estimate_base: EstimateBase::Hops,
            },
            "0a000000 00000000 e803000000000000 c4090000",
        );
        golden(
            Record::ConfigAck {
                min_latency: Time(0x0102),
            },
            "0b000000 00000000 0000000000000000 0201000000000000",
        );
        golden(
            Record::Grant { time: Time(7) },
            "0c000000 00000000 0000000000000000 0700000000000000",
        );
        assert_eq!(kind_version(kind::ERROR), 1);
        assert_eq!(kind_version(kind::CONFIG), 2);
        assert_eq!(kind_version(kind::GRANT), 2);
        let mut b = Record::Config {
            quantum: Time(1),
            estimate_milli: 0,
            estimate_base: EstimateBase::Hops,
        }
        .encode();
        b[20] = 2;
        assert!(Record::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("unknown estimate base 2"));
        assert_eq!(
            Record::decode(
                &Record::Config {
                    quantum: Time(1),
                    estimate_milli: 1000,
                    estimate_base: EstimateBase::ZeroLoad,
                }
                .encode()
            )
            .unwrap(),
            Record::Config {
                quantum: Time(1),
                estimate_milli: 1000,
                estimate_base: EstimateBase::ZeroLoad,
            }
        );
    }

    #[test]
    fn protocol_names() {
        for (name, spec) in [
            ("query", ProtocolSpec::QUERY),
            ("notify", ProtocolSpec::NOTIFY),
            ("notify-v1", ProtocolSpec::NOTIFY_V1),
            ("query-v1", ProtocolSpec::QUERY_V1),
            ("notify-v3", ProtocolSpec::NOTIFY_V3),
            ("query-v3", ProtocolSpec::QUERY_V3),
            ("notify-v4", ProtocolSpec::NOTIFY_V4),
        ] {
            assert_eq!(name.parse::<ProtocolSpec>().unwrap(), spec);
            assert_eq!(spec.name(), name);
        }
        assert!(ProtocolSpec::NOTIFY.exact_notify());
        assert!(!ProtocolSpec::NOTIFY_V1.exact_notify());
        assert!(!ProtocolSpec::QUERY.exact_notify());
        assert!("notify-v5".parse::<ProtocolSpec>().is_err());
        assert!("query-v4".parse::<ProtocolSpec>().is_err());
        assert!(ProtocolSpec::NOTIFY_V4.has_triggers() && ProtocolSpec::NOTIFY_V4.has_one_sided());
        assert!(!ProtocolSpec::NOTIFY_V3.has_triggers());
        assert_eq!(
            ProtocolSpec::NOTIFY.with_triggers(),
            ProtocolSpec::NOTIFY_V4
        );
        assert_eq!(
            ProtocolSpec::NOTIFY_V3.with_triggers(),
            ProtocolSpec::NOTIFY_V4
        );
        assert_eq!(
            ProtocolSpec::NOTIFY_V1.with_triggers(),
            ProtocolSpec::NOTIFY_V1
        );
        assert_eq!(ProtocolSpec::QUERY.with_triggers(), ProtocolSpec::QUERY);
        assert!(ProtocolSpec::NOTIFY_V3.exact_notify() && ProtocolSpec::NOTIFY_V3.has_one_sided());
        assert!(!ProtocolSpec::NOTIFY.has_one_sided());
        assert_eq!(ProtocolSpec::QUERY.with_one_sided(), ProtocolSpec::QUERY_V3);
        assert_eq!(
            ProtocolSpec::NOTIFY_V1.with_one_sided(),
            ProtocolSpec::NOTIFY_V1
        );
        assert_eq!(estimate_to_milli(1.0), Ok(1000));
        assert_eq!(estimate_to_milli(2.5), Ok(2500));
        assert!(estimate_to_milli(0.0).is_err());
        assert!(estimate_to_milli(1.0001).is_err());
        assert!(estimate_to_milli(f64::NAN).is_err());
    }

    #[test]
    fn golden_error() {
        let rec = Record::error(ErrorCode::Deadlock, "AB");
        golden(rec, "09000000 00000000 02000000 00000000 4142");
        assert_eq!(rec.error_detail().unwrap(), "AB");
        // Truncation at a char boundary: 47 ASCII bytes + a 2-byte char.
        let long = format!("{}é", "x".repeat(47));
        let rec = Record::error(ErrorCode::Violation, &long);
        assert_eq!(rec.error_detail().unwrap(), "x".repeat(47));
    }

    #[test]
    fn constants_frozen() {
        assert_eq!(PROTOCOL_VERSION, 4);
        assert_eq!(DEFAULT_PROTOCOL_VERSION, 2);
        assert_eq!(MIN_PROTOCOL_VERSION, 1);
        assert!(version_supported(1) && version_supported(2) && version_supported(3));
        assert!(version_supported(4));
        assert!(!version_supported(0) && !version_supported(5));
        assert_eq!(kind::INSERT_OP, 13);
        assert_eq!(kind_version(kind::GRANT), 2);
        assert_eq!(kind_version(kind::INSERT_OP), 3);
        assert_eq!(RECORD_SIZE, 64);
        assert_eq!(ErrorCode::Abort.as_u32(), 6);
        assert_eq!(ErrorCode::from_u32(2), ErrorCode::Deadlock);
        assert_eq!(ErrorCode::from_u32(77), ErrorCode::Other(77));
    }

    #[test]
    fn decode_rejects_garbage() {
        let mut b = Record::Arrival {
            handle: 1,
            time: Time(2),
        }
        .encode();
        b[40] = 1;
        let e = Record::decode(&b).unwrap_err().to_string();
        assert!(e.contains("offset 40"), "{e}");
        assert!(Record::decode(&[0u8; 64])
            .unwrap_err()
            .to_string()
            .contains("kind 0"));
        assert!(Record::decode(&[0u8; 63]).is_err());
        let mut r = Record::Reply {
            handle: 1,
            time: Time(1),
            arrived: false,
        }
        .encode();
        r[24] = 2;
        assert!(Record::decode(&r)
            .unwrap_err()
            .to_string()
            .contains("arrived=2"));
        let mut out = Vec::new();
        assert!(decode_message(&[], &mut out).is_err());
        assert!(decode_message(&[0u8; 65], &mut out).is_err());
    }

    fn arb_record() -> impl Strategy<Value = Record> {
        let t = any::<u64>().prop_map(Time);
        prop_oneof![
            (
                any::<u64>(),
                t.clone(),
                any::<u32>(),
                any::<u32>(),
                any::<u64>(),
                any::<u32>()
            )
                .prop_map(|(handle, time, src, dst, size, tag)| Record::Insert {
                    handle,
                    time,
                    src,
                    dst,
                    size,
                    tag
                }),
            (t.clone(), t.clone())
                .prop_map(|(time, horizon)| Record::NoMoreInserts { time, horizon }),
            (any::<u64>(), t.clone(), any::<u64>()).prop_map(|(handle, time, inserts_sent)| {
                Record::Query {
                    handle,
                    time,
                    inserts_sent,
                }
            }),
            (any::<u64>(), t.clone(), any::<bool>()).prop_map(|(handle, time, arrived)| {
                Record::Reply {
                    handle,
                    time,
                    arrived,
                }
            }),
            (any::<u64>(), t.clone()).prop_map(|(handle, time)| Record::Arrival { handle, time }),
            (
                any::<u64>(),
                t.clone(),
                any::<u32>(),
                any::<u32>(),
                any::<u64>(),
                any::<u32>(),
                any::<u64>()
            )
                .prop_map(|(handle, time, src, dst, size, tag, ack)| {
                    let put = ack % 2 == 0;
                    Record::InsertOp {
                        handle,
                        time,
                        src,
                        dst,
                        size,
                        tag,
                        op: if put { OpKind::Put } else { OpKind::Get },
                        ack_handle: if put { handle.wrapping_add(1) } else { 0 },
                    }
                }),
            (t.clone(), any::<u32>(), t.clone())
                .prop_map(|(time, count, grant)| Record::ArrivalBatchEnd { time, count, grant }),
            t.clone().prop_map(|time| Record::Finish { time }),
            t.clone().prop_map(|time| Record::Grant { time }),
            t.clone()
                .prop_map(|min_latency| Record::ConfigAck { min_latency }),
            (t, any::<u32>()).prop_map(|(quantum, estimate_milli)| {
                Record::Config {
                    quantum,
                    estimate_milli,
                    estimate_base: EstimateBase::Hops,
                }
            }),
            (any::<u32>(), "[a-z ]{0,60}")
                .prop_map(|(c, s)| Record::error(ErrorCode::from_u32(c), &s)),
            (
                (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
                (any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>())
            )
                .prop_map(
                    |((handle, time, delay, new_handle), (size, seq, dst, src))| {
                        Record::Trigger {
                            handle,
                            time: Time(time),
                            delay,
                            new_handle,
                            size,
                            seq,
                            dst,
                            src,
                        }
                    }
                ),
            any::<u64>().prop_map(|handle| Record::Disarm { handle }),
            (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(handle, time, new_handle)| {
                Record::Fired {
                    handle,
                    time: Time(time),
                    new_handle,
                }
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn encode_decode_roundtrip(recs in proptest::collection::vec(arb_record(), 1..200)) {
            let mut msg = Vec::new();
            for r in &recs {
                msg.extend_from_slice(&r.encode());
            }
            let mut out = Vec::new();
            let n = decode_message(&msg, &mut out).unwrap();
            prop_assert_eq!(n, recs.len());
            prop_assert_eq!(out, recs);
        }

        /// Fuzz: random bytes never panic the decoder; anything it accepts
        /// re-encodes to exactly the input (so no byte is ignored).
        #[test]
        fn decoder_fuzz_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut out = Vec::new();
            match decode_message(&bytes, &mut out) {
                Ok(n) => {
                    prop_assert_eq!(n * RECORD_SIZE, bytes.len());
                    let again: Vec<u8> = out.iter().flat_map(|r| r.encode()).collect();
                    prop_assert_eq!(again, bytes);
                }
                Err(e) => prop_assert!(matches!(e, ProtoError::Violation(_)), "{e}"),
            }
        }

        /// Fuzz: valid records with one random byte changed (the mutations
        /// a real peer's bug produces) give a record or a clean Violation.
        #[test]
        fn decoder_fuzz_mutated_records(rec in arb_record(), pos in 0usize..RECORD_SIZE, val in any::<u8>()) {
            let mut b = rec.encode();
            b[pos] = val;
            match Record::decode(&b) {
                Ok(r) => prop_assert_eq!(r.encode(), b),
                Err(e) => prop_assert!(matches!(e, ProtoError::Violation(_)), "{e}"),
            }
        }
    }
}

#[cfg(test)]
mod doc_agreement {
    //! docs/protocol.md must name every kind with its number, the magic and
    //! the version exactly as the code does.
    use super::*;

    const DOC: &str = include_str!("../../docs/protocol.md");

    #[test]
    fn protocol_md_matches_the_code() {
        for k in 1..=kind::LAST_V3 {
            let row = format!("| {k} | {} |", kind_name(k));
            assert!(DOC.contains(&row), "docs/protocol.md lacks {row:?}");
        }
        let magic = format!("{:#018x}", crate::control::SEGMENT_MAGIC);
        assert_eq!(magic, "0x4c5443534f434249");
        assert!(DOC.contains(&format!("`{magic}`")));
        assert!(DOC.contains(&format!("version {PROTOCOL_VERSION}")));
        for (code, name) in [(1, "protocol violation"), (2, "deadlock"), (6, "abort")] {
            assert!(DOC.contains(&format!("| {code} | {name}")), "code {code}");
        }
        for (name, off) in [
            ("version", crate::control::offset::VERSION),
            ("ready flag", crate::control::offset::READY),
            ("fabric process id", crate::control::offset::FABRIC_PID),
            (
                "scheduler process id",
                crate::control::offset::SCHEDULER_PID,
            ),
            (
                "`mq_maxmsg` of every queue",
                crate::control::offset::QUEUE_DEPTH,
            ),
        ] {
            let row = DOC
                .lines()
                .find(|l| l.starts_with(&format!("| {off} |")))
                .unwrap_or_else(|| panic!("no segment row at offset {off}"));
            assert!(row.contains(name), "offset {off}: {row}");
        }
    }
}
