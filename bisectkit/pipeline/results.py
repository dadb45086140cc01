"""The result of a bisection as data: the JSON document ``--json`` writes, and exit codes.

Built from the session and the strategy (what it did at the first bad commit
and the one before it); printed by the CLI, written by ``--json``, handed to
``bisectkit_session_finish``.
"""

from __future__ import annotations

from typing import Any

from bisectkit.engine import Clear, Decision, Found, Inconclusive
from bisectkit.errors import ExitCode
from bisectkit.pipeline import descent
from bisectkit.pipeline.bisection import Bisection


def status_word(decision: Decision | None) -> str:
    """``found``, ``inconclusive``, ``clear`` (an advance: nothing bad) or ``aborted``."""
    if isinstance(decision, Found):
        return "found"
    if isinstance(decision, Inconclusive):
        return "inconclusive"
    if isinstance(decision, Clear):
        return "clear"
    return "aborted"


def exit_code(decision: Decision) -> int:
    """0 when found (or, advancing, when nothing is bad), 1 when only skipped commits are
    left (as ``git bisect run``)."""
    if isinstance(decision, Found) or (isinstance(decision, Clear) and not decision.skipped):
        return ExitCode.FOUND
    if isinstance(decision, Inconclusive | Clear):
        return ExitCode.INCONCLUSIVE
    raise AssertionError(decision)


def details_at(b: Bisection, sha: str) -> dict[str, Any]:
    """What the strategy did at ``sha`` (patch actions, submodule moves)."""
    for step in reversed(b.session.steps):
        if step.commit == sha and step.source not in ("manual", "check-stack"):
            data = step.to_json()
            return {k: data[k] for k in ("patches", "submodules") if data.get(k)}
    # The bad end is never tested, so compute it.
    details = b.strategy.prepare(sha).details
    return {k: details[k] for k in ("patches", "submodules") if details.get(k)}


def result_json(b: Bisection, status: str, decision: Decision | None,
                error: str | None = None) -> dict[str, Any]:
    """The ``--json`` document (its fields: README.md, "JSON result")."""
    s = b.session
    data: dict[str, Any] = {
        "status": status,
        "strategy": b.strategy.name,
        "terms": s.terms.as_dict(),
        "find_fix": s.terms.find_fix,
        "good": s.good,
        "bad": s.bad,
        "range_size": len(s.candidates),
        "first_bad": None,
        "candidates": [],
        # By number: with --jobs they are recorded as they finish, and a manual mark of
        # another revision is recorded before the step announced ahead of it.
        "steps": [st.to_json() for st in sorted(s.steps, key=lambda st: st.index)],
        # --all-parents: the merges bisected into, outermost first (the candidates are
        # then the commits the last one merged).
        "descended": descent.descended(b.parts),
    }
    if isinstance(decision, Found):
        data.update(_found(b, decision.first_bad))
    elif isinstance(decision, Inconclusive):
        data["candidates"] = list(decision.candidates)
    first_bad = decision.first_bad if isinstance(decision, Found) else None
    data.update(b.strategy.result_extra(first_bad))
    if error is not None:
        data["error"] = error
    return data


def _found(b: Bisection, first: str) -> dict[str, Any]:
    info = b.strategy.describe(first)
    data: dict[str, Any] = {
        "first_bad": first,
        "first_bad_subject": info.subject,
        "first_bad_info": {"sha": info.sha, "subject": info.subject, "author": info.author,
                           "date": info.date, "message": info.message},
    }
    data.update({f"{k}_at_first_bad": v for k, v in details_at(b, first).items()})
    data["previous"] = _previous(b, first)
    return data


def _previous(b: Bisection, first_bad: str) -> dict[str, Any]:
    """The commit just before the first bad one, and what the strategy did there."""
    i = b.session.candidates.index(first_bad)
    prev = b.session.candidates[i - 1] if i > 0 else descent.good_ends(b.parts)[0]
    info = b.strategy.describe(prev)
    return {"sha": prev, "subject": info.subject, **details_at(b, prev)}


def advance_json(b: Bisection, decision: Decision) -> dict[str, Any]:
    """An advance's result: ``status`` up-to-date | advanced | stuck, ``from`` (the merge-base
    the pin is on), ``to`` (the last good commit, or ``from``), ``first_bad`` (null when
    every candidate passed, or when skips leave it open: then ``candidates``), ``builds``."""
    s = b.session
    data = result_json(b, "", decision if isinstance(decision, Found | Inconclusive) else None)
    lo, _ = b.search.bounds(s.candidates, s.verdict_map())
    status = "up-to-date" if not s.candidates else "advanced" if lo >= 0 else "stuck"
    if isinstance(decision, Clear):
        data["candidates"] = list(decision.skipped)
    data.update(status=status, target=s.bad, crossed=lo + 1, builds=builds(b),
                to=s.candidates[lo] if lo >= 0 else s.good[0], **{"from": s.good[0]})
    data["to_subject"] = b.strategy.describe(data["to"]).subject
    return data


def builds(b: Bisection) -> int:
    """Steps that built and tested something (cache hits and conflict skips cost nothing)."""
    return sum(1 for st in b.session.steps
               if st.source not in ("cache", "auto") and not st.reason.startswith("cached:")
               and (st.build_s is not None or st.repro_s is not None))
