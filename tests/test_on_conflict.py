"""``--on-conflict skip|drop`` and where a local patch stops applying, through the real CLI.

The default world's local fixup rewrites ``lib/local.txt``; upstream rewrites
the same line at commit 340, so from there on the fixup conflicts. The bug is
put at 360, past that point: skipping conflicting steps cannot find it,
testing them without the fixup can.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli, snapshot

from bisectkit.ui.report import render_markdown, render_terminal

GOOD_IF = "device .* not found"
SPEC = WorldSpec(bug_at=360)
FIXUP_SUBJECT = "[local] fixup for our target"


@pytest.fixture
def world(world_factory, tmp_path: Path) -> World:
    return world_factory(tmp_path, SPEC)


def oneshot(world: World, good: int, bad: int, *extra: str, json_path: Path | None = None,
            build: str = "./build.sh") -> subprocess.CompletedProcess[str]:
    args = ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(good), "--bad", world.sha(bad), "--build", build,
            "--good-if", GOOD_IF, *extra]
    if json_path is not None:
        args += ["--json", str(json_path)]
    return cli(world, *args, "--", "./repro.sh")


def flat(text: str) -> str:
    """``text`` with its line breaks as spaces: lines are broken to fit the width."""
    return " ".join(text.split())


def number(world: World, sha: str) -> int:
    return world.shas.index(sha)


def fixup(world: World) -> str:
    """The local fixup: the last patch of the default stack."""
    return world.stack[-1]


def first_upstream_change(world: World, path: str, after: int, upto: int) -> str:
    """From git itself: the oldest upstream commit in (after, upto] that touches ``path``."""
    shas = world.git(world.upstream, "log", "--reverse", "--format=%H",
                     f"{world.sha(after)}..{world.sha(upto)}", "--", path).split()
    return shas[0]


def without_flag(world: World) -> str:
    return f"tested without {fixup(world)[:12]} {FIXUP_SUBJECT}"


def add_patch(world: World, *, revert: str | None = None, message: str = "",
              path: str = "", text: str = "") -> str:
    """Put one more patch on top of the submodule's stack and pin it in the superproject."""
    sub = world.submodule
    if revert is not None:
        world.git(sub, "revert", "--no-edit", revert)
    else:
        (sub / path).write_text(text, encoding="utf-8")
        world.git(sub, "commit", "-q", "-am", message)
    world.git(world.superproject, "commit", "-q", "-am", "pin the new patch stack")
    return world.git(sub, "rev-parse", "HEAD")


def test_skip_names_the_commit_from_which_the_fixup_stops_applying(world: World,
                                                                  tmp_path: Path):
    before = snapshot(world)
    out, report = tmp_path / "r.json", tmp_path / "r.md"
    r = oneshot(world, 300, 400, "--report", str(report), json_path=out)
    # Every candidate from 340 on conflicts: the bug at 360 cannot be reached.
    assert r.returncode == 1, r.stderr + r.stdout
    assert snapshot(world) == before
    result = json.loads(out.read_text())
    assert result["status"] == "inconclusive"
    assert result["on_conflict"] == "skip"
    stop = first_upstream_change(world, "lib/local.txt", 300, 400)
    assert number(world, stop) == 340
    parent = world.git(world.upstream, "rev-parse", f"{stop}^")
    assert result["stops_applying"] == [{
        "patch": fixup(world), "subject": FIXUP_SUBJECT, "first_conflict": stop,
        "first_conflict_subject": "upstream commit 340: touch lib/local.txt",
        "last_clean": parent, "exact": True,
        "message": f'local patch {fixup(world)[:12]} "{FIXUP_SUBJECT}" stops applying at '
                   f"{stop} upstream commit 340: touch lib/local.txt (applied cleanly at "
                   f"{parent[:12]}); rebase it onto that commit"}]
    # Printed within the width: broken between words, so compared without line breaks.
    assert flat(result["stops_applying"][0]["message"]) in flat(r.stdout)
    assert "--on-conflict drop tests such candidates without it" in flat(r.stdout)
    md = report.read_text()
    assert "#### Local patches that stop applying" in md
    assert f"stops applying at `{stop[:12]}` upstream commit 340" in md
    # Skipped, not flagged: nothing was tested without the patch.
    assert not any(s.get("flags") for s in result["steps"])
    assert "tested without" not in r.stdout + md


def test_drop_finds_the_culprit_past_the_conflict_and_flags_the_steps(world: World,
                                                                     tmp_path: Path):
    before = snapshot(world)
    seen = tmp_path / "seen"
    # What the build saw: the candidate and the fixup's file in the submodule.
    build = (f'echo "$BISECTKIT_COMMIT $(cat {SUBMODULE}/lib/local.txt)" >> {seen} && '
             "./build.sh")
    out, report = tmp_path / "r.json", tmp_path / "r.md"
    r = oneshot(world, 300, 400, "--on-conflict", "drop", "--report", str(report),
                json_path=out, build=build)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(360)} is the first bad commit" in r.stdout
    assert snapshot(world) == before
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(360)
    assert result["on_conflict"] == "drop"
    flag = without_flag(world)
    tested = {}
    for line in seen.read_text().splitlines():
        sha, content = line.split(" ", 1)
        tested[number(world, sha)] = content
    steps = result["steps"]
    assert {number(world, s["commit"]) for s in steps} == set(tested)
    assert any(n >= 340 for n in tested) and all(s["verdict"] != "skip" for s in steps)
    for s in steps:
        n = number(world, s["commit"])
        local = next(p for p in s["patches"] if p["commit"] == fixup(world))
        if n >= 340:
            assert local["action"] == "dropped"
            assert local["why"].startswith("conflicts at this candidate (--on-conflict drop)")
            assert s["flags"] == [flag]
            assert tested[n] == "upstream rewrote this line"  # really built without it
        else:
            assert local["action"] == "applied"
            assert "flags" not in s
            assert tested[n] == "our local fixup"
    # Console: under the step, in the summary; report: the flagged steps.
    assert f"    flagged: {flag}" in r.stdout
    assert f"step {steps[-1]['index']} {steps[-1]['commit'][:12]} bad: {flag}" in flat(r.stdout)
    md = report.read_text()
    assert "#### Flagged steps" in md and flag in md
    assert "**On conflict:** a conflicting local patch was left out" in md
    # The fixup applies at the good end 300: the boundary is exact even though every
    # tested candidate was past it.
    stop = first_upstream_change(world, "lib/local.txt", 300, 400)
    [entry] = result["stops_applying"]
    assert (entry["first_conflict"], entry["exact"]) == (stop, True)
    assert entry["last_clean"] == world.git(world.upstream, "rev-parse", f"{stop}^")
    assert flat(entry["message"]) in flat(r.stdout)


def test_reproduce_with_keeps_on_conflict_drop(world: World, tmp_path: Path):
    # "Reproduce with" runs the same bisection again: without --on-conflict drop every
    # candidate past 340 would be skipped and the culprit at 360 never reached.
    out = tmp_path / "r.json"
    r = oneshot(world, 300, 400, "--on-conflict", "drop", json_path=out)
    assert r.returncode == 0, r.stderr + r.stdout
    reproduce = json.loads(out.read_text())["reproduce"]
    again = subprocess.run(shlex.split(reproduce), cwd=world.superproject, env=world.env,
                           text=True, capture_output=True, stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr + again.stdout
    assert f"{world.sha(360)} is the first bad commit" in again.stdout


def test_drop_verdicts_are_cached_by_the_tree_without_the_patch(world: World, tmp_path: Path):
    """A skip run tests only trees with the fixup; a drop run then reuses those and no more."""
    counter = tmp_path / "builds"
    build = f"echo x >> {counter} && ./build.sh"
    skip = oneshot(world, 300, 400, json_path=tmp_path / "skip.json", build=build)
    assert skip.returncode == 1
    out = tmp_path / "drop.json"
    drop = oneshot(world, 300, 400, "--on-conflict", "drop", json_path=out, build=build)
    assert drop.returncode == 0, drop.stderr
    steps = json.loads(out.read_text())["steps"]
    for s in steps:
        without = number(world, s["commit"]) >= 340
        # Nothing tested without the fixup existed in the cache.
        assert (s["source"] == "run") if without else True
    builds = len(counter.read_text().splitlines())
    again = oneshot(world, 300, 400, "--on-conflict", "drop", json_path=out, build=build)
    assert again.returncode == 0
    assert f"{world.sha(360)} is the first bad commit" in again.stdout
    assert len(counter.read_text().splitlines()) == builds  # all cached
    cached = json.loads(out.read_text())["steps"]
    assert all(s["source"] == "cache" for s in cached)
    # A cached step keeps its flag: it comes from how the candidate was prepared.
    assert [s.get("flags") for s in cached] == [s.get("flags") for s in steps]
    assert f"    flagged: {without_flag(world)}" in again.stdout


def test_drop_when_the_whole_range_conflicts(world: World, tmp_path: Path):
    """The good end 345 conflicts too: no clean commit is known, so no commit is named."""
    out = tmp_path / "r.json"
    r = oneshot(world, 345, 400, "--on-conflict", "drop", json_path=out)
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result["first_bad"] == world.sha(360)
    [entry] = result["stops_applying"]
    oldest = min((s["commit"] for s in result["steps"]), key=lambda c: number(world, c))
    assert entry["last_clean"] is None and entry["exact"] is False
    assert entry["first_conflict"] == oldest
    assert "conflicts at every tested candidate from " + oldest in entry["message"]
    assert flat(entry["message"]) in flat(r.stdout)
    assert "stops applying at" not in r.stdout


def test_an_earlier_conflict_leaves_the_boundary_open(world: World, tmp_path: Path):
    """Where an earlier patch stops the replay, the fixup was never tried: "between", no name.

    A custom upstream line on top of 300: u4 changes lib/fix2.txt under the
    "[local] backport fix2" patch (local here: this upstream never has 350),
    u12 restores it and rewrites lib/local.txt under the fixup. In u4..u11 the
    backport conflicts first, so whether the fixup applies there is unknown.
    """
    scratch = tmp_path / "scratch"
    world.git(tmp_path, "clone", "-q", str(world.upstream), str(scratch))
    world.git(scratch, "checkout", "-q", "-B", "line", world.sha(300))
    line: list[str] = []
    for n in range(1, 14):
        files = {4: {"lib/fix2.txt": "changed upstream\n"},
                 12: {"lib/fix2.txt": "not fixed\n", "lib/local.txt": "upstream rewrote\n"}}
        for path, text in files.get(n, {"lib/line.txt": f"line {n}\n"}).items():
            (scratch / path).write_text(text, encoding="utf-8")
        world.git(scratch, "add", "-A")
        world.git(scratch, "commit", "-q", "-m", f"line commit u{n}")
        line.append(world.git(scratch, "rev-parse", "HEAD"))
    world.git(world.submodule, "fetch", "-q", str(scratch), "line:refs/remotes/upstream/line")
    out = tmp_path / "r.json"
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/line",
            "--good", world.sha(300), "--bad", line[-1], "--build", "./build.sh",
            "--good-if", GOOD_IF, "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 1, r.stderr + r.stdout
    result = json.loads(out.read_text())
    u = {sha: i + 1 for i, sha in enumerate(line)}
    verdicts = {u[s["commit"]]: s["verdict"] for s in result["steps"]}
    assert verdicts.get(3) == "good" and verdicts.get(12) == "skip"
    assert not any(verdicts.get(n) == "good" for n in range(4, 12))
    # The backport applies again at u12: nothing to rebase. The fixup: an open boundary.
    [entry] = result["stops_applying"]
    assert entry["patch"] == fixup(world)
    assert (entry["last_clean"], entry["first_conflict"], entry["exact"]) == (
        line[2], line[11], False)
    assert entry["message"] == (
        f'local patch {fixup(world)[:12]} "{FIXUP_SUBJECT}" stops applying between '
        f"{line[2][:12]} (applied cleanly) and {line[11]} line commit u12 (conflicts), the "
        f"commits between could not be checked; rebase it onto {line[11][:12]}")
    assert flat(entry["message"]) in flat(r.stdout)


@pytest.mark.parametrize("kind", ["revert", "cherry-pick"])
def test_drop_never_drops_a_conflicting_revert_or_cherry_pick(world: World, tmp_path: Path,
                                                              kind: str):
    # Upstream 285 and 305 both rewrite lib/file5.txt (merge-base: 300).
    if kind == "revert":
        # Applied from 285 on (it is in the candidate); conflicts from 305.
        patch = add_patch(world, revert=world.sha(285))
    else:
        # Picked from "upstream 395": applied below 395, conflicts from 305.
        patch = add_patch(world, path="lib/file5.txt", text="backported\n",
                          message=f"Backport\n\n(cherry picked from commit {world.sha(395)})")
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = oneshot(world, 300, 400, "--on-conflict", "drop", json_path=out)
    assert r.returncode == 1, r.stderr + r.stdout  # 305 ... 360 are all skipped
    assert snapshot(world) == before
    result = json.loads(out.read_text())
    conflicting = [s for s in result["steps"]
                   if 305 <= number(world, s["commit"]) < (395 if kind == "cherry-pick" else 401)]
    assert conflicting
    for s in conflicting:
        assert s["verdict"] == "skip" and s["source"] == "auto", s
        assert s["reason"].startswith(f"conflict in {patch[:12]}")
        action = next(p for p in s["patches"] if p["commit"] == patch)
        assert (action["kind"], action["action"]) == (kind, "conflict")
        assert "flags" not in s  # nothing was tested
    # Past 395 the pick is upstream (dropped); only the fixup is left out there.
    flagged = {number(world, s["commit"]) for s in result["steps"] if s.get("flags")}
    assert all(n >= 395 for n in flagged) and (kind == "revert") == (not flagged)
    # Only local patches are reported as needing a rebase.
    assert all(e["patch"] != patch for e in result["stops_applying"])


def test_start_on_conflict_drop_persists_through_marks_run_log_and_replay(world: World,
                                                                         tmp_path: Path):
    before = snapshot(world)
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                "--on-conflict", "drop", world.sha(400), world.sha(300))
    assert r.returncode == 0, r.stderr
    assert "--on-conflict drop: a conflicting local patch is left out" in r.stdout
    flag = without_flag(world)
    # By hand: the first candidate (350) is past the conflict and checked out without it.
    assert "dropped conflicts at this candidate (--on-conflict drop)" in " ".join(
        r.stdout.split())  # the reason may continue on the next line, never cut
    local = (world.submodule / "lib/local.txt").read_text()
    assert local == "upstream rewrote this line\n"
    bug = (world.submodule / "lib/bug.txt").read_text()
    r = git_cli(world, "bad" if "miscompile" in bug else "good")
    assert r.returncode == 0, r.stderr
    assert f"    flagged: {flag}" in r.stdout  # the step marked by hand
    # The rest automatically: `run` uses the session's setting too.
    out = tmp_path / "r.json"
    r = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "--json", str(out),
                "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert f"{world.sha(360)} is the first bad commit" in r.stdout
    result = json.loads(out.read_text())
    assert result["on_conflict"] == "drop"
    assert result["steps"][0]["source"] == "manual" and result["steps"][0]["flags"] == [flag]
    assert all(s["verdict"] != "skip" for s in result["steps"])
    log = git_cli(world, "log")
    assert log.returncode == 0
    first = log.stdout.splitlines()[0]
    assert first.startswith("git bisect-patched start --submodule third_party/llvm-project "
                            "--upstream upstream/main --on-conflict drop ")
    log_file = tmp_path / "bisect.log"
    log_file.write_text(log.stdout)
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before

    r = git_cli(world, "replay", str(log_file))
    assert r.returncode == 0, r.stderr
    assert "--on-conflict drop: a conflicting local patch is left out" in r.stdout
    assert f"{world.sha(360)} is the first bad commit" in r.stdout
    assert git_cli(world, "log").stdout == log.stdout
    status = git_cli(world, "status")
    assert "--on-conflict drop: a conflicting local patch is left out" in status.stdout
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


@pytest.mark.parametrize("target", [["--stack", "--at", "HEAD"], ["--integrate"]])
def test_on_conflict_is_refused_where_no_stack_is_replayed_onto_candidates(world: World,
                                                                           target: list[str]):
    before = snapshot(world)
    extra = [] if "--stack" in target else ["--good", world.sha(300), "--bad", world.sha(400)]
    r = cli(world, "run", "--submodule", SUBMODULE, *target, *extra, "--on-conflict", "drop",
            "--", "./repro.sh")
    assert r.returncode == 2
    assert r.stderr.strip() == ("bisectkit: error: --on-conflict goes with a submodule bisect "
                                "(not --stack or --integrate): only it replays the patch stack "
                                "onto upstream candidates")
    assert snapshot(world) == before
    assert not (world.superproject / ".git/bisectkit/session.json").exists()
    bad = cli(world, "run", "--submodule", SUBMODULE, "--on-conflict", "maybe", "--good",
              world.sha(300), "--bad", world.sha(400), "--", "./repro.sh")
    assert bad.returncode == 2 and "invalid choice: 'maybe'" in bad.stderr


def test_report_says_between_or_from_when_the_boundary_is_open() -> None:
    """The report never names a commit it does not know: the three forms of the entry."""
    patch, clean, first = "e" * 40, "3" * 40, "4" * 40

    def entry(last_clean: str | None, exact: bool) -> dict[str, object]:
        return {"patch": patch, "subject": "[local] fixup", "first_conflict": first,
                "first_conflict_subject": "upstream rewrote it", "last_clean": last_clean,
                "exact": exact, "message": "..."}

    result = {"status": "inconclusive", "strategy": "submodule", "submodule": SUBMODULE,
              "good": ["1" * 40], "bad": "9" * 40, "range_size": 9, "steps": [],
              "candidates": [first, "9" * 40], "on_conflict": "skip",
              "stops_applying": [entry(clean, True), entry(clean, False), entry(None, False)]}
    md = render_markdown(result, "https://example.com/c/{sha}")
    link = {s: f"[`{s[:12]}`](https://example.com/c/{s})" for s in (patch, clean, first)}
    body = md.split("#### Local patches that stop applying\n\n", 1)[1].split("\n\n")[0]
    # The patch exists only in the fork: no bisectkit.fork-url, no link.
    name = f"- local patch `{patch[:12]}` [local] fixup:"
    assert body.splitlines() == [
        f"{name} stops applying at {link[first]} upstream rewrote it (applied cleanly at "
        f"{link[clean]}); rebase it onto that commit.",
        f"{name} stops applying between {link[clean]} (applied cleanly) and {link[first]} "
        "upstream rewrote it (conflicts); the commits between could not be checked; rebase it "
        "onto the latter.",
        f"{name} conflicts at every tested candidate from {link[first]} upstream rewrote it; "
        "rebase it onto that commit."]
    assert "**On conflict:**" not in md  # only said under --on-conflict drop
    lines = render_terminal(result)
    short = f"  local patch {patch[:12]} stops applying"
    assert [x for x in lines if x.startswith(short)] == [
        f"{short} at {first[:12]}: rebase it",
        f"{short} between {clean[:12]} and {first[:12]}: rebase it",
        f"{short} from {first[:12]}: rebase it"]
