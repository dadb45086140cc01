"""Guessing the upstream ref without ``--upstream`` (README "Which ref is upstream").

Through the real CLI on real git worlds whose submodule remotes are renamed,
removed or doubled: the guess is printed with its reason, ambiguity and a
guess that would drop the patch stack are refused (exit 2, one line,
nothing touched), and a given ref always wins.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.lines import command_after
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot

GOOD_IF = "device .* not found"
HOW = "pass --upstream REF or set git config bisectkit.upstream REF"


def bisect(world: World, *extra: str, good: int = 0, bad: int = 300, build: bool = True,
           json_out: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``bisectkit run`` over upstream good..bad, with the world's build (no --upstream)."""
    out = ["--json", str(json_out)] if json_out else []
    builds = ["--build", "./build.sh"] if build else []
    return cli(world, "run", "--submodule", SUBMODULE, *extra, "--good", world.sha(good),
               "--bad", world.sha(bad), *builds, "--good-if", GOOD_IF, *out, "--", "./repro.sh")


def session_file(world: World) -> Path:
    return world.superproject / ".git" / "bisectkit" / "session.json"


def assert_refused(world: World, r: subprocess.CompletedProcess[str], before: dict[str, str],
                   *words: str, guessing: bool = True) -> str:
    """Exit 2, one stderr line with ``words`` (and how to choose), nothing touched."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    for word in (*words, HOW) if guessing else words:
        assert word in lines[0], (word, lines[0])
    assert snapshot(world) == before
    assert not session_file(world).exists()
    return lines[0]


def flat(text: str) -> str:
    """``text`` with its line breaks as spaces: the header is wrapped to the width."""
    return " ".join(text.split())


def add_stale_mirror(world: World, at: int = 350) -> None:
    """A second upstream-like remote whose main was last fetched at upstream commit ``at``."""
    world.git(world.submodule, "remote", "add", "mirror", str(world.upstream))
    world.git(world.submodule, "update-ref", "refs/remotes/mirror/main", world.sha(at))


def test_renamed_upstream_remote_is_guessed_and_the_stack_kept(world: World, tmp_path: Path):
    world.git(world.submodule, "remote", "rename", "upstream", "llvm")
    before = snapshot(world)
    out = tmp_path / "r.json"
    r = bisect(world, json_out=out)
    assert r.returncode == 0, r.stderr + r.stdout
    assert flat(f"  upstream: llvm/main (guessed: nearest merge-base with HEAD among the remote "
                f"branches without it, 4 local patches on top; to choose, {HOW})"
                ) in flat(r.stdout)
    assert "  patch stack: 4 patches" in r.stdout
    # The build is broken upstream from 180 to 320; only the stack's pick of the fix
    # (320) lets the steps near the culprit build: an empty stack would end inconclusive.
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    result = json.loads(out.read_text())
    assert result["upstream"] == "llvm/main"
    assert not [s for s in result["steps"] if s["verdict"] == "skip"]
    assert snapshot(world) == before


def test_unpushed_patch_does_not_make_the_fork_branch_upstream(world: World):
    """HEAD one commit past origin/main: the fork's branch lacks HEAD but is still not upstream."""
    sub = world.submodule
    world.git(sub, "remote", "rename", "upstream", "llvm")
    (sub / "lib" / "wip.txt").write_text("work in progress\n", encoding="utf-8")
    world.git(sub, "add", "lib/wip.txt")
    world.git(sub, "commit", "-q", "-m", "[local] not pushed yet")
    data = json.loads(cli(world, "status", "--json").stdout)
    assert data["upstream"] == "llvm/main"
    assert data["merge_base"] == world.sha(300)
    assert len(data["patches"]) == 5
    assert data["upstream_guessed"].endswith("5 local patches on top")


def test_two_equally_near_upstreams_are_refused_listing_both(world: World):
    add_stale_mirror(world)
    before = snapshot(world)
    line = assert_refused(world, bisect(world), before,
                          "cannot guess the upstream of third_party/llvm-project",
                          "2 remote branches are equally near HEAD",
                          f"(merge-base {world.sha(300)[:12]})", "mirror/main, upstream/main")
    # bisectkit status refuses with the same line.
    r = cli(world, "status")
    assert r.returncode == 2 and r.stderr.splitlines() == [line]
    assert snapshot(world) == before


def test_the_bisected_revisions_break_a_tie(world: World):
    """Only upstream/main contains bad (380), so it is the upstream of that bisect."""
    add_stale_mirror(world)
    r = git_cli(world, "start", "--submodule", SUBMODULE, world.sha(380), world.sha(300))
    assert r.returncode == 0, r.stderr
    assert flat("upstream: upstream/main (guessed: nearest merge-base with HEAD among the "
                "remote branches without it, 4 local patches on top; the only one of 2 equally "
                "near that contains the revisions to bisect;") in flat(r.stdout)
    log = git_cli(world, "log").stdout
    assert f"--upstream upstream/main {world.sha(380)}" in log
    assert git_cli(world, "reset").returncode == 0


def test_only_the_forks_own_remote_is_refused(world: World):
    """The issue: no upstream remote, origin/main is HEAD itself; the stack would vanish."""
    world.git(world.submodule, "remote", "remove", "upstream")
    before = snapshot(world)
    head = world.git(world.submodule, "rev-parse", "HEAD")
    words = ("cannot guess the upstream of third_party/llvm-project: origin/main contains "
             f"HEAD {head[:12]}, which would leave no local patches",
             "(cherry picked from commit", "fetch the upstream remote")
    line = assert_refused(world, bisect(world), before, *words)
    r = cli(world, "status")
    assert r.returncode == 2 and r.stderr.splitlines() == [line]
    # Even when the submodule's URL no longer names that remote as where pins come from.
    world.git(world.superproject, "config", f"submodule.{SUBMODULE}.url", "/elsewhere")
    world.git(world.superproject, "config", "-f", ".gitmodules", f"submodule.{SUBMODULE}.url",
              "/elsewhere")
    before = snapshot(world)
    r = cli(world, "status")
    assert r.returncode == 2 and "(cherry picked from commit" in r.stderr
    assert snapshot(world) == before


def test_no_remote_branch_at_all(world: World):
    for remote in ("upstream", "origin"):
        world.git(world.submodule, "remote", "remove", remote)
    before = snapshot(world)
    assert_refused(world, bisect(world), before,
                   "no remote-tracking branch shares history with HEAD",
                   "fetch the upstream remote")


def test_pristine_head_has_an_empty_stack(world: World):
    """HEAD on upstream itself: every branch of the upstream remote contains it."""
    world.git(world.submodule, "checkout", "-q", "--detach", world.sha(300))
    before = snapshot(world)
    # Without the stack's pick of the build fix the upstream build is broken near the
    # culprit: the repro alone decides here.
    r = bisect(world, bad=250, build=False)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert flat("upstream: upstream/main (guessed: upstream/main contains HEAD, so there are "
                "no local patches;") in flat(r.stdout)
    assert "  patch stack: 0 patches" in r.stdout
    assert snapshot(world) == before
    data = json.loads(cli(world, "status", "--json").stdout)
    assert data["clean"] is True and data["upstream"] == "upstream/main"


def test_a_given_upstream_wins_and_must_exist(world: World):
    add_stale_mirror(world)
    r = bisect(world, "--upstream", "mirror/main")
    assert r.returncode == 0, r.stderr
    assert "guessed" not in r.stdout
    assert "  upstream mirror/main at" in r.stdout
    assert f"{world.sha(200)} is the first bad commit" in r.stdout

    world.git(world.superproject, "config", "bisectkit.upstream", "mirror/main")
    r = cli(world, "status")
    assert r.returncode == 0, r.stderr
    assert f"  upstream    mirror/main at {world.sha(350)[:12]}" in r.stdout
    assert "guessed" not in r.stdout
    data = json.loads(cli(world, "status", "--json").stdout)
    assert data["upstream_guessed"] is None

    world.git(world.superproject, "config", "bisectkit.upstream", "nope/main")
    before = snapshot(world)
    assert_refused(world, bisect(world), before, "unknown revision 'nope/main'",
                   "(the upstream given by git config bisectkit.upstream)", guessing=False)
    assert_refused(world, bisect(world, "--upstream", "nope/flag"), before,
                   "unknown revision 'nope/flag'", "(the upstream given by --upstream)",
                   guessing=False)


def test_status_prints_the_guess(world: World):
    world.git(world.submodule, "remote", "rename", "upstream", "llvm")
    r = cli(world, "status")
    assert r.returncode == 0, r.stderr
    # Said once, on the upstream line, within the width.
    assert "  upstream    llvm/main at" in r.stdout
    assert (f"upstream llvm/main at {world.sha(400)[:12]} (guessed: nearest merge-base with "
            "HEAD among the remote branches without it, 4 local patches on top;"
            ) in flat(r.stdout)
    assert "upstream: llvm/main" not in r.stdout and flat(r.stdout).count("guessed:") == 1
    assert "patched: 4 local patches (what happens at llvm/main):" in r.stdout


def test_integrate_followup_uses_the_guessed_upstream(integrate_world: World):
    w = integrate_world
    w.git(w.submodule, "remote", "rename", "upstream", "llvm")
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad", w.integrate["adv12"],
            "--build", "./build.sh", "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"  {SUBMODULE} upstream: llvm/main (guessed: nearest merge-base" in r.stdout
    command = command_after(r.stdout, "to find the upstream culprit, run:")
    assert command[command.index("--upstream") + 1] == "llvm/main"
    assert command[command.index("--good") + 1] == w.sha(175)


def test_integrate_without_an_upstream_still_bisects(integrate_world: World):
    """Only the fork's remote: its older integrate branches are not taken for upstream."""
    w = integrate_world
    w.git(w.submodule, "remote", "remove", "upstream")
    r = cli(w, "status")
    assert r.returncode == 2
    assert ("only origin, where the superproject fetches the submodule from, has branches "
            "sharing history with HEAD") in r.stderr
    assert "origin/integrate-0, origin/integrate-1" in r.stderr and "and 4 more" in r.stderr
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad", w.integrate["adv12"],
            "--build", "./build.sh", "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.integrate['adv8']} is the first bad commit" in r.stdout
    assert f"  {SUBMODULE} upstream: none, so no follow-up bisect command for it" in r.stdout
    assert "to find the upstream culprit" not in r.stdout
