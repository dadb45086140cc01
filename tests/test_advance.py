"""``bisectkit advance``: how far the pin moves, in how many builds; ``--apply``, ``--linear``,
``--step-commits``, the report, Ctrl-C and the cache shared with ``run``.

Every test drives the real CLI on a real world: upstream (400 commits), the
fork's patch stack on merge-base 100, and the superproject pinning it.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.advance import BASE, advance, spec, with_smoke
from helpers.lines import flat
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot


@pytest.fixture
def make(world_factory: Any, tmp_path: Path) -> Any:
    def build(bug_at: int, **changes: Any) -> World:
        return with_smoke(world_factory(tmp_path, spec(bug_at, **changes)))
    return build


#: The candidates: upstream's commits after the pin (BASE) up to its head (400).
RANGE = 300


def bound(d: int) -> int:
    """The builds a first failure d commits ahead may cost: a gallop's, which this range
    leaves room for, and never more than bisecting the range once the far end is bad."""
    return min(2 * math.ceil(math.log2(d + 1)) + 2, math.ceil(math.log2(RANGE + 1)) + 1)


def test_upstream_head_good_is_one_build(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=999)  # never
    before = snapshot(w)
    r, data = advance(w, tmp_path)
    assert r.returncode == 0, r.stderr
    assert data["status"] == "advanced"
    assert data["to"] == w.sha(400) and data["first_bad"] is None
    assert data["builds"] == 1 and data["crossed"] == 300
    assert "advanced: third_party/llvm-project can move 300 of 300" in r.stdout
    assert "dry run: nothing was changed" in r.stdout
    assert snapshot(w) == before


def test_up_to_date_costs_nothing(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=999)
    r, data = advance(w, tmp_path, "--to", w.sha(BASE - 3))
    assert r.returncode == 0, r.stderr
    assert (data["status"], data["builds"], data["to"]) == ("up-to-date", 0, w.sha(BASE))


@pytest.mark.parametrize("d", [1, 2, 5, 37, 150, 290])
def test_break_d_ahead_in_logarithmic_builds(make: Any, tmp_path: Path, d: int) -> None:
    w = make(bug_at=BASE + d)
    before = snapshot(w)
    r, data = advance(w, tmp_path)
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == w.sha(BASE + d)
    assert data["to"] == w.sha(BASE + d - 1)
    assert data["status"] == ("stuck" if d == 1 else "advanced")
    assert data["builds"] <= bound(d), (d, data["builds"])
    assert f"{w.sha(BASE + d)} is the first bad commit" in r.stdout
    assert snapshot(w) == before


def test_linear_tests_each_commit_in_order(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=BASE + 6)
    r, data = advance(w, tmp_path, "--linear")
    assert r.returncode == 0, r.stderr
    assert [s["commit"] for s in data["steps"]] == [w.sha(BASE + k) for k in range(1, 7)]
    assert (data["first_bad"], data["builds"]) == (w.sha(BASE + 6), 6)


def hand_rebase(w: World, tmp_path: Path, onto: str) -> str:
    """The tree ``git rebase`` makes of the fork's stack onto ``onto`` (picks already
    upstream skipped, commits that become empty dropped)."""
    clone = tmp_path / "by-hand"
    w.git(tmp_path, "clone", "-q", str(w.fork), str(clone))
    w.git(clone, "remote", "add", "upstream", str(w.upstream))
    w.git(clone, "fetch", "-q", "upstream")
    w.git(clone, "rebase", "-q", "--onto", onto, w.sha(BASE), "main")
    return w.git(clone, "rev-parse", "HEAD^{tree}")


def test_apply_rebases_like_git_and_commits_the_pin(make: Any, tmp_path: Path) -> None:
    # On the way to 200: upstream 150 (picked) and 160 (picked by patch id) land, and
    # upstream reverts 60 itself at 170, so our revert of it becomes empty.
    w = make(bug_at=200, upstream_reverts_at=170)
    head, sub_head = (w.git(w.superproject, "rev-parse", "HEAD"),
                      w.git(w.submodule, "rev-parse", "HEAD"))
    (w.superproject / "notes.txt").write_text("the user's own notes\n", encoding="utf-8")
    r, data = advance(w, tmp_path, "--apply", "--branch", "sm-next")
    assert r.returncode == 0, r.stderr
    assert data["to"] == w.sha(199) and data["first_bad"] == w.sha(200)
    tip = w.git(w.submodule, "rev-parse", "sm-next")
    assert data["applied"]["submodule_commit"] == tip
    assert w.git(w.submodule, "rev-parse", "sm-next^{tree}") == hand_rebase(w, tmp_path,
                                                                           w.sha(199))
    fates = {p["subject"]: p["action"] for p in data["applied"]["moves"][0]["patches"]}
    assert fates == {'Revert "upstream commit 60: touch lib/feature.txt"': "empty",
                     "upstream commit 150: touch lib/build.txt": "dropped",
                     "[local] backport fix2": "dropped",
                     "[local] fixup for our target": "applied"}
    # One superproject commit on the user's branch, pinning the new branch; the rest as it was.
    new = w.git(w.superproject, "rev-parse", "HEAD")
    assert w.git(w.superproject, "rev-parse", "HEAD^") == head
    assert w.git(w.superproject, "rev-parse", f"HEAD:{SUBMODULE}") == tip
    assert w.git(w.superproject, "symbolic-ref", "HEAD") == "refs/heads/main"
    message = w.git(w.superproject, "log", "-1", "--format=%B")
    assert message.startswith(f"Advance {SUBMODULE} to {w.sha(199)[:12]}: upstream commit 199")
    assert "Crosses 99 upstream commits" in message and "empty" in message
    assert data["applied"]["superproject_commits"] == [new]
    # The submodule is on the new branch at the rebased stack (its old branch kept), the
    # superproject clean but for the untracked file it had: a later 'git commit -a'
    # records nothing, never a revert of the pin.
    assert w.git(w.submodule, "rev-parse", "--abbrev-ref", "HEAD") == "sm-next"
    assert w.git(w.submodule, "rev-parse", "HEAD") == tip
    assert w.git(w.submodule, "rev-parse", "main") == sub_head
    assert w.git(w.submodule, "status", "--porcelain") == ""
    assert w.git(w.superproject, "status", "--porcelain") == "?? notes.txt"
    commit = subprocess.run(["git", "commit", "-a", "-m", "next"], cwd=w.superproject,
                            env=w.env, text=True, capture_output=True)
    assert commit.returncode == 1 and "nothing added to commit" in commit.stdout, commit
    assert w.git(w.superproject, "rev-parse", "HEAD") == new
    assert f"{SUBMODULE} is checked out on sm-next; the superproject is clean" in r.stdout
    assert w.git(w.submodule, "log", "-1", "--format=%an|%cn", "sm-next") == \
        "Bisect Tester|Bisect Tester"


def raw_git(w: World, cwd: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=w.env, input=data, check=True,
                          capture_output=True).stdout


def test_apply_keeps_a_latin1_patch_byte_for_byte_whatever_the_users_encoding(
        make: Any, tmp_path: Path) -> None:
    w = make(bug_at=BASE + 2)
    # A patch written in Latin-1, labelled so (as older commits are), its author's name
    # ending in '.', which git's GIT_AUTHOR_NAME would trim.
    sub = w.submodule
    (sub / "lib" / "latin.txt").write_bytes(b"caf\xe9\n")
    w.git(sub, "add", "lib/latin.txt")
    tree, head = w.git(sub, "write-tree"), w.git(sub, "rev-parse", "HEAD")
    author = b"author Jos\xe9 Mart\xednez Jr. <jm@example.com> 1700000000 +0100\n"
    message = b"[local] r\xe9sum\xe9 of the caf\xe9 fix\n\nd\xe9tails\n"
    source = (f"tree {tree}\nparent {head}\n".encode() + author
              + author.replace(b"author", b"committer", 1) + b"encoding ISO-8859-1\n\n" + message)
    sha = raw_git(w, sub, "hash-object", "-t", "commit", "-w", "--stdin", data=source).strip()
    w.git(sub, "reset", "-q", "--hard", sha.decode())
    w.git(w.superproject, "commit", "-qam", "pin the Latin-1 patch")
    # The user's git writes commits in Latin-1 (commit-tree would label ours so).
    w.git(w.superproject, "config", "--global", "i18n.commitEncoding", "ISO-8859-1")
    r, data = advance(w, tmp_path, "--apply", "--branch", "sm-next")
    assert r.returncode == 0, r.stderr
    assert data["to"] == w.sha(BASE + 1)
    rebased = raw_git(w, sub, "cat-file", "commit", "sm-next")
    headers, _, body = rebased.partition(b"\n\n")
    lines = headers.split(b"\n")
    assert body == message
    assert author.strip() in lines and b"encoding ISO-8859-1" in lines
    assert b"committer Bisect Tester <tester@example.com> " in rebased
    # bisectkit's own commit is UTF-8, labelled so, the patch's subject decoded.
    pin = raw_git(w, w.superproject, "cat-file", "commit", "HEAD")
    assert b"\nencoding " not in pin.partition(b"\n\n")[0]
    assert "[local] résumé of the café fix" in pin.decode("utf-8")


def test_local_patch_conflict_on_the_way_blocks_the_advance(make: Any,
                                                            tmp_path: Path) -> None:
    w = make(bug_at=999, local_conflict=BASE + 20)
    r, data = advance(w, tmp_path, "--report", str(tmp_path / "report.md"))
    assert r.returncode == 0, r.stderr
    assert (data["first_bad"], data["to"]) == (w.sha(BASE + 20), w.sha(BASE + 19))
    at_b = next(s for s in data["steps"] if s["commit"] == w.sha(BASE + 20))
    assert at_b["verdict"] == "bad" and at_b["source"] == "auto"
    assert "conflict in" in at_b["reason"] and "the pin cannot move here" in at_b["reason"]
    assert data["builds"] <= bound(20)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "can move 19 of 300" in report and w.sha(BASE + 20)[:12] in report
    # Dropping the conflicting patch there lets the pin go all the way, without it.
    r, data = advance(w, tmp_path, "--on-conflict", "drop", "--apply")
    assert r.returncode == 0, r.stderr
    assert (data["status"], data["to"]) == ("advanced", w.sha(400))
    assert "warning: the new branch lacks local patch" in r.stdout
    assert "[local] fixup for our target" in r.stdout
    tip = data["applied"]["submodule_commit"]
    assert w.git(w.submodule, "show", f"{tip}:lib/local.txt") == "upstream rewrote this line"


def test_a_conflict_that_stops_the_advance_is_reported_as_such(make: Any,
                                                               tmp_path: Path) -> None:
    # The fixup conflicts from BASE+20 to BASE+100 only; the far end (tested first) applies
    # it again and fails its smoketest (the miscompile at BASE+150): what stops the pin is
    # the conflict at BASE+20, and the far end's output is no evidence about it.
    w = make(bug_at=BASE + 150, local_conflict=BASE + 20, local_conflict_until=BASE + 100)
    report = tmp_path / "report.md"
    r, data = advance(w, tmp_path, "--report", str(report))
    assert r.returncode == 0, r.stderr
    stop, last_good, fixup = w.sha(BASE + 20), w.sha(BASE + 19), w.stack[-1]
    assert (data["first_bad"], data["to"]) == (stop, last_good)
    far = data["steps"][0]
    assert far["commit"] == w.sha(400) and far["reason"] == "exit 1" and far["log"]
    step = next(s["index"] for s in data["steps"] if s["commit"] == stop)
    why = (f"conflict in {fixup[:12]} ([local] fixup for our target): lib/local.txt; "
           "the pin cannot move here")
    assert data["stopped_by"] == {"commit": stop, "step": step, "reason": why, "conflict": True}
    conflicts = sum(1 for s in data["steps"] if s["reason"].startswith("conflict in"))
    reproduce = (f"bisectkit advance --submodule {SUBMODULE} --upstream upstream/main --to "
                 f"{stop} --build 'sh build.sh' -- ./smoke.sh")
    assert data["reproduce"] == reproduce
    # The terminal: which commit stopped the advance and why; those steps were bad.
    out = r.stdout
    lines = flat(out)  # broken between words to fit the width
    assert f"\nstopped at {stop[:12]} (step {step}): " in out
    assert f"stopped at {stop[:12]} (step {step}): {why}" in lines
    assert (f'local patch {fixup[:12]} "[local] fixup for our target" stops applying at '
            f"{stop} upstream commit {BASE + 20}: touch lib/local.txt (applied cleanly at "
            f"{last_good[:12]}); rebase it onto that commit") in lines
    assert (f"{conflicts} steps were bad because a local patch conflicts there (not built: "
            "the pin cannot move to such a commit); --on-conflict drop tests them without the "
            "patch") in lines
    assert "skipped" not in out
    assert f"\n  stopped at {stop[:12]} (step {step}): " in out
    assert f"\n  reproduce: {reproduce}\n" in out
    # The report: the same, and no output of the far end's under the stopping commit.
    md = report.read_text(encoding="utf-8")
    assert f"**Stopped at:** `{stop[:12]}` (step {step}): {why}.\n" in md
    assert (f"#### Step {step} (`{stop[:12]}`, bad: {why})\n\n_Neither built nor run: this "
            "step was decided without a test (the reason above)._\n") in md
    assert "was not tested itself" not in md and "Error lines" not in md
    assert f"```sh\n{reproduce}\n```" in md
    # The command reproduces the answer: the same stop, the same last good commit.
    again = subprocess.run(["bash", "-c", reproduce], cwd=w.superproject, env=w.env,
                           text=True, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"to {last_good[:12]} " in flat(again.stdout) + " "
    assert f"\nstopped at {stop[:12]} " in again.stdout


def test_build_failure_blocks_and_the_report_shows_its_errors(make: Any,
                                                              tmp_path: Path) -> None:
    # Broken again from 165 (past the pick of the fix at 150, which upstream has by then).
    w = make(bug_at=999, build_breaks=[(80, 150), (165, 999)])
    r, data = advance(w, tmp_path, "--report", str(tmp_path / "report.md"))
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == w.sha(165)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "lib/build.txt:1: error: upstream build is broken" in report
    assert "bisectkit run --submodule third_party/llvm-project" in report
    assert f"--good {w.sha(164)} --bad {w.sha(165)}" in report
    assert "advance: third_party/llvm-project can move 64 of 300" in r.stdout


def test_linear_step_commits_one_superproject_commit_per_good_step(make: Any,
                                                                   tmp_path: Path) -> None:
    w = make(bug_at=BASE + 4)
    head = w.git(w.superproject, "rev-parse", "HEAD")
    r, data = advance(w, tmp_path, "--linear", "--apply", "--step-commits", "--branch", "adv")
    assert r.returncode == 0, r.stderr
    commits = data["applied"]["superproject_commits"]
    assert len(commits) == 3
    log = w.git(w.superproject, "rev-list", "--reverse", f"{head}..HEAD").split()
    assert log == commits
    for n, sha in enumerate(commits, 1):
        pin = w.git(w.superproject, "rev-parse", f"{sha}:{SUBMODULE}")
        branch = "adv" if n == 3 else f"adv-step-{n}"
        assert w.git(w.submodule, "rev-parse", branch) == pin
        # Each pin is upstream BASE+n with the stack rebased onto it.
        assert w.git(w.submodule, "merge-base", pin, w.sha(400)) == w.sha(BASE + n)


@pytest.mark.parametrize(("where", "interference", "moved"), [
    # The user commits a new pin in the superproject in another terminal. (Steps in the
    # user's tree would stop there: the superproject is part of what a step tests. Steps
    # in workspaces do not test it, and the search goes on.)
    (".", "cd {root} && git update-index --cacheinfo 160000,{pin},third_party/llvm-project "
          "&& git commit -qm 'user: pin llvm-project by hand'",
     "the superproject's HEAD moved from main ({old}) to main ({new})"),
    # ... or moves the submodule's branch.
    (SUBMODULE, "git -C third_party/llvm-project branch -f main {pin}",
     f"submodule {SUBMODULE} moved from main ({{old}}) to main ({{new}})"),
])
def test_apply_writes_nothing_when_the_user_moved_something_during_the_search(
        make: Any, tmp_path: Path, where: str, interference: str, moved: str) -> None:
    w = make(bug_at=BASE + 3)
    repo = w.superproject / where
    old = w.git(repo, "rev-parse", "HEAD")
    pin = w.stack[-2]  # the fork without its last patch: a commit the submodule has
    # Once, during the first build (deterministic): what a user may do while it searches.
    # mkdir, not a test then touch: with --jobs 2 the first two builds start together, and
    # the second of two interferences would fail its build (nothing left to commit).
    mark = tmp_path / "interfered"
    build = (f"sh build.sh && if mkdir {mark} 2>/dev/null; then "
             f"{interference.format(pin=pin, root=w.superproject)}; fi")
    jobs = ["--jobs", "2"] if where == "." else []
    r, data = advance(w, tmp_path, *jobs, "--apply", "--branch", "sm-next", build=build)
    assert mark.exists()
    new = w.git(repo, "rev-parse", "HEAD")
    assert new != old
    # The answer is given, then the apply is refused: one line, exit 2, nothing written.
    assert "advanced: third_party/llvm-project can move 2 of 300" in r.stdout
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        f"bisectkit: error: --apply wrote nothing: {moved.format(old=old[:12], new=new[:12])} "
        "while the advance ran; its answer stands: run the same command again to apply it "
        "(the verdicts are cached)"]
    assert data["applied"] is None and data["apply_refused"].startswith("--apply wrote nothing")
    # Everything the user did is kept; no branch, no commit of the apply's.
    assert w.git(w.submodule, "branch", "--list", "sm-next") == ""
    assert w.git(w.superproject, "log", "--format=%s", "-1").startswith(
        "user:" if where == "." else "smoketest")
    staged = w.git(w.superproject, "ls-files", "-s", SUBMODULE).split()[1]
    assert staged == w.git(w.superproject, "rev-parse", f"HEAD:{SUBMODULE}")
    assert not (w.superproject / ".git" / "bisectkit" / "apply.json").exists()


@pytest.mark.parametrize(("args", "message"), [
    (("--step-commits", "--apply"), "--step-commits goes with --linear"),
    (("--branch", "x"), "--branch and --step-commits go with --apply"),
    (("--verify-range",), "--verify-range goes with a bisection"),
    (("--to", "HEAD~1"), "contains local patch"),
])
def test_refusals_touch_nothing(make: Any, tmp_path: Path, args: tuple[str, ...],
                                message: str) -> None:
    w = make(bug_at=999)
    before = snapshot(w)
    r, _ = advance(w, tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert snapshot(w) == before


def test_apply_refuses_an_existing_branch_before_testing(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=999)
    w.git(w.submodule, "branch", "taken")
    r, data = advance(w, tmp_path, "--apply", "--branch", "taken")
    assert r.returncode == 2 and "branch 'taken' already exists" in r.stderr
    assert data == {}


def test_cache_is_shared_with_run(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=BASE + 37)
    r = cli(w, "run", "--submodule", SUBMODULE, "--good", w.sha(BASE), "--bad", w.sha(400),
            "--build", "sh build.sh", "--", "./smoke.sh")
    assert r.returncode == 0, r.stderr
    r, data = advance(w, tmp_path)
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == w.sha(BASE + 37)
    cached = [s for s in data["steps"] if s["source"] == "cache"]
    assert cached and data["builds"] == len(data["steps"]) - len(cached)


def test_jobs_give_the_same_answer(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=BASE + 37)
    before = snapshot(w)
    r, data = advance(w, tmp_path, "--jobs", "3")
    assert r.returncode == 0, r.stderr
    assert (data["first_bad"], data["to"]) == (w.sha(BASE + 37), w.sha(BASE + 36))
    assert snapshot(w) == before


SLOW_BUILD = """#!/bin/sh
n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
if [ $n -eq 3 ]; then echo $$ > {marker}; sleep 60; fi
sh build.sh
"""


def test_ctrl_c_mid_advance_restores_and_the_next_run_resumes(make: Any,
                                                              tmp_path: Path) -> None:
    w = make(bug_at=BASE + 37)
    before = snapshot(w)
    marker, count = tmp_path / "started", tmp_path / "count"
    build = tmp_path / "slow-build.sh"
    build.write_text(SLOW_BUILD.format(count=count, marker=marker), encoding="utf-8")
    build.chmod(0o755)
    exe = subprocess.run(["which", "bisectkit"], capture_output=True, text=True).stdout.strip()
    proc = subprocess.Popen([exe, "advance", "--build", str(build), "--", "./smoke.sh"],
                            cwd=w.superproject, env=w.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert snapshot(w) == before
    # The same command again reuses the two verdicts it had (the build sleeps only once).
    r, data = advance(w, tmp_path, build=str(build))
    assert r.returncode == 0, r.stderr
    assert data["first_bad"] == w.sha(BASE + 37)
    assert [s["source"] for s in data["steps"][:2]] == ["cache", "cache"]


def test_manual_advance_session_log_and_replay(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=BASE + 3)
    before = snapshot(w)
    r = git_cli(w, "start", "--advance", "--submodule", SUBMODULE)
    assert r.returncode == 0, r.stderr
    far = w.git(w.submodule, "rev-parse", "HEAD")
    assert w.git(w.submodule, "merge-base", far, w.sha(400)) == w.sha(400)  # the far end
    for verdict in ("bad", "bad", "good", "bad", "good"):  # far end, +44, +1, +3, +2
        r = git_cli(w, verdict)
        assert r.returncode == 0, r.stderr
    assert f"{w.sha(BASE + 3)} is the first bad commit" in r.stdout
    log = git_cli(w, "log").stdout
    assert "start --advance --submodule third_party/llvm-project" in log
    (tmp_path / "log.txt").write_text(log, encoding="utf-8")
    assert git_cli(w, "reset").returncode == 0
    r = git_cli(w, "replay", str(tmp_path / "log.txt"))
    assert r.returncode == 0, r.stderr
    assert f"{w.sha(BASE + 3)} is the first bad commit" in r.stdout
    assert git_cli(w, "reset").returncode == 0
    assert snapshot(w) == before


def test_manual_advance_run_and_check_stack(make: Any, tmp_path: Path) -> None:
    w = make(bug_at=BASE + 37)
    assert git_cli(w, "start", "--advance", "--submodule", SUBMODULE).returncode == 0
    out = tmp_path / "run.json"
    r = git_cli(w, "run", "--build", "sh build.sh", "--check-stack", "--json", str(out), "--",
                "./smoke.sh")
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["status"], data["first_bad"]) == ("advanced", w.sha(BASE + 37))
    # Upstream 137 fails without our patches too: the stack is not to blame.
    assert data["check_stack"]["stack_implicated"] is False
    assert "advanced: third_party/llvm-project can move 36 of 300" in r.stdout
    assert git_cli(w, "reset").returncode == 0
