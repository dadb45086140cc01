"""``advance --apply``: what it checks, and the rebase it plans (objects only).

The stack is replayed by the rules every step used (:mod:`bisectkit.patches.stack`):
picks already upstream and reverts of absent commits dropped, a patch that
became empty left out (as ``git rebase`` does), a conflict refused before
anything is written. The rebased commits keep each patch's author, date and
message; the user commits them. What the apply builds on (:class:`Base`) is
read before the search and compared again just before the first write
(:mod:`bisectkit.strategies.pinwrite` writes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from bisectkit import safetext
from bisectkit.errors import BadInput
from bisectkit.git import cli as gitcli
from bisectkit.git import write as gitwrite
from bisectkit.git.repo import Repo
from bisectkit.model import HeadState, OnConflict, short
from bisectkit.patches.stack import PatchAction, Stack, conflict_reason, replay
from bisectkit.text import plural

#: Commits crossed listed one by one in a commit message (the rest are counted).
_LISTED = 40


def default_branch(now: datetime | None = None) -> str:
    """``sm-integrate-YYYYMMDD`` (today, UTC)."""
    return f"sm-integrate-{(now or datetime.now(UTC)):%Y%m%d}"


@dataclass(frozen=True)
class PinMove:
    """One superproject commit: the pin moved to upstream ``upstream`` plus the stack."""

    upstream: str
    #: The rebased stack's last commit (``upstream`` itself when no patch is left).
    tip: str
    actions: tuple[PatchAction, ...]
    #: Upstream candidates this move crosses, oldest first.
    crossed: tuple[str, ...]
    superproject_commit: str = ""


def check(superproject: Repo, path: str, sub: Repo, branch: str) -> None:
    """Refuse, before anything is tested, what would stop the apply at the end: a branch
    name taken or invalid, no committer identity, a pin the submodule does not hold."""
    for cwd in (sub.workdir, superproject.workdir):
        problem = gitwrite.committer_problem(cwd)
        if problem:
            raise BadInput(problem)
    problem = gitwrite.branch_problem(sub.workdir, branch)
    if problem:
        raise BadInput(problem)
    pinned = superproject.gitlink_at(superproject.worktree.head_state().sha, path)
    checked_out = sub.worktree.head_state().sha
    if pinned != checked_out:
        raise BadInput(f"submodule {path} is checked out at {short(checked_out)} but "
                       f"the superproject pins {short(str(pinned))}: commit that move or "
                       f"'{gitcli.shown('submodule', 'update', path)}' first, so --apply "
                       "moves the real pin")
    if gitwrite.staged_gitlink(superproject.workdir, path) != pinned:
        raise BadInput(f"the superproject's index stages another commit for {path}; "
                       "commit or unstage it first")


@dataclass(frozen=True)
class Base:
    """What ``--apply`` builds on: read when the advance starts, compared again before the
    first write (the search takes hours; the user may commit meanwhile)."""

    #: The superproject's HEAD (its branch and commit; the commit pins the submodule).
    head: HeadState
    #: The commit the superproject's index stages at the submodule's path.
    staged: str | None
    #: The submodule's HEAD (its branch and commit).
    sub: HeadState


def base(superproject: Repo, path: str, sub: Repo) -> Base:
    """The :class:`Base` the repositories hold now."""
    return Base(superproject.worktree.head_state(),
                gitwrite.staged_gitlink(superproject.workdir, path), sub.worktree.head_state())


def moved_since(superproject: Repo, path: str, sub: Repo, before: Base) -> str | None:
    """What moved since ``before``, or changed in the submodule's files (one phrase); None
    when the apply may build on it as planned."""
    now = base(superproject, path, sub)
    if now.head != before.head:
        return (f"the superproject's HEAD moved from {before.head.describe()} to "
                f"{now.head.describe()}")
    if now.staged != before.staged:
        return (f"the superproject's index now stages {short(str(now.staged))} for {path} "
                f"(was {short(str(before.staged))})")
    if now.sub != before.sub:
        return f"submodule {path} moved from {before.sub.describe()} to {now.sub.describe()}"
    # git's own status: it reads files through the user's filters (LFS, autocrlf) even
    # where the restore just rewrote them (stat data too fresh to trust).
    dirty = sub.worktree.local_changes(untracked=False).modified
    if dirty:
        return f"submodule {path} has uncommitted changes ({dirty[0]})"
    return None


def plan(sub: Repo, stack: Stack, on_conflict: OnConflict, targets: Sequence[str],
         crossed: Sequence[Sequence[str]]) -> list[PinMove]:
    """The stack rebased for real onto each of ``targets`` (objects only, no ref moved)."""
    moves = []
    for target, between in zip(targets, crossed, strict=True):
        replayed = replay(sub, stack, target, on_conflict=on_conflict)
        if replayed.conflict is not None:
            raise BadInput(f"cannot rebase the stack onto {short(target)}: "
                           f"{conflict_reason(replayed.conflict)}; nothing was changed")
        tip = target
        # Replay made one commit per applied patch (the patch's author, date and
        # message): the same again, committed by the user.
        for made in _chain(sub, replayed.commit or target, target):
            tip = gitwrite.commit_like(sub.workdir, sub.tree_of(made), tip, made)
        if sub.tree_of(tip) != replayed.tree:
            raise AssertionError(f"the rebased stack at {short(target)} is not the tree tested")
        moves.append(PinMove(target, tip, replayed.actions, tuple(between)))
    return moves


def _chain(sub: Repo, tip: str, base: str) -> list[str]:
    """First-parent commits from ``base`` (excluded) to ``tip``, oldest first."""
    chain = []
    while tip != base:
        chain.append(tip)
        tip = sub.commit_info(tip).parents[0]
    return chain[::-1]


def message(path: str, sub: Repo, move: PinMove, branch: str, tested: str) -> str:
    """"Advance P to <short>: <subject>", the commits crossed and each patch's fate (their
    control characters shown, :mod:`bisectkit.safetext`)."""
    info = sub.commit_info(move.upstream)
    lines = [f"Advance {path} to {short(move.upstream)}: {info.subject}", "",
             f"Crosses {plural(len(move.crossed), 'upstream commit')}:"]
    for sha in move.crossed[:_LISTED]:
        lines.append(f"  {short(sha)} {sub.commit_info(sha).subject}")
    if len(move.crossed) > _LISTED:
        lines.append(f"  ... and {len(move.crossed) - _LISTED} more")
    lines += ["", f"Patch stack on {short(move.upstream)} (branch {branch} at {short(move.tip)}):"]
    lines += [f"  {a.action:<8} {short(a.patch.sha)} {a.patch.subject}"
              f"{'' if a.action == 'applied' else f' ({a.why})'}" for a in move.actions]
    # Subjects and paths with their control characters shown: git log prints a message as is.
    return safetext.lines("\n".join([*lines, "", f"Tested by bisectkit advance: {tested}", ""]))
