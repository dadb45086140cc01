"""Is a process still the one we started? Pid identity that survives pid reuse.

The journal names every git it starts by pid and start time; a restore
waits for one that outlived a killed bisectkit, and must not mistake an
unrelated process that later got the same pid for it. The same identity
names the builds and repros a killed bisectkit left running, and finds what a
command bisectkit kills started (:mod:`bisectkit.safety.orphans`); a live git working
in a repository keeps its lock files (:mod:`bisectkit.safety.gitlocks`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state first); None without."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """When ``pid`` started (Linux: clock ticks since boot), to tell it from a reused pid."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[19]


def alive(pid: int, started: str | None = None) -> bool:
    """Is the process that was ``pid`` (started at ``started``) still running, not a zombie?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat_fields(pid)
    if fields is None:
        return True  # no /proc: trust kill(0)
    if fields[0] == "Z":
        return False
    return started is None or fields[19] == started


@dataclass(frozen=True)
class Proc:
    """A running process as ``/proc`` shows it: enough to kill it, and only it, later."""

    pid: int
    started: str
    pgid: int
    sid: int
    ppid: int = 0


def running() -> Iterator[Proc]:
    """Every process alive now (zombies excepted) that ``/proc`` shows."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is not None and fields[0] != "Z":
            yield Proc(int(name), fields[19], int(fields[2]), int(fields[3]), int(fields[1]))


def descendants(root: int, procs: Collection[Proc]) -> list[Proc]:
    """The processes of ``procs`` below ``root``: its children, theirs, and so on."""
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    found: dict[int, Proc] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child.pid not in found and child.pid != root:
                found[child.pid] = child
                todo.append(child.pid)
    return list(found.values())


def environ_value(pid: int, name: str) -> str | None:
    """The value of ``name`` in ``pid``'s environment; None if it has none or it cannot
    be read (another user's process)."""
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = os.fsencode(name) + b"="
    for item in data.split(b"\0"):
        if item.startswith(prefix):
            return os.fsdecode(item[len(prefix):])
    return None


def gits_working_in(dirs: Sequence[Path]) -> list[tuple[int, str]]:
    """Live git processes, other than this one and its parents, working in one of
    ``dirs`` (their working directory is inside it): ``(pid, command line)`` each.

    A git that holds a lock file while an editor is open (``git commit -a``) is one, by
    its name or by its program (a git run through a link of another name). Processes
    whose working directory cannot be read (another user's) are not seen.
    """
    roots = [str(d.resolve()) for d in dirs]
    # Not the git that runs this bisectkit (``git bisect-patched``: git waits for it).
    mine = _ancestors(os.getpid())
    found = []
    for proc in running():
        if proc.pid in mine or not _is_git(proc.pid):
            continue
        try:
            cwd = os.readlink(f"/proc/{proc.pid}/cwd")
        except OSError:
            continue
        command = _cmdline(proc.pid)
        # The file-system monitor lives as long as the repository and takes no lock.
        if "fsmonitor--daemon" not in command and \
                any(cwd == r or cwd.startswith(r.rstrip("/") + "/") for r in roots):
            found.append((proc.pid, command))
    return found


def _ancestors(pid: int) -> set[int]:
    """``pid`` and its parents, up to the first process."""
    found = {pid}
    while pid > 1:
        fields = _stat_fields(pid)
        if fields is None:
            break
        pid = int(fields[1])
        found.add(pid)
    return found


def _is_git(pid: int) -> bool:
    """Is ``pid`` a git, by its name or by the program it runs?"""
    if _comm(pid) == "git":
        return True
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "git"
    except OSError:
        return False


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(os.fsdecode(a) for a in raw.split(b"\0") if a)
