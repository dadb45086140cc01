"""What every command gets from the entry point: the console, the plugins, the superproject,
the run options (typed), and the parser the command line was read with."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from bisectkit.cli.requests import RunFlags
from bisectkit.engine import Found
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import Config, RunOptions
from bisectkit.pipeline import outputs
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.lifecycle import Run
from bisectkit.plugin.facade import Hooks
from bisectkit.store.session import Session, SessionStore
from bisectkit.ui.console import Console


@dataclass
class Context:
    """Everything a command needs, prepared by the entry point (:mod:`bisectkit.app`)."""

    console: Console
    pm: pluggy.PluginManager
    config: Config
    superproject: Repo | None
    #: The program's parser, as the command line was read (``help`` lists its commands).
    parser: argparse.ArgumentParser
    #: Why there is no ``superproject`` (not inside a repository, a bare one): what
    #: :meth:`open` says.
    outside: BadInput | None = None
    #: The command line as typed (for "reproduce with" in reports).
    command: str = ""
    #: ``--force-ignored``: set aside untracked files in a candidate's way.
    force_ignored: bool = False
    #: ``--deepen``: fetch what a shallow clone lacks before starting, not stop.
    deepen: bool = False
    #: ``-p`` specs given on the command line.
    plugin_specs: tuple[str, ...] = ()
    #: The repro's words as typed (before the repro was resolved to a path).
    typed_repro: tuple[str, ...] = ()
    #: ``run``'s output files and extra checks.
    flags: RunFlags = field(default_factory=RunFlags)
    #: ``bisectkit run --then-actions``: the work done at the first bad commit, once found
    #: (its JSON joins the result), and its words for follow-up commands.
    then: Callable[[Bisection, Found], dict[str, Any]] | None = None
    then_words: tuple[str, ...] = ()
    #: The typed facade over ``pm``.
    hooks: Hooks = field(init=False)

    def __post_init__(self) -> None:
        self.hooks = Hooks(self.pm)

    @property
    def options(self) -> RunOptions:
        """The run options (``run`` commands only)."""
        assert self.config.run is not None
        return self.config.run

    def deepener(self) -> Callable[[str], None] | None:
        """What ``new_session`` notes each deepening fetch with (None: no ``--deepen``)."""
        return self.console.line if self.deepen else None

    def open(self) -> tuple[Repo, SessionStore]:
        if self.superproject is None:
            raise self.outside or BadInput(f"not inside a git repository: {Path.cwd()}")
        return self.superproject, SessionStore(self.superproject.git_dir)

    def run(self, sp: Repo) -> Run:
        """The owner of this command's changes (enter it to take the lock)."""
        return Run(sp, self.hooks, self.command, force_ignored=self.force_ignored)

    def check_outputs(self, sp: Repo, session: Session) -> None:
        """Refuse, before anything moves, an output file (or local workspace root) inside a
        repository ``session`` moves or over a file it tracks (exit 2)."""
        parallel = self.options.parallel
        local_root = parallel.workspace_root if not parallel.scheduler else None
        outputs.outside_moved(self.flags.outputs(), sp, session, local_root)

    def check_workspaces(self, sp: Repo) -> None:
        """Refuse, before anything is printed or moves, a run on workspaces (``--jobs``,
        ``--scheduler``) that cannot run there (exit 2)."""
        if self.options.parallel.enabled:
            # Imported here: a process that runs no workspaces (every 'good', 'bad' or
            # 'status' of a session) need not load them (and asyncio with them).
            from bisectkit.pipeline.parallel.loop import check_workspaces

            check_workspaces(self.hooks, self.options, sp)

    def reader(self, sp: Repo, store: SessionStore) -> Bisection:
        """The session started (:class:`~bisectkit.commands.state.Started`), for commands
        that only read it (no lock, moves nothing)."""
        return Bisection(sp, store, store.load(), self.hooks, None)
