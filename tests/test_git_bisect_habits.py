"""git bisect's habits in ``git bisect-patched``, side by side with ``git bisect`` itself on
the same commits: the terms (``--term-good``/``--term-bad``, a term as a command), ``next``
and ``--no-checkout``. ``git bisect`` runs in a clone of the world's upstream (whose commits
are the submodule's candidates); bisectkit on the submodule, its patch stack applied."""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.repros import BUG
from helpers.worlds import SUBMODULE, World, cli, git_cli

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


def by_hand(tool: object, tree: Path, new: str, old: str) -> str:
    """Mark with the words ``new``/``old`` until the answer; its output."""
    for _ in range(10):
        r = tool(new if slower(tree) else old)  # type: ignore[operator]
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
    # No session: a term is no command any more (one line, as any unknown word).
    r = git_cli(world, "fast")
    assert r.returncode == 2 and "invalid choice: 'fast'" in r.stderr
    assert len(r.stderr.splitlines()) == 1


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
