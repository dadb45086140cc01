"""Review of issue 14 (``bisectkit advance``): an apply stopped part way, and answers the
search must not get wrong. Real CLI, real git worlds (see tests/test_advance.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.advance import BASE, spec, with_smoke
from helpers.worlds import SUBMODULE, World, cli
from torture import write_shim


@pytest.fixture
def fresh(world_factory: Any, tmp_path: Path) -> Any:
    """A new copy of test_advance's world (under its own folder) each call."""
    made = iter(range(1000))

    def build(bug_at: int, **changes: Any) -> World:
        dest = tmp_path / f"world-{next(made)}"
        dest.mkdir()
        return with_smoke(world_factory(dest, spec(bug_at, **changes)))
    return build


def state(w: World) -> dict[str, str]:
    """The superproject's HEAD, branch and staged pin, the submodule's HEAD and branches."""
    sp, sub = w.superproject, w.submodule
    return {"head": w.git(sp, "rev-parse", "HEAD"),
            "branch": w.git(sp, "rev-parse", "--symbolic-full-name", "HEAD"),
            "staged": w.git(sp, "ls-files", "-s", SUBMODULE).split()[1],
            "sub_head": w.git(sub, "rev-parse", "HEAD"),
            "sub_ref": w.git(sub, "rev-parse", "--symbolic-full-name", "HEAD"),
            "sub_branches": w.git(sub, "for-each-ref", "--format=%(refname) %(objectname)",
                                  "refs/heads")}


def apply_cmd(tmp_path: Path, name: str) -> list[str]:
    exe = shutil.which("bisectkit")
    assert exe
    return [exe, "advance", "--build", "sh build.sh", "--apply", "--branch", "nx", "--json",
            str(tmp_path / f"{name}.json"), "--", "./smoke.sh"]


def run_shimmed(w: World, tmp_path: Path, name: str, n: int, mode: str,
                sig: int = signal.SIGINT) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    shim = write_shim(tmp_path / f"shim-{name}", n, mode, sig)
    env = dict(w.env, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(apply_cmd(tmp_path, name), cwd=w.superproject, env=env, text=True,
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    return r, (shim / "count.log").read_text(encoding="utf-8").splitlines()


def test_an_apply_stopped_while_it_writes_never_stages_a_revert_of_the_pin(
        fresh: Any, tmp_path: Path) -> None:
    w = fresh(bug_at=BASE + 3)
    before = state(w)
    # An undisturbed apply: its git commands, and the state it ends in.
    r, log = run_shimmed(w, tmp_path, "count", 0, "none")
    assert r.returncode == 0, r.stderr
    done = state(w)
    assert done["head"] != before["head"] and done["staged"] != before["staged"]
    assert done["sub_ref"] == "refs/heads/nx" and done["sub_head"] != before["sub_head"]
    first = next(i for i, line in enumerate(log, 1) if "refs/heads/nx " in line)
    writes = [i for i, line in enumerate(log, 1) if i >= first
              and line.split()[1] in ("update-ref", "update-index", "read-tree", "symbolic-ref")
              and "--refresh" not in line]
    # The branch, the index, HEAD; the submodule's files and index, then its HEAD.
    assert len(writes) == 5, log
    # After each write, and before the first and before the submodule's files (its
    # journaled move announced, nothing written yet): the states a kill can leave.
    for n, mode in [(n, "after") for n in writes] + [(writes[0], "before"),
                                                     (writes[3], "before")]:
        w = fresh(bug_at=BASE + 3)
        r, _ = run_shimmed(w, tmp_path, f"kill-{n}-{mode}", n, mode, signal.SIGKILL)
        assert r.returncode == -signal.SIGKILL, (n, mode, r.stderr)
        now = state(w)
        # HEAD never holds the new pin while the index stages the old one: the next
        # 'git commit' would revert the advance. The submodule's checkout comes last.
        if now["head"] != before["head"]:
            assert dict(now, sub_head="", sub_ref="") == dict(done, sub_head="", sub_ref=""), \
                (n, mode, now)
        else:
            assert now["staged"] in (before["staged"], done["staged"]), (n, mode, now)
        # The next bisectkit command finishes the apply (HEAD moved) or undoes it.
        r = subprocess.run(["git", "bisect-patched", "reset"], cwd=w.superproject,
                           env=w.env, text=True, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert state(w) == (done if now["head"] != before["head"] else before), \
            (n, mode, r.stdout, state(w))
        if now["head"] != before["head"]:
            assert w.git(w.superproject, "status", "--porcelain") == "", (n, mode)
    for n in (writes[0], writes[2], writes[3]):
        # Ctrl-C there: the apply is whole, and said (stdout, --json), or not begun.
        w = fresh(bug_at=BASE + 3)
        r, _ = run_shimmed(w, tmp_path, f"int-{n}", n, "signal", signal.SIGINT)
        assert state(w) in (before, done), n
        if state(w) == done:
            data = json.loads((tmp_path / f"int-{n}.json").read_text(encoding="utf-8"))
            assert data["applied"]["branch"] == "nx", n
            assert "applied: third_party/llvm-project branch nx" in r.stdout, n


def test_ctrl_c_while_the_search_restores_stops_the_apply(fresh: Any, tmp_path: Path) -> None:
    w = fresh(bug_at=BASE + 3)
    _, log = run_shimmed(w, tmp_path, "count", 0, "none")
    restore = next(i for i, line in enumerate(log, 1) if "read-tree --reset" in line)
    w = fresh(bug_at=BASE + 3)
    before = state(w)
    # Ctrl-C lands while the repositories are put back: nothing may be written after it.
    r, _ = run_shimmed(w, tmp_path, "int", restore, "signal", signal.SIGINT)
    assert r.returncode == 130, r.stdout + r.stderr
    assert "applied:" not in r.stdout
    assert state(w) == before


@pytest.mark.parametrize(("args", "message"), [
    (("--good", "HEAD~1"), "unrecognized arguments: --good"),  # not --good-if HEAD~1
    (("--bad", "main"), "unrecognized arguments: --bad"),  # not --bad-if main
    (("--to=",), "argument --to: empty"),
    (("--apply", "--branch="), "--branch needs a name"),
    (("--pathspec", "no/such/dir/"), "changes no/such/dir/ (--pathspec): nothing to test"),
])
def test_bad_input_is_refused_and_touches_nothing(fresh: Any, tmp_path: Path,
                                                  args: tuple[str, ...], message: str) -> None:
    w = fresh(bug_at=999)
    before = state(w)
    out = tmp_path / "out.json"
    r = cli(w, "advance", "--build", "sh build.sh", "--json", str(out), *args, "--",
            "./smoke.sh")
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "error" in r.stderr.strip().splitlines()[-1], r.stderr
    assert "up-to-date" not in r.stdout and not out.exists()
    assert state(w) == before
    assert not (w.superproject / ".git" / "bisectkit" / "verdicts.json").exists()


def test_a_record_outlived_by_the_users_commit_names_what_the_apply_left(
        fresh: Any, tmp_path: Path) -> None:
    w = fresh(bug_at=BASE + 3)
    _, log = run_shimmed(w, tmp_path, "count", 0, "none")
    branch_write = next(i for i, line in enumerate(log, 1) if "refs/heads/nx " in line)
    head_write = next(i for i, line in enumerate(log, 1)
                      if "advance" in line and " refs/heads/main " in line)
    # Killed once the branch exists, before the pin moved; the user then commits on the
    # old HEAD (without running bisectkit): the branch nx is the apply's leftover, and the
    # next command must say so, not "nothing to finish" (a later --apply --branch nx is
    # refused because of it).
    w = fresh(bug_at=BASE + 3)
    r, _ = run_shimmed(w, tmp_path, "kill-branch", branch_write, "after", signal.SIGKILL)
    assert r.returncode == -signal.SIGKILL, r.stderr
    w.git(w.superproject, "commit", "--allow-empty", "-qm", "user work")
    r = subprocess.run(["git", "bisect-patched", "reset"], cwd=w.superproject, env=w.env,
                       text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "left branch nx in third_party/llvm-project" in r.stdout, r.stdout
    assert "nothing to finish" not in r.stdout
    assert not (w.superproject / ".git" / "bisectkit" / "apply.json").exists()
    # Killed once HEAD moved (the apply is whole), then a commit on top: it had finished.
    w = fresh(bug_at=BASE + 3)
    r, _ = run_shimmed(w, tmp_path, "kill-head", head_write, "after", signal.SIGKILL)
    assert r.returncode == -signal.SIGKILL, r.stderr
    w.git(w.superproject, "commit", "--allow-empty", "-qm", "user work")
    r = subprocess.run(["git", "bisect-patched", "reset"], cwd=w.superproject, env=w.env,
                       text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "had finished" in r.stdout and "left branch" not in r.stdout, r.stdout
