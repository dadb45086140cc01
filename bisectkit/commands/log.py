"""``git bisect-patched log``: print the session as a log, in ``git bisect log``'s shape:
its start line and every mark, in order (``replay`` starts over from it). A session
waiting for its ends prints its start line and the ends given so far."""

from __future__ import annotations

import argparse
import shlex

from bisectkit.commands import waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.state import Idle, Started, WaitingForEnds, session_state
from bisectkit.git.repo import Repo
from bisectkit.model import GIT_PROG
from bisectkit.pipeline import replaylog
from bisectkit.store.waitstate import Waiting


def log(ctx: Context, args: argparse.Namespace) -> int:
    """The log of the session in each state (idle: refused, exit 2)."""
    sp, store = ctx.open()
    match session_state(store):
        case Idle() as idle:
            raise idle.refusal()
        case WaitingForEnds(waiting=ends):
            lines = waiting_log_lines(waiting.repo_of(sp, ends.template), ends)
        case Started():
            lines = replaylog.log_lines(ctx.reader(sp, store).parts)
    for line in lines:  # whole, however wide: 'replay' reads them back
        ctx.console.whole(line)
    return 0


def waiting_log_lines(repo: Repo, ends: Waiting) -> list[str]:
    """The start line, then a ``# status`` comment before each end given, as git writes."""
    terms = ends.template.terms
    words = {"good": "good", "bad": "bad"} if terms.is_default else {"good": "old", "bad": "new"}
    lines = [f"{GIT_PROG} {shlex.join(waiting.start_words(ends))}"]
    state = Waiting(ends.template)
    for side, sha in ends.marks:
        lines += [f"# status: {state.status()}",
                  f"# {terms.word(side)}: [{sha}] {repo.commit_info(sha).subject}",
                  f"{GIT_PROG} {words[side]} {sha}"]
        state = state.marked(side, [sha])
    return [*lines, f"# status: {state.status()}"]


#: ``git bisect-patched log``.
COMMAND = Command(
    "log", help="print a log that 'replay' accepts",
    description="Print the session as a log: its start line and every mark, in order; "
                "'replay' starts over from it.",
    examples=("log > bisect.log",), handler=log)
