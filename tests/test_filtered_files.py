"""Files git's filters change on checkout: never taken for the user's edits, nor for a moved tree.

git writes a blob through ``.gitattributes`` and config: end-of-line conversion,
``ident``, smudge drivers (Git LFS). A file whose bytes are what a checkout of
its blob writes is as checked out, whatever a status says: git itself calls a
CRLF file under ``text eol=lf`` modified right after checking it out, and
libgit2, which runs no external driver, calls every smudged file modified. The
steps' tree check and the restore judge such a file by its bytes, so a run
that meets one neither stops (exit 3) nor stays stuck on a candidate (exit 4).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.sessions import run_argv, start_argv
from helpers.states import full_state
from helpers.worlds import World, WorldFactory, WorldSpec, cli, git_cli

#: Upstream adds a CRLF file under ``text eol=lf`` at 150 and renormalises it at 250: every
#: candidate between has it (git status calls it modified right after its checkout).
CRLF = WorldSpec(writes={150: {"lib/crlf.txt": "a\r\nb\r\n",
                               ".gitattributes": "*.txt text eol=lf\n"},
                         250: {"lib/crlf.txt": "a\nb\n"}})
#: Upstream adds a file through a smudge/clean filter (rot13) at 150, empties it at 250.
FILTERED = WorldSpec(writes={150: {"lib/secret.dat": "uryyb\n",
                                   ".gitattributes": "*.dat filter=rot13\n"},
                             250: {"lib/secret.dat": ""}})
ROT13 = "tr a-zA-Z n-za-mN-ZA-M"


def filtered_world(world_factory: WorldFactory, tmp_path: Path, spec: WorldSpec) -> World:
    world = world_factory(tmp_path, spec)
    if spec is FILTERED:  # the user's config defines the filter, as git lfs install does
        with (Path(world.env["HOME"]) / ".gitconfig").open("a", encoding="utf-8") as fh:
            fh.write(f'[filter "rot13"]\n\tsmudge = {ROT13}\n\tclean = {ROT13}\n')
    return world


@pytest.mark.parametrize("spec", [CRLF, FILTERED], ids=["crlf-under-eol-lf", "smudge-filter"])
def test_a_run_over_filtered_files_finds_the_culprit_and_restores(
        world_factory: WorldFactory, tmp_path: Path, spec: WorldSpec) -> None:
    world = filtered_world(world_factory, tmp_path, spec)
    before = full_state(world)
    proc = cli(world, *run_argv(world))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert f"{world.sha(200)} is the first bad commit" in proc.stdout
    assert full_state(world) == before


@pytest.mark.parametrize("marks", [(), ("bad",)], ids=["at-it", "checked-out-from-it"])
@pytest.mark.parametrize("spec", [CRLF, FILTERED], ids=["crlf-under-eol-lf", "smudge-filter"])
def test_reset_restores_from_a_candidate_with_filtered_files(
        world_factory: WorldFactory, tmp_path: Path, spec: WorldSpec,
        marks: tuple[str, ...]) -> None:
    """The first candidate (150) has the file; the next (75) does not: a mark there checks
    it out from the file git may call modified."""
    world = filtered_world(world_factory, tmp_path, spec)
    before = full_state(world)
    assert git_cli(world, *start_argv(world)).returncode == 0
    for mark in marks:
        proc = git_cli(world, mark)
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
    reset = git_cli(world, "reset")
    assert reset.returncode == 0, (reset.stdout, reset.stderr)
    assert full_state(world) == before


def test_an_edit_to_a_filtered_file_is_still_refused(world_factory: WorldFactory,
                                                    tmp_path: Path) -> None:
    world = filtered_world(world_factory, tmp_path, FILTERED)
    assert git_cli(world, *start_argv(world)).returncode == 0
    mine = world.submodule / "lib/secret.dat"
    assert mine.read_text(encoding="utf-8") == "hello\n"  # smudged
    mine.write_text("hello, edited\n", encoding="utf-8")
    reset = git_cli(world, "reset")
    assert reset.returncode == 4, (reset.stdout, reset.stderr)
    assert "lib/secret.dat" in reset.stderr and len(reset.stderr.splitlines()) == 1
    assert mine.read_text(encoding="utf-8") == "hello, edited\n"
