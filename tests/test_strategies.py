"""The strategies in-process: requests in, sessions, prepared candidates and follow-ups out.

One world per kind for the whole module (nothing here moves a work tree:
``start``, ``prepare`` and ``followup`` only read the repositories), and no
``bisectkit`` process: these pin the strategies' contract cheaply, the
end-to-end tests drive the same code through the CLI.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from helpers.worlds import SUBMODULE, World

from bisectkit import strategies
from bisectkit.cli.targets import Option
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import (
    FollowUp,
    IntegrateRequest,
    StackRequest,
    StepRecord,
    SubmoduleRequest,
    Terms,
)
from bisectkit.model.params import KINDS, IntegrateParams, Params, SubmoduleParams
from bisectkit.patches.upstream import GuessRefused, resolve_upstream
from bisectkit.strategies.base import register, registry_problems
from bisectkit.strategies.common import check_clean, step_env
from bisectkit.strategies.submodule import SubmoduleStrategy

LOCAL_FIXUP = "[local] fixup for our target"


def _hermetic(world: World, mp: pytest.MonkeyPatch) -> None:
    """This process sees what the CLI would under the world's environment (HOME, no GIT_*)."""
    import os

    for key in list(os.environ):
        if key not in world.env:
            mp.delenv(key)
    for key, value in world.env.items():
        mp.setenv(key, value)


@pytest.fixture(scope="module")
def sub_world(world_factory, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    world = world_factory(tmp_path_factory.mktemp("strategies"))
    with pytest.MonkeyPatch.context() as mp:
        _hermetic(world, mp)
        yield world


@pytest.fixture(scope="module")
def int_world(world_factory, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    world = world_factory(tmp_path_factory.mktemp("strategies-integrate"), integrate=True)
    with pytest.MonkeyPatch.context() as mp:
        _hermetic(world, mp)
        yield world


def _sp(world: World) -> Repo:
    return Repo(world.superproject)


def _actions(prepared: strategies.Prepared) -> list[tuple[str, str, str]]:
    return [(p["subject"], p["kind"], p["action"]) for p in prepared.details["patches"]]


# -- submodule ---------------------------------------------------------------------------
def test_submodule_start_gives_the_first_parent_range(sub_world: World) -> None:
    w = sub_world
    request = SubmoduleRequest(SUBMODULE, bad=w.sha(250)[:10], good=(w.sha(150),))
    session = strategies.start(_sp(w), request)
    assert session.strategy == "submodule"
    assert session.candidates == w.shas[151:251]
    assert (session.bad, session.good) == (w.sha(250), [w.sha(150)])
    assert session.start_argv == []  # the caller words the command line
    params = session.params_as(SubmoduleParams)
    assert params.upstream_ref == "upstream/main"
    assert (params.upstream_guessed or "").startswith("nearest merge-base")
    assert [p["sha"] for p in params.patches] == w.stack
    settled = strategies.settled(request, session)
    assert strategies.start_argv(settled) == ["start", "--submodule", SUBMODULE, "--upstream",
                                            "upstream/main", w.sha(250), w.sha(150)]


def test_submodule_start_keeps_terms_pathspec_and_on_conflict(sub_world: World) -> None:
    w = sub_world
    terms = Terms.of(find_fix=True, new="repaired")
    request = SubmoduleRequest(SUBMODULE, bad=w.sha(260), good=(w.sha(100), w.sha(150)),
                               upstream="upstream/main", pathspec=("lib/bug.txt",),
                               on_conflict="drop", terms=terms)
    session = strategies.start(_sp(w), request)
    # The one commit touching lib/bug.txt, and the bad end (always a candidate).
    assert session.candidates == [w.sha(200), w.sha(260)]
    assert session.terms == Terms("broken", "repaired", find_fix=True)
    assert session.params_as(SubmoduleParams).on_conflict == "drop"
    assert strategies.start_argv(strategies.settled(request, session)) == [
        "start", "--find-fix", "--term-new", "repaired", "--submodule", SUBMODULE,
        "--upstream", "upstream/main", "--on-conflict", "drop", w.sha(260), w.sha(100),
        w.sha(150), "--", "lib/bug.txt"]


@pytest.mark.parametrize(("n", "expected"), [
    (110, ["dropped", "empty", "applied", "applied"]),   # before the reverted commit and the break
    (330, ["applied", "dropped", "applied", "applied"]),  # 320 is upstream now
])
def test_submodule_prepare_replays_the_stack(sub_world: World, n: int,
                                             expected: list[str]) -> None:
    w = sub_world
    session = strategies.start(_sp(w), SubmoduleRequest(SUBMODULE, bad=w.sha(399),
                                                        good=(w.sha(100),)))
    prepared = strategies.make_strategy(_sp(w), session).prepare(w.sha(n))
    assert [a for _, _, a in _actions(prepared)] == expected
    assert [k for _, k, _ in _actions(prepared)] == ["revert", "cherry-pick", "cherry-pick",
                                                     "local"]
    assert prepared.skip_reason is None
    patched = prepared.details["patched"]
    assert patched is not None
    assert prepared.env == {"BISECTKIT_COMMIT": w.sha(n), "BISECTKIT_SUBMODULE": SUBMODULE,
                            "BISECTKIT_PATCHED_COMMIT": patched,
                            "BISECTKIT_STRATEGY": "submodule"}
    assert prepared.target == patched and prepared.trees[1] == Repo(w.submodule).tree_of(patched)


def test_submodule_conflict_skips_or_drops(sub_world: World) -> None:
    w = sub_world
    sp = _sp(w)
    local = w.stack[-1]
    skip = strategies.start(sp, SubmoduleRequest(SUBMODULE, bad=w.sha(399), good=(w.sha(100),)))
    prepared = strategies.make_strategy(sp, skip).prepare(w.sha(345))
    assert _actions(prepared)[-1] == (LOCAL_FIXUP, "local", "conflict")
    assert prepared.skip_reason == f"conflict in {local[:12]} ({LOCAL_FIXUP}): lib/local.txt"
    assert prepared.env == {} and prepared.trees == ()

    drop = strategies.start(sp, SubmoduleRequest(SUBMODULE, bad=w.sha(399), good=(w.sha(100),),
                                                 on_conflict="drop"))
    prepared = strategies.make_strategy(sp, drop).prepare(w.sha(370))
    assert [a for _, _, a in _actions(prepared)] == ["applied", "dropped", "dropped", "dropped"]
    assert prepared.skip_reason is None
    assert prepared.details["flags"] == [f"tested without {local[:12]} {LOCAL_FIXUP}"]


def test_stops_applying_narrows_to_the_upstream_commit(sub_world: World) -> None:
    w = sub_world
    sp = _sp(w)
    session = strategies.start(sp, SubmoduleRequest(SUBMODULE, bad=w.sha(399),
                                                    good=(w.sha(100),)))
    strategy = strategies.make_strategy(sp, session)
    for n in (330, 360):  # what two steps recorded: clean at 330, conflicting at 360
        session.steps.append(StepRecord(
            index=len(session.steps) + 1, commit=w.sha(n), verdict="skip", reason="",
            source="auto", patches=strategy.prepare(w.sha(n)).details["patches"]))
    [entry] = strategy.result_extra(None)["stops_applying"]
    assert (entry["patch"], entry["first_conflict"], entry["last_clean"], entry["exact"]) == (
        w.stack[-1], w.sha(340), w.sha(339), True)
    assert entry["message"].startswith(f'local patch {w.stack[-1][:12]} "{LOCAL_FIXUP}" stops '
                                       f"applying at {w.sha(340)} ")


def test_submodule_followup_is_a_stack_bisect_once_the_stack_is_implicated(
        sub_world: World) -> None:
    w = sub_world
    sp = _sp(w)
    session = strategies.start(sp, SubmoduleRequest(SUBMODULE, bad=w.sha(250),
                                                    good=(w.sha(150),)))
    assert strategies.make_strategy(sp, session).followup(w.sha(200)) == []
    session.params.stack_implicated = True
    [followup] = strategies.make_strategy(sp, session).followup(w.sha(200))
    assert followup == FollowUp(
        StackRequest(SUBMODULE, at=w.sha(200), upstream="upstream/main"),
        f"{w.sha(200)[:12]} is good without the local patch stack and bad with it: one of our "
        "patches is the culprit; to find which, run:")
    assert strategies.followup_lines(followup, ["--", "./repro.sh"]) == [
        followup.note, f"bisectkit run --submodule {SUBMODULE} --upstream upstream/main --stack "
                       f"--at {w.sha(200)} -- ./repro.sh"]


# -- stack -------------------------------------------------------------------------------
def test_stack_candidates_are_the_patches_and_k_of_them_are_applied(sub_world: World) -> None:
    w = sub_world
    sp = _sp(w)
    request = StackRequest(SUBMODULE, at=w.sha(250)[:12])
    session = strategies.start(sp, request)
    assert (session.strategy, session.candidates) == ("stack", w.stack)
    assert (session.good, session.bad) == ([w.sha(250)], w.stack[-1])
    assert strategies.start_argv(strategies.settled(request, session)) == [
        "start", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--stack", "--at",
        w.sha(250)]
    strategy = strategies.make_strategy(sp, session)
    prepared = strategy.prepare(w.stack[1])  # the first two patches
    assert [a for _, _, a in _actions(prepared)] == ["applied", "applied"]
    assert prepared.env["BISECTKIT_STACK_PATCHES"] == "2"
    assert prepared.env["BISECTKIT_COMMIT"] == w.sha(250)
    assert _actions(strategy.prepare(w.sha(250))) == []  # the good end: pristine

    conflicting = strategies.start(sp, StackRequest(SUBMODULE, at=w.sha(345)))
    prepared = strategies.make_strategy(sp, conflicting).prepare(w.stack[-1])
    assert _actions(prepared)[-1] == (LOCAL_FIXUP, "local", "conflict")
    assert prepared.skip_reason is not None and prepared.skip_reason.startswith("conflict in ")


def test_stack_refuses_an_at_with_local_patches(sub_world: World) -> None:
    w = sub_world
    with pytest.raises(BadInput, match=f"--at 'HEAD' contains local patch {w.stack[0][:12]}"):
        strategies.start(_sp(w), StackRequest(SUBMODULE, at="HEAD"))


# -- shared checks -----------------------------------------------------------------------
def test_resolve_upstream_refuses_a_ref_that_names_nothing(sub_world: World) -> None:
    w = sub_world
    sp, sub = _sp(w), Repo(w.submodule)
    assert resolve_upstream(sp, SUBMODULE, sub, "upstream/main").guessed is None
    with pytest.raises(BadInput, match=r"unknown revision 'nope/main' .*\(the upstream given "
                                       r"by --upstream\)"):
        resolve_upstream(sp, SUBMODULE, sub, "nope/main")
    w.git(w.superproject, "config", "bisectkit.upstream", "nope/config")
    try:
        with pytest.raises(BadInput, match=r"\(the upstream given by git config "
                                           r"bisectkit.upstream\)"):
            resolve_upstream(sp, SUBMODULE, sub, None)
        with pytest.raises(BadInput, match="unknown revision 'nope/config'"):
            strategies.start(sp, SubmoduleRequest(SUBMODULE, bad=w.sha(250),
                                                  good=(w.sha(150),)))
    finally:
        w.git(w.superproject, "config", "--unset", "bisectkit.upstream")


def test_check_clean_names_the_dirty_repository(sub_world: World) -> None:
    w = sub_world
    sp, sub = _sp(w), Repo(w.submodule)
    check_clean(sp, {SUBMODULE: sub})
    edited = w.submodule / "README"
    before = edited.read_text()
    edited.write_text("edited\n")
    try:
        with pytest.raises(BadInput, match=f"^submodule {SUBMODULE} has uncommitted changes "
                                           r"\(README in "):
            check_clean(sp, {SUBMODULE: sub})
    finally:
        edited.write_text(before)


def test_step_env_spells_every_variable() -> None:
    assert step_env(step=3) == {"BISECTKIT_STEP": "3"}
    assert step_env(strategy="integrate", commit="c", pins={"a/b-c": "p", "d": None}) == {
        "BISECTKIT_STRATEGY": "integrate", "BISECTKIT_COMMIT": "c",
        "BISECTKIT_SUBMODULES": '{"a/b-c": "p", "d": null}', "BISECTKIT_SUBMODULE_A_B_C": "p"}


def test_an_unknown_strategy_is_refused(sub_world: World) -> None:
    w = sub_world
    session = strategies.start(_sp(w), SubmoduleRequest(SUBMODULE, bad=w.sha(250),
                                                        good=(w.sha(150),)))
    session.strategy = "octopus"
    with pytest.raises(BadInput, match="unknown strategy 'octopus'"):
        strategies.make_strategy(_sp(w), session)


# -- integrate ---------------------------------------------------------------------------
def test_integrate_start_and_prepare_follow_the_pins(int_world: World) -> None:
    w = int_world
    sp = _sp(w)
    names = w.integrate
    request = IntegrateRequest(bad=names["adv12"], good=(names["init"],))
    session = strategies.start(sp, request)
    order = [*(f"adv{k}" for k in range(1, 7)), "break", "fix",
             *(f"adv{k}" for k in range(7, 13))]
    assert session.candidates == [names[n] for n in order]
    params = session.params_as(IntegrateParams)
    assert params.submodules == [SUBMODULE]
    assert params.upstreams[SUBMODULE]["ref"] == "upstream/main"
    assert strategies.start_argv(strategies.settled(request, session)) == [
        "start", "--integrate", names["adv12"], names["init"]]

    strategy = strategies.make_strategy(sp, session)
    prepared = strategy.prepare(names["adv8"])
    assert prepared.details["submodules"] == [
        {"path": SUBMODULE, "old": w.pins[7], "new": w.pins[8], "old_base": w.sha(175),
         "new_base": w.sha(200), "upstream_commits": 25}]
    assert prepared.env["BISECTKIT_SUBMODULE_THIRD_PARTY_LLVM_PROJECT"] == w.pins[8]
    assert prepared.env["BISECTKIT_COMMIT"] == names["adv8"]
    assert prepared.target == {SUBMODULE: w.pins[8]}
    missing = strategy.prepare(names["adv10"])
    assert missing.skip_reason == (f"{SUBMODULE} pin {w.pins[10][:12]} missing from every "
                                   "remote of the submodule (cannot update it)")


def test_integrate_followup_is_the_submodule_bisect_of_the_advance(int_world: World) -> None:
    w = int_world
    sp = _sp(w)
    names = w.integrate
    terms = Terms.of(find_fix=True)
    session = strategies.start(sp, IntegrateRequest(bad=names["adv12"], good=(names["init"],),
                                                    submodules=(SUBMODULE,), terms=terms))
    strategy = strategies.make_strategy(sp, session)
    assert strategy.followup(names["fix"]) == []  # no pin moved
    [followup] = strategy.followup(names["adv8"])
    assert followup.request == SubmoduleRequest(SUBMODULE, bad=w.sha(200), good=(w.sha(175),),
                                                upstream="upstream/main", terms=terms)
    assert followup.note == (f"{names['adv8'][:12]} advanced {SUBMODULE} by 25 upstream "
                             "commits; to find the upstream culprit, run:")
    assert strategies.followup_lines(followup, ["--", "./repro.sh"])[1] == (
        f"bisectkit run --submodule {SUBMODULE} --upstream upstream/main --good {w.sha(175)} "
        f"--bad {w.sha(200)} --find-fix -- ./repro.sh")


def test_integrate_refuses_an_upstream_that_names_nothing(int_world: World) -> None:
    w = int_world
    request = IntegrateRequest(bad=w.integrate["adv12"], good=(w.integrate["init"],),
                               upstream="nope/main")
    with pytest.raises(BadInput, match=r"unknown revision 'nope/main' in .*llvm-project \(the "
                                       r"upstream given by --upstream\)") as refused:
        strategies.start(_sp(w), request)
    assert not isinstance(refused.value, GuessRefused)


def test_integrate_goes_on_when_the_upstream_cannot_be_guessed(
        int_world: World, world_factory, tmp_path: Path) -> None:
    w = world_factory(tmp_path, integrate=True)  # a copy of its own: this one loses a remote
    w.git(w.submodule, "remote", "remove", "upstream")
    session = strategies.start(_sp(w), IntegrateRequest(bad=w.integrate["adv12"],
                                                        good=(w.integrate["init"],)))
    found = session.params_as(IntegrateParams).upstreams[SUBMODULE]
    assert found["ref"] is None and found["why"].startswith("cannot guess the upstream")
    assert strategies.make_strategy(_sp(w), session).followup(w.integrate["adv8"]) == []


def _saved_kinds() -> dict[str, type[Params]]:
    """What ``session.json`` may name: model.params.KINDS, without the kinds other tests
    add for their fake strategies (their class names no strategy)."""
    return {name: cls for name, cls in KINDS.items() if cls.strategy == name}


def test_every_strategy_is_registered_once_with_its_parameters_and_options() -> None:
    assert registry_problems(strategies.KINDS, _saved_kinds()) == []
    for kind in strategies.KINDS:
        assert strategies.kind_named(kind.name) is kind
        assert kind.strategy.name == kind.params.strategy == kind.name


@dataclass(kw_only=True)
class _ForgottenParams(Params):
    """A new strategy's parameters, never added to model.params.KINDS."""

    strategy: ClassVar[str] = "forgotten"


class _Forgotten(SubmoduleStrategy):
    name = "forgotten"


def test_a_registry_that_does_not_hold_together_is_refused() -> None:
    kinds = strategies.KINDS
    forgotten = dataclasses.replace(kinds[0], params=_ForgottenParams, strategy=_Forgotten,
                                    argv=dataclasses.replace(kinds[0].argv,
                                                             selector=Option("--forgotten", "")))
    assert registry_problems((*kinds, forgotten), _saved_kinds()) == [
        "_ForgottenParams is not model.params.KINDS['forgotten']",
        "request declared twice: SubmoduleRequest"]
    with pytest.raises(AssertionError, match="_ForgottenParams is not model.params.KINDS"):
        register(*kinds, forgotten)
    assert strategies.kind_named("forgotten") is None  # nothing registered
    assert registry_problems(kinds[1:], _saved_kinds()) == [
        "no strategy for the saved kinds submodule",
        "one strategy has no selector, not 0: "]
    assert registry_problems((*kinds, kinds[2]), _saved_kinds()) == [
        "name declared twice: stack", "request declared twice: StackRequest",
        "option declared twice: --at, --stack"]
    renamed = dataclasses.replace(kinds[1], strategy=_Forgotten)
    assert registry_problems((kinds[0], renamed, *kinds[2:]), _saved_kinds()) == [
        "_Forgotten is named 'forgotten', its parameters IntegrateParams 'integrate'"]
