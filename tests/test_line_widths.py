"""Every line bisectkit prints fits the terminal: $COLUMNS, else the terminal's width, else 80.

Each family of messages (a run with its steps, conflict hint, summary and answer; a manual
session; ``bisectkit status``; ``bisectkit advance``; the ``--jobs`` live panel on a real
pty; error lines) is printed by the real CLI at 60, 80 and 120 columns, on worlds whose
upstream subjects are far longer than a line, and every line's width is measured in
terminal cells. Subjects and step reasons are ellipsized, prose breaks between words.
Kept whole on purpose: git's answer line (``<sha> is the first bad commit``, which scripts
search for), ``git bisect-patched log`` (``replay`` reads it back) and ``visualize --log``
(``git log``'s shape), a command to copy, and a word longer than a whole line (a path: it
gets a line of its own, never broken). Error lines break on a terminal only: piped, they
stay one line.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from helpers.advance import BASE, advance, spec, with_smoke
from helpers.lines import flat
from helpers.sessions import pty_run
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli
from rich.cells import cell_len
from rich.console import Console as RichConsole

from bisectkit.text import ELLIPSIS, cells, ellipsize, fit, fold
from bisectkit.ui.console import Console
from bisectkit.ui.livestatus import Status, render

WIDTHS = (60, 80, 120)
SUBJECT = ("[mlir][linalg] Teach the tiling interface about reductions over dynamically "
           "shaped tensors with padding and dynamic strides")
#: The first bad commit; the local fixup conflicts with upstream from 360 until 366,
#: where the search's midpoints fall: some steps skip, the run still finds the culprit.
BUG = 370
SPEC = WorldSpec(bug_at=BUG, build_breaks=[], local_conflict=360, local_conflict_until=366,
                 messages={n: f"{SUBJECT} ({n})\n".encode() for n in range(1, 401)})
#: A repro that prints nothing: every line checked is bisectkit's own.
QUIET = "#!/bin/sh\n! grep -q miscompile third_party/llvm-project/lib/bug.txt\n"
ANSWER = re.compile(r"^[0-9a-f]{40} is the first \S+ commit$")
#: A command to copy (after a short label): kept whole, as a broken one would not run.
COMMAND = re.compile(r"\s*(?:[\w ()-]+:\s+)?(?:bisectkit|git bisect-patched) [a-z][a-z-]* ")
CSI = re.compile(r"\x1b\[[0-9;?]*([@-~])")


@pytest.fixture
def long_world(world_factory, tmp_path: Path) -> World:
    w = world_factory(tmp_path, SPEC)
    repro = w.root / "quiet.sh"
    repro.write_text(QUIET, encoding="utf-8")
    repro.chmod(0o755)
    return w


def too_wide(text: str, width: int) -> list[str]:
    """The lines of ``text`` wider than ``width`` cells (colour codes aside), but git's
    answer line, a command to copy and a word alone on its line (a path longer than a
    line is never broken: it is what the reader copies)."""
    lines = [CSI.sub("", line) for line in text.splitlines()]
    return [line for line in lines if cell_len(line) > width and not ANSWER.match(line)
            and not COMMAND.match(line) and len(line.split()) > 1]


def env_at(world: World, width: int) -> dict[str, str]:
    """The environment of a command printing to ``width`` columns."""
    return {"COLUMNS": str(width)}


def run_args(world: World) -> list[str]:
    return ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(300), "--bad", world.sha(400), "--build", "./build.sh"]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_run_fits_steps_conflict_hint_summary_and_answer(long_world: World, width: int):
    r = cli(long_world, *run_args(long_world), "--", str(long_world.root / "quiet.sh"),
            extra_env=env_at(long_world, width))
    assert r.returncode == 0, r.stderr + r.stdout
    out = r.stdout
    assert too_wide(out + r.stderr, width) == [], out
    assert f"{long_world.sha(BUG)} is the first bad commit" in out.splitlines()
    assert "because a local patch conflicts; --on-conflict drop tests such candidates" \
        in flat(out)
    # A step's subject and a skip's reason are cut, not wrapped onto more lines.
    skipped = [line for line in out.splitlines() if re.match(r"\[step \d+\] \w+ skip ", line)]
    assert skipped and all(re.search(r" skip \(conflict in .*\)", line) for line in skipped)
    assert any(ELLIPSIS in line for line in out.splitlines() if " testing " in line)
    assert "summary: " in out


@pytest.mark.parametrize("width", WIDTHS)
def test_a_manual_session_fits(long_world: World, width: int, monkeypatch):
    monkeypatch.setitem(long_world.env, "COLUMNS", str(width))
    w = long_world
    printed: list[str] = []
    for args in (("start", "--submodule", SUBMODULE, "--upstream", "upstream/main"),
                 ("bad", w.sha(400)), ("good", w.sha(300)), ("status",), ("skip",),
                 ("good",), ("bad",), ("visualize",), ("status",),
                 ("run", "--build", "./build.sh", str(w.root / "quiet.sh"))):
        r = git_cli(w, *args)
        assert r.returncode in (0, 1), (args, r.stderr)
        printed.append(r.stdout + r.stderr)
    # The log is data: 'replay' reads its lines back, so none is ever broken.
    log = git_cli(w, "log").stdout
    assert any(line.startswith("git bisect-patched start --submodule") and
               line.endswith(w.sha(300)) for line in log.splitlines()), log
    printed.append(git_cli(w, "reset").stdout)
    text = "\n".join(printed)
    assert too_wide(text, width) == [], text
    assert "Build and run the repro, then:" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_status_fits_and_names_its_upstream_once(long_world: World, width: int):
    r = cli(long_world, "status", extra_env=env_at(long_world, width))
    assert r.returncode == 0, r.stderr
    assert too_wide(r.stdout, width) == [], r.stdout
    text = flat(r.stdout)
    assert text.count("guessed:") == 1 and "upstream: upstream/main" not in text, r.stdout
    assert f"upstream upstream/main at {long_world.sha(400)[:12]} (guessed: nearest " \
           "merge-base" in text
    assert f"{long_world.sha(400)[:12]} {SUBJECT[:20]}" in text  # the newest, ellipsized
    # The patch table keeps each patch's sha, its action and the start of its subject.
    assert re.search(r"revert +[0-9a-f]{12}  applied  Revert \"\[mlir\]", r.stdout), r.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_advance_fits(world_factory, tmp_path: Path, width: int, monkeypatch):
    messages = {n: f"{SUBJECT} ({n})\n".encode() for n in range(1, 401)}
    w = with_smoke(world_factory(tmp_path, spec(bug_at=BASE + 5, messages=messages)))
    monkeypatch.setitem(w.env, "COLUMNS", str(width))
    r, result = advance(w, tmp_path)
    assert r.returncode == 0, r.stderr
    assert result["status"] == "advanced"
    assert too_wide(r.stdout + r.stderr, width) == [], r.stdout


def screen_lines(text: str) -> list[str]:
    """What a terminal shows as separate lines: a cursor move or line erase starts a new
    one, like a line feed or a carriage return."""
    split = CSI.sub(lambda m: "" if m.group(1) == "m" else "\n", text)
    return [line for line in re.split(r"\r\n|\r|\n", split) if line]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_jobs_panel_fits_on_a_terminal(long_world: World, width: int):
    text, code = pty_run(long_world, width, *run_args(long_world), "--jobs", "2",
                         "--build", "./build.sh && sleep 0.3", "--",
                         str(long_world.root / "quiet.sh"))
    assert code == 0, text[-3000:]
    lines = screen_lines(text)
    assert any(line.startswith("worker ") and "candidate" in line for line in lines), text
    assert too_wide("\n".join(lines), width) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_error_lines_fit_a_terminal_and_keep_their_first_words(long_world: World, width: int):
    w = long_world
    deep = "/nonexistent/" + "a-rather-long-directory-name/" * 4 + "repro.sh"
    errors = [
        pty_run(w, width, "run", "--good", w.sha(0), "--bad", "no-such-revision-" + "x" * 70,
                "--", "./repro.sh"),
        pty_run(w, width, "run", "--good", w.sha(0), "--bad", w.sha(300), "--", deep),
        pty_run(w, width, "status", cwd=w.root),
    ]
    for text, code in errors:
        lines = [line for line in screen_lines(text) if line.strip()]
        assert code == 2, text
        assert lines[0].startswith("bisectkit: error: "), text
        assert too_wide("\n".join(lines), width) == [], text
        # Continuations are indented: the error is one message, not several.
        assert all(line.startswith("  ") for line in lines[1:]), text
    assert f"  {deep}" in screen_lines(errors[1][0])  # whole, on a line of its own


def test_error_lines_stay_whole_when_piped_without_columns(long_world: World, monkeypatch):
    """Scripts and logs search an error for its words: piped, it is one line."""
    monkeypatch.delitem(long_world.env, "COLUMNS", raising=False)
    deep = "/nonexistent/" + "a-rather-long-directory-name/" * 4 + "repro.sh"
    r = cli(long_world, "run", "--good", long_world.sha(0), "--bad", long_world.sha(300),
            "--", deep)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert deep in r.stderr


# -- the helpers, in process -------------------------------------------------------------

def test_fold_breaks_between_words_with_a_hanging_indent() -> None:
    hint = ("1 step was skipped because a local patch conflicts; --on-conflict drop tests "
            "such candidates without it")
    assert fold(hint, 60) == ["1 step was skipped because a local patch conflicts;",
                              "  --on-conflict drop tests such candidates without it"]
    assert fold(hint, 120) == [hint]
    # The line's own indent and spacing are kept; continuations hang below it.
    assert fold("  upstream    origin/main at 0123456789ab (guessed: the only remote)", 42,
                more=" " * 12) == ["  upstream    origin/main at 0123456789ab",
                                   "              (guessed: the only remote)"]
    # A word longer than a line (a path) is never broken: it gets a line of its own.
    path = "/very/long/path/" * 6 + "file.txt"
    assert fold(f"error: not found: {path} (a typo?)", 40) == [
        "error: not found:", f"  {path}", "  (a typo?)"]


def test_widths_are_terminal_cells() -> None:
    wide = "漢字の件名" * 10  # two cells each
    assert cells(wide) == 100 and cells("é") == 1 and cells("e\u0301") == 1
    cut = ellipsize(wide, 21)
    assert cells(cut) <= 21 and cut.endswith(ELLIPSIS)
    assert all(cells(line) <= 30 for line in fold(" ".join([wide[:7]] * 8), 30))
    subject, spill = fit("[step 1] ", wide, "  (3 left)", 60)
    assert not spill and cells("[step 1] " + subject + "  (3 left)") <= 60


def test_a_step_reason_is_ellipsized_and_its_timings_move_below() -> None:
    out = io.StringIO()
    console = Console(out, width=60)
    console.step_done({"index": 3, "commit": "a" * 40, "verdict": "skip", "source": "run",
                       "reason": "conflict in c2fe00ee1066 ([local] fixup for our target): "
                                 "lib/local.txt", "prepare_s": 0.004, "build_s": 12.5})
    first, *rest = out.getvalue().splitlines()
    assert first.startswith("[step 3] aaaaaaaaaaaa skip (conflict in c2fe00ee1066")
    assert first.endswith(f"{ELLIPSIS})") and len(first) <= 60
    assert rest == ["    prepare 4 ms  build 12.5 s"]


def test_the_panel_header_and_table_agree_and_the_candidate_keeps_room() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    status = Status()
    status.candidate(4, sha, SUBJECT, remaining=50, steps_left=6)  # header: "checkout"
    status.jobs = [{"index": 4, "commit": sha, "subject": SUBJECT, "phase": "build",
                    "where": "ws-1", "elapsed": 42.0, "line": "[3/9] Linking " + "x" * 90},
                   {"index": 3, "commit": sha, "subject": SUBJECT, "phase": "repro",
                    "where": "ws-0", "elapsed": 7.0, "line": "ok"}]
    for width in (58, 78, 118):
        rec = RichConsole(width=width, record=True, file=io.StringIO(), force_terminal=True)
        rec.print(render(status, width))
        lines = rec.export_text().splitlines()
        assert all(cell_len(line.rstrip()) <= width for line in lines), lines
        header = next(line for line in lines if line.startswith(("build", "checkout")))
        assert header.startswith("build 0:42 "), lines  # as the table says
        row = next(line for line in lines if line.startswith("ws-1"))
        assert " build " in row and "checkout" not in "\n".join(lines)
        # The candidate column holds its sha and a recognisable part of its subject.
        assert f"{sha[:12]} [mlir]{'[linalg] Teach' if width > 60 else ''}" in row, lines


def test_the_summary_calls_cancelled_steps_cancelled() -> None:
    out = io.StringIO()
    console = Console(out, width=80)
    with console.live():
        for index in (1, 2, 3):
            console.status.candidate(index, "a" * 40, "s", remaining=9, steps_left=3)
        console.set_phase(2, "cancelled")
        record = {"index": 1, "commit": "a" * 40, "verdict": "bad", "source": "parallel",
                  "reason": "exit 1"}
        console.status.step_done(record)
        console.summary([record], None)  # type: ignore[list-item]
    assert "summary: 3 steps (0 good, 1 bad, 0 skip, 0 cached, 1 cancelled, 1 stopped)" \
        in out.getvalue()
