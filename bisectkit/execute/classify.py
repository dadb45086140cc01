"""Built-in classification: the ``--good-if/--bad-if/--skip-if`` rules and the exit status."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bisectkit.model import Outcome, Rules, Step, Verdict, hookimpl
from bisectkit.model.dropped import unmarked

if TYPE_CHECKING:
    from bisectkit.model import Config

#: When several rules match, the first verdict in this order wins.
_PRECEDENCE: tuple[Verdict, ...] = ("bad", "skip", "good")




class RulesPlugin:
    """``--bad-if`` beats ``--skip-if`` beats ``--good-if``; timeouts get ``--timeout-verdict``."""

    def __init__(self) -> None:
        self._patterns = Rules().compiled()
        self._timeout_verdict: Verdict = "skip"

    @hookimpl
    def bisectkit_configure(self, config: Config) -> None:
        if config.run is not None:
            self._patterns = config.run.rules.compiled()
            self._timeout_verdict = config.run.timeout_verdict

    @hookimpl
    def bisectkit_classify(self, step: Step, outcome: Outcome) -> Verdict | None:
        if outcome.timed_out:
            # Every run classified here (``-p flaky`` classifies each of its runs) marks the
            # step: the verdict cache keeps no verdict a timeout had a say in.
            step.timed_out = True
            step.reason = outcome.describe()
            if self._timeout_verdict == "skip":
                step.environment = "timeout"
            return self._timeout_verdict
        # What the command printed, never bisectkit's "output dropped here" lines (the
        # pipeline removes them too; a plugin such as flaky calls the rules directly).
        output = unmarked(outcome.output)
        for verdict in _PRECEDENCE:
            for pattern in self._patterns[verdict]:
                match = pattern.search(output)
                if match:
                    step.reason = (f"{outcome.describe()}, "
                                   f"matched --{verdict}-if {pattern.pattern!r}")
                    return verdict
        return None


class ExitStatusPlugin:
    """``git bisect run``'s convention: 0 good, 125 skip, 1-127 bad, else abort (None)."""

    @hookimpl(trylast=True)
    def bisectkit_classify(self, step: Step, outcome: Outcome) -> Verdict | None:
        status = outcome.exit_status
        if status is None or status >= 128 or status < 0:
            return None
        step.reason = outcome.describe()
        if status == 0:
            return "good"
        if status == 125:
            return "skip"
        return "bad"
