"""End-to-end submodule bisects through the real CLI on real git worlds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, snapshot

GOOD_IF = "device .* not found"


def oneshot(world: World, good: str, bad: str, *extra: str, json_path: Path | None = None,
            repro: tuple[str, ...] = ("./repro.sh",), build: str | None = "./build.sh"):
    args = ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", good, "--bad", bad]
    if build:
        args += ["--build", build]
    if json_path:
        args += ["--json", str(json_path)]
    return cli(world, *args, *extra, "--", *repro)


def index_of(world: World, sha: str) -> int:
    return world.shas.index(sha)


def actions(step: dict, kind: str) -> list[str]:
    return [p["action"] for p in step["patches"] if p["kind"] == kind]


def test_finds_upstream_culprit_below_merge_base_and_restores(world: World, tmp_path: Path):
    before = snapshot(world)
    out = tmp_path / "result.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()

    result = json.loads(out.read_text())
    assert result["status"] == "found"
    assert result["strategy"] == "submodule"
    assert result["first_bad"] == world.sha(200)
    assert 8 <= len(result["steps"]) <= 10  # 300 candidates: ceil(log2(300)) = 9
    for step in result["steps"]:
        assert step["verdict"] in ("good", "bad")
        n = index_of(world, step["commit"])
        # The revert of upstream commit 120 only applies where 120 is present.
        assert actions(step, "revert") == (["applied"] if n >= 120 else ["dropped"])
        assert step["files_written"] > 0
        assert step["build_s"] is not None and step["repro_s"] is not None
    # The build fix (upstream 320) and the patch-id pick (350) are never upstream here.
    picked = [p for p in result["steps"][0]["patches"] if p["kind"] == "cherry-pick"]
    assert [p["refers_to"] for p in picked] == [world.sha(320), world.sha(350)]


def test_revert_must_be_dropped_for_candidates_before_it(world_factory, tmp_path: Path):
    """Below upstream commit 50 the revert of 120 would conflict; dropping it keeps every step."""
    world = world_factory(tmp_path, WorldSpec(bug_at=30))
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(30)} is the first bad commit" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    assert any(index_of(world, s["commit"]) < 50 for s in steps)
    assert all(s["verdict"] != "skip" for s in steps)
    for s in steps:
        if index_of(world, s["commit"]) < 120:
            revert = next(p for p in s["patches"] if p["kind"] == "revert")
            assert revert["action"] == "dropped"
            assert "not in the candidate" in revert["why"]


def test_above_merge_base_drops_upstreamed_picks_and_skips_conflicts(world_factory,
                                                                     tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=330))
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(300), world.sha(400), "--good-if", GOOD_IF, json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(330)} is the first bad commit" in r.stdout
    assert snapshot(world) == before
    result = json.loads(out.read_text())
    steps = result["steps"]
    conflicts = [s for s in steps if s["reason"].startswith("conflict in")]
    # Upstream rewrote lib/local.txt at 340: our local fixup conflicts from there on.
    assert conflicts, steps
    for s in conflicts:
        assert index_of(world, s["commit"]) >= 340
        assert s["verdict"] == "skip"
        assert s["files_written"] == 0
        assert "lib/local.txt" in s["reason"]
        assert [p["action"] for p in s["patches"]][-1] == "conflict"
    for s in steps:
        n = index_of(world, s["commit"])
        pick = next(p for p in s["patches"] if p["refers_to"] == world.sha(320))
        assert pick["action"] == ("dropped" if n >= 320 else "applied")
        if n >= 320:
            assert "already upstream" in pick["why"]
        by_id = next(p for p in s["patches"] if p["refers_to"] == world.sha(350))
        assert by_id["kind"] == "cherry-pick"
        assert by_id["action"] == ("dropped" if n >= 350 else "applied")
    # What the stack did at the culprit is part of the result.
    assert result["patches_at_first_bad"]


def test_without_good_if_device_errors_are_caught_by_the_good_end(world: World, tmp_path: Path):
    """Both good and bad commits exit 1: only classification by output tells them apart.

    Unclassified, every candidate tests bad and the answer would be the first
    candidate: the good end it rests on is tested, fails too, and no commit is named.
    """
    r = oneshot(world, world.sha(0), world.sha(300))
    assert r.returncode == 5, r.stderr
    assert f"the good end {world.sha(0)[:12]} does not test good: it tested bad" in r.stderr
    assert "is the first bad commit" not in r.stdout
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, "--no-cache")
    assert f"{world.sha(200)} is the first bad commit" in r.stdout


def test_bad_if_beats_good_if(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF,
                "--good-if", "miscompiled", "--bad-if", "miscompiled", json_path=out)
    assert f"{world.sha(200)} is the first bad commit" in r.stdout, r.stdout
    reasons = {s["reason"] for s in json.loads(out.read_text())["steps"]}
    assert any("--bad-if 'miscompiled'" in x for x in reasons)


def test_build_failures_are_skipped_and_the_answer_is_still_right(world_factory,
                                                                  tmp_path: Path):
    spec = WorldSpec(build_breaks=[(140, 160)], picks=[], bug_at=200)
    world = world_factory(tmp_path, spec)
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    failed = [s for s in steps if s["reason"].startswith("build failed")]
    assert failed and all(s["verdict"] == "skip" for s in failed)
    assert all(140 <= index_of(world, s["commit"]) < 160 for s in failed)
    assert all(s["repro_s"] is None for s in failed)


def test_only_skipped_commits_left(world_factory, tmp_path: Path):
    spec = WorldSpec(build_breaks=[(195, 205)], picks=[], bug_at=200)
    world = world_factory(tmp_path, spec)
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, json_path=out)
    assert r.returncode == 1, r.stderr + r.stdout
    assert "There are only 'skip'ped commits left to test." in r.stdout
    result = json.loads(out.read_text())
    assert result["status"] == "inconclusive"
    assert result["first_bad"] is None
    assert result["candidates"] == [world.sha(n) for n in range(195, 206)]
    for sha in result["candidates"]:
        assert sha in r.stdout
    assert snapshot(world) == before


def test_repro_gets_the_candidate_in_its_environment(world: World, tmp_path: Path):
    log = tmp_path / "env.log"
    repro = tmp_path / "env_repro.sh"
    repro.write_text(
        "#!/bin/sh\n"
        f'echo "$BISECTKIT_STEP $BISECTKIT_COMMIT $BISECTKIT_SUBMODULE '
        f'$(git -C "$BISECTKIT_SUBMODULE" rev-parse HEAD) $BISECTKIT_PATCHED_COMMIT" >> {log}\n'
        "exec ./repro.sh\n"
    )
    repro.chmod(0o755)
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, json_path=out,
                repro=(str(repro),))
    assert r.returncode == 0, r.stderr
    steps = json.loads(out.read_text())["steps"]
    lines = log.read_text().splitlines()
    assert len(lines) == len(steps)
    for line, step in zip(lines, steps, strict=True):
        index, commit, path, head, patched = line.split()
        assert (int(index), commit, path) == (step["index"], step["commit"], SUBMODULE)
        # The submodule is on the patched candidate, a child chain of the upstream commit.
        assert head == patched
        assert world.git(world.submodule, "merge-base", "--is-ancestor", commit, head) == ""


def test_timeout_marks_the_step_skip(world: World, tmp_path: Path):
    repro = tmp_path / "hang.sh"
    # Hangs exactly at the first tested candidate, behaves normally elsewhere.
    first = world.sha(150)
    repro.write_text(f'#!/bin/sh\n[ "$BISECTKIT_COMMIT" = {first} ] && sleep 30\n'
                     "exec ./repro.sh\n")
    repro.chmod(0o755)
    out = tmp_path / "r.json"
    r = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, "--timeout", "1",
                json_path=out, repro=(str(repro),))
    assert r.returncode == 0, r.stderr
    steps = json.loads(out.read_text())["steps"]
    assert steps[0]["commit"] == first
    assert steps[0]["verdict"] == "skip"
    assert steps[0]["reason"] == "timed out after 1 s"
    assert f"{world.sha(200)} is the first bad commit" in r.stdout


def test_second_identical_run_reuses_every_verdict(world: World, tmp_path: Path):
    counter = tmp_path / "builds"
    build = f"echo x >> {counter} && ./build.sh"
    first = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, build=build)
    assert first.returncode == 0
    builds = len(counter.read_text().splitlines())
    out = tmp_path / "r.json"
    second = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, build=build,
                     json_path=out)
    assert second.returncode == 0
    assert f"{world.sha(200)} is the first bad commit" in second.stdout
    assert len(counter.read_text().splitlines()) == builds  # no build the second time
    assert all(s["source"] == "cache" for s in json.loads(out.read_text())["steps"])
    third = oneshot(world, world.sha(0), world.sha(300), "--good-if", GOOD_IF, "--no-cache",
                    build=build)
    assert third.returncode == 0
    assert len(counter.read_text().splitlines()) == 2 * builds


@pytest.mark.parametrize("from_inside", [False, True])
def test_runs_from_a_subdirectory_of_the_superproject(world: World, from_inside: bool):
    cwd = world.submodule / "lib" if from_inside else world.superproject
    before = snapshot(world)
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(150),
            "--bad", world.sha(250), "--good-if", GOOD_IF, "--",
            str(world.superproject / "repro.sh"), cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert snapshot(world) == before
