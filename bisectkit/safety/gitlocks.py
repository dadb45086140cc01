"""git's lock files in the repositories bisectkit moves: which exist, and which a git of ours left.

git takes ``index.lock`` to rewrite the index and ``<ref>.lock`` (``HEAD.lock``
included) to move a ref, and removes it when done, or when a signal it can
catch stops it. A git killed by SIGKILL (the OOM killer, a CI time limit,
``docker stop``: the whole process tree dies at once) leaves it behind, and
every later git there fails on it.

A lock file bisectkit did not create is never removed. One counts as left by
a git of ours only when all of this holds: a move of that repository is
journaled and not done, its gits are all recorded and all dead; one of them
has no recorded exit (or was killed by a signal git cannot catch), takes that
very file (``index.lock`` for read-tree, add --refresh and update-index, ``HEAD.lock`` for
update-ref and symbolic-ref of HEAD), started before the file appeared, and
the file the lock guards (the index, HEAD) was not replaced since it started
(then that git had let its lock go); the repository was seen free of lock
files when the move was announced (see :func:`free_since`; the move's journal
record holds the time); and no live git process works in the repository now.
Any other lock file is somebody else's: a restore waits a while for it to go,
then stops with one line naming it (exit 4, the journal kept), and a new
session refuses to start (exit 2, nothing touched).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path

from bisectkit.errors import BadInput, GitFailure
from bisectkit.git.repo import Repo
from bisectkit.model import GIT_PROG
from bisectkit.safety.journalrecords import Git, Move
from bisectkit.safety.processes import alive, gits_working_in

#: How long a restore waits for somebody else's lock file to go before it stops.
FOREIGN_LOCK_WAIT_S = 10.0
#: How long a session about to start, or a move about to be announced, waits for one
#: (an editor's ``git status`` holds ``index.lock`` for a moment now and then).
BRIEF_LOCK_WAIT_S = 2.0
#: File times come from a coarse clock, up to a tick behind the one ``time.time`` reads.
_CLOCK_SLACK_S = 0.05
#: The lock files the gits of a move (add --refresh, update-index, read-tree,
#: update-ref/symbolic-ref of a detached or symbolic HEAD) take: the only ones that can be ours.
_OURS = ("index.lock", "HEAD.lock")
#: Signals git cannot catch (or dies of without cleaning up): a git ended by one of them
#: may have left its lock files; one that exited any other way removed them.
_UNCATCHABLE = frozenset({signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT,
                          signal.SIGILL, signal.SIGFPE, signal.SIGSYS, signal.SIGTRAP,
                          signal.SIGXCPU, signal.SIGXFSZ})


def present(repo: Repo, branch: bool = False) -> list[Path]:
    """The lock files in ``repo`` now among ``index.lock``, ``HEAD.lock`` and (``branch``)
    the lock of the branch HEAD is on."""
    names = [repo.git_dir / name for name in _OURS]
    ref = _head_ref(repo.git_dir) if branch else None
    if ref is not None:
        names.append(_common_dir(repo.git_dir) / f"{ref}.lock")
    return [p for p in names if os.path.lexists(p)]


def refuse_locked(repo: Repo) -> None:
    """Before a session starts or goes on: refuse (:class:`BadInput`: nothing touched)
    while another git may be working in ``repo`` (one of its lock files exists)."""
    found = _gone_within(present(repo, branch=True), BRIEF_LOCK_WAIT_S)
    if found:
        raise BadInput(_held(found[0], repo, gits_working_in(_where(repo))))


def free_since(repo: Repo) -> float:
    """The time, then a check that ``repo`` holds none of the lock files a move takes
    (:class:`GitFailure` naming one if it does, after a brief wait: a ``git status`` in a
    loop elsewhere holds one now and then): a lock file found later that is older than
    this time is not the move's."""
    deadline = time.monotonic() + BRIEF_LOCK_WAIT_S
    while True:
        t = time.time()
        found = present(repo)
        if not found:
            return t
        if time.monotonic() >= deadline:
            raise GitFailure(_held(found[0], repo, gits_working_in(_where(repo)),
                                   f"; then run the command again or '{GIT_PROG} reset'"))
        time.sleep(0.02)


def settle(repo: Repo, pending: Move | None, note: Callable[[str], None]) -> bool:
    """Before a restore of ``repo``: wait for a git of ours that outlived a killed
    bisectkit, remove the lock files a git of ours left, wait a while for anybody
    else's (then :class:`GitFailure`). True if a git of ours died holding the index:
    what it half wrote is ours to undo."""
    gits = pending.gits if pending is not None else []
    waited = set()
    for git in gits:
        if git.pid is not None and alive(git.pid, git.started):
            note(f"waiting for git (pid {git.pid}) to finish changing {repo.workdir}")
            while alive(git.pid, git.started):
                time.sleep(0.05)
            waited.add(git.pid)  # it ended by itself: it took its lock files with it
    # Its lock file may be gone (an earlier restore removed it): the journal still says.
    died = pending is not None and any(
        _may_have_left(g, repo.git_dir / "index.lock", None)
        for g in pending.gits if g.pid not in waited)
    found = present(repo)
    if not found:
        return died
    live = gits_working_in(_where(repo))
    mine = [p for p in found if not live and _left_by(p, pending, waited)]
    for path in mine:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        note(f"removed {path}, left by a git of bisectkit's that was killed mid-change")
    _wait_for([p for p in found if p not in mine], repo, live)
    return died or repo.git_dir / "index.lock" in mine


def ref_locks(repo: Repo, refs: Iterable[str], index: bool = False) -> list[Path]:
    """The lock files git takes to write ``refs`` (full names; ``HEAD`` too, whose reflog
    an update of the branch it names also writes) and, with ``index``, the index."""
    common = _common_dir(repo.git_dir)
    names = [repo.git_dir / "HEAD.lock", common / "packed-refs.lock"]
    names += [common / f"{ref}.lock" for ref in refs]
    return [*names, repo.git_dir / "index.lock"] if index else names


def ref_write_locks(repo: Repo, ref: str) -> list[Path]:
    """The lock files ``git update-ref`` takes to create ``ref``: the ref's, and HEAD's when
    HEAD names that ref (HEAD's reflog is written too)."""
    locks = [_common_dir(repo.git_dir) / f"{ref}.lock"]
    return [*locks, repo.git_dir / "HEAD.lock"] if _head_ref(repo.git_dir) == ref else locks


def unjournaled_free(repos: Iterable[Repo], locks: Sequence[Path]) -> float:
    """For writes whose gits no journal names (``advance --apply``'s refs): the time, then
    a check that none of ``locks`` exists (:class:`BadInput` naming one if it does). A
    lock file found later that is newer than this time is the writes' (see
    :func:`clear_unjournaled`)."""
    _gone_within(locks, BRIEF_LOCK_WAIT_S)
    t = time.time()
    found = [p for p in locks if os.path.lexists(p)]
    if found:
        where = [w for r in repos for w in _where(r)]
        raise BadInput(f"{found[0]} exists: another git is running there "
                       f"({_who(gits_working_in(where))}); finish it, or remove the file "
                       "if no git is running")
    return t


def clear_unjournaled(repos: Iterable[Repo], locks: Sequence[Path], since: float | None,
                      note: Callable[[str], None]) -> None:
    """Remove those of ``locks`` that appeared after ``since`` (see
    :func:`unjournaled_free`) while no git works in ``repos`` any more: the writes' gits
    were killed holding them. Any other lock file is left for its owner."""
    found = [p for p in locks if os.path.lexists(p)]
    if since is None or not found:
        return
    if gits_working_in([w for r in repos for w in _where(r)]):
        return
    for path in found:
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(path).st_ctime >= since - _CLOCK_SLACK_S:
                path.unlink()
                note(f"removed {path}, left by a git of bisectkit's that was killed "
                     "mid-write")


def _left_by(path: Path, move: Move | None, waited: Collection[int] = ()) -> bool:
    """Did a git of ``move`` (all dead now; those in ``waited`` ended by themselves) leave
    ``path``? See the module's docstring."""
    if move is None or move.t is None or not move.gits or path.name not in _OURS:
        return False
    # A git never named (pid None) is seen, if it runs, by the caller's check that no git
    # works in the repository.
    if any(g.t is None or g.pid is not None and alive(g.pid, g.started) for g in move.gits):
        return False
    try:
        made = os.lstat(path).st_ctime
    except FileNotFoundError:
        return False
    return made >= move.t - _CLOCK_SLACK_S and \
        any(_may_have_left(g, path, made) for g in move.gits if g.pid not in waited)


def _may_have_left(git: Git, path: Path, made: float | None) -> bool:
    """Could ``git`` (dead) have left ``path``, a lock file made at ``made`` (``None``: the
    file is gone now), killed while it held it?"""
    if git.status is not None and -git.status not in _UNCATCHABLE:
        return False  # it exited by itself, or by a signal it catches: its locks went too
    if git.locks is None:  # an older journal: the move's time alone (checked by the caller)
        return True
    if path.name not in git.locks or git.t is None or \
            made is not None and made < git.t - _CLOCK_SLACK_S:
        return False
    # The file the lock guards (index, HEAD) replaced after the git started: the git got
    # its lock and let it go (nobody else can while it holds it), so this one is not its.
    try:
        return os.lstat(path.with_name(path.name.removesuffix(".lock"))).st_ctime <= git.t
    except FileNotFoundError:
        return True


def _gone_within(paths: Iterable[Path], seconds: float) -> list[Path]:
    """Wait up to ``seconds`` for ``paths`` to go; those still there."""
    # Looked at before the first pause: most calls find no lock, and a pause each would
    # cost every step of a run (each publishes refs/bisect/*) 50 ms for nothing.
    waiting = [p for p in paths if os.path.lexists(p)]
    deadline = time.monotonic() + seconds
    while waiting and time.monotonic() < deadline:
        time.sleep(0.05)
        waiting = [p for p in waiting if os.path.lexists(p)]
    return waiting


def _wait_for(paths: Iterable[Path], repo: Repo, live: list[tuple[int, str]]) -> None:
    """Give somebody else's lock files a while to go; :class:`GitFailure` if one stays."""
    waiting = _gone_within(paths, FOREIGN_LOCK_WAIT_S)
    if waiting:
        raise GitFailure(_held(waiting[0], repo, live or gits_working_in(_where(repo)),
                               f", then run '{GIT_PROG} reset' again"))


def _held(path: Path, repo: Repo, live: list[tuple[int, str]], then: str = "") -> str:
    """One line: whose lock file is in the way, and what to do."""
    return (f"{path} exists: another git is running in {repo.workdir} ({_who(live)}); "
            f"finish it, or remove the file if no git is running{then}")


def _who(live: list[tuple[int, str]]) -> str:
    return f"pid {live[0][0]}: {live[0][1]}" if live else "an open `git commit` editor?"


def _where(repo: Repo) -> list[Path]:
    return [repo.workdir, repo.git_dir]


def _head_ref(git_dir: Path) -> str | None:
    """The branch ``HEAD`` names (``refs/heads/...``), or None when detached or unreadable."""
    try:
        text = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    ref = text.removeprefix("ref: ").strip()
    return ref if text.startswith("ref: ") and ref.startswith("refs/") else None


def _common_dir(git_dir: Path) -> Path:
    """Where a linked work tree's refs live (its ``commondir``); else ``git_dir`` itself."""
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    return (git_dir / common).resolve()
