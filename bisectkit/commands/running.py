"""Running a session to its answer, shared by ``run`` (both programs') and ``advance``: the
loop the pipeline chooses (:mod:`bisectkit.pipeline.loops`: the user's tree or workspaces,
the verdict cache, the trace), then the answer shown, the run finished
(:mod:`bisectkit.pipeline.finish` writes ``--json``, ``--report``, ``--trace``), and the
restore of a one-go run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from bisectkit.cli import requests
from bisectkit.commands import answer
from bisectkit.commands.context import Context
from bisectkit.commands.reproduce import reproduce_command
from bisectkit.engine import Decision
from bisectkit.errors import Aborted, BisectkitError
from bisectkit.pipeline import loops, results, verify
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.finish import finish, finish_aborted
from bisectkit.pipeline.lifecycle import Run
from bisectkit.safety import signals
from bisectkit.store.cache import VerdictCache
from bisectkit.store.session import Session


def run_restoring(ctx: Context, run: Run, session: Session,
                  show: Shower | None = None) -> tuple[int, int | None]:
    """Begin ``session``, run it to the end, restore everything however it ends: the exit
    code, and a stop signal that arrived during the restore (None: none; the caller may
    have work left that the user meant to stop)."""

    def restore() -> None:
        for line in run.end():
            ctx.console.line(line, style="dim")

    stop: int | None = None
    answered = False
    stopped_by: BisectkitError | None = None
    try:
        try:
            b = run.begin(session)
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


#: Shows a run's answer (and writes its result): the exit code. ``advance`` has its own.
Shower = Callable[[Context, Bisection, Decision, dict[str, Any], VerdictCache | None], int]


def run_with(ctx: Context, b: Bisection, show: Shower | None = None) -> int:
    """Run the loop (in the user's tree, or on a pool of workspaces); report, write the
    JSON result and the trace however it ends."""
    with ctx.console.live():  # the status panel, gone however the run ends
        return _run_parallel_or_not(ctx, b, show or _show_bisection)


def _run_parallel_or_not(ctx: Context, b: Bisection, show: Shower) -> int:
    outputs = ctx.flags.output_files()
    with loops.loop_for(b, ctx.options, outputs) as loop:
        return _run_loop(ctx, loop, show)


def _run_loop(ctx: Context, b: Bisection, show: Shower) -> int:
    opts, flags = ctx.options, ctx.flags
    cache = loops.open_cache(b, opts, ctx.config.cache_env, flags.output_files())
    answered = False
    error: str | None = None
    try:
        decision, checks = verify.run_to_end(b, cache, opts, verify_range_first=flags.verify_range,
                                             check_the_stack=flags.check_stack)
        answered = True
        _run_done(ctx, b)
        return show(ctx, b, decision, checks, cache)
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    except Exception as exc:
        error = str(exc)
        raise
    finally:
        if not answered:
            _wrap_up_aborted(ctx, b, error)


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
    return requests.run_options_argv(ctx.options)


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
    finish(ctx.hooks, result, b.tracer)
    return code


def _wrap_up_aborted(ctx: Context, b: Bisection, error: str | None) -> None:
    """An aborted run still sums up its steps, writes its JSON (status aborted) and trace,
    and tells plugins."""
    with contextlib.suppress(Exception):
        _run_done(ctx, b)  # the summary: before the restore's lines
    finish_aborted(ctx.hooks, results.result_json(b, "aborted", None, error), b.tracer)


def _run_done(ctx: Context, b: Bisection) -> None:
    """The steps are over: observers sum them up (the console's summary)."""
    ctx.hooks.run_done(list(b.session.steps), b.terms)
