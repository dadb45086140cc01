"""git parity of the options: ``--submodule`` defaults to the only submodule everywhere, and
a bisectkit option written after the repro is warned about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli, snapshot

GOOD_IF = "device .* not found"
#: A small world whose upstream turns bad at commit 20 (no build breaks, no conflicts).
SMALL = WorldSpec(commits=40, merge_base=30, bug_at=20, build_breaks=[], feature_prep=5,
                  reverted=None, picks=[], pick_by_patch_id=None, local_conflict=None)
WARNING = ("warning: '--timeout' after the repro is passed to it; put bisectkit options "
           "before the repro (or after '--' to silence this)")


@pytest.fixture
def small(world_factory, tmp_path: Path) -> World:
    return world_factory(tmp_path, SMALL)


def _range(w: World) -> list[str]:
    return ["--upstream", "upstream/main", "--good", w.sha(0), "--bad", w.sha(30)]


def _second_submodule(w: World) -> None:
    w.git(w.superproject, "update-index", "--add", "--cacheinfo", f"160000,{w.sha(1)},extra")
    w.git(w.superproject, "commit", "-q", "-m", "a second submodule")


def test_run_bisects_the_only_submodule(small: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = cli(small, "run", *_range(small), "--good-if", GOOD_IF, "--json", str(out),
            "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == small.sha(20) and result["submodule"] == SUBMODULE
    assert "warning" not in r.stderr


def test_start_bisects_the_only_submodule(small: World):
    before = snapshot(small)
    r = git_cli(small, "start", "--upstream", "upstream/main", small.sha(30), small.sha(0))
    assert r.returncode == 0, r.stderr
    assert f"bisecting submodule {SUBMODULE}" in r.stdout
    log = git_cli(small, "log").stdout
    assert log.startswith(f"git bisect-patched start --submodule {SUBMODULE} ")
    assert git_cli(small, "reset").returncode == 0
    assert snapshot(small) == before


@pytest.mark.parametrize("command", ["run", "start"])
def test_several_submodules_are_not_guessed(small: World, command: str):
    _second_submodule(small)
    before = snapshot(small)
    if command == "run":
        r = cli(small, "run", *_range(small), "--", "./repro.sh")
    else:
        r = git_cli(small, "start", small.sha(30), small.sha(0))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"{'bisectkit' if command == 'run' else 'git bisect-patched'}: error: which "
        "submodule? pass --submodule PATH, --integrate or set git config bisectkit.submodule "
        f"(submodules here: extra, {SUBMODULE})"]
    assert snapshot(small) == before
    # The config still chooses (and --integrate needs no choice at all).
    small.git(small.superproject, "config", "bisectkit.submodule", SUBMODULE)
    r = git_cli(small, "start", "--upstream", "upstream/main", small.sha(30), small.sha(0))
    assert r.returncode == 0, r.stderr
    assert git_cli(small, "reset").returncode == 0


def test_an_option_after_the_repro_is_warned_about(small: World, tmp_path: Path):
    out = tmp_path / "r.json"
    r = cli(small, "run", *_range(small), "--good-if", GOOD_IF, "--json", str(out),
            "./repro.sh", "--timeout", "30")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines().count(WARNING) == 1
    # It still went to the repro, as argparse's remainder says (the world's repro ignores it).
    steps = json.loads(out.read_text())["steps"]
    assert json.loads(out.read_text())["first_bad"] == small.sha(20) and steps


@pytest.mark.parametrize("words, warned", [
    (["./repro.sh", "--timeout=30"], "'--timeout=30' after the repro is passed"),
    (["./repro.sh", "--build", "make", "--jobs", "2"],
     "'--build', '--jobs' after the repro are passed"),
    (["--", "./repro.sh", "--timeout", "30"], None),
    (["./repro.sh", "--verbose", "-j", "4", "--help"], None),
])
def test_the_warning_names_only_our_options(small: World, words: list[str], warned: str | None):
    # A range that is refused: the warning comes from the parsing, before anything runs.
    r = cli(small, "run", "--good", "nope", "--bad", small.sha(30), *words)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[-1].startswith("bisectkit: error:")
    if warned is None:
        assert lines == lines[-1:]
    else:
        assert lines[0].startswith(f"warning: {warned} to it;") and len(lines) == 2


@pytest.mark.parametrize("words", [
    ["./wrap.sh", "--", "ninja", "--jobs", "4"],
    ["./wrap.sh", "--", "--build", "x"],
])
def test_no_warning_for_words_after_the_repros_own_double_dash(small: World,
                                                                words: list[str]):
    # After the repro's own '--' the words are the repro's by any reading: bisectkit
    # never takes options there. The warning told the user to put '--' before the repro.
    r = cli(small, "run", "--good", "nope", "--bad", "HEAD", *words)
    assert r.returncode == 2
    assert "warning" not in r.stderr, r.stderr


def test_the_warning_still_names_an_option_before_the_repros_double_dash(small: World):
    r = cli(small, "run", "--good", "nope", "--bad", "HEAD", "./wrap.sh", "--jobs", "2",
            "--", "x")
    assert r.stderr.startswith("warning: '--jobs' after the repro is passed to it;"), r.stderr


def test_git_run_warns_too(small: World):
    assert git_cli(small, "start", "--upstream", "upstream/main", small.sha(30),
                   small.sha(0)).returncode == 0
    r = git_cli(small, "run", "--good-if", GOOD_IF, "./repro.sh", "--build", "./build.sh")
    assert r.returncode == 0, r.stderr
    assert ("warning: '--build' after the repro is passed to it; put bisectkit options before "
            "the repro (or after '--' to silence this)") in r.stderr.splitlines()
    assert f"{small.sha(20)} is the first bad commit" in r.stdout
    assert git_cli(small, "reset").returncode == 0
