"""Logs go both ways between ``git bisect`` and ``git bisect-patched`` where the commits
mean the same: ``replay`` reads a ``git bisect log`` of the upstream commits (the strategy
from its own command line) and reaches git's state and answer; ``log --git`` writes one
that ``git bisect replay`` reads, side by side on the same worlds."""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.worlds import SUBMODULE, World, git_cli

TARGET = ("--submodule", SUBMODULE, "--upstream", "upstream/main")


def ok(world: World, *args: str) -> str:
    r = git_cli(world, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def bisect_refs(world: World, repo: Path) -> list[str]:
    return world.git(repo, "for-each-ref", "--format=%(refname) %(objectname)",
                     "refs/bisect/").splitlines()


def plain_clone(world: World, tmp_path: Path, source: Path) -> Path:
    clone = tmp_path / "plain"
    world.git(tmp_path, "clone", "-q", "--no-checkout", str(source), str(clone))
    return clone


def test_replay_reads_a_git_bisect_log_of_the_upstream_commits(world: World, tmp_path: Path):
    plain = plain_clone(world, tmp_path, world.upstream)
    world.git(plain, "bisect", "start", "--no-checkout", world.sha(300), world.sha(0))
    world.git(plain, "bisect", "good", world.sha(190))
    world.git(plain, "bisect", "skip", world.sha(196))
    # git finds the culprit itself (its repro: is upstream commit 200 in the tree?).
    script = f"! git merge-base --is-ancestor {world.sha(200)} BISECT_HEAD"
    run = subprocess.run(["git", "bisect", "run", "sh", "-c", script], cwd=plain,
                         env=world.env, text=True, capture_output=True, check=False)
    assert f"{world.sha(200)} is the first bad commit" in run.stdout, run.stdout + run.stderr
    log = tmp_path / "git-bisect.log"
    log.write_text(world.git(plain, "bisect", "log") + "\n")
    assert "git bisect start '--no-checkout'" in log.read_text()

    out = ok(world, "replay", *TARGET, str(log))
    assert f"{world.sha(200)} is the first bad commit" in out
    # The same marks: the same refs, so git log --bisect agrees too.
    assert bisect_refs(world, world.submodule) == bisect_refs(world, plain)
    assert ok(world, "log").splitlines()[0] == (
        f"git bisect-patched start {' '.join(TARGET)} {world.sha(300)} {world.sha(0)}")
    ok(world, "reset")


def test_replay_reads_git_custom_terms_and_keeps_them(world: World, tmp_path: Path):
    log = tmp_path / "git-bisect.log"
    log.write_text(
        "git bisect start '--term-new' 'slow' '--term-old' 'fast' "
        f"'{world.sha(300)}' '{world.sha(0)}'\n"
        f"# fast: [{world.sha(190)}] upstream commit 190\n"
        f"git bisect fast {world.sha(190)}\n"
        f"git bisect slow {world.sha(220)}\n")
    ok(world, "replay", *TARGET, str(log))
    assert f"refs/bisect/slow {world.sha(220)}" in bisect_refs(world, world.submodule)
    assert ok(world, "log").splitlines()[-2:] == [f"# slow: [{world.sha(220)}] upstream "
                                                  "commit 220: touch lib/file0.txt",
                                                  f"git bisect-patched new {world.sha(220)}"]
    ok(world, "reset")
    # A word the log's terms do not know: one line naming the file and line, exit 2.
    log.write_text(f"git bisect start {world.sha(300)} {world.sha(0)}\n"
                   f"git bisect slow {world.sha(220)}\n")
    r = git_cli(world, "replay", *TARGET, str(log))
    assert r.returncode == 2 and f"{log}:2: cannot replay 'git bisect slow'" in r.stderr


def test_git_bisect_replay_reads_log_git(world: World, tmp_path: Path):
    ok(world, "start", *TARGET, world.sha(300), world.sha(0))
    ok(world, "good", world.sha(190))
    ok(world, "bad", world.sha(210))
    ok(world, "skip", world.sha(196))
    log = tmp_path / "from-bisectkit.log"
    log.write_text(ok(world, "log", "--git"))
    assert log.read_text().splitlines()[0] == (
        f"git bisect start {world.sha(300)} {world.sha(0)}")
    plain = plain_clone(world, tmp_path, world.upstream)
    world.git(plain, "bisect", "replay", str(log))
    assert bisect_refs(world, plain) == [
        f"refs/bisect/bad {world.sha(210)}",
        f"refs/bisect/good-{world.sha(190)} {world.sha(190)}",
        f"refs/bisect/skip-{world.sha(196)} {world.sha(196)}"]
    assert world.git(plain, "log", "--bisect", "--format=%H") == \
        world.git(world.submodule, "log", "--bisect", "--format=%H")
    # The plain log is not git's: git bisect replay skips every line of it (none starts
    # with 'git bisect '), ends its own session and replays nothing (README: log --git).
    plain_log = tmp_path / "bisectkit.log"
    plain_log.write_text(ok(world, "log"))
    subprocess.run(["git", "bisect", "replay", str(plain_log)], cwd=plain, env=world.env,
                   text=True, capture_output=True, check=False)
    assert bisect_refs(world, plain) == []
    ok(world, "reset")


def test_integrate_replays_a_git_bisect_log_of_the_superproject(integrate_world: World,
                                                                tmp_path: Path):
    w = integrate_world
    plain = plain_clone(w, tmp_path, w.superproject)
    world_log = tmp_path / "git-bisect.log"
    w.git(plain, "bisect", "start", "--no-checkout", w.integrate["adv12"], w.integrate["init"])
    w.git(plain, "bisect", "good", w.integrate["adv5"])
    w.git(plain, "bisect", "bad", w.integrate["adv9"])
    world_log.write_text(w.git(plain, "bisect", "log") + "\n")
    ok(w, "replay", "--integrate", "--submodule", SUBMODULE, str(world_log))
    assert bisect_refs(w, w.superproject) == bisect_refs(w, plain)
    ok(w, "reset")


def test_replay_refuses_an_option_its_log_says_otherwise(world: World, tmp_path: Path):
    ok(world, "start", *TARGET, world.sha(300), world.sha(0))
    log = tmp_path / "bisectkit.log"
    log.write_text(ok(world, "log"))
    r = git_cli(world, "replay", "--upstream", "origin/main", str(log))
    assert r.returncode == 2
    assert "its start line says --upstream upstream/main; replay it without --upstream" in \
        r.stderr
    ok(world, "reset")
