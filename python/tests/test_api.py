"""The API's values against the command lines' for the same inputs."""

import filecmp
import os
import threading

import pandas as pd
import pytest

import ibcosim
from conftest import run_fail, run_json

PINGPONG = "examples/pingpong.goal"
TRACE0 = "tracer/testdata/colltest-np4/pmpi-trace-rank-0.txt"


@pytest.fixture
def pingpong(root):
    return os.path.join(root, PINGPONG)


def test_version_is_the_workspace_version(root):
    text = open(os.path.join(root, "Cargo.toml")).read()
    ws = text.split("[workspace.package]", 1)[1]
    version = [line for line in ws.splitlines() if line.startswith("version")][0]
    assert ibcosim.__version__ == version.split('"')[1]


def test_pingpong_finish_times_equal_the_cli(loggopsim, pingpong):
    cli = run_json([loggopsim, "-f", pingpong, "--json"])
    r = ibcosim.simulate(pingpong)
    assert list(r.ranks["finish_ps"]) == cli["finish_times_ps"]
    assert list(r.ranks["rank"]) == list(range(2))
    assert r.summary["finish_ps"] == cli["max_finish_time_ps"]
    for k in ("end_time_ps", "events", "processed_events", "max_finish_host"):
        assert r.summary[k] == cli[k], k
    assert r.report["params"] == cli["params"]
    assert r.ok


@pytest.mark.parametrize("backend", ["loggp", "flow", "penalty", "lop", "onepiece", "inproc"])
def test_backends_equal_the_cli(loggopsim, root, tmp_path, backend):
    goal = tmp_path / "d.goal"
    s = ibcosim.gen("dissemination", size=8, data=4096, output=goal)
    words = ["--network", backend, "-L", "1000", "-o", "2ns", "-G", "3"]
    topo = [] if backend == "loggp" else ["--topology", "H8_S2", "--preset", "qdr"]
    cli = run_json([loggopsim, "-f", str(goal), "--json"] + words + topo)
    kw = {} if backend == "loggp" else dict(topology="H8_S2", preset="qdr")
    r = ibcosim.simulate(s, backend=backend, loggops=dict(L=1000, o="2ns", G=3), **kw)
    assert list(r.ranks["finish_ps"]) == cli["finish_times_ps"]
    assert r.report["network"] == cli["network"]
    assert r.summary["backend"] == backend
    stats = {k: v for k, v in cli["network_stats"].items()}
    assert {k[len("network_"):]: v for k, v in r.summary.items()
            if k.startswith("network_")} == stats
    # the messages: one per receive, each after it was sent
    assert len(r.messages) == s.stats()["recvs"]
    assert (r.messages["arrived_ps"] >= r.messages["sent_ps"]).all()
    if backend in ("onepiece", "inproc"):
        assert r.fabric is not None and "fabric" in r.fabric
        # the links per window add up to the fabric report's obufs
        obufs = r.fabric["fabric"]["obufs"]
        assert len(r.links) % len(obufs) == 0
        per_link = r.links.groupby("link", sort=False)["data_flits"].sum()
        assert list(per_link) == [o["data_flits_sent"] for o in obufs]
        assert r.links["data_flits"].sum() > 0
    else:
        assert r.links is None


def test_fabric_options_and_protocols_equal_the_cli(loggopsim, tmp_path):
    goal = tmp_path / "a.goal"
    s = ibcosim.gen("linear_alltoall", size=8, data=2048, output=goal)
    words = ["--network", "onepiece", "--topology", "fattree:4", "--set", "max_vl=1",
             "--protocol", "query", "--quantum", "1ns", "-L", "0", "-o", "0", "-g", "0",
             "-G", "0", "-O", "0"]
    cli = run_json([loggopsim, "-f", str(goal), "--json"] + words)
    r = ibcosim.simulate(s, backend="onepiece", topology="fattree:4", set={"max_vl": 1},
                         protocol="query", quantum="1ns",
                         loggops=dict(L=0, o=0, g=0, G=0, O=0), messages=False)
    assert list(r.ranks["finish_ps"]) == cli["finish_times_ps"]
    assert r.summary["network_queries"] == cli["network_stats"]["queries"]
    assert r.messages is None


def test_gen_writes_what_the_cli_writes(loggopsim, tmp_path):
    a, b = tmp_path / "api.goal", tmp_path / "cli.goal"
    ibcosim.gen("random_bisect", size=16, data=100, seed=7, output=a)
    run_fail_ok = __import__("subprocess").run(
        [loggopsim, "gen", "random_bisect", "-s", "16", "-d", "100", "--seed", "7", "-o", str(b)],
        capture_output=True)
    assert run_fail_ok.returncode == 0
    assert filecmp.cmp(a, b, shallow=False)


def test_binary_schedules_read_as_text(loggopsim, pingpong, tmp_path):
    b = tmp_path / "pp.bin"
    ibcosim.read_goal(pingpong).write(b, binary=True)
    assert open(b, "rb").read(8) != open(pingpong, "rb").read(8)
    cli = run_json([loggopsim, "-f", str(b), "--json"])
    assert list(ibcosim.simulate(b).ranks["finish_ps"]) == cli["finish_times_ps"]


def test_trace2goal_equals_the_cli(loggopsim, root, tmp_path):
    a, b = tmp_path / "api.goal", tmp_path / "cli.goal"
    t = os.path.join(root, TRACE0)
    s = ibcosim.trace2goal(t, output=a)
    p = __import__("subprocess").run(
        [loggopsim, "trace2goal", "--traces", t, "-o", str(b)], capture_output=True)
    assert p.returncode == 0, p.stderr
    assert filecmp.cmp(a, b, shallow=False)
    assert s.num_ranks == 4
    assert ibcosim.simulate(s).ok


def test_topology_equals_the_cli(ibnet):
    cli = run_json([ibnet, "topology", "--summary", "--json", "--topology", "fattree:16"])
    t = ibcosim.topology("fattree:16")
    assert t.summary == cli
    assert len(t.hosts) == cli["hosts"] and len(t.switches) == cli["switches"]
    assert len(t.links) == cli["links"]
    assert list(t.hosts["rank"]) == list(range(cli["hosts"]))
    route = run_json([ibnet, "routes", "--json", "--topology", "fattree:16", "H_1", "H_100"])
    assert t.route("H_1", "H_100") == route
    assert t.route(0, 99) == route


def test_preset_with_overrides():
    p = ibcosim.preset("qdr", set={"max_vl": 1})
    assert p["max_vl"] == 1
    with pytest.raises(ibcosim.InputError, match="--preset nosuch"):
        ibcosim.preset("nosuch")


def test_fabric_run_equals_the_cli(ibnet, tmp_path):
    ls, ms = tmp_path / "links.csv", tmp_path / "messages.csv"
    cli = run_json([ibnet, "run", "--topology", "H8_S6", "--traffic", "shift:1",
                    "--until", "20us", "--json", "--no-wall-time", "--window", "2us",
                    "--link-stats", str(ls), "--messages-csv", str(ms)])
    r = ibcosim.fabric_run("H8_S6", traffic="shift:1", until="20us", window="2us")
    assert r.report["report"] == cli["report"]
    assert r.report["params"] == cli["params"]
    for k in ("until_ps", "sim_time_ps", "events_processed"):
        assert r.report["run"][k] == cli["run"][k]
    pd.testing.assert_frame_equal(r.links, pd.read_csv(ls))
    pd.testing.assert_frame_equal(r.messages, pd.read_csv(ms))
    assert r.summary["sim_time_ps"] == 20_000_000
    assert set(r.links["window_start_ps"]) == set(range(0, 20_000_000, 2_000_000))


def test_fabric_run_in_the_local_event_order_equals_the_cli(ibnet):
    # the named order of docs/scaling.md 1.7, from a notebook: the same
    # report as the command line, the order named in its parameters
    args = ["--topology", "fattree:4", "--traffic", "shift:1", "--until", "20us"]
    cli = run_json([ibnet, "run", *args, "--set", "event_order=local", "--json",
                    "--no-wall-time"])
    r = ibcosim.fabric_run("fattree:4", traffic="shift:1", until="20us",
                           set={"event_order": "local"}, link_stats=False, messages=False)
    assert r.report["report"] == cli["report"]
    assert r.report["params"]["event_order"] == "local"
    fifo = ibcosim.fabric_run("fattree:4", traffic="shift:1", until="20us",
                              link_stats=False, messages=False)
    assert "event_order" not in fifo.report["params"]


def test_fabric_run_closed_loop_equals_the_cli(ibnet):
    cli = run_json([ibnet, "run", "--topology", "fattree:4", "--traffic",
                    "dissemination:180:2", "--json", "--no-wall-time"])
    r = ibcosim.fabric_run("fattree:4", traffic="dissemination:180:2", link_stats=False,
                           messages=False)
    assert r.report["report"] == cli["report"]
    assert r.report["closed_loop"] == cli["closed_loop"]
    assert r.links is None


def test_fabric_run_on_threads_equals_one_thread_and_the_cli(ibnet):
    # the logical processes of `ibnet run --threads` from a notebook: the
    # same report, link statistics and message table as one thread, and the
    # same report as the command line, open and closed loops
    cases = [("dissemination:2048:2", None, {}), ("perm:3", "20us", {"event_order": "local"})]
    for traffic, until, sets in cases:
        one = ibcosim.fabric_run("fattree:8", traffic=traffic, until=until, set=sets,
                                 window="500ns")
        assert len(one.messages) > 0 and len(one.links) > 0
        args = ["--topology", "fattree:8", "--traffic", traffic, "--threads", "2",
                "--json", "--no-wall-time"]
        if until:
            args += ["--until", until]
        for k, v in sets.items():
            args += ["--set", "%s=%s" % (k, v)]
        cli = run_json([ibnet, "run", *args])
        for n in (2, 3):
            r = ibcosim.fabric_run("fattree:8", traffic=traffic, until=until, set=sets,
                                   window="500ns", threads=n)
            assert r.report["report"] == one.report["report"], (traffic, n)
            assert r.report["report"] == cli["report"], (traffic, n)
            assert r.report.get("closed_loop") == one.report.get("closed_loop")
            assert r.report["run"]["threads"] == n
            assert r.report["run"]["sync_rounds"] > 0
            pd.testing.assert_frame_equal(r.links, one.links)
            pd.testing.assert_frame_equal(r.messages, one.messages)
    with pytest.raises(ibcosim.InputError, match="threads=0: expected 1 to 64"):
        ibcosim.fabric_run("fattree:8", until="1us", threads=0)


# ------------------------------------------------------------ errors

def test_a_bad_schedule_names_file_and_line(loggopsim, tmp_path):
    bad = tmp_path / "bad.goal"
    bad.write_text("num_ranks 2\nrank 0 {\n  l1: send 10b to 1 tag\n}\n")
    code, err = run_fail([loggopsim, "-f", str(bad)])
    assert code == 2
    with pytest.raises(ibcosim.InputError) as e:
        ibcosim.read_goal(bad)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert "bad.goal:3" in msg
    assert msg in err


def test_a_missing_file_is_an_oserror():
    with pytest.raises(OSError, match="No such file"):
        ibcosim.read_goal("/nonexistent/x.goal")
    with pytest.raises(ibcosim.FileError):
        ibcosim.simulate("/nonexistent/x.goal")


def test_bad_options_carry_the_cli_messages(loggopsim, pingpong):
    code, err = run_fail([loggopsim, "-f", pingpong, "--network", "flow",
                          "--topology", "H8_S2", "--set", "max_vl=x"])
    assert code == 2
    with pytest.raises(ibcosim.InputError) as e:
        ibcosim.simulate(pingpong, backend="flow", topology="H8_S2", set={"max_vl": "x"})
    assert str(e.value) in err
    with pytest.raises(ibcosim.InputError, match="nosuch"):
        ibcosim.simulate(pingpong, backend="flow", topology="nosuch")
    with pytest.raises(ibcosim.InputError, match="invalid value 'nosuch' for '--network"):
        ibcosim.simulate(pingpong, backend="nosuch")
    with pytest.raises(ibcosim.InputError, match="quantum"):
        ibcosim.simulate(pingpong, backend="onepiece", quantum="fast")
    with pytest.raises(ibcosim.InputError, match="unknown pattern"):
        ibcosim.gen("nosuch")
    with pytest.raises(ibcosim.InputError, match="traffic"):
        ibcosim.fabric_run("H8_S2", traffic="nosuch:1")


def test_a_failed_run_is_a_simulation_error(loggopsim, tmp_path):
    goal = tmp_path / "unmatched.goal"
    goal.write_text("num_ranks 2\nrank 0 {\n  l1: recv 10b from 1 tag 0\n}\nrank 1 {\n}\n")
    code, _ = run_fail([loggopsim, "-f", str(goal)])
    assert code == 1
    with pytest.raises(ibcosim.SimulationError, match="unmatched") as e:
        ibcosim.simulate(goal)
    assert isinstance(e.value, RuntimeError)
    assert e.value.result.summary["leftover_hosts"] == 1


# ------------------------------------------------------ threads, plots

def test_progress_calls_back():
    seen = []
    s = ibcosim.gen("dissemination", size=64, data=1024)
    ibcosim.simulate(s, backend="onepiece", topology="fattree:16", progress=seen.append)
    assert seen and seen[-1].get("done") == 1.0
    assert seen[-1]["sim_time_ps"] > 0


def test_threads_run_simulations_together():
    s = ibcosim.gen("dissemination", size=32, data=1024)
    ref = ibcosim.simulate(s, backend="onepiece", topology="fattree:8").ranks
    out = [None] * 4

    def work(i):
        out[i] = ibcosim.simulate(s, backend="onepiece", topology="fattree:8").ranks

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for o in out:
        pd.testing.assert_frame_equal(o, ref)


def test_plots(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    r = ibcosim.simulate(ibcosim.gen("linear_alltoall", size=8, data=1000),
                         backend="flow", topology="H8_S2")
    r.plot_finish_times().figure.savefig(tmp_path / "f.png")
    r.plot_latency_histogram().figure.savefig(tmp_path / "h.png")
    f = ibcosim.fabric_run("H8_S2", traffic="shift:1", until="10us")
    f.plot_link_heatmap().figure.savefig(tmp_path / "m.png")
    for n in ("f.png", "h.png", "m.png"):
        assert (tmp_path / n).stat().st_size > 1000
    with pytest.raises(ValueError):
        r.plot_link_heatmap()
    o = ibcosim.simulate(ibcosim.gen("linear_alltoall", size=8, data=1000),
                         backend="onepiece", topology="H8_S2")
    o.plot_link_heatmap().figure.savefig(tmp_path / "o.png")
    assert (tmp_path / "o.png").stat().st_size > 1000


def test_jobs_equal_the_cli(loggopsim, pingpong, tmp_path):
    a2a = tmp_path / "a2a.goal"
    ibcosim.gen("linear_alltoall", size=4, data=400000, output=a2a)
    zero = ["-L", "0", "-o", "0", "-g", "0", "-G", "0", "-O", "0"]
    cli = run_json([loggopsim, "--network", "onepiece", "--topology", "H8_S2", "--json",
                    "--job", pingpong + ":round-robin", "--job", str(a2a), "--slowdown"] + zero)
    r = ibcosim.simulate_jobs([(pingpong, "round-robin"), a2a], backend="onepiece",
                              topology="H8_S2", slowdown=True,
                              loggops=dict(L=0, o=0, g=0, G=0, O=0))
    assert list(r.result.ranks["finish_ps"]) == cli["finish_times_ps"]
    for j, row in r.jobs.iterrows():
        c = cli["jobs"][j]
        assert row["finish_ps"] == c["finish_time_ps"]
        assert row["alone_finish_ps"] == c["alone_finish_time_ps"]
        assert row["slowdown"] == pytest.approx(c["slowdown"])
        assert r.hcas[j] == c["hcas"]
        assert row["first_global_rank"] == c["first_global_rank"]
    assert r.jobs["slowdown"][0] > 1.0
    with pytest.raises(ibcosim.InputError, match="placement"):
        ibcosim.simulate_jobs([(pingpong, "nowhere")], topology="H8_S2")
