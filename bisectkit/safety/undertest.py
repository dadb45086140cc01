"""The tree under test: does each repository of a step still hold what it held?

A build or a repro runs for minutes in the user's repositories, and anything
may move them meanwhile: ``git submodule update`` in another terminal, an
IDE, a build script that updates its own submodules, an editor saving a
tracked script. A verdict is only worth recording for the tree that was
really tested, so the pipeline takes a :class:`Watch` when a step begins and
asks it after the build and again after the repro.

"Holds" (:class:`Held`) means: HEAD is the commit, and the index and the
tracked files on disk are that commit's tree, plus the edits the run began
with (the superproject of a manual session, where the strategy does not move
it). Untracked and ignored files (build outputs) do not count, nor do the
files a sparse checkout leaves out, nor the submodules of a repository (each
moved one is checked on its own: the superproject's gitlink of a moved
submodule differs by design). The cost is one ``git status`` per repository
(no untracked scan, no index write): git compares stat data and reads only
the files whose stat changed. A file git's filters make differ from its blob
(CRLF under ``text eol=lf``, a smudge filter) is judged by its checked-out
bytes, not by git status, which calls it modified right after its checkout.

A build that runs ``git sparse-checkout set`` or ``git update-index
--skip-worktree``/``--assume-unchanged`` hides a change from git status; the
watch also remembers the sparse-checkout settings and patterns and the index
entries so marked, and any change of them stops the step.

A move undone before the check (the build checks the pin out, reads it,
checks the step's commit out again) leaves the end state right, but not
HEAD's reflog: every HEAD move appends a line, even back to the same commit.
So the watch also remembers where ``logs/HEAD`` ended, and any line written
since that moved HEAD to another commit stops the step. ``git status``,
``git diff``, ``git fetch`` write no such line. A reflog rewritten during the
step (``git gc``, ``git reflog expire``) is no move while its newest line is
the one the step began with, and stops the step otherwise (a move cannot be
ruled out). Where there is no HEAD reflog (``core.logAllRefUpdates=false``
in a repository that never had one, the reftable backend), only the end
state is checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import bisectkit.git.files as gitfiles
from bisectkit.errors import TreeMoved
from bisectkit.git.repo import Repo
from bisectkit.model import SUPERPROJECT, short

#: A full commit id in a reflog message, told by its first 12 digits as everywhere else.
_FULL_ID = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{28,52}\b")
#: How far from its end the newest reflog line is looked for first (a line is ~200 bytes).
_TAIL = 4096


@dataclass(frozen=True)
class Held:
    """What one repository must still hold for a step's outcome to be a verdict."""

    repo: Repo
    #: The commit HEAD must name.
    commit: str
    #: Tracked paths that may differ from ``commit``, each with what its file held (blob
    #: id; None: no file) when the run began: none in a repository the step checked out.
    edits: Mapping[str, str | None] = field(default_factory=dict)
    #: Did the step check ``commit`` out (else the run found it there and leaves it)?
    checked_out: bool = True


#: What a step holds: journal key (``.`` or a submodule path) -> what that repository holds.
Placed = Mapping[str, Held]


def as_found(repo: Repo) -> Held:
    """``repo`` as it is now, its tracked edits included: what a run that never moves it
    holds it to (the superproject of ``--submodule``, ``--stack``, ``advance``)."""
    sha = repo.worktree.head_state().sha
    edited = gitfiles.really_changed(repo, sha,
                                     repo.worktree.local_changes(untracked=False).modified)
    return Held(repo, sha, {p: gitfiles.hash_on_disk(repo, p) for p in edited},
                checked_out=False)


def how_moved(held: Held) -> str | None:
    """How ``held.repo`` no longer holds what it must, at the end of it (None: it does)."""
    repo, commit = held.repo, held.commit
    head = repo.worktree.head_state().sha
    if head != commit:
        since = "the step checked it out" if held.checked_out else "when the run began"
        return f"HEAD is now {short(head)}, not {short(commit)} as {since}"
    # Not a file git's filters make differ from its blob (a CRLF file under `text eol=lf`
    # looks modified to git status right after its checkout): its bytes are the checkout's.
    now = gitfiles.really_changed(repo, commit,
                                  repo.worktree.local_changes(untracked=False).modified)
    changed = [p for p in now
               if p not in held.edits or gitfiles.hash_on_disk(repo, p) != held.edits[p]]
    changed += [p for p in held.edits if p not in now]  # an edit undone is a change too
    if not changed:
        return None
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    if held.checked_out:
        return f"{changed[0]}{more} no longer as in {short(commit)}, the commit checked out"
    return f"{changed[0]}{more} changed since the run began"


class Watch:
    """The repositories of one step, watched from its beginning (after its checkout):
    :meth:`check` stops the step when one no longer holds what it must, or moved meanwhile
    and came back. ``where`` names the workspace of a parallel step (empty: the user's)."""

    def __init__(self, placed: Placed, where: str = "") -> None:
        self.placed = placed
        self.where = where
        self._marks = {key: _mark(_reflog(held.repo)) for key, held in placed.items()}
        self._hidden = {key: _hidden_in(held.repo) for key, held in placed.items()}
        self._marked = {key: _stats(held.repo, self._hidden[key][1])
                        for key, held in placed.items()}

    def check(self, step: int, when: str) -> None:
        """Raise :class:`TreeMoved` unless every repository still holds what it must and
        none moved since the step began; ``when`` says at which point (``after the build``)."""
        for key, held in self.placed.items():
            how = (how_moved(held) or _came_back(held, self._marks[key])
                   or _how_hidden(held.repo, self._hidden[key])
                   or _marked_changed(held.repo, self._marked[key]))
            if how is not None:
                raise TreeMoved(moved_message(key, step, when, how, self.where))


def moved_message(key: str, step: int, when: str, how: str, where: str = "") -> str:
    """The one line saying the tree under test moved and that nothing was recorded."""
    name = "the superproject" if key == SUPERPROJECT else key
    return (f"{where}{name} changed during step {step} (seen {when}: {how}): another process "
            "changed it (a git command elsewhere, an editor, an IDE, the build itself); "
            "nothing was recorded for that step, and the next run tests it again")


# -- what git status does not look at ---------------------------------------------------
#: The sparse-checkout config and patterns, and the index entries marked skip-worktree or
#: assume-unchanged ((tag, path), see :func:`gitfiles.flagged`).
_Hidden = tuple[bytes, frozenset[tuple[str, str]]]


def _hidden_in(repo: Repo) -> _Hidden:
    # libgit2 rereads a config file that changed: no git process per check.
    config = "\0".join(repo.config_get(k) or "" for k in ("core.sparseCheckout",
                                                          "core.sparseCheckoutCone"))
    try:
        patterns = (repo.git_dir / "info" / "sparse-checkout").read_bytes()
    except OSError:
        patterns = b""
    return config.encode("utf-8", "surrogateescape") + b"\0\0" + patterns, \
        gitfiles.flagged(repo)


def _how_hidden(repo: Repo, then: _Hidden) -> str | None:
    """How ``repo`` hides other files from git status than it did (None: it does not)."""
    (settings, marked), (settings_then, marked_then) = _hidden_in(repo), then
    if settings != settings_then:
        return "its sparse checkout (core.sparseCheckout or the patterns) changed"
    if marked != marked_then:
        tag, path = min(marked ^ marked_then)
        return (f"{path} is {'now' if (tag, path) in marked else 'no longer'} marked "
                "skip-worktree or assume-unchanged (git status does not look at such a file)")
    return None


#: A marked path's (mode, size, mtime, ctime, inode); None: nothing there.
_Stat = tuple[int, int, int, int, int] | None


def _stats(repo: Repo, marked: frozenset[tuple[str, str]]) -> dict[str, _Stat]:
    """The stat data of each file git status does not look at (marked before the step,
    by the user or a sparse checkout): only they can tell that the build wrote one."""
    found: dict[str, _Stat] = {}
    for _, path in marked:
        try:
            st = os.lstat(repo.workdir / path)
        except OSError:
            found[path] = None
            continue
        found[path] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return found


def _marked_changed(repo: Repo, then: dict[str, _Stat]) -> str | None:
    """Which marked file was written, created or removed since ``then`` (None: none).
    Its stat data decide (the ctime no program can set back): a rewrite of the same bytes
    stops the step too, as nothing could tell it from a change."""
    now = _stats(repo, frozenset(("", path) for path in then))
    changed = sorted(path for path in then if now[path] != then[path])
    if not changed:
        return None
    return (f"{changed[0]} changed, and it is marked skip-worktree or assume-unchanged (git "
            "status does not look at such a file)")


# -- HEAD's reflog: a move undone leaves its lines -----------------------------------------
@dataclass(frozen=True)
class _Mark:
    """Where a reflog file ended: its size and its newest line (newline included)."""

    size: int
    last: bytes


def _reflog(repo: Repo) -> Path:
    # The files backend; a linked worktree's HEAD has its own under its private git dir.
    return repo.git_dir / "logs" / "HEAD"


def _mark(path: Path) -> _Mark:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return _Mark(size, _last_line(f, size))
    except FileNotFoundError:
        return _Mark(0, b"")


def _last_line(f: BinaryIO, size: int) -> bytes:
    back = _TAIL
    while True:
        start = max(0, size - back)
        f.seek(start)
        data = f.read(size - start)
        cut = data.rfind(b"\n", 0, len(data) - 1)
        if cut >= 0 or start == 0:
            return data[cut + 1:]
        back *= 4


def _came_back(held: Held, mark: _Mark) -> str | None:
    """Why HEAD's reflog says HEAD moved since ``mark`` (None: it does not)."""
    path = _reflog(held.repo)
    try:
        with open(path, "rb") as f:
            f.seek(mark.size - len(mark.last))
            data = f.read()
    except FileNotFoundError:
        data = b""
    if not data.startswith(mark.last):  # rewritten: its newest line is all that can tell
        if _mark(path).last == mark.last:
            return None
        return ("its HEAD reflog was rewritten meanwhile (git gc, git reflog expire?), so "
                "a move of HEAD cannot be ruled out")
    stay = held.commit.encode()
    for line in data[len(mark.last):].splitlines():
        old, new, rest = (line.split(b" ", 2) + [b"", b""])[:3]
        if old != stay or new != stay:  # a checkout of the same commit moves nothing
            said = _FULL_ID.sub(r"\1", rest.partition(b"\t")[2].decode("utf-8", "replace"))
            return f"HEAD moved meanwhile and came back (its reflog: {said[:160]!r})"
    return None
