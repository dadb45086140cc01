"""How the next candidate is chosen: a bisection's midpoint, or an advance's split or walk.

Pure, like :mod:`bisectkit.engine`. A bisection knows its last candidate is
bad (the bad end). An *advance* (``bisectkit advance``) does not: it asks how
far the pin can move toward upstream, so its range is **open**, the far end
as unknown as the rest, and the answer may be :class:`~bisectkit.engine.Clear`
(nothing is bad). Two open searches:

- **gallop** (the name sessions keep): the far end first (often everything
  works), then splits biased toward the pin, so that a first failure d
  candidates ahead costs about a gallop's 2·ceil(log2(d+1)) + 2 builds and never
  more than a bisection's ceil(log2(N+1)) + 1 (N candidates, both counts with
  the far end and, for d = 1, the pin's confirmation that the CLI adds).
- **linear**: each candidate in order, as integrators' loops do today.

Why both bounds hold. An outcome is the index b of the first bad candidate
(N: none). Any search is a binary tree: a test at candidate i sends the
outcomes <= i one way and those > i the other, and outcome b costs its depth,
the tests on its path. Kraft: outcomes fit at depths D(b) only if the weights
2^-D(b) sum to at most 1, and, when D does not decrease with b, that is
enough. The targets (:class:`Targets`): D(N) = 1 (the far end alone answers
"nothing is bad") and, for b < N, the lesser of the bisection bound and the
gallop bound plus E (one less for b = 0: the confirmation is a build), E the
least excess whose weights fit. E = 0 for N from 2^j to about 1.25·2^j
(N = 300: 0; N = 400: 1) and grows as N nears 2^(j+1) - 1, where a bisection
has no test to spare. Kraft being necessary, no search within the bisection
bound promises less than the gallop bound plus E for every d.

The split: outcomes lo+1 .. hi weighing S fit under a node k tests deep when
S <= 2^-k; take the deepest such k and test the lowest candidate i leaving
each side at most 2^-(k+1). One exists: the weights are powers of 2 that do
not grow with b, so their running sum from lo+1 meets 2^-(k+1) exactly, and
the i there qualifies (the lowest is nearer the pin). The whole range weighs
at most 1 (k >= 0 tests so far); each side of a split fits one test deeper
than its range, so k is never below the tests already on the path, and a
lone outcome b has k = D(b): it is found within D(b) tests. k comes from the
range alone, not from a count of tests: a cached or hand-given verdict only
makes a range lighter. A range that holds N and more weighs over 1/2, and
outcome N alone 1/2: the lowest split is the far end.

A skip costs a test without splitting: the search takes the lowest free
candidate whose sides still fit, when there is one (that skip then costs one
build more), else the free one nearest, as a bisection steps around skips:
the answer stays exact (skips only ever leave it open), the bounds do not.
With k workers (the bounds are one worker's) each test in flight cuts the
range as its verdict will, and each free worker splits the part that weighs
most: on 400 candidates, three start with the far end, c143 and c271.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
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
    """The far end first, then splits biased toward the pin within the bisection's cost
    (:class:`Targets`; the module's docstring says why both bounds hold)."""

    name = "gallop"

    def _pick(self, candidates: Sequence[str], verdicts: Verdicts, lo: int, hi: int,
              taken: set[int]) -> int | None:
        def free(i: int) -> bool:
            return i not in taken and candidates[i] not in verdicts

        goal = targets(len(candidates))
        fixed = [lo, *sorted(i for i in taken if lo < i < hi), hi]
        # Each test in flight cuts the range in two, as its verdict will: the free worker
        # splits the part the targets weigh most (one worker: the whole range).
        for a, b in sorted(itertools.pairwise(fixed), key=lambda g: (-goal.weight(*g), g)):
            i = goal.split(a, b, free)
            if i is not None:
                return i
        return None


class Linear(_Open):
    """Each candidate in order after the newest good one (k workers: the next k)."""

    name = "linear"

    def _pick(self, candidates: Sequence[str], verdicts: Verdicts, lo: int, hi: int,
              taken: set[int]) -> int | None:
        for i in range(lo + 1, hi):
            if i not in taken and candidates[i] not in verdicts:
                return i
        return None


def near_bound(d: int) -> int:
    """A gallop's builds for a first failure ``d`` candidates after the pin, the far end
    and the pin's confirmation included: 2·ceil(log2(d+1)) + 2."""
    return 2 * _ceil_log2(d + 1) + 2


def bisection_bound(n: int) -> int:
    """A bisection's builds for ``n`` candidates once the far end tested bad, that test
    included: ceil(log2(n+1)) + 1."""
    return _ceil_log2(n + 1) + 1


@dataclass(frozen=True)
class Targets:
    """How many tests each outcome of an open range of ``n`` candidates may cost at most
    (:meth:`depth`), and the split that keeps every outcome within it (:meth:`split`).

    An outcome is the index of the first bad candidate, ``n`` when none is. Weights
    are Kraft's 2^-depth, in units of 2^-``cap`` so that they are integers."""

    n: int
    #: The bisection bound: no outcome costs more.
    cap: int
    #: The least excess over :func:`near_bound` the cap leaves room for (Kraft).
    excess: int

    def depth(self, b: int) -> int:
        """The most tests outcome ``b`` costs, the far end included (the pin's
        confirmation, when ``b`` is 0, is one of the builds :func:`near_bound` counts)."""
        if b >= self.n:
            return 1
        return min(self.cap, near_bound(b + 1) + self.excess) - (b == 0)

    @functools.cached_property
    def _runs(self) -> tuple[tuple[int, int, int], ...]:
        """(first outcome, weight of each, weight before) of each run of outcomes b < n
        with one depth: b + 1 in [2^(j-1), 2^j), O(log n) of them."""
        runs, j, before = [], 1, 0
        while (first := (1 << (j - 1)) - 1) < self.n:
            each = 1 << (self.cap - self.depth(first))
            runs.append((first, each, before))
            before += (min((1 << j) - 1, self.n) - first) * each
            j += 1
        return tuple(runs)

    def below(self, x: int) -> int:
        """The weight of the outcomes before ``x``."""
        if x > self.n:
            return self.below(self.n) + (1 << (self.cap - 1))
        for first, each, before in reversed(self._runs):
            if first < x:
                return before + (x - first) * each
        return 0

    def weight(self, lo: int, hi: int) -> int:
        """The weight of the outcomes ``lo+1 .. hi`` (``lo`` good, ``hi`` bad)."""
        return self.below(hi + 1) - self.below(lo + 1)

    def split(self, lo: int, hi: int, free: Callable[[int], bool]) -> int | None:
        """The candidate to test between ``lo`` and ``hi``: the lowest of those leaving
        each side at most half of what the range may weigh, or, when ``free`` rules
        them all out (skips, tests in flight), the free one nearest the lowest."""
        if hi - lo < 2:
            return None
        # The range fits a subtree k tests deep: the deepest k with weight <= 2^-k.
        k = self.cap - _ceil_log2(self.weight(lo, hi))
        half = 1 << max(self.cap - k - 1, 0)
        upper = self.below(hi + 1)
        # Some i qualifies (see the module's docstring); min() only keeps i in the range.
        low = min(_first(lo + 1, hi - 1, lambda i: upper - self.below(i + 1) <= half), hi - 1)
        if free(low):
            return low
        base = self.below(lo + 1)
        high = _first(low, hi - 1, lambda i: self.below(i + 1) - base > half) - 1
        within = next((i for i in range(low + 1, high + 1) if free(i)), None)
        return within if within is not None else engine.nearest_index(lo, hi, low, free)


@functools.lru_cache(maxsize=8)
def targets(n: int) -> Targets:
    """The targets for ``n`` candidates: the least excess whose weights fit (sum <= 1)."""
    cap = bisection_bound(n)
    excess = 0
    while Targets(n, cap, excess).below(n + 1) > 1 << cap:
        excess += 1
    return Targets(n, cap, excess)


def _ceil_log2(x: int) -> int:
    """ceil(log2(x)) for x >= 1, in integers (a floating log rounds powers of 2 wrong)."""
    return (x - 1).bit_length()


def _first(lo: int, hi: int, holds: Callable[[int], bool]) -> int:
    """The first i in [lo, hi] where ``holds`` (monotone: false, then true), hi + 1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


SEARCHES: dict[str, Search] = {s.name: s for s in (Bisect(), Gallop(), Linear())}


def named(name: str | None) -> Search:
    """The search a session's ``search`` parameter names (none: a bisection)."""
    return SEARCHES[name or "bisect"]
