#!/usr/bin/env python3
"""fabric.py: a reference fabric written from docs/protocol.md alone.

Every message arrives `--latency` ps plus `size * --gap` ps after its
insert time: arrival = t_insert + Lfix + size * Gfix (no contention, no
ordering between messages). Both protocols:

- query: a Query at t' is answered with the arrival time if it is <= t',
  else "not yet" with t' + q (--quantum); with --estimate F the first query
  of a message is answered max(t' + q, t_insert + F * (Lfix + size * Gfix)),
  so F = 1 promises the exact arrival and one more query collects it.
- notify: on NoMoreInserts, every message with the smallest arrival time
  is reported (insert order), then ArrivalBatchEnd.

The fabric's clock is the last query time (query) or the last reported
arrival time (notify); an Insert, Query or NoMoreInserts before it is a
protocol violation, reported with Error{code=1} (exit 1). NoMoreInserts
with nothing in flight is a deadlock: Error{code=2} (exit 1). After Finish
it prints one summary line and exits 0.

Usage: fabric.py --key KEY [--protocol query|notify|query-v1|notify-v1] (all version 1) [--latency PS]
                 [--gap PS_PER_BYTE] [--quantum PS] [--estimate F]
                 [--endpoints N] [--log-arrivals FILE]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ipcwire as w  # noqa: E402

PROG = "fabric.py"


class Violation(Exception):
    def __init__(self, code, text):
        super().__init__(text)
        self.code = code


def serve(ep, a, log):
    inflight = {}  # handle -> (arrival, insert time, size, order)
    order = 0
    clock = 0
    stats = {"inserts": 0, "queries": 0, "batches": 0}
    while True:
        rec = ep.recv()
        if isinstance(rec, w.Insert):
            if rec.time < clock:
                raise Violation(w.E_VIOLATION, "Insert %d at %d ps is in the past (%d)"
                                % (rec.handle, rec.time, clock))
            if rec.handle in inflight:
                raise Violation(w.E_VIOLATION, "Insert reuses handle %d" % rec.handle)
            if rec.src >= a.endpoints or rec.dst >= a.endpoints:
                raise Violation(w.E_CONFIG, "rank out of range: %d->%d" % (rec.src, rec.dst))
            arrival = rec.time + a.latency + rec.size * a.gap
            inflight[rec.handle] = [arrival, rec.time, rec.size, order, False]
            order += 1
            stats["inserts"] += 1
        elif isinstance(rec, w.Query):
            stats["queries"] += 1
            if rec.time < clock:
                raise Violation(w.E_VIOLATION, "Query %d at %d ps is in the past (%d)"
                                % (rec.handle, rec.time, clock))
            m = inflight.get(rec.handle)
            if m is None:
                raise Violation(w.E_VIOLATION, "Query for unknown handle %d" % rec.handle)
            clock = rec.time
            if m[0] <= rec.time:
                del inflight[rec.handle]
                log_arrival(log, rec.handle, m[0])
                ep.send(w.Reply(rec.handle, m[0], True))
            else:
                nxt = rec.time + a.quantum
                if a.estimate is not None and not m[4]:
                    nxt = max(nxt, m[1] + int(round(a.estimate * (a.latency + m[2] * a.gap))))
                m[4] = True
                ep.send(w.Reply(rec.handle, nxt, False))
        elif isinstance(rec, w.NoMoreInserts):
            if rec.time < clock:
                raise Violation(w.E_VIOLATION, "NoMoreInserts at %d ps is in the past (%d)"
                                % (rec.time, clock))
            if not inflight:
                raise Violation(w.E_DEADLOCK, "NoMoreInserts with nothing in flight")
            ta = min(m[0] for m in inflight.values())
            done = sorted((m[3], h) for h, m in inflight.items() if m[0] == ta)
            for _, h in done:
                del inflight[h]
                log_arrival(log, h, ta)
                ep.send(w.Arrival(h, ta))
            ep.send(w.ArrivalBatchEnd(ta, len(done)))
            ep.flush()
            clock = ta
            stats["batches"] += 1
        elif isinstance(rec, w.Finish):
            stats["in_flight_at_finish"] = len(inflight)
            return stats
        elif isinstance(rec, w.Error):
            raise w.PeerError(rec)
        else:
            raise Violation(w.E_VIOLATION, "unexpected %s" % type(rec).__name__)


def log_arrival(log, handle, t):
    if log is not None:
        log.write("%d %d\n" % (handle, t))


def main():
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--key", required=True, help="session key (objects /KEY.ins ... /KEY.ctl)")
    p.add_argument("--protocol", choices=sorted(w.PROTOCOLS), default="notify")
    p.add_argument("--latency", type=int, default=1000, help="Lfix in ps [1000]")
    p.add_argument("--gap", type=int, default=0, help="Gfix in ps per byte [0]")
    p.add_argument("--quantum", type=int, default=1, help="query: q in ps [1]")
    p.add_argument("--estimate", type=float, default=None, help="query: estimate factor F")
    p.add_argument("--endpoints", type=int, default=1024, help="ranks served [1024]")
    p.add_argument("--log-arrivals", metavar="FILE", help="write 'handle time_ps' per arrival")
    p.add_argument("--attach-timeout", type=float, default=60.0, help="seconds [60]")
    a = p.parse_args()
    if a.quantum < 1 or a.latency < 0 or a.gap < 0 or a.endpoints < 1:
        p.error("--quantum must be >= 1, --latency/--gap >= 0, --endpoints >= 1")
    protocol = w.PROTOCOLS[a.protocol]
    seg, queues = w.create_fabric(a.key, protocol, a.endpoints)
    w.wait_for_scheduler(seg, a.attach_timeout)
    log = open(a.log_arrivals, "w") if a.log_arrivals else None
    if log:
        log.write("# handle time_ps\n")
    ep = None
    try:
        ep = w.Endpoint(w.FABRIC, protocol, queues, seg)
        stats = serve(ep, a, log)
    except Violation as e:
        if ep is not None:
            ep.send(w.Error(e.code, str(e)))
            ep.flush()
        w.die(PROG, str(e))
    except w.ProtocolError as e:
        if ep is not None:
            try:
                ep.send(w.Error(e.code, str(e)))
                ep.flush()
            except Exception:
                pass
        w.die(PROG, "protocol violation by the scheduler: %s" % e)
    except (w.PeerDied, w.PeerError) as e:
        w.die(PROG, str(e))
    finally:
        if log:
            log.close()
    w.unlink_owned()
    print("fabric.py: %d messages, %d queries, %d arrival batches, Lfix=%d ps, Gfix=%d ps/B"
          % (stats["inserts"], stats["queries"], stats["batches"], a.latency, a.gap))


if __name__ == "__main__":
    main()
