"""The backends of loggopsim's registry, the two-process co-simulation in
this process (backend="cosim"), and the fabric's link statistics over
time from simulate()."""

import os
import signal
import subprocess
import sys
import time

import pytest

import ibcosim
from conftest import ROOT, _binary, run_json

PINGPONG = os.path.join(ROOT, "examples", "pingpong.goal")


def test_backends_are_the_registry(loggopsim):
    b = ibcosim.backends()
    assert list(b["name"]) == ["loggp", "ipc", "inproc", "onepiece", "flow", "penalty", "lop",
                               "cosim"]
    assert list(b["registry"]) == [True] * 7 + [False]
    row = b.set_index("name")
    assert row.loc["ipc", "session_key"] and not row.loc["cosim", "session_key"]
    assert list(b.loc[b["fast"], "name"]) == ["flow", "penalty", "lop"]
    assert ibcosim.BACKENDS == tuple(b["name"])
    # the help lines are those of `loggopsim --help`
    helptext = subprocess.run([loggopsim, "--help"], capture_output=True, text=True).stdout
    assert row.loc["onepiece", "help"].split(" (")[0] in " ".join(helptext.split())
    # an unknown name: the command line's message
    p = subprocess.run([loggopsim, "-f", PINGPONG, "--network", "nope"], capture_output=True,
                       text=True)
    cli_first = p.stderr.splitlines()[0].replace("error: ", "")
    with pytest.raises(ibcosim.InputError) as e:
        ibcosim.simulate(PINGPONG, backend="nope")
    assert str(e.value).startswith(cli_first)
    assert "inproc, onepiece, flow, penalty, lop, or cosim" in str(e.value)
    with pytest.raises(ibcosim.InputError, match="needs --key KEY"):
        ibcosim.simulate(PINGPONG, backend="ipc", topology="H8_S6")


def test_cosim_finishes_where_the_cli_does():
    # scripts/cosim --schedule examples/pingpong.goal --topology H8_S6
    # (preset thesis-ddr, notify over shm): both ranks at 4341988000 ps
    r = ibcosim.simulate(PINGPONG, backend="cosim", topology="H8_S6", preset="thesis-ddr",
                         protocol="notify", transport="shm")
    assert list(r.ranks["finish_ps"]) == [4341988000, 4341988000]
    assert r.report["network"] == "ibnet/notify over shm"
    assert r.summary["backend"] == "cosim"
    assert r.fabric["protocol_version"] == 3
    assert r.fabric["server"]["finish_time"] == 4341988000


def test_cosim_over_message_queues_equals_the_cli(root):
    cosim = _binary("cosim")
    cli = run_json([cosim, "--schedule", PINGPONG, "--topology", "H8_S2", "--protocol", "query",
                    "--quantum", "1us", "--transport", "mq", "--json"])
    r = ibcosim.simulate(PINGPONG, backend="cosim", topology="H8_S2", protocol="query",
                         quantum="1us", transport="mq", messages=False)
    assert list(r.ranks["finish_ps"]) == cli["scheduler"]["finish_times_ps"]
    assert r.report["network"] == cli["scheduler"]["network"] == "ibnet/query over mq"
    assert r.summary["network_queries"] == cli["scheduler"]["network_stats"]["queries"]
    assert (r.fabric["fabric"]["events_processed"]
            == cli["fabric"]["fabric"]["events_processed"])


@pytest.mark.parametrize("backend", ["inproc", "onepiece", "cosim"])
def test_simulate_records_link_statistics_over_time(backend, tmp_path):
    s = ibcosim.gen("linear_alltoall", size=8, data=20000)
    r = ibcosim.simulate(s, backend=backend, topology="H8_S2", window="2us",
                         loggops=dict(L=0, o=0, g=0, G=0, O=0))
    links = r.links
    obufs = r.fabric["fabric"]["obufs"]
    # every link direction in every window of 2 us, up to the fabric's end
    end = r.fabric["fabric"]["now_ps"]
    windows = sorted(set(links["window_start_ps"]))
    assert windows == list(range(0, end, 2_000_000))
    assert len(links) == len(windows) * len(obufs)
    assert links["window_end_ps"].max() == end
    # the windows add up to the fabric's totals, link by link
    per_link = links.groupby("link")["data_flits"].sum()
    for o in obufs:
        assert per_link["%s[%d]" % (o["node"], o["port"])] == o["data_flits_sent"]
    assert links["data_flits"].sum() > 0
    # (a transmission counts where it starts: at most one flit time over
    # the window's length past 1; the last window may be short)
    full = links[links["window_end_ps"] - links["window_start_ps"] == 2_000_000]
    assert full["utilisation"].between(0, 1.02).all()
    assert full["utilisation"].max() > 0.9
    import matplotlib
    matplotlib.use("Agg")
    ax = r.plot_link_heatmap()
    ax.figure.savefig(tmp_path / "heat.png")
    assert (tmp_path / "heat.png").stat().st_size > 1000
    # window=None: one window, the fabric report's totals
    whole = ibcosim.simulate(s, backend=backend, topology="H8_S2", window=None,
                             loggops=dict(L=0, o=0, g=0, G=0, O=0))
    assert list(whole.ranks["finish_ps"]) == list(r.ranks["finish_ps"])
    assert len(whole.links) == len(obufs)


def test_the_flit_backends_agree(tmp_path):
    s = ibcosim.gen("dissemination", size=8, data=4096)
    kw = dict(topology="H8_S2", loggops=dict(L=0, o=0, g=0, G=0, O=0), window="5us")
    runs = {b: ibcosim.simulate(s, backend=b, **kw) for b in ("onepiece", "inproc", "cosim")}
    ref = runs["onepiece"]
    for b, r in runs.items():
        assert list(r.ranks["finish_ps"]) == list(ref.ranks["finish_ps"]), b
        assert list(r.links["busy_ps"]) == list(ref.links["busy_ps"]), b


# A long cosim run in a child process (polling at 1 ps on pingpong takes
# minutes), interrupted with SIGINT once its session exists.
CHILD = r"""
import signal, sys, ibcosim
key, transport = sys.argv[1], sys.argv[2]
# (Python's own Ctrl-C handler, whatever this test's runner left: a shell
# that starts it in the background sets SIGINT to ignored, which the
# child would inherit)
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    ibcosim.simulate(sys.argv[3], backend="cosim", topology="H8_S6", protocol="query",
                     quantum="1ps", transport=transport, key=key, messages=False)
    print("finished")
except KeyboardInterrupt:
    print("KeyboardInterrupt", ibcosim._native.session_objects(key))
"""


@pytest.mark.parametrize("transport", ["shm", "mq"])
def test_ctrl_c_raises_keyboardinterrupt_and_leaves_no_ipc_objects(transport):
    key = "ibcosim-test-int-%d-%s" % (os.getpid(), transport)
    p = subprocess.Popen([sys.executable, "-c", CHILD, key, transport, PINGPONG],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not ibcosim._native.session_objects(key):
            assert p.poll() is None, p.communicate()
            assert time.time() < deadline, "the session never appeared"
            time.sleep(0.05)
        seen = ibcosim._native.session_objects(key)
        assert "/%s.ctl" % key in seen
        if transport == "mq":
            assert any(not n.endswith(".ctl") for n in seen)
        time.sleep(1.0)
        t0 = time.time()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert time.time() - t0 < 10
    assert p.returncode == 0, err
    assert out.split("\n")[0] == "KeyboardInterrupt []", (out, err)
    assert ibcosim._native.session_objects(key) == []
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(key)]


def test_a_failed_cosim_run_raises_and_leaves_no_ipc_objects(tmp_path):
    goal = tmp_path / "unmatched.goal"
    goal.write_text("num_ranks 2\nrank 0 {\n  l1: recv 10b from 1 tag 0\n}\nrank 1 {\n}\n")
    key = "ibcosim-test-fail-%d" % os.getpid()
    with pytest.raises(ibcosim.SimulationError, match="unmatched"):
        ibcosim.simulate(goal, backend="cosim", topology="H8_S2", key=key)
    assert ibcosim._native.session_objects(key) == []
    # bad input before the session: nothing is created either
    with pytest.raises(ibcosim.InputError, match="maps only 8 ranks"):
        ibcosim.simulate(ibcosim.gen("dissemination", size=16, data=8), backend="cosim",
                         topology="H8_S2", key=key)
    assert ibcosim._native.session_objects(key) == []
