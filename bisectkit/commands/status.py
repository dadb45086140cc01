"""``git bisect-patched status``: where the session stands: the range, the verdicts so far,
the candidates left and the one under test; or, waiting for its ends, those given so far.
Reads the session without the lock. (``bisectkit status`` is the patch stack against its
upstream: :mod:`bisectkit.commands.stack_status`.)"""

from __future__ import annotations

import argparse
import shlex

from bisectkit.commands import answer, waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.state import Idle, Started, WaitingForEnds, session_state
from bisectkit.engine import Next
from bisectkit.git.repo import Repo
from bisectkit.model import GIT_PROG, VERDICTS, short
from bisectkit.pipeline.bisection import Bisection
from bisectkit.store.waitstate import Waiting


def status(ctx: Context, args: argparse.Namespace) -> int:
    """The session's status in each state (idle: refused, exit 2)."""
    sp, store = ctx.open()
    match session_state(store):
        case Idle() as idle:
            raise idle.refusal()
        case WaitingForEnds(waiting=ends):
            return _waiting_status(ctx, sp, ends)
        case Started():
            return _session_status(ctx, ctx.reader(sp, store))


def _waiting_status(ctx: Context, sp: Repo, ends: Waiting) -> int:
    """Like git's ``status: waiting ...``: what the session waits for, how it was started,
    and the ends given so far."""
    waiting.say_status(ctx, ends)
    ctx.console.line(f"  started with: {GIT_PROG} {shlex.join(waiting.start_words(ends))}")
    repo = waiting.repo_of(sp, ends.template)
    terms = ends.template.terms
    for sha in ([ends.bad] if ends.bad else []) + ends.good:
        side = "bad" if sha == ends.bad else "good"
        ctx.console.line(f"  {terms.word(side)}: [{sha}] {repo.commit_info(sha).subject}")
    return 0


def _session_status(ctx: Context, b: Bisection) -> int:
    """The header, the verdicts so far, what is left and what is under test (or, decided,
    the answer)."""
    console, s = ctx.console, b.session
    answer.header(ctx, b)
    old, new = s.terms.old, s.terms.new
    counts = {v: sum(1 for e in s.verdict_map().values() if e == v) for v in VERDICTS}
    console.line(f"  verdicts: {counts['good']} {old}, {counts['bad']} {new}, "
                 f"{counts['skip']} skip (the {new} end included)")
    decision = b.decide_and_descend()
    if not isinstance(decision, Next):
        return answer.show_result(ctx, b, decision)
    lo, hi = b.search.bounds(s.candidates, s.verdict_map())
    upper = short(s.candidates[hi]) if hi < len(s.candidates) else "the far end (untested)"
    console.line(f"  {decision.remaining} candidates left between "
                 f"{f'the {old} end' if lo < 0 else short(s.candidates[lo])} and "
                 f"{upper}, roughly {decision.steps_left} steps")
    if s.current:
        console.line(f"  under test: [step {s.step_index_for(s.current)}] {s.current} "
                     f"{b.strategy.describe(s.current).subject}")
    else:
        console.line(f"  under test: nothing (the checkout of {short(decision.commit)} did "
                     f"not happen); '{GIT_PROG} good', 'bad' or 'skip' checks it out",
                     style="yellow")
    return 0


#: ``git bisect-patched status``.
COMMAND = Command(
    "status",
    description="Show the session: the range, the verdicts so far, the candidates left and the "
                "one under test.",
    examples=("status",), handler=status)
