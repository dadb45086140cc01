"""File names that are not UTF-8 (an old repository's Latin-1 ``café.c``), end to end.

The worlds are built with the git CLI and files named with raw bytes. A local patch
edits ``lib/caf\\xe9.c`` (the byte 0xE9, not UTF-8) and upstream rewrites another
line of it, so replaying the patch below that commit is a real 3-way content merge
of a file whose name libgit2's tree builder refuses. Every command must give the
right answer, restore everything byte for byte, and print the name with the byte
shown (``caf\\xe9.c``), never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot
from worldgen import (
    MERGE_BUG,
    MERGE_COMMITS,
    MERGE_EDIT,
    build_merge_world,
    hermetic_env,
)

from bisectkit.git.objects import edit_level

LATIN1 = b"lib/caf\xe9.c"
#: The name as Python (and pygit2) hold it: the byte as a surrogate escape.
NAME = os.fsdecode(LATIN1)
#: The name as bisectkit prints it.
SHOWN = "lib/caf\\xe9.c"
#: A submodule's path that is not UTF-8.
LATIN1_SUB = os.fsdecode(b"third_party/caf\xe9")
GOOD_IF = "device .* not found"
#: The integrate history: the superproject advances its pin to upstream commit k (with
#: the local patch replayed onto it) for each k.
ADVANCES = (0, 4, 8, 16, MERGE_COMMITS)

Copy = Callable[[Path], World]


def _with_integrate_history(w: World) -> World:
    """Superproject commits pinning the patch replayed onto each of ``ADVANCES`` (git's
    cherry-pick: a content merge below MERGE_EDIT), then the pin it had; named
    ``adv<k>`` in ``World.integrate``."""
    work, patch = w.root / "fork-work", w.stack[0]
    names: dict[str, str] = {}
    for k in ADVANCES:
        w.git(work, "checkout", "-q", "-B", f"integrate-{k}", w.sha(k))
        if k != MERGE_COMMITS:  # the patch's own parent: it is the patch
            w.git(work, "cherry-pick", patch)
        w.git(work, "push", "-q", str(w.fork), f"integrate-{k}")
        pin = w.git(work, "rev-parse", "HEAD")
        w.git(w.submodule, "fetch", "-q", "origin")
        w.git(w.superproject, "update-index", "--cacheinfo", f"160000,{pin},{SUBMODULE}")
        w.git(w.superproject, "commit", "-q", "-m", f"Advance LLVM to upstream commit {k}")
        names[f"adv{k}"] = w.git(w.superproject, "rev-parse", "HEAD")
    w.git(w.superproject, "update-index", "--cacheinfo", f"160000,{patch},{SUBMODULE}")
    w.git(w.superproject, "commit", "-q", "-m", "Back to the fork's main")
    return dataclasses.replace(w, integrate=names)


def _templates(tmp_path_factory: pytest.TempPathFactory, build: Callable[[Path], World]) -> Copy:
    template = build(tmp_path_factory.mktemp("latin1"))

    def copy(dest: Path) -> World:
        shutil.copytree(template.superproject, dest / "superproject", symlinks=True)
        return dataclasses.replace(template, root=dest, env=hermetic_env(dest / "home"),
                                   superproject=dest / "superproject")

    return copy


@pytest.fixture(scope="module")
def latin1_world(tmp_path_factory: pytest.TempPathFactory) -> Copy:
    return _templates(tmp_path_factory, lambda root: _with_integrate_history(
        build_merge_world(root, path=NAME)))


@pytest.fixture(scope="module")
def conflict_world(tmp_path_factory: pytest.TempPathFactory) -> Copy:
    return _templates(tmp_path_factory, lambda root: build_merge_world(root, path=NAME,
                                                                       our_line=0))


def _state(w: World) -> dict[str, str]:
    """``snapshot`` plus the Latin-1 file's bytes on disk."""
    return {**snapshot(w), "file": (w.submodule / os.fsdecode(LATIN1)).read_text(
        encoding="latin-1")}


def _run(w: World, *extra: str):
    return cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
               w.sha(0), "--bad", w.sha(MERGE_COMMITS), "--build", "./build.sh", "--good-if",
               GOOD_IF, *extra, "--", "./repro.sh")


def _show(w: World, commit: str) -> str:
    """The Latin-1 file in submodule commit ``commit``."""
    return w.git(w.submodule, "-c", "core.quotepath=false", "show",
                 f"{commit}:{os.fsdecode(LATIN1)}")


def test_run_replays_the_patch_onto_the_latin1_file(latin1_world: Copy, tmp_path: Path):
    w = latin1_world(tmp_path)
    before = _state(w)
    out = tmp_path / "r.json"
    r = _run(w, "--json", str(out), "--report", str(tmp_path / "r.md"))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(MERGE_BUG)} is the first bad commit" in r.stdout
    assert _state(w) == before
    steps = json.loads(out.read_text())["steps"]
    merged = [s for s in steps if w.shas.index(s["commit"]) < MERGE_EDIT]
    assert merged
    for step in merged:  # both sides' lines: a real 3-way content merge, under its name
        assert _show(w, step["patched"]).splitlines() == [
            "line 0", *(f"line {i}" for i in range(1, 9)), "our line 9"]
        ls = w.git(w.submodule, "ls-tree", "--name-only", step["patched"], "lib/")
        assert '"lib/caf\\351.c"' in ls.splitlines()  # the byte, as git quotes it


def test_manual_session_on_the_latin1_file(latin1_world: Copy, tmp_path: Path):
    w = latin1_world(tmp_path)
    before = _state(w)
    r = git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                w.sha(MERGE_COMMITS), w.sha(0))
    assert r.returncode == 0, r.stderr + r.stdout
    r = git_cli(w, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(MERGE_BUG)} is the first bad commit" in r.stdout
    r = git_cli(w, "reset")
    assert r.returncode == 0, r.stderr + r.stdout
    assert _state(w) == before


def test_integrate_moves_the_latin1_file(latin1_world: Copy, tmp_path: Path):
    w = latin1_world(tmp_path)
    before = _state(w)
    r = cli(w, "run", "--integrate", "--good", w.integrate["adv0"], "--bad",
            w.integrate[f"adv{MERGE_COMMITS}"], "--build", "./build.sh", "--good-if", GOOD_IF,
            "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv8']} is the first bad commit" in r.stdout
    assert _state(w) == before


def test_status_names_the_latin1_file(latin1_world: Copy, tmp_path: Path):
    # The fork's patch on an older upstream commit: upstream rewrote the file since
    # (MERGE_EDIT), so replaying the patch at upstream's head is a content merge.
    w = latin1_world(tmp_path)
    w.git(w.submodule, "checkout", "-q", "-b", "older", w.sha(MERGE_EDIT - 2))
    w.git(w.submodule, "cherry-pick", w.stack[0])
    r = cli(w, "status", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--",
            os.fsdecode(LATIN1))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"upstream commits since the merge-base: {MERGE_COMMITS - MERGE_EDIT + 2}, 1 " \
           f"touching {SHOWN}" in r.stdout
    assert f"{w.sha(MERGE_EDIT)[:12]} upstream commit {MERGE_EDIT}" in r.stdout
    assert "applied  [local] our line 9" in r.stdout


def test_a_conflict_in_the_latin1_file_is_a_skip_that_names_it(conflict_world: Copy,
                                                                tmp_path: Path):
    w = conflict_world(tmp_path)
    before = _state(w)
    report = tmp_path / "r.md"
    r = _run(w, "--report", str(report))
    # Every candidate below MERGE_EDIT conflicts: only skipped commits are left.
    assert r.returncode == 1, r.stderr + r.stdout
    assert "internal error" not in r.stderr
    # The step line's reason is cut to the width; the patch's line names the file whole.
    assert f"skip (conflict in {w.stack[0][:12]} (" in r.stdout
    assert f"conflict in {SHOWN}" in r.stdout
    assert f"): {SHOWN.replace(chr(92), chr(92) * 2)} |" in report.read_text(encoding="utf-8")
    assert _state(w) == before


def test_a_tree_with_a_latin1_name_is_written_as_git_writes_it(tmp_path: Path):
    """The byte-for-byte tree writer sorts and encodes entries as ``git mktree`` does."""
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    blob = repo.create_blob(b"x\n")
    sub = edit_level(repo, None, {"a": (blob, 0o100644)})
    names = {os.fsdecode(n): mode for n, mode in (
        (b"caf\xe9.c", 0o100644), (b"caf", 0o40000), (b"caf.c", 0o100755), (b"caf-x", 0o100644),
        (b"\xff", 0o120000), (b"Z", 0o100644))}
    tree = edit_level(repo, None, {n: (sub if m == 0o40000 else blob, m)
                                   for n, m in names.items()})
    listing = "".join(f"{m:06o} {'tree' if m == 0o40000 else 'blob'} "
                      f"{sub if m == 0o40000 else blob}\t{n}\n" for n, m in names.items())
    made = _mktree(tmp_path / "repo", listing)
    assert str(tree) == made
    # Then an edit: one entry replaced, one removed, through the same writer.
    base = repo.get(tree)
    assert isinstance(base, pygit2.Tree)
    edited = edit_level(repo, base, {NAME.split("/")[1]: None,
                                     os.fsdecode(b"\xff"): (blob, 0o100644)})
    written = repo.get(edited)
    assert isinstance(written, pygit2.Tree)
    assert sorted(str(e.name) for e in written) == sorted(
        n for n in names if n != NAME.split("/")[1])


def _mktree(repo: Path, listing: str) -> str:
    """``git mktree`` of ``listing`` (names as os.fsdecode holds them)."""
    proc = subprocess.run(["git", "mktree"], cwd=repo, input=os.fsencode(listing),
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


def test_a_latin1_word_in_the_repro_and_the_build_reaches_them_as_typed(world: World,
                                                                        tmp_path: Path):
    """The command line is bytes: a Latin-1 file name given to the repro and the build is
    the same bytes for them (it was exit 70, UnicodeEncodeError, at the first step)."""
    name = os.fsdecode(b"input-caf\xe9.mlir")
    (world.superproject / name).write_text("module {}\n", encoding="utf-8")
    check = tmp_path / "check.sh"
    check.write_text('#!/bin/sh\n[ -f "$1" ] || { echo "no file $1"; exit 200; }\n'
                     'exec ./repro.sh\n', encoding="utf-8")
    check.chmod(0o755)
    out = tmp_path / "r.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            world.sha(196), "--bad", world.sha(204), "--build", f"./build.sh && test -f {name}",
            "--good-if", GOOD_IF, "--json", str(out), "--", str(check), name)
    assert r.returncode == 0, r.stderr + r.stdout
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(200)
    assert all(s["verdict"] != "skip" for s in result["steps"]), result["steps"]


@pytest.fixture(scope="module")
def latin1_submodule(tmp_path_factory: pytest.TempPathFactory) -> Copy:
    """A superproject whose submodule lives at ``third_party/caf\\xe9``: 12 commits of
    ``lib`` (bug.txt says "miscompile" from commit 7), each pinned by a superproject
    commit ("advance to lib N"); the pin ends at commit 11."""
    def build(root: Path) -> World:
        env = hermetic_env(root / "home")

        def git(cwd: Path, *args: str) -> str:
            return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, text=True,
                                  errors="surrogateescape", capture_output=True).stdout.strip()
        lib, sp = root / "lib", root / "superproject"
        for repo in (lib, sp):
            repo.mkdir()
            git(repo, "init", "-q")
        shas = []
        for n in range(12):
            (lib / "bug.txt").write_text("miscompile\n" if n >= 7 else "ok\n")
            (lib / "f.txt").write_text(f"{n}\n")
            git(lib, "add", "-A")
            git(lib, "commit", "-qm", f"lib {n}")
            shas.append(git(lib, "rev-parse", "HEAD"))
        git(sp, "submodule", "add", "-q", str(lib), LATIN1_SUB)
        (sp / "repro.sh").write_bytes(b"#!/bin/sh\n! grep -q miscompile "
                                      b"'third_party/caf\xe9/bug.txt'\n")
        (sp / "repro.sh").chmod(0o755)
        git(sp, "add", "-A")
        pins = {}
        for n in range(12):
            git(sp / LATIN1_SUB, "checkout", "-q", shas[n])
            git(sp, "add", LATIN1_SUB)
            git(sp, "commit", "-qm", f"advance to lib {n}")
            pins[f"adv{n}"] = git(sp, "rev-parse", "HEAD")
        return World(root=root, env=env, upstream=lib, fork=lib, superproject=sp, shas=shas,
                     stack=[], integrate=pins)
    return _templates(tmp_path_factory, build)


def test_a_submodule_at_a_latin1_path_is_bisected_and_restored(latin1_submodule: Copy,
                                                               tmp_path: Path):
    """status, run --submodule and run --integrate (they were exit 70: libgit2's submodule
    lookup and config iteration refuse the name), the path shown with its byte."""
    w = latin1_submodule(tmp_path)
    before = snapshot_of(w)
    r = cli(w, "status")
    assert r.returncode == 0, r.stderr
    assert "submodule third_party/caf\\xe9" in r.stdout
    r = cli(w, "run", "--submodule", LATIN1_SUB, "--good", w.shas[0], "--bad", w.shas[11],
            "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert f"{w.shas[7]} is the first bad commit" in r.stdout
    assert snapshot_of(w) == before
    r = cli(w, "run", "--integrate", "--good", w.integrate["adv0"], "--bad",
            w.integrate["adv11"], "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert f"{w.integrate['adv7']} is the first bad commit" in r.stdout
    assert "restored third_party/caf\\xe9" in r.stdout
    assert snapshot_of(w) == before


def snapshot_of(w: World) -> tuple[str, str, str]:
    """The superproject's HEAD and status, and the submodule's HEAD."""
    return (w.git(w.superproject, "rev-parse", "HEAD"),
            w.git(w.superproject, "status", "--porcelain", "--ignored"),
            w.git(w.superproject / LATIN1_SUB, "rev-parse", "HEAD"))
