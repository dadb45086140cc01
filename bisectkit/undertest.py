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

import bisectkit.gitcli as gitcli
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


#: What decides which tracked files a status looks at, per journal key: the sparse-checkout
#: settings and patterns, and the index entries marked skip-worktree or assume-unchanged.
Hidden = dict[str, tuple[bytes, frozenset[tuple[str, str]]]]


def hidden(placed: Placed) -> Hidden:
    """Taken when a step's build begins (compose with :func:`check`): a build that runs
    ``git sparse-checkout set`` or ``git update-index --skip-worktree``/
    ``--assume-unchanged`` hides a change from git status, so from :func:`check`;
    :func:`check_hidden` compares with this."""
    return {key: _hidden_in(repo) for key, (repo, _) in placed.items()}


def check_hidden(placed: Placed, before: Hidden, step: int, when: str, where: str = "") -> None:
    """Raise :class:`TreeMoved` unless each repository of ``placed`` hides what it hid in
    ``before`` (see :func:`hidden`), no more and no less."""
    for key, (repo, _) in placed.items():
        if key not in before:
            continue
        (settings, marked), (settings_then, marked_then) = _hidden_in(repo), before[key]
        if settings != settings_then:
            how = "its sparse checkout (core.sparseCheckout or the patterns) changed"
        elif marked != marked_then:
            tag, path = min(marked ^ marked_then)
            how = (f"{path} is {'now' if (tag, path) in marked else 'no longer'} marked "
                   "skip-worktree or assume-unchanged (git status does not look at such a "
                   "file)")
        else:
            continue
        raise TreeMoved(moved_message(key, step, when, how, where))


def _hidden_in(repo: Repo) -> tuple[bytes, frozenset[tuple[str, str]]]:
    """(sparse-checkout config and patterns, the entries git status does not look at)."""
    config = gitcli.run(repo.workdir, "config", "-z", "--get-regexp",
                        r"^core\.sparsecheckout").stdout.encode("utf-8", "surrogateescape")
    try:
        patterns = (repo.git_dir / "info" / "sparse-checkout").read_bytes()
    except OSError:
        patterns = b""
    return config + b"\0\0" + patterns, gitfiles.flagged(repo)
