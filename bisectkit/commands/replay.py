"""``git bisect-patched replay [START OPTIONS] FILE``: start over from a log written by
``log`` (or ``.git/bisectkit/last-log``) or by ``git bisect log``: end the session in
progress, start with the log's start line and apply its marks. A git log says what is
bisected only as commits: ``--submodule PATH``/``--integrate`` (and the other ``start``
options) come from replay's command line, else from ``start``'s defaults.

A log whose start line lacks an end (a session that waited for its ends) takes its ends
from its first marks, and waits again if they do not complete them.

The log is read and its start line parsed before anything ends: a bad log costs nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path

import pluggy

from bisectkit import strategies
from bisectkit.cli.parser import add_target_options
from bisectkit.commands import answer, waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.starting import given, new_session
from bisectkit.errors import BadInput
from bisectkit.model import GIT_PROG, StartRequest
from bisectkit.pipeline.replaylog import ReplayLog, parse_log
from bisectkit.safety import signals


def replay(ctx: Context, args: argparse.Namespace) -> int:
    """Read the log and parse its start line, then replay it as it was started."""
    path = Path(args.file)
    log = parse_log(_read_log(path), path)
    start = _with_options(_start_args(ctx, log, path), args, log, path)
    ctx.superproject = ctx.open()[0]
    what = given(ctx, start)
    if strategies.lacks_ends(what):  # a log of a session that was waiting for its ends
        return _replay_waiting(ctx, log, strategies.request_from(waiting.with_unknown_ends(what)))
    return _replay_session(ctx, log, strategies.request_from(what))


def _read_log(path: Path) -> str:
    """The text of a log file (exit 2 if unreadable)."""
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from exc


def _start_args(ctx: Context, log: ReplayLog, path: Path) -> argparse.Namespace:
    """The log's start line, read by the program's parser as if typed."""
    try:
        start, unknown = ctx.parser.parse_known_args(log.start)
    except SystemExit as exc:
        raise BadInput(f"{path}: its 'start' line does not parse: {shlex.join(log.start)}"
                       ) from exc
    if unknown:
        raise BadInput(f"{path}: unknown words in its 'start' line: {' '.join(unknown)}")
    start.pathspec = log.pathspec
    return start


#: What replay's own namespace holds besides the start options it shares with ``start``.
_OWN = frozenset({"file", "bad", "good", "pathspec", "command"})


def _with_options(start: argparse.Namespace, args: argparse.Namespace, log: ReplayLog,
                  path: Path) -> argparse.Namespace:
    """The log's start words, plus the start options given to ``replay``: those the log
    leaves unsaid (a git log says no strategy); one the log says otherwise is refused."""
    for key, value in vars(args).items():
        if key.startswith("_") or key in _OWN or not value or not hasattr(start, key):
            continue
        logged = getattr(start, key)
        if not logged:
            setattr(start, key, value)
        elif logged != value:
            flag = "--" + key.replace("_", "-")
            raise BadInput(f"{path}: its start line says {flag} {_shown(logged)}; replay it "
                           f"without {flag}" + ("" if log.git else
                                                " (a bisect-patched log says what it bisects)"))
    return start


def _shown(value: object) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


def _replay_session(ctx: Context, log: ReplayLog, request: StartRequest) -> int:
    """End what is in progress, start ``request``'s session and apply the log's marks."""
    sp, _ = ctx.open()
    with ctx.run(sp) as run:
        if run.has_session():
            signals.run_shielded(run.end)
        session = new_session(sp, request)
        try:
            b = run.begin(session)
            answer.header(ctx, b)
            with b.store.saved_once():  # marks move nothing: saved once, not once each
                for words in log.marks:
                    b.mark(words[0], words[1:], source="replay")
        except BaseException:
            # Do not leave a half-replayed session behind.
            signals.run_shielded(run.end)
            raise
        return answer.show_if_decided(ctx, b, b.advance())


def _replay_waiting(ctx: Context, log: ReplayLog, request: StartRequest) -> int:
    """A start line that lacks an end: its first marks give the ends; complete, the rest
    is replayed on the session they start; else the session waits for the rest."""
    sp, store = ctx.open()
    ends = waiting.waiting_for(ctx, sp, request)
    marks = list(log.marks)
    while marks and not ends.complete:
        word, *revs = marks.pop(0)
        side = ends.template.terms.mark(word)
        if side == "skip":
            raise BadInput(f"cannot replay '{shlex.join([word, *revs])}': nothing to skip "
                           f"before the session has both ends")
        ends = waiting.with_marks(ctx, sp, ends, side, revs)
    if ends.complete:
        return _replay_session(ctx, dataclasses.replace(log, marks=marks), ends.request)
    with ctx.run(sp) as run:
        if run.has_session():
            signals.run_shielded(run.end)
        store.save_waiting(ends)
    waiting.say_status(ctx, ends)
    return 0


def _arguments(p: argparse.ArgumentParser, pm: pluggy.PluginManager | None) -> None:
    add_target_options(p, strategies.options())
    p.add_argument("file", metavar="FILE",
                   help="the log to replay (from 'log', or from 'git bisect log')")


#: ``git bisect-patched replay``.
COMMAND = Command(
    "replay",
    usage=f"{GIT_PROG} replay [START OPTIONS] FILE",
    description="Start over from a log written by 'log' (or .git/bisectkit/last-log) or by "
                "'git bisect log': end the session in progress, start with the log's start "
                "line and apply its marks. A git bisect log names commits only: for a "
                "submodule session they are upstream commits of the submodule, for "
                "--integrate superproject commits; what it cannot say (--submodule, "
                "--upstream, --integrate...) comes from the START OPTIONS given here, else "
                "from start's defaults (git config bisectkit.submodule, the only submodule). "
                "Its terms and pathspec are kept; --no-checkout means nothing here.",
    examples=("replay bisect.log",
              "replay --submodule third_party/llvm-project git-bisect.log",
              "replay --integrate superproject-bisect.log"),
    arguments=_arguments, handler=replay)
