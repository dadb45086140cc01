"""What in a repository a restore is about to rewrite is the user's: refused, never lost.

A restore (:meth:`bisectkit.safety.worktree.Mover.reconcile`) rewrites index and
files from whatever the disk holds. Not the user's, so rewritten: what a
checkout of the index's or the target's tree writes (a status may call such a
file modified: see :mod:`bisectkit.git.files`), and at a path that a move a
kill cut short was writing, what its git left: one side of the move, or, that
git killed mid-write, nothing or the beginning of one side (git unlinks a
file, then writes the new one front to back). Anything else (an edit made
after the kill, a staged change) is the user's: :class:`GitFailure` (exit 4),
nothing touched.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable

import bisectkit.git.files as gitfiles
from bisectkit.errors import GitFailure
from bisectkit.git.repo import Repo
from bisectkit.git.trees import TreeDiff
from bisectkit.model import GIT_PROG
from bisectkit.safety.journalrecords import Move


def refuse(key: str, repo: Repo, trees: tuple[str, str], pending: Move | None,
           died: bool, ignore: Iterable[str], lost: bool, clean: bool = False
           ) -> TreeDiff | None:
    """Raise :class:`GitFailure` if index or files hold a change of the user's.

    ``trees``: what the index holds now, and the restore's target. Not the
    user's: a file that is a checkout of what the index or the target holds
    (writing it again loses nothing: a status may call such a file modified,
    see :mod:`bisectkit.git.files`), nor, at a path ``pending`` (a move a kill
    cut short) was writing, one side of that move, or, its git killed
    (``died``), what that git could have left: nothing, or the beginning of
    one side. Anything else is the user's. ``lost``: the journal was lost,
    so a change left unexplained may still be bisectkit's: the line says how
    to keep it either way. ``clean``: git has just found every file (not in ``ignore``)
    as the index has it, so only the index and the files git does not look at are
    checked. Returns ``pending``'s diff (``None`` without one).
    """
    index_tree, target = trees
    explained = {repo.worktree.head_tree(), target}
    if pending is not None:
        explained |= {pending.old.tree, pending.new.tree}
    if index_tree not in explained:
        raise GitFailure(_unexplained(key, repo, "has staged changes", str(repo.workdir),
                                      "commit or unstage them", lost))
    moved = (repo.trees.diff_trees(pending.old.tree, pending.new.tree)
             if pending is not None else None)
    moving = set(moved.paths) if moved is not None else set()
    changed = [] if clean else repo.worktree.worktree_changes(ignore=set(ignore))
    edits = [p for p in changed if not _explained(repo, p, (index_tree, target),
                                                  pending if p in moving else None, died)]
    if edits:
        more = f" and {len(edits) - 1} more" if len(edits) > 1 else ""
        raise GitFailure(_unexplained(key, repo, "has local changes",
                                      f"{edits[0]}{more} in {repo.workdir}",
                                      "move local edits out of the way", lost))
    _refuse_hidden(key, repo, set(repo.trees.diff_trees(index_tree, target).paths) | moving)
    return moved


def _refuse_hidden(key: str, repo: Repo, touched: set[str]) -> None:
    """Raise :class:`GitFailure` if a file the restore writes holds a change git status
    does not show (its entry marked skip-worktree or assume-unchanged): git refuses to
    write over it, and it may be the user's."""
    if not touched:
        return
    hidden = sorted((p, tag) for tag, p in gitfiles.flagged(repo) if p in touched and
                    os.path.lexists(repo.workdir / p) and
                    not gitfiles.holds(repo, p, [repo.worktree.index_entry(p)]))
    if hidden:
        path, tag = hidden[0]
        marks = [m for m, on in (("skip-worktree", tag in "Ss"),
                                 ("assume-unchanged", tag.islower())) if on]
        unmark = " && ".join(f"git -C {shlex.quote(str(repo.workdir))} update-index --no-{m} "
                             f"-- {shlex.quote(path)}" for m in marks)
        raise GitFailure(f"{name(key)} has a change git status does not show ({path} in "
                         f"{repo.workdir} is marked {' and '.join(marks)} and differs from "
                         f"the index); keep it if it is yours, then run '{unmark}' and "
                         f"'{GIT_PROG} reset' again")


def _explained(repo: Repo, path: str, trees: tuple[str, str], moving: Move | None,
               died: bool) -> bool:
    """Is what ``path`` holds not the user's (see :func:`refuse`)?"""
    if gitfiles.holds(repo, path, [repo.trees.entry_at(t, path) for t in trees]):
        return True
    if moving is None:
        return False
    if not os.path.lexists(repo.workdir / path):
        return True  # put back, it loses nothing (a checkout removes a file before writing)
    sides = [repo.trees.entry_at(moving.old.tree, path), repo.trees.entry_at(moving.new.tree, path)]
    return (gitfiles.trace_of if died else gitfiles.holds)(repo, path, sides)


def _unexplained(key: str, repo: Repo, what: str, where: str, fix: str, lost: bool) -> str:
    """One line: a change a restore will not overwrite, and what to do about it."""
    if not lost:
        return f"{name(key)} {what} ({where}); {fix}, then run '{GIT_PROG} reset' again"
    # Without the journal they may be what a killed checkout wrote: not blamed on the
    # user, and kept either way.
    return (f"{name(key)} {what} ({where}) that bisectkit cannot account for (its journal "
            f"is lost; they may be yours): keep them with "
            f"'git -C {shlex.quote(str(repo.workdir))} stash', "
            f"then run '{GIT_PROG} reset' again")


def name(key: str) -> str:
    """How a journal key is named in a line (``.``: the superproject)."""
    return "superproject" if key == "." else f"submodule {key}"
