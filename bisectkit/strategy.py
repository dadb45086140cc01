"""What a bisection strategy provides to the pipeline, and the shared restore logic.

A strategy turns candidates into trees on disk: ``prepare`` works in memory
(and may say the candidate cannot be tested), ``checkout`` writes it with as
few file writes as git allows, ``restore`` puts every repository back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bisectkit.errors import BadInput
from bisectkit.git import CommitInfo, HeadState, Repo
from bisectkit.session import Session

#: Key of the superproject in :attr:`Session.orig`.
SUPERPROJECT = "."


@dataclass(frozen=True)
class Prepared:
    """A candidate made ready in memory."""

    candidate: str
    #: What a verdict depends on (tree ids and pins), for the verdict cache.
    trees: tuple[str, ...]
    #: Merged into the step record (``patches`` and/or ``submodules``).
    details: dict[str, Any] = field(default_factory=dict)
    #: Extra environment for the build and the repro.
    env: dict[str, str] = field(default_factory=dict)
    #: Set when the candidate cannot be tested; the step is skipped unbuilt.
    skip_reason: str | None = None
    #: Strategy-private description of what ``checkout`` writes.
    target: Any = None


class Strategy(ABC):
    """Candidates of one kind (upstream submodule commits, superproject commits)."""

    name: ClassVar[str]

    def __init__(self, superproject: Repo, session: Session) -> None:
        self.superproject = superproject
        self.session = session

    @abstractmethod
    def describe(self, sha: str) -> CommitInfo:
        """Subject, author, date of a candidate."""

    @abstractmethod
    def resolve(self, rev: str) -> str:
        """Full sha of a revision given on the command line (``good <rev>``)."""

    @abstractmethod
    def prepare(self, candidate: str) -> Prepared:
        """Compute, without touching any work tree, what testing ``candidate`` needs."""

    @abstractmethod
    def checkout(self, prepared: Prepared) -> int:
        """Write ``prepared`` to the work tree(s); return the number of files written."""

    @abstractmethod
    def header_lines(self) -> list[str]:
        """Lines describing the bisection, shown before the first step and by ``status``."""

    def prepare_pristine(self, commit: str) -> Prepared | None:
        """``commit`` without any local patches (``--check-stack``); None if not meaningful."""
        return None

    def followup(self, first_bad: str, rerun: Sequence[str]) -> list[str]:
        """Commands to run next once ``first_bad`` is known (``rerun``: the run options)."""
        return []

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        """Strategy-specific fields of the JSON result (``first_bad`` when found)."""
        return {}

    def restore(self) -> list[str]:
        """Put every repository back where the session found it; describe what moved."""
        moved = []
        for key, state in self.session.orig.items():
            repo = self.superproject if key == SUPERPROJECT else Repo(
                self.superproject.workdir / key)
            is_super = key == SUPERPROJECT
            # The superproject shows moved submodules as changes: not its own.
            dirty = repo.dirty_paths(ignore=repo.gitlinks() if is_super else ())
            if repo.head_state() != state or dirty:
                repo.restore(state)
                moved.append(f"{'superproject' if is_super else key} to {state.describe()}")
        return moved


def head_states(superproject: Repo, paths: Sequence[str]) -> dict[str, HeadState]:
    """The HEADs to restore: the superproject's and those of ``paths``."""
    states = {SUPERPROJECT: superproject.head_state()}
    for p in paths:
        states[p] = Repo(superproject.workdir / p).head_state()
    return states


def resolve_range(repo: Repo, bad_rev: str, good_revs: Sequence[str]) -> tuple[str, list[str]]:
    """Full shas of the bad and good revisions, each good an ancestor of bad (else BadInput)."""
    if not good_revs:
        raise BadInput("at least one good revision is needed")
    bad = repo.resolve(bad_rev)
    goods = [repo.resolve(g) for g in good_revs]
    for rev, sha in zip(good_revs, goods, strict=True):
        if sha == bad:
            raise BadInput(f"good revision '{rev}' is the bad revision itself")
        if not repo.is_ancestor(sha, bad):
            raise BadInput(f"good revision '{rev}' ({sha[:12]}) is not an ancestor of "
                           f"bad '{bad_rev}' ({bad[:12]})")
    return bad, goods
