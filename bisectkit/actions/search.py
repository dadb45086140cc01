"""The procedure of ``bisectkit actions``, from the repro to the first bad action.

1. **Enumerate twice** with every action run: how many (the total), and which (names,
   units, MLIR locations, the pass they ran in). Two enumerations that differ mean the
   numbering is not stable (threads, an input that changes): nothing is named
   (:class:`~bisectkit.errors.NotEnumerable`). A counter that counted nothing is refused
   the same way: an unknown tag, a counter compiled out of the tool.
2. **The ends**: limit 0 (no action) must be good and the total (every action) bad;
   otherwise the behaviour is not caused by actions bisectkit can skip
   (:class:`~bisectkit.errors.RangeNotVerified`, exit 5).
3. **Bisect** limits 1..total-1 with the commit bisection's engine (skips stepped
   around, ``--jobs K`` with its k-ary schedule): the smallest bad limit N names action
   #N. A compiler that crashes under a limit (a half-optimised input hitting an
   unsupported path) is *skip*, unless the full run crashes too (then the crash is what
   is bisected). At most ceil(log2(total+1)) + 2 limit runs in all.
4. **Probe** (``--probe K``): K more limits spread over the range; a bad one below N or
   a good one from N up is reported as non-monotone, never hidden.

Numbering is prefix-only: limits N and N+1 run the same first N actions, so "action N"
is well defined, but a run that skips an earlier action renumbers the later ones. Every
limit here is a prefix.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from bisectkit import engine
from bisectkit.actions import details, listing
from bisectkit.actions.kinds import NEVER, SINGLE_THREAD, Kind, NothingCounted
from bisectkit.actions.listing import Action, Listing, ListingError
from bisectkit.actions.tester import Ran, Tester, crash_line, read_log
from bisectkit.errors import NotEnumerable, RangeNotVerified
from bisectkit.model import Verdict
from bisectkit.text import plural

#: What an LLVM tool says of a flag it does not know (``cl::opt``).
_UNKNOWN_FLAG = "Unknown command line argument '" + SINGLE_THREAD + "'"

Say = Callable[[str, str], None]


@dataclass
class Answer:
    """What ``bisectkit actions`` found: the first bad action (``first_bad``: its number,
    None when only skips separate good from bad: ``candidates``), the listing it was
    named from, every run, and the probes that contradict a monotone answer."""

    kind: Kind
    listing: Listing
    first_bad: int | None
    candidates: tuple[int, ...]
    runs: list[Ran]
    #: The limits tested and their verdicts (limit 0 and the total included).
    verdicts: dict[int, Verdict]
    repro: tuple[str, ...]
    prefix: tuple[str, ...]
    non_monotone: list[tuple[int, Verdict]] = field(default_factory=list)
    probes: tuple[int, ...] = ()
    #: Notes for the user (names not available, threads, crashes taken as skip).
    notes: list[str] = field(default_factory=list)
    #: ``--ir``: the diff of the IR before and after the action (None: not obtained)
    #: and the line that introduces it or says why it is missing.
    ir_diff: str | None = None
    ir_note: str = ""
    #: ``--confirm``: the run of every action but the first bad one.
    confirm: dict[str, Any] | None = None
    #: The runs ``--ir`` and ``--confirm`` took (not counted as limit runs).
    checks: list[Ran] = field(default_factory=list)
    #: An OptBisect answer in a tool with live debug counters: the counter queried most
    #: inside the first bad pass, and how often (the second level's ``--kind``).
    counter_inside: tuple[str, int] | None = None

    @property
    def total(self) -> int:
        return self.listing.total

    @property
    def action(self) -> Action | None:
        """The first bad action, as named (None: not named, or not found)."""
        return self.listing.named(self.first_bad) if self.first_bad is not None else None

    @property
    def limit_runs(self) -> int:
        """Repro runs at a limit (the ends and the bisection, probes excluded)."""
        return sum(1 for r in self.runs if r.limit is not None and r.limit not in self.probes)

    @property
    def enumeration_runs(self) -> int:
        return sum(1 for r in self.runs if r.limit is None)

    @property
    def bound(self) -> int:
        """The most limit runs the procedure may take: ceil(log2(total+1)) + 2."""
        return math.ceil(math.log2(self.total + 1)) + 2

    def replay(self, limit: int) -> str:
        """The command line that runs the repro at ``limit`` by hand."""
        words = " ".join((*self.prefix, *self.kind.limit(limit)))
        return f"BISECTKIT_ACTIONS={shlex.quote(words)} {shlex.join(self.repro)}"

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (``"strategy": "actions"``)."""
        action = self.action
        found = self.first_bad is not None
        return {
            "strategy": "actions", "status": "found" if found else "inconclusive",
            "kind": self.kind.name, "total": self.total,
            "first_bad": self.first_bad, "candidates": list(self.candidates),
            "action": _action_json(action) if action else None,
            "good_limit": self.first_bad - 1 if found and self.first_bad else None,
            "bad_limit": self.first_bad,
            "replay": {"good": self.replay(self.first_bad - 1),
                       "bad": self.replay(self.first_bad)} if self.first_bad else None,
            "runs": self._runs_json(),
            "non_monotone": [{"limit": n, "verdict": v} for n, v in self.non_monotone],
            "steps": [r.to_json() for r in sorted([*self.runs, *self.checks],
                                                  key=lambda r: r.index)],
            "notes": list(self.notes),
            **self._details_json(),
        }

    def _details_json(self) -> dict[str, Any]:
        """The keys ``--within``, ``--ir`` and ``--confirm`` add."""
        out: dict[str, Any] = {}
        parent = self.listing.parent
        if self.kind.within is not None and parent is not None:
            out["within"] = {"tag": self.kind.parent_tag, "number": self.kind.within,
                             "action": parent.describe(), "before": self.kind.offset,
                             "counted": self.kind.counted}
        if self.ir_note:
            out["ir_diff"], out["ir_note"] = self.ir_diff, self.ir_note
        if self.confirm is not None:
            out["confirm"] = self.confirm
        if self.checks:
            out["runs"] = {**self._runs_json(), "checks": len(self.checks)}
        if self.counter_inside is not None:
            out["counter_inside"] = {"name": self.counter_inside[0],
                                     "queries": self.counter_inside[1]}
        return out

    def _runs_json(self) -> dict[str, int]:
        return {"enumeration": self.enumeration_runs, "limits": self.limit_runs,
                "probes": len(self.probes), "bound": self.bound}


def _action_json(action: Action) -> dict[str, Any]:
    return {"number": action.number, "name": action.name, "unit": action.unit,
            "loc": action.loc, "pass": action.within}


class Search:
    """One ``bisectkit actions`` procedure: its kind, its tester, how many runs at once,
    how many probes, and ``say(text, kind)`` for its progress lines."""

    def __init__(self, kind: Kind, tester: Tester, repro: Sequence[str], say: Say,
                 jobs: int = 1, probes: int = 0, details: Sequence[str] = ()) -> None:
        self.kind = kind
        self.tester = tester
        self.repro = tuple(repro)
        self.say = say
        self.jobs = max(1, jobs)
        self.probes = probes
        #: What to add to an answer found: ``"ir"``, ``"confirm"``.
        self.details = tuple(details)

    def run(self) -> Answer:
        """Enumerate, test the ends, bisect, probe: the answer (or a refusal raised)."""
        found = self.enumerate()
        self.kind = self.kind.settled(found)
        total = found.total
        self.say(f"{total} actions ({self.kind.name}); the two enumerations agree"
                 + ("" if found.actions else "; the tool does not name them"), "progress")
        verdicts, crashed = self._ends(total)
        late: list[tuple[int, Verdict]] = []
        first, candidates = self._bisect(total, verdicts, crashed, late)
        answer = Answer(self.kind, found, first, candidates, list(self.tester.runs),
                        verdicts, self.repro, self.tester.prefix)
        if first is not None:
            answer.non_monotone.extend((n, v) for n, v in sorted(late)
                                       if _contradicts(n, v, first))
        if first is not None and self.probes:
            self._probe(answer, crashed)
        answer.runs = sorted(self.tester.runs, key=lambda r: r.index)
        answer.notes = [r.note for r in answer.runs if r.note]
        if not found.actions:
            answer.notes.append("the tool does not name its actions: only numbers are known")
        if first is not None:
            self._details(answer)
        return answer

    def _details(self, answer: Answer) -> None:
        """``--ir`` and ``--confirm`` for the first bad action found."""
        assert answer.first_bad is not None
        done = len(self.tester.runs)
        if "ir" in self.details:
            self.say(f"the IR before and after action #{answer.first_bad}", "progress")
            found = details.ir_diff(self.kind, self.tester, answer.first_bad, answer.action)
            answer.ir_diff, answer.ir_note = found.diff, found.note
        if self.kind.family == "opt-bisect" and answer.listing.counters:
            answer.counter_inside = self._counter_inside(answer.first_bad,
                                                         answer.listing.counters)
        if "confirm" in self.details:
            self.say(f"every action but #{answer.first_bad}", "progress")
            answer.confirm = details.confirm(self.kind, self.tester, answer.first_bad,
                                             answer.total)
        answer.checks = self.tester.runs[done:]

    def _counter_inside(self, number: int, live: Sequence[tuple[str, int]]
                        ) -> tuple[str, int] | None:
        """One run at limit ``number`` printing the queries of every ``live`` counter: the
        one queried most inside pass ``number`` (None: none is)."""
        every = ",".join(f"{name}=0-{NEVER}" for name, _ in live)
        ran = self.tester.run(f"counters in pass {number}", (
            f"-opt-bisect-limit={number}", f"-debug-counter={every}",
            "-print-debug-counter-queries"), None, judge=False)
        made = [(_queries_in(ran.text, name, number), name) for name, _ in live]
        count, name = max(made, default=(0, ""))
        return (name, count) if count else None

    # -- 1. enumeration ------------------------------------------------------------------

    def enumerate(self) -> Listing:
        """Two enumerations that agree (:class:`NotEnumerable` otherwise)."""
        self.tester.prefix = (SINGLE_THREAD,)
        first = self._enumeration(1)
        second = self._enumeration(2)
        why = listing.difference(first, second)
        if why is not None:
            raise NotEnumerable(
                f"the two enumerations of the compiler's actions differ ({why}): the run is "
                "not deterministic (threads, an input or a flag that changes); no action can "
                "be named")
        return first

    def _enumeration(self, n: int) -> Listing:
        log = self.tester.scratch / f"actions-{n}.log"
        runs = self.kind.enumerations(str(log))
        # The second enumeration makes its runs in the other order (count, name, name,
        # count): a repro that alternates between two compilations then shows each
        # enumeration both, instead of giving both the same pair.
        order = range(len(runs)) if n == 1 else reversed(range(len(runs)))
        texts: dict[int, str] = {}
        last: Ran | None = None
        for i in order:
            ran = self.tester.run(f"enumeration {n}", runs[i].flags, None, judge=False)
            if self.tester.prefix and not self.kind.mlir and _UNKNOWN_FLAG in ran.text:
                # Not an MLIR tool (opt, llc): it runs on one thread anyway.
                self.tester.prefix = ()
                ran = self.tester.run(f"enumeration {n}", runs[i].flags, None, judge=False)
            if ran.cut:
                raise NotEnumerable(
                    "the repro printed more than --keep-output keeps, and the middle of the "
                    "compiler's action lines was dropped: append the compiler's stderr to "
                    "$BISECTKIT_ACTION_LOG (read whole), or raise --keep-output")
            texts[i] = ran.text
            last = ran
        try:
            return self.kind.read(tuple(texts[i] for i in range(len(runs))), read_log(log))
        except NothingCounted as exc:
            said = [line for line in (last.text if last else "").splitlines() if line.strip()]
            tail = f"; it printed {said[-1].strip()[:120]!r}" if said else ""
            raise NotEnumerable(f"{exc} (the repro: {last.reason if last else '?'}{tail}); "
                                "no action can be named") from None
        except ListingError as exc:
            raise NotEnumerable(f"{exc}; no action can be named") from None

    # -- 2. the ends -----------------------------------------------------------------------

    def _ends(self, total: int) -> tuple[dict[int, Verdict], bool]:
        """Limit 0 good, limit ``total`` bad (:class:`RangeNotVerified` otherwise); the
        verdicts and whether the full run crashed the compiler."""
        none, every = self._test_all([0, total])
        if every.verdict != "bad" or none.verdict != "good":
            wrong = none if none.verdict != "good" else every
            what = self.kind.ends(total)[0 if wrong is none else 1]
            expected = "good" if wrong is none else "bad"
            crash = crash_line(wrong.text) if wrong.crashed else None
            why = f"{wrong.reason}; the compiler crashed: {crash}" if crash else wrong.reason
            raise RangeNotVerified(
                f"{what} the repro says {wrong.verdict}, not {expected} ({why}): "
                "the behaviour is not caused by actions bisectkit can skip here; "
                "nothing to bisect")
        return {0: "good", total: "bad"}, every.crashed

    # -- 3. the bisection ------------------------------------------------------------------

    def _bisect(self, total: int, verdicts: dict[int, Verdict], crashed: bool,
                late: list[tuple[int, Verdict]]) -> tuple[int | None, tuple[int, ...]]:
        """The smallest bad limit (or the limits only skips leave open). With ``--jobs``,
        a verdict that lands outside the range the others left (a good limit above a bad
        one: not monotone) is not counted, as in a parallel commit bisection, but kept in
        ``late`` (the engine cannot take verdicts that contradict each other)."""
        candidates = [str(n) for n in range(1, total + 1)]
        known: dict[str, Verdict] = {str(total): "bad"}
        with ThreadPoolExecutor(max_workers=self.jobs,
                                thread_name_prefix="bisectkit-actions") as pool:
            flying: dict[Future[Ran], int] = {}
            try:
                while True:
                    plan = engine.schedule(candidates, known, [str(n) for n in flying.values()],
                                           self.jobs - len(flying), self.jobs)
                    if isinstance(plan, engine.Found):
                        return int(plan.first_bad), ()
                    if isinstance(plan, engine.Inconclusive):
                        return None, tuple(int(c) for c in plan.candidates)
                    for pick in plan.commits:
                        limit = int(pick)
                        self.say(f"limit {limit} of {total}: "
                                 f"{plural(plan.remaining, 'limit')} left, about "
                                 f"{plural(plan.rounds_left, 'more run')}", "progress")
                        flying[pool.submit(self._test, limit, crashed)] = limit
                    done, _ = wait(list(flying), return_when=FIRST_COMPLETED)
                    for future in done:
                        limit = flying.pop(future)
                        ran = future.result()
                        assert ran.verdict is not None
                        verdicts[limit] = ran.verdict
                        self.say(f"limit {limit}: {ran.verdict} ({ran.reason})", "info")
                        if engine.outside(candidates, known, [str(limit)]):
                            late.append((limit, ran.verdict))
                        else:
                            known[str(limit)] = ran.verdict
            finally:
                if flying:
                    self.tester.stop()

    def _test(self, limit: int, crashed_at_total: bool) -> Ran:
        """One run at ``limit``; a compiler crash there is skip unless the full run crashed."""
        return self.tester.run(f"limit {limit}", self.kind.limit(limit), limit,
                               crash_is_skip=not crashed_at_total)

    def _test_all(self, limits: Sequence[int], crash_is_skip: bool = False) -> list[Ran]:
        """Runs at ``limits``, ``--jobs`` at once, in order."""
        def one(n: int) -> Ran:
            return self.tester.run(f"limit {n}", self.kind.limit(n), n,
                                   crash_is_skip=crash_is_skip)

        if self.jobs == 1:
            return [one(n) for n in limits]
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = [pool.submit(one, n) for n in limits]
            try:
                return [f.result() for f in futures]
            except BaseException:
                self.tester.stop()
                raise

    # -- 4. probes -------------------------------------------------------------------------

    def _probe(self, answer: Answer, crashed: bool) -> None:
        """``--probe K``: K limits spread evenly over the range, untested ones; any that
        contradicts the answer is recorded as non-monotone."""
        assert answer.first_bad is not None
        total, first = answer.total, answer.first_bad
        spread = sorted({round(i * total / (self.probes + 1)) for i in range(1, self.probes + 1)}
                        - set(answer.verdicts) - {0, total})
        answer.probes = tuple(spread)
        for ran in self._test_all(spread, crash_is_skip=not crashed):
            assert ran.limit is not None and ran.verdict is not None
            answer.verdicts[ran.limit] = ran.verdict
            if _contradicts(ran.limit, ran.verdict, first):
                answer.non_monotone.append((ran.limit, ran.verdict))
        answer.non_monotone.sort()


def _contradicts(limit: int, verdict: Verdict, first: int) -> bool:
    """Does ``verdict`` at ``limit`` contradict a monotone answer ``first`` (bad below it,
    good from it on)?"""
    return (verdict == "bad" and limit < first) or (verdict == "good" and limit >= first)


def _queries_in(text: str, name: str, number: int) -> int:
    """How many queries of counter ``name`` pass ``number`` made (0: they cannot be read)."""
    try:
        return listing.llvm_queries_in(text, name, number).total
    except ListingError:
        return 0




