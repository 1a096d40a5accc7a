#!/usr/bin/env python3
"""scheduler.py: a reference scheduler written from docs/protocol.md alone.

It replays a ping-pong between ranks 0 and 1 with zero LogGOPS overheads
(L = o = g = G = O = 0): message 0 goes 0 -> 1 at --start ps; whenever a
message arrives, its receiver sends the next one back at the time it
learned of the arrival; after 2 * --rounds messages it sends Finish at
that time. This is what `loggopsim -L 0 -o 0 -g 0 -G 0 -O 0` does with the
schedule "rank 0: send; rank 1: recv, then send back; ..." (the receive
completes at the arrival, the reply starts there).

- notify: Insert, NoMoreInserts{t}, read the batch (Arrivals + ArrivalBatchEnd).
- query: Insert, Query{h, t} at the send time; a "not yet" reply names the
  next time to ask (exactly t' + q, or later with --estimate); an arrived
  reply gives t_a <= t'. The scheduler learns of the arrival at t' (the
  query time), like the LogGOPS engine, so it is exact when q = 1 ps or
  when the estimate promises the exact arrival.

Prints one line per message, `handle src dst size t_send t_arrival`, and
`finish T`; --json prints one JSON object instead. Every reply is checked
(order, handle, times); a violation is reported to the fabric with
Error{code=1} and exits 1; a dead fabric exits 3.

Usage: scheduler.py --key KEY [--protocol query|notify|query-v1|notify-v1] (all version 1) [--size BYTES]
                    [--rounds N] [--start PS] [--quantum PS] [--estimate]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ipcwire as w  # noqa: E402

PROG = "scheduler.py"


def learn_notify(ep, handle, now):
    ep.send(w.NoMoreInserts(now))
    batch = []
    while True:
        rec = ep.recv()
        if isinstance(rec, w.Arrival):
            batch.append(rec)
        elif isinstance(rec, w.ArrivalBatchEnd):
            break
        elif isinstance(rec, w.Error):
            raise w.PeerError(rec)
        else:
            raise w.ProtocolError("expected Arrival or ArrivalBatchEnd, got %s" % (rec,))
    for r in batch:
        if r.time != rec.time:
            raise w.ProtocolError("Arrival %d at %d inside a batch ending at %d" % (r.handle, r.time, rec.time))
    if [r.handle for r in batch] != [handle]:
        raise w.ProtocolError("expected the arrival of handle %d, got %s" % (handle, [r.handle for r in batch]))
    if rec.time < now:
        raise w.ProtocolError("arrival at %d ps, before NoMoreInserts at %d ps" % (rec.time, now))
    return rec.time, rec.time


def learn_query(ep, handle, t_send, a):
    t = t_send
    first = True
    while True:
        ep.send(w.Query(handle, t, ep.inserts_sent))
        rec = ep.recv()
        if isinstance(rec, w.Error):
            raise w.PeerError(rec)
        if not isinstance(rec, w.Reply) or rec.handle != handle:
            raise w.ProtocolError("expected the Reply for handle %d, got %s" % (handle, rec))
        if rec.arrived:
            if rec.time > t or rec.time < t_send:
                raise w.ProtocolError("Reply %d: arrived at %d ps, query at %d ps, sent at %d ps"
                                      % (handle, rec.time, t, t_send))
            return rec.time, t
        expect = t + a.quantum
        if rec.time < expect or (rec.time != expect and not (a.estimate and first)):
            raise w.ProtocolError("Reply %d at %d ps: next query at %d ps, expected %d ps (t' + q)"
                                  % (handle, t, rec.time, expect))
        first = False
        t = rec.time


def main():
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--key", required=True, help="session key of the fabric")
    p.add_argument("--protocol", choices=sorted(w.PROTOCOLS), default=None,
                   help="expected protocol (default: whatever the fabric serves)")
    p.add_argument("--size", type=int, default=8, help="message size in bytes [8]")
    p.add_argument("--rounds", type=int, default=1, help="ping-pong rounds (2 messages each) [1]")
    p.add_argument("--start", type=int, default=0, help="time of the first send in ps [0]")
    p.add_argument("--quantum", type=int, default=1, help="query: the fabric's q in ps [1]")
    p.add_argument("--estimate", action="store_true",
                   help="query: the fabric may answer a first query later than t' + q")
    p.add_argument("--connect-timeout", type=float, default=10.0, help="seconds [10]")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a = p.parse_args()
    if a.rounds < 1 or a.size < 0 or a.quantum < 1:
        p.error("--rounds >= 1, --size >= 0, --quantum >= 1")
    ep = None
    try:
        seg, protocol, queues = w.open_scheduler(a.key, a.connect_timeout)
        if a.protocol is not None and w.PROTOCOLS[a.protocol] != protocol:
            w.die(PROG, "the fabric serves the %s protocol, not %s"
                  % ("query" if protocol == w.QUERY else "notify", a.protocol))
        if seg.endpoints < 2:
            w.die(PROG, "the fabric serves %d endpoints; the ping-pong needs 2" % seg.endpoints)
        ep = w.Endpoint(w.SCHEDULER, protocol, queues, seg)
        now = a.start
        lines = []
        for handle in range(2 * a.rounds):
            src, dst = handle % 2, 1 - handle % 2
            ep.send(w.Insert(handle, now, src, dst, a.size, 0))
            if protocol == w.NOTIFY:
                t_a, learned = learn_notify(ep, handle, now)
            else:
                t_a, learned = learn_query(ep, handle, now, a)
            lines.append((handle, src, dst, a.size, now, t_a))
            now = learned
        ep.send(w.Finish(now))
        ep.flush()
    except TimeoutError as e:
        w.die(PROG, str(e))
    except w.PeerDied as e:
        w.die(PROG, str(e), 3)
    except w.PeerError as e:
        w.die(PROG, str(e))
    except w.ProtocolError as e:
        if ep is not None:
            try:
                ep.send(w.Error(e.code, str(e)))
                ep.flush()
            except Exception:
                pass
        w.die(PROG, "protocol violation: %s" % e)
    w.unlink_owned()
    if a.json:
        print(json.dumps({
            "messages": [dict(zip(("handle", "src", "dst", "size", "t_send", "t_arrival"), l))
                         for l in lines],
            "arrival_times": [l[5] for l in lines],
            "finish": now,
        }))
    else:
        for l in lines:
            print("%d %d %d %d %d %d" % l)
        print("finish %d" % now)


if __name__ == "__main__":
    main()
