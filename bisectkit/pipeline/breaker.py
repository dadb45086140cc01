"""The circuit breakers of a run: steps skipped in a row stop it (exit 3).

Two limits on one streak of the steps the run builds and tests (in the order they
are recorded: with ``--jobs``, the order they finish):

- ``--max-env-skips`` (default 3): skips the machine decided (``environment``: a
  timeout, a command that cannot run, a driver missing): the next ones would fail
  the same;
- ``--max-skips`` (default 10): skips the repro decided for the same reason (``exit
  125``, ``timed out``, an output rule...): a repro that always exits 125 would
  otherwise build every candidate for an answer that can only be "inconclusive".

Steps decided without a build never count and never break a streak: a local patch
that conflicts (a long range where it does not apply is the history, not a broken
repro, and costs nothing) and a verdict from the cache. A failed build ends a streak
and starts none: a range where upstream's build is broken is history too, and the
search walks through it one neighbour at a time (the midpoint's nearest untested
candidate, as git), so 20 broken upstream commits around the midpoint give 10 build
failures in a row in a bisection that still finds its answer.
"""

from __future__ import annotations

from bisectkit.errors import MachineSkips, SkipsInARow
from bisectkit.model import StepRecord


def skip_kind(reason: str) -> str:
    """The class of a skip's ``reason``: its text less what changes from step to step
    (an exit status of the build, a duration, the line a shell said)."""
    text = reason.split(";", 1)[0]  # "; outside the range by then, not counted" (--jobs)
    for kind in ("build failed", "timed out"):
        if text.startswith(kind):
            return kind
    return text.split(": ", 1)[0]


class SkipBreaker:
    """Counts the skips in a row of the steps a run tested; raises when one limit is hit
    (a limit of 0 never stops)."""

    def __init__(self, max_env_skips: int, max_skips: int) -> None:
        self.max_env_skips, self.max_skips = max_env_skips, max_skips
        self._machine = 0
        self._same = 0
        self._kind: str | None = None

    def tested(self, record: StepRecord) -> None:
        """Count ``record``, a step the run built and tested: raise :class:`MachineSkips`
        or :class:`SkipsInARow` when the streak reaches its limit."""
        if record.verdict != "skip":
            self._machine, self._same, self._kind = 0, 0, None
            return
        self._machine = self._machine + 1 if record.environment else 0
        if self.max_env_skips and self._machine >= self.max_env_skips:
            raise MachineSkips(self._machine, record.reason)
        kind = skip_kind(record.reason)
        if kind == "build failed":
            self._same, self._kind = 0, None
            return
        self._same = self._same + 1 if kind == self._kind else 1
        self._kind = kind
        if self.max_skips and self._same >= self.max_skips:
            raise SkipsInARow(self._same, kind)
