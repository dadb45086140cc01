"""``--check-stack``: is our patch stack to blame? It says what it concluded every time
(implicated, not implicated, could not be checked, nothing to check), and the ``--stack``
bisect it points to names our patch (real CLI, real git worlds)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers.lines import command_after
from helpers.repros import local_patch_repro, run_args, target
from helpers.worlds import World, cli, snapshot

GOOD_IF = "device .* not found"


def test_check_stack_then_stack_bisect_names_our_patch(world: World, tmp_path: Path):
    repro = local_patch_repro(tmp_path)
    before = snapshot(world)
    out = tmp_path / "r.json"
    # Every patched candidate is bad, the good end too: the answer rests on the
    # good end, which does not test good with the stack applied.
    r = cli(world, *run_args(world, "--good", world.sha(100), "--bad", world.sha(300),
                         "--check-stack", "--", str(repro)))
    assert r.returncode == 5, r.stderr + r.stdout
    assert f"the good end {world.sha(100)[:12]} does not test good" in r.stderr
    assert snapshot(world) == before
    # Told not to verify, the stack check is what clears it up.
    r = cli(world, *run_args(world, "--good", world.sha(100), "--bad", world.sha(300),
                         "--check-stack", "--no-verify", "--json", str(out), "--", str(repro)))
    assert r.returncode == 0, r.stderr + r.stdout
    result = json.loads(out.read_text())
    # Every patched candidate is bad: the first one gets the blame...
    assert result["first_bad"] == world.sha(101)
    # ...but without the stack it is good: the stack is implicated.
    assert result["check_stack"]["stack_implicated"] is True
    checked = [s for s in result["steps"] if s["source"] == "check-stack"]
    assert len(checked) == 1 and checked[0]["patches"] == []
    command = command_after(r.stdout, "one of our patches is the culprit")
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
    r = cli(world, *run_args(world, "--stack", "--good", world.sha(1), "--", "./repro.sh"))
    assert r.returncode == 2 and "--stack takes one --submodule and --at REV" in r.stderr
    r = cli(world, *run_args(world, "--stack", "--at", world.stack[-1], "--", "./repro.sh"))
    assert r.returncode == 2 and "contains local patch" in r.stderr
    r = cli(world, *run_args(world, "--at", world.sha(5), "--good", world.sha(1), "--bad",
                         world.sha(9), "--", "./repro.sh"))
    assert r.returncode == 2 and "--at goes with --stack" in r.stderr


def check_stack_line(r: subprocess.CompletedProcess[str]) -> str:
    # Broken to fit the width: the line and its continuations (indented), joined.
    text = re.sub(r"\n  +", " ", r.stdout)
    lines = [line for line in text.splitlines() if line.startswith("check-stack: ")]
    assert len(lines) == 1, r.stdout
    return lines[0]


@pytest.mark.parametrize("case", ["implicated", "not implicated", "could not be checked"])
def test_check_stack_prints_its_conclusion(world: World, tmp_path: Path, case: str) -> None:
    out = tmp_path / "r.json"
    good, repro, build = world.sha(0), ["./repro.sh"], ["--good-if", GOOD_IF]
    if case == "implicated":
        # Every patched commit is bad, the good end too: --no-verify lets the stack
        # check, not the good end's confirmation, tell why.
        good, repro, build = world.sha(100), [str(local_patch_repro(tmp_path))], ["--no-verify"]
    elif case == "could not be checked":
        # Upstream's build is broken at the culprit; only the stack's cherry-pick fixes it.
        build += ["--build", "./build.sh"]
    r = cli(world, "run", *target(world), "--good", good, "--bad", world.sha(300), *build,
            "--check-stack", "--json", str(out), "--", *repro)
    assert r.returncode == 0, r.stderr + r.stdout
    result = json.loads(out.read_text())
    line = check_stack_line(r)
    checked = result["check_stack"]
    assert line == f"check-stack: {checked['conclusion']}"
    first = result["first_bad"][:12]
    if case == "implicated":
        assert checked["stack_implicated"] is True
        assert line.startswith("check-stack: the patch stack is implicated: "
                               f"{first} is good without it and bad with it")
    elif case == "not implicated":
        assert checked["stack_implicated"] is False
        assert line.startswith("check-stack: the patch stack is not implicated")
    else:
        # A skip is no acquittal: neither True nor False.
        assert checked["stack_implicated"] is None and checked["verdict"] == "skip"
        assert line.startswith(f"check-stack: could not be checked: {first} without the "
                               "patch stack tested skip (build failed")


def test_check_stack_says_when_there_is_nothing_to_check(integrate_world: World,
                                                         tmp_path: Path) -> None:
    w = integrate_world
    out = tmp_path / "r.json"
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["adv12"], "--build", "./build.sh", "--good-if", GOOD_IF,
            "--check-stack", "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert check_stack_line(r).startswith("check-stack: not checked: an integrate bisect has "
                                          "no patch stack")
    assert json.loads(out.read_text())["check_stack"]["stack_implicated"] is None
