"""Exceptions of ibcosim.

The messages are the binaries' own (file and line of a bad schedule, the
option and value of a bad parameter), without the ``loggopsim: error:``
prefix.
"""


class IbcosimError(Exception):
    """Base class of the package's errors."""


class InputError(IbcosimError, ValueError):
    """Bad input: an option, a parameter, a schedule, a topology or a
    traffic specification that the binaries refuse with exit code 2. A
    file that cannot be read is also an ``OSError`` (:class:`FileError`)."""


class FileError(InputError, OSError):
    """An input file that does not exist or cannot be read."""

    def __init__(self, msg=""):
        InputError.__init__(self, msg)

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class SimulationError(IbcosimError, RuntimeError):
    """A run that failed (the binaries' exit code 1): unmatched receive or
    unexpected queues, operations that never completed, a fabric error."""
