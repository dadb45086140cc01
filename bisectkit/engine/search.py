"""How the next candidate is chosen: a bisection's midpoint, or an advance's gallop or walk.

Pure, like :mod:`bisectkit.engine`. A bisection knows its last candidate is
bad (the bad end). An *advance* (``bisectkit advance``) does not: it asks how
far the pin can move toward upstream, so its range is **open**, the far end
as unknown as the rest, and the answer may be :class:`~bisectkit.engine.Clear`
(nothing is bad). Two open searches:

- **gallop**: test the far end first (often everything works); otherwise
  probe at distances 1, 2, 4, 8, ... from the newest good commit, never past
  the middle of what is left, then bisect between the last good probe and the
  first bad one: about 2·log2(d) tests when the first bad commit is d ahead.
- **linear**: each candidate in order, as integrators' loops do today.

With k workers the gallop runs ahead of its tests in flight (each is taken as
good for choosing the next probe: a bad one cancels those beyond it), and once
it reaches the middle, every free worker splits the largest gap left.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

from bisectkit import engine
from bisectkit.engine import (
    Clear,
    ContradictoryVerdicts,
    Decision,
    Found,
    Inconclusive,
    Next,
    Picks,
)
from bisectkit.model import Verdict

Verdicts = Mapping[str, Verdict]
Plan = Picks | Found | Inconclusive | Clear


class Search(Protocol):
    """The engine's questions, answered for one kind of session."""

    name: str
    #: Is the far end unknown (an advance), rather than known bad (a bisection)?
    open_end: bool

    def bounds(self, candidates: Sequence[str], verdicts: Verdicts) -> tuple[int, int]:
        """Index of the newest good candidate (-1: none) and of the oldest bad one (for an
        open search ``len(candidates)`` when none is); :class:`ContradictoryVerdicts`."""

    def decide(self, candidates: Sequence[str], verdicts: Verdicts) -> Decision:
        """The next candidate to test, or the answer."""

    def schedule(self, candidates: Sequence[str], verdicts: Verdicts,
                 in_flight: Collection[str], slots: int, workers: int | None = None) -> Plan:
        """Up to ``slots`` candidates for free workers, given the tests ``in_flight``."""

    def outside(self, candidates: Sequence[str], verdicts: Verdicts,
                in_flight: Collection[str]) -> list[str]:
        """The tests in flight whose verdict can no longer change the answer."""


class Bisect:
    """A bisection: the engine's own midpoint search (the last candidate is bad)."""

    name = "bisect"
    open_end = False

    def bounds(self, candidates: Sequence[str], verdicts: Verdicts) -> tuple[int, int]:
        return engine.bounds(candidates, verdicts)

    def decide(self, candidates: Sequence[str], verdicts: Verdicts) -> Decision:
        return engine.decide(candidates, verdicts)

    def schedule(self, candidates: Sequence[str], verdicts: Verdicts,
                 in_flight: Collection[str], slots: int, workers: int | None = None) -> Plan:
        return engine.schedule(candidates, verdicts, in_flight, slots, workers)

    def outside(self, candidates: Sequence[str], verdicts: Verdicts,
                in_flight: Collection[str]) -> list[str]:
        return engine.outside(candidates, verdicts, in_flight)


class _Open:
    """What the open searches share: bounds without a bad end, the answer, the schedule
    (one pick at a time by :meth:`_pick`, each pick taken as in flight for the next)."""

    name = "open"
    open_end = True

    def bounds(self, candidates: Sequence[str], verdicts: Verdicts) -> tuple[int, int]:
        pos = engine.positions(candidates)
        known = [(pos[c], v) for c, v in verdicts.items() if c in pos]
        hi = min((i for i, v in known if v == "bad"), default=len(candidates))
        wrong = [i for i, v in known if v == "good" and i >= hi]
        if wrong:
            raise ContradictoryVerdicts(candidates[min(wrong)], candidates[hi])
        return max((i for i, v in known if v == "good"), default=-1), hi

    def decide(self, candidates: Sequence[str], verdicts: Verdicts) -> Decision:
        plan = self.schedule(candidates, verdicts, (), 1)
        if not isinstance(plan, Picks):
            return plan
        return Next(plan.commits[0], plan.remaining, plan.rounds_left)

    def schedule(self, candidates: Sequence[str], verdicts: Verdicts,
                 in_flight: Collection[str], slots: int, workers: int | None = None) -> Plan:
        lo, hi = self.bounds(candidates, verdicts)
        pos = engine.positions(candidates)
        taken = {pos[c] for c in in_flight if c in pos and lo < pos[c] < hi}
        flying = bool(taken)
        picked: list[int] = []
        for _ in range(slots):
            i = self._pick(candidates, verdicts, lo, hi, taken)
            if i is None:
                break
            taken.add(i)
            picked.append(i)
        remaining = hi - lo - 1
        rounds = engine.rounds_estimate(remaining, workers or max(slots, 1))
        if picked or flying:
            return Picks(tuple(candidates[i] for i in sorted(picked)), remaining, rounds)
        return self._end(candidates, verdicts, lo, hi)

    def outside(self, candidates: Sequence[str], verdicts: Verdicts,
                in_flight: Collection[str]) -> list[str]:
        lo, hi = self.bounds(candidates, verdicts)
        pos = engine.positions(candidates)
        return sorted((c for c in in_flight if c in pos and not lo < pos[c] < hi),
                      key=pos.__getitem__)

    def _pick(self, candidates: Sequence[str], verdicts: Verdicts, lo: int, hi: int,
              taken: set[int]) -> int | None:
        raise NotImplementedError

    @staticmethod
    def _end(candidates: Sequence[str], verdicts: Verdicts, lo: int,
             hi: int) -> Found | Inconclusive | Clear:
        """The answer once nothing between ``lo`` and ``hi`` is left to test."""
        if hi < len(candidates):
            return engine.end(candidates, verdicts, lo, hi)
        return Clear(candidates[lo] if lo >= 0 else None,
                     tuple(c for c in candidates[lo + 1:] if verdicts.get(c) == "skip"))


class Gallop(_Open):
    """The far end first, then distances 1, 2, 4, ... from the newest good, then bisect."""

    name = "gallop"

    def _pick(self, candidates: Sequence[str], verdicts: Verdicts, lo: int, hi: int,
              taken: set[int]) -> int | None:
        n = len(candidates)

        def free(i: int) -> bool:
            return i not in taken and candidates[i] not in verdicts

        if hi == n and n - 1 > lo and free(n - 1):
            return n - 1
        # Probes in flight below the far end are taken as good: the gallop runs ahead.
        below = n - 1 if hi == n else hi
        frontier = max([lo, *(i for i in taken if i < below)])
        aim = 2 * frontier + 1 if frontier >= 0 else 0
        if aim < (frontier + hi) / 2:
            i = engine.nearest_index(frontier, hi, aim, free)
            if i is not None:
                return i
        return _split_largest(candidates, lo, hi, taken, free)


class Linear(_Open):
    """Each candidate in order after the newest good one (k workers: the next k)."""

    name = "linear"

    def _pick(self, candidates: Sequence[str], verdicts: Verdicts, lo: int, hi: int,
              taken: set[int]) -> int | None:
        for i in range(lo + 1, hi):
            if i not in taken and candidates[i] not in verdicts:
                return i
        return None


def _split_largest(candidates: Sequence[str], lo: int, hi: int, taken: set[int],
                   free: Callable[[int], bool]) -> int | None:
    """The free candidate nearest the middle of the largest gap between ``lo``, the tests
    ``taken`` and ``hi`` (the lower gap on ties): with nothing taken, a bisection's pick."""
    fixed = [lo, *sorted(i for i in taken if lo < i < hi), hi]
    gaps = sorted(itertools.pairwise(fixed), key=lambda g: (g[0] - g[1], g[0]))
    for a, b in gaps:
        i = engine.nearest_index(a, b, (a + b) / 2, free)
        if i is not None:
            return i
    return None


SEARCHES: dict[str, Search] = {s.name: s for s in (Bisect(), Gallop(), Linear())}


def named(name: str | None) -> Search:
    """The search a session's ``search`` parameter names (none: a bisection)."""
    return SEARCHES[name or "bisect"]
