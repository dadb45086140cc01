"""One session's steps: engine decision -> materialise -> build -> repro -> classify -> record.

Shared by the manual flow, ``run``, ``bisectkit run`` and ``advance``. It saves the
session after every change and tells observers through the hooks; it never prints.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

from bisectkit import engine
from bisectkit.engine import Decision, Next, search
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import Sha, Step, StepRecord, Terms, Verdict, short
from bisectkit.pipeline import descent
from bisectkit.pipeline import revs as revs_mod
from bisectkit.pipeline.breaker import SkipBreaker
from bisectkit.pipeline.parts import RunParts
from bisectkit.pipeline.testing import StepTester, Tested
from bisectkit.pipeline.trace import Tracer, patch_spans
from bisectkit.plugin.facade import Hooks
from bisectkit.safety import bisectrefs
from bisectkit.safety.worktree import Mover
from bisectkit.store.cache import VerdictCache
from bisectkit.store.session import Session, SessionStore, VerdictEntry
from bisectkit.strategies import make_strategy
from bisectkit.strategies.base import Prepared, Strategy

T = TypeVar("T")
#: Record fields a strategy's or a test's details may fill (the rest goes to ``extra``).
_CORE = ("patches", "files_written", "fetched", "prepare_s", "build_s", "repro_s")


class Bisection:
    """One session's pipeline, saving the session after every change."""

    def __init__(self, superproject: Repo, store: SessionStore, session: Session,
                 hooks: Hooks, mover: Mover | None, strategy: Strategy | None = None,
                 parts: RunParts | None = None) -> None:
        self.superproject = superproject
        self.mover = mover
        # ``strategy``: the session's own unless given (the pipeline's unit tests);
        # ``parts``: another loop's over the same run (the parallel loop shares them).
        self.parts = parts or RunParts(
            session, store, strategy or make_strategy(superproject, session, mover), hooks)
        #: How the next candidate is chosen (a bisection, or an advance's gallop or walk).
        self.search = search.named(session.params.search)
        self.tester = StepTester(self.parts)
        # The checked-out candidate as prepared, when this process prepared it.
        self._prepared: Prepared | None = None
        self._step_started: dict[int, float] = {}

    # The shared parts, by name (read-only: they are the run's, not this loop's).
    @property
    def session(self) -> Session:
        return self.parts.session

    @property
    def store(self) -> SessionStore:
        return self.parts.store

    @property
    def strategy(self) -> Strategy:
        return self.parts.strategy

    @property
    def hooks(self) -> Hooks:
        return self.parts.hooks

    @property
    def tracer(self) -> Tracer:
        return self.parts.tracer

    @property
    def terms(self) -> Terms:
        return self.parts.terms

    def trace_to(self, tracer: Tracer, commands: dict[str, str]) -> None:
        """Record this run's steps in ``tracer``, naming the build and repro ``commands``."""
        self.parts.tracer, self.parts.commands = tracer, commands

    def decide_and_descend(self) -> Decision:
        """The engine's decision; with ``--all-parents``, a merge found first bad first
        becomes the candidates (the session's candidates are rewritten and saved)."""
        return descent.decide_and_descend(self.parts, self.search)

    def advance(self, cache: VerdictCache | None = None) -> Decision:
        """The next candidate that needs a real test (checked out), or the result: one whose
        patch stack conflicts is skipped unbuilt, one the cache knows recorded unchecked-out."""
        while True:
            decision = self.decide_and_descend()
            if not isinstance(decision, Next):
                self.session.current = None
                self.store.save(self.session)
                return decision
            if self._checked_out(decision, cache):
                return decision

    def _checked_out(self, decision: Next, cache: VerdictCache | None) -> bool:
        """Materialise ``decision``'s candidate: checked out (True) or decided unbuilt."""
        started = time.perf_counter()
        # A candidate announced before (by the last command) keeps its number.
        cand = decision.commit
        index = self.index_for(cand)
        prep = self.unbuilt(cand, index, decision.remaining, decision.steps_left, cache)
        if prep is None:
            return False
        # Always check out, even when resuming on the same candidate: the user
        # may have moved a work tree between commands, and a checkout onto
        # the same tree writes nothing.
        with self.tracer.span("checkout", index) as span:
            written = self.parts.place(prep)
            span["files_written"] = written
        if self.session.current == cand:
            written += self.session.current_step.get("files_written", 0)
        self.hooks.prepared(index, prep.details, written)
        self._prepared = prep
        self.session.current = cand
        self.session.current_step = {**prep.details, "files_written": written,
                                     "prepare_s": _since(started)}
        self.store.save(self.session)
        return True

    def unbuilt(self, cand: str, index: int, remaining: int, steps_left: int,
                cache: VerdictCache | None) -> Prepared | None:
        """Prepare candidate ``cand`` as step ``index``; None when it was decided without a
        build (recorded: its patch stack conflicts, or the cache knows its tree)."""
        started = time.perf_counter()
        info = self.strategy.describe(cand)
        self.session.announced = (cand, index)
        self.hooks.candidate(index, info, remaining, steps_left)
        self.tracer.name_track(index, f"step {index}: {short(cand)} {info.subject}")
        self._step_started[index] = self.tracer.now()
        prep = self._materialise(cand, index)
        step = Step(index=index, commit=Sha(cand), strategy=self.strategy.name,
                    workdir=self.session.root)
        if prep.skip_reason is not None:
            self.hooks.prepared(index, prep.details, None)
            verdict, reason = self.engine_verdict("skip", prep.skip_reason)
            self.record(cand, verdict, reason, "auto", step=step, **prep.details,
                        prepare_s=_since(started))
            return None
        hit = cache.get(prep.trees) if cache is not None else None
        if hit is None:
            return prep
        self.hooks.prepared(index, prep.details, None)
        step.flags, step.extra = list(hit.get("flags", [])), dict(hit.get("extra", {}))
        verdict, reason = self.engine_verdict(hit["verdict"], hit["reason"])
        self.record(cand, verdict, f"cached: {reason}", "cache", step=step,
                    **prep.details, prepare_s=_since(started))
        return None

    def next_index(self) -> int:
        """The number of the next step (parallel runs hand out numbers ahead of records)."""
        return self.session.next_step_index()

    def index_for(self, commit: str) -> int:
        """The number of a step of ``commit``: the one it was announced with (a mark of
        another revision meanwhile does not take it), else the next."""
        return self.session.step_index_for(commit)

    def _materialise(self, commit: str, track: int) -> Prepared:
        """``strategy.prepare`` inside a trace span, with one sub-span per patch."""
        start = self.tracer.now()
        prep = self.strategy.prepare_fetching(commit)
        patch_spans(self.tracer, track, start, prep.details.get("patches", ()), commit=commit,
                    skip=prep.skip_reason)
        return prep

    def engine_verdict(self, verdict: Verdict, reason: str) -> tuple[Verdict, str]:
        """The repro's verdict (good = passes) as the engine's old/new side.

        Looking for a fix, a passing repro is the new side: the engine's
        "bad" (the side the first commit of which is reported). The strategy
        judges first (:meth:`~bisectkit.strategies.base.Strategy.judged`).
        """
        verdict, reason = self.strategy.judged(verdict, reason)
        side = self.terms.side(verdict)
        return (side, reason) if side == verdict else (side, f"{reason} -> {self.term(side)}")

    def term(self, verdict: str) -> str:
        """The word shown for an engine verdict (``--term-old/--term-new``)."""
        return self.parts.term(verdict)

    # -- recording ----------------------------------------------------------------
    def record(self, commit: str, verdict: Verdict, reason: str, source: str,
               step: Step | None = None, affects: bool = True,
               **details: Any) -> StepRecord:
        """Append a step record (and, when it ``affects`` the bisection, its verdict);
        tell the observers; save."""
        if step is None:
            step = Step(index=self.index_for(commit), commit=Sha(commit),
                        strategy=self.strategy.name, workdir=self.session.root)
        # Flags of how the candidate was prepared ("tested without <patch>") join the
        # plugins' flags in the record only: the verdict cache keeps the plugins' own.
        flags = list(dict.fromkeys([*details.pop("flags", ()), *step.flags]))
        core = {k: details.pop(k) for k in _CORE if k in details}
        record = StepRecord(
            index=step.index, commit=commit, verdict=verdict, reason=reason, source=source,
            term=None if self.terms.is_default else self.term(verdict), flags=flags,
            environment=step.environment if verdict == "skip" else None,
            extra={**details, **{k: v for k, v in step.extra.items() if k not in details}},
            **core)
        # Observers see (and may add to) the JSON record: the step log adds its path.
        step.record = record.to_json()
        self.parts.call_step_hook(step, lambda: self.hooks.step_done(step, verdict))
        record.extra.update({k: v for k, v in step.record.items()
                             if k not in record.to_json()})
        self.tracer.instant(f"verdict: {self.term(verdict)}", step.index, reason=reason,
                            source=source)
        self.tracer.complete("step", step.index, self._step_started.pop(step.index, 0.0),
                             self.tracer.now(), commit=commit, verdict=verdict)
        if affects:
            self.session.verdicts.append(VerdictEntry(commit, verdict, reason, source))
        self.session.steps.append(record)
        if commit == self.session.current:
            self.session.current = None
        self.store.save(self.session)
        if affects:
            self.publish_refs()
        return record

    def publish_refs(self, first: bool = False) -> None:
        """``refs/bisect/*`` in the repository bisected say what the session knows now, for
        ``git log --bisect`` and ``gitk --bisect`` (:mod:`bisectkit.safety.bisectrefs`);
        ``first`` (the session starts): say so if they are somebody else's."""
        if self.mover is None:
            return  # a reader: it moves nothing, and writes nothing either
        s = self.session
        known = s.verdict_map()
        try:
            _, hi = self.search.bounds(s.candidates, known)
        except engine.ContradictoryVerdicts:
            return  # refused where it was given: nothing consistent to show
        bad = s.candidates[hi] if 0 <= hi < len(s.candidates) else None
        marks = bisectrefs.Marks(
            s.terms.old, s.terms.new, bad if bad is not None and known.get(bad) == "bad"
            else None,
            tuple(dict.fromkeys([*s.good, *(c for c, v in known.items() if v == "good")])),
            tuple(c for c, v in known.items() if v == "skip"))
        note = (lambda text: self.hooks.message(text, "note")) if first else None
        bisectrefs.publish(self.superproject, self.strategy.history, marks,
                           self.mover.journal, note)

    # -- manual marking ------------------------------------------------------
    def mark(self, word: str, revs: Sequence[str], source: str = "manual") -> None:
        """``good``/``bad``/``skip`` (the repro's outcome) or ``old``/``new`` (the sides).

        With no revs, the commit under test now. Looking for a fix, ``good``
        (the repro passes) means the new side.
        """
        s, side = self.session, self.terms.mark(word)
        self.decide_and_descend()  # a merge found bad is bisected into first (a replay)
        if not revs:
            if s.current is None:
                raise BadInput("no commit is under test; name the revision to mark")
            shas = [s.current]
        else:  # single revisions, and for skip ranges (A..B): see pipeline.revs
            shas = revs_mod.marked(self.strategy, s, word, revs,
                                   lambda text: self.hooks.message(text, "note"))
        known = s.verdict_map()
        for sha in shas:  # the other side already: the check below would see the new mark only
            if side != "skip" and known.get(sha, side) not in (side, "skip"):
                raise BadInput(revs_mod.contradiction(s, side, [sha], sha, sha) or "")
        try:
            self.search.bounds(s.candidates, {**known, **dict.fromkeys(shas, side)})
        except engine.ContradictoryVerdicts as exc:
            said = revs_mod.contradiction(s, side, shas, exc.old, exc.new)
            raise BadInput(said or f"cannot mark {self.term(side)}: "
                                   f"{self.contradiction(exc)}") from exc
        for sha in shas:
            details = dict(s.current_step) if sha == s.current else {}
            reason = "marked by hand" if source == "manual" else f"from {source}"
            self.record(sha, side, reason, source, **details)

    def contradiction(self, exc: engine.ContradictoryVerdicts) -> str:
        """The engine's complaint in the session's words (``--find-fix``, ``--term-*``)."""
        return self.parts.contradiction(exc)

    # -- automatic testing -----------------------------------------------------
    def test_current(self, cache: VerdictCache | None) -> StepRecord:
        """Build and run the repro on the checked-out candidate (through the plugin hooks)."""
        cand, prep = self.session.current, self._prepared
        assert cand is not None
        prep = prep if prep is not None and prep.candidate == cand else self.strategy.prepare(cand)
        tested = self.tester.test(self.index_for(cand), cand, prep,
                                  dict(self.session.current_step))
        return self._recorded(cand, prep, cache, tested, "run", affects=True)

    def test_commit(self, commit: str, prep: Prepared, cache: VerdictCache | None,
                    source: str) -> StepRecord:
        """Check out ``prep`` and test it as an extra step (verify, check-stack, confirm):
        recorded, but no verdict on a candidate."""
        index = self.next_index()
        self.tracer.name_track(index, f"{source}: {short(commit)}")
        self._step_started[index] = self.tracer.now()
        started = time.perf_counter()
        hit = cache.get(prep.trees) if cache is not None and prep.trees else None
        if hit is not None:
            verdict, reason = self.engine_verdict(hit["verdict"], hit["reason"])
            return self.record(commit, verdict, f"cached: {reason}", source, affects=False,
                               **prep.details, prepare_s=_since(started))
        self.session.current = None  # the work tree will hold this commit, not a candidate
        self.store.save(self.session)
        written = self.parts.place(prep)
        details = {**prep.details, "files_written": written, "prepare_s": _since(started)}
        return self._recorded(commit, prep, cache,
                              self.tester.test(index, commit, prep, details), source,
                              affects=False)

    def _recorded(self, commit: str, prep: Prepared, cache: VerdictCache | None,
                  tested: Tested, source: str, affects: bool) -> StepRecord:
        """Remember a test's verdict in the cache, then record it as the engine's side."""
        step, verdict, reason, details = tested
        if cache is not None:
            cache.put(prep.trees, verdict, reason, step)
        verdict, reason = self.engine_verdict(verdict, reason)
        return self.record(commit, verdict, reason, source, step=step, affects=affects,
                           **details)

    def run(self, cache: VerdictCache | None, breaker: SkipBreaker | None = None) -> Decision:
        """Test candidates until the first bad commit is found or only skips are left.

        ``breaker`` stops the run after too many skips in a row (none: never).
        """
        decision = self.advance(cache)
        while isinstance(decision, Next):
            record = self.test_current(cache)
            if breaker is not None:
                breaker.tested(record)
            decision = self.advance(cache)
        return decision


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 4)
