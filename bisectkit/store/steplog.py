"""Per-step output logs (``<git dir>/bisectkit/logs/step-N.log``): written and read here.

``show-step N`` prints one; a plugin that raises appends its traceback to the
step's log. The file name format lives only in this module. What is written has
its control characters shown (:mod:`bisectkit.safetext`): the header's reason
(a subject, a path) stays on its line, the output has none left to obey.
"""

from __future__ import annotations

from pathlib import Path

from bisectkit import safetext
from bisectkit.model import Step, Verdict, hookimpl
from bisectkit.safety.fileio import writing

_PREFIX = "step-"
#: Output is made safe and written this many characters at a time (the copies stay small).
_SLICE = 1 << 20


def step_log_path(logs_dir: Path, index: int) -> Path:
    """Where step ``index``'s output is kept."""
    return logs_dir / f"{_PREFIX}{index}.log"


def kept_steps(logs_dir: Path) -> list[int]:
    """The steps whose output is kept, in order."""
    found = []
    for path in logs_dir.glob(f"{_PREFIX}*.log"):
        number = path.stem.removeprefix(_PREFIX)
        if number.isdigit():
            found.append(int(number))
    return sorted(found)


def append_failure(logs_dir: Path, step: Step, text: str) -> Path | None:
    """Append why ``step`` failed (a plugin's traceback) to its log; the log's path, or
    ``None`` when it cannot be written."""
    path = step_log_path(logs_dir, step.index)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"# step {step.index}: {step.commit}: {safetext.lines(text)}")
    except OSError:
        return None
    return path


def clear(logs_dir: Path) -> None:
    """Forget the previous session's step outputs (a new session numbers from 1)."""
    if logs_dir.is_dir():
        for path in logs_dir.glob(f"{_PREFIX}*.log"):
            with writing(path):
                path.unlink()


class StepLogWriter:
    """Keeps the build and repro output of every step (the built-in ``step-log`` plugin)."""

    def __init__(self, logs_dir: Path) -> None:
        self.logs_dir = logs_dir

    @hookimpl
    def bisectkit_step_done(self, step: Step, verdict: Verdict) -> None:
        if not step.outputs:
            return
        path = step_log_path(self.logs_dir, step.index)
        shown = step.record.get("term", verdict)  # --find-fix / --term-*: the session's words
        reason = safetext.one_line(str(step.record.get("reason")))
        with writing(path):
            self.logs_dir.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as log:
                log.write(f"# step {step.index}: {step.commit} {shown} ({reason})\n")
                for phase, text in step.outputs.items():
                    log.write(f"# --- {safetext.one_line(phase)} ---\n")
                    for at in range(0, len(text), _SLICE):
                        log.write(safetext.lines(text[at:at + _SLICE]))
                    if text and not text.endswith("\n"):
                        log.write("\n")
        step.record["log"] = str(path)
