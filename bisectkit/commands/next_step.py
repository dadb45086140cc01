"""``git bisect-patched next``: check out the candidate to test now, as ``git bisect next``
does: again, after the user moved a tree under test by hand (or after marks with no
checkout), or the answer when it is decided."""

from __future__ import annotations

import argparse

from bisectkit.commands import answer
from bisectkit.commands.command import Command, no_arguments
from bisectkit.commands.context import Context
from bisectkit.commands.state import Idle, Started, WaitingForEnds, session_state


def next_candidate(ctx: Context, args: argparse.Namespace) -> int:
    """The candidate the session tests now, checked out (or the answer, shown again)."""
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        match session_state(run.store):
            case Idle() as idle:
                raise idle.refusal()
            case WaitingForEnds() as waiting:
                raise waiting.refusal()
            case Started():
                b = run.resume()
                return answer.show_if_decided(ctx, b, b.advance())


#: ``git bisect-patched next``.
COMMAND = Command(
    "next",
    description="Check out the candidate the session tests now, with the local patch stack "
                "applied, as 'git bisect next' does: after a tree under test was moved by "
                "hand, or to see the answer again once it is found.",
    examples=("next",), arguments=no_arguments, handler=next_candidate)
