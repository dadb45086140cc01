"""Sparse checkouts (cone and non-cone): nothing outside the patterns is dirty or written.

One world (scripts/worldgen.build_sparse_world) for the module: a submodule with
``lib``, ``llvm``, ``mlir`` and ``clang``, where the build and the repro read
only ``lib``; a patch stack whose first patch touches only ``mlir``; a
superproject whose history also rewrites ``docs/`` (left out when it is sparse).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot
from worldgen import SPARSE_BUG_AT, build_sparse_world, copy_world

from bisectkit.git.shapes.sparse import parse

GOOD_IF = "device .* not found"
OUT_OF_CONE = {"mlir", "clang"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_sparse_world(tmp_path_factory.mktemp("sparse-template"))


@pytest.fixture
def sw(template: World, tmp_path: Path) -> World:
    return copy_world(template, tmp_path)


def shape(w: World, repo: Path) -> tuple[str, str]:
    """The sparse patterns and config of ``repo``: unchanged by anything bisectkit does."""
    git_dir = Path(w.git(repo, "rev-parse", "--absolute-git-dir"))
    return ((git_dir / "info/sparse-checkout").read_text(),
            w.git(repo, "config", "--get-regexp", "core.sparse|index.sparse"))


def recording_build(tmp_path: Path) -> tuple[Path, Path]:
    """A build that logs what the work trees hold (outside them), then runs build.sh."""
    log = tmp_path / "seen.log"
    build = tmp_path / "build-rec.sh"
    build.write_text("#!/bin/sh\n"
                     f"echo \"$(ls -A {SUBMODULE} | tr '\\n' ' ')|$(ls -A | tr '\\n' ' ')\" "
                     f">> {log}\nexec ./build.sh\n")
    build.chmod(0o755)
    return build, log


def seen(log: Path) -> list[tuple[set[str], set[str]]]:
    """(submodule top level, superproject top level) at every build."""
    return [(set(sub.split()), set(top.split()))
            for sub, top in (line.split("|") for line in log.read_text().splitlines())]


def in_cone(path: str, dirs: set[str]) -> bool:
    return "/" not in path or path.split("/")[0] in dirs


def written_in_cone(w: World, repo: Path, old: str, new: str, dirs: set[str]) -> int:
    changed = w.git(repo, "diff", "--name-only", "--no-renames", old, new).split()
    return sum(1 for p in changed if in_cone(p, dirs))


def test_run_cone_mode_writes_only_the_cone_and_keys_the_cache_on_it(sw: World,
                                                                      tmp_path: Path):
    w = sw
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm")
    before, patterns = snapshot(w), shape(w, w.submodule)
    head = w.git(w.submodule, "rev-parse", "HEAD")
    build, log = recording_build(tmp_path)
    out = tmp_path / "r.json"
    argv = ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good", w.sha(0),
            "--bad", w.sha(56), "--build", str(build), "--good-if", GOOD_IF]
    r = cli(w, *argv, "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(SPARSE_BUG_AT)} is the first bad commit\n" in r.stdout
    assert snapshot(w) == before and shape(w, w.submodule) == patterns
    assert not OUT_OF_CONE & {p.name for p in w.submodule.iterdir()}
    steps = json.loads(out.read_text())["steps"]
    assert all(not OUT_OF_CONE & sub for sub, _ in seen(log)) and len(seen(log)) == len(steps)
    prev = head
    for step in steps:
        # The mlir-only patch applies in memory: the tested tree has it, the disk has not.
        assert [p["action"] for p in step["patches"]] == ["applied", "applied"]
        w.git(w.submodule, "cat-file", "-e", f"{step['patched']}:mlir/local/ours.cpp")
        assert step["files_written"] == written_in_cone(w, w.submodule, prev, step["patched"],
                                                        {"lib", "llvm"})
        prev = step["patched"]
    assert any(s["files_written"] < len(w.git(w.submodule, "diff", "--name-only", head,
                                              s["patched"]).split()) for s in steps[:1])

    # Same cone: every verdict is reused; another cone is another test.
    again = cli(w, *argv, "--", "./repro.sh")
    assert again.returncode == 0 and f"{len(steps)} cached" in again.stdout, again.stdout
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm", "clang")
    other = cli(w, *argv, "--", "./repro.sh")
    assert other.returncode == 0 and " 0 cached" in other.stdout, other.stdout
    assert "clang" in {p.name for p in w.submodule.iterdir()}
    assert "mlir" not in {p.name for p in w.submodule.iterdir()}


def test_git_bisect_patched_non_cone_counts_exactly_and_restores(sw: World, tmp_path: Path):
    w = sw
    w.git(w.submodule, "sparse-checkout", "set", "--no-cone", "/*", "!/mlir/", "!/clang/")
    before, patterns = snapshot(w), shape(w, w.submodule)
    build, log = recording_build(tmp_path)
    r = git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                w.sha(56), w.sha(30))
    assert r.returncode == 0, r.stderr
    # The first candidate differs from HEAD only in mlir/ and clang/: nothing is written.
    assert "0 files written" in r.stdout, r.stdout
    assert w.git(w.submodule, "status", "--porcelain") == ""
    out = tmp_path / "r.json"
    r = git_cli(w, "run", "--build", str(build), "--good-if", GOOD_IF, "--json", str(out),
                "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(SPARSE_BUG_AT)} is the first bad commit" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    prev = steps[0]["patched"]
    for step in steps[1:]:
        assert step["files_written"] == written_in_cone(w, w.submodule, prev, step["patched"],
                                                        {"lib", "llvm"})
        prev = step["patched"]
    assert all(not OUT_OF_CONE & sub for sub, _ in seen(log))
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before and shape(w, w.submodule) == patterns
    assert not OUT_OF_CONE & {p.name for p in w.submodule.iterdir()}


def test_integrate_with_a_sparse_submodule_and_superproject(sw: World, tmp_path: Path):
    w = sw
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm")
    w.git(w.superproject, "sparse-checkout", "set", "--cone", "third_party")
    assert not (w.superproject / "docs").exists()
    before = snapshot(w)
    patterns = (shape(w, w.submodule), shape(w, w.superproject))
    build, log = recording_build(tmp_path)
    out = tmp_path / "r.json"
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["final"], "--build", str(build), "--good-if", GOOD_IF,
            "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv5']} is the first bad commit" in r.stdout
    assert snapshot(w) == before
    assert (shape(w, w.submodule), shape(w, w.superproject)) == patterns
    for sub, top in seen(log):
        assert not OUT_OF_CONE & sub and "docs" not in top and "lib" in sub
    prev_sp = w.integrate["final"]
    prev_pin = w.git(w.superproject, "rev-parse", f"{prev_sp}:{SUBMODULE}")
    for step in json.loads(out.read_text())["steps"]:
        pin = w.git(w.superproject, "rev-parse", f"{step['commit']}:{SUBMODULE}")
        # Superproject: the pin (under third_party) counts, docs/notes.txt never does.
        expected = (written_in_cone(w, w.superproject, prev_sp, step["commit"],
                                    {"third_party"})
                    + written_in_cone(w, w.submodule, prev_pin, pin, {"lib", "llvm"}))
        assert step["files_written"] == expected
        prev_sp, prev_pin = step["commit"], pin


def test_advance_in_a_sparse_submodule(sw: World, tmp_path: Path):
    w = sw
    w.git(w.submodule, "checkout", "-q", "--detach", w.pins[2])  # upstream 16 + fixup: good
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm")
    # An untracked file where later candidates add a file git leaves out: git would adopt
    # it (skip-worktree cleared for a present file), so it is refused or set aside.
    mine = w.submodule / "mlir/lib/Noise/n5.cpp"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine\n")
    assert not w.git(w.submodule, "cat-file", "-t", f"{w.pins[2]}:mlir/lib/Noise").count("n5")
    before, patterns = snapshot(w), shape(w, w.submodule)
    build, log = recording_build(tmp_path)
    argv = ["advance", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--build",
            str(build), "--good-if", GOOD_IF]
    r = cli(w, *argv, "--", "./repro.sh")
    assert r.returncode == 2 and "untracked or ignored file at mlir/lib/Noise/n5.cpp" in r.stderr
    assert snapshot(w) == before
    r = cli(w, *argv, "--force-ignored", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(SPARSE_BUG_AT)} is the first bad commit" in r.stdout
    assert f"to {w.sha(SPARSE_BUG_AT - 1)[:12]}" in r.stdout
    assert all("clang" not in sub for sub, _ in seen(log))  # mlir: where mine sits
    assert snapshot(w) == before and shape(w, w.submodule) == patterns
    assert mine.read_text() == "mine\n"


def test_jobs_workspaces_keep_the_sparse_cone(sw: World, tmp_path: Path):
    w = sw
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm")
    log, build = tmp_path / "seen.log", tmp_path / "build-rec.sh"
    # One write per build (two run at once): a line whole, never two builds' halves.
    build.write_text(f"#!/bin/sh\necho \"$(ls -A {SUBMODULE} | tr '\\n' ' ')\" >> {log}\n"
                     "exec ./build.sh\n")
    build.chmod(0o755)
    before = snapshot(w)
    r = cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            w.sha(0), "--bad", w.sha(56), "--build", str(build), "--good-if", GOOD_IF,
            "--jobs", "2", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    seen = [set(line.split()) for line in log.read_text().splitlines()]
    assert len(seen) >= 4 and all(s - {".git"} == {"README", "lib", "llvm"} for s in seen), seen
    assert snapshot(w) == before


def test_status_reports_the_shape(sw: World):
    w = sw
    r = cli(w, "status", "--upstream", "upstream/main", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["sparse"] is None
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "llvm", "lib")
    r = cli(w, "status", "--upstream", "upstream/main", "--json")
    assert json.loads(r.stdout)["sparse"] == {"mode": "cone", "patterns": ["lib", "llvm"]}
    r = cli(w, "status", "--upstream", "upstream/main")
    assert ("shape: sparse checkout (cone: lib llvm); only those directories are written"
            in r.stdout), r.stdout


def test_sparse_index_is_refused_in_one_line_naming_the_fix(sw: World):
    w = sw
    w.git(w.submodule, "sparse-checkout", "init", "--cone", "--sparse-index")
    w.git(w.submodule, "sparse-checkout", "set", "lib", "llvm")
    before, patterns = snapshot(w), shape(w, w.submodule)
    r = cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            w.sha(0), "--bad", w.sha(56), "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 2, r.stderr
    fix = f"git -C {w.submodule} sparse-checkout init --cone --no-sparse-index"
    assert r.stderr.count("\n") == 1 and fix in r.stderr, r.stderr
    assert snapshot(w) == before and shape(w, w.submodule) == patterns
    w.git(w.submodule, *fix.split()[3:])  # the fix keeps the patterns
    assert shape(w, w.submodule)[0] == patterns[0]
    assert cli(w, "status", "--upstream", "upstream/main").returncode == 0


@pytest.mark.parametrize(("path", "covered"), [
    ("README", True), ("lib/bug.txt", True), ("llvm/CMakeLists.txt", True),
    ("llvm/include/llvm/api.h", True), ("llvm/lib/Noise/n0.cpp", False),
    ("llvm/lib/x", False), ("mlir/CMakeLists.txt", False), ("lib", True),
    ("a b*/c", True), ("a b*/d/e", True), ("libx/y", False),
])
def test_cone_covers_is_exact(path: str, covered: bool):
    text = "/*\n!/*/\n/a\\ b\\*/\n/lib/\n/llvm/\n!/llvm/*/\n/llvm/include/\n"
    s = parse(text, cone_config=True)
    assert s.cone and s.patterns == ("a b*", "lib", "llvm/include")
    assert s.covers(path) is covered


def test_non_cone_covers_is_conservative():
    s = parse("/*\n!/mlir/\n", cone_config=False)
    assert not s.cone and s.patterns == ("/*", "!/mlir/")
    assert s.covers("mlir/x.cpp") and s.covers("lib/x")
    # Configured as cone but not in cone form: git matches it as patterns, so do we.
    assert not parse("/lib/\n", cone_config=True).cone
