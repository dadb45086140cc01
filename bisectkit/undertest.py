"""The tree under test: does each repository a step moved still hold what it checked out?

A build or a repro runs for minutes in the user's repositories, and anything
may move them meanwhile: ``git submodule update`` in another terminal, an
IDE, a build script that updates its own submodules. A verdict is only worth
recording for the tree that was really tested, so the pipeline asks
:func:`check` after the build and again after the repro.

"Holds" means: HEAD is the commit the step checked out, and the index and the
tracked files on disk are that commit's tree. Untracked and ignored files
(build outputs) do not count, nor do the files a sparse checkout leaves out,
nor the submodules of a repository (each moved one is checked on its own).
The cost is one ``git status`` per repository (no untracked scan, no index
write): git compares stat data and reads only the files whose stat changed.
"""

from __future__ import annotations

from collections.abc import Mapping

import bisectkit.gitfiles as gitfiles
from bisectkit.errors import TreeMoved
from bisectkit.git import Repo
from bisectkit.model import SUPERPROJECT

#: What a step checked out: journal key (``.`` or a submodule path) -> (repository, commit).
Placed = Mapping[str, tuple[Repo, str]]


def how_moved(repo: Repo, commit: str) -> str | None:
    """How ``repo`` no longer holds exactly ``commit`` (None: it does)."""
    head = repo.head_state().sha
    if head != commit:
        return f"HEAD is now {head[:12]}, not {commit[:12]} as the step checked it out"
    # Not a file git's filters make differ from its blob (a CRLF file under `text eol=lf`
    # looks modified to git status right after its checkout): its bytes are the checkout's.
    changed = gitfiles.really_changed(repo, commit, repo.local_changes(untracked=False).modified)
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return f"{changed[0]}{more} no longer as in {commit[:12]}, the commit checked out"
    return None


def check(placed: Placed, step: int, when: str, where: str = "") -> None:
    """Raise :class:`TreeMoved` unless every repository of ``placed`` still holds its
    commit; ``when`` says at which point (``after the build``), ``where`` names the
    workspace of a parallel step (empty: the user's repositories)."""
    for key, (repo, commit) in placed.items():
        how = how_moved(repo, commit)
        if how is not None:
            raise TreeMoved(moved_message(key, step, when, how, where))


def moved_message(key: str, step: int, when: str, how: str, where: str = "") -> str:
    """The one line saying the tree under test moved and that nothing was recorded."""
    name = "the superproject" if key == SUPERPROJECT else key
    return (f"{where}{name} changed during step {step} (seen {when}: {how}): another process "
            "moved it (a git command elsewhere, an IDE, the build itself); nothing was "
            "recorded for that step, and the next run tests it again")
