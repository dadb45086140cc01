"""``git bisect-patched log``: print the session as a log, in ``git bisect log``'s shape:
its start line and every mark, in order (``replay`` starts over from it). A session
waiting for its ends prints its start line and the ends given so far. ``--git``: as
``git bisect log`` would write it, for ``git bisect replay`` in the repository whose
commits are bisected (the upstream commits of a submodule session: without the patch
stack, so git's tests there are of other trees; the marks are the same)."""

from __future__ import annotations

import argparse
import shlex

import pluggy

from bisectkit.commands import waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.state import Idle, Started, WaitingForEnds, session_state
from bisectkit.errors import BadInput
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
            if args.git:
                raise BadInput("a session waiting for its ends has no git bisect log yet; "
                               "give both ends first")
            lines = waiting_log_lines(waiting.repo_of(sp, ends.template), ends)
        case Started():
            parts = ctx.reader(sp, store).parts
            lines = replaylog.git_log_lines(parts) if args.git else replaylog.log_lines(parts)
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


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("--git", action="store_true",
                   help="write it as 'git bisect log' does, for 'git bisect replay' in the "
                        "repository whose commits are bisected (the submodule, or the "
                        "superproject with --integrate)")


#: ``git bisect-patched log``.
COMMAND = Command(
    "log",
    description="Print the session as a log: its start line and every mark, in order; "
                "'replay' starts over from it. The plain log cannot be replayed by git (its "
                "start line says --submodule/--integrate, which git bisect has no words "
                "for): --git writes the same range and marks as git bisect log does, for "
                "'git bisect replay' in the repository whose commits are bisected.",
    examples=("log > bisect.log", "log --git > git-bisect.log"),
    arguments=_arguments, handler=log)
