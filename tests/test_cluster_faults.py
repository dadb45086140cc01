"""A Dask cluster failing under a run (``--scheduler``): real ``dask scheduler`` and
``dask worker`` processes, killed by process group while steps are in flight.

A lost worker's step runs again elsewhere, its verdict recorded once, and so does a
silent (stopped) worker's once bisectkit had it removed; a step that kills every worker
it lands on, no worker for ``--no-workers-timeout``, or a lost scheduler stops the run
with one line (exit 3), everything restored; an address where no scheduler answers, or
whose scheme this Dask cannot use, stops it before the first step (exit 2); a stop
signal cancels the steps in flight. Every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers.lines import flat
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

from bisectkit.pipeline.parallel import cluster as watching

GOOD_IF = "device .* not found"
#: Short client-side timeouts: a test waits seconds, not distributed's defaults.
FAST = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _until(what: str, ok, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while not ok():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


class Cluster:
    """A real scheduler and workers, each its own process group (a worker's nanny and its
    worker process die together)."""

    def __init__(self, tmp_path: Path, world: World) -> None:
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.env = {**os.environ, **FAST, "BISECTKIT_WORKER_ROOT": str(tmp_path / "workers"),
                    "HOME": world.env["HOME"], "GIT_CONFIG_NOSYSTEM": "1"}
        self.logs = tmp_path / "dask-logs"
        self.logs.mkdir()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None) -> None:
        with open(self.logs / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                ["dask", *argv], env={**self.env, **(env or {})}, cwd=self.logs,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def scheduler(self, env: dict[str, str] | None = None) -> None:
        self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port",
                                  str(self.port), "--no-dashboard"], env)
        _until("the scheduler", self._listening)

    def _listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def worker(self, name: str, nanny: bool = False, env: dict[str, str] | None = None,
               wait: bool = True, threads: int = 1) -> None:
        self._start(name, ["worker", self.address, "--name", name, "--nthreads", str(threads),
                           "--no-dashboard", *([] if nanny else ["--no-nanny"])], env)
        if wait:
            _until(f"worker {name}", lambda: name in self.workers(), 60)

    def workers(self) -> set[str]:
        import distributed

        with distributed.Client(self.address, timeout="10s") as client:
            return {str(w["name"]) for w in client.scheduler_info()["workers"].values()}

    def kill(self, name: str) -> None:
        os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait(timeout=30)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path: Path, world: World) -> Iterator[Cluster]:
    pytest.importorskip("distributed")
    c = Cluster(tmp_path, world)
    try:
        yield c
    finally:
        c.close()


class Run:
    """``bisectkit run --scheduler`` (or ``git bisect-patched run``) in the background; its
    stdout read line by line as it comes."""

    def __init__(self, world: World, tmp_path: Path, cluster: Cluster, build: str,
                 *extra: str, git: bool = False, env: dict[str, str] | None = None) -> None:
        self.json = tmp_path / "result.json"
        exe = [sys.executable, "-m", "bisectkit"]
        if git:
            argv = ["git", "bisect-patched", "run"]
        else:
            # 20 candidates around the first bad commit (200): a few steps, a few seconds.
            argv = [*exe, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                    "--good", world.sha(190), "--bad", world.sha(210)]
        argv += ["--build", build, "--good-if", GOOD_IF, "--no-cache", "--json",
                 str(self.json), "--scheduler", cluster.address, *extra, "--", "./repro.sh"]
        # Wide: each message on one line, as the line-by-line expectations read them.
        self.proc = subprocess.Popen(argv, cwd=world.superproject,
                                     env={**world.env, **FAST, "COLUMNS": "400", **(env or {})},
                                     text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def expect(self, pattern: str, deadline_s: float = 60) -> str:
        """The first line of stdout (from here on) that matches ``pattern``."""
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} in "
                                     f"{deadline_s} s:\n{''.join(self.seen)}") from None
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def finish(self, deadline_s: float = 120) -> tuple[int, str, str]:
        """Exit code, stdout, stderr."""
        try:
            self.proc.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        self.reader.join(timeout=10)  # stdout is at its end once the process is gone
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.proc.returncode, "".join(self.seen), err

    def result(self) -> dict:
        return json.loads(self.json.read_text())


def _kill_my_worker(marker: Path) -> str:
    """A build that, the first time, kills the Dask worker running it (its parent: the
    worker spawns ``/bin/sh -c BUILD``) and waits to die with it. (mkdir: once even when
    two builds start together.)"""
    return f"if mkdir {marker} 2>/dev/null; then kill -9 $PPID; sleep 30; fi; ./build.sh"


def _ran_again_on_wb(world: World, run: Run, out: str, step: int,
                     before: dict[str, str]) -> None:
    """Step ``step``, lost with worker wa, ran again on wb, was recorded once, and the run
    found the culprit and restored everything."""
    assert re.search(rf"step {step} \([0-9a-f]{{12}}\) runs again: its worker wa ", out), out
    assert f"{world.sha(200)} is the first bad commit" in out
    result = run.result()
    _verdicts_once(result)
    mine = [s for s in result["steps"] if s["index"] == step]
    assert len(mine) == 1 and mine[0]["worker"] == "wb", mine
    assert snapshot(world) == before


def _verdicts_once(result: dict) -> None:
    """Each candidate tested by the bisection has one verdict."""
    counts = Counter(s["commit"] for s in result["steps"] if s["source"] == "run")
    assert counts and max(counts.values()) == 1, counts


def _one_line(err: str, pattern: str) -> None:
    """stderr is one line: the error, no traceback or Dask log."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and " - distributed." not in err, err
    assert re.search(pattern, lines[0]), err
    assert len(lines) == 1, err


def test_the_only_worker_lost_mid_step_waits_for_a_new_one_then_finishes(
        world: World, tmp_path: Path, cluster: Cluster) -> None:
    cluster.scheduler()
    cluster.worker("wa")
    before = snapshot(world)
    marker = tmp_path / "killed"
    run = Run(world, tmp_path, cluster, _kill_my_worker(marker), "--no-workers-timeout", "60")
    line = run.expect(r"worker .* was lost")
    assert re.search(r"step 1 \([0-9a-f]{12}\) runs again: its worker wa \(tcp://127\.0\.0\.1:"
                     r"\d+\) was lost; no verdict was taken from the lost run", line), line
    run.expect(rf"no Dask worker is connected to {cluster.address}: the steps wait for one "
               r"\(up to 60 s, --no-workers-timeout\)")
    cluster.worker("wb", wait=False)
    code, out, err = run.finish()
    assert code == 0, out + err
    assert f"{world.sha(200)} is the first bad commit" in out
    result = run.result()
    _verdicts_once(result)
    assert {s["worker"] for s in result["steps"] if s.get("build_s") is not None} == {"wb"}
    assert snapshot(world) == before


def test_a_worker_declared_lost_that_reports_late_is_not_recorded_twice(
        world: World, tmp_path: Path, cluster: Cluster) -> None:
    # wa's first build stops wa (SIGSTOP); the scheduler declares it lost after its
    # worker-ttl and gives the step to wb, whose build of it wakes wa up (wa's run of the
    # step goes on, its result late) and takes its time.
    cluster.scheduler(env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "2s"})
    cluster.worker("wa")
    late = tmp_path / "late"
    build = (f'case "$BISECTKIT_WORKSPACE" in */wa/*) if [ ! -e {late}.step ]; then '
             f'echo $PPID > {late}.pid; echo $BISECTKIT_STEP > {late}.step; kill -STOP $PPID; '
             f'fi;; *) if [ "$BISECTKIT_STEP" = "$(cat {late}.step)" ] && [ ! -e {late}.woken ]'
             f'; then touch {late}.woken; kill -CONT $(cat {late}.pid); sleep 2; fi;; esac; '
             './build.sh')
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, build)
    _until("wa stopped", lambda: (tmp_path / "late.step").exists())
    cluster.worker("wb", wait=False)
    code, out, err = run.finish()
    assert code == 0, out + err
    step = int((tmp_path / "late.step").read_text())
    assert (tmp_path / "late.woken").exists()
    _ran_again_on_wb(world, run, out, step, before)


def test_no_worker_for_the_timeout_stops_with_one_line_and_restores(
        world: World, tmp_path: Path, cluster: Cluster) -> None:
    cluster.scheduler()
    cluster.worker("wa")
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, _kill_my_worker(tmp_path / "killed"),
              "--no-workers-timeout", "4")
    code, out, err = run.finish(deadline_s=60)
    assert code == 3, out + err
    assert "runs again: its worker wa" in flat(out)
    assert "the steps wait for one (up to 4 s" in flat(out)
    _one_line(err, rf"^bisectkit: error: no Dask worker has been connected to {cluster.address} "
                   r"for 4 s; start workers, or rerun with a longer --no-workers-timeout$")
    assert run.result()["status"] == "aborted"
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()


def test_git_bisect_patched_run_with_no_worker_keeps_the_session(
        world: World, tmp_path: Path, cluster: Cluster) -> None:
    cluster.scheduler()  # and never a worker
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    world.git(world.superproject, "config", "bisectkit.no-workers-timeout", "2")
    run = Run(world, tmp_path, cluster, "./build.sh", git=True)
    code, out, err = run.finish(deadline_s=60)
    assert code == 3, out + err
    assert "none yet: the steps wait for workers" in flat(out)
    assert f"no Dask worker has been connected to {cluster.address} for 2 s" in err
    assert "the session is kept" in flat(out) and "Traceback" not in err
    status = git_cli(world, "status")
    assert status.returncode == 0, status.stderr
    assert "verdicts: 0 good, 1 bad, 0 skip (the bad end included)" in status.stdout
    world.git(world.superproject, "config", "bisectkit.no-workers-timeout", "soon")
    code, out, err = Run(world, tmp_path, cluster, "./build.sh", git=True).finish()
    assert code == 2 and "git config bisectkit.no-workers-timeout is 'soon': not a number" in err
    assert git_cli(world, "reset").returncode == 0


def test_a_step_that_kills_every_worker_stops_the_run(world: World, tmp_path: Path,
                                                       cluster: Cluster) -> None:
    # A nanny restarts its killed worker, which takes the step again, and dies again: the
    # scheduler gives up on the step after allowed-failures (here 1) losses.
    cluster.scheduler(env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"})
    cluster.worker("wa", nanny=True)
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, "kill -9 $PPID; sleep 30")
    code, out, err = run.finish(deadline_s=90)
    assert code == 3, out + err
    assert "step 1 (" in out and ") runs again: its worker " in flat(out) + " ", out
    _one_line(err, r"^bisectkit: error: step 1 \([0-9a-f]{12}\) lost its worker 2 times \(last "
                   r"tcp://127\.0\.0\.1:\d+\): it may kill the workers it runs on \(out of "
                   r"memory\?\); no verdict was taken from it")
    assert [s["verdict"] for s in run.result()["steps"]] in ([], ["stopped"]), run.result()
    assert snapshot(world) == before


def test_a_lost_scheduler_stops_the_run_with_one_line_and_restores(
        world: World, tmp_path: Path, cluster: Cluster) -> None:
    cluster.scheduler()
    cluster.worker("wa")
    started = tmp_path / "started"
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, f"touch {started}; sleep 60; ./build.sh")
    _until("the first build", started.exists)
    cluster.kill("scheduler")
    t0 = time.monotonic()
    code, out, err = run.finish(deadline_s=60)
    assert code == 3, out + err
    assert time.monotonic() - t0 < 20, "a lost scheduler is said at once"
    _one_line(err, rf"^bisectkit: error: lost the Dask scheduler at {cluster.address}: the "
                   "connection closed; no verdict was taken from the steps in flight")
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()


def test_a_scheduler_lost_before_any_step_ran(world: World, tmp_path: Path,
                                              cluster: Cluster) -> None:
    cluster.scheduler()  # no worker: the first step waits
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, "./build.sh", "--no-workers-timeout", "60")
    run.expect(r"no Dask worker is connected to .*: the steps wait for one")
    cluster.kill("scheduler")
    code, out, err = run.finish(deadline_s=60)
    assert code == 3, out + err
    _one_line(err, rf"^bisectkit: error: lost the Dask scheduler at {cluster.address}: ")
    assert snapshot(world) == before


def test_a_worker_lost_while_it_makes_its_workspace(world: World, tmp_path: Path,
                                                    cluster: Cluster) -> None:
    # The worker's git kills the worker (its nanny restarts it) the first time it clones.
    shim = tmp_path / "shim"
    shim.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True,
                          check=True).stdout.strip()
    marker = tmp_path / "killed"
    git = shim / "git"
    git.write_text(f"#!/bin/sh\ncase \" $* \" in *' clone '*) if mkdir {marker} 2>/dev/null; then "
                   f"kill -9 $PPID; sleep 5; fi;; "
                   f"esac\nexec {real} \"$@\"\n", encoding="utf-8")
    git.chmod(0o755)
    cluster.scheduler()
    cluster.worker("wa", nanny=True, env={"PATH": f"{shim}:{os.environ['PATH']}"})
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, "./build.sh")
    code, out, err = run.finish(deadline_s=120)
    assert code == 0, out + err
    assert marker.exists() and "step 1 (" in out
    assert ") runs again: its worker " in flat(out) + " "
    assert f"{world.sha(200)} is the first bad commit" in out
    _verdicts_once(run.result())
    assert snapshot(world) == before
    for ws in (tmp_path / "workers" / "wa").glob("ws-*"):
        if ws.is_dir() and not ws.suffix:
            status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                                     "--ignore-submodules=all"],
                                    cwd=ws, capture_output=True, text=True, check=True)
            assert status.stdout == "", ws


def test_a_stop_signal_cancels_the_steps_on_the_workers(world: World, tmp_path: Path,
                                                        cluster: Cluster) -> None:
    # SIGTERM (a CI time limit); Ctrl-C's SIGINT takes the same path, exit 130.
    cluster.scheduler()
    cluster.worker("wa")
    cluster.worker("wb")
    pids = tmp_path / "pids"
    pids.mkdir()
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, f"echo $$ > {pids}/$BISECTKIT_STEP; sleep 60; "
                                        "./build.sh")
    _until("two builds", lambda: len([p for p in pids.iterdir() if p.read_text()]) == 2)
    builds = [int(p.read_text()) for p in pids.iterdir()]
    os.killpg(run.proc.pid, signal.SIGTERM)
    code, out, err = run.finish(deadline_s=60)
    assert code == 143, out + err
    assert "Traceback" not in err
    assert snapshot(world) == before
    _until("the builds to be killed", lambda: not any(_alive(p) for p in builds), 15)
    assert cluster.workers() == {"wa", "wb"}


def test_a_silent_worker_is_removed_and_its_step_runs_elsewhere(
        world: World, tmp_path: Path, cluster: Cluster) -> None:
    # wa's first build stops wa (SIGSTOP): its connection stays open, only its heartbeats
    # stop; the scheduler's own worker-ttl (5 minutes, checked every 5) would hold the run
    # for up to 10. bisectkit's bound (worker-ttl 2 s where it runs: ten heartbeats, 5 s)
    # has the scheduler remove wa, and the step runs on wb, started meanwhile.
    cluster.scheduler()
    cluster.worker("wa")
    stopped = tmp_path / "stopped"
    build = (f'case "$BISECTKIT_WORKSPACE" in */wa/*) if [ ! -e {stopped}.step ]; then '
             f'echo $PPID > {stopped}.pid; echo $BISECTKIT_STEP > {stopped}.step; '
             'kill -STOP $PPID; fi;; esac; ./build.sh')
    before = snapshot(world)
    run = Run(world, tmp_path, cluster, build,
              env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "2s"})
    try:
        _until("wa stopped", lambda: (tmp_path / "stopped.step").exists())
        cluster.worker("wb", wait=False)
        code, out, err = run.finish(deadline_s=90)
    finally:
        if (tmp_path / "stopped.pid").exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int((tmp_path / "stopped.pid").read_text()), signal.SIGCONT)
    assert code == 0, out + err
    step = int((tmp_path / "stopped.step").read_text())
    assert re.search(r"worker wa \(tcp://127\.0\.0\.1:\d+\) has sent no heartbeat for \d+ s "
                     rf"\(stopped, frozen or cut off\?\) while running step {step} "
                     r"\([0-9a-f]{12}\): the scheduler is asked to remove it", out), out
    _ran_again_on_wb(world, run, out, step, before)


def _no_scheduler(world: World, address: str) -> tuple[int, str]:
    """``bisectkit run --scheduler ADDRESS`` (connect timeout 1 s): exit code, stderr;
    the tree as it was."""
    before = snapshot(world)
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            world.sha(190), "--bad", world.sha(210), "--build", "./build.sh", "--no-cache",
            "--scheduler", address, "--", "./repro.sh", timeout=60,
            extra_env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()
    return r.returncode, r.stderr


def test_an_address_that_is_no_dask_scheduler_is_said_in_one_line(world: World) -> None:
    pytest.importorskip("distributed")
    http = ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    silent = socket.socket()
    try:
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        # Ports that take the connection and never answer as a scheduler: Dask's Client
        # waits for their handshake forever.
        for port in (http.server_address[1], silent.getsockname()[1]):
            t0 = time.monotonic()
            code, err = _no_scheduler(world, f"tcp://127.0.0.1:{port}")
            assert code == 2 and time.monotonic() - t0 < 30, err
            _one_line(err, rf"^bisectkit: error: nothing answered like a Dask scheduler at "
                           rf"tcp://127\.0\.0\.1:{port} within 2 s: is this the address 'dask "
                           r"scheduler' printed \('Scheduler at: \.\.\.'\)\?$")
        code, err = _no_scheduler(world, f"ws://127.0.0.1:{http.server_address[1]}")
        assert code == 2, err
        _one_line(err, r"^bisectkit: error: cannot reach the Dask scheduler at ws://127\.0\.0\.1:"
                       r"\d+: WebSocketError: Non-websocket response$")
    finally:
        silent.close()
        http.shutdown()
        http.server_close()


def test_a_scheme_this_dask_cannot_use_is_said_in_one_line(world: World) -> None:
    pytest.importorskip("distributed")
    code, err = _no_scheduler(world, "tls://127.0.0.1:1")  # no TLS settings here
    assert code == 2, err
    _one_line(err, r"^bisectkit: error: --scheduler tls://127\.0\.0\.1:1: tls:// needs Dask's "
                   "TLS settings where bisectkit runs: distributed.comm.tls.ca-file, "
                   r"\.client\.cert and \.client\.key")
    code, err = _no_scheduler(world, "wss://127.0.0.1:1")
    assert code == 2 and "wss:// needs Dask's TLS settings" in err, err
    if importlib.util.find_spec("distributed_ucxx") is None:
        code, err = _no_scheduler(world, "ucx://127.0.0.1:1")
        assert code == 2, err
        _one_line(err, r"^bisectkit: error: --scheduler ucx://127\.0\.0\.1:1: this Dask cannot "
                       r"connect over ucx:// \(.*\); ucx:// needs distributed-ucxx")


# -- the watch's logic, in process (a stand-in for Dask's client) ----------------------
class _Client:
    """What :class:`ClusterWatch` asks of a ``distributed.Client``."""

    def __init__(self) -> None:
        self.status = "running"
        self.workers: dict[str, dict] = {}
        self.silent = False
        self.scheduler = self
        self.restarted: list[tuple[list[str], bool]] = []
        self.refuse = False

    def identity(self) -> dict:
        return {"workers": self.workers}

    def processing(self, workers: list[str]) -> dict:
        return {w: self.workers[w].get("processing", []) for w in workers}

    def restart_workers(self, workers: list[str], **kwargs) -> dict:
        self.restarted.append((workers, kwargs["wait_for_workers"]))
        if self.refuse:
            raise TypeError("unexpected keyword argument 'on_error'")
        return {}

    def sync(self, call, callback_timeout: float, **kwargs):
        if self.silent:
            raise TimeoutError
        return call(**kwargs)


def test_the_watch_says_lost_steps_and_stops_waiting_for_workers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(watching.time, "monotonic", lambda: now[0])
    client = _Client()
    client.workers = {"tcp://h:1": {"name": "wa", "nthreads": 1}}
    watch = watching.ClusterWatch(client, "tcp://s:8786", None, 60, 5)
    watch.track("k3", 3, "a" * 40)
    assert watch.poll() == []
    # The scheduler removes wa, which ran step 3 (and a stranger's task).
    watch.on_event((0.0, {"action": "remove-worker", "worker": "tcp://h:1",
                          "processing-tasks": {"k3", "theirs"}}))
    watch.on_event((0.0, {"action": "add-worker", "worker": "tcp://h:2"}))
    client.workers = {}
    assert watch.poll() == [f"step 3 ({'a' * 12}) runs again: its worker wa (tcp://h:1) was "
                            "lost; no verdict was taken from the lost run"]
    now[0] += 2.0  # no worker since now
    assert watch.poll() == []
    now[0] += 3.0
    assert watch.poll() == ["no Dask worker is connected to tcp://s:8786: the steps wait for "
                            "one (up to 60 s, --no-workers-timeout)"]
    now[0] += 30.0
    assert watch.poll() == []  # said once
    client.workers = {"tcp://h:3": {"name": "wb", "nthreads": 2}}
    now[0] += 20.0
    assert watch.poll() == []  # a worker came: the clock starts again
    client.workers = {}
    now[0] += 2.0
    watch.poll()
    now[0] += 59.0
    watch.poll()
    now[0] += 2.0
    with pytest.raises(watching.NoWorkers, match="no Dask worker has been connected to "
                       r"tcp://s:8786 for 60 s; start workers, or rerun with a longer "
                       "--no-workers-timeout"):
        watch.poll()
    # Nothing waits: no worker is no reason to stop.
    watch.forget(3)
    now[0] += 100.0
    assert watch.poll() == []


def test_the_watch_counts_only_workers_that_fit_and_loses_a_silent_scheduler() -> None:
    workers: list[dict[str, Any]] = [{"nthreads": 4, "resources": {"GPU": 2}},
                                     {"nthreads": 1, "resources": {"GPU": 1}}, {"nthreads": 8}]
    assert watching.capacity(workers, None) == 13
    assert watching.capacity(workers, {"GPU": 1}) == 3
    assert watching.capacity(workers, {"GPU": 2}) == 1
    client = _Client()
    watch = watching.ClusterWatch(client, "tcp://s:8786", {"GPU": 1}, 60, 5)
    watch.track("k1", 1, "b" * 40)
    client.silent = True
    with pytest.raises(watching.SchedulerLost, match=r"^lost the Dask scheduler at "
                       "tcp://s:8786: no answer in 5 s; no verdict"):
        watch.poll()
    client.silent = False  # lost is lost: not asked again (a cancel would wait as long)
    assert not watch.connected()
    with pytest.raises(watching.SchedulerLost, match="no answer in 5 s"):
        watch.poll()
    closed = _Client()
    closed.status = "connecting"  # Dask reconnects, its tasks already cancelled
    with pytest.raises(watching.SchedulerLost, match="the connection closed"):
        watching.ClusterWatch(closed, "tcp://s:8786", None, 60, 5).poll()


def test_the_silence_a_worker_is_allowed() -> None:
    assert watching.silence_s(300, None) == 300  # distributed.scheduler.worker-ttl
    assert watching.silence_s(300, 1200) == 300
    assert watching.silence_s(300, 100) == 100  # --timeout, when shorter
    assert watching.silence_s(300, 5) == 60  # but never under a minute
    assert watching.silence_s(None, 5) == 60
    assert watching.silence_s(2, 5) == 2  # worker-ttl as configured
    assert watching.silence_s(None, None) is None  # no bound of bisectkit's own


def test_the_watch_has_a_silent_worker_running_a_step_removed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(watching.time, "monotonic", lambda: now[0])
    client = _Client()
    client.workers = {"tcp://h:1": {"name": "wa", "last_seen": 1.0, "processing": ["k3"]},
                      "tcp://h:2": {"name": "wb", "last_seen": 1.0, "processing": ["theirs"]},
                      "tcp://h:3": {"name": "wc", "last_seen": 1.0, "processing": []}}
    watch = watching.ClusterWatch(client, "tcp://s:8786", None, 600, 30, silence=60)
    watch.track("k3", 3, "a" * 40)
    assert watch.poll() == []
    for _ in range(30):  # wa and wb silent for 60 s; wc heard every 2 s
        now[0] += 2.0
        client.workers["tcp://h:3"]["last_seen"] = now[0]
        assert watch.poll() == []
    assert client.restarted == []
    now[0] += 2.0
    assert watch.poll() == [f"worker wa (tcp://h:1) has sent no heartbeat for 62 s (stopped, "
                            f"frozen or cut off?) while running step 3 ({'a' * 12}): the "
                            "scheduler is asked to remove it"]
    # wb runs no step of this run: the scheduler's worker-ttl is its business.
    assert client.restarted == [(["tcp://h:1"], False)]
    now[0] += 30.0
    assert watch.poll() == []  # asked once
    now[0] += 32.0
    with pytest.raises(watching.InfrastructureFailed, match=r"^worker wa \(tcp://h:1\) has "
                       r"sent no heartbeat for 124 s while running step 3 \(a{12}\), and the "
                       "scheduler did not remove it when asked; no verdict"):
        watch.poll()
    # A scheduler that cannot remove a worker (an older Dask): the run stops (exit 3).
    client.refuse = True
    client.workers["tcp://h:4"] = {"name": "wd", "last_seen": 1.0, "processing": ["k5"]}
    watch = watching.ClusterWatch(client, "tcp://s:8786", None, 600, 30, silence=60)
    watch.track("k5", 5, "b" * 40)
    watch.poll()
    now[0] += 62.0
    with pytest.raises(watching.InfrastructureFailed, match=r"^worker wd \(tcp://h:4\) .* and "
                       r"the scheduler could not remove it \(TypeError: unexpected"):
        watch.poll()
