"""Run the build and the repro under a pseudo-terminal with pexpect.

The child gets a pty so compilers and test drivers keep their usual
line-buffered, coloured output; it is streamed live to our stdout and kept
as text for classification. The child runs in its own session, so a timeout
or Ctrl-C kills its whole process group and nothing is left behind; it is
recorded before it execs, so what it leaves running when bisectkit itself is
killed is stopped by the next bisectkit command (:mod:`bisectkit.orphans`).

Commands are argv lists, never split: a path with spaces is one word. What is
kept is bounded (``keep`` characters: the head and the tail, with a marker
between), so 50 MB of output per step costs neither memory nor disk; lines of
the dropped middle that match ``watch`` patterns (the ``--*-if`` rules) are
kept under the marker, so a rule still sees them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO, cast

import pexpect

from bisectkit import orphans
from bisectkit.errors import Aborted, Cancelled
from bisectkit.model import DEFAULT_KEEP, Outcome

_CHUNK = 65536
_POLL_S = 0.1
#: At most this many lines of the dropped middle are kept for matching the rules.
_MAX_KEPT_LINES = 200
_MAX_LINE = 4096


#: Terminal control sequences: CSI (colours, cursor moves, ``\x1b[K``), OSC (titles,
#: hyperlinks; ended by BEL or ST, or by the line's end: an OSC left open by the
#: --keep-output cut must not swallow the kept lines after it), and the other ESC
#: sequences, with intermediates (``tput sgr0`` is ``\x1b(B\x1b[m``; ``\x1b7``, ``\x1bM``).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"
                      r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
                      r"|\x1b[ -/]*[0-Z\\-~]"
                      r"|\x9b[0-?]*[ -/]*[@-~]")


def clean_output(text: str) -> str:
    """``text`` as a reader sees it: escapes removed, ``\\r`` progress lines folded.

    The repro runs under a pty, so clang, MLIR and ninja colour their output:
    ``\\e[1m\\e[31merror:\\e[0m`` must still match ``--bad-if 'error:'``. A line
    rewritten in place (``50%\\r100%``) keeps only what was left on screen.
    """
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPES.sub("", text)
    if "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(_fold_cr(line) for line in lines)


def _fold_cr(line: str) -> str:
    """What a terminal shows of a line rewritten with ``\\r``: its last non-empty rewrite.

    Progress meters pad or erase (``\\e[K``, removed before) what they rewrite,
    so the last rewrite is what was on screen.
    """
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


class _Kept:
    """The head and the tail of a stream, plus the middle's lines that match ``watch``."""

    def __init__(self, keep: int, watch: Sequence[re.Pattern[str]]) -> None:
        self._head_room = keep // 2
        self._tail_room = keep - self._head_room
        self._head: list[str] = []
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._watch = watch
        self._partial = ""
        self._matched: list[str] = []
        self.dropped = 0

    def add(self, text: str) -> None:
        if self._head_room > 0:
            taken = text[:self._head_room]
            self._head.append(taken)
            self._head_room -= len(taken)
            text = text[len(taken):]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_room:
            first = self._tail[0]
            over = self._tail_len - self._tail_room
            if len(first) <= over:
                self._tail.popleft()
                self._drop(first)
                self._tail_len -= len(first)
            else:
                self._tail[0] = first[over:]
                self._drop(first[:over])
                self._tail_len -= over

    def _drop(self, text: str) -> None:
        self.dropped += len(text)
        if not self._watch:
            return
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()[-_MAX_LINE:]
        for raw in lines:
            line = clean_output(raw)
            if len(self._matched) < _MAX_KEPT_LINES and \
                    any(p.search(line) for p in self._watch):
                self._matched.append(line[:_MAX_LINE])

    def text(self) -> str:
        if not self.dropped:
            return "".join(self._head) + "".join(self._tail)
        partial = clean_output(self._partial)
        if partial and any(p.search(partial) for p in self._watch):
            self._matched.append(partial)
        marker = [f"\n[bisectkit: {self.dropped} characters of output dropped here "
                  "(--keep-output)"]
        if self._matched:
            marker.append(f"; the {len(self._matched)} line(s) of them that match the rules:]\n")
            marker += [line + "\n" for line in self._matched]
            marker.append("[bisectkit: end of the dropped output]\n")
        else:
            marker.append("]\n")
        return "".join(self._head) + "".join(marker) + "".join(self._tail)


def pexpect_command(argv: Sequence[str]) -> tuple[str, list[str]]:
    """``(command, args)`` for ``pexpect.spawn`` that runs exactly ``argv``.

    pexpect splits a command given without arguments on whitespace (so
    ``/x/evil dir/repro.sh`` would run ``/x/evil``); escaping every
    character makes its splitter return the path unchanged.
    """
    if len(argv) > 1:
        return argv[0], list(argv[1:])
    return "".join("\\" + ch for ch in argv[0]), []


def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float | None = None, echo: TextIO | None = None, keep: int = DEFAULT_KEEP,
    watch: Sequence[re.Pattern[str]] = (),
    cancelled: Callable[[], bool] | None = None,
) -> Outcome:
    """Run ``argv`` to completion (or ``timeout`` seconds) and return its :class:`Outcome`.

    Everything is streamed to ``echo`` (default: stdout); at most ``keep``
    characters are kept (see :class:`_Kept`), plus the dropped lines that
    match a ``watch`` pattern. A ``KeyboardInterrupt`` while waiting kills
    the child's process group before it propagates, as does ``cancelled()``
    turning True (:class:`~bisectkit.errors.Cancelled`: a parallel step).

    Plugins get this as :func:`bisectkit.run_command`.
    """
    echo = sys.stdout if echo is None else echo
    start = time.monotonic()
    child = _spawn(argv, cwd, env)
    kept = _Kept(keep, watch)
    try:
        timed_out = _stream(child, kept, echo, start, timeout, cancelled)
    except BaseException:
        _kill_group(child)
        raise
    finally:
        _close(child)
    duration = time.monotonic() - start
    return Outcome(
        exit_status=None if timed_out else child.exitstatus,
        signal=None if timed_out else child.signalstatus,
        output=clean_output(kept.text()),
        timed_out=timed_out,
        duration=duration,
        timeout=timeout,
    )


def _spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> pexpect.spawn[str]:
    """Start ``argv`` in ``cwd`` under a pty; a command that cannot start is an abort.

    The child changes to ``cwd`` itself, after the fork and before the exec; an
    error there (a directory that vanished or cannot be entered), like one from
    the exec, comes back through ptyprocess's pipe and is raised here as
    :class:`Aborted` with its reason, as is a command that is not executable (any
    more: the precheck saw it was). Anything else raised in the child would
    unwind bisectkit's own code in that copy of the process, which would go on
    with the rest of the step as a second bisectkit (its exit status read as the
    command's); the copy kills itself instead (a signal: never a culprit).
    """
    command, args = pexpect_command(argv)
    parent = os.getpid()
    try:
        return pexpect.spawn(command, args, env={**env, **orphans.child_env()}, encoding="utf-8",
                             codec_errors="replace", timeout=None, dimensions=(50, 200),
                             preexec_fn=functools.partial(_enter, cwd))
    except (OSError, pexpect.ExceptionPexpect) as exc:  # the exec's, or not executable now
        raise Aborted(f"cannot run {shlex.join(argv)}: {exc}") from None
    finally:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


def _enter(cwd: str) -> None:
    """In the child: change to ``cwd``, record itself (so that a later bisectkit can stop
    it if this one is killed: :mod:`bisectkit.orphans`); an OSError's text reaches the
    parent as is."""
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise OSError(f"cannot enter its working directory {cwd}: {exc.strerror}") from None
    try:
        orphans.record_self()
    except OSError as exc:
        raise OSError(f"cannot record it in {exc.filename}: {exc.strerror}") from None


def _stream(child: pexpect.spawn[str], kept: _Kept, echo: TextIO, start: float,
            timeout: float | None, cancelled: Callable[[], bool] | None) -> bool:
    """Copy the child's output to ``echo`` and ``kept`` until it exits; True on a timeout."""
    while True:
        if timeout is not None and time.monotonic() - start > timeout:
            _kill_group(child)
            return True
        if cancelled is not None and cancelled():
            raise Cancelled(f"cancelled after {time.monotonic() - start:.1f} s")
        try:
            data = child.read_nonblocking(_CHUNK, timeout=_POLL_S)
        except pexpect.TIMEOUT:
            continue
        except pexpect.EOF:
            return _wait_exit(child, start, timeout)
        text = data.replace("\r\n", "\n")
        kept.add(text)
        echo.write(text)
        echo.flush()


def _close(child: pexpect.spawn[str]) -> None:
    """Close the pty of a child that has exited or been killed."""
    # pexpect's default 0.1 s grace sleep would only add latency to every build
    # and repro. cast: types-pexpect does not declare spawn.ptyproc.
    cast(Any, child).ptyproc.delayafterclose = 0
    child.close(force=True)


def _wait_exit(child: pexpect.spawn[str], start: float, timeout: float | None) -> bool:
    """Reap a child whose output has closed; True if it had to be killed for the timeout."""
    while child.isalive():
        if timeout is not None and time.monotonic() - start > timeout:
            _kill_group(child)
            return True
        time.sleep(0.002)
    return False


def _kill_group(child: pexpect.spawn[str]) -> None:
    # pexpect makes the child a session leader, so its pid is the group id.
    if child.pid is None:
        return  # never started: nothing to kill
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
