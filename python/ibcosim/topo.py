"""Topologies (built-in names, generators, files) and fabric presets."""

import json
import os

from . import _native
from ._args import set_words


class Topology:
    """A topology as ``ibnet topology --summary --json`` describes it, with
    its hosts, switches and links.

    - ``summary``: dict (hosts, switches, links, diameter_links,
      mean_links, routing_complete, deadlock_free, vls, ...);
    - ``hosts``: DataFrame (name, lid, rank);
    - ``switches``: DataFrame (name, ports);
    - ``links``: DataFrame (node_a, port_a, node_b, port_b), one row per
      cable;
    - ``route(src, dst)``: the hops between two hosts (``ibnet routes``)."""

    def __init__(self, spec, lfts=None):
        self.spec = os.fspath(spec)
        self.lfts = os.fspath(lfts) if lfts is not None else None
        d = json.loads(_native.topology(self.spec, self.lfts))
        import pandas as pd
        self.name = d["name"]
        self.note = d["note"]
        self.summary = d["summary"]
        self.hosts = pd.DataFrame(d["hosts"], columns=["name", "lid", "rank"])
        self.switches = pd.DataFrame(d["switches"], columns=["name", "ports"])
        self.links = pd.DataFrame(d["links"], columns=["node_a", "port_a", "node_b", "port_b"])

    def route(self, src, dst):
        """The route from host ``src`` to ``dst`` (names such as ``H_1``
        or rank numbers): a dict with ``links``, ``switches``, ``sl`` and
        ``hops`` (node, port, peer, peer_port per link)."""
        return json.loads(_native.route(self.spec, str(src), str(dst), self.lfts))

    def __repr__(self):
        s = self.summary
        return "<Topology %s: %d hosts, %d switches, %d links>" % (
            self.spec, s["hosts"], s["switches"], s["links"])


def topology(spec, lfts=None):
    """Load or generate a topology: a built-in name (``H8_S6``, ``M9``),
    a generator (``fattree:16``, ``torus:4x4x4``, ``dragonfly:4:2:2:5``,
    ``kary:4:2``, ...), or a file (TOML, IBDM .topo, .ned, ibnetdiscover
    output; ``lfts``: its forwarding tables). See docs/topology.md."""
    return Topology(spec, lfts)


def preset(name="thesis-ddr", set=None):
    """The fabric parameters of a preset (``thesis-ddr``, ``qdr``,
    ``hcyang99``, ``thesis-ch5``, ``thesis-ch4``) with overrides
    (``set={"max_vl": 1}``), as a dict; bad names or values raise
    :class:`ibcosim.InputError` with ibnet's message."""
    return json.loads(_native.preset(name, set_words(set)))
