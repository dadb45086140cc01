"""The user's git config never changes what bisectkit's git commands do in their repositories.

A common global config (``submodule.recurse = true``, a ``core.hooksPath``
with hooks, a file-system monitor, ``core.autocrlf``, auto gc...) is installed
in the world's HOME for the command under test only; every run must give the
same answer, run none of the user's hooks and leave every repository exactly
as it was, the submodule on its branch (README, "Safety").
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.advance import BASE, spec, with_smoke
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot
from worldgen import SPARSE_BUG_AT, build_sparse_world, copy_world

from bisectkit.git import cli as gitcli

GOOD_IF = "device .* not found"
#: Hooks that git would run during bisectkit's moves, ref updates and fetches.
HOOKS = ("post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc",
         "post-commit", "post-merge")


@contextlib.contextmanager
def hostile_config(w: World) -> Iterator[Path]:
    """A global config that would change what read-tree, update-ref, status and fetch do,
    for the duration of the block; yields the log every hook (and the fsmonitor) appends to.

    Afterwards, the original config is back with only ``core.autocrlf`` kept, so that
    the test's own git commands (the snapshot) run no hook and read the files bisectkit
    wrote as the user's git does: with CRLF line ends, as a checkout with that config
    writes them (bisectkit keeps the settings that decide a file's bytes)."""
    home = Path(w.env["HOME"])
    log = home / "hooks.log"
    hooks = home / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in (*HOOKS, "fsmonitor"):
        script = hooks / name
        # A hook that dirties the tree it runs in, besides saying that it ran.
        script.write_text(f'#!/bin/sh\necho "{name} $(pwd)" >> "{log}"\n'
                          f'echo dirty > hook-was-here\nexit 0\n', encoding="utf-8")
        script.chmod(0o755)
    config = home / ".gitconfig"
    original = config.read_text(encoding="utf-8")
    config.write_text(original + (
        "[submodule]\n\trecurse = true\n"
        "[fetch]\n\trecurseSubmodules = true\n"
        f"[core]\n\thooksPath = {hooks}\n\tfsmonitor = {hooks / 'fsmonitor'}\n"
        "\tautocrlf = true\n"
        "[gc]\n\tauto = 1\n\tautoDetach = false\n"
        "[maintenance]\n\tauto = true\n"
        "[index]\n\tsparse = true\n"
        "[color]\n\tui = always\n"
        "[status]\n\tshowUntrackedFiles = no\n\tsubmoduleSummary = true\n"
        "[diff]\n\tnoprefix = true\n\trenames = copies\n"
        "[log]\n\tshowSignature = true\n"), encoding="utf-8")
    try:
        yield log
    finally:
        config.write_text(original + "[core]\n\tautocrlf = true\n", encoding="utf-8")


def assert_untouched(w: World, log: Path, before: dict[str, str]) -> None:
    """No hook ran, nothing was left behind, every HEAD and branch is as it was."""
    assert not log.exists(), log.read_text(encoding="utf-8")
    assert not (w.superproject / "hook-was-here").exists()
    assert not (w.submodule / "hook-was-here").exists()
    assert snapshot(w) == before


def test_integrate_keeps_the_submodule_on_its_branch(integrate_world: World) -> None:
    w = integrate_world
    before = snapshot(w)
    assert before["sub_branch"] == "refs/heads/main"
    with hostile_config(w) as log:
        r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
                w.integrate["adv12"], "--build", "./build.sh", "--good-if", GOOD_IF, "--",
                "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv8']} is the first bad commit\n" in r.stdout
    assert f"restored {SUBMODULE} to main (" in r.stdout
    assert_untouched(w, log, before)


def test_submodule_bisect_runs_no_hook(world: World) -> None:
    before = snapshot(world)
    with hostile_config(world) as log:
        r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh",
                "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    assert_untouched(world, log, before)


def test_manual_session_runs_no_hook_and_resets_exactly(world: World) -> None:
    before = snapshot(world)
    with hostile_config(world) as log:
        started = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream",
                          "upstream/main", world.sha(300), world.sha(0))
        assert started.returncode == 0, started.stderr
        for mark in ("good", "bad", "skip"):
            proc = git_cli(world, mark)
            assert proc.returncode == 0, proc.stderr
        assert not log.exists(), log.read_text(encoding="utf-8")
        reset = git_cli(world, "reset")
    assert reset.returncode == 0, reset.stderr
    assert_untouched(world, log, before)


def test_advance_apply_runs_no_hook_and_leaves_the_superproject_clean(
        world_factory: Any, tmp_path: Path) -> None:
    w = with_smoke(world_factory(tmp_path, spec(BASE + 3)))
    head = w.git(w.superproject, "rev-parse", "HEAD")
    with hostile_config(w) as log:
        r = cli(w, "advance", "--build", "sh build.sh", "--apply", "--branch", "sm-next", "--",
                "./smoke.sh")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not log.exists(), log.read_text(encoding="utf-8")
    assert w.git(w.superproject, "rev-parse", "HEAD^") == head
    tip = w.git(w.superproject, "rev-parse", f"HEAD:{SUBMODULE}")
    assert w.git(w.submodule, "rev-parse", "--symbolic-full-name", "HEAD") == \
        "refs/heads/sm-next"
    assert w.git(w.submodule, "rev-parse", "HEAD") == tip
    assert w.git(w.superproject, "status", "--porcelain") == ""
    assert w.git(w.submodule, "status", "--porcelain") == ""


@pytest.fixture(scope="module")
def sparse_template(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_sparse_world(tmp_path_factory.mktemp("sparse-template"))


def test_index_sparse_in_the_config_leaves_a_full_index_full(sparse_template: World,
                                                             tmp_path: Path) -> None:
    # A cone-mode sparse checkout with a full index (which bisectkit reads), and
    # index.sparse=true in the user's config: git would write the index sparse.
    w = copy_world(sparse_template, tmp_path)
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm")
    index = w.superproject / ".git" / "modules" / SUBMODULE / "index"
    assert b"sdir" not in index.read_bytes()
    before = snapshot(w)
    config = Path(w.env["HOME"]) / ".gitconfig"
    original = config.read_text(encoding="utf-8")
    config.write_text(original + "[index]\n\tsparse = true\n", encoding="utf-8")
    r = cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            w.sha(0), "--bad", w.sha(56), "--build", "true", "--good-if", GOOD_IF, "--",
            "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(SPARSE_BUG_AT)} is the first bad commit\n" in r.stdout
    assert b"sdir" not in index.read_bytes()
    config.write_text(original, encoding="utf-8")
    assert snapshot(w) == before


def test_every_git_command_is_built_by_gitcli() -> None:
    """No module spawns ``["git", ...]`` itself: :func:`gitcli.argv` adds the pins."""
    root = Path(gitcli.__file__).parents[1]
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == Path(gitcli.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and node.args
                    and isinstance(node.args[0], ast.List | ast.Tuple) and node.args[0].elts
                    and isinstance(node.args[0].elts[0], ast.Constant)
                    and node.args[0].elts[0].value == "git"):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
    assert ("submodule.recurse", "false") in gitcli.PINNED
    assert gitcli.argv("status")[:3] == ["git", "-c", "submodule.recurse=false"]


def test_split_index_in_the_config_leaves_every_index_whole(world: World) -> None:
    """core.splitIndex=true (advised for big repositories): the indexes bisectkit's gits
    write stay whole, which libgit2 can read; the run ends with its answer, restored."""
    before = snapshot(world)
    config = Path(world.env["HOME"]) / ".gitconfig"
    original = config.read_text(encoding="utf-8")
    config.write_text(original + "[core]\n\tsplitIndex = true\n", encoding="utf-8")
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            world.sha(0), "--bad", world.sha(300), "--build", "./build.sh", "--good-if",
            GOOD_IF, "--", "./repro.sh")
    config.write_text(original, encoding="utf-8")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit\n" in r.stdout
    assert snapshot(world) == before


def test_a_split_index_is_refused_with_the_command_that_makes_it_whole(world: World) -> None:
    world.git(world.submodule, "update-index", "--split-index")
    before = snapshot(world)
    argv = ("run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good",
            world.sha(0), "--bad", world.sha(300), "--build", "./build.sh", "--good-if",
            GOOD_IF, "--", "./repro.sh")
    r = cli(world, *argv)
    assert r.returncode == 2, r.stderr + r.stdout
    lines = r.stderr.splitlines()
    fix = f"git -C {world.submodule} update-index --no-split-index"
    assert len(lines) == 1 and "split index" in lines[0] and fix in lines[0], r.stderr
    assert snapshot(world) == before
    world.git(world.submodule, *fix.split()[3:])
    r = cli(world, *argv)
    assert r.returncode == 0, r.stderr + r.stdout


def test_every_git_runs_in_its_own_session() -> None:
    """A stop signal sent to bisectkit's process group (Ctrl-C, a CI job's killpg) reaches
    bisectkit alone: a git it runs, cut short, would leave a half-written index or a
    truncated read (a file's checked-out bytes read as the beginning of one)."""
    root = Path(gitcli.__file__).parent
    alone = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("run", "Popen") and node.args
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "subprocess"):
                continue
            first = ast.unparse(node.args[0])
            # Not a git: man (a pager, which needs the terminal), sh -n.
            if "argv" not in first or path.name == "usage.py":
                continue
            if not any(k.arg == "start_new_session" and ast.unparse(k.value) == "True"
                       for k in node.keywords):
                alone.append(f"{path.relative_to(root)}:{node.lineno}")
    assert alone == []
