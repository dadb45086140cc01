"""TEMPORARY (replaced by the strategies package)."""

from __future__ import annotations

from bisectkit.errors import BadInput
from bisectkit.git import Repo
from bisectkit.integrate import IntegrateStrategy
from bisectkit.model import StartRequest
from bisectkit.session import Session
from bisectkit.stackbisect import StackStrategy
from bisectkit.strategy import Strategy
from bisectkit.submodule import SubmoduleStrategy
from bisectkit.worktree import Mover

_STRATEGIES: dict[str, type[Strategy]] = {
    SubmoduleStrategy.name: SubmoduleStrategy,
    IntegrateStrategy.name: IntegrateStrategy,
    StackStrategy.name: StackStrategy,
}


def make_strategy(superproject: Repo, session: Session, mover: Mover | None = None) -> Strategy:
    """The strategy object a session was started with (``mover``: to check candidates out)."""
    try:
        kind = _STRATEGIES[session.strategy]
    except KeyError:
        raise BadInput(f"the session uses an unknown strategy {session.strategy!r}; run "
                       "'git bisect-patched reset'") from None
    return kind(superproject, session, mover)


def start(superproject: Repo, req: StartRequest) -> Session:
    """TEMPORARY dispatch to the old modules."""
    from bisectkit import integrate, stackbisect, submodule
    from bisectkit.model import IntegrateRequest, StackRequest

    terms = (req.terms.old, req.terms.new)
    if isinstance(req, StackRequest):
        return stackbisect.start(superproject,
                                 stackbisect.StackRequest(req.submodule, req.upstream, req.at))
    if isinstance(req, IntegrateRequest):
        return integrate.start(superproject, integrate.IntegrateRequest(
            bad=req.bad, good=list(req.good), submodules=list(req.submodules),
            upstream=req.upstream, pathspec=list(req.pathspec), terms=terms))
    return submodule.start(superproject, submodule.StartRequest(
        submodule=req.submodule, upstream=req.upstream, bad=req.bad, good=list(req.good),
        pathspec=list(req.pathspec), terms=terms, on_conflict=req.on_conflict))
