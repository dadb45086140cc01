"""A Dask cluster's faults as a run meets them: lost workers, no worker, a lost scheduler.

Dask runs a task whose worker died again on another worker by itself, and gives up
on it (``KilledWorker``) once workers died under it more than the scheduler's
``distributed.scheduler.allowed-failures``. What it does not do is say so, stop
waiting when no worker is left, or tell its client more than "cancelled" when the
scheduler goes: :class:`ClusterWatch` does, for :class:`~.pools.DaskPool`.
It hears the scheduler's ``remove-worker`` events (the steps each lost worker was
running), counts the workers able to run a step, and bounds every question it
asks the scheduler in time.

A stopped worker (SIGSTOP, a frozen machine, a cut network) keeps its connection open;
only its heartbeats stop, and the scheduler's ``worker-ttl`` check (every 5 minutes)
drops it within twice that. The watch times each worker's silence itself (its
``last_seen`` unchanged, on this machine's clock) and has a silent worker that runs a
step removed after :func:`silence_s`, as the scheduler's ``worker-ttl`` would.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from bisectkit.errors import InfrastructureFailed
from bisectkit.model import short
from bisectkit.text import plural

#: Seconds between two counts of the workers (each is a round trip to the scheduler).
_LOOK_EVERY_S = 2.0
#: Seconds without a worker before saying that the steps wait (a nanny restarts a
#: killed worker in about a second: not worth a line).
_SAY_AFTER_S = 3.0
#: The least silence that a --timeout allows a worker (a checkout of a huge tree may hold
#: its event loop for a while): shorter, healthy workers would be lost.
_SILENCE_FLOOR_S = 60.0
#: The loggers to which ``distributed`` attaches its stderr handler.
_DASK_LOGGERS = ("distributed", "tornado", "tornado.application", "bokeh")


class SchedulerLost(InfrastructureFailed):
    """The connection to the Dask scheduler closed, or it stopped answering (exit 3)."""

    def __init__(self, address: str, why: str) -> None:
        super().__init__(f"lost the Dask scheduler at {address}: {why}; no verdict was taken "
                         "from the steps in flight; restart it and its workers, or run "
                         "without --scheduler")


class NoWorkers(InfrastructureFailed):
    """Steps waited ``--no-workers-timeout`` seconds with no worker able to run them."""


def capacity(workers: Iterable[dict[str, Any]], resources: dict[str, float] | None) -> int:
    """Steps the workers (the scheduler's ``identity()["workers"]`` values) can run at
    once; with ``resources``, only the workers that have them count, each as many times as
    it holds them (at most its threads)."""
    if not resources:
        return sum(int(w.get("nthreads", 1)) for w in workers)
    return sum(min(int(w.get("nthreads", 1)),
                   min(int(w.get("resources", {}).get(k, 0) // v) for k, v in resources.items()))
               for w in workers)


def silence_s(worker_ttl: float | None, step_timeout: float | None) -> float | None:
    """How long a worker running a step may send no heartbeat before the run has it
    removed: ``distributed.scheduler.worker-ttl`` (as configured here), or ``--timeout``
    (at least :data:`_SILENCE_FLOOR_S`) when shorter; None: no bound of the run's own."""
    bounds = [b for b in (worker_ttl, step_timeout and max(step_timeout, _SILENCE_FLOOR_S))
              if b]
    return min(bounds) if bounds else None


def _heartbeat_s(workers: int) -> float:
    """Seconds between two heartbeats of a worker among ``workers`` (as
    ``distributed.scheduler.heartbeat_interval``): a bound is never under ten of them."""
    return 0.5 if workers <= 10 else 1.0 if workers < 50 else 2.0 if workers < 200 else \
        workers / 200 + 1


class ClusterWatch:
    """What a run knows of its cluster's health: notes to print, or the error that stops it.

    ``on_event`` runs on Dask's event-loop thread; everything else on the run's thread.
    """

    def __init__(self, client: Any, address: str, resources: dict[str, float] | None,
                 patience: float, answer_s: float, silence: float | None = None) -> None:
        self.client = client
        self.address = address
        self._resources = resources
        #: ``--no-workers-timeout``.
        self._patience = patience
        #: How long the scheduler may take to answer a question.
        self._answer_s = answer_s
        self._lock = threading.Lock()
        #: Task key -> (step index, commit) of the steps in flight.
        self._steps: dict[str, tuple[int, str]] = {}
        self._notes: list[str] = []
        #: Worker address -> name, as last counted.
        self._names: dict[str, str] = {}
        self._looked = 0.0
        self._none_since: float | None = None
        self._said = False
        #: Why the scheduler is lost (once it is, nothing more is asked of it).
        self._lost: str | None = None
        #: How long a worker running a step may stay silent (:func:`silence_s`).
        self._silence = silence
        #: Worker address -> (its ``last_seen`` as last told, when that value was first told).
        self._heard: dict[str, tuple[object, float]] = {}
        #: Silent workers the scheduler was asked to remove -> when.
        self._dropped: dict[str, float] = {}

    # -- steps in flight -------------------------------------------------------------
    def track(self, key: str, index: int, commit: str) -> None:
        with self._lock:
            self._steps[key] = (index, commit)

    def forget(self, index: int) -> None:
        with self._lock:
            for key in [k for k, (i, _) in self._steps.items() if i == index]:
                del self._steps[key]

    def on_event(self, event: tuple[float, dict[str, Any]]) -> None:
        """A scheduler event of the ``all`` topic: a removed worker's steps run again."""
        msg = event[1]
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker":
            return
        address = str(msg.get("worker", "?"))
        keys = {*msg.get("processing-tasks", ()), *msg.get("lost-computed-tasks", ())}
        name = self._names.get(address)
        who = f"{name} ({address})" if name else address
        with self._lock:
            for key in sorted(k for k in keys if k in self._steps):
                index, commit = self._steps[key]
                self._notes.append(f"step {index} ({short(commit)}) runs again: its worker "
                                   f"{who} was lost; no verdict was taken from the lost run")

    # -- health ----------------------------------------------------------------------
    def connected(self) -> bool:
        """Is the scheduler there to ask (not known lost)?"""
        return self._lost is None and self.client.status == "running"

    def check(self) -> None:
        """Raises :class:`SchedulerLost` once the connection to the scheduler closed (Dask
        has then cancelled every task of this client) or it stopped answering."""
        if self._lost is None and self.client.status != "running":
            self._lost = "the connection closed"
        if self._lost is not None:
            raise SchedulerLost(self.address, self._lost)

    def poll(self) -> list[str]:
        """Notes to print; raises :class:`SchedulerLost` or :class:`NoWorkers` when the
        run cannot go on."""
        self.check()
        now = time.monotonic()
        if now - self._looked >= _LOOK_EVERY_S:
            self._looked = now
            self._count(now)
            self._drop_silent(now)
        with self._lock:
            notes, self._notes = self._notes, []
            waiting = bool(self._steps)
        if not waiting:
            self._none_since = None
        elif self._none_since is not None:
            notes += self._still_none(now - self._none_since)
        return notes

    def count(self) -> int:
        """Steps the cluster's workers can run at once, asked now."""
        info = self.ask(self.client.scheduler.identity)  # every worker (older Dask: always)
        workers = dict(info.get("workers", {}))
        self._names.update({a: str(w.get("name", a)) for a, w in workers.items()})
        now = time.monotonic()
        told = {a: w.get("last_seen") for a, w in workers.items()}
        self._heard = {a: self._heard[a] if a in self._heard and self._heard[a][0] == seen
                       else (seen, now) for a, seen in told.items()}
        self._dropped = {a: t for a, t in self._dropped.items() if a in told}
        return capacity(workers.values(), self._resources)

    def _drop_silent(self, now: float) -> None:
        """Have the scheduler remove each worker silent for the bound that runs a step of
        this run (its steps then run again elsewhere, said by its ``remove-worker`` event)."""
        if self._silence is None:
            return
        bound = max(self._silence, 10 * _heartbeat_s(len(self._heard)))
        silent = [a for a, (_, since) in self._heard.items() if now - since > bound]
        with self._lock:
            ours = dict(self._steps)
        if not silent or not ours:
            return
        try:
            busy = self.ask(self.client.scheduler.processing, workers=silent)
        except KeyError:
            return  # one left meanwhile: looked at again next time
        for address in silent:
            keys = sorted(set(busy.get(address, ())) & set(ours))
            if keys:
                self._drop(address, [ours[k] for k in keys], now, bound)

    def _drop(self, address: str, steps: list[tuple[int, str]], now: float,
              bound: float) -> None:
        name = self._names.get(address)
        who = f"{name} ({address})" if name else address
        running = ", ".join(f"step {i} ({short(c)})" for i, c in steps)
        gone = now - self._heard[address][1]
        asked = self._dropped.get(address)
        if asked is not None and now - asked > bound:
            raise InfrastructureFailed(
                f"worker {who} has sent no heartbeat for {gone:.0f} s while running {running}, "
                "and the scheduler did not remove it when asked; no verdict was taken from it; "
                "stop or restart that worker, then run again")
        if asked is not None:
            return
        with self._lock:
            self._notes.append(f"worker {who} has sent no heartbeat for {gone:.0f} s "
                               f"(stopped, frozen or cut off?) while running {running}: the "
                               "scheduler is asked to remove it")
        self._dropped[address] = now
        try:
            self.ask(self.client.scheduler.restart_workers, workers=[address],
                     wait_for_workers=False, on_error="return", timeout=self._answer_s / 2,
                     stimulus_id=f"bisectkit-silent-worker-{time.time()}")
        except SchedulerLost:
            raise
        except Exception as exc:  # an older scheduler: the run cannot go on waiting
            raise InfrastructureFailed(
                f"worker {who} has sent no heartbeat for {gone:.0f} s while running {running}, "
                f"and the scheduler could not remove it ({type(exc).__name__}: {exc}); no "
                "verdict was taken from it; stop or restart that worker, then run again"
            ) from exc

    def _count(self, now: float) -> None:
        if self.count():
            self._none_since, self._said = None, False
        elif self._none_since is None:
            self._none_since = now

    def _still_none(self, gone: float) -> list[str]:
        having = f" with {words(self._resources)}" if self._resources else ""
        if gone >= self._patience:
            raise NoWorkers(f"no Dask worker{having} has been connected to {self.address} "
                            f"for {self._patience:g} s; start workers, or rerun with a longer "
                            "--no-workers-timeout")
        if self._said or gone < min(_SAY_AFTER_S, self._patience / 2):
            return []
        self._said = True
        return [f"no Dask worker{having} is connected to {self.address}: the steps wait for "
                f"one (up to {self._patience:g} s, --no-workers-timeout)"]

    def ask(self, call: Callable[..., Any], **kwargs: Any) -> Any:
        """``call`` (a scheduler RPC) answered within ``answer_s``, else the scheduler is lost."""
        self.check()
        try:
            return self.client.sync(call, callback_timeout=self._answer_s, **kwargs)
        except TimeoutError:
            self._lost = f"no answer in {self._answer_s:g} s"
        except OSError as exc:
            self._lost = f"{type(exc).__name__}: {exc}"
        raise SchedulerLost(self.address, self._lost)


def killed_worker(index: int, commit: str, error: BaseException) -> InfrastructureFailed:
    """Dask gave up on a step (``KilledWorker``): workers kept dying under it."""
    tries = getattr(error, "allowed_failures", None)
    last = getattr(getattr(error, "last_worker", None), "address", None)
    times = f" {plural(tries + 1, 'time')}" if isinstance(tries, int) else " repeatedly"
    return InfrastructureFailed(
        f"step {index} ({short(commit)}) lost its worker{times}"
        f"{f' (last {last})' if last else ''}: it may kill the workers it runs on (out of "
        "memory?); no verdict was taken from it; see the workers' logs (the scheduler gives "
        "up on a step after distributed.scheduler.allowed-failures losses)")


def words(resources: dict[str, float]) -> str:
    """``GPU=1, MEM=2``."""
    return ", ".join(f"{name}={amount:g}" for name, amount in resources.items())


class _Drop(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


def quiet_dask() -> Callable[[], None]:
    """Dask's own log lines off this process's stderr (a reconnect's traceback, "Failed to
    reconnect"): what went wrong is bisectkit's one line; the cluster keeps its logs.
    Returns what puts them back."""
    drop = _Drop()
    handlers = {h for name in _DASK_LOGGERS for h in logging.getLogger(name).handlers}
    for h in handlers:
        h.addFilter(drop)

    def restore() -> None:
        for h in handlers:
            h.removeFilter(drop)

    return restore
