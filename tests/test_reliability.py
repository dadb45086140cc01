"""Nothing lost, always recoverable: the lock, the journal, and the user's files and commits.

Each test drives the real console scripts against a real git world. The kill
harness itself (every git command, both strategies) is in ``test_kill.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.sessions import (
    assert_refused,
    run_argv,
    session_path,
    spawn,
    start_argv,
    wait_for,
    write_script,
)
from helpers.states import full_state, state_dir
from helpers.worlds import GIT_SUBCOMMAND_SH, SUBMODULE, World, WorldSpec, cli, git_cli, snapshot

from bisectkit.execute.keptoutput import Kept
from bisectkit.execute.runner import pexpect_command
from bisectkit.model.dropped import unmarked


def commit_file(world: World, repo: Path, path: str, text: str, message: str) -> str:
    """Commit a new file in ``repo`` as a user would; the commit's sha."""
    (repo / path).write_text(text, encoding="utf-8")
    world.git(repo, "add", path)
    world.git(repo, "commit", "-q", "-m", message)
    return world.git(repo, "rev-parse", "HEAD")


def exclude(world: World, pattern: str) -> None:
    """Ignore ``pattern`` in the submodule (its git dir lives in the superproject's)."""
    info = world.superproject / ".git" / "modules" / SUBMODULE / "info"
    info.mkdir(parents=True, exist_ok=True)
    with (info / "exclude").open("a", encoding="utf-8") as fh:
        fh.write(pattern + "\n")


# -- the lock -------------------------------------------------------------------------
SLOW = """\
touch "{marker}"
sleep 30
exec ./repro.sh
"""


def test_second_run_is_refused_while_one_runs(world: World, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    repro = write_script(tmp_path / "slow.sh", SLOW.format(marker=marker))
    first = spawn(world, "bisectkit", *run_argv(world, repro=(str(repro),)))
    try:
        wait_for(lambda: marker.exists() or first.poll() is not None, 30,
                 "the slow repro to start")
        assert marker.exists(), first.communicate()
        under_test = world.git(world.submodule, "rev-parse", "HEAD")
        for second in (cli(world, *run_argv(world)), git_cli(world, "reset"),
                       git_cli(world, "good")):
            assert second.returncode == 2, (second.stdout, second.stderr)
            lines = second.stderr.splitlines()
            assert len(lines) == 1, second.stderr
            assert "another bisectkit is working" in lines[0]
            assert f"pid {first.pid}" in lines[0] and "bisectkit run" in lines[0]
            # The loser touched nothing: the winner's candidate is still checked out.
            assert world.git(world.submodule, "rev-parse", "HEAD") == under_test
    finally:
        os.killpg(first.pid, signal.SIGINT)
        first.communicate(timeout=60)
    assert first.returncode == 130


def test_stale_lock_of_a_killed_run_is_taken_over(world: World, tmp_path: Path) -> None:
    before = full_state(world)
    marker = tmp_path / "started"
    repro = write_script(tmp_path / "slow.sh", SLOW.format(marker=marker))
    proc = spawn(world, "bisectkit", *run_argv(world, repro=(str(repro),)))
    wait_for(lambda: marker.exists() or proc.poll() is not None, 30, "the slow repro to start")
    assert marker.exists(), proc.communicate()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert (state_dir(world) / "lock").exists()
    busy = cli(world, *run_argv(world))
    assert busy.returncode == 2 and "git bisect-patched reset" in busy.stderr, busy.stderr
    assert f"(pid {proc.pid}" in busy.stdout and "had died" in busy.stdout
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, reset.stderr
    assert full_state(world) == before
    assert not (state_dir(world) / "lock").exists()
    again = cli(world, *run_argv(world))
    assert again.returncode == 0, again.stderr
    assert f"{world.sha(200)} is the first bad commit" in again.stdout.splitlines()


# -- untracked and ignored files where a candidate tracks one ----------------------------
#: Upstream commit n adds lib/file<n>.txt: candidates after the merge-base track files
#: that the patched HEAD does not.
GROWING = WorldSpec(files=400, bug_at=360, build_breaks=[], local_conflict=None)


def growing_run(world: World, *extra: str, build: str = "./build.sh") -> list[str]:
    return ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(300), "--bad", world.sha(400), "--build", build,
            "--good-if", "device .* not found", *extra, "--", "./repro.sh"]


@pytest.mark.parametrize("ignored", [True, False], ids=["ignored", "untracked"])
def test_file_in_the_way_is_refused(world_factory, tmp_path: Path, ignored: bool) -> None:
    world = world_factory(tmp_path, GROWING)
    mine = world.submodule / "lib" / "file310.txt"
    mine.write_text("my precious local data\n", encoding="utf-8")
    if ignored:
        exclude(world, "lib/file310.txt")
    before = full_state(world)
    snap = snapshot(world)
    built = tmp_path / "built"
    proc = cli(world, *growing_run(world, build=f"touch {built}; ./build.sh"))
    line = assert_refused(world, proc, snap, "lib/file310.txt", "--force-ignored",
                          "untracked or ignored")
    assert SUBMODULE in line
    assert full_state(world) == before
    assert mine.read_text(encoding="utf-8") == "my precious local data\n"
    assert not built.exists(), "nothing may be built before the refusal"
    # The same for a manual session: start refuses and leaves no session behind.
    started = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                      world.sha(400), world.sha(300))
    assert_refused(world, started, snap, "lib/file310.txt")
    assert full_state(world) == before


def test_force_ignored_sets_aside_and_puts_back(world_factory, tmp_path: Path) -> None:
    world = world_factory(tmp_path, GROWING)
    exclude(world, "lib/file310.txt")
    mine = world.submodule / "lib" / "file310.txt"
    mine.write_bytes(b"my precious local data\n\x00\x01")
    before = full_state(world)
    proc = cli(world, *growing_run(world, "--force-ignored"))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert f"{world.sha(360)} is the first bad commit" in proc.stdout.splitlines()
    assert "set aside submodule third_party/llvm-project: lib/file310.txt" in proc.stdout
    assert "put back submodule third_party/llvm-project: lib/file310.txt" in proc.stdout
    assert full_state(world) == before
    assert mine.read_bytes() == b"my precious local data\n\x00\x01"
    assert not (state_dir(world) / "backup").exists()


# -- the user's commits survive reset -------------------------------------------------
def test_reset_keeps_new_commits_on_the_superproject_branch(world: World) -> None:
    assert git_cli(world, *start_argv(world)).returncode == 0
    mine = commit_file(world, world.superproject, "notes.md", "found it\n", "my notes")
    pinned = world.git(world.superproject, "rev-parse", f"HEAD:{SUBMODULE}")
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, reset.stderr
    assert world.git(world.superproject, "rev-parse", "HEAD") == mine
    assert world.git(world.superproject, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert world.git(world.superproject, "status", "--porcelain") == ""
    assert (world.superproject / "notes.md").read_text(encoding="utf-8") == "found it\n"
    assert world.git(world.submodule, "rev-parse", "HEAD") == pinned


def test_reset_keeps_a_commit_made_on_the_detached_submodule(world: World) -> None:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    mine = commit_file(world, world.submodule, "lib/experiment.txt", "try this\n",
                       "my experiment")
    # Marking moves on to the next candidate: the commit is now on no branch at all.
    assert git_cli(world, "good").returncode == 0
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, reset.stderr
    assert "refs/bisectkit/kept/1" in reset.stdout and mine[:12] in reset.stdout
    assert world.git(world.submodule, "rev-parse", "refs/bisectkit/kept/1") == mine
    assert full_state(world) == before


def test_reset_keeps_a_commit_made_on_the_detached_superproject(integrate_world: World) -> None:
    w = integrate_world
    before = full_state(w)
    started = git_cli(w, "start", "--integrate", w.integrate["adv12"], w.integrate["init"])
    assert started.returncode == 0, started.stderr
    mine = commit_file(w, w.superproject, "fix.txt", "a fix\n", "try a fix")
    reset = git_cli(w, "reset")
    assert reset.returncode == 0, reset.stderr
    assert "refs/bisectkit/kept/1" in reset.stdout
    assert w.git(w.superproject, "rev-parse", "refs/bisectkit/kept/1") == mine
    assert full_state(w) == before


# -- commands are argv lists --------------------------------------------------------------
def test_a_path_with_a_space_runs_nothing_else(world_factory, tmp_path: Path) -> None:
    world = world_factory(tmp_path / "evil dir")
    hit = tmp_path / "evil-ran"
    write_script(tmp_path / "evil", f"touch {hit}\n")
    before = full_state(world)
    proc = cli(world, *run_argv(world))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert f"{world.sha(200)} is the first bad commit" in proc.stdout.splitlines()
    assert not hit.exists(), "a word of the path was run as a program"
    assert full_state(world) == before


def test_pexpect_command_never_splits() -> None:
    import pexpect.utils

    for word in ["/x/evil dir/repro.sh", "a'b \"c\\d", "plain", " lead"]:
        command, args = pexpect_command([word])
        assert args == [] and pexpect.utils.split_command_line(command) == [word]
    assert pexpect_command(["/a b", "x y"]) == ("/a b", ["x y"])


# -- output paths checked before anything is touched ---------------------------------------
@pytest.mark.parametrize("flag", ["--json", "--report", "--trace"])
@pytest.mark.parametrize("where", ["missing-dir", "directory"])
def test_output_paths_checked_first(world: World, tmp_path: Path, flag: str, where: str) -> None:
    target = tmp_path / "nope" / "out" if where == "missing-dir" else tmp_path
    built = tmp_path / "built"
    before = snapshot(world)
    proc = cli(world, *run_argv(world, build=f"touch {built}", extra=(flag, str(target))))
    assert_refused(world, proc, before, flag)
    assert not built.exists()


# -- bounded output ---------------------------------------------------------------------------
NOISY = """\
i=0
while [ $i -lt 25 ]; do
  head -c 1000000 /dev/zero | tr '\\0' 'x'; echo
  i=$((i + 1))
done
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then
  echo "error: 'func.func' op miscompiled deep in the log"
fi
i=0
while [ $i -lt 25 ]; do
  head -c 1000000 /dev/zero | tr '\\0' 'y'; echo
  i=$((i + 1))
done
exit 0
"""
#: The same with binary output: 25 MB of (seeded) random bytes, NULs and bytes that are
#: not UTF-8 among them, before and after the line.
NOISY_BINARY = """\
noise() {
  python3 -c "import random, sys; sys.stdout.buffer.write(random.Random($1).randbytes(25_000_000))"
}
noise 1
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then
  echo "error: 'func.func' op miscompiled deep in the log"
fi
noise 2
exit 0
"""

#: Millions of short lines (``yes ab``, 12 MB: more than the 8 MiB kept): the kept 8 MiB
#: is millions of lines, never as many strings in memory.
NOISY_SHORT_LINES = """\
yes ab | head -c 6000000
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then
  echo "error: 'func.func' op miscompiled deep in the log"
fi
yes ab | head -c 6000000
exit 0
"""

MEASURE = """\
import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)
"""


@pytest.mark.parametrize(("noise", "good", "bad"), [(NOISY, 196, 204), (NOISY_BINARY, 198, 201),
                                                   (NOISY_SHORT_LINES, 198, 201)],
                         ids=["text", "binary", "short-lines"])
def test_fifty_megabytes_per_step_keep_memory_and_logs_flat(world: World, tmp_path: Path,
                                                            noise: str, good: int,
                                                            bad: int) -> None:
    """50 MB of output per step, text (long lines or short) or binary: RSS stays flat, logs
    stay under --keep-output, and a --bad-if match in the dropped middle still decides the verdict.
    (Binary output crosses a pty slower: two steps, not three.)"""
    repro = write_script(tmp_path / "noisy.sh", noise)
    out = tmp_path / "r.json"
    exe = shutil.which("bisectkit")
    assert exe is not None
    argv = [exe, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(good), "--bad", world.sha(bad), "--no-cache",
            "--bad-if", "op miscompiled", "--json", str(out), "--", str(repro)]
    proc = subprocess.run([sys.executable, "-c", MEASURE, *argv], cwd=world.superproject,
                          env=world.env, text=True, capture_output=True, timeout=300)
    maxrss_kib, rc = map(int, proc.stdout.split())
    assert rc == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(200)
    steps = [s for s in result["steps"] if s["source"] == "run"]
    assert len(steps) >= 2
    assert maxrss_kib < 150 * 1024, f"{maxrss_kib} KiB"
    for step in steps:
        log = Path(step["log"])
        assert log.stat().st_size < 8 * 2**20 + 64 * 1024
        text = log.read_text()
        assert "bytes of output dropped here" in text
        assert ("op miscompiled deep in the log" in text) == (step["verdict"] == "bad")


LONG_LINE = """\
head -c 300000 /dev/zero | tr '\\0' 'x'
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then
  printf "error: 'func.func' op miscompiled in the middle of a long line"
fi
head -c 300000 /dev/zero | tr '\\0' 'y'
echo
exit 0
"""


def test_a_rule_matches_inside_a_long_line_in_the_dropped_middle(world: World,
                                                                 tmp_path: Path) -> None:
    """A 600 KB line, dropped by --keep-output: its match is kept, not cut off with it."""
    repro = write_script(tmp_path / "long.sh", LONG_LINE)
    out = tmp_path / "r.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(196), "--bad", world.sha(204), "--no-cache",
            "--keep-output", "64K", "--bad-if", "op miscompiled", "--json", str(out), "--",
            str(repro))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["first_bad"] == world.sha(200)


CHATTY = """\
i=0; while [ $i -lt 400 ]; do echo "compiling unit $i"; i=$((i+1)); done
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then echo miscompiled; exit 1; fi
"""


def test_the_rules_never_match_bisectkits_own_output_dropped_line(world: World,
                                                                   tmp_path: Path) -> None:
    """8 KB of output, 4K kept: "[bisectkit: N bytes of output dropped here ...]" is in
    the step log, but a --skip-if 'dropped' (the user's, for "connection dropped") never
    sees it: the exit status decides."""
    repro = write_script(tmp_path / "chatty.sh", CHATTY)
    out = tmp_path / "r.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(198), "--bad", world.sha(202), "--no-cache",
            "--keep-output", "4K", "--skip-if", "dropped", "--skip-if", "end of the",
            "--json", str(out), "--", str(repro))
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(200)
    assert {s["verdict"] for s in result["steps"]} == {"good", "bad"}
    assert "bytes of output dropped here" in Path(result["steps"][0]["log"]).read_text()


def test_unmarked_output_is_what_the_command_printed() -> None:
    kept = Kept(200, [re.compile("needle")])
    for i in range(100):
        kept.add(f"line {i}\n" if i != 50 else "a needle\n")
    text = kept.text()
    assert "[bisectkit: " in text
    bare = unmarked(text)
    assert "bisectkit" not in bare and "a needle\n" in bare
    assert bare.startswith("line 0\n") and bare.endswith("line 99\n")
    own = "[bisectkit: the repro's own words]\n"
    assert unmarked(own) == own


def test_kept_output_is_head_tail_and_matching_lines() -> None:
    kept = Kept(2000, [re.compile("needle")])
    for i in range(10_000):
        kept.add(f"line {i}\n")
        if i == 5000:
            kept.add("a needle in the middle\n")
    text = kept.text()
    assert text.startswith("line 0\n") and text.endswith("line 9999\n")
    assert len(text) < 2400
    assert "a needle in the middle" in text
    assert kept.dropped > 60_000
    plain = Kept(2000, [])
    plain.add("short\n")
    assert plain.text() == "short\n"


def test_kept_output_is_counted_in_utf8_bytes_and_cut_between_characters() -> None:
    kept = Kept(1000, [])
    for _ in range(2000):
        kept.add("é🔥\x00\n")
    text = kept.text()
    head, _, tail = text.partition("\n[bisectkit: ")
    assert len(head.encode()) <= 500 and len(tail.encode()) <= 600
    assert "\ufffd" not in text and "\x00" not in text  # whole characters; NUL dropped
    assert head.startswith("é🔥\né🔥\n") and text.endswith("é🔥\n")


def test_kept_output_matches_long_lines_and_not_what_a_carriage_return_rewrote() -> None:
    kept = Kept(1000, [re.compile("needle")])
    kept.add("x" * 50_000 + " a needle here " + "y" * 50_000 + "\n")
    kept.add("stale needle\r" + "z" * 50_000 + "\n")  # rewritten on screen
    kept.add("end\n" * 1000)
    text = kept.text()
    assert text.count("needle") == 1 and "\nneedle here yyy" in text  # from the match on


# -- an unreadable session or journal --------------------------------------------------------
def _started(world: World) -> dict[str, str]:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    assert git_cli(world, "good").returncode == 0
    assert world.git(world.submodule, "rev-parse", "HEAD") != before["sub_head"]
    return before


@pytest.mark.parametrize("damage", ["truncated", "garbled", "foreign-version", "missing"])
def test_reset_restores_when_the_session_file_is_unreadable(world: World, damage: str) -> None:
    before = _started(world)
    path = session_path(world)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:40])
    elif damage == "garbled":
        path.write_bytes(b"\x00\xff not json at all")
    elif damage == "foreign-version":
        data = json.loads(path.read_text())
        data["version"] = 99
        data["steps"] = "from the future"
        path.write_text(json.dumps(data))
    else:
        path.unlink()
    status = git_cli(world, "status")
    assert status.returncode == 2 and "reset" in status.stderr
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert "restored third_party/llvm-project" in reset.stdout
    if damage != "missing":
        assert "cannot be read" in reset.stdout or damage == "foreign-version"
    assert full_state(world) == before
    assert not session_path(world).exists()
    assert not (state_dir(world) / "journal").exists()
    assert git_cli(world, "reset").stdout.strip() == "not bisecting; nothing to reset"


def test_reset_from_the_reflog_when_journal_and_session_are_gone(world: World) -> None:
    before = _started(world)
    session_path(world).write_text("{not json")
    (state_dir(world) / "journal").unlink()
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert "restoring from the reflog" in reset.stdout
    assert full_state(world) == before


def test_reset_from_an_old_session_file_without_journal(world: World) -> None:
    before = _started(world)
    (state_dir(world) / "journal").unlink()
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert "restoring from the session file" in reset.stdout
    assert full_state(world) == before


# -- a full disk during the restore ---------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path: Path):
    """A 64 MiB tmpfs (needs root, as CI has); skipped where mounting is not allowed."""
    where = tmp_path / "disk"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(disk: Path) -> list[Path]:
    """Take every free byte of ``disk`` (big writes, then small ones for the last bytes)."""
    fillers = []
    for i, size in enumerate((1 << 16, 512, 1)):
        path = disk / f"filler{i}"
        fillers.append(path)
        try:
            fd = os.open(path, os.O_CREAT | os.O_WRONLY)
        except OSError:
            break
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
        finally:
            os.close(fd)
    return fillers


def test_full_disk_during_reset_is_finished_by_a_later_reset(world_factory, small_disk: Path):
    world = world_factory(small_disk)
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    assert git_cli(world, "good").returncode == 0
    fillers = fill(small_disk)
    failed = git_cli(world, "reset")
    assert failed.returncode != 0, failed.stdout
    assert len(failed.stderr.splitlines()) == 1, failed.stderr
    assert session_path(world).exists() or (state_dir(world) / "journal").exists()
    assert "space" in failed.stderr.lower()
    for path in fillers:
        path.unlink(missing_ok=True)
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before
    assert not session_path(world).exists()


# -- a git that dies with bisectkit, stuck marks, records deleted ---------------------------
DIE_SHIM = """#!/bin/sh
# Stands in for an OOM kill of bisectkit and its git together, mid-checkout.
""" + GIT_SUBCOMMAND_SH + """if [ "$sub" = "read-tree" ]; then
  touch "$(git rev-parse --git-dir)/index.lock"
  kill -9 $PPID
  exit 128
fi
exec {git} "$@"
"""


def test_git_dying_mid_checkout_never_costs_an_unrelated_edit(world: World,
                                                               tmp_path: Path) -> None:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    readme = world.submodule / "README"  # the same in every candidate: no checkout writes it
    readme.write_text("my precious edit\n", encoding="utf-8")
    shim = tmp_path / "shim"
    shim.mkdir()
    write_script(shim / "git", DIE_SHIM.format(git=shutil.which("git")).split("\n", 1)[1])
    env = dict(world.env, PATH=f"{shim}{os.pathsep}{world.env['PATH']}")
    exe = shutil.which("git-bisect-patched")
    assert exe is not None
    killed = subprocess.run([exe, "good"], cwd=world.superproject, env=env,
                            capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    refused = git_cli(world, "reset")
    assert refused.returncode == 4, (refused.stdout, refused.stderr)
    assert "README" in refused.stderr
    assert readme.read_text(encoding="utf-8") == "my precious edit\n"
    world.git(world.submodule, "checkout", "--", "README")
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before


def test_mark_after_a_refused_checkout_checks_the_candidate_out(world: World) -> None:
    assert git_cli(world, *start_argv(world)).returncode == 0
    edited = world.submodule / "lib" / "bug.txt"  # differs between the first candidates
    edited.write_text("my edit\n", encoding="utf-8")
    refused = git_cli(world, "good")
    assert refused.returncode == 4, (refused.stdout, refused.stderr)
    world.git(world.submodule, "checkout", "--", "lib/bug.txt")
    again = git_cli(world, "good")
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "no commit was under test" in again.stdout
    status = git_cli(world, "status")
    assert "under test:" in status.stdout
    assert git_cli(world, "reset").returncode == 0


def test_reset_when_session_and_journal_were_both_deleted(world: World) -> None:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    mine = commit_file(world, world.submodule, "lib/mine.txt", "an idea\n", "my idea")
    assert git_cli(world, "good").returncode == 0  # moves HEAD away from the commit
    shutil.rmtree(state_dir(world))
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert "restoring from the reflog" in reset.stdout
    assert world.git(world.submodule, "rev-parse", "refs/bisectkit/kept/1") == mine
    assert full_state(world) == before
    # Finished: the reflog now shows the restore, so nothing more happens.
    assert git_cli(world, "reset").stdout.strip() == "not bisecting; nothing to reset"
