"""Bad input and hostile machines, through the real CLI: every refusal is one line.

- every option is taken only as written in full (``run --good REV`` is never
  ``--good-if REV``), and every value is checked when the command line is
  parsed (one line, exit 2, nothing touched);
- an output file (``--json``, ``--report``, ``--trace``) is refused up front
  when it is an input of the run or lies inside a repository the run moves;
- a write that fails (a full disk, a file size limit, an immutable folder) is
  one line: exit 2 when nothing had moved, exit 4 once a session exists.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.advance import pin_state, spec, with_smoke
from helpers.refusals import one_error, refused, state_dir
from helpers.worlds import SUBMODULE, World, WorldFactory, cli, git_cli, snapshot

from bisectkit.cli import argtypes, precheck
from bisectkit.commands.registry import build_parser
from bisectkit.errors import BadInput
from bisectkit.model import Parallel, RunOptions
from bisectkit.pipeline import outputs

UPSTREAM = "upstream/main"
GOOD_IF = "device .* not found"
#: Runs a command with a file size limit (RLIMIT_FSIZE): writes past it fail with EFBIG,
#: as on a full disk (Python ignores SIGXFSZ, so bisectkit sees the error, not the signal).
#: It writes no bytecode: a .pyc cut short by the limit would land in the cache the suite's
#: processes share (conftest) and break the next bisectkit that imports it.
LIMITED = ("import os, resource, sys; n = int(sys.argv[1]); "
           "os.environ['PYTHONDONTWRITEBYTECODE'] = '1'; "
           "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
           "os.execvp(sys.argv[2], sys.argv[2:])")


def target(world: World) -> list[str]:
    return ["--submodule", SUBMODULE, "--upstream", UPSTREAM]


def run_words(world: World, *extra: str) -> list[str]:
    """``bisectkit run`` on the world's working command, ``extra`` before the repro."""
    return ["run", *target(world), "--good", world.sha(0), "--bad", world.sha(300),
            "--build", "./build.sh", "--good-if", GOOD_IF, *extra, "--", "./repro.sh"]


# -- abbreviations ----------------------------------------------------------------------------
@pytest.mark.parametrize(("words", "unknown"), [
    (["--skip", "device lost"], "--skip"),  # not --skip-if
    (["--bui", "./build.sh"], "--bui"),  # not --build
    (["--timeo", "30"], "--timeo"),  # not --timeout
])
def test_bisectkit_run_takes_no_abbreviated_option(world: World, words: list[str],
                                                   unknown: str) -> None:
    before = snapshot(world)
    r = cli(world, *run_words(world, *words))
    refused(world, r, f"unrecognized arguments: {unknown}", "(see 'bisectkit help run')")
    assert snapshot(world) == before


def test_git_run_with_bisectkit_run_ends_is_refused_not_read_as_rules(world: World) -> None:
    """``git bisect-patched run --good REV --bad REV``: the words of ``bisectkit run``, which
    abbreviations used to read as ``--good-if REV --bad-if REV`` and judge every step by."""
    start = git_cli(world, "start", *target(world), world.sha(300), world.sha(0))
    assert start.returncode == 0, start.stderr
    status = git_cli(world, "status").stdout
    tested = snapshot(world)
    r = git_cli(world, "run", "--good", world.sha(0)[:12], "--bad", world.sha(300)[:12],
                "--build", "./build.sh", "./repro.sh")
    one_error(r, 2, "unrecognized arguments: --good", prog="git bisect-patched")
    assert git_cli(world, "status").stdout == status  # no step was tested
    assert snapshot(world) == tested
    assert git_cli(world, "reset").returncode == 0


@pytest.mark.parametrize(("words", "said"), [
    (["--to", "HEAD"], "--to goes with --advance"),  # once silently ignored
    (["--linear"], "--linear goes with --advance"),  # once silently ignored
    (["--at", "HEAD"], "--at goes with --stack"),
])
def test_an_option_of_another_kind_of_bisection_is_refused_not_ignored(
        world: World, words: list[str], said: str) -> None:
    before = snapshot(world)
    r = git_cli(world, "start", *target(world), *words, world.sha(300), world.sha(0))
    refused(world, r, said, prog="git bisect-patched")
    assert snapshot(world) == before


@pytest.mark.parametrize("words", [["--good", "X"], ["--bad", "Y"]])
def test_advance_takes_no_abbreviated_option(world: World, words: list[str]) -> None:
    r = cli(world, "advance", *target(world), *words, "--", "./repro.sh")
    refused(world, r, f"unrecognized arguments: {words[0]}")


def test_no_command_prints_what_to_type(world: World) -> None:
    r = cli(world)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: bisectkit [run|status|advance|"), r.stderr
    assert "'bisectkit help COMMAND' prints a command's options." in r.stderr


# -- values -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("words", "said"), [
    (["--timeout", "nan"], "argument --timeout: not a finite number: 'nan'"),
    (["--timeout", "inf"], "argument --timeout: not a finite number: 'inf'"),
    (["--timeout", "0"], "argument --timeout: must be positive"),
    (["--keep-output", "inf"], "argument --keep-output: not a size: 'inf'"),
    (["--jobs", "100000"], "argument --jobs/-j: at most 64"),
    (["--scheduler", "not a url"], "argument --scheduler: not a scheduler address"),
    (["--scheduler", "tcp://build1"], "give tcp://HOST:PORT"),
    (["--scheduler", "inproc://x"], "unknown scheme 'inproc'"),
    (["--scheduler", "tcp://127.0.0.1:1", "--resources", "GPU=nan"],
     "argument --resources: not NAME=AMOUNT: 'GPU=nan'"),
    (["--term-old", "two words"], "argument --term-old: not a single word"),
    (["--upstream", ""], "argument --upstream: empty"),  # not "guess it"
    (["--build", "make 'all"], "--build: the shell cannot parse it"),
    (["--json", ""], "--json: give a file name"),
    (["--trace", "/proc/x"], "--trace /proc/x: names a stream"),
    (["--jobs", "2", "--workspace-root", "/proc/ws"], "--workspace-root /proc/ws: cannot create"),
    # An empty value (an unset shell variable) is refused, never read as "the default".
    (["--cache-input", ""], "argument --cache-input: empty"),  # not the whole superproject
    (["--build", ""], "argument --build: empty: give a shell command"),  # not "no build"
    (["--jobs", "2", "--workspace-root", ""], "argument --workspace-root: empty"),
    (["--report", "-"], "--report -: only --json writes to stdout"),  # not a file named '-'
    (["--trace", "-"], "--trace -: only --json writes to stdout"),
    # Numbers in ASCII digits; a time limit no step could meet is refused.
    (["--jobs", "\u0661"], "argument --jobs/-j: not a whole number: '\u0661'"),
    (["--timeout", "1_0"], "argument --timeout: not a number: '1_0'"),
    (["--timeout", "1e-320"], "argument --timeout: must be at least 0.001 seconds"),
    (["--keep-output", "1_0M"], "argument --keep-output: not a size"),
])
def test_bad_values_are_refused_when_parsed(world: World, words: list[str], said: str) -> None:
    before = snapshot(world)
    r = cli(world, *run_words(world, *words))
    refused(world, r, said)
    assert snapshot(world) == before


@pytest.mark.parametrize(("words", "said"), [
    (["--term-old", "bad", "--term-new", "good"], "--term-old bad: can't change the meaning of "
                                                  "the term 'bad' (it names the new side)"),
    (["--term-old", "new", "--term-new", "old"], "--term-old new: can't change the meaning of "
                                                 "the term 'new'"),
    (["--term-old", "fast", "--term-new", "good"], "--term-new good: can't change the meaning"),
    (["--find-fix", "--term-old", "good"], "--term-old good: can't change the meaning of the "
                                           "term 'good' (it names the new side)"),
    (["--term-old", "reset"], "--term-old: can't use the command 'reset' as a term"),
    (["--term-new", "help"], "--term-new: can't use the command 'help' as a term"),
    (["--term-new", "log"], "can't use the command 'log'"),
    (["--term-old", "skip"], "can't use the command 'skip'"),
    (["--term-old=-x"], "--term-old: '-x' starts with '-'"),
])
def test_terms_that_are_commands_or_the_other_sides_words_are_refused(
        world: World, words: list[str], said: str) -> None:
    before = snapshot(world)
    r = git_cli(world, "start", *target(world), *words, world.sha(300), world.sha(0))
    refused(world, r, said, prog="git bisect-patched")
    refused(world, cli(world, *run_words(world, *words)), said)
    assert snapshot(world) == before


def test_every_subcommand_name_is_refused_as_a_term() -> None:
    names = {name for git_mode in (True, False) for action in build_parser(git_mode)._actions
             if isinstance(action, argparse._SubParsersAction) for name in action.choices}
    assert names - {"good", "bad", "old", "new"} <= argtypes.COMMAND_WORDS


def test_a_pathspec_that_is_empty_outside_or_matches_nothing_is_refused(world: World) -> None:
    """Never an untested "first bad commit" (the bad end, the only candidate left)."""
    before = snapshot(world)
    ends = [world.sha(300), world.sha(0)]
    for words, said in [(["--", ""], "pathspec: empty"),
                        (["--", "../../etc"], "pathspec: '../../etc' is outside the repository"),
                        (["--", "/etc"], "pathspec: '/etc' is outside the repository"),
                        (["--", "no/such/dir"], f"no commit between {world.sha(0)[:12]} and "
                         f"{world.sha(300)[:12]} changes no/such/dir (paths in submodule "
                         f"{SUBMODULE}, from its root)")]:
        r = git_cli(world, "start", *target(world), *ends, *words)
        refused(world, r, said, prog="git bisect-patched")
    r = cli(world, "advance", *target(world), "--pathspec", "", "--", "./repro.sh")
    refused(world, r, "argument --pathspec: empty")
    r = cli(world, "status", *target(world), "--", "../x")
    one_error(r, 2, "argument PATHSPEC: '../x' is outside the repository")
    assert snapshot(world) == before
    # A path some commit changes is taken, as before.
    r = git_cli(world, "start", *target(world), *ends, "--", "lib/bug.txt")
    assert r.returncode == 0, r.stderr
    assert git_cli(world, "reset").returncode == 0


@pytest.mark.parametrize(("key", "value", "said"), [
    ("bisectkit.jobs", "100000", "git config bisectkit.jobs is '100000': at most 64"),
    ("bisectkit.scheduler", "not a url", "git config bisectkit.scheduler is 'not a url'"),
])
def test_bad_git_config_values_are_refused_like_options(world: World, key: str, value: str,
                                                        said: str) -> None:
    world.git(world.superproject, "config", key, value)
    before = snapshot(world)
    refused(world, cli(world, *run_words(world)), said)
    assert snapshot(world) == before


# -- output files -----------------------------------------------------------------------------
@pytest.mark.parametrize(("flag", "path", "said"), [
    ("--json", f"{SUBMODULE}/lib/bug.txt", f"inside submodule {SUBMODULE}"),  # tracked there
    ("--report", f"{SUBMODULE}/report.md", f"inside submodule {SUBMODULE}"),
    ("--trace", f".git/modules/{SUBMODULE}/trace.json", f"inside submodule {SUBMODULE}"),
    ("--json", ".git/result.json", "inside the superproject's git dir"),
    ("--json", "repro.sh", "it is the repro"),
    ("--report", "build.sh", "a word of --build"),
    ("--json", ".gitmodules", "the superproject tracks this file"),
])
def test_an_output_inside_what_the_run_moves_or_reads_is_refused(
        world: World, flag: str, path: str, said: str) -> None:
    files = {p: p.read_bytes() for p in (world.superproject / "repro.sh",
                                         world.superproject / "build.sh",
                                         world.submodule / "lib" / "bug.txt")}
    before = snapshot(world)
    refused(world, cli(world, *run_words(world, flag, path)), f"{flag} {path}", said)
    assert snapshot(world) == before
    assert {p: p.read_bytes() for p in files} == files
    assert not (world.superproject / path).exists() or path in (
        "repro.sh", "build.sh", ".gitmodules", f"{SUBMODULE}/lib/bug.txt")


def test_outputs_that_collide_with_inputs_or_each_other_are_refused(world: World,
                                                                    tmp_path: Path) -> None:
    data = tmp_path / "inputs"
    data.mkdir()
    (data / "case.mlir").write_text("module {}\n", encoding="utf-8")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.json"
    for words, said in [
        (["--cache-input", str(data), "--json", str(data / "r.json")], "inside --cache-input"),
        (["--json", str(out), "--trace", str(out)], "--json writes that file too"),
        (["--json", str(fifo)], "not a regular file"),
        (["--report", str(tmp_path)], "is a directory"),
    ]:
        refused(world, cli(world, *run_words(world, *words)), said)
    # A file the repro names.
    r = cli(world, "run", *target(world), "--good", world.sha(0), "--bad", world.sha(300),
            "--json", str(data / "case.mlir"), "--", "./repro.sh", str(data / "case.mlir"))
    refused(world, r, "a word of the repro")
    assert (data / "case.mlir").read_text(encoding="utf-8") == "module {}\n"
    assert not out.exists()


def test_an_output_named_as_a_folder_is_refused(world: World, tmp_path: Path) -> None:
    # "--trace traces/" means a folder: writing a file named "traces" (or over result.json
    # for "result.json/") would be a file the user did not ask for, found hours later.
    out = tmp_path / "out"
    out.mkdir()
    kept = out / "result.json"
    kept.write_text("{}\n", encoding="utf-8")
    for words in (["--trace", f"{out}/traces/"], ["--json", f"{kept}/"],
                  ["--report", f"{kept}/."]):
        refused(world, cli(world, *run_words(world, *words)), words[1], "names a folder")
    assert sorted(p.name for p in out.iterdir()) == ["result.json"]
    assert kept.read_text(encoding="utf-8") == "{}\n"


@pytest.mark.parametrize("loaded_by", ["git config", "BISECTKIT_PLUGINS", "-p"])
def test_an_output_over_a_loaded_plugin_is_refused(world: World, tmp_path: Path,
                                                   loaded_by: str) -> None:
    plugin = tmp_path / "team_plugin.py"
    source = "def bisectkit_configure(config):\n    pass\n"
    plugin.write_text(source, encoding="utf-8")
    env: dict[str, str] = {}
    extra: list[str] = []
    if loaded_by == "git config":
        world.git(world.superproject, "config", "bisectkit.plugins", str(plugin))
    elif loaded_by == "BISECTKIT_PLUGINS":
        env["BISECTKIT_PLUGINS"] = str(plugin)
    else:
        extra = ["-p", str(plugin)]
    for flag in ("--json", "--report", "--trace"):
        r = cli(world, *run_words(world, *extra, flag, str(plugin)), extra_env=env)
        refused(world, r, f"{flag} {plugin}", "plugin team_plugin", "an input of the run")
        assert plugin.read_text(encoding="utf-8") == source


def test_git_run_and_advance_refuse_outputs_in_the_submodule(world: World) -> None:
    r = cli(world, "advance", *target(world), "--json", f"{SUBMODULE}/advance.json", "--",
            "./repro.sh")
    refused(world, r, f"inside submodule {SUBMODULE}")
    assert git_cli(world, "start", *target(world), world.sha(300), world.sha(0)).returncode == 0
    status = git_cli(world, "status").stdout
    r = git_cli(world, "run", "--report", f"{SUBMODULE}/report.md", "./repro.sh")
    one_error(r, 2, f"inside submodule {SUBMODULE}", prog="git bisect-patched")
    assert git_cli(world, "status").stdout == status
    assert not (world.submodule / "report.md").exists()
    assert git_cli(world, "reset").returncode == 0


def test_integrate_refuses_a_file_a_candidate_tracks_and_takes_an_untracked_one(
        integrate_world: World) -> None:
    w = integrate_world
    # HEAD no longer tracks integration.txt, but every candidate does: the candidate
    # checked out last would hold it when the result is written.
    w.git(w.superproject, "rm", "-q", "integration.txt")
    w.git(w.superproject, "commit", "-qm", "drop integration.txt")
    ends = ["--good", w.integrate["init"], "--bad", w.integrate["adv12"]]
    before = snapshot(w)
    r = cli(w, "run", "--integrate", *ends, "--json", "integration.txt", "--build",
            "./build.sh", "--good-if", GOOD_IF, "--", "./repro.sh")
    refused(w, r, "--json integration.txt: candidate", "tracks this file")
    assert snapshot(w) == before and not (w.superproject / "integration.txt").exists()
    r = cli(w, "run", "--integrate", *ends, "--json", "result.json", "--build", "./build.sh",
            "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert (w.superproject / "result.json").is_file()
    assert w.git(w.superproject, "status", "--porcelain") == "?? result.json"


# -- writes that fail -------------------------------------------------------------------------
def limited(world: World, size: int, *words: str,
            git: bool = False) -> subprocess.CompletedProcess[str]:
    """The CLI with every file it writes limited to ``size`` bytes."""
    exe = shutil.which("git-bisect-patched" if git else "bisectkit")
    assert exe is not None
    return subprocess.run([sys.executable, "-c", LIMITED, str(size), exe, *words],
                          cwd=world.superproject, env=world.env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_full_disk_before_anything_moved_is_exit_2_and_leaves_nothing(world: World) -> None:
    # candidates.json (300 shas) is the first file past the limit: nothing has moved.
    before = snapshot(world)
    r = limited(world, 6000, *run_words(world))
    refused(world, r, "cannot write", "candidates.json: File too large")
    assert snapshot(world) == before
    r = limited(world, 6000, "start", *target(world), world.sha(300), world.sha(0), git=True)
    refused(world, r, "candidates.json: File too large", prog="git bisect-patched")
    assert snapshot(world) == before


def test_a_full_disk_mid_run_is_exit_4_and_everything_is_restored(world: World) -> None:
    before = snapshot(world)
    # The session file grows with the steps: it stops fitting after a few.
    r = limited(world, 14_000, *run_words(world))
    one_error(r, 4, "session.json: File too large", "'git bisect-patched reset'")
    assert "[step 1]" in r.stdout
    assert snapshot(world) == before
    assert not (state_dir(world) / "journal").exists()


def test_a_failed_save_mid_session_keeps_the_session_for_reset(world: World) -> None:
    before = snapshot(world)
    assert git_cli(world, "start", *target(world), world.sha(300), world.sha(0)).returncode == 0
    cache = state_dir(world) / "verdicts.json"
    cache.mkdir()  # what a rename cannot replace, whoever runs the test
    r = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    one_error(r, 4, "cannot write", "verdicts.json", prog="git bisect-patched")
    assert (state_dir(world) / "journal").exists()
    cache.rmdir()
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` (a folder or a file) refuses writes, even to root (``chattr +i``); skips
    where it cannot be made so."""
    if os.geteuid() != 0:
        path.chmod(0o555 if path.is_dir() else 0o444)
        undo = ["chmod", "755" if path.is_dir() else "644", str(path)]
    else:
        if shutil.which("chattr") is None or subprocess.run(
                ["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("root, and no 'chattr +i' here to make a folder read-only")
        undo = ["chattr", "-i", str(path)]
    try:
        yield
    finally:
        subprocess.run(undo, check=True)


def test_a_read_only_state_folder_is_one_line_and_touches_nothing(world: World) -> None:
    before = snapshot(world)
    state_dir(world).mkdir()
    with read_only(state_dir(world)):
        refused(world, cli(world, *run_words(world)), "cannot write", "bisectkit/lock")
        r = git_cli(world, "start", *target(world), world.sha(300), world.sha(0))
        refused(world, r, "cannot write", "bisectkit/lock", prog="git bisect-patched")
    assert snapshot(world) == before


def test_a_mark_whose_checkout_cannot_be_journaled_is_kept_and_said(world: World) -> None:
    before = snapshot(world)
    assert git_cli(world, "start", *target(world), world.sha(300), world.sha(0)).returncode == 0
    with read_only(state_dir(world) / "journal"):  # the mark is saved, the move cannot be
        r = git_cli(world, "good")
        line = one_error(r, 4, "cannot write", "bisectkit/journal", prog="git bisect-patched")
    assert "good (kept); the next candidate" in line
    again = git_cli(world, "good")
    assert again.returncode == 0 and "no commit was under test" in again.stdout, again.stderr
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


# -- in-process: the grammar and the pure validators ------------------------------------------
def _subcommands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for git_mode in (False, True):
        root = build_parser(git_mode)
        for action in root._actions:
            if isinstance(action, argparse._SubParsersAction):
                yield from ((f"{root.prog} {name}", p) for name, p in action.choices.items())


#: Values tried, in order, until an option's type takes one.
SAMPLES = ("1", "tcp://build1:8786", "GPU=1", "4M", "word")
#: What each subcommand needs besides its options.
POSITIONALS = {"replay": ["bisect.log"], "show-step": ["1"]}


def _value(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(next(c for c in action.choices if c != action.default))]
    for text in SAMPLES:
        with contextlib.suppress(argparse.ArgumentTypeError, ValueError):
            (action.type or str)(text)  # type: ignore[operator]
            return [text]
    raise AssertionError(f"no sample value fits {action.option_strings}")


@pytest.mark.parametrize(("prog", "parser"), list(_subcommands()),
                         ids=[prog for prog, _ in _subcommands()])
def test_every_option_is_taken_when_written_in_full(prog: str,
                                                    parser: argparse.ArgumentParser) -> None:
    """No abbreviations must not cost an option: each one, as documented (``--opt VALUE``
    and ``--opt=VALUE``), sets what it names; abbreviations are refused."""
    positionals = POSITIONALS.get(prog.split()[-1], [])
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        value = _value(action)
        forms = [[flag, *value] for flag in action.option_strings]
        forms += [[f"{flag}={value[0]}"] for flag in action.option_strings
                  if value and flag.startswith("--")]
        for words in forms:
            parsed = parser.parse_args([*words, *positionals])
            assert getattr(parsed, action.dest) != action.default, (prog, words)
        longest = max(action.option_strings, key=len)
        if len(longest) > 4 and not any(o != longest and o.startswith(longest[:-1])
                                        for a in parser._actions for o in a.option_strings):
            with pytest.raises(SystemExit):
                parser.parse_args([longest[:-1], *value, *positionals])


@pytest.mark.parametrize(("parse", "text", "value"), [
    (argtypes.seconds, "2.5", 2.5),
    (argtypes.seconds, "1e-3", 0.001),
    (argtypes.pathspec, "lib/x", "lib/x"),
    (argtypes.pathspec, "lib/../x", "lib/../x"),
    (argtypes.byte_size, "8M", 8 << 20),
    (argtypes.byte_size, "1KiB", 1024),
    (argtypes.resource, "GPU=0.5", ("GPU", 0.5)),
    (argtypes.resource, "GPU", ("GPU", 1.0)),
    (argtypes.jobs, "64", 64),
    (argtypes.scheduler_address, "tcp://build1:8786", "tcp://build1:8786"),
    (argtypes.scheduler_address, "10.0.0.7:8786", "10.0.0.7:8786"),
    (argtypes.scheduler_address, "tls://[::1]:8786", "tls://[::1]:8786"),
    (argtypes.scheduler_address, "", ""),  # none: overrides git config
    (argtypes.term, "slow", "slow"),
])
def test_validators_take_good_values(parse: Any, text: str, value: object) -> None:
    assert parse(text) == value


@pytest.mark.parametrize(("parse", "text", "said"), [
    (argtypes.seconds, "nan", "not a finite number"),
    (argtypes.seconds, "-inf", "not a finite number"),
    (argtypes.seconds, "-1", "must be positive"),
    (argtypes.seconds, "soon", "not a number"),
    (argtypes.seconds, "\u0661", "not a number"),
    (argtypes.seconds, "1e400", "not a finite number"),
    (argtypes.seconds, "0.0005", "at least 0.001 seconds"),
    (argtypes.whole_number(0), "1_0", "not a whole number"),
    (argtypes.resource, "GPU=1_0", "not NAME=AMOUNT"),
    (argtypes.pathspec, "a/../../b", "outside the repository"),
    (argtypes.command, " ", "empty"),
    (argtypes.byte_size, "inf", "not a size"),
    (argtypes.byte_size, "1e400K", "not a size"),
    (argtypes.byte_size, "512", "at least 1K"),
    (argtypes.resource, "GPU=inf", "not NAME=AMOUNT"),
    (argtypes.resource, "=1", "not NAME=AMOUNT"),
    (argtypes.jobs, "0", "must be 1 or more"),
    (argtypes.jobs, "65", "at most 64"),
    (argtypes.scheduler_address, "build1", "give tcp://HOST:PORT"),
    (argtypes.scheduler_address, "tcp://build1:0", "give tcp://HOST:PORT"),
    (argtypes.scheduler_address, "tcp://build1:65536", "give tcp://HOST:PORT"),
    (argtypes.scheduler_address, "tcp://two words:1", "give tcp://HOST:PORT"),
    (argtypes.scheduler_address, "http://build1:8786", "unknown scheme 'http'"),
    (argtypes.nonempty, "", "empty"),
    (argtypes.term, "", "not a single word"),
    (argtypes.term, "a\nb", "not a single word"),
    (argtypes.term, "-x", "starts with '-'"),
    (argtypes.term, "reset", "can't use the command 'reset' as a term"),
])
def test_validators_refuse_bad_values(parse: Any, text: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(said)):
        parse(text)


def test_output_paths_that_would_replace_something_else_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.json"
    link.symlink_to(fifo)
    for value, said in [("", "give a file name"), ("/dev/stdout", "names a stream"),
                        ("/dev/fd/1", "names a stream"), (str(fifo), "not a regular file"),
                        (str(link), "not a regular file"), (str(tmp_path), "is a directory"),
                        (str(tmp_path / "no" / "r.json"), "does not exist"),
                        (f"{tmp_path}/traces/", "names a folder"),
                        (f"{tmp_path}/r.json/.", "names a folder")]:
        with pytest.raises(BadInput, match=re.escape(said)):
            precheck.output_path("--json", value)
    precheck.output_path("--json", str(tmp_path / "result.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.json"]  # probe gone


def test_outputs_apart_from_inputs(tmp_path: Path) -> None:
    repro = tmp_path / "repro.sh"
    repro.write_text("#!/bin/sh\n", encoding="utf-8")
    case = tmp_path / "case.mlir"
    case.write_text("", encoding="utf-8")
    opts = RunOptions(repro=(str(repro), f"--input={case}"), build="make -C build",
                      cache_inputs=(str(tmp_path / "data"),),
                      parallel=Parallel(jobs=2, workspace_root=str(tmp_path / "ws")))
    for path, said in [(repro, "the repro"), (case, "a word of the repro"),
                       (tmp_path / "data" / "x.json", "inside --cache-input"),
                       (tmp_path / "ws" / "x.json", "inside --workspace-root")]:
        with pytest.raises(BadInput, match=re.escape(said)):
            outputs.apart_from_inputs({"--json": str(path)}, opts, tmp_path, {})
    outputs.apart_from_inputs({"--json": str(tmp_path / "r.json"),
                               "--report": str(tmp_path / "r.md")}, opts, tmp_path, {})


# -- output that cannot be written ------------------------------------------------------------
def to_full_disk(world: World, *words: str, git: bool = False) -> subprocess.CompletedProcess[str]:
    """The CLI with its stdout on ``/dev/full`` (``> file`` on a full file system)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    exe = shutil.which("git-bisect-patched" if git else "bisectkit")
    assert exe is not None
    with open("/dev/full", "w") as full:
        return subprocess.run([exe, *words], cwd=world.superproject, env=world.env, text=True,
                              stdout=full, stderr=subprocess.PIPE, timeout=120,
                              stdin=subprocess.DEVNULL)


def test_a_result_lost_to_a_full_disk_is_said_never_a_silent_exit_0(world: World) -> None:
    before = snapshot(world)
    r = to_full_disk(world, *run_words(world, "--json", "-"))
    assert r.returncode == 4, r.stderr
    assert r.stderr.splitlines()[-1].startswith(
        "bisectkit: error: output lost: No space left on device"), r.stderr
    assert snapshot(world) == before  # the run itself ended and restored everything
    assert git_cli(world, "start", *target(world), world.sha(300), world.sha(0)).returncode == 0
    for words, git in ((["log"], True), (["status", "--json"], False), (["-h"], False),
                       (["run", "-h"], False), (["--version"], False)):
        r = to_full_disk(world, *words, git=git)
        prog = "git bisect-patched" if git else "bisectkit"
        one_error(r, 4, "output lost: No space left on device", prog=prog)
    # A reader gone (a closed pipe) is not a failure: nobody is left to read the output.
    p = subprocess.Popen(["bisectkit", "status"], cwd=world.superproject, env=world.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    p.stdout.close()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0 and err == "", (p.returncode, err)
    assert git_cli(world, "reset").returncode == 0


# -- damaged state files ----------------------------------------------------------------------
def damage_json(path: Path, key: str | None, value: object) -> None:
    """``path``'s JSON with ``key`` set to ``value`` (``None`` key: the whole document)."""
    import json
    if key is None:
        path.write_text(json.dumps(value))
        return
    data = json.loads(path.read_text())
    data[key] = value
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(("name", "key", "value"), [
    ("session.json", "params", {}),  # the strategy's own parameters gone
    ("session.json", "bad", {"a": 1}),
    ("session.json", "good", ["not a commit"]),
    ("session.json", "current", -1),
    ("session.json", "terms", {"old": 5, "new": None}),
    ("candidates.json", None, []),
    ("candidates.json", None, "x"),
    ("candidates.json", None, {"a": 1}),
])
def test_a_damaged_session_of_the_right_shape_is_one_line_and_reset_restores(
        world: World, name: str, key: str | None, value: object) -> None:
    before = snapshot(world)
    assert git_cli(world, "start", *target(world), world.sha(300), world.sha(0)).returncode == 0
    assert git_cli(world, "good").returncode == 0  # a candidate is checked out
    damage_json(state_dir(world) / name, key, value)
    for words in (["status"], ["good"], ["log"]):
        one_error(git_cli(world, *words), 2, "damaged", "reset", prog="git bisect-patched")
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


def test_a_session_of_an_unknown_strategy_says_so_and_reset_restores(world: World) -> None:
    before = snapshot(world)
    assert git_cli(world, "start", *target(world), world.sha(300), world.sha(0)).returncode == 0
    damage_json(state_dir(world) / "session.json", "strategy", "bogus")
    one_error(git_cli(world, "status"), 2, "unknown strategy 'bogus'", "reset",
              prog="git bisect-patched")
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


# -- commands bisectkit suggests ---------------------------------------------------------------
def test_a_suggested_command_does_what_it_says_when_pasted_whatever_the_path(
        world_factory: Any, tmp_path: Path) -> None:
    # A folder name with a space and a command substitution: pasted unquoted, the hint
    # would run 'touch PWNED' and name another folder.
    where = tmp_path / "my proj $(touch PWNED)"
    where.mkdir()
    w = world_factory(where)
    sub = w.superproject / SUBMODULE
    w.git(sub, "branch", "taken")
    r = cli(w, "advance", *target(w), "--build", "./build.sh", "--apply", "--branch", "taken",
            "--", "./repro.sh")
    line = one_error(r, 2, "already exists")
    hint = re.search(r"delete it \('(.*)'\)$", line)
    assert hint is not None, line
    pasted = subprocess.run(["sh", "-c", hint.group(1)], cwd=tmp_path, env=w.env,
                            capture_output=True, text=True)
    assert pasted.returncode == 0, pasted.stderr
    assert w.git(sub, "branch", "--list", "taken") == ""
    assert not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize(("args", "message"), [
    (("--good", "HEAD~1"), "unrecognized arguments: --good"),  # not --good-if HEAD~1
    (("--bad", "main"), "unrecognized arguments: --bad"),  # not --bad-if main
    (("--to=",), "argument --to: empty"),
    (("--apply", "--branch="), "--branch needs a name"),
    (("--pathspec", "no/such/dir/"), "changes no/such/dir/ (--pathspec): nothing to test"),
])
def test_bad_input_is_refused_and_touches_nothing(world_factory: WorldFactory, tmp_path: Path,
                                                  args: tuple[str, ...], message: str) -> None:
    """``bisectkit advance``'s options and values, on an advance world."""
    w = with_smoke(world_factory(tmp_path, spec(bug_at=999)))
    before = pin_state(w)
    out = tmp_path / "out.json"
    r = cli(w, "advance", "--build", "sh build.sh", "--json", str(out), *args, "--",
            "./smoke.sh")
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "error" in r.stderr.strip().splitlines()[-1], r.stderr
    assert "up-to-date" not in r.stdout and not out.exists()
    assert pin_state(w) == before
    assert not (w.superproject / ".git" / "bisectkit" / "verdicts.json").exists()
