"""The open searches of ``bisectkit advance`` (pure): gallop and linear, one worker or k.

Worlds are simulated: candidate i is good below the first bad index ``b``
(``b == n``: none is bad), some candidates skip. The gallop must find what a
walk in order finds, a first failure d commits ahead in at most the
bisection's ceil(log2(n+1)) + 1 builds and in the gallop's 2*ceil(log2(d+1)) + 2
plus the least excess the bisection's bound leaves room for (+1 build when the
answer rests on the pin: the confirmation the CLI adds), and with k workers
(random completion order) the same answer.
"""

from __future__ import annotations

import random

import pytest

from bisectkit.engine import Clear, ContradictoryVerdicts, Found, Inconclusive, Next, Picks
from bisectkit.engine.search import (
    SEARCHES,
    Gallop,
    Linear,
    Targets,
    bisection_bound,
    named,
    near_bound,
    targets,
)
from bisectkit.model import Verdict


def cands(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def truth(i: int, bad: int, skips: set[int]) -> Verdict:
    return "skip" if i in skips else ("bad" if i >= bad else "good")


def run(search: str, n: int, bad: int, skips: frozenset[int] = frozenset()) -> tuple[object, int]:
    """The decision and the number of tests one worker needs."""
    c, tests = cands(n), 0
    verdicts: dict[str, Verdict] = {}
    while True:
        d = named(search).decide(c, verdicts)
        if not isinstance(d, Next):
            return d, tests
        tests += 1
        verdicts[d.commit] = truth(int(d.commit[1:]), bad, set(skips))


def run_parallel(search: str, n: int, bad: int, k: int, rng: random.Random,
                 skips: frozenset[int] = frozenset()) -> object:
    """k workers, results coming back in random order; tests outside the range cancelled."""
    c = cands(n)
    verdicts: dict[str, Verdict] = {}
    flying: list[str] = []
    s = named(search)
    while True:
        flying = [f for f in flying if f not in s.outside(c, verdicts, flying)]
        plan = s.schedule(c, verdicts, flying, k - len(flying), k)
        if not isinstance(plan, Picks):
            return plan
        flying += plan.commits
        assert flying, "nothing to wait for"
        done = flying.pop(rng.randrange(len(flying)))
        verdicts[done] = truth(int(done[1:]), bad, set(skips))


def tree(n: int) -> dict[int, int]:
    """The tests each outcome (the first bad index; n: none) costs the gallop on n
    candidates with no skip, the far end's included: every path of its splits."""
    goal, tests = targets(n), {}
    stack = [(-1, n, 0)]
    while stack:
        lo, hi, depth = stack.pop()
        i = goal.split(lo, hi, lambda _: True)
        if i is None:
            tests[hi] = depth
        else:
            stack += [(lo, i, depth + 1), (i, hi, depth + 1)]
    return tests


def test_no_break_costs_more_than_a_bisection_and_near_ones_cost_a_gallop() -> None:
    for n in range(1, 601):
        excess = targets(n).excess
        for bad, tests in tree(n).items():
            if bad == n:
                assert tests == 1, n  # the far end passes: one build
                continue
            builds = tests + (bad == 0)  # the pin's confirmation
            assert builds <= bisection_bound(n), (n, bad, builds)
            assert builds <= near_bound(bad + 1) + excess, (n, bad, builds)


def test_the_excess_over_the_gallop_is_the_least_any_search_within_the_bisection_allows(
        ) -> None:
    # Kraft: a search with outcome b at most D(b) tests deep exists only if the 2^-D(b)
    # sum to 1 at most; one less excess would not fit.
    for n in range(1, 601):
        t = targets(n)
        assert t.below(n + 1) <= 1 << t.cap
        if t.excess:
            assert Targets(n, t.cap, t.excess - 1).below(n + 1) > 1 << t.cap, n
    # The advance tests' world (300 candidates) keeps the gallop's bound exactly; the
    # benchmark's (400) one build more, since a bisection there has 112 of 512 spare.
    assert (targets(300).excess, targets(400).excess) == (0, 1)
    assert all(targets(n).excess == 0 for n in range(1, 14))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 300, 400])
def test_gallop_decisions_follow_the_tree(n: int) -> None:
    expected = tree(n)
    for bad in range(n + 1):
        decision, tests = run("gallop", n, bad)
        assert decision == (Clear(f"c{n - 1}", ()) if bad == n else Found(f"c{bad}"))
        assert tests == expected[bad], (n, bad)


def test_linear_walks_in_order_and_stops_at_the_first_failure() -> None:
    decision, tests = run("linear", 400, 6)
    assert (decision, tests) == (Found("c6"), 7)
    assert run("linear", 5, 5) == (Clear("c4", ()), 5)


def test_empty_range_is_clear_with_nothing_good() -> None:
    for search in ("gallop", "linear"):
        assert named(search).decide([], {}) == Clear(None, ())


def test_skips_leave_the_first_bad_open_and_never_name_a_skipped_commit() -> None:
    decision, _ = run("gallop", 100, 20, frozenset({17, 18, 19}))
    assert decision == Inconclusive(("c17", "c18", "c19", "c20"))
    # Skips up to the end with nothing bad: clear up to the last good, the rest named.
    decision, _ = run("gallop", 50, 50, frozenset(range(40, 50)))
    assert decision == Clear("c39", tuple(f"c{i}" for i in range(40, 50)))
    decision, _ = run("linear", 10, 10, frozenset({0, 1}))
    assert decision == Clear("c9", ())


def right(decision: object, n: int, bad: int, skips: frozenset[int]) -> bool:
    """Is ``decision`` true of the world: the first bad named, or left open among skips
    that really hide it, or nothing bad up to where skips begin?"""
    if isinstance(decision, Found):
        return decision.first_bad == f"c{bad}"
    if isinstance(decision, Inconclusive):
        *open_, last = (int(c[1:]) for c in decision.candidates)
        return all(i in skips for i in open_) and min(open_, default=last) <= bad <= last
    assert isinstance(decision, Clear)
    good = int(decision.last_good[1:]) if decision.last_good else -1
    return good < bad and all(int(c[1:]) in skips for c in decision.skipped) and \
        (bad == n or bad in skips)


def test_skips_never_lead_to_a_wrong_answer_with_one_worker_or_k() -> None:
    rng = random.Random(29)
    for _ in range(300):
        n = rng.randint(1, 300)
        bad = rng.randint(0, n)
        skips = frozenset(i for i in range(n) if rng.random() < rng.choice((0.05, 0.3)))
        decision, tests = run("gallop", n, bad, skips)
        assert right(decision, n, bad, skips), (n, bad, sorted(skips), decision)
        assert tests <= n
        for k in (2, 4):
            decision = run_parallel("gallop", n, bad, k, rng, skips)
            assert right(decision, n, bad, skips), (n, bad, k, sorted(skips), decision)


def test_a_good_far_end_is_not_a_contradiction_but_good_after_bad_is() -> None:
    s = named("gallop")
    assert s.bounds(cands(5), {"c4": "good"}) == (4, 5)
    with pytest.raises(ContradictoryVerdicts):
        s.bounds(cands(5), {"c1": "bad", "c3": "good"})
    assert named("bisect").bounds(cands(5), {}) == (-1, 4)  # the bisection's bad end


def test_random_worlds_gallop_equals_linear_and_k_workers_agree() -> None:
    rng = random.Random(14)
    for _ in range(400):
        n = rng.randint(1, 120)
        bad = rng.randint(0, n)
        skips = frozenset(i for i in range(n) if rng.random() < 0.1)
        gallop, _ = run("gallop", n, bad, skips)
        linear, _ = run("linear", n, bad, skips)
        # With skips the two walks may stop at different skipped commits, but never
        # disagree on a decided answer.
        if isinstance(gallop, Found) and isinstance(linear, Found):
            assert gallop == linear
        if not skips:
            assert gallop == linear
        for k in (2, 3, 5):
            # Without skips the answer is exact: the same whatever order results come in.
            assert run_parallel("gallop", n, bad, k, rng) == run("gallop", n, bad)[0]
            assert run_parallel("linear", n, bad, k, rng) == run("linear", n, bad)[0]


def test_k_workers_start_with_the_far_end_and_the_splits_a_bad_far_end_leaves() -> None:
    plan = Gallop().schedule(cands(400), {}, (), 3, 3)
    # One worker tests c143 once c399 is bad: at most 256 outcomes on either side.
    assert isinstance(plan, Picks) and plan.commits == ("c143", "c271", "c399")
    plan = Linear().schedule(cands(400), {"c0": "good"}, ("c1",), 2, 3)
    assert isinstance(plan, Picks) and plan.commits == ("c2", "c3")
    # Everything left is in flight: wait.
    plan = Gallop().schedule(cands(2), {}, ("c0", "c1"), 1, 2)
    assert isinstance(plan, Picks) and plan.commits == ()


def test_outside_cancels_what_a_good_far_end_makes_moot() -> None:
    assert Gallop().outside(cands(10), {"c9": "good"}, ["c0", "c1"]) == ["c0", "c1"]
    assert Gallop().outside(cands(10), {"c3": "bad"}, ["c1", "c7"]) == ["c7"]


def test_every_search_is_registered_by_name() -> None:
    assert set(SEARCHES) == {"bisect", "gallop", "linear"}
    assert named(None).name == "bisect" and not named(None).open_end
