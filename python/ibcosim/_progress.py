"""Progress of a run: a tqdm bar when tqdm is installed, plain lines on
stderr otherwise. The engines call back about twice a second."""

import sys


def _human_ps(ps):
    for unit, f in (("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3)):
        if ps >= f:
            return "%.3f %s" % (ps / f, unit)
    return "%d ps" % ps


class Reporter:
    """Callable given to the Rust side: ``reporter(dict)``."""

    def __init__(self, what):
        self.what = what
        self.bar = None
        try:
            from tqdm.auto import tqdm  # noqa: F401
            self._tqdm = tqdm
        except ImportError:
            self._tqdm = None

    def __call__(self, d):
        until = d.get("until_ps") or 0
        t = d.get("sim_time_ps", 0)
        done = d.get("done")
        if self._tqdm is not None:
            now = min(t, until) / 1e6 if until else int(d.get("events", 0))
            if self.bar is None:
                # (the first call comes half a second into the run: the
                # rate counts from there)
                total = until / 1e6 if until else None
                self.bar = self._tqdm(total=total, desc=self.what, initial=now,
                                      unit="us" if total else " events")
            self.bar.set_postfix_str("simulated %s" % _human_ps(t), refresh=False)
            self.bar.update(now - self.bar.n)
            if done:
                self.bar.close()
            return
        line = "%s: %s: simulated %s, %d events" % (
            self.what, "finished" if done else "progress", _human_ps(t),
            int(d.get("events", 0)))
        if until:
            line += " (%.1f%% of %s)" % (100.0 * t / until, _human_ps(until))
        print(line, file=sys.stderr, flush=True)


def reporter(progress, what):
    """``progress``: False/None (off), True (tqdm or lines), or a callable
    taking the dict itself."""
    if not progress:
        return None
    if callable(progress):
        return progress
    return Reporter(what)
