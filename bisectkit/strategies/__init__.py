"""The bisection strategies: what the candidates are and how one is put on disk.

- :mod:`.submodule`: upstream commits of a patched submodule, the local
  patch stack replayed onto each (:mod:`.stops`: where a patch stops applying);
- :mod:`.integrate`: the superproject's own commits, submodules moved to their pins;
- :mod:`.stack`: the local patch stack itself, at one upstream commit;
- :mod:`.advance`: how far the pin can move toward upstream (an open range);
- :mod:`.base`: the :class:`~.base.Strategy` interface and the registry; :mod:`.common`:
  what they share; :mod:`.pinning` and :mod:`.pinwrite`: ``advance --apply``.

Each strategy's module declares its :class:`~.base.Kind` (its parameters, which name it;
its request type, how it starts, its command line, what reports say of it), registered
below; a new strategy is a new module and its line in :data:`KINDS`.
Callers use these functions: :func:`request_from` builds the request the command
line chose (:mod:`.cmdline`: the chosen strategy builds it, and its words again,
:func:`start_argv`, :func:`run_argv`), :func:`start` validates a typed request into
a new session, :func:`settled` gives the request back as the session understood it
(full shas: what the replay log records), :func:`make_strategy` reopens the strategy
of a saved session, and :func:`kind_named` tells what a strategy's name means (for a
result read back from JSON).
"""

from __future__ import annotations

from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import StartRequest
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session, unknown_strategy
from bisectkit.strategies import advance, integrate, stack, submodule
from bisectkit.strategies.base import Kind, Prepared, Strategy, kind_named, kind_of, register
from bisectkit.strategies.cmdline import (
    chosen,
    followup_lines,
    lacks_ends,
    options,
    request_from,
    run_argv,
    start_argv,
)

#: Every strategy, in the order ``--help`` shows their options; when options of several
#: are given, the last of them decides (its request refuses the others in its words).
KINDS = register(submodule.KIND, integrate.KIND, stack.KIND, advance.KIND)

__all__ = ["KINDS", "Kind", "Prepared", "Strategy", "chosen", "followup_lines", "kind_named",
           "lacks_ends", "make_strategy", "options", "request_from", "run_argv", "settled",
           "start", "start_argv"]


def make_strategy(superproject: Repo, session: Session, mover: Mover | None = None) -> Strategy:
    """The strategy object a session was started with (``mover``: to check candidates out)."""
    kind = kind_named(session.strategy)
    if kind is None:  # read sessions are refused sooner (Session.from_json): a built one
        raise unknown_strategy(session.strategy)
    try:
        return kind.strategy(superproject, session, mover)
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
    return kind_of(request).start(superproject, request)


def settled(request: StartRequest, session: Session) -> StartRequest:
    """``request`` as :func:`start` understood it into ``session``: revisions as full shas,
    the submodule's path and the upstream found; replaying it means the same bisection."""
    settled_request: StartRequest = kind_of(request).settled(request, session)
    return settled_request
