"""Is a process still the one we started? Pid identity that survives pid reuse.

The journal names every git it starts by pid and start time; a restore
waits for one that outlived a killed bisectkit, and must not mistake an
unrelated process that later got the same pid for it. The same identity
names the builds and repros a killed bisectkit left running
(:mod:`bisectkit.orphans`), and a live git working in a repository keeps its
lock files (:mod:`bisectkit.gitlocks`).
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
            yield Proc(int(name), fields[19], int(fields[2]), int(fields[3]))


def environ_has(pid: int, entries: Collection[str]) -> bool:
    """Does ``pid``'s environment hold one of ``entries`` (``NAME=value``)? False if it
    cannot be read (another user's process)."""
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    wanted = {e.encode() for e in entries}
    return any(item in wanted for item in data.split(b"\0"))


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
