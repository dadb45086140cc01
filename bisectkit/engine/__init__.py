"""The bisection engine: pure, no git, no I/O.

Input: candidates ordered oldest to newest (the last one is the known-bad
end; the good end sits just before the first and is not listed) and the
verdicts known so far. Output: the next candidate to test, the first bad
commit, or the set of commits that only skips leave undecided.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from bisectkit.model import Verdict, short


class ContradictoryVerdicts(ValueError):
    """A commit marked good is newer than a commit marked bad."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(f"{short(old)} is marked good but is not older than {short(new)}, "
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


@dataclass(frozen=True)
class Clear:
    """An open range (:mod:`bisectkit.engine.search`: the far end is not known bad) in which no
    candidate is bad: ``last_good`` is the newest good one (None: none is), and
    ``skipped`` the candidates after it that only skips cover (empty: it is the end)."""

    last_good: str | None
    skipped: tuple[str, ...] = ()


Decision = Next | Found | Inconclusive | Clear


def bounds(candidates: Sequence[str], verdicts: Mapping[str, Verdict]) -> tuple[int, int]:
    """Index of the newest good (``-1`` = the good end) and of the oldest bad candidate."""
    if not candidates:
        raise ValueError("no candidates")
    # Work from the verdicts (few) rather than the candidates (maybe 100k).
    pos = positions(candidates)
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
    pick = nearest(candidates, lo, hi, (lo + hi) / 2, lambda c: c not in verdicts)
    if pick is None:
        return end(candidates, verdicts, lo, hi)
    remaining = hi - lo - 1
    return Next(candidates[pick], remaining, steps_estimate(remaining))


def nearest(candidates: Sequence[str], lo: int, hi: int, aim: float,
            free: Callable[[str], bool]) -> int | None:
    """Index of the ``free`` candidate strictly between ``lo`` and ``hi`` nearest ``aim``,
    searching outwards, the lower one first on ties."""
    return nearest_index(lo, hi, aim, lambda i: free(candidates[i]))


def nearest_index(lo: int, hi: int, aim: float, free: Callable[[int], bool]) -> int | None:
    """:func:`nearest` on indices: the ``free`` index strictly between ``lo`` and ``hi``."""
    down, up = math.floor(aim), math.floor(aim) + 1
    while down > lo or up < hi:
        # Merge the two directions in (distance, index) order.
        take_down = down > lo and (up >= hi or (aim - down, down) <= (up - aim, up))
        i = down if take_down else up
        if take_down:
            down -= 1
        else:
            up += 1
        if lo < i < hi and free(i):
            return i
    return None


def end(candidates: Sequence[str], verdicts: Mapping[str, Verdict], lo: int,
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

    1. ``lo, hi = bounds(...)`` (:class:`ContradictoryVerdicts` as in :func:`decide`).
    2. ``lo``, ``hi`` and the in-flight candidates strictly between them are fixed
       points; consecutive ones bound the gaps ``(a, b)``.
    3. A candidate strictly inside a gap, with no verdict (good, bad or skip) and
       not in flight, is available.
    4. None available: wait (``Picks(())``) while a test in the range is in
       flight, else :func:`decide`'s answer (Found or Inconclusive).
    5. Each of the ``slots`` points goes, one at a time, to the gap where it most
       lowers the expected size left (a gap of length L = b - a holding m evenly
       spread points leaves L²/(m+1)), the lower gap on ties, never more points
       than the gap has available candidates.
    6. Point t of m in gap (a, b) aims at a + (b - a)·t/(m+1) and takes the
       nearest available candidate not yet picked, searching outwards, the lower
       first on ties: decide's midpoint search, so with nothing in flight and one
       slot the pick *is* decide's.
    7. The picks in candidate order, ``remaining = hi - lo - 1`` (as ``Next``) and
       ``rounds_left = rounds_estimate(remaining, workers or max(slots, 1))``.

    The marginal gains L²/((m+1)(m+2)) shrink as m grows (convex), so the greedy
    allocation is optimal, and k points started together split a range into k+1
    equal parts: that is what lets k workers shrink the range k+1 times a round.
    """
    lo, hi = bounds(candidates, verdicts)
    pos = positions(candidates)
    flying = {c for c in in_flight if c in pos and lo < pos[c] < hi}
    fixed = [lo, *sorted(pos[c] for c in flying), hi]
    gaps = [(a, b) for a, b in itertools.pairwise(fixed) if b - a > 1]
    # Counting stops at ``slots``: a gap never gets more, and a full count
    # would cost O(N) per call on a 100k range.
    room = {g: _room(candidates, verdicts, flying, *g, cap=max(slots, 1)) for g in gaps}
    remaining = hi - lo - 1
    rounds = rounds_estimate(remaining, workers or max(slots, 1))
    if not any(room.values()):
        if flying:
            return Picks((), remaining, rounds)
        return end(candidates, verdicts, lo, hi)
    points = _allocate(gaps, room, slots)
    picked: set[str] = set()
    for (a, b), m in points.items():
        for t in range(1, m + 1):
            i = nearest(candidates, a, b, a + (b - a) * t / (m + 1),
                         lambda c: c not in verdicts and c not in flying and c not in picked)
            if i is not None:  # always: the gap holds at least m available
                picked.add(candidates[i])
    return Picks(tuple(sorted(picked, key=pos.__getitem__)), remaining, rounds)


def _allocate(gaps: list[tuple[int, int]], room: Mapping[tuple[int, int], int],
              slots: int) -> dict[tuple[int, int], int]:
    """How many of ``slots`` points each gap gets: greedily where the expected size left,
    L²/(m+1) for a gap of length L holding m points, drops most; at most ``room[g]``."""
    points = dict.fromkeys(gaps, 0)
    for _ in range(slots):
        open_gaps = [g for g in gaps if points[g] < room[g]]
        if not open_gaps:
            break
        # Largest drop L²/(m+1) - L²/(m+2) first, compared exactly (Fraction) so
        # ties really go to the lower gap (max keeps the first of equals).
        best = max(open_gaps, key=lambda g: Fraction((g[1] - g[0]) ** 2,
                                                     (points[g] + 1) * (points[g] + 2)))
        points[best] += 1
    return points


def _room(candidates: Sequence[str], verdicts: Mapping[str, Verdict], flying: set[str],
          a: int, b: int, cap: int) -> int:
    """How many candidates strictly between ``a`` and ``b`` are available, counted up
    to ``cap`` (a gap never needs more points than there are slots to give it)."""
    count = 0
    for i in range(a + 1, b):
        c = candidates[i]
        if c not in verdicts and c not in flying:
            count += 1
            if count >= cap:
                break
    return count


def outside(candidates: Sequence[str], verdicts: Mapping[str, Verdict],
            in_flight: Collection[str]) -> list[str]:
    """The in-flight candidates no longer strictly inside the undecided range: their
    verdict cannot change the answer. In candidate order."""
    lo, hi = bounds(candidates, verdicts)
    pos = positions(candidates)
    return sorted((c for c in in_flight if c in pos and not lo < pos[c] < hi),
                  key=pos.__getitem__)


def rounds_estimate(remaining: int, workers: int) -> int:
    """Rounds of ``workers`` tests at once a range of ``remaining`` undecided commits
    needs: ceil(log_{workers+1}(remaining+1)), 0 for none; :func:`steps_estimate` for
    one worker. In integers: a floating log rounds exact powers the wrong way."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    rounds, reach = 0, 1
    while reach < remaining + 1:
        reach *= workers + 1
        rounds += 1
    return rounds


_POSITIONS: dict[int, tuple[Sequence[str], dict[str, int]]] = {}


def positions(candidates: Sequence[str]) -> dict[str, int]:
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
