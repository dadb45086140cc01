"""Run the build and the repro under a pseudo-terminal with pexpect.

The child gets a pty so compilers and test drivers keep their usual
line-buffered, coloured output; it is streamed live to our stdout and kept
as text for classification. The child runs in its own session, so a timeout
or Ctrl-C kills its whole process group and nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

import pexpect

_CHUNK = 65536
_POLL_S = 0.1


@dataclass(frozen=True)
class Outcome:
    """What one command did."""

    #: Exit status, or ``None`` when the command was killed by a signal.
    exit_status: int | None
    #: The signal that killed it, if any.
    signal: int | None
    #: stdout and stderr, combined, with ``\\r\\n`` folded to ``\\n``.
    output: str
    timed_out: bool
    duration: float
    #: The time limit the command ran under, if any.
    timeout: float | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out

    def describe(self) -> str:
        """Short human reason, e.g. ``exit 1`` or ``killed by SIGSEGV``."""
        if self.timed_out:
            return f"timed out after {self.timeout or self.duration:g} s"
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit {self.exit_status}"


def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float | None = None,
    echo: TextIO | None = None,
) -> Outcome:
    """Run ``argv`` to completion (or ``timeout`` seconds) and return its :class:`Outcome`.

    A ``KeyboardInterrupt`` while waiting kills the child's process group
    before it propagates.
    """
    echo = sys.stdout if echo is None else echo
    start = time.monotonic()
    child = pexpect.spawn(
        argv[0],
        list(argv[1:]),
        cwd=cwd,
        env=dict(env),
        encoding="utf-8",
        codec_errors="replace",
        timeout=None,
        dimensions=(50, 200),
    )
    chunks: list[str] = []
    timed_out = False
    try:
        while True:
            if timeout is not None and time.monotonic() - start > timeout:
                timed_out = True
                _kill_group(child)
                break
            try:
                data = child.read_nonblocking(_CHUNK, timeout=_POLL_S)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                timed_out = _wait_exit(child, start, timeout)
                break
            text = data.replace("\r\n", "\n")
            chunks.append(text)
            echo.write(text)
            echo.flush()
    except BaseException:
        _kill_group(child)
        raise
    finally:
        # The child has exited or been killed by now; pexpect's default 0.1 s
        # grace sleep would only add latency to every build and repro.
        child.ptyproc.delayafterclose = 0
        child.close(force=True)
    duration = time.monotonic() - start
    return Outcome(
        exit_status=None if timed_out else child.exitstatus,
        signal=None if timed_out else child.signalstatus,
        output="".join(chunks),
        timed_out=timed_out,
        duration=duration,
        timeout=timeout,
    )


def _wait_exit(child: pexpect.spawn, start: float, timeout: float | None) -> bool:
    """Reap a child whose output has closed; True if it had to be killed for the timeout."""
    while child.isalive():
        if timeout is not None and time.monotonic() - start > timeout:
            _kill_group(child)
            return True
        time.sleep(0.002)
    return False


def _kill_group(child: pexpect.spawn) -> None:
    # pexpect makes the child a session leader, so its pid is the group id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
