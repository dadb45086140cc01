"""Where parallel steps run: threads over local workspaces, or a Dask cluster.

Both are a :class:`concurrent.futures.Executor` (Dask's ``Client.get_executor()``
is one) plus a :class:`~bisectkit.pipeline.parallel.steptask.Control` per step: a way to cancel
it (its process group killed wherever it runs) and to hear its progress. The
scheduling in :mod:`bisectkit.pipeline.parallel.loop` is one code path for both.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from bisectkit.errors import BadInput
from bisectkit.model import Parallel
from bisectkit.pipeline.parallel.cluster import (
    ClusterWatch,
    SchedulerLost,
    quiet_dask,
    silence_s,
    words,
)
from bisectkit.pipeline.parallel.daskclient import answer_s, connect, dask, worker_ttl_s
from bisectkit.pipeline.parallel.steptask import Control, Recipe, StepResult, run_step
from bisectkit.pipeline.parallel.wsroot import foreign
from bisectkit.text import plural

#: Seconds between two looks at a cluster step's cancel flag (each is a round trip).
_CANCEL_POLL_S = 1.0


@dataclass
class Progress:
    """What the live table shows of one step in flight."""

    phase: str = "queued"
    line: str = ""
    #: ``worker:ws-N`` once a worker took the step.
    where: str = ""
    since: float = field(default_factory=time.monotonic)


class Pool:
    """Runs recipes on ``slots`` workers; tells their progress; cancels them."""

    #: How many steps run at once.
    slots: int
    executor: Executor
    #: Clone workspaces with ``--shared`` (the user's objects are on this machine).
    shared: bool
    #: The workspace root given to the workers (None: each worker's default).
    root: str | None
    #: Shown in the header: "3 local workspaces under ...", "Dask cluster at ...".
    description: str

    def __init__(self) -> None:
        self.progress: dict[int, Progress] = {}
        self._lock = threading.Lock()

    def submit(self, recipe: Recipe) -> tuple[Future[StepResult], Control]:
        """Start ``recipe`` on a free worker."""
        control = self.control(recipe.index)
        self.progress[recipe.index] = Progress()
        return self.executor.submit(run_step, recipe, control), control

    def control(self, index: int) -> Control:
        raise NotImplementedError

    def poll(self) -> list[str]:
        """While steps wait: notes to print (a lost worker's step runs again); raises when
        the run cannot go on (the scheduler is lost, no worker for too long)."""
        return []

    def cancel(self, control: Control, future: Future[StepResult]) -> None:
        """Stop a step: its process group is killed where it runs."""
        raise NotImplementedError

    def heard(self, index: int, where: str, phase: str, line: str) -> None:
        """A step's progress report (from a thread or a cluster event)."""
        with self._lock:
            known = self.progress.get(index)
            if known is None:
                return
            known.where = where
            if phase != known.phase:
                known.phase, known.since = phase, time.monotonic()
            known.line = line or known.line

    def done(self, index: int) -> None:
        with self._lock:
            self.progress.pop(index, None)

    def close(self) -> None:
        """Stop every worker thread or the cluster connection (steps already cancelled)."""
        self.executor.shutdown(wait=True)


class _LocalControl:
    """A thread's step: an :class:`threading.Event` to cancel, the pool's table to report to."""

    def __init__(self, pool: LocalPool) -> None:
        self._pool = pool
        self._stop = threading.Event()

    def cancelled(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def progress(self, index: int, where: str, phase: str, line: str) -> None:
        self._pool.heard(index, where, phase, line)

    def where(self, root: str | None) -> tuple[str, Path]:
        return "local", Path(root or self._pool.root or ".")


class LocalPool(Pool):
    """``--jobs K``: K threads, each step in the first free local workspace."""

    def __init__(self, jobs: int, root: Path) -> None:
        super().__init__()
        self.slots = jobs
        self.shared = True
        self.root = str(root)
        self.description = f"{jobs} local workspaces under {root}"
        self.executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bisectkit-job")

    def control(self, index: int) -> Control:
        return _LocalControl(self)

    def cancel(self, control: Control, future: Future[StepResult]) -> None:
        future.cancel()
        assert isinstance(control, _LocalControl)
        control.stop()


@dataclass
class DaskControl:
    """A cluster step's control, sent to the worker by value (hence only names)."""

    #: Names the ``distributed.Event`` that cancels the step and the progress topic.
    name: str
    topic: str
    _checked: float = 0.0
    _said: bool = False

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._said and now - self._checked >= _CANCEL_POLL_S:
            self._checked = now
            event = dask().Event(self.name)
            self._said = bool(event.is_set())
            if self._said:
                event.clear()  # seen: the scheduler forgets it (the client no longer can)
        return self._said

    def progress(self, index: int, where: str, phase: str, line: str) -> None:
        dask().get_worker().log_event(self.topic, {"index": index, "where": where,
                                                   "phase": phase, "line": line})

    def where(self, root: str | None) -> tuple[str, Path]:
        name = str(dask().get_worker().name)
        base = root or os.environ.get("BISECTKIT_WORKER_ROOT") or \
            str(Path.home() / ".cache" / "bisectkit" / "workspaces")
        # One folder per worker: two workers of one machine never share a workspace.
        return name, Path(base) / re.sub(r"[^A-Za-z0-9._-]+", "_", name)


class DaskPool(Pool):
    """``--scheduler ADDRESS``: steps as tasks of a Dask ``distributed`` cluster."""

    def __init__(self, settings: Parallel, run_id: str, step_timeout: float | None = None
                 ) -> None:
        super().__init__()
        try:
            dask()
        except ImportError as exc:
            raise BadInput("--scheduler needs Dask: pip install 'bisectkit[dask]'") from exc
        self._loud = quiet_dask()
        try:
            self.client: Any = connect(str(settings.scheduler))
        except BadInput:
            self._loud()
            raise
        try:
            self._start(settings, run_id, step_timeout)
        except BaseException:
            self.client.close(timeout=answer_s())
            self._loud()
            raise

    def _start(self, settings: Parallel, run_id: str, step_timeout: float | None) -> None:
        self._run = run_id
        self.topic = f"bisectkit-{run_id}"
        self.shared = False
        self.root = settings.workspace_root
        resources = dict(settings.resources) or None
        self.watch = ClusterWatch(self.client, str(settings.scheduler), resources,
                                  settings.no_workers_timeout, answer_s(),
                                  silence_s(worker_ttl_s(), step_timeout))
        self.executor = self.client.get_executor(pure=False, resources=resources)
        threads = self.watch.count()
        # --jobs caps what one run asks of a shared cluster; by default, all it offers.
        self.slots = settings.jobs if settings.jobs > 1 else max(1, threads)
        having = f" with {words(resources)}" if resources else ""
        waiting = "; none yet: the steps wait for workers" if not threads else ""
        self.description = (f"the Dask cluster at {settings.scheduler} ("
                            f"{plural(threads, 'worker thread')}{having}{waiting})")
        self.client.subscribe_topic(self.topic, self._on_event)
        self.client.subscribe_topic("all", self.watch.on_event)
        #: The cancel events of the steps: those set are the workers' to clear.
        self._events: dict[str, bool] = {}

    def _on_event(self, event: tuple[float, dict[str, Any]]) -> None:
        msg = event[1]
        self.heard(int(msg["index"]), str(msg["where"]), str(msg["phase"]), str(msg["line"]))

    def submit(self, recipe: Recipe) -> tuple[Future[StepResult], Control]:
        """Start ``recipe`` as a task named after its cancel event (the scheduler's events
        name it when its worker is lost)."""
        self.watch.check()  # a lost scheduler: said now, not as a step that never starts
        control = self.control(recipe.index)
        assert isinstance(control, DaskControl)
        self.progress[recipe.index] = Progress()
        self.watch.track(control.name, recipe.index, recipe.commit)
        # Dask's executor hands key= on to Client.submit.
        future = cast(Any, self.executor).submit(run_step, recipe, control, key=control.name)
        return future, control

    def control(self, index: int) -> Control:
        name = f"bisectkit-{self._run}-{index}-{time.monotonic_ns()}"
        self._events[name] = False
        return DaskControl(name, self.topic)

    def poll(self) -> list[str]:
        return self.watch.poll()

    def done(self, index: int) -> None:
        super().done(index)
        self.watch.forget(index)

    def cancel(self, control: Control, future: Future[StepResult]) -> None:
        assert isinstance(control, DaskControl)
        future.cancel()
        if self.watch.connected():  # else the worker stops when it finds the scheduler gone
            with contextlib.suppress(SchedulerLost):
                self.watch.ask(self.client.scheduler.event_set, name=control.name)
                self._events[control.name] = True

    def close(self) -> None:
        try:
            if self.watch.connected():  # else nothing is there to tidy, nor to answer
                with contextlib.suppress(SchedulerLost, OSError):
                    for name in [n for n, was_set in self._events.items() if not was_set]:
                        self.watch.ask(self.client.scheduler.event_clear, name=name)
                    self.client.unsubscribe_topic(self.topic)
                    self.client.unsubscribe_topic("all")
        finally:
            try:  # a lost scheduler has nothing to say goodbye to
                self.client.close(timeout=answer_s() if self.watch.connected() else 5)
            finally:
                self._loud()


def open_pool(settings: Parallel, default_root: Path, run_id: str,
              step_timeout: float | None = None) -> Pool:
    """The pool ``settings`` ask for (``--scheduler``, else ``--jobs`` local workspaces);
    ``step_timeout`` (``--timeout``) bounds how long a cluster worker may stay silent."""
    if settings.scheduler:
        return DaskPool(settings, run_id, step_timeout)
    root = Path(settings.workspace_root) if settings.workspace_root else default_root
    strangers = foreign(root) if root.is_dir() else []
    if strangers:
        raise BadInput(f"--workspace-root {root}: {strangers[0]} is not a bisectkit workspace "
                       "(bisectkit did not make it); move it away or choose another root")
    return LocalPool(settings.jobs, root)
