"""A step keeps the number it was announced with: marks of other revisions, skip ranges,
``run`` after manual marks and ``--jobs`` never move it; ``--json`` lists steps by number."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.repros import BUG, run, script
from helpers.worlds import SUBMODULE, World, git_cli


def _start(world: World) -> tuple[int, str]:
    """Start a manual session; the number and short commit of the step it announces."""
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    return _announced(r.stdout)


def _announced(out: str) -> tuple[int, str]:
    found = re.findall(r"^\[step (\d+)\] testing ([0-9a-f]+)", out, re.M)
    assert found, out
    return int(found[-1][0]), found[-1][1]


# Demonstrates: a step announced as "[step 1] testing X" became step 11 after a skip of a
# range of other commits (the marks took numbers 1..10), so "show-step 1" showed a skip
# marked by hand, not X's output, and --json listed X's step after the marks.
def test_a_skip_range_does_not_take_the_number_of_the_step_under_test(world: World,
                                                                      tmp_path: Path):
    number, under_test = _start(world)
    r = git_cli(world, "skip", f"{world.sha(201)}..{world.sha(210)}")
    assert r.returncode == 0, r.stderr
    assert _announced(r.stdout) == (number, under_test), r.stdout
    marked = [int(n) for n in re.findall(r"^\[step (\d+)\] [0-9a-f]+ skip", r.stdout, re.M)]
    assert len(marked) == 9 and number not in marked, r.stdout
    status = git_cli(world, "status")
    assert f"under test: [step {number}] {under_test}" in status.stdout, status.stdout
    repro = script(tmp_path / "repro.sh", f"echo output of the repro\nif {BUG}; then exit 1; fi\n")
    out = tmp_path / "r.json"
    r = git_cli(world, "run", "--json", str(out), str(repro))
    assert r.returncode == 0, r.stderr + r.stdout
    assert re.search(rf"^\[step {number}\] {under_test} \w+", r.stdout, re.M), r.stdout
    shown = git_cli(world, "show-step", str(number))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"# step {number}: {under_test}"), shown.stdout
    assert "output of the repro" in shown.stdout
    steps = json.loads(out.read_text())["steps"]
    indices = [s["index"] for s in steps]
    assert indices == sorted(indices) and len(set(indices)) == len(indices), indices
    assert steps[indices.index(number)]["commit"].startswith(under_test)


# A mark of a revision never announced gets a number of its own, after the one announced:
# the candidate announced keeps its number while it is still the one to test, and a
# candidate left for another (the mark moved the range) leaves its number unused.
def test_a_mark_of_another_revision_gets_the_next_number(world: World):
    number, first = _start(world)
    r = git_cli(world, "good", world.sha(10))
    assert r.returncode == 0, r.stderr
    assert f"[step {number + 1}] {world.sha(10)[:12]} good" in r.stdout, r.stdout
    after, second = _announced(r.stdout)
    assert (after, second) == (number + 2, second) and second != first, r.stdout
    r = git_cli(world, "bad")
    assert f"[step {after}] {second} bad" in r.stdout, r.stdout
    refused = git_cli(world, "show-step", str(number))  # announced, never tested
    assert refused.returncode == 2 and f"no output kept for step {number}" in refused.stderr


# Demonstrates: a replayed session's candidate, announced as "[step 4] testing X", was
# tested by "run --jobs 2" as step 7: the loop gave its own first steps the next numbers and
# then a new one to X, so "show-step 4" had nothing and the terminal said 7.
def test_run_with_jobs_after_a_replay_tests_the_candidate_under_its_number(world: World,
                                                                           tmp_path: Path):
    _start(world)
    assert git_cli(world, "skip", f"{world.sha(201)}..{world.sha(204)}").returncode == 0
    log = tmp_path / "bisect.log"
    log.write_text(git_cli(world, "log").stdout)
    r = git_cli(world, "replay", str(log))
    assert r.returncode == 0, r.stderr
    number, under_test = _announced(r.stdout)
    status = git_cli(world, "status")
    assert f"under test: [step {number}] {under_test}" in status.stdout, status.stdout
    # The bad side is slow: the first verdict is the good one, and then the candidate the
    # session announced is the one that splits the range left (the other end is in flight).
    repro = script(tmp_path / "repro.sh",
                   f"echo output of the repro\nif {BUG}; then sleep 1; exit 1; fi\n")
    r = git_cli(world, "run", "--jobs", "2", str(repro))
    assert r.returncode == 0, r.stderr + r.stdout
    assert re.search(rf"^\[step {number}\] {under_test} \w+", r.stdout, re.M), r.stdout
    shown = git_cli(world, "show-step", str(number))
    assert shown.stdout.startswith(f"# step {number}: {under_test}"), shown.stdout + shown.stderr


# Demonstrates: with --jobs, --json listed the steps in the order they finished.
def test_json_lists_parallel_steps_by_number(world: World, tmp_path: Path):
    # The good side is slow: the step that started first (further left) ends last.
    repro = script(tmp_path / "repro.sh", f"if {BUG}; then exit 1; fi\nsleep 0.5\n")
    out = tmp_path / "r.json"
    r = run(world, "--jobs", "2", "--no-verify", repro=(str(repro),), good=150, bad=250,
            json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    indices = [s["index"] for s in json.loads(out.read_text())["steps"]]
    assert indices == sorted(indices), indices
