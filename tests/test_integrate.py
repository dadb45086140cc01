"""Integrate-branch bisects: superproject commits, submodules updated at every step."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.lines import command_after
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

GOOD_IF = "device .* not found"


def recording_repro(tmp_path: Path) -> tuple[Path, Path]:
    """A repro that logs which submodule commit it saw, then runs the world's repro."""
    log = tmp_path / "seen.log"
    repro = tmp_path / "seen_repro.sh"
    repro.write_text(
        "#!/bin/sh\n"
        f'echo "$BISECTKIT_COMMIT $(git rev-parse HEAD) '
        f'$(git -C {SUBMODULE} rev-parse HEAD) $BISECTKIT_SUBMODULE_THIRD_PARTY_LLVM_PROJECT '
        f'$(cat {SUBMODULE}/lib/bug.txt)" >> {log}\n'
        "exec ./repro.sh\n")
    repro.chmod(0o755)
    return repro, log


def integrate_run(world: World, good: str, bad: str, *extra: str, repro: str = "./repro.sh"):
    return cli(world, "run", "--integrate", "--good", good, "--bad", bad, "--build", "./build.sh",
               "--good-if", GOOD_IF, *extra, "--", repro)


def test_finds_the_advance_skips_the_broken_fixup_and_restores(integrate_world: World,
                                                               tmp_path: Path):
    w = integrate_world
    # A submodule deliberately checked out away from its pin must come back there.
    w.git(w.submodule, "checkout", "-q", "--detach", w.pins[5])
    before = snapshot(w)
    repro, log = recording_repro(tmp_path)
    out = tmp_path / "r.json"
    r = integrate_run(w, w.integrate["init"], w.integrate["adv12"], "--json", str(out),
                      repro=str(repro))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv8']} is the first bad commit\n" in r.stdout
    assert snapshot(w) == before
    assert w.git(w.submodule, "rev-parse", "HEAD") == w.pins[5]

    result = json.loads(out.read_text())
    assert result["status"] == "found" and result["strategy"] == "integrate"
    steps = {s["commit"]: s for s in result["steps"]}
    broken = steps[w.integrate["break"]]
    assert broken["verdict"] == "skip" and broken["reason"].startswith("build failed")
    # The repro saw the superproject candidate and the submodule at that candidate's pin.
    for line in log.read_text().splitlines():
        commit, super_head, sub_head, env_pin, bug = line.split()
        assert commit == super_head
        assert sub_head == env_pin == w.git(w.superproject, "rev-parse", f"{commit}:{SUBMODULE}")
        assert (bug == "miscompile") == (steps[commit]["verdict"] == "bad")
    moved = result["submodules_at_first_bad"]
    assert moved == [{"path": SUBMODULE, "old": w.pins[7], "new": w.pins[8],
                      "old_base": w.sha(175), "new_base": w.sha(200), "upstream_commits": 25}]
    assert f"{SUBMODULE}: {w.pins[7][:12]} -> {w.pins[8][:12]} (25 upstream commits)" in r.stdout


def test_followup_command_chains_into_a_submodule_bisect(integrate_world: World):
    w = integrate_world
    r = integrate_run(w, w.integrate["init"], w.integrate["adv12"], "-p", "flaky",
                      "--repeat", "2")
    assert r.returncode == 0, r.stderr
    command = command_after(r.stdout, "to find the upstream culprit, run:")
    assert command[:2] == ["bisectkit", "run"]
    # Run options, plugins and plugin options carry over to the follow-up.
    assert "--good-if=device .* not found" in command
    assert command[command.index("-p") + 1] == "flaky" and "--repeat=2" in command
    assert command[command.index("--good") + 1] == w.sha(175)
    assert command[command.index("--bad") + 1] == w.sha(200)
    follow = subprocess.run(command, cwd=w.superproject, env=w.env, text=True,
                            capture_output=True, stdin=subprocess.DEVNULL)
    assert follow.returncode == 0, follow.stderr
    assert f"{w.sha(200)} is the first bad commit" in follow.stdout


def test_pins_are_fetched_when_missing_and_skipped_when_nowhere(integrate_world: World,
                                                                tmp_path: Path):
    w = integrate_world
    assert subprocess.run(["git", "cat-file", "-e", w.pins[11]], cwd=w.submodule,
                          env=w.env).returncode != 0  # not in the submodule yet
    out = tmp_path / "r.json"
    r = integrate_run(w, w.integrate["adv9"], w.integrate["adv12"], "--json", str(out))
    assert r.returncode == 1, r.stderr + r.stdout
    steps = {s["commit"]: s for s in json.loads(out.read_text())["steps"]}
    nowhere = steps[w.integrate["adv10"]]
    assert nowhere["verdict"] == "skip"
    assert f"{SUBMODULE} pin {w.pins[10][:12]} missing from every remote" in nowhere["reason"]
    fetched = steps[w.integrate["adv11"]]
    assert fetched["verdict"] == "bad" and fetched["source"] == "run"
    assert w.git(w.submodule, "cat-file", "-t", w.pins[11]) == "commit"
    assert "There are only 'skip'ped commits left to test." in r.stdout


def test_git_subcommand_flow_with_integrate(integrate_world: World):
    w = integrate_world
    before = snapshot(w)
    r = git_cli(w, "start", "--integrate", "--submodule", SUBMODULE, w.integrate["adv12"],
                w.integrate["init"])
    assert r.returncode == 0, r.stderr
    assert "submodules updated at each step: third_party/llvm-project" in r.stdout
    r = git_cli(w, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert f"{w.integrate['adv8']} is the first bad commit" in r.stdout
    log = git_cli(w, "log").stdout.splitlines()
    assert log[0].startswith("git bisect-patched start --integrate --submodule "
                             "third_party/llvm-project ")
    assert log[-1].startswith(f"# first bad commit: [{w.integrate['adv8']}] Advance LLVM")
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before


def test_integrate_refuses_bad_input(integrate_world: World):
    w = integrate_world
    before = snapshot(w)
    for args, words in (
        (["--good", w.integrate["adv5"], "--bad", w.integrate["adv2"]], "not an ancestor"),
        (["--good", "nope", "--bad", "HEAD"], "unknown revision 'nope'"),
        (["--submodule", "lib", "--good", w.integrate["init"], "--bad", "HEAD"],
         "not a submodule"),
    ):
        r = cli(w, "run", "--integrate", *args, "--", "./repro.sh")
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr and len(r.stderr.splitlines()) == 1
    (w.submodule / "lib" / "bug.txt").write_text("edited\n")
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad", "HEAD", "--",
            "./repro.sh")
    assert r.returncode == 2 and "submodule third_party/llvm-project has uncommitted" in r.stderr
    w.git(w.submodule, "checkout", "--", "lib/bug.txt")
    assert snapshot(w) == before


def test_integrate_refuses_an_upstream_that_names_nothing(integrate_world: World):
    """A mistyped --upstream (or git config bisectkit.upstream) is refused as a submodule
    bisect refuses it, never replaced by a guess."""
    w = integrate_world
    before = snapshot(w)
    good_bad = ["--good", w.integrate["init"], "--bad", w.integrate["adv12"]]
    r = cli(w, "run", "--integrate", "--upstream", "nope/main", *good_bad, "--", "./repro.sh")
    assert r.returncode == 2, r.stderr + r.stdout
    assert r.stderr.splitlines() == [
        f"bisectkit: error: unknown revision 'nope/main' in {w.submodule} (the upstream given "
        "by --upstream)"]
    w.git(w.superproject, "config", "bisectkit.upstream", "nope/config")
    r = git_cli(w, "start", "--integrate", w.integrate["adv12"], w.integrate["init"])
    assert r.returncode == 2, r.stderr + r.stdout
    assert "unknown revision 'nope/config'" in r.stderr and len(r.stderr.splitlines()) == 1
    assert "(the upstream given by git config bisectkit.upstream)" in r.stderr
    assert snapshot(w) == before
    assert not (w.superproject / ".git/bisectkit/session.json").exists()
