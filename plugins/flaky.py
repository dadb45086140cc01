"""Run a flaky repro several times per step and combine the verdicts: ``-p flaky``.

Options (``run`` only, before ``--``):

``--repeat N``
    Run the repro N times at every tested step (default 1: the plugin does
    nothing). The build runs once; each run has its own ``--timeout`` and is
    classified by the other classifiers (``--good-if``/``--bad-if``/
    ``--skip-if``, timeouts, exit status, other plugins) and sees ``BISECTKIT_RUN`` (1..N) and
    ``BISECTKIT_RUNS`` (N) in its environment. A run that aborts (exit >= 128
    or a signal) stops the step at once and aborts the bisection as usual.

``--flaky-policy any-bad|majority|all-bad``
    How the runs' verdicts combine (g, b, s = runs classified good, bad, skip):

    * ``any-bad`` (default): bad if b >= 1, else good if g >= 1, else skip.
      For bugs that show up intermittently: one failure proves the bug is in.
    * ``majority``: bad if b > g, good if g > b, otherwise (a tie, or every
      run skipped) skip. Skipped runs do not vote.
    * ``all-bad``: bad if b >= 1 and g == 0 (every run that was not skipped is
      bad), else good if g >= 1, else skip. For noisy setups where good
      commits sometimes fail: one clean run proves the commit good.

The step's reason reads ``3 runs: 2 bad, 1 good -> bad (any-bad)``, its JSON
record gets ``"runs": {"good": g, "bad": b, "skip": s, "policy": P}``, and a
step whose runs disagree (some good, some bad) gets the flag
``runs disagree: 2 bad, 1 good``. The repro output of a step is every run's
output, each after a ``--- run i/N: verdict ---`` line. A step one of whose runs
timed out is not kept in the verdict cache (as without the plugin).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from bisectkit import hookimpl, whole_number

if TYPE_CHECKING:
    from bisectkit import Config, Outcome, Step, Verdict

POLICIES = ("any-bad", "majority", "all-bad")

# Plugins are loaded once per process, so module state is the plugin's state.
_config: Config | None = None
#: Per-run verdicts of the steps repeated by bisectkit_repro, until classified.
_runs: dict[int, Counter[str]] = {}


def combine(policy: str, good: int, bad: int, skip: int) -> Verdict:
    """The step's verdict from its runs' verdict counts (see the module docstring)."""
    if policy == "majority":
        return "bad" if bad > good else "good" if good > bad else "skip"
    if policy == "all-bad":
        return "bad" if bad and not good else "good" if good else "skip"
    return "bad" if bad else "good" if good else "skip"  # any-bad


@hookimpl
def bisectkit_addoption(parser: argparse._ArgumentGroup) -> None:
    parser.add_argument("--repeat", type=whole_number(1), default=1, metavar="N",
                        help="flaky: run the repro N times per step (default 1)")
    parser.add_argument("--flaky-policy", choices=POLICIES, default="any-bad",
                        help="flaky: how the runs' verdicts combine (default any-bad)")


@hookimpl
def bisectkit_configure(config: Config) -> None:
    global _config
    _config = config


def _options() -> tuple[int, str]:
    # getattr: the plugin may be loaded (BISECTKIT_PLUGINS, git config) for
    # commands that have no run options at all.
    option = _config.option if _config is not None else None
    return getattr(option, "repeat", 1), getattr(option, "flaky_policy", "any-bad")


@hookimpl(tryfirst=True)
def bisectkit_repro(step: Step) -> Outcome | None:
    repeat, _ = _options()
    if repeat == 1 or _config is None:
        return None
    # Every other implementation, so the repro (built-in or a plugin's) and the
    # classifiers behave exactly as without us, once per run.
    me: Any = sys.modules[__name__]
    pm = _config.pluginmanager
    repro = pm.subset_hook_caller("bisectkit_repro", remove_plugins=[me])
    classify = pm.subset_hook_caller("bisectkit_classify", remove_plugins=[me])
    counts: Counter[str] = Counter()
    parts: list[str] = []
    duration = 0.0
    last: Outcome | None = None
    step.env["BISECTKIT_RUNS"] = str(repeat)
    for i in range(1, repeat + 1):
        step.env["BISECTKIT_RUN"] = str(i)
        # pluggy's hook callers are untyped: say what the hooks return.
        outcome: Outcome | None = repro(step=step)
        if outcome is None:
            return None  # nothing runs the repro: let the driver say so
        step.reason = None  # a run's reason must not leak into the next one
        if outcome.timed_out:
            step.timed_out = True  # one run timed out: the step's verdict is not cached
        verdict: Verdict | None = classify(step=step, outcome=outcome)
        if verdict is None:
            return outcome  # an abort: the driver classifies it again and stops
        counts[verdict] += 1
        duration += outcome.duration
        last = outcome
        if _config.console is not None:
            _config.console.phase(f"run {i}/{repeat}", verdict)
        text = outcome.output
        parts.append(f"--- run {i}/{repeat}: {verdict} ---\n{text}")
        if text and not text.endswith("\n"):
            parts.append("\n")
    # Classifiers ran once per run: keep each of their flags once.
    step.flags[:] = list(dict.fromkeys(step.flags))
    _runs[step.index] = counts
    assert last is not None
    return dataclasses.replace(last, output="".join(parts), duration=duration)


@hookimpl(tryfirst=True)
def bisectkit_classify(step: Step, outcome: Outcome) -> Verdict | None:
    counts = _runs.pop(step.index, None)
    if counts is None:
        return None  # not repeated (or an abort): the other classifiers decide
    _, policy = _options()
    good, bad, skip = counts["good"], counts["bad"], counts["skip"]
    verdict = combine(policy, good, bad, skip)
    seen = ", ".join(f"{n} {v}" for v, n in (("bad", bad), ("good", good), ("skip", skip)) if n)
    step.reason = f"{good + bad + skip} runs: {seen} -> {verdict} ({policy})"
    step.extra["runs"] = {"good": good, "bad": bad, "skip": skip, "policy": policy}
    if good and bad:
        step.flags.append(f"runs disagree: {bad} bad, {good} good")
    return verdict
