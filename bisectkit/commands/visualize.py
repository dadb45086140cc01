"""``git bisect-patched visualize`` (alias ``view``): the candidates still in play, as ``git
bisect visualize`` shows them.

As git decides: with no option, ``gitk`` when a display is there (``DISPLAY``, and gitk
on PATH), else bisectkit's own listing (newest first, each candidate with its verdict so
far in the session's terms; ``--log``: as ``git log`` prints them), through git's pager on
a terminal; with ``git log`` options (``--oneline``, ``-p``, ``--stat``...), ``git log``
itself, run in the repository bisected on exactly the candidates left (it pages and
colours as the user's git does). Reads the session without the lock."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pluggy

from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.state import Started, session_state
from bisectkit.errors import BadInput
from bisectkit.git import cli as gitcli
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


#: bisectkit's own options; every other word is ``git log``'s.
OWN_OPTIONS = ("--log", "--no-gui", "-h", "--help")


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """``visualize``'s command line as (bisectkit's words, ``git log``'s words in order):
    argparse would take ``-n 3`` apart."""
    return ([argv[0], *(w for w in argv[1:] if w in OWN_OPTIONS)],
            [w for w in argv[1:] if w not in OWN_OPTIONS])


def visualize(ctx: Context, args: argparse.Namespace) -> int:
    """gitk, ``git log`` with the options given, or one line per remaining candidate
    (``--log``: ``git log`` style), the verdicts so far beside them; a session that has
    not started has no candidates yet."""
    log_args: list[str] = list(getattr(args, "log_args", None) or [])
    if log_args and not log_args[0].startswith("-"):
        raise BadInput(f"'{log_args[0]}' is not a git log option: visualize passes options "
                       "to git log (a viewer of your own: run it on refs/bisect/*)")
    sp, store = ctx.open()
    state = session_state(store)
    if not isinstance(state, Started):  # idle, or waiting: no candidates yet
        raise state.refusal()
    b = ctx.reader(sp, store)
    rows = remaining(b)
    if not rows:
        ctx.console.line("no candidates left", style="dim")
        return 0
    repo = b.strategy.history.workdir
    if log_args:
        # Ours first: the user's may end with '-- PATH...'.
        return gitcli.shown_to_user(repo, "\n".join(sha for sha, _ in rows) + "\n",
                                    "log", "--no-walk=unsorted", "--stdin", *log_args)
    if not args.log and not args.no_gui and _gui_wanted():
        return _gitk(b, rows)
    if args.log:
        lines = [line for sha, word in rows for line in _log_entry(b, sha, word)]
    else:
        width = max(len(w) for w in (b.terms.old, b.terms.new, "skip", UNKNOWN))
        columns = ctx.console.width  # the terminal's, else $COLUMNS or 80
        lines = [fit(f"{short(sha)} {word:<{width}} "
                     f"{b.strategy.describe(sha).subject}", columns) for sha, word in rows]
    if not _paged(repo, lines):
        for line in lines:  # --log: as git log prints it, never broken
            (ctx.console.whole if args.log else ctx.console.line)(line)
    return 0


def _gui_wanted() -> bool:
    """``git bisect visualize``'s test: a display (or a Windows or macOS session) and gitk."""
    shown = any(os.environ.get(v) for v in ("DISPLAY", "SESSIONNAME", "MSYSTEM",
                                            "SECURITYSESSIONID"))
    return shown and shutil.which("gitk") is not None


def _gitk(b: Bisection, rows: list[tuple[str, str]]) -> int:
    """gitk on the candidates left: the newest of them, without what the good ones hold."""
    s = b.session
    known = s.verdict_map()
    lo, _ = b.search.bounds(s.candidates, known)
    goods = [s.candidates[lo]] if lo >= 0 else list(s.good)
    return subprocess.call(["gitk", rows[0][0], "--not", *goods, "--"],
                           cwd=b.strategy.history.workdir, env=gitcli.git_env())


def _paged(repo: Path, lines: list[str]) -> bool:
    """Show ``lines`` through the pager git would use (``GIT_PAGER``, ``core.pager``,
    ``PAGER``, less), as git does: only on a terminal; False when not paged."""
    if not sys.stdout.isatty():
        return False
    pager = gitcli.pager(repo)
    if pager in ("", "cat"):
        return False
    env = {"LESS": "FRX", "LV": "-c", **os.environ}  # git's defaults, the user's first
    with subprocess.Popen(pager, shell=True, cwd=repo, env=env, stdin=subprocess.PIPE,
                          text=True, errors="surrogateescape") as proc:
        assert proc.stdin is not None
        try:
            proc.stdin.write("\n".join(lines) + "\n")
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the reader quit early: nothing else to show
    return True


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
    p.add_argument("--no-gui", action="store_true",
                   help="never open gitk, even with a display")
    p.add_argument("log_args", nargs="*", metavar="GIT-LOG-OPTION",
                   help="options for 'git log' (--oneline, -p, --stat...): git log shows "
                        "the candidates left, paged as git pages")


#: ``git bisect-patched visualize`` (``view``).
COMMAND = Command(
    "visualize",
    description="Show the candidates still in play, as 'git bisect visualize' does: those "
                "after the newest good one up to the oldest bad one. With git log options, "
                "'git log' shows exactly those (paged and coloured as git does); with none, "
                "gitk when DISPLAY is set and gitk is installed, else one line per candidate, "
                "newest first, with its verdict so far in the session's terms ('?': not "
                "tested), through git's pager on a terminal. Submodule sessions list upstream "
                "commits of the submodule; --integrate sessions superproject commits.",
    usage="%(prog)s [--log] [--no-gui] [GIT-LOG-OPTION...]",
    examples=("view", "visualize --oneline", "view --stat -p", "visualize --log --no-gui"),
    arguments=_arguments, handler=visualize)
