"""The bundled ``flaky`` plugin: repeat the repro and combine verdicts, through the real CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bisectkit_plugins.flaky import combine
from helpers.repros import run_args
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, snapshot

GOOD_IF = "device .* not found"
#: With this seed the flaky repro below hides the bug at some bad step when run
#: once per step, but never on three runs in a row (checked by the tests).
SEED = 3
#: A bad commit that hides its bug prints what a good commit prints.
LOOKS_GOOD = "echo \"iree-run-module: HAL device 'vulkan' not found\"; exit 1"


def bisect(world: World, repro: Path, *extra: str, good: int = 0, bad: int = 300,
           json_path: Path | None = None):
    args = ["run", *extra, "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(good), "--bad", world.sha(bad), "--build", "./build.sh",
            "--good-if", GOOD_IF]
    if json_path:
        args += ["--json", str(json_path)]
    return cli(world, *args, "--", str(repro))


def first_bad(world: World, stdout: str) -> int:
    """Upstream commit number of the reported first bad commit."""
    lines = [x for x in stdout.splitlines() if x.endswith(" is the first bad commit")]
    assert len(lines) == 1, stdout
    return world.shas.index(lines[0].split()[0])


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def seeded_repro(tmp_path: Path) -> tuple[Path, Path]:
    """(repro, counter): on bad commits the bug shows on about half the runs, by a fixed seed.

    The n-th call (n from the counter file) shows it when
    ``random.Random(SEED + n).random() < 0.5``; good commits behave as ``./repro.sh``.
    """
    counter = tmp_path / "calls"
    check = f"import random, sys; sys.exit(random.Random({SEED} + $n).random() < 0.5)"
    repro = script(tmp_path / "flaky_repro.sh", (
        f'n=$(cat {counter} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {counter}\n'
        "if grep -q miscompile third_party/llvm-project/lib/bug.txt &&\n"
        f'   {sys.executable} -c "{check}"; then\n'
        f"  {LOOKS_GOOD}\nfi\nexec ./repro.sh\n"))
    return repro, counter


def pattern_repro(tmp_path: Path, pattern: str) -> Path:
    """On bad commits, run i of a step is bad, good or skip as ``pattern[i - 1]`` says (B/G/S)."""
    cases = {"B": "exec ./repro.sh", "G": LOOKS_GOOD, "S": "echo flaky infra; exit 125"}
    arms = "".join(f"    {i + 1}) {cases[c]} ;;\n" for i, c in enumerate(pattern))
    return script(tmp_path / f"repro_{pattern}.sh", (
        "if grep -q miscompile third_party/llvm-project/lib/bug.txt; then\n"
        f'  case "$BISECTKIT_RUN" in\n{arms}  esac\nfi\nexec ./repro.sh\n'))


@pytest.mark.parametrize(("good", "bad", "skip", "expected"), [
    # any-bad, majority, all-bad
    (0, 1, 0, ("bad", "bad", "bad")),
    (2, 1, 0, ("bad", "good", "good")),
    (1, 2, 0, ("bad", "bad", "good")),
    (1, 1, 1, ("bad", "skip", "good")),
    (0, 1, 2, ("bad", "bad", "bad")),
    (3, 0, 0, ("good", "good", "good")),
    (1, 0, 2, ("good", "good", "good")),
    (0, 0, 3, ("skip", "skip", "skip")),
])
def test_policies_as_documented(good: int, bad: int, skip: int, expected: tuple[str, ...]):
    got = tuple(combine(p, good, bad, skip) for p in ("any-bad", "majority", "all-bad"))
    assert got == expected


def test_single_runs_are_fooled_and_any_bad_repeats_are_not(world_factory, tmp_path: Path):
    repro, counter = seeded_repro(tmp_path)
    wrong: dict[tuple[str, ...], int] = {}
    for extra in ([], ["-p", "flaky", "--repeat", "1"]):
        counter.unlink(missing_ok=True)
        world = world_factory(tmp_path / f"w{len(wrong)}")
        r = bisect(world, repro, *extra)
        assert r.returncode == 0, r.stderr + r.stdout
        wrong[tuple(extra)] = first_bad(world, r.stdout)
    # --repeat 1 changes nothing: same calls, same wrong answer.
    assert len(set(wrong.values())) == 1
    assert wrong[()] > 200

    counter.unlink()
    world = world_factory(tmp_path / "w-flaky")
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = bisect(world, repro, "-p", "flaky", "--repeat", "3", "--flaky-policy", "any-bad",
               json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    assert snapshot(world) == before
    assert "--- run 3/3: " in r.stdout
    steps = json.loads(out.read_text())["steps"]
    assert int(counter.read_text()) == 3 * len(steps)
    for s in steps:
        runs = s["runs"]
        assert runs["policy"] == "any-bad"
        assert runs["good"] + runs["bad"] + runs["skip"] == 3
        assert s["verdict"] == ("bad" if runs["bad"] else "good")
        assert s["reason"].startswith("3 runs: ")
        assert s["reason"].endswith(f"-> {s['verdict']} (any-bad)")
        disagree = runs["good"] > 0 and runs["bad"] > 0
        assert ("flags" in s) == disagree
        if disagree:
            assert s["flags"] == [f"runs disagree: {runs['bad']} bad, {runs['good']} good"]
    assert any("flags" in s for s in steps)
    # Every run's output is kept, each after its separator line.
    last = steps[-1]
    lines = Path(last["log"]).read_text().splitlines()
    seps = [x for x in lines if x.startswith("--- run ")]
    assert [x.split(":")[0] for x in seps] == ["--- run 1/3", "--- run 2/3", "--- run 3/3"]
    verdicts = [x.split(": ")[1].removesuffix(" ---") for x in seps]
    assert {v: verdicts.count(v) for v in ("good", "bad", "skip")} == {
        k: last["runs"][k] for k in ("good", "bad", "skip")}


@pytest.mark.parametrize(("pattern", "policy", "expected"), [
    ("BGG", "any-bad", 200),
    ("BBG", "majority", 200),
    # A minority of failures is outvoted: bad commits pass, so the answer would be
    # the bad end, which is then tested, passes too, and nothing is named (exit 5).
    ("BGG", "majority", None),
    ("BSS", "all-bad", 200),  # skipped runs do not count against "bad"
    ("BBG", "all-bad", None),  # one good run is enough to call a commit good
])
def test_policy_end_to_end(world: World, tmp_path: Path, pattern: str, policy: str,
                           expected: int | None):
    out = tmp_path / "r.json"
    r = bisect(world, pattern_repro(tmp_path, pattern), "-p", "flaky", "--repeat", "3",
               "--flaky-policy", policy, good=190, bad=210, json_path=out)
    if expected is None:
        assert r.returncode == 5, r.stderr + r.stdout
        assert f"the bad end {world.sha(210)[:12]} does not test bad" in r.stderr
    else:
        assert r.returncode == 0, r.stderr + r.stdout
        assert first_bad(world, r.stdout) == expected
    counts = {"good": pattern.count("G"), "bad": pattern.count("B"), "skip": pattern.count("S"),
              "policy": policy}
    at_bad = [s for s in json.loads(out.read_text())["steps"]
              if world.shas.index(s["commit"]) >= 200]
    assert at_bad and all(s["runs"] == counts for s in at_bad)


def test_majority_tie_is_skip(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = bisect(world, pattern_repro(tmp_path, "BGS"), "-p", "flaky", "--repeat", "3",
               "--flaky-policy", "majority", good=190, bad=210, json_path=out)
    assert r.returncode == 1, r.stderr + r.stdout
    assert "There are only 'skip'ped commits left to test." in r.stdout
    result = json.loads(out.read_text())
    assert result["candidates"][0] == world.sha(200)
    at_bad = [s for s in result["steps"] if world.shas.index(s["commit"]) >= 200]
    assert at_bad and all(s["verdict"] == "skip" for s in at_bad)
    assert at_bad[0]["reason"] == "3 runs: 1 bad, 1 good, 1 skip -> skip (majority)"
    assert at_bad[0]["flags"] == ["runs disagree: 1 bad, 1 good"]


def test_repeat_must_be_at_least_one(world: World, tmp_path: Path):
    before = snapshot(world)
    r = bisect(world, world.superproject / "repro.sh", "-p", "flaky", "--repeat", "0")
    assert r.returncode == 2
    assert "argument --repeat: must be 1 or more" in r.stderr
    assert snapshot(world) == before


def test_an_aborting_run_aborts_the_bisection(world: World, tmp_path: Path):
    calls = tmp_path / "calls"
    repro = script(tmp_path / "abort.sh", (
        f'echo "$BISECTKIT_STEP $BISECTKIT_RUN/$BISECTKIT_RUNS" >> {calls}\n'
        '[ "$BISECTKIT_RUN" = 2 ] && { echo "lost the device"; exit 255; }\n'
        "exec ./repro.sh\n"))
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = bisect(world, repro, "-p", "flaky", "--repeat", "3", json_path=out)
    assert r.returncode == 3, r.stderr + r.stdout
    assert "exit 255" in r.stderr
    # The third run never started, and no verdict was recorded for the step.
    assert calls.read_text().splitlines() == ["1 1/3", "1 2/3"]
    result = json.loads(out.read_text())
    assert result["status"] == "aborted"
    assert result["steps"] == []
    assert snapshot(world) == before


# -- the boundary re-tested: the answer's confidence --------------------------------
def test_repeated_runs_report_a_confidence(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--good", world.sha(150), "--bad", world.sha(250),
                         "--good-if", GOOD_IF, "-p", "flaky", "--repeat", "2",
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    confidence = result["confidence"]
    assert confidence["trustworthy"] is True
    assert confidence["boundary"] == [world.sha(199), world.sha(200)]
    confirm = [s for s in result["steps"] if s["source"] == "confirm"]
    assert [s["commit"] for s in confirm] == confidence["boundary"]
    assert "confidence: the boundary pair re-tested the same" in r.stdout


def test_a_boundary_that_retests_differently_is_not_trustworthy(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    first = cli(world, *run_args(world, "--good", world.sha(150), "--bad", world.sha(250),
                             "--good-if", GOOD_IF, "-p", "flaky", "--repeat", "2",
                             "--json", str(out), "--", "./repro.sh"))
    assert first.returncode == 0, first.stderr
    tested = sum(1 for s in json.loads(out.read_text())["steps"] if s["source"] == "run")
    # Same verdicts while bisecting, then every run passes: the re-test of the
    # first bad commit contradicts the answer.
    repro = tmp_path / "turns_good.sh"
    repro.write_text(f'#!/bin/sh\n[ "$BISECTKIT_STEP" -gt {tested} ] && '
                     "{ echo \"HAL device 'vulkan' not found\"; exit 1; }\nexec ./repro.sh\n")
    repro.chmod(0o755)
    r = cli(world, *run_args(world, "--good", world.sha(150), "--bad", world.sha(250),
                         "--good-if", GOOD_IF, "-p", "flaky", "--repeat", "2",
                         "--json", str(out), "--", str(repro)))
    assert r.returncode == 0, r.stderr
    confidence = json.loads(out.read_text())["confidence"]
    assert confidence["trustworthy"] is False
    assert confidence["agree"] == [True, False]
    assert "the answer is not trustworthy" in r.stdout


def test_confidence_when_the_bad_end_cannot_be_retested(world_factory, tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=350, local_conflict=350,
                                              pick_by_patch_id=None))
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--good", world.sha(340), "--bad", world.sha(350),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "-p", "flaky",
                         "--repeat", "2", "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(350)
    assert result["confidence"]["trustworthy"] is False
    assert "cannot re-test" in r.stdout
