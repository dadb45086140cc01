"""A bisection session through the real CLI: its arguments, its file, a process to signal."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

from helpers.worlds import SUBMODULE, World, snapshot

UPSTREAM = "upstream/main"


def session_path(world: World) -> Path:
    return world.superproject / ".git" / "bisectkit" / "session.json"


def run_argv(world: World, *, good: str | None = None, bad: str | None = None,
             submodule: str = SUBMODULE, build: str = "./build.sh",
             repro: tuple[str, ...] = ("./repro.sh",), extra: tuple[str, ...] = ()) -> list[str]:
    """``bisectkit run ...`` arguments, by default the working command of the world."""
    return [
        "run", "--submodule", submodule, "--upstream", UPSTREAM,
        "--good", world.sha(0) if good is None else good,
        "--bad", world.sha(300) if bad is None else bad,
        "--build", build, "--good-if", "device .* not found", *extra, "--", *repro,
    ]


def start_argv(world: World, *, good: str | None = None, bad: str | None = None,
               submodule: str = SUBMODULE) -> list[str]:
    """``git bisect-patched start ...`` arguments (bad first, then good)."""
    return ["start", "--submodule", submodule, "--upstream", UPSTREAM,
            world.sha(300) if bad is None else bad, world.sha(0) if good is None else good]


def write_script(path: Path, body: str, executable: bool = True) -> Path:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755 if executable else 0o644)
    return path


def assert_refused(world: World, proc: subprocess.CompletedProcess[str], before: dict[str, str],
                   *words: str) -> str:
    """Exit 2, exactly one stderr line naming the problem, nothing touched, no session."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    for word in words:
        assert word.lower() in line.lower(), (word, line)
    assert snapshot(world) == before
    assert not session_path(world).exists()
    return line


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def spawn(world: World, exe: str, *args: str) -> subprocess.Popen[str]:
    """Start a console script as a user would, in its own process group (like a shell job)."""
    path = shutil.which(exe)
    assert path is not None, exe
    return subprocess.Popen([path, *args], cwd=world.superproject, env=world.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def plain_git_bisect(world: World, tmp_path: Path, *marks: tuple[str, str]) -> Path:
    """A clone of upstream where plain ``git bisect`` made ``marks`` (bad 300, good 0)."""
    clone = tmp_path / "plain"
    world.git(tmp_path, "clone", "-q", "--no-checkout", str(world.upstream), str(clone))
    world.git(clone, "bisect", "start", "--no-checkout", world.sha(300), world.sha(0))
    for word, sha in marks:
        world.git(clone, "bisect", word, sha)
    return clone


def pty_run(world: World, width: int, *args: str, cwd: Path | None = None,
            timeout: float = 60) -> tuple[str, int | None]:
    """``bisectkit ARGS`` on a terminal ``width`` columns wide (``$COLUMNS`` too): all it
    drew, and its exit status."""
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    child = pexpect.spawn(argv[0], [*argv[1:], *args], cwd=str(cwd or world.superproject),
                          env=dict(world.env, COLUMNS=str(width)), encoding="utf-8",
                          dimensions=(40, width), timeout=timeout)
    out: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            out.append(child.read_nonblocking(65536, timeout=0.5))
        except pexpect.TIMEOUT:
            continue
        except pexpect.EOF:
            break
    child.close()
    return "".join(out), child.exitstatus
