"""Where each conflicting local patch of a submodule bisect stops applying.

From the steps of a session, the first conflicting candidate after the last
one where the patch applied cleanly; between those two the stack is replayed
in memory (no checkout, no build) to find the exact first-parent commit.
When that is not possible (an earlier patch stops the replay) the answer
says "between" instead of naming a commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bisectkit.git.repo import Repo
from bisectkit.model import OnConflict, StepRecord, short
from bisectkit.patches.stack import Stack, conflicted, replay
from bisectkit.store.session import Session
from bisectkit.strategies.common import LineAncestry


class StopsApplying:
    """The ``stops_applying`` entries of one submodule session (JSON-ready dicts)."""

    def __init__(self, sub: Repo, stack: Stack, session: Session, ancestry: LineAncestry,
                 on_conflict: OnConflict, upto: int | None = None) -> None:
        self.sub = sub
        self.stack = stack
        self.session = session
        self.ancestry = ancestry
        self.on_conflict: OnConflict = on_conflict
        #: Only candidates up to this position count (an advance: its first bad commit,
        #: where the conflict stopped it; what it tested beyond does not move that).
        self.upto = upto

    def entries(self) -> list[dict[str, Any]]:
        """Each local patch that conflicts at some prepared candidate: from where it does."""
        states = _local_patch_states(self.session.steps, self.ancestry.pos)
        if self.upto is not None:
            states = {sha: {i: c for i, c in seen.items() if i <= self.upto}
                      for sha, seen in states.items()}
        found: list[dict[str, Any]] = []
        for index, patch in enumerate(self.stack.patches):
            seen = states.get(patch.sha, {})
            if patch.kind != "local" or not any(seen.values()):
                continue
            entry = self._boundary(index, seen)
            if entry is not None:
                found.append(entry)
        return found

    def _boundary(self, index: int, seen: dict[int, bool]) -> dict[str, Any] | None:
        """The entry of ``stack.patches[index]`` (``seen``: candidate position -> conflicts)."""
        c = self.session.candidates
        clean = [i for i, conflicts in seen.items() if not conflicts]
        last_clean: str | None
        if clean:
            after = [i for i, conflicts in seen.items() if conflicts and i > max(clean)]
            if not after:
                return None  # it applies again at the newest candidate tried: nothing to rebase
            last_clean, first_conflict = c[max(clean)], c[min(after)]
        else:
            first_conflict = c[min(seen)]
            # No candidate had it apply: the good end may (the range starts before
            # the conflict), which is all the narrowing needs.
            last_clean = self._clean_good_end(index, first_conflict)
            if last_clean is None:
                return self._entry(index, first_conflict, None, exact=False)
        last_clean, first_conflict = self._narrow(index, last_clean, first_conflict)
        # Exact only when nothing lies between: the conflicting commit's first parent
        # is the clean one (with a pathspec, candidates are not adjacent commits).
        exact = self.sub.commit_info(first_conflict).parents[:1] == (last_clean,)
        return self._entry(index, first_conflict, last_clean, exact)

    def _prefix(self, index: int) -> Stack:
        """The stack up to and including patch ``index``: later ones cannot change its fate."""
        return Stack(self.stack.head, self.stack.merge_base, self.stack.patches[:index + 1])

    def _clean_good_end(self, index: int, first_conflict: str) -> str | None:
        """A good end, older than ``first_conflict``, where patch ``index`` applies cleanly."""
        for good in self.session.good:
            if (self.ancestry(good, first_conflict)
                    and self._conflicts_at(self._prefix(index), good) is False):
                return good
        return None

    def _narrow(self, index: int, clean: str, conflict: str) -> tuple[str, str]:
        """Bisect, in memory, the first-parent line between a clean and a conflicting commit.

        Returns the last clean and the first conflicting commit found (adjacent
        unless an earlier patch stopped a replay on the way).
        """
        line = self.sub.first_parent_range(conflict, [clean])  # oldest first, ends at conflict
        prefix = self._prefix(index)
        lo, hi = -1, len(line) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            conflicts = self._conflicts_at(prefix, line[mid])
            if conflicts is None:
                break  # an earlier patch stopped the replay: this one was not tried there
            if conflicts:
                hi = mid
            else:
                lo = mid
        return (clean if lo < 0 else line[lo]), line[hi]

    def _conflicts_at(self, prefix: Stack, commit: str) -> bool | None:
        """Whether the last patch of ``prefix`` conflicts at ``commit``; None if not tried."""
        replayed = replay(self.sub, prefix, commit, self.ancestry, self.on_conflict)
        if len(replayed.actions) < len(prefix.patches):
            return None
        last = replayed.actions[-1]
        if last.conflicts:
            return True
        return False if last.action in ("applied", "empty") else None

    def _entry(self, index: int, first_conflict: str, last_clean: str | None,
               exact: bool) -> dict[str, Any]:
        """One ``stops_applying`` item of the JSON result, with the line shown for it."""
        patch = self.stack.patches[index]
        subject = self.sub.commit_info(first_conflict).subject
        name = f'local patch {short(patch.sha)} "{patch.subject}"'
        if last_clean is None:
            message = (f"{name} conflicts at every tested candidate from {first_conflict} "
                       f"{subject}; rebase it onto that commit")
        elif exact:
            message = (f"{name} stops applying at {first_conflict} {subject} (applied cleanly "
                       f"at {short(last_clean)}); rebase it onto that commit")
        else:
            message = (f"{name} stops applying between {short(last_clean)} (applied cleanly) and "
                       f"{first_conflict} {subject} (conflicts), the commits between could "
                       f"not be checked; rebase it onto {short(first_conflict)}")
        return {"patch": patch.sha, "subject": patch.subject, "first_conflict": first_conflict,
                "first_conflict_subject": subject, "last_clean": last_clean, "exact": exact,
                "message": message}


def _local_patch_states(steps: Sequence[StepRecord],
                        positions: dict[str, int]) -> dict[str, dict[int, bool]]:
    """Per local patch: candidate position -> whether it conflicted there, from step records.

    Positions where the replay stopped before the patch (an earlier conflict)
    are absent: whether it applies there is unknown.
    """
    states: dict[str, dict[int, bool]] = {}
    for step in steps:
        pos = positions.get(step.commit)
        if pos is None:  # the good end (--verify-range) or not a candidate
            continue
        for p in step.patches:
            if p["kind"] != "local":
                continue
            if p["action"] in ("applied", "empty"):
                states.setdefault(p["commit"], {})[pos] = False
            elif conflicted(p["action"], p["why"]):
                states.setdefault(p["commit"], {})[pos] = True
    return states
