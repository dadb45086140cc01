"""Hook specifications: the one place bisectkit's plugin hooks are declared.

Implementations use :data:`bisectkit.hookimpl`. Plugins registered later are
called first, so a user's plugin wins over the built-in ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from bisectkit.engine import Verdict
    from bisectkit.runner import Outcome
    from bisectkit.step import Step

PROJECT = "bisectkit"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def bisectkit_classify(step: Step, outcome: Outcome) -> Verdict | None:
    """Classify the repro's outcome at one step.

    :param step: the step under test (commit, index, strategy, env, workdir);
        an implementation may set ``step.reason`` to explain its verdict.
    :param outcome: exit status, signal, combined output, timeout flag and
        duration of the repro.
    :returns: ``"good"``, ``"bad"`` or ``"skip"``; ``None`` to let the next
        implementation decide. When every implementation returns ``None``
        (the built-in exit-status rule does so for exit >= 128 and for
        signals) the bisection aborts and the session is kept.

    Stops at first non-None result.
    """
