"""``--find-fix`` and custom terms (``--term-old``/``--term-new``): the first fixed
commit, found by ``run`` and by hand, and the session's words in every message, in
``status``, in the log and in the follow-up commands (real CLI, real git worlds)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from helpers.lines import command_after
from helpers.repros import run_args, target
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli

GOOD_IF = "device .* not found"
WORDS_GOOD_BAD = re.compile(r"\b(good|bad)\b")


def test_find_fix_finds_the_upstream_fix(world_factory, tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=200, bug_fixed_at=260))
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--find-fix", "--old", world.sha(220), "--new", world.sha(300),
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


def test_followups_keep_find_fix(integrate_world: World, tmp_path: Path):
    w = integrate_world
    fixed = tmp_path / "passes_once_buggy.sh"  # "fixed" = the repro passes
    fixed.write_text(f"#!/bin/sh\ngrep -q miscompile {SUBMODULE}/lib/bug.txt\n")
    fixed.chmod(0o755)
    r = cli(w, "run", "--integrate", "--find-fix", "--old", w.integrate["adv1"],
            "--new", w.integrate["adv12"], "--", str(fixed))
    assert r.returncode == 0, r.stderr
    assert f"{w.integrate['adv8']} is the first fixed commit" in r.stdout
    command = command_after(r.stdout, "to find the upstream culprit, run:")
    assert "--find-fix" in command
    follow = subprocess.run(command, cwd=w.superproject, env=w.env, text=True,
                            capture_output=True, stdin=subprocess.DEVNULL)
    assert follow.returncode == 0, follow.stderr
    assert f"{w.sha(200)} is the first fixed commit" in follow.stdout


def test_find_fix_words_in_status_found_summary_and_refusals(world_factory,
                                                             tmp_path: Path) -> None:
    world = world_factory(tmp_path, WorldSpec(bug_at=200, bug_fixed_at=260))
    old, new = world.sha(220), world.sha(300)
    # One end: the session waits for the other, in the session's words.
    waiting = git_cli(world, "start", "--find-fix", *target(world), new)
    assert waiting.returncode == 0, waiting.stderr
    assert "status: waiting for broken commit(s), fixed commit known" in waiting.stdout
    assert "give 'git bisect-patched old REV'" in waiting.stdout
    assert git_cli(world, "reset").returncode == 0
    refused = git_cli(world, "start", "--find-fix", *target(world), old, new)
    assert refused.returncode == 2 and "broken revision" in refused.stderr, refused.stderr
    assert "not an ancestor of fixed" in refused.stderr

    started = git_cli(world, "start", "--find-fix", *target(world), new, old)
    assert started.returncode == 0, started.stderr
    assert f"range: broken {old[:12]} .. fixed {new[:12]}" in started.stdout
    status = git_cli(world, "status")
    assert "verdicts: 0 broken, 1 fixed, 0 skip (the fixed end included)" in status.stdout
    assert "between the broken end and" in status.stdout
    assert not WORDS_GOOD_BAD.search(status.stdout), status.stdout
    # A contradiction is told in the session's words too.
    assert git_cli(world, "new", world.sha(280)).returncode == 0
    wrong = git_cli(world, "old", world.sha(290))
    assert wrong.returncode == 2
    assert (f"cannot mark broken: {world.sha(290)[:12]} is newer than "
            f"{world.sha(280)[:12]}, marked fixed") in wrong.stderr

    run = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert run.returncode == 0, run.stderr
    assert f"{world.sha(260)} is the first fixed commit" in run.stdout
    assert re.search(r"summary: \d+ steps \(\d+ broken, \d+ fixed, \d+ skip", run.stdout)
    status = git_cli(world, "status")
    assert f"{world.sha(260)} is the first fixed commit" in status.stdout
    assert not WORDS_GOOD_BAD.search(status.stdout.replace("--good-if", "")), status.stdout
    log = git_cli(world, "log").stdout
    assert f"# first fixed commit: [{world.sha(260)}]" in log
    assert git_cli(world, "reset").returncode == 0


def test_custom_terms_in_the_inconclusive_message(world: World) -> None:
    r = cli(world, "run", *target(world), "--term-old", "slow", "--term-new", "fast",
            "--good", world.sha(250), "--bad", world.sha(254), "--", "sh", "-c", "exit 125")
    assert r.returncode == 1, r.stderr + r.stdout
    assert "The first fast commit could be any of:" in r.stdout
    assert re.search(r"summary: \d+ steps \(0 slow, 0 fast, \d+ skip", r.stdout)
    assert not WORDS_GOOD_BAD.search(r.stdout), r.stdout
