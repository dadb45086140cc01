"""Builds and repros a killed bisectkit left running: recorded before they run, stopped by
the next bisectkit command in the superproject.

Every command bisectkit runs for a step (the build, the repro, a plugin's
``run_command``) starts under a pseudo-terminal as the leader of its own session;
when bisectkit dies the terminal hangs up and takes it along. Not all of it: a
process that left the session (``setsid``, a daemonising script) or ignores the
hang-up goes on, and may write into a tree ``reset`` has restored, or into a
workspace the next run checks out.

So, while a bisectkit command holds the superproject's lock (:mod:`bisectkit.lock`),
each such command appends a line to ``.git/bisectkit/children`` before it execs
(from the forked child: pid, start time, process group, session, and the tag of
the bisectkit process that started it), fsynced; and its environment holds
``BISECTKIT_RUN_TAG=<tag>``, which whatever it starts inherits, daemons included.
A bisectkit command that ends by itself removes the file (its commands ended, or
were killed with their process group); one that is stopped (a signal, an abort, an
error) first stops whatever still carries its own tag (:func:`stop_own`), before it
restores anything: only a command that ends with an answer leaves a daemon its builds
started on purpose. The next command that takes the lock and
finds the file (``reset``, ``run``, ``start``, a mark...) stops what is left:
every process whose environment holds a recorded tag, and the process group and
session of a recorded leader still alive as the same process (pid and start time:
a reused pid is never signalled); SIGTERM, then SIGKILL after :data:`GRACE_S`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from pathlib import Path

from bisectkit.processes import Proc, alive, environ_has, process_start, running

#: The variable that marks every process a bisectkit command started, and their children.
TAG_VARIABLE = "BISECTKIT_RUN_TAG"
#: How long leftovers get to end after SIGTERM before SIGKILL.
GRACE_S = 2.0

#: (the children file, this process's tag) while a command holds the lock.
_tracking: tuple[Path, str] | None = None


def start_tracking(path: Path) -> None:
    """From now on, every command :mod:`bisectkit.runner` starts is recorded in ``path``."""
    global _tracking
    # Absolute: the child records itself after it has changed to its working directory.
    _tracking = (path.absolute(), secrets.token_hex(8))


def stop_tracking() -> None:
    """This bisectkit command is over: its records go (see the module's docstring)."""
    global _tracking
    if _tracking is not None:
        _tracking[0].unlink(missing_ok=True)
    _tracking = None


def child_env() -> dict[str, str]:
    """What a command started now adds to its environment (nothing when not tracking)."""
    return {TAG_VARIABLE: _tracking[1]} if _tracking is not None else {}


def record_self() -> None:
    """In the forked child, before it execs: record who it is (OSError if it cannot)."""
    if _tracking is None:
        return
    path, tag = _tracking
    pid = os.getpid()
    line = json.dumps({"tag": tag, "pid": pid, "started": process_start(pid),
                       "pgid": os.getpgid(0), "sid": os.getsid(0)}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def stop_leftovers(path: Path) -> list[str]:
    """Stop what the commands recorded in ``path`` (by a bisectkit that was killed) left
    running, then remove the file; a line saying what was stopped, if anything was."""
    records = _read(path)
    found = _find(records) if records else []
    if found:
        _terminate(found)
        # What forked meanwhile, from a process stopped now.
        _terminate(_find(records), grace=0.0)
    path.unlink(missing_ok=True)
    if not found:
        return []
    return [f"stopped {len(found)} process(es) that a killed bisectkit's build or repro "
            f"left running (pid {_pids(found)})"]


def stop_own() -> list[str]:
    """This bisectkit command is stopping (a signal, an abort, an error) with its builds'
    descendants perhaps still running (``setsid``, a daemon): stop every process that
    carries this command's tag, before the restore puts the user's tree back; a line
    saying what was stopped, if anything was."""
    if _tracking is None:
        return []
    tag = {f"{TAG_VARIABLE}={_tracking[1]}"}
    me = os.getpid()
    found = [p for p in running() if p.pid != me and environ_has(p.pid, tag)]
    if not found:
        return []
    _terminate(found)
    return [f"stopped {len(found)} process(es) the stopped build or repro left running "
            f"(pid {_pids(found)})"]


def _pids(found: list[Proc]) -> str:
    return ", ".join(str(p.pid) for p in found[:5]) + (", ..." if len(found) > 5 else "")


def _read(path: Path) -> list[dict[str, object]]:
    """The records in ``path`` (a line torn by the kill is skipped)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("tag"), str):
            records.append(rec)
    return records


def _find(records: list[dict[str, object]]) -> list[Proc]:
    """The live processes the records name: tagged ones, and the groups and sessions of
    recorded leaders still alive as themselves."""
    tags = {f"{TAG_VARIABLE}={rec['tag']}" for rec in records}
    groups: set[int] = set()
    for rec in records:
        pid, started = rec.get("pid"), rec.get("started")
        if isinstance(pid, int) and isinstance(started, str) and alive(pid, started):
            groups |= {x for x in (rec.get("pgid"), rec.get("sid")) if isinstance(x, int)}
    me = os.getpid()
    return [p for p in running()
            if p.pid != me and (p.pgid in groups or p.sid in groups or environ_has(p.pid, tags))]


def _terminate(procs: list[Proc], grace: float = GRACE_S) -> None:
    """SIGTERM each process (if still itself), SIGKILL those alive after ``grace``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            if alive(p.pid, p.started):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(alive(p.pid, p.started) for p in procs):
            time.sleep(0.05)
