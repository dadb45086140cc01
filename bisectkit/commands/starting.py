"""A new session from a typed request (shared by ``start``, ``bisectkit run``, ``replay``)."""

from __future__ import annotations

from collections.abc import Callable

from bisectkit import strategies
from bisectkit.cli import requests
from bisectkit.git.repo import Repo
from bisectkit.git.shapes import shallow
from bisectkit.git.shapes.shallow import ShallowCut
from bisectkit.model import StartRequest
from bisectkit.store.session import Session


def new_session(sp: Repo, request: StartRequest,
                deepen: Callable[[str], None] | None = None) -> Session:
    """Validate ``request`` against the repositories; a new session (nothing touched).

    ``deepen`` (``--deepen``): when a shallow clone's boundary leaves a question
    open, run the fetches its error offers, cheapest first, telling ``deepen``
    what each brought, and validate again; without it the error stands.
    """
    session = _start(sp, request, deepen)
    # The log's first line: full shas, so that a replay means the same range.
    session.start_argv = requests.start_argv(strategies.settled(request, session))
    return session


def _start(sp: Repo, request: StartRequest, deepen: Callable[[str], None] | None) -> Session:
    tried: set[tuple[str, tuple[str, ...]]] = set()
    while True:
        try:
            return strategies.start(sp, request)
        except ShallowCut as cut:
            left = [t for t in cut.tries if (str(cut.workdir), t) not in tried]
            if deepen is None or not left:
                raise
            tried.add((str(cut.workdir), left[0]))
            # Before the session exists: nothing to restore if the fetch fails.
            deepen(shallow.fetch(cut.workdir, left[0]))
            # libgit2 keeps the cut graph of what it already read; start afresh.
            sp.reopen()
