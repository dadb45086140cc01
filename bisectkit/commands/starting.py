"""A new session from the command line: the typed request, the validated session, and its
first checkout (shared by ``start``, the mark that completes a waiting one, ``bisectkit
run``, ``advance`` and ``replay``)."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable

from bisectkit import strategies
from bisectkit.cli import requests
from bisectkit.cli.targets import Given
from bisectkit.commands import answer
from bisectkit.commands.context import Context
from bisectkit.engine import Next
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.git.shapes import shallow
from bisectkit.git.shapes.shallow import ShallowCut
from bisectkit.model import GIT_PROG, StartRequest, Terms
from bisectkit.patches.status import default_submodule
from bisectkit.pipeline.lifecycle import Run
from bisectkit.safety import signals
from bisectkit.store.session import Session


def given(ctx: Context, args: Namespace) -> Given:
    """What ``start`` (or ``bisectkit run``/``advance``, or a log's start line) gave to say
    what is bisected (the terms and the pathspec checked)."""
    sp = ctx.superproject
    # Outside a repository: no default, the command then says where it needs one.
    return requests.given(args, strategies.options(), lambda alternative: default_submodule(
        sp, None, alternative) if sp else None)


def start_request(ctx: Context, args: Namespace) -> StartRequest:
    """What ``start`` (or ``bisectkit run``/``advance``, or a log's start line) asks for:
    the request of the strategy its options chose."""
    return strategies.request_from(given(ctx, args))


def new_session(sp: Repo, request: StartRequest,
                deepen: Callable[[str], None] | None = None) -> Session:
    """Validate ``request`` against the repositories; a new session (nothing touched).

    ``deepen`` (``--deepen``): when a shallow clone's boundary leaves a question
    open, run the fetches its error offers, cheapest first, telling ``deepen``
    what each brought, and validate again; without it the error stands.
    """
    session = _start(sp, request, deepen)
    # The log's first line: full shas, so that a replay means the same range.
    session.start_argv = strategies.start_argv(strategies.settled(request, session))
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


def start_session(ctx: Context, run: Run, session: Session) -> int:
    """Begin a validated ``session``: its header, then the first checkout (``run`` locked)."""
    b = run.begin(session)
    answer.header(ctx, b)
    try:
        decision = b.advance()
    except BadInput:
        # The first checkout was refused (a file in the way): nothing moved,
        # so nothing is left behind either.
        signals.run_shielded(run.end)
        raise
    if isinstance(decision, Next):
        ctx.console.line(f"Build and run the repro, then: {GIT_PROG} "
                         f"{_mark_words(b.terms)}  "
                         f"(or: {GIT_PROG} run [--build CMD] REPRO)", style="dim")
    return answer.show_if_decided(ctx, b, decision)


def _mark_words(terms: Terms) -> str:
    """How to mark the commit under test, in the session's words."""
    if terms.is_default:
        return "good|bad|skip"
    if not terms.find_fix:  # good/bad are refused in other words, as git does
        return f"{terms.old}|{terms.new}|skip"
    passes, fails = terms.word(terms.side("good")), terms.word(terms.side("bad"))
    return (f"good|bad|skip (the repro passes|fails: {passes}|{fails}), or old|new "
            f"({terms.old}|{terms.new})")
