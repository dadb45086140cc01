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
    terms: dict[str, str]
    find_fix: bool
    good: list[str]
    bad: str
    range_size: int
    first_bad: str | None
    candidates: list[str]
    #: One record per step (:meth:`bisectkit.model.StepRecord.to_json`), in order.
    steps: list[dict[str, Any]]
    descended: list[str]
    error: str
