"""The live status panel of a run on a terminal, and the stream build and repro echo to.

The panel stays at the bottom of the screen while the build's and the
repro's output scrolls above it: step i of ~n, candidates left, elapsed,
ETA (the median step so far times the steps left), the phase and the last
output line, plus the table of parallel steps in flight (``--jobs``). It is a
rich ``Live``: one at a time, drawn only inside :meth:`Console.live
<bisectkit.ui.console.Console.live>` (a run), and stopped before the run's final
lines print. Without a terminal there is no panel and the echo is unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rich.ansi import AnsiDecoder
from rich.console import Console as RichConsole
from rich.console import Group, RenderableType
from rich.live import Live
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from bisectkit import safetext
from bisectkit.model import short
from bisectkit.text import clock, eta, eta_text

#: Columns the panel leaves free at the right: the terminal's "^C" echo fits there.
ECHO_ROOM = 2

#: Sources of step records that ran a build or a repro (their time feeds the ETA).
_TIMED = ("run", "verify", "check-stack", "confirm", "parallel")


class Status:
    """What the panel shows, fed by the console observer (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.index = 0
        self.steps_left = 0
        self.remaining = 0
        self.commit = ""
        self.subject = ""
        self.phase = ""
        self.phase_since = self.started
        self.step_since = self.started
        self.line = ""
        self.durations: list[float] = []
        self.jobs: list[dict[str, Any]] = []
        #: Steps announced whose verdict was not recorded (yet): an abort's unfinished ones.
        self.open: set[int] = set()
        #: Parallel steps cancelled: their verdict could no longer change the answer.
        self.cancelled: set[int] = set()

    def candidate(self, index: int, commit: str, subject: str, remaining: int,
                  steps_left: int) -> None:
        with self._lock:
            self.index, self.commit, self.subject = index, commit, subject
            self.remaining, self.steps_left = remaining, steps_left
            self.step_since = time.monotonic()
            self.open.add(index)
            self.line = ""
        self.set_phase("checkout")

    def set_phase(self, phase: str) -> None:
        with self._lock:
            self.phase, self.phase_since = phase, time.monotonic()

    def step_done(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.open.discard(record["index"])
            if record["index"] == self.index:  # its phase is over: the header says so
                self.phase, self.phase_since = "done", time.monotonic()
            if record.get("source") in _TIMED and (record.get("build_s") is not None or
                                                   record.get("repro_s") is not None):
                self.durations.append(sum(record.get(k) or 0.0 for k in
                                          ("prepare_s", "build_s", "repro_s")))

    def total(self) -> int:
        """Roughly how many steps the run takes (the steps so far and those left)."""
        return max(self.index - 1 + self.steps_left, self.index)

    def elapsed(self, now: float | None = None) -> float:
        return (now or time.monotonic()) - self.started

    def eta(self, now: float | None = None) -> float | None:
        with self._lock:
            return eta(self.durations, self.steps_left,
                       (now or time.monotonic()) - self.step_since)

    def progress(self, now: float | None = None) -> str:
        """``step 3 of ~9, 74 left, elapsed 0:12, ETA ~0:30``."""
        return (f"step {self.index} of ~{self.total()}, {self.remaining} left, "
                f"elapsed {clock(self.elapsed(now))}, {eta_text(self.eta(now))}")


def render(status: Status, width: int, now: float | None = None) -> RenderableType:
    """The panel, every line at most ``width`` columns."""
    now = now or time.monotonic()
    lines: list[RenderableType] = [Rule(style="dim", characters="─")]
    progress = Text.assemble(("step ", "bold"), (f"{status.index}", "bold"),
                             f" of ~{status.total()}  {status.remaining} left  "
                             f"elapsed {clock(status.elapsed(now))}  "
                             f"{eta_text(status.eta(now))}")
    lines.append(_one_line(progress, width))
    if status.index:
        # In a parallel run the step's row in the table is what its worker last said:
        # the header shows the same phase and time, never a stale "checkout".
        row = next((r for r in status.jobs if r["index"] == status.index), None)
        name, spent = ((row["phase"], float(row["elapsed"])) if row is not None
                       else (status.phase, now - status.phase_since))
        phase = f"{name} {clock(spent)}" if name else ""
        lines.append(_one_line(Text.assemble((phase, "bold cyan"), "  ",
                                             (short(status.commit), "bold"), " ",
                                             status.subject), width))
    if status.line:
        lines.append(_one_line(Text("> " + status.line, style="dim"), width))
    if status.jobs:
        lines.append(jobs_table(status.jobs, width, now))
    return Group(*lines)


def _one_line(text: Text, width: int) -> Text:
    text.no_wrap = True
    text.overflow = "ellipsis"
    text.truncate(width, overflow="ellipsis")
    return text


#: The table's short columns and their widths; the candidate and the last output line
#: share the rest, the candidate first: it is what the row is about.
_FIXED = {"worker": 12, "step": 4, "phase": 8, "elapsed": 7}
#: Columns the candidate keeps before the last output line gets any: its short sha and
#: enough of its subject to know it again.
CANDIDATE_ROOM = 40
#: Below this width the last output line is left out of the table (the candidate keeps
#: the room); the panel's own output line above still shows the current step's.
_LAST_LINE_FROM = 12


def jobs_table(rows: Sequence[dict[str, Any]], width: int, now: float) -> Table:
    """The steps in flight of a parallel run, one row each, within ``width`` columns: the
    short columns keep their size, the candidate gets up to :data:`CANDIDATE_ROOM` columns
    of the rest, the last output line what remains (none when too little)."""
    table = Table(box=None, pad_edge=False, show_edge=False, width=width)
    short_ones = dict(_FIXED, worker=8) if width < 70 else _FIXED  # the worker gives first
    fixed = sum(short_ones.values()) + 2 * len(short_ones)  # a column and the gap after it
    rest = max(width - fixed, 8)
    last = rest - CANDIDATE_ROOM - 2  # a column and the gap before it
    candidate = CANDIDATE_ROOM if last >= _LAST_LINE_FROM else rest
    names = [*short_ones, "candidate"] + (["last output line"] if last >= _LAST_LINE_FROM
                                          else [])
    sizes = {**short_ones, "candidate": candidate, "last output line": last}
    for name in names:
        table.add_column(name, no_wrap=True, overflow="ellipsis", width=sizes[name])
    for row in rows:
        cells = (row.get("where") or "-", str(row["index"]), row["phase"],
                 clock(row["elapsed"]), f"{short(row['commit'])} {row.get('subject', '')}",
                 row.get("line", ""))
        table.add_row(*(Text(cell) for cell in cells[:len(names)]))  # Text: not markup
    return table


class Echo:
    """The stream build and repro output is echoed to (``console.file``).

    Written straight through, except while the panel is up: then whole lines
    are printed through the rich console, above the panel (colours kept), so
    the panel stays put. The last line (a ``\\r`` progress meter's latest
    rewrite included) goes to the status either way.
    """

    def __init__(self, console: Callable[[], RichConsole], status: Callable[[], Status],
                 live: Callable[[], bool]) -> None:
        self._console = console
        self._status = status
        self._live = live
        self._partial = ""
        self._decoder = AnsiDecoder()

    def write(self, text: str) -> int:
        if not self._live():
            self._note(text)
            return self._console().file.write(text)
        *whole, self._partial = (self._partial + text).split("\n")
        if "\r" in self._partial:  # a progress meter: only its latest rewrite is on screen
            self._partial = self._partial.rsplit("\r", 1)[1] or self._partial
        self._note(text)
        if whole:
            self._console().print(Text("\n").join(
                self._decoder.decode_line(line) for line in whole), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        self._console().file.flush()

    def finish(self) -> None:
        """Print what is left of a line: the panel is about to go."""
        if self._partial:
            partial, self._partial = self._partial, ""
            self._console().print(self._decoder.decode_line(partial), soft_wrap=True)

    def _note(self, text: str) -> None:
        shown = [x for x in text.replace("\r", "\n").split("\n") if x.strip()]
        if shown:
            self._status().line = safetext.one_line(Text.from_ansi(shown[-1]).plain.strip()[:500])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console().file, name)


class Panel:
    """The one rich ``Live`` of a run: the status, drawn at the bottom while output scrolls
    above it (a terminal only, inside :meth:`run` only)."""

    def __init__(self, console: Callable[[], RichConsole]) -> None:
        self._console = console
        self.status = Status()
        self._live: Live | None = None
        self._in_run = False
        self.echo = Echo(console, lambda: self.status, lambda: self._live is not None)

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        """A run: the panel may show until :meth:`stop` or the end of the ``with``, however
        it ends (Ctrl-C, an abort, an error): the terminal is never left garbled."""
        self.status = Status()
        self._in_run = True
        try:
            yield
        finally:
            self._in_run = False
            self.stop()

    @property
    def in_run(self) -> bool:
        return self._in_run

    def show(self) -> None:
        """Put the panel up (once per run; not without a terminal, not outside a run)."""
        console = self._console()
        if self._live is not None or not self._in_run or not console.is_terminal:
            return
        # Two columns spare: the cursor waits at the end of the panel's last line, where the
        # terminal echoes a Ctrl-C as "^C"; on a full-width line that wraps, scrolls the
        # panel up one line, and its top line would be left behind on the screen.
        self._live = Live(console=console, get_renderable=lambda: render(
                              self.status, max(console.width - ECHO_ROOM, 20)),
                          refresh_per_second=4, transient=True, redirect_stdout=False,
                          redirect_stderr=False)
        self._live.start(refresh=True)

    def refresh(self) -> None:
        """Redraw now (a phase changed): not at the next tick."""
        if self._live is not None:
            self._live.refresh()

    def stop(self) -> None:
        """Take the panel away (idempotent): what prints next comes after it."""
        live, self._live = self._live, None
        if live is not None:
            with contextlib.suppress(Exception):  # a gone terminal must not stop a restore
                self.echo.finish()
                live.stop()
