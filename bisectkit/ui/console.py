"""Terminal output with rich (which only :mod:`bisectkit.ui` imports). Every method shows the
control characters of what it is given (:mod:`bisectkit.safetext`), never sends them."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO, cast

from rich.console import Console as RichConsole
from rich.markup import escape
from rich.text import Text

from bisectkit import safetext
from bisectkit.git.shapes import status_lines
from bisectkit.model import CANCELLED, HOW_TO_CHOOSE_UPSTREAM, CommitInfo, short
from bisectkit.model.documents import JobRow, StepDetails, StepJSON, TermsJSON
from bisectkit.text import (
    INDENT,
    affecting_lines,
    cells,
    clock,
    commit_lines,
    ellipsize,
    eta_text,
    fetched,
    fetched_total,
    fit,
    flow,
    fold,
    moved,
    pack,
    plural,
    step_times,
    words,
    wrap,
)
from bisectkit.ui.livestatus import Panel, Status
from bisectkit.ui.outstream import Resilient

#: A command to copy and paste, alone on its line or after a short label (``next:``,
#: ``bisect inside it:``): printed whole however wide, as a broken one would not run.
_COMMAND = re.compile(r"\s*(?:[A-Za-z][\w ()-]{0,24}:\s+)?"
                      r"(?:bisectkit|git|git-bisect-patched) (?!\S*:(?:\s|$))\S")
_VERDICT_STYLE = {"good": "green", "bad": "red", "skip": "yellow"}
_ACTION_STYLE = {"applied": "green", "dropped": "cyan", "empty": "dim", "conflict": "red"}


def _rich(file: TextIO, streams: list[Resilient],
          width: int | None = None) -> RichConsole:
    # soft_wrap keeps long lines (full shas, commands) whole when piped.
    streams.append(Resilient(file))
    return RichConsole(file=cast(TextIO, streams[-1]), soft_wrap=True, highlight=False,
                       width=width)


class Console:
    """Human-facing progress: header, a block per step, the final result."""

    def __init__(self, file: TextIO | None = None, width: int | None = None) -> None:
        """``width``: the columns to fit (default: the terminal's, else $COLUMNS or 80)."""
        self._streams: list[Resilient] = []
        self._c = _rich(file or sys.stdout, self._streams, width)
        self.panel = Panel(lambda: self._c)

    def to_stderr(self) -> None:
        """Write everything to stderr from now on: stdout carries a result (``--json -``)."""
        self._c = _rich(sys.stderr, self._streams)

    def lost(self) -> OSError | None:
        """The first write error that lost output (not a reader gone): a full disk, a
        file size limit; ``None`` when everything written reached its file."""
        return next((s.lost for s in self._streams if s.lost is not None), None)

    @property
    def file(self) -> TextIO:
        """Where build and repro output is echoed: above the live panel while it is up."""
        return cast(TextIO, self.panel.echo)

    @property
    def width(self) -> int:
        return self._c.width

    @property
    def status(self) -> Status:
        return self.panel.status

    def live(self) -> contextlib.AbstractContextManager[None]:
        """A run: on a terminal the status panel may show until the run's summary (or the
        end of the ``with``, however it ends: Ctrl-C, an abort, an error)."""
        return self.panel.run()

    def stop_live(self) -> None:
        """Take the panel away (idempotent): what prints next comes after it."""
        self.panel.stop()

    def line(self, text: str = "", style: str | None = None, more: str = "  ") -> None:
        """Print plain text (no markup interpretation; control characters shown), each
        line within the width: broken between words, continuations indented by ``more``
        past the line's own indent."""
        width = self._c.width
        folded = [part for raw in safetext.lines(text).split("\n")
                  for part in ([raw] if _COMMAND.match(raw) else fold(raw, width, more))]
        # A Text, not print(style=...): that style would also dim the live panel below.
        self._c.print(Text("\n".join(folded), style=style or ""))

    def whole(self, text: str, style: str | None = None) -> None:
        """Print one line of data as it is, never broken: a log line that ``replay`` reads
        back, git's answer line that scripts search for (control characters shown)."""
        self._c.print(Text(safetext.one_line(text), style=style or ""))

    def header(self, lines: Sequence[str], total_steps: int) -> None:
        """The strategy's description of the bisection, then the expected step count."""
        first, *rest = [safetext.one_line(line) for line in lines]
        width = self._c.width
        first_line, *more = flow(11, first, width)  # a path is not cut
        self._c.print(f"[bold]bisectkit[/]: {escape(first_line)}")
        for line in more:
            self.line(line)
        for text in rest:  # broken between words: a range or a pathspec is not cut
            for line in wrap(text.lstrip(), width, text[:len(text) - len(text.lstrip())], "  "):
                self.line(line)
        self.line(f"  roughly {plural(total_steps, 'step')}")

    def step_start(
        self, index: int, info: CommitInfo, remaining: int, steps_left: int
    ) -> None:
        """``[step i] testing SHA subject  (n left, roughly k steps; elapsed, ETA)``: the
        subject ellipsized to the width, the rest on a second line when it leaves too little."""
        info = safetext.commit(info)
        self.status.candidate(index, info.sha, info.subject, remaining, steps_left)
        head = f"[step {index}] testing {info.sha.short} "
        timing = (f"; elapsed {clock(self.status.elapsed())}, {eta_text(self.status.eta())}"
                  if self.panel.in_run else "")  # a run's, not a manual step's
        tail = f"  ({remaining} left, roughly {plural(steps_left, 'step')}{timing})"
        subject, spill = fit(head, info.subject, tail, self._c.width)
        self._c.print(Text.assemble((f"[step {index}]", "bold"), " testing ",
                                    (info.sha.short, "bold"), " ", subject,
                                    ("" if spill else tail, "dim")))
        if spill:
            self.line(ellipsize(INDENT + tail.strip()[1:-1], self._c.width), style="dim")
        self.panel.show()
        self.panel.refresh()

    def details(self, details: StepDetails, files_written: int | None) -> None:
        """What preparing a candidate did: patch actions, submodule moves, files written."""
        details, width = safetext.data(details), self._c.width
        for a in details.get("patches", ()):
            head, action = f"    {a['kind']:<11} {short(a['commit'])}  ", f"{a['action']:<8}"
            why, *more = flow(len(head) + len(action) + 1, a["why"], width, " " * 8)
            self._c.print(Text.assemble(
                head, (action, _ACTION_STYLE.get(a["action"], "")), " ", why))
            for line in more:
                self.line(line)
        for m in details.get("submodules", ()):
            self.line(ellipsize(f"    {m['path']}: {moved(m)}", width))
        if files_written is not None:
            self.line(f"    {plural(files_written, 'file')} written", style="dim")

    def jobs(self, rows: Sequence[JobRow]) -> None:
        """The parallel steps in flight, a table in the live panel (terminals only; an empty
        ``rows`` takes the table away)."""
        self.status.jobs = safetext.data(list(rows))
        if rows:
            self.panel.show()

    def set_phase(self, index: int, phase: str) -> None:
        """Step ``index`` entered ``phase`` (checkout, build, repro; ``cancelled``: a
        parallel step whose verdict no longer matters): the panel shows it."""
        if phase == CANCELLED:
            self.status.cancelled.add(index)
        if index == self.status.index:
            self.status.set_phase(phase)
            self.panel.refresh()

    def phase(self, what: str, command: str) -> None:
        """A command starts (a plugin's phase: ``configure``, ``run 2/3``...)."""
        what = safetext.one_line(what)
        self.status.set_phase(what)
        self.line(f"--- {what}: {safetext.one_line(command)}", style="dim")
        self.panel.refresh()

    def step_done(self, step: dict[str, Any]) -> None:
        """``[step i] SHA verdict (reason)  timings``: the reason ellipsized to the width
        (the step's log and ``show-step`` keep it whole), the timings on a continuation
        line when they do not fit beside it."""
        step = safetext.data(step)
        self.status.step_done(step)
        verdict = step["verdict"]
        shown = step.get("term", verdict)
        source = f" {step['source']}:" if step.get("source") in (
            "verify", "check-stack", "confirm") else ""
        head = f"[step {step['index']}]{source} {short(step['commit'])} {shown} "
        times = step_times(step)
        tail = "".join(f"  {t}" for t in times)
        width = self._c.width
        why, spill = fit(head + "(", step["reason"], ")" + tail, width)
        reason = f"({ellipsize(why, width - cells(head) - 2) if spill else why})"
        self._c.print(Text.assemble(
            (f"[step {step['index']}]", "bold"), f"{source} {short(step['commit'])} ",
            (shown, f"bold {_VERDICT_STYLE.get(verdict, '')}"), " ", reason,
            "" if spill else tail))
        for line in pack(times, width, first=INDENT, sep="  ") if spill else ():
            self.line(line)
        for flag in step.get("flags") or ():
            self.line(f"    flagged: {flag}", style="yellow")

    def summary(self, steps: Sequence[StepJSON], terms: TermsJSON | None = None) -> None:
        """How the steps went and what they cost (``terms``: the sides' words); steps
        announced but never decided count as cancelled (a parallel step whose verdict no
        longer mattered) or stopped (an abort, Ctrl-C). Takes the live panel away first:
        the run's last lines print after it."""
        self.stop_live()
        old, new = words(terms)
        counts = {v: sum(1 for s in steps if s["verdict"] == v) for v in ("good", "bad", "skip")}
        cached = sum(1 for s in steps if s.get("source") == "cache")
        undecided = self.status.open - {s["index"] for s in steps}
        cancelled = len(undecided & self.status.cancelled)
        stopped = len(undecided) - cancelled
        build = sum(s.get("build_s") or 0 for s in steps)
        repro = sum(s.get("repro_s") or 0 for s in steps)
        written = sum(s.get("files_written") or 0 for s in steps)
        got = fetched_total(steps)
        unfinished = "".join(f", {n} {word}" for n, word in ((cancelled, CANCELLED),
                                                             (stopped, "stopped")) if n)
        parts = [f"{plural(len(steps) + len(undecided), 'step')} ({counts['good']} {old}, "
                 f"{counts['bad']} {new}, {counts['skip']} skip, {cached} cached"
                 f"{unfinished});",
                 f"build {build:.1f} s, repro {repro:.1f} s;",
                 f"{plural(written, 'file')} written" + (";" if got else "")]
        parts += [fetched(got)] if got else []
        for line in pack(parts, self._c.width, first="summary: ", sep=" "):
            self.line(line, style="bold")
        flagged = [s for s in steps if s.get("flags")]
        if flagged:
            self.line(f"flagged steps ({len(flagged)}): check these verdicts", style="yellow")
            for s in flagged:
                shown = s.get("term", s["verdict"])
                self.line(f"  step {s['index']} {short(s['commit'])} {shown}: "
                          f"{'; '.join(s['flags'])}", style="yellow")

    def found(self, info: CommitInfo, details: dict[str, Any], term: str = "bad") -> None:
        self.stop_live()
        info = safetext.commit(info)
        # The answer stands out on a terminal; piped, it is the plain line git prints.
        # Whole, as git prints it, however narrow the terminal: scripts search for it.
        self.whole(f"{info.sha} is the first {term} commit", style="bold red")
        for line in commit_lines(info, self._c.width):
            self.line(line)
        if details.get("patches"):
            self.line("")
            self.line(f"patch stack at {info.sha.short}:")
            self.details({"patches": details["patches"]}, None)
        if details.get("submodules"):
            self.line("")
            self.line(f"submodules moved by {info.sha.short}:")
            self.details({"submodules": details["submodules"]}, None)

    def inconclusive(self, infos: Sequence[CommitInfo], term: str = "bad") -> None:
        self.line("There are only 'skip'ped commits left to test.")
        self.line(f"The first {term} commit could be any of:")
        for info in infos:  # the full sha (to copy), the subject as room allows
            self.line(f"{info.sha} {ellipsize(safetext.commit(info).subject, self._c.width - 41)}")
        self.line("We cannot bisect more!")

    def stack_status(self, data: dict[str, Any], limit: int) -> None:
        """``bisectkit status``: the submodule against its upstream."""
        d = safetext.data(data)
        branch = d["branch"].removeprefix("refs/heads/") if d["branch"] else "detached"
        self._c.print(f"[bold]submodule {escape(d['submodule'])}[/]")
        self.line(f"  HEAD        {short(d['head'])} ({branch})")
        if "unknown" in d:
            for text in status_lines(d):
                self.line(f"  {text}")
            self.line(f"  stack: unknown: {d['unknown']}")
            return
        guessed = d.get("upstream_guessed")
        # Said once: where the upstream is and, when bisectkit guessed it, how and how to
        # choose (a hanging indent under the value).
        self.line(f"  upstream    {d['upstream']} at {short(d['upstream_sha'])}"
                  + (f" (guessed: {guessed}; to choose, {HOW_TO_CHOOSE_UPSTREAM})"
                     if guessed else ""), more=" " * 12)
        width = self._c.width
        self.line(ellipsize(f"  merge-base  {short(d['merge_base'])} "
                            f"{d['merge_base_subject']}", width))
        for text in status_lines(d):
            self.line(f"  {text}")
        if d["clean"]:
            self.line("  clean: no local patches on top of the merge-base")
        else:
            n = len(d["patches"])
            self.line(f"  patched: {plural(n, 'local patch', 'local patches')} "
                      f"(what happens at {d['upstream']}):")
            for p in d["patches"]:
                self._patch_row(p, width)
        heading, *commits = affecting_lines(d, limit)
        self.line(heading)
        for text in commits:  # a commit per line, its subject ellipsized
            self.line(ellipsize(text, width))

    def _patch_row(self, p: dict[str, Any], width: int) -> None:
        """``kind sha action subject  (refers to X, upstream has it)``: the subject
        ellipsized, the note on a continuation line when it leaves the subject too little."""
        prefix, action = f"    {p['kind']:<11} {short(p['sha'])}  ", f"{p['at_upstream_head']:<8}"
        head = f"{prefix}{action} "
        notes = ([f"refers to {short(p['refers_to'])}"] if p["refers_to"] else []) + \
            (["upstream has it"] if p["upstream_has_it"] else [])
        tail = f"  ({', '.join(notes)})" if notes else ""
        subject, spill = fit(head, p["subject"], tail, width)
        self._c.print(Text.assemble(
            prefix, (action, _ACTION_STYLE.get(p["at_upstream_head"], "")), " ", subject,
            "" if spill else tail))
        if spill and tail:
            self.line(" " * 8 + tail.strip(), style="dim")

    def error(self, message: str) -> None:
        """One error line in red (broken between words when wider than the terminal)."""
        self.line(safetext.one_line(message), style="red")
