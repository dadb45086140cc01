"""One bisectkit at a time per superproject: an exclusive lock file in its git dir.

The file is created with ``O_EXCL`` and holds who took it (pid, host, time,
command) for the message a second run prints. Whether the holder still lives
is asked of the kernel, not guessed from the pid: the holder keeps an
``flock`` on the file, which the kernel drops whenever the process ends, by
SIGKILL or power loss included. A file nobody holds an ``flock`` on is stale
and is taken over. An ``flock`` belongs to the open file, which a fork shares:
a forked child closes its copy at once (:func:`_close_in_children`), so only
the process that took the lock ever holds it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from bisectkit.errors import BadInput, WriteFailed
from bisectkit.safety.fileio import writing


class LockHeld(BadInput):
    """Another bisectkit process works in this superproject (exit 2, nothing touched)."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) the lock, as written in the lock file."""

    pid: int | None
    host: str
    since: str
    command: str

    def describe(self) -> str:
        who = f"pid {self.pid}" if self.pid is not None else "an unknown process"
        return f"{who} on {self.host or 'an unknown host'} since {self.since or '?'}: " \
               f"{self.command or '?'}"


#: The locks this process holds now (a forked child closes their files). Strong
#: references: a lock object dropped unreleased still holds its file open.
_HELD: set[RunLock] = set()


@functools.cache  # once per process: a fork hook cannot be unregistered
def _close_in_children() -> None:
    """Make every forked child drop its copy of the held locks' files at once.

    pexpect forks bisectkit (threads and all) before it execs a build; until then
    the child shares the lock's open file. A child that outlived a killed
    bisectkit there would keep the superproject locked for as long as it lived.
    """

    def close() -> None:
        for held in _HELD:
            if held._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(held._fd)
                held._fd = None
        _HELD.clear()

    os.register_at_fork(after_in_child=close)


class RunLock:
    """The lock of one superproject; :meth:`acquire` or fail with :class:`LockHeld`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        #: Set when a dead holder's lock was taken over (for a dim note).
        self.took_over: Holder | None = None

    def acquire(self, command: str) -> RunLock:
        """Take the lock, breaking it only when no live process holds it."""
        # Before anything else: a folder that cannot take the lock has changed nothing.
        with writing(self.path, started=False):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(50):  # each round either wins or observes a live holder
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._break_if_stale()
                continue
            except OSError as exc:
                raise WriteFailed(self.path, exc, started=False) from exc
            if self._own(fd, command):
                return self
        raise LockHeld(f"cannot take {self.path}: it keeps changing hands; try again")

    def _own(self, fd: int, command: str) -> bool:
        """Lock the file just created; False if a stale-breaker removed it meanwhile."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        if not _same_file(fd, self.path):
            os.close(fd)
            return False
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%d %H:%M:%S"), "command": command}
        # Who holds it is only for messages: a full disk must not stop a reset.
        with contextlib.suppress(OSError):
            os.write(fd, (json.dumps(info) + "\n").encode())
        _close_in_children()
        self._fd = fd
        _HELD.add(self)
        return True

    def _break_if_stale(self) -> None:
        """Remove the lock file if nobody holds its flock; raise if somebody does."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return  # released meanwhile: try again
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                holder = read_holder(self.path)
                raise LockHeld(f"another bisectkit is working in this superproject "
                               f"({holder.describe()}); wait for it or stop it") from None
            # Nobody holds it: its owner died. Remove it only if the path still
            # names this very file (another process may have replaced it).
            if _same_file(fd, self.path):
                self.took_over = read_holder(self.path)
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
        finally:
            os.close(fd)

    def release(self) -> None:
        """Give the lock up (removing the file first, so nobody breaks a live lock)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if _same_file(self._fd, self.path):
                self.path.unlink()
        os.close(self._fd)
        self._fd = None
        _HELD.discard(self)


def read_holder(path: Path) -> Holder:
    """What the lock file says about its holder (best effort: it may be half written)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid")
    return Holder(pid=pid if isinstance(pid, int) else None, host=str(data.get("host", "")),
                  since=str(data.get("since", "")), command=str(data.get("command", "")))


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)
