"""Built-in observers: the console's step lines and summary, and per-step output logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bisectkit.console import Console
from bisectkit.model import Step, Verdict, hookimpl


class ConsoleObserver:
    """Prints one line per recorded verdict and the run's summary."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @hookimpl
    def bisectkit_step_done(self, step: Step, verdict: Verdict) -> None:
        self.console.step_done(step.record)

    @hookimpl
    def bisectkit_session_finish(self, result: dict[str, Any]) -> None:
        self.console.summary(result["steps"], result.get("terms"))


class StepLogWriter:
    """Keeps the build and repro output of every step in ``<git dir>/bisectkit/logs/``."""

    def __init__(self, logs_dir: Path) -> None:
        self.logs_dir = logs_dir

    @staticmethod
    def path_for(logs_dir: Path, index: int) -> Path:
        return logs_dir / f"step-{index}.log"

    @hookimpl
    def bisectkit_step_done(self, step: Step, verdict: Verdict) -> None:
        if not step.outputs:
            return
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        path = self.path_for(self.logs_dir, step.index)
        shown = step.record.get("term", verdict)  # --find-fix / --term-*: the session's words
        parts = [f"# step {step.index}: {step.commit} {shown} ({step.record.get('reason')})\n"]
        for phase, text in step.outputs.items():
            parts.append(f"# --- {phase} ---\n{text}")
            if text and not text.endswith("\n"):
                parts.append("\n")
        path.write_text("".join(parts), encoding="utf-8")
        step.record["log"] = str(path)
