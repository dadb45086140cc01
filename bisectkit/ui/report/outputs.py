"""The output formats of a run, each a built-in plugin on ``bisectkit_session_finish``:
``json-result`` (``--json``), ``markdown-report`` (``--report``), ``chrome-trace``
(``--trace``).

Each reads its option in ``bisectkit_configure`` (as pytest's junitxml does) and writes
when the pipeline finishes the run (:mod:`bisectkit.pipeline.finish`), the one place a
run's outputs are written. :meth:`bisectkit.plugin.facade.Hooks.session_finish` calls
them before any other plugin, so a user's plugin that raises there never costs the
files; each write is atomic and shielded from Ctrl-C (a half-written result is worse
than a second's wait). A file that cannot be written (a full disk) is returned, not
raised, so it costs none of the other files either: the facade raises it once every
format had its turn. A new format is one class here, its line in :data:`FORMATS` and
its option (:func:`bisectkit.cli.options.add_run_options`, ``OUTPUT_OPTIONS``).
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisectkit.cli.targets import dest_of
from bisectkit.errors import BadInput, WriteFailed
from bisectkit.git.repo import Repo
from bisectkit.model import Config, hookimpl
from bisectkit.model.documents import ResultJSON, TraceJSON
from bisectkit.pipeline.outputs import remember_output
from bisectkit.safety import signals
from bisectkit.safety.fileio import write_json_atomic, write_text_atomic
from bisectkit.strategies import kind_named
from bisectkit.ui.console import Console
from bisectkit.ui.report.actions import render_markdown as render_actions_markdown
from bisectkit.ui.report.advance import render_advance_markdown, render_advance_terminal
from bisectkit.ui.report.markdown import render_markdown
from bisectkit.ui.report.terminal import render_terminal


class _Output:
    """A format written to the file its option names (None: the option is not given)."""

    #: The option that names the file, as typed.
    flag: str = ""

    def __init__(self, superproject: Repo | None, console: Console) -> None:
        self.superproject = superproject
        self.console = console
        self.target: str | None = None
        #: Where :attr:`target` led when the run started, the place its checks approved.
        self.resolved: str | None = None

    @hookimpl
    def bisectkit_configure(self, config: Config) -> None:
        value = getattr(config.option, dest_of(self.flag), None)
        # Not a file on every command: ``bisectkit status --json`` is a flag.
        self.target = value if isinstance(value, str) else None
        if self.target is not None and self.target != "-":
            self.resolved = os.path.realpath(self.target)

    def _write(self, target: str, action: Callable[[], object]) -> WriteFailed | None:
        """Run ``action`` (which writes file ``target``) shielded, then remember the file:
        while it holds what this run wrote, it is no input of later runs' cache keys.
        A write that failed is returned (raised once the other formats are written), and
        so is a target that now leads elsewhere than the place checked at the start (a
        link made meanwhile could lead into the submodule the run has not restored yet)."""
        now = os.path.realpath(target)
        if now != self.resolved:
            return WriteFailed(target, OSError(
                errno.ELOOP, f"it now leads to {now} through a link made during the run, "
                "not where it led when the run started; not written"))
        try:
            signals.run_shielded(action)
        except WriteFailed as failed:
            return failed
        remember_output(self.superproject, target)
        return None


class JsonResult(_Output):
    """``--json FILE``: the result, atomically; ``--json -``: on stdout (the console then
    writes to stderr, so stdout parses as JSON)."""

    flag = "--json"

    @hookimpl(tryfirst=True)
    def bisectkit_session_finish(self, result: ResultJSON) -> WriteFailed | None:
        target = self.target
        if target is None:
            return None
        if target == "-":
            # A reader gone is dropped, a full disk kept and said at the end: see
            # app._output_kept.
            sys.stdout.write(json.dumps(result, indent=2) + "\n")
            sys.stdout.flush()
            return None
        return self._write(target, lambda: write_json_atomic(Path(target), dict(result)))


class MarkdownReport(_Output):
    """``--report FILE``: Markdown for an issue, and its short version on the terminal;
    for a run that answered (an advance: one that found where the pin stops). A
    bisection that stopped writes a report that says so, terminal version left out: the
    file must never still hold an earlier run's answer as if it were this one's."""

    flag = "--report"

    @hookimpl(tryfirst=True)
    def bisectkit_session_finish(self, result: ResultJSON) -> WriteFailed | None:
        target = self.target
        if target is None:
            return None
        if result.get("strategy") == "actions":
            return self._actions(target, result)
        kind = kind_named(str(result.get("strategy")))
        advancing = kind is not None and kind.report == "advance"
        if advancing and not result.get("first_bad"):
            return None
        aborted = result.get("status") == "aborted"
        sp = self.superproject
        url = sp.config_get("bisectkit.commit-url") if sp else None
        fork_url = sp.config_get("bisectkit.fork-url") if sp else None
        data: dict[str, Any] = dict(result)
        markdown = render_advance_markdown if advancing else render_markdown
        terminal = render_advance_terminal if advancing else render_terminal
        text = markdown(data, url, fork_url=fork_url)
        failed = self._write(target, lambda: write_text_atomic(Path(target), text))
        if failed is not None:
            return failed
        if aborted:  # the console has said why the run stopped
            return None
        self.console.line("")
        for line in terminal(data, url, fork_url):
            self.console.line(line)
        self.console.line(f"report written to {target}", style="dim")
        return None


    def _actions(self, target: str, result: ResultJSON) -> WriteFailed | None:
        """``bisectkit actions``'s report (the terminal has shown its answer already)."""
        text = render_actions_markdown(dict(result))
        failed = self._write(target, lambda: write_text_atomic(Path(target), text))
        if failed is None and result.get("status") != "aborted":
            self.console.line(f"report written to {target}", style="dim")
        return failed


class ChromeTrace(_Output):
    """``--trace FILE``: the Chrome trace of every step (Perfetto, chrome://tracing)."""

    flag = "--trace"

    @hookimpl(tryfirst=True)
    def bisectkit_session_finish(self, trace: TraceJSON) -> WriteFailed | None:
        target = self.target
        if target is None:
            return None
        return self._write(target, lambda: write_json_atomic(Path(target), dict(trace)))


#: The output formats, by the names ``-p no:NAME`` blocks. pluggy calls the plugins
#: registered last first: the result, then the trace, then the report.
FORMATS: tuple[tuple[str, type[_Output]], ...] = (
    ("markdown-report", MarkdownReport), ("chrome-trace", ChromeTrace),
    ("json-result", JsonResult))


def builtin_outputs(superproject: Repo | None, console: Console) -> list[tuple[str, object]]:
    """The output format plugins, to register in :data:`FORMATS`' order."""
    return [(name, cls(superproject, console)) for name, cls in FORMATS]


def check_not_blocked(option: Any, blocked: Callable[[str], bool]) -> None:
    """An output option given while its writer is blocked (``-p no:json-result``) is
    refused: the run would end without the file the user asked for."""
    for name, cls in FORMATS:
        if getattr(option, dest_of(cls.flag), None) is not None and blocked(name):
            raise BadInput(f"{cls.flag} is written by the built-in plugin '{name}', which "
                           f"-p no:{name} blocks; drop one of the two")
