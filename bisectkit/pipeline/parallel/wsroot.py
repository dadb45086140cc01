"""The folder the workspaces live in: their names, the marker that says bisectkit made
one, their locks (``ws-N.lock``, an ``flock`` the kernel drops when its holder dies),
listing and pruning.

Only a folder ``ws-N`` whose ``.git`` holds the marker is a workspace: a
``--workspace-root`` may be a folder of the user's, and a folder of theirs is
never checked out over nor removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bisectkit.git import cli as gitcli

#: A workspace's name; the file in its ``.git`` that says bisectkit made it.
_NAME = re.compile(r"ws-(\d+)")
MARKER = "bisectkit-workspace"


def ours(path: Path) -> bool:
    """Did bisectkit make the workspace ``path``?"""
    return (path / ".git" / MARKER).is_file()


def foreign(root: Path) -> list[Path]:
    """Folders under ``root`` named like a workspace that bisectkit did not make."""
    return [p for p in sorted(root.glob("ws-*")) if _NAME.fullmatch(p.name) and
            not ours(p) and (p.is_file() or any(p.iterdir()))]


@dataclass(frozen=True)
class Found:
    """A workspace on disk, for ``bisectkit workspaces``."""

    path: Path
    busy: bool
    #: The superproject commit it last held (None: never checked out).
    commit: str | None
    last_used: float | None


def listing(root: Path) -> list[Found]:
    """The workspaces under ``root``, oldest name first."""
    found = []
    for path in sorted(root.glob("ws-*"), key=number):
        if not _NAME.fullmatch(path.name) or not ours(path):
            continue
        busy = _try_lock(path, probe=True) is None
        head = gitcli.run(path, "rev-parse", "-q", "--verify", "HEAD").stdout.strip()
        stamp = path / ".git" / "index"
        found.append(Found(path, busy, head or None,
                           stamp.stat().st_mtime if stamp.exists() else None))
    return found


def prune(root: Path) -> tuple[list[Path], list[Path]]:
    """Remove the workspaces under ``root`` that no step holds; (removed, busy)."""
    removed, busy = [], []
    for ws in listing(root):
        fd = _try_lock(ws.path)
        if fd is None:
            busy.append(ws.path)
            continue
        try:
            shutil.rmtree(ws.path)
            removed.append(ws.path)
        finally:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                _lock_path(ws.path).unlink()
    for leftover in root.glob("ws-*.tmp"):  # a clone a kill cut short (ours: has a .git)
        if re.fullmatch(r"ws-\d+\.tmp", leftover.name) and (leftover / ".git").is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
    with contextlib.suppress(OSError):
        root.rmdir()
    return removed, busy


#: Workspaces this process holds. A lock released here can look held for a moment: a
#: child forked by another thread holds a copy of the descriptor until it execs.
_HELD: set[Path] = set()
_HELD_LOCK = threading.Lock()
#: How long a workspace this process does not hold may stay locked by such a copy.
_FORK_LAG_S = 0.5


def take(path: Path) -> int | None:
    """Lock ``path`` for this thread, or None when it is in use."""
    with _HELD_LOCK:
        if path in _HELD:
            return None
        _HELD.add(path)
    deadline = time.monotonic() + _FORK_LAG_S
    while True:
        fd = _try_lock(path)
        if fd is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if fd is None:
        forget(path)
    return fd


def forget(path: Path) -> None:
    """This process no longer holds ``path`` (its lock descriptor is closed)."""
    with _HELD_LOCK:
        _HELD.discard(path)


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _try_lock(path: Path, probe: bool = False) -> int | None:
    """An fd holding ``path``'s lock, or None when a live process holds it."""
    fd = os.open(_lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if probe:
        os.close(fd)
        return 0
    return fd


def number(path: Path) -> int:
    """N of ``ws-N`` (0 for any other name)."""
    digits = path.name.removeprefix("ws-").partition(".")[0]
    return int(digits) if digits.isdigit() else 0
