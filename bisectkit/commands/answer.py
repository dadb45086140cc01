"""Showing an answer: the result block, follow-up commands, ``--json``, ``--report``,
``--trace``; the files written in the work tree are recorded (:func:`remember_output`), so
the next runs' cache keys skip them."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bisectkit import engine, strategies
from bisectkit.commands.context import Context
from bisectkit.engine import Clear, Decision, Found, Inconclusive, Next
from bisectkit.pipeline import descent, results
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.trace import Tracer
from bisectkit.safety.fileio import write_json_atomic, write_text_atomic
from bisectkit.store.session import SessionStore
from bisectkit.strategies import kind_named
from bisectkit.ui import report
from bisectkit.ui.report.advance import render_advance_markdown, render_advance_terminal


def header(ctx: Context, b: Bisection) -> None:
    """What is bisected and roughly how many steps it takes."""
    ctx.console.header(b.strategy.header_lines(),
                       engine.steps_estimate(len(b.session.candidates) - 1))


def finish(ctx: Context, b: Bisection, decision: Decision) -> int:
    """Exit 0 while candidates remain; else show the answer and exit as it says."""
    if isinstance(decision, Next):
        return 0
    return show_result(ctx, b, decision)


def show_result(ctx: Context, b: Bisection, decision: Decision,
                rerun: Sequence[str] | None = None) -> int:
    """Print the outcome; exit code 0 when found, 1 when only skips are left.

    ``rerun`` (run options and repro) completes follow-up commands.
    """
    console = ctx.console
    if isinstance(decision, Found):
        sha = decision.first_bad
        console.found(b.strategy.describe(sha), results.details_at(b, sha), b.terms.new)
        _closing_lines(ctx, b, sha)
        lines = followup_lines(b, decision, rerun or ["--", "REPRO"])
        if lines:
            console.line("")
        for line in lines:
            console.line(line)
    elif isinstance(decision, Inconclusive):
        console.inconclusive([b.strategy.describe(c) for c in decision.candidates],
                             b.terms.new)
        _closing_lines(ctx, b, None)
    elif isinstance(decision, Clear):
        # An advance where nothing is bad: how far the pin can go.
        last = decision.last_good
        console.line(f"no candidate is {b.terms.new}: the pin can move to "
                     f"{last[:12] + ' ' + b.strategy.describe(last).subject if last else '(none)'}"
                     + (f"; {len(decision.skipped)} later commit(s) could not be tested"
                        if decision.skipped else ""), style="bold")
    return results.exit_code(decision)


def _closing_lines(ctx: Context, b: Bisection, first_bad: str | None) -> None:
    lines = [*(descent.answer_notes(b.parts, first_bad) if first_bad else ()),
             *b.strategy.closing_lines(first_bad)]
    if lines:
        ctx.console.line("")
    for line in lines:
        ctx.console.line(line, style="yellow")


def followup_lines(b: Bisection, decision: Decision, rerun: Sequence[str]) -> list[str]:
    """Commands to run next (chained bisects), when found."""
    if not isinstance(decision, Found):
        return []
    return [line for followup in b.strategy.followup(decision.first_bad)
            for line in strategies.followup_lines(followup, rerun)]


def write_result(ctx: Context, target: str, result: dict[str, Any]) -> None:
    """``--json FILE``: the result, atomically; ``--json -``: on stdout (the console
    then writes to stderr, so stdout parses as JSON)."""
    if target != "-":
        write_json_atomic(Path(target), result)
        remember_output(ctx, target)
        return
    # A reader gone is dropped, a full disk kept and said at the end: see app._output_kept.
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    sys.stdout.flush()


def write_report(ctx: Context, result: dict[str, Any], path: Path) -> None:
    """``--report FILE``: Markdown for an issue, and its short version on the terminal."""
    sp = ctx.superproject
    url = sp.config_get("bisectkit.commit-url") if sp else None
    fork_url = sp.config_get("bisectkit.fork-url") if sp else None
    kind = kind_named(str(result.get("strategy")))
    advancing = kind is not None and kind.report == "advance"
    markdown = render_advance_markdown if advancing else report.render_markdown
    terminal = render_advance_terminal if advancing else report.render_terminal
    write_text_atomic(path, markdown(result, url, fork_url=fork_url))
    remember_output(ctx, str(path))
    ctx.console.line("")
    for line in terminal(result, url, fork_url):
        ctx.console.line(line)
    ctx.console.line(f"report written to {path}", style="dim")


def write_trace(ctx: Context, tracer: Tracer, path: str) -> None:
    """``--trace FILE``: the Chrome trace of every step."""
    tracer.write(path)
    remember_output(ctx, path)


def remember_output(ctx: Context, path: str) -> None:
    """Record ``path``, just written by this run, if it is in the superproject's work tree:
    while it holds what was written, it is not an input of later runs' cache keys."""
    sp = ctx.superproject
    if sp is None:
        return
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(sp.workdir) + os.sep):
        return
    with contextlib.suppress(OSError):  # only an optimisation: the file stays an input
        SessionStore(sp.git_dir).remember_output(real)
