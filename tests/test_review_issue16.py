"""Adversarial review of issue 16 (partial, shallow, sparse): what broke, through the real CLI.

Each test is a defect found by trying the shapes as a user would: a typo in a
shallow clone offered (and with ``--deepen`` ran) a history fetch; ``--jobs``
wrote the files a sparse checkout leaves out into its workspaces; a ``tree:0``
partial clone died with an internal error; ``status`` of a shallow submodule
refused to report its shape.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, cli, snapshot
from worldgen import (
    build_sparse_world,
    build_world,
    copy_world,
    git,
    make_shallow_world,
)

GOOD_IF = "device .* not found"


def _bisect(w: World, good: str, bad: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
               good, "--bad", bad, "--build", "./build.sh", "--good-if", GOOD_IF, *extra, "--",
               "./repro.sh")


@pytest.mark.parametrize("deepen", [False, True])
def test_shallow_typo_is_an_unknown_revision_and_fetches_nothing(world: World, deepen: bool):
    """A ref name that names nothing cannot be behind a boundary: no fetch is offered, and
    ``--deepen`` does not unshallow llvm-project for a typo."""
    make_shallow_world(world, ["--depth", "10"], ["--depth=150"])
    shallow = world.superproject / ".git/modules" / SUBMODULE / "shallow"
    boundary, before = shallow.read_text(), snapshot(world)
    r = _bisect(world, "upstream/mian", world.sha(300), *(["--deepen"] if deepen else []))
    assert r.returncode == 2, r.stderr + r.stdout
    assert r.stderr.startswith("bisectkit: error: unknown revision 'upstream/mian' in ")
    assert "fetch" not in r.stderr and "deepened" not in r.stdout
    assert shallow.read_text() == boundary
    assert snapshot(world) == before
    # A walk off the boundary still gets the fetch that fixes it.
    r = _bisect(world, "upstream/main~399", world.sha(300))
    assert r.returncode == 2 and "is a shallow clone" in r.stderr


@pytest.fixture(scope="module")
def sparse_template(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_sparse_world(tmp_path_factory.mktemp("review-sparse"))


def test_jobs_workspaces_keep_the_sparse_cone(sparse_template: World, tmp_path: Path):
    w = copy_world(sparse_template, tmp_path)
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


@pytest.fixture(scope="module")
def tree0_template(tmp_path_factory: pytest.TempPathFactory) -> World:
    w = build_world(tmp_path_factory.mktemp("review-tree0"))
    for repo in (w.upstream, w.fork):
        git(w.env, repo, "config", "uploadpack.allowFilter", "true")
        git(w.env, repo, "config", "uploadpack.allowAnySHA1InWant", "true")
    sup = w.superproject
    shutil.rmtree(sup / ".git/modules" / SUBMODULE)
    shutil.rmtree(sup / SUBMODULE)
    git(w.env, sup, "config", f"submodule.{SUBMODULE}.url", f"file://{w.fork}")
    git(w.env, sup, "submodule", "update", "-q", "--init", "--filter=tree:0", SUBMODULE)
    git(w.env, w.submodule, "remote", "add", "upstream", f"file://{w.upstream}")
    git(w.env, w.submodule, "fetch", "-q", "--filter=tree:0", "upstream")
    return w


def test_tree0_partial_clone_is_one_line_whose_fix_works(tree0_template: World,
                                                         tmp_path: Path):
    w = copy_world(tree0_template, tmp_path)
    before = snapshot(w)
    r = _bisect(w, w.sha(0), w.sha(300))
    assert r.returncode == 2, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "partial clone without trees (--filter=tree:0" in lines[0]
    assert snapshot(w) == before
    for command in lines[0].split("; run: ", 1)[1].split(" && "):
        subprocess.run(shlex.split(command), cwd=w.superproject, env=w.env, check=True,
                       capture_output=True)
    r = _bisect(w, w.sha(0), w.sha(300))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(200)} is the first bad commit\n" in r.stdout
    assert snapshot(w) == before


def test_status_of_a_shallow_submodule_reports_the_shape(world: World):
    make_shallow_world(world, ["--depth", "10"], ["--depth=150"])
    r = cli(world, "status", "--upstream", "upstream/main")
    assert r.returncode == 0, r.stderr + r.stdout
    assert "shape: shallow" in r.stdout
    # What cannot be known is said, with the fetch that tells it.
    assert "stack: unknown: " in r.stdout and "fetch" in r.stdout, r.stdout
    data = json.loads(cli(world, "status", "--upstream", "upstream/main", "--json").stdout)
    assert data["shallow"]["boundary"] and "shallow clone" in data["unknown"]
