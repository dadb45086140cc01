"""The ``git bisect-patched`` flow: start, mark by hand, run, status, log, replay, reset."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from helpers.repros import target
from helpers.worlds import SUBMODULE, World, git_cli, snapshot

GOOD_IF = "device .* not found"
SESSION = Path(".git/bisectkit/session.json")


def start(world: World, bad: str, good: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                   *extra, bad, good)


@pytest.mark.parametrize("program", ["bisectkit", "git-bisect-patched"])
def test_the_tests_run_the_programs_installed_with_this_python(world: World, program: str):
    """What the tests (and git, for ``git bisect-patched``) run is the bisectkit installed
    with the Python running them (conftest puts its scripts folder first on PATH), also
    from a venv not activated: not the one another install puts on PATH first."""
    scripts = Path(sysconfig.get_path("scripts"))
    if not (scripts / program).is_file():
        pytest.skip(f"no {program} is installed with {scripts}")
    assert shutil.which(program, path=world.env["PATH"]) == str(scripts / program)


def test_by_hand_then_log_replay_reset(world: World, tmp_path: Path):
    before = snapshot(world)
    r = start(world, world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    assert "testing" in r.stdout and "roughly 9 steps" in r.stdout
    assert (world.superproject / SESSION).exists()
    # The submodule now sits on the patched first candidate, detached.
    assert world.git(world.submodule, "status", "--porcelain") == ""
    out = r.stdout
    marks = 0
    while "is the first bad commit" not in out:
        assert marks < 15, out
        build = subprocess.run(["./build.sh"], cwd=world.superproject, env=world.env,
                               capture_output=True, text=True)
        if build.returncode != 0:
            verdict = "skip"
        else:
            repro = subprocess.run(["./repro.sh"], cwd=world.superproject, env=world.env,
                                   capture_output=True, text=True)
            verdict = "good" if "not found" in repro.stdout else "bad"
        r = git_cli(world, verdict)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        marks += 1
    assert f"{world.sha(200)} is the first bad commit" in out
    # The session stays (like git bisect) until reset.
    status = git_cli(world, "status")
    assert status.returncode == 0
    assert f"{world.sha(200)} is the first bad commit" in status.stdout
    log = git_cli(world, "log")
    assert log.returncode == 0
    lines = log.stdout.splitlines()
    assert lines[0].startswith("git bisect-patched start --submodule third_party/llvm-project")
    assert lines[-1] == (f"# first bad commit: [{world.sha(200)}] "
                         "upstream commit 200: touch lib/bug.txt")
    assert sum(1 for x in lines if x.startswith("git bisect-patched ")) == marks + 1
    log_file = tmp_path / "bisect.log"
    log_file.write_text(log.stdout)

    r = git_cli(world, "reset")
    assert r.returncode == 0, r.stderr
    assert snapshot(world) == before
    assert not (world.superproject / SESSION).exists()

    r = git_cli(world, "replay", str(log_file))
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert git_cli(world, "log").stdout == log.stdout
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


def test_start_then_run(world: World, tmp_path: Path):
    before = snapshot(world)
    assert start(world, world.sha(300), world.sha(0)).returncode == 0
    out = tmp_path / "r.json"
    r = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "--json", str(out),
                "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    assert json.loads(out.read_text())["first_bad"] == world.sha(200)
    assert (world.superproject / SESSION).exists()
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


def test_marking_explicit_revisions_and_bad_marks(world: World):
    assert start(world, world.sha(300), world.sha(0)).returncode == 0
    r = git_cli(world, "good", world.sha(190))
    assert r.returncode == 0, r.stderr
    r = git_cli(world, "bad", world.sha(210), world.sha(205))
    assert r.returncode == 0, r.stderr
    status = git_cli(world, "status").stdout
    assert "candidates left between" in status
    # Not in the range / contradicting the verdicts: refused, nothing recorded.
    r = git_cli(world, "good", world.sha(250))
    assert r.returncode == 2
    assert "cannot mark good" in r.stderr
    r = git_cli(world, "bad", "no-such-rev")
    assert r.returncode == 2 and "unknown revision" in r.stderr
    r = git_cli(world, "good", world.sha(350))
    assert r.returncode == 2 and "not in the bisect range" in r.stderr
    assert git_cli(world, "reset").returncode == 0


def test_pathspec_limits_candidates(world: World):
    r = git_cli(world, "start", "--submodule", SUBMODULE, world.sha(300), world.sha(0),
                "--", "lib/bug.txt", "lib/build.txt")
    assert r.returncode == 0, r.stderr
    # Only commits 180 and 200 touch those paths (plus the bad end itself).
    # (The header breaks between words at 80 columns.)
    assert "3 candidates touching lib/bug.txt lib/build.txt" in " ".join(r.stdout.split())
    r = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert f"{world.sha(200)} is the first bad commit" in r.stdout, r.stdout + r.stderr
    log = git_cli(world, "log").stdout
    assert "-- lib/bug.txt lib/build.txt" in log.splitlines()[0]
    assert git_cli(world, "reset").returncode == 0


def test_reset_without_session_is_harmless(world: World):
    before = snapshot(world)
    r = git_cli(world, "reset")
    assert r.returncode == 0
    assert "not bisecting" in r.stdout
    assert snapshot(world) == before


def test_replay_rejects_foreign_logs(world: World, tmp_path: Path):
    bad_log = tmp_path / "x.log"
    bad_log.write_text("hg bisect --good 3\n")
    r = git_cli(world, "replay", str(bad_log))
    assert r.returncode == 2
    assert "not a bisect-patched or git bisect command" in r.stderr
    r = git_cli(world, "replay", str(tmp_path / "missing.log"))
    assert r.returncode == 2


def start_line(world: World) -> str:
    return (f"git bisect-patched start --submodule {SUBMODULE} --upstream upstream/main "
            f"{world.sha(300)} {world.sha(0)}")


@pytest.mark.parametrize(("second", "said"), [
    ("git bisect-patched good 'abc", "x.log:2: cannot read the line: No closing quotation"),
    ("git bisect-patched good \"abc", "x.log:2: cannot read the line: No closing quotation"),
])
def test_replay_of_an_unreadable_line_is_one_line_naming_it(world: World, tmp_path: Path,
                                                            second: str, said: str):
    log = tmp_path / "x.log"
    log.write_text(f"{start_line(world)}\n{second}\n", encoding="utf-8")
    before = snapshot(world)
    r = git_cli(world, "replay", str(log))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"git bisect-patched: error: {tmp_path / said}: "), r.stderr
    assert snapshot(world) == before


def test_replay_reads_one_command_per_line_feed(world: World, tmp_path: Path):
    """A vertical tab, a form feed, U+2028 or U+0085 is no line break for ``replay`` (as
    for git): a line holding one is one command, here refused whole, never two marks."""
    good = f"git bisect-patched good {world.sha(100)}"
    for sep in ("\v", "\f", "\x1c", "\x85", "\u2028"):
        log = tmp_path / "x.log"
        log.write_text(f"{start_line(world)}\n{good}{sep}{good}\n", encoding="utf-8")
        r = git_cli(world, "replay", str(log))
        assert r.returncode == 2, (repr(sep), r.stdout, r.stderr)
        assert len(r.stderr.splitlines()) == 1, r.stderr
        assert "no bisect-patched session" in git_cli(world, "status").stderr


#: Counts the session saves of the bisectkit it is loaded into (sitecustomize).
COUNT_SAVES = """\
import atexit, os, sys
saves = []
def hook(event, args):
    if event == "os.rename" and str(args[1]).endswith("session.json"):
        saves.append(1)
sys.addaudithook(hook)
atexit.register(lambda: open(os.environ["SAVES_FILE"], "a").write(f"{len(saves)}\\n"))
"""


def test_replay_saves_the_session_once_for_all_its_marks(world: World, tmp_path: Path):
    """Each save writes every step so far: once per mark, 4,000 marks took minutes."""
    skips = [f"git bisect-patched skip {world.sha(100 + k % 20)}" for k in range(300)]
    log = tmp_path / "x.log"
    log.write_text("\n".join([start_line(world), *skips]) + "\n", encoding="utf-8")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(COUNT_SAVES, encoding="utf-8")
    saves = tmp_path / "saves"
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    counted = dataclasses.replace(world, env={**world.env, "PYTHONPATH": path,
                                              "SAVES_FILE": str(saves)})
    r = git_cli(counted, "replay", str(log))
    assert r.returncode == 0, r.stderr
    assert 0 < int(saves.read_text()) <= 5, saves.read_text()
    assert git_cli(world, "log").stdout.count("git bisect-patched skip") == 300
    assert git_cli(world, "reset").returncode == 0


def test_submodule_path_is_normalised(world: World):
    r = git_cli(world, "start", "--submodule", "third_party/../third_party/llvm-project/",
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    assert "bisecting submodule third_party/llvm-project" in r.stdout
    assert git_cli(world, "reset").returncode == 0


def marks(world: World) -> list[str]:
    """The mark lines of the session's log."""
    log = git_cli(world, "log")
    assert log.returncode == 0, log.stderr
    return [line for line in log.stdout.splitlines()
            if line.startswith("git bisect-patched ") and " start " not in line]


def under_test(world: World) -> str:
    status = git_cli(world, "status")
    assert status.returncode == 0, status.stderr
    return next(line for line in status.stdout.splitlines() if "under test:" in line)


def commit_under_test(world: World) -> str:
    """The commit ``status`` says is under test (``under test: [step N] <sha> ...``)."""
    return re.findall(r"\b[0-9a-f]{12,40}\b", under_test(world))[0]


@pytest.mark.parametrize("where", ["submodule", "superproject"])
def test_failed_checkout_keeps_the_mark_and_good_again_checks_the_candidate_out(
        world_factory, tmp_path: Path, where: str) -> None:
    if where == "submodule":
        world = world_factory(tmp_path)
        start = ["start", *target(world), world.sha(300), world.sha(0)]
        repo, path = world.submodule, "lib/bug.txt"  # differs between the first two candidates
    else:
        world = world_factory(tmp_path, integrate=True)
        start = ["start", "--integrate", "--submodule", SUBMODULE, world.integrate["adv12"],
                 world.integrate["init"]]
        repo, path = world.superproject, "integration.txt"
    before = snapshot(world)
    assert git_cli(world, *start).returncode == 0
    tested = commit_under_test(world)
    (repo / path).write_text("my edit while testing\n", encoding="utf-8")

    failed = git_cli(world, "good")
    assert failed.returncode == 4, (failed.stdout, failed.stderr)
    assert len(failed.stderr.splitlines()) == 1, failed.stderr
    # The message says the mark is kept, which candidate did not come, and what to do.
    assert f"marked {tested[:12]} good (kept)" in failed.stderr
    named = re.search(r"the next candidate ([0-9a-f]{12}) was not checked out", failed.stderr)
    assert named, failed.stderr
    assert "'git bisect-patched good' with no revision checks it out" in failed.stderr
    assert path in failed.stderr
    assert (repo / path).read_text(encoding="utf-8") == "my edit while testing\n"
    assert marks(world) == [f"git bisect-patched good {tested}"]
    line = under_test(world)
    assert f"nothing (the checkout of {named.group(1)} did not happen)" in line

    world.git(repo, "checkout", "--", path)
    again = git_cli(world, "good")
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "no commit was under test" in again.stdout
    # The same candidate, the one mark: nothing lost, nothing marked twice.
    assert commit_under_test(world).startswith(named.group(1))
    assert marks(world) == [f"git bisect-patched good {tested}"]
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before
