"""``git bisect-patched terms``: print the session's words for the old and new states, as
``git bisect terms`` does (with an option, just one of them). Known from ``start`` on: a
session waiting for its ends has them already."""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.state import Idle, Started, WaitingForEnds, session_state
from bisectkit.model import Terms


def terms(ctx: Context, args: argparse.Namespace) -> int:
    """The session's words for the two sides (``args.which``: just one of them)."""
    sp, store = ctx.open()
    match session_state(store):
        case Idle() as idle:
            raise idle.refusal()
        case WaitingForEnds(waiting=waiting):
            words = waiting.template.terms
        case Started():
            words = ctx.reader(sp, store).terms
    if args.which is not None:
        ctx.console.line(words.old if args.which == "old" else words.new)
        return 0
    for line in terms_lines(words):
        ctx.console.line(line)
    return 0


def terms_lines(terms: Terms) -> list[str]:
    """What ``git bisect terms`` says, and what ``good``/``bad`` mean looking for a fix."""
    lines = [f"Your current terms are {terms.old} for the old state",
             f"and {terms.new} for the new state."]
    if terms.find_fix:
        lines.append(f"Looking for a fix: 'good' (the repro passes) marks {terms.new}, "
                     f"'bad' marks {terms.old}.")
    return lines


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--term-good", "--term-old", dest="which", action="store_const",
                   const="old", help="print only the word for the old state")
    g.add_argument("--term-bad", "--term-new", dest="which", action="store_const",
                   const="new", help="print only the word for the new state")


#: ``git bisect-patched terms``.
COMMAND = Command(
    "terms",
    description="Print the session's terms, as 'git bisect terms' does; with an option, just "
                "the one word.",
    examples=("terms", "terms --term-bad"),
    arguments=_arguments, handler=terms)
