"""git bisect's habits in ``git bisect-patched``, side by side with ``git bisect`` itself on
the same commits: the terms (``--term-good``/``--term-bad``, a term as a command), ``next``
and ``--no-checkout``. ``git bisect`` runs in a clone of the world's upstream (whose commits
are the submodule's candidates); bisectkit on the submodule, its patch stack applied."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from helpers.repros import BUG
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

#: The range both tools bisect (upstream commits; commit 200 brings the bug in).
BAD, GOOD, CULPRIT = 220, 180, 200
TARGET = ("--submodule", SUBMODULE, "--upstream", "upstream/main")


def upstream(world: World, tmp_path: Path) -> Path:
    """A clone of the upstream, for plain ``git bisect`` (the world's own is shared)."""
    up = tmp_path / "up"
    subprocess.run(["git", "clone", "-q", str(world.upstream), str(up)], env=world.env,
                   check=True)
    return up


def git_bisect(world: World, up: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "bisect", *args], cwd=up, env=world.env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL)


def slower(tree: Path) -> bool:
    """The repro's answer in ``tree`` (a checkout of upstream files): the bug is in."""
    bug = tree / "lib/bug.txt"
    return bug.exists() and "miscompile" in bug.read_text()


def by_hand(tool: object, tree: Path, new: str, old: str,
            is_new: Callable[[Path], bool] = slower) -> str:
    """Mark with the words ``new``/``old`` (``is_new(tree)`` says which) until the answer;
    its output."""
    for _ in range(10):
        r = tool(new if is_new(tree) else old)  # type: ignore[operator]
        assert r.returncode == 0, r.stdout + r.stderr
        if f"is the first {new} commit" in r.stdout:
            return str(r.stdout)
    raise AssertionError("no answer in 10 marks")


# -- terms ------------------------------------------------------------------------------
def test_term_good_and_term_bad_name_the_sides_and_become_commands(world: World,
                                                                   tmp_path: Path):
    up = upstream(world, tmp_path)
    terms = ("--term-good", "slow", "--term-bad", "fast")
    plain = git_bisect(world, up, "start", *terms, world.sha(BAD), world.sha(GOOD))
    ours = git_cli(world, "start", *TARGET, *terms, world.sha(BAD), world.sha(GOOD))
    assert plain.returncode == ours.returncode == 0, ours.stderr
    # Both say the terms in the same words.
    assert git_cli(world, "terms").stdout == git_bisect(world, up, "terms").stdout == (
        "Your current terms are slow for the old state\nand fast for the new state.\n")
    # The defaults' words are refused in other terms, by both, in git's words.
    for word in ("good", "bad"):
        refused = [git_bisect(world, up, word), git_cli(world, word)]
        for r in refused:
            assert r.returncode != 0
            assert "Invalid command: you're currently in a fast/slow bisect" in r.stderr
        assert len(refused[1].stderr.splitlines()) == 1
    # The terms are the commands that mark: the same first 'fast' commit.
    answer = f"{world.sha(CULPRIT)} is the first fast commit"
    assert answer in by_hand(lambda w: git_bisect(world, up, w), up, "fast", "slow")
    assert answer in by_hand(lambda w: git_cli(world, w), world.submodule, "fast", "slow")
    log = git_cli(world, "log").stdout
    assert "\ngit bisect-patched new " in log and "\ngit bisect-patched old " in log
    assert git_cli(world, "reset").returncode == 0
    # No session: a term is no command any more (the usage line and one error line, as
    # any unknown word).
    r = git_cli(world, "fast")
    assert r.returncode == 2
    usage, error = r.stderr.splitlines()
    assert usage.startswith("usage: git bisect-patched ") and "invalid choice: 'fast'" in error


def test_bisectkit_run_takes_term_good_and_term_bad(world: World, tmp_path: Path):
    up = upstream(world, tmp_path)
    terms = ("--term-good", "slow", "--term-bad", "fast")
    git_bisect(world, up, "start", *terms, world.sha(BAD), world.sha(GOOD))
    plain = git_bisect(world, up, "run", "sh", "-c", "! grep -q miscompile lib/bug.txt")
    ours = cli(world, "run", *TARGET, *terms, "--good", world.sha(GOOD), "--bad",
               world.sha(BAD), "--", "sh", "-c", f"! {BUG}")
    answer = f"{world.sha(CULPRIT)} is the first fast commit"
    assert answer in plain.stdout and answer in ours.stdout, ours.stdout + ours.stderr


# -- next -------------------------------------------------------------------------------
def test_next_checks_the_candidate_out_again_after_a_move_by_hand(world: World,
                                                                   tmp_path: Path):
    up = upstream(world, tmp_path)
    ends = (world.sha(BAD), world.sha(GOOD))
    git_bisect(world, up, "start", *ends)
    assert git_cli(world, "start", *TARGET, *ends).returncode == 0
    sub = world.submodule
    candidate = world.git(up, "rev-parse", "HEAD")
    under_test = world.git(sub, "rev-parse", "HEAD^{tree}")
    # The user looks at another commit, by hand, in both.
    world.git(up, "checkout", "-q", world.sha(GOOD + 1))
    world.git(sub, "checkout", "-q", world.sha(GOOD + 1))
    plain, ours = git_bisect(world, up, "next"), git_cli(world, "next")
    assert plain.returncode == ours.returncode == 0, ours.stderr
    # The same candidate, checked out again (in bisectkit: with its patch stack).
    assert f"[{candidate}] upstream commit {CULPRIT}:" in plain.stdout
    assert world.git(up, "rev-parse", "HEAD") == candidate == world.sha(CULPRIT)
    assert f"[step 1] testing {candidate[:12]} upstream commit {CULPRIT}:" in ours.stdout
    assert world.git(sub, "rev-parse", "HEAD^{tree}") == under_test
    # Once the answer is known, 'next' says it again.
    answer = f"{world.sha(CULPRIT)} is the first bad commit"
    by_hand(lambda w: git_bisect(world, up, w), up, "bad", "good")
    by_hand(lambda w: git_cli(world, w), sub, "bad", "good")
    assert git_bisect(world, up, "next").stdout.startswith(answer)
    assert git_cli(world, "next").stdout.startswith(answer)
    assert git_cli(world, "reset").returncode == 0
    git_bisect(world, up, "reset")
    # No session: refused by both.
    r = git_cli(world, "next")
    assert git_bisect(world, up, "next").returncode != 0
    assert r.returncode == 2 and "no bisect-patched session" in r.stderr


def test_next_while_waiting_for_the_ends_says_what_is_missing(world: World):
    assert git_cli(world, "start", *TARGET).returncode == 0
    r = git_cli(world, "next")
    assert r.returncode == 2
    assert "waiting for both good and bad commits" in r.stderr
    assert git_cli(world, "reset").returncode == 0


# -- --no-checkout ------------------------------------------------------------------------
def bisect_head(repo: Path) -> str | None:
    r = subprocess.run(["git", "rev-parse", "-q", "--verify", "BISECT_HEAD"], cwd=repo,
                       text=True, capture_output=True)
    return r.stdout.strip() or None


def pinned_bug(w: World, repo: Path) -> bool:
    """Is the bug in the submodule commit that ``repo``'s BISECT_HEAD pins?"""
    pin = w.git(repo, "rev-parse", f"BISECT_HEAD:{SUBMODULE}")
    return "miscompile" in w.git(w.submodule, "show", f"{pin}:lib/bug.txt")


def reads_bisect_head(repo: str) -> tuple[str, ...]:
    """A repro that reads the candidate from BISECT_HEAD, not from the work tree."""
    return ("sh", "-c", f"! git -C {repo} show BISECT_HEAD:lib/bug.txt | grep -q miscompile")


def test_no_checkout_names_the_candidate_by_bisect_head(world: World, tmp_path: Path):
    up = upstream(world, tmp_path)
    sub, ends = world.submodule, (world.sha(BAD), world.sha(GOOD))
    before, up_head = snapshot(world), world.git(up, "rev-parse", "HEAD")
    plain = git_bisect(world, up, "start", "--no-checkout", *ends)
    ours = git_cli(world, "start", "--no-checkout", *TARGET, *ends)
    assert plain.returncode == ours.returncode == 0, ours.stderr
    # Nothing checked out; BISECT_HEAD names the candidate (ours: with the patch stack).
    assert snapshot(world) == before and world.git(up, "rev-parse", "HEAD") == up_head
    assert bisect_head(up) == world.sha(CULPRIT)
    assert f"testing {world.sha(CULPRIT)[:12]} upstream commit {CULPRIT}" in ours.stdout
    patched = bisect_head(sub)
    assert patched is not None
    assert world.git(sub, "rev-parse", f"{patched}~4") == world.sha(CULPRIT)  # 4 patches
    # A mark with no revision marks what BISECT_HEAD names; the next one is named there.
    assert git_bisect(world, up, "bad").returncode == 0
    assert git_cli(world, "bad").returncode == 0
    assert bisect_head(up) == world.git(sub, "rev-parse", f"{bisect_head(sub)}~4") != \
        world.sha(CULPRIT)
    # The patched candidate outlives a gc that prunes everything unreachable.
    world.git(sub, "gc", "-q", "--prune=now")
    assert world.git(sub, "cat-file", "-t", "BISECT_HEAD") == "commit"
    # 'run' gives the repro nothing special: it reads BISECT_HEAD. The same answer.
    plain = git_bisect(world, up, "run", *reads_bisect_head("."))
    ours = git_cli(world, "run", *reads_bisect_head(SUBMODULE))
    answer = f"{world.sha(CULPRIT)} is the first bad commit"
    assert answer in plain.stdout and answer in ours.stdout, ours.stdout + ours.stderr
    assert snapshot(world) == before and world.git(up, "rev-parse", "HEAD") == up_head
    # 'next' names the candidate again (in git: once more the first bad commit).
    assert git_cli(world, "next").stdout.startswith(answer)
    # reset removes BISECT_HEAD (and the ref that kept it), as git's does.
    assert git_bisect(world, up, "reset").returncode == 0
    r = git_cli(world, "reset")
    assert r.returncode == 0 and "removed BISECT_HEAD" in r.stdout
    assert bisect_head(up) is None and bisect_head(sub) is None
    assert world.git(sub, "for-each-ref", "refs/bisectkit/bisect-head") == ""
    assert snapshot(world) == before


def test_bisectkit_run_no_checkout_leaves_no_bisect_head(world: World):
    before = snapshot(world)
    r = cli(world, "run", *TARGET, "--no-checkout", "--good", world.sha(GOOD), "--bad",
            world.sha(BAD), "--", *reads_bisect_head(SUBMODULE))
    assert f"{world.sha(CULPRIT)} is the first bad commit" in r.stdout, r.stdout + r.stderr
    assert snapshot(world) == before and bisect_head(world.submodule) is None
    r = cli(world, "run", *TARGET, "--no-checkout", "--jobs", "2", "--good", world.sha(GOOD),
            "--bad", world.sha(BAD), "--", *reads_bisect_head(SUBMODULE))
    assert r.returncode == 2 and "not with --jobs" in r.stderr
    assert snapshot(world) == before and bisect_head(world.submodule) is None


def test_no_checkout_integrate_names_superproject_commits(integrate_world: World,
                                                          tmp_path: Path):
    w = integrate_world
    clone = tmp_path / "clone"  # plain git bisect, on the same superproject commits
    subprocess.run(["git", "clone", "-q", str(w.superproject), str(clone)], env=w.env,
                   check=True)
    ends = (w.integrate["adv12"], w.integrate["init"])
    before = snapshot(w)
    assert git_bisect(w, clone, "start", "--no-checkout", *ends).returncode == 0
    r = git_cli(w, "start", "--integrate", "--no-checkout", "--submodule", SUBMODULE, *ends)
    assert r.returncode == 0, r.stderr
    assert snapshot(w) == before
    # Each marks what its BISECT_HEAD names (its pin says whether the bug is in).
    candidate = f"testing {bisect_head(w.superproject)[:12]}"  # type: ignore[index]
    assert candidate in r.stdout
    plain = by_hand(lambda v: git_bisect(w, clone, v), clone, "bad", "good",
                    lambda tree: pinned_bug(w, tree))
    ours = by_hand(lambda v: git_cli(w, v), w.superproject, "bad", "good",
                   lambda tree: pinned_bug(w, tree))
    answer = f"{w.integrate['adv8']} is the first bad commit"
    assert answer in plain and answer in ours
    assert snapshot(w) == before
    # A git bisect started there meanwhile owns BISECT_HEAD, even naming our commit.
    ours_at = bisect_head(w.superproject)
    w.git(w.superproject, "bisect", "start", "--no-checkout", *ends)
    w.git(w.superproject, "update-ref", "BISECT_HEAD", str(ours_at))
    assert git_cli(w, "reset").returncode == 0
    assert bisect_head(w.superproject) == ours_at
    w.git(w.superproject, "bisect", "reset")
    assert bisect_head(w.superproject) is None and snapshot(w) == before


def test_no_checkout_leaves_a_real_git_bisect_alone(world: World):
    sub = world.submodule
    # A git bisect --no-checkout in progress in the submodule: its BISECT_HEAD is not ours.
    world.git(sub, "bisect", "start", "--no-checkout", world.sha(BAD), world.sha(GOOD))
    theirs = bisect_head(sub)
    r = git_cli(world, "start", "--no-checkout", *TARGET, world.sha(BAD), world.sha(GOOD))
    assert r.returncode == 2 and "a git bisect session is in progress in " in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert bisect_head(sub) == theirs
    assert "no bisect-patched session" in git_cli(world, "status").stderr
    world.git(sub, "bisect", "reset")
    # A BISECT_HEAD left by someone else (no git bisect session): refused, and kept.
    world.git(sub, "update-ref", "BISECT_HEAD", world.sha(GOOD))
    r = git_cli(world, "start", "--no-checkout", *TARGET, world.sha(BAD), world.sha(GOOD))
    assert r.returncode == 2 and "BISECT_HEAD that bisectkit did not write" in r.stderr
    git_cli(world, "reset")
    assert bisect_head(sub) == world.sha(GOOD)


def test_reset_removes_the_bisect_head_of_a_killed_run(world: World):
    before = snapshot(world)
    assert git_cli(world, "start", "--no-checkout", *TARGET, world.sha(BAD),
                   world.sha(GOOD)).returncode == 0
    # The repro kills bisectkit itself (SIGKILL: nothing of it runs after).
    r = git_cli(world, "run", "sh", "-c", "kill -9 $PPID")
    assert r.returncode == -9 or r.returncode == 137, r.stderr
    assert bisect_head(world.submodule) is not None
    r = git_cli(world, "reset")
    assert r.returncode == 0 and "removed BISECT_HEAD" in r.stdout, r.stdout + r.stderr
    assert bisect_head(world.submodule) is None and snapshot(world) == before


def test_no_checkout_given_before_the_ends(world: World, tmp_path: Path):
    up = upstream(world, tmp_path)
    before, up_head = snapshot(world), world.git(up, "rev-parse", "HEAD")
    assert git_bisect(world, up, "start", "--no-checkout").returncode == 0
    assert git_cli(world, "start", "--no-checkout", *TARGET).returncode == 0
    for word, n in (("bad", BAD), ("good", GOOD)):
        assert git_bisect(world, up, word, world.sha(n)).returncode == 0
        r = git_cli(world, word, world.sha(n))
        assert r.returncode == 0, r.stderr
    # The mark that completed the ends named the first candidate by BISECT_HEAD.
    assert snapshot(world) == before and world.git(up, "rev-parse", "HEAD") == up_head
    patched = bisect_head(world.submodule)
    assert patched is not None
    assert world.git(world.submodule, "rev-parse", f"{patched}~4") == bisect_head(up)
    assert git_cli(world, "reset").returncode == 0
    assert bisect_head(world.submodule) is None and snapshot(world) == before
