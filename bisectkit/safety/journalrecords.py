"""The change records of the journal (:mod:`bisectkit.safety.journal`): moves and set-aside files.

A move of a repository is announced (``move``, with the time, so that a lock file
left in that repository can be told from one older than the move), names the gits
doing it (``git``: pid, start, the lock files it takes) and their ends (``git-exit``)
and is marked done (``moved``); refs a restore creates, and the ``refs/bisect/*``
published for git's tools, are announced (``refs``: the lock files their gits take, when
those were seen absent; for the published ones, every ref and file the write may leave)
and marked done (``refs-done``); a file set aside is announced (``backup``), marked done
(``backed-up``) and returned (``put-back``).
:func:`apply` reads one such record back into the records it updates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from bisectkit.model import HeadState


@dataclass(frozen=True)
class Side:
    """One end of a move: HEAD (branch or detached) and the tree index and files hold."""

    head: HeadState
    tree: str

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.head.ref, "sha": self.head.sha, "tree": self.tree}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Side:
        return cls(HeadState(ref=data.get("ref"), sha=str(data["sha"])), str(data["tree"]))


@dataclass(frozen=True)
class Git:
    """A git command doing a move: its pid, its start (to tell it from a reused pid), and
    the wall-clock time it was started (``None``: a journal from an older bisectkit)."""

    #: ``None``: about to start, never named (bisectkit was killed before it could).
    pid: int | None
    started: str | None
    t: float | None = None
    #: The lock files it takes (``None``: a journal from an older bisectkit, which did not
    #: say: any of a move's).
    locks: tuple[str, ...] | None = None
    #: Its exit status (negative: the signal that killed it); ``None``: no exit recorded.
    status: int | None = None


@dataclass
class Move:
    """A journaled move; ``done`` once it completed (or was settled by a restore)."""

    n: int
    repo: str
    old: Side
    new: Side
    done: bool = False
    #: The git commands doing it.
    gits: list[Git] = field(default_factory=list)
    #: Wall-clock time of the announcement, taken before its repository was seen free of
    #: git's lock files (``None``: an older journal, or a move read back from a reflog).
    t: float | None = None


@dataclass
class Backup:
    """A file moved out of a checkout's way, to put back on restore."""

    n: int
    repo: str
    path: str
    stash: str
    done: bool = False
    put_back: bool = False


@dataclass
class RefWrite:
    """Refs a restore creates through git (a kept commit, a recreated branch), whose gits
    no move names: the lock files they take, and when those were seen absent (a lock file
    newer than that, with no git left there, was left by one of them, killed)."""

    n: int
    repo: str
    locks: list[str]
    t: float
    done: bool = False
    #: ``refs/bisect/*`` published for git's tools (:mod:`bisectkit.safety.bisectrefs`):
    #: every ref this write may leave (name -> commit) and the files (``BISECT_TERMS`` ->
    #: its text); ``None`` for the refs of a restore.
    publish: dict[str, str] | None = None
    files: dict[str, str] = field(default_factory=dict)


def apply(rec: dict[str, Any], moves: dict[int, Move], backups: dict[int, Backup],
          refs: dict[int, RefWrite] | None = None) -> None:
    """Update ``moves``, ``backups`` and ``refs`` (by number) with one journal record after
    the start."""
    op = rec["op"]
    if refs is not None and op == "refs":
        published = rec.get("publish")
        refs[int(rec["n"])] = RefWrite(
            int(rec["n"]), str(rec["repo"]), [str(x) for x in rec["locks"]], float(rec["t"]),
            publish=None if published is None else {str(k): str(v)
                                                    for k, v in published.items()},
            files={str(k): str(v) for k, v in rec.get("files", {}).items()})
    elif refs is not None and op == "refs-done" and int(rec["n"]) in refs:
        refs[int(rec["n"])].done = True
    elif op == "move":
        n = int(rec["n"])
        moves[n] = Move(n, str(rec["repo"]), Side.from_json(rec["from"]),
                        Side.from_json(rec["to"]), t=_time(rec))
    elif op in ("git", "git-start") and int(rec["n"]) in moves:
        started, locks, gits = rec.get("started"), rec.get("locks"), moves[int(rec["n"])].gits
        git = Git(int(rec["pid"]) if op == "git" else None,
                  None if started is None else str(started), _time(rec),
                  tuple(str(x) for x in locks) if isinstance(locks, list) else None)
        # The git announced (same time, no pid yet) is now named.
        gits[:] = [g for g in gits if not (g.pid is None and g.t == git.t)]
        gits.append(git)
    elif op == "git-exit" and int(rec["n"]) in moves:
        gits = moves[int(rec["n"])].gits
        gits[:] = [dataclasses.replace(g, status=int(rec["status"]))
                   if g.pid == int(rec["pid"]) and g.status is None else g for g in gits]
    elif op == "moved" and int(rec["n"]) in moves:
        moves[int(rec["n"])].done = True
    elif op == "backup":
        n = int(rec["n"])
        backups[n] = Backup(n, str(rec["repo"]), str(rec["path"]), str(rec["stash"]))
    elif op == "backed-up" and int(rec["n"]) in backups:
        backups[int(rec["n"])].done = True
    elif op == "put-back" and int(rec["n"]) in backups:
        backups[int(rec["n"])].put_back = True


def _time(rec: dict[str, Any]) -> float | None:
    t = rec.get("t")
    return float(t) if isinstance(t, (int, float)) else None
