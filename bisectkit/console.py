"""Terminal output with rich: the only module that imports it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from rich.console import Console as RichConsole
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from bisectkit.model import CommitInfo, Upstream

_VERDICT_STYLE = {"good": "green", "bad": "red", "skip": "yellow"}
_ACTION_STYLE = {"applied": "green", "dropped": "cyan", "empty": "dim", "conflict": "red"}


class _Resilient:
    """A text stream whose write errors are swallowed once the reader is gone.

    After SIGHUP (terminal closed, ssh dropped) or with a closed pipe, every
    write fails; a restore must go on regardless, so output is dropped
    instead of raised.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._broken = False

    def write(self, text: str) -> int:
        if not self._broken:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):
                self._broken = True
        return len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._broken = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _rich(file: TextIO) -> RichConsole:
    # soft_wrap keeps long lines (full shas, commands) whole when piped.
    return RichConsole(file=cast(TextIO, _Resilient(file)), soft_wrap=True, highlight=False)


class Console:
    """Human-facing progress: header, a block per step, the final result."""

    def __init__(self, file: TextIO | None = None) -> None:
        self._c = _rich(file or sys.stdout)
        self._live: Live | None = None

    def to_stderr(self) -> None:
        """Write everything to stderr from now on: stdout carries a result (``--json -``)."""
        self._c = _rich(sys.stderr)

    @property
    def file(self) -> TextIO:
        return cast(TextIO, self._c.file)

    def line(self, text: str = "", style: str | None = None) -> None:
        """Print plain text (no markup interpretation)."""
        self._c.print(text, style=style, markup=False)

    def header(self, lines: Sequence[str], total_steps: int) -> None:
        """The strategy's description of the bisection, then the expected step count."""
        first, *rest = lines
        self._c.print(f"[bold]bisectkit[/]: {escape(first)}")
        for text in rest:
            self.line(text)
        self.line(f"  roughly {total_steps} step{'s' if total_steps != 1 else ''}")

    def step_start(
        self, index: int, info: CommitInfo, remaining: int, steps_left: int
    ) -> None:
        self._c.print(
            f"[bold]\\[step {index}][/] testing [bold]{info.sha[:12]}[/] "
            f"{escape(info.subject)}  [dim]({remaining} left, roughly {steps_left} "
            f"step{'s' if steps_left != 1 else ''})[/]"
        )

    def details(self, details: dict[str, Any], files_written: int | None) -> None:
        """What preparing a candidate did: patch actions, submodule moves, files written."""
        for a in details.get("patches", ()):
            style = _ACTION_STYLE.get(a["action"], "")
            self._c.print(
                f"    {a['kind']:<11} {a['commit'][:12]}  [{style}]{a['action']:<8}[/] "
                f"{escape(a['why'])}"
            )
        for m in details.get("submodules", ()):
            self.line(f"    {m['path']}: {_moved(m)}")
        if files_written is not None:
            self.line(f"    {files_written} file{'s' if files_written != 1 else ''} written",
                      style="dim")

    def jobs(self, rows: Sequence[dict[str, Any]]) -> None:
        """The live table of parallel steps in flight, under the step lines (terminals only;
        an empty ``rows`` takes it away)."""
        if not rows or not self._c.is_terminal:
            if self._live is not None:
                self._live.stop()
                self._live = None
            return
        table = Table(box=None, pad_edge=False, show_edge=False, expand=False)
        for name in ("worker", "step", "candidate", "phase", "elapsed", "last output line"):
            table.add_column(name, no_wrap=True, overflow="ellipsis",
                             max_width=48 if name == "last output line" else None)
        for row in rows:
            table.add_row(row.get("where") or "-", str(row["index"]),
                          f"{row['commit'][:12]} {row.get('subject', '')[:30]}", row["phase"],
                          f"{row['elapsed']:.0f} s", row.get("line", ""))
        if self._live is None:
            self._live = Live(table, console=self._c, refresh_per_second=4, transient=True)
            self._live.start()
        else:
            self._live.update(table)

    def phase(self, what: str, command: str) -> None:
        self._c.print(f"[dim]--- {what}: {escape(command)}[/]")

    def step_done(self, step: dict[str, Any]) -> None:
        verdict = step["verdict"]
        style = _VERDICT_STYLE.get(verdict, "")
        times = ""
        if step.get("files_written"):
            times += f"  {step['files_written']} files written"
        if step.get("prepare_s") is not None and step.get("source") != "manual":
            times += f"  prepare {_secs(step['prepare_s'])}"
        if step.get("build_s") is not None:
            times += f"  build {_secs(step['build_s'])}"
        if step.get("repro_s") is not None:
            times += f"  repro {_secs(step['repro_s'])}"
        if step.get("worker"):
            times += f"  on {step['worker']}:{Path(step.get('workspace', '')).name}"
        shown = step.get("term", verdict)
        source = f" {step['source']}:" if step.get("source") in (
            "verify", "check-stack", "confirm") else ""
        self._c.print(
            f"[bold]\\[step {step['index']}][/]{source} {step['commit'][:12]} "
            f"[bold {style}]{escape(shown)}[/] ({escape(step['reason'])}){times}"
        )
        for flag in step.get("flags") or ():
            self.line(f"    flagged: {flag}", style="yellow")

    def summary(self, steps: Sequence[dict[str, Any]],
                terms: dict[str, str] | None = None) -> None:
        """One line: how the steps went and what they cost (``terms``: the sides' words)."""
        old, new = _words(terms)
        counts = {v: sum(1 for s in steps if s["verdict"] == v) for v in ("good", "bad", "skip")}
        cached = sum(1 for s in steps if s.get("source") == "cache")
        build = sum(s.get("build_s") or 0 for s in steps)
        repro = sum(s.get("repro_s") or 0 for s in steps)
        written = sum(s.get("files_written") or 0 for s in steps)
        self.line(f"summary: {len(steps)} steps ({counts['good']} {old}, {counts['bad']} {new}, "
                  f"{counts['skip']} skip, {cached} cached); build {build:.1f} s, "
                  f"repro {repro:.1f} s; {written} files written", style="bold")
        flagged = [s for s in steps if s.get("flags")]
        if flagged:
            self.line(f"flagged steps ({len(flagged)}): check these verdicts", style="yellow")
            for s in flagged:
                shown = s.get("term", s["verdict"])
                self.line(f"  step {s['index']} {s['commit'][:12]} {shown}: "
                          f"{'; '.join(s['flags'])}", style="yellow")

    def found(self, info: CommitInfo, details: dict[str, Any], term: str = "bad") -> None:
        self.line(f"{info.sha} is the first {term} commit")
        self.line(f"commit {info.sha}")
        self.line(f"Author: {info.author}")
        self.line(f"Date:   {info.date}")
        self.line("")
        for text in info.message.rstrip().splitlines():
            self.line(f"    {text}")
        if details.get("patches"):
            self.line("")
            self.line(f"patch stack at {info.sha[:12]}:")
            self.details({"patches": details["patches"]}, None)
        if details.get("submodules"):
            self.line("")
            self.line(f"submodules moved by {info.sha[:12]}:")
            self.details({"submodules": details["submodules"]}, None)

    def inconclusive(self, infos: Sequence[CommitInfo], term: str = "bad") -> None:
        self.line("There are only 'skip'ped commits left to test.")
        self.line(f"The first {term} commit could be any of:")
        for info in infos:
            self.line(f"{info.sha} {info.subject}")
        self.line("We cannot bisect more!")

    def stack_status(self, data: dict[str, Any], limit: int) -> None:
        """``bisectkit status``: the submodule against its upstream."""
        d = data
        branch = d["branch"].removeprefix("refs/heads/") if d["branch"] else "detached"
        self._c.print(f"[bold]submodule {escape(d['submodule'])}[/]")
        self.line(f"  HEAD        {d['head'][:12]} ({branch})")
        self.line(f"  upstream    {d['upstream']} at {d['upstream_sha'][:12]}")
        note = Upstream(d["upstream"], d["upstream_sha"], d.get("upstream_guessed")).note()
        if note:
            self.line(f"  {note}")
        self.line(f"  merge-base  {d['merge_base'][:12]} {d['merge_base_subject']}")
        if d["clean"]:
            self.line("  clean: no local patches on top of the merge-base")
        else:
            n = len(d["patches"])
            self.line(f"  patched: {n} local patch{'es' if n != 1 else ''} "
                      f"(what happens at {d['upstream']}):")
            for p in d["patches"]:
                ref = p["refers_to"][:12] if p["refers_to"] else "-"
                has = "upstream has it" if p["upstream_has_it"] else ""
                style = _ACTION_STYLE.get(p["at_upstream_head"], "")
                self._c.print(
                    f"    {p['kind']:<11} {p['sha'][:12]}  refers to {ref:<12}  "
                    f"[{style}]{p['at_upstream_head']:<8}[/] {escape(p['subject'])}"
                    f"{'  (' + has + ')' if has else ''}"
                )
        total = d["upstream_commits_since_merge_base"]
        shown = d["affecting"]
        where = f", {len(shown)} touching {' '.join(d['pathspec'])}" if d["pathspec"] else ""
        self.line(f"  upstream commits since the merge-base: {total}{where}"
                  f"{' (newest last)' if shown else ''}")
        hidden = len(shown) - limit if limit and len(shown) > limit else 0
        if hidden:
            self.line(f"    ... {hidden} older not shown (--limit 0 shows all)")
        for c in shown[hidden:]:
            self.line(f"    {c['commit'][:12]} {c['subject']}")

    def error(self, message: str) -> None:
        self._c.print(f"[red]{escape(message)}[/]")


def _words(terms: dict[str, str] | None) -> tuple[str, str]:
    """The words of the old and new sides (``good``/``bad`` unless the session says)."""
    terms = terms or {}
    return terms.get("old") or "good", terms.get("new") or "bad"


def _moved(m: dict[str, Any]) -> str:
    """``old -> new (N upstream commits)`` for one submodule of an integrate step."""
    old = m["old"][:12] if m.get("old") else "(none)"
    new = m["new"][:12] if m.get("new") else "(removed)"
    span = m.get("upstream_commits")
    return f"{old} -> {new}" + (f" ({span} upstream commits)" if span is not None else "")


def _secs(value: float) -> str:
    """Seconds, readable from milliseconds to hours."""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"
