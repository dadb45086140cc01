"""Parallel steps, one at a time: what is sent (a recipe), what comes back (checked),
and the step tester whose good-end check runs on the pool too."""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field

from bisectkit.errors import BisectkitError, Cancelled, InfrastructureFailed
from bisectkit.git.repo import Repo
from bisectkit.model import Outcome, RunOptions, Step, short
from bisectkit.pipeline.parallel.cluster import killed_worker
from bisectkit.pipeline.parallel.pools import Pool
from bisectkit.pipeline.parallel.steptask import Control, Recipe, StepResult
from bisectkit.pipeline.parts import RunParts
from bisectkit.pipeline.testing import StepTester, cleaned
from bisectkit.strategies.base import Prepared
from bisectkit.strategies.common import step_env

#: Seconds between two refreshes of the live table (and looks at the pool) while waiting.
_TICK_S = 0.5


@dataclass
class Job:
    """A step in flight."""

    index: int
    commit: str
    prep: Prepared
    step: Step
    source: str
    future: Future[StepResult]
    control: Control
    started: float = field(default_factory=time.monotonic)
    trace_start: float = 0.0


def make_recipe(opts: RunOptions, pool: Pool, user_root: str, index: int, commit: str,
                prep: Prepared, checkouts: dict[str, str], sources: dict[str, list[str]],
                phases: tuple[str, ...]) -> Recipe:
    """Step ``index`` testing ``prep`` as a recipe a worker can follow anywhere."""
    watch = tuple(p.pattern for ps in opts.rules.compiled().values() for p in ps)
    return Recipe(index=index, commit=commit, checkouts=checkouts, sources=sources,
                  replay=prep.replay, shared=pool.shared, root=pool.root,
                  build=opts.build, repro=opts.repro, user_root=user_root,
                  env={**prep.env, **step_env(step=index)}, timeout=opts.timeout,
                  keep=opts.keep_output, watch=watch, jobs=pool.slots, phases=phases)


def uncommitted_build(build: str | None, superproject: Repo, commit: str) -> str | None:
    """Why ``--build`` cannot run in a workspace: it starts with a relative path to a file
    the superproject does not commit (a workspace holds committed files only)."""
    try:
        first = shlex.split(build or "")[:1]
    except ValueError:
        return None
    if not first or "/" not in first[0] or os.path.isabs(first[0]):
        return None
    root = superproject.workdir.resolve()
    try:
        rel = (root / first[0]).resolve().relative_to(root)
    except ValueError:
        return None  # outside the superproject: it runs as it is, from the workspace
    if superproject.trees.blob_at(superproject.tree_of(commit), rel.as_posix()) is not None:
        return None
    return (f"--build starts with {first[0]}, which the superproject does not commit: "
            "a workspace holds committed files only; commit it, or give its absolute path "
            f"({root / rel})")


def waited(pool: Pool, futures: Collection[Future[StepResult]], say: Callable[[str], None],
           show: Callable[[], None]) -> set[Future[StepResult]]:
    """Wait until one of ``futures`` is done; meanwhile the live table is refreshed and the
    pool's notes said, before the results they explain (raises when the pool cannot go
    on: no step waits forever)."""
    while True:
        done, _ = wait(futures, timeout=_TICK_S, return_when=FIRST_COMPLETED)
        for note in pool.poll():
            say(note)
        show()
        if done:
            return done


def checked_result(job: Job, future: Future[StepResult], expected: dict[str, str],
                   pool: Pool) -> StepResult:
    """The worker's result, checked: it is this step's, and the trees it tested are the
    ``expected`` ones. A failure of the machinery is never a verdict. (A step bisectkit
    cancelled is never asked: cancelled here, the pool did it.)"""
    error = None if future.cancelled() else future.exception()
    if future.cancelled() or isinstance(error, Cancelled):
        pool.poll()  # the scheduler is gone, say
        raise InfrastructureFailed(f"step {job.index} ({short(job.commit)}) was cancelled by "
                                   f"{pool.description}, not by bisectkit; no verdict was "
                                   "taken from it")
    if isinstance(error, BisectkitError):
        raise error
    if error is not None and type(error).__name__ == "KilledWorker":
        raise killed_worker(job.index, job.commit, error) from error
    if error is not None:
        raise InfrastructureFailed(
            f"step {job.index} ({short(job.commit)}) could not run: {type(error).__name__}: "
            f"{error}; no verdict was taken from it") from error
    result = future.result()
    if result.index != job.index:
        raise InfrastructureFailed(f"step {job.index}: the result of step {result.index} came "
                                   "back in its place; no verdict was taken from it")
    for key, want in expected.items():
        if result.trees.get(key) != want:
            raise InfrastructureFailed(
                f"step {job.index}: {result.worker} tested tree "
                f"{short(result.trees.get(key) or '?')} for {key}, not {short(want)}; no "
                "verdict is taken from a tree that differs")
    return result


#: Runs phases of a commit on the pool, now (and waits for them).
RunAt = Callable[[str, Prepared, tuple[str, ...]], StepResult]


class PoolTester(StepTester):
    """The good-end double check (exit 126/127) runs on the pool too."""

    def __init__(self, parts: RunParts, run_at: RunAt) -> None:
        super().__init__(parts)
        self.run_at = run_at

    def _phases_at(self, good: str, prep: Prepared, phase: str, step: Step
                   ) -> tuple[Outcome | None, Outcome | None]:
        """The build (and repro) at the good end as a step on the pool; the worker runs the
        repro only when the build passed, as a local check does."""
        phases = ("build",) if phase == "build" else ("build", "repro")
        result = self.run_at(good, prep, phases)
        return cleaned(result.build), cleaned(result.repro)
