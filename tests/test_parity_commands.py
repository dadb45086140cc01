"""git parity commands of ``git bisect-patched``: visualize/view, terms, reset <commit>,
and skip with ranges, through the real CLI on real git worlds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pexpect
from helpers.sessions import plain_git_bisect
from helpers.worlds import SUBMODULE, World, git_cli, snapshot

GOOD_IF = "device .* not found"


def start(world: World, bad: str, good: str, *extra: str,
          pathspec: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                *extra, bad, good, *(("--", *pathspec) if pathspec else ()))
    assert r.returncode == 0, r.stderr
    return r


def ok(world: World, *args: str) -> str:
    r = git_cli(world, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def run_to_end(world: World) -> subprocess.CompletedProcess[str]:
    return git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")


def view_rows(world: World, *args: str) -> list[tuple[str, str, str]]:
    """``view``'s lines as (short sha, verdict, subject)."""
    rows = []
    for line in ok(world, "view", *args).splitlines():
        sha, verdict, subject = line.split(" ", 2)
        rows.append((sha, verdict, subject.strip()))
    return rows


def marked(world: World) -> dict[str, str]:
    """Commit -> verdict of every mark in the session's log (the newest mark wins)."""
    verdicts = {}
    for line in ok(world, "log").splitlines():
        words = line.split()
        if line.startswith("git bisect-patched ") and words[2] in ("good", "bad", "skip"):
            for sha in words[3:]:
                verdicts[sha] = words[2]
    return verdicts


# -- visualize / view ------------------------------------------------------------------
def test_view_lists_the_candidates_left_with_their_verdicts(world: World):
    world.env["COLUMNS"] = "80"
    start(world, world.sha(300), world.sha(0))
    rows = view_rows(world)
    # Every candidate (commits 1..300), newest first, the bad end included.
    assert [r[0] for r in rows] == [world.sha(n)[:12] for n in range(300, 0, -1)]
    assert rows[0][1] == "bad" and {r[1] for r in rows[1:]} == {"?"}
    assert rows[100] == (world.sha(200)[:12], "?", "upstream commit 200: touch lib/bug.txt")

    ok(world, "good", world.sha(190))
    ok(world, "bad", world.sha(210))
    ok(world, "skip", world.sha(196), world.sha(197))
    rows = view_rows(world)
    assert [r[0] for r in rows] == [world.sha(n)[:12] for n in range(210, 190, -1)]
    verdicts = {r[0]: r[1] for r in rows}
    assert verdicts[world.sha(210)[:12]] == "bad"
    assert verdicts[world.sha(197)[:12]] == verdicts[world.sha(196)[:12]] == "skip"
    assert verdicts[world.sha(200)[:12]] == "?"
    # The alias and the full name print the same.
    assert ok(world, "visualize") == ok(world, "view")

    log = ok(world, "view", "--log").split("\n\n")
    assert log[0].splitlines() == [f"commit {world.sha(210)} (bad)",
                                   "Author: Upstream Dev <dev@example.com>",
                                   log[0].splitlines()[2]]
    assert log[0].splitlines()[2].startswith("Date:   ")
    assert log[1].strip() == "upstream commit 210: touch lib/file10.txt"
    assert f"commit {world.sha(196)} (skip)\n" in "\n\n".join(log)
    assert f"commit {world.sha(200)}\n" in "\n\n".join(log)
    assert git_cli(world, "reset").returncode == 0


def test_view_fits_the_terminal_width_and_needs_a_session(world: World):
    r = git_cli(world, "view")
    assert r.returncode == 2 and "no bisect-patched session" in r.stderr
    start(world, world.sha(300), world.sha(0))
    world.env["COLUMNS"] = "40"
    lines = ok(world, "view").splitlines()
    assert len(lines) == 300
    assert all(len(line) <= 40 for line in lines)
    assert lines[0] == f"{world.sha(300)[:12]} bad  upstream commit 300..."
    # 'git log' style is not cut: messages stay whole.
    assert "    upstream commit 300: touch lib/file0.txt" in ok(world, "view", "--log")
    assert git_cli(world, "reset").returncode == 0


def test_view_after_the_answer_shows_the_first_bad_commit(world: World):
    start(world, world.sha(300), world.sha(0),
          pathspec=("lib/bug.txt", "lib/build.txt"))
    assert run_to_end(world).returncode == 0
    rows = view_rows(world)
    assert rows == [(world.sha(200)[:12], "bad", "upstream commit 200: touch lib/bug.txt")]
    assert git_cli(world, "reset").returncode == 0


def test_view_integrate_lists_superproject_commits(integrate_world: World):
    w = integrate_world
    assert git_cli(w, "start", "--integrate", "--submodule", SUBMODULE, w.integrate["adv12"],
                   w.integrate["init"]).returncode == 0
    rows = view_rows(w)
    names = [*(f"adv{k}" for k in range(1, 7)), "break", "fix",
             *(f"adv{k}" for k in range(7, 13))]
    assert [r[0] for r in rows] == [w.integrate[n][:12] for n in reversed(names)]
    assert rows[-1][2].startswith("Advance LLVM to ")
    ok(w, "skip", f"{w.integrate['adv6']}..{w.integrate['fix']}")
    ok(w, "good", w.integrate["adv5"])
    rows = view_rows(w)
    assert [r[0] for r in rows] == [w.integrate[n][:12] for n in reversed(names[5:])]
    by_sha = {r[0]: r[1] for r in rows}
    assert by_sha[w.integrate["break"][:12]] == by_sha[w.integrate["fix"][:12]] == "skip"
    assert by_sha[w.integrate["adv6"][:12]] == "?"
    log = ok(w, "view", "--log")
    assert f"commit {w.integrate['fix']} (skip)\nAuthor: Bisect Tester" in log
    assert "\n    Fixup: repair the build\n" in log
    assert git_cli(w, "reset").returncode == 0


# -- terms -------------------------------------------------------------------------------
def test_terms_default_and_named(world: World):
    start(world, world.sha(300), world.sha(0))
    assert ok(world, "terms") == ("Your current terms are good for the old state\n"
                                  "and bad for the new state.\n")
    assert ok(world, "terms", "--term-good") == "good\n"
    assert ok(world, "terms", "--term-old") == "good\n"
    assert ok(world, "terms", "--term-bad") == "bad\n"
    assert ok(world, "terms", "--term-new") == "bad\n"
    r = git_cli(world, "terms", "--term-good", "--term-bad")
    assert r.returncode == 2
    assert git_cli(world, "reset").returncode == 0

    start(world, world.sha(300), world.sha(0), "--term-old", "fast", "--term-new", "slow")
    assert ok(world, "terms").startswith("Your current terms are fast for the old state\n"
                                         "and slow for the new state.\n")
    assert ok(world, "terms", "--term-old") == "fast\n"
    assert ok(world, "terms", "--term-bad") == "slow\n"
    ok(world, "new", world.sha(250))
    assert view_rows(world)[0] == (world.sha(250)[:12], "slow",
                                   "upstream commit 250: touch lib/file10.txt")
    assert git_cli(world, "reset").returncode == 0
    r = git_cli(world, "terms")
    assert r.returncode == 2 and "no bisect-patched session" in r.stderr


def test_terms_looking_for_a_fix(world: World):
    start(world, world.sha(300), world.sha(0), "--find-fix")
    out = ok(world, "terms")
    assert out.startswith("Your current terms are broken for the old state\n"
                          "and fixed for the new state.\n")
    assert "'good' (the repro passes) marks fixed" in out
    assert ok(world, "terms", "--term-new") == "fixed\n"
    assert git_cli(world, "reset").returncode == 0


# -- reset <commit> ----------------------------------------------------------------------
def side_branch(world: World) -> str:
    """A superproject branch 'side', one commit past main (main stays checked out)."""
    sp = world.superproject
    world.git(sp, "checkout", "-q", "-b", "side")
    (sp / "side.txt").write_text("side\n", encoding="utf-8")
    world.git(sp, "add", "side.txt")
    world.git(sp, "commit", "-q", "-m", "side commit")
    world.git(sp, "checkout", "-q", "main")
    return world.git(sp, "rev-parse", "side")


def test_reset_to_a_commit_restores_then_checks_it_out(world: World):
    side = side_branch(world)
    main = world.git(world.superproject, "rev-parse", "main")
    before = snapshot(world)
    start(world, world.sha(300), world.sha(0))
    moved = snapshot(world)
    assert moved["sub_head"] != before["sub_head"]

    # A commit that names nothing: refused, nothing touched, the session goes on.
    r = git_cli(world, "reset", "no-such-commit")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "not a valid commit" in r.stderr
    assert snapshot(world) == moved
    assert "under test:" in ok(world, "status")

    out = ok(world, "reset", "side")
    assert "restored" in out and "checked out 'side': side (" in out
    after = snapshot(world)
    # The submodule is restored (the side commit pins the same) and the branch checked out.
    assert after["super_head"] == side and after["super_branch"] == "refs/heads/side"
    assert after["sub_head"] == before["sub_head"] and after["sub_status"] == ""
    assert after["super_status"] == ""
    assert git_cli(world, "status").returncode == 2  # the session is over

    # A sha detaches HEAD, as 'git checkout <sha>' does.
    start(world, world.sha(300), world.sha(0))
    out = ok(world, "reset", main)
    assert f"detached at {main[:12]}" in out
    assert world.git(world.superproject, "rev-parse", "--symbolic-full-name", "HEAD") == "HEAD"
    assert world.git(world.superproject, "rev-parse", "HEAD") == main

    # Not bisecting: like git, nothing is checked out.
    out = ok(world, "reset", "side")
    assert "not bisecting" in out and "not checking out 'side'" in out
    assert world.git(world.superproject, "rev-parse", "HEAD") == main


def test_reset_head_stays_on_the_integrate_candidate(integrate_world: World):
    w = integrate_world
    before = snapshot(w)
    assert git_cli(w, "start", "--integrate", "--submodule", SUBMODULE, w.integrate["adv12"],
                   w.integrate["init"]).returncode == 0
    testing = w.git(w.superproject, "rev-parse", "HEAD")
    assert testing != before["super_head"]
    out = ok(w, "reset", "HEAD")
    assert f"detached at {testing[:12]}" in out
    assert w.git(w.superproject, "rev-parse", "HEAD") == testing
    # The submodule was restored, not moved to the candidate's pin: the note says so.
    assert w.git(w.submodule, "rev-parse", "HEAD") == before["sub_head"]
    assert f"submodule {SUBMODULE} is not at the commit 'HEAD' pins" in out


# -- skip <rev>..<rev> -------------------------------------------------------------------
def test_skip_range_skips_exactly_its_candidates_and_the_culprit_is_found(world: World):
    start(world, world.sha(300), world.sha(0))
    out = ok(world, "skip", f"{world.sha(201)}..{world.sha(205)}", world.sha(150))
    # A..B: after A up to B, as in git; plus the single revision.
    skipped = {world.sha(n) for n in (150, 202, 203, 204, 205)}
    assert {sha for sha, v in marked(world).items() if v == "skip"} == skipped
    assert out.count(" skip (marked by hand)") == 5
    # A...B: either order, the same commits (already skipped: marked again, harmlessly).
    ok(world, "skip", f"{world.sha(207)}...{world.sha(206)}")
    assert marked(world)[world.sha(207)] == "skip"
    assert world.sha(206) not in marked(world)
    r = run_to_end(world)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert git_cli(world, "reset").returncode == 0


def test_skip_range_over_the_culprit_is_inconclusive(world: World):
    start(world, world.sha(300), world.sha(0))
    ok(world, "skip", f"{world.sha(198)}..{world.sha(202)}")
    r = run_to_end(world)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "could be any of" in r.stdout
    answer = r.stdout[r.stdout.index("could be any of"):]
    listed = {sha for sha in (world.sha(n) for n in range(1, 301)) if sha in answer}
    assert listed == {world.sha(n) for n in range(199, 204)}
    assert git_cli(world, "reset").returncode == 0


def test_skip_range_keeps_verdicts_and_notes_non_candidates(world: World):
    start(world, world.sha(300), world.sha(0),
          pathspec=("lib/bug.txt", "lib/build.txt"))
    # Candidates: 180 and 200 touch those paths, 300 is the bad end.
    ok(world, "good", world.sha(180))
    world.env["COLUMNS"] = "200"  # the range (82 columns) and its note on one line
    r = git_cli(world, "skip", f"{world.sha(150)}..{world.sha(300)}")
    # Only 200 was left: skipped, the answer is 200 or 300 (exit 1, as git's).
    assert r.returncode == 1 and "could be any of" in r.stdout, r.stdout + r.stderr
    out = r.stdout
    assert (f"{world.sha(150)}..{world.sha(300)}: 147 commits in it are not candidates; "
            "2 candidates already marked bad/good keep their verdict") in out
    verdicts = marked(world)
    assert verdicts[world.sha(200)] == "skip" and verdicts[world.sha(180)] == "good"
    assert world.sha(300) not in verdicts  # the bad end stays bad
    assert view_rows(world)[0][:2] == (world.sha(300)[:12], "bad")


def test_skip_range_errors_touch_nothing(world: World):
    start(world, world.sha(300), world.sha(0),
          pathspec=("lib/bug.txt", "lib/build.txt"))
    log = ok(world, "log")
    moved = snapshot(world)
    for args, message in [
        (["skip", f"{world.sha(201)}..{world.sha(250)}"],
         "holds no candidate of the bisect range (its 49 commits: none is a candidate)"),
        (["skip", f"{world.sha(250)}..{world.sha(201)}"], "holds no candidate of the bisect "
                                                          "range (empty)"),
        (["skip", f"{world.sha(150)}..no-such-rev"], "unknown revision 'no-such-rev'"),
        (["skip", world.sha(200), world.sha(10)], "is not in the bisect range"),
        (["good", f"{world.sha(150)}..{world.sha(250)}"], "only 'skip' accepts ranges"),
    ]:
        r = git_cli(world, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert ok(world, "log") == log
    assert snapshot(world) == moved
    assert git_cli(world, "reset").returncode == 0


def test_skip_range_integrate_finds_the_culprit(integrate_world: World):
    w = integrate_world
    before = snapshot(w)
    assert git_cli(w, "start", "--integrate", "--submodule", SUBMODULE, w.integrate["adv12"],
                   w.integrate["init"]).returncode == 0
    ok(w, "skip", f"{w.integrate['adv5']}..{w.integrate['fix']}")
    assert {sha for sha, v in marked(w).items() if v == "skip"} == {
        w.integrate["adv6"], w.integrate["break"], w.integrate["fix"]}
    r = run_to_end(w)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{w.integrate['adv8']} is the first bad commit" in r.stdout
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before


def test_view_and_skip_range_in_stack_and_advance_sessions(world: World):
    ok(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main", "--stack",
       "--at", world.sha(300))
    # Candidates are the patches (commits of the submodule), the last one the bad end.
    rows = view_rows(world)
    assert [r[0] for r in rows] == [sha[:12] for sha in reversed(world.stack)]
    assert [r[1] for r in rows] == ["bad", "?", "?", "?"]
    ok(world, "skip", f"{world.stack[0]}..{world.stack[2]}")
    assert [r[1] for r in view_rows(world)] == ["bad", "skip", "skip", "?"]
    assert f"commit {world.stack[1]} (skip)\n" in ok(world, "view", "--log")
    assert git_cli(world, "reset").returncode == 0

    ok(world, "start", "--advance", "--submodule", SUBMODULE, "--upstream", "upstream/main")
    # An advance's far end (400: its stack conflicts, so the pin cannot move there) is
    # bad; before it, every upstream commit after the pin is still in play.
    rows = view_rows(world)
    assert [r[0] for r in rows] == [world.sha(n)[:12] for n in range(400, 300, -1)]
    assert rows[0][1] == "bad" and {r[1] for r in rows[1:]} == {"?"}
    ok(world, "good", world.sha(350))
    assert [r[0] for r in view_rows(world)][-1] == world.sha(351)[:12]
    assert git_cli(world, "reset").returncode == 0


def test_view_with_git_log_options_shows_what_git_bisect_visualize_shows(
        world: World, tmp_path: Path):
    world.env.pop("DISPLAY", None)
    world.env["GIT_PAGER"] = "cat"
    start(world, world.sha(300), world.sha(0))
    marks = [("good", world.sha(190)), ("bad", world.sha(210)), ("skip", world.sha(196))]
    for word, sha in marks:
        ok(world, word, sha)
    plain = plain_git_bisect(world, tmp_path, *marks)
    for options in (["--oneline"], ["--stat", "-n", "3"], ["-p", "--format=%H %s"]):
        theirs = world.git(plain, "bisect", "visualize", *options)
        assert ok(world, "visualize", *options).rstrip("\n") == theirs, options
    assert len(ok(world, "view", "--oneline").splitlines()) == 20
    # A pathspec of the user's comes last, after the candidates' options.
    assert ok(world, "view", "--format=%H", "--", "lib/bug.txt").split() == [world.sha(200)]
    r = git_cli(world, "view", "tig")
    assert r.returncode == 2 and "not a git log option" in r.stderr


def test_view_opens_gitk_with_a_display_as_git_does(world: World, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    called = tmp_path / "gitk-called"
    gitk = bin_dir / "gitk"
    gitk.write_text(f'#!/bin/sh\necho "$PWD $*" >> {called}\n')
    gitk.chmod(0o755)
    world.env.update(PATH=f"{bin_dir}:{world.env['PATH']}", DISPLAY=":0", GIT_PAGER="cat")
    start(world, world.sha(300), world.sha(0))
    ok(world, "good", world.sha(190))
    ok(world, "view")
    # In the submodule, the candidates left: the bad end without the newest good commit.
    assert called.read_text().splitlines() == [
        f"{world.submodule} {world.sha(300)} --not {world.sha(190)} --"]
    # git bisect visualize on a plain bisect of the same commits: gitk too.
    plain = plain_git_bisect(world, tmp_path, ("good", world.sha(190)))
    world.git(plain, "bisect", "visualize")
    assert called.read_text().splitlines()[1] == f"{plain} --bisect --"
    # --no-gui, or git log options: no gitk.
    assert ok(world, "view", "--no-gui").splitlines()[0].startswith(world.sha(300)[:12])
    assert ok(world, "view", "--oneline").splitlines()[0].startswith(world.sha(300)[:7])
    assert len(called.read_text().splitlines()) == 2


def test_view_pages_through_gits_pager_on_a_terminal(world: World):
    world.env.pop("DISPLAY", None)
    world.env["GIT_PAGER"] = "sed s/^/paged:/"
    start(world, world.sha(300), world.sha(0))
    ok(world, "bad", world.sha(210))
    ok(world, "good", world.sha(200))
    for args in (["view"], ["view", "--oneline"]):
        child = pexpect.spawn("git", ["bisect-patched", *args], cwd=str(world.superproject),
                              env=world.env, encoding="utf-8", timeout=60)
        child.expect(pexpect.EOF)
        lines = [x for x in str(child.before).splitlines() if x.strip()]
        assert len(lines) == 10 and all(x.startswith("paged:") for x in lines), lines
    # Not a terminal: no pager.
    assert not ok(world, "view").startswith("paged:")
