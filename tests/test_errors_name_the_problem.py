"""A refusal names the real problem and the fix, through the real CLI: the mistakes a new
user makes first.

- outside a repository, the repository is the problem (not the repro, relative to a
  folder that is not the superproject);
- a repro or a build script in the current folder, typed without ``./``: "did you
  mean ./repro.sh?";
- a missing end of ``bisectkit run`` is named by its option (``--good REV``);
- a mark that contradicts the session says what the commit is (the bad end, marked on
  the other side, the patched candidate bisectkit wrote) and what to type instead;
- a command line that does not parse shows the command's own usage in one line (not the
  program's, not a screenful) and where its help is; an option of a plugin that is not
  loaded names the plugin;
- option combinations are checked before anything is printed.

Each refusal is exit 2, nothing touched (:func:`helpers.refusals.refused`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.refusals import one_error, refused, usage_error
from helpers.sessions import UPSTREAM, run_argv
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

from bisectkit import app
from bisectkit.cli import about
from bisectkit.commands.registry import build_parser


def target(world: World) -> list[str]:
    return ["--submodule", SUBMODULE, "--upstream", UPSTREAM]


def run_words(world: World, *extra: str) -> list[str]:
    """``bisectkit run`` on the world's working command, ``extra`` before the repro."""
    return run_argv(world, extra=extra)


def outside(tmp_path: Path, world: World) -> Path:
    """A folder in no repository, holding a copy of the world's repro."""
    where = tmp_path / "elsewhere"
    where.mkdir()
    (where / "repro.sh").write_bytes((world.superproject / "repro.sh").read_bytes())
    (where / "repro.sh").chmod(0o755)
    probe = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=where, env=world.env,
                           capture_output=True, text=True)
    assert probe.returncode != 0, probe.stdout  # the test means what it says
    return where


# -- where the command runs -------------------------------------------------------------------
@pytest.mark.parametrize("repro", ["./repro.sh", "./missing.sh"])
def test_outside_a_repository_the_repository_is_the_problem(world: World, tmp_path: Path,
                                                            repro: str) -> None:
    """Was: ``repro not found: ./missing.sh``, or "say what to bisect" with the repro
    there; neither is what is wrong."""
    where = outside(tmp_path, world)
    before = snapshot(world)
    r = cli(world, "run", "--good", world.sha(0), "--bad", world.sha(300), "--", repro,
            cwd=where)
    one_error(r, 2, f"not inside a git repository: {where}", "cd into your superproject")
    r = git_cli(world, "run", "--build", "./build.sh", repro, cwd=where)
    one_error(r, 2, "not inside a git repository", prog="git bisect-patched")
    assert snapshot(world) == before
    assert sorted(p.name for p in where.iterdir()) == ["repro.sh"]


def test_a_script_here_typed_without_dot_slash_is_suggested_with_it(world: World) -> None:
    """Was: ``repro not found: repro.sh (not a file and not on PATH)``: it is a file."""
    before = snapshot(world)
    words = run_words(world)
    refused(world, cli(world, *words[:-1], "repro.sh"),
            "repro not found: repro.sh is not on PATH; did you mean ./repro.sh?")
    build = words.index("--build") + 1
    refused(world, cli(world, *words[:build], "build.sh", *words[build + 1:]),
            "--build: build.sh is not on PATH; did you mean ./build.sh?")
    # Not a file here either: nothing to suggest.
    line = one_error(cli(world, *words[:-1], "no-such-repro"), 2, "repro not found")
    assert "did you mean" not in line
    assert snapshot(world) == before


@pytest.mark.parametrize(("given", "said"), [
    (["--bad", "HEAD"], "no --good REV: give a good revision, older than --bad"),
    (["--good", "HEAD~5"], "no --bad REV: give the bad revision"),
    ([], "give --bad REV and --good REV: the bad and good ends"),
    (["--find-fix", "--bad", "HEAD"], "no --good REV: give a broken revision"),
])
def test_a_missing_end_of_run_is_named_by_its_option(world: World, given: list[str],
                                                     said: str) -> None:
    """Was: "give a bad revision and at least one good one", naming no option."""
    before = snapshot(world)
    r = cli(world, "run", *target(world), *given, "--build", "./build.sh", "--", "./repro.sh")
    refused(world, r, said)
    assert snapshot(world) == before


# -- marks in a session -----------------------------------------------------------------------
def started(world: World) -> str:
    """A session on the world's range, its first candidate checked out: that candidate."""
    r = git_cli(world, "start", *target(world), world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    status = git_cli(world, "status")
    assert status.returncode == 0, status.stderr
    return str(status.stdout)


def kept(world: World, proc: subprocess.CompletedProcess[str], status: str,
         *words: str) -> str:
    """Refused in one line naming ``words``; the session as it was."""
    line = one_error(proc, 2, *words, prog="git bisect-patched")
    assert git_cli(world, "status").stdout == status
    return line


def test_marking_the_bad_end_good_says_it_is_the_bad_end(world: World) -> None:
    """Was: "78591377404a is marked good but is not older than 78591377404a, which is bad"."""
    status = started(world)
    bad = world.sha(300)[:12]
    kept(world, git_cli(world, "good", world.sha(300)), status,
         f"cannot mark good: {bad} is the bad end; if it is good, 'git bisect-patched "
         "reset' and start again with a newer bad revision")
    kept(world, git_cli(world, "bad", world.sha(0)), status,
         f"{world.sha(0)[:12]} is the good end, not a candidate; if it is bad, "
         "'git bisect-patched reset' and start again with an older good revision")
    assert git_cli(world, "reset").returncode == 0


def test_a_commit_marked_on_one_side_is_refused_on_the_other(world: World) -> None:
    """The README's promise ("marking it on the other side is refused"): a good mark on a
    commit marked bad used to replace the bad verdict silently."""
    started(world)
    assert git_cli(world, "bad", world.sha(150)).returncode == 0
    assert git_cli(world, "good", world.sha(50)).returncode == 0
    status = git_cli(world, "status").stdout
    log = git_cli(world, "log").stdout
    change = "to change a mark: 'git bisect-patched log' > FILE, edit it, reset, replay FILE"
    kept(world, git_cli(world, "good", world.sha(150)), status,
         f"cannot mark good: {world.sha(150)[:12]} is marked bad already; {change}")
    kept(world, git_cli(world, "bad", world.sha(50)), status,
         f"cannot mark bad: {world.sha(50)[:12]} is marked good; {change}")
    kept(world, git_cli(world, "good", world.sha(200)), status,
         f"cannot mark good: {world.sha(200)[:12]} is newer than {world.sha(150)[:12]}, "
         "marked bad")
    kept(world, git_cli(world, "bad", world.sha(20)), status,
         f"cannot mark bad: {world.sha(20)[:12]} is older than {world.sha(50)[:12]}, "
         "marked good")
    assert git_cli(world, "log").stdout == log
    assert git_cli(world, "reset").returncode == 0


@pytest.mark.parametrize("where", [".", SUBMODULE])
def test_marking_head_says_head_is_the_patched_candidate(world: World, where: str) -> None:
    """Was: "'HEAD' (269967d2c97d) is not in the bisect range"; HEAD is the commit
    bisectkit wrote (the candidate with the patch stack applied)."""
    status = started(world)
    candidate = world.git(world.superproject, "-C", SUBMODULE, "rev-parse", "HEAD")
    assert candidate not in world.shas  # a commit bisectkit wrote, not an upstream one
    under_test = [line for line in status.splitlines() if "under test" in line]
    assert under_test, status
    line = kept(world, git_cli(world, "bad", "HEAD", cwd=world.superproject / where), status,
                f"'HEAD' ({candidate[:12]}) is candidate ",
                "with the local patches applied; to mark it: 'git bisect-patched bad' "
                "(no revision)")
    named = line.split("is candidate ", 1)[1].split()[0]
    assert named in under_test[0]
    assert git_cli(world, "reset").returncode == 0


# -- the command line -------------------------------------------------------------------------
def test_a_typo_shows_the_commands_own_usage_in_one_line(world: World) -> None:
    """Was: the program's usage, or (a bad value) a 15-line one; the usages of ``start``
    and ``advance`` were one line of 265 and 198 characters."""
    before = snapshot(world)
    line = usage_error(cli(world, *run_words(world, "--goood")),
                       "unrecognized arguments: --goood")
    assert line.endswith("(see 'bisectkit help run')")
    usage_error(git_cli(world, "start", "--on-conflict", "sometimes"),
                "argument --on-conflict: invalid choice: 'sometimes'", prog="git bisect-patched")
    usage_error(git_cli(world, "good", "--hard"), "unrecognized arguments: --hard",
                prog="git bisect-patched")
    usage_error(cli(world, "advance", "--jobs", "many", "--", "./repro.sh"),
                "argument --jobs/-j: not a whole number: 'many'")
    assert snapshot(world) == before


def every_command() -> list[list[str]]:
    programs = {"bisectkit": build_parser(False), "git bisect-patched": build_parser(True)}
    # visualize's options are git log's: git log refuses an unknown one, in its words.
    return [[*prog.split(), name] for prog, parser in programs.items()
            for name, _, _ in about.commands(parser) if name != "visualize"]


@pytest.mark.parametrize("words", every_command(), ids=" ".join)
def test_every_commands_refusal_is_its_usage_line_and_one_error_line(
        words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """In-process, every command of both programs: its own usage, within 80 columns (the
    refusal is the unknown option, or a missing argument said first)."""
    monkeypatch.chdir(tmp_path)
    entry = app.git_main if words[0] == "git" else app.main
    program, command = " ".join(words[:-1]), words[-1]
    assert entry([command, "--no-such-option"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    usage, line = err.splitlines()
    assert usage.startswith(f"usage: {program} {command}") and len(usage) <= 80, usage
    assert line.startswith(f"{program}: error: "), line
    assert line.endswith(f" (see '{program} help {command}')"), line


@pytest.mark.parametrize("words", [["git", "bisect-patched", "start"], ["bisectkit", "advance"],
                                   ["bisectkit", "status"]])
def test_a_usage_written_by_hand_fits_the_terminal_in_help(world: World,
                                                           words: list[str]) -> None:
    """``-h`` printed these usages as written: one line of up to 265 characters."""
    proc = subprocess.run([*words, "-h"], cwd=world.superproject, capture_output=True,
                          text=True, env={**world.env, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    usage = proc.stdout.split("\n\n", 1)[0].splitlines()
    assert len(usage) > 1 and all(len(line) <= 80 for line in usage), usage
    assert "[-- PATHSPEC...]" in proc.stdout or "SMOKETEST" in proc.stdout  # groups kept


def test_a_plugins_option_without_the_plugin_names_the_plugin(world: World) -> None:
    """Was: "unrecognized arguments: --repeat"."""
    before = snapshot(world)
    usage_error(cli(world, *run_words(world, "--repeat", "3")),
                "--repeat is an option of plugin flaky, which is not loaded: give -p flaky "
                "--repeat N")
    usage_error(cli(world, *run_words(world, "--flaky-policy=majority")),
                "--flaky-policy is an option of plugin flaky")
    usage_error(git_cli(world, "run", "--cmake-arg=-DX=1", "./repro.sh"),
                "--cmake-arg is an option of plugin cmake_ninja, which is not loaded: give "
                "-p cmake_ninja --cmake-arg ARG", prog="git bisect-patched")
    # Blocked on purpose, or a command that takes no plugin's option: only unrecognized.
    line = usage_error(cli(world, *run_words(world, "-p", "no:flaky", "--repeat", "3")),
                       "unrecognized arguments: --repeat")
    assert "plugin" not in line
    line = usage_error(cli(world, "plugins", "--repeat", "3"), "unrecognized arguments")
    assert "plugin flaky" not in line
    assert snapshot(world) == before


def test_a_plugin_that_cannot_run_on_workers_is_refused_before_the_header(
        world: World) -> None:
    """Was: the 16-line run header, then the refusal."""
    before = snapshot(world)
    r = cli(world, *run_words(world, "-p", "flaky", "--jobs", "2"))
    refused(world, r, "plugin flaky runs the build or the repro itself", "use --jobs 1")
    assert r.stdout == ""
    assert snapshot(world) == before
