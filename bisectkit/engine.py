"""The bisection engine: pure, no git, no I/O.

Input: candidates ordered oldest to newest (the last one is the known-bad
end; the good end sits just before the first and is not listed) and the
verdicts known so far. Output: the next candidate to test, the first bad
commit, or the set of commits that only skips leave undecided.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
    mid = (lo + hi) / 2
    down, up = math.floor(mid), math.floor(mid) + 1
    pick = None
    while pick is None and (down > lo or up < hi):
        # Merge the two directions in (distance, index) order.
        take_down = down > lo and (up >= hi or (mid - down, down) <= (up - mid, up))
        i = down if take_down else up
        if take_down:
            down -= 1
        else:
            up += 1
        if lo < i < hi and candidates[i] not in verdicts:
            pick = i
    if pick is None:
        between = candidates[lo + 1:hi]
        skipped = [c for c in between if verdicts.get(c) == "skip"]
        if skipped:
            return Inconclusive((*skipped, candidates[hi]))
        return Found(candidates[hi])
    remaining = hi - lo - 1
    return Next(candidates[pick], remaining, steps_estimate(remaining))


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
