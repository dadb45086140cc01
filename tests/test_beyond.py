"""Beyond git bisect: stack bisect, find-fix, verify-range, traces, confidence."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli, snapshot

GOOD_IF = "device .* not found"


def base(world: World, *extra: str) -> list[str]:
    return ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main", *extra]


def local_patch_repro(tmp_path: Path) -> Path:
    """Bad exactly when our local fixup of lib/local.txt is applied."""
    repro = tmp_path / "local_repro.sh"
    repro.write_text(f"#!/bin/sh\nif grep -q 'our local fixup' {SUBMODULE}/lib/local.txt; then\n"
                     "  echo 'error: our fixup miscompiles'; exit 1\nfi\necho ok\n")
    repro.chmod(0o755)
    return repro


def test_check_stack_then_stack_bisect_names_our_patch(world: World, tmp_path: Path):
    repro = local_patch_repro(tmp_path)
    before = snapshot(world)
    out = tmp_path / "r.json"
    # Every patched candidate is bad, the good end too: the answer rests on the
    # good end, which does not test good with the stack applied.
    r = cli(world, *base(world, "--good", world.sha(100), "--bad", world.sha(300),
                         "--check-stack", "--", str(repro)))
    assert r.returncode == 5, r.stderr + r.stdout
    assert f"the good end {world.sha(100)[:12]} does not test good" in r.stderr
    assert snapshot(world) == before
    # Told not to verify, the stack check is what clears it up.
    r = cli(world, *base(world, "--good", world.sha(100), "--bad", world.sha(300),
                         "--check-stack", "--no-verify", "--json", str(out), "--", str(repro)))
    assert r.returncode == 0, r.stderr + r.stdout
    result = json.loads(out.read_text())
    # Every patched candidate is bad: the first one gets the blame...
    assert result["first_bad"] == world.sha(101)
    # ...but without the stack it is good: the stack is implicated.
    assert result["check_stack"]["stack_implicated"] is True
    checked = [s for s in result["steps"] if s["source"] == "check-stack"]
    assert len(checked) == 1 and checked[0]["patches"] == []
    lines = r.stdout.splitlines()
    hint = next(i for i, x in enumerate(lines) if "one of our patches is the culprit" in x)
    command = shlex.split(lines[hint + 1])
    assert command[command.index("--at") + 1] == world.sha(101)
    assert snapshot(world) == before

    cut = command.index("--")
    follow = subprocess.run([*command[:cut], "--json", str(out), *command[cut:]],
                            cwd=world.superproject, env=world.env, text=True,
                            capture_output=True, stdin=subprocess.DEVNULL)
    assert follow.returncode == 0, follow.stderr + follow.stdout
    local = world.stack[-1]
    assert f"{local} is the first bad commit" in follow.stdout
    stacked = json.loads(out.read_text())
    assert stacked["strategy"] == "stack" and stacked["first_bad"] == local
    assert stacked["first_bad_subject"] == "[local] fixup for our target"
    assert snapshot(world) == before


def test_stack_bisect_refuses_bad_input(world: World):
    r = cli(world, *base(world, "--stack", "--good", world.sha(1), "--", "./repro.sh"))
    assert r.returncode == 2 and "--stack takes one --submodule and --at REV" in r.stderr
    r = cli(world, *base(world, "--stack", "--at", world.stack[-1], "--", "./repro.sh"))
    assert r.returncode == 2 and "contains local patch" in r.stderr
    r = cli(world, *base(world, "--at", world.sha(5), "--good", world.sha(1), "--bad",
                         world.sha(9), "--", "./repro.sh"))
    assert r.returncode == 2 and "--at goes with --stack" in r.stderr


def test_find_fix_finds_the_upstream_fix(world_factory, tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=200, bug_fixed_at=260))
    out = tmp_path / "r.json"
    r = cli(world, *base(world, "--find-fix", "--old", world.sha(220), "--new", world.sha(300),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "--json", str(out),
                         "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(260)} is the first fixed commit" in r.stdout
    result = json.loads(out.read_text())
    assert result["terms"] == {"old": "broken", "new": "fixed"}
    assert result["first_bad"] == world.sha(260)
    for step in result["steps"]:
        assert step["term"] == ("fixed" if world.shas.index(step["commit"]) >= 260 else "broken")
    assert " fixed (" in r.stdout and " broken (" in r.stdout


def test_find_fix_by_hand_with_custom_terms_logs_and_replays(world_factory, tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=200, bug_fixed_at=260))
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--find-fix", "--term-old", "slow",
                "--term-new", "fast", world.sha(300), world.sha(220))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for _ in range(12):
        if "is the first fast commit" in out:
            break
        bug = (world.submodule / "lib/bug.txt").read_text()
        # The repro's outcome: with --find-fix, "good" (passes) is the new side.
        r = git_cli(world, "good" if "ok" in bug else "bad")
        assert r.returncode == 0, r.stderr
        out = r.stdout
    assert f"{world.sha(260)} is the first fast commit" in out
    log = git_cli(world, "log").stdout
    assert "--find-fix --term-old slow --term-new fast" in log.splitlines()[0]
    assert log.splitlines()[-1].startswith(f"# first fast commit: [{world.sha(260)}]")
    assert "git bisect-patched new " in log and "git bisect-patched old " in log
    (tmp_path / "fix.log").write_text(log)
    assert git_cli(world, "reset").returncode == 0
    r = git_cli(world, "replay", str(tmp_path / "fix.log"))
    assert f"{world.sha(260)} is the first fast commit" in r.stdout, r.stdout + r.stderr
    assert git_cli(world, "reset").returncode == 0


def test_verify_range_catches_a_wrong_good(world: World, tmp_path: Path):
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = cli(world, *base(world, "--good", world.sha(250), "--bad", world.sha(300),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"the good end {world.sha(250)[:12]} is not good: it tested bad" in r.stderr
    assert json.loads(out.read_text())["status"] == "aborted"
    assert snapshot(world) == before
    ok = cli(world, *base(world, "--good", world.sha(100), "--bad", world.sha(300),
                          "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                          "--json", str(out), "--", "./repro.sh"))
    assert ok.returncode == 0, ok.stderr
    steps = json.loads(out.read_text())["steps"]
    assert [s["source"] for s in steps[:2]] == ["verify", "verify"]
    assert [s["verdict"] for s in steps[:2]] == ["good", "bad"]


def test_trace_spans_nest_and_cover_every_step(world: World, tmp_path: Path):
    trace = tmp_path / "trace.json"
    out = tmp_path / "r.json"
    r = cli(world, *base(world, "--good", world.sha(0), "--bad", world.sha(300), "--build",
                         "./build.sh", "--good-if", GOOD_IF, "--trace", str(trace),
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    steps = json.loads(out.read_text())["steps"]
    for step in steps:
        mine = [e for e in events if e.get("tid") == step["index"]]
        (outer,) = [e for e in mine if e["ph"] == "X" and e["name"] == "step"]
        lo, hi = outer["ts"], outer["ts"] + outer["dur"]
        names = {e["name"] for e in mine if e["ph"] == "X"}
        assert {"materialise", "checkout", "build", "repro", "classify"} <= names
        for e in mine:
            if e["ph"] == "X":
                assert lo - 1 <= e["ts"] and e["ts"] + e["dur"] <= hi + 1, e
            elif e["ph"] == "i":
                assert lo - 1 <= e["ts"] <= hi + 1
        (mat,) = [e for e in mine if e["name"] == "materialise"]
        patches = [e for e in mine if e["name"].startswith("patch ")]
        assert len(patches) == len(step["patches"]) == 4
        for e in patches:
            assert mat["ts"] - 1 <= e["ts"] and e["ts"] + e["dur"] <= mat["ts"] + mat["dur"] + 1
        verdicts = [e for e in mine if e["ph"] == "i"]
        assert [e["name"] for e in verdicts] == [f"verdict: {step['verdict']}"]
        assert any(e["ph"] == "M" for e in mine)  # the track is named


def test_repeated_runs_report_a_confidence(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = cli(world, *base(world, "--good", world.sha(150), "--bad", world.sha(250),
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


def test_report_is_ready_to_paste(world: World, tmp_path: Path):
    world.git(world.superproject, "config", "bisectkit.commit-url",
              "https://github.com/llvm/llvm-project/commit/{sha}")
    md = tmp_path / "report.md"
    r = cli(world, *base(world, "--good", world.sha(0), "--bad", world.sha(300), "--build",
                         "./build.sh", "--good-if", GOOD_IF, "--report", str(md),
                         "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    text = md.read_text()
    culprit = world.sha(200)
    assert f"https://github.com/llvm/llvm-project/commit/{culprit}" in text
    assert "upstream commit 200: touch lib/bug.txt" in text
    assert "Bisect Tester" in text or "Upstream Dev" in text
    # What the stack did at the culprit and before it.
    assert "| revert |" in text and "applied" in text
    # The culprit's first error lines, from its kept step log.
    assert "error: 'func.func' op miscompiled: wrong result 41 != 42" in text
    assert "Reproduce with:" in text and "bisectkit run --submodule" in text
    assert f"report written to {md}" in r.stdout
    short = r.stdout.split("report written")[0].splitlines()[-10:]
    assert any(culprit[:12] in line for line in short)  # the terminal version


def test_a_boundary_that_retests_differently_is_not_trustworthy(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    first = cli(world, *base(world, "--good", world.sha(150), "--bad", world.sha(250),
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
    r = cli(world, *base(world, "--good", world.sha(150), "--bad", world.sha(250),
                         "--good-if", GOOD_IF, "-p", "flaky", "--repeat", "2",
                         "--json", str(out), "--", str(repro)))
    assert r.returncode == 0, r.stderr
    confidence = json.loads(out.read_text())["confidence"]
    assert confidence["trustworthy"] is False
    assert confidence["agree"] == [True, False]
    assert "the answer is not trustworthy" in r.stdout


def test_verify_range_with_a_wrong_bad_end_leaves_nothing_behind(world: World, tmp_path: Path):
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = cli(world, *base(world, "--good", world.sha(100), "--bad", world.sha(150),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"the bad end {world.sha(150)[:12]} is not bad: it tested good" in r.stderr
    assert json.loads(out.read_text())["status"] == "aborted"
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()
    # The log of a verified run replays (verification steps are not verdicts).
    ok = cli(world, *base(world, "--good", world.sha(100), "--bad", world.sha(300),
                          "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                          "--", "./repro.sh"))
    assert ok.returncode == 0
    replay = git_cli(world, "replay", ".git/bisectkit/last-log")
    assert f"{world.sha(200)} is the first bad commit" in replay.stdout, replay.stderr
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


def test_confidence_when_the_bad_end_cannot_be_retested(world_factory, tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=350, local_conflict=350,
                                              pick_by_patch_id=None))
    out = tmp_path / "r.json"
    r = cli(world, *base(world, "--good", world.sha(340), "--bad", world.sha(350),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "-p", "flaky",
                         "--repeat", "2", "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(350)
    assert result["confidence"]["trustworthy"] is False
    assert "cannot re-test" in r.stdout


def test_followups_keep_find_fix(integrate_world: World, tmp_path: Path):
    w = integrate_world
    fixed = tmp_path / "passes_once_buggy.sh"  # "fixed" = the repro passes
    fixed.write_text(f"#!/bin/sh\ngrep -q miscompile {SUBMODULE}/lib/bug.txt\n")
    fixed.chmod(0o755)
    r = cli(w, "run", "--integrate", "--find-fix", "--old", w.integrate["adv1"],
            "--new", w.integrate["adv12"], "--", str(fixed))
    assert r.returncode == 0, r.stderr
    assert f"{w.integrate['adv8']} is the first fixed commit" in r.stdout
    lines = r.stdout.splitlines()
    hint = next(i for i, x in enumerate(lines) if "to find the upstream culprit, run:" in x)
    command = shlex.split(lines[hint + 1])
    assert "--find-fix" in command
    follow = subprocess.run(command, cwd=w.superproject, env=w.env, text=True,
                            capture_output=True, stdin=subprocess.DEVNULL)
    assert follow.returncode == 0, follow.stderr
    assert f"{w.sha(200)} is the first fixed commit" in follow.stdout
