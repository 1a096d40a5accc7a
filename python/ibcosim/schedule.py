"""Schedules: GOAL text or LogGOPSim's binary layout, generated patterns
(``loggopsim gen``) and translated liballprof traces (``loggopsim
trace2goal``)."""

import os
import tempfile
import warnings

from . import _native
from ._args import option_words


class Schedule:
    """A schedule in memory (loggopsim's compact form).

    ``name`` is where it came from (a file, or the generator's pattern);
    ``warnings`` the GOAL reader's warnings (a label defined twice)."""

    def __init__(self, native, name, warnings=()):
        self._native = native
        self.name = name
        self.warnings = list(warnings)

    @property
    def num_ranks(self):
        return self._native.num_ranks

    @property
    def num_cpus(self):
        return self._native.num_cpus

    @property
    def num_nics(self):
        return self._native.num_nics

    @property
    def uses_one_sided(self):
        return self._native.uses_one_sided

    def stats(self):
        """Operations per kind and bytes sent."""
        return dict(self._native.stats())

    def write(self, path, binary=False):
        """Write as GOAL text, or in the binary layout (``binary=True``,
        what ``loggopsim convert`` writes)."""
        self._native.write(os.fspath(path), binary)

    def __repr__(self):
        return "<Schedule %s: %d ranks>" % (self.name, self.num_ranks)


def read_goal(path):
    """Read a schedule file, GOAL text or binary (detected by content), as
    ``loggopsim -f PATH`` does. Errors raise :class:`ibcosim.InputError`
    (``FileError`` for a file that cannot be read) with the reader's
    message (``FILE:LINE: ...``)."""
    path = os.fspath(path)
    native, warns = _native.load_schedule(path)
    for w in warns:
        warnings.warn("%s" % w, stacklevel=2)
    return Schedule(native, path, warns)


def as_schedule(s):
    """A Schedule, or a path read with :func:`read_goal`."""
    if isinstance(s, Schedule):
        return s
    if isinstance(s, (str, os.PathLike)):
        return read_goal(s)
    raise TypeError("schedule: expected an ibcosim.Schedule or a path, not %r" % type(s).__name__)


def _run_to_file(fn, words, out, what):
    if out is not None:
        fn(words + ["-o", os.fspath(out)])
        return read_goal(out)
    with tempfile.TemporaryDirectory(prefix="ibcosim-") as d:
        f = os.path.join(d, "schedule.goal")
        fn(words + ["-o", f])
        s = read_goal(f)
    s.name = what
    return s


def gen(pattern, size=8, data=1, output=None, **options):
    """Generate a schedule as ``loggopsim gen PATTERN -s SIZE -d DATA``.

    ``options`` are the command's other options with ``_`` for ``-``
    (``root=2``, ``nway=3``, ``seed=1``, ``nb="5us"``, ``outcast=True``).
    ``output``: also keep the GOAL file there. Returns a
    :class:`Schedule`."""
    words = [pattern, "--commsize", str(size), "--datasize", str(data)]
    words += option_words(options)
    what = "gen %s -s %s -d %s" % (pattern, size, data)
    return _run_to_file(_native.gen, words, output, what)


def trace2goal(traces, output=None, **options):
    """Translate liballprof traces as ``loggopsim trace2goal --traces
    TRACES``: ``traces`` is rank 0's trace file (the others are found next
    to it, as on the command line); ``options`` are the command's other
    options (``timemult=1000``, ``collectives="openmpi"``, ...). Returns a
    :class:`Schedule`."""
    words = ["--traces", os.fspath(traces)] + option_words(options)
    return _run_to_file(_native.trace2goal, words, output,
                        "trace2goal %s" % os.fspath(traces))
