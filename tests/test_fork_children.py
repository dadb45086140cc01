"""What bisectkit's forked children inherit: never the run lock, never its signal handlers.

pexpect forks bisectkit (worker threads and all) and the child runs Python until it
execs the build or the repro. Each test runs a small real bisectkit process (a script
in a subprocess, so that its fork hooks stay out of pytest's process) and looks at
what that child did or kept.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bisectkit.safety.lock import LockHeld, RunLock

STOP_BITS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}


#: The scripts start as from an interactive shell, whatever ran pytest (nohup, a
#: background job: those ignore some stop signals, and bisectkit keeps that).
PROLOGUE = """\
import signal as _signal
for _s in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT):
    _signal.signal(_s, _signal.SIG_DFL)
_signal.pthread_sigmask(_signal.SIG_SETMASK, [])
"""


def _script(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(PROLOGUE + textwrap.dedent(body), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BISECTKIT_")}
    return subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, env=env,
                          text=True, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


def _gone(pid: int) -> bool:
    """The process ended (a zombie nobody reaps counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.parametrize("survives", [False, True], ids=["plain", "survives"])
def test_a_child_caught_between_fork_and_exec_by_a_kill_frees_the_lock(
        tmp_path: Path, survives: bool) -> None:
    # The run lock is held and the stop signals are bisectkit's; a worker thread starts a
    # build; bisectkit is SIGKILLed while that child is still in ptyprocess's Python
    # (held there: the window is microseconds wide in a real run). The pty's hang-up
    # must end the child, and the superproject must not stay locked by it. A child that
    # survives the hang-up anyway (it ignores SIGHUP itself) must not hold the lock either.
    lock, pidfile = tmp_path / "run.lock", tmp_path / "child.pid"
    proc = _script(tmp_path, """
        import os, signal, sys, time
        from concurrent.futures import ThreadPoolExecutor
        from pathlib import Path
        import ptyprocess.ptyprocess as pp
        from bisectkit.execute import runner
        from bisectkit.safety import signals
        from bisectkit.safety.lock import RunLock

        lock, pidfile = Path(sys.argv[1]), Path(sys.argv[2])
        winsize = pp._setwinsize

        def held_in_child(*args):  # ptyprocess's first step in the child, before its exec
            pidfile.with_suffix(".tmp").write_text(str(os.getpid()))
            pidfile.with_suffix(".tmp").replace(pidfile)  # whole, or not there
            if sys.argv[3] == "survives":
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
            time.sleep(30)  # held here, inside ptyprocess's set-up, until the test ends it
            return winsize(*args)

        pp._setwinsize = held_in_child
        with signals.as_interrupt():
            RunLock(lock).acquire("test")
            # A live pool's worker thread, as --jobs runs steps: one that survives an
            # exception waits on for the next step (a plain thread would just end).
            pool = ThreadPoolExecutor(1)
            pool.submit(runner.run, ["true"], cwd=".", env=dict(os.environ),
                        echo=open(os.devnull, "w"))
            deadline = time.monotonic() + 30
            while not pidfile.exists():
                if time.monotonic() > deadline:
                    sys.exit("the pty child wrote no pid file in 30 s")
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGKILL)
        """, str(lock), str(pidfile), "survives" if survives else "plain")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    child = int(pidfile.read_text())
    deadline = time.monotonic() + (0.5 if survives else 10)
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = not _gone(child)
    try:
        RunLock(lock).acquire("again").release()
    except LockHeld as held:
        raise AssertionError(f"the lock outlived the killed bisectkit: {held}") from None
    finally:
        if alive:
            os.kill(child, signal.SIGKILL)
    assert alive == survives, "the orphaned child lived on after bisectkit was killed"


def test_builds_start_with_the_stop_signals_plain(tmp_path: Path) -> None:
    # A build started while bisectkit holds or ignores the stop signals (around a change
    # that must not tear) must not inherit that: both survive exec, and a build that
    # ignores SIGTERM or never sees SIGINT cannot be stopped by the user. Nor one of a
    # bisectkit started under nohup, or as a script's background job (SIGHUP, or SIGINT
    # and SIGQUIT, ignored): killed, that bisectkit must take its builds with it (the
    # pty's hang-up), or they go on writing into the tree that reset restored.
    proc = _script(tmp_path, """
        import os, signal, sys
        from bisectkit.execute import runner
        from bisectkit.safety import signals

        def show():
            out = runner.run(["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"], cwd=".",
                             env=dict(os.environ), echo=open(os.devnull, "w"))
            print(out.output.replace("\\n", " "))

        for s in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
            signal.signal(s, signal.SIG_IGN)
        with signals.as_interrupt():
            show()
            with signals.ignored():
                show()
            with signals.held():
                show()
        """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stdout
    for line in lines:
        fields = dict(re.findall(r"(Sig\w+):\s*([0-9a-f]+)", line))
        for name in ("SigBlk", "SigIgn"):
            mask = int(fields[name], 16)
            assert not [s for s in STOP_BITS if mask >> (s - 1) & 1], f"{name} in: {line}"


def test_a_stop_signal_that_reaches_the_child_before_its_hook_ends_it(tmp_path: Path) -> None:
    # A signal that lands in the child before bisectkit's fork hook has run (CPython
    # has cleared the parent's pending ones by then) must meet the plain handlers,
    # not bisectkit's: held across the fork, it ends the child rather than being
    # raised into bisectkit's code there. The hook registered first sends it from C
    # (ctypes' raise: no Python frame, so nothing handles it before bisectkit's hook).
    proc = _script(tmp_path, """
        import ctypes, functools, os, signal
        from bisectkit.execute import runner
        from bisectkit.safety import signals

        os.register_at_fork(after_in_child=functools.partial(
            getattr(ctypes.CDLL(None), "raise"), int(signal.SIGTERM)))
        with signals.as_interrupt():
            out = runner.run(["true"], cwd=".", env=dict(os.environ),
                             echo=open(os.devnull, "w"))
        print(f"exit {out.exit_status} signal {out.signal}")
        """)
    expected = f"exit None signal {int(signal.SIGTERM)}"
    assert proc.stdout.strip() == expected, proc.stdout + proc.stderr


def test_an_error_in_the_forked_child_never_runs_on_as_a_second_bisectkit(tmp_path: Path) -> None:
    # The pty child runs Python between its fork and its exec. A directory it cannot
    # enter is raised in bisectkit as an abort with the reason, as is a command that is
    # no longer executable; anything else raised there kills that copy (a signal: never
    # read as the command's exit status). Either way exactly one process goes on.
    proc = _script(tmp_path, """
        import os, sys
        import ptyprocess.ptyprocess as pp
        from bisectkit.execute import runner
        from bisectkit.errors import Aborted

        def run(cwd, argv=("true",)):
            try:
                out = runner.run(list(argv), cwd=cwd, env=dict(os.environ),
                                 echo=open(os.devnull, "w"))
                print(f"pid {os.getpid()}: exit {out.exit_status} signal {out.signal}")
            except Aborted as stop:
                print(f"pid {os.getpid()}: {stop}")

        run(os.path.join(os.getcwd(), "gone"))
        open("repro.sh", "w").close()  # not executable (any more)
        run(".", [os.path.abspath("repro.sh")])

        main, winsize = os.getpid(), pp._setwinsize

        def broken(*args):  # the parent calls it too, after the fork
            if os.getpid() != main:
                raise RuntimeError("ptyprocess failed in the child")
            return winsize(*args)

        pp._setwinsize = broken
        run(".")
        """)
    lines = [line.split(": ", 1)[1] for line in proc.stdout.splitlines()
             if line.startswith("pid ")]
    assert lines == [
        f"cannot run true: cannot enter its working directory {tmp_path / 'gone'}: "
        "No such file or directory",
        f"cannot run {tmp_path / 'repro.sh'}: The command was not found or was not "
        f"executable: {tmp_path / 'repro.sh'}.",
        f"exit None signal {int(signal.SIGKILL)}"], proc.stdout + proc.stderr
