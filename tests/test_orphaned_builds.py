"""What a build or repro leaves running is stopped when bisectkit gives up on it, and
before anything is restored; what a build that finished started on purpose is left.

A build can start a process that leaves its session (``setsid``, a daemon): the
pty's hang-up that takes the build down when bisectkit is SIGKILLed does not
reach it, and it would go on writing into the tree ``reset`` restores. Each
command bisectkit runs is recorded before it execs, tags its environment and
adopts its descendants' orphans; a command bisectkit kills (``--timeout``) goes
with everything it started, even what cleared its environment; ``reset`` and the
next ``run``/``start`` stop what a killed bisectkit's unfinished commands left
(never a process that only reuses a recorded pid). A daemon that a build which
finished by itself started (a compiler cache server) is the user's: no stop, no
abort, no ``reset`` after a kill touches it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.sessions import run_argv, spawn, start_argv, wait_for, write_script
from helpers.states import full_state, state_dir
from helpers.worlds import World, cli, git_cli

from bisectkit.safety import orphans
from bisectkit.safety.processes import alive, process_start

#: A build that leaves a process behind in a session of its own, appending to a file in
#: the submodule's work tree every 50 ms; then it waits to be killed. (Its pid file is
#: renamed into place: with --jobs 2 two builds write it, and a reader must never find
#: it empty.)
LEAVES_A_WRITER = """\
setsid sh -c 'echo $$ > "{pid}.$$"; mv "{pid}.$$" "{pid}"
  while :; do echo late >> "{late}"; sleep 0.05; done' &
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
    # Nothing to poll for: "no write" shows only over time. The writer wrote every 0.05 s;
    # in 0.3 s a survivor would have written several lines.
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
    command): whatever its builds left running is stopped before anything is restored
    (with the build it interrupts, which it kills with everything it started)."""
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


# -- a command bisectkit kills goes with everything it started ---------------------------
#: Build #1 starts a process that writes a tracked file of the submodule 3 s later (``{how}``
#: and the writer script), then hangs until ``--timeout`` kills it; the others build.
TIMES_OUT_LEAVING = """\
n=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 )); echo "$n" > "{count}"
if [ "$n" -eq 1 ]; then
  {how} </dev/null >/dev/null 2>&1 &
  while [ ! -s "{pid}" ]; do sleep 0.01; done
  sleep 60
fi
exec ./build.sh
"""
#: How the writer leaves the build: its own session, tagged; or its own session with a
#: cleared environment (no tag) and its parent gone at once (it hangs below the build
#: only because the build adopts its orphans).
LEAVERS = {"setsid": "setsid {writer}",
           "env-i": "sh -c 'setsid env -i {writer} &'"}
WRITER_SLEEP = 3.0


@pytest.mark.parametrize("how", sorted(LEAVERS))
def test_a_timed_out_build_goes_with_what_it_started(world: World, tmp_path: Path,
                                                     how: str) -> None:
    before = full_state(world)
    pid_file, target = tmp_path / "writer.pid", world.submodule / "lib" / "feature.txt"
    writer = write_script(tmp_path / "writer.sh", f'echo $$ > "{pid_file}"; '
                          f'sleep {WRITER_SLEEP}; echo late > "{target}"\n')
    build = write_script(tmp_path / "build.sh", TIMES_OUT_LEAVING.format(
        count=tmp_path / "count", pid=pid_file, how=LEAVERS[how].format(writer=writer)))
    proc = cli(world, *run_argv(world, build=str(build), extra=("--timeout", "2")))
    pid = int(pid_file.read_text(encoding="utf-8"))
    try:
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        assert f"{world.sha(200)} is the first bad commit" in proc.stdout.splitlines()
        assert not alive(pid)  # killed with the build, not left to write after the run
        # Past the moment it would have written (the delay the writer sleeps, WRITER_SLEEP,
        # after it started): the restored tree is intact. A wait for no event: a sleep.
        time.sleep(max(0.0, pid_file.stat().st_mtime + WRITER_SLEEP + 0.5 - time.time()))
        assert full_state(world) == before
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# -- a daemon a finished build started on purpose is the user's ---------------------------
#: Build #1 starts a long-lived server on purpose (a compiler cache: ``setsid``) and
#: finishes; with ``{stop}`` a kill, build #2 leaves a writer and hangs (LEAVES_A_WRITER).
SERVER_THEN = """\
n=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 )); echo "$n" > "{count}"
if [ "$n" -eq 1 ]; then
  setsid sh -c 'echo $$ > "{server}"; exec sleep 120' </dev/null >/dev/null 2>&1 &
  while [ ! -s "{server}" ]; do sleep 0.01; done
fi
if [ "$n" -eq 2 ] && [ {stop} != abort ]; then
{writer}fi
exec ./build.sh
"""
#: The second repro aborts the run (exit 200) with ``{stop}`` abort.
ABORTS_SECOND = """\
n=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 )); echo "$n" > "{count}"
if [ "$n" -eq 2 ] && [ {stop} = abort ]; then exit 200; fi
exec ./repro.sh
"""


@pytest.mark.parametrize("stop", ["abort", "sigterm", "sigkill"])
def test_a_stopped_run_leaves_the_daemon_a_finished_build_started(
        world: World, tmp_path: Path, stop: str) -> None:
    """The run stops later (a repro aborts; SIGTERM, or SIGKILL then ``reset``, while
    build #2 runs): build #2's writer is stopped, build #1's server is left running."""
    before = full_state(world)
    server_file, pid_file, marker = (tmp_path / n for n in ("server.pid", "writer.pid",
                                                            "build-started"))
    late = world.submodule / "late.txt"
    build = write_script(tmp_path / "build.sh", SERVER_THEN.format(
        count=tmp_path / "builds", server=server_file, stop=stop,
        writer=LEAVES_A_WRITER.format(pid=pid_file, late=late, marker=marker)))
    repro = write_script(tmp_path / "repro.sh", ABORTS_SECOND.format(
        count=tmp_path / "repros", stop=stop))
    proc = spawn(world, "bisectkit", *run_argv(world, build=str(build), repro=(str(repro),)))
    server = writer = 0
    try:
        if stop != "abort":
            wait_for(lambda: marker.exists() or proc.poll() is not None, 60, "build #2")
            writer = int(pid_file.read_text(encoding="utf-8"))
            proc.send_signal(signal.SIGKILL if stop == "sigkill" else signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == {"abort": 3, "sigterm": 143, "sigkill": -9}[stop], (out, err)
        if stop == "sigkill":
            assert git_cli(world, "reset").returncode == 0
        server = int(server_file.read_text(encoding="utf-8"))
        assert alive(server)  # build #1 finished: its server is the user's
        if writer:
            assert_stopped(writer, late)  # build #2 did not: its writer is stopped
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in (server, writer):
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
    late.unlink(missing_ok=True)
    assert full_state(world) == before


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


def test_what_a_finished_command_left_is_not_stopped_by_the_next(tmp_path: Path) -> None:
    daemon = subprocess.Popen(["sleep", "30"], start_new_session=True,
                              env={**os.environ, orphans.TAG_VARIABLE: "t1.1"})
    try:
        record = tmp_path / "children"
        record.write_text('{"tag": "t1.1"}\n{"tag": "t1.1", "done": true}\n', encoding="utf-8")
        assert orphans.stop_leftovers(record) == []
        assert alive(daemon.pid)
        record.write_text('{"tag": "t1.1"}\n', encoding="utf-8")  # not finished: stopped
        assert len(orphans.stop_leftovers(record)) == 1
        assert daemon.wait(timeout=10) == -signal.SIGTERM
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
