"""``refs/bisect/*``: a session is shown to git's own tools (``git log --bisect``, ``gitk
--bisect``) as ``git bisect`` shows its own, side by side with a plain ``git bisect`` on the
same commits; taken back by ``reset``; never written over a git bisect's own; git's bisect
commands run meanwhile move nothing."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from helpers.sessions import plain_git_bisect
from helpers.states import full_state, killed_at
from helpers.worlds import SUBMODULE, World, git_cli

GOOD_IF = "device .* not found"


def ok(world: World, *args: str) -> str:
    r = git_cli(world, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def bisect_refs(world: World, repo: Path) -> list[str]:
    return world.git(repo, "for-each-ref", "--format=%(refname) %(objectname)",
                     "refs/bisect/").splitlines()


def log_bisect(world: World, repo: Path) -> list[str]:
    return world.git(repo, "log", "--bisect", "--format=%H").splitlines()


def test_git_log_bisect_sees_the_submodule_session_as_git_bisect_would(
        world: World, tmp_path: Path):
    sub = world.submodule
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
       world.sha(300), world.sha(0))
    marks = [("good", world.sha(190)), ("bad", world.sha(210)), ("skip", world.sha(196))]
    for word, sha in marks:
        ok(world, word, sha)
    plain = plain_git_bisect(world, tmp_path, *marks)
    # The same refs, so the same answer to git log --bisect (and gitk --bisect).
    assert bisect_refs(world, sub) == bisect_refs(world, plain)
    assert log_bisect(world, sub) == log_bisect(world, plain)
    assert log_bisect(world, sub) == [world.sha(n) for n in range(210, 190, -1)]

    # No BISECT_START or BISECT_LOG: git status does not claim a git bisect, and git's
    # own bisect commands refuse without moving anything.
    git_dir = Path(world.git(sub, "rev-parse", "--absolute-git-dir"))
    assert not (git_dir / "BISECT_START").exists() and not (git_dir / "BISECT_LOG").exists()
    assert "bisecting" not in world.git(sub, "status")
    head = world.git(sub, "rev-parse", "HEAD")
    for args in (["reset"], ["good"], ["bad", world.sha(200)], ["next"]):
        subprocess.run(["git", "bisect", *args], cwd=sub, env=world.env, text=True,
                       capture_output=True, stdin=subprocess.DEVNULL, check=False)
        assert world.git(sub, "rev-parse", "HEAD") == head
    assert bisect_refs(world, sub) == bisect_refs(world, plain)

    # run updates them at each step; the answer is git's.
    r = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert r.returncode == 0, r.stdout + r.stderr
    assert bisect_refs(world, sub)[0] == f"refs/bisect/bad {world.sha(200)}"
    assert log_bisect(world, sub) == [world.sha(200)]
    ok(world, "reset")
    assert bisect_refs(world, sub) == []


def test_integrate_session_refs_are_in_the_superproject(integrate_world: World):
    w = integrate_world
    ok(w, "start", "--integrate", "--submodule", SUBMODULE, w.integrate["adv12"],
       w.integrate["init"])
    ok(w, "good", w.integrate["adv5"])
    assert bisect_refs(w, w.superproject) == [
        f"refs/bisect/bad {w.integrate['adv12']}",
        *sorted(f"refs/bisect/good-{s} {s}" for s in (w.integrate["adv5"],
                                                      w.integrate["init"]))]
    assert bisect_refs(w, w.submodule) == []
    ok(w, "reset")
    assert bisect_refs(w, w.superproject) == []


def test_custom_terms_write_bisect_terms_as_git_does(world: World):
    sub = world.submodule
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
       "--term-old", "fast", "--term-new", "slow", world.sha(300), world.sha(0))
    git_dir = Path(world.git(sub, "rev-parse", "--absolute-git-dir"))
    assert (git_dir / "BISECT_TERMS").read_text() == "slow\nfast\n"
    assert f"refs/bisect/slow {world.sha(300)}" in bisect_refs(world, sub)
    assert len(log_bisect(world, sub)) == 300
    ok(world, "reset")
    assert bisect_refs(world, sub) == [] and not (git_dir / "BISECT_TERMS").exists()


def test_a_git_bisect_in_progress_keeps_its_own_refs(world: World):
    sub = world.submodule
    world.git(sub, "bisect", "start", "--no-checkout", world.sha(250), world.sha(100))
    theirs = bisect_refs(world, sub)
    out = ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
             world.sha(300), world.sha(0))
    assert "refs/bisect/* not written" in out and "BISECT_START" in out
    ok(world, "good", world.sha(190))
    assert bisect_refs(world, sub) == theirs
    ok(world, "reset")
    assert bisect_refs(world, sub) == theirs
    assert "\ngit bisect start " in world.git(sub, "bisect", "log")


def test_a_ref_bisectkit_did_not_write_is_never_touched(world: World):
    sub = world.submodule
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
       world.sha(300), world.sha(0))
    # The user moves one of the refs meanwhile: it is theirs from then on.
    world.git(sub, "update-ref", "refs/bisect/bad", world.sha(250))
    ok(world, "good", world.sha(190))
    assert f"refs/bisect/bad {world.sha(250)}" in bisect_refs(world, sub)
    ok(world, "reset")
    assert bisect_refs(world, sub) == [f"refs/bisect/bad {world.sha(250)}"]


def test_reset_after_a_kill_mid_write_removes_what_was_announced(world: World):
    """A write announced in the journal and never marked done (killed): reset removes the
    refs it may have left and the lock file its git left."""
    sub = world.submodule
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
       world.sha(300), world.sha(0))
    git_dir = Path(world.git(sub, "rev-parse", "--absolute-git-dir"))
    journal = world.superproject / ".git" / "bisectkit" / "journal"
    lines = journal.read_text().splitlines()
    # As if killed during a later write: announced, its ref created, its lock left.
    ref = f"refs/bisect/good-{world.sha(190)}"
    lock = git_dir / f"{ref}.lock"
    record = {"op": "refs", "n": 999, "repo": SUBMODULE, "locks": [str(lock)],
              "t": time.time() - 1, "publish": {ref: world.sha(190)}, "files": {}}
    journal.write_text("\n".join([*lines, json.dumps(record)]) + "\n")
    world.git(sub, "update-ref", ref, world.sha(190))
    lock.write_text(world.sha(190) + "\n")
    ok(world, "reset")
    assert bisect_refs(world, sub) == [] and not lock.exists()


def test_the_next_mark_after_a_kill_mid_write_publishes_again(world: World):
    sub = world.submodule
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
       world.sha(300), world.sha(0))
    git_dir = Path(world.git(sub, "rev-parse", "--absolute-git-dir"))
    journal = world.superproject / ".git" / "bisectkit" / "journal"
    ref = f"refs/bisect/good-{world.sha(190)}"
    lock = git_dir / f"{ref}.lock"
    record = {"op": "refs", "n": 999, "repo": SUBMODULE, "locks": [str(lock)],
              "t": time.time() - 1, "publish": {ref: world.sha(190)}, "files": {}}
    with journal.open("a") as f:
        f.write(json.dumps(record) + "\n")
    lock.write_text(world.sha(190) + "\n")
    out = ok(world, "good", world.sha(190))
    assert "left by a git of bisectkit's that was killed" not in out  # said only by reset
    assert not lock.exists()
    assert f"{ref} {world.sha(190)}" in bisect_refs(world, sub)
    ok(world, "reset")
    assert bisect_refs(world, sub) == []


@pytest.mark.parametrize("mode", ["after", "during"])
def test_a_mark_killed_at_its_publication_is_reset_to_nothing(world: World, tmp_path: Path,
                                                              mode: str):
    """``good`` SIGKILLed at its first ``update-ref`` in the submodule, ``--stdin`` (the
    publication) included, after it or while it runs: reset leaves every repository as
    before and no ``refs/bisect/*``."""
    before = full_state(world)
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
       world.sha(300), world.sha(0))
    killed_at(world, tmp_path, "update-ref", mode, "good", only_in=world.submodule,
              publishing=True)
    ok(world, "reset")
    assert bisect_refs(world, world.submodule) == []
    assert full_state(world) == before
