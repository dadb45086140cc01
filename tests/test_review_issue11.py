"""Adversarial review of issue 11 ("a verdict means what it says"): each test is a defect
found by driving the real CLI on a real git world; the comment on each says what it shows."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers.repros import BUG, run, script
from helpers.worlds import SUBMODULE, World


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


# Holds up (no defect): editing a --cache-input file tests again instead of replaying.
def test_editing_a_cache_input_tests_again(world: World, tmp_path: Path):
    data = tmp_path / "expected.txt"
    data.write_text("miscompile\n")
    repro = script(tmp_path / "repro.sh", f"""\
        if grep -q miscompile {data} && {BUG}; then exit 1; fi
        exit 0
    """)
    out = tmp_path / "r.json"
    r = run(world, "--cache-input", str(data), repro=(str(repro),), good=190, bad=210)
    assert f"{world.sha(200)} is the first bad commit" in r.stdout, r.stderr
    data.write_text("fixed\n")
    r = run(world, "--cache-input", str(data), repro=(str(repro),), good=190, bad=210,
            json_path=out)
    assert r.returncode == 5, r.stderr + r.stdout[-2000:]  # the bad end no longer tests bad
    assert not [s for s in json.loads(out.read_text())["steps"] if s["source"] == "cache"]


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
