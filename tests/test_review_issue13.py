"""Review of issue 13 (parallel steps): the user's work under a shared --workspace-root,
workspaces after a gc of the user's repositories, and the build's environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.worlds import SUBMODULE, World, cli, snapshot

GOOD_IF = "device .* not found"


def run(world: World, tmp_path: Path, name: str, *extra: str,
        build: str = "./build.sh", env: dict[str, str] | None = None
        ) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    out = tmp_path / f"{name}.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", build,
            "--good-if", GOOD_IF, "--no-cache", "--json", str(out), *extra, "--",
            "./repro.sh", extra_env=env, timeout=300)
    return r, json.loads(out.read_text()) if out.exists() else None


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def test_a_folder_of_the_users_named_like_a_workspace_is_never_touched(world: World,
                                                                       tmp_path: Path):
    # --workspace-root is a folder of the user's, where ws-1 is a repository with work in
    # progress: checking a candidate out there (checkout -f) would destroy that work.
    root = tmp_path / "src"
    theirs = root / "ws-1"
    theirs.mkdir(parents=True)
    _git(theirs, "init", "-q")
    (theirs / "notes.txt").write_text("committed\n", encoding="utf-8")
    _git(theirs, "add", "notes.txt")
    _git(theirs, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "mine")
    (theirs / "notes.txt").write_text("work in progress\n", encoding="utf-8")
    head = _git(theirs, "rev-parse", "HEAD")
    before = snapshot(world)
    r, _ = run(world, tmp_path, "three", "--jobs", "2", "--workspace-root", str(root))
    assert r.returncode == 2, r.stderr + r.stdout
    assert "not a bisectkit workspace" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (theirs / "notes.txt").read_text(encoding="utf-8") == "work in progress\n"
    assert _git(theirs, "rev-parse", "HEAD") == head
    assert snapshot(world) == before


def test_prune_removes_only_what_bisectkit_made(world: World, tmp_path: Path):
    root = tmp_path / "builds"
    r, result = run(world, tmp_path, "two", "--jobs", "2", "--workspace-root", str(root))
    assert r.returncode == 0 and result is not None, r.stderr + r.stdout
    mine = [root / "ws-notes", root / "ws-7", root / "ws-3.tmp"]
    for folder in mine:
        folder.mkdir()
        (folder / "keep.txt").write_text("precious\n", encoding="utf-8")
    listed = cli(world, "workspaces", "--workspace-root", str(root))
    assert listed.returncode == 0 and "ws-1" in listed.stdout
    assert "ws-notes" not in listed.stdout and "ws-7" not in listed.stdout
    pruned = cli(world, "workspaces", "--prune", "--workspace-root", str(root))
    assert pruned.returncode == 0 and "removed" in pruned.stdout, pruned.stderr
    assert not (root / "ws-1").exists()
    for folder in mine:
        assert (folder / "keep.txt").read_text(encoding="utf-8") == "precious\n", folder


def test_workspaces_survive_a_gc_of_the_users_submodule(world: World, tmp_path: Path):
    # Workspaces borrow objects from the user's repositories (clone --shared); the patched
    # commits a workspace last held are unreachable there, and a gc drops them. The next
    # run must repair the workspace, not fail on "bad object HEAD".
    r, first = run(world, tmp_path, "first", "--jobs", "2")
    assert r.returncode == 0 and first is not None, r.stderr + r.stdout
    sub = world.superproject / SUBMODULE
    _git(sub, "reflog", "expire", "--expire=now", "--all")
    _git(sub, "gc", "-q", "--prune=now")
    before = snapshot(world)
    r, again = run(world, tmp_path, "again", "--jobs", "2")
    assert r.returncode == 0 and again is not None, r.stderr + r.stdout
    assert again["first_bad"] == first["first_bad"] == world.sha(200)
    assert snapshot(world) == before


def test_the_users_git_dir_does_not_reach_a_build_in_a_workspace(world: World,
                                                                 tmp_path: Path):
    # With GIT_DIR exported, a git in the build (a version stamp, a `git submodule
    # update`) would act on the user's repository instead of the workspace's.
    seen = tmp_path / "seen.txt"
    build = f"git rev-parse --absolute-git-dir >> {seen}; ./build.sh"
    root = tmp_path / "wsroot"
    env = {"GIT_DIR": str(world.superproject / ".git")}
    r, result = run(world, tmp_path, "gitdir", "--jobs", "2", "--workspace-root", str(root),
                    build=build, env=env)
    assert r.returncode == 0 and result is not None, r.stderr + r.stdout
    dirs = set(seen.read_text(encoding="utf-8").split())
    assert dirs and all(Path(d).is_relative_to(root) for d in dirs), dirs
