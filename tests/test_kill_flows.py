"""Kills beyond one git command of a run: bisectkit and its git killed together, a
damaged verdict cache, ``reset`` itself killed, a build's orphan, ``advance --apply``.

A sampled subset of ``scripts/torture.py`` (which runs every point of every mode and
flow, ``--modes``/``--scenarios``/``--every``): a few rounds of each mode, each in a
fresh copy of its world. After every kill, ``git bisect-patched reset`` exits 0, both
repositories are as before (HEADs, branches, every other ref, ``status --porcelain
--ignored``, every file's content, no lock file left in the git dirs), and a fresh run
names the right first bad commit.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from torture import Baseline, Scenario, baseline
from torture_cache import seed_cache
from torture_flows import first_kill_point, orphan_round, reset_log, reset_round
from torture_kill import Round, describe_all, kill_round, point_round
from torture_worlds import build_scenario

Built = tuple[Scenario, Baseline, Path]


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Built]:
    """A scenario by name, with its undisturbed round and where its rounds run (each
    built once, on first use)."""
    root = tmp_path_factory.mktemp("flows")
    built: dict[str, Built] = {}

    def get(name: str) -> Built:
        if name not in built:
            sc = build_scenario(name, root / name / "template")
            base = baseline(sc, root / name, cache_modes=name == "submodule")
            built[name] = (sc, base, root / name)
        return built[name]
    return get


def point(gits: list[str], prefix: str) -> int:
    """The kill point of the first git command from the middle of the round on that
    starts with ``prefix``."""
    found = [i + 1 for i, g in enumerate(gits) if g.startswith(prefix)]
    assert found, f"no '{prefix}' among {len(gits)} git commands"
    return next((n for n in found if n >= len(gits) // 2), found[-1])


def check(rounds: list[Round]) -> None:
    assert not describe_all(rounds), describe_all(rounds)
    assert all(r.killed for r in rounds), [r.describe() for r in rounds if not r.killed]


@pytest.mark.parametrize("command", [
    "update-ref",  # a step's HEAD.lock in the submodule
    "read-tree",   # a step's index.lock, the work tree half written
])
def test_bisectkit_and_its_git_killed_together_leave_nothing_behind(
        flows: Callable[[str], Built], command: str) -> None:
    """SIGKILL to bisectkit and to the git it runs at the same instant, git holding its
    locks (paused in a reference-transaction hook or a checkout filter): reset removes
    the dead git's locks and restores."""
    sc, base, root = flows("submodule")
    r = point_round(sc.copy(root / "round"), "together", point(base.gits, command), root)
    assert "git killed holding its locks" in r.notes, r.describe()
    check([r])


@pytest.mark.parametrize("damage", ["maybe", "string-entry"])
def test_a_cache_damaged_after_a_kill_never_changes_the_answer(
        flows: Callable[[str], Built], damage: str) -> None:
    """The killed run starts from what a run killed half way cached and adds to it; the
    cache's "bad" entries are then damaged (verdict "maybe", not an object): the fresh
    run does not take them for verdicts and still names the right commit."""
    sc, base, root = flows("submodule")
    copy = sc.copy(root / "round")
    seed_cache(copy.world, base.partial)
    # Killed in its restore: every step's verdict is cached, the first bad commit's too.
    r = kill_round(copy, base.cached_gits - 1, "during", root, signal.SIGKILL,
                   keep_cache=True, damage=damage)
    check([r])


def test_reset_killed_at_its_git_commands_then_reset_again(flows: Callable[[str], Built]) -> None:
    """A run killed while a step's checkout runs; then its reset killed right after its
    own checkout, and before it puts HEAD back: reset again restores everything."""
    sc, base, root = flows("submodule")
    first = first_kill_point(base.gits)
    gits = reset_log(sc.copy(root / "round"), first, root)
    rounds = [reset_round(sc.copy(root / "round"), first,
                          next(i + 1 for i, g in enumerate(gits) if g.startswith(prefix)),
                          root, mode)
              for mode, prefix in (("after", "read-tree"), ("before", "symbolic-ref"))]
    check(rounds)


@pytest.mark.parametrize("how", ["nohup", "setsid"])
def test_a_build_left_running_by_a_killed_run_cannot_write_after_reset(
        flows: Callable[[str], Built], how: str) -> None:
    """The second build starts a child that outlives it (nohup: in the build's process
    group; setsid: in a session of its own) and writes into the work tree 1.5 s later;
    bisectkit is SIGKILLed. After reset and the child's sleep, the state is as before."""
    sc, _, root = flows("submodule")
    r = orphan_round(sc.copy(root / "round"), how, 2, signal.SIGKILL, root)
    check([r])


def test_advance_apply_killed_in_its_writes_is_finished_or_undone(
        flows: Callable[[str], Built]) -> None:
    """Killed while moving the superproject's HEAD (git goes on: the apply is finished by
    reset), and together with that git (HEAD.lock left: the apply is undone): the state is
    exactly before or exactly what an undisturbed apply leaves; a fresh advance names
    the same first commit the pin cannot move to."""
    sc, base, root = flows("advance-apply")
    # The superproject's branch moves last, from the old commit (the submodule's new
    # branches are created from nothing: 40 zeros).
    head = max(i + 1 for i, g in enumerate(base.gits)
               if g.startswith("update-ref -m bisectkit advance") and not g.endswith("0" * 40))
    rounds = [point_round(sc.copy(root / "round"), mode, head, root)
              for mode in ("during", "together")]
    check(rounds)
    assert "the apply was finished" in rounds[0].notes, rounds[0].describe()
