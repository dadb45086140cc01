"""The pure bisection engine: decisions from ordered candidates and verdicts."""

from __future__ import annotations

import pytest

from bisectkit.engine import (
    ContradictoryVerdicts,
    Found,
    Inconclusive,
    Next,
    decide,
    steps_estimate,
)

C = [f"c{i:02d}" for i in range(16)]  # oldest first; C[-1] is the bad end


def simulate(first_bad: int, skips: frozenset[int] = frozenset()) -> tuple[object, int]:
    verdicts = {C[-1]: "bad"}
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
