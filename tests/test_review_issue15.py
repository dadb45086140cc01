"""Defects found reviewing issue 15 (live panel, git parity, --all-parents), each driven
through the real CLI on a real git world."""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path

import pexpect
import pytest
from helpers.histories import SMALL, check_script, commit, merge
from helpers.worlds import World, cli


@pytest.fixture
def small(world_factory, tmp_path: Path) -> World:
    return world_factory(tmp_path, SMALL)


def test_a_nested_descent_does_not_bisect_the_main_line_a_side_branch_merged(small: World):
    """main: base c1..c8 c9 M c10; side (from base): s1 SX(merges c8) s2. s1 and c8 clash
    (HALF), so SX, s2 and M are bad and SX is named. Bisecting into SX, the commits it
    merged are c1..c8: all in M^1 (c9, tested good), none brought in by SX. They were
    bisected anyway (wasted builds; and a flaky one would be named, an ancestor of a good
    commit)."""
    w, repo = small, small.superproject
    c = {"base": w.git(repo, "rev-parse", "HEAD")}
    w.git(repo, "checkout", "-q", "-b", "side")
    c["s1"] = commit(w, repo, "side s1", side_txt="HALF")
    w.git(repo, "checkout", "-q", "main")
    for i in range(1, 9):
        c[f"c{i}"] = commit(w, repo, f"main c{i}", **{f"m{i}_txt": "x"},
                             **({"main_txt": "HALF"} if i == 8 else {}))
    w.git(repo, "checkout", "-q", "side")
    c["SX"] = merge(w, repo, "main", "Merge main into side")
    c["s2"] = commit(w, repo, "side s2", more_txt="s2")
    w.git(repo, "checkout", "-q", "main")
    c["c9"] = commit(w, repo, "main c9", m9_txt="x")
    c["M"] = merge(w, repo, "side", "Merge branch 'side'")
    c["c10"] = commit(w, repo, "main c10", m10_txt="x")
    out = w.root / "r.json"
    r = cli(w, "run", "--integrate", "--all-parents", "--good", c["base"], "--bad", c["c10"],
            "--json", str(out), "--", check_script(w))
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == c["SX"], r.stdout
    steps = [st["commit"] for st in result["steps"]]
    after_m = steps[steps.index(c["M"]) + 1:]
    main_line = {c[f"c{i}"] for i in range(1, 11)}
    assert not main_line & set(after_m), r.stdout
    assert result["descended"] == [c["M"]]


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


def test_the_panel_leaves_room_for_the_terminals_ctrl_c_echo(small: World):
    """The terminal echoes Ctrl-C as "^C" where the cursor is: the end of the panel's last
    line. A full-width line (a long build or repro line does that) wraps there, the panel
    scrolls up one line and its rule stays on the screen after the panel is taken down.
    Every panel line leaves two columns free, so nothing wraps."""
    long_line = "x" * 150
    repro = small.root / "chatty.sh"
    repro.write_text(f"#!/bin/sh\nfor i in 1 2 3 4 5 6; do echo {long_line}; sleep 0.2; done\n"
                     "exit 1\n", encoding="utf-8")
    repro.chmod(0o755)
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    child = pexpect.spawn(argv[0], [*argv[1:], "run", "--upstream", "upstream/main", "--good",
                                    small.sha(0), "--bad", small.sha(30), "--", str(repro)],
                          cwd=str(small.superproject), env=dict(small.env), encoding="utf-8",
                          dimensions=(24, 80), timeout=60)
    out: list[str] = []
    deadline, interrupted = time.monotonic() + 60, False
    while time.monotonic() < deadline:
        try:
            out.append(child.read_nonblocking(65536, timeout=0.3))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            break
        if not interrupted and "> xxxx" in "".join(out):
            time.sleep(0.3)
            child.sendintr()  # Ctrl-C while a long line shows in the panel
            interrupted = True
    child.close()
    plain = re.sub(r"\x1b\[[0-9;?]*[@-~]", "", "".join(out))
    panel_lines = [line for line in re.split(r"\r\n|\r", plain) if line.startswith("> x")]
    assert panel_lines, plain
    # (the echo itself, "^C", is the terminal's, not the panel's)
    assert max(len(line.removesuffix("^C")) for line in panel_lines) <= 78, panel_lines
    assert "summary:" in plain and child.exitstatus == 130, plain[-2000:]
