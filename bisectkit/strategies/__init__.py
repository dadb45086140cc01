"""The bisection strategies: what the candidates are and how one is put on disk.

- :mod:`.submodule`: upstream commits of a patched submodule, the local
  patch stack replayed onto each (:mod:`.stops`: where a patch stops applying);
- :mod:`.integrate`: the superproject's own commits, submodules moved to their pins;
- :mod:`.stack`: the local patch stack itself, at one upstream commit;
- :mod:`.advance`: how far the pin can move toward upstream (an open range);
- :mod:`.base`: the :class:`~.base.Strategy` interface; :mod:`.common`: what they share.

Callers use three functions: :func:`start` validates a typed request into a
new session, :func:`settled` gives the request back as the session
understood it (full shas: what the replay log records), and
:func:`make_strategy` reopens the strategy of a saved session.
"""

from __future__ import annotations

from typing import assert_never

from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import (
    AdvanceRequest,
    IntegrateRequest,
    StackRequest,
    StartRequest,
    SubmoduleRequest,
)
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session
from bisectkit.strategies import advance, integrate, stack, submodule
from bisectkit.strategies.base import Prepared, Strategy

__all__ = ["Prepared", "Strategy", "make_strategy", "settled", "start"]

_STRATEGIES: dict[str, type[Strategy]] = {
    submodule.SubmoduleStrategy.name: submodule.SubmoduleStrategy,
    integrate.IntegrateStrategy.name: integrate.IntegrateStrategy,
    stack.StackStrategy.name: stack.StackStrategy,
    advance.AdvanceStrategy.name: advance.AdvanceStrategy,
}


def make_strategy(superproject: Repo, session: Session, mover: Mover | None = None) -> Strategy:
    """The strategy object a session was started with (``mover``: to check candidates out)."""
    try:
        kind = _STRATEGIES[session.strategy]
    except KeyError:
        raise BadInput(f"the session uses an unknown strategy {session.strategy!r}; run "
                       "'git bisect-patched reset'") from None
    try:
        return kind(superproject, session, mover)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # A session file of the right shape whose strategy parameters are missing or of
        # the wrong type (damaged, or hand-edited): one line, never a traceback.
        raise BadInput(f"the session's {session.strategy} parameters are damaged "
                       f"({type(exc).__name__}: {exc}); run 'git bisect-patched reset'"
                       ) from exc


def start(superproject: Repo, request: StartRequest) -> Session:
    """Validate ``request`` against the repositories; a new session (nothing touched).

    The session's ``start_argv`` is left empty: the command line is the caller's.
    """
    if isinstance(request, SubmoduleRequest):
        return submodule.start(superproject, request)
    if isinstance(request, IntegrateRequest):
        return integrate.start(superproject, request)
    if isinstance(request, StackRequest):
        return stack.start(superproject, request)
    if isinstance(request, AdvanceRequest):
        return advance.start(superproject, request)
    assert_never(request)


def settled(request: StartRequest, session: Session) -> StartRequest:
    """``request`` as :func:`start` understood it into ``session``: revisions as full shas,
    the submodule's path and the upstream found; replaying it means the same bisection."""
    if isinstance(request, SubmoduleRequest):
        return submodule.settled(request, session)
    if isinstance(request, IntegrateRequest):
        return integrate.settled(request, session)
    if isinstance(request, StackRequest):
        return stack.settled(request, session)
    if isinstance(request, AdvanceRequest):
        return advance.settled(request, session)
    assert_never(request)
