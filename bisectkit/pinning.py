"""``advance --apply``: rebase the patch stack onto the new upstream commit for real and
commit the new pin in the superproject.

The stack is replayed by the rules every step used (:mod:`bisectkit.patchstack`):
picks already upstream and reverts of absent commits dropped, a patch that
became empty left out (as ``git rebase`` does), a conflict refused before
anything is written. The rebased commits keep each patch's author, date and
message; the user commits them. Everything is computed first (objects only);
then the submodule branch is created, the superproject's index made to pin
the new commit and its HEAD moved from the commit it must still be on (stop
signals held meanwhile).
The work trees are not touched: ``git -C <submodule> checkout <branch>``
puts the new pin on disk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bisectkit import gitwrite, safetext, signals
from bisectkit.display import plural
from bisectkit.errors import BadInput
from bisectkit.fileio import write_json_atomic
from bisectkit.git import Repo
from bisectkit.gitobjects import GITLINK_MODE
from bisectkit.merge import TreeEntry
from bisectkit.model import OnConflict
from bisectkit.patchstack import PatchAction, Stack, replay
from bisectkit.strategies.common import conflict_reason

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
    pinned = superproject.gitlink_at(superproject.head_state().sha, path)
    checked_out = sub.head_state().sha
    if pinned != checked_out:
        raise BadInput(f"submodule {path} is checked out at {checked_out[:12]} but "
                       f"the superproject pins {str(pinned)[:12]}: commit that move or "
                       f"'git submodule update {path}' first, so --apply moves the real pin")
    if gitwrite.staged_gitlink(superproject.workdir, path) != pinned:
        raise BadInput(f"the superproject's index stages another commit for {path}; "
                       "commit or unstage it first")


def plan(sub: Repo, stack: Stack, on_conflict: OnConflict, targets: Sequence[str],
         crossed: Sequence[Sequence[str]]) -> list[PinMove]:
    """The stack rebased for real onto each of ``targets`` (objects only, no ref moved)."""
    moves = []
    for target, between in zip(targets, crossed, strict=True):
        replayed = replay(sub, stack, target, on_conflict=on_conflict)
        if replayed.conflict is not None:
            raise BadInput(f"cannot rebase the stack onto {target[:12]}: "
                           f"{conflict_reason(replayed.conflict)}; nothing was changed")
        tip = target
        # Replay made one commit per applied patch (the patch's author, date and
        # message): the same again, committed by the user.
        for made in _chain(sub, replayed.commit or target, target):
            tip = gitwrite.commit_like(sub.workdir, sub.tree_of(made), tip, made)
        if sub.tree_of(tip) != replayed.tree:
            raise AssertionError(f"the rebased stack at {target[:12]} is not the tree tested")
        moves.append(PinMove(target, tip, replayed.actions, tuple(between)))
    return moves


def _chain(sub: Repo, tip: str, base: str) -> list[str]:
    """First-parent commits from ``base`` (excluded) to ``tip``, oldest first."""
    chain = []
    while tip != base:
        chain.append(tip)
        tip = sub.commit_info(tip).parents[0]
    return chain[::-1]


def write(superproject: Repo, path: str, sub: Repo, moves: list[PinMove], branch: str,
          messages: Sequence[str], record: Path) -> list[PinMove]:
    """Create ``branch`` (and ``branch-step-N`` for earlier moves), commit each move in the
    superproject on top of HEAD, move HEAD, and stage the last pin.

    The commits exist before anything moves; ``record`` names the moves about
    to happen, so that :func:`settle` finishes or undoes them after a kill.
    """
    head = superproject.head_state().sha
    parent, done = head, []
    for move, message in zip(moves, messages, strict=True):
        tree = superproject.merger.edit_tree(
            superproject.tree_of(parent), {path: TreeEntry(move.tip, GITLINK_MODE)})
        parent = gitwrite.commit(superproject.workdir, tree, parent, message)
        done.append(PinMove(move.upstream, move.tip, move.actions, move.crossed, parent))
    branches = [(f"{branch}-step-{n}", m.tip) for n, m in enumerate(moves[:-1], 1)]
    branches.append((branch, moves[-1].tip))
    staged = gitwrite.staged_gitlink(superproject.workdir, path)
    write_json_atomic(record, {"path": path, "old": head, "new": parent, "staged": staged,
                               "tip": moves[-1].tip, "branches": branches})
    note = f"bisectkit advance: {path} to {moves[-1].upstream[:12]}"
    # Ctrl-C (or a closed terminal) waits until every ref is written: the writes below
    # are not one transaction. A SIGKILL between them is settled from ``record``.
    with signals.held():
        try:
            for name, tip in branches:
                gitwrite.create_branch(sub.workdir, name, tip, note)
            # The index before HEAD: cut in between, the new pin is left staged on the old
            # HEAD (the move asked for). The other order left HEAD advanced with the old
            # pin staged: a revert of the advance that the next 'git commit' would make.
            gitwrite.stage_gitlink(superproject.workdir, path, moves[-1].tip)
            gitwrite.move_head(superproject.workdir, parent, head, note)
        except BadInput:  # a branch or HEAD moved by someone else meanwhile
            _undo(superproject, path, staged, branches)
            record.unlink()
            raise
        record.unlink()
    return done


def settle(superproject: Repo, record: Path) -> list[str]:
    """Finish (HEAD already moved: stage the new pin) or undo (HEAD not moved: the pin
    staged before, the new branches deleted) an apply a kill cut short; what was done.
    Idempotent: a kill during it is settled by the next command."""
    if not record.exists():
        return []
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        path, old, new, tip = data["path"], data["old"], data["new"], data["tip"]
        staged = data["staged"]
        branches = [(str(n), str(s)) for n, s in data["branches"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadInput(f"{record} (an interrupted advance --apply) cannot be read ({exc}); "
                       "check the superproject's HEAD and index, then delete it") from exc
    head = superproject.head_state().sha
    if head == new:
        if gitwrite.staged_gitlink(superproject.workdir, path) != tip:
            gitwrite.stage_gitlink(superproject.workdir, path, tip)
        line = f"finished an interrupted advance --apply: the index now pins {path} at {tip[:12]}"
    elif head == old:
        gone = _undo(superproject, path, staged, branches)
        line = ("undid an interrupted advance --apply: the superproject had not moved"
                + (f"; removed branch {', '.join(gone)} in {path}" if gone else ""))
    elif _contains(superproject, head, new):
        line = (f"an interrupted advance --apply had finished: its commit {new[:12]} is in "
                "the superproject's history")
    else:
        # HEAD moved away from ``old`` by the user's own hand, the apply not done: nothing is
        # finished or undone (a commit of the user's may pin a new branch), but the branches
        # it made are named, or they would be found later only as "branch exists".
        sub = superproject.workdir / path
        kept = [n for n, sha in branches if gitwrite.branch_sha(sub, n) == sha]
        line = ("an interrupted advance --apply left a record, but the superproject's HEAD "
                "has moved since (not by the apply): nothing was finished or undone"
                + (f"; it left branch {', '.join(kept)} in {path} (delete them if no commit "
                   "pins them)" if kept else ""))
    record.unlink()
    return [line]


def _contains(superproject: Repo, head: str, commit: object) -> bool:
    """Whether ``commit`` is in ``head``'s history (False when the record names no commit
    of this repository)."""
    found = superproject.try_resolve(commit) if isinstance(commit, str) and commit else None
    return found is not None and superproject.is_ancestor(found, head)


def _undo(superproject: Repo, path: str, staged: str | None,
          branches: Sequence[tuple[str, str]]) -> list[str]:
    """Put back the pin the index staged and delete the new branches; those deleted."""
    if staged is not None and gitwrite.staged_gitlink(superproject.workdir, path) != staged:
        gitwrite.stage_gitlink(superproject.workdir, path, staged)
    sub = superproject.workdir / path
    return [n for n, sha in branches if gitwrite.delete_branch(sub, n, sha)]


def message(path: str, sub: Repo, move: PinMove, branch: str, tested: str) -> str:
    """"Advance P to <short>: <subject>", the commits crossed and each patch's fate (their
    control characters shown, :mod:`bisectkit.safetext`)."""
    info = sub.commit_info(move.upstream)
    lines = [f"Advance {path} to {move.upstream[:12]}: {info.subject}", "",
             f"Crosses {plural(len(move.crossed), 'upstream commit')}:"]
    for sha in move.crossed[:_LISTED]:
        lines.append(f"  {sha[:12]} {sub.commit_info(sha).subject}")
    if len(move.crossed) > _LISTED:
        lines.append(f"  ... and {len(move.crossed) - _LISTED} more")
    lines += ["", f"Patch stack on {move.upstream[:12]} (branch {branch} at {move.tip[:12]}):"]
    lines += [f"  {a.action:<8} {a.patch.sha[:12]} {a.patch.subject}"
              f"{'' if a.action == 'applied' else f' ({a.why})'}" for a in move.actions]
    # Subjects and paths with their control characters shown: git log prints a message as is.
    return safetext.lines("\n".join([*lines, "", f"Tested by bisectkit advance: {tested}", ""]))
