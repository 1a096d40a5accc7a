"""Sweeps on a LocalCluster of two workers: rows, errors, resumption."""

import os
import sys

import pytest

import ibcosim


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


CONFIG = {"schedule": {"pattern": "dissemination", "data": 1024}, "backend": "flow",
          "topology": "H8_S2"}
GRID = {"size": [4, 8], "set.link_speed": ["SDR", "QDR", "nosuch"]}


def test_a_sweep_has_a_row_per_point_and_reports_failures(client, tmp_path):
    df = ibcosim.sweep(CONFIG, GRID, client=client, cache_dir=tmp_path / "cache")
    assert len(df) == 6
    assert list(df["size"]) == [4, 4, 4, 8, 8, 8]
    assert list(df["set.link_speed"]) == ["SDR", "QDR", "nosuch"] * 2
    bad = df[df["set.link_speed"] == "nosuch"]
    assert bad["error"].notna().all()
    assert bad["error"].str.contains("InputError").all()
    assert bad["error"].str.contains("link_speed").all()
    good = df[df["error"].isna()]
    assert len(good) == 4
    # each point's numbers are those of the same simulation run here
    for _, row in good.iterrows():
        s = ibcosim.gen("dissemination", size=int(row["size"]), data=1024)
        r = ibcosim.simulate(s, backend="flow", topology="H8_S2",
                             set={"link_speed": row["set.link_speed"]})
        assert row["finish_ps"] == r.summary["finish_ps"]
        assert row["events"] == r.summary["events"]
    # a faster link finishes earlier
    sdr = good[good["set.link_speed"] == "SDR"].set_index("size")["finish_ps"]
    qdr = good[good["set.link_speed"] == "QDR"].set_index("size")["finish_ps"]
    assert (qdr < sdr).all()


def test_a_resumed_sweep_does_not_rerun_finished_points(client, tmp_path):
    cache = tmp_path / "cache"
    first = ibcosim.sweep(CONFIG, {"size": [4, 8]}, client=client, cache_dir=cache)
    assert not first["cached"].any()
    files = sorted(os.listdir(cache))
    assert len(files) == 2
    mtimes = [os.stat(cache / f).st_mtime_ns for f in files]
    # one more point: only that one runs
    second = ibcosim.sweep(CONFIG, {"size": [4, 8, 2]}, client=client, cache_dir=cache)
    assert list(second["cached"]) == [True, True, False]
    assert list(second["finish_ps"][:2]) == list(first["finish_ps"])
    assert list(second["point_wall_s"][:2]) == list(first["point_wall_s"])
    assert [os.stat(cache / f).st_mtime_ns for f in files] == mtimes
    assert len(os.listdir(cache)) == 3
    # a failed point is not cached: it runs again
    bad = ibcosim.sweep(CONFIG, {"size": [4], "set.link_speed": ["nosuch"]},
                        client=client, cache_dir=cache)
    assert bad["error"].notna().all()
    assert len(os.listdir(cache)) == 3


def alltoall(topology, size):
    s = ibcosim.gen("linear_alltoall", size=size, data=4096)
    return ibcosim.simulate(s, backend="flow", topology=topology, messages=False)


def test_a_function_sweep(client):
    # the workers cannot import this test module: send the function by value
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    grid = {"topology": ["fattree:4", "torus:2x2", "nosuch"], "size": [4]}
    df = ibcosim.sweep(alltoall, grid, client=client)
    assert list(df["topology"]) == grid["topology"]
    assert df["error"][:2].isna().all(), df["error"].tolist()
    assert "nosuch" in df["error"][2]
    for _, row in df[:2].iterrows():
        assert row["finish_ps"] == alltoall(row["topology"], 4).summary["finish_ps"]


def test_a_sweep_starts_its_own_local_cluster(tmp_path):
    df = ibcosim.sweep(CONFIG, {"size": [4, 8]}, n_workers=2)
    assert df["error"].isna().all()
    assert list(df["size"]) == [4, 8]
    # a list of points, one of them twice: a row each
    df = ibcosim.sweep(CONFIG, [{"size": 4}, {"size": 4}], n_workers=2)
    assert len(df) == 2 and df["error"].isna().all()
    assert df["finish_ps"][0] == df["finish_ps"][1]
