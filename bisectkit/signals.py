"""The signals that stop bisectkit, and the two ways a change is protected from them.

SIGINT (Ctrl-C), SIGTERM (kill, CI time limits), SIGHUP (closed terminal, ssh
drop) and SIGQUIT (Ctrl-\\) all mean "stop": each becomes :class:`Interrupted`,
which unwinds like Ctrl-C so that ``bisectkit run`` restores every repository.
SIGKILL cannot be caught; the journal (:mod:`bisectkit.journal`) covers it.

A child that bisectkit forks (pexpect's pty fork, until it execs the build or the
repro) is a copy of bisectkit, handlers included: it gets the stop signals back
as bisectkit found them (:func:`_children_start_plain`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Callable, Iterator
from types import FrameType

#: Every signal that stops bisectkit (and is therefore held or ignored around changes).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; unwinds like Ctrl-C (``except Exception`` does not catch it)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as shells report a command a signal stopped."""
        return 128 + self.signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@functools.cache  # once per process: a fork hook cannot be unregistered
def _children_start_plain() -> None:
    """Give every forked child the stop signals as they were before bisectkit's handlers.

    Between its fork and its exec a child runs bisectkit's Python. The SIGHUP the
    kernel sends it when a killed bisectkit's pty closes would reach :func:`_raise`
    there and unwind bisectkit's own code inside the copy, which then waits forever
    on a worker queue, holding the run lock's open file for good. A default
    SIGHUP ends it instead; a build started inside :func:`held` or :func:`ignored`
    must not keep the signals blocked or ignored either (both survive exec).
    """
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}

    def plain() -> None:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_IGN if handler == signal.SIG_IGN else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    os.register_at_fork(after_in_child=plain)


@contextlib.contextmanager
def as_interrupt() -> Iterator[None]:
    """Turn every stop signal into :class:`Interrupted` while the block runs."""
    _children_start_plain()
    saved = {s: signal.signal(s, _raise) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold stop signals (delivered when the block ends) around a change that must not tear."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def ignored() -> Iterator[None]:
    """Ignore stop signals: a second Ctrl-C during a restore cannot leave it half done."""
    saved = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def run_shielded(action: Callable[[], object]) -> None:
    """Run clean-up ``action`` to completion, signals ignored, even if one lands just before.

    A signal raised before the shield went up interrupts nothing of
    ``action`` (it had not started), so it is simply started again.
    """
    while True:
        try:
            with ignored():
                action()
            return
        except Interrupted:
            continue


def run_shielded_noting(action: Callable[[], object]) -> int | None:
    """:func:`run_shielded`, and the first stop signal that arrived before ``action`` ended
    (None: none), for a clean-up after which work would follow that the user meant to stop
    (``advance --apply`` writes after its restore).

    The signals are held while ``action`` runs, so one that arrives is still pending
    (a blocked signal is never discarded) and is read before the shield drops it.
    """
    noted: list[int] = []

    def noting() -> None:
        with held():
            try:
                action()
            finally:
                pending = signal.sigpending()
                noted.extend(s for s in STOP_SIGNALS if s in pending)

    while True:
        try:
            with ignored():
                noting()
            break
        except Interrupted as stop:  # landed just before the shield: noted, action rerun
            noted.append(stop.signum)
    return noted[0] if noted else None
