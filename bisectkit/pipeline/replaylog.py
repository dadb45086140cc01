"""The session log (``log``) and reading it back (``replay``): one format, one module.

A log is what ``git bisect log`` is for git: the ``start`` line, then one
``git bisect-patched good|bad|skip|old|new SHA`` line per verdict, with
comments (``# ...``) for what is recomputed on replay and for the answer. A
comment's subject or reason has its control characters shown
(:mod:`bisectkit.safetext`): a carriage return in a subject cannot start a line
that ``replay`` would run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from bisectkit import engine, safetext
from bisectkit.engine import Clear, Decision, Found, Inconclusive, search
from bisectkit.errors import BadInput
from bisectkit.model import VERDICTS
from bisectkit.pipeline.descent import decide_and_descend, descended
from bisectkit.pipeline.parts import RunParts

_PROG = ["git", "bisect-patched"]


def log_lines(b: RunParts) -> list[str]:
    """A log that ``replay`` accepts, in the format of ``git bisect log``."""
    s = b.session
    lines = [f"git bisect-patched {shlex.join(s.start_argv)}"]
    for v in s.verdicts:
        if v.source == "auto":
            # Conflict skips are recomputed on replay; keep them as comments.
            lines.append(f"# {b.term(v.verdict)}: [{v.commit}] {_subject(b, v.commit)} "
                         f"({safetext.one_line(v.reason)})")
            continue
        if v.source in ("check-stack", "confirm"):
            continue
        word: str = v.verdict
        if not s.terms.is_default:
            # Sides, not repro outcomes: unambiguous when replayed.
            word = {"good": "old", "bad": "new"}.get(v.verdict, v.verdict)
        lines.append(f"# {b.term(v.verdict)}: [{v.commit}] {_subject(b, v.commit)}")
        lines.append(f"git bisect-patched {word} {v.commit}")
    lines += [f"# --all-parents: bisected into merge [{m}] {_subject(b, m)}"
              for m in descended(b)]
    try:
        decision: Decision | None = decide_and_descend(b, search.named(s.params.search))
    except engine.ContradictoryVerdicts as exc:
        decision = None
        lines.append("# the verdicts contradict each other: "
                     f"{safetext.one_line(b.contradiction(exc))}")
    lines += _answer(b, decision)
    return lines


def _answer(b: RunParts, decision: Decision | None) -> list[str]:
    new = b.session.terms.new
    if isinstance(decision, Found):
        return [f"# first {new} commit: [{decision.first_bad}] "
                f"{_subject(b, decision.first_bad)}"]
    if isinstance(decision, Clear):
        last = decision.last_good
        return [f"# no {new} commit: the pin can move to "
                f"[{last}] {_subject(b, last)}" if last else f"# no {new} commit"]
    if isinstance(decision, Inconclusive):
        return ["# only skipped commits left to test", *(
            f"# possible first {new} commit: [{c}] {_subject(b, c)}"
            for c in decision.candidates)]
    return []


def _subject(b: RunParts, sha: str) -> str:
    return safetext.one_line(b.strategy.describe(sha).subject)


@dataclass(frozen=True)
class ReplayLog:
    """A log read back: the ``start`` words (with any pathspec) and the marks in order."""

    start: list[str]
    pathspec: list[str]
    marks: list[list[str]]


def parse_log(text: str, path: Path) -> ReplayLog:
    """The commands of a log; one line naming the file and line for anything else."""
    commands: list[list[str]] = []
    # Lines end at a line feed only, as for git: a vertical tab, a form feed or U+2028 in
    # a line (str.splitlines would break there) never makes one line two commands.
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:  # an unbalanced quote
            raise BadInput(f"{path}:{n}: cannot read the line: {exc}: "
                           f"{safetext.one_line(line)}") from None
        if words[:2] == _PROG:
            words = words[2:]
        elif words[:1] == ["git-bisect-patched"]:
            words = words[1:]
        else:
            raise BadInput(f"{path}:{n}: not a bisect-patched command: {line}")
        if not words or words[0] not in ("start", "old", "new", *VERDICTS):
            raise BadInput(f"{path}:{n}: cannot replay: {line}")
        if (words[0] == "start") != (not commands):
            raise BadInput(f"{path}:{n}: the log must begin with exactly one 'start'")
        commands.append(words)
    if not commands:
        raise BadInput(f"{path}: no 'start' command in the log")
    start, pathspec = commands[0], []
    if "--" in start:
        cut = start.index("--")
        start, pathspec = start[:cut], start[cut + 1:]
    return ReplayLog(start, pathspec, commands[1:])
