"""Shallow submodules (``git submodule update --depth``, ``fetch --depth/--shallow-since``):
an ancestry question the boundary leaves open is never answered; the user gets one line
with the fetch to run (and that fetch fixes it), or ``--deepen`` runs it."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot
from worldgen import make_shallow_world

GOOD_IF = "device .* not found"
SHALLOW = Path(".git/modules") / SUBMODULE / "shallow"


def shallow(world: World, fork: str, upstream: str, *present: int) -> World:
    """``world`` with its submodule shallow; ``present``: upstream commits fetched alone
    (``--depth=1``), present here yet cut off from the rest."""
    make_shallow_world(world, fork.split(), upstream.split())
    for n in present:
        world.git(world.submodule, "fetch", "-q", "--depth=1", "upstream", world.sha(n))
    return world


def bisect(world: World, good: int | str, bad: int | str,
           *extra: str) -> subprocess.CompletedProcess[str]:
    """The world's submodule bisection from ``good`` to ``bad`` (an int: upstream commit N;
    a str: a revision as the user types it)."""
    def rev(end: int | str) -> str:
        return world.sha(end) if isinstance(end, int) else end

    return cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
               "--good", rev(good), "--bad", rev(bad), "--good-if", GOOD_IF,
               "--build", "./build.sh", *extra, "--", "./repro.sh")


def fix_of(world: World, r: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refusal and the command it offers, run as the user would."""
    assert r.returncode == 2, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is a shallow clone" in lines[0], r.stderr
    command = lines[0].split("; run: ", 1)[1].removesuffix(" (or pass --deepen)")
    subprocess.run(shlex.split(command), cwd=world.superproject, env=world.env, check=True)
    return command


def found(world: World, r: subprocess.CompletedProcess[str], n: int) -> None:
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(n)} is the first bad commit\n" in r.stdout


def test_cut_range_one_line_then_the_fix_it_names_gives_the_answer(world: World):
    w = shallow(world, "--depth 10", "--depth=150", 100)  # upstream 251..400, and 100
    before = snapshot(w)
    r = bisect(w, 100, 300)
    assert fix_of(w, r) == ("git -C third_party/llvm-project fetch --shallow-since=2025-12-31 "
                            "upstream")
    assert f"whether {w.sha(100)[:12]} is an ancestor of {w.sha(300)[:12]}" in r.stderr
    assert snapshot(w) == before
    found(w, bisect(w, 100, 300), 200)
    assert snapshot(w) == before


def test_deepen_fetches_before_starting_and_finds_it(world: World, tmp_path: Path):
    w = shallow(world, "--depth 10", "--depth=150", 100)
    before = snapshot(w)
    out = tmp_path / "r.json"
    r = bisect(w, 100, 300, "--deepen", "--json", str(out))
    found(w, r, 200)
    assert flat(r.stdout).startswith("deepened third_party/llvm-project: git fetch "
                                     "--shallow-since=2025-12-31 upstream (")
    steps = json.loads(out.read_text())["steps"]
    # The revert of upstream 120 follows the candidate: the history under it is whole now.
    for step in steps:
        revert = [p["action"] for p in step["patches"] if p["kind"] == "revert"]
        assert revert == (["applied"] if w.shas.index(step["commit"]) >= 120 else ["dropped"])
    assert snapshot(w) == before


def test_boundary_below_everything_needed_fetches_nothing(world: World):
    w = shallow(world, "--depth 10", "--depth=300")  # upstream 101..400
    boundary = (w.superproject / SHALLOW).read_text()
    before = snapshot(w)
    r = bisect(w, 110, 300, "--deepen")
    found(w, r, 200)
    assert "deepened" not in r.stdout
    assert (w.superproject / SHALLOW).read_text() == boundary
    # git neither writes nor reads a commit-graph in a shallow clone: none is written.
    info = w.superproject / SHALLOW.parent / "objects/info"
    assert not (info / "commit-graph").exists() and not (info / "commit-graphs").exists()
    assert snapshot(w) == before
    status = cli(w, "status", "--upstream", "upstream/main")
    assert ("shape: shallow (history stops at 1 commit, oldest 2026-01-01); older bisects "
            "need e.g.: git -C third_party/llvm-project fetch --shallow-since=2025-12-31 "
            "upstream") in flat(status.stdout)
    data = json.loads(cli(w, "status", "--upstream", "upstream/main", "--json").stdout)
    assert data["shallow"]["boundary"] == boundary.split()


def test_depth_one_fork_has_no_stack_to_guess(world: World):
    """HEAD itself is a boundary: its merge-base with upstream is unknown, never 'none'."""
    w = shallow(world, "--depth 1", "")
    before = snapshot(w)
    r = git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                w.sha(300), w.sha(100))
    assert fix_of(w, r) == "git -C third_party/llvm-project fetch --unshallow origin"
    assert "the merge-base of" in r.stderr
    assert snapshot(w) == before
    found(w, bisect(w, 100, 300), 200)


def test_depth_one_fork_deepen_through_git_bisect_patched(world: World):
    w = shallow(world, "--depth 1", "")
    before = snapshot(w)
    r = git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                "--deepen", w.sha(300), w.sha(100))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "deepened third_party/llvm-project: git fetch --deepen=100 origin (" in flat(r.stdout)
    r = git_cli(w, "run", "--good-if", GOOD_IF, "--build", "./build.sh", "./repro.sh")
    found(w, r, 200)
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before


def test_revert_of_a_commit_behind_the_boundary_is_never_dropped_silently(world: World):
    w = shallow(world, "--depth 10", "--depth=150")  # the reverted upstream 120 is not here
    before = snapshot(w)
    r = bisect(w, 260, 300)
    assert fix_of(w, r) == "git -C third_party/llvm-project fetch --unshallow upstream"
    assert f"it reverts {w.sha(120)[:12]}, not here" in r.stderr
    assert snapshot(w) == before
    found(w, bisect(w, 100, 300), 200)


@pytest.mark.parametrize("deepen", [False, True])
def test_good_end_not_here_at_all(world: World, deepen: bool):
    w = shallow(world, "--depth 10", "--depth=150")  # upstream 100 is behind the boundary
    if deepen:
        r = bisect(w, 100, 300, "--deepen")
        assert "git fetch --deepen=100 upstream" in r.stdout
        found(w, r, 200)
    else:
        r = bisect(w, 100, 300)
        assert fix_of(w, r) == "git -C third_party/llvm-project fetch --unshallow upstream"
        assert f"revision '{w.sha(100)}' (not here" in r.stderr
        found(w, bisect(w, 100, 300), 200)


@pytest.mark.parametrize("deepen", [False, True])
def test_shallow_typo_is_an_unknown_revision_and_fetches_nothing(world: World, deepen: bool):
    """A ref name that names nothing cannot be behind a boundary: no fetch is offered, and
    ``--deepen`` does not unshallow llvm-project for a typo."""
    make_shallow_world(world, ["--depth", "10"], ["--depth=150"])
    shallow = world.superproject / ".git/modules" / SUBMODULE / "shallow"
    boundary, before = shallow.read_text(), snapshot(world)
    r = bisect(world, "upstream/mian", world.sha(300), *(["--deepen"] if deepen else []))
    assert r.returncode == 2, r.stderr + r.stdout
    assert r.stderr.startswith("bisectkit: error: unknown revision 'upstream/mian' in ")
    assert "fetch" not in r.stderr and "deepened" not in r.stdout
    assert shallow.read_text() == boundary
    assert snapshot(world) == before
    # A walk off the boundary still gets the fetch that fixes it.
    r = bisect(world, "upstream/main~399", world.sha(300))
    assert r.returncode == 2 and "is a shallow clone" in r.stderr


def test_integrate_fetches_missing_pins_of_a_shallow_submodule(integrate_world: World):
    w = integrate_world
    make_shallow_world(w, ["--depth", "1"], ["--depth=1"])
    before = snapshot(w)
    missing = subprocess.run(["git", "cat-file", "-e", w.pins[5]], cwd=w.submodule,
                             env=w.env, capture_output=True)
    assert missing.returncode != 0
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["adv12"], "--build", "./build.sh", "--good-if", GOOD_IF, "--",
            "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv8']} is the first bad commit\n" in r.stdout
    # Each pin came alone (--depth=1): the submodule is as shallow as before.
    assert (w.superproject / SHALLOW).exists()
    assert snapshot(w) == before


def test_status_of_a_shallow_submodule_reports_the_shape(world: World):
    make_shallow_world(world, ["--depth", "10"], ["--depth=150"])
    r = cli(world, "status", "--upstream", "upstream/main")
    assert r.returncode == 0, r.stderr + r.stdout
    assert "shape: shallow" in r.stdout
    # What cannot be known is said, with the fetch that tells it.
    assert "stack: unknown: " in r.stdout and "fetch" in r.stdout, r.stdout
    data = json.loads(cli(world, "status", "--upstream", "upstream/main", "--json").stdout)
    assert data["shallow"]["boundary"] and "shallow clone" in data["unknown"]
