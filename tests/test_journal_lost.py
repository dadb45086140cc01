"""A checkout cut short by a kill, then its journal lost: ``reset`` still restores.

A checkout moves HEAD first (one reflog line tagged ``bisectkit <id>: checkout``),
then index and files. When the journal is deleted, truncated or garbled afterwards
(or the whole ``.git/bisectkit`` is gone), the reflog line still says between which
two commits index and files may be, so what the killed checkout wrote is never
taken for the user's staged changes. A change bisectkit truly cannot account for
is kept, and the one line says how to keep it either way.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.sessions import start_argv
from helpers.states import full_state, killed_at, state_dir
from helpers.worlds import World, git_cli


def damage(world: World, how: str) -> None:
    records = state_dir(world)
    if how == "deleted":
        shutil.rmtree(records)
    elif how == "truncated":
        (records / "journal").write_bytes(b"")
    else:
        (records / "journal").write_bytes(b'{"op": "start", garbage\n\x00\xff')


@pytest.mark.parametrize(("command", "cut_after", "how"), [
    # The first checkout: HEAD moved, index and files not yet.
    ("start", "update-ref", "deleted"), ("start", "update-ref", "truncated"),
    # The first checkout: all but its end record.
    ("start", "read-tree", "deleted"), ("start", "read-tree", "garbled"),
    # A later one: the reflog already shows the first.
    ("good", "read-tree", "deleted"), ("good", "read-tree", "truncated"),
    ("good", "read-tree", "garbled"),
])
def test_reset_restores_a_cut_checkout_without_its_journal(world: World, tmp_path: Path,
                                                           command: str, cut_after: str,
                                                           how: str) -> None:
    before = full_state(world)
    if command == "good":
        assert git_cli(world, *start_argv(world)).returncode == 0
        killed_at(world, tmp_path, cut_after, "after", "good")
    else:
        killed_at(world, tmp_path, cut_after, "after", *start_argv(world))
    damage(world, how)
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert "restored third_party/llvm-project" in reset.stdout
    assert full_state(world) == before
    assert git_cli(world, "reset").stdout.strip() == "not bisecting; nothing to reset"


def test_a_change_reset_cannot_account_for_is_kept_with_one_line_saying_how(
        world: World) -> None:
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    assert git_cli(world, "good").returncode == 0
    staged = world.submodule / "README"
    staged.write_text("staged by someone\n", encoding="utf-8")
    world.git(world.submodule, "add", "README")
    shutil.rmtree(state_dir(world))
    refused = git_cli(world, "reset")
    assert refused.returncode == 4, (refused.stdout, refused.stderr)
    lines = refused.stderr.splitlines()
    assert len(lines) == 1, refused.stderr
    assert "cannot account for" in lines[0] and f"git -C {world.submodule} stash" in lines[0]
    assert "commit or unstage" not in lines[0]  # not blamed on the user: it may be ours
    assert staged.read_text(encoding="utf-8") == "staged by someone\n"
    world.git(world.submodule, "stash")
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before
    world.git(world.submodule, "stash", "pop")
    assert staged.read_text(encoding="utf-8") == "staged by someone\n"


def test_reset_restores_when_the_journal_lost_all_but_its_start(world: World,
                                                               tmp_path: Path) -> None:
    """Cut after its start record: the moves it no longer lists are read from the reflog,
    and bisectkit's own candidates are not kept as commits of the user's."""
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    killed_at(world, tmp_path, "read-tree", "after", "good")
    journal = state_dir(world) / "journal"
    journal.write_bytes(journal.read_bytes().split(b"\n")[0] + b"\n")
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert "restored third_party/llvm-project" in reset.stdout
    assert "kept as" not in reset.stdout
    assert full_state(world) == before
