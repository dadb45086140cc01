"""Parallel steps through the real CLI: ``--jobs K`` local workspaces and Dask clusters
(a ``distributed.LocalCluster`` and the real ``dask scheduler``/``dask worker`` CLI).

Every parallel answer is checked against the ``--jobs 1`` answer on the same world;
the user's tree and every workspace must end clean.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, cli, snapshot

GOOD_IF = "device .* not found"
Popen = subprocess.Popen[str]


def run(world: World, tmp_path: Path, name: str, *extra: str, good: str | None = None,
        bad: str | None = None, target: tuple[str, ...] | None = None,
        build: str = "./build.sh", env: dict[str, str] | None = None,
        repro: tuple[str, ...] = ("./repro.sh",)) -> tuple[subprocess.CompletedProcess[str],
                                                           dict]:
    out = tmp_path / f"{name}.json"
    if target is None:
        target = ("--submodule", SUBMODULE, "--upstream", "upstream/main",
                  "--good", good or world.sha(0), "--bad", bad or world.sha(300))
    r = cli(world, "run", *target, "--build", build, "--good-if", GOOD_IF, "--no-cache",
            "--json", str(out), *extra, "--", *repro, extra_env=env, timeout=300)
    assert out.exists(), r.stderr + r.stdout
    return r, json.loads(out.read_text())


def answer(result: dict) -> tuple:
    return result["status"], result["first_bad"], tuple(result.get("candidates") or ())


def workspaces(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("ws-*") if p.is_dir() and not p.suffix)


def tracked_changes(repo: Path) -> str:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                          "--ignore-submodules=all"], cwd=repo, capture_output=True,
                         text=True, check=True)
    return out.stdout


def assert_clean(ws: Path) -> None:
    assert tracked_changes(ws) == "", ws
    assert tracked_changes(ws / SUBMODULE) == "", ws


@pytest.mark.parametrize("bad", [300, 400], ids=["below-merge-base", "across-conflicts"])
def test_jobs3_gives_the_jobs1_answer_and_leaves_everything_clean(world: World,
                                                                  tmp_path: Path, bad: int):
    before = snapshot(world)
    r1, one = run(world, tmp_path, "one", bad=world.sha(bad))
    r3, three = run(world, tmp_path, "three", "--jobs", "3", bad=world.sha(bad))
    assert r1.returncode == r3.returncode, r3.stderr + r3.stdout
    assert answer(three) == answer(one)
    assert snapshot(world) == before
    root = world.superproject / ".git/bisectkit/workspaces"
    found = workspaces(root)
    assert 1 <= len(found) <= 3
    for ws in found:
        assert_clean(ws)
        # Objects are shared with the user's repositories, not copied.
        assert (ws / ".git/objects/info/alternates").exists()
    ran = [s for s in three["steps"] if s["source"] == "run" and s.get("build_s") is not None]
    assert ran and all(s["worker"] == "local" and Path(s["workspace"]) in found for s in ran)
    assert {s["job"] for s in ran} <= {1, 2, 3}
    assert "testing up to 3 candidates at once" in r3.stdout
    assert len({s["index"] for s in three["steps"]}) == len(three["steps"])


def test_integrate_with_jobs(integrate_world: World, tmp_path: Path):
    w = integrate_world
    target = ("--integrate", "--good", w.integrate["init"], "--bad", w.integrate["adv12"])
    before = snapshot(w)
    _, one = run(w, tmp_path, "one", target=target)
    r, three = run(w, tmp_path, "three", "--jobs", "3", target=target)
    assert r.returncode == 0, r.stderr + r.stdout
    assert answer(three) == answer(one) and one["first_bad"] == w.integrate["adv8"]
    assert snapshot(w) == before
    for ws in workspaces(w.superproject / ".git/bisectkit/workspaces"):
        assert_clean(ws)


def test_stack_bisect_with_jobs(world: World, tmp_path: Path):
    target = ("--submodule", SUBMODULE, "--upstream", "upstream/main", "--stack", "--at",
              world.sha(330))
    # The local fixup conflicts with nothing at 330; the repro fails on the fixup.
    repro = tmp_path / "repro.sh"
    repro.write_text("#!/bin/sh\n! grep -q 'our local fixup' third_party/llvm-project/lib/"
                     "local.txt\n", encoding="utf-8")
    repro.chmod(0o755)
    _, one = run(world, tmp_path, "one", target=target, repro=(str(repro),))
    r, two = run(world, tmp_path, "two", "--jobs", "2", target=target, repro=(str(repro),))
    assert r.returncode == 0, r.stderr + r.stdout
    assert answer(two) == answer(one) and one["first_bad"] == world.stack[-1]


def test_workspace_and_job_reach_the_build_and_workspaces_command(world: World,
                                                                   tmp_path: Path):
    seen = tmp_path / "seen.txt"
    build = f'echo "$BISECTKIT_WORKSPACE $BISECTKIT_JOB $BISECTKIT_JOBS" >> {seen}; ./build.sh'
    root = tmp_path / "elsewhere"
    trace = tmp_path / "trace.json"
    r, result = run(world, tmp_path, "three", "--jobs", "3", "--workspace-root", str(root),
                    "--trace", str(trace), build=build)
    assert r.returncode == 0, r.stderr + r.stdout
    # One trace track per worker and workspace, each step a span on its track.
    events = json.loads(trace.read_text())["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"
              and e["args"]["name"].startswith("local ")}
    assert tracks and all(name.startswith(f"local {root}/ws-") for name in tracks.values())
    assert any(e["tid"] in tracks and e["name"].startswith("step ") for e in events)
    lines = {tuple(line.split()) for line in seen.read_text().splitlines()}
    assert lines and all(ws == str(root / f"ws-{job}") and jobs == "3"
                         for ws, job, jobs in lines)
    assert not (world.superproject / ".git/bisectkit/workspaces").exists()
    listed = cli(world, "workspaces", "--workspace-root", str(root))
    assert listed.returncode == 0 and "idle" in listed.stdout and "ws-1" in listed.stdout
    pruned = cli(world, "workspaces", "--prune", "--workspace-root", str(root))
    assert pruned.returncode == 0 and "removed" in pruned.stdout
    assert not workspaces(root)
    nothing = cli(world, "workspaces")
    assert nothing.returncode == 0 and "no workspaces" in nothing.stdout


def test_parallel_refuses_bad_input_touching_nothing(world: World, tmp_path: Path):
    before = snapshot(world)
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
            world.sha(300), "--jobs", "0", "--", "./repro.sh")
    assert r.returncode == 2 and "--jobs" in r.stderr
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
            world.sha(300), "--jobs", "2", "--resources", "GPU=1", "--", "./repro.sh")
    assert r.returncode == 2 and "--resources goes with --scheduler" in r.stderr
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
            world.sha(300), "--jobs", "2", "-p", "flaky", "--", "./repro.sh")
    assert r.returncode == 2 and "flaky" in r.stderr and "--jobs 1" in r.stderr
    # A build script only the user's tree has cannot run in a workspace: said up front.
    mine = world.superproject / "mybuild.sh"
    mine.write_text("#!/bin/sh\n./build.sh\n", encoding="utf-8")
    mine.chmod(0o755)
    before = snapshot(world)
    r = cli(world, "run", "--submodule", SUBMODULE, "--good", world.sha(0), "--bad",
            world.sha(300), "--jobs", "2", "--build", "./mybuild.sh", "--", "./repro.sh")
    assert r.returncode == 2, r.stderr + r.stdout
    assert "./mybuild.sh, which the superproject does not commit" in r.stderr
    assert snapshot(world) == before
    r, result = run(world, tmp_path, "absolute", "--jobs", "2", build=str(mine))
    assert r.returncode == 0 and result["first_bad"] == world.sha(200), r.stderr


def test_a_repro_that_cannot_run_aborts_after_the_good_end_check(world: World,
                                                                   tmp_path: Path):
    repro = tmp_path / "repro.sh"
    repro.write_text("#!/bin/sh\nexec no-such-tool-anywhere --check\n", encoding="utf-8")
    repro.chmod(0o755)
    before = snapshot(world)
    r, result = run(world, tmp_path, "broken", "--jobs", "2", repro=(str(repro),))
    assert r.returncode == 3, r.stderr + r.stdout
    assert "cannot run" in r.stderr and "at the good end" in r.stderr
    assert result["status"] == "aborted" and result["first_bad"] is None
    assert snapshot(world) == before


def test_ctrl_c_kills_every_step_and_restores(world: World, tmp_path: Path):
    pids = tmp_path / "pids"
    pids.mkdir()
    build = f"echo $$ > {pids}/$BISECTKIT_JOB; sleep 60; ./build.sh"
    before = snapshot(world)
    exe = [sys.executable, "-m", "bisectkit"]
    proc = subprocess.Popen(
        [*exe, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
         world.sha(0), "--bad", world.sha(300), "--jobs", "3", "--build", build,
         "--no-cache", "--", "./repro.sh"], cwd=world.superproject, env=world.env,
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list(pids.iterdir())) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(list(pids.iterdir())) == 3, proc.communicate(timeout=5)
    builds = [int(p.read_text()) for p in pids.iterdir()]
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in builds) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in builds), "a build survived Ctrl-C"
    for ws in workspaces(world.superproject / ".git/bisectkit/workspaces"):
        assert_clean(ws)
    # The workspaces are free again: the next run uses them (no ws-4).
    r, result = run(world, tmp_path, "again", "--jobs", "3")
    assert r.returncode == 0 and result["first_bad"] == world.sha(200)
    assert len(workspaces(world.superproject / ".git/bisectkit/workspaces")) <= 3


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# -- workspaces: the user's folders, a gc of the user's repositories, the build's environment
def try_run(world: World, tmp_path: Path, name: str, *extra: str,
            build: str = "./build.sh", env: dict[str, str] | None = None
            ) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    """Like :func:`run`, for a run that may be refused (then no JSON result: None)."""
    out = tmp_path / f"{name}.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", build,
            "--good-if", GOOD_IF, "--no-cache", "--json", str(out), *extra, "--",
            "./repro.sh", extra_env=env, timeout=300)
    return r, json.loads(out.read_text()) if out.exists() else None


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def test_a_folder_of_the_users_named_like_a_workspace_is_never_touched(world: World,
                                                                       tmp_path: Path):
    # --workspace-root is a folder of the user's, where ws-1 is a repository with work in
    # progress: checking a candidate out there (checkout -f) would destroy that work.
    root = tmp_path / "src"
    theirs = root / "ws-1"
    theirs.mkdir(parents=True)
    _git(theirs, "init", "-q")
    (theirs / "notes.txt").write_text("committed\n", encoding="utf-8")
    _git(theirs, "add", "notes.txt")
    _git(theirs, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "mine")
    (theirs / "notes.txt").write_text("work in progress\n", encoding="utf-8")
    head = _git(theirs, "rev-parse", "HEAD")
    before = snapshot(world)
    r, _ = try_run(world, tmp_path, "three", "--jobs", "2", "--workspace-root", str(root))
    assert r.returncode == 2, r.stderr + r.stdout
    assert "not a bisectkit workspace" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (theirs / "notes.txt").read_text(encoding="utf-8") == "work in progress\n"
    assert _git(theirs, "rev-parse", "HEAD") == head
    assert snapshot(world) == before


def test_prune_removes_only_what_bisectkit_made(world: World, tmp_path: Path):
    root = tmp_path / "builds"
    r, result = try_run(world, tmp_path, "two", "--jobs", "2", "--workspace-root", str(root))
    assert r.returncode == 0 and result is not None, r.stderr + r.stdout
    mine = [root / "ws-notes", root / "ws-7", root / "ws-3.tmp"]
    for folder in mine:
        folder.mkdir()
        (folder / "keep.txt").write_text("precious\n", encoding="utf-8")
    listed = cli(world, "workspaces", "--workspace-root", str(root))
    assert listed.returncode == 0 and "ws-1" in listed.stdout
    assert "ws-notes" not in listed.stdout and "ws-7" not in listed.stdout
    pruned = cli(world, "workspaces", "--prune", "--workspace-root", str(root))
    assert pruned.returncode == 0 and "removed" in pruned.stdout, pruned.stderr
    assert not (root / "ws-1").exists()
    for folder in mine:
        assert (folder / "keep.txt").read_text(encoding="utf-8") == "precious\n", folder


def test_workspaces_survive_a_gc_of_the_users_submodule(world: World, tmp_path: Path):
    # Workspaces borrow objects from the user's repositories (clone --shared); the patched
    # commits a workspace last held are unreachable there, and a gc drops them. The next
    # run must repair the workspace, not fail on "bad object HEAD".
    r, first = try_run(world, tmp_path, "first", "--jobs", "2")
    assert r.returncode == 0 and first is not None, r.stderr + r.stdout
    sub = world.superproject / SUBMODULE
    _git(sub, "reflog", "expire", "--expire=now", "--all")
    _git(sub, "gc", "-q", "--prune=now")
    before = snapshot(world)
    r, again = try_run(world, tmp_path, "again", "--jobs", "2")
    assert r.returncode == 0 and again is not None, r.stderr + r.stdout
    assert again["first_bad"] == first["first_bad"] == world.sha(200)
    assert snapshot(world) == before


def test_the_users_git_dir_does_not_reach_a_build_in_a_workspace(world: World,
                                                                 tmp_path: Path):
    # With GIT_DIR exported, a git in the build (a version stamp, a `git submodule
    # update`) would act on the user's repository instead of the workspace's.
    seen = tmp_path / "seen.txt"
    build = f"git rev-parse --absolute-git-dir >> {seen}; ./build.sh"
    root = tmp_path / "wsroot"
    env = {"GIT_DIR": str(world.superproject / ".git")}
    r, result = try_run(world, tmp_path, "gitdir", "--jobs", "2", "--workspace-root", str(root),
                    build=build, env=env)
    assert r.returncode == 0 and result is not None, r.stderr + r.stdout
    dirs = set(seen.read_text(encoding="utf-8").split())
    assert dirs and all(Path(d).is_relative_to(root) for d in dirs), dirs


# -- Dask ------------------------------------------------------------------------------
distributed = pytest.importorskip("distributed")


def test_local_cluster_of_processes(world: World, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch):
    roots = tmp_path / "workers"
    # Worker processes inherit this environment: their workspaces go under roots/NAME.
    monkeypatch.setenv("BISECTKIT_WORKER_ROOT", str(roots))
    before = snapshot(world)
    _, one = run(world, tmp_path, "one")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        r, dask = run(world, tmp_path, "dask", "--scheduler", cluster.scheduler_address)
    assert r.returncode == 0, r.stderr + r.stdout
    assert answer(dask) == answer(one) and dask["first_bad"] == world.sha(200)
    ran = [s for s in dask["steps"] if s.get("build_s") is not None]
    used = {Path(s["workspace"]).parent for s in ran}
    assert len(used) == 2 and all(p.parent == roots for p in used), used
    for parent in used:
        for ws in workspaces(parent):
            assert_clean(ws)
            # A cluster worker makes its own clone and replays the stack itself.
            assert not (ws / SUBMODULE / ".git/objects/info/alternates").exists()
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/workspaces").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def dask_cli(tmp_path: Path, world: World) -> Iterator[tuple[str, dict[str, Popen]]]:
    """A real ``dask scheduler`` and two ``dask worker`` processes (``wa`` with GPU=1)."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "BISECTKIT_WORKER_ROOT": str(tmp_path / "workers"),
           "HOME": world.env["HOME"], "GIT_CONFIG_NOSYSTEM": "1"}
    procs: dict[str, Popen] = {}
    logs = tmp_path / "dask-logs"
    logs.mkdir()

    def start(name: str, *argv: str) -> None:
        with open(logs / f"{name}.log", "w") as log:  # the child keeps its own copy
            procs[name] = subprocess.Popen(["dask", *argv], env=env, text=True, cwd=tmp_path,
                                           stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True)

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port),
              "--no-dashboard")
        for name, extra in (("wa", ["--resources", "GPU=1"]), ("wb", [])):
            start(name, "worker", address, "--name", name, "--nthreads", "1", "--no-nanny",
                  "--no-dashboard", *extra)
        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address, procs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_dask_cli_scheduler_and_workers(world: World, tmp_path: Path, dask_cli):
    address, procs = dask_cli
    before = snapshot(world)
    r, result = run(world, tmp_path, "dask", "--scheduler", address)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    workers = {s["worker"] for s in result["steps"] if s.get("build_s") is not None}
    assert workers <= {"wa", "wb"} and workers
    # A device repro goes only where the device is.
    r, gpu = run(world, tmp_path, "gpu", "--scheduler", address, "--resources", "GPU=1")
    assert r.returncode == 0, r.stderr + r.stdout
    assert gpu["first_bad"] == world.sha(200)
    assert {s["worker"] for s in gpu["steps"] if s.get("build_s") is not None} == {"wa"}
    # A worker that dies mid-step is an infrastructure failure: the step runs again
    # elsewhere, and is never a skip or a verdict.
    marker = tmp_path / "killed-once"
    build = (f'case "$BISECTKIT_WORKSPACE" in */wa/*) if [ ! -e {marker} ]; then '
             f'touch {marker}; kill -9 $PPID; sleep 30; fi;; esac; ./build.sh')
    r, lost = run(world, tmp_path, "lost", "--scheduler", address, build=build)
    assert r.returncode == 0, r.stderr + r.stdout
    assert marker.exists() and procs["wa"].wait(timeout=30) is not None
    assert lost["first_bad"] == world.sha(200)
    assert all(s["verdict"] != "skip" for s in lost["steps"])
    assert snapshot(world) == before


def test_live_table_on_a_terminal_only() -> None:
    import io

    from rich.console import Console as RichConsole

    from bisectkit.model.documents import JobRow
    from bisectkit.ui.console import Console

    rows: list[JobRow] = [{"index": 4, "commit": "a" * 40, "subject": "upstream commit 200",
             "phase": "build", "where": "wa:ws-2", "elapsed": 12.3, "line": "[41/977] CXX"}]
    piped = io.StringIO()
    Console(piped).jobs(rows)
    assert piped.getvalue() == ""  # not a terminal: the step lines say it all
    tty = io.StringIO()
    console = Console(tty)
    console._c = RichConsole(file=tty, force_terminal=True, width=100)
    with console.live():  # the table is part of a run's status panel
        console.jobs(rows)
        console.jobs([])
    shown = tty.getvalue()
    for text in ("wa:ws-2", "aaaaaaaaaaaa", "build", "0:12", "[41/977] CXX"):
        assert text in shown
