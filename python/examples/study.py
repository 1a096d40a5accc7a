#!/usr/bin/env python3
"""Two studies with the Python API (python/examples/study.py).

(a) Polling versus notification over several quanta: the efficiency
    study's comparison (docs/efficiency.md) at its scale, the thesis's
    dissemination among 128 ranks on fattree:16 (`gen dissemination -s 128
    -d 180`, L=o=g=G=O=0, thesis-ddr), once (the study's `--count 1`, as
    its --full and --tiny runs; its default repeats it 100 times). Every
    setup runs through the library in this process: the two-process
    co-simulation (`backend="cosim"`: the fabric server on a thread, the
    scheduler's ipc backend attached over shared-memory rings or POSIX
    message queues, what scripts/cosim runs as two processes), the fabric
    on a thread over in-process channels (`inproc`) and called by the
    scheduler's thread (`onepiece`); polling at 10 ns down to 1 ps (the
    finest quanta on the cheaper transports only), with and without the
    arrival estimate, against notify, the fabric alone and LogGOPS alone.
    Also the links' utilisation over time of the notify run (cosim, 20 ns
    windows).

(b) A topology comparison through `ibcosim.sweep`: the same all-to-all
    (`gen linear_alltoall`) among 128 ranks on a fat tree, a k-ary n-tree,
    a dragonfly and a 3-D torus, two message sizes, on the flit-level
    fabric (onepiece) and the flow-level model, as a grid on a Dask
    LocalCluster of two workers.

Writes docs/figures/python/efficiency-quantum.png, links-dissemination.png
and topology-alltoall.png (run from anywhere) and prints the tables.

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

# The polling series of (a): label -> (backend, options, quanta, quick quanta)
POLLING = [
    ("query, onepiece", "onepiece", {}, ["10ns", "1ns", "100ps", "10ps", "1ps"],
     ["10ns", "1ns", "100ps"]),
    ("query F=1, onepiece", "onepiece", {"estimate": 1}, ["10ns", "1ns", "100ps", "10ps"],
     ["10ns", "1ns"]),
    ("query, inproc", "inproc", {}, ["10ns", "1ns", "100ps"], ["10ns", "1ns"]),
    ("query, cosim shm", "cosim", {"transport": "shm"}, ["10ns", "1ns", "100ps"],
     ["10ns", "1ns"]),
    ("query, cosim mq", "cosim", {"transport": "mq"}, ["10ns", "1ns"], ["10ns"]),
]
NOTIFY = [
    ("notify, onepiece", "onepiece", {}),
    ("notify, inproc", "inproc", {}),
    ("notify, cosim shm", "cosim", {"transport": "shm"}),
    ("notify, cosim mq", "cosim", {"transport": "mq"}),
]
Q_PS = {"10ns": 10000, "1ns": 1000, "100ps": 100, "10ps": 10, "1ps": 1}
# one colour and marker per series (lines: polling; horizontal lines: the rest)
STYLE = {
    "query, onepiece": ("tab:blue", "o"),
    "query F=1, onepiece": ("tab:cyan", "D"),
    "query, inproc": ("tab:orange", "^"),
    "query, cosim shm": ("tab:green", "s"),
    "query, cosim mq": ("tab:olive", "v"),
    "notify, onepiece": ("tab:purple", "P"),
    "notify, inproc": ("tab:brown", "X"),
    "notify, cosim shm": ("tab:pink", "*"),
    "notify, cosim mq": ("tab:red", "h"),
    "fabric alone": ("black", "p"),
    "LogGOPS alone": ("tab:grey", "d"),
}


def timed(fn):
    """Median wall time of up to three calls (each one's fabric set-up
    included, as in the efficiency study; one call when it takes over 2 s)
    and the last result."""
    walls, r = [], None
    for _ in range(3):
        t0 = time.perf_counter()
        r = fn()
        walls.append(time.perf_counter() - t0)
        if walls[-1] > 2.0:
            break
    return statistics.median(walls), len(walls), r


def efficiency(ranks, topology, quick):
    import pandas as pd
    sched = ibcosim.gen("dissemination", size=ranks, data=180)
    rows = []

    def add(series, q, fn):
        wall, runs, r = timed(fn)
        s = r.summary
        rows.append({"series": series, "quantum_ps": Q_PS.get(q), "wall_s": wall, "runs": runs,
                     "finish_ps": s.get("finish_ps", s.get("closed_loop_end_ps")),
                     "round_trips": s.get("network_queries") or s.get("network_no_more_inserts"),
                     "causality_errors": s.get("network_causality_errors")})
        print("  %-22s %6s  %8.3f s (%d run%s)" % (series, q or "", wall, runs,
                                                   "" if runs == 1 else "s"), flush=True)

    def run(backend, **kw):
        return lambda: ibcosim.simulate(sched, backend=backend, topology=topology, loggops=ZERO,
                                        messages=False, window=None, **kw)

    print("(a) dissemination of %d ranks on %s, 180 bytes, L=o=g=G=O=0" % (ranks, topology))
    add("fabric alone", None, lambda: ibcosim.fabric_run(
        topology, traffic="dissemination:180:1", link_stats=False, messages=False))
    add("LogGOPS alone", None, lambda: ibcosim.simulate(sched, loggops=ZERO, messages=False))
    for series, backend, kw in NOTIFY:
        add(series, None, run(backend, **kw))
    for series, backend, kw, quanta, quick_quanta in POLLING:
        for q in (quick_quanta if quick else quanta):
            add(series, q, run(backend, protocol="query", quantum=q, **kw))
    links = ibcosim.simulate(sched, backend="cosim", topology=topology, loggops=ZERO,
                             messages=False, window="20ns")
    return pd.DataFrame(rows), links


def plot_efficiency(df, ranks, topology, path):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.6))
    polled = df[df["quantum_ps"].notna()]
    notify = df[df["series"] == "notify, onepiece"]["finish_ps"].iloc[0]
    lo, hi = polled["quantum_ps"].min() / 2, polled["quantum_ps"].max() * 2
    names = list(dict.fromkeys(polled["series"]))
    for series, g in polled.groupby("series", sort=False):
        g = g.sort_values("quantum_ps")
        colour, marker = STYLE[series]
        ls = "--" if "F=1" in series else "-"
        a1.plot(g["quantum_ps"], g["wall_s"], ls, marker=marker, color=colour, label=series)
        # the series agree to the ps: drawn slightly apart around each quantum
        shift = 1.12 ** (names.index(series) - (len(names) - 1) / 2)
        a2.plot(g["quantum_ps"] * shift, (g["finish_ps"] - notify) / 1000.0, ls, marker=marker,
                color=colour, label=series)
    for _, r in df[df["quantum_ps"].isna()].iterrows():
        # the setups without a quantum: a horizontal line, its marker at the left end
        colour, marker = STYLE[r["series"]]
        ls = ":" if "alone" in r["series"] else "-."
        a1.plot([hi, lo], [r["wall_s"]] * 2, ls, color=colour, lw=1.2, marker=marker,
                markevery=[0], label=r["series"])
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlim(hi * 1.3, lo / 1.3)
    a1.set_xlabel("quantum q (ps)")
    a1.set_ylabel("wall time (s), median")
    a1.set_title("wall time: polling vs notification")
    a2.set_xscale("log")
    a2.set_xlim(hi * 1.3, lo / 1.3)
    a2.set_xlabel("quantum q (ps)")
    a2.set_ylabel("finish time - notify's (ns)")
    a2.set_title("accuracy: polling rounds arrivals up to q\n(series drawn apart around each q)",
                 fontsize=10)
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(0.80, 0.5), fontsize=8,
               frameon=False)
    fig.suptitle("dissemination, %d ranks on %s (thesis-ddr, 180 B, L=o=g=G=O=0), "
                 "every setup through the Python API" % (ranks, topology))
    fig.tight_layout(rect=(0, 0, 0.80, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_links(res, ranks, topology, path):
    fig, ax = plt.subplots(figsize=(9, 6.5))
    res.plot_link_heatmap(ax=ax, max_rows=48)
    ax.set_title("links of the dissemination (%d ranks on %s, notify, cosim over shm):\n"
                 "utilisation per 20 ns window, the 48 busiest link directions"
                 % (ranks, topology), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def alltoall(topology, backend, data):
    """One point of the topology sweep (runs on a Dask worker)."""
    s = ibcosim.gen("linear_alltoall", size=128, data=data)
    # max_vl=3 on every topology: the torus's dateline routing needs the
    # VLs, and the others get the same parameters
    return ibcosim.simulate(s, backend=backend, topology=topology, set={"max_vl": 3},
                            loggops=ZERO, messages=False)


def topology_sweep(quick, cache_dir):
    grid = {
        # 128 HCAs, or more (kary:4:4 has 256: the ranks take the first 128)
        "topology": ["fattree:16", "kary:4:4", "dragonfly:4:4:2:8", "torus:8x8x2"],
        "backend": ["onepiece", "flow"],
        "data": [1024] if quick else [1024, 16384],
    }
    # workers import this file's functions by value (it is not a module
    # they could import)
    import sys

    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    print("(b) linear_alltoall of 128 ranks: %d points on a LocalCluster of 2 workers"
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
    fig, axes = plt.subplots(1, len(sizes), figsize=(3.6 * len(sizes) + 2.2, 3.8))
    series = (("onepiece", "flit-level (onepiece)", "tab:blue", "o"),
              ("flow", "flow-level (flow)", "tab:orange", "s"))
    for ax, d in zip(axes, sizes):
        g = ok[ok["data"] == d]
        for i, (backend, label, colour, marker) in enumerate(series):
            v = [g[(g["topology"] == t) & (g["backend"] == backend)]["finish_ps"].iloc[0] / 1e6
                 for t in topos]
            ax.plot([j + (i - 0.5) * 0.2 for j in range(len(topos))], v, ls="none",
                    marker=marker, ms=8, color=colour, label=label)
        ax.set_xticks(range(len(topos)))
        ax.set_xticklabels(topos, rotation=20, fontsize=8)
        ax.set_xlim(-0.6, len(topos) - 0.4)
        # (the dragonfly's flit-level time is 19 to 32 times the fat tree's)
        ax.set_yscale("log")
        ax.set_title("%d bytes per message" % d)
        ax.set_ylabel("finish time (us), log scale")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(0.84, 0.5), fontsize=8,
               frameon=False)
    fig.suptitle("linear_alltoall of 128 ranks (thesis-ddr, max_vl=3, L=o=g=G=O=0)")
    fig.tight_layout(rect=(0, 0, 0.84, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer quanta and sizes (seconds)")
    ap.add_argument("--out", default=FIGS, help="directory of the figures")
    ap.add_argument("--cache", default=None, help="cache directory of the sweep")
    ap.add_argument("--part", choices=("a", "b", "all"), default="all",
                    help="only study (a) or (b)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import pandas as pd
    pd.set_option("display.width", 160)
    # the efficiency study's default configuration (docs/efficiency.md)
    ranks, topology = 128, "fattree:16"
    if a.part == "b":
        return topologies(a)
    t0 = time.perf_counter()
    eff, links = efficiency(ranks, topology, a.quick)
    print(eff.to_string(index=False))
    print("  (a) took %.0f s" % (time.perf_counter() - t0))
    plot_efficiency(eff, ranks, topology, os.path.join(a.out, "efficiency-quantum.png"))
    plot_links(links, ranks, topology, os.path.join(a.out, "links-dissemination.png"))
    if a.part == "all":
        topologies(a)
    print("figures in %s" % a.out)


def topologies(a):
    topo, wall = topology_sweep(a.quick, a.cache)
    print(topo[["topology", "backend", "data", "finish_ps", "events", "error", "point_wall_s"]]
          .to_string(index=False))
    plot_topologies(topo, os.path.join(a.out, "topology-alltoall.png"))


if __name__ == "__main__":
    main()
