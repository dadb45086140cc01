"""Built-in build and repro: run ``--build`` and the repro command for each step."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bisectkit.execute.runner import run as run_command
from bisectkit.model import Outcome, Step, hookimpl

if TYPE_CHECKING:
    from bisectkit.model import Config


class _CommandPlugin:
    """Keeps the run options from ``bisectkit_configure`` and runs one command per step."""

    def __init__(self) -> None:
        self._config: Config | None = None

    @hookimpl
    def bisectkit_configure(self, config: Config) -> None:
        self._config = config

    def _run(self, step: Step, phase: str, argv: list[str], shown: str,
             watch: Sequence[re.Pattern[str]] = ()) -> Outcome:
        config = self._config
        assert config is not None and config.run is not None
        config.console.phase(phase, shown)
        return run_command(argv, cwd=step.workdir, env=step.env, timeout=config.run.timeout,
                           echo=config.console.file, keep=config.run.keep_output, watch=watch)


class BuildPlugin(_CommandPlugin):
    """Runs ``--build CMD`` (a shell command) in the superproject root."""

    @hookimpl
    def bisectkit_build(self, step: Step) -> Outcome | None:
        run = self._config.run if self._config else None
        if run is None or not run.build:
            return None
        return self._run(step, "build", ["/bin/sh", "-c", run.build], run.build)


class ReproPlugin(_CommandPlugin):
    """Runs the repro command given after the options."""

    @hookimpl
    def bisectkit_repro(self, step: Step) -> Outcome | None:
        run = self._config.run if self._config else None
        if run is None or not run.repro:
            return None
        # Lines the rules would match survive the --keep-output cut.
        watch = [p for patterns in run.rules.compiled().values() for p in patterns]
        return self._run(step, "repro", list(run.repro), shlex.join(run.repro), watch)
