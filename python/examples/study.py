#!/usr/bin/env python3
"""Two studies with the Python API (python/examples/study.py).

(a) Polling versus notification over several quanta: the efficiency
    study's comparison (docs/efficiency.md) of the co-simulation protocols,
    on the thesis's dissemination (`gen dissemination -d 180`, L=o=g=G=O=0,
    thesis-ddr). The fabric runs in this process: `inproc` (on a thread of
    its own, over the protocol's in-process channels: every query is a
    round trip between two threads) and `onepiece` (called by the
    scheduler's thread: the protocol's records without a channel), plus
    the two-process co-simulation over shared memory (`backend="cosim"`,
    the workspace's cosim binary) where it is built. The study's own
    runs (scripts/efficiency-study) use two processes throughout; the
    setups here show the same shape (wall time proportional to the polls,
    notify as cheap as the fabric alone) at in-process costs.

(b) A topology comparison through `ibcosim.sweep`: the same all-to-all
    (`gen linear_alltoall`) on a fat tree, a k-ary n-tree, a dragonfly and
    a 3-D torus with 32 ranks, three message sizes, on the flit-level
    fabric (onepiece) and the flow-level model, as a grid on a Dask
    LocalCluster of two workers.

Writes docs/figures/python/efficiency-quantum.png and
topology-alltoall.png (run from anywhere) and prints the tables.

    pip install ./python && python3 python/examples/study.py [--quick]
"""

import argparse
import os
import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import ibcosim  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIGS = os.path.join(ROOT, "docs", "figures", "python")
ZERO = dict(L=0, o=0, g=0, G=0, O=0)
# backend="cosim" finds the workspace's binaries under IBCOSIM_ROOT/target
os.environ.setdefault("IBCOSIM_ROOT", ROOT)


def timed(fn, reps):
    """Median wall time of `reps` calls (each one's fabric set-up included,
    as in the efficiency study) and the last result."""
    walls, r = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        r = fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), r


def efficiency(ranks, topology, quick):
    import pandas as pd
    sched = ibcosim.gen("dissemination", size=ranks, data=180)
    quanta = ["1ns", "100ps", "10ps"] if quick else ["1ns", "100ps", "10ps", "1ps"]
    q_ps = {"1ns": 1000, "100ps": 100, "10ps": 10, "1ps": 1}
    rows = []

    def add(setup, backend, q, fn, reps=3):
        wall, r = timed(fn, reps)
        s = r.summary
        rows.append({"setup": setup, "backend": backend, "quantum_ps": q_ps.get(q),
                     "wall_s": wall, "finish_ps": s.get("finish_ps", s.get("sim_time_ps")),
                     "queries": s.get("network_queries")})
        print("  %-28s %-9s %6s  %8.3f s" % (setup, backend, q or "", wall), flush=True)

    print("(a) dissemination of %d ranks on %s, 180 bytes, L=o=g=G=O=0" % (ranks, topology))
    add("fabric alone", "-", None, lambda: ibcosim.fabric_run(
        topology, traffic="dissemination:180:1", link_stats=False, messages=False))
    add("LogGOPS alone", "loggp", None, lambda: ibcosim.simulate(
        sched, loggops=ZERO, messages=False))
    for backend in ("onepiece", "inproc"):
        add("notify", backend, None, lambda: ibcosim.simulate(
            sched, backend=backend, topology=topology, loggops=ZERO, messages=False))
        for q in quanta:
            # polling without an estimate at 1 ps over a thread: minutes
            if backend == "inproc" and q == "1ps":
                continue
            add("query", backend, q, lambda: ibcosim.simulate(
                sched, backend=backend, topology=topology, loggops=ZERO, protocol="query",
                quantum=q, messages=False), reps=1 if q in ("10ps", "1ps") else 3)
            if backend == "onepiece":
                add("query, estimate F=1", backend, q, lambda: ibcosim.simulate(
                    sched, backend=backend, topology=topology, loggops=ZERO,
                    protocol="query", quantum=q, estimate=1, messages=False),
                    reps=1 if q == "1ps" else 3)
    if ibcosim.sim._cosim_binary():
        add("notify", "cosim", None, lambda: ibcosim.simulate(
            sched, backend="cosim", topology=topology, loggops=ZERO))
        for q in quanta[:2]:
            add("query", "cosim", q, lambda: ibcosim.simulate(
                sched, backend="cosim", topology=topology, loggops=ZERO,
                protocol="query", quantum=q), reps=1)
    else:
        print("  (no cosim binary: the two-process rows are left out; "
              "cargo build --release -p cosim -p loggopsim -p ibnet)")
    return pd.DataFrame(rows)


def plot_efficiency(df, ranks, topology, path):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = {"onepiece": "tab:blue", "inproc": "tab:orange", "cosim": "tab:green"}
    markers = {"onepiece": "o", "inproc": "^", "cosim": "s"}
    for (setup, backend), g in df[df["quantum_ps"].notna()].groupby(["setup", "backend"]):
        g = g.sort_values("quantum_ps")
        style = "--" if "estimate" in setup else "-"
        a1.plot(g["quantum_ps"], g["wall_s"], style, marker=markers[backend],
                color=colours[backend],
                label="%s, %s" % (setup, backend))
    flat = df[df["quantum_ps"].isna()]
    for _, r in flat.iterrows():
        c = colours.get(r["backend"], "grey")
        ls = ":" if r["backend"] in ("-", "loggp") else "-."
        a1.axhline(r["wall_s"], ls=ls, color=c if r["backend"] in colours else "black",
                   lw=1, label="%s%s" % (r["setup"], "" if r["backend"] in ("-", "loggp")
                                         else ", " + r["backend"]))
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.invert_xaxis()
    a1.set_xlabel("quantum q (ps)")
    a1.set_ylabel("wall time (s), median")
    a1.set_title("wall time: polling vs notification")
    a1.legend(fontsize=7, loc="upper left")
    notify = df[(df["setup"] == "notify") & (df["backend"] == "onepiece")]["finish_ps"].iloc[0]
    for (setup, backend), g in df[df["quantum_ps"].notna()].groupby(["setup", "backend"]):
        g = g.sort_values("quantum_ps")
        style = "--" if "estimate" in setup else "-"
        a2.plot(g["quantum_ps"], (g["finish_ps"] - notify) / 1000.0, style,
                marker=markers[backend], color=colours[backend], ms=9 - 2 * list(markers).index(backend),
                label="%s, %s" % (setup, backend))
    a2.set_xscale("log")
    a2.invert_xaxis()
    a2.set_xlabel("quantum q (ps)")
    a2.set_ylabel("finish time - notify's (ns)")
    a2.set_title("accuracy: polling rounds arrivals up to q")
    a2.legend(fontsize=7)
    fig.suptitle("dissemination, %d ranks on %s (thesis-ddr, L=o=g=G=O=0)" % (ranks, topology))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def alltoall(topology, backend, data):
    """One point of the topology sweep (runs on a Dask worker)."""
    s = ibcosim.gen("linear_alltoall", size=32, data=data)
    # max_vl=3 on every topology: the torus's dateline routing needs the
    # VLs, and the others get the same parameters
    return ibcosim.simulate(s, backend=backend, topology=topology, set={"max_vl": 3},
                            loggops=ZERO, messages=False)


def topology_sweep(quick, cache_dir):
    grid = {
        "topology": ["fattree:8", "kary:4:3", "dragonfly:4:2:2:5", "torus:4x4x2"],
        "backend": ["onepiece", "flow"],
        "data": [1024, 16384] if quick else [1024, 16384, 65536],
    }
    # workers import this file's functions by value (it is not a module
    # they could import)
    import sys

    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    print("(b) linear_alltoall of 32 ranks: %d points on a LocalCluster of 2 workers"
          % (len(grid["topology"]) * len(grid["backend"]) * len(grid["data"])), flush=True)
    t0 = time.perf_counter()
    df = ibcosim.sweep(alltoall, grid, n_workers=2, cache_dir=cache_dir)
    wall = time.perf_counter() - t0
    print("  sweep: %.1f s wall (LocalCluster start-up included), %d errors"
          % (wall, df["error"].notna().sum()))
    return df, wall


def plot_topologies(df, path):
    ok = df[df["error"].isna()]
    sizes = sorted(ok["data"].unique())
    topos = list(dict.fromkeys(ok["topology"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.8))
    for ax, d in zip(axes, sizes):
        g = ok[ok["data"] == d]
        w = 0.38
        for i, (backend, colour) in enumerate((("onepiece", "tab:blue"), ("flow", "tab:orange"))):
            v = [g[(g["topology"] == t) & (g["backend"] == backend)]["finish_ps"].iloc[0] / 1e6
                 for t in topos]
            ax.bar([j + (i - 0.5) * w for j in range(len(topos))], v, w, color=colour,
                   label="flit-level (onepiece)" if backend == "onepiece" else "flow-level")
        ax.set_xticks(range(len(topos)))
        ax.set_xticklabels(topos, rotation=20, fontsize=8)
        ax.set_title("%d bytes per message" % d)
        ax.set_ylabel("finish time (us)")
    axes[0].legend(fontsize=8)
    fig.suptitle("linear_alltoall of 32 ranks (thesis-ddr, max_vl=3, L=o=g=G=O=0)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer quanta and sizes (seconds)")
    ap.add_argument("--out", default=FIGS, help="directory of the figures")
    ap.add_argument("--cache", default=None, help="cache directory of the sweep")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import pandas as pd
    pd.set_option("display.width", 160)
    ranks, topology = 32, "fattree:8"
    eff = efficiency(ranks, topology, a.quick)
    print(eff.to_string(index=False))
    plot_efficiency(eff, ranks, topology, os.path.join(a.out, "efficiency-quantum.png"))
    topo, wall = topology_sweep(a.quick, a.cache)
    print(topo[["topology", "backend", "data", "finish_ps", "events", "error", "point_wall_s"]]
          .to_string(index=False))
    plot_topologies(topo, os.path.join(a.out, "topology-alltoall.png"))
    print("figures in %s" % a.out)


if __name__ == "__main__":
    main()
