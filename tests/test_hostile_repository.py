"""A repository whose text attacks the terminal: it is shown, never obeyed.

The culprit's subject clears the screen, writes the clipboard (OSC 52), sets the
window title, carries a C1 CSI, backspaces, a bidi override, a carriage return
followed by a ``git bisect-patched good`` line, Markdown that would break a
pasted report, an HTML entity and a team @mention; its author sets the title too;
the reverted upstream commit (so the fork's revert patch) carries an OSC 8 link and
a bidi isolate; the submodule's branch name has a bidi override. Whatever bisectkit
prints or writes (console, errors, the report, the step logs, the replay log, the
trace) must hold none of those characters raw, while ``--json`` keeps the exact
text (escaped by JSON).
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from helpers.worlds import SUBMODULE, World, WorldFactory, cli, git_cli, snapshot
from worldgen import WorldSpec

from bisectkit import safetext
from bisectkit.model import CommitInfo
from bisectkit.ui.console import Console
from bisectkit.ui.report import render_markdown

EVIL = (b"Fix \x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07 c1\xc2\x9b31m bs\x08\x08 "
        b"\xe2\x80\xaebidi | `tick` <script>alert(1)</script> [click](http://evil.example)"
        b" &#x202E;gpj.exe cc @llvm/security-team\rgit bisect-patched good " + b"0" * 40
        + b"\n\nbody \x1b[31mred\x1b[0m\n")
EVIL_REVERTED = b"feature \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \xe2\x81\xa6isolate\n"
EVIL_AUTHOR = b"Mal\x1b]0;author\x07lory"
SPEC = WorldSpec(commits=40, merge_base=30, bug_at=20, build_breaks=[], feature_prep=5,
                 reverted=12, picks=[], pick_by_patch_id=None, local_conflict=None,
                 messages={20: EVIL, 12: EVIL_REVERTED}, authors={20: EVIL_AUTHOR})
GOOD_IF = "device .* not found"
#: How the culprit's subject is shown.
SHOWN = ("Fix ^[[2J^[]52;c;ZXZpbA==^G^[]0;pwned^G c1<U+009B>31m bs^H^H <U+202E>bidi | `tick` "
         "<script>alert(1)</script> [click](http://evil.example) &#x202E;gpj.exe cc "
         "@llvm/security-team^Mgit bisect-patched good ")


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey (or that reorder or hide text)."""
    return sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\t" and
                   unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})


@pytest.fixture
def hostile(world_factory: WorldFactory, tmp_path: Path) -> World:
    return world_factory(tmp_path, SPEC)


def _run_argv(w: World, *extra: str) -> list[str]:
    return ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--good", w.sha(10),
            "--bad", w.sha(30), "--build", "./build.sh", "--good-if", GOOD_IF, *extra, "--",
            "./repro.sh"]


def test_a_run_shows_the_hostile_culprit_and_writes_it_safely(hostile: World, tmp_path: Path):
    w = hostile
    before = snapshot(w)
    out, md, trace = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "t.json"
    r = cli(w, *_run_argv(w, "--json", str(out), "--report", str(md), "--trace", str(trace)))
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(20)} is the first bad commit" in r.stdout
    assert unsafe(r.stdout + r.stderr) == []
    assert "Author: Mal^[]0;author^Glory <dev@example.com>" in r.stdout
    assert SHOWN in " ".join(r.stdout.split())
    assert "^[]8;;http://evil^[\\link" in r.stdout  # the revert patch's subject
    assert snapshot(w) == before

    # --json: the exact text, escaped by JSON.
    result = json.loads(out.read_text())
    assert result["first_bad_info"]["subject"] == EVIL.split(b"\n")[0].decode()
    assert result["first_bad_info"]["author"] == f"{EVIL_AUTHOR.decode()} <dev@example.com>"
    assert unsafe(out.read_text()) == []
    # --trace: the names and arguments shown, as the console shows them.
    events = json.loads(trace.read_text())["traceEvents"]
    names = [e["args"]["name"] for e in events if e["name"] == "thread_name"]
    assert any("Fix ^[[2J" in name for name in names), names
    assert "\\u001b" not in trace.read_text() and "\\u202e" not in trace.read_text()

    # The report pastes as text: no markup from the subject, no control character.
    report = md.read_text(encoding="utf-8")
    assert unsafe(report) == []
    assert "\\<script>alert(1)\\</script>" in report and "\\`tick\\`" in report
    assert "[click\\](http://evil.example)" in report
    # An HTML entity stays text (rendered, &#x202E; would be a real bidi override), and a
    # team mention is in a code span (pasted into an issue, it would notify the team).
    assert "\\&#x202E;gpj.exe cc `@llvm/security-team`" in report
    assert re.findall(r"(?<!\\)&#", report) == [] and report.count("@llvm") == \
        report.count("`@llvm/security-team`")
    assert "^[[2J^[]52;c;ZXZpbA==^G" in report

    # Step logs and the replay log: nothing to obey, and the log replays as it was.
    for step in result["steps"]:
        assert unsafe(Path(step["log"]).read_text(encoding="utf-8")) == [], step["log"]
    last_log = w.superproject / ".git" / "bisectkit" / "last-log"
    assert unsafe(last_log.read_text(encoding="utf-8")) == []
    r = git_cli(w, "replay", str(last_log))
    assert r.returncode == 0, r.stderr + r.stdout
    assert unsafe(r.stdout + r.stderr) == []
    log = git_cli(w, "log").stdout
    assert f"# first bad commit: [{w.sha(20)}] Fix ^[[2J" in log
    assert sum(line.startswith("git bisect-patched good") for line in log.splitlines()) == \
        sum(s["verdict"] == "good" and s["source"] == "run" for s in result["steps"])
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before


def test_status_a_manual_session_and_a_hostile_branch_name(hostile: World):
    w = hostile
    w.git(w.submodule, "branch", "-m", "main", "main\u202egnp.exe")
    before = snapshot(w)
    r = cli(w, "status", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            extra_env={"COLUMNS": "200"})  # wide enough for the whole subject
    assert r.returncode == 0, r.stderr + r.stdout
    assert unsafe(r.stdout + r.stderr) == []
    assert "(main<U+202E>gnp.exe)" in r.stdout
    assert 'Revert "feature ^[]8;;http://evil^[\\link^[]8;;^[\\ <U+2066>isolate"' in r.stdout

    outputs = [git_cli(w, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                       w.sha(21), w.sha(19))]
    outputs += [git_cli(w, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh"),
                git_cli(w, "status"), git_cli(w, "log"), git_cli(w, "reset")]
    for r in outputs:
        assert r.returncode == 0, r.stderr + r.stdout
        assert unsafe(r.stdout + r.stderr) == [], r.args
    assert f"{w.sha(20)} is the first bad commit" in outputs[1].stdout
    assert "main<U+202E>gnp.exe" in outputs[-1].stdout  # restored to it, named as shown
    assert snapshot(w) == before


def test_advance_shows_and_commits_the_hostile_subject_safely(world_factory: WorldFactory,
                                                             tmp_path: Path):
    # The pin can move to upstream 35, whose subject is hostile: it heads the pin commit.
    w = world_factory(tmp_path, dataclasses.replace(SPEC, bug_at=36, messages={
        35: EVIL, 12: EVIL_REVERTED}, authors={35: EVIL_AUTHOR}))
    smoke = w.superproject / "smoke.sh"
    smoke.write_text("#!/bin/sh\n! grep -q miscompile third_party/llvm-project/lib/bug.txt\n",
                     encoding="utf-8")
    smoke.chmod(0o755)
    w.git(w.superproject, "add", "smoke.sh")
    w.git(w.superproject, "commit", "-qm", "smoketest")
    report = tmp_path / "advance.md"
    r = cli(w, "advance", "--build", "./build.sh", "--report", str(report), "--apply",
            "--branch", "sm-next", "--", "./smoke.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert unsafe(r.stdout + r.stderr) == [] and unsafe(report.read_text()) == []
    message = w.git(w.superproject, "log", "-1", "--format=%B")
    assert message.startswith(f"Advance {SUBMODULE} to {w.sha(35)[:12]}: Fix ^[[2J^[]52;c;")
    assert unsafe(message) == []


def test_an_error_line_shows_control_characters(hostile: World):
    r = cli(hostile, *_run_argv(hostile)[:5], "--good", "nope\x1b]0;title\x07", "--bad",
            hostile.sha(30), "--", "./repro.sh")
    assert r.returncode == 2, r.stderr + r.stdout
    assert "unknown revision 'nope^[]0;title^G'" in r.stderr
    assert unsafe(r.stdout + r.stderr) == []


# -- the choke points, in process -----------------------------------------------------------
HOSTILE = "a\x1b[2J\x1b]52;c;eA==\x07\r\x08\x00\x7f\x85\x9b\u202e\u2066\u200b\u2028\udce9\ttab\nnl"


def test_safetext_shows_every_control_format_and_separator_character():
    assert safetext.one_line(HOSTILE) == ("a^[[2J^[]52;c;eA==^G^M^H^@^?<U+0085><U+009B><U+202E>"
                                          "<U+2066><U+200B><U+2028>\\xe9^Itab^Jnl")
    assert safetext.lines(HOSTILE).endswith("\\xe9\ttab\nnl")
    plain = "[mlir] Fold adds — naïve 東京 🔥 <b> `x` | y"
    assert safetext.one_line(plain) is plain and safetext.lines(plain) is plain
    shown = [c for c in map(chr, range(0x110000)) if c not in "\n\t" and
             unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert unsafe(safetext.lines("".join(shown))) == []
    assert safetext.one_line(safetext.one_line(HOSTILE)) == safetext.one_line(HOSTILE)
    assert safetext.data({"a": [HOSTILE, 1, None], "b": (HOSTILE,)}) == {
        "a": [safetext.one_line(HOSTILE), 1, None], "b": [safetext.one_line(HOSTILE)]}


def test_every_console_method_shows_what_it_is_given():
    buf = io.StringIO()
    console = Console(buf, width=80)
    info = CommitInfo(sha="c" * 40, subject=HOSTILE, author=HOSTILE, date=HOSTILE,
                      message=f"{HOSTILE}\r\n\r\n{HOSTILE}\n", parents=())
    patch = {"kind": "local", "commit": "a" * 40, "action": "conflict", "why": HOSTILE}
    step = {"index": 1, "commit": "c" * 40, "verdict": "skip", "reason": HOSTILE,
            "flags": [HOSTILE], "source": "run"}
    console.header([HOSTILE, HOSTILE], 3)
    console.step_start(1, info, 5, 3)
    console.details({"patches": [patch], "submodules": [{"path": HOSTILE, "old": None,
                                                         "new": "b" * 40}]}, 1)
    console.phase(HOSTILE, HOSTILE)
    console.jobs([{"index": 1, "commit": "c" * 40, "subject": HOSTILE, "phase": "build",
                   "elapsed": 1.0, "line": HOSTILE, "where": HOSTILE}])
    console.step_done(step)
    console.summary([step])
    console.found(info, {"patches": [patch]})
    console.inconclusive([info])
    console.stack_status(_status_data(), 0)
    console.line(HOSTILE)
    console.error(HOSTILE)
    printed = buf.getvalue()
    assert unsafe(printed) == []
    assert printed.count("^[[2J") >= 14
    assert unsafe(str(console.status.jobs) + console.status.subject) == []


def _status_data() -> dict[str, Any]:
    return {"submodule": HOSTILE, "head": "d" * 40, "branch": f"refs/heads/{HOSTILE}",
            "upstream": HOSTILE, "upstream_sha": "e" * 40, "upstream_guessed": HOSTILE,
            "merge_base": "f" * 40, "merge_base_subject": HOSTILE, "clean": False,
            "patches": [{"kind": "local", "sha": "a" * 40, "refers_to": None,
                         "upstream_has_it": False, "at_upstream_head": "applied",
                         "subject": HOSTILE, "why": HOSTILE}],
            "upstream_commits_since_merge_base": 1, "pathspec": [HOSTILE],
            "affecting": [{"commit": "b" * 40, "subject": HOSTILE}]}


def test_the_report_keeps_hostile_text_out_of_the_markup(tmp_path: Path):
    log = tmp_path / "step-1.log"
    log.write_text(f"# step 1: {'c' * 40} bad (exit 1)\n# --- repro ---\nerror: {HOSTILE}\n",
                   encoding="utf-8", errors="surrogateescape")
    tricky = "a`b``c|d</td><script>x</script>[l](http://e)\\"
    result = {
        "status": "found", "strategy": "submodule", "submodule": f"`{tricky}`",
        "upstream": tricky, "good": ["a" * 40], "bad": "c" * 40, "first_bad": "c" * 40,
        "first_bad_info": {"subject": HOSTILE + tricky, "author": HOSTILE, "date": "d"},
        "previous": {"sha": "b" * 40, "subject": tricky, "patches": []},
        "patches_at_first_bad": [{"kind": "local", "commit": "a" * 40, "action": "conflict",
                                  "why": tricky, "subject": tricky}],
        "steps": [{"index": 1, "commit": "c" * 40, "verdict": "bad", "reason": tricky,
                   "log": str(log), "source": "run"},
                  {"index": 2, "commit": "b" * 40, "verdict": "skip", "reason": tricky,
                   "source": "run"}],
        "reproduce": f"bisectkit run -- {HOSTILE}",
    }
    md = render_markdown(result)
    assert unsafe(md) == []
    assert md.splitlines()[0] == "### bisectkit: first bad commit in " \
                                 "``` `a`b``c|d</td><script>x</script>[l](http://e)\\` ```"
    assert "| a\\`b\\`\\`c\\|d\\</td>\\<script>x\\</script>[l\\](http://e)\\\\ |" in md
    assert "on ```a`b``c|d</td><script>x</script>[l](http://e)\\```:" in md
    tables: list[list[int]] = [[]]  # each table's cell counts, row by row
    for line in md.splitlines():
        if line.startswith("|"):
            tables[-1].append(len(re.findall(r"(?<!\\)\|", line)))
        elif tables[-1]:
            tables.append([])
    assert len(tables) >= 3 and all(len(set(counts)) <= 1 for counts in tables), tables
