"""The pure bisection engine: decisions from ordered candidates and verdicts."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable

import pytest

from bisectkit.engine import (
    Clear,
    ContradictoryVerdicts,
    Found,
    Inconclusive,
    Next,
    Picks,
    decide,
    outside,
    rounds_estimate,
    schedule,
    steps_estimate,
)
from bisectkit.model import Verdict

C = [f"c{i:02d}" for i in range(16)]  # oldest first; C[-1] is the bad end


def simulate(first_bad: int, skips: frozenset[int] = frozenset()) -> tuple[object, int]:
    verdicts: dict[str, Verdict] = {C[-1]: "bad"}
    tested = 0
    while True:
        d = decide(C, verdicts)
        if not isinstance(d, Next):
            return d, tested
        i = C.index(d.commit)
        tested += 1
        verdicts[d.commit] = "skip" if i in skips else ("bad" if i >= first_bad else "good")


@pytest.mark.parametrize("first_bad", range(16))
def test_finds_every_position_in_log_steps(first_bad: int) -> None:
    result, tested = simulate(first_bad)
    assert result == Found(C[first_bad])
    assert tested <= 4  # ceil(log2(16))


def test_first_pick_is_the_midpoint() -> None:
    d = decide(C, {C[-1]: "bad"})
    assert isinstance(d, Next)
    assert d.commit == C[7]
    assert d.remaining == 15
    assert d.steps_left == 4


def test_skipped_midpoint_moves_to_nearest_untested() -> None:
    d = decide(C, {C[-1]: "bad", C[7]: "skip"})
    assert isinstance(d, Next)
    assert d.commit in (C[6], C[8])


def test_skips_next_to_the_boundary_still_find_it() -> None:
    result, _ = simulate(9, skips=frozenset({3, 7, 12}))
    assert result == Found(C[9])


def test_only_skips_left_lists_them_and_the_first_known_bad() -> None:
    result, _ = simulate(9, skips=frozenset({8, 9}))
    assert result == Inconclusive((C[8], C[9], C[10]))


def test_single_candidate_is_found_without_a_test() -> None:
    assert decide(["x"], {"x": "bad"}) == Found("x")


def test_good_newer_than_bad_is_a_contradiction() -> None:
    with pytest.raises(ContradictoryVerdicts):
        decide(C, {C[-1]: "bad", C[4]: "bad", C[6]: "good"})


def test_steps_estimate() -> None:
    assert [steps_estimate(n) for n in (0, 1, 2, 3, 4, 399)] == [0, 1, 2, 2, 3, 9]


# --- schedule(): the choice for k parallel workers ---------------------------------

Oracle = Callable[[int], Verdict]


def oracle(first_bad: int, skips: frozenset[int] = frozenset()) -> Oracle:
    """The verdict a candidate's test gives: consistent (good before, bad from
    ``first_bad``), with ``skips`` untestable."""
    def verdict(i: int) -> Verdict:
        if i in skips:
            return "skip"
        return "bad" if i >= first_bad else "good"
    return verdict


def sequential(cands: list[str], test: Oracle) -> Found | Inconclusive | Clear:
    """The answer of decide() run to the end, one test at a time."""
    verdicts: dict[str, Verdict] = {cands[-1]: "bad"}
    while isinstance(d := decide(cands, verdicts), Next):
        verdicts[d.commit] = test(cands.index(d.commit))
    return d


def parallel(cands: list[str], test: Oracle, k: int, rng: random.Random,
             keep_outside: bool) -> Found | Inconclusive:
    """A run with ``k`` workers whose tests take random times. A verdict that
    arrives once its commit has left the range is dropped, as a real run would
    cancel it, unless ``keep_outside``."""
    pos = {c: i for i, c in enumerate(cands)}
    verdicts: dict[str, Verdict] = {cands[-1]: "bad"}
    flying: dict[str, float] = {}
    queue: list[tuple[float, str]] = []
    now = 0.0
    while True:
        plan = schedule(cands, verdicts, flying.keys(), k - len(flying), workers=k)
        if not isinstance(plan, Picks):
            return plan
        assert len(set(plan.commits)) == len(plan.commits)
        for c in plan.commits:
            assert c not in flying and c not in verdicts
            flying[c] = now
            heapq.heappush(queue, (now + rng.random(), c))
        assert flying, "waiting with nothing in flight would never end"
        now, done = heapq.heappop(queue)
        del flying[done]
        if keep_outside or done not in outside(cands, verdicts, [done]):
            verdicts[done] = test(pos[done])


def random_verdicts(rng: random.Random, n: int) -> dict[str, Verdict]:
    """A consistent verdict pattern on ``n`` candidates c0..: monotone good/bad with
    random skips, some candidates untested."""
    first_bad = rng.randrange(n)
    p_tested, p_skip = rng.random(), rng.random() * 0.5
    verdicts: dict[str, Verdict] = {}
    for i in range(n):
        if rng.random() < p_tested:
            verdicts[f"c{i}"] = "skip" if rng.random() < p_skip else oracle(first_bad)(i)
    return verdicts


def test_one_slot_without_tests_in_flight_picks_what_decide_picks() -> None:
    rng = random.Random(1301)
    for _ in range(3000):
        n = rng.randint(1, 300)
        cands = [f"c{i}" for i in range(n)]
        verdicts = random_verdicts(rng, n)
        d, plan = decide(cands, verdicts), schedule(cands, verdicts, (), 1)
        if isinstance(d, Next):
            assert plan == Picks((d.commit,), d.remaining, d.steps_left)
        else:
            assert plan == d


@pytest.mark.parametrize("keep_outside", [False, True])
def test_parallel_bisection_gives_the_sequential_answer(keep_outside: bool) -> None:
    rng = random.Random(1302 + keep_outside)
    for _ in range(300):
        n = rng.randint(1, 400)
        cands = [f"c{i}" for i in range(n)]
        # The known-bad end never skips: it is given, not tested.
        skips = frozenset(i for i in range(n - 1) if rng.random() < rng.choice((0, 0.1, 0.5)))
        test = oracle(rng.randrange(n), skips)
        k = rng.randint(1, 6)
        assert parallel(cands, test, k, rng, keep_outside) == sequential(cands, test)


def rounds(n: int, k: int, first_bad: int) -> int:
    """Rounds of ``k`` tests that all end together to find ``first_bad`` among ``n``
    undecided candidates (plus the known-bad end)."""
    cands = [f"c{i}" for i in range(n + 1)]
    verdicts: dict[str, Verdict] = {cands[-1]: "bad"}
    count = 0
    while isinstance(plan := schedule(cands, verdicts, (), k), Picks):
        count += 1
        verdicts.update((c, oracle(first_bad)(int(c[1:]))) for c in plan.commits)
    assert plan == Found(cands[first_bad])
    return count


# Worst case over every first-bad position, 1000 undecided: measured 10, 7, 5, 5, 4
# rounds for k = 1, 2, 3, 4, 7 against ceil(log_{k+1}(1001)) = 10, 7, 5, 5, 4.
@pytest.mark.parametrize("k", [1, 2, 3, 4, 7])
def test_k_workers_shrink_the_range_k_plus_1_times_a_round(k: int) -> None:
    worst = max(rounds(1000, k, first_bad) for first_bad in range(1001))
    assert worst <= rounds_estimate(1000, k) + 1
    assert rounds_estimate(1000, k) == math.ceil(math.log(1001) / math.log(k + 1) - 1e-9)


@pytest.mark.parametrize("n", [9, 100, 1000, 4321])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_points_started_together_sit_at_the_quantiles(n: int, k: int) -> None:
    cands = [f"c{i}" for i in range(n)]
    plan = schedule(cands, {}, (), k)
    assert isinstance(plan, Picks)
    assert len(plan.commits) == k
    lo, hi = -1, n - 1
    for t, c in enumerate(plan.commits, 1):
        assert abs(cands.index(c) - (lo + (hi - lo) * t / (k + 1))) <= 1


def test_a_test_in_flight_splits_the_range_and_ties_go_to_the_lower_gap() -> None:
    plan = schedule(C, {C[-1]: "bad"}, [C[7]], 1)
    assert plan == Picks((C[3],), 15, 4)
    plan = schedule(C, {C[-1]: "bad"}, [C[7]], 2, workers=3)
    assert plan == Picks((C[3], C[11]), 15, 2)


def test_a_gap_gets_no_more_points_than_it_has_untested_candidates() -> None:
    verdicts: dict[str, Verdict] = {C[2]: "good", C[6]: "bad", C[3]: "skip"}
    assert schedule(C, verdicts, [], 5) == Picks((C[4], C[5]), 3, 1)


def test_schedule_waits_when_every_untested_candidate_in_range_is_in_flight() -> None:
    verdicts: dict[str, Verdict] = {C[3]: "good", C[7]: "bad", C[5]: "skip"}
    assert schedule(C, verdicts, [C[4], C[6], C[12]], 4) == Picks((), 3, 1)
    assert schedule(C, verdicts, [C[4]], 4) == Picks((C[6],), 3, 1)
    assert schedule(C, {**verdicts, C[4]: "skip", C[6]: "skip"}, [C[12]], 4) == \
        Inconclusive((C[4], C[5], C[6], C[7]))
    assert schedule(C, {C[3]: "good", C[4]: "bad"}, [C[1], C[9]], 2) == Found(C[4])


def test_schedule_rejects_contradictory_verdicts_like_decide() -> None:
    with pytest.raises(ContradictoryVerdicts):
        schedule(C, {C[4]: "bad", C[6]: "good"}, [], 2)


def test_outside_lists_the_tests_in_flight_that_left_the_range() -> None:
    verdicts: dict[str, Verdict] = {C[3]: "good", C[10]: "bad"}
    flying = [C[12], C[5], C[1], C[3], C[9], C[10], "unknown"]
    assert outside(C, verdicts, flying) == [C[1], C[3], C[10], C[12]]
    assert outside(C, verdicts, [C[4], C[9]]) == []


def test_rounds_estimate() -> None:
    assert [rounds_estimate(n, 1) for n in range(5001)] == \
        [steps_estimate(n) for n in range(5001)]
    # Exact powers of workers+1, where a floating log can round the wrong way.
    assert [rounds_estimate(n, 3) for n in (0, 1, 3, 4, 15, 16, 63, 64)] == \
        [0, 1, 1, 2, 2, 3, 3, 4]
    assert rounds_estimate(999, 9) == 3 and rounds_estimate(1000, 9) == 4
    assert rounds_estimate(3**20 - 1, 2) == 20 and rounds_estimate(3**20, 2) == 21
    with pytest.raises(ValueError):
        rounds_estimate(5, 0)
