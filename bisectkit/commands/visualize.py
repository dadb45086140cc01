"""``git bisect-patched visualize`` (alias ``view``): list the candidates still in play,
newest first, each with its verdict so far in the session's terms, as ``git bisect
visualize`` does (``--log``: as ``git log`` prints them). Reads the session without the
lock."""

from __future__ import annotations

import argparse

import pluggy

from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.state import Started, session_state
from bisectkit.model import short
from bisectkit.pipeline.bisection import Bisection

#: The verdict column of a candidate nothing is known about yet.
UNKNOWN = "?"


def remaining(b: Bisection) -> list[tuple[str, str]]:
    """The candidates still in play, newest first (as ``git log`` lists them), with the
    verdict known so far in the session's words (``?``: none).

    Those after the newest good one up to the oldest bad one, that one included
    (``git bisect visualize`` shows the bad end too); in an advance with nothing
    bad yet, up to the far end.
    """
    s = b.session
    known = s.verdict_map()
    lo, hi = b.search.bounds(s.candidates, known)
    shown = s.candidates[lo + 1:min(hi, len(s.candidates) - 1) + 1]
    return [(c, s.terms.word(known[c]) if c in known else UNKNOWN) for c in reversed(shown)]


def visualize(ctx: Context, args: argparse.Namespace) -> int:
    """One line per remaining candidate (``--log``: ``git log`` style), the verdicts so far
    beside them; a session that has not started has no candidates yet."""
    sp, store = ctx.open()
    state = session_state(store)
    if not isinstance(state, Started):  # idle, or waiting: no candidates yet
        raise state.refusal()
    b = ctx.reader(sp, store)
    rows = remaining(b)
    if not rows:
        ctx.console.line("no candidates left", style="dim")
        return 0
    if args.log:
        for sha, word in rows:
            for line in _log_entry(b, sha, word):  # as git log prints it: never broken
                ctx.console.whole(line)
        return 0
    width = max(len(w) for w in (b.terms.old, b.terms.new, "skip", UNKNOWN))
    columns = ctx.console.width  # the terminal's, else $COLUMNS or 80
    for sha, word in rows:
        subject = b.strategy.describe(sha).subject
        ctx.console.line(fit(f"{short(sha)} {word:<{width}} {subject}", columns))
    return 0


def _log_entry(b: Bisection, sha: str, word: str) -> list[str]:
    """One commit as ``git log`` prints it; a known verdict stands where git shows refs."""
    info = b.strategy.describe(sha)
    body = [f"    {line}" if line else "" for line in info.message.rstrip("\n").splitlines()]
    return [f"commit {sha}{f' ({word})' if word != UNKNOWN else ''}",
            f"Author: {info.author}", f"Date:   {info.date}", "", *body, ""]


def fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` columns ("..." marks the cut), so it never wraps."""
    if len(line) <= width or width < 4:
        return line
    return line[:width - 3].rstrip() + "..."


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    p.add_argument("--log", action="store_true",
                   help="print them as 'git log' does (sha, author, date, message)")


#: ``git bisect-patched visualize`` (``view``).
COMMAND = Command(
    "visualize", aliases=("view",),
    help="list the candidates left and their verdicts (alias: view)",
    description="List the candidates still in play, newest first: those after the newest "
                "good one up to the oldest bad one, each with its verdict so far in the "
                "session's terms ('?': not tested). Submodule sessions list upstream commits "
                "of the submodule; --integrate sessions superproject commits.",
    examples=("view", "visualize --log"),
    arguments=_arguments, handler=visualize)
