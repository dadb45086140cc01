"""``--all-parents``: bisecting into merges, in phases (never a flat list of the DAG).

Real histories with merges, built with the git CLI: an integrate branch (the
superproject's own commits) and an upstream with a merged side branch
(``--submodule``). Driven through ``bisectkit run`` and a manual
``git bisect-patched`` session, with log and replay.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.histories import SMALL, check_script, commit, merge, side_history
from helpers.lines import flat
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot


@pytest.fixture
def small(world_factory, tmp_path: Path) -> World:
    return world_factory(tmp_path, SMALL)


def _run(w: World, c: dict[str, str], *extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                              dict]:
    out = w.root / "r.json"
    r = cli(w, "run", "--integrate", *extra, "--good", c["base"], "--bad", c["c3"],
            "--json", str(out), "--", check_script(w))
    assert r.returncode == 0, r.stdout + r.stderr
    return r, json.loads(out.read_text())


def test_a_bug_inside_a_merged_branch(small: World):
    before = snapshot(small)
    c = side_history(small, small.superproject, bug_on="s2")
    r, result = _run(small, c)
    assert result["first_bad"] == c["M"] and result["descended"] == []
    r, result = _run(small, c, "--all-parents")
    assert result["first_bad"] == c["s2"], r.stdout
    assert result["descended"] == [c["M"]]
    assert result["previous"]["sha"] == c["s1"]
    assert "--all-parents" in result["reproduce"].split()
    assert (f"first bad commit is merge {c['M'][:12]} Merge branch 'side'; --all-parents: "
            f"bisecting the 3 commits it merged (good end: its first parent {c['c2'][:12]})"
            ) in flat(r.stdout)
    assert f"{c['s2']} is the first bad commit" in r.stdout
    assert f"came in with merge {c['M'][:12]}" in r.stdout
    # Known verdicts were kept: the second run reused the first run's (the cache).
    assert any(st["source"] == "cache" for st in result["steps"])
    assert {st["commit"] for st in result["steps"]} <= {*c.values()}
    before["super_head"] = c["c3"]
    assert snapshot(small) == before


def test_a_merge_of_two_good_sides_is_named(small: World):
    w, repo = small, small.superproject
    c = {"base": w.git(repo, "rev-parse", "HEAD")}
    w.git(repo, "checkout", "-q", "-b", "side")
    c["s1"] = commit(w, repo, "side s1", side_txt="HALF")
    c["s2"] = commit(w, repo, "side s2", other_txt="x")
    w.git(repo, "checkout", "-q", "-")
    c["c1"] = commit(w, repo, "main c1", main_txt="HALF")
    c["M"] = merge(w, repo, "side", "Merge branch 'side'")
    c["c3"] = commit(w, repo, "main c3", more_txt="y")
    r, result = _run(w, c, "--all-parents")
    assert result["first_bad"] == c["M"]
    assert result["descended"] == [c["M"]]
    assert "bisecting the 2 commits it merged" in r.stdout
    assert "the merge itself is the first bad commit: every commit it merged tests good" \
        in r.stdout


def test_a_bug_right_before_a_merge_on_the_first_parent_line(small: World):
    # A flat topological list would put the (good) side commits after c2 (bad):
    # "good before bad" would not hold along it. The phases never build one.
    c = side_history(small, small.superproject, bug_on="c2")
    r, result = _run(small, c, "--all-parents")
    assert result["first_bad"] == c["c2"], r.stdout
    assert result["descended"] == []
    assert "--all-parents: bisecting" not in r.stdout


def test_a_merge_inside_a_merged_branch(small: World):
    """main: base c1 M(side: s1 SM(t: t1 t2[bug]) s3) c3: two descents, t2 named."""
    w, repo = small, small.superproject
    c = {"base": w.git(repo, "rev-parse", "HEAD")}
    w.git(repo, "checkout", "-q", "-b", "side")
    c["s1"] = commit(w, repo, "side s1", side_txt="s1")
    w.git(repo, "checkout", "-q", "-b", "topic")
    c["t1"] = commit(w, repo, "topic t1", topic_txt="t1")
    c["t2"] = commit(w, repo, "topic t2", topic_txt="t2", bug_txt="BUG")
    w.git(repo, "checkout", "-q", "side")
    c["SM"] = merge(w, repo, "topic", "Merge branch 'topic' into side")
    c["s3"] = commit(w, repo, "side s3", side_txt="s3")
    w.git(repo, "checkout", "-q", "main")
    c["c1"] = commit(w, repo, "main c1", main_txt="c1")
    c["M"] = merge(w, repo, "side", "Merge branch 'side'")
    c["c3"] = commit(w, repo, "main c3", main_txt="c3")
    r, result = _run(w, c, "--all-parents")
    assert result["first_bad"] == c["t2"], r.stdout
    assert result["descended"] == [c["M"], c["SM"]]


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


def _by_hand(w: World, first: subprocess.CompletedProcess[str]) -> str:
    """Test each checked-out candidate with the check script and mark it; all output."""
    out, seen = first.stdout, first.stdout
    for _ in range(12):
        if "is the first bad commit" in out:
            return seen
        check = subprocess.run([check_script(w)], cwd=w.superproject, env=w.env,
                               capture_output=True, text=True)
        r = git_cli(w, "good" if check.returncode == 0 else "bad")
        assert r.returncode == 0, r.stderr
        out = r.stdout
        seen += out
    raise AssertionError(seen)


def test_by_hand_log_and_replay(small: World, tmp_path: Path):
    before = snapshot(small)
    c = side_history(small, small.superproject, bug_on="s2")
    before["super_head"] = c["c3"]
    r = git_cli(small, "start", "--integrate", "--all-parents", c["c3"], c["base"])
    assert r.returncode == 0, r.stderr
    seen = _by_hand(small, r)
    assert f"first bad commit is merge {c['M'][:12]}" in seen
    assert f"{c['s2']} is the first bad commit" in seen
    log = git_cli(small, "log").stdout
    assert log.splitlines()[0].startswith("git bisect-patched start --integrate --all-parents")
    assert f"# --all-parents: bisected into merge [{c['M']}]" in log
    assert f"git bisect-patched bad {c['s2']}" in log  # a side commit, marked after the descent
    (tmp_path / "bisect.log").write_text(log)
    assert git_cli(small, "reset").returncode == 0
    assert snapshot(small) == before
    r = git_cli(small, "replay", str(tmp_path / "bisect.log"))
    assert r.returncode == 0, r.stderr
    assert f"{c['s2']} is the first bad commit" in r.stdout
    assert git_cli(small, "log").stdout == log
    assert git_cli(small, "reset").returncode == 0
    assert snapshot(small) == before


def _upstream_merge(w: World) -> dict[str, str]:
    """Upstream grows a merged side branch (the bug in its middle) past its tip, in a clone;
    the submodule fetches it as ``upstream/main``."""
    work = w.root / "upstream-work"
    w.git(w.root, "clone", "-q", str(w.upstream), str(work))
    c = side_history(w, work, bug_on="s2")
    w.git(w.submodule, "fetch", "-q", str(work), f"+{c['c3']}:refs/remotes/upstream/main")
    return c


BUG_IN_SUBMODULE = {"BUG_FILE": f"{SUBMODULE}/bug.txt"}


def test_submodule_bisect_into_an_upstream_merge(small: World):
    c = _upstream_merge(small)
    out = small.root / "r.json"
    args = ("run", "--upstream", "upstream/main", "--good", c["base"], "--bad", c["c3"],
            "--json", str(out), "--", check_script(small))
    # No --submodule: the only submodule is the default.
    r = cli(small, *args, extra_env=BUG_IN_SUBMODULE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())["first_bad"] == c["M"]
    r = cli(small, args[0], "--all-parents", *args[1:], extra_env=BUG_IN_SUBMODULE)
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == c["s2"] and result["descended"] == [c["M"]]
    assert result["strategy"] == "submodule"


@pytest.mark.parametrize("extra", [("--stack", "--at", "HEAD"), ("--advance",)])
def test_refused_where_it_means_nothing(small: World, extra: tuple[str, ...]):
    before = snapshot(small)
    r = git_cli(small, "start", "--all-parents", *extra)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--all-parents" in r.stderr
    assert snapshot(small) == before


def test_first_parent_and_all_parents_exclude_each_other(small: World):
    r = git_cli(small, "start", "--first-parent", "--all-parents", "--integrate", "HEAD",
                "HEAD~1")
    assert r.returncode == 2 and "not allowed with argument" in r.stderr


def test_with_parallel_steps(small: World):
    c = side_history(small, small.superproject, bug_on="s3")
    r, result = _run(small, c, "--all-parents", "--jobs", "2")
    assert result["first_bad"] == c["s3"], r.stdout
    assert result["descended"] == [c["M"]]
    assert "--all-parents: bisecting the 3 commits it merged" in flat(r.stdout)
