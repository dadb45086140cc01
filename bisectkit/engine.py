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
from typing import Literal

Verdict = Literal["good", "bad", "skip"]
VERDICTS: tuple[Verdict, ...] = ("good", "bad", "skip")


class ContradictoryVerdicts(ValueError):
    """A commit marked good is newer than a commit marked bad."""


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
    hi = len(candidates) - 1
    for i, c in enumerate(candidates):
        if verdicts.get(c) == "bad":
            hi = i
            break
    lo = -1
    for i, c in enumerate(candidates):
        if verdicts.get(c) == "good":
            if i >= hi:
                raise ContradictoryVerdicts(
                    f"{c[:12]} is marked good but is not older than {candidates[hi][:12]}, "
                    "which is bad"
                )
            lo = i
    return lo, hi


def decide(candidates: Sequence[str], verdicts: Mapping[str, Verdict]) -> Decision:
    """Next step of the bisection given the verdicts known so far."""
    lo, hi = bounds(candidates, verdicts)
    between = range(lo + 1, hi)
    untested = [i for i in between if candidates[i] not in verdicts]
    if not untested:
        skipped = [candidates[i] for i in between if verdicts.get(candidates[i]) == "skip"]
        if skipped:
            return Inconclusive((*skipped, candidates[hi]))
        return Found(candidates[hi])
    # Nearest to the midpoint of the undecided range; git picks the same way
    # when skips fall on the midpoint, so the step count stays logarithmic.
    mid = (lo + hi) / 2
    pick = min(untested, key=lambda i: (abs(i - mid), i))
    remaining = hi - lo - 1
    return Next(candidates[pick], remaining, steps_estimate(remaining))


def steps_estimate(remaining: int) -> int:
    """Roughly how many more tests a range of ``remaining`` undecided commits needs."""
    return math.ceil(math.log2(remaining + 1)) if remaining > 0 else 0
