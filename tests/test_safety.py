"""Safety of the real CLI: bad input touches nothing, interruptions and aborts restore state.

Every test drives the installed console scripts (``bisectkit`` and ``git
bisect-patched``) against a real git world, and compares the repositories'
state before and after with :func:`helpers.worlds.snapshot`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.sessions import (
    UPSTREAM,
    assert_refused,
    run_argv,
    session_path,
    spawn,
    start_argv,
    wait_for,
    write_script,
)
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

from bisectkit.safety.processes import alive


# -- helpers ----------------------------------------------------------------------
def snapshot_super(world: World) -> dict[str, str]:
    """The superproject half of ``snapshot`` (usable while the submodule is detached)."""
    return {
        "super_head": world.git(world.superproject, "rev-parse", "HEAD"),
        "super_branch": world.git(world.superproject, "symbolic-ref", "-q", "HEAD"),
        "super_status": world.git(world.superproject, "status", "--porcelain"),
    }


def head_info(world: World, repo: Path) -> tuple[str, str | None]:
    """(HEAD sha, branch ref or None when detached): works where ``snapshot`` cannot."""
    sha = world.git(repo, "rev-parse", "HEAD")
    proc = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo, env=world.env,
                          text=True, capture_output=True)
    return sha, (proc.stdout.strip() if proc.returncode == 0 else None)


def is_ancestor(world: World, repo: Path, a: str, b: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=repo,
                          env=world.env).returncode == 0


# -- bad input: exit 2, one line, nothing touched -----------------------------------
@pytest.mark.parametrize("which", ["good", "bad"])
def test_run_unknown_rev(world: World, which: str, tmp_path: Path) -> None:
    marker = tmp_path / "built"
    before = snapshot(world)
    result = tmp_path / "result.json"
    ends = {"good": None, "bad": None, which: "no-such-rev"}
    proc = cli(world, *run_argv(world, build=f"touch {marker}", extra=("--json", str(result)),
                                good=ends["good"], bad=ends["bad"]))
    assert_refused(world, proc, before, "unknown revision", "no-such-rev")
    assert not marker.exists()
    assert not result.exists()


@pytest.mark.parametrize("which", ["good", "bad"])
def test_start_unknown_rev(world: World, which: str) -> None:
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world, **{which: "no-such-rev"}))
    assert_refused(world, proc, before, "unknown revision", "no-such-rev")


def test_run_unknown_upstream(world: World) -> None:
    before = snapshot(world)
    argv = run_argv(world)
    argv[argv.index(UPSTREAM)] = "upstream/nope"
    proc = cli(world, *argv)
    assert_refused(world, proc, before, "upstream/nope")


@pytest.mark.parametrize("path", ["lib", "build.sh", "does/not/exist",
                                  f"{SUBMODULE}/lib"])
def test_run_not_a_submodule(world: World, path: str) -> None:
    before = snapshot(world)
    proc = cli(world, *run_argv(world, submodule=path))
    assert_refused(world, proc, before, "not a submodule", path)


@pytest.mark.parametrize("path", ["lib", "build.sh", "does/not/exist"])
def test_start_not_a_submodule(world: World, path: str) -> None:
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world, submodule=path))
    assert_refused(world, proc, before, "not a submodule", path)


def test_run_good_is_bad(world: World) -> None:
    before = snapshot(world)
    proc = cli(world, *run_argv(world, good=world.sha(300)))
    assert_refused(world, proc, before, "bad revision itself")


def test_run_superproject_commit_is_unknown_in_submodule(world: World) -> None:
    before = snapshot(world)
    sup = before["super_head"]
    proc = cli(world, *run_argv(world, bad=sup))
    assert_refused(world, proc, before, "unknown revision", sup)


def test_run_good_not_ancestor_of_bad(world: World) -> None:
    before = snapshot(world)
    proc = cli(world, *run_argv(world, good=world.sha(300), bad=world.sha(100)))
    assert_refused(world, proc, before, "not an ancestor")


def test_start_good_not_ancestor_of_bad(world: World) -> None:
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world, good=world.sha(300), bad=world.sha(100)))
    assert_refused(world, proc, before, "not an ancestor")


@pytest.mark.parametrize("staged", [False, True], ids=["unstaged", "staged"])
def test_run_dirty_superproject(world: World, staged: bool) -> None:
    build = world.superproject / "build.sh"
    text = build.read_text(encoding="utf-8") + "# local edit\n"
    build.write_text(text, encoding="utf-8")
    if staged:
        world.git(world.superproject, "add", "build.sh")
    before = snapshot(world)
    assert "build.sh" in before["super_status"]
    proc = cli(world, *run_argv(world))
    assert_refused(world, proc, before, "uncommitted", "build.sh")
    assert build.read_text(encoding="utf-8") == text


def test_start_dirty_superproject(world: World) -> None:
    (world.superproject / "repro.sh").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world))
    assert_refused(world, proc, before, "uncommitted", "repro.sh")


@pytest.mark.parametrize("staged", [False, True], ids=["unstaged", "staged"])
def test_run_dirty_submodule(world: World, staged: bool) -> None:
    target = world.submodule / "lib" / "local.txt"
    target.write_text("work in progress\n", encoding="utf-8")
    if staged:
        world.git(world.submodule, "add", "lib/local.txt")
    before = snapshot(world)
    assert "lib/local.txt" in before["sub_status"]
    proc = cli(world, *run_argv(world))
    assert_refused(world, proc, before, "uncommitted", "lib/local.txt")
    assert target.read_text(encoding="utf-8") == "work in progress\n"


def test_start_dirty_submodule(world: World) -> None:
    (world.submodule / "README").write_text("edited\n", encoding="utf-8")
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world))
    assert_refused(world, proc, before, "uncommitted", "README")


def test_untracked_files_are_not_dirty(world: World) -> None:
    (world.superproject / "notes.txt").write_text("my notes\n", encoding="utf-8")
    (world.submodule / "lib" / "scratch.txt").write_text("scratch\n", encoding="utf-8")
    before = snapshot(world)
    assert "?? notes.txt" in before["super_status"]
    assert "?? lib/scratch.txt" in before["sub_status"]
    proc = cli(world, *run_argv(world))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert f"{world.sha(200)} is the first bad commit" in proc.stdout.splitlines()
    assert snapshot(world) == before
    assert (world.superproject / "notes.txt").read_text(encoding="utf-8") == "my notes\n"
    assert (world.submodule / "lib" / "scratch.txt").read_text(encoding="utf-8") == "scratch\n"
    assert not session_path(world).exists()


def test_run_repro_not_found(world: World, tmp_path: Path) -> None:
    marker = tmp_path / "built"
    before = snapshot(world)
    proc = cli(world, *run_argv(world, build=f"touch {marker}", repro=("./nope.sh",)))
    assert_refused(world, proc, before, "not found", "nope.sh")
    assert not marker.exists()


def test_run_repro_not_on_path(world: World) -> None:
    before = snapshot(world)
    proc = cli(world, *run_argv(world, repro=("no-such-command-bisectkit",)))
    assert_refused(world, proc, before, "not found", "no-such-command-bisectkit")


def test_run_repro_not_executable(world: World, tmp_path: Path) -> None:
    repro = write_script(tmp_path / "noexec.sh", "exit 0\n", executable=False)
    marker = tmp_path / "built"
    before = snapshot(world)
    proc = cli(world, *run_argv(world, build=f"touch {marker}", repro=(str(repro),)))
    assert_refused(world, proc, before, "not executable", "noexec.sh")
    assert not marker.exists()


def test_git_run_repro_not_found_keeps_session(world: World) -> None:
    assert git_cli(world, *start_argv(world)).returncode == 0
    session = session_path(world).read_bytes()
    sub = head_info(world, world.submodule)
    proc = git_cli(world, "run", "./nope.sh")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert len(proc.stderr.splitlines()) == 1 and "nope.sh" in proc.stderr
    assert session_path(world).read_bytes() == session
    assert head_info(world, world.submodule) == sub


@pytest.mark.parametrize("how", ["sha", "branch"])
def test_run_bad_contains_local_patches(world: World, how: str) -> None:
    before = snapshot(world)
    bad = world.stack[-1] if how == "sha" else "main"
    assert world.git(world.submodule, "rev-parse", bad) == world.stack[-1]
    proc = cli(world, *run_argv(world, bad=bad))
    assert_refused(world, proc, before, "local patch")


def test_start_bad_contains_local_patches(world: World) -> None:
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world, bad=world.stack[-1]))
    assert_refused(world, proc, before, "local patch")


def test_start_while_session_in_progress(world: World) -> None:
    before = snapshot(world)
    first = git_cli(world, *start_argv(world))
    assert first.returncode == 0, (first.stdout, first.stderr)
    saved = session_path(world).read_bytes()
    sub = head_info(world, world.submodule)
    sup = head_info(world, world.superproject)
    sub_status = world.git(world.submodule, "status", "--porcelain")

    again = git_cli(world, *start_argv(world, bad=world.sha(250), good=world.sha(10)))
    assert again.returncode == 2, (again.stdout, again.stderr)
    lines = again.stderr.splitlines()
    assert len(lines) == 1 and "already in progress" in lines[0], again.stderr
    assert session_path(world).read_bytes() == saved
    assert head_info(world, world.submodule) == sub
    assert head_info(world, world.superproject) == sup
    assert world.git(world.submodule, "status", "--porcelain") == sub_status

    # The same for the one-shot command: it must not hijack the session either.
    oneshot = cli(world, *run_argv(world))
    assert oneshot.returncode == 2, (oneshot.stdout, oneshot.stderr)
    assert len(oneshot.stderr.splitlines()) == 1 and "already in progress" in oneshot.stderr
    assert session_path(world).read_bytes() == saved
    assert head_info(world, world.submodule) == sub

    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before
    assert not session_path(world).exists()


def test_marks_refused_keep_session(world: World) -> None:
    assert git_cli(world, *start_argv(world)).returncode == 0
    saved = session_path(world).read_bytes()
    sub = head_info(world, world.submodule)
    cases = {
        ("good", "no-such-rev"): "unknown revision",
        ("good", world.sha(350)): "not in the bisect range",
        ("bad", world.sha(0)): "is the good end, not a candidate",
        ("good", world.sha(300)): "cannot mark good",
    }
    for args, words in cases.items():
        proc = git_cli(world, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and words in lines[0], (args, proc.stderr)
        assert session_path(world).read_bytes() == saved
        assert head_info(world, world.submodule) == sub
    assert git_cli(world, "reset").returncode == 0


def test_user_edit_mid_session_is_never_overwritten(world: World) -> None:
    """An edit made during a session blocks the next checkout and the reset; it is kept."""
    before = snapshot(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    edited = world.submodule / "lib" / "file5.txt"  # changes between most candidates
    edited.write_text("my experiment\n", encoding="utf-8")
    git_cli(world, "good")
    assert edited.read_text(encoding="utf-8") == "my experiment\n"
    proc = git_cli(world, "reset")
    assert proc.returncode == 4  # a git failure mid-session: the session is kept
    assert "move local edits out of the way" in proc.stderr
    assert edited.read_text(encoding="utf-8") == "my experiment\n"
    assert session_path(world).exists()
    world.git(world.submodule, "checkout", "--", "lib/file5.txt")
    proc = git_cli(world, "reset")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert snapshot(world) == before


def _moved_and_kept(world: World, orig: str) -> tuple[list[str], list[str]]:
    """The submodule's tracked files the restore to ``orig`` rewrites, and those it keeps."""
    moved = set(world.git(world.submodule, "diff", "--name-only", "HEAD", orig).split())
    files = world.git(world.submodule, "ls-files").splitlines()
    return sorted(moved), [f for f in files if f not in moved]


@pytest.mark.parametrize("change", ["edit", "delete", "stage"])
def test_reset_refuses_a_change_it_would_not_even_write_over(world: World, change: str) -> None:
    """A change of the user's in a file the restore does not move (the candidate and the
    starting commit hold the same): edited, deleted, or edited and staged. reset refuses
    (exit 4, the session kept) and the change stays; undone, reset restores everything."""
    before = snapshot(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    _, kept = _moved_and_kept(world, before["sub_head"])
    path = world.submodule / kept[0]
    if change == "delete":
        path.unlink()
    else:
        path.write_text("my experiment\n", encoding="utf-8")
    if change == "stage":
        world.git(world.submodule, "add", kept[0])
    proc = git_cli(world, "reset")
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert ("has staged changes" if change == "stage" else "has local changes") in proc.stderr
    assert session_path(world).exists()
    if change == "delete":
        assert not path.exists()
    else:
        assert path.read_text(encoding="utf-8") == "my experiment\n"
    world.git(world.submodule, "reset", "-q", "--", kept[0])
    world.git(world.submodule, "checkout", "--", kept[0])
    proc = git_cli(world, "reset")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert snapshot(world) == before


def test_reset_writes_over_a_file_that_already_holds_the_starting_content(world: World) -> None:
    """A file the restore moves, put back by hand as the starting commit has it (its index
    entry still the candidate's): writing it again loses nothing, so reset restores."""
    before = snapshot(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    moved, _ = _moved_and_kept(world, before["sub_head"])
    blob = subprocess.run(["git", "show", f"{before['sub_head']}:{moved[0]}"],
                          cwd=world.submodule, env=world.env, capture_output=True, check=True)
    (world.submodule / moved[0]).write_bytes(blob.stdout)
    assert world.git(world.submodule, "status", "--porcelain") != ""
    proc = git_cli(world, "reset")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert snapshot(world) == before


def test_detached_submodule_is_restored_detached(world: World) -> None:
    """After ``git submodule update`` the submodule is usually detached: keep it so."""
    world.git(world.submodule, "checkout", "-q", "--detach")
    sub = head_info(world, world.submodule)
    assert sub[1] is None
    sup = snapshot_super(world)
    proc = cli(world, *run_argv(world))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert head_info(world, world.submodule) == sub
    assert world.git(world.submodule, "status", "--porcelain") == ""
    assert snapshot_super(world) == sup
    assert not session_path(world).exists()


@pytest.mark.parametrize("verb", [("good",), ("bad",), ("skip",), ("good", "HEAD"), ("run",),
                                  ("status",), ("log",)])
def test_commands_without_session(world: World, verb: tuple[str, ...]) -> None:
    before = snapshot(world)
    args = [*verb, "./repro.sh"] if verb == ("run",) else list(verb)
    proc = git_cli(world, *args)
    assert_refused(world, proc, before, "no bisect-patched session")


# -- interruption: Ctrl-C and SIGTERM restore everything ------------------------------
SLOW_SCRIPT = """\
sleep 60 &
echo "$$ $!" > "{marker}.tmp"
mv "{marker}.tmp" "{marker}"
wait
"""


def interrupt_when_started(world: World, proc: subprocess.Popen[str], marker: Path,
                           signum: int, to_group: bool, times: int = 1) -> tuple[list[int], str]:
    """Wait until the slow script runs, signal bisectkit, wait for it; (script pids, stderr)."""
    try:
        wait_for(lambda: marker.exists() or proc.poll() is not None, 30, "the script to start")
        assert proc.poll() is None, proc.communicate()
        pids = [int(p) for p in marker.read_text().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids)
        # The submodule really is at a patched candidate, detached, while the script runs.
        assert head_info(world, world.submodule)[1] is None
        assert session_path(world).exists()
        for n in range(times):
            if n:
                time.sleep(0.01)  # the point: signals a moment apart, a user hitting Ctrl-C
            if to_group:
                os.killpg(proc.pid, signum)
            else:
                proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if times == 1:
        assert proc.returncode == 128 + signum, (out, err)
    else:
        # A later signal may land after the clean-up, while Python shuts down with the
        # default disposition back: the shell still sees 128 + the signal.
        assert proc.returncode in (128 + signum, -signum), (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], err
    wait_for(lambda: not any(alive(p) for p in pids), 5, "the script's processes to die")
    return pids, err


@pytest.mark.parametrize(("signum", "to_group"),
                         [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False),
                          (signal.SIGHUP, True), (signal.SIGQUIT, False)],
                         ids=["SIGINT", "SIGINT-group", "SIGTERM", "SIGHUP-group", "SIGQUIT"])
def test_run_interrupted_in_repro_restores(world: World, tmp_path: Path, signum: int,
                                           to_group: bool) -> None:
    marker = tmp_path / "repro-started"
    repro = write_script(tmp_path / "slow_repro.sh", SLOW_SCRIPT.format(marker=marker))
    result = tmp_path / "result.json"
    before = snapshot(world)
    proc = spawn(world, "bisectkit",
                 *run_argv(world, repro=(str(repro),), extra=("--json", str(result))))
    interrupt_when_started(world, proc, marker, signum, to_group)
    assert snapshot(world) == before
    assert not session_path(world).exists()
    data = json.loads(result.read_text(encoding="utf-8"))
    assert data["status"] == "aborted"
    assert data["error"] == "interrupted"
    assert data["first_bad"] is None


def test_run_interrupted_in_build_restores(world: World, tmp_path: Path) -> None:
    marker = tmp_path / "build-started"
    build = write_script(tmp_path / "slow_build.sh", SLOW_SCRIPT.format(marker=marker))
    before = snapshot(world)
    proc = spawn(world, "bisectkit", *run_argv(world, build=str(build)))
    interrupt_when_started(world, proc, marker, signal.SIGINT, to_group=True)
    assert snapshot(world) == before
    assert not session_path(world).exists()


def test_run_repeated_ctrl_c_still_restores(world: World, tmp_path: Path) -> None:
    marker = tmp_path / "repro-started"
    repro = write_script(tmp_path / "slow_repro.sh", SLOW_SCRIPT.format(marker=marker))
    before = snapshot(world)
    proc = spawn(world, "bisectkit", *run_argv(world, repro=(str(repro),)))
    interrupt_when_started(world, proc, marker, signal.SIGINT, to_group=True, times=3)
    assert snapshot(world) == before
    assert not session_path(world).exists()


def candidates(world: World) -> list[str]:
    path = session_path(world).with_name("candidates.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_git_run_interrupted_keeps_session_then_reset(world: World, tmp_path: Path) -> None:
    marker = tmp_path / "repro-started"
    repro = write_script(tmp_path / "slow_repro.sh", SLOW_SCRIPT.format(marker=marker))
    before = snapshot(world)
    started = git_cli(world, *start_argv(world))
    assert started.returncode == 0, (started.stdout, started.stderr)
    under_test = head_info(world, world.submodule)
    proc = spawn(world, "git-bisect-patched", "run", str(repro))
    interrupt_when_started(world, proc, marker, signal.SIGINT, to_group=True)
    assert session_path(world).exists()
    session = json.loads(session_path(world).read_text(encoding="utf-8"))
    assert session["current"] in candidates(world)
    assert head_info(world, world.submodule) == under_test
    assert world.git(world.submodule, "status", "--porcelain") == ""

    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert snapshot(world) == before
    assert not session_path(world).exists()


# -- a repro exiting 128+ aborts ----------------------------------------------------------
ABORTS = {
    "exit130": "echo 'cannot go on'\nexit 130\n",
    "exit255": "exit 255\n",
    "exit128": "exit 128\n",
    "SIGSEGV": "kill -SEGV $$\n",
    "SIGKILL": "kill -KILL $$\n",
}


@pytest.mark.parametrize("body", ABORTS.values(), ids=ABORTS.keys())
def test_run_abort_restores(world: World, tmp_path: Path, body: str) -> None:
    repro = write_script(tmp_path / "abort.sh", body)
    result = tmp_path / "result.json"
    before = snapshot(world)
    proc = cli(world, *run_argv(world, repro=(str(repro),), extra=("--json", str(result))))
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "abort" in lines[0].lower(), proc.stderr
    assert snapshot(world) == before
    assert not session_path(world).exists()
    data = json.loads(result.read_text(encoding="utf-8"))
    assert data["status"] == "aborted"
    assert "abort the bisection" in data["error"]
    assert data["first_bad"] is None
    assert data["strategy"] == "submodule"


def test_git_run_abort_keeps_session_then_reset(world: World) -> None:
    write_script(world.superproject / "abort.sh", "exit 130\n")  # untracked: not dirty
    before = snapshot(world)
    started = git_cli(world, *start_argv(world))
    assert started.returncode == 0, (started.stdout, started.stderr)

    proc = git_cli(world, "run", "--build", "./build.sh", "./abort.sh")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "abort" in proc.stderr.lower()
    assert session_path(world).exists()
    session = json.loads(session_path(world).read_text(encoding="utf-8"))
    current = session["current"]
    assert current in candidates(world)
    sha, branch = head_info(world, world.submodule)
    assert branch is None, "the submodule should be left detached at the candidate"
    assert sha != before["sub_head"]
    assert is_ancestor(world, world.submodule, current, sha)
    assert world.git(world.submodule, "status", "--porcelain") == before["sub_status"]

    # The session goes on: the same run again aborts the same way, still kept.
    again = git_cli(world, "run", "./abort.sh")
    assert again.returncode == 3, (again.stdout, again.stderr)
    assert json.loads(session_path(world).read_text(encoding="utf-8"))["current"] == current

    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert snapshot(world) == before
    assert not session_path(world).exists()


def test_a_refused_checkout_removes_no_file_whose_stat_data_alone_changed(world: World) -> None:
    """A build touched every source (stat data changed, bytes not), and the user staged the
    deletion of a file the next checkout moves: the checkout is refused (exit 4), and it
    takes no file off the disk on the way: the touched files are the index's, not strays
    of a racily clean checkout."""
    assert git_cli(world, *start_argv(world)).returncode == 0
    files = world.git(world.submodule, "ls-files", "-z").split("\0")
    old = time.time() - 30 * 24 * 3600
    for name in filter(None, files):
        os.utime(world.submodule / name, (old, old), follow_symlinks=False)
    world.git(world.submodule, "rm", "-q", "--cached", "lib/bug.txt")
    proc = git_cli(world, "good")
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert world.git(world.submodule, "ls-files", "--deleted") == ""
    assert (world.submodule / "lib/bug.txt").exists()
