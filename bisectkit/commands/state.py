"""Where the bisection of a superproject stands, decided once per command: idle, waiting
for its ends, or started.

``start`` with fewer than both ends leaves a session *waiting* (its ends kept in
``waiting.json``, nothing checked out); with both, or once the marks complete
them, the session is *started* (``session.json``). Each session command
(``good``/``bad``/..., ``status``, ``log``, ``terms``, ``visualize``) reads the
state once and handles each of the three itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bisectkit.errors import BadInput, BisectkitError
from bisectkit.model import GIT_PROG, Terms
from bisectkit.store.session import SessionStore, no_session, not_started
from bisectkit.store.waitstate import Waiting


def _interrupted(state_dir: Path) -> BadInput:
    return BadInput(f"an interrupted bisection left changes to undo ({state_dir}); run "
                    f"'{GIT_PROG} reset'")


@dataclass(frozen=True)
class Idle:
    """No session: none was started, or the last one ended."""

    #: The state folder, when a journal is left there without a session (a kill between
    #: the journal's first record and the session's save, or a session file deleted):
    #: ``reset`` undoes what it recorded.
    interrupted: Path | None = None

    def refusal(self) -> BadInput:
        """Why a command that reads the session cannot, and what to do."""
        return _interrupted(self.interrupted) if self.interrupted else no_session()


@dataclass(frozen=True)
class WaitingForEnds:
    """``start`` was given fewer than both ends: nothing is checked out yet."""

    waiting: Waiting
    #: As :attr:`Idle.interrupted`: a mark that completed the ends was cut short.
    interrupted: Path | None = None

    def refusal(self) -> BadInput:
        """Why a command that needs the candidates cannot run yet, and what to give."""
        if self.interrupted:
            return _interrupted(self.interrupted)
        return not_started(self.waiting)


@dataclass(frozen=True)
class Started:
    """A session is in progress (read it with ``Context.reader``, or ``Run.resume`` under
    the lock)."""


#: The three states a superproject's bisection can be in.
SessionState = Idle | WaitingForEnds | Started


def session_state(store: SessionStore) -> SessionState:
    """The state ``store`` holds (a damaged ``waiting.json`` is refused, exit 2). A kill
    between saving a session and removing its waiting file leaves both: the session, the
    newer, wins."""
    if store.exists():
        return Started()
    interrupted = store.dir if store.journal_path.exists() else None
    waiting = store.load_waiting()
    if waiting is not None:
        return WaitingForEnds(waiting, interrupted)
    return Idle(interrupted)


def session_terms(store: SessionStore) -> Terms | None:
    """The words of the session ``store`` holds, started or waiting; None when idle or
    unreadable (the command that reads it says why)."""
    try:
        match session_state(store):
            case Started():
                return store.load().terms
            case WaitingForEnds(waiting=waiting):
                return waiting.template.terms
            case Idle():
                return None
    except BisectkitError:
        return None
