"""A new session from a typed request (shared by ``start``, ``bisectkit run``, ``replay``)."""

from __future__ import annotations

from bisectkit import requests, strategies
from bisectkit.git import Repo
from bisectkit.model import StartRequest
from bisectkit.session import Session


def new_session(sp: Repo, request: StartRequest) -> Session:
    """Validate ``request`` against the repositories; a new session (nothing touched)."""
    session = strategies.start(sp, request)
    # The log's first line: full shas, so that a replay means the same range.
    session.start_argv = requests.start_argv(strategies.settled(request, session))
    return session
