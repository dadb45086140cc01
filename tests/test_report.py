"""Paste-ready reports (bisectkit.ui.report): pure, from result dicts and step log files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bisectkit.ui.report import commit_link, error_lines, render_markdown, render_terminal

URL = "https://github.com/llvm/llvm-project/commit/{sha}"


def sha(c: str) -> str:
    """A 40-character fake sha made of one repeated hex digit."""
    return c * 40


GOOD, BAD, CULPRIT, PREV, MID = sha("1"), sha("9"), sha("c"), sha("b"), sha("5")
REVERT, PICK, LOCAL = sha("a"), sha("d"), sha("e")

BUILD_OUT = """\
[1/300] Building CXX object lib/Foo.cpp.o
-- LLVM_ENABLE_ASSERTIONS=ON
warning: unused variable 'x' [-Wunused-variable]
"""
REPRO_OUT = """\
compiling model.mlir
\x1b[31merror:\x1b[0m failed to legalize operation 'arith.addf'
note: see current operation
iree-compile: Foo.cpp:12: void f(): Assertion `x && "bad"' failed.
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/
Stack dump:
0.\tProgram arguments: iree-compile model.mlir
 #0 0x0000 llvm::sys::PrintStackTrace
error: failed to legalize operation 'arith.addf'
"""


def write_log(tmp_path: Path, index: int, commit: str, verdict: str, reason: str,
              build: str = BUILD_OUT, repro: str = REPRO_OUT) -> str:
    """A step log in StepLogWriter's format."""
    path = tmp_path / f"step-{index}.log"
    path.write_text(f"# step {index}: {commit} {verdict} ({reason})\n"
                    f"# --- build ---\n{build}# --- repro ---\n{repro}", encoding="utf-8")
    return str(path)


def patch(commit: str, kind: str, action: str, why: str, subject: str = "") -> dict[str, Any]:
    return {"commit": commit, "subject": subject or f"{kind} patch", "kind": kind,
            "refers_to": None if kind == "local" else sha("f"), "action": action, "why": why}


def step(index: int, commit: str, verdict: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"index": index, "commit": commit, "verdict": verdict, "reason": reason,
            "source": "run", "patches": [], "files_written": 3, "build_s": 1.5,
            "repro_s": 0.2, **extra}


def found_result(tmp_path: Path, **over: Any) -> dict[str, Any]:
    """A found submodule bisect where the culprit was tested at step 3."""
    steps = [
        step(1, MID, "good", "exit 1, matched --good-if 'device .* not found'"),
        step(2, sha("7"), "skip", "conflict in e1e1e1e1e1e1 local fixup", source="auto"),
        step(3, CULPRIT, "bad", "exit 1",
             log=write_log(tmp_path, 3, CULPRIT, "bad", "exit 1")),
        step(4, PREV, "good", "exit 0"),
    ]
    result: dict[str, Any] = {
        "status": "found", "strategy": "submodule", "submodule": "third_party/llvm-project",
        "upstream": "upstream/main", "terms": {"old": "good", "new": "bad"},
        "good": [GOOD], "bad": BAD, "range_size": 300, "first_bad": CULPRIT,
        "first_bad_subject": "[mlir] Fold more adds",
        "first_bad_info": {"sha": CULPRIT, "subject": "[mlir] Fold more adds",
                           "author": "Jane Doe", "date": "2024-05-01 12:00:00 +0000",
                           "message": "[mlir] Fold more adds\n\nBody."},
        "patches_at_first_bad": [
            patch(REVERT, "revert", "applied", "reverts aaaa, which the candidate has"),
            patch(PICK, "cherry-pick", "dropped", "dddd is already upstream"),
            patch(LOCAL, "local", "applied", "local patch"),
        ],
        "previous": {"sha": PREV, "subject": "[NFC] Tidy up", "patches": [
            patch(REVERT, "revert", "applied", "reverts aaaa, which the candidate has"),
            patch(PICK, "cherry-pick", "applied", "dddd is not upstream yet"),
            patch(LOCAL, "local", "applied", "local patch"),
        ]},
        "candidates": [],
        "steps": steps,
        "command": "bisectkit run --submodule third_party/llvm-project --good 1111 --bad 9999 "
                   "--build ./build.sh -- ./repro.sh",
    }
    result.update(over)
    return result


def table_row(md: str, needle: str) -> str:
    """The one table row of ``md`` containing ``needle``."""
    rows = [line for line in md.splitlines() if line.startswith("|") and needle in line]
    assert len(rows) == 1, rows
    return rows[0]


# -- small pieces ------------------------------------------------------------------
def test_commit_link_expands_template_placeholders() -> None:
    assert commit_link(CULPRIT, URL) == f"[`{CULPRIT[:12]}`]({URL.format(sha=CULPRIT)})"
    assert commit_link(CULPRIT, "https://x/{short}/{sha}") == (
        f"[`{CULPRIT[:12]}`](https://x/{CULPRIT[:12]}/{CULPRIT})")
    assert commit_link(CULPRIT, None) == f"`{CULPRIT[:12]}`"
    assert commit_link(CULPRIT, "") == f"`{CULPRIT[:12]}`"


def test_error_lines_keeps_markers_drops_noise_dedups_and_caps() -> None:
    lines = error_lines(BUILD_OUT + REPRO_OUT, 100)
    assert lines == [
        "error: failed to legalize operation 'arith.addf'",
        "iree-compile: Foo.cpp:12: void f(): Assertion `x && \"bad\"' failed.",
        "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/",
        "Stack dump:",
    ]
    assert error_lines(REPRO_OUT, 2) == lines[:2]
    assert error_lines(REPRO_OUT, 0) == []
    assert error_lines("all fine\nwarning: meh\n", 5) == []


def test_error_lines_cuts_long_lines_and_handles_carriage_returns() -> None:
    text = "progress 10%\rprogress 90%\rLLVM ERROR: " + "x" * 500 + "\n  FAILED: ninja  \n"
    lines = error_lines(text, 5)
    assert lines[0].startswith("LLVM ERROR: xxx") and lines[0].endswith("...")
    assert len(lines[0]) <= 200
    assert lines[1] == "FAILED: ninja"


# -- found ---------------------------------------------------------------------------
def test_found_markdown_names_culprit_range_and_reproduce_command(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    md = render_markdown(result, URL)
    assert md.splitlines()[0] == "### bisectkit: first bad commit in `third_party/llvm-project`"
    link = f"[`{CULPRIT[:12]}`](https://github.com/llvm/llvm-project/commit/{CULPRIT})"
    assert f"**First bad commit:** {link} [mlir] Fold more adds" in md
    assert "Jane Doe" in md and "2024-05-01 12:00:00 +0000" in md
    assert "300 candidate commits, 4 steps (2 good, 1 bad, 1 skipped)" in md
    assert "`upstream/main`" in md
    assert f"Reproduce with:\n\n```sh\n{result['command']}\n```" in md
    assert md.endswith("```\n")


def test_patch_table_shows_actions_at_culprit_and_previous(tmp_path: Path) -> None:
    md = render_markdown(found_result(tmp_path), URL)
    assert f"`{PREV[:12]}`" in md and "[NFC] Tidy up" in md
    header = table_row(md, "| kind | patch |")
    assert CULPRIT[:12] in header and PREV[:12] in header
    # Patches are the fork's commits: no upstream link (it would 404)...
    pick = table_row(md, f"| `{PICK[:12]}` ")
    assert URL.format(sha=PICK) not in md
    # ...but the fork's own address when bisectkit.fork-url gives one.
    fork = "https://github.com/me/llvm-fork/commit/{sha}"
    forked = render_markdown(found_result(tmp_path), URL, fork_url=fork)
    table_row(forked, f"[`{PICK[:12]}`]({fork.format(sha=PICK)})")
    assert f"[`{CULPRIT[:12]}`]({URL.format(sha=CULPRIT)})" in forked
    assert "| cherry-pick |" in pick
    assert "| dropped | applied |" in pick
    assert "dddd is already upstream (before: dddd is not upstream yet)" in pick
    revert = table_row(md, REVERT[:12])
    assert "| revert |" in revert and "| applied | applied |" in revert
    assert "| local |" in table_row(md, LOCAL[:12])


def test_patch_table_without_previous_and_long_stack_is_summed_up(tmp_path: Path) -> None:
    many = [patch(sha(f"{i:x}")[:38] + f"{i:02d}", "local", "applied", "local patch")
            for i in range(30)]
    many[5] = patch(PICK, "cherry-pick", "conflict", "conflicts with the candidate")
    result = found_result(tmp_path, patches_at_first_bad=many, previous=None)
    md = render_markdown(result)
    assert "| conflict | conflicts with the candidate |" in table_row(md, PICK[:12])
    assert "... and 29 more patches applied." in md
    assert sum(1 for line in md.splitlines() if "| local |" in line) == 0


def test_error_lines_come_from_culprit_logs_repro_first_and_capped(tmp_path: Path) -> None:
    md = render_markdown(found_result(tmp_path), URL, max_error_lines=3)
    assert f"#### Error lines from step 3 (`{CULPRIT[:12]}`, bad: exit 1)\n" in md
    block = md.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    assert block == [
        "# --- repro ---",
        "error: failed to legalize operation 'arith.addf'",
        "iree-compile: Foo.cpp:12: void f(): Assertion `x && \"bad\"' failed.",
        "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/",
    ]
    assert "warning: unused" not in md and "note: see current operation" not in md


def test_fence_outgrows_backticks_in_quoted_lines(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    result["steps"][2]["log"] = write_log(tmp_path, 3, CULPRIT, "bad", "exit 1",
                                          repro="error: ```weird```\n")
    md = render_markdown(result)
    assert "````text\n# --- repro ---\nerror: ```weird```\n````" in md


def test_untested_culprit_uses_first_bad_step_log(tmp_path: Path) -> None:
    result = found_result(tmp_path, first_bad=BAD)
    result["steps"].append(step(5, sha("8"), "bad", "exit 1", log=write_log(
        tmp_path, 5, sha("8"), "bad", "exit 1", repro="LLVM ERROR: later crash\n")))
    md = render_markdown(result)
    assert f"#### Error lines from step 3 (`{CULPRIT[:12]}`, bad: exit 1); " in md
    assert "was not tested itself" in md
    assert "later crash" not in md


def test_check_stack_step_is_not_the_evidence_and_its_conclusion_is_shown(
        tmp_path: Path) -> None:
    result = found_result(tmp_path)
    result["steps"].append(step(5, CULPRIT, "skip", "build failed (exit 1)", source="check-stack",
                                log=write_log(tmp_path, 5, CULPRIT, "skip", "build failed",
                                              build="FAILED: pristine\n", repro="")))
    conclusion = (f"could not be checked: {CULPRIT[:12]} without the patch stack tested skip "
                  "(build failed (exit 1))")
    result["check_stack"] = {"verdict": "skip", "reason": "build failed (exit 1)",
                             "stack_implicated": None, "conclusion": conclusion}
    md = render_markdown(result)
    assert f"#### Error lines from step 3 (`{CULPRIT[:12]}`, bad: exit 1)" in md
    assert "FAILED: pristine" not in md
    assert "#### Skipped commits (1)" in md  # the bisection's skip, not the check's
    assert f"**Check without the patch stack:** {conclusion}." in md
    assert f"  check-stack: {conclusion}" in render_terminal(result)


def test_build_errors_follow_repro_errors(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    result["steps"][2]["log"] = write_log(
        tmp_path, 3, CULPRIT, "bad", "exit 1", build="FAILED: lib/Foo.o\n",
        repro="Segmentation fault (core dumped)\n")
    md = render_markdown(result)
    block = md.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    assert block == ["# --- repro ---", "Segmentation fault (core dumped)",
                     "# --- build ---", "FAILED: lib/Foo.o"]


def test_missing_log_file_is_reported_not_fatal(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    gone = str(tmp_path / "nope" / "step-3.log")
    result["steps"][2]["log"] = gone
    md = render_markdown(result)
    assert f"is missing: `{gone}`" in md
    assert "```text" not in md


def test_no_logs_at_all_omits_the_section(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    del result["steps"][2]["log"]
    assert "Error lines" not in render_markdown(result)


def test_log_without_error_markers_shows_repro_tail(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    result["steps"][2]["log"] = write_log(tmp_path, 3, CULPRIT, "bad", "exit 1",
                                          repro="".join(f"line {i}\n" for i in range(9)))
    md = render_markdown(result)
    assert "the last lines of its repro output" in md
    assert "line 8" in md and "line 3" not in md


def test_skipped_commits_listed_with_reasons_and_capped(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    md = render_markdown(result)
    assert "#### Skipped commits (1)" in md
    assert "| 2 | `777777777777` | conflict in e1e1e1e1e1e1 local fixup |" in md
    many = [step(10 + i, f"{i:040x}", "skip", f"build failed (exit {i})") for i in range(25)]
    result["steps"] += many
    md = render_markdown(result)
    assert "#### Skipped commits (26)" in md
    assert "build failed (exit 18)" in md and "build failed (exit 19)" not in md
    assert "... 6 more skipped commits." in md
    assert "| 10 | `000000000000` | build failed (exit 0) |" in md


def test_flagged_steps_and_pipe_escaping(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    result["steps"][0]["flags"] = ["runs disagree: 2 bad, 1 good"]
    result["steps"][1]["reason"] = "exit 1 | weird"
    md = render_markdown(result)
    assert "#### Flagged steps (1)" in md
    assert f"- step 1 `{MID[:12]}` (good): runs disagree: 2 bad, 1 good" in md
    assert "exit 1 \\| weird" in md


def test_no_skips_no_flags_no_followup_sections(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    del result["steps"][1]
    md = render_markdown(result)
    assert "Skipped" not in md and "Flagged" not in md and "#### Next" not in md


def test_missing_optional_keys_still_render() -> None:
    result = {"status": "found", "first_bad": CULPRIT, "first_bad_subject": "Subject only"}
    md = render_markdown(result)
    assert f"**First bad commit:** `{CULPRIT[:12]}` Subject only" in md
    assert "Reproduce with" not in md
    assert render_terminal(result)[0] == f"first bad commit: {CULPRIT[:12]} Subject only"


# -- variants --------------------------------------------------------------------------
def test_find_fix_terms_wording(tmp_path: Path) -> None:
    result = found_result(tmp_path, terms={"old": "broken", "new": "fixed"})
    md = render_markdown(result)
    assert md.startswith("### bisectkit: first fixed commit in `third_party/llvm-project`")
    assert "**First fixed commit:**" in md
    assert "2 broken, 1 fixed, 1 skipped" in md
    assert "first bad" not in md
    assert render_terminal(result)[0].startswith("first fixed commit in")


def test_inconclusive_lists_candidates(tmp_path: Path) -> None:
    cands = [sha("7"), sha("8"), BAD]
    result = found_result(tmp_path, status="inconclusive", first_bad=None, candidates=cands)
    md = render_markdown(result, URL)
    assert md.startswith("### bisectkit: inconclusive in `third_party/llvm-project`")
    assert "the first bad commit is one of these 3:" in md
    for c in cands:
        assert f"- [`{c[:12]}`]({URL.format(sha=c)})" in md
    assert "Patch stack" not in md and "Error lines" not in md
    assert "#### Skipped commits (1)" in md
    lines = render_terminal(result)
    assert lines[0] == "inconclusive in third_party/llvm-project: only skipped commits left"
    assert f"one of 3: {sha('7')[:12]} {sha('8')[:12]} {BAD[:12]}" in lines[1]


def test_inconclusive_candidates_capped(tmp_path: Path) -> None:
    cands = [f"{i:02x}" * 20 for i in range(50)]
    result = found_result(tmp_path, status="inconclusive", first_bad=None, candidates=cands)
    md = render_markdown(result)
    assert "... 30 more candidates." in md
    assert f"`{cands[19][:12]}`" in md and f"`{cands[20][:12]}`" not in md
    assert "(45 more)" in render_terminal(result)[1]


def test_aborted_says_why(tmp_path: Path) -> None:
    result = found_result(tmp_path, status="aborted", first_bad=None, error="interrupted")
    md = render_markdown(result)
    assert md.startswith("### bisectkit: aborted in `third_party/llvm-project`")
    assert "The run stopped without a decision: interrupted." in md
    assert "First bad commit" not in md
    assert "Reproduce with:" in md
    assert render_terminal(result)[0] == "aborted in third_party/llvm-project: interrupted"


def integrate_result(tmp_path: Path) -> dict[str, Any]:
    old, new, old_base, new_base = sha("2"), sha("3"), sha("4"), sha("6")
    return {
        "status": "found", "strategy": "integrate", "submodules": ["third_party/llvm-project"],
        "good": [GOOD], "bad": BAD, "range_size": 12, "first_bad": CULPRIT,
        "first_bad_info": {"subject": "Advance LLVM to 6666666", "author": "Bot"},
        "submodules_at_first_bad": [{"path": "third_party/llvm-project", "old": old,
                                     "new": new, "old_base": old_base, "new_base": new_base,
                                     "upstream_commits": 42}],
        "previous": {"sha": PREV, "subject": "Fix the build"},
        "steps": [step(1, CULPRIT, "bad", "exit 1",
                       log=write_log(tmp_path, 1, CULPRIT, "bad", "exit 1"))],
        "command": "bisectkit run --integrate --good 1111 --bad 9999 -- ./repro.sh",
        "followup": [
            f"{CULPRIT[:12]} advanced third_party/llvm-project by 42 upstream commits; "
            "to find the upstream culprit, run:",
            f"bisectkit run --submodule third_party/llvm-project --upstream upstream/main "
            f"--good {old_base} --bad {new_base} -- ./repro.sh",
        ],
    }


def test_integrate_variant_shows_submodule_moves_and_followup(tmp_path: Path) -> None:
    result = integrate_result(tmp_path)
    md = render_markdown(result, "https://github.com/iree-org/iree/commit/{sha}")
    assert md.startswith("### bisectkit: first bad commit on the integrate branch")
    row = table_row(md, "`third_party/llvm-project`")
    assert row == (f"| `third_party/llvm-project` | `{sha('2')[:12]}` | `{sha('3')[:12]}` | "
                   f"`{sha('4')[:12]}`..`{sha('6')[:12]}` | 42 |")
    assert f"Commit before it: [`{PREV[:12]}`](https://github.com/iree-org/iree/commit/{PREV})" \
        " Fix the build" in md
    assert "#### Next" in md
    assert "advanced third_party/llvm-project by 42 upstream commits" in md
    assert f"```sh\n{result['followup'][1]}\n```" in md
    assert "Patch stack" not in md
    lines = render_terminal(result)
    assert any("moved third_party/llvm-project" in line and "(42 upstream commits)" in line
               for line in lines)
    assert f"  next: {result['followup'][1]}" in lines


# -- terminal ------------------------------------------------------------------------
def test_terminal_is_short_and_plain(tmp_path: Path) -> None:
    result = found_result(tmp_path)
    result["steps"][0]["flags"] = ["runs disagree"]
    lines = render_terminal(result, URL)
    assert 4 <= len(lines) <= 10
    assert lines[0] == ("first bad commit in third_party/llvm-project: "
                        f"{CULPRIT[:12]} [mlir] Fold more adds")
    assert lines[1] == "  Jane Doe, 2024-05-01 12:00:00 +0000"
    assert lines[2] == f"  {URL.format(sha=CULPRIT)}"
    assert "  patch stack: 2 applied, 1 dropped" in lines
    assert any(line.startswith("  searched good 111111111111 .. bad 999999999999 on upstream/main:")
               for line in lines)
    assert "  1 flagged step(s): check these verdicts" in lines
    assert lines[-1] == f"  reproduce: {result['command']}"
    assert not any("`" in line or "|" in line or "**" in line for line in lines)


@pytest.mark.parametrize("status", ["found", "inconclusive", "aborted"])
def test_every_status_renders_with_minimal_dict(status: str) -> None:
    result: dict[str, Any] = {"status": status}
    assert render_markdown(result).startswith("### bisectkit: ")
    assert render_terminal(result)
