"""One parallel step, as a worker runs it: a recipe in, outcomes out.

The same function runs in a thread of this process (``--jobs``) and on a Dask
worker (``--scheduler``), so a recipe carries values only: the commits to
check out, how to replay the patch stack where our patched commit does not
exist, where to fetch from, the commands. The worker takes a workspace,
materialises the recipe, builds, runs the repro and returns the raw
:class:`~bisectkit.model.Outcome` of each; classification happens on the
client with its plugins, so a verdict never depends on where a step ran.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO, cast

from bisectkit.errors import Cancelled
from bisectkit.execute import runner
from bisectkit.execute.keptoutput import clean_output
from bisectkit.git import cli as gitcli
from bisectkit.git.repo import Repo
from bisectkit.model import DEFAULT_KEEP, SUPERPROJECT, Outcome
from bisectkit.pipeline.parallel.workspace import Workspace, taken
from bisectkit.safety import undertest
from bisectkit.strategies.base import Replay
from bisectkit.strategies.common import step_env

#: Seconds between two progress reports of one step (a build prints thousands of lines).
_REPORT_EVERY_S = 0.5


class Control(Protocol):
    """What a running step asks of the machinery that started it."""

    def cancelled(self) -> bool:
        """Should the step stop now (its process group killed)?"""

    def progress(self, index: int, where: str, phase: str, line: str) -> None:
        """Step ``index`` is in ``phase`` (checkout, build, repro) on ``where`` (worker and
        workspace); its last output line."""

    def where(self, root: str | None) -> tuple[str, Path]:
        """This worker's name and the folder its workspaces live in (``root`` if given)."""


@dataclass(frozen=True)
class Recipe:
    """Everything a worker needs to test one tree, by value."""

    index: int
    commit: str
    #: ``.`` and submodule paths -> the commit each holds (see ``Prepared.checkouts``).
    checkouts: dict[str, str]
    #: ``.`` and submodule paths -> where to clone and fetch them from (first that works).
    sources: dict[str, list[str]]
    replay: Replay | None = None
    #: Clone with ``--shared`` (this machine: our patched commits are seen at once).
    shared: bool = True
    root: str | None = None
    build: str | None = None
    repro: tuple[str, ...] = ()
    #: The user's superproject: a repro inside it runs from the workspace's copy.
    user_root: str = ""
    #: The step's ``BISECTKIT_*`` variables.
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    keep: int = DEFAULT_KEEP
    #: The rules' patterns: lines of the dropped middle of the output that match are kept.
    watch: tuple[str, ...] = ()
    #: Steps tested at once (``BISECTKIT_JOBS``, to share the machine's cores).
    jobs: int = 1
    #: ``("build",)`` runs the build only (the good-end check of a build that cannot run).
    phases: tuple[str, ...] = ("build", "repro")


@dataclass
class StepResult:
    """What a worker did with a recipe."""

    index: int
    worker: str
    workspace: str
    job: int
    files_written: int
    #: The tree each repository held when tested (checked against the client's).
    trees: dict[str, str]
    prepare_s: float
    build: Outcome | None = None
    repro: Outcome | None = None


def run_step(recipe: Recipe, control: Control) -> StepResult:
    """Take a workspace, materialise ``recipe`` in it, build, run the repro."""
    worker, root = control.where(recipe.root)
    with taken(root) as ws:
        started = time.monotonic()
        where = f"{worker}:{ws.path.name}"
        control.progress(recipe.index, where, "checkout", "")
        written, trees = ws.materialise(recipe.checkouts, recipe.sources, recipe.replay,
                                        recipe.shared)
        result = StepResult(recipe.index, worker, str(ws.path), ws.job, written, trees,
                            round(time.monotonic() - started, 4))
        # Not git's location variables of the user's shell: a git in the build would act
        # on the user's repository, not on this workspace.
        env = {**gitcli.git_env(), **recipe.env,
               **step_env(workspace=str(ws.path), job=ws.job, jobs=recipe.jobs)}
        # A workspace is ours, but a build may still move it (one that updates its own
        # submodules), even and back: what ran must have tested the tree checked out, or
        # no verdict.
        watch = undertest.Watch(_placed(ws, recipe.checkouts), f"workspace {where}: ")
        if recipe.build and "build" in recipe.phases:
            result.build = _phase(recipe, control, where, ws, "build",
                                  ["/bin/sh", "-c", recipe.build], env)
            watch.check(recipe.index, "after the build")
            if not result.build.ok:
                return result
        if recipe.repro and "repro" in recipe.phases:
            result.repro = _phase(recipe, control, where, ws, "repro",
                                  _in_workspace(recipe, ws), env)
            watch.check(recipe.index, "after the repro")
        return result


def _placed(ws: Workspace, keys: Iterable[str]) -> undertest.Placed:
    """Each repository of ``ws`` the recipe checked out, with the commit it holds now."""
    repos = {key: Repo(ws.path if key == SUPERPROJECT else ws.path / key) for key in keys}
    return {key: undertest.Held(repo, repo.worktree.head_state().sha)
            for key, repo in repos.items()}


def _phase(recipe: Recipe, control: Control, where: str, ws: Workspace, phase: str,
           argv: list[str], env: dict[str, str]) -> Outcome:
    if control.cancelled():
        raise Cancelled(f"cancelled before its {phase}")
    sink = _LastLine(lambda line: control.progress(recipe.index, where, phase, line))
    control.progress(recipe.index, where, phase, "")
    watch = [re.compile(p, re.MULTILINE) for p in recipe.watch] if phase == "repro" else []
    return runner.run(argv, cwd=str(ws.path), env=env, timeout=recipe.timeout,
                      echo=cast(TextIO, sink), keep=recipe.keep, watch=watch,
                      cancelled=control.cancelled)


def _in_workspace(recipe: Recipe, ws: Workspace) -> list[str]:
    """The repro, run from the workspace when it is a file of the superproject there."""
    argv = list(recipe.repro)
    prefix = recipe.user_root.rstrip("/") + "/"
    if recipe.user_root and argv[0].startswith(prefix):
        mine = ws.path / argv[0][len(prefix):]
        if mine.is_file():
            argv[0] = str(mine)
    return argv


class _LastLine:
    """A text stream that remembers the last output line and reports it now and then."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report
        self._partial = ""
        self._last = ""
        self._sent = 0.0

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()[-400:]
        done = [line for line in lines if line.strip()]
        if done:
            self._last = clean_output(done[-1])[-200:]
        now = time.monotonic()
        if now - self._sent >= _REPORT_EVERY_S:
            self._sent = now
            self._report(self._last)
        return len(text)

    def flush(self) -> None:
        return None
