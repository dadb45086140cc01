"""The evidence of a report: error lines from the step log that shows the failure."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bisectkit.model import short
from bisectkit.ui.report.text import (
    Result,
    cut,
    error_lines,
    fence,
    md_code,
    md_text,
    result_steps,
    result_terms,
    verdict_word,
)

_SECTION_RE = re.compile(r"^# --- (.+) ---$")


def _log_sections(path: str | None) -> dict[str, str] | None:
    """The ``# --- phase ---`` sections of a step log; None if it cannot be read."""
    if not path:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _SECTION_RE.match(line)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
    return {phase: "\n".join(lines) for phase, lines in sections.items()}


def _evidence_step(result: Result) -> tuple[dict[str, Any] | None, bool]:
    """The step whose log shows the failure, and whether it tested the culprit itself."""
    # A --check-stack step tested the culprit without the patch stack: not the failure.
    steps = [s for s in result_steps(result) if s.get("source") != "check-stack"]
    first_bad = result.get("first_bad")
    own = [s for s in steps if s.get("commit") == first_bad]
    logged = [s for s in own if s.get("log")]
    if own:  # without a log: decided without a test (a conflict), by hand, by the cache
        return (logged or own)[-1], True
    # Only a bisection's bad end is never tested itself: another step's log stands in.
    bad = [s for s in steps if s.get("log") and s.get("verdict") == "bad"]
    return (bad[0], False) if bad and first_bad == result.get("bad") else (None, False)


def _no_log(step: dict[str, Any]) -> str:
    """Why a step has no log to show."""
    source = step.get("source")
    if source == "auto":
        return "_Neither built nor run: this step was decided without a test (the reason above)._"
    if source == "cache":
        return ("_Its verdict came from the verdict cache: the same tree was tested by an "
                "earlier run, whose log is not kept here._")
    if source in ("manual", "replay"):
        return "_Marked by hand: there is no log._"
    return "_No log was kept for this step._"


def error_block(result: Result, limit: int) -> list[str]:
    """The "error lines" section: repro first, then build, capped at ``limit`` lines."""
    step, own = _evidence_step(result)
    if step is None:
        return []
    _, new = result_terms(result)
    label = f"step {step.get('index')} (`{short(str(step.get('commit', '')))}`"
    label += f", {verdict_word(step.get('verdict', ''), result)}: {md_text(step.get('reason'))})"
    if not own:
        label += f"; the first {new} commit is the {new} end and was not tested itself"
    if not step.get("log"):
        return [f"#### S{label[1:]}", "", _no_log(step)]
    sections = _log_sections(step.get("log"))
    if sections is None:
        return ["#### Error lines", "", f"_The log of {label} is missing: {md_code(step['log'])}._"]
    order = sorted(sections, key=lambda p: (not p.startswith("repro"), p != "build", p))
    body: list[str] = []
    room = limit
    for phase in order:
        lines = error_lines(sections[phase], room) if room > 0 else []
        if lines:
            body += [f"# --- {phase} ---", *lines]
            room -= len(lines)
    heading = [f"#### Error lines from {label}", ""]
    if body:
        return heading + fence(body, "text")
    tail = [cut(line.strip()) for line in sections.get("repro", "").splitlines() if line.strip()]
    if not tail:
        return heading + ["_No error lines in its log._"]
    return heading + ["No error lines; the last lines of its repro output:", ""] + fence(
        ["# --- repro ---", *tail[-min(5, limit) :]], "text")
