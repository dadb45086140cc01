"""Running the git CLI, for what it does better than libgit2 (fetch, read-tree, status).

Every command runs in its own session with the variables that would point
git at another repository removed, so it acts on ``cwd``'s repository and a
terminal Ctrl-C reaches bisectkit, never a git halfway through a write; and
with the settings it depends on pinned (:data:`PINNED`), whatever the user's
config says. Every git command bisectkit runs is built here (:func:`argv`).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Protocol

from bisectkit.errors import GitFailure


class Watch(Protocol):
    """Told about each git command that changes a repository: when it is about to start
    (the time; the lock files it takes), its ``pid`` once it runs, and when it ends (its
    exit status, negative for a signal), so that the journal can name a git that outlives
    bisectkit, and tell a lock file it left from somebody else's."""

    def starting(self, since: float, takes: tuple[str, ...]) -> None:
        """A git is about to start (killed before its pid is known, bisectkit leaves this)."""

    def spawned(self, pid: int, since: float, takes: tuple[str, ...]) -> None:
        """The git runs as ``pid``."""

    def exited(self, pid: int, status: int) -> None:
        """The git that ran as ``pid`` ended."""

    def patience(self) -> float:
        """How long to keep starting the git again while it fails on another git's lock
        file (0: never)."""


#: git's words when a lock file it needs exists ("Unable to create '.../index.lock': File
#: exists.", "cannot lock ref 'HEAD': Unable to create '.../HEAD.lock': File exists.").
_LOCKED = re.compile(r"\.lock'?: File exists")

#: Variables that would point git at another repository than ``cwd``'s, or cut its history.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                      "GIT_COMMON_DIR", "GIT_PREFIX",
                      # These cut the history git sees where libgit2 and the shallow
                      # boundary's checks (which read <git dir>/shallow) see no cut.
                      "GIT_GRAFT_FILE", "GIT_SHALLOW_FILE")


#: The settings every git command of bisectkit's depends on, pinned on its command line
#: (``-c`` comes after the user's, the system's and the repository's config, and after a
#: ``git -c`` around ``git bisect-patched``, so it wins). Not pinned, on purpose: what
#: decides the bytes of a file on disk (``core.autocrlf``, ``core.eol``, the filters of
#: ``.gitattributes`` such as Git LFS's smudge): the files bisectkit writes are those the
#: user's own checkout has, and a restore gives the same bytes back; nor
#: ``core.sparseCheckout`` (bisectkit follows the user's sparse checkout). Colours, pagers
#: and the output formats of ``log``/``diff``/``status`` need no pin: bisectkit reads
#: plumbing and porcelain formats only, which config does not change.
PINNED: tuple[tuple[str, str], ...] = (
    # bisectkit moves each submodule itself (to the commit it chose, its branch kept): a
    # read-tree or checkout that recursed would detach it; a fetch, fetch nested ones.
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    # No hook of the user's runs (post-checkout, reference-transaction, pre-auto-gc...): a
    # hook writing into the work tree would change the tree under test, or the restore.
    ("core.hooksPath", "/dev/null"),
    # The checks after a build compare every file's stat data: a file-system monitor that
    # has not seen a write yet would report the rewritten file as clean.
    ("core.fsmonitor", "false"),
    # No automatic gc or maintenance (detached, in the background) while refs move.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    # A full index stays full: libgit2 cannot read a sparse one (refused at the start).
    ("index.sparse", "false"),
    # A split index (core.splitIndex, recommended for big repositories) is one libgit2
    # cannot read: every index a git of bisectkit's writes is whole.
    ("core.splitIndex", "false"),
    # The checks after a build trust git status: with core.ignoreStat every file a
    # checkout writes would be marked assume-unchanged (status never looks at it again),
    # and checkStat=minimal or trustctime=false let a same-size rewrite pass as clean.
    ("core.ignoreStat", "false"),
    ("core.checkStat", "default"),
    ("core.trustctime", "true"),
)

_PINNED_ARGS = tuple(word for key, value in PINNED for word in ("-c", f"{key}={value}"))


def argv(*args: str) -> list[str]:
    """The command line of ``git args...`` with :data:`PINNED` (``args`` may start with
    git's own options, e.g. ``--no-optional-locks``)."""
    return ["git", *_PINNED_ARGS, *args]


def shown(*args: str | Path) -> str:
    """``git args...`` as a command for the user to paste: each word shell-quoted (a path
    with a space or a ``$(...)`` is one word, never a command), without the pins."""
    return shlex.join(["git", *map(str, args)])


def run(cwd: Path, *args: str, watch: Watch | None = None, takes: tuple[str, ...] = ()
        ) -> subprocess.CompletedProcess[str]:
    """Run ``git args...`` in ``cwd``; its exit status is the caller's to judge.

    ``watch`` is told when git starts (with ``takes``, the lock files it
    takes) and ends, so that the journal can name a git that outlives
    bisectkit; while git fails on a lock file another process holds (a
    ``git status`` in another terminal), it is started again for up to
    ``watch.patience()`` seconds: it failed before writing anything.
    """
    deadline = time.monotonic() + (watch.patience() if watch is not None else 0.0)
    pause = 0.05
    while True:
        proc = _once(cwd, args, watch, takes)
        if proc.returncode == 0 or not _LOCKED.search(proc.stderr) or \
                time.monotonic() + pause > deadline:
            return proc
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def _once(cwd: Path, args: tuple[str, ...], watch: Watch | None, takes: tuple[str, ...]
          ) -> subprocess.CompletedProcess[str]:
    # Its own session: a terminal Ctrl-C reaches bisectkit (which decides when
    # to stop), never a git halfway through writing the work tree or index.
    # surrogateescape: a path that is not UTF-8 (in an error, say) comes back as
    # os.fsdecode gives it, never as a UnicodeDecodeError.
    since = time.time()
    if watch is not None:
        watch.starting(since, takes)
    with subprocess.Popen(argv(*args), cwd=cwd, env=git_env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="surrogateescape", start_new_session=True) as proc:
        if watch is not None:
            watch.spawned(proc.pid, since, takes)
        out, err = proc.communicate()
    if watch is not None:
        # Exited by itself (any status) or by a signal it catches, git removed its lock
        # files: the journal says so, and no lock file found later is blamed on it.
        watch.exited(proc.pid, proc.returncode)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def checked(cwd: Path, what: str, *args: str, watch: Watch | None = None,
            takes: tuple[str, ...] = (), hint: str = "") -> subprocess.CompletedProcess[str]:
    """:func:`run` that raises :class:`GitFailure` (``what``, git's words on one line, ``hint``)."""
    proc = run(cwd, *args, watch=watch, takes=takes)
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}{hint}")
    return proc


def fed(cwd: Path, what: str, text: str, *args: str) -> None:
    """``git args...`` reading ``text`` on its stdin (``update-ref --stdin``); raises
    :class:`GitFailure` (``what``, git's words on one line) when it fails."""
    # Its own session, as every git of bisectkit's (see :func:`_once`).
    proc = subprocess.run(argv(*args), cwd=cwd, env=git_env(), input=text, text=True,
                          errors="surrogateescape", capture_output=True, check=False,
                          start_new_session=True)
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}")


def shown_to_user(cwd: Path, text: str, *args: str) -> int:
    """``git args...`` writing to the user's terminal (its pager, its colours), reading
    ``text`` on its stdin; its exit status. In bisectkit's own process group, unlike
    the gits that change things: a pager must own the terminal."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=git_env(), input=text, text=True,
                              errors="surrogateescape", check=False)
    except OSError as exc:
        raise GitFailure(f"cannot run git: {exc.strerror}") from exc
    return proc.returncode


def pager(cwd: Path) -> str:
    """The pager git would use in ``cwd`` (``git var GIT_PAGER``: ``GIT_PAGER``,
    ``core.pager``, ``PAGER``, else less)."""
    proc = subprocess.run(["git", "var", "GIT_PAGER"], cwd=cwd, env=git_env(), text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def read_bytes(cwd: Path, what: str, *args: str) -> bytes:
    """A read-only git command's stdout as bytes (so paths that are not UTF-8 survive).

    ``--no-optional-locks``: reading must not rewrite the index (``git status``
    refreshes its stat data otherwise) while bisectkit owns the work tree.
    """
    # Its own session, as every git of bisectkit's: a stop signal sent to bisectkit's
    # process group (a terminal's Ctrl-C, a CI killpg) must not cut a read short.
    proc = subprocess.run(argv("--no-optional-locks", *args), cwd=cwd, env=git_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, check=False,
                          start_new_session=True)
    if proc.returncode != 0:
        detail = " ".join(os.fsdecode(proc.stderr).split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}")
    return proc.stdout


def git_env() -> dict[str, str]:
    """This process's environment without the variables that redirect git."""
    return {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
