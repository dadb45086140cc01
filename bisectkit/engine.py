"""The bisection engine: pure, no git, no I/O.

Input: candidates ordered oldest to newest (the last one is the known-bad
end; the good end sits just before the first and is not listed) and the
verdicts known so far. Output: the next candidate to test, the first bad
commit, or the set of commits that only skips leave undecided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from bisectkit.model import Verdict


class ContradictoryVerdicts(ValueError):
    """A commit marked good is newer than a commit marked bad."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(f"{old[:12]} is marked good but is not older than {new[:12]}, "
                         "which is bad")
        #: The commit marked good (the old side) and the bad one it is not older than.
        self.old = old
        self.new = new


@dataclass(frozen=True)
class Next:
    """Test ``commit`` next; ``remaining`` candidates are still undecided."""

    commit: str
    remaining: int
    steps_left: int


@dataclass(frozen=True)
class Found:
    """``first_bad`` is the first bad commit."""

    first_bad: str


@dataclass(frozen=True)
class Inconclusive:
    """Only skipped commits separate good from bad; any of ``candidates`` may be first bad."""

    candidates: tuple[str, ...]


Decision = Next | Found | Inconclusive


def bounds(candidates: Sequence[str], verdicts: Mapping[str, Verdict]) -> tuple[int, int]:
    """Index of the newest good (``-1`` = the good end) and of the oldest bad candidate."""
    if not candidates:
        raise ValueError("no candidates")
    # Work from the verdicts (few) rather than the candidates (maybe 100k).
    pos = _positions(candidates)
    known = [(pos[c], v) for c, v in verdicts.items() if c in pos]
    hi = min((i for i, v in known if v == "bad"), default=len(candidates) - 1)
    goods = [i for i, v in known if v == "good"]
    wrong = [i for i in goods if i >= hi]
    if wrong:
        raise ContradictoryVerdicts(candidates[min(wrong)], candidates[hi])
    return max(goods, default=-1), hi


def decide(candidates: Sequence[str], verdicts: Mapping[str, Verdict]) -> Decision:
    """Next step of the bisection given the verdicts known so far."""
    lo, hi = bounds(candidates, verdicts)
    # Nearest untested candidate to the midpoint, searching outwards (lower
    # first on ties); git picks the same way when skips fall on the midpoint,
    # so the step count stays logarithmic.
    pick = _nearest(candidates, lo, hi, (lo + hi) / 2, lambda c: c not in verdicts)
    if pick is None:
        return _end(candidates, verdicts, lo, hi)
    remaining = hi - lo - 1
    return Next(candidates[pick], remaining, steps_estimate(remaining))


def _nearest(candidates: Sequence[str], lo: int, hi: int, aim: float,
             free: Callable[[str], bool]) -> int | None:
    """Index of the ``free`` candidate strictly between ``lo`` and ``hi`` nearest ``aim``,
    searching outwards, the lower one first on ties."""
    down, up = math.floor(aim), math.floor(aim) + 1
    while down > lo or up < hi:
        # Merge the two directions in (distance, index) order.
        take_down = down > lo and (up >= hi or (aim - down, down) <= (up - aim, up))
        i = down if take_down else up
        if take_down:
            down -= 1
        else:
            up += 1
        if lo < i < hi and free(candidates[i]):
            return i
    return None


def _end(candidates: Sequence[str], verdicts: Mapping[str, Verdict], lo: int,
         hi: int) -> Found | Inconclusive:
    """The answer once nothing between ``lo`` and ``hi`` is left to test."""
    skipped = [c for c in candidates[lo + 1:hi] if verdicts.get(c) == "skip"]
    if skipped:
        return Inconclusive((*skipped, candidates[hi]))
    return Found(candidates[hi])


@dataclass(frozen=True)
class Picks:
    """Test ``commits`` next, one per free worker (none: every untested candidate in the
    range is in flight, wait for a verdict); ``remaining`` candidates are undecided."""

    commits: tuple[str, ...]
    remaining: int
    rounds_left: int


def schedule(candidates: Sequence[str], verdicts: Mapping[str, Verdict],
             in_flight: Collection[str], slots: int, workers: int | None = None
             ) -> Picks | Found | Inconclusive:
    """Up to ``slots`` candidates for free workers, given the tests ``in_flight``.

    The in-flight candidates inside the undecided range cut it into gaps. Each
    new point goes to the gap where it most reduces the expected size of what
    is left (a gap of length L holding m evenly spread points leaves L²/(m+1)),
    so k points started together split a range into k+1 equal parts: k workers
    shrink the range k+1 times per round. Within a gap the points aim at equal
    spacing and take the nearest untested candidate, as :func:`decide` does
    (with nothing in flight and one slot, the pick *is* decide's). With nothing
    left to test and nothing in flight, the answer (Found or Inconclusive).
    """
    lo, hi = bounds(candidates, verdicts)
    pos = _positions(candidates)
    flying = {c for c in in_flight if c in pos and lo < pos[c] < hi}
    fixed = [lo, *sorted(pos[c] for c in flying), hi]
    gaps = [(a, b) for a, b in zip(fixed, fixed[1:], strict=False) if b - a > 1]
    room = {g: _room(candidates, verdicts, flying, *g) for g in gaps}
    remaining = hi - lo - 1
    rounds = rounds_estimate(remaining, workers or max(slots, 1))
    if not any(room.values()):
        if flying:
            return Picks((), remaining, rounds)
        return _end(candidates, verdicts, lo, hi)
    points = dict.fromkeys(gaps, 0)
    for _ in range(slots):
        open_gaps = [g for g in gaps if points[g] < room[g]]
        if not open_gaps:
            break
        # Largest drop of L²/(m+1) first; ties: the lower gap (max keeps the first).
        best = max(open_gaps, key=lambda g: (g[1] - g[0]) ** 2 / ((points[g] + 1) *
                                                                   (points[g] + 2)))
        points[best] += 1
    picked: set[str] = set()
    for (a, b), m in points.items():
        for t in range(1, m + 1):
            i = _nearest(candidates, a, b, a + (b - a) * t / (m + 1),
                         lambda c: c not in verdicts and c not in flying and c not in picked)
            if i is not None:
                picked.add(candidates[i])
    return Picks(tuple(sorted(picked, key=pos.__getitem__)), remaining, rounds)


def _room(candidates: Sequence[str], verdicts: Mapping[str, Verdict], flying: set[str],
          a: int, b: int) -> int:
    """How many candidates strictly between ``a`` and ``b`` could be tested (capped: a gap
    never needs more points than there are workers to give it)."""
    count = 0
    for i in range(a + 1, b):
        c = candidates[i]
        if c not in verdicts and c not in flying:
            count += 1
            if count >= 64:
                break
    return count


def outside(candidates: Sequence[str], verdicts: Mapping[str, Verdict],
            in_flight: Collection[str]) -> list[str]:
    """The in-flight candidates no longer strictly inside the undecided range: their
    verdict cannot change the answer. In candidate order."""
    lo, hi = bounds(candidates, verdicts)
    pos = _positions(candidates)
    return sorted((c for c in in_flight if c in pos and not lo < pos[c] < hi),
                  key=pos.__getitem__)


def rounds_estimate(remaining: int, workers: int) -> int:
    """Rounds of ``workers`` tests at once a range of ``remaining`` undecided commits
    needs: ceil(log_{workers+1}(remaining+1)), in integers (no rounding error)."""
    rounds, reach = 0, 1
    while reach < remaining + 1:
        reach *= workers + 1
        rounds += 1
    return rounds


_POSITIONS: dict[int, tuple[Sequence[str], dict[str, int]]] = {}


def _positions(candidates: Sequence[str]) -> dict[str, int]:
    """Index of every candidate, memoised per candidate list (it never changes in a session)."""
    cached = _POSITIONS.get(id(candidates))
    if cached is None or cached[0] is not candidates:
        cached = (candidates, {c: i for i, c in enumerate(candidates)})
        _POSITIONS.clear()
        _POSITIONS[id(candidates)] = cached
    return cached[1]


def steps_estimate(remaining: int) -> int:
    """Roughly how many more tests a range of ``remaining`` undecided commits needs."""
    return math.ceil(math.log2(remaining + 1)) if remaining > 0 else 0
