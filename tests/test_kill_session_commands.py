"""Kill torture of the session commands: the mark that completes a waiting ``start``,
``reset <commit>``, and a ``--all-parents`` run with a ``skip A..B`` (real CLI, real git).

Two ways to stop bisectkit at an exact point: the git shim of ``scripts/torture.py``
(at its Nth git command), and, for the moments between two of bisectkit's own state
files where no git command runs, a ``sitecustomize`` on ``PYTHONPATH`` that sends the
signal to the process right before or after the Nth call of chosen bisectkit functions.
After every stop: the state is one thing (still waiting, or a session), the same
command again works, and ``git bisect-patched reset`` puts everything back.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.histories import SMALL, check_script, side_history
from helpers.worlds import SUBMODULE, World
from torture import decorate, every, fingerprint, write_shim

STATE = Path(".git/bisectkit")
TARGET = ["--submodule", SUBMODULE, "--upstream", "upstream/main"]

#: Stops this bisectkit at the Nth call of the functions named in BK_KILL_FUNCS.
INJECTOR = '''
import os
if os.environ.get("BK_KILL_FUNCS"):
    import functools, importlib, sys
    _count = [0]
    _at, _mode = int(os.environ["BK_KILL_AT"]), os.environ["BK_KILL_MODE"]
    _sig = int(os.environ["BK_KILL_SIG"])

    def _wrap(fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            _count[0] += 1
            if _count[0] == _at and _mode == "before":
                os.kill(os.getpid(), _sig)
            result = fn(*a, **k)
            if _count[0] == _at and _mode == "after":
                os.kill(os.getpid(), _sig)
            return result
        return inner

    class _Finder:
        def find_spec(self, fullname, path=None, target=None):
            if fullname != "bisectkit.app":
                return None
            sys.meta_path.remove(self)
            import importlib.util
            spec = importlib.util.find_spec(fullname)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                for name in os.environ["BK_KILL_FUNCS"].split(","):
                    mod, _, attr = name.partition(":")
                    owner, _, meth = attr.rpartition(".")
                    target = getattr(importlib.import_module(mod), owner)
                    setattr(target, meth, _wrap(getattr(target, meth)))
            spec.loader.exec_module = exec_module
            return spec
    sys.meta_path.insert(0, _Finder())
'''

#: What the completing mark writes, in the order the fixed code calls them.
STATE_WRITES = ",".join(["bisectkit.store.session:SessionStore.save",
                         "bisectkit.store.session:SessionStore.delete_waiting",
                         "bisectkit.safety.journal:Journal.begin_session"])


def gbp(w: World, *args: str, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("git-bisect-patched")
    assert exe
    return subprocess.run([exe, *args], cwd=w.superproject, env={**w.env, **(env or {})},
                          text=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def shimmed(tmp_path: Path, n: int, mode: str, sig: int = signal.SIGINT) -> dict[str, str]:
    shim = write_shim(tmp_path / "shim", n, mode, sig)
    return {"PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}


def injected(tmp_path: Path, n: int, mode: str, sig: int) -> dict[str, str]:
    where = tmp_path / "inject"
    where.mkdir(exist_ok=True)
    (where / "sitecustomize.py").write_text(INJECTOR, encoding="utf-8")
    return {"PYTHONPATH": str(where), "BK_KILL_FUNCS": STATE_WRITES, "BK_KILL_AT": str(n),
            "BK_KILL_MODE": mode, "BK_KILL_SIG": str(int(sig))}


@pytest.fixture
def fresh(world_factory: Any, tmp_path: Path) -> Any:
    made = iter(range(1000))

    def build(**kw: Any) -> World:
        dest = tmp_path / f"world-{next(made)}"
        dest.mkdir()
        w: World = world_factory(dest, **kw)
        decorate(w)
        return w
    return build


def files_state(w: World) -> str:
    where = w.superproject / STATE
    waiting, session = (where / "waiting.json").exists(), (where / "session.json").exists()
    return "waiting" if waiting and not session else "session" if session else "neither"


@pytest.mark.parametrize(("n", "mode", "sig"), [
    (1, "after", signal.SIGKILL),   # after the first state write, whichever it is
    (2, "before", signal.SIGKILL),
    (3, "after", signal.SIGKILL),
    (1, "after", signal.SIGINT),    # Ctrl-C right as the mark is typed
])
def test_the_completing_mark_stopped_between_its_state_files_leaves_waiting_or_a_session(
        fresh: Any, tmp_path: Path, n: int, mode: str, sig: int) -> None:
    """The mark that completes the ends swaps waiting.json for a session: stopped anywhere
    in that swap it is still waiting or a session (never neither: the ends given are not
    lost), the same mark again starts the session, and reset restores everything."""
    w = fresh()
    before = fingerprint(w)
    assert gbp(w, "start", *TARGET).returncode == 0
    assert gbp(w, "bad").returncode == 0
    r = gbp(w, "good", w.sha(0), env=injected(tmp_path, n, mode, sig))
    assert r.returncode in (-signal.SIGKILL, 130), r.stdout + r.stderr
    assert files_state(w) in ("waiting", "session"), (n, mode, sig)
    status = gbp(w, "status")
    assert status.returncode == 0, status.stderr
    again = gbp(w, "good", w.sha(0))
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (w.superproject / STATE / "waiting.json").exists()
    assert "under test:" in gbp(w, "status").stdout
    assert gbp(w, "reset").returncode == 0
    assert fingerprint(w) == before


def test_the_completing_mark_killed_at_each_git_command(fresh: Any, tmp_path: Path) -> None:
    """Its git commands (the first checkout), one in five (each one with
    ``scripts/attacks.py --full``): a session every time; reset restores."""
    w = fresh()
    before = fingerprint(w)
    assert gbp(w, "start", *TARGET).returncode == 0
    assert gbp(w, "bad").returncode == 0
    saved = shutil.copytree(w.superproject, tmp_path / "saved", symlinks=True)
    count = gbp(w, "good", w.sha(0), env=shimmed(tmp_path, 0, "none"))
    assert count.returncode == 0
    total = int((tmp_path / "shim" / "count").read_text())
    assert total >= 3
    modes = ("after", "during", "before", "signal")
    for n in sorted({*range(1, total + 1, every(5)), total}):  # 5: prime to the 4 modes
        shutil.rmtree(w.superproject)
        shutil.copytree(saved, w.superproject, symlinks=True)
        gbp(w, "good", w.sha(0), env=shimmed(tmp_path, n, modes[n % len(modes)]))
        assert files_state(w) in ("waiting", "session"), n
        assert gbp(w, "status").returncode == 0, n
        assert gbp(w, "reset").returncode == 0, n
        assert fingerprint(w) == before, n


def test_reset_to_a_commit_killed_anywhere_keeps_the_users_branches(
        fresh: Any, tmp_path: Path) -> None:
    """``reset side`` killed at each git command (restore, then the checkout; one in five,
    each one with ``scripts/attacks.py --full``): the branches
    are never touched, and ``reset side`` again ends on side with everything restored (or,
    killed once the session was over, says there is nothing to end)."""
    w = fresh(integrate=True)
    sp = w.superproject
    w.git(sp, "checkout", "-q", "-b", "side")
    (sp / "side.txt").write_text("side\n", encoding="utf-8")
    w.git(sp, "add", "side.txt")
    w.git(sp, "commit", "-q", "-m", "side commit")
    w.git(sp, "checkout", "-q", "main")

    def heads() -> str:
        return w.git(sp, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")

    branches = heads()
    before = fingerprint(w)
    start = ["start", "--integrate", "--submodule", SUBMODULE, w.integrate["adv12"],
             w.integrate["init"]]
    assert gbp(w, *start).returncode == 0
    assert gbp(w, "reset", "side", env=shimmed(tmp_path, 0, "none")).returncode == 0
    total = int((tmp_path / "shim" / "count").read_text())
    on_side = fingerprint(w)
    assert on_side["super branch"] == "refs/heads/side"
    modes = ("after", "during", "before", "signal")
    for n in sorted({*range(1, total + 1, every(5)), total}):  # 5: prime to the 4 modes
        w.git(sp, "checkout", "-q", "main")
        assert fingerprint(w) == before
        assert gbp(w, *start).returncode == 0
        mode = modes[n % len(modes)]
        gbp(w, "reset", "side", env=shimmed(tmp_path, n, mode, signal.SIGTERM))
        assert heads() == branches, (n, mode)
        again = gbp(w, "reset", "side")
        assert again.returncode == 0, (n, mode, again.stderr)
        now = fingerprint(w)
        if "no bisection to end" in again.stdout:  # killed after its restore
            assert now in (before, on_side), (n, mode)
        else:
            assert now == on_side, (n, mode)
        assert heads() == branches
        assert files_state(w) == "neither" and not (sp / STATE / "journal").exists()


def test_all_parents_run_with_a_skip_range_killed_then_continued(
        fresh: Any, tmp_path: Path) -> None:
    """A manual ``--all-parents`` session (descends into a merge) with ``skip A..B``, killed
    at every 17th git command (each one with ``scripts/attacks.py --full``); the same commands
    again (no reset) give the same answer, and
    reset restores everything."""
    w = fresh(spec=SMALL)
    c = side_history(w, w.superproject, bug_on="s2")
    check = check_script(w)
    before = fingerprint(w)
    cmds = [["start", "--integrate", "--all-parents", c["c3"], c["base"]],
            ["skip", f"{c['base']}..{c['c1']}"], ["run", check]]
    saved = shutil.copytree(w.superproject, tmp_path / "saved", symlinks=True)
    env = shimmed(tmp_path, 0, "none")
    for args in cmds:
        r = gbp(w, *args, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    answer = f"{c['s2']} is the first bad commit"
    assert answer in r.stdout.splitlines()
    total = int((tmp_path / "shim" / "count").read_text())
    modes = ("after", "during", "before", "signal")
    for n in range(1, total + 1, every(17)):  # 17: prime to the 4 modes
        shutil.rmtree(w.superproject)
        shutil.copytree(saved, w.superproject, symlinks=True)
        env = shimmed(tmp_path, n, modes[n % 4], signal.SIGQUIT)
        stopped = next((i for i, args in enumerate(cmds) if gbp(w, *args, env=env).returncode),
                       None)
        assert stopped is not None, n
        for args in cmds[stopped:]:
            r = gbp(w, *args)
            if args[0] == "start" and "already in progress" in r.stderr:
                continue  # the session had been saved before the kill
            assert r.returncode == 0, (n, args, r.stdout + r.stderr)
        assert answer in r.stdout.splitlines(), (n, r.stdout)
        assert gbp(w, "reset").returncode == 0
        assert fingerprint(w) == before, n
