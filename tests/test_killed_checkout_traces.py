"""A checkout killed mid-way, then the user's edits: ``reset`` undoes only what git left.

A git killed together with bisectkit (CI time limit, OOM killer) may have left a file
it was writing half written: nothing there (git unlinks the old file first), or the
beginning of the new content. That, and either side of the move whole, is the killed
checkout's trace, and the restore rewrites it. Anything else at those paths was
written since, by the user: the restore refuses (exit 4, one line naming it, the
journal kept), and never overwrites nor deletes it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers.lines import flat
from helpers.sessions import start_argv
from helpers.states import full_state, killed_at, state_dir
from helpers.worlds import World, git_cli


def last_move(world: World) -> dict[str, dict[str, str]]:
    """The journal's last move record."""
    records = [json.loads(line) for line in
               (state_dir(world) / "journal").read_text(encoding="utf-8").splitlines()]
    move: dict[str, dict[str, str]] = [r for r in records if r.get("op") == "move"][-1]
    return move


def cut_checkout(world: World, tmp_path: Path, bad: int = 300) -> dict[str, list[str]]:
    """``start`` (``bad``: the upstream commit), then ``good`` killed together with its
    read-tree (which held index.lock): the paths that checkout was changing, by kind
    (``M``, ``A``, ``D``)."""
    assert git_cli(world, *start_argv(world, bad=world.sha(bad))).returncode == 0
    killed_at(world, tmp_path, "read-tree", "holding-index.lock", "good")
    move = last_move(world)
    out = world.git(world.submodule, "diff", "--name-status", "--no-renames",
                    move["from"]["tree"], move["to"]["tree"])
    kinds: dict[str, list[str]] = {}
    for line in out.splitlines():
        kind, path = line.split("\t", 1)
        kinds.setdefault(kind, []).append(path)
    return kinds


def assert_kept(world: World, proc: subprocess.CompletedProcess[str], path: str) -> None:
    """Exit 4, one line naming ``path``, the journal kept."""
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and path in lines[0] and "local changes" in lines[0], proc.stderr
    assert (state_dir(world) / "journal").exists()


def test_an_edit_made_after_the_kill_is_refused_never_overwritten(world: World,
                                                                   tmp_path: Path) -> None:
    before = full_state(world)
    path = cut_checkout(world, tmp_path)["M"][0]
    mine = world.submodule / path
    mine.write_text("MY WORK, IN NO COMMIT\n", encoding="utf-8")
    for _ in range(2):  # the lock removed by the first, the edit refused by both
        assert_kept(world, git_cli(world, "reset"), path)
        assert mine.read_text(encoding="utf-8") == "MY WORK, IN NO COMMIT\n"
    saved = mine.read_bytes()
    mine.unlink()  # moved out of the way, as the line says
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before
    assert saved == b"MY WORK, IN NO COMMIT\n"


@pytest.mark.parametrize(("content", "mine"), [(b"a file of mine\n", True),
                                              (b"chan", False)])
def test_a_file_the_user_created_at_a_path_the_checkout_was_adding_is_kept(
        world: World, tmp_path: Path, content: bytes, mine: bool) -> None:
    """Early upstream commits add files: ``good``'s checkout, killed, was adding one. The
    user's file there is never deleted: the restored tree has a file there, so it is set
    aside, and the line says where. The beginning of the candidate's file ("change N"),
    what the killed git may have left, is simply rewritten."""
    before = full_state(world)
    added = cut_checkout(world, tmp_path, bad=12).get("A")
    assert added, "no file added between the candidates"
    (world.submodule / added[0]).write_bytes(content)
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before
    kept = re.search(rf"kept submodule \S+: {added[0]} at (\S+) ", flat(reset.stdout))
    assert (Path(kept.group(1)).read_bytes() if kept else None) == (content if mine else None)


def test_what_a_killed_git_half_wrote_is_undone(world: World, tmp_path: Path) -> None:
    """Nothing, an empty file, the beginning of the new content, the new content whole:
    each is what the killed read-tree may have left, and the restore rewrites it."""
    before = full_state(world)
    kinds = cut_checkout(world, tmp_path)
    modified = kinds["M"]
    assert len(modified) >= 3, kinds
    tree = last_move(world)["to"]["tree"]
    whole = [world.git(world.submodule, "cat-file", "-p", f"{tree}:{p}") for p in modified]
    (world.submodule / modified[0]).unlink()
    (world.submodule / modified[1]).write_bytes(b"")
    (world.submodule / modified[2]).write_bytes(whole[2].encode()[:3])
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before
