"""The built-in console observer: step lines, patch actions, messages and the summary."""

from __future__ import annotations

from bisectkit.model import CommitInfo, Step, Verdict, hookimpl
from bisectkit.model.documents import JobRow, StepDetails, StepJSON, TermsJSON
from bisectkit.ui.console import Console

#: How each kind of ``bisectkit_message`` is shown.
_STYLE = {"progress": "bold", "note": "dim", "warning": "yellow", "info": None}


class ConsoleObserver:
    """Prints one line per recorded verdict and the run's summary."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @hookimpl
    def bisectkit_step_done(self, step: Step, verdict: Verdict) -> None:
        self.console.step_done(step.record)

    @hookimpl
    def bisectkit_run_done(self, steps: list[StepJSON], terms: TermsJSON) -> None:
        self.console.summary(steps, terms)

    @hookimpl
    def bisectkit_phase(self, index: int, phase: str) -> None:
        self.console.set_phase(index, phase)

    @hookimpl
    def bisectkit_candidate(self, index: int, info: CommitInfo, remaining: int,
                            steps_left: int) -> None:
        self.console.step_start(index, info, remaining, steps_left)

    @hookimpl
    def bisectkit_prepared(self, index: int, details: StepDetails,
                           files_written: int | None) -> None:
        self.console.details(details, files_written)

    @hookimpl
    def bisectkit_jobs(self, jobs: list[JobRow]) -> None:
        self.console.jobs(jobs)

    @hookimpl
    def bisectkit_message(self, text: str, kind: str) -> None:
        self.console.line(text, style=_STYLE.get(kind))
