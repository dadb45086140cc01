"""The JSON documents bisectkit writes and hands to hooks, typed (the schema is README.md's
"JSON result"): a step's details, a parallel step in flight, the result of a run.

TypedDicts rather than classes: the same values are written with ``json.dump``, read
back by ``bisectkit report``, and given to plugins, which already index them as dicts.
"""

from __future__ import annotations

from typing import Any, TypedDict


class PatchJSON(TypedDict):
    """What happened to one local patch at one candidate (``patches`` of a step)."""

    commit: str
    subject: str
    kind: str
    refers_to: str | None
    #: ``applied``, ``dropped``, ``empty`` or ``conflict``.
    action: str
    why: str
    seconds: float


class StepDetails(TypedDict, total=False):
    """What a strategy did to make a candidate (``bisectkit_prepared``, a step's record)."""

    #: Per local patch, oldest first (submodule, stack and advance strategies).
    patches: list[PatchJSON]
    #: Per submodule whose pin moved (integrate strategy): ``path``, ``old``, ``new``...
    submodules: list[dict[str, Any]]
    #: The submodule commit the replayed stack made (no ref points at it).
    patched: str | None
    #: Flags for the step (``tested without local patch ...``).
    flags: list[str]
    #: What a partial clone fetched for it.
    fetched: dict[str, Any]


class TermsJSON(TypedDict):
    """The words of a session's two sides (``good``/``bad`` unless ``--term-old/-new``)."""

    old: str
    new: str


class StepJSON(TypedDict, total=False):
    """One step's record (:meth:`bisectkit.model.StepRecord.to_json`): the keys bisectkit
    writes; classifiers' ``step.extra`` keys come beside them."""

    index: int
    commit: str
    #: The engine's side: ``good``, ``bad`` or ``skip``.
    verdict: str
    reason: str
    #: ``run``, ``manual``, ``cache``, ``auto``, ``verify``, ``check-stack``, ``confirm``...
    source: str
    patches: list[PatchJSON]
    files_written: int | None
    prepare_s: float | None
    build_s: float | None
    repro_s: float | None
    fetched: dict[str, Any]
    #: The side in the session's words, when they are not good/bad.
    term: str
    flags: list[str]
    environment: str
    submodules: list[dict[str, Any]]


class JobRow(TypedDict):
    """One parallel step in flight (``bisectkit_jobs``)."""

    index: int
    commit: str
    subject: str
    #: ``queued``, ``checkout``, ``build`` or ``repro``.
    phase: str
    #: Where it runs (a workspace, a Dask worker), empty while queued.
    where: str
    #: Seconds in that phase.
    elapsed: float
    #: Its last output line.
    line: str


class ResultJSON(TypedDict, total=False):
    """The result of a run: what ``--json`` writes and ``bisectkit_session_finish`` gets.

    Strategies add their own fields (``submodule``, ``upstream``, an advance's ``to``...);
    the ones every result has are listed here.
    """

    #: ``found``, ``inconclusive``, ``clear``, ``aborted`` (an advance: ``advanced``,
    #: ``up-to-date``, ``stuck``).
    status: str
    strategy: str
    terms: TermsJSON
    find_fix: bool
    good: list[str]
    bad: str
    range_size: int
    first_bad: str | None
    candidates: list[str]
    #: One record per step, in order.
    steps: list[StepJSON]
    descended: list[str]
    error: str


class TraceJSON(TypedDict):
    """A run's timeline as a Chrome trace document (what ``--trace`` writes; open it in
    Perfetto or chrome://tracing): every run records it, ``--trace`` or not (a few events
    a step)."""

    traceEvents: list[dict[str, Any]]
    displayTimeUnit: str
