"""Testing one checked-out candidate: build, repro, classify, through the hooks.

Exit 126/127 ("cannot execute", "not found") is double-checked where the
answer is known (the good end), as git >= 2.36 does: a command that cannot
run must never name a culprit.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from bisectkit.errors import Aborted, BadInput, TreeMoved
from bisectkit.execute.keptoutput import clean_output
from bisectkit.model import Outcome, Step, Verdict, short
from bisectkit.model.dropped import unmarked
from bisectkit.pipeline.parts import RunParts
from bisectkit.safety import undertest
from bisectkit.strategies.base import Prepared

#: What shells and ``env`` print when a command cannot run (dash, bash, zsh, busybox).
_CANNOT_RUN = re.compile(
    r"^(?P<line>.*(?:"
    r": (?:command )?not found"
    r"|: command not found: \S+"
    r"|: (?:cannot execute: )?[Pp]ermission denied(?:: \S+)?"
    r"|: bad interpreter: .*"
    r"|: cannot execute(?: binary file)?(?:: .*)?"
    r"|: No such file or directory"
    r"))[ \t]*$", re.MULTILINE)


def cannot_run(output: str) -> str | None:
    """The shell's "not found" / "Permission denied" line in ``output``, if any."""
    m = _CANNOT_RUN.search(output)
    return m.group("line").strip()[:300] if m else None


#: A test's result: the step (outputs, flags), the repro's verdict, why, record details.
Tested = tuple[Step, Verdict, str, dict[str, Any]]


class StepTester:
    """Builds, runs and classifies candidates for one run (its :class:`RunParts`)."""

    def __init__(self, parts: RunParts) -> None:
        self.b = parts
        # Phases ("build", "repro") whose command was seen to run at the good end
        # after exiting 126/127 somewhere: checked once per run, as git does.
        self._runs_at_good_end: set[str] = set()
        self._double_checking = False

    def _build(self, step: Step) -> Outcome | None:
        return cleaned(self.b.call_step_hook(step, lambda: self.b.hooks.build(step)))

    def _repro(self, step: Step) -> Outcome | None:
        return cleaned(self.b.call_step_hook(step, lambda: self.b.hooks.repro(step)))

    def test(self, index: int, commit: str, prep: Prepared, details: dict[str, Any]) -> Tested:
        """Build, repro, classify the checked-out ``commit`` as step ``index``; the repro's
        verdict."""
        b = self.b
        step = b.new_step(index, commit, prep)
        # From here on, what the step checked out must stay as it is (and where it is).
        watch = undertest.Watch(b.watched(prep))
        b.call_step_hook(step, lambda: b.hooks.step_start(step))
        b.hooks.phase(index, "build")
        with b.tracer.span("build", index):
            built = self._build(step)
        if built is not None:
            # With no build nothing ran since the watch began: the check after the repro,
            # which runs next, sees all this one would (one git status per repository
            # fewer, ~0.3 s a step at 150,000 files). So does a workspace's step.
            self._still_checked_out(watch, index, "after the build")

        def repro() -> Outcome | None:
            b.hooks.phase(index, "repro")
            with b.tracer.span("repro", index):
                outcome = self._repro(step)
            self._still_checked_out(watch, index, "after the repro")
            return outcome

        return self.conclude(step, built, repro, details)

    def _still_checked_out(self, watch: undertest.Watch, index: int, when: str) -> None:
        """Raise :class:`TreeMoved` (no verdict, the run stops) when a repository of the
        step no longer holds what it held, or moved meanwhile: what ran tested some other
        tree."""
        try:
            watch.check(index, when)
        except TreeMoved:
            # The disk no longer holds the commit under test: a mark with no revision
            # must not name it, and the next run checks it out again.
            if self.b.session.current is not None:
                self.b.session.current = None
                self.b.store.save(self.b.session)
            raise

    def conclude(self, step: Step, built: Outcome | None, repro: Callable[[], Outcome | None],
                 details: dict[str, Any]) -> Tested:
        """Judge a step from its build's outcome and (``repro()``, run only when the build
        passed) the repro's: the same rules wherever the commands ran."""
        if built is not None:
            step.outputs["build"] = built.output
            details["build_s"] = round(built.duration, 3)
            if built.exit_status in (126, 127):
                self._double_check("build", built, step, details)
            if not built.ok:
                return step, "skip", f"build failed ({_why(built)})", details
        outcome = repro()
        if outcome is None:
            raise BadInput("nothing runs the repro: give a repro command or a plugin that "
                           "implements bisectkit_repro")
        return self._judge(step, outcome, details)

    def _judge(self, step: Step, outcome: Outcome, details: dict[str, Any]) -> Tested:
        """Classify the repro's ``outcome`` (after the cannot-run double check)."""
        step.outputs["repro"] = outcome.output
        details["repro_s"] = round(outcome.duration, 3)
        if outcome.exit_status in (126, 127):
            self._double_check("repro", outcome, step, details)
            line = cannot_run(outcome.output)
            if line is not None:
                # It runs at the good end, not here: the commit left something
                # unrunnable. Not the regression the repro looks for.
                step.environment = "a command cannot run"
                return step, "skip", f"{outcome.describe()}, a command cannot run: {line!r}", \
                    details
        # The rules and classifiers judge what the command printed, never bisectkit's
        # "output dropped here" lines (a --skip-if 'dropped' would match them).
        judged = dataclasses.replace(outcome, output=unmarked(outcome.output))
        with self.b.tracer.span("classify", step.index):
            verdict = self.b.call_step_hook(step, lambda: self.b.hooks.classify(step, judged))
        if verdict is None:
            raise Aborted(f"repro {outcome.describe()} at {step.commit.short}: exit codes >= 128 "
                          "and signals abort the bisection")
        return step, verdict, step.reason or outcome.describe(), details

    def _double_check(self, phase: str, outcome: Outcome, step: Step,
                      details: dict[str, Any]) -> None:
        """Exit 126/127: is the command itself broken? Run it at the good end.

        If it cannot run there either, abort naming it. Once per phase and run.
        """
        if self._double_checking or phase in self._runs_at_good_end:
            return
        commit, good = step.commit, self.b.session.good[0]
        said = cannot_run(outcome.output)
        what = f"the {phase} command ({self.b.commands.get(phase) or 'given by a plugin'})"
        if commit in self.b.session.good:
            raise Aborted(f"{what} cannot run: {outcome.describe()} at the good end "
                          f"{commit.short}{f': {said}' if said else ''}")
        checked, result = self._run_at_good_end(phase, what, outcome, step)
        details["double_check"] = checked
        if result is None or phase not in checked:
            raise Aborted(f"{what} {outcome.describe()} at {commit.short}, and cannot be "
                          f"checked at the good end {short(good)}: its build "
                          f"{checked.get('build', 'did not run')}")
        if result.exit_status in (126, 127):
            said = cannot_run(result.output) or said
            raise Aborted(f"{what} cannot run: {result.describe()} at the good end "
                          f"{short(good)} too{f': {said}' if said else ''}")
        self._runs_at_good_end.add(phase)

    def _run_at_good_end(self, phase: str, what: str, outcome: Outcome, step: Step
                         ) -> tuple[dict[str, Any], Outcome | None]:
        """Prepare the good end and run ``phase`` (its build first) there."""
        b, good = self.b, self.b.session.good[0]
        prep = b.strategy.prepare(good)
        if prep.skip_reason is not None:
            raise Aborted(f"{what} {outcome.describe()} at {step.commit.short}, "
                          f"and the good end {short(good)} cannot be prepared to check whether "
                          f"the command runs at all ({prep.skip_reason})")
        b.hooks.message(f"{phase} {outcome.describe()} at {step.commit.short}: checking that it "
                        f"runs at the good end {short(good)}", "progress")
        built, ran = self._phases_at(good, prep, phase, step)
        checked: dict[str, Any] = {"commit": good}
        result = built
        if built is not None:
            step.outputs["build at the good end"] = built.output
            checked["build"] = built.describe()
        if phase == "repro" and (built is None or built.ok):
            result = ran
            if ran is not None:
                step.outputs["repro at the good end"] = ran.output
                checked["repro"] = ran.describe()
        return checked, result

    def _phases_at(self, good: str, prep: Prepared, phase: str, step: Step
                   ) -> tuple[Outcome | None, Outcome | None]:
        """Check the good end out, build it and, checking the repro, run the repro when
        the build passed: (build, repro) outcomes."""
        b = self.b
        b.session.current = None  # the work tree will hold the good end
        b.store.save(b.session)
        self._double_checking = True
        try:
            b.place(prep)
            watch = undertest.Watch(b.watched(prep))
            at_good = b.new_step(step.index, good, prep)
            built = self._build(at_good)
            self._still_checked_out(watch, step.index, "after the build at the good end")
            ran = None
            if phase == "repro" and (built is None or built.ok):
                ran = self._repro(at_good)
                self._still_checked_out(watch, step.index, "after the repro at the good end")
        finally:
            self._double_checking = False
        return built, ran


def cleaned(outcome: Outcome | None) -> Outcome | None:
    """A plugin's outcome with terminal escapes removed: rules see text, not escapes."""
    if outcome is None:
        return None
    text = clean_output(outcome.output)
    return outcome if text == outcome.output else dataclasses.replace(outcome, output=text)


def _why(outcome: Outcome) -> str:
    """``exit 127: sh: 1: make: not found`` when the shell said why, else ``exit 127``."""
    said = cannot_run(outcome.output) if outcome.exit_status in (126, 127) else None
    return f"{outcome.describe()}: {said}" if said else outcome.describe()
