"""History questions at scale: ancestry asked once per session, on git's commit-graph.

``start`` asks the ancestry questions the patch-stack rules need ("is the reverted
commit in this candidate?") and keeps the answers in the session; the ``good``,
``bad``, ``run`` and ``status`` processes of a manual session read them instead of
asking git again. The questions go to the git CLI, which reads git's commit-graph:
bisectkit has git write one (``git commit-graph write --reachable``) where the
repository has none and git would use it; the repository stays valid, a shallow
clone gets none, and the user's config can say no.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers.states import full_state, killed_at
from helpers.worlds import SUBMODULE, World, git_cli

from bisectkit.git.graph import FAILED_WRITE
from bisectkit.git.repo import Repo
from bisectkit.store import sessionshape
from bisectkit.strategies.common import LineAncestry, line_key

SESSION = Path(".git/bisectkit/session.json")
GRAPH = Path(".git/modules") / SUBMODULE / "objects/info/commit-graph"


def start(world: World, bad: int = 300, good: int = 100) -> subprocess.CompletedProcess[str]:
    return git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                   world.sha(bad), world.sha(good))


def traced(world: World, tmp_path: Path, *args: str) -> list[str]:
    """``git bisect-patched args...`` run with ``GIT_TRACE``: the git commands it ran."""
    trace = tmp_path / f"trace-{args[0]}"
    r = subprocess.run(["git", "bisect-patched", *args], cwd=world.superproject,
                       env=dict(world.env, GIT_TRACE=str(trace)), text=True,
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr + r.stdout
    return [line.split("built-in: ", 1)[1] for line in trace.read_text().splitlines()
            if "built-in: git" in line]


def session(world: World) -> dict:
    return json.loads((world.superproject / SESSION).read_text())


def revert_action(world: World) -> dict:
    """What the step checked out now did with the stack's revert (of upstream 120)."""
    steps = session(world)["current_step"]["patches"]
    return next(p for p in steps if p["kind"] == "revert")


def test_start_keeps_the_answers_and_marks_ask_git_none_again(world: World, tmp_path: Path):
    started = traced(world, tmp_path, "start", "--submodule", SUBMODULE, "--upstream",
                     "upstream/main", world.sha(300), world.sha(100))
    assert any(" merge-base --is-ancestor " in g for g in started)  # the trace sees them
    answers = session(world)["ancestry"]
    candidates = [world.sha(n) for n in range(101, 301)]
    assert answers["line"] == line_key(candidates)
    # The revert's target is candidate 120 itself; the picks (320, 350) are in none.
    assert answers["first"] == {world.sha(120): 19, world.sha(320): 200, world.sha(350): 200}
    for word in ("bad", "good", "status"):  # 200 has the bug, 150 not
        gits = traced(world, tmp_path, word)
        assert not [g for g in gits if " merge-base " in g or " rev-list " in g], gits
    assert git_cli(world, "reset").returncode == 0


def test_marks_read_the_answers_start_kept(world: World):
    """What the session holds is what a later step's drop rules go by (proof that the
    answer is read, not asked again: a doctored one changes the step)."""
    assert start(world).returncode == 0
    assert revert_action(world)["action"] == "applied"  # candidate 200 has upstream 120
    data = session(world)
    data["ancestry"]["first"][world.sha(120)] = 200  # "no candidate has it"
    (world.superproject / SESSION).write_text(json.dumps(data))
    assert git_cli(world, "bad").returncode == 0  # on to candidate 150, which has it
    assert revert_action(world)["action"] == "dropped"
    assert "is not in the candidate" in revert_action(world)["why"]


def test_answers_about_another_candidate_list_are_not_read(world: World):
    assert start(world).returncode == 0
    data = session(world)
    data["ancestry"]["first"][world.sha(120)] = 200
    data["ancestry"]["line"] = line_key([world.sha(5)])  # kept for another list
    (world.superproject / SESSION).write_text(json.dumps(data))
    assert git_cli(world, "bad").returncode == 0
    assert revert_action(world)["action"] == "applied"
    assert session(world)["ancestry"]["first"][world.sha(120)] == 19  # asked again


def test_line_answers_are_per_list(world: World):
    sub = Repo(world.submodule)
    line = [world.sha(n) for n in range(101, 201)]
    memo: dict = {}
    ancestry = LineAncestry(sub, line, memo)
    assert ancestry.first_containing(world.sha(50)) == 0
    assert ancestry.first_containing(world.sha(150)) == 49
    assert ancestry.first_containing(world.sha(250)) == 100
    assert memo["first"] == {world.sha(50): 0, world.sha(150): 49, world.sha(250): 100}
    shorter = LineAncestry(sub, line[:60], memo)  # another list: nothing carried over
    assert memo["first"] == {} and shorter.first_containing(world.sha(150)) == 49
    assert not shorter(world.sha(180), line[59]) and shorter(world.sha(10), world.sha(5)) \
        is False
    assert memo["pairs"] == {f"{world.sha(10)} {world.sha(5)}": False}


def test_start_writes_a_valid_commit_graph_once(world: World):
    graph = world.superproject / GRAPH
    assert not graph.exists()
    assert start(world).returncode == 0
    assert graph.is_file()
    sub = world.submodule
    for check in (["commit-graph", "verify"], ["fsck", "--no-progress"]):
        r = subprocess.run(["git", *check], cwd=sub, env=world.env, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
    stamp = graph.stat().st_mtime_ns
    assert git_cli(world, "reset").returncode == 0
    assert start(world).returncode == 0
    assert graph.stat().st_mtime_ns == stamp  # one there: git's, read as it is


@pytest.mark.parametrize("where", ["repository", "git -c"])
@pytest.mark.parametrize("key", ["gc.writeCommitGraph", "core.commitGraph"])
def test_no_commit_graph_where_the_config_says_no(world: World, key: str, where: str):
    """In the repository's config, or for this command only: ``git -c key=no
    bisect-patched`` (git hands it on in GIT_CONFIG_PARAMETERS, which libgit2 ignores)."""
    if where == "repository":
        world.git(world.submodule, "config", key, "false")
        r = start(world)
    else:
        r = subprocess.run(["git", "-c", f"{key}=no", "bisect-patched", "start", "--submodule",
                            SUBMODULE, "--upstream", "upstream/main", world.sha(300),
                            world.sha(100)], cwd=world.superproject, env=world.env, text=True,
                           capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert session(world)["ancestry"]["first"][world.sha(120)] == 19  # answered all the same
    assert not (world.superproject / GRAPH).exists()


@pytest.mark.parametrize("mode", ["during", "holding-objects/info/commit-graph.lock"])
def test_killed_while_git_writes_the_commit_graph(world: World, tmp_path: Path, mode: str):
    """SIGKILL while git writes the commit-graph at start: git finishes the file (it runs in
    its own session), or a git killed too leaves its lock file, which bisectkit leaves
    alone: the next start goes on without the file, and its answers are the same."""
    before = full_state(world)
    killed_at(world, tmp_path, "commit-graph", mode, "start", "--submodule", SUBMODULE,
              "--upstream", "upstream/main", world.sha(300), world.sha(100))
    assert git_cli(world, "reset").returncode == 0
    assert full_state(world) == before
    graph = world.superproject / GRAPH
    lock = graph.with_name("commit-graph.lock")
    assert graph.is_file() != lock.exists()
    if graph.is_file():
        assert world.git(world.submodule, "commit-graph", "verify") == ""
    assert start(world).returncode == 0
    assert session(world)["ancestry"]["first"][world.sha(120)] == 19
    assert graph.is_file() != lock.exists()  # a lock somebody left is never removed
    assert git_cli(world, "reset").returncode == 0
    assert full_state(world) == before


def test_a_failed_commit_graph_write_is_not_tried_again_for_a_day(world: World,
                                                                  tmp_path: Path):
    """git cannot write the file (a lock file somebody left): the failure is remembered
    with git's words, and the processes that follow do not each try again (at
    llvm-project's size a write failing at the end costs 3-5 s); a day later, one does."""
    lock = world.superproject / GRAPH.with_name("commit-graph.lock")
    lock.write_text("")
    failed = world.superproject / ".git/modules" / SUBMODULE / FAILED_WRITE
    args = ("start", "--submodule", SUBMODULE, "--upstream", "upstream/main", world.sha(300),
            world.sha(100))

    def writes(n: int) -> int:
        (tmp_path / str(n)).mkdir()  # a trace file of its own
        return sum(" commit-graph write " in g for g in traced(world, tmp_path / str(n), *args))

    assert writes(1) == 1
    assert "commit-graph.lock" in failed.read_text()
    assert session(world)["ancestry"]["first"][world.sha(120)] == 19  # answered all the same
    assert git_cli(world, "reset").returncode == 0
    assert writes(2) == 0
    assert git_cli(world, "reset").returncode == 0
    lock.unlink()
    day_ago = time.time() - 25 * 3600
    os.utime(failed, (day_ago, day_ago))
    assert writes(3) == 1
    assert (world.superproject / GRAPH).is_file()


def test_a_damaged_record_of_answers_is_asked_again(world: World):
    assert start(world).returncode == 0
    data = session(world)
    data["ancestry"] = {"line": 3, "first": {world.sha(120): "nineteen"}}
    (world.superproject / SESSION).write_text(json.dumps(data))
    assert git_cli(world, "bad").returncode == 0
    assert session(world)["ancestry"]["first"][world.sha(120)] == 19
    assert revert_action(world)["action"] == "applied"


@pytest.mark.parametrize("value", [None, [], {"line": 1}, {"first": {"x": 1}},
                                   {"first": {"a" * 40: True}}, {"pairs": {"a b": 1}}])
def test_answers_of_the_wrong_shape_are_none(value: object):
    assert sessionshape.ancestry(value) == {}
    good = {"line": "d", "first": {"a" * 40: 0}, "pairs": {"a b": False}}
    assert sessionshape.ancestry(good) == good


def test_where_a_commit_graph_is_found_and_wanted(world: World, tmp_path: Path):
    sub = Repo(world.submodule)
    assert not sub.graph.has_file() and sub.graph.wanted()
    borrower = tmp_path / "borrower"  # objects borrowed (a --jobs workspace's way)
    world.git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(world.submodule),
              str(borrower))
    world.git(world.submodule, "commit-graph", "write", "--reachable")
    assert sub.graph.has_file() and Repo(borrower).graph.has_file()
    world.git(world.submodule, "config", "gc.writeCommitGraph", "no")
    assert not Repo(world.submodule).graph.wanted()
    shallow = tmp_path / "shallow"
    world.git(tmp_path, "clone", "-q", "--depth", "3", f"file://{world.upstream}", str(shallow))
    assert not Repo(shallow).graph.wanted()
