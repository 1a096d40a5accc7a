"""Parameter sweeps on a Dask cluster."""

import hashlib
import itertools
import json
import os
import time
import traceback


def grid_points(grid):
    """``{"a": [1, 2], "b": ["x"]}`` -> ``[{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]``
    (the product, in the grid's order); a list of dicts is taken as is."""
    if isinstance(grid, dict):
        keys = list(grid)
        vals = [v if isinstance(v, (list, tuple, range)) else [v] for v in grid.values()]
        return [dict(zip(keys, c)) for c in itertools.product(*vals)]
    return [dict(p) for p in grid]


def _canon(v):
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return repr(v)


def point_key(what, point):
    """Hash of a point (and of what runs it): the cache file's name."""
    if callable(what):
        tag = "%s.%s" % (getattr(what, "__module__", "?"), getattr(what, "__qualname__", repr(what)))
    else:
        tag = _canon(what)
    text = json.dumps({"what": tag, "point": _canon(point)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _numbers(d):
    return {k: v for k, v in d.items()
            if isinstance(v, (int, float, bool, str)) or v is None}


def run_config(config, point):
    """The default function of a sweep: ``config`` (a dict of
    :func:`ibcosim.simulate` arguments, with ``"schedule"`` a path or a
    dict of :func:`ibcosim.gen` arguments, and ``"run": "fabric"`` for
    :func:`ibcosim.fabric_run`) updated with the point. Keys of the point
    named ``size``/``data``/``pattern`` go to ``gen``; ``loggops`` keys
    (``L``, ``o``, ``g``, ``G``, ``O``, ``S``) to the LogGOPS parameters;
    ``set.KEY`` to a fabric override."""
    from . import fabric_run, gen, simulate
    c = dict(config)
    c.pop("run", None)
    sched = c.pop("schedule", None)
    if isinstance(sched, dict):
        sched = dict(sched)
    loggops = dict(c.pop("loggops", None) or {})
    sets = c.pop("set", None) or {}
    sets = dict(sets) if isinstance(sets, dict) else dict(kv.split("=", 1) for kv in sets)
    for k, v in point.items():
        if k in ("pattern", "size", "data") and isinstance(sched, dict):
            sched[k] = v
        elif k in ("L", "o", "g", "G", "O", "S"):
            loggops[k] = v
        elif k.startswith("set."):
            sets[k[4:]] = v
        else:
            c[k] = v
    if config.get("run") == "fabric":
        r = fabric_run(set=sets or None, link_stats=False, messages=False, **c)
        return r.summary
    if isinstance(sched, dict):
        sched = gen(**sched)
    # only the summary is kept: no link windows unless the config asks
    c.setdefault("window", None)
    r = simulate(sched, loggops=loggops or None, set=sets or None, messages=False, **c)
    return r.summary


def _run_point(what, point, key, cache_dir):
    """On a worker: run one point (or read it from the cache)."""
    path = os.path.join(cache_dir, key + ".json") if cache_dir else None
    if path and os.path.exists(path):
        with open(path) as f:
            rec = json.load(f)
        rec["cached"] = True
        return rec
    t0 = time.time()
    rec = {"point": _canon(point), "error": None}
    try:
        out = what(**point) if callable(what) else run_config(what, point)
        if hasattr(out, "summary"):
            out = out.summary
        rec["result"] = _canon(_numbers(dict(out)))
    except Exception as e:  # reported in the row, not raised
        rec["result"] = {}
        rec["error"] = "%s: %s" % (type(e).__name__, e)
        rec["traceback"] = traceback.format_exc()
    rec["point_wall_s"] = time.time() - t0
    if path and rec["error"] is None:
        tmp = path + ".tmp%d" % os.getpid()
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.replace(tmp, path)
    rec["cached"] = False
    return rec


def sweep(function_or_config, grid, client=None, cache_dir=None, n_workers=None,
          progress=False):
    """Run a grid of simulations on a Dask cluster and return one pandas
    DataFrame, one row per point: the point's parameters, the numbers of
    its result's summary, ``error`` (None, or the exception's type and
    message: failed points are reported, not dropped), ``cached`` (read
    from ``cache_dir``) and ``point_wall_s``.

    - ``function_or_config``: a function called as ``f(**point)`` that
      returns a dict or a result with a ``summary`` (``simulate(...)``), or
      a dict of :func:`simulate` arguments completed by each point
      (:func:`run_config` says how);
    - ``grid``: ``{"param": [values], ...}`` (the product) or a list of
      dicts;
    - ``client``: a ``dask.distributed.Client``, a scheduler address
      (``"tcp://host:8786"``), or None for a LocalCluster of ``n_workers``
      processes (default: the CPUs) started and closed here;
    - ``cache_dir``: every finished point is stored there as JSON, keyed
      by a hash of the point and of what runs it; a sweep run again (or
      resumed after an interruption) reads those points instead of running
      them again. Failed points are not cached (they run again).

    The simulations release the GIL, so threads of a worker run in
    parallel too."""
    import pandas as pd
    points = grid_points(grid)
    if not callable(function_or_config) and not isinstance(function_or_config, dict):
        raise TypeError("sweep: expected a function or a dict of simulate() arguments")
    if cache_dir is not None:
        cache_dir = os.path.abspath(os.fspath(cache_dir))
        os.makedirs(cache_dir, exist_ok=True)
    keys = [point_key(function_or_config, p) for p in points]
    # points already in the cache are read here, not sent to the cluster
    recs = [None] * len(points)
    todo = []
    for i, k in enumerate(keys):
        path = os.path.join(cache_dir, k + ".json") if cache_dir else None
        if path and os.path.exists(path):
            recs[i] = _run_point(function_or_config, points[i], k, cache_dir)
        else:
            todo.append(i)
    if todo:
        from dask.distributed import Client, LocalCluster, as_completed
        own = None
        if client is None:
            cluster = LocalCluster(n_workers=n_workers or os.cpu_count() or 1,
                                   threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            own = (Client(cluster), cluster)
            cl = own[0]
        elif isinstance(client, str):
            own = (Client(client), None)
            cl = own[0]
        else:
            cl = client
        try:
            futs = {cl.submit(_run_point, function_or_config, points[i], keys[i], cache_dir,
                              pure=False): i for i in todo}
            bar = None
            if progress:
                try:
                    from tqdm.auto import tqdm
                    bar = tqdm(total=len(todo), desc="sweep")
                except ImportError:
                    bar = None
            done = 0
            for fut in as_completed(list(futs)):
                i = futs[fut]
                try:
                    recs[i] = fut.result()
                except Exception as e:  # the worker itself failed
                    recs[i] = {"point": points[i], "result": {},
                               "error": "%s: %s" % (type(e).__name__, e),
                               "cached": False, "point_wall_s": None}
                done += 1
                if bar is not None:
                    bar.update(1)
                elif progress:
                    print("sweep: %d/%d points" % (done, len(todo)), flush=True)
            if bar is not None:
                bar.close()
        finally:
            if own is not None:
                own[0].close()
                if own[1] is not None:
                    own[1].close()
    rows = []
    for p, rec in zip(points, recs):
        row = dict(p)
        for k, v in rec.get("result", {}).items():
            row[k if k not in p else "result_" + k] = v
        row["error"] = rec.get("error")
        row["cached"] = rec.get("cached", False)
        row["point_wall_s"] = rec.get("point_wall_s")
        rows.append(row)
    return pd.DataFrame(rows)
