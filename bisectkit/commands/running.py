"""Running a session to its answer, shared by ``run`` (both programs') and ``advance``: the
pipeline drives it (:mod:`bisectkit.pipeline.drive`: the loop, the verdict cache, the
trace), the command shows the answer and finishes the run
(:mod:`bisectkit.pipeline.finish` writes ``--json``, ``--report``, ``--trace``), and a
one-go run is restored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bisectkit.cli import requests
from bisectkit.commands import answer
from bisectkit.commands.context import Context
from bisectkit.commands.reproduce import reproduce_command
from bisectkit.engine import Decision, Found
from bisectkit.errors import Aborted, BisectkitError
from bisectkit.pipeline import loops, results
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.drive import drive
from bisectkit.pipeline.finish import finish
from bisectkit.pipeline.lifecycle import Run
from bisectkit.safety import signals
from bisectkit.store.cache import VerdictCache
from bisectkit.store.session import Session


def run_restoring(ctx: Context, run: Run, session: Session, show: Shower | None = None,
                  body: Callable[[Bisection], int] | None = None) -> tuple[int, int | None]:
    """Begin ``session``, run it to the end (or run ``body`` on it instead: work at one
    commit, ``actions --at``), restore everything however it ends: the exit code, and a
    stop signal that arrived during the restore (None: none; the caller may have work
    left that the user meant to stop)."""

    def restore() -> None:
        for line in run.end():
            ctx.console.line(line, style="dim")

    stop: int | None = None
    answered = False
    stopped_by: BisectkitError | None = None
    try:
        try:
            b = run.begin(session)
            if body is not None:
                code = body(b)
            else:
                answer.header(ctx, b)
                code = run_with(ctx, b, show)
            answered = True
        except BisectkitError as exc:
            stopped_by = exc
            raise
        finally:
            if not answered:  # stopped: what its builds left runs no more once restored
                run.stop_leftovers()
            try:
                stop = signals.run_shielded_noting(restore)
            except BisectkitError:
                # The restore's error replaces the one that stopped the run: say that
                # one first (a build that edited a file is why the restore refuses it).
                if stopped_by is not None:
                    ctx.console.error(f"the run stopped: {stopped_by}")
                raise
    except Aborted:
        ctx.console.error("aborted; the superproject and the submodules were restored")
        raise
    return code, stop


#: Shows a run's answer and finishes the run: the exit code. ``advance`` has its own.
Shower = Callable[[Context, Bisection, Decision, dict[str, Any], VerdictCache | None], int]


def run_with(ctx: Context, b: Bisection, show: Shower | None = None) -> int:
    """Drive ``b`` to its answer (:func:`bisectkit.pipeline.drive.drive`: in the user's
    tree or on a pool of workspaces) under the live panel, then show it."""
    shower = show or _show_bisection

    def show_it(loop: Bisection, decision: Decision, checks: dict[str, Any],
                cache: VerdictCache | None) -> int:
        return shower(ctx, loop, decision, checks, cache)

    with ctx.console.live():  # the status panel, gone however the run ends
        return drive(b, ctx.options, ctx.flags, ctx.config.cache_env, show_it)


def _result(ctx: Context, b: Bisection, decision: Decision,
            checks: dict[str, Any]) -> dict[str, Any]:
    """The JSON result: the answer, what the checks concluded, how to run it again."""
    result = results.result_json(b, results.status_word(decision), decision)
    result.update(checks)
    result["command"] = ctx.command
    result["reproduce"] = reproduce_command(ctx, b)
    result["followup"] = answer.followup_lines(b, decision, _rerun(ctx))
    return result


def _rerun(ctx: Context) -> list[str]:
    words = requests.run_options_argv(ctx.options)
    if ctx.then_words:  # the next level runs the actions search too, before its repro
        cut = words.index("--") if "--" in words else len(words)
        words[cut:cut] = list(ctx.then_words)
    return words


def _show_bisection(ctx: Context, b: Bisection, decision: Decision, checks: dict[str, Any],
                    cache: VerdictCache | None) -> int:
    """Print and write a bisection's result (printed first: a file that cannot be written,
    a full disk say, must not cost the answer); the exit code."""
    result = _result(ctx, b, decision, checks)
    code = answer.show_result(ctx, b, decision, _rerun(ctx))
    if "check_stack" in result:
        ctx.console.line(f"check-stack: {result['check_stack']['conclusion']}", style="bold")
    if "confidence" in result:
        ctx.console.line(f"confidence: {result['confidence']['summary']}", style="bold")
    if cache is not None:
        loops.note_cache_use(b, cache)
    if ctx.then is not None and isinstance(decision, Found):
        # ``--then-actions``: inside the culprit, before the run restores the trees.
        result["actions"] = ctx.then(b, decision)
        code = result["actions"].get("exit_code", code)
    finish(ctx.hooks, result, b.tracer)
    return code
