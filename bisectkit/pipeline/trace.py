"""Chrome trace-event output (``--trace FILE``): open it in Perfetto or chrome://tracing.

One track per step (the track id is the step number; track 0 is the set-up),
with complete ("X") spans for the step, materialise (with one sub-span per
patch), build, repro and classify, and an instant ("i") event per verdict:
in the spirit of MLIR's action tracing, every decision the tool made is on
the timeline next to what it cost. Names and arguments (a subject, a reason)
have their control characters shown (:mod:`bisectkit.safetext`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

from bisectkit import safetext
from bisectkit.model import short
from bisectkit.model.documents import PatchJSON, TraceJSON
from bisectkit.text import ellipsize

#: Track names longer than this are cut (a subject can be a paragraph).
MAX_TRACK_NAME = 200


class Tracer:
    """Collects trace events in memory; :meth:`document` is what ``--trace`` writes (the
    built-in ``chrome-trace`` plugin, :mod:`bisectkit.ui.report.outputs`)."""

    def __init__(self) -> None:
        self._t0 = time.perf_counter()
        self.events: list[dict[str, Any]] = []
        self._named: set[int] = set()

    def now(self) -> float:
        """Microseconds since the tracer started (the trace's time base)."""
        return (time.perf_counter() - self._t0) * 1e6

    def name_track(self, track: int, name: str) -> None:
        """Name ``track`` once; a name past :data:`MAX_TRACK_NAME` characters is
        ellipsized (the step, sha and the subject's start stay readable), its control
        characters shown (:mod:`bisectkit.safetext`)."""
        name = ellipsize(safetext.one_line(name), MAX_TRACK_NAME)
        if track not in self._named:
            self._named.add(track)
            self.events.append({"name": "thread_name", "ph": "M", "pid": os.getpid(),
                                "tid": track, "args": {"name": name}})

    def complete(self, name: str, track: int, start: float, end: float, **args: Any) -> None:
        self.events.append({"name": name, "ph": "X", "pid": os.getpid(), "tid": track,
                            "ts": round(start, 1), "dur": round(max(end - start, 0.0), 1),
                            "args": safetext.data(args)})

    @contextlib.contextmanager
    def span(self, name: str, track: int, **args: Any) -> Iterator[dict[str, Any]]:
        """A span around the ``with`` body; the yielded dict adds args on the way out."""
        start = self.now()
        extra: dict[str, Any] = {}
        try:
            yield extra
        finally:
            self.complete(name, track, start, self.now(), **args, **extra)

    def instant(self, name: str, track: int, **args: Any) -> None:
        self.events.append({"name": name, "ph": "i", "s": "t", "pid": os.getpid(),
                            "tid": track, "ts": round(self.now(), 1),
                            "args": safetext.data(args)})

    def document(self) -> TraceJSON:
        """The Chrome trace of what was recorded so far."""
        return {"traceEvents": list(self.events), "displayTimeUnit": "ms"}


class NullTracer(Tracer):
    """The tracer when ``--trace`` is not given: records nothing."""

    def complete(self, name: str, track: int, start: float, end: float, **args: Any) -> None:
        return None

    def instant(self, name: str, track: int, **args: Any) -> None:
        return None

    def name_track(self, track: int, name: str) -> None:
        return None


def patch_spans(tracer: Tracer, track: int, start: float, patches: Iterable[PatchJSON],
                **args: Any) -> None:
    """A "materialise" span from ``start`` to now on ``track``, one sub-span per patch
    replayed (their ``seconds`` laid end to end)."""
    end, at = tracer.now(), start
    for patch in patches:
        took = patch.get("seconds", 0.0) * 1e6
        tracer.complete(f"patch {short(patch['commit'])}", track, at, at + took,
                        kind=patch["kind"], action=patch["action"], why=patch["why"])
        at += took
    tracer.complete("materialise", track, start, max(end, at), **args)
