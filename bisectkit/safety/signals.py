"""The signals that stop bisectkit, and the two ways a change is protected from them.

SIGINT (Ctrl-C), SIGTERM (kill, CI time limits), SIGHUP (closed terminal, ssh
drop) and SIGQUIT (Ctrl-\\) all mean "stop": each becomes :class:`Interrupted`,
which unwinds like Ctrl-C so that ``bisectkit run`` restores every repository.
SIGKILL cannot be caught; the journal (:mod:`bisectkit.safety.journal`) covers it.

A child that bisectkit forks (pexpect's pty fork, until it execs the build or the
repro) is a copy of bisectkit, handlers included: it gets the stop signals at
their defaults before it runs any Python (:func:`_children_start_plain`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
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


#: The stop signals already blocked when each :func:`as_interrupt` began, outermost
#: first (a forked child keeps those blocked; the list is empty outside the block).
_FOUND: list[set[int]] = []
#: The forking thread's signal mask, kept by the fork hook from before to after (per
#: thread: two workers may fork at once, and the hooks' Python lets the GIL go).
_FORKING = threading.local()


def _forking() -> None:
    # Held across the fork: one arriving before the child's hook ran stays pending
    # and meets the plain handlers, instead of _raise (the kernel delivers a
    # process's signal to the threads that do not block it, so bisectkit still sees it).
    if _FOUND:
        _FORKING.mask = set(signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS))


def _forked_parent() -> None:
    mask: set[int] | None = getattr(_FORKING, "mask", None)
    if mask is not None:
        _FORKING.mask = None
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _forked_child() -> None:
    mask: set[int] | None = getattr(_FORKING, "mask", None)
    if mask is None:
        return
    _FORKING.mask = None
    blocked = _FOUND[0]
    # Default, as exec makes of a caught signal, even if bisectkit found one ignored
    # (nohup): a build must die with the pty of the bisectkit that started it, not go on
    # writing into a tree that reset has restored. SIG_IGN here is ignored()'s.
    for s in STOP_SIGNALS:
        now = signal.getsignal(s)
        if now is _raise or now == signal.SIG_IGN:
            signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, (mask - set(STOP_SIGNALS)) |
                           (blocked & set(STOP_SIGNALS)))


@functools.cache  # once per process: a fork hook cannot be unregistered
def _children_start_plain() -> None:
    """Give every child forked inside :func:`as_interrupt` the stop signals at their defaults.

    Between its fork and its exec a child runs bisectkit's Python. The SIGHUP the
    kernel sends it when a killed bisectkit's pty closes would reach :func:`_raise`
    there and unwind bisectkit's own code inside the copy, which then waits forever
    on a worker queue, holding the run lock's open file for good. A default
    SIGHUP ends it instead; a build started inside :func:`held` or :func:`ignored`
    must not keep the signals blocked or ignored either (both survive exec).
    """
    os.register_at_fork(before=_forking, after_in_parent=_forked_parent,
                        after_in_child=_forked_child)


@contextlib.contextmanager
def as_interrupt() -> Iterator[None]:
    """Turn every stop signal into :class:`Interrupted` while the block runs."""
    _children_start_plain()
    blocked = set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) & set(STOP_SIGNALS)
    saved = {s: signal.signal(s, _raise) for s in STOP_SIGNALS}
    _FOUND.append(blocked)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        _FOUND.pop()


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
