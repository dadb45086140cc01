"""The actions level chained to the commit levels: ``bisectkit actions --at REV`` checks REV
out and builds it exactly as a bisection step would, bisects the compiler's actions there
and restores everything; ``bisectkit run --then-actions KIND`` does it at the first bad
commit it found and prints both answers.

The "compiler" is Debian's real ``opt-19``, running the pass pipeline that the pinned
``llvm-project`` names in ``lib/pipeline.txt``: upstream commit 17 adds ``early-cse``,
which folds ``checked_add``'s overflow check (``add nsw`` + ``icmp sgt``). The
commit bisection finds commit 17; the actions level finds ``EarlyCSEPass on
checked_add``. Kills at any instant of ``--at`` are restored as any run's are.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.lines import command_after
from helpers.worlds import World, WorldFactory, WorldSpec, cli, snapshot

SPEC = WorldSpec(commits=40, merge_base=30, bug_at=20, build_breaks=[], feature_prep=5,
                 reverted=12, picks=[], pick_by_patch_id=None, local_conflict=None,
                 writes={1: {"lib/pipeline.txt": "function(mem2reg)\n"},
                         17: {"lib/pipeline.txt": "function(mem2reg,early-cse)\n"}})

CHECKED_ADD = """\
define i32 @checked_add(i32 %a) {
entry:
  %s = add nsw i32 %a, 1
  %c = icmp sgt i32 %s, %a
  %r = zext i1 %c to i32
  ret i32 %r
}

define i32 @main(i32 %argc) {
entry:
  %a = add i32 %argc, 2147483646
  %r = call i32 @checked_add(i32 %a)
  ret i32 %r
}
"""

#: Good (0) when checked_add(INT_MAX) reports the overflow, bad (1) when it is folded.
#: ``$PAUSE_AT``: at that limit, touch ``$PAUSE_MARK`` and sleep (to be killed there).
REPRO = """#!/bin/bash
if [ -n "$PAUSE_AT" ] && [ "$BISECTKIT_ACTION_LIMIT" = "$PAUSE_AT" ]; then
  touch "$PAUSE_MARK"; sleep 60.27
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
opt-19 -S -passes="$(cat third_party/llvm-project/lib/pipeline.txt)" $BISECTKIT_ACTIONS \\
  "$INPUT" -o "$tmp/o.ll" || exit 125
lli-19 "$tmp/o.ll"
"""

TOOLS = ("opt-19", "lli-19")


@pytest.fixture
def chained(world_factory: WorldFactory, tmp_path: Path) -> tuple[World, Path, dict[str, str]]:
    """The world, its repro (outside the superproject) and the environment it needs."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install Debian's LLVM 19 ({', '.join(missing)} missing)")
        pytest.skip(f"needs Debian's LLVM 19 ({', '.join(missing)})")
    world = world_factory(tmp_path, SPEC)
    (tmp_path / "checked_add.ll").write_text(CHECKED_ADD)
    repro = tmp_path / "repro.sh"
    repro.write_text(REPRO)
    repro.chmod(0o755)
    return world, repro, {"INPUT": str(tmp_path / "checked_add.ll")}


def test_run_then_actions_names_the_commit_and_the_pass_inside_it(
        chained: tuple[World, Path, dict[str, str]], tmp_path: Path) -> None:
    world, repro, env = chained
    before = snapshot(world)
    out = tmp_path / "result.json"
    r = cli(world, "run", "--good", world.sha(10), "--bad", world.sha(30), "--then-actions",
            "opt-bisect", "--json", str(out), "--", str(repro), extra_env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(17)
    actions = result["actions"]
    assert actions["commit"] == world.sha(17)
    assert actions["action"]["name"] == "EarlyCSEPass"
    assert actions["action"]["unit"] == "checked_add"
    # Brute force: the pipeline at commit 17 runs 4 passes; only early-cse folds.
    assert actions["total"] == 4 and actions["first_bad"] == 2
    assert f"first bad commit {world.sha(17)[:12]}; inside it, action #2 of 4" in r.stdout
    assert snapshot(world) == before


def test_actions_at_a_commit_checks_it_out_builds_it_and_restores(
        chained: tuple[World, Path, dict[str, str]], tmp_path: Path) -> None:
    world, repro, env = chained
    before = snapshot(world)
    built = tmp_path / "built"
    out = tmp_path / "at.json"
    r = cli(world, "actions", "--at", world.sha(25), "--build",
            f"cat third_party/llvm-project/lib/pipeline.txt > {built}", "--kind", "opt-bisect",
            "--json", str(out), "--", str(repro), extra_env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    # The build ran with commit 25 (and the stack) checked out.
    assert built.read_text() == "function(mem2reg,early-cse)\n"
    result = json.loads(out.read_text())
    assert (result["commit"], result["first_bad"]) == (world.sha(25), 2)
    assert "at commit" in r.stdout
    assert snapshot(world) == before


def test_actions_at_a_commit_before_the_pass_was_added_is_refused_at_its_ends(
        chained: tuple[World, Path, dict[str, str]]) -> None:
    """At commit 10 the pipeline has no early-cse: every limit is good, nothing to bisect."""
    world, repro, env = chained
    before = snapshot(world)
    r = cli(world, "actions", "--at", world.sha(10), "--kind", "opt-bisect", "--",
            str(repro), extra_env=env)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "not caused by actions bisectkit can skip" in r.stderr
    assert snapshot(world) == before


def test_a_failed_build_at_the_commit_stops_and_restores(
        chained: tuple[World, Path, dict[str, str]]) -> None:
    world, repro, env = chained
    before = snapshot(world)
    r = cli(world, "actions", "--at", world.sha(25), "--build", "exit 1", "--kind",
            "opt-bisect", "--", str(repro), extra_env=env)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "the build failed at" in r.stderr
    assert snapshot(world) == before


def test_commit_options_without_at_are_refused(
        chained: tuple[World, Path, dict[str, str]]) -> None:
    world, repro, env = chained
    r = cli(world, "actions", "--integrate", "--kind", "opt-bisect", "--", str(repro),
            extra_env=env)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].endswith(
        "--integrate goes with --at REV (the commit to check out and build)")


def _paused(world: World, repro: Path, env: dict[str, str], tmp_path: Path
            ) -> tuple[subprocess.Popen[str], Path]:
    """``actions --at`` started, its repro paused at limit 1 (the tree checked out)."""
    mark = tmp_path / "paused"
    exe = shutil.which("bisectkit")
    assert exe is not None
    proc = subprocess.Popen(
        [exe, "actions", "--at", world.sha(25), "--kind", "opt-bisect", "--", str(repro)],
        cwd=world.superproject, env={**world.env, **env, "PAUSE_AT": "1",
                                     "PAUSE_MARK": str(mark)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the repro never reached limit 1"
        time.sleep(0.05)
    # The submodule holds commit 25 (patched) while the repro runs.
    assert world.git(world.submodule, "log", "-1", "--format=%s", "HEAD~2").startswith(
        "upstream commit 25")
    return proc, mark


def _no_sleep_left() -> bool:
    """No process of the paused repro (its ``sleep 60.27``, a length no other test
    sleeps) is running any more."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return "sleep 60.27" not in ps


def test_ctrl_c_during_actions_at_a_commit_restores_everything(
        chained: tuple[World, Path, dict[str, str]], tmp_path: Path) -> None:
    world, repro, env = chained
    before = snapshot(world)
    proc, _ = _paused(world, repro, env, tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert snapshot(world) == before
    assert _no_sleep_left()


def test_actions_at_a_commit_killed_is_restored_by_reset(
        chained: tuple[World, Path, dict[str, str]], tmp_path: Path) -> None:
    world, repro, env = chained
    before = snapshot(world)
    proc, _ = _paused(world, repro, env, tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    r = subprocess.run(["git", "bisect-patched", "reset"], cwd=world.superproject,
                       env=world.env, text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert snapshot(world) == before
    deadline = time.monotonic() + 10
    while not _no_sleep_left():
        assert time.monotonic() < deadline, "the killed run's repro is still running"
        time.sleep(0.1)


def test_integrate_then_actions_carries_the_actions_level_into_its_followup(
        integrate_world: World) -> None:
    """At the culprit superproject commit the stand-in compiler prints no OptBisect line:
    the actions level says so (exit 3) under the commit answer, which stands, and the
    follow-up submodule bisection asks for the actions level again."""
    w = integrate_world
    before = snapshot(w)
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["adv12"], "--build", "./build.sh", "--good-if", "device .* not found",
            "--then-actions", "opt-bisect", "--", "./repro.sh")
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"{w.integrate['adv8']} is the first bad commit" in r.stdout
    assert "no 'BISECT: running pass' line" in r.stdout
    command = command_after(r.stdout, "to find the upstream culprit, run:")
    assert command[command.index("--then-actions") + 1] == "opt-bisect"
    assert command.index("--then-actions") < command.index("--")
    assert snapshot(w) == before


def test_a_then_actions_typo_is_refused_in_its_own_words(
        chained: tuple[World, Path, dict[str, str]]) -> None:
    world, repro, env = chained
    before = snapshot(world)
    r = cli(world, "run", "--good", world.sha(10), "--bad", world.sha(30), "--then-actions",
            "opt-bisec", "--", str(repro), extra_env=env)
    assert r.returncode == 2
    assert r.stderr.strip() == ("bisectkit: error: unknown --then-actions 'opt-bisec': "
                                "opt-bisect, mlir-counter or llvm-counter:NAME")
    assert snapshot(world) == before
