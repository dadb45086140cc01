"""``git bisect-patched replay FILE``: start over from a log written by ``log`` (or
``.git/bisectkit/last-log``): end the session in progress, start with the log's start line
and apply its marks. A log whose start line lacks an end (a session that waited for its
ends) takes its ends from its first marks, and waits again if they do not complete them.

The log is read and its start line parsed before anything ends: a bad log costs nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path

import pluggy

from bisectkit import strategies
from bisectkit.commands import answer, waiting
from bisectkit.commands.command import Command
from bisectkit.commands.context import Context
from bisectkit.commands.starting import given, new_session
from bisectkit.errors import BadInput
from bisectkit.model import StartRequest
from bisectkit.pipeline.replaylog import ReplayLog, parse_log
from bisectkit.safety import signals


def replay(ctx: Context, args: argparse.Namespace) -> int:
    """Read the log and parse its start line, then replay it as it was started."""
    path = Path(args.file)
    log = parse_log(_read_log(path), path)
    start = _start_args(ctx, log, path)
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
    p.add_argument("file", metavar="FILE", help="the log to replay")


#: ``git bisect-patched replay``.
COMMAND = Command(
    "replay", help="start over from a log",
    description="Start over from a log written by 'log' (or .git/bisectkit/last-log): end the "
                "session in progress, start with the log's start line and apply its marks.",
    examples=("replay bisect.log",),
    arguments=_arguments, handler=replay)
