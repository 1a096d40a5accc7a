"""Keyword arguments to command-line words (the Rust side parses them with
the binaries' own option definitions)."""

import os


def word(v):
    """A value as a command-line word: ints and floats as written (a bare
    number is picoseconds where the option takes a time), strings as they
    are (``"2.5ns"``), paths as strings."""
    if isinstance(v, bool):
        raise TypeError("a flag takes True or False, not a value")
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, os.PathLike):
        v = os.fspath(v)
    return str(v)


def option_words(options, short=()):
    """``{"noise_seed": 3, "set": ["a=1"], "fabric_json": True}`` ->
    ``["--noise-seed", "3", "--set", "a=1", "--fabric-json"]``. Keys in
    ``short`` become ``-K`` (LogGOPS parameters). None values are left
    out; lists repeat the option; True is a flag, False leaves it out."""
    words = []
    for k, v in options.items():
        if v is None or v is False:
            continue
        flag = "-" + k if k in short else "--" + k.replace("_", "-")
        if v is True:
            words.append(flag)
        elif isinstance(v, (list, tuple)):
            for x in v:
                words += [flag, word(x)]
        else:
            words += [flag, word(v)]
    return words


def set_words(set):
    """``set={"max_vl": 1}`` or ``["max_vl=1"]`` -> ``["max_vl=1"]``."""
    if set is None:
        return []
    if isinstance(set, dict):
        return ["%s=%s" % (k, word(v) if not isinstance(v, bool) else str(v).lower())
                for k, v in set.items()]
    if isinstance(set, str):
        return [set]
    return list(set)
