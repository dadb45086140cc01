"""The journal: what bisectkit is about to do to the user's repositories, and what it did.

One JSON object per line in ``<git dir>/bisectkit/journal``, appended and
fsynced *before* each change (a move of index, work tree and HEAD; a file put
aside) and marked done after it. Whatever kills the process, at whatever
instant, the journal says where every repository started, what bisectkit put
there since, and which change may be half done; :mod:`bisectkit.safety.recovery`
replays it backwards. A torn last line (the process died mid-write) is
ignored: the change it announced had not started.

Records (``op``):

- ``start``: the session's id and, per repository it may move (``"."`` is the
  superproject), the HEAD to restore and the length of HEAD's reflog then;
- ``move`` (before) / ``git`` (the pid of a git doing it, when it started, the lock
  files it takes) / ``git-exit`` (its exit status) / ``moved`` (after): one move of a
  repository from one commit and tree to another (the times in ``move`` and ``git``,
  the lock files and the exit tell a lock file such a git left from somebody else's);
- ``backup`` (before) / ``backed-up`` (after) / ``put-back``: an untracked or
  ignored file moved out of a checkout's way (``--force-ignored``) and back
  (these change records, :class:`Move` and :class:`Backup`, live in
  :mod:`bisectkit.safety.journalrecords`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bisectkit.safety.journalrecords as journalrecords
from bisectkit.errors import WriteFailed
from bisectkit.model import HeadState
from bisectkit.safety.fileio import writing
from bisectkit.safety.journalrecords import Backup, Move, RefWrite, Side
from bisectkit.safety.processes import process_start

JOURNAL_VERSION = 1


@dataclass
class Origin:
    """Where one repository was when the session started."""

    head: HeadState
    reflog: int


@dataclass
class JournalState:
    """The journal read back: enough to undo everything the session did."""

    session_id: str
    root: str
    repos: dict[str, Origin]
    moves: list[Move] = field(default_factory=list)
    backups: list[Backup] = field(default_factory=list)
    ref_writes: list[RefWrite] = field(default_factory=list)
    #: Lines that could not be read (a torn last line is normal after a kill).
    unreadable: int = 0
    #: Where the start record came from: "session" (a session's own journal),
    #: or the fallback a reset rebuilt it from ("session file", "reflog").
    source: str = "session"
    #: Commits bisectkit placed that no move record lists (read from reflogs).
    extra_placed: dict[str, set[str]] = field(default_factory=dict)

    def pending(self, repo: str) -> Move | None:
        """The move of ``repo`` that started and never finished, if any."""
        for move in reversed(self.moves):
            if move.repo == repo:
                return None if move.done else move
        return None

    def touched(self, repo: str) -> bool:
        """Did bisectkit move ``repo``? A rebuilt journal cannot tell: it assumes so."""
        return self.source != "session" or any(m.repo == repo for m in self.moves)

    def placed(self, repo: str) -> set[str]:
        """Every commit bisectkit put HEAD of ``repo`` on (not the user's own)."""
        return {m.new.head.sha for m in self.moves if m.repo == repo} | \
            self.extra_placed.get(repo, set())

    @property
    def knows_user_commits(self) -> bool:
        """Can commits of the user's be told from bisectkit's? (Not from an old session file
        whose moves left no tagged reflog lines.)"""
        return self.source != "session file" or bool(self.extra_placed)


class Journal:
    """Appends records to the journal file, each one durable before the change it announces."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = 1
        self.session_id = ""

    # -- writing -------------------------------------------------------------
    def begin_session(self, root: str, repos: dict[str, Origin], source: str = "session",
                      placed: dict[str, set[str]] | None = None) -> None:
        """Create the journal with the start record (fails if one exists: never two sessions).

        ``source`` other than "session" rebuilds the journal of a session
        whose own was lost, from the record named, so that the restore is
        journaled like any other change.
        """
        # Nothing has moved yet: a journal that cannot be written has changed nothing.
        with writing(self.path, started=False):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.session_id = secrets.token_hex(6)
        self._next = 1
        record = {"op": "start", "version": JOURNAL_VERSION, "id": self.session_id,
                  "root": root, "source": source,
                  "placed": {k: sorted(v) for k, v in (placed or {}).items()},
                  "repos": {k: {"ref": o.head.ref, "sha": o.head.sha, "reflog": o.reflog}
                            for k, o in repos.items()}}
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o644)
        except FileExistsError:
            raise  # never two sessions: the callers check first
        except OSError as exc:
            raise WriteFailed(self.path, exc, started=False) from exc
        try:
            data = _line(record)
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                self.path.unlink()  # no half journal: nothing was changed yet
            raise WriteFailed(self.path, exc, started=self.path.exists()) from exc
        else:
            os.close(fd)
        _fsync_dir(self.path.parent)

    def resume(self, state: JournalState) -> None:
        """Continue an existing journal (numbers go on from its last record)."""
        self.session_id = state.session_id
        numbers = [m.n for m in state.moves] + [b.n for b in state.backups] + \
            [r.n for r in state.ref_writes]
        self._next = max(numbers, default=0) + 1

    def move(self, repo: str, old: Side, new: Side, t: float | None = None) -> int:
        """Announce a move (durably); returns its number for :meth:`moved`.

        ``t``: when ``repo`` was last seen free of git's lock files (see
        :mod:`bisectkit.safety.gitlocks`); a lock file older than that is not this move's.
        """
        n = self._take()
        record: dict[str, Any] = {"op": "move", "n": n, "repo": repo, "from": old.to_json(),
                                  "to": new.to_json()}
        if t is not None:
            record["t"] = t
        self._append(record)
        return n

    def git(self, n: int, pid: int, since: float | None = None,
            takes: tuple[str, ...] = ()) -> None:
        """The git doing move ``n`` runs as ``pid`` (a restore waits for it if it outlives us),
        started at ``since`` (just before), taking the lock files ``takes``.

        Not fsynced: only a crash of the whole machine loses it, and that
        also ends the git it names.
        """
        self._append({"op": "git", "n": n, "pid": pid, "started": process_start(pid),
                      "t": time.time() if since is None else since, "locks": list(takes)},
                     sync=False)

    def git_start(self, n: int, since: float, takes: tuple[str, ...]) -> None:
        """A git of move ``n`` taking ``takes`` is about to start (not fsynced, as :meth:`git`)."""
        self._append({"op": "git-start", "n": n, "t": since, "locks": list(takes)}, sync=False)

    def git_exit(self, n: int, pid: int, status: int) -> None:
        """The git ``pid`` of move ``n`` ended with ``status`` (negative: a signal); not fsynced."""
        self._append({"op": "git-exit", "n": n, "pid": pid, "status": status}, sync=False)

    def moved(self, n: int) -> None:
        self._append({"op": "moved", "n": n})

    def refs(self, repo: str, locks: list[str], t: float,
             publish: dict[str, str] | None = None, files: dict[str, str] | None = None
             ) -> int:
        """Announce ref writes taking ``locks``, seen absent at ``t`` (see :class:`RefWrite`);
        ``publish``/``files``: the ``refs/bisect/*`` and files they may leave."""
        n = self._take()
        record: dict[str, Any] = {"op": "refs", "n": n, "repo": repo, "locks": locks, "t": t}
        if publish is not None:
            record.update(publish=publish, files=files or {})
        self._append(record)
        return n

    def refs_written(self, n: int) -> None:
        self._append({"op": "refs-done", "n": n})

    def backup(self, repo: str, path: str, stash: str) -> int:
        n = self._take()
        self._append({"op": "backup", "n": n, "repo": repo, "path": path, "stash": stash})
        return n

    def backed_up(self, n: int) -> None:
        self._append({"op": "backed-up", "n": n})

    def put_back(self, n: int) -> None:
        self._append({"op": "put-back", "n": n})

    def delete(self) -> None:
        """The session is over and everything is restored: the journal's job is done."""
        with writing(self.path):
            self.path.unlink(missing_ok=True)

    def peek(self) -> int:
        """The number the next record will get (names a backup's folder before it is written)."""
        return self._next

    def _take(self) -> int:
        n = self._next
        self._next += 1
        return n

    def _append(self, record: dict[str, Any], sync: bool = True) -> None:
        data = _line(record)
        with writing(self.path):
            self._write(data, sync)

    def _write(self, data: bytes, sync: bool) -> None:
        """Append ``data`` whole, or leave the file as it was and raise."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            try:
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                if sync:
                    os.fsync(fd)
            except OSError:
                # A torn record would glue onto the next one: cut it off (the
                # change it announced is not made, since this raises).
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)


def load(path: Path) -> JournalState | None:
    """Read a journal back; ``None`` when there is none or its start record is unreadable."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    state: JournalState | None = None
    moves: dict[int, Move] = {}
    backups: dict[int, Backup] = {}
    refs: dict[int, RefWrite] = {}
    unreadable = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if state is None:
                state = _start(rec)
                continue
            journalrecords.apply(rec, moves, backups, refs)
        except (ValueError, KeyError, TypeError, AttributeError):
            unreadable += 1
            if state is None:
                return None  # without its start record the journal says nothing usable
    if state is None:
        return None
    state.moves = [moves[n] for n in sorted(moves)]
    state.backups = [backups[n] for n in sorted(backups)]
    state.ref_writes = [refs[n] for n in sorted(refs)]
    state.unreadable = unreadable
    return state


def _start(rec: dict[str, Any]) -> JournalState:
    if rec["op"] != "start" or rec["version"] != JOURNAL_VERSION:
        raise ValueError("not a start record of this journal version")
    repos = {str(k): Origin(HeadState(ref=v.get("ref"), sha=str(v["sha"])), int(v["reflog"]))
             for k, v in rec["repos"].items()}
    placed = {str(k): {str(x) for x in v} for k, v in rec.get("placed", {}).items()}
    return JournalState(session_id=str(rec["id"]), root=str(rec["root"]), repos=repos,
                        source=str(rec.get("source", "session")), extra_placed=placed)


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def _fsync_dir(path: Path) -> None:
    """Make a new file's directory entry durable too (else a crash may forget the file)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
