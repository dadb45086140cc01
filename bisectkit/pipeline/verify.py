"""Trusting an answer: test the ends it rests on, the patch stack, the boundary pair.

Each check is an extra step (recorded with its own source, never a verdict on
a candidate), so the JSON result and the step logs show what was tested.
"""

from __future__ import annotations

from typing import Any

from bisectkit.engine import Decision, Found
from bisectkit.errors import RangeNotVerified
from bisectkit.model import RunOptions, StepRecord, Verdict, short
from bisectkit.patches.stack import TESTED_WITHOUT
from bisectkit.pipeline import descent
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.breaker import SkipBreaker
from bisectkit.store.cache import VerdictCache


def verify_range(b: Bisection, cache: VerdictCache | None) -> None:
    """``--verify-range``: the good end(s) must test good and the bad end bad."""
    s = b.session
    ends: list[tuple[str, Verdict]] = [*((g, "good") for g in s.good), (s.bad, "bad")]
    for end, expected in ends:
        want = b.term(expected)
        prep = b.strategy.prepare(end)
        if prep.skip_reason is not None:
            raise RangeNotVerified(f"cannot verify the {want} end {short(end)}: "
                                   f"{prep.skip_reason}")
        b.hooks.message(f"verifying the {want} end {short(end)} "
                        f"{b.strategy.describe(end).subject}", "progress")
        # Not a verdict on a candidate: recording it would only contradict the
        # range when verification fails (the ends are known by definition).
        step = b.test_commit(end, prep, cache, "verify")
        if step.verdict != expected:
            raise RangeNotVerified(
                f"the {want} end {short(end)} is not {want}: it tested "
                f"{b.term(step.verdict)} ({step.reason}); fix the range or the "
                "repro before bisecting")


def confirm_ends(b: Bisection, decision: Found, cache: VerdictCache | None) -> str | None:
    """Test the end(s) an answer rests on when they were never tested.

    The first bad commit is the bad end itself only if every other candidate
    passed: then a repro that never reproduces here would name it. It is the
    first candidate only if none passed: then a repro that always fails
    would. Either way the end is tested now; one that does not test as
    claimed raises :class:`RangeNotVerified` (exit 5). Returns why the answer
    could not be confirmed (the end cannot be built), or ``None``.
    """
    s = b.session
    tested = {st.commit for st in s.steps if st.source in ("run", "cache", "verify")}
    lo, _ = b.search.bounds(s.candidates, s.verdict_map())
    ends: list[tuple[str, Verdict]] = []
    if lo < 0:
        ends += [(g, "good") for g in descent.good_ends(b.parts) if g not in tested]
    if decision.first_bad == s.bad and s.bad not in tested:
        ends.append((s.bad, "bad"))
    for end, expected in ends:
        unconfirmed = _confirm_end(b, end, expected, cache)
        if unconfirmed is not None:
            return unconfirmed
    return None


def _confirm_end(b: Bisection, end: str, expected: Verdict,
                 cache: VerdictCache | None) -> str | None:
    want = b.term(expected)
    prep = b.strategy.prepare(end)
    if prep.skip_reason is not None:
        return f"the {want} end {short(end)} cannot be tested: {prep.skip_reason}"
    b.hooks.message(f"confirming the {want} end {short(end)} (the answer rests on it)",
                    "progress")
    step = b.test_commit(end, prep, cache, "verify")
    if step.verdict == "skip":
        return f"the {want} end {short(end)} tested skip ({step.reason})"
    if step.verdict != expected:
        hint = "check that the repro reproduces the problem here, or the range"
        if expected == "good" and b.strategy.prepare_pristine(end) is not None:
            hint += ("; it was tested with the patch stack applied: if the stack is at "
                     "fault, --check-stack --no-verify tests the answer without it")
        raise RangeNotVerified(
            f"the {want} end {short(end)} does not test {want}: it tested "
            f"{b.term(step.verdict)} ({step.reason}); the answer would rest "
            f"on it, so no commit is named: {hint}")
    return None


def check_stack(b: Bisection, first_bad: str, cache: VerdictCache | None) -> StepRecord | None:
    """``--check-stack``: test ``first_bad`` without the patch stack (one more build).

    When pristine upstream is still on the old side, the culprit needs our
    patches to misbehave: the stack itself is to be bisected.
    """
    prep = b.strategy.prepare_pristine(first_bad)
    if prep is None:
        return None
    b.hooks.message(f"checking {short(first_bad)} without the patch stack", "progress")
    return b.test_commit(first_bad, prep, cache, "check-stack")


def stack_check(b: Bisection, first_bad: str, cache: VerdictCache | None) -> dict[str, Any]:
    """``--check-stack``: test ``first_bad`` without the patch stack; what that concluded.

    ``stack_implicated`` is True or False only when the test gave a side; None
    (with the reason in ``conclusion``) when there was nothing to check or the
    test could not tell (a failed build is a skip, not an acquittal).
    """
    conclusion = b.strategy.stack_unchecked() or ""
    checked = None if conclusion else check_stack(b, first_bad, cache)
    verdict = checked.verdict if checked else None
    implicated: bool | None = None
    abbrev, old, new = short(first_bad), b.terms.old, b.terms.new
    if verdict == "good":
        # Old side without the stack, new side with it: our patches are implicated.
        implicated = True
        conclusion = (f"the patch stack is implicated: {abbrev} is {old} without it and {new} "
                      "with it")
    elif verdict == "bad":
        implicated = False
        conclusion = (f"the patch stack is not implicated: {abbrev} is {new} without it too "
                      "(the upstream commit itself)")
    elif checked is not None:
        conclusion = (f"could not be checked: {abbrev} without the patch stack tested skip "
                      f"({checked.reason})")
    # The strategy suggests bisecting the stack (a follow-up) only when it is implicated.
    b.session.params.stack_implicated = bool(implicated)
    return {"verdict": verdict, "reason": checked.reason if checked else None,
            "stack_implicated": implicated, "conclusion": conclusion}


def confirm_boundary(b: Bisection, decision: Found) -> dict[str, Any]:
    """Re-test the last old and the first new commit once more; how much to trust it."""
    s = b.session
    lo, _ = b.search.bounds(s.candidates, s.verdict_map())
    pair: list[tuple[str, Verdict]] = [
        (s.candidates[lo], "good") if lo >= 0 else (descent.good_ends(b.parts)[0], "good"),
        (decision.first_bad, "bad")]
    agree: list[bool] = []
    for commit, expected in pair:
        prep = b.strategy.prepare(commit)
        if prep.skip_reason is not None:  # e.g. the stack conflicts at the bad end
            b.hooks.message(f"cannot re-test {short(commit)}: {prep.skip_reason}")
            agree.append(False)
            continue
        b.hooks.message(f"re-testing {short(commit)} (expected {b.term(expected)})", "progress")
        step = b.test_commit(commit, prep, None, "confirm")
        agree.append(step.verdict == expected)
    disagreeing = [st for st in s.steps if st.source != "confirm" and any(
        not f.startswith(TESTED_WITHOUT) for f in st.flags)]
    trustworthy = all(agree)
    reason = ("the boundary pair re-tested the same" if trustworthy else
              "a boundary commit re-tested differently or could not be re-tested: "
              "the answer is not trustworthy")
    if trustworthy and disagreeing:
        reason += f"; {len(disagreeing)} step(s) had runs that disagreed"
    return {"boundary": [c for c, _ in pair], "agree": agree, "trustworthy": trustworthy,
            "flagged_steps": len(disagreeing), "summary": reason}


def run_to_end(b: Bisection, cache: VerdictCache | None, opts: RunOptions, *,
               verify_range_first: bool = False, check_the_stack: bool = False
               ) -> tuple[Decision, dict[str, Any]]:
    """Test until the answer is known, then check what it rests on.

    Returns the decision and what the checks concluded, as fields of the JSON
    result: ``unconfirmed`` (an end that could not be tested), ``check_stack``,
    ``confidence`` (when a plugin ran candidates several times).
    """
    if verify_range_first:
        verify_range(b, cache)
    decision = b.run(cache, SkipBreaker(opts.max_env_skips, opts.max_skips))
    extra: dict[str, Any] = {}
    if not isinstance(decision, Found):
        return decision, extra
    if opts.verify_ends:
        unconfirmed = confirm_ends(b, decision, cache)
        if unconfirmed is not None:
            extra["unconfirmed"] = unconfirmed
            b.hooks.message(f"warning: the answer is not confirmed: {unconfirmed}", "warning")
    if check_the_stack:
        extra["check_stack"] = stack_check(b, decision.first_bad, cache)
    if any("runs" in step.extra for step in b.session.steps):
        extra["confidence"] = confirm_boundary(b, decision)
    return decision, extra
