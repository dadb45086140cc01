"""``start`` with no or one end, as git allows: the session waits for ``bad`` and ``good``;
marking an end again when it agrees is a note, not an error."""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.worlds import SUBMODULE, World, WorldSpec, git_cli, snapshot

GOOD_IF = "device .* not found"
STATE = Path(".git/bisectkit")
TARGET = ["--submodule", SUBMODULE, "--upstream", "upstream/main"]
RUN = ["run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh"]



def flat(text: str) -> str:
    """``text`` with its line breaks as spaces: lines are broken to fit the width."""
    return " ".join(text.split())

def ok(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    r = git_cli(world, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def refused(world: World, *args: str) -> str:
    """The one line of a refusal (exit 2)."""
    r = git_cli(world, *args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def status_line(world: World) -> str:
    return ok(world, "status").stdout.splitlines()[0]


def start_line(world: World) -> str:
    return ok(world, "log").stdout.splitlines()[0]


def test_submodule_start_without_ends_then_bad_then_good(world: World):
    before = snapshot(world)
    r = ok(world, "start", *TARGET)
    assert r.stdout.splitlines()[0] == "status: waiting for both good and bad commits"
    assert (world.superproject / STATE / "waiting.json").exists()
    assert not (world.superproject / STATE / "session.json").exists()
    assert snapshot(world) == before  # nothing checked out while waiting
    # No revision: the upstream commit the pin sits on (the merge-base, commit 300).
    r = ok(world, "bad")
    assert f"taking {world.sha(300)[:12]} (upstream commit 300" in flat(r.stdout)
    assert "the upstream commit the pin sits on" in flat(r.stdout)
    assert "status: waiting for good commit(s), bad commit known" in flat(r.stdout)
    assert snapshot(world) == before
    r = ok(world, "good", world.sha(0))
    assert "roughly 9 steps" in flat(r.stdout) and "[step 1] testing" in flat(r.stdout)
    assert not (world.superproject / STATE / "waiting.json").exists()
    waited = start_line(world)
    r = ok(world, *RUN)
    assert f"{world.sha(200)} is the first bad commit" in flat(r.stdout)
    ok(world, "reset")
    assert snapshot(world) == before
    # Exactly the session 'start BAD GOOD' makes.
    ok(world, "start", *TARGET, world.sha(300), world.sha(0))
    assert start_line(world) == waited
    ok(world, "reset")


def test_integrate_start_without_ends_then_good_then_bad(integrate_world: World):
    w = integrate_world
    before = snapshot(w)
    ok(w, "start", "--integrate", "--submodule", SUBMODULE)
    r = ok(w, "good", w.integrate["init"])
    assert r.stdout.splitlines()[0] == "status: waiting for bad commit, 1 good commit known"
    assert snapshot(w) == before
    r = ok(w, "bad")  # the superproject's HEAD
    assert f"{w.integrate['adv12'][:12]}" in r.stdout
    assert "the superproject's HEAD" in flat(r.stdout)
    assert "[step 1] testing" in flat(r.stdout)
    assert start_line(w) == ("git bisect-patched start --integrate --submodule "
                             f"{SUBMODULE} {w.integrate['adv12']} {w.integrate['init']}")
    r = ok(w, *RUN)
    assert f"{w.integrate['adv8']} is the first bad commit" in flat(r.stdout)
    ok(w, "reset")
    assert snapshot(w) == before


def test_start_with_one_end(world: World):
    before = snapshot(world)
    r = ok(world, "start", *TARGET, world.sha(300))
    assert r.stdout.splitlines()[0] == "status: waiting for good commit(s), bad commit known"
    assert snapshot(world) == before
    r = ok(world, "good", world.sha(0))
    assert "roughly 9 steps" in flat(r.stdout)
    assert start_line(world).endswith(f" {world.sha(300)} {world.sha(0)}")
    ok(world, "reset")
    assert snapshot(world) == before


def test_status_log_replay_reset_while_waiting(world: World, tmp_path: Path):
    before = snapshot(world)
    ok(world, "start", *TARGET, world.sha(300))
    status = ok(world, "status").stdout
    assert "status: waiting for good commit(s), bad commit known" in status
    assert f"bad: [{world.sha(300)}] upstream commit 300" in status
    log = ok(world, "log").stdout
    assert log.splitlines() == [
        f"git bisect-patched start --submodule {SUBMODULE} --upstream upstream/main",
        "# status: waiting for both good and bad commits",
        f"# bad: [{world.sha(300)}] upstream commit 300: touch lib/file0.txt",
        f"git bisect-patched bad {world.sha(300)}",
        "# status: waiting for good commit(s), bad commit known",
    ]
    r = ok(world, "reset")
    assert "session ended" in flat(r.stdout)
    assert not (world.superproject / STATE / "waiting.json").exists()
    assert "not bisecting" in ok(world, "reset").stdout
    # The log replays to the same waiting session ...
    waiting_log = tmp_path / "waiting.log"
    waiting_log.write_text(log)
    ok(world, "replay", str(waiting_log))
    assert status_line(world) == "status: waiting for good commit(s), bad commit known"
    assert ok(world, "log").stdout == log
    # ... and, with a good end added, to the session 'start BAD GOOD' makes.
    started_log = tmp_path / "started.log"
    started_log.write_text(log + f"git bisect-patched good {world.sha(0)}\n")
    r = ok(world, "replay", str(started_log))
    assert "[step 1] testing" in flat(r.stdout)
    assert start_line(world).endswith(f" {world.sha(300)} {world.sha(0)}")
    ok(world, "reset")
    assert snapshot(world) == before


def test_commands_that_need_both_ends_are_refused_while_waiting(world: World):
    before = snapshot(world)
    ok(world, "start", *TARGET)
    line = refused(world, *RUN)
    assert "the session has not started: waiting for both good and bad commits" in line
    assert "'git bisect-patched bad [REV]' and 'git bisect-patched good REV'" in line
    ok(world, "bad", world.sha(300))
    line = refused(world, *RUN)
    assert "waiting for good commit(s), bad commit known; give 'git bisect-patched good REV'" \
        in line
    assert "already started and waiting for good commit(s)" in refused(
        world, "start", *TARGET, world.sha(300), world.sha(0))
    assert "nothing to skip" in refused(world, "skip")
    assert snapshot(world) == before
    assert status_line(world) == "status: waiting for good commit(s), bad commit known"
    ok(world, "reset")


def test_bad_input_while_completing_keeps_waiting(world: World):
    before = snapshot(world)
    ok(world, "start", *TARGET, world.sha(300))
    assert "unknown revision 'nope'" in refused(world, "good", "nope")
    line = refused(world, "good", world.sha(350))  # newer than the bad end
    assert "is not an ancestor of bad" in line
    assert line.endswith("the session still waits (waiting for good commit(s), bad commit "
                         "known)")
    assert snapshot(world) == before
    assert not (world.superproject / STATE / "session.json").exists()
    assert status_line(world) == "status: waiting for good commit(s), bad commit known"
    # Corrected: the session starts.
    assert "[step 1] testing" in ok(world, "good", world.sha(0)).stdout
    ok(world, "reset")
    assert snapshot(world) == before


def test_refused_first_checkout_keeps_waiting(world_factory, tmp_path: Path):
    """A file in the way of the first candidate: the start is undone, the session waits."""
    # Upstream commit n adds lib/file<n>.txt: candidates after 310 track lib/file310.txt.
    world = world_factory(tmp_path, WorldSpec(files=400, bug_at=360, build_breaks=[],
                                              local_conflict=None))
    mine = world.submodule / "lib" / "file310.txt"
    mine.write_text("my local data\n", encoding="utf-8")
    before = snapshot(world)
    ok(world, "start", *TARGET, world.sha(400))
    line = refused(world, "good", world.sha(300))
    assert "lib/file310.txt" in line and line.endswith(
        "the session still waits (waiting for good commit(s), bad commit known)")
    assert snapshot(world) == before
    assert mine.read_text(encoding="utf-8") == "my local data\n"
    assert status_line(world) == "status: waiting for good commit(s), bad commit known"
    mine.unlink()
    assert "[step 1] testing" in ok(world, "good", world.sha(300)).stdout
    ok(world, "reset")


def test_marking_an_end_again(world: World):
    before = snapshot(world)
    # While waiting: the same end again is a note; the other side is refused.
    ok(world, "start", *TARGET, world.sha(300))
    r = ok(world, "bad", world.sha(300))
    assert "is the bad end already; nothing to record" in flat(r.stdout)
    assert "is the bad end; it cannot be good too" in refused(world, "good", world.sha(300))
    assert ok(world, "log").stdout.count("git bisect-patched bad ") == 1
    ok(world, "good", world.sha(0))
    log = ok(world, "log").stdout
    # In the session: the ends and a marked commit again are notes; nothing recorded twice.
    for word, rev, what in (("bad", world.sha(300), "is the bad end"),
                            ("good", world.sha(0), "is the good end")):
        r = ok(world, word, rev)
        assert f"note: {rev[:12]} {what}; nothing to record" in flat(r.stdout)
    ok(world, "bad", world.sha(250))
    log = ok(world, "log").stdout
    r = ok(world, "bad", world.sha(250), world.sha(300))
    assert "is already marked bad; nothing to record" in flat(r.stdout)
    assert ok(world, "log").stdout == log
    # Disagreeing marks keep their errors.
    assert "cannot mark good" in refused(world, "good", world.sha(300))
    assert "is the good end, not a candidate" in refused(world, "bad", world.sha(0))
    assert ok(world, "log").stdout == log
    ok(world, "reset")
    assert snapshot(world) == before


def test_terms_words_while_waiting(world: World):
    ok(world, "start", "--term-old", "fast", "--term-new", "slow", *TARGET)
    # The terms are known from 'start' on, as git's are.
    assert ok(world, "terms").stdout.splitlines() == [
        "Your current terms are fast for the old state", "and slow for the new state."]
    assert ok(world, "terms", "--term-bad").stdout == "slow\n"
    r = ok(world, "new", world.sha(300))
    assert "status: waiting for fast commit(s), slow commit known" in flat(r.stdout)
    assert "give 'git bisect-patched old REV'" in flat(r.stdout)
    assert f"git bisect-patched new {world.sha(300)}" in ok(world, "log").stdout
    assert "[step 1] testing" in ok(world, "old", world.sha(0)).stdout
    ok(world, "reset")
