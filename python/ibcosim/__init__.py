"""ibcosim: co-simulation of MPI applications on InfiniBand, from Python.

A thin layer over the workspace's Rust crates (loggopsim, ibnet,
schedgen), called in this process:

- schedules: :func:`read_goal`, :func:`gen`, :func:`trace2goal`;
- topologies: :func:`topology` (summary, hosts, switches, links, routes),
  :func:`preset`;
- backends: :func:`backends` (loggopsim's registry: names, help lines,
  capabilities);
- simulations: :func:`simulate` (a schedule on a backend of the registry,
  or cosim: the two-process co-simulation with both sides in this process
  over shared memory or message queues; the fabric's link statistics
  over time on the flit-level backends),
  :func:`simulate_jobs` (several jobs on one fabric), :func:`fabric_run`
  (the fabric alone with its traffic patterns);
- sweeps: :func:`sweep` (a grid of simulations on a Dask cluster, cached
  on disk);
- errors: :class:`InputError` (a ValueError; :class:`FileError` also an
  OSError), :class:`SimulationError`.

See docs/python.md.
"""

import os as _os

# backend="cosim" runs both sides of the co-simulation as threads of this
# process, placed by the kernel next to whatever else runs: their waits
# block at once instead of spinning first (what scripts/cosim does when
# its two sides share a CPU; IBCOSIM_SPIN_US set beforehand wins). Read by
# ipc-proto once, at the first wait; results do not depend on it.
_os.environ.setdefault("IBCOSIM_SPIN_US", "0")

from ._native import __version__  # noqa: E402
from .errors import FileError, IbcosimError, InputError, SimulationError  # noqa: E402
from .schedule import Schedule, gen, read_goal, trace2goal  # noqa: E402
from .sim import (BACKENDS, FabricResult, JobsResult, SimResult, backends, fabric_run,  # noqa: E402
                  simulate, simulate_cosim, simulate_jobs)
from .sweep import sweep  # noqa: E402
from .topo import Topology, preset, topology  # noqa: E402

__all__ = [
    "__version__", "BACKENDS", "FabricResult", "FileError", "IbcosimError", "InputError",
    "JobsResult", "backends", "simulate_jobs",
    "Schedule", "SimResult", "SimulationError", "Topology", "fabric_run", "gen", "preset",
    "read_goal", "simulate", "simulate_cosim", "sweep", "topology", "trace2goal",
]
