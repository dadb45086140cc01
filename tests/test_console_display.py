"""Where am I? The live status panel, lines that fit the terminal, summaries after an abort.

The panel and the step lines are rendered into fixed-width consoles (80 and
120 columns); the CLI is driven end to end, piped and under a real 80-column
pty.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest
from helpers.advance import BASE, advance, spec, with_smoke
from helpers.histories import SMALL
from helpers.sessions import pty_run
from helpers.worlds import SUBMODULE, World, cli, git_cli
from rich.console import Console as RichConsole

from bisectkit.model import CommitInfo, Sha
from bisectkit.model.documents import StepJSON
from bisectkit.text import clock, eta, fit, pack, plural
from bisectkit.ui.console import Console
from bisectkit.ui.livestatus import Status, render

GOOD_IF = "device .* not found"
LONG = ("[mlir][linalg] Teach the tiling interface about reductions over dynamically "
        "shaped tensors with padding")
SHA = "0123456789abcdef0123456789abcdef01234567"
ESCAPE = re.compile(r"\x1b|\x9b")


def _info(sha: str = SHA, subject: str = LONG) -> CommitInfo:
    return CommitInfo(sha=Sha(sha), subject=subject, author="A U Thor <a@example.com>",
                      date="2026-01-01", message=f"{subject}\n\nBody.\n", parents=())


def _status() -> Status:
    status = Status()
    status.started -= 754  # 12:34 into the run
    status.candidate(3, SHA, LONG, remaining=74, steps_left=7)
    status.step_done({"index": 1, "source": "run", "prepare_s": 1.0, "build_s": 50.0,
                      "repro_s": 9.0})
    status.set_phase("build")
    status.line = "[1234/5678] Building CXX object lib/Dialect/Linalg/Transforms/" \
                  "TilingInterfaceImpl.cpp.o with a very long command line"
    return status


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


@pytest.mark.parametrize("width", [80, 120])
def test_the_panel_fits_the_width_and_shows_every_field(width: int) -> None:
    status = _status()
    status.jobs = [{"index": 4, "commit": SHA, "subject": LONG, "phase": "repro",
                    "where": "localhost", "elapsed": 65.0, "line": LONG * 2}]
    rec = RichConsole(width=width, record=True, file=io.StringIO(), force_terminal=True)
    rec.print(render(status, width))
    text = rec.export_text()
    assert all(len(line) <= width for line in _lines(text)), text
    assert "step 3 of ~9" in text and "74 left" in text
    assert "elapsed 12:34" in text
    assert "ETA ~7:00" in text  # the median step (60 s) times 7 steps left
    assert "build 0:00" in text and SHA[:12] in text
    assert "> [1234/5678] Building CXX" in text
    assert "localhost" in text and "repro" in text  # the --jobs table, in the same panel


def _printed(width: int) -> str:
    out = io.StringIO()
    console = Console(out, width=width)
    live = console.live()
    live.__enter__()
    console.header(["bisecting submodule " + "third_party/" * 8 + "llvm-project",
                    "    revert      a568757ee710  " + LONG + "  (reverts 8f09f77ed1ca)"], 9)
    console.step_start(12, _info(), 1234, 11)
    console.details({"patches": [{"kind": "cherry-pick", "commit": SHA, "action": "applied",
                                  "why": "63a066723158 is not in the candidate yet, " * 3,
                                  "subject": "a fix picked early", "refers_to": None,
                                  "seconds": 0.01}],
                     "submodules": []}, 1)
    step: StepJSON = {"index": 12, "commit": SHA, "verdict": "good", "source": "run",
                      "reason": f"exit 1, matched --good-if '{GOOD_IF}' " * 2,
                      "files_written": 1, "prepare_s": 0.03, "build_s": 925.5,
                      "repro_s": 12.25}
    console.step_done(dict(step))
    console.summary([step], None)
    console.found(_info(), {})
    console.inconclusive([_info(), _info("f" * 40)])
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 120])
def test_step_lines_fit_without_escape_codes_when_piped(width: int) -> None:
    text = _printed(width)
    assert not ESCAPE.search(text)
    lines = _lines(text)
    # Only a word longer than a whole line may stick out (a path is never cut: it is what
    # the reader needs); the full sha lines are checked below.
    too_long = [line for line in lines if len(line) > width and SHA not in line
                and len(line.split()) > 1]
    assert not too_long, text
    # The full sha is kept where it is copied from: the answer and the inconclusive list.
    assert f"{SHA} is the first bad commit" in lines
    assert any(line.startswith(f"{'f' * 40} [mlir]") for line in lines)
    joined = "\n".join(lines)
    assert "[step 12] testing 0123456789ab [mlir]" in joined
    assert "1234 left, roughly 11 steps; elapsed 0:00, ETA ?" in joined
    assert "build 925.5 s" in joined and "build 92\n" not in joined  # never cut mid-word
    assert "1 file written" in joined and "1 files" not in joined
    assert "summary: 1 step (1 good, 0 bad, 0 skip, 0 cached)" in joined
    assert "summary: 1 steps" not in joined


def test_layout_helpers() -> None:
    assert plural(1, "step") == "1 step" and plural(2, "patch", "patches") == "2 patches"
    assert clock(5) == "0:05" and clock(3723) == "1:02:03"
    assert eta([], 5) is None and eta([10.0, 30.0, 20.0], 3, 5.0) == 55.0
    assert fit("[step 1] ", "a subject", "  (tail)", 80) == ("a subject", False)
    middle, wrapped = fit("x" * 40, "s" * 60, "t" * 30, 80)
    assert wrapped and len("x" * 40 + middle) <= 80 and middle.endswith("…")
    assert pack(["aaaa", "bbbb", "cccc"], 10, first="s: ", sep=" ") == ["s: aaaa", "    bbbb",
                                                                        "    cccc"]


def _abort_repro(world: World) -> str:
    path = world.root / "abort.sh"
    path.write_text("#!/bin/sh\necho about to crash\nexit 130\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def _run_args(world: World) -> list[str]:
    return ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh"]


def test_an_aborted_run_counts_its_step_and_sums_up_before_restoring(world: World) -> None:
    r = cli(world, *_run_args(world), "--", _abort_repro(world))
    assert r.returncode != 0
    out = r.stdout
    assert "summary: 1 step (0 good, 0 bad, 0 skip, 0 cached, 1 stopped)" in out, out
    assert out.index("summary:") < out.index("restored ")
    assert not ESCAPE.search(out)


def test_git_bisect_patched_run_abort_counts_the_step(world: World) -> None:
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    r = git_cli(world, "run", "--build", "./build.sh", _abort_repro(world))
    assert r.returncode != 0
    assert "summary: 1 step (0 good, 0 bad, 0 skip, 0 cached, 1 stopped)" in r.stdout, r.stdout
    assert git_cli(world, "reset").returncode == 0


def test_the_panel_shows_on_an_80_column_terminal(world: World) -> None:
    text, code = pty_run(world, 80, *_run_args(world), "--build", "./build.sh && sleep 0.4",
                          "--good-if", GOOD_IF, "--", "./repro.sh", timeout=120)
    assert code == 0, text
    plain = re.sub(r"\x1b\[[0-9;?]*[@-~]", "", text)
    assert re.search(r"step \d of ~\d+  \d+ left  elapsed \d:\d\d  ETA", plain), plain
    assert "\x1b[?25l" in text and text.rindex("\x1b[?25h") > text.rindex("\x1b[?25l")
    assert f"{world.sha(200)} is the first bad commit" in plain
    # The answer stands out (bold red), and comes after the panel is gone.
    assert re.search(r"\x1b\[1;31m" + world.sha(200), text)
    assert plain.rindex("restored ") > plain.rindex("summary:")


@pytest.fixture
def small(world_factory, tmp_path: Path) -> World:
    return world_factory(tmp_path, SMALL)


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
        # Ctrl-C while a long line shows in the panel, once the panel is drawn whole: its
        # last line, the output line, ends with the ellipsis of the cut (the echo, "^C",
        # then lands at the end of the panel, where the cursor is).
        if not interrupted and re.search(r"> x+…", "".join(out)):
            child.sendintr()
            interrupted = True
    child.close()
    plain = re.sub(r"\x1b\[[0-9;?]*[@-~]", "", "".join(out))
    panel_lines = [line for line in re.split(r"\r\n|\r", plain) if line.startswith("> x")]
    assert panel_lines, plain
    # (the echo itself, "^C", is the terminal's, not the panel's)
    assert max(len(line.removesuffix("^C")) for line in panel_lines) <= 78, panel_lines
    assert "summary:" in plain and child.exitstatus == 130, plain[-2000:]


def test_trace_track_names_keep_the_subject(world: World, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    r = cli(world, *_run_args(world), "--good-if", GOOD_IF, "--trace", str(trace),
            "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    import json
    names: list[Any] = [e["args"]["name"] for e in json.loads(trace.read_text())["traceEvents"]
                        if e["ph"] == "M"]
    assert f"step 1: {world.sha(150)[:12]} upstream commit 150: touch lib/file10.txt" in names
    assert os.path.exists(trace)


def test_advance_sums_up_before_restoring(world_factory: Any, tmp_path: Path) -> None:
    w = with_smoke(world_factory(tmp_path, spec(bug_at=BASE + 5)))
    r, _ = advance(w, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.index("summary: 7 steps") < r.stdout.index("restored ")
