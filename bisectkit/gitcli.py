"""Running the git CLI, for what it does better than libgit2 (fetch, read-tree, status).

Every command runs in its own session with the variables that would point
git at another repository removed, so it acts on ``cwd``'s repository and a
terminal Ctrl-C reaches bisectkit, never a git halfway through a write.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from bisectkit.errors import GitFailure

#: Told the pid of a git command as soon as it runs.
Spawned = Callable[[int], None]

#: Variables that would point git at another repository than ``cwd``'s.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                      "GIT_COMMON_DIR", "GIT_PREFIX")


def run(cwd: Path, *args: str, on_spawn: Spawned | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Run ``git args...`` in ``cwd``; its exit status is the caller's to judge.

    ``on_spawn`` gets git's pid as soon as it runs, so that the journal can
    name a git that outlives bisectkit.
    """
    # Its own session: a terminal Ctrl-C reaches bisectkit (which decides when
    # to stop), never a git halfway through writing the work tree or index.
    # surrogateescape: a path that is not UTF-8 (in an error, say) comes back as
    # os.fsdecode gives it, never as a UnicodeDecodeError.
    with subprocess.Popen(["git", *args], cwd=cwd, env=git_env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="surrogateescape", start_new_session=True) as proc:
        if on_spawn is not None:
            on_spawn(proc.pid)
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def checked(cwd: Path, what: str, *args: str, on_spawn: Spawned | None = None,
            hint: str = "") -> subprocess.CompletedProcess[str]:
    """:func:`run` that raises :class:`GitFailure` (``what``, git's words on one line, ``hint``)."""
    proc = run(cwd, *args, on_spawn=on_spawn)
    if proc.returncode != 0:
        detail = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}{hint}")
    return proc


def read_bytes(cwd: Path, what: str, *args: str) -> bytes:
    """A read-only git command's stdout as bytes (so paths that are not UTF-8 survive).

    ``--no-optional-locks``: reading must not rewrite the index (``git status``
    refreshes its stat data otherwise) while bisectkit owns the work tree.
    """
    proc = subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd, env=git_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if proc.returncode != 0:
        detail = " ".join(os.fsdecode(proc.stderr).split()) or f"exit {proc.returncode}"
        raise GitFailure(f"{what}: {detail}")
    return proc.stdout


def git_env() -> dict[str, str]:
    """This process's environment without the variables that redirect git."""
    return {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
