"""Built-in build and repro: run ``--build`` and the repro command for each step."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from bisectkit import runner
from bisectkit.hookspecs import hookimpl
from bisectkit.runner import Outcome
from bisectkit.step import Step

if TYPE_CHECKING:
    from bisectkit.plugins import Config


class BuildPlugin:
    """Runs ``--build CMD`` (a shell command) in the superproject root."""

    def __init__(self) -> None:
        self._config: Config | None = None

    @hookimpl
    def bisectkit_configure(self, config: Config) -> None:
        self._config = config

    @hookimpl
    def bisectkit_build(self, step: Step) -> Outcome | None:
        config = self._config
        if config is None or config.run is None or not config.run.build:
            return None
        config.console.phase("build", config.run.build)
        return runner.run(["/bin/sh", "-c", config.run.build], cwd=step.workdir, env=step.env,
                          timeout=config.run.timeout, echo=config.console.file)


class ReproPlugin:
    """Runs the repro command given after the options."""

    def __init__(self) -> None:
        self._config: Config | None = None

    @hookimpl
    def bisectkit_configure(self, config: Config) -> None:
        self._config = config

    @hookimpl
    def bisectkit_repro(self, step: Step) -> Outcome | None:
        config = self._config
        if config is None or config.run is None or not config.run.repro:
            return None
        config.console.phase("repro", shlex.join(config.run.repro))
        return runner.run(list(config.run.repro), cwd=step.workdir, env=step.env,
                          timeout=config.run.timeout, echo=config.console.file)
