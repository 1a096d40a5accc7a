"""ipcwire: the scheduler <-> fabric wire protocol (version 1) in plain Python.

Written from docs/protocol.md alone (struct layouts, queue and segment
names, the rules of sections 3, 5, 8 and 9), not from the Rust code: the
reference peers fabric.py and scheduler.py use it to show that the wire
format is language-neutral. Needs Python 3.8+ and posix_ipc (PyPI).

Records are namedtuples; `encode(rec)` gives the 64 bytes, `decode(b)`
checks kind, enum ranges and that every unused byte is zero (it re-encodes
the decoded record and compares), as section 4 requires of a receiver.
"""

import atexit
import collections
import mmap
import os
import select
import signal
import struct
import sys
import time

import posix_ipc

VERSION = 1
RECORD_SIZE = 64
SEGMENT_SIZE = 4096
SEGMENT_MAGIC = 0x4C5443534F434249  # b"IBCOSCTL" little-endian
U64_MAX = 0xFFFFFFFFFFFFFFFF
QUERY, NOTIFY = 0, 1
SCHEDULER, FABRIC = 0, 1
# These peers speak protocol version 1 only (docs/protocol.md: the thesis's
# run-ahead notify and polling without a Config record). The Rust tools name
# version-1 sessions notify-v1 / query-v1 (their plain query / notify are
# version 2); both spellings select version 1 here.
PROTOCOLS = {"query": QUERY, "notify": NOTIFY, "query-v1": QUERY, "notify-v1": NOTIFY}
LIVENESS_INTERVAL = 0.1  # seconds between checks of the peer's pid

# Error codes (section 7).
E_VIOLATION, E_DEADLOCK, E_VERSION, E_CONFIG, E_INTERNAL, E_ABORT = 1, 2, 3, 4, 5, 6

Hello = collections.namedtuple("Hello", "version protocol role pid")
Insert = collections.namedtuple("Insert", "handle time src dst size tag")
NoMoreInserts = collections.namedtuple("NoMoreInserts", "time")
Query = collections.namedtuple("Query", "handle time inserts_sent")
Reply = collections.namedtuple("Reply", "handle time arrived")
Arrival = collections.namedtuple("Arrival", "handle time")
ArrivalBatchEnd = collections.namedtuple("ArrivalBatchEnd", "time count")
Finish = collections.namedtuple("Finish", "time")
Error = collections.namedtuple("Error", "code detail")

# kind -> (record type, struct layout of the whole 64 bytes, kind included)
LAYOUTS = {
    1: (Hello, "<B7xIBB2xI44x"),
    2: (Insert, "<B7xQQIIQI20x"),
    3: (NoMoreInserts, "<B15xQ40x"),
    4: (Query, "<B7xQQQ32x"),
    5: (Reply, "<B7xQQB39x"),
    6: (Arrival, "<B7xQQ40x"),
    7: (ArrivalBatchEnd, "<B15xQI36x"),
    8: (Finish, "<B15xQ40x"),
    9: (Error, "<B7xI4x48s"),
}
KIND = {t: k for k, (t, _) in LAYOUTS.items()}
for _k, (_t, _f) in LAYOUTS.items():
    assert struct.calcsize(_f) == RECORD_SIZE, _t

# Which queue carries which record, by sender (section 4).
ROUTES = {
    (SCHEDULER, QUERY): {Hello: "ins", Insert: "ins", Finish: "ins", Error: "ins", Query: "qry"},
    (SCHEDULER, NOTIFY): {Hello: "ins", Insert: "ins", Finish: "ins", Error: "ins",
                          NoMoreInserts: "ins"},
    (FABRIC, QUERY): {Hello: "rep", Reply: "rep", Error: "rep"},
    (FABRIC, NOTIFY): {Hello: "arr", Arrival: "arr", ArrivalBatchEnd: "arr", Error: "arr"},
}
LANES = {QUERY: ["ins", "qry", "rep"], NOTIFY: ["ins", "arr"]}
WRITER = {"ins": SCHEDULER, "qry": SCHEDULER, "rep": FABRIC, "arr": FABRIC}


class ProtocolError(Exception):
    """The peer broke a rule (Error code 1 when reported to it)."""

    code = E_VIOLATION


class VersionError(ProtocolError):
    code = E_VERSION


class PeerDied(Exception):
    pass


class PeerError(Exception):
    """The peer sent an Error record."""

    def __init__(self, rec):
        super().__init__("the peer reports error code %d: %s" % (rec.code, error_text(rec)))
        self.record = rec


def encode(rec):
    kind = KIND[type(rec)]
    fmt = LAYOUTS[kind][1]
    if isinstance(rec, Error):
        detail = rec.detail.encode("utf-8")[:48] if isinstance(rec.detail, str) else rec.detail
        return struct.pack(fmt, kind, rec.code, detail.ljust(48, b"\0"))
    if isinstance(rec, Reply):
        return struct.pack(fmt, kind, rec.handle, rec.time, 1 if rec.arrived else 0)
    return struct.pack(fmt, kind, *rec)


def decode(b):
    """One 64-byte record; ProtocolError on anything section 4 rejects."""
    if len(b) != RECORD_SIZE:
        raise ProtocolError("record of %d bytes" % len(b))
    kind = b[0]
    if kind not in LAYOUTS:
        raise ProtocolError("unknown record kind %d" % kind)
    typ, fmt = LAYOUTS[kind]
    fields = struct.unpack(fmt, b)[1:]
    if typ is Hello and (fields[1] not in (0, 1) or fields[2] not in (0, 1)):
        raise ProtocolError("Hello with protocol %d role %d" % (fields[1], fields[2]))
    if typ is Reply:
        if fields[2] not in (0, 1):
            raise ProtocolError("Reply with arrived=%d" % fields[2])
        fields = fields[:2] + (fields[2] == 1,)
    rec = typ(*fields)
    # Every byte not covered by a field must be zero: re-encode and compare.
    if encode(rec) != bytes(b):
        raise ProtocolError("%s record with non-zero unused bytes: %s" % (typ.__name__, bytes(b).hex()))
    return rec


def decode_message(msg):
    if len(msg) == 0 or len(msg) % RECORD_SIZE:
        raise ProtocolError("queue message of %d bytes (not a non-zero multiple of 64)" % len(msg))
    return [decode(msg[i:i + RECORD_SIZE]) for i in range(0, len(msg), RECORD_SIZE)]


def error_text(rec):
    return rec.detail.rstrip(b"\0").decode("utf-8", "replace")


def pid_alive(pid):
    """kill(pid, 0) succeeds and /proc/<pid>/stat does not say zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return True


def check_key(key):
    ok = key and len(key) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    if not ok:
        raise SystemExit("error: invalid session key %r: 1 to 64 characters from [A-Za-z0-9_-]" % key)


class Segment:
    """The control segment /<key>.ctl (section 2), mapped read/write."""

    def __init__(self, shm):
        self.shm = shm
        self.map = mmap.mmap(shm.fd, SEGMENT_SIZE)
        shm.close_fd()

    def u32(self, off):
        return struct.unpack_from("<I", self.map, off)[0]

    def set_u32(self, off, v):
        struct.pack_into("<I", self.map, off, v)

    def magic(self):
        return struct.unpack_from("<Q", self.map, 0)[0]

    def publish(self, protocol, endpoints, msgsize, depth):
        """Fabric: version, then magic, then the fields, ready flag last."""
        self.set_u32(8, VERSION)
        struct.pack_into("<Q", self.map, 0, SEGMENT_MAGIC)
        self.set_u32(12, protocol)
        self.set_u32(16, endpoints)
        self.set_u32(24, os.getpid())
        self.set_u32(32, RECORD_SIZE)
        self.set_u32(36, msgsize)
        self.set_u32(40, depth)
        self.set_u32(20, 1)

    version = property(lambda s: s.u32(8))
    protocol = property(lambda s: s.u32(12))
    endpoints = property(lambda s: s.u32(16))
    ready = property(lambda s: s.u32(20) == 1)
    fabric_pid = property(lambda s: s.u32(24))
    scheduler_pid = property(lambda s: s.u32(28))
    record_size = property(lambda s: s.u32(32))


_owned = []  # object names this process must unlink at exit


def unlink_owned():
    while _owned:
        name = _owned.pop()
        try:
            if name.endswith(".ctl"):
                posix_ipc.unlink_shared_memory(name)
            else:
                posix_ipc.unlink_message_queue(name)
        except posix_ipc.ExistentialError:
            pass


def install_signal_cleanup():
    """SIGINT/SIGTERM/SIGHUP: unlink our objects, exit 128 + signal (section 9)."""

    def handler(signum, _frame):
        unlink_owned()
        os._exit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)
    atexit.register(unlink_owned)


class Endpoint:
    """One side of a session: batching per outgoing queue, Hello exchange,
    queue routing checks, liveness checks and the query protocol's
    hold-back of a Query until the Inserts it counts were read."""

    def __init__(self, role, protocol, queues, segment):
        self.role, self.protocol, self.seg = role, protocol, segment
        self.out = {l: q for l, q in queues.items() if WRITER[l] == role}
        self.inc = {l: q for l, q in queues.items() if WRITER[l] != role}
        self.out_order = [l for l in LANES[protocol] if l in self.out]
        self.in_order = [l for l in LANES[protocol] if l in self.inc]
        self.per_msg = min(q.max_message_size for q in self.out.values()) // RECORD_SIZE
        self.bufs = {l: [] for l in self.out}
        self.pending = {l: collections.deque() for l in self.inc}
        self.stash = collections.deque()  # messages read while blocked on a full queue
        self.peer_hello = None
        self.inserts_sent = 0
        self.inserts_read = 0
        self.unterminated = 0
        self.last_check = 0.0
        self.send(Hello(VERSION, protocol, role, os.getpid()))
        self.flush()

    # -- sending --------------------------------------------------------
    def send(self, rec):
        lane = ROUTES[(self.role, self.protocol)].get(type(rec))
        if lane is None:
            raise ProtocolError("the %s may not send %s" % (self.role_name(), type(rec).__name__))
        if isinstance(rec, Insert):
            self.inserts_sent += 1
        buf = self.bufs[lane]
        if len(buf) == self.per_msg:
            self._ship(lane)
        buf.append(encode(rec))

    def send_raw(self, lane, data):
        """Ship bytes as one message (used to test peers with bad records)."""
        self.flush()
        self._send_message(lane, data)

    def flush(self):
        for lane in self.out_order:  # .ins before .qry
            self._ship(lane)

    def _ship(self, lane):
        if self.bufs[lane]:
            self._send_message(lane, b"".join(self.bufs[lane]))
            self.bufs[lane] = []

    def _send_message(self, lane, data):
        q = self.out[lane]
        while True:
            try:
                q.send(data, timeout=0)
                return
            except posix_ipc.BusyError:
                pass
            # Full: keep draining what the peer sends us (section 8), so a
            # peer blocked on its own full queue progresses too.
            while True:
                m = self._try_receive()
                if m is None:
                    break
                self.stash.append(m)
            self.check_peer()
            p = select.poll()
            p.register(q.mqd, select.POLLOUT)
            p.poll(int(LIVENESS_INTERVAL * 1000))

    # -- receiving ------------------------------------------------------
    def _try_receive(self):
        for lane in self.in_order:
            try:
                data, _prio = self.inc[lane].receive(timeout=0)
                return lane, data
            except posix_ipc.BusyError:
                continue
        return None

    def check_peer(self, force=False):
        now = time.monotonic()
        if not force and now - self.last_check < LIVENESS_INTERVAL:
            return
        self.last_check = now
        pid = self.seg.fabric_pid if self.role == SCHEDULER else self.seg.scheduler_pid
        if pid != 0 and not pid_alive(pid):
            raise PeerDied("the %s (pid %d) died" % ("fabric" if self.role == SCHEDULER else "scheduler", pid))

    def _accept(self, lane, data):
        peer = 1 - self.role
        for rec in decode_message(data):
            if ROUTES[(peer, self.protocol)].get(type(rec)) != lane:
                raise ProtocolError("%s received on queue .%s: not allowed there" % (type(rec).__name__, lane))
            self.pending[lane].append(rec)

    def _next_ready(self):
        first = self.pending[self.in_order[0]]
        if self.peer_hello is None:
            if not first:
                return None
            h = first.popleft()
            if not isinstance(h, Hello):
                raise ProtocolError("expected Hello as the peer's first record, got %s" % type(h).__name__)
            if h.version != VERSION:
                raise VersionError("peer speaks protocol version %d, we speak %d" % (h.version, VERSION))
            if h.protocol != self.protocol or h.role != 1 - self.role:
                raise ProtocolError("peer's Hello says protocol %d role %d" % (h.protocol, h.role))
            self.peer_hello = h
        rec = None
        if len(self.in_order) == 2:  # fabric side of the query protocol: [ins, qry]
            qry = self.pending["qry"]
            if qry and qry[0].inserts_sent <= self.inserts_read:
                rec = qry.popleft()
            elif first:
                rec = first.popleft()
        elif first:
            rec = first.popleft()
        if isinstance(rec, Hello):
            raise ProtocolError("second Hello from the peer")
        if isinstance(rec, Insert):
            self.inserts_read += 1
        elif isinstance(rec, Arrival):
            self.unterminated += 1
        elif isinstance(rec, ArrivalBatchEnd):
            if rec.count != self.unterminated:
                raise ProtocolError("ArrivalBatchEnd count=%d but %d Arrivals preceded it"
                                    % (rec.count, self.unterminated))
            self.unterminated = 0
        return rec

    def recv(self, timeout=None):
        """Next record in protocol order (flushes first). None on timeout;
        PeerDied within ~LIVENESS_INTERVAL of the peer's death (after what
        it sent before dying was delivered)."""
        self.flush()
        start = time.monotonic()
        fds = select.poll()
        for q in self.inc.values():
            fds.register(q.mqd, select.POLLIN)
        while True:
            rec = self._next_ready()
            if rec is not None:
                return rec
            m = self.stash.popleft() if self.stash else self._try_receive()
            if m is not None:
                self._accept(*m)
                continue
            try:
                self.check_peer()
            except PeerDied:
                m = self._try_receive()
                if m is None:
                    raise
                self._accept(*m)
                continue
            wait = LIVENESS_INTERVAL
            if timeout is not None:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    return None
                wait = min(wait, left)
            fds.poll(max(1, int(wait * 1000)))

    def role_name(self):
        return "scheduler" if self.role == SCHEDULER else "fabric"


def create_fabric(key, protocol, endpoints, depth=10, msgsize=8192):
    """Section 3, fabric: exclusive creation of the segment and the queues."""
    check_key(key)
    install_signal_cleanup()
    ctl = "/%s.ctl" % key
    try:
        shm = posix_ipc.SharedMemory(ctl, posix_ipc.O_CREX, mode=0o600, size=SEGMENT_SIZE)
    except posix_ipc.ExistentialError:
        raise SystemExit("%s exists: another run uses key %s, or a killed run left it behind "
                         "(run `ipc-proto cleanup %s`)" % (ctl, key, key))
    _owned.append(ctl)
    seg = Segment(shm)
    queues = {}
    budget_wait = time.monotonic() + 20.0
    for lane in LANES[protocol]:
        name = "/%s.%s" % (key, lane)
        while True:
            try:
                queues[lane] = posix_ipc.MessageQueue(name, posix_ipc.O_CREX, mode=0o600,
                                                      max_messages=depth, max_message_size=msgsize)
                break
            except posix_ipc.ExistentialError:
                unlink_owned()
                raise SystemExit("%s exists: run `ipc-proto cleanup %s`" % (name, key))
            except OSError as e:
                # EMFILE: the per-user RLIMIT_MSGQUEUE budget (about 9 queues
                # of 10 x 8192 bytes) is held by other sessions; they may end
                # soon, so retry for a while.
                if time.monotonic() < budget_wait:
                    time.sleep(0.05)
                    continue
                unlink_owned()
                raise SystemExit("cannot create %s: %s (EMFILE: the per-user message-queue budget "
                                 "RLIMIT_MSGQUEUE is exhausted)" % (name, e))
        _owned.append(name)
    seg.publish(protocol, endpoints, msgsize, depth)
    return seg, queues


def wait_for_scheduler(seg, timeout):
    end = time.monotonic() + timeout
    while seg.scheduler_pid == 0:
        if time.monotonic() > end:
            raise SystemExit("no scheduler attached within %g s" % timeout)
        time.sleep(0.002)
    return seg.scheduler_pid


def open_scheduler(key, timeout=10.0):
    """Section 3, scheduler: bounded wait for the ready segment, checks,
    claim, open the queues. Returns (segment, protocol, queues)."""
    check_key(key)
    ctl = "/%s.ctl" % key
    end = time.monotonic() + timeout
    while True:
        state = "does not exist"
        try:
            shm = posix_ipc.SharedMemory(ctl)
            if shm.size >= SEGMENT_SIZE:
                seg = Segment(shm)
                magic = seg.magic()
                if magic == SEGMENT_MAGIC:
                    if seg.version != VERSION:
                        raise VersionError("%s: protocol version %d, we speak %d" % (ctl, seg.version, VERSION))
                    if seg.ready:
                        break
                    state = "is not ready"
                elif magic != 0:
                    raise ProtocolError("%s is not an ipc-proto control segment" % ctl)
                else:
                    state = "is not initialised"
            else:
                shm.close_fd()
                state = "is not sized yet"
        except posix_ipc.ExistentialError:
            pass
        if time.monotonic() > end:
            raise TimeoutError("fabric not ready: %s %s after %g s" % (ctl, state, timeout))
        time.sleep(0.005)
    if seg.record_size != RECORD_SIZE:
        raise ProtocolError("%s: record size %d" % (ctl, seg.record_size))
    if seg.protocol not in (QUERY, NOTIFY):
        raise ProtocolError("%s: unknown protocol %d" % (ctl, seg.protocol))
    if not pid_alive(seg.fabric_pid):
        raise PeerDied("stale segment %s: fabric pid %d is gone" % (ctl, seg.fabric_pid))
    # Python has no compare-and-swap on shared memory: claim if 0 and read
    # back (two schedulers attaching in the same microsecond could both win).
    if seg.scheduler_pid != 0:
        raise ProtocolError("session %s already has a scheduler (pid %d)" % (key, seg.scheduler_pid))
    seg.set_u32(28, os.getpid())
    if seg.scheduler_pid != os.getpid():
        raise ProtocolError("session %s was claimed by another scheduler" % key)
    install_signal_cleanup()
    queues = {}
    for lane in LANES[seg.protocol]:
        name = "/%s.%s" % (key, lane)
        _owned.append(name)
        try:
            queues[lane] = posix_ipc.MessageQueue(name, read=WRITER[lane] != SCHEDULER,
                                                  write=WRITER[lane] == SCHEDULER)
        except posix_ipc.ExistentialError:
            raise PeerDied("queue %s is gone: the fabric stopped while we attached" % name)
    _owned.append(ctl)
    return seg, seg.protocol, queues


def die(prog, msg, code=1):
    sys.stderr.write("%s: error: %s\n" % (prog, msg))
    sys.stderr.flush()
    unlink_owned()
    sys.exit(code)
