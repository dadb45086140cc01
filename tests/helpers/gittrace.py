"""The git processes a command ran, read from git's own trace (``GIT_TRACE2_EVENT``): which
git, in which work tree, and how many times it wrote its index."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class GitProcess:
    """One git process of a trace."""

    #: Its arguments after ``git`` and the ``-c`` pins (``["read-tree", "-m", ...]``).
    argv: list[str]
    #: The work tree it ran in (None: none, or not said).
    worktree: Path | None = None
    #: How many times it wrote an index file (git's ``do_write_index`` region).
    index_writes: int = 0


def trace_env(path: Path) -> dict[str, str]:
    """The environment that makes every git append its events to ``path``."""
    return {"GIT_TRACE2_EVENT": str(path)}


def git_processes(path: Path) -> list[GitProcess]:
    """Every git process the trace at ``path`` names, in the order they started."""
    found: dict[str, GitProcess] = {}
    if not path.exists():
        return []
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        proc = found.setdefault(event["sid"], GitProcess([]))
        kind = event["event"]
        if kind == "start":
            proc.argv = _unpinned(event["argv"][1:])
        elif kind == "def_repo" and event.get("repo") == 1 and "worktree" in event:
            # Repository 1 is the one it runs in (git status also opens submodules).
            proc.worktree = Path(event["worktree"]).resolve()
        elif kind == "region_enter" and event.get("label") == "do_write_index":
            proc.index_writes += 1
    return [p for p in found.values() if p.argv]


def in_worktree(procs: list[GitProcess], worktree: Path) -> list[GitProcess]:
    """The processes that ran in ``worktree``."""
    where = worktree.resolve()
    return [p for p in procs if p.worktree == where]


def _unpinned(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "-c":
            skip = True
        else:
            out.append(word)
    return out
