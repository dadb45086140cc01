"""Is a process still the one we started? Pid identity that survives pid reuse.

The journal names every git it starts by pid and start time; a restore
waits for one that outlived a killed bisectkit, and must not mistake an
unrelated process that later got the same pid for it.
"""

from __future__ import annotations

import os
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
