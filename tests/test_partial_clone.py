"""Partial clones (``--filter=blob:none``, origin and upstream both promisors), end to end.

Each world's submodule is a real partial clone served by ``file://`` remotes with
``uploadpack.allowFilter``: bisectkit must fetch the blobs it reads (patch ids,
content merges, checkouts) in batches, say what it fetched, give the right
answer and restore everything; an unreachable promisor is one line, exit 2.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot
from worldgen import (
    MERGE_BUG,
    MERGE_COMMITS,
    MERGE_EDIT,
    build_integrate_world,
    build_merge_world,
    build_world,
    copy_world,
    git,
    hermetic_env,
    make_partial,
)

GOOD_IF = "device .* not found"
FETCHED = re.compile(r"fetched (\d+) objects? \(\d+(?:\.\d)? (?:B|KiB|MiB)\) in \d+ ms")

Copy = Callable[[Path], World]


def _templates(tmp_path_factory: pytest.TempPathFactory, build: Callable[[Path], World]) -> Copy:
    template = build(tmp_path_factory.mktemp("partial"))

    def copy(dest: Path) -> World:
        # Only the superproject (the submodule's git dir included) changes; the
        # promisor remotes (fork, upstream) are shared and only read.
        shutil.copytree(template.superproject, dest / "superproject", symlinks=True)
        return dataclasses.replace(template, root=dest, env=hermetic_env(dest / "home"),
                                   superproject=dest / "superproject")

    return copy


@pytest.fixture(scope="module")
def partial_world(tmp_path_factory: pytest.TempPathFactory) -> Copy:
    return _templates(tmp_path_factory, lambda root: make_partial(build_world(root)))


def _missing_blobs(w: World) -> int:
    out = w.git(w.submodule, "rev-list", "--objects", "--all", "--missing=print")
    return sum(1 for line in out.splitlines() if line.startswith("?"))


def _run(w: World, good: str, bad: str, *extra: str):
    return cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
               good, "--bad", bad, "--build", "./build.sh", "--good-if", GOOD_IF, *extra, "--",
               "./repro.sh")


def test_run_fetches_per_step_reports_it_and_restores(partial_world: Copy, tmp_path: Path):
    w = partial_world(tmp_path)
    assert w.git(w.submodule, "config", "remote.upstream.promisor") == "true"
    missing = _missing_blobs(w)
    assert missing > 100  # a real partial clone: most blobs are not here
    before = snapshot(w)
    out = tmp_path / "r.json"
    r = _run(w, w.sha(0), w.sha(300), "--json", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(200)} is the first bad commit\n" in r.stdout
    assert snapshot(w) == before
    text = " ".join(r.stdout.split())
    assert re.search(r"patch-stack analysis: " + FETCHED.pattern, text)
    steps = json.loads(out.read_text())["steps"]
    fetched = [s["fetched"] for s in steps if "fetched" in s]
    assert fetched and fetched[0]["objects"] > 0 and fetched[0]["bytes"] > 0
    # Only the blobs of the paths that differ are fetched: a handful per step.
    assert all(0 < f["objects"] <= 2 * 21 for f in fetched)
    shown = [int(n) for n in FETCHED.findall(text)]
    assert sum(f["objects"] for f in fetched) in shown  # the summary line's total
    assert 0 < missing - _missing_blobs(w) < missing / 2


def test_full_clone_prints_nothing_about_fetching(world: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = _run(world, world.sha(150), world.sha(250), "--json", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "fetched" not in r.stdout
    assert all("fetched" not in s for s in json.loads(out.read_text())["steps"])


def test_git_bisect_patched_start_then_run(partial_world: Copy, tmp_path: Path):
    w = partial_world(tmp_path)
    before = snapshot(w)
    r = git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                w.sha(300), w.sha(0))
    assert r.returncode == 0, r.stderr
    assert "patch-stack analysis: fetched" in r.stdout
    # start had git write a commit-graph (it reads commits only): the repository is whole
    # by git's own checks, which fetch nothing.
    for check in (["commit-graph", "verify"], ["fsck", "--connectivity-only"]):
        assert subprocess.run(["git", *check], cwd=w.submodule, env=w.env,
                              capture_output=True).returncode == 0, check
    assert (w.superproject / ".git/modules" / SUBMODULE / "objects/info/commit-graph").is_file()
    r = git_cli(w, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(200)} is the first bad commit" in r.stdout
    assert FETCHED.search(" ".join(r.stdout.split()))
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before
    r = cli(w, "status", "--upstream", "upstream/main", "--json")
    assert json.loads(r.stdout)["partial"]["shape"] == "blob:none from origin, upstream"
    r = cli(w, "status", "--upstream", "upstream/main")
    assert "shape: partial clone (blob:none from origin, upstream)" in r.stdout


def _cut_off(w: World, tmp_path: Path) -> str:
    """Point both promisor remotes at a folder that is gone (as when the upstream moved);
    the template's remotes are shared, so copies are used. The dead URL."""
    gone = tmp_path / "moved-away"
    shutil.copytree(w.fork, gone)
    for remote in ("origin", "upstream"):
        w.git(w.submodule, "remote", "set-url", remote, f"file://{gone}")
    shutil.rmtree(gone)
    return f"file://{gone}"


def _one_error(r) -> str:
    assert r.returncode == 2, r.stderr + r.stdout
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if " error: " in line]
    assert len(errors) == 1, r.stderr
    assert re.search(r"cannot fetch object [0-9a-f]{40} ", errors[0])
    return errors[0]


def test_unreachable_promisor_is_one_line_and_restores(partial_world: Copy, tmp_path: Path):
    w = partial_world(tmp_path)
    before = snapshot(w)
    url = _cut_off(w, tmp_path)
    line = _one_error(_run(w, w.sha(0), w.sha(300)))  # the patch-stack analysis needs blobs
    assert f"origin ({url})" in line and f"upstream ({url})" in line
    assert snapshot(w) == before

    # Mid-bisection: the session is kept at the step it had, and reset restores all.
    w = partial_world(tmp_path / "second")
    before = snapshot(w)
    r = git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                w.sha(300), w.sha(0))
    assert r.returncode == 0, r.stderr
    url = _cut_off(w, tmp_path / "second")
    r = git_cli(w, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert f"origin ({url})" in _one_error(r)
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before


def test_content_merge_in_a_partial_clone(tmp_path_factory: pytest.TempPathFactory,
                                          tmp_path: Path):
    w = _templates(tmp_path_factory, lambda root: make_partial(build_merge_world(root)))(
        tmp_path)
    before = snapshot(w)
    out = tmp_path / "r.json"
    r = _run(w, w.sha(0), w.sha(MERGE_COMMITS), "--json", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(MERGE_BUG)} is the first bad commit" in r.stdout
    assert snapshot(w) == before
    merged = [s for s in json.loads(out.read_text())["steps"]
              if w.shas.index(s["commit"]) < MERGE_EDIT]
    assert merged
    for step in merged:  # both sides' lines: a real 3-way content merge
        text = w.git(w.submodule, "show", f"{step['patched']}:lib/multi.txt")
        assert text.startswith("line 0\n") and text.endswith("our line 9")


def test_integrate_on_a_partial_submodule(tmp_path_factory: pytest.TempPathFactory,
                                          tmp_path: Path):
    w = _templates(tmp_path_factory,
                   lambda root: make_partial(build_integrate_world(root)))(tmp_path)
    before = snapshot(w)
    out = tmp_path / "r.json"
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["adv12"], "--build", "./build.sh", "--good-if", GOOD_IF, "--json",
            str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv8']} is the first bad commit\n" in r.stdout
    assert snapshot(w) == before
    assert any(s.get("fetched", {}).get("objects") for s in json.loads(out.read_text())["steps"])


def test_jobs_workspaces_get_the_blobs(partial_world: Copy, tmp_path: Path):
    w = partial_world(tmp_path)
    before = snapshot(w)
    out = tmp_path / "r.json"
    r = _run(w, w.sha(150), w.sha(250), "--jobs", "2", "--json", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(200)} is the first bad commit" in r.stdout
    assert snapshot(w) == before
    steps = json.loads(out.read_text())["steps"]
    assert any(s.get("fetched") for s in steps) and any(s.get("workspace") for s in steps)


@pytest.fixture(scope="module")
def tree0_template(tmp_path_factory: pytest.TempPathFactory) -> World:
    w = build_world(tmp_path_factory.mktemp("tree0"))
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
    r = _run(w, w.sha(0), w.sha(300))
    assert r.returncode == 2, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "partial clone without trees (--filter=tree:0" in lines[0]
    assert snapshot(w) == before
    for command in lines[0].split("; run: ", 1)[1].split(" && "):
        subprocess.run(shlex.split(command), cwd=w.superproject, env=w.env, check=True,
                       capture_output=True)
    r = _run(w, w.sha(0), w.sha(300))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(200)} is the first bad commit\n" in r.stdout
    assert snapshot(w) == before
