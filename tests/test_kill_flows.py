"""Kills beyond one git command of a run: bisectkit and its git killed together, a
damaged verdict cache, ``reset`` itself killed, a build's orphan, ``advance --apply``.

A sampled subset of ``scripts/torture.py`` (which runs every point of every mode and
flow, ``--modes``/``--scenarios``/``--every``): a few rounds of each mode, each in a
fresh copy of its world. After every kill, ``git bisect-patched reset`` exits 0, both
repositories are as before (HEADs, branches, every other ref, ``status --porcelain
--ignored``, every file's content, no lock file left in the git dirs), and a fresh run
names the right first bad commit.

``advance --apply`` is also stopped by the shim of ``scripts/torture.py`` at each of its
writes and in the search's restore, in worlds of ``tests/helpers/advance.py``: HEAD never
holds the new pin while the index stages the old one, and the next command finishes or
undoes the apply.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.advance import BASE, pin_state, spec, with_smoke
from helpers.lines import flat
from helpers.worlds import World
from torture import Baseline, Scenario, baseline, write_shim
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


# -- advance --apply stopped at its writes and its restore ---------------------------
@pytest.fixture
def fresh(world_factory: Any, tmp_path: Path) -> Any:
    """A new copy of an advance world (under its own folder) each call."""
    made = iter(range(1000))

    def build(bug_at: int, **changes: Any) -> World:
        dest = tmp_path / f"world-{next(made)}"
        dest.mkdir()
        return with_smoke(world_factory(dest, spec(bug_at, **changes)))
    return build


def apply_cmd(tmp_path: Path, name: str) -> list[str]:
    exe = shutil.which("bisectkit")
    assert exe
    return [exe, "advance", "--build", "sh build.sh", "--apply", "--branch", "nx", "--json",
            str(tmp_path / f"{name}.json"), "--", "./smoke.sh"]


def run_shimmed(w: World, tmp_path: Path, name: str, n: int, mode: str,
                sig: int = signal.SIGINT) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    shim = write_shim(tmp_path / f"shim-{name}", n, mode, sig)
    env = dict(w.env, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(apply_cmd(tmp_path, name), cwd=w.superproject, env=env, text=True,
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    return r, (shim / "count.log").read_text(encoding="utf-8").splitlines()


def test_an_apply_stopped_while_it_writes_never_stages_a_revert_of_the_pin(
        fresh: Any, tmp_path: Path) -> None:
    w = fresh(bug_at=BASE + 3)
    before = pin_state(w)
    # An undisturbed apply: its git commands, and the state it ends in.
    r, log = run_shimmed(w, tmp_path, "count", 0, "none")
    assert r.returncode == 0, r.stderr
    done = pin_state(w)
    assert done["head"] != before["head"] and done["staged"] != before["staged"]
    assert done["sub_ref"] == "refs/heads/nx" and done["sub_head"] != before["sub_head"]
    first = next(i for i, line in enumerate(log, 1) if "refs/heads/nx " in line)
    writes = [i for i, line in enumerate(log, 1) if i >= first
              and line.split()[1] in ("update-ref", "update-index", "read-tree", "symbolic-ref")
              and "--refresh" not in line]
    # The branch, the index, HEAD; the submodule's files and index, then its HEAD.
    assert len(writes) == 5, log
    # After each write, and before the first and before the submodule's files (its
    # journaled move announced, nothing written yet): the states a kill can leave.
    for n, mode in [(n, "after") for n in writes] + [(writes[0], "before"),
                                                     (writes[3], "before")]:
        w = fresh(bug_at=BASE + 3)
        r, _ = run_shimmed(w, tmp_path, f"kill-{n}-{mode}", n, mode, signal.SIGKILL)
        assert r.returncode == -signal.SIGKILL, (n, mode, r.stderr)
        now = pin_state(w)
        # HEAD never holds the new pin while the index stages the old one: the next
        # 'git commit' would revert the advance. The submodule's checkout comes last.
        if now["head"] != before["head"]:
            assert dict(now, sub_head="", sub_ref="") == dict(done, sub_head="", sub_ref=""), \
                (n, mode, now)
        else:
            assert now["staged"] in (before["staged"], done["staged"]), (n, mode, now)
        # The next bisectkit command finishes the apply (HEAD moved) or undoes it.
        r = subprocess.run(["git", "bisect-patched", "reset"], cwd=w.superproject,
                           env=w.env, text=True, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert pin_state(w) == (done if now["head"] != before["head"] else before), \
            (n, mode, r.stdout, pin_state(w))
        if now["head"] != before["head"]:
            assert w.git(w.superproject, "status", "--porcelain") == "", (n, mode)
    for n in (writes[0], writes[2], writes[3]):
        # Ctrl-C there: the apply is whole, and said (stdout, --json), or not begun.
        w = fresh(bug_at=BASE + 3)
        r, _ = run_shimmed(w, tmp_path, f"int-{n}", n, "signal", signal.SIGINT)
        assert pin_state(w) in (before, done), n
        if pin_state(w) == done:
            data = json.loads((tmp_path / f"int-{n}.json").read_text(encoding="utf-8"))
            assert data["applied"]["branch"] == "nx", n
            assert "applied: third_party/llvm-project branch nx" in r.stdout, n


def test_ctrl_c_while_the_search_restores_stops_the_apply(fresh: Any, tmp_path: Path) -> None:
    w = fresh(bug_at=BASE + 3)
    _, log = run_shimmed(w, tmp_path, "count", 0, "none")
    # The restore's read-tree: the last before HEAD is put back ("bisectkit <id>: restore").
    head_back = next(i for i, line in enumerate(log, 1) if ": restore " in line)
    restore = max(i for i, line in enumerate(log[:head_back], 1)
                  if line.split()[1:2] == ["read-tree"])
    w = fresh(bug_at=BASE + 3)
    before = pin_state(w)
    # Ctrl-C lands while the repositories are put back: nothing may be written after it.
    r, _ = run_shimmed(w, tmp_path, "int", restore, "signal", signal.SIGINT)
    assert r.returncode == 130, r.stdout + r.stderr
    assert "applied:" not in r.stdout
    assert pin_state(w) == before


def test_a_record_outlived_by_the_users_commit_names_what_the_apply_left(
        fresh: Any, tmp_path: Path) -> None:
    w = fresh(bug_at=BASE + 3)
    _, log = run_shimmed(w, tmp_path, "count", 0, "none")
    branch_write = next(i for i, line in enumerate(log, 1) if "refs/heads/nx " in line)
    head_write = next(i for i, line in enumerate(log, 1)
                      if "advance" in line and " refs/heads/main " in line)
    # Killed once the branch exists, before the pin moved; the user then commits on the
    # old HEAD (without running bisectkit): the branch nx is the apply's leftover, and the
    # next command must say so, not "nothing to finish" (a later --apply --branch nx is
    # refused because of it).
    w = fresh(bug_at=BASE + 3)
    r, _ = run_shimmed(w, tmp_path, "kill-branch", branch_write, "after", signal.SIGKILL)
    assert r.returncode == -signal.SIGKILL, r.stderr
    w.git(w.superproject, "commit", "--allow-empty", "-qm", "user work")
    r = subprocess.run(["git", "bisect-patched", "reset"], cwd=w.superproject, env=w.env,
                       text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "left branch nx in third_party/llvm-project" in flat(r.stdout), r.stdout
    assert "nothing to finish" not in r.stdout
    assert not (w.superproject / ".git" / "bisectkit" / "apply.json").exists()
    # Killed once HEAD moved (the apply is whole), then a commit on top: it had finished.
    w = fresh(bug_at=BASE + 3)
    r, _ = run_shimmed(w, tmp_path, "kill-head", head_write, "after", signal.SIGKILL)
    assert r.returncode == -signal.SIGKILL, r.stderr
    w.git(w.superproject, "commit", "--allow-empty", "-qm", "user work")
    r = subprocess.run(["git", "bisect-patched", "reset"], cwd=w.superproject, env=w.env,
                       text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "had finished" in r.stdout and "left branch" not in r.stdout, r.stdout
