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
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import World, cli, git_cli, snapshot
from test_journal_lost import killed_at
from test_reliability import full_state, state_dir
from test_safety import assert_refused, run_argv, start_argv

from bisectkit import gitlocks
from bisectkit.journalrecords import Git, Move, Side
from bisectkit.model import HeadState
from bisectkit.processes import process_start


def git_dir(world: World, repo: Path) -> Path:
    return Path(world.git(repo, "rev-parse", "--absolute-git-dir"))


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
            assert proc.poll() is None and time.monotonic() < deadline, "git commit ended"
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
    assert f"removed {left}, left by a git of bisectkit's" in reset.stdout
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
    assert f"removed {left}, left by a git of bisectkit's" in reset.stdout
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
    assert f"removed {left}" in reset.stdout
    assert full_state(w) == before
