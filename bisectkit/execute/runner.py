"""Run the build and the repro under a pseudo-terminal with pexpect.

The child gets a pty so compilers and test drivers keep their usual
line-buffered, coloured output; it is streamed live to our stdout and kept
as text for classification. The child runs in its own session, tagged, and
adopts its descendants' orphans, so a timeout or Ctrl-C kills it with
everything it started and nothing is left behind; it is recorded before it
execs, so what it leaves running when bisectkit itself is killed is stopped by
the next bisectkit command (:mod:`bisectkit.safety.orphans`).

Commands are argv lists, never split: a path with spaces is one word. What is
kept of the output is bounded and cleaned by :mod:`bisectkit.execute.keptoutput`.
"""

from __future__ import annotations

import codecs
import functools
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO, cast

import pexpect

from bisectkit.errors import Aborted, Cancelled
from bisectkit.execute.keptoutput import Kept
from bisectkit.model import DEFAULT_KEEP, Outcome
from bisectkit.safety import orphans

_CHUNK = 65536
#: The codec of :func:`_codec` (a name codecs.register finds: lower case, underscores).
_ARGV_CODEC = "bisectkit_argv"
_POLL_S = 0.1
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
    bytes are kept (see :class:`~bisectkit.execute.keptoutput.Kept`), plus the dropped lines that
    match a ``watch`` pattern. The timeout kills the child and everything it
    started; so does a ``KeyboardInterrupt`` while waiting, before it
    propagates, and ``cancelled()`` turning True (:class:`~bisectkit.errors.Cancelled`:
    a parallel step). What a child that exits by itself leaves running is left alone.

    Plugins get this as :func:`bisectkit.run_command`.
    """
    echo = sys.stdout if echo is None else echo
    start = time.monotonic()
    tag = orphans.command_tag()
    child = _spawn(argv, cwd, env, tag)
    kept = Kept(keep, watch)
    try:
        timed_out = _stream(child, kept, echo, start, timeout, cancelled)
    except BaseException:
        _kill(child, tag)
        raise
    else:
        if timed_out:
            _kill(child, tag)
        elif child.exitstatus is not None:  # exited by itself: what it left is a daemon
            orphans.command_done(tag)
    finally:
        _close(child)
    duration = time.monotonic() - start
    return Outcome(
        exit_status=None if timed_out else child.exitstatus,
        signal=None if timed_out else child.signalstatus,
        output=kept.text(),
        timed_out=timed_out,
        duration=duration,
        timeout=timeout,
    )


def _spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str],
           tag: str | None) -> pexpect.spawn[str]:
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
        return pexpect.spawn(command, args, env={**env, **orphans.child_env(tag)},
                             encoding=_codec(),
                             codec_errors="replace", timeout=None, dimensions=(50, 200),
                             preexec_fn=functools.partial(_enter, cwd, tag))
    except (OSError, pexpect.ExceptionPexpect) as exc:  # the exec's, or not executable now
        raise Aborted(f"cannot run {shlex.join(argv)}: {exc}") from None
    finally:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


@functools.cache
def _codec() -> str:
    """pexpect's ``encoding``: UTF-8 for the output (decoded with ``codec_errors``), and
    for the command line the bytes each word came from (:func:`os.fsencode`): a word that
    is not UTF-8 (a Latin-1 file name, ``caf\\udce9``) must reach the command as it was
    typed, and pexpect encodes every word with ``encoding`` (bytes words it refuses)."""
    utf8 = codecs.lookup("utf-8")
    info = codecs.CodecInfo(
        name=_ARGV_CODEC, encode=lambda text, errors="strict": (os.fsencode(text), len(text)),
        decode=utf8.decode, incrementalencoder=utf8.incrementalencoder,
        incrementaldecoder=utf8.incrementaldecoder, streamreader=utf8.streamreader,
        streamwriter=utf8.streamwriter)
    codecs.register(lambda name: info if name == _ARGV_CODEC else None)
    return _ARGV_CODEC


def _enter(cwd: str, tag: str | None) -> None:
    """In the child: change to ``cwd``, adopt its descendants' orphans and record itself
    (so that bisectkit can stop all it starts: :mod:`bisectkit.safety.orphans`); an OSError's
    text reaches the parent as is."""
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise OSError(f"cannot enter its working directory {cwd}: {exc.strerror}") from None
    orphans.adopt_orphans()
    try:
        orphans.record_self(tag)
    except OSError as exc:
        raise OSError(f"cannot record it in {exc.filename}: {exc.strerror}") from None


def _stream(child: pexpect.spawn[str], kept: Kept, echo: TextIO, start: float,
            timeout: float | None, cancelled: Callable[[], bool] | None) -> bool:
    """Copy the child's output to ``echo`` and ``kept`` until it exits; True on a timeout
    (the child still runs)."""
    while True:
        if timeout is not None and time.monotonic() - start > timeout:
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
    """Reap a child whose output has closed; True if it is still running at the timeout."""
    while child.isalive():
        if timeout is not None and time.monotonic() - start > timeout:
            return True
        time.sleep(0.002)
    return False


def _kill(child: pexpect.spawn[str], tag: str | None) -> None:
    """Kill the child and everything it started (:func:`bisectkit.safety.orphans.stop_command`)."""
    if child.pid is None:
        return  # never started: nothing to kill
    orphans.stop_command(child.pid, tag)
