"""What ``start`` calls uncommitted changes, through the real CLI on real worlds.

A checkout would carry a local edit into every step, so ``start`` refuses (exit 2,
nothing touched) a superproject or submodule whose index or tracked files differ from
HEAD: staged or not, deletions, type and mode changes, edits git can only see by
content (racily clean files). It accepts what git itself leaves alone: untracked files,
files marked assume-unchanged or skip-worktree, files a sparse checkout leaves out,
a file whose stat data changed but whose content did not, and, in the superproject, the
submodules' checkouts (their own check covers their files). Which of git's or libgit2's
answers counts is pinned here whatever the implementation (git status, libgit2's status).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.sessions import assert_refused, start_argv
from helpers.worlds import SUBMODULE, World, git_cli, snapshot


def _same_size_edit_in_the_index_second(world: World) -> None:
    """An edit of the same size whose mtime is the index's: only its content tells."""
    f = world.submodule / "README"
    f.write_text(f.read_text(encoding="utf-8").upper(), encoding="utf-8")
    index = Path(world.git(world.submodule, "rev-parse", "--git-path", "index"))
    if not index.is_absolute():
        index = world.submodule / index
    stamp = index.stat().st_mtime_ns
    os.utime(f, ns=(stamp, stamp))


def _staged_then_restored(world: World) -> None:
    """The index differs from HEAD, the file does not."""
    f = world.submodule / "README"
    before = f.read_bytes()
    f.write_text("x\n")
    world.git(world.submodule, "add", "README")
    f.write_bytes(before)


def _typechange(world: World) -> None:
    (world.submodule / "README").unlink()
    (world.submodule / "README").symlink_to("lib/local.txt")


REFUSED: dict[str, tuple[Callable[[World], object], str]] = {
    "unstaged edit": (lambda w: (w.submodule / "README").write_text("x\n"), "README"),
    "staged edit": (lambda w: ((w.submodule / "README").write_text("x\n"),
                               w.git(w.submodule, "add", "README")), "README"),
    "staged, the work tree back at HEAD": (_staged_then_restored, "README"),
    "deleted": (lambda w: (w.submodule / "README").unlink(), "README"),
    "deletion staged": (lambda w: w.git(w.submodule, "rm", "-q", "--cached", "README"), "README"),
    "new file staged": (lambda w: ((w.submodule / "new.txt").write_text("n\n"),
                                   w.git(w.submodule, "add", "new.txt")), "new.txt"),
    "file became a symlink": (_typechange, "README"),
    "made executable": (lambda w: os.chmod(w.submodule / "README", 0o755), "README"),
    "racily clean edit": (_same_size_edit_in_the_index_second, "README"),
    "superproject file deleted": (lambda w: (w.superproject / "build.sh").unlink(), "build.sh"),
    "superproject edit staged": (
        lambda w: ((w.superproject / "build.sh").write_text("#!/bin/sh\n"),
                   w.git(w.superproject, "add", "build.sh")), "build.sh"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_start_refuses_uncommitted_changes(world: World, case: str) -> None:
    change, path = REFUSED[case]
    change(world)
    before = snapshot(world)
    proc = git_cli(world, *start_argv(world))
    line = assert_refused(world, proc, before, "uncommitted", path)
    where = "superproject" if case.startswith("superproject") else f"submodule {SUBMODULE}"
    assert f"error: {where} has uncommitted changes ({path} in " in line, line


def _eol_attribute_on_a_crlf_file(world: World) -> None:
    """A CRLF file committed, then ``text eol=lf`` set: git status calls it modified while
    its index entry is racily clean (for good: git smudges it), libgit2 does not; its bytes
    are its checkout, nothing is lost."""
    sp = world.superproject
    (sp / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    world.git(sp, "add", "dos.txt")
    world.git(sp, "commit", "-qm", "a CRLF file")
    (sp / ".git" / "info" / "attributes").write_text("dos.txt text eol=lf\n")


def _sparse(world: World) -> None:
    world.git(world.submodule, "sparse-checkout", "set", "lib")


def _skip_worktree_deleted(w: World) -> None:
    w.git(w.submodule, "update-index", "--skip-worktree", "README")
    (w.submodule / "README").unlink()


ACCEPTED: dict[str, Callable[[World], object]] = {
    "untracked files": lambda w: (w.submodule / "scratch.txt").write_text("s\n"),
    "stat data changed, content not": lambda w: os.utime(w.submodule / "README", (5, 5)),
    "assume-unchanged file edited": lambda w: (
        w.git(w.submodule, "update-index", "--assume-unchanged", "README"),
        (w.submodule / "README").write_text("x\n")),
    "skip-worktree file deleted": _skip_worktree_deleted,
    "skip-worktree file staged": lambda w: (
        (w.submodule / "README").write_text("x\n"), w.git(w.submodule, "add", "README"),
        w.git(w.submodule, "update-index", "--skip-worktree", "README")),
    "sparse checkout": _sparse,
    "submodule gitlink staged in the superproject": lambda w: (
        w.git(w.submodule, "checkout", "-q", "--detach", "HEAD~1"),
        w.git(w.superproject, "add", SUBMODULE),
        w.git(w.submodule, "checkout", "-q", "-")),
    "CRLF file under eol=lf, racily clean": _eol_attribute_on_a_crlf_file,
}


@pytest.mark.parametrize("case", ACCEPTED)
def test_start_accepts_what_git_leaves_alone(world: World, case: str) -> None:
    ACCEPTED[case](world)
    proc = git_cli(world, *start_argv(world))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)


def test_the_superproject_check_does_not_read_the_submodules_files(world: World,
                                                                   tmp_path: Path) -> None:
    """One ``git status`` per repository; the superproject's reads each submodule's HEAD
    only (``--ignore-submodules=dirty``): with 150,000 files in the submodule, looking
    into them from the superproject doubled the check's cost."""
    trace = tmp_path / "trace"
    env = dict(world.env, GIT_TRACE=str(trace))
    proc = subprocess.run(["git", "bisect-patched", *start_argv(world)], cwd=world.superproject,
                          env=env, text=True, capture_output=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    checks = [line for line in trace.read_text(errors="replace").splitlines()
              if "built-in: git" in line and " status " in line and "--untracked-files=no" in line]
    assert len([c for c in checks if "--ignore-submodules=dirty" in c]) == 1, checks
    assert len([c for c in checks if "--ignore-submodules=none" in c]) == 1, checks
