"""The bisection pipeline: engine decisions -> materialise -> build -> repro -> classify -> record.

Shared by the manual flow (``start``/``good``/``bad``/``skip``), ``git
bisect-patched run`` and the one-shot ``bisectkit run``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pluggy

from bisectkit import engine, plugins, requests
from bisectkit.console import Console
from bisectkit.engine import Decision, Found, Inconclusive, Next
from bisectkit.errors import (
    EXIT_FOUND,
    EXIT_INCONCLUSIVE,
    Aborted,
    BadInput,
    PluginFailed,
    RangeNotVerified,
)
from bisectkit.git import Repo
from bisectkit.model import Outcome, Step, Terms, Verdict
from bisectkit.observers import StepLogWriter
from bisectkit.patchstack import TESTED_WITHOUT
from bisectkit.runner import clean_output
from bisectkit.runopts import VerdictCache
from bisectkit.session import Session, SessionStore, VerdictEntry, write_json_atomic
from bisectkit.strategies import Prepared, make_strategy
from bisectkit.strategies.common import step_env
from bisectkit.trace import NullTracer, Tracer
from bisectkit.worktree import Mover


class Bisector:
    """One session's pipeline, saving the session after every change."""

    def __init__(self, superproject: Repo, store: SessionStore, session: Session,
                 console: Console, pm: pluggy.PluginManager, mover: Mover | None) -> None:
        self.superproject = superproject
        self.store = store
        self.session = session
        self.console = console
        self.pm = pm
        self.mover = mover
        self.strategy = make_strategy(superproject, session, mover)
        # The checked-out candidate as prepared, when this process prepared it.
        self._prepared: Prepared | None = None
        self.tracer: Tracer = NullTracer()
        self._step_started: dict[int, float] = {}
        # Phases ("build", "repro") whose command was seen to run at the good end
        # after exiting 126/127 somewhere: checked once per run, as git does.
        self._runs_at_good_end: set[str] = set()
        self._double_checking = False
        #: The build and repro commands as shown to the user (set by the run command).
        self.commands: dict[str, str] = {}

    # -- engine ------------------------------------------------------------
    def decide(self) -> Decision:
        return engine.decide(self.session.candidates, self.session.verdict_map())

    def advance(self, cache: VerdictCache | None = None) -> Decision:
        """Move to the next candidate that needs a real test (checked out), or the result.

        Candidates whose patch stack conflicts are skipped without a build;
        candidates with a cached verdict are recorded without a checkout.
        """
        while True:
            started = time.perf_counter()
            decision = self.decide()
            if not isinstance(decision, Next):
                self.session.current = None
                self.store.save(self.session)
                return decision
            cand = decision.commit
            index = self.session.next_step_index()
            info = self.strategy.describe(cand)
            self.console.step_start(index, info, decision.remaining, decision.steps_left)
            self.tracer.name_track(index, f"step {index}: {cand[:12]} {info.subject[:40]}")
            self._step_started[index] = self.tracer.now()
            prep = self._materialise(cand, index)
            if prep.skip_reason is not None:
                self.console.details(prep.details, None)
                self.record(cand, "skip", prep.skip_reason, "auto", **prep.details,
                            prepare_s=_since(started))
                continue
            if cache is not None:
                hit = cache.get(cache.key(prep.trees))
                if hit is not None:
                    self.console.details(prep.details, None)
                    step = Step(index=index, commit=cand, strategy=self.strategy.name,
                                workdir=self.session.root, flags=list(hit.get("flags", [])),
                                extra=dict(hit.get("extra", {})))
                    verdict, reason = self._engine_verdict(hit["verdict"], hit["reason"])
                    self.record(cand, verdict, f"cached: {reason}", "cache",
                                step=step, **prep.details, prepare_s=_since(started))
                    continue
            # Always check out, even when resuming on the same candidate: the user
            # may have moved a work tree between commands, and a checkout onto
            # the same tree writes nothing.
            with self.tracer.span("checkout", index) as span:
                written = self.strategy.checkout(prep)
                span["files_written"] = written
            if self.session.current == cand:
                written += self.session.current_step.get("files_written", 0)
            self.console.details(prep.details, written)
            self._prepared = prep
            self.session.current = cand
            self.session.current_step = {**prep.details, "files_written": written,
                                         "prepare_s": _since(started)}
            self.store.save(self.session)
            return decision

    def _materialise(self, commit: str, track: int) -> Prepared:
        """``strategy.prepare`` inside a trace span, with one sub-span per patch."""
        start = self.tracer.now()
        prep = self.strategy.prepare(commit)
        end = self.tracer.now()
        at = start
        for patch in prep.details.get("patches", ()):
            took = patch.get("seconds", 0.0) * 1e6
            self.tracer.complete(f"patch {patch['commit'][:12]}", track, at, at + took,
                                 kind=patch["kind"], action=patch["action"], why=patch["why"])
            at += took
        self.tracer.complete("materialise", track, start, max(end, at), commit=commit,
                             skip=prep.skip_reason)
        return prep

    def _engine_verdict(self, verdict: Verdict, reason: str) -> tuple[Verdict, str]:
        """The repro's verdict (good = passes) as the engine's old/new side.

        Looking for a fix, a passing repro is the new side: the engine's
        "bad" (the side the first commit of which is reported).
        """
        if not self.session.find_fix or verdict == "skip":
            return verdict, reason
        side: Verdict = "bad" if verdict == "good" else "good"
        return side, f"{reason} -> {self.term(side)}"

    def term(self, verdict: str) -> str:
        """The word shown for an engine verdict (``--term-old/--term-new``)."""
        if verdict == "good":
            return self.session.terms["old"]
        if verdict == "bad":
            return self.session.terms["new"]
        return verdict

    def record(self, commit: str, verdict: Verdict, reason: str, source: str,
               step: Step | None = None, affects: bool = True,
               **details: Any) -> dict[str, Any]:
        """Append a step record (and, when it ``affects`` the bisection, its verdict);
        tell the observers; save."""
        if step is None:
            step = Step(index=self.session.next_step_index(), commit=commit,
                        strategy=self.strategy.name, workdir=self.session.root)
        # Flags of how the candidate was prepared ("tested without <patch>") join the
        # plugins' flags in the record only: the verdict cache keeps the plugins' own.
        flags = list(dict.fromkeys([*details.pop("flags", ()), *step.flags]))
        record = {
            "index": step.index,
            "commit": commit,
            "verdict": verdict,
            "reason": reason,
            "source": source,
            "patches": details.pop("patches", []),
            "files_written": details.pop("files_written", 0),
            "prepare_s": details.pop("prepare_s", None),
            "build_s": details.pop("build_s", None),
            "repro_s": details.pop("repro_s", None),
        }
        record.update(details)
        if self.session.find_fix or self.session.terms != {"old": "good", "new": "bad"}:
            record["term"] = self.term(verdict)
        for key, value in step.extra.items():
            record.setdefault(key, value)  # a plugin's extras never replace core fields
        if flags:
            record["flags"] = flags
        if step.environment is not None and verdict == "skip":
            record["environment"] = step.environment
        step.record = record
        # Observers may add to the record (the step log adds its path).
        self._hook("bisectkit_step_done", step, verdict=verdict)
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
        return record

    # -- manual marking ------------------------------------------------------
    def mark(self, verdict: str, revs: Sequence[str], source: str = "manual") -> None:
        """``good``/``bad``/``skip`` (the repro's outcome) or ``old``/``new`` (the sides).

        With no revs, the commit under test now. Looking for a fix, ``good``
        (the repro passes) means the new side.
        """
        s = self.session
        side = Terms(s.terms["old"], s.terms["new"], s.find_fix).mark(verdict)
        if not revs:
            if s.current is None:
                raise BadInput("no commit is under test; name the revision to mark")
            shas = [s.current]
        else:
            shas = [self.strategy.resolve(r) for r in revs]
        for rev, sha in zip(revs or shas, shas, strict=True):
            if sha not in s.candidates:
                raise BadInput(f"'{rev}' ({sha[:12]}) is not in the bisect range")
        trial = s.verdict_map()
        trial.update(dict.fromkeys(shas, side))
        try:
            engine.bounds(s.candidates, trial)
        except engine.ContradictoryVerdicts as exc:
            raise BadInput(f"cannot mark {self.term(side)}: "
                           f"{self._contradiction(exc)}") from exc
        for sha in shas:
            details = dict(s.current_step) if sha == s.current else {}
            reason = "marked by hand" if source == "manual" else f"from {source}"
            self.record(sha, side, reason, source, **details)

    def _contradiction(self, exc: engine.ContradictoryVerdicts) -> str:
        """The engine's complaint in the session's words (``--find-fix``, ``--term-*``)."""
        return (f"{exc.old[:12]} is marked {self.term('good')} but is not older than "
                f"{exc.new[:12]}, which is {self.term('bad')}")

    # -- automatic testing -----------------------------------------------------
    def test_current(self, cache: VerdictCache | None) -> dict[str, Any]:
        """Build and run the repro on the checked-out candidate (through the plugin hooks)."""
        s = self.session
        assert s.current is not None
        cand = s.current
        prep = self._prepared
        if prep is None or prep.candidate != cand:
            prep = self.strategy.prepare(cand)
        step, verdict, reason, details = self._test(cand, prep, dict(s.current_step))
        self._remember(cache, prep, verdict, reason, step)
        verdict, reason = self._engine_verdict(verdict, reason)
        return self.record(cand, verdict, reason, "run", step=step, **details)

    def _hook(self, name: str, step: Step, **kwargs: Any) -> Any:
        """Call a step hook; a plugin that raises stops the run, its traceback in the step log."""
        try:
            return plugins.call(self.pm, name, step=step, **kwargs)
        except PluginFailed as exc:
            path = StepLogWriter.path_for(self.store.logs_dir, step.index)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as log:
                    log.write(f"# step {step.index}: {step.commit}: {exc}\n{exc.traceback_text}")
            except OSError:
                raise exc from None  # the one line is what matters; the log is a bonus
            raise PluginFailed(exc.plugin, exc.hook, exc.cause, exc.traceback_text,
                               log=str(path)) from exc.cause

    def _new_step(self, index: int, commit: str, prep: Prepared) -> Step:
        """Step ``index`` testing ``commit``: the build/repro environment is ours plus the
        strategy's (``prep.env``) plus ``BISECTKIT_STEP``."""
        env = {**os.environ, **prep.env, **step_env(step=index)}
        return Step(index=index, commit=commit, strategy=self.strategy.name, env=env,
                    workdir=self.session.root)

    def _test(self, commit: str, prep: Prepared, details: dict[str, Any]
              ) -> tuple[Step, Verdict, str, dict[str, Any]]:
        """Build, repro, classify the checked-out ``commit``; the repro's verdict."""
        index = self.session.next_step_index()
        step = self._new_step(index, commit, prep)
        self._hook("bisectkit_step_start", step)
        with self.tracer.span("build", index):
            built = _cleaned(self._hook("bisectkit_build", step))
        if built is not None:
            step.outputs["build"] = built.output
            details["build_s"] = round(built.duration, 3)
            if built.exit_status in (126, 127):
                self._double_check("build", built, step, details)
            if not built.ok:
                return step, "skip", f"build failed ({_why(built)})", details
        with self.tracer.span("repro", index):
            outcome = _cleaned(self._hook("bisectkit_repro", step))
        if outcome is None:
            raise BadInput("nothing runs the repro: give a repro command or a plugin that "
                           "implements bisectkit_repro")
        step.outputs["repro"] = outcome.output
        details["repro_s"] = round(outcome.duration, 3)
        if outcome.exit_status in (126, 127):
            self._double_check("repro", outcome, step, details)
            line = cannot_run(outcome.output)
            if line is not None:
                # It runs at the good end, not here: the commit left something
                # unrunnable. Not the regression the repro looks for.
                step.environment = "a command cannot run"
                return step, "skip", f"{outcome.describe()}, a command cannot run: {line!r}", \
                    details
        with self.tracer.span("classify", index):
            verdict = self._hook("bisectkit_classify", step, outcome=outcome)
        if verdict is None:
            raise Aborted(f"repro {outcome.describe()} at {commit[:12]}: exit codes >= 128 and "
                          "signals abort the bisection")
        return step, verdict, step.reason or outcome.describe(), details

    def _double_check(self, phase: str, outcome: Outcome, step: Step,
                      details: dict[str, Any]) -> None:
        """Exit 126/127 ("cannot execute", "not found"): is the command itself broken?

        As git >= 2.36 does, run it where the answer is known (the good end):
        if it cannot run there either, abort naming it; a command that cannot
        run must never name a culprit. Once per phase and run.
        """
        if self._double_checking or phase in self._runs_at_good_end:
            return
        commit, good = step.commit, self.session.good[0]
        said = cannot_run(outcome.output)
        what = f"the {phase} command ({self._command_of(phase)})"
        if commit in self.session.good:
            raise Aborted(f"{what} cannot run: {outcome.describe()} at the good end "
                          f"{commit[:12]}{f': {said}' if said else ''}")
        prep = self.strategy.prepare(good)
        if prep.skip_reason is not None:
            raise Aborted(f"{what} {outcome.describe()} at {commit[:12]}, and the good end "
                          f"{good[:12]} cannot be prepared to check whether the command runs "
                          f"at all ({prep.skip_reason})")
        self.console.line(f"{phase} {outcome.describe()} at {commit[:12]}: checking that it "
                          f"runs at the good end {good[:12]}", style="bold")
        self.session.current = None  # the work tree will hold the good end
        self.store.save(self.session)
        self._double_checking = True
        try:
            self.strategy.checkout(prep)
            at_good = self._new_step(step.index, good, prep)
            checked: dict[str, Any] = {"commit": good}
            result = _cleaned(self._hook("bisectkit_build", at_good))
            if result is not None:
                step.outputs["build at the good end"] = result.output
                checked["build"] = result.describe()
            if phase == "repro" and (result is None or result.ok):
                result = _cleaned(self._hook("bisectkit_repro", at_good))
                if result is not None:
                    step.outputs["repro at the good end"] = result.output
                    checked["repro"] = result.describe()
        finally:
            self._double_checking = False
        details["double_check"] = checked
        if result is None or phase not in checked:
            raise Aborted(f"{what} {outcome.describe()} at {commit[:12]}, and cannot be "
                          f"checked at the good end {good[:12]}: its build "
                          f"{checked.get('build', 'did not run')}")
        if result.exit_status in (126, 127):
            said = cannot_run(result.output) or said
            raise Aborted(f"{what} cannot run: {result.describe()} at the good end "
                          f"{good[:12]} too{f': {said}' if said else ''}")
        self._runs_at_good_end.add(phase)

    def _command_of(self, phase: str) -> str:
        """The command a phase runs, for messages."""
        return self.commands.get(phase) or "given by a plugin"

    def _test_commit(self, commit: str, prep: Prepared, cache: VerdictCache | None,
                     source: str, affects: bool) -> dict[str, Any]:
        """Check out ``prep`` and test it as an extra step (verify, check-stack, confirm)."""
        index = self.session.next_step_index()
        self.tracer.name_track(index, f"{source}: {commit[:12]}")
        self._step_started[index] = self.tracer.now()
        started = time.perf_counter()
        hit = cache.get(cache.key(prep.trees)) if cache is not None and prep.trees else None
        if hit is not None:
            verdict, reason = self._engine_verdict(hit["verdict"], hit["reason"])
            return self.record(commit, verdict, f"cached: {reason}", source, affects=affects,
                               **prep.details, prepare_s=_since(started))
        self.session.current = None  # the work tree will hold this commit, not a candidate
        self.store.save(self.session)
        written = self.strategy.checkout(prep)
        details = {**prep.details, "files_written": written, "prepare_s": _since(started)}
        step, verdict, reason, details = self._test(commit, prep, details)
        self._remember(cache, prep, verdict, reason, step)
        verdict, reason = self._engine_verdict(verdict, reason)
        return self.record(commit, verdict, reason, source, step=step, affects=affects,
                           **details)

    def verify_range(self, cache: VerdictCache | None) -> None:
        """``--verify-range``: the good end(s) must test good and the bad end bad."""
        s = self.session
        for end, expected in [*((g, "good") for g in s.good), (s.bad, "bad")]:
            want = self.term(expected)
            prep = self.strategy.prepare(end)
            if prep.skip_reason is not None:
                raise RangeNotVerified(f"cannot verify the {want} end {end[:12]}: "
                                       f"{prep.skip_reason}")
            self.console.line(f"verifying the {want} end {end[:12]} "
                              f"{self.strategy.describe(end).subject}", style="bold")
            # Not a verdict on a candidate: recording it would only contradict the
            # range when verification fails (the ends are known by definition).
            step = self._test_commit(end, prep, cache, "verify", affects=False)
            if step["verdict"] != expected:
                raise RangeNotVerified(
                    f"the {want} end {end[:12]} is not {want}: it tested "
                    f"{self.term(step['verdict'])} ({step['reason']}); fix the range or the "
                    "repro before bisecting")

    def confirm_ends(self, decision: Found, cache: VerdictCache | None) -> str | None:
        """Test the end(s) an answer rests on when they were never tested.

        The first bad commit is the bad end itself only if every other
        candidate passed: then a repro that never reproduces here would name
        it. It is the first candidate only if none passed: then a repro that
        always fails would. Either way the end is tested now; one that does not
        test as claimed raises :class:`RangeNotVerified` (exit 5). Returns why
        the answer could not be confirmed (the end cannot be built), or ``None``.
        """
        s = self.session
        tested = {st["commit"] for st in s.steps if st["source"] in ("run", "cache", "verify")}
        lo, _ = engine.bounds(s.candidates, s.verdict_map())
        ends: list[tuple[str, Verdict]] = []
        if lo < 0:
            ends += [(g, "good") for g in s.good if g not in tested]
        if decision.first_bad == s.bad and s.bad not in tested:
            ends.append((s.bad, "bad"))
        for end, expected in ends:
            want = self.term(expected)
            prep = self.strategy.prepare(end)
            if prep.skip_reason is not None:
                return f"the {want} end {end[:12]} cannot be tested: {prep.skip_reason}"
            self.console.line(f"confirming the {want} end {end[:12]} (the answer rests on it)",
                              style="bold")
            step = self._test_commit(end, prep, cache, "verify", affects=False)
            if step["verdict"] == "skip":
                return f"the {want} end {end[:12]} tested skip ({step['reason']})"
            if step["verdict"] != expected:
                hint = ("check that the repro reproduces the problem here, or the range")
                if expected == "good" and self.strategy.prepare_pristine(end) is not None:
                    hint += ("; it was tested with the patch stack applied: if the stack is at "
                             "fault, --check-stack --no-verify tests the answer without it")
                raise RangeNotVerified(
                    f"the {want} end {end[:12]} does not test {want}: it tested "
                    f"{self.term(step['verdict'])} ({step['reason']}); the answer would rest "
                    f"on it, so no commit is named: {hint}")
        return None

    def check_stack(self, first_bad: str, cache: VerdictCache | None) -> dict[str, Any] | None:
        """``--check-stack``: test ``first_bad`` without the patch stack (one more build).

        When pristine upstream is still on the old side, the culprit needs our
        patches to misbehave: the stack itself is to be bisected.
        """
        prep = self.strategy.prepare_pristine(first_bad)
        if prep is None:
            return None
        self.console.line(f"checking {first_bad[:12]} without the patch stack", style="bold")
        return self._test_commit(first_bad, prep, cache, "check-stack", affects=False)

    def confirm_boundary(self, decision: Found, cache: VerdictCache | None) -> dict[str, Any]:
        """Re-test the last old and the first new commit once more; how much to trust it."""
        s = self.session
        lo, hi = engine.bounds(s.candidates, s.verdict_map())
        pair = [(decision.first_bad, "bad")]
        pair.insert(0, (s.candidates[lo], "good") if lo >= 0 else (s.good[0], "good"))
        agree: list[bool] = []
        for commit, expected in pair:
            prep = self.strategy.prepare(commit)
            if prep.skip_reason is not None:  # e.g. the stack conflicts at the bad end
                self.console.line(f"cannot re-test {commit[:12]}: {prep.skip_reason}")
                agree.append(False)
                continue
            self.console.line(f"re-testing {commit[:12]} (expected {self.term(expected)})",
                              style="bold")
            step = self._test_commit(commit, prep, None, "confirm", affects=False)
            agree.append(step["verdict"] == expected)
        disagreeing = [st for st in s.steps if st["source"] != "confirm" and any(
            not f.startswith(TESTED_WITHOUT) for f in st.get("flags", ()))]
        trustworthy = all(agree)
        reason = ("the boundary pair re-tested the same" if trustworthy else
                  "a boundary commit re-tested differently or could not be re-tested: "
                  "the answer is not trustworthy")
        if trustworthy and disagreeing:
            reason += f"; {len(disagreeing)} step(s) had runs that disagreed"
        return {"boundary": [c for c, _ in pair], "agree": agree, "trustworthy": trustworthy,
                "flagged_steps": len(disagreeing), "summary": reason}

    def _remember(self, cache: VerdictCache | None, prep: Prepared, verdict: Verdict,
                  reason: str, step: Step) -> None:
        if cache is not None:
            cache.put(cache.key(prep.trees), verdict, reason, step)

    def run(self, cache: VerdictCache | None, max_env_skips: int = 0) -> Decision:
        """Test candidates until the first bad commit is found or only skips are left.

        ``max_env_skips`` consecutive steps skipped because of the machine
        (``step.environment``) stop the run: the next ones would fail the same.
        """
        decision = self.advance(cache)
        streak = 0  # consecutive steps skipped for the machine's sake
        while isinstance(decision, Next):
            record = self.test_current(cache)
            streak = streak + 1 if record.get("environment") else 0
            if max_env_skips and streak >= max_env_skips:
                raise Aborted(f"stopped after {streak} consecutive steps skipped for the "
                              f"machine, not the commit (last: {record['reason']}); fix the "
                              "machine or the command, or raise --max-env-skips")
            decision = self.advance(cache)
        return decision

    # -- results ---------------------------------------------------------------
    def show_result(self, decision: Decision, rerun: Sequence[str] | None = None) -> int:
        """Print the outcome; exit code 0 when found, 1 when only skips are left.

        ``rerun`` (run options and repro) completes follow-up commands.
        """
        if isinstance(decision, Found):
            sha = decision.first_bad
            self.console.found(self.strategy.describe(sha), self._details_at(sha),
                               self.session.terms["new"])
            self._closing_lines(sha)
            followup = self.followup(decision, rerun or ["--", "REPRO"])
            if followup:
                self.console.line("")
            for line in followup:
                self.console.line(line)
            return EXIT_FOUND
        if isinstance(decision, Inconclusive):
            self.console.inconclusive([self.strategy.describe(c) for c in decision.candidates],
                                      self.session.terms["new"])
            self._closing_lines(None)
            return EXIT_INCONCLUSIVE
        raise AssertionError(decision)

    def _closing_lines(self, first_bad: str | None) -> None:
        lines = self.strategy.closing_lines(first_bad)
        if lines:
            self.console.line("")
        for line in lines:
            self.console.line(line, style="yellow")

    def followup(self, decision: Decision, rerun: Sequence[str]) -> list[str]:
        """Commands to run next (chained bisects), when found."""
        if not isinstance(decision, Found):
            return []
        return [line for followup in self.strategy.followup(decision.first_bad)
                for line in requests.followup_lines(followup, rerun)]

    def term_argv(self) -> list[str]:
        """``--find-fix`` and ``--term-old/--term-new`` as given, to run the same search again."""
        return requests.terms_argv(self.strategy.terms)

    def _details_at(self, sha: str) -> dict[str, Any]:
        """What the strategy did at ``sha`` (patch actions, submodule moves)."""
        for step in reversed(self.session.steps):
            if step["commit"] == sha and step["source"] not in ("manual", "check-stack"):
                return {k: step[k] for k in ("patches", "submodules") if step.get(k)}
        # The bad end is never tested, so compute it.
        details = self.strategy.prepare(sha).details
        return {k: details[k] for k in ("patches", "submodules") if details.get(k)}

    def result_json(self, status: str, decision: Decision | None,
                    error: str | None = None) -> dict[str, Any]:
        s = self.session
        data: dict[str, Any] = {
            "status": status,
            "strategy": self.strategy.name,
            "terms": dict(s.terms),
            "find_fix": s.find_fix,
            "good": s.good,
            "bad": s.bad,
            "range_size": len(s.candidates),
            "first_bad": None,
            "candidates": [],
            "steps": s.steps,
        }
        if isinstance(decision, Found):
            first = decision.first_bad
            info = self.strategy.describe(first)
            data["first_bad"] = first
            data["first_bad_subject"] = info.subject
            data["first_bad_info"] = {"sha": info.sha, "subject": info.subject,
                                      "author": info.author, "date": info.date,
                                      "message": info.message}
            data.update({f"{k}_at_first_bad": v for k, v in self._details_at(first).items()})
            data["previous"] = self._previous(first)
        elif isinstance(decision, Inconclusive):
            data["candidates"] = list(decision.candidates)
        first_bad = decision.first_bad if isinstance(decision, Found) else None
        data.update(self.strategy.result_extra(first_bad))
        if error is not None:
            data["error"] = error
        return data

    def _previous(self, first_bad: str) -> dict[str, Any]:
        """The commit just before the first bad one, and what the strategy did there."""
        i = self.session.candidates.index(first_bad)
        prev = self.session.candidates[i - 1] if i > 0 else self.session.good[0]
        info = self.strategy.describe(prev)
        return {"sha": prev, "subject": info.subject, **self._details_at(prev)}

    def write_json(self, path: str, status: str, decision: Decision | None,
                   error: str | None = None) -> None:
        write_json_atomic(Path(path), self.result_json(status, decision, error))

    # -- log ---------------------------------------------------------------------
    def log_lines(self) -> list[str]:
        """A log that ``replay`` accepts, in the format of ``git bisect log``."""
        s = self.session
        lines = [f"git bisect-patched {shlex.join(s.start_argv)}"]
        for v in s.verdicts:
            if v.source == "auto":
                # Conflict skips are recomputed on replay; keep them as comments.
                lines.append(f"# skip: [{v.commit}] {self._subject(v.commit)} ({v.reason})")
                continue
            if v.source in ("check-stack", "confirm"):
                continue
            word: str = v.verdict
            if s.find_fix or s.terms != {"old": "good", "new": "bad"}:
                # Sides, not repro outcomes: unambiguous when replayed.
                word = {"good": "old", "bad": "new"}.get(v.verdict, v.verdict)
            lines.append(f"# {self.term(v.verdict)}: [{v.commit}] {self._subject(v.commit)}")
            lines.append(f"git bisect-patched {word} {v.commit}")
        try:
            decision: Decision | None = self.decide()
        except engine.ContradictoryVerdicts as exc:
            decision = None
            lines.append(f"# the verdicts contradict each other: {self._contradiction(exc)}")
        if isinstance(decision, Found):
            lines.append(f"# first {s.terms['new']} commit: [{decision.first_bad}] "
                         f"{self._subject(decision.first_bad)}")
        elif isinstance(decision, Inconclusive):
            lines.append("# only skipped commits left to test")
            for c in decision.candidates:
                lines.append(f"# possible first {s.terms['new']} commit: [{c}] "
                             f"{self._subject(c)}")
        return lines

    def _subject(self, sha: str) -> str:
        return self.strategy.describe(sha).subject

#: What shells and ``env`` print when a command cannot run (dash, bash, zsh, busybox).
_CANNOT_RUN = re.compile(
    r"^(?P<line>.*(?:"
    r": (?:command )?not found"
    r"|: command not found: \S+"
    r"|: (?:cannot execute: )?[Pp]ermission denied(?:: \S+)?"
    r"|: bad interpreter: .*"
    r"|: cannot execute(?: binary file)?(?:: .*)?"
    r"|: No such file or directory"
    r"))[ \t]*$", re.MULTILINE)


def cannot_run(output: str) -> str | None:
    """The shell's "not found" / "Permission denied" line in ``output``, if any."""
    m = _CANNOT_RUN.search(output)
    return m.group("line").strip()[:300] if m else None


def _cleaned(outcome: Outcome | None) -> Outcome | None:
    """A plugin's outcome with terminal escapes removed: rules see text, not escapes."""
    if outcome is None:
        return None
    text = clean_output(outcome.output)
    return outcome if text == outcome.output else dataclasses.replace(outcome, output=text)


def _why(outcome: Outcome) -> str:
    """``exit 127: sh: 1: make: not found`` when the shell said why, else ``exit 127``."""
    said = cannot_run(outcome.output) if outcome.exit_status in (126, 127) else None
    return f"{outcome.describe()}: {said}" if said else outcome.describe()


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 4)
