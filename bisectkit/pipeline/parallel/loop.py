"""Several steps at once (``--jobs K``, ``--scheduler``): the bisection with k workers.

The engine chooses, for each free worker, the candidate that best splits the
undecided range left by the tests in flight (:func:`bisectkit.engine.schedule`);
the pool runs each as a recipe in a workspace (:mod:`bisectkit.pipeline.parallel.steptask`);
results come back as raw outcomes and are judged here, by the same
:class:`~bisectkit.pipeline.testing.StepTester` rules and plugins as a step
in the user's tree, so a verdict never depends on where it was tested.

A verdict that lands re-bounds the range: a test in flight now outside it is
cancelled (its process group killed) unless it is nearly done, and then its
verdict is recorded (not counted) and cached. When one test finishes and
others are nearly done, the choice waits a moment for them: a choice made
knowing their verdicts splits the range that is really left.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Collection
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any

from bisectkit import engine
from bisectkit.engine import Decision
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.git.shapes.base import add_fetched
from bisectkit.model import CANCELLED, SUPERPROJECT, RunOptions, StepRecord, short
from bisectkit.model.documents import JobRow
from bisectkit.pipeline import descent
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.breaker import SkipBreaker
from bisectkit.pipeline.parallel.pools import Pool
from bisectkit.pipeline.parallel.remote import (
    Job,
    PoolTester,
    checked_result,
    make_recipe,
    uncommitted_build,
    waited,
)
from bisectkit.pipeline.parallel.steptask import StepResult
from bisectkit.pipeline.parallel.workspace import prefetch_trees, sources_of
from bisectkit.pipeline.testing import cleaned
from bisectkit.plugin.facade import Hooks, timed
from bisectkit.safety import signals
from bisectkit.safety.recovery import open_repo
from bisectkit.store.cache import VerdictCache
from bisectkit.strategies.base import Prepared
from bisectkit.strategies.common import initialised_submodules

#: A test that has run this share of the median step time is "nearly done".
_NEARLY_DONE = 0.75
#: How long (a share of the median step time) a choice waits for nearly-done tests.
_GRACE = 0.15


def check_workspaces(hooks: Hooks, opts: RunOptions, superproject: Repo) -> None:
    """Refuse (:class:`BadInput`) a run whose steps cannot run in workspaces: a plugin runs
    the build or the repro in this process, or ``--build`` names a file the superproject
    does not commit. Commands check it before they print anything, too."""
    busy = hooks.runs_commands_itself()
    if busy:
        raise BadInput(f"plugin {', '.join(busy)} runs the build or the repro itself, in "
                       "this process, not on the workers of --jobs/--scheduler: use --jobs "
                       "1 with it")
    # The commit a workspace's superproject holds: the one found at the start of the
    # run (a strategy that moves it starts from there too).
    problem = uncommitted_build(opts.build, superproject, superproject.worktree.head_state().sha)
    if problem:
        raise BadInput(problem)


class ParallelBisection(Bisection):
    """A :class:`Bisection` whose steps run on a :class:`Pool`, several at once."""

    def __init__(self, b: Bisection, pool: Pool, opts: RunOptions) -> None:
        # The serial loop's parts, shared (its session, hooks, trace), not copied.
        super().__init__(b.superproject, b.store, b.session, b.hooks, b.mover, parts=b.parts)
        check_workspaces(self.hooks, opts, self.superproject)
        self.pool, self.opts = pool, opts
        self.tester = PoolTester(self.parts, self.run_at)
        self.jobs: dict[int, Job] = {}
        self._stopped: list[Future[StepResult]] = []
        self._durations: list[float] = []
        self._last_index = 0
        # The loop announces each step it starts: the manual session's own announcement
        # would be forgotten at the first.
        self._announced_before = self.session.announced
        self._tracks: dict[str, int] = {}
        self._base = self._pinned()
        self.sources = {key: sources_of(open_repo(self.superproject, key).workdir)
                        for key in {SUPERPROJECT, *self._base}}

    # -- the loop ------------------------------------------------------------------
    def run(self, cache: VerdictCache | None, breaker: SkipBreaker | None = None) -> Decision:
        """Test candidates, up to ``pool.slots`` at once, until the answer is known; the
        ``breaker`` counts the steps in the order they finish."""
        try:
            while True:
                decision = self._fill(cache)
                if decision is not None:
                    return decision
                for job, future in self._next_done():
                    record = self._finish(job, future, cache)
                    if breaker is not None:
                        breaker.tested(record)
        finally:
            signals.run_shielded(self.stop_all)

    def _fill(self, cache: VerdictCache | None) -> Decision | None:
        """Give every free worker a candidate; the answer once nothing is left to test."""
        while True:
            verdicts = self.session.verdict_map()
            self._cancel_outside(verdicts)
            flying = [j.commit for j in self.jobs.values() if j.source == "run"]
            free = max(self.pool.slots - len(self.jobs), 0)
            plan = self.search.schedule(self.session.candidates, verdicts, flying, free,
                                        self.pool.slots)
            if not isinstance(plan, engine.Picks):
                if descent.descend(self.parts, plan):
                    continue  # --all-parents: the commits of a merge found bad are next
                self.stop_all()  # the answer is known: nothing in flight can change it
                self.session.current = None
                self.store.save(self.session)
                return plan
            if not plan.commits:
                return None
            for commit in plan.commits:
                index = self.index_for(commit)
                prep = self.unbuilt(commit, index, plan.remaining, plan.rounds_left, cache)
                if prep is None:
                    break  # decided unbuilt: a new verdict, so choose again
                self.hooks.prepared(index, prep.details, None)
                self._dispatch(index, commit, prep, "run")
            else:
                return None

    def _next_done(self) -> list[tuple[Job, Future[StepResult]]]:
        """Wait for a step to finish (and briefly for others that are nearly done)."""
        by_future = {j.future: j for j in self.jobs.values()}
        done = self._waited(by_future)
        median = statistics.median(self._durations) if self._durations else None
        if median is not None:
            now = time.monotonic()
            soon = [f for f, j in by_future.items()
                    if f not in done and now - j.started >= _NEARLY_DONE * median]
            if soon:
                more, _ = wait(soon, timeout=_GRACE * median)
                done |= more
        return sorted(((by_future[f], f) for f in done), key=lambda pair: pair[0].index)

    # -- one step --------------------------------------------------------------------
    def next_index(self) -> int:
        self._last_index = max(self.session.next_step_index(), self._last_index + 1)
        return self._last_index

    def index_for(self, commit: str) -> int:
        """The number ``commit`` was announced with before this loop (the candidate a
        manual session checked out), while no step in flight or recorded has it; else a
        new number (after those handed out to steps in flight)."""
        if self._announced_before is not None and self._announced_before[0] == commit:
            index = self._announced_before[1]
            if index not in self.jobs and all(st.index != index for st in self.session.steps):
                return index
        return self.next_index()

    def _dispatch(self, index: int, commit: str, prep: Prepared, source: str,
                  phases: tuple[str, ...] = ("build", "repro")) -> Job:
        step = self.parts.new_step(index, commit, prep)
        if phases == ("build", "repro"):
            self.parts.call_step_hook(step, lambda: self.hooks.step_start(step))
        add_fetched(prep.details, prefetch_trees(Path(self.session.root), self.checkouts(prep)))
        future, control = self.pool.submit(make_recipe(
            self.opts, self.pool, self.session.root, index, commit, prep, self.checkouts(prep),
            self.sources, phases))
        job = Job(index, commit, prep, step, source, future, control,
                  trace_start=self.tracer.now())
        self.jobs[index] = job
        return job

    def _finish(self, job: Job, future: Future[StepResult],
                cache: VerdictCache | None) -> StepRecord:
        """Judge and record a finished step."""
        self._forget(job)
        result = checked_result(job, future, self._expected(job.prep), self.pool)
        self._durations.append(time.monotonic() - job.started)
        self._trace(job, result)
        details = {**job.prep.details, "files_written": result.files_written,
                   "prepare_s": result.prepare_s, "worker": result.worker,
                   "workspace": result.workspace, "job": result.job}
        job.step.workdir = result.workspace
        timed(job.step, result.build)  # (the repro's outcome is marked when classified)
        tested = self.tester.conclude(job.step, cleaned(result.build),
                                      lambda: cleaned(result.repro), details)
        affects = job.source != "run" or job.commit not in self.search.outside(
            self.session.candidates, self.session.verdict_map(), [job.commit])
        if job.source == "run" and not affects:
            tested = (*tested[:2], f"{tested[2]}; outside the range by then, not counted",
                      tested[3])
        return self._recorded(job.commit, job.prep, cache, tested,
                              job.source, affects=job.source == "run" and affects)

    def test_commit(self, commit: str, prep: Prepared, cache: VerdictCache | None,
                    source: str) -> StepRecord:
        """An extra step (verify, check-stack, confirm), run on the pool and waited for."""
        hit = cache.get(prep.trees) if cache is not None and prep.trees else None
        if hit is not None:
            return super().test_commit(commit, prep, cache, source)  # recorded unbuilt
        job = self._dispatch(self.next_index(), commit, prep, source)
        self._waited([job.future])
        return self._finish(job, job.future, cache)

    def run_at(self, commit: str, prep: Prepared, phases: tuple[str, ...]) -> StepResult:
        """Run ``phases`` at ``commit`` on the pool now (the good-end check); no record."""
        job = self._dispatch(self.next_index(), commit, prep, "check", phases)
        self._waited([job.future])
        self._forget(job)
        return checked_result(job, job.future, self._expected(job.prep), self.pool)

    # -- cancelling --------------------------------------------------------------------
    def _cancel_outside(self, verdicts: dict[str, Any]) -> None:
        """Cancel tests in flight that can no longer change the answer, unless nearly done."""
        flying = [j.commit for j in self.jobs.values() if j.source == "run"]
        gone = set(self.search.outside(self.session.candidates, verdicts, flying))
        median = statistics.median(self._durations) if self._durations else None
        for job in [j for j in self.jobs.values() if j.commit in gone and j.source == "run"]:
            nearly = median is not None and \
                time.monotonic() - job.started >= _NEARLY_DONE * median
            if not nearly:
                self._cancel(job)

    def _cancel(self, job: Job) -> None:
        self.pool.cancel(job.control, job.future)
        self._forget(job)
        self._stopped.append(job.future)
        self.hooks.phase(job.index, CANCELLED)  # the summary counts it as such
        self.hooks.message(f"step {job.index} ({short(job.commit)}) {CANCELLED}: its verdict can "
                           "no longer change the answer", "note")

    def _forget(self, job: Job) -> None:
        """``job`` no longer holds a slot here nor a row of the live table."""
        self.jobs.pop(job.index, None)
        self.pool.done(job.index)

    def stop_all(self) -> None:
        """Cancel every step in flight and wait until each has stopped (its processes
        killed, its workspace released)."""
        for job in list(self.jobs.values()):
            self.pool.cancel(job.control, job.future)
            self._stopped.append(job.future)
        self.jobs.clear()
        wait(self._stopped, timeout=30)
        self._stopped = [f for f in self._stopped if not f.done()]
        self.hooks.jobs([])

    # -- helpers ---------------------------------------------------------------------
    def _waited(self, futures: Collection[Future[StepResult]]) -> set[Future[StepResult]]:
        return waited(self.pool, futures, lambda text: self.hooks.message(text, "note"),
                      self._show)

    def _show(self) -> None:
        now = time.monotonic()
        rows: list[JobRow] = []
        for job in sorted(self.jobs.values(), key=lambda j: j.index):
            seen = self.pool.progress.get(job.index)
            rows.append({"index": job.index, "commit": job.commit,
                         "subject": self.strategy.describe(job.commit).subject,
                         "phase": seen.phase if seen else "queued",
                         "where": seen.where if seen else "",
                         "elapsed": now - (seen.since if seen else job.started),
                         "line": seen.line if seen else ""})
        self.hooks.jobs(rows)

    def _trace(self, job: Job, result: StepResult) -> None:
        """The step on its worker's track (one track per worker and workspace)."""
        name = f"{result.worker} {result.workspace}"
        track = self._tracks.setdefault(name, 1000 + len(self._tracks))
        self.tracer.name_track(track, name)
        self.tracer.complete(f"step {job.index}: {short(job.commit)}", track, job.trace_start,
                             self.tracer.now(), source=job.source,
                             build_s=result.build.duration if result.build else None,
                             repro_s=result.repro.duration if result.repro else None)

    def _pinned(self) -> dict[str, str]:
        """Every initialised submodule at the commit the user's tree holds: a workspace
        is the whole superproject, not only the submodules the strategy moves."""
        orig = self.session.orig
        return {p: orig[p].sha if p in orig
                else open_repo(self.superproject, p).worktree.head_state().sha
                for p in initialised_submodules(self.superproject)}

    def _expected(self, prep: Prepared) -> dict[str, str]:
        """The tree each repository of a workspace must hold to test ``prep``."""
        return {key: open_repo(self.superproject, key).tree_of(sha)
                for key, sha in self.checkouts(prep).items()}

    def checkouts(self, prep: Prepared) -> dict[str, str]:
        """What a workspace holds to test ``prep``: every initialised submodule (as the
        user has it, unless the strategy moves it) and the superproject."""
        return {**self._base, **prep.checkouts}
