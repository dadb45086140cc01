"""A begun session driven to its answer: the loop the pipeline chooses (the user's tree
or a pool of workspaces, :mod:`bisectkit.pipeline.loops`), the verdict cache, the steps
summed up, then the command's ``answer`` (it prints the answer and finishes the run,
:mod:`bisectkit.pipeline.finish`); a run that stops still sums up its steps and writes
its outputs (``"status": "aborted"``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from bisectkit.cli.requests import RunFlags
from bisectkit.engine import Decision
from bisectkit.errors import PluginFailed
from bisectkit.model import RunOptions
from bisectkit.pipeline import loops, results, verify
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.finish import finish_aborted
from bisectkit.store.cache import VerdictCache

#: What a command does with an answer (print it, finish the run): the exit code.
Answer = Callable[[Bisection, Decision, dict[str, Any], VerdictCache | None], int]


def drive(b: Bisection, opts: RunOptions, flags: RunFlags, cache_env: Sequence[str],
          answer: Answer) -> int:
    """Run ``b``'s steps in the loop the options choose until the answer, then
    ``answer`` it; the exit code. ``cache_env``: environment variables the plugins read
    (part of the verdict cache's key)."""
    outputs = flags.output_files()
    with loops.loop_for(b, opts, outputs) as loop:
        cache = loops.open_cache(loop, opts, cache_env, outputs)
        answered = False
        error: str | None = None
        try:
            decision, checks = verify.run_to_end(loop, cache, opts,
                                                 verify_range_first=flags.verify_range,
                                                 check_the_stack=flags.check_stack)
            answered = True
            late = _run_done(loop)
            code = answer(loop, decision, checks, cache)
            if late is not None:  # once the answer is shown and its outputs written
                raise late
            return code
        except KeyboardInterrupt:
            error = "interrupted"
            raise
        except Exception as exc:
            error = str(exc)
            raise
        finally:
            if not answered:
                _wrap_up_aborted(loop, error)


def _wrap_up_aborted(b: Bisection, error: str | None) -> None:
    """An aborted run still sums up its steps, writes its JSON (status aborted) and trace,
    and tells plugins."""
    with contextlib.suppress(Exception):
        _run_done(b)  # the summary: before the restore's lines
    finish_aborted(b.hooks, results.result_json(b, "aborted", None, error), b.tracer)


def _run_done(b: Bisection) -> PluginFailed | None:
    """The steps are over: observers sum them up (the console's summary). A plugin that
    raises here is returned: the run still shows its answer and writes its outputs."""
    try:
        b.hooks.run_done(sorted(b.session.steps, key=lambda st: st.index), b.terms)
    except PluginFailed as failed:
        return failed
    return None
