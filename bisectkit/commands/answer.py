"""Showing an answer: the result block and the follow-up commands. The files a run writes
(``--json``, ``--report``, ``--trace``) are the pipeline's (:mod:`bisectkit.pipeline.finish`)."""

from __future__ import annotations

from collections.abc import Sequence

from bisectkit import engine, strategies
from bisectkit.commands.context import Context
from bisectkit.engine import Clear, Decision, Found, Inconclusive, Next
from bisectkit.model import short
from bisectkit.pipeline import descent, results
from bisectkit.pipeline.bisection import Bisection


def header(ctx: Context, b: Bisection) -> None:
    """What is bisected and roughly how many steps it takes."""
    ctx.console.header(b.strategy.header_lines(),
                       engine.steps_estimate(len(b.session.candidates) - 1))


def show_if_decided(ctx: Context, b: Bisection, decision: Decision) -> int:
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
                     f"{f'{short(last)} {b.strategy.describe(last).subject}' if last else '(none)'}"
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
