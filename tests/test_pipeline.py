"""The pipeline in-process: no git, no subprocess, a strategy and a repro in Python.

A :class:`Bisection` is driven with a strategy whose candidates are plain
strings and a repro plugin that fails from a chosen candidate on; the real
classifiers, hooks facade, session store and verdict cache do the rest. What
the user would see arrives as hook calls (the pipeline never prints).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bisectkit.engine import Found, Inconclusive
from bisectkit.errors import Aborted, BadInput, PluginFailed
from bisectkit.execute.classify import ExitStatusPlugin, RulesPlugin
from bisectkit.model import (
    CommitInfo,
    Config,
    HeadState,
    Outcome,
    Rules,
    RunOptions,
    Sha,
    Step,
    StepRecord,
    Terms,
    Verdict,
    hookimpl,
)
from bisectkit.model.params import KINDS, Params
from bisectkit.pipeline.bisection import Bisection
from bisectkit.pipeline.breaker import SkipBreaker, skip_kind
from bisectkit.pipeline.replaylog import log_lines, parse_log
from bisectkit.pipeline.results import result_json
from bisectkit.pipeline.verify import confirm_ends, run_to_end
from bisectkit.plugin.facade import Hooks
from bisectkit.plugin.manager import AUTOLOAD_OFF, PluginRequest, make_plugin_manager
from bisectkit.safety.undertest import Held
from bisectkit.store.cache import VerdictCache
from bisectkit.store.cachekey import RunIdentity
from bisectkit.store.session import Session, SessionStore
from bisectkit.strategies.base import Prepared, Strategy

CANDIDATES = [f"{i:040x}" for i in range(1, 17)]  # 16 commits, oldest first
# The fake strategy's sessions keep the parameters every session may hold.
KINDS.setdefault("fake", Params)
GOOD = "f" * 40


class FakeStrategy(Strategy):
    """Candidates are strings; ``conflicts`` cannot be materialised (skipped unbuilt)."""

    name = "fake"

    def __init__(self, session: Session, conflicts: frozenset[str] = frozenset()) -> None:
        super().__init__(None, session, None)  # type: ignore[arg-type]  # no repository
        self.conflicts = conflicts
        self.checked_out: list[str] = []

    def describe(self, sha: str) -> CommitInfo:
        return CommitInfo(Sha(sha), f"subject of {sha[-4:]}", "", "A U Thor", "2026-01-01", ())

    def resolve(self, rev: str) -> str:
        return next(c for c in [*CANDIDATES, GOOD] if c.startswith(rev))

    def prepare(self, candidate: str) -> Prepared:
        skip = "conflict in local patch" if candidate in self.conflicts else None
        return Prepared(candidate, (f"tree-{candidate}",), {"patches": []}, skip_reason=skip)

    def checkout(self, prepared: Prepared) -> int:
        self.checked_out.append(prepared.candidate)
        return 1

    def under_test(self, prepared: Prepared) -> dict[str, Held]:
        return {}  # no repository: nothing on disk to move

    def header_lines(self) -> list[str]:
        return ["fake"]

    def target_argv(self) -> list[str]:
        return ["--submodule", "third_party/llvm-project"]

    def stack_unchecked(self) -> str | None:
        return "not checked: submodule third_party/llvm-project has no local patches"


class Repro:
    """Fails (exit 1) from candidate ``first_bad`` on (``fixed``: passes from it on, failing
    before); records what it ran and saw."""

    def __init__(self, first_bad: int, fixed: bool = False) -> None:
        self.first_bad = first_bad
        self.fixed = fixed
        self.ran: list[str] = []
        self.seen: list[tuple[str, Any]] = []

    @hookimpl
    def bisectkit_repro(self, step: Step) -> Outcome:
        self.ran.append(step.commit)
        index = CANDIDATES.index(step.commit) if step.commit in CANDIDATES else -1
        return Outcome(1 if (index >= self.first_bad) != self.fixed else 0, "output\n")

    @hookimpl
    def bisectkit_candidate(self, index: int, info: CommitInfo, remaining: int,
                            steps_left: int) -> None:
        self.seen.append(("candidate", info.sha))

    @hookimpl
    def bisectkit_message(self, text: str, kind: str) -> None:
        self.seen.append(("message", text))

    @hookimpl
    def bisectkit_step_done(self, step: Step, verdict: Verdict) -> None:
        self.seen.append(("done", step.record["verdict"]))


PLAIN = Terms()
NO_RULES = Rules()


def _bisection(tmp_path: Path, repro: Repro, terms: Terms = PLAIN,
               conflicts: frozenset[str] = frozenset(), rules: Rules = NO_RULES,
               extra: tuple[object, ...] = ()) -> Bisection:
    builtins = [("exit-status", ExitStatusPlugin()), ("rules", RulesPlugin()),
                ("repro-stub", repro), *((f"extra{i}", p) for i, p in enumerate(extra))]
    pm, _ = make_plugin_manager(builtins, PluginRequest([], []), {AUTOLOAD_OFF: "1"})
    hooks = Hooks(pm)
    hooks.configure(Config(option=None, pluginmanager=pm, run=RunOptions((), rules=rules)))
    session = Session(strategy="fake", root=str(tmp_path), bad=CANDIDATES[-1], good=[GOOD],
                      pathspec=[], candidates=list(CANDIDATES),
                      orig={".": HeadState(None, GOOD)}, params=Params(),
                      start_argv=["start"], terms=terms)
    store = SessionStore(tmp_path / "gitdir")
    store.save(session)
    return Bisection(None, store, session, hooks, None,  # type: ignore[arg-type]
                     strategy=FakeStrategy(session, conflicts))


def _cache(tmp_path: Path) -> VerdictCache:
    return VerdictCache(SessionStore(tmp_path / "gitdir"), RunIdentity({}, frozenset()))


@pytest.mark.parametrize("first_bad", [0, 1, 7, 15])
def test_run_finds_the_first_bad_commit_in_log2_steps(tmp_path: Path, first_bad: int) -> None:
    repro = Repro(first_bad)
    b = _bisection(tmp_path, repro)
    decision = b.run(None)
    assert decision == Found(CANDIDATES[first_bad])
    assert len(repro.ran) <= math.ceil(math.log2(len(CANDIDATES))) + 1
    assert [st.commit for st in b.session.steps] == repro.ran
    assert all(st.source == "run" for st in b.session.steps)
    # The session on disk says the same (StepRecord round-trips through JSON).
    assert b.store.load().steps == b.session.steps


def test_the_pipeline_reports_through_hooks_and_never_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repro = Repro(5)
    b = _bisection(tmp_path, repro)
    b.run(None)
    assert capsys.readouterr() == ("", "")
    kinds = [kind for kind, _ in repro.seen]
    assert kinds.count("candidate") == kinds.count("done") == len(repro.ran)


def test_a_candidate_that_cannot_be_materialised_is_skipped_unbuilt(tmp_path: Path) -> None:
    repro = Repro(8)
    b = _bisection(tmp_path, repro, conflicts=frozenset(CANDIDATES[7:9]))
    decision = b.run(None)
    auto = [st for st in b.session.steps if st.source == "auto"]
    assert auto and all(st.verdict == "skip" and st.commit not in repro.ran for st in auto)
    # Only skipped commits border the change: the answer says so instead of guessing.
    assert isinstance(decision, Inconclusive)
    assert CANDIDATES[8] in decision.candidates


def test_find_fix_swaps_the_sides_and_records_the_terms(tmp_path: Path) -> None:
    # Looking for a fix: the repro fails (exit 1) up to candidate 5, passes from 6 on.
    repro = Repro(6, fixed=True)
    b = _bisection(tmp_path, repro, terms=Terms.of(find_fix=True))
    assert b.run(None) == Found(CANDIDATES[6])
    assert {st.term for st in b.session.steps} <= {"broken", "fixed"}
    assert result_json(b, "found", Found(CANDIDATES[6]))["terms"] == {"old": "broken",
                                                                       "new": "fixed"}


def test_cached_verdicts_are_reused_without_a_checkout(tmp_path: Path) -> None:
    first = Repro(3)
    _bisection(tmp_path, first).run(_cache(tmp_path))
    again = Repro(3)
    b = _bisection(tmp_path, again)
    assert b.run(_cache(tmp_path)) == Found(CANDIDATES[3])
    assert again.ran == []
    assert {st.source for st in b.session.steps} == {"cache"}
    assert b.strategy.checked_out == []  # type: ignore[attr-defined]


def test_consecutive_environment_skips_stop_the_run(tmp_path: Path) -> None:
    class Machine:
        @hookimpl
        def bisectkit_classify(self, step: Step, outcome: Outcome) -> Verdict:
            step.environment = "no device"
            return "skip"

    b = _bisection(tmp_path, Repro(3), extra=(Machine(),))
    with pytest.raises(Aborted, match="3 consecutive steps skipped for the machine"):
        b.run(None, SkipBreaker(3, 0))


def _skip(reason: str, environment: str | None = None) -> StepRecord:
    return StepRecord(index=1, commit="0" * 40, verdict="skip", reason=reason, source="run",
                      environment=environment)


def test_skips_in_a_row_for_the_same_reason_stop_at_the_limit() -> None:
    breaker = SkipBreaker(0, 3)
    for reason in ("timed out after 1 s", "timed out after 2 s"):
        breaker.tested(_skip(reason))
    with pytest.raises(Aborted, match=r"3 steps in a row were skipped \(timed out\)"):
        breaker.tested(_skip("timed out after 1 s"))


def test_failed_builds_never_stop_a_run() -> None:
    """A broken upstream range around the midpoint is walked one neighbour at a time."""
    breaker = SkipBreaker(0, 3)
    for _ in range(20):
        breaker.tested(_skip("build failed (exit 2)"))
    breaker.tested(_skip("exit 125"))
    breaker.tested(_skip("build failed (exit 2)"))  # ends the exit-125 streak
    breaker.tested(_skip("exit 125"))
    breaker.tested(_skip("exit 125"))


def test_another_reason_or_a_verdict_starts_the_count_again() -> None:
    breaker = SkipBreaker(0, 2)
    good = StepRecord(index=1, commit="0" * 40, verdict="good", reason="exit 0", source="run")
    for record in (_skip("exit 125"), _skip("build failed (exit 1)"), _skip("exit 125"), good,
                   _skip("exit 125")):
        breaker.tested(record)
    unlimited = SkipBreaker(0, 0)
    for _ in range(100):
        unlimited.tested(_skip("exit 125"))


def test_skip_kinds_leave_out_what_changes_between_steps() -> None:
    assert skip_kind("timed out after 0.5 s") == "timed out"
    assert skip_kind("exit 127, a command cannot run: 'sh: 1: x: not found'") == \
        "exit 127, a command cannot run"
    assert skip_kind("exit 125; outside the range by then, not counted") == "exit 125"


def test_a_plugin_that_raises_is_named_and_its_traceback_kept(tmp_path: Path) -> None:
    class Broken:
        @hookimpl
        def bisectkit_classify(self, step: Step, outcome: Outcome) -> Verdict:
            raise RuntimeError("boom")

    b = _bisection(tmp_path, Repro(3), extra=(Broken(),))
    with pytest.raises(PluginFailed, match="extra0.*bisectkit_classify.*RuntimeError: boom"
                       ".*step-1.log"):
        b.run(None)
    assert "RuntimeError: boom" in (b.store.logs_dir / "step-1.log").read_text()


def test_marks_are_checked_against_the_range_in_the_sessions_words(tmp_path: Path) -> None:
    b = _bisection(tmp_path, Repro(3), terms=Terms("before", "after"))
    b.mark("old", [CANDIDATES[5]])
    with pytest.raises(BadInput, match="cannot mark after: .* is older than .*, marked "
                                       "before"):
        b.mark("new", [CANDIDATES[2]])
    with pytest.raises(BadInput, match="is the before end, not a candidate"):
        b.mark("new", [GOOD])


def test_the_log_replays_the_same_marks(tmp_path: Path) -> None:
    b = _bisection(tmp_path, Repro(3))
    b.mark("good", [CANDIDATES[1]])
    b.mark("bad", [CANDIDATES[9]])
    lines = log_lines(b.parts)
    log = parse_log("\n".join(lines), Path("log"))
    assert log.start == ["start"]
    assert log.marks == [["good", CANDIDATES[1]], ["bad", CANDIDATES[9]]]
    with pytest.raises(BadInput, match="log:1: not a bisect-patched or git bisect command"):
        parse_log("git log\n", Path("log"))


def test_a_git_bisect_log_reads_as_start_words_and_sides() -> None:
    text = ("git bisect start '--term-new' 'slow' '--term-old=fast' '--no-checkout' "
            "'--first-parent' B G '--' 'lib/'\n# slow: [B] subject\n"
            "git bisect fast F1\ngit bisect skip S1 S2\ngit-bisect slow N1\n")
    log = parse_log(text, Path("log"))
    assert log.git and log.pathspec == ["lib/"]
    assert log.start == ["start", "--term-new", "slow", "--term-old", "fast",
                         "--first-parent", "B", "G"]
    assert log.marks == [["old", "F1"], ["skip", "S1", "S2"], ["new", "N1"]]
    with pytest.raises(BadInput, match="log:2: cannot replay 'git bisect good'"):
        parse_log("git bisect start --term-new slow --term-old fast\ngit bisect good X\n",
                  Path("log"))
    with pytest.raises(BadInput, match="log:2: not a bisect-patched or git bisect command"):
        parse_log("git bisect start\ngit bisect-patched good X\n", Path("log"))
    with pytest.raises(BadInput, match="option --bogus has no meaning here"):
        parse_log("git bisect start --bogus\n", Path("log"))


def test_marks_saved_once_are_on_disk_at_the_end_and_not_before(tmp_path: Path) -> None:
    b = _bisection(tmp_path, Repro(3))
    on_disk = b.store.session_path.read_bytes()
    with b.store.saved_once():
        b.mark("good", [CANDIDATES[1]])
        b.mark("bad", [CANDIDATES[9]])
        assert b.store.session_path.read_bytes() == on_disk  # a kill here: as it was
    assert [v.commit for v in b.store.load().verdicts] == [CANDIDATES[1], CANDIDATES[9]]
    on_disk = b.store.session_path.read_bytes()
    with pytest.raises(BadInput), b.store.saved_once():
        b.mark("good", [CANDIDATES[2]])
        b.mark("bad", [GOOD])  # not in the range: the marks so far are not saved
    assert b.store.session_path.read_bytes() == on_disk
    b.mark("skip", [CANDIDATES[4]])  # saved as usual again
    assert b.store.load().verdicts[-1].commit == CANDIDATES[4]


def test_an_answer_resting_on_the_untested_bad_end_is_confirmed(tmp_path: Path) -> None:
    # Every candidate but the bad end passes: the answer rests on the bad end.
    repro = Repro(15)
    b = _bisection(tmp_path, repro)
    decision = b.run(None)
    assert decision == Found(CANDIDATES[15]) and CANDIDATES[15] not in repro.ran
    assert confirm_ends(b, decision, None) is None
    assert repro.ran[-1] == CANDIDATES[15]
    assert b.session.steps[-1].source == "verify"
    assert ("message", f"confirming the bad end {CANDIDATES[15][:12]} (the answer rests on it)"
            ) in repro.seen


def test_run_to_end_reports_what_its_checks_concluded(tmp_path: Path) -> None:
    repro = Repro(15)
    b = _bisection(tmp_path, repro)
    decision, checks = run_to_end(b, None, RunOptions(()), check_the_stack=True)
    assert decision == Found(CANDIDATES[15])
    # The bad end was confirmed (no "unconfirmed"); there is no stack to take away.
    assert "unconfirmed" not in checks and repro.ran[-1] == CANDIDATES[15]
    assert checks["check_stack"] == {
        "verdict": None, "reason": None, "stack_implicated": None,
        "conclusion": "not checked: submodule third_party/llvm-project has no local patches"}
    assert b.session.params.stack_implicated is False
