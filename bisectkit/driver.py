"""The bisection pipeline: engine decisions -> materialise -> build -> repro -> classify -> record.

Shared by the manual flow (``start``/``good``/``bad``/``skip``), ``git
bisect-patched run`` and the one-shot ``bisectkit run``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

from bisectkit import engine
from bisectkit.classify import Rules
from bisectkit.console import Console
from bisectkit.engine import Decision, Found, Inconclusive, Next, Verdict
from bisectkit.errors import Aborted, BadInput
from bisectkit.git import Repo
from bisectkit.integrate import IntegrateStrategy
from bisectkit.session import Session, SessionStore, VerdictEntry, write_json_atomic
from bisectkit.step import Step
from bisectkit.strategy import Prepared, Strategy
from bisectkit.submodule import SubmoduleStrategy

_STRATEGIES: dict[str, type[Strategy]] = {
    SubmoduleStrategy.name: SubmoduleStrategy,
    IntegrateStrategy.name: IntegrateStrategy,
}


def make_strategy(superproject: Repo, session: Session) -> Strategy:
    """The strategy object a session was started with."""
    return _STRATEGIES[session.strategy](superproject, session)


@dataclass(frozen=True)
class RunOptions:
    """How each step is built and tested."""

    repro: tuple[str, ...]
    build: str | None = None
    rules: Rules = Rules()
    timeout: float | None = None
    timeout_verdict: Verdict = "skip"
    use_cache: bool = True
    #: Plugin-added option values that change verdicts (part of the cache key).
    plugin_options: tuple[tuple[str, str], ...] = ()
    #: ``-p`` plugins and their options as command-line words (for follow-up commands).
    plugin_argv: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """The run options and repro as command-line words (for follow-up commands)."""
        words: list[str] = []
        if self.build:
            words += ["--build", self.build]
        for flag, patterns in (("--good-if", self.rules.good_if), ("--bad-if", self.rules.bad_if),
                               ("--skip-if", self.rules.skip_if)):
            for p in patterns:
                words.append(f"{flag}={p}")  # '=' keeps a pattern starting with '-' whole
        if self.timeout is not None:
            words += ["--timeout", f"{self.timeout:g}"]
        if self.timeout_verdict != "skip":
            words += ["--timeout-verdict", self.timeout_verdict]
        words += self.plugin_argv
        return [*words, "--", *self.repro] if self.repro else words


class VerdictCache:
    """Verdicts keyed by what was tested (trees on disk + build/repro identity)."""

    def __init__(self, store: SessionStore, identity: str) -> None:
        self._store = store
        self._identity = identity
        self._data = store.load_cache()

    def key(self, trees: Sequence[str]) -> str:
        h = hashlib.sha256(self._identity.encode())
        for t in trees:
            h.update(b"\0" + t.encode())
        return h.hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        return self._data.get(key)

    def put(self, key: str, verdict: Verdict, reason: str, step: Step | None = None) -> None:
        entry: dict[str, Any] = {"verdict": verdict, "reason": reason}
        if step is not None and (step.flags or step.extra):
            # A cached verdict keeps what plugins noted (flaky runs, crash kinds).
            entry.update(flags=list(step.flags), extra=step.extra)
        self._data[key] = entry
        self._store.save_cache(self._data)


def run_identity(opts: RunOptions, root: Path) -> str:
    """What besides the trees decides a verdict: commands, rules, and the scripts' contents."""
    parts: dict[str, Any] = {
        "build": opts.build,
        "repro": list(opts.repro),
        "rules": [list(opts.rules.good_if), list(opts.rules.bad_if), list(opts.rules.skip_if)],
        "timeout": opts.timeout,
        "timeout_verdict": opts.timeout_verdict,
        "plugins": [list(x) for x in opts.plugin_options],
    }
    # Editing repro.sh or build.sh must invalidate old verdicts even though
    # the command line is unchanged.
    scripts = list(opts.repro[:1])
    if opts.build:
        words = shlex.split(opts.build)
        if words:
            scripts.append(words[0])
    digests = {}
    for s in scripts:
        path = Path(s) if os.path.isabs(s) else root / s
        if path.is_file():
            digests[s] = hashlib.sha256(path.read_bytes()).hexdigest()
    parts["scripts"] = digests
    return json.dumps(parts, sort_keys=True)


class Bisector:
    """One session's pipeline, saving the session after every change."""

    def __init__(self, superproject: Repo, store: SessionStore, session: Session,
                 console: Console, pm: pluggy.PluginManager) -> None:
        self.superproject = superproject
        self.store = store
        self.session = session
        self.console = console
        self.pm = pm
        self.strategy = make_strategy(superproject, session)
        # The checked-out candidate as prepared, when this process prepared it.
        self._prepared: Prepared | None = None

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
            self.console.step_start(index, self.strategy.describe(cand), decision.remaining,
                                    decision.steps_left)
            prep = self.strategy.prepare(cand)
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
                    self.record(cand, hit["verdict"], f"cached: {hit['reason']}", "cache",
                                step=step, **prep.details, prepare_s=_since(started))
                    continue
            # Always check out, even when resuming on the same candidate: the user
            # may have moved a work tree between commands, and a checkout onto
            # the same tree writes nothing.
            written = self.strategy.checkout(prep)
            if self.session.current == cand:
                written += self.session.current_step.get("files_written", 0)
            self.console.details(prep.details, written)
            self._prepared = prep
            self.session.current = cand
            self.session.current_step = {**prep.details, "files_written": written,
                                         "prepare_s": _since(started)}
            self.store.save(self.session)
            return decision

    def record(self, commit: str, verdict: Verdict, reason: str, source: str,
               step: Step | None = None, **details: Any) -> dict[str, Any]:
        """Append a verdict and its step record, tell the observers, save."""
        if step is None:
            step = Step(index=self.session.next_step_index(), commit=commit,
                        strategy=self.strategy.name, workdir=self.session.root)
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
        for key, value in step.extra.items():
            record.setdefault(key, value)  # a plugin's extras never replace core fields
        if step.flags:
            record["flags"] = list(step.flags)
        step.record = record
        # Observers may add to the record (the step log adds its path).
        self.pm.hook.bisectkit_step_done(step=step, verdict=verdict)
        self.session.verdicts.append(VerdictEntry(commit, verdict, reason, source))
        self.session.steps.append(record)
        if commit == self.session.current:
            self.session.current = None
        self.store.save(self.session)
        return record

    # -- manual marking ------------------------------------------------------
    def mark(self, verdict: Verdict, revs: Sequence[str], source: str = "manual") -> None:
        """``good``/``bad``/``skip``: with no revs, the commit under test now."""
        s = self.session
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
        trial.update(dict.fromkeys(shas, verdict))
        try:
            engine.bounds(s.candidates, trial)
        except engine.ContradictoryVerdicts as exc:
            raise BadInput(f"cannot mark {verdict}: {exc}") from exc
        for sha in shas:
            details = dict(s.current_step) if sha == s.current else {}
            reason = "marked by hand" if source == "manual" else f"from {source}"
            self.record(sha, verdict, reason, source, **details)

    # -- automatic testing -----------------------------------------------------
    def test_current(self, cache: VerdictCache | None) -> None:
        """Build and run the repro on the checked-out candidate (through the plugin hooks)."""
        s = self.session
        assert s.current is not None
        cand = s.current
        prep = self._prepared
        if prep is None or prep.candidate != cand:
            prep = self.strategy.prepare(cand)
        env = dict(os.environ)
        env.update(prep.env)
        index = s.next_step_index()
        env["BISECTKIT_STEP"] = str(index)
        step = Step(index=index, commit=cand, strategy=self.strategy.name, env=env,
                    workdir=s.root)
        details: dict[str, Any] = dict(s.current_step)
        hook = self.pm.hook
        hook.bisectkit_step_start(step=step)
        built = hook.bisectkit_build(step=step)
        if built is not None:
            step.outputs["build"] = built.output
            details["build_s"] = round(built.duration, 3)
            if not built.ok:
                reason = f"build failed ({built.describe()})"
                self._remember(cache, prep, "skip", reason, step)
                self.record(cand, "skip", reason, "run", step=step, **details)
                return
        outcome = hook.bisectkit_repro(step=step)
        if outcome is None:
            raise BadInput("nothing runs the repro: give a repro command or a plugin that "
                           "implements bisectkit_repro")
        step.outputs["repro"] = outcome.output
        details["repro_s"] = round(outcome.duration, 3)
        verdict = hook.bisectkit_classify(step=step, outcome=outcome)
        if verdict is None:
            raise Aborted(f"repro {outcome.describe()} at {cand[:12]}: exit codes >= 128 and "
                          "signals abort the bisection")
        reason = step.reason or outcome.describe()
        self._remember(cache, prep, verdict, reason, step)
        self.record(cand, verdict, reason, "run", step=step, **details)

    def _remember(self, cache: VerdictCache | None, prep: Prepared, verdict: Verdict,
                  reason: str, step: Step) -> None:
        if cache is not None:
            cache.put(cache.key(prep.trees), verdict, reason, step)

    def run(self, cache: VerdictCache | None) -> Decision:
        """Test candidates until the first bad commit is found or only skips are left."""
        decision = self.advance(cache)
        while isinstance(decision, Next):
            self.test_current(cache)
            decision = self.advance(cache)
        return decision

    # -- results ---------------------------------------------------------------
    def show_result(self, decision: Decision, rerun: Sequence[str] | None = None) -> int:
        """Print the outcome; exit code 0 when found, 1 when only skips are left.

        ``rerun`` (run options and repro) completes follow-up commands.
        """
        if isinstance(decision, Found):
            sha = decision.first_bad
            self.console.found(self.strategy.describe(sha), self._details_at(sha))
            followup = self.strategy.followup(sha, rerun or ["--", "REPRO"])
            if followup:
                self.console.line("")
            for line in followup:
                self.console.line(line)
            return 0
        if isinstance(decision, Inconclusive):
            self.console.inconclusive([self.strategy.describe(c) for c in decision.candidates])
            return 1
        raise AssertionError(decision)

    def _details_at(self, sha: str) -> dict[str, Any]:
        """What the strategy did at ``sha`` (patch actions, submodule moves)."""
        for step in reversed(self.session.steps):
            if step["commit"] == sha and step["source"] != "manual":
                return {k: step[k] for k in ("patches", "submodules") if step.get(k)}
        # The bad end is never tested, so compute it.
        return self.strategy.prepare(sha).details

    def result_json(self, status: str, decision: Decision | None,
                    error: str | None = None) -> dict[str, Any]:
        s = self.session
        data: dict[str, Any] = {
            "status": status,
            "strategy": self.strategy.name,
            "good": s.good,
            "bad": s.bad,
            "range_size": len(s.candidates),
            "first_bad": None,
            "candidates": [],
            "steps": s.steps,
        }
        if isinstance(decision, Found):
            info = self.strategy.describe(decision.first_bad)
            data["first_bad"] = decision.first_bad
            data["first_bad_subject"] = info.subject
            data.update({f"{k}_at_first_bad": v
                         for k, v in self._details_at(decision.first_bad).items()})
        elif isinstance(decision, Inconclusive):
            data["candidates"] = list(decision.candidates)
        first_bad = decision.first_bad if isinstance(decision, Found) else None
        data.update(self.strategy.result_extra(first_bad))
        if error is not None:
            data["error"] = error
        return data

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
            lines.append(f"# {v.verdict}: [{v.commit}] {self._subject(v.commit)}")
            lines.append(f"git bisect-patched {v.verdict} {v.commit}")
        decision = self.decide()
        if isinstance(decision, Found):
            lines.append(f"# first bad commit: [{decision.first_bad}] "
                         f"{self._subject(decision.first_bad)}")
        elif isinstance(decision, Inconclusive):
            lines.append("# only skipped commits left to test")
            for c in decision.candidates:
                lines.append(f"# possible first bad commit: [{c}] {self._subject(c)}")
        return lines

    def _subject(self, sha: str) -> str:
        return self.strategy.describe(sha).subject

    # -- reset -------------------------------------------------------------------
    def reset(self) -> list[str]:
        """Restore every HEAD and work tree, keep the log, end the session; what moved."""
        moved = self.strategy.restore()
        self.store.last_log_path.write_text("\n".join(self.log_lines()) + "\n", encoding="utf-8")
        self.store.delete()
        return moved


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 4)
