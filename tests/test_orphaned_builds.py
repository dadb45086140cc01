"""What a killed bisectkit's build left running is stopped before anything is restored.

A build can start a process that leaves its session (``setsid``, a daemon): the
pty's hang-up that takes the build down when bisectkit is SIGKILLed does not
reach it, and it would go on writing into the tree ``reset`` restores. Each
command bisectkit runs is recorded before it execs, and tags its environment;
``reset`` and the next ``run``/``start`` stop what is left (never a process that
only reuses a recorded pid).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import World, cli, git_cli
from test_reliability import full_state, state_dir
from test_safety import run_argv, spawn, start_argv, wait_for, write_script

from bisectkit import orphans
from bisectkit.processes import alive, process_start

#: A build that leaves a process behind in a session of its own, appending to a file in
#: the submodule's work tree every 50 ms; then it waits to be killed.
LEAVES_A_WRITER = """\
setsid sh -c 'echo $$ > "{pid}"; while :; do echo late >> "{late}"; sleep 0.05; done' &
while [ ! -s "{pid}" ]; do sleep 0.01; done
touch "{marker}"
sleep 60
"""


def killed_in_the_build(world: World, tmp_path: Path, *extra: str) -> tuple[int, Path]:
    """SIGKILL a ``bisectkit run`` (bisectkit alone) once its build has left a writer
    behind; (the writer's pid, the file it writes)."""
    pid_file, marker = tmp_path / "writer.pid", tmp_path / "build-started"
    late = world.submodule / "late.txt"
    build = write_script(tmp_path / "build.sh", LEAVES_A_WRITER.format(
        pid=pid_file, late=late, marker=marker))
    proc = spawn(world, "bisectkit", *run_argv(world, build=str(build), extra=extra))
    try:
        wait_for(lambda: marker.exists() or proc.poll() is not None, 60, "the build")
        assert proc.poll() is None, proc.communicate()
    finally:
        proc.kill()
        proc.communicate()
    writer = int(pid_file.read_text(encoding="utf-8"))
    assert alive(writer)  # the hang-up did not reach it
    return writer, late


def assert_stopped(writer: int, late: Path) -> None:
    """The writer is gone: nothing lands in the work tree any more."""
    assert not alive(writer)
    size = late.stat().st_size
    time.sleep(0.3)
    assert late.stat().st_size == size


@pytest.mark.parametrize("jobs", [(), ("--jobs", "2")], ids=["in-place", "jobs"])
def test_reset_stops_what_a_killed_runs_build_left_running(world: World, tmp_path: Path,
                                                            jobs: tuple[str, ...]) -> None:
    before = full_state(world)
    writer, late = killed_in_the_build(world, tmp_path, *jobs)
    try:
        reset = git_cli(world, "reset")
        assert reset.returncode == 0, (reset.stdout, reset.stderr)
        assert "stopped" in reset.stdout and "left running" in reset.stdout
        assert_stopped(writer, late)
    finally:
        if alive(writer):
            os.kill(writer, signal.SIGKILL)
    late.unlink()
    assert full_state(world) == before
    assert not (state_dir(world) / "children").exists()


def test_the_next_run_stops_it_too(world: World, tmp_path: Path) -> None:
    writer, late = killed_in_the_build(world, tmp_path)
    try:
        again = cli(world, *run_argv(world))
        assert again.returncode == 2, (again.stdout, again.stderr)  # reset first
        assert "left running" in again.stdout
        assert_stopped(writer, late)
    finally:
        if alive(writer):
            os.kill(writer, signal.SIGKILL)
    assert git_cli(world, "reset").returncode == 0


@pytest.mark.parametrize("command", ["bisectkit", "git-bisect-patched"])
def test_a_stopped_run_stops_what_its_build_left_before_it_restores(
        world: World, tmp_path: Path, command: str) -> None:
    """SIGTERM (a catchable stop: bisectkit ends by itself, no record left for the next
    command): whatever its builds left running is stopped before anything is restored."""
    before = full_state(world)
    pid_file, marker = tmp_path / "writer.pid", tmp_path / "build-started"
    late = world.submodule / "late.txt"
    build = write_script(tmp_path / "build.sh", LEAVES_A_WRITER.format(
        pid=pid_file, late=late, marker=marker))
    if command == "git-bisect-patched":
        assert git_cli(world, *start_argv(world)).returncode == 0
        args = ["run", "--build", str(build), "--good-if", "device .* not found", "./repro.sh"]
    else:
        args = run_argv(world, build=str(build))
    proc = spawn(world, command, *args)
    writer = 0
    try:
        wait_for(lambda: marker.exists() or proc.poll() is not None, 60, "the build")
        writer = int(pid_file.read_text(encoding="utf-8"))
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 143, out
        assert "left running" in out
        assert_stopped(writer, late)
    finally:
        if proc.poll() is None:
            proc.kill()
        if writer and alive(writer):
            os.kill(writer, signal.SIGKILL)
    if command == "git-bisect-patched":
        assert git_cli(world, "reset").returncode == 0
    late.unlink(missing_ok=True)
    assert full_state(world) == before


def test_a_finished_run_leaves_no_record(world: World) -> None:
    assert cli(world, *run_argv(world)).returncode == 0
    assert not (state_dir(world) / "children").exists()


# -- in-process: which recorded processes are stopped ------------------------------------
def test_a_recorded_pid_now_another_process_is_never_signalled(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        record = tmp_path / "children"
        # The recorded leader had this pid, but started at another time: a reused pid.
        record.write_text(f'{{"tag": "t1", "pid": {other.pid}, "started": "1", '
                          f'"pgid": {other.pid}, "sid": {other.pid}}}\n{{torn', encoding="utf-8")
        assert orphans.stop_leftovers(record) == []
        assert not record.exists()
        assert alive(other.pid)
        # The same process recorded as itself: stopped, with its session.
        record.write_text(f'{{"tag": "t2", "pid": {other.pid}, '
                          f'"started": "{process_start(other.pid)}", "pgid": {other.pid}, '
                          f'"sid": {other.pid}}}\n', encoding="utf-8")
        lines = orphans.stop_leftovers(record)
        assert len(lines) == 1 and str(other.pid) in lines[0]
        assert other.wait(timeout=10) == -signal.SIGTERM
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
