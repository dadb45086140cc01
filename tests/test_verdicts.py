"""A verdict means what it says: escapes, 126/127, untested ends, the circuit breaker, plugins.

Each test drives the real CLI on a real git world; the repros are small shell
scripts that stand in for a compiler test (bad from upstream commit 200).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers.repros import BUG, run, run_args, script
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli, snapshot

from bisectkit.execute.keptoutput import clean_output

GOOD_IF = "device .* not found"


# -- escapes ---------------------------------------------------------------------------
def test_clean_output_removes_escapes_and_folds_progress():
    coloured = "\x1b[1m\x1b[31merror:\x1b[0m\x1b[1m miscompiled\x1b[0m\n"
    assert clean_output(coloured) == "error: miscompiled\n"
    ninja = "[1/3] cc a.o\r\x1b[K[2/3] cc b.o\r\x1b[K[3/3] link\nok\r\n"
    assert clean_output(ninja) == "[3/3] link\nok\n"
    osc = "\x1b]0;title\x07\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\ done"
    assert clean_output(osc) == "link done"


def test_rules_and_step_logs_see_text_not_colour(world: World, tmp_path: Path):
    """clang/MLIR colour their diagnostics under a pty: the rule must still match."""
    repro = script(tmp_path / "repro.sh", f"""\
        if {BUG}; then
          printf '\\033[1m\\033[31merror:\\033[0m\\033[1m miscompiled\\033[0m\\n'
        fi
        printf 'running 10%%\\rrunning 100%%\\n'
        exit 0
    """)
    out = tmp_path / "r.json"
    r = run(world, "--bad-if", "error: miscompiled", "--good-if", "^running 100%$",
            repro=(str(repro),), json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    bad = next(s for s in steps if s["verdict"] == "bad")
    assert "matched --bad-if 'error: miscompiled'" in bad["reason"]
    log = Path(bad["log"]).read_text()
    assert "error: miscompiled" in log and "\x1b" not in log and "\r" not in log


# Demonstrates: escapes outside CSI/OSC (``tput sgr0`` writes ``\e(B\e[m``; ``\e7``/``\e8``
# save/restore the cursor) reached the rules. A tool that colours with tput only in its
# older releases (commits 200-249 here) made those bad commits look good, and the search
# named 250 with exit 0: a confident wrong culprit that no end check can catch.
def test_tput_style_escapes_do_not_hide_the_bad_text(world: World, tmp_path: Path):
    repro = script(tmp_path / "repro.sh", f"""\
        if git -C {SUBMODULE} merge-base --is-ancestor {world.sha(250)} HEAD; then
          echo 'error: miscompiled'
        elif {BUG}; then
          printf '\\033[1;31merror:\\033(B\\033[m miscompiled\\0337\\0338\\n'
        else
          echo ok
        fi
        exit 0
    """)
    r = run(world, "--bad-if", "error: miscompiled", repro=(str(repro),))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout, r.stdout


# Demonstrates: when --keep-output cuts the output inside an OSC 8 hyperlink (gcc and
# ls print them under a terminal), the unterminated OSC swallowed everything after the
# cut up to the next ESC: the marker, the rule-matching lines kept from the middle and
# the tail. The bad commits' "error: miscompiled" vanished and they tested good.
def test_an_osc_cut_by_keep_output_does_not_swallow_the_kept_lines(world: World,
                                                                    tmp_path: Path):
    keep = 4096
    head = "x" * (keep // 2 - 10)
    repro = script(tmp_path / "repro.sh", f"""\
        printf '{head}\\033]8;;https://gcc.gnu.org/onlinedocs/gcc/Warning-Options.html\\033\\\\-Wunused\\033]8;;\\033\\\\\\n'
        i=0; while [ $i -lt 200 ]; do echo "filler line $i"; i=$((i+1)); done
        if {BUG}; then echo 'error: miscompiled'; fi
        i=0; while [ $i -lt 200 ]; do echo "filler line $i"; i=$((i+1)); done
        exit 0
    """)
    out = tmp_path / "r.json"
    r = run(world, "--keep-output", str(keep), "--bad-if", "error: miscompiled",
            repro=(str(repro),), good=190, bad=210, json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout[-3000:]
    assert f"{world.sha(200)} is the first bad commit" in r.stdout


# -- commands that cannot run ----------------------------------------------------------
def test_a_repro_or_build_that_cannot_run_is_refused_before_anything(world: World,
                                                                     tmp_path: Path):
    before = snapshot(world)
    r = run(world, repro=("sh", "-c", "iree-compile-typo input.mlir"))
    assert r.returncode == 2, r.stderr
    assert "command not found: iree-compile-typo" in r.stderr
    (world.superproject / "noexec.sh").write_text("#!/bin/sh\nexit 0\n")
    r = run(world, "--build", "./noexec.sh", repro=("./repro.sh",))
    assert r.returncode == 2 and "./noexec.sh is not executable" in r.stderr, r.stderr
    (world.superproject / "noexec.sh").unlink()
    interp = script(tmp_path / "py.sh", "")
    interp.write_text("#!/usr/bin/env python9.99\n")
    r = run(world, repro=(str(interp),))
    assert r.returncode == 2 and "python9.99" in r.stderr and "not on PATH" in r.stderr
    assert snapshot(world) == before


def test_exit_127_everywhere_aborts_naming_the_command(world: World, tmp_path: Path):
    """A typo the pre-check cannot see (a variable): 127 at the good end too -> abort."""
    repro = script(tmp_path / "repro.sh", """\
        tool=iree-compile-typ
        "${tool}o" input.mlir
    """)
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = run(world, repro=(str(repro),), json_path=out)
    assert r.returncode == 3, r.stderr + r.stdout
    assert "is the first bad commit" not in r.stdout
    assert "the repro command" in r.stderr and "cannot run: exit 127 at the good end" in r.stderr
    assert "iree-compile-typo: not found" in r.stderr
    assert snapshot(world) == before
    result = json.loads(out.read_text())
    assert result["status"] == "aborted" and result["first_bad"] is None


def test_a_script_choosing_exit_127_is_double_checked_then_believed(world: World,
                                                                     tmp_path: Path):
    """git's convention still holds once the command is seen to run at the good end."""
    repro = script(tmp_path / "repro.sh", f"""\
        if {BUG}; then echo 'error: miscompiled'; exit 127; fi
        exit 0
    """)
    out = tmp_path / "r.json"
    r = run(world, repro=(str(repro),), json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    checked = [s for s in steps if "double_check" in s]
    assert len(checked) == 1, steps  # once per run
    assert checked[0]["double_check"] == {"commit": world.sha(0), "repro": "exit 0"}


def test_a_tool_missing_only_at_some_commits_is_skip_not_bad(world: World, tmp_path: Path):
    """The shell's "not found" at a commit where the good end runs fine: skip, never bad."""
    repro = script(tmp_path / "repro.sh", f"""\
        if {BUG}; then no-such-tool-here; exit $?; fi
        exit 0
    """)
    out = tmp_path / "r.json"
    r = run(world, "--max-env-skips", "0", repro=(str(repro),), good=190, bad=210,
            json_path=out)
    assert r.returncode == 1, r.stderr + r.stdout  # only skips left where the bug is
    assert "is the first bad commit" not in r.stdout
    steps = json.loads(out.read_text())["steps"]
    skipped = [s for s in steps if s["verdict"] == "skip"]
    assert skipped and all("a command cannot run" in s["reason"] for s in skipped)
    assert not [s for s in steps if s["verdict"] == "bad"]


# Demonstrates: the --build pre-check looked the first command up on the PATH bisectkit
# runs with, ignoring an assignment to PATH in front of it (``PATH=$PWD/tools:$PATH
# mybuild``): a build that runs fine was refused with "command not found", exit 2.
def test_a_build_that_sets_path_for_its_command_is_not_refused(world: World, tmp_path: Path):
    tools = world.superproject / "tools"
    tools.mkdir()
    script(tools / "mybuild", "exit 0\n")
    repro = script(tmp_path / "repro.sh", f"if {BUG}; then exit 1; fi\nexit 0\n")
    r = run(world, "--build", 'PATH="$PWD/tools:$PATH" mybuild', repro=(str(repro),),
            good=190, bad=210)
    assert r.returncode == 0, r.stderr + r.stdout[-2000:]
    assert f"{world.sha(200)} is the first bad commit" in r.stdout


# -- the ends an answer rests on -------------------------------------------------------
def test_a_repro_that_never_reproduces_does_not_blame_the_bad_end(world: World,
                                                                   tmp_path: Path):
    repro = script(tmp_path / "repro.sh", "echo all fine; exit 0\n")
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = run(world, repro=(str(repro),), json_path=out)
    assert r.returncode == 5, r.stderr + r.stdout
    assert f"the bad end {world.sha(300)[:12]} does not test bad: it tested good" in r.stderr
    assert "is the first bad commit" not in r.stdout
    assert snapshot(world) == before
    # --no-verify: the caller vouches for the ends (the old behaviour).
    r = run(world, "--no-verify", repro=(str(repro),))
    assert r.returncode == 0 and f"{world.sha(300)} is the first bad commit" in r.stdout


def test_a_repro_that_always_fails_does_not_blame_the_first_candidate(world: World,
                                                                      tmp_path: Path):
    repro = script(tmp_path / "repro.sh", "echo 'error: always'; exit 1\n")
    r = run(world, repro=(str(repro),))
    assert r.returncode == 5, r.stderr + r.stdout
    assert f"the good end {world.sha(0)[:12]} does not test good: it tested bad" in r.stderr


def test_an_answer_on_the_bad_end_is_confirmed_by_testing_it(world: World, tmp_path: Path):
    """The bug lands at the bad end itself: tested once more, then named."""
    repro = script(tmp_path / "repro.sh", f"if {BUG}; then exit 1; fi\nexit 0\n")
    out = tmp_path / "r.json"
    r = run(world, repro=(str(repro),), good=150, bad=200, json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert "confirming the bad end" in r.stdout
    verify = [s for s in json.loads(out.read_text())["steps"] if s["source"] == "verify"]
    assert [(s["commit"], s["verdict"]) for s in verify] == [(world.sha(200), "bad")]


def test_verify_range_catches_a_wrong_good(world: World, tmp_path: Path):
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--good", world.sha(250), "--bad", world.sha(300),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"the good end {world.sha(250)[:12]} is not good: it tested bad" in r.stderr
    assert json.loads(out.read_text())["status"] == "aborted"
    assert snapshot(world) == before
    ok = cli(world, *run_args(world, "--good", world.sha(100), "--bad", world.sha(300),
                          "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                          "--json", str(out), "--", "./repro.sh"))
    assert ok.returncode == 0, ok.stderr
    steps = json.loads(out.read_text())["steps"]
    assert [s["source"] for s in steps[:2]] == ["verify", "verify"]
    assert [s["verdict"] for s in steps[:2]] == ["good", "bad"]


def test_verify_range_with_a_wrong_bad_end_leaves_nothing_behind(world: World, tmp_path: Path):
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = cli(world, *run_args(world, "--good", world.sha(100), "--bad", world.sha(150),
                         "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                         "--json", str(out), "--", "./repro.sh"))
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"the bad end {world.sha(150)[:12]} is not bad: it tested good" in r.stderr
    assert json.loads(out.read_text())["status"] == "aborted"
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()
    # The log of a verified run replays (verification steps are not verdicts).
    ok = cli(world, *run_args(world, "--good", world.sha(100), "--bad", world.sha(300),
                          "--build", "./build.sh", "--good-if", GOOD_IF, "--verify-range",
                          "--", "./repro.sh"))
    assert ok.returncode == 0
    replay = git_cli(world, "replay", ".git/bisectkit/last-log")
    assert f"{world.sha(200)} is the first bad commit" in replay.stdout, replay.stderr
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


# -- the circuit breaker -----------------------------------------------------------------
def test_timeouts_in_a_row_stop_the_run_and_restore(world: World, tmp_path: Path):
    repro = script(tmp_path / "repro.sh", "sleep 30\n")
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = run(world, "--timeout", "0.5", repro=(str(repro),), json_path=out)
    assert r.returncode == 3, r.stderr + r.stdout
    assert "stopped after 3 consecutive steps skipped for the machine" in r.stderr
    assert "timed out after 0.5 s" in r.stderr
    assert snapshot(world) == before
    steps = json.loads(out.read_text())["steps"]
    assert [s["environment"] for s in steps] == ["timeout"] * 3
    r = run(world, "--timeout", "0.5", "--max-env-skips", "2", "--no-cache",
            repro=(str(repro),), json_path=out)
    assert r.returncode == 3 and len(json.loads(out.read_text())["steps"]) == 2


def test_the_breaker_keeps_a_manual_session(world: World, tmp_path: Path):
    repro = script(tmp_path / "repro.sh", "sleep 30\n")
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    r = git_cli(world, "run", "--timeout", "0.5", "--max-env-skips", "2", str(repro))
    assert r.returncode == 3, r.stderr
    assert "session is kept" in r.stdout + r.stderr
    status = git_cli(world, "status")
    assert status.returncode == 0 and "2 skip" in status.stdout, status.stdout
    assert git_cli(world, "reset").returncode == 0


# Demonstrates: a repro that always exits 125 built and ran every candidate (399 builds on
# a real range) for an answer that could only be "inconclusive", without a word.
def test_a_repro_that_always_skips_stops_after_ten_builds(world: World, tmp_path: Path):
    ran = tmp_path / "ran"
    repro = script(tmp_path / "repro.sh", f"echo x >> {ran}\nexit 125\n")
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = run(world, repro=(str(repro),), good=170, bad=200, json_path=out)
    assert r.returncode == 3, r.stderr + r.stdout
    assert ("10 steps in a row were skipped (exit 125): these candidates cannot be tested as "
            "asked; fix the build or the repro and run again, or give --max-skips 0 to go on"
            in " ".join(r.stderr.split())), r.stderr
    assert len(ran.read_text().splitlines()) == 10
    assert snapshot(world) == before
    assert [s["reason"] for s in json.loads(out.read_text())["steps"]] == ["exit 125"] * 10
    ran.unlink()
    r = run(world, "--max-skips", "0", "--no-cache", repro=(str(repro),), good=170, bad=200)
    assert r.returncode == 1, r.stderr + r.stdout  # every candidate tested: inconclusive
    assert len(ran.read_text().splitlines()) == 29  # the bad end is not tested


def test_the_skip_breaker_keeps_a_manual_session(world: World, tmp_path: Path):
    repro = script(tmp_path / "repro.sh", "exit 125\n")
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                world.sha(200), world.sha(170))
    assert r.returncode == 0, r.stderr
    r = git_cli(world, "run", "--max-skips", "4", str(repro))
    assert r.returncode == 3, r.stderr
    assert "4 steps in a row were skipped (exit 125)" in " ".join(r.stderr.split())
    assert "session is kept" in r.stdout + r.stderr
    status = git_cli(world, "status")
    assert status.returncode == 0 and "4 skip" in status.stdout, status.stdout
    assert git_cli(world, "reset").returncode == 0


# Conflict skips cost no build and a long range where a local patch does not apply is the
# history, not a broken repro: they never count (here 59 candidates in a row conflict).
def test_conflict_skips_do_not_trip_the_skip_breaker(world_factory, tmp_path: Path):
    world = world_factory(tmp_path, WorldSpec(bug_at=360))
    repro = script(tmp_path / "repro.sh", f"if {BUG}; then exit 1; fi\n")
    out = tmp_path / "r.json"
    r = run(world, repro=(str(repro),), good=330, bad=400, json_path=out)
    assert r.returncode == 1, r.stderr + r.stdout  # inconclusive: the bug is past 340
    sources = [s["source"] for s in json.loads(out.read_text())["steps"]]
    assert "auto," * 10 in ",".join(sources) + ",", sources


# -- the plugin API ------------------------------------------------------------------------
def test_plugin_outcome_needs_only_status_and_output(world: World, tmp_path: Path):
    plugin = tmp_path / "my_repro.py"
    plugin.write_text(textwrap.dedent(f"""
        from pathlib import Path
        from bisectkit import Outcome, hookimpl

        @hookimpl
        def bisectkit_repro(step):
            text = Path(step.workdir, "{SUBMODULE}/lib/bug.txt").read_text()
            if "miscompile" in text:
                return Outcome(1, "\\x1b[31merror:\\x1b[0m miscompiled")
            return Outcome(0, "fine")
    """))
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "-p", str(plugin),
            "--bad-if", "^error: miscompiled")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert "matched --bad-if" in r.stdout


def test_a_raising_plugin_is_one_line_exit_3_and_restored(world: World, tmp_path: Path):
    plugin = tmp_path / "boom.py"
    plugin.write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        def _parse(text):
            raise ValueError("cannot parse the runtime's output")

        @hookimpl
        def bisectkit_classify(step, outcome):
            return _parse(outcome.output)
    """))
    repro = script(tmp_path / "repro.sh", "exit 0\n")
    before = snapshot(world)
    r = run(world, "-p", str(plugin), repro=(str(repro),))
    assert r.returncode == 3, r.stderr + r.stdout
    assert "Traceback" not in r.stderr
    line = next(x for x in r.stderr.splitlines() if "error:" in x)
    assert ("plugin 'boom' raised in bisectkit_classify: ValueError: cannot parse the "
            "runtime's output (traceback in ") in line
    log = Path(line.split("(traceback in ")[1].rstrip(")"))
    assert "Traceback" in log.read_text() and "_parse" in log.read_text()
    assert snapshot(world) == before


# Demonstrates: a plugin raising in bisectkit_addoption (called while the command line is
# parsed, before any other hook) was "internal error" with a traceback, exit 70, not the
# one line naming the plugin and the hook with exit 3 that every other hook gives.
def test_a_plugin_raising_in_addoption_is_one_line_exit_3(world: World, tmp_path: Path):
    plugin = tmp_path / "badopt.py"
    plugin.write_text(textwrap.dedent("""
        from bisectkit import hookimpl

        @hookimpl
        def bisectkit_addoption(parser):
            raise RuntimeError("option table is broken")
    """))
    repro = script(tmp_path / "repro.sh", "exit 0\n")
    r = run(world, "-p", str(plugin), repro=(str(repro),), good=190, bad=210)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    assert ("plugin 'badopt' raised in bisectkit_addoption: RuntimeError: option table is "
            "broken") in r.stderr
