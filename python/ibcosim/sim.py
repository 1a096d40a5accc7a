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

BACKENDS = ("loggp", "flow", "penalty", "lop", "onepiece", "inproc", "cosim")

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
      per-link totals over the run (the fabric report's obufs) in the
      columns of ``ibnet run --link-stats`` with one window, the whole run
      (windows over time are :func:`fabric_run`'s); else None."""

    def __init__(self, report, fabric, messages, schedule):
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
        self.links = _links_of_fabric_report(fabric)

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
        """Link utilisation of a flit-level run (one column: the whole run;
        :func:`fabric_run` records windows over time)."""
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
    if backend not in BACKENDS:
        raise InputError("backend %r: expected one of %s" % (backend, ", ".join(BACKENDS)))
    words = ["--network", backend]
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
             loggops=None, messages=True, progress=False, **options):
    """Simulate a schedule as ``loggopsim -f FILE --network BACKEND --json``.

    - ``schedule``: a :class:`Schedule` (``read_goal``, ``gen``,
      ``trace2goal``) or a path;
    - ``backend``: ``loggp`` (LogGP, the default), ``flow``, ``penalty``,
      ``lop`` (fast models on the fabric's topology), ``onepiece`` (the
      flit-level fabric called from the scheduler's thread), ``inproc``
      (the fabric on a thread of this process, over the co-simulation
      protocol), or ``cosim`` (two processes: runs the workspace's
      ``cosim`` binary, see :func:`simulate_cosim`);
    - ``topology``, ``preset``, ``set``: the fabric (``"fattree:16"``,
      ``"qdr"``, ``{"max_vl": 1}``) for every backend but loggp;
    - ``loggops``: ``dict(L=..., o=..., g=..., G=..., O=..., S=...)``, numbers
      in ps (G and O per byte) or strings with a unit (``"2.5ns"``);
    - ``options``: loggopsim's other options, ``_`` for ``-``:
      ``protocol="query"``, ``quantum="1ns"``, ``map=FILE``,
      ``insert_at="after-o"``, ``noise_trace=FILE``, ``lop_set=...``,
      ``latency_factor=...``;
    - ``messages``: record every message (a little slower);
    - ``progress``: True for a bar (tqdm) or plain lines, or a callable.

    The GIL is released while the simulation runs (threads run
    simulations in parallel). Returns a :class:`SimResult`. Raises
    :class:`InputError` for bad options or inputs and
    :class:`SimulationError` when the run fails (unmatched queues,
    operations that never completed), each with loggopsim's message."""
    if backend == "cosim":
        return simulate_cosim(schedule, topology=topology, preset=preset, set=set,
                              loggops=loggops, **options)
    sched = as_schedule(schedule)
    words = _sim_words(backend, topology, preset, set, loggops, options)
    rep, fabric, msgs = _native.simulate(sched._native, words, sched.name, messages,
                                         reporter(progress, "simulate"))
    report = json.loads(rep)
    res = SimResult(report, json.loads(fabric) if fabric else None, msgs, sched)
    res.summary["backend"] = backend
    if not report["ok"]:
        err = SimulationError(_failure(report))
        err.result = res
        raise err
    return res


def _failure(report):
    if report.get("leftovers"):
        return "unmatched receive/unexpected queues at the end of the run"
    return "%d operations never completed" % report.get("incomplete_ops", 0)


def _cosim_binary():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("IBCOSIM_COSIM")
    if env:
        return env
    import shutil
    # the workspace's build (an editable or in-tree install), then PATH
    root = os.environ.get("IBCOSIM_ROOT")
    cands = []
    for base in filter(None, [root, os.getcwd(), os.path.join(here, "..", "..")]):
        for prof in ("release", "ci", "debug"):
            cands.append(os.path.join(base, "target", prof, "cosim"))
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("cosim")


def simulate_cosim(schedule, topology=None, preset=None, set=None, loggops=None,
                   protocol=None, transport=None, timeout=600, **options):
    """The two-process co-simulation: this calls the workspace's ``cosim``
    binary (the supervisor that starts ``ibnet serve`` and ``loggopsim
    --network ipc``), since the supervisor's process handling is not a
    library call. The binary is found through ``IBCOSIM_COSIM``, then
    ``target/{release,ci,debug}/cosim`` under ``IBCOSIM_ROOT`` or the
    current directory, then PATH (build it with ``cargo build --release
    -p cosim``)."""
    import subprocess
    sched = as_schedule(schedule)
    exe = _cosim_binary()
    if exe is None:
        raise FileNotFoundError("backend='cosim' needs the cosim binary: cargo build --release "
                                "-p cosim (or set IBCOSIM_COSIM)")
    with tempfile.TemporaryDirectory(prefix="ibcosim-") as d:
        f = os.path.join(d, "schedule.goal")
        sched.write(f)
        words = [exe, "--schedule", f, "--json"]
        if topology is not None:
            words += ["--topology", word(topology)]
        if preset is not None:
            words += ["--preset", preset]
        for kv in set_words(set):
            words += ["--set", kv]
        if protocol is not None:
            words += ["--protocol", protocol]
        if transport is not None:
            words += ["--transport", transport]
        words += option_words(options)
        if loggops:
            words.append("--")
            for k, v in loggops.items():
                words += ["-" + k, word(v)]
        p = subprocess.run(words, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            lines = [x for x in p.stderr.strip().splitlines() if "error" in x] or \
                p.stderr.strip().splitlines()
            msg = lines[-1] if lines else "cosim exited with %d" % p.returncode
            raise (InputError if p.returncode == 2 else SimulationError)(msg)
        out = json.loads(p.stdout)
        report, fabric = out["scheduler"], out.get("fabric")
    res = SimResult(report, fabric, None, sched)
    res.summary["backend"] = "cosim"
    if not report["ok"]:
        raise SimulationError(_failure(report))
    return res


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
               window="1us", link_stats=True, messages=True, progress=False, **options):
    """Run the fabric alone with its traffic patterns, as ``ibnet run
    --topology TOPOLOGY --traffic TRAFFIC --until UNTIL --json``.

    ``traffic``: a spec or a list of them (``shift:K``, ``param:1=2``,
    ``dissemination:BYTES:COUNT``, ``chain:BYTES:COUNT``,
    ``put:BYTES:SRC:DST``, ...; docs/observe.md, ``ibnet run --help``);
    ``until``: a time with a unit (default: 2ms for open-loop traffic,
    none for closed-loop patterns); ``window``: of the link statistics;
    ``link_stats``/``messages``: record them (DataFrames ``links`` and
    ``messages``); ``options``: ``config=FILE``, ``latencies=True``,
    ``lfts=FILE``, ``heatmap=FILE.svg``.

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
    with tempfile.TemporaryDirectory(prefix="ibcosim-") as d:
        ls = os.path.join(d, "links.csv") if link_stats else None
        ms = os.path.join(d, "messages.csv") if messages else None
        if ls:
            words += ["--link-stats", ls]
        if ms:
            words += ["--messages-csv", ms]
        words += option_words(options)
        rep = json.loads(_native.fabric_run(words, reporter(progress, "fabric_run")))
        links = pd.read_csv(ls) if ls else None
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
