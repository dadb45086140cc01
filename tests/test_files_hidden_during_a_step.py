"""A step whose build hides files from git (sparse checkout, skip-worktree, assume-unchanged).

git status does not look at a file the sparse checkout leaves out, nor at one
marked skip-worktree or assume-unchanged: a build that runs ``git sparse-checkout
set`` or ``git update-index --skip-worktree`` and edits the file changes the tree
under test out of the status's sight. What a step's repositories hide is taken
when its build begins and must be the same after the build and after the repro:
otherwise the run stops (exit 3, one line), nothing recorded, everything
restored; the bad commit is never recorded good.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.tree_moves import assert_stopped, once, submodule_run
from helpers.worlds import SUBMODULE, World, git_cli, snapshot
from worldgen import hermetic_env

from bisectkit.git import files as gitfiles
from bisectkit.git.repo import Repo

SPARSE = f"git -C {SUBMODULE} sparse-checkout set --no-cone '/*' '!/lib/bug.txt'"


@pytest.mark.parametrize("phase", ["build", "repro"])
def test_a_step_that_changes_the_sparse_checkout_records_nothing(world: World, tmp_path: Path,
                                                                 phase: str) -> None:
    before = snapshot(world)
    command = once(tmp_path, SPARSE, f"./{phase}.sh")
    r, result = submodule_run(world, tmp_path, **{phase: str(command)})
    assert_stopped(r, result, SUBMODULE, f"after the {phase}")
    assert "its sparse checkout (core.sparseCheckout or the patterns) changed" in \
        r.stderr.splitlines()[-1]
    world.git(world.submodule, "sparse-checkout", "disable")
    assert snapshot(world) == before


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
@pytest.mark.parametrize("phase", ["build", "repro"])
def test_a_step_that_hides_an_edit_from_git_records_nothing(world: World, tmp_path: Path,
                                                            flag: str, phase: str) -> None:
    """The edit stays (git will not write over a file so marked, and it may be the user's):
    the line says how to let the restore finish."""
    before = snapshot(world)
    hide = f"git -C {SUBMODULE} update-index {flag} lib/bug.txt && " \
           f"echo ok > {SUBMODULE}/lib/bug.txt"
    r, result = submodule_run(world, tmp_path, **{phase: str(once(tmp_path, hide,
                                                                   f"./{phase}.sh"))})
    assert r.returncode == 4, r.stdout + r.stderr
    assert result["status"] == "aborted" and not result.get("steps"), result
    line = r.stderr.splitlines()[-1]
    fix = f"git -C {world.submodule} update-index --no{flag[1:]} -- lib/bug.txt"
    assert "lib/bug.txt" in line and "git status does not show" in line and fix in line, line
    world.git(world.submodule, *fix.split()[3:])
    world.git(world.submodule, "checkout", "--", "lib/bug.txt")  # not mine: dropped
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert snapshot(world) == before


@pytest.mark.parametrize("skip_hash", [False, True])
def test_a_flag_change_alone_is_seen_whatever_the_index_checksum(tmp_path: Path,
                                                                 skip_hash: bool) -> None:
    """The list of marked entries is reused while the index is the same content; marking
    a file rewrites the index with only a flag bit changed (same size), and with
    ``index.skipHash`` the index carries no checksum at all."""
    env = hermetic_env(tmp_path / "home")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path / "r"), *args], check=True, env=env,
                       capture_output=True)

    (tmp_path / "r").mkdir()
    git("init", "-q")
    if skip_hash:
        git("config", "index.skipHash", "true")
    (tmp_path / "r" / "a.txt").write_text("a\n")
    git("add", "a.txt")
    repo = Repo(tmp_path / "r")
    assert gitfiles.flagged(repo) == frozenset()
    size = (tmp_path / "r" / ".git" / "index").stat().st_size
    git("update-index", "--assume-unchanged", "a.txt")
    assert (tmp_path / "r" / ".git" / "index").stat().st_size == size
    assert gitfiles.flagged(repo) == {("h", "a.txt")}
    git("update-index", "--no-assume-unchanged", "a.txt")
    assert gitfiles.flagged(repo) == frozenset()


def test_a_file_marked_before_the_run_that_the_build_writes_records_nothing(
        world: World, tmp_path: Path) -> None:
    """A tracked file the user marked assume-unchanged (a local edit kept out of git
    status, a classic) is still part of the tree under test: the build writing it stops
    the step, and the file is left as the build wrote it (it is not bisectkit's)."""
    world.git(world.superproject, "update-index", "--assume-unchanged", "repro.sh")
    before = snapshot(world)
    build = once(tmp_path, "echo '# generated' | tee -a repro.sh", "./build.sh")
    r, result = submodule_run(world, tmp_path, build=str(build))
    line = assert_stopped(r, result, "the superproject", "after the build")
    assert "repro.sh changed, and it is marked skip-worktree or assume-unchanged" in line, line
    world.git(world.superproject, "checkout", "--", "repro.sh")
    assert snapshot(world) == before


def test_core_ignore_stat_neither_blinds_the_check_nor_breaks_a_checkout(
        world: World, tmp_path: Path) -> None:
    """With core.ignoreStat every file a checkout writes would be marked assume-unchanged
    (git status would never look at it again) and a later read-tree could refuse a file
    as "not uptodate": bisectkit's gits pin it off."""
    before = snapshot(world)
    config = Path(world.env["HOME"]) / ".gitconfig"
    original = config.read_text(encoding="utf-8")
    config.write_text(original + "[core]\n\tignoreStat = true\n", encoding="utf-8")
    try:
        r, result = submodule_run(world, tmp_path, name="plain")
        assert r.returncode == 0, r.stdout + r.stderr
        assert result["first_bad"] == world.sha(200), result
        assert snapshot(world) == before
        edit = once(tmp_path, f"echo changed | tee {SUBMODULE}/lib/bug.txt", "./build.sh")
        r, result = submodule_run(world, tmp_path, build=str(edit))
    finally:
        config.write_text(original, encoding="utf-8")
    # Stopped, nothing recorded; the edit is not bisectkit's, so the restore leaves it.
    assert r.returncode == 4, r.stdout + r.stderr
    assert f"{SUBMODULE} changed during step 1 (seen after the build: lib/bug.txt" in \
        flat(r.stdout + r.stderr), r.stdout + r.stderr
    assert result["status"] == "aborted" and not result.get("steps"), result
    world.git(world.submodule, "checkout", "--", "lib/bug.txt")
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before
