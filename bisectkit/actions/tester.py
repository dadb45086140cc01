"""One repro run under a set of action flags: its verdict, through the same hooks ``run``
uses (the built-in repro, ``--good-if/--bad-if/--skip-if``, timeouts, ``-p`` plugins).

The repro gets ``$BISECTKIT_ACTIONS`` (the flags, words separated by spaces: it splices
the variable unquoted into the compiler's command line), ``$BISECTKIT_ACTION_LOG`` (a
fresh empty file it may append the compiler's stderr to), ``$BISECTKIT_ACTION_LIMIT``
(the limit, ``-1`` for a run of every action) and ``$BISECTKIT_STEP``.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bisectkit.errors import Aborted, BadInput, NotEnumerable
from bisectkit.execute import runner
from bisectkit.model import DEFAULT_KEEP, Outcome, Sha, Step, Verdict, dropped
from bisectkit.model.dropped import unmarked
from bisectkit.pipeline.testing import cannot_run, cleaned
from bisectkit.pipeline.trace import Tracer
from bisectkit.plugin.facade import Hooks
from bisectkit.strategies.common import step_env

#: What LLVM prints when a tool crashes (``PrettyStackTrace``, ``CrashRecoveryContext``)
#: or gives up (``report_fatal_error``: ``LLVM ERROR: Cannot select: ...``).
CRASH_MARKS = ("PLEASE submit a bug report to", "Stack dump:", "LLVM ERROR: ")


@dataclass(frozen=True)
class Ran:
    """One repro run: which (``index``, ``limit``: None for an enumeration), under which
    flags, its verdict (None: an enumeration's is not asked), why, how long, and the text
    the compiler printed about its actions (its action log, else the repro's output)."""

    index: int
    label: str
    limit: int | None
    flags: tuple[str, ...]
    verdict: Verdict | None
    reason: str
    seconds: float
    text: str
    log_text: str = ""
    crashed: bool = False
    #: Why the verdict is not the repro's own (a crash taken as skip).
    note: str = ""
    #: ``text`` is the repro's output with its middle dropped (``--keep-output``).
    cut: bool = False

    def to_json(self) -> dict[str, object]:
        """The run as ``--json`` lists it."""
        return {"index": self.index, "run": self.label, "limit": self.limit,
                "actions": " ".join(self.flags), "verdict": self.verdict,
                "reason": self.reason, "seconds": round(self.seconds, 3),
                **({"compiler_crashed": True} if self.crashed else {})}


@dataclass(frozen=True)
class Command:
    """How the repro runs: its argv (empty: a plugin's ``bisectkit_repro`` runs it), in
    ``workdir``, with ``timeout``, keeping ``keep`` bytes of output (and the lines the
    rules match, ``watch``), its output streamed to ``echo`` when one run is in flight."""

    argv: tuple[str, ...]
    workdir: str
    timeout: float | None = None
    keep: int = DEFAULT_KEEP
    watch: tuple[re.Pattern[str], ...] = ()
    echo: TextIO | None = None


class Tester:
    """Runs the repro under action flags, one run after the other or several at once
    (each with its own log file and step number; :meth:`stop` kills those in flight)."""

    def __init__(self, hooks: Hooks, command: Command, env: Mapping[str, str],
                 tracer: Tracer, scratch: Path) -> None:
        self.hooks = hooks
        self.command = command
        self.workdir = command.workdir
        self.env = dict(env)
        self.tracer = tracer
        self.scratch = scratch
        self._stop = threading.Event()
        #: Runs in flight (more than one: their output is not streamed, it would mix).
        self._flying = 0
        #: Flags every run gets before its own (``--mlir-disable-threading``).
        self.prefix: tuple[str, ...] = ()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        #: Every run so far, in the order they finished.
        self.runs: list[Ran] = []

    def run(self, label: str, flags: Sequence[str], limit: int | None, *,
            judge: bool = True, crash_is_skip: bool = False) -> Ran:
        """Run the repro once under ``self.prefix + flags`` (``limit``: the limit it tests,
        None for an enumeration); ``judge``: classify its outcome (an exit >= 128 or a
        signal stops the command as in ``run``); ``crash_is_skip``: a compiler crash
        (LLVM's crash banner in its output) is skip whatever the repro says."""
        with self._lock:
            index = next(self._numbers)
        words = (*self.prefix, *flags)
        step, action_log = self._step(index, label, words, limit)
        self.hooks.phase(index, "repro")
        with self._lock:
            self._flying += 1
            # Overlapping runs would mix their lines; an enumeration prints every action.
            alone = self._flying == 1 and judge
        try:
            with self.tracer.span(label, index, actions=" ".join(words)):
                outcome = cleaned(self._repro(step, alone, judge))
        finally:
            with self._lock:
                self._flying -= 1
        if outcome is None:
            raise BadInput("nothing runs the repro: give a repro command or a plugin that "
                           "implements bisectkit_repro")
        logged = read_log(action_log)
        # The repro sends the compiler's stderr to one place or the other: where both
        # hold it (a tee), the log alone, or every action would be counted twice.
        text = logged if logged.strip() else outcome.output
        _refuse_split(outcome.output, logged)
        crashed = any(mark in text for mark in CRASH_MARKS)
        verdict: Verdict | None = None
        reason, note = outcome.describe(), ""
        if judge:
            verdict, reason = self._classify(step, outcome)
            if crashed and crash_is_skip and verdict != "skip":
                # A half-optimised input hitting a path the compiler does not support:
                # not the behaviour bisected.
                note = f"the compiler crashed under {label}: skip, not {verdict}"
                verdict, reason = "skip", f"{reason}; {note}"
        cut = not logged.strip() and dropped.was_cut(outcome.output)
        ran = Ran(index, label, limit, tuple(words), verdict, reason, outcome.duration, text,
                  logged, crashed, note, cut)
        with self._lock:
            self.runs.append(ran)
        return ran

    def _step(self, index: int, label: str, words: Sequence[str], limit: int | None
              ) -> tuple[Step, Path]:
        """Run ``index``'s step (its environment) and its fresh, empty action log."""
        for word in words:
            if any(c.isspace() for c in word):
                raise BadInput(f"cannot pass {word!r} in $BISECTKIT_ACTIONS: the repro splits "
                               "it on spaces (use a TMPDIR without spaces)")
        action_log = self.scratch / f"run-{index}.log"
        action_log.write_text("")
        env = {**self.env, **step_env(step=index, actions=" ".join(words),
                                      action_log=str(action_log),
                                      action_limit=-1 if limit is None else limit)}
        return Step(index=index, commit=Sha(label), strategy="actions", env=env,
                    workdir=self.workdir), action_log

    def _repro(self, step: Step, alone: bool, judge: bool) -> Outcome | None:
        """Run the repro command (streamed when it is the only run in flight), or the
        plugin that runs it: a run judged goes through a plugin that runs the repro
        itself (``-p flaky --repeat N``), as a step of ``run`` does; an enumeration runs
        the command once (the plugin's repeats would count every action N times)."""
        c = self.command
        if not c.argv or (judge and self.hooks.has_repro_plugin()):
            return self.hooks.repro(step)
        stop = self._stop  # the runs in flight now: what stop() kills
        echo: io.StringIO = _Filtered(c.echo) if alone and c.echo is not None else _Discard()
        try:
            return runner.run(c.argv, cwd=c.workdir, env=step.env, timeout=c.timeout,
                              echo=echo, keep=c.keep, watch=c.watch,
                              cancelled=stop.is_set)
        finally:
            echo.close()  # the last line, when it has no newline

    def stop(self) -> None:
        """Kill the runs in flight (each raises :class:`~bisectkit.errors.Cancelled`). Runs
        started later are not: a search that answered with runs still in flight goes on
        with its probes and its ``--ir`` runs."""
        with self._lock:
            stopping, self._stop = self._stop, threading.Event()
        stopping.set()

    def _classify(self, step: Step, outcome: Outcome) -> tuple[Verdict, str]:
        """The verdict of ``outcome`` by the rules and plugins, as ``run`` gives it."""
        if outcome.exit_status in (126, 127):
            said = cannot_run(outcome.output)
            if said is not None:
                raise Aborted(f"the repro cannot run: {outcome.describe()}: {said}")
        judged = dataclasses.replace(outcome, output=unmarked(outcome.output))
        verdict = self.hooks.classify(step, judged)
        if verdict is None:
            raise Aborted(f"repro {outcome.describe()} at {step.commit}: exit codes >= 128 "
                          "and signals abort the bisection")
        return verdict, step.reason or outcome.describe()


class _Discard(io.StringIO):
    """Where the output of runs that overlap goes: nowhere (it is kept for the rules)."""

    def write(self, text: str) -> int:
        return len(text)


class _Filtered(io.StringIO):
    """The terminal, without OptBisect's line per pass execution (hundreds a run, the same
    in every run); what else the repro prints passes, line by line."""

    def __init__(self, out: TextIO) -> None:
        super().__init__()
        self._out = out
        self._partial = ""

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        shown = [line for line in lines if not line.lstrip().startswith("BISECT: ")]
        if shown:
            self._out.write("\n".join(shown) + "\n")
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        if self._partial and not self._partial.lstrip().startswith("BISECT: "):
            self._out.write(self._partial)
        self._partial = ""
        super().close()


#: A line a compiler prints about its actions: OptBisect's, an LLVM debug-counter query,
#: a row of LLVM's or MLIR's debug-counter table.
_ACTION_LINE = re.compile(r"BISECT: (?:NOT )?running pass \(\d+\)|DebugCounter \S+=\d+ "
                          r"(?:execute|skip)|^\s*[\w.-]+\s+: \{-?\d+,")


def _refuse_split(output: str, logged: str) -> None:
    """:class:`NotEnumerable` when the repro's output has action lines its action log has
    not: two compiler runs got the flags, one logging, the other printing; the actions
    counted would be one's, the limits apply to both."""
    stray = _stray_action_line(output, logged)
    if stray is not None:
        raise NotEnumerable(
            f"the repro's output has action lines that $BISECTKIT_ACTION_LOG has not "
            f"({stray[:100]!r}): two compiler runs get $BISECTKIT_ACTIONS, one writing to "
            "the log and one to the output; give it to the one compiler run to bisect")


def _stray_action_line(output: str, logged: str) -> str | None:
    """An action line of the repro's ``output`` that the action log does not hold (None:
    no log, or every such line is the log's: a tee). A line cut by ``--keep-output`` is
    still part of one of the log's."""
    if not logged.strip():
        return None
    lines = set(logged.splitlines())
    for line in output.splitlines():
        line = line.rstrip("\r")
        if _ACTION_LINE.search(line) and line not in lines and line not in logged:
            return line.strip()
    return None


def crash_line(text: str) -> str | None:
    """The line where LLVM said why it crashed (``LLVM ERROR: Cannot select: ...``): a
    :data:`CRASH_MARKS` line other than the stack dump's heading."""
    for line in text.splitlines():
        if any(mark in line for mark in CRASH_MARKS if mark != "Stack dump:"):
            return line.strip()[:160]
    return None


def read_log(path: Path) -> str:
    """An action log's text ('' when the repro or the tool removed it, or never wrote
    it)."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def scratch_dir() -> Path:
    """A fresh directory for the runs' action logs, with no space in its path (the repro
    splits ``$BISECTKIT_ACTIONS``, which may name a file in it)."""
    base = tempfile.gettempdir()
    if any(c.isspace() for c in base):
        base = "/tmp" if os.path.isdir("/tmp") else base
    return Path(tempfile.mkdtemp(prefix="bisectkit-actions-", dir=base))
