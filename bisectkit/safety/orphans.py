"""Builds and repros bisectkit starts: tagged and recorded before they run, stopped with
everything they started when bisectkit kills them, or when it stops without an answer,
or by the next bisectkit command when it was killed itself.

Every command bisectkit runs for a step (the build, the repro, a plugin's
``run_command``) starts under a pseudo-terminal as the leader of its own session;
when bisectkit dies the terminal hangs up and takes it along. Not all of it: a
process that left the session (``setsid``, a daemonising script) or ignores the
hang-up goes on, and may write into a tree ``reset`` has restored, or into a
workspace the next run checks out.

So each command gets a tag of its own, ``<tag of this bisectkit>.<n>``, in its
environment (``BISECTKIT_RUN_TAG``), which whatever it starts inherits, daemons
included; and before it execs, the forked child makes itself a child subreaper
(Linux): what its descendants orphan is reparented to it, not to init, so the
whole tree it started hangs below it while it runs, even a process that cleared
its environment (``env -i``). While a bisectkit command holds the superproject's
lock (:mod:`bisectkit.safety.lock`), the child also appends a line to
``.git/bisectkit/children`` (pid, start time, process group, session, tag), fsynced.

- bisectkit kills a command (``--timeout``, a cancelled ``--jobs`` step, a stop
  while it runs: :func:`stop_command`): its tree and everything carrying its tag
  are frozen (SIGSTOP, until nothing new appears), then killed.
- A command that exits by itself (an exit status, any) is *finished*: a line says
  so (:func:`command_done`), and what it leaves running is a daemon it started on
  purpose (a compiler cache server): left alone, whatever happens to the run later.
- A bisectkit command that ends by itself removes the file; one that is stopped
  (a signal, an abort, an error) first stops whatever carries the tag of one of its
  unfinished commands (:func:`stop_own`), before it restores anything.
- The next command that takes the lock and finds the file (``reset``, ``run``,
  ``start``, a mark...) stops what the unfinished commands of the killed bisectkit
  left: every process whose environment holds their tag, and the process group and
  session of a recorded leader still alive as the same process (pid and start time:
  a reused pid is never signalled); SIGTERM, then SIGKILL after :data:`GRACE_S`.

What escapes: a process that cleared its environment and left the command's
session, when bisectkit is SIGKILLed while the command runs (the command dies
with the hang-up, its adopted orphans go to init, and nothing names them); a
process the command had someone else start (``systemd-run``, an existing server);
another user's process (``sudo``).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bisectkit.safety import signals
from bisectkit.safety.processes import (
    Proc,
    alive,
    descendants,
    environ_value,
    process_start,
    running,
)

#: The variable that marks every process a bisectkit command started, and their children.
TAG_VARIABLE = "BISECTKIT_RUN_TAG"
#: How long leftovers get to end after SIGTERM before SIGKILL.
GRACE_S = 2.0
#: prctl(2)'s option that makes a process the reaper of its descendants' orphans.
_PR_SET_CHILD_SUBREAPER = 36
#: How many times a killed command's tree is searched for what forked meanwhile.
_FREEZE_ROUNDS = 20
#: prctl, looked up before any fork (a lookup in the forked child could deadlock).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


@dataclass
class _Tracking:
    """The children file and this process's tag, while a command holds the lock."""

    path: Path
    tag: str
    serial: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    #: The tags of the commands that exited by themselves.
    done: set[str] = field(default_factory=set)


_tracking: _Tracking | None = None


def start_tracking(path: Path) -> None:
    """From now on, every command :mod:`bisectkit.execute.runner` starts is recorded in ``path``."""
    global _tracking
    # Absolute: the child records itself after it has changed to its working directory.
    _tracking = _Tracking(path.absolute(), secrets.token_hex(8))


def stop_tracking() -> None:
    """This bisectkit command is over: its records go (see the module's docstring)."""
    global _tracking
    if _tracking is not None:
        _tracking.path.unlink(missing_ok=True)
    _tracking = None


def command_tag() -> str | None:
    """The tag of a command about to start (None when not tracking)."""
    tracking = _tracking
    # next() on a count is atomic: two --jobs workers never get the same number.
    return None if tracking is None else f"{tracking.tag}.{next(tracking.serial)}"


def child_env(tag: str | None) -> dict[str, str]:
    """What the command tagged ``tag`` adds to its environment."""
    return {TAG_VARIABLE: tag} if tag is not None else {}


def adopt_orphans() -> None:
    """In the forked child, before it execs: become the reaper of its descendants'
    orphans, so that they stay below it (best effort: Linux only)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def record_self(tag: str | None) -> None:
    """In the forked child, before it execs: record who it is (OSError if it cannot)."""
    tracking = _tracking
    if tracking is None or tag is None:
        return
    pid = os.getpid()
    _append(tracking.path, {"tag": tag, "pid": pid, "started": process_start(pid),
                            "pgid": os.getpgid(0), "sid": os.getsid(0)})


def command_done(tag: str | None) -> None:
    """The command tagged ``tag`` exited by itself: what it left running is its own
    business (a daemon started on purpose), never stopped later."""
    tracking = _tracking
    if tracking is None or tag is None:
        return
    tracking.done.add(tag)
    # Lost (a kill right now, a full disk): the next command stops that daemon, no worse.
    with contextlib.suppress(OSError):
        _append(tracking.path, {"tag": tag, "done": True}, sync=False)


def stop_command(pid: int, tag: str | None) -> None:
    """Kill the command ``pid`` (tagged ``tag``) that bisectkit is giving up on, and
    everything it started: its descendants and whatever carries its tag."""
    me = os.getpid()
    frozen: dict[int, Proc] = {}
    with signals.held():  # a second Ctrl-C must not leave a process frozen for ever
        try:
            for _ in range(_FREEZE_ROUNDS):
                procs = list(running())
                found = descendants(pid, procs) + [p for p in procs if p.pid == pid]
                if tag is not None:
                    found += [p for p in procs if environ_value(p.pid, TAG_VARIABLE) == tag]
                new = {p.pid: p for p in found if p.pid not in frozen and p.pid != me}
                if not new:
                    break
                _signal(new.values(), signal.SIGSTOP)
                frozen.update(new)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # pexpect made it a session leader
            _signal(frozen.values(), signal.SIGKILL)


def stop_leftovers(path: Path) -> list[str]:
    """Stop what the unfinished commands recorded in ``path`` (by a bisectkit that was
    killed) left running, then remove the file; a line saying what was stopped, if
    anything was."""
    records = _read(path)
    done = {str(rec["tag"]) for rec in records if rec.get("done") is True}
    records = [rec for rec in records if rec["tag"] not in done]
    found = _find(records, done) if records else []
    if found:
        _terminate(found)
        # What forked meanwhile, from a process stopped now.
        _terminate(_find(records, done), grace=0.0)
    path.unlink(missing_ok=True)
    if not found:
        return []
    return [f"stopped {len(found)} process(es) that a killed bisectkit's build or repro "
            f"left running (pid {_pids(found)})"]


def stop_own() -> list[str]:
    """This bisectkit command is stopping (a signal, an abort, an error) with its
    unfinished commands' descendants perhaps still running (``setsid``, a daemon): stop
    every process that carries the tag of one, before the restore puts the user's tree
    back; a line saying what was stopped, if anything was."""
    tracking = _tracking
    if tracking is None:
        return []
    me = os.getpid()
    found = [p for p in running() if p.pid != me and _unfinished(tracking, p.pid)]
    if not found:
        return []
    _terminate(found)
    return [f"stopped {len(found)} process(es) the stopped build or repro left running "
            f"(pid {_pids(found)})"]


def _unfinished(tracking: _Tracking, pid: int) -> bool:
    """Does ``pid`` carry the tag of one of this process's commands that did not finish?"""
    tag = environ_value(pid, TAG_VARIABLE)
    return tag is not None and tag.startswith(tracking.tag + ".") and tag not in tracking.done


def _pids(found: list[Proc]) -> str:
    return ", ".join(str(p.pid) for p in found[:5]) + (", ..." if len(found) > 5 else "")


def _append(path: Path, record: dict[str, object], sync: bool = True) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


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


def _find(records: list[dict[str, object]], done: set[str]) -> list[Proc]:
    """The live processes the records name: those a command of a bisectkit that recorded
    an unfinished one tagged (unless that command finished too), and the groups and
    sessions of recorded leaders still alive as themselves."""
    killed = {str(rec["tag"]).split(".")[0] for rec in records}
    groups: set[int] = set()
    for rec in records:
        pid, started = rec.get("pid"), rec.get("started")
        if isinstance(pid, int) and isinstance(started, str) and alive(pid, started):
            groups |= {x for x in (rec.get("pgid"), rec.get("sid")) if isinstance(x, int)}
    me = os.getpid()
    return [p for p in running() if p.pid != me and (
        p.pgid in groups or p.sid in groups or _tagged(p.pid, killed, done))]


def _tagged(pid: int, killed: set[str], done: set[str]) -> bool:
    """Does ``pid`` carry the tag of an unfinished command of one of the ``killed``?"""
    tag = environ_value(pid, TAG_VARIABLE)
    return tag is not None and tag not in done and tag.split(".")[0] in killed


def _signal(procs: Iterable[Proc], sig: int) -> None:
    """Send ``sig`` to each process that is still itself."""
    for p in procs:
        if alive(p.pid, p.started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p.pid, sig)


def _terminate(procs: list[Proc], grace: float = GRACE_S) -> None:
    """SIGTERM each process (if still itself), SIGKILL those alive after ``grace``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        _signal(procs, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(alive(p.pid, p.started) for p in procs):
            time.sleep(0.05)
