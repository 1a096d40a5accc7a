"""Simulations: a schedule on a backend (``loggopsim``), and the fabric
alone with its traffic patterns (``ibnet run``)."""

import json
import os
import tempfile

from . import _native, plot
from ._args import option_words, set_words, word
from ._progress import reporter
from .errors import InputError, SimulationError
from .schedule import as_schedule

#: The package's own backend: the registry's ``ipc`` with the fabric served
#: by this process (``ibnet::server`` on a thread) over shm or mq.
COSIM = "cosim"

#: The flit-level backends (the fabric's link statistics over time).
FLIT_BACKENDS = ("inproc", "onepiece", COSIM)


def backends():
    """The network backends: loggopsim's registry
    (``loggopsim/src/network/registry.rs``), one row per backend with its
    ``name``, ``help`` line and capabilities (``topology``,
    ``map_in_process``, ``fabric_in_process``, ``prebuild``,
    ``session_key``, ``alone_runs``, ``fast``), in ``--network --help``
    order, and a last row for ``cosim`` (``registry`` False): the
    registry's ``ipc`` with the fabric served by this process. A
    DataFrame."""
    import pandas as pd
    rows = [dict(r, registry=True) for r in _native.backends()]
    ipc = next(r for r in rows if r["name"] == "ipc")
    rows.append(dict(ipc, name=COSIM, registry=False, session_key=False,
                     help="The two-process co-simulation (scripts/cosim) in this process: the "
                          "fabric server on a thread, the scheduler's ipc backend attached to it "
                          "over shared-memory rings or POSIX message queues (transport=shm|mq)"))
    return pd.DataFrame(rows)


BACKENDS = tuple(r["name"] for r in _native.backends()) + (COSIM,)

_LOGGOPS = ("L", "o", "g", "G", "O", "S")


def _flatten(prefix, d, out):
    for k, v in d.items():
        key = prefix + k
        if isinstance(v, dict):
            _flatten(key + "_", v, out)
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v


class SimResult:
    """The result of :func:`simulate`.

    - ``report``: loggopsim's JSON report (``loggopsim --json``) as a dict;
    - ``summary``: its numbers, flat: ``finish_ps`` (the largest finish
      time), ``max_finish_host``, ``end_time_ps``, ``events``,
      ``wall_time_s``, ``L_ps`` ..., ``network_*`` (the backend's
      counters), ``ok``;
    - ``ranks``: DataFrame, one row per rank: ``rank``, ``finish_ps``;
    - ``messages``: DataFrame, one row per message taken in by its receiver
      (``src``, ``dst``, ``bytes``, ``tag``, ``sent_ps``, ``arrived_ps``,
      ``recv_start_ps``, ``recv_end_ps``, ``latency_ps`` = arrived - sent),
      or None with ``messages=False``;
    - ``fabric``: the fabric's own report (inproc, onepiece; ``ibnet``'s
      statistics as JSON), else None;
    - ``links``: with a flit-level fabric (inproc, onepiece, cosim), its
      link statistics over time: one row per link direction and window of
      ``window`` (``ibnet run --link-stats``'s columns:
      ``window_start_ps``, ``window_end_ps``, ``link``, ``node``,
      ``port``, ``peer``, ``data_flits``, ``fc_packets``, ``bytes``,
      ``busy_ps``, ``utilisation``, ``queue_depth_mean``,
      ``queue_samples``); with ``window=None`` one window, the whole run
      (the fabric report's obufs); else None."""

    def __init__(self, report, fabric, messages, schedule, links=None):
        import pandas as pd
        self.report = report
        self.schedule = schedule
        self.fabric = fabric
        s = {"schedule": schedule.name, "backend": report.get("network"),
             "network": report.get("network"),
             "finish_ps": report["max_finish_time_ps"]}
        for k, v in report.items():
            if k == "params":
                for pk, pv in v.items():
                    s[pk] = pv
            elif k == "network_stats":
                for nk, nv in v.items():
                    s["network_" + nk] = nv
            elif k == "leftovers":
                s["leftover_hosts"] = len(v)
            elif isinstance(v, (int, float, str, bool)) or v is None:
                s[k] = v
        self.summary = s
        ft = report["finish_times_ps"]
        self.ranks = pd.DataFrame({"rank": range(len(ft)), "finish_ps": ft})
        if messages is not None:
            m = pd.DataFrame(messages)
            m["latency_ps"] = m["arrived_ps"] - m["sent_ps"]
            self.messages = m
        else:
            self.messages = None
        self.links = links if links is not None else _links_of_fabric_report(fabric)

    @property
    def ok(self):
        return bool(self.report.get("ok"))

    def plot_finish_times(self, ax=None):
        """Bar chart of the ranks' finish times."""
        return plot.finish_times(self.ranks, ax, title="%s on %s" % (
            self.schedule.name, self.summary["backend"]))

    def plot_latency_histogram(self, ax=None, bins=50):
        """Histogram of the message latencies (sent to arrived)."""
        return plot.latency_histogram(self.messages, ax, bins)

    def plot_link_heatmap(self, ax=None, max_rows=64):
        """Link utilisation of a flit-level run: links by windows (as
        :meth:`FabricResult.plot_link_heatmap`)."""
        return plot.link_heatmap(self.links, ax, title="%s on %s" % (
            self.schedule.name, self.summary["backend"]), max_rows=max_rows)

    def __repr__(self):
        return "<SimResult %s on %s: finish %d ps>" % (
            self.schedule.name, self.summary["backend"], self.summary["finish_ps"])


def _links_of_fabric_report(fabric):
    """The fabric report's per-obuf totals as rows of ``--link-stats``
    (one window: the whole run), or None without a fabric."""
    if not fabric or not isinstance(fabric.get("fabric"), dict):
        return None
    import pandas as pd
    rep = fabric["fabric"]
    end = rep.get("now_ps", 0)
    rows = []
    for o in rep.get("obufs", []):
        q = o.get("queue_depth") or {}
        rows.append({
            "window_start_ps": 0, "window_end_ps": end,
            "link": "%s[%d]" % (o["node"], o["port"]), "node": o["node"], "port": o["port"],
            "peer": o["peer"], "data_flits": o["data_flits_sent"],
            "fc_packets": o["fc_packets_sent"], "bytes": o["bytes_sent"],
            "busy_ps": o["busy_ps"], "utilisation": o["utilisation"],
            "queue_depth_mean": q.get("mean") if q.get("count") else None,
            "queue_samples": q.get("count", 0)})
    return pd.DataFrame(rows)


def _sim_words(backend, topology, preset, set, loggops, options):
    # (the name is checked by the registry, with its message)
    words = ["--network", backend]
    if backend == COSIM:
        # scripts/cosim's LogGOPS parameters: 0 unless given
        loggops = dict({k: 0 for k in ("L", "o", "g", "G", "O")}, **(loggops or {}))
    for k, v in (loggops or {}).items():
        if k not in _LOGGOPS:
            raise InputError("loggops: unknown parameter %r (known: %s)" % (k, ", ".join(_LOGGOPS)))
        words += ["-" + k, word(v)]
    if topology is not None:
        words += ["--topology", word(topology)]
    if preset is not None:
        words += ["--preset", preset]
    for kv in set_words(set):
        words += ["--set", kv]
    words += option_words(options)
    return words


def simulate(schedule, backend="loggp", topology=None, preset=None, set=None,
             loggops=None, messages=True, progress=False, window="10us", **options):
    """Simulate a schedule as ``loggopsim -f FILE --network BACKEND --json``.

    - ``schedule``: a :class:`Schedule` (``read_goal``, ``gen``,
      ``trace2goal``) or a path;
    - ``backend``: a name of :func:`backends` (loggopsim's registry):
      ``loggp`` (LogGP, the default), ``flow``, ``penalty``, ``lop`` (fast
      models on the fabric's topology), ``onepiece`` (the flit-level
      fabric called from the scheduler's thread), ``inproc`` (the fabric
      on a thread of this process, over in-process channels), ``ipc``
      (attach to a running ``ibnet serve --key KEY``: ``key=KEY``), or
      ``cosim``: the two-process co-simulation of ``scripts/cosim`` in
      this process (the fabric server on a thread, the scheduler's ipc
      backend attached over the real transport, ``transport="shm"`` or
      ``"mq"``; LogGOPS parameters 0 unless given, as ``scripts/cosim``);
    - ``topology``, ``preset``, ``set``: the fabric (``"fattree:16"``,
      ``"qdr"``, ``{"max_vl": 1}``) for every backend but loggp;
    - ``loggops``: ``dict(L=..., o=..., g=..., G=..., O=..., S=...)``, numbers
      in ps (G and O per byte) or strings with a unit (``"2.5ns"``);
    - ``window``: the flit-level backends (inproc, onepiece, cosim)
      record the fabric's link statistics per window of this length
      (``links``); None: only the whole run's totals;
    - ``options``: loggopsim's other options, ``_`` for ``-``:
      ``protocol="query"``, ``quantum="1ns"``, ``map=FILE``,
      ``insert_at="after-o"``, ``noise_trace=FILE``, ``lop_set=...``,
      ``latency_factor=...``; for cosim also ``transport`` and ``key``
      (the session's objects are ``/KEY.*``; default a key unique to the
      run);
    - ``messages``: record every message (a little slower);
    - ``progress``: True for a bar (tqdm) or plain lines, or a callable.

    The GIL is released while the simulation runs (threads run
    simulations in parallel). Ctrl-C stops a run with KeyboardInterrupt
    (a cosim run's shared-memory and message-queue objects are removed
    first). Returns a :class:`SimResult`. Raises :class:`InputError` for
    bad options or inputs (an unknown backend with the registry's message)
    and :class:`SimulationError` when the run fails (unmatched queues,
    operations that never completed, a fabric that failed), each with
    loggopsim's message."""
    sched = as_schedule(schedule)
    words = _sim_words(backend, topology, preset, set, loggops, options)
    with tempfile.TemporaryDirectory(prefix="ibcosim-") as d:
        ls = None
        if backend in FLIT_BACKENDS and window is not None:
            ls = os.path.join(d, "links.csv")
            words += ["--link-stats", ls, "--window", word(window)]
        rep, fabric, msgs = _native.simulate(sched._native, words, sched.name, messages,
                                             reporter(progress, "simulate"))
        links = _read_links(ls) if ls and os.path.exists(ls) else None
    report = json.loads(rep)
    res = SimResult(report, json.loads(fabric) if fabric else None, msgs, sched, links)
    res.summary["backend"] = backend
    if not report["ok"]:
        err = SimulationError(_failure(report))
        err.result = res
        raise err
    return res


def _read_links(path):
    import pandas as pd
    return pd.read_csv(path, dtype={"node": str, "peer": str, "link": str})


def _failure(report):
    if report.get("leftovers"):
        return "unmatched receive/unexpected queues at the end of the run"
    return "%d operations never completed" % report.get("incomplete_ops", 0)


def simulate_cosim(schedule, topology=None, preset=None, set=None, loggops=None,
                   protocol=None, transport=None, **options):
    """``simulate(schedule, backend="cosim", ...)``: the two-process
    co-simulation of ``scripts/cosim`` (``protocol`` notify or query,
    ``transport`` shm or mq) with both sides in this process, through the
    libraries (no binary is needed)."""
    return simulate(schedule, backend=COSIM, topology=topology, preset=preset, set=set,
                    loggops=loggops, protocol=protocol, transport=transport, **options)


class FabricResult:
    """The result of :func:`fabric_run`.

    - ``report``: ``ibnet run --json``'s report as a dict (``params``,
      ``run``, ``report`` with the sinks and obufs, ``closed_loop``,
      ``error``, ``warnings``);
    - ``summary``: its scalar numbers, flat (``sim_time_ps``,
      ``events_processed``, ``closed_loop_*``, ``report_*``);
    - ``links``: DataFrame of ``--link-stats`` (one row per link direction
      and window: ``window_start_ps``, ``window_end_ps``, ``link``,
      ``node``, ``port``, ``peer``, ``data_flits``, ``fc_packets``,
      ``bytes``, ``busy_ps``, ``utilisation``, ``queue_depth_mean``,
      ``queue_samples``), or None;
    - ``messages``: DataFrame of ``--messages-csv`` (``id``, ``src``,
      ``dst``, ``bytes``, ``injected_ps``, ``completed_ps``,
      ``latency_ps``, ``network_latency_ps``, ``switch_hops``, ...), or
      None."""

    def __init__(self, report, links, messages):
        self.report = report
        s = {"topology": report["topology"], "preset": report["preset"]}
        _flatten("", report.get("run", {}), s)
        _flatten("closed_loop_", report.get("closed_loop") or {}, s)
        _flatten("report_", report.get("report", {}), s)
        s["error"] = report.get("error")
        self.summary = s
        self.links = links
        self.messages = messages

    @property
    def error(self):
        return self.report.get("error")

    def plot_link_heatmap(self, ax=None, max_rows=64):
        """Links by windows, coloured by utilisation (as ``--heatmap``)."""
        return plot.link_heatmap(self.links, ax, title="%s, %s" % (
            self.report["topology"], ", ".join(self.report["traffic"])), max_rows=max_rows)

    def plot_latency_histogram(self, ax=None, bins=50):
        return plot.latency_histogram(self.messages, ax, bins)


def fabric_run(topology, traffic="shift:1", until=None, preset=None, set=None,
               window="1us", link_stats=True, messages=True, progress=False, threads=1,
               **options):
    """Run the fabric alone with its traffic patterns, as ``ibnet run
    --topology TOPOLOGY --traffic TRAFFIC --until UNTIL --json``.

    ``traffic``: a spec or a list of them (``shift:K``, ``perm:SEED``, ``param:1=2``,
    ``dissemination:BYTES:COUNT``, ``chain:BYTES:COUNT``,
    ``put:BYTES:SRC:DST``, ...; docs/observe.md, ``ibnet run --help``);
    ``until``: a time with a unit (default: 2ms for open-loop traffic,
    none for closed-loop patterns); ``window``: of the link statistics;
    ``link_stats``/``messages``: record them (DataFrames ``links`` and
    ``messages``); ``threads``: run the fabric as that many logical
    processes on threads (``ibnet run --threads``: the same report, link
    statistics and messages, byte for byte; closed loops and open-loop
    patterns, not put/get; docs/scaling.md 2.6 says when it is faster);
    ``options``:
    ``config=FILE``, ``latencies=True``, ``lfts=FILE``, ``heatmap=FILE.svg``.

    A fabric error (a deadlock, a fatal model condition: exit code 1 of
    ``ibnet run``) raises :class:`SimulationError` with the result in its
    ``result`` attribute; bad input raises :class:`InputError`."""
    import pandas as pd
    if isinstance(traffic, str):
        traffic = [traffic]
    words = ["--topology", word(topology)]
    for t in traffic:
        words += ["--traffic", t]
    if until is not None:
        words += ["--until", word(until)]
    if preset is not None:
        words += ["--preset", preset]
    for kv in set_words(set):
        words += ["--set", kv]
    words += ["--window", word(window)]
    if threads != 1:
        words += ["--threads", word(threads)]
    with tempfile.TemporaryDirectory(prefix="ibcosim-") as d:
        ls = os.path.join(d, "links.csv") if link_stats else None
        ms = os.path.join(d, "messages.csv") if messages else None
        if ls:
            words += ["--link-stats", ls]
        if ms:
            words += ["--messages-csv", ms]
        words += option_words(options)
        rep = json.loads(_native.fabric_run(words, reporter(progress, "fabric_run")))
        links = _read_links(ls) if ls else None
        msgs = pd.read_csv(ms) if ms else None
    res = FabricResult(rep, links, msgs)
    if rep.get("error"):
        err = SimulationError(rep["error"])
        err.result = res
        raise err
    return res


class JobsResult:
    """The result of :func:`simulate_jobs`.

    - ``result``: the merged run's :class:`SimResult` (global ranks);
    - ``jobs``: DataFrame, one row per job: ``job``, ``schedule``,
      ``placement``, ``num_ranks``, ``first_global_rank``, ``finish_ps``,
      and with ``slowdown=True`` ``alone_finish_ps`` and ``slowdown``
      (finish together / alone), as ``loggopsim --job ... --json``'s
      ``jobs`` array;
    - ``hcas``: per job, the HCA of each rank;
    - ``alone``: per job, the :class:`SimResult` of its run alone (with
      ``slowdown=True``)."""

    def __init__(self, result, jobs, hcas, alone):
        self.result = result
        self.jobs = jobs
        self.hcas = hcas
        self.alone = alone

    @property
    def summary(self):
        s = dict(self.result.summary)
        for _, r in self.jobs.iterrows():
            s["job%d_finish_ps" % r["job"]] = r["finish_ps"]
            if "slowdown" in r:
                s["job%d_slowdown" % r["job"]] = r["slowdown"]
        return s


def _write_map(path, names):
    with open(path, "w") as f:
        f.write("# rank -> HCA map of loggopsim --job (temporary)\n")
        for r, n in enumerate(names):
            f.write("%d %s\n" % (r, n))


def simulate_jobs(jobs, backend="onepiece", topology="H8_S6", slowdown=False, **kwargs):
    """Several jobs on one fabric, as ``loggopsim --job FILE[:PLACEMENT]
    ... [--slowdown]`` (docs/jobs.md): ``jobs`` is a list of schedules
    (paths or :class:`Schedule`) or of ``(schedule, placement)`` pairs,
    placement ``linear`` (the default), ``round-robin``, ``random:SEED`` or
    ``map:FILE``. The jobs are placed (``loggopsim::jobs::place``), merged
    into one schedule (job j's ranks follow those of jobs 0..j-1) and run
    on ``backend`` (any fabric backend but cosim) with a rank map, as the
    command line does; with ``slowdown`` each job also runs alone on the
    same HCAs. ``kwargs`` go to :func:`simulate`. Returns a
    :class:`JobsResult`."""
    import pandas as pd
    if backend in ("loggp", "cosim"):
        raise InputError("simulate_jobs: backend %r: the jobs are placed on a fabric "
                         "(onepiece, inproc, flow, penalty, lop)" % backend)
    if "map" in kwargs:
        raise InputError("map cannot be combined with jobs: give a job's hosts with its "
                         "placement (map:FILE)")
    specs = []
    for j in jobs:
        s, pl = (j if isinstance(j, (tuple, list)) else (j, "linear"))
        specs.append((as_schedule(s), pl))
    labels = ["job %d (%s)" % (i, s.name) for i, (s, _) in enumerate(specs)]
    hcas = _native.place_jobs(word(topology), [(labels[i], s.num_ranks, pl)
                                                for i, (s, pl) in enumerate(specs)])
    merged_native = _native.merge_schedules([s._native for s, _ in specs])
    from .schedule import Schedule
    merged = Schedule(merged_native, "+".join(s.name for s, _ in specs))
    with tempfile.TemporaryDirectory(prefix="ibcosim-jobs-") as d:
        m = os.path.join(d, "all.map")
        _write_map(m, [h for hs in hcas for h in hs])
        res = simulate(merged, backend=backend, topology=topology, map=m, **kwargs)
        alone = []
        if slowdown:
            for i, (s, _) in enumerate(specs):
                mj = os.path.join(d, "job%d.map" % i)
                _write_map(mj, hcas[i])
                alone.append(simulate(s, backend=backend, topology=topology, map=mj, **kwargs))
    rows, first = [], 0
    ft = res.report["finish_times_ps"]
    for i, (s, pl) in enumerate(specs):
        n = s.num_ranks
        row = {"job": i, "schedule": s.name, "placement": pl, "num_ranks": n,
               "first_global_rank": first, "finish_ps": max(ft[first:first + n], default=0)}
        if slowdown:
            a = alone[i].summary["finish_ps"]
            row["alone_finish_ps"] = a
            row["slowdown"] = row["finish_ps"] / a if a > 0 else None
        rows.append(row)
        first += n
    return JobsResult(res, pd.DataFrame(rows), hcas, alone)
