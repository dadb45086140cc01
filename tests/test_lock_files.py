"""git's lock files: bisectkit removes one only when a git of its own left it.

A git killed together with bisectkit (a CI time limit, the OOM killer, ``docker
stop``) leaves ``index.lock`` or ``HEAD.lock`` behind; ``reset`` removes it, with a
note. A lock file another git holds (an open ``git commit -a`` editor keeps
``index.lock``) is never removed: a session refuses to start while one exists
(exit 2, nothing touched), and a restore that meets one stops with one line
(exit 4, the journal kept) and finishes once that git is done.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.sessions import assert_refused, run_argv, start_argv, wait_for
from helpers.states import full_state, killed_at, state_dir
from helpers.worlds import World, cli, git_cli, snapshot

from bisectkit.errors import BadInput
from bisectkit.model import HeadState
from bisectkit.safety import gitlocks, journal, processes
from bisectkit.safety.journalrecords import Git, Move, Side
from bisectkit.safety.processes import alive, process_start


def git_dir(world: World, repo: Path) -> Path:
    return Path(world.git(repo, "rev-parse", "--absolute-git-dir"))


def journaled_gits_done(world: World) -> None:
    """Wait until every git the journal names has ended (one a kill left running goes on
    in its own session)."""
    records = [json.loads(line) for line in
               (state_dir(world) / "journal").read_text(encoding="utf-8").splitlines()]
    deadline = time.monotonic() + 20
    for rec in records:
        while rec.get("op") == "git" and alive(rec["pid"], rec["started"]):
            assert time.monotonic() < deadline, rec
            time.sleep(0.02)


@contextlib.contextmanager
def commit_in_progress(world: World) -> Iterator[Path]:
    """A real ``git commit -a`` in the submodule, its editor open (git holds index.lock
    meanwhile); the commit is abandoned at the end (SIGTERM: git removes its lock)."""
    env = dict(world.env, GIT_EDITOR='sh -c "sleep 60"')
    proc = subprocess.Popen(["git", "commit", "-a", "--allow-empty"], cwd=world.submodule,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    lock = git_dir(world, world.submodule) / "index.lock"
    try:
        deadline = time.monotonic() + 20
        while not lock.exists():
            assert proc.poll() is None, "git commit ended before it took index.lock"
            assert time.monotonic() < deadline, "git commit took no index.lock in 20 s"
            time.sleep(0.02)
        yield lock
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert not lock.exists()


@pytest.mark.parametrize(("subcommand", "lock"), [("update-ref", "HEAD.lock"),
                                                  ("read-tree", "index.lock")])
def test_reset_removes_the_lock_a_git_killed_with_bisectkit_left(world: World, tmp_path: Path,
                                                                 subcommand: str,
                                                                 lock: str) -> None:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    killed_at(world, tmp_path, subcommand, f"holding-{lock}", "good")
    left = git_dir(world, world.submodule) / lock
    assert left.exists()
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert f"removed {left}, left by a git of bisectkit's" in flat(reset.stdout)
    assert not left.exists()
    assert full_state(world) == before


def test_a_reset_killed_with_its_refresh_leaves_a_lock_the_next_reset_removes(
        world: World, tmp_path: Path) -> None:
    """The restore's first git (``update-index --refresh``, before any move) killed together
    with ``reset`` while it holds index.lock: the next reset knows the lock is its own."""
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    killed_at(world, tmp_path, "update-index", "holding-index.lock", "reset",
              only_in=world.submodule)
    left = git_dir(world, world.submodule) / "index.lock"
    assert left.exists()
    reset = git_cli(world, "reset", timeout=60)
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert f"removed {left}, left by a git of bisectkit's" in flat(reset.stdout)
    assert full_state(world) == before


@pytest.mark.parametrize("command", ["run", "start"])
def test_a_git_commit_in_progress_refuses_a_session_up_front(world: World,
                                                             command: str) -> None:
    before = snapshot(world)
    with commit_in_progress(world) as lock:
        proc = cli(world, *run_argv(world)) if command == "run" else \
            git_cli(world, *start_argv(world))
        line = assert_refused(world, proc, before, f"{lock} exists", "another git is running",
                              "git commit -a")
        assert "remove the file if no git is running" in line
        assert lock.exists()


@pytest.mark.parametrize("lock", ["HEAD.lock", "refs/heads/main.lock"])
def test_a_ref_lock_present_at_start_refuses_the_run(world: World, lock: str) -> None:
    """A lock file with no git behind it (one that crashed earlier) is not bisectkit's to
    remove either: the line says to."""
    before = snapshot(world)
    path = git_dir(world, world.superproject) / lock
    path.write_text("", encoding="utf-8")
    assert_refused(world, cli(world, *run_argv(world)), before, f"{path} exists",
                   "remove the file if no git is running")
    assert path.exists()


def test_a_mark_refuses_to_go_on_while_another_git_holds_a_lock(world: World) -> None:
    assert git_cli(world, *start_argv(world)).returncode == 0
    under_test = world.git(world.submodule, "rev-parse", "HEAD")
    with commit_in_progress(world) as lock:
        proc = git_cli(world, "good")
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        assert f"{lock} exists" in proc.stderr and len(proc.stderr.splitlines()) == 1
        assert world.git(world.submodule, "rev-parse", "HEAD") == under_test
    assert git_cli(world, "good").returncode == 0
    assert git_cli(world, "reset").returncode == 0


def test_reset_never_removes_the_lock_of_a_git_started_after_the_kill(world: World,
                                                                      tmp_path: Path) -> None:
    """A checkout killed mid-way (its git went on and finished), then ``git commit -a`` in
    the submodule: its lock is newer than the move, but a live git that is not
    bisectkit's holds it. The restore waits a while, then stops; it finishes later."""
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    killed_at(world, tmp_path, "read-tree", "during", "good")
    journaled_gits_done(world)  # the read-tree goes on, and finishes
    with commit_in_progress(world) as lock:
        refused = git_cli(world, "reset")
        assert refused.returncode == 4, (refused.stdout, refused.stderr)
        lines = refused.stderr.splitlines()
        assert len(lines) == 1 and f"{lock} exists" in lines[0], refused.stderr
        assert "git commit -a" in lines[0] and "'git bisect-patched reset' again" in lines[0]
        assert lock.exists()
        assert (state_dir(world) / "journal").exists()
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before


# -- whose lock file it is (in-process) ---------------------------------------------------
def _move(t: float | None, gits: list[Git]) -> Move:
    side = Side(HeadState(None, "0" * 40), "0" * 40)
    return Move(1, ".", side, side, gits=gits, t=t)


def _dead_git() -> Git:
    proc = subprocess.Popen(["sleep", "0"])
    started = process_start(proc.pid)
    proc.wait()
    return Git(proc.pid, started, time.time())


def test_only_a_lock_newer_than_the_move_of_dead_recorded_gits_is_ours(tmp_path: Path) -> None:
    index_lock = tmp_path / "index.lock"
    index_lock.write_text("", encoding="utf-8")
    # The point of the test: the lock is older than the git below (by more than the
    # clocks' resolution), as a lock that was there before that git started is.
    time.sleep(0.2)
    dead = _dead_git()
    # Older than the move: it was there before (a check saw none then, or the clock says so).
    assert not gitlocks._left_by(index_lock, _move(time.time(), [dead]))
    after = _move(time.time() - 1.0, [dead])
    assert gitlocks._left_by(index_lock, after)
    # No git recorded, one from an older journal (no time), or one still running.
    assert not gitlocks._left_by(index_lock, _move(after.t, []))
    assert not gitlocks._left_by(index_lock, _move(after.t, [Git(dead.pid, dead.started)]))
    me = Git(os.getpid(), process_start(os.getpid()), time.time())
    assert not gitlocks._left_by(index_lock, _move(after.t, [dead, me]))
    # A move without a time (read back from a reflog), or none at all.
    assert not gitlocks._left_by(index_lock, _move(None, [dead]))
    assert not gitlocks._left_by(index_lock, None)
    # A lock a move's gits never take.
    branch_lock = tmp_path / "main.lock"
    branch_lock.write_text("", encoding="utf-8")
    assert not gitlocks._left_by(branch_lock, after)


def test_free_lock_files_are_seen_without_a_pause(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step checks git's lock files before it publishes ``refs/bisect/*``: when none
    is there the check goes on at once (a pause before the first look cost every step of
    every run 50 ms); one that is there is waited for, then named."""
    pauses: list[float] = []
    # gitlocks' own clock, so that no other code's sleep is counted (or skipped).
    clock = types.SimpleNamespace(sleep=pauses.append, monotonic=time.monotonic,
                                  time=time.time)
    monkeypatch.setattr(gitlocks, "time", clock)
    lock = tmp_path / "HEAD.lock"
    gitlocks.unjournaled_free([], [lock, tmp_path / "packed-refs.lock"])
    assert pauses == []
    lock.write_text("", encoding="utf-8")
    monkeypatch.setattr(gitlocks, "BRIEF_LOCK_WAIT_S", 0.05)
    monkeypatch.setattr(gitlocks, "gits_working_in", lambda where: [])
    with pytest.raises(BadInput, match=re.escape(f"{lock} exists: another git is running there")):
        gitlocks.unjournaled_free([], [lock])
    assert pauses


def test_reset_run_through_git_removes_a_lock_a_killed_git_left_in_the_superproject(
        integrate_world: World, tmp_path: Path) -> None:
    """``git bisect-patched reset``: the git that runs bisectkit works in the superproject
    too, and is not taken for another git holding the lock."""
    w = integrate_world
    before = full_state(w)
    args = ["run", "--integrate", "--good", w.integrate["init"], "--bad", w.integrate["adv12"],
            "--build", "./build.sh", "--good-if", "device .* not found", "--", "./repro.sh"]
    killed_at(w, tmp_path, "update-ref", "holding-HEAD.lock", *args, exe="bisectkit",
              only_in=w.superproject)
    left = git_dir(w, w.superproject) / "HEAD.lock"
    assert left.exists()
    reset = git_cli(w, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert f"removed {left}" in flat(reset.stdout)
    assert full_state(w) == before


# -- another program's lock file, live, is never removed ----------------------------------
HOLDER = """\
import os, sys, time
lock = sys.argv[1]
fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
time.sleep(float(sys.argv[2]))  # holds the lock as long as the test says
os.close(fd)
try:
    os.unlink(lock)
    print("released")
except FileNotFoundError:
    print("REMOVED BY SOMEBODY ELSE")
"""


@contextlib.contextmanager
def held_by_another_program(lock: Path, seconds: float) -> Iterator[subprocess.Popen[str]]:
    """A program git-unaware bisectkit cannot see as a git (a libgit2 tool, a git in another
    pid namespace) holding ``lock`` for ``seconds``, working elsewhere; it says at the end
    whether somebody removed its lock meanwhile."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(seconds)],
                            cwd="/", stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not lock.exists():
        assert proc.poll() is None, "the holder ended before it took the lock"
        assert time.monotonic() < deadline, "the holder took no lock in 20 s"
        time.sleep(0.01)
    try:
        yield proc
    finally:
        proc.wait(timeout=60)


@pytest.mark.parametrize(("mode", "lock"), [
    # The move's update-ref exited by itself (journaled): HEAD.lock is not its.
    ("holding-index.lock", "HEAD.lock"),
    # Killed while its read-tree ran, which then finished (the index rewritten since it
    # started): the index.lock found later is not its, though no exit was journaled.
    ("during", "index.lock"),
])
def test_reset_never_removes_another_programs_lock(world: World, tmp_path: Path, mode: str,
                                                   lock: str) -> None:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    killed_at(world, tmp_path, "read-tree", mode, "good")
    theirs = git_dir(world, world.submodule) / lock
    journaled_gits_done(world)  # "during": the read-tree goes on, and finishes
    with held_by_another_program(theirs, 2.0) as holder:
        reset = git_cli(world, "reset")
    assert holder.stdout is not None and holder.stdout.read().strip() == "released"
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert f"removed {theirs}" not in reset.stdout
    assert full_state(world) == before


def test_a_git_run_through_a_link_of_another_name_is_seen(world: World,
                                                         tmp_path: Path) -> None:
    """``g commit -a`` (``g`` a link to git: its process name is ``g``) working in the
    submodule is a git at work there."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bindir / "g").symlink_to(git)
    (world.submodule / "README").write_text("edited\n", encoding="utf-8")
    env = dict(world.env, GIT_EDITOR='sh -c "sleep 60"', PATH=f"{bindir}:{world.env['PATH']}")
    proc = subprocess.Popen(["g", "commit", "-a"], cwd=world.submodule, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        lock = git_dir(world, world.submodule) / "index.lock"
        deadline = time.monotonic() + 20
        while not lock.exists():
            assert proc.poll() is None, "git commit ended before it took index.lock"
            assert time.monotonic() < deadline, "git commit took no index.lock in 20 s"
            time.sleep(0.02)
        found = processes.gits_working_in([world.submodule])
        assert proc.pid in [pid for pid, _ in found], found  # (and its fork for the editor)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_git_that_exited_by_itself_left_no_lock(tmp_path: Path) -> None:
    """In-process: only a dead git with no journaled exit (or killed by a signal git cannot
    catch), that takes the very lock, started before it appeared, and whose guarded file
    was not replaced since it started, may have left it."""
    (tmp_path / "index").write_text("", encoding="utf-8")
    # The point of the test: three moments apart (by more than the clocks' resolution):
    # the guarded file written, then the git's time ``t``, then its lock.
    time.sleep(0.05)
    t = time.time()
    time.sleep(0.05)
    lock = tmp_path / "index.lock"
    lock.write_text("", encoding="utf-8")
    dead = _dead_git()

    def git(**kw: object) -> Git:
        fields: dict[str, object] = {"t": t, "locks": ("index.lock",), **kw}
        return dataclasses.replace(dead, **fields)  # type: ignore[arg-type]

    def blamed(g: Git) -> bool:
        return gitlocks._left_by(lock, _move(t - 1.0, [g]))

    assert blamed(git())
    assert blamed(git(status=-signal.SIGKILL))
    assert blamed(git(pid=None, started=None))  # announced, killed before it was named
    assert not blamed(git(status=0))
    assert not blamed(git(status=128))
    assert not blamed(git(status=-signal.SIGTERM))  # git removes its locks on SIGTERM
    assert not blamed(git(locks=("HEAD.lock",)))
    assert not blamed(git(t=time.time() + 1.0))  # the lock is older than the git
    (tmp_path / "index").write_text("rewritten", encoding="utf-8")  # the git finished
    os.utime(tmp_path / "index")
    assert not blamed(git())


# -- a brief lock of another git's is waited for ----------------------------------------
BRIEF_HOLDER = """\
import os, sys, time
watched, lock, seconds, word = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
first = open(watched, "rb").read()
open(sys.argv[5], "w").close()  # ready: it has read the file as it is before the command
def changed():
    now = open(watched, "rb").read()
    return now.count(word.encode()) >= first.count(word.encode()) + 2 if word else now != first
deadline = time.monotonic() + 60
while not changed() and time.monotonic() < deadline:
    time.sleep(0.0005)
while True:  # bisectkit's own git may hold it this instant (a slow, loaded machine)
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        break
    except FileExistsError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.0005)
time.sleep(seconds)  # the moment the lock is held: what bisectkit must wait out
os.close(fd)
os.unlink(lock)
"""


@pytest.mark.parametrize("command", ["good", "reset"])
def test_a_brief_lock_of_another_git_is_waited_for(world: World, command: str) -> None:
    """A ``git status`` elsewhere takes index.lock for a moment (on LLVM, about a second)
    just as bisectkit's checkout (HEAD moved: index next) or restore (its move journaled,
    after the one of its index refresh: read-tree next) needs it: the git that meets it
    is started again until the lock goes."""
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    watched, word = (git_dir(world, world.submodule) / "HEAD", "") if command == "good" else \
        (state_dir(world) / "journal", '"op":"move"')
    lock = git_dir(world, world.submodule) / "index.lock"
    ready = world.root / "holder-ready"
    holder = subprocess.Popen([sys.executable, "-c", BRIEF_HOLDER, str(watched), str(lock),
                               "1.0", word, str(ready)], cwd="/")
    wait_for(lambda: ready.exists() or holder.poll() is not None, 20,
             "the lock holder to read the file as it is before the command")
    assert ready.exists(), f"the lock holder ended ({holder.returncode})"
    proc = git_cli(world, command)
    assert holder.wait(timeout=60) == 0
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    if command == "reset":
        assert full_state(world) == before
    else:
        assert world.git(world.submodule, "status", "--porcelain") == ""
        assert git_cli(world, "reset").returncode == 0


@pytest.mark.parametrize("ref", ["refs/bisectkit/kept/1", "refs/heads/main"])
def test_a_reset_killed_writing_a_ref_leaves_a_lock_the_next_reset_removes(
        world: World, tmp_path: Path, ref: str) -> None:
    """``reset`` gives a commit of the user's on no branch a ref, or recreates the branch the
    session started on (deleted meanwhile), through ``git update-ref``: killed together with
    that git (it holds ``<ref>.lock``), the next reset removes the lock and finishes."""
    assert git_cli(world, *start_argv(world)).returncode == 0
    if ref.startswith("refs/bisectkit/"):
        (world.submodule / "mine.txt").write_text("my work\n", encoding="utf-8")
        world.git(world.submodule, "add", "mine.txt")
        world.git(world.submodule, "commit", "-q", "-m", "my work on the candidate")
        mine = world.git(world.submodule, "rev-parse", "HEAD")
        assert git_cli(world, "good").returncode == 0  # moves away: the commit on no branch
    else:
        mine = world.git(world.submodule, "rev-parse", "main")
        world.git(world.submodule, "branch", "-D", "main")
    lock = git_dir(world, world.submodule) / f"{ref}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    killed_at(world, tmp_path, "update-ref", f"holding-{ref}.lock", "reset",
              only_in=world.submodule)
    assert lock.exists()
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert f"removed {lock}, left by a git of bisectkit's" in flat(reset.stdout)
    assert world.git(world.submodule, "rev-parse", ref) == mine
    assert world.git(world.submodule, "status", "--porcelain") == ""
    assert world.git(world.submodule, "symbolic-ref", "HEAD") == "refs/heads/main"


def test_the_journal_names_a_git_announced_then_started_once(tmp_path: Path) -> None:
    """In-process: a git is announced before it starts (its time, the locks it takes),
    named once it runs, and its exit recorded; a kill between the first two leaves it
    known by its time alone."""
    j = journal.Journal(tmp_path / "journal")
    here = Side(HeadState(None, "0" * 40), "0" * 40)
    j.begin_session(str(tmp_path), {".": journal.Origin(here.head, 0)})
    n = j.move(".", here, here, 1.0)
    j.git_start(n, 2.0, ("index.lock",))
    j.git(n, os.getpid(), 2.0, ("index.lock",))
    j.git_exit(n, os.getpid(), 0)
    j.git_start(n, 3.0, ("HEAD.lock",))
    state = journal.load(j.path)
    assert state is not None
    gits = state.moves[0].gits
    assert [(g.pid, g.t, g.locks, g.status) for g in gits] == [
        (os.getpid(), 2.0, ("index.lock",), 0), (None, 3.0, ("HEAD.lock",), None)]
