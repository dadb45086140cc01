"""What the strategies share: the one copy of each check and text they all need.

The refusal of uncommitted changes (:func:`check_clean`), the ``BISECTKIT_*``
environment of the build and the repro (:func:`step_env`), and the base of the
strategies that replay a submodule's patch stack (:class:`PatchedSubmodule`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.git.shapes.base import Fetched
from bisectkit.model import SUPERPROJECT, CommitInfo, Upstream, short
from bisectkit.model.params import PatchedParams
from bisectkit.patches.stack import Patch, Stack, analyse, targets
from bisectkit.safety.undertest import Held, as_found
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session
from bisectkit.strategies.base import Prepared, Strategy
from bisectkit.text import fetched


def candidates_touching(repo: Repo, bad: str, goods: Sequence[str],
                        pathspec: Sequence[str], where: str) -> list[str]:
    """The first-parent candidates from ``goods`` to ``bad``; with a ``pathspec``, those
    changing its paths, and ``bad`` (the known end). Refused (exit 2) when no commit of the
    range changes them: a typo, or a path from another folder than ``where``'s root, would
    make ``bad`` the answer untested."""
    if not pathspec:
        return repo.first_parent_range(bad, goods)
    touching = repo.first_parent_range(bad, goods, list(pathspec), keep_tip=False)
    if not touching:
        raise BadInput(f"no commit between {short(goods[0])} and {short(bad)} changes "
                       f"{' '.join(pathspec)} (paths in {where}, from its root): nothing "
                       "to bisect")
    return touching if touching[-1] == bad else [*touching, bad]


def check_clean(superproject: Repo, subs: Mapping[str, Repo]) -> None:
    """Refuse (nothing touched) when the superproject or a submodule of ``subs`` (path ->
    repository) has local edits: a checkout would carry them into every step."""
    dirty = superproject.worktree.dirty_paths(ignore=superproject.worktree.gitlinks())
    if dirty:
        raise BadInput(_dirty_message("superproject", superproject, dirty))
    for path, sub in subs.items():
        dirty = sub.worktree.dirty_paths()
        if dirty:
            raise BadInput(_dirty_message(f"submodule {path}", sub, dirty))


def initialised_submodules(superproject: Repo) -> list[str]:
    """Paths of the submodules checked out in the superproject's work tree (sorted)."""
    return [p for p in sorted(superproject.worktree.gitlinks())
            if (superproject.workdir / p / ".git").exists()]


def _dirty_message(what: str, repo: Repo, dirty: list[str]) -> str:
    """The one-line refusal for a work tree with uncommitted changes."""
    more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
    return (f"{what} has uncommitted changes ({dirty[0]}{more} in {repo.workdir}); "
            "commit or stash them first")


def step_env(*, strategy: str | None = None, commit: str | None = None,
             submodule: str | None = None, patched: str | None = None,
             stack_patches: int | None = None, pins: Mapping[str, str | None] | None = None,
             step: int | None = None, workspace: str | None = None, job: int | None = None,
             jobs: int | None = None, actions: str | None = None,
             action_log: str | None = None, action_limit: int | None = None
             ) -> dict[str, str]:
    """The ``BISECTKIT_*`` variables the build and the repro see (README, "Environment").

    Every name is spelt here and only here; a value left ``None`` is not set.
    ``pins`` (integrate) gives ``BISECTKIT_SUBMODULES`` (JSON) and one
    ``BISECTKIT_SUBMODULE_<PATH>`` per pinned submodule.
    """
    env: dict[str, str] = {}
    for name, value in (("COMMIT", commit), ("SUBMODULE", submodule),
                        ("PATCHED_COMMIT", patched), ("STRATEGY", strategy),
                        ("STACK_PATCHES", stack_patches), ("STEP", step),
                        ("WORKSPACE", workspace), ("JOB", job), ("JOBS", jobs),
                        ("ACTIONS", actions), ("ACTION_LOG", action_log),
                        ("ACTION_LIMIT", action_limit)):
        if value is not None:
            env[f"BISECTKIT_{name}"] = str(value)
    if pins is not None:
        env["BISECTKIT_SUBMODULES"] = json.dumps(dict(pins), sort_keys=True)
        env.update({pin_variable(p): pin for p, pin in pins.items() if pin is not None})
    return env


def pin_variable(path: str) -> str:
    """``BISECTKIT_SUBMODULE_<PATH>``: the path upper-cased, non-alphanumerics as ``_``."""
    return "BISECTKIT_SUBMODULE_" + re.sub(r"[^A-Za-z0-9]", "_", path).upper()


def analysed(sub: Repo, head: str, upstream: str, extra: tuple[str, ...]
             ) -> tuple[Stack, dict[str, Any] | None]:
    """:func:`~bisectkit.patches.stack.analyse`, and the session parameter saying what a
    partial clone fetched for it (none for a full clone)."""
    mark = sub.promisor.total
    stack = analyse(sub, head, upstream, extra_upstream=extra)
    got = sub.promisor.total - mark
    return stack, (got.to_json() if got else None)


def fetch_lines(params: PatchedParams) -> list[str]:
    """The header line of what the patch-stack analysis fetched (a partial clone)."""
    got = params.analysis_fetched
    return [f"  patch-stack analysis: {fetched(got)}"] if got else []


def guess_lines(params: PatchedParams) -> list[str]:
    """The header line saying the upstream was guessed, and why (none when it was given)."""
    note = Upstream(params.upstream_ref, params.upstream, params.upstream_guessed).note()
    return [f"  {note}"] if note else []


def contained_patch(repo: Repo, stack: Stack, rev: str) -> Patch | None:
    """The oldest local patch that upstream revision ``rev`` contains, if any (a range
    that holds our own patches is refused). One question, whatever the stack's size: the
    patches are one first-parent line, the oldest an ancestor of all the others, so ``rev``
    contains one of them only if it contains the oldest."""
    if stack.patches and repo.is_ancestor(stack.patches[0].sha, rev):
        return stack.patches[0]
    return None


def ask_ahead(repo: Repo, stack: Stack, ask: Callable[[str], object]) -> None:
    """Ask now, at start, the ancestry questions the drop rules will ask about the
    candidates (``ask(target)``, for each target here): their answers go into the session,
    so that no later command of it asks them again, and in a shallow clone one its
    boundary leaves open raises ShallowCut before anything moves, never halfway through a
    bisection. A target this repository lacks is never asked about (the rules drop or
    keep its patch without it)."""
    for _, target in targets(stack.patches):
        if repo.try_resolve(target) is not None:
            ask(target)


def line_key(candidates: Sequence[str]) -> str:
    """What the answers about a candidate line are kept under: a digest of the whole list,
    so that another list (``--all-parents`` descending into a merge, a new start) never
    reads an answer given about positions in this one."""
    return hashlib.sha256("\n".join(candidates).encode("ascii")).hexdigest()


class KnownAncestry:
    """"Is A an ancestor of D?" asked once per session: the answers go into ``memo`` (the
    session's ``ancestry``, saved with it), so that the ``good``, ``bad``, ``run`` and
    ``status`` processes of a session read them instead of asking git again.

    Safe to keep: an answer is about two commits, which never change (``refs/replace``
    is not read), and a shallow clone's "no" is kept only once certain (an uncertain one
    raises, and is not kept); a fetch that deepens it only adds what was unknown.
    """

    def __init__(self, repo: Repo, memo: dict[str, Any]) -> None:
        self.repo = repo
        self._pairs: dict[str, bool] = memo.setdefault("pairs", {})

    def __call__(self, ancestor: str, descendant: str) -> bool:
        key = f"{ancestor} {descendant}"
        hit = self._pairs.get(key)
        if hit is None:
            hit = self.repo.is_ancestor(ancestor, descendant)
            self._pairs[key] = hit
        return hit


class LineAncestry:
    """"Is U in candidate C?" for candidates on one first-parent line, mostly without git.

    Along the line each candidate is an ancestor of the next, so the answer is
    monotonic in C's position: it is enough to know, once per U, the first
    candidate that contains it. A U on the line is its own answer; a U
    outside the range costs one or two graph queries; only a U on a side
    branch merged inside the range needs a binary search. The answers are
    kept in ``memo`` (the session's ``ancestry``) under the line's
    :func:`line_key`: asked at start, read by every later command of the session.
    """

    def __init__(self, repo: Repo, candidates: Sequence[str],
                 memo: dict[str, Any] | None = None) -> None:
        self.repo = repo
        self.candidates = candidates
        self.pos = {c: i for i, c in enumerate(candidates)}
        memo = {} if memo is None else memo
        key = line_key(candidates)
        if memo.get("line") != key:
            memo["line"], memo["first"] = key, {}
        self._first: dict[str, int] = memo["first"]
        #: Commits off the line (a good end, a commit between two candidates).
        self.off_line = KnownAncestry(repo, memo)

    def __call__(self, ancestor: str, commit: str) -> bool:
        i = self.pos.get(commit)
        if i is None:
            return self.off_line(ancestor, commit)
        return i >= self.first_containing(ancestor)

    def first_containing(self, ancestor: str) -> int:
        """Index of the first candidate that has ``ancestor`` (``len`` if none has)."""
        first = self._first.get(ancestor)
        if first is None or not 0 <= first <= len(self.candidates):
            first = self._search(ancestor)
            self._first[ancestor] = first
        return first

    def _search(self, ancestor: str) -> int:
        c = self.candidates
        if ancestor in self.pos:
            return self.pos[ancestor]
        if not self.repo.is_ancestor(ancestor, c[-1]):
            return len(c)
        if self.repo.is_ancestor(ancestor, c[0]):
            return 0
        lo, hi = 0, len(c) - 1  # c[lo] lacks it, c[hi] has it
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.repo.is_ancestor(ancestor, c[mid]):
                hi = mid
            else:
                lo = mid
        return hi


class PatchedSubmodule(Strategy):
    """What the strategies that replay a submodule's patch stack share."""

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        super().__init__(superproject, session, mover)
        self.params = session.params_as(PatchedParams)
        self.path = self.params.submodule
        _, self.sub = open_submodule(superproject, self.path)
        self.stack = Stack.from_json(self.params.stack)

    def target_argv(self) -> list[str]:
        return ["--submodule", self.path, "--upstream", self.params.upstream_ref,
                *self._parents_argv()]

    def stack_unchecked(self) -> str | None:
        if not self.params.patches:
            return f"not checked: submodule {self.path} has no local patches"
        return None

    @functools.cached_property
    def _super(self) -> Held:
        """The superproject as this run found it (HEAD, tracked edits). It never moves in
        these strategies, but the user may commit there between the runs of a manual
        session: the run's verdicts are keyed by this tree, and every step checks that
        the superproject still holds it (:meth:`under_test`)."""
        return as_found(self.superproject)

    @functools.cached_property
    def _super_tree(self) -> str:
        return self.superproject.tree_of(self._super.commit)

    def begin_run(self) -> None:
        """Read the superproject now, before the verdict cache's key: a change after this
        stops the step it happens in, never goes into a verdict keyed without it."""
        _ = self._super  # a cached property: read now, kept for the run

    @property
    def history(self) -> Repo:
        """Upstream commits or patches: commits of the submodule."""
        return self.sub

    def describe(self, sha: str) -> CommitInfo:
        return self.sub.commit_info(sha)

    def fetched(self) -> Fetched:
        return self.sub.promisor.total

    def resolve(self, rev: str) -> str:
        return self.sub.resolve(rev)

    def checkout(self, prepared: Prepared) -> int:
        """Write the patched commit to the submodule's work tree; files written."""
        return self.mover.checkout(self.path, self.sub, prepared.target)

    def under_test(self, prepared: Prepared) -> dict[str, Held]:
        """The submodule at the patched commit; the superproject as the run found it."""
        return {SUPERPROJECT: self._super, self.path: Held(self.sub, str(prepared.target))}

    def checkouts(self, patched: str) -> dict[str, str]:
        """What a workspace holds to test ``patched``: the superproject's commit as the run
        found it (the tree the verdict is keyed by)."""
        return {SUPERPROJECT: self._super.commit, self.path: patched}
