"""A verdict is recorded only for the tree that was really tested.

While a step builds and runs the repro, something else may move the repositories
it checked out: ``git submodule update`` in another terminal, an IDE, a build
script. The step then tested some other tree (here: the pin, which is bad), and
recording (and caching) its outcome names the wrong first bad commit. Each test
makes that other terminal deterministic: the build or the repro, on its first
invocation only, moves the tree itself. The run must stop (exit 3, one line),
record and cache nothing, restore everything; run again, it tests that
candidate for real and finds the right answer. The superproject counts too where
the strategy never moves it (its scripts are part of the test), and so does a
move undone before the check (HEAD's reflog remembers it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.gittrace import git_processes, in_worktree, trace_env
from helpers.tree_moves import assert_stopped, once, submodule_run
from helpers.worlds import SUBMODULE, World, cli, git_cli, snapshot
from worldgen import REPRO_SH, git, hermetic_env

from bisectkit.errors import TreeMoved
from bisectkit.git.repo import Repo
from bisectkit.safety.undertest import Held, Watch, as_found, how_moved

GOOD_IF = "device .* not found"
UPSTREAM = "upstream/main"


def stopped_candidate(r: subprocess.CompletedProcess[str]) -> str:
    """The (short) commit of the step the run stopped in, as its line names it."""
    index = r.stderr.split(" changed during step ")[1].split()[0]
    found = [x.split()[3] for x in r.stdout.splitlines()
             if x.startswith(f"[step {index}] testing ")]
    assert len(found) == 1, r.stdout
    return found[0]


def assert_tested_for_real(r: subprocess.CompletedProcess[str], result: dict,
                           first_bad: str, stopped: str) -> None:
    """The rerun finds the right answer, and the candidate the stopped run was testing is
    tested for real: the stopped step left no verdict in the cache."""
    assert r.returncode == 0, r.stdout + r.stderr
    assert result["first_bad"] == first_bad
    steps = [s for s in result["steps"] if s["commit"].startswith(stopped)]
    assert [s["source"] for s in steps] == ["run"], steps
    assert not steps[0]["reason"].startswith("cached"), steps


#: Checks ``$1`` out in the submodule and the commit it held again: HEAD ends where it was.
THERE_AND_BACK = (f"sh -c 'here=$(git -C {SUBMODULE} rev-parse HEAD) && "
                  f"git -C {SUBMODULE} checkout -q --detach \"$0\" && "
                  f"git -C {SUBMODULE} checkout -q --detach \"$here\"'")
#: Another experiment, committed or saved over repro.sh: another feature (another answer).
OTHER_REPRO = REPRO_SH.replace(f"grep -q miscompile {SUBMODULE}/lib/bug.txt",
                               f"grep -q 'feature v1' {SUBMODULE}/lib/feature.txt")


def session_file(world: World) -> Path:
    return world.superproject / ".git" / "bisectkit" / "session.json"


def pin_of(world: World) -> str:
    return world.git(world.submodule, "rev-parse", "HEAD")


@pytest.mark.parametrize("move", ["git submodule update " + SUBMODULE,
                                  "git -C " + SUBMODULE + " checkout -q {pin}"],
                         ids=["submodule-update", "checkout-the-pin"])
def test_a_build_that_moves_the_submodule_stops_the_run_and_records_nothing(
        world: World, tmp_path: Path, move: str) -> None:
    before = snapshot(world)
    build = once(tmp_path, move.format(pin=pin_of(world)), "./build.sh")
    r, result = submodule_run(world, tmp_path, build=str(build), name="stopped")
    line = assert_stopped(r, result, SUBMODULE, "after the build")
    # The submodule was moved back to its pin: HEAD names the pin, not the patched candidate.
    assert f"HEAD is now {before['sub_head'][:12]}" in line
    assert snapshot(world) == before

    # The same command again (the other terminal is quiet now): the candidate is tested.
    stopped = stopped_candidate(r)
    r, result = submodule_run(world, tmp_path, build=str(build), name="again")
    assert_tested_for_real(r, result, world.sha(200), stopped)
    assert snapshot(world) == before


def test_a_repro_that_moves_the_submodule_stops_the_run(world: World, tmp_path: Path) -> None:
    before = snapshot(world)
    repro = once(tmp_path, f"git -C {SUBMODULE} checkout -q {pin_of(world)}", "./repro.sh")
    r, result = submodule_run(world, tmp_path, repro=str(repro), name="stopped")
    assert_stopped(r, result, SUBMODULE, "after the repro")
    assert snapshot(world) == before
    stopped = stopped_candidate(r)
    r, result = submodule_run(world, tmp_path, repro=str(repro), name="again")
    assert_tested_for_real(r, result, world.sha(200), stopped)


def test_with_no_build_a_step_checks_its_trees_once_after_the_repro(
        world: World, tmp_path: Path) -> None:
    """Nothing runs between a step's checkout and its repro when there is no build: one
    git status per repository per step (a full scan of 150,000 files in llvm-project),
    after the repro, which still stops the run when the repro moved the tree."""
    repro = once(tmp_path, f"git -C {SUBMODULE} checkout -q {pin_of(world)}", "./repro.sh")
    argv = ["run", "--submodule", SUBMODULE, "--upstream", UPSTREAM, "--good", world.sha(0),
            "--bad", world.sha(300), "--good-if", GOOD_IF]
    r = cli(world, *argv, "--json", str(tmp_path / "stopped.json"), "--", str(repro))
    assert_stopped(r, json.loads((tmp_path / "stopped.json").read_text()), SUBMODULE,
                   "after the repro")
    trace = tmp_path / "trace2.json"
    out = tmp_path / "again.json"
    r = cli(world, *argv, "--json", str(out), "--", str(repro), extra_env=trace_env(trace))
    assert r.returncode == 0, r.stdout + r.stderr
    steps = [s for s in json.loads(out.read_text())["steps"] if s["source"] == "run"]
    statuses = [p for p in in_worktree(git_processes(trace), world.submodule)
                if "status" in p.argv]
    # One more: the start's check for uncommitted changes, before any step.
    assert len(statuses) == len(steps) + 1, [p.argv for p in statuses]


def test_a_commit_made_on_the_moved_submodule_is_kept(world: World, tmp_path: Path) -> None:
    """The restore copes with a HEAD somebody else moved: a commit made there meanwhile
    (on no branch) is kept, everything else is as before."""
    before = snapshot(world)
    commit = f"git -C {SUBMODULE} commit -q --allow-empty -m 'my work in progress'"
    r, result = submodule_run(world, tmp_path, build=str(once(tmp_path, commit, "./build.sh")))
    assert_stopped(r, result, SUBMODULE, "after the build")
    assert snapshot(world) == before
    kept = world.git(world.submodule, "log", "-1", "--format=%s", "refs/bisectkit/kept/1")
    assert kept == "my work in progress"


def test_a_build_that_edits_a_tracked_file_stops_the_run(world: World, tmp_path: Path) -> None:
    """The files count, not only HEAD: a tracked file the build rewrote (here: the bug put
    in by hand) is not the candidate's tree."""
    before = snapshot(world)
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", UPSTREAM,
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    edit = f"sh -c 'echo miscompile > {SUBMODULE}/lib/bug.txt'"
    r = git_cli(world, "run", "--build", str(once(tmp_path, edit, "./build.sh")),
                "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"{SUBMODULE} changed during step 1 (seen after the build: lib/bug.txt no " \
           "longer as in " in r.stderr
    # An edit bisectkit cannot tell from the user's is never overwritten: undone by hand.
    world.git(world.submodule, "checkout", "--", "lib/bug.txt")
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


@pytest.mark.parametrize("where", ["submodule", "superproject"])
def test_integrate_stops_when_a_repository_it_moved_moves(integrate_world: World,
                                                          tmp_path: Path, where: str) -> None:
    w = integrate_world
    before = snapshot(w)
    move = (f"git -C {SUBMODULE} checkout -q {w.pins[12]}" if where == "submodule"
            else f"git checkout -q --detach {w.integrate['adv12']}")
    build = once(tmp_path, move, "./build.sh")
    argv = ["run", "--integrate", "--good", w.integrate["init"], "--bad", w.integrate["adv12"],
            "--build", str(build), "--good-if", GOOD_IF]
    out = tmp_path / "stopped.json"
    r = cli(w, *argv, "--json", str(out), "--", "./repro.sh")
    assert_stopped(r, json.loads(out.read_text()),
                   SUBMODULE if where == "submodule" else "the superproject", "after the build")
    assert snapshot(w) == before
    stopped = stopped_candidate(r)
    out = tmp_path / "again.json"
    r = cli(w, *argv, "--json", str(out), "--", "./repro.sh")
    assert_tested_for_real(r, json.loads(out.read_text()), w.integrate["adv8"], stopped)
    assert snapshot(w) == before


def test_git_bisect_patched_run_keeps_the_session_and_tests_that_candidate_again(
        world: World, tmp_path: Path) -> None:
    before = snapshot(world)
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", UPSTREAM,
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    build = once(tmp_path, f"git submodule update {SUBMODULE}", "./build.sh")
    run = ["run", "--build", str(build), "--good-if", GOOD_IF, "--", "./repro.sh"]
    r = git_cli(world, *run)
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stderr.startswith(f"git bisect-patched: error: {SUBMODULE} changed during "
                               "step 1 "), r.stderr
    assert "the session is kept" in r.stdout and session_file(world).exists()
    stopped = stopped_candidate(r)
    # Nothing is under test now: a mark without a revision marks nothing (the tree on
    # disk is not the candidate); it checks the candidate out again instead.
    mark = git_cli(world, "bad")
    assert mark.returncode == 0 and "no commit was under test" in mark.stdout, mark.stdout
    assert json.loads(session_file(world).read_text())["steps"] == []

    r = git_cli(world, *run)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{world.sha(200)} is the first bad commit" in r.stdout
    assert f"[step 1] testing {stopped} " in r.stdout  # the same candidate, for real
    assert "cached" not in r.stdout.split("summary:")[0]
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


def test_untracked_and_ignored_build_outputs_and_touched_files_are_no_move(
        world: World, tmp_path: Path) -> None:
    exclude = Path(world.git(world.submodule, "rev-parse", "--git-path", "info/exclude"))
    if not exclude.is_absolute():
        exclude = world.submodule / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("out/\n", encoding="utf-8")
    build = tmp_path / "build.sh"
    build.write_text(
        "#!/bin/sh\nset -e\n"
        "mkdir -p build out " + f"{SUBMODULE}/build {SUBMODULE}/out\n"
        "date > build/obj.o; date > " + f"{SUBMODULE}/build/lib.a; date > {SUBMODULE}/out/x\n"
        # Same content, new mtime: git compares content, nothing changed.
        f"touch {SUBMODULE}/lib/bug.txt {SUBMODULE}/README\n"
        "exec ./build.sh\n", encoding="utf-8")
    build.chmod(0o755)
    r, result = submodule_run(world, tmp_path, build=str(build))
    assert r.returncode == 0, r.stdout + r.stderr
    assert result["first_bad"] == world.sha(200)


def test_verify_range_stops_instead_of_calling_the_good_end_bad(world: World,
                                                                tmp_path: Path) -> None:
    """``test_commit`` (``--verify-range``, the confirmation of an end, ``--check-stack``)
    checks its tree too: here the good end was built as the pin, which is bad."""
    before = snapshot(world)
    build = once(tmp_path, f"git submodule update {SUBMODULE}", "./build.sh")
    r, result = submodule_run(world, tmp_path, "--verify-range", build=str(build))
    assert_stopped(r, result, SUBMODULE, "after the build")
    assert snapshot(world) == before


@pytest.mark.parametrize("move", [f"git submodule update {SUBMODULE}",
                                  f"{THERE_AND_BACK} {{pin}}"], ids=["moved", "and-back"])
def test_the_good_end_check_of_a_command_that_cannot_run_checks_its_tree(
        world: World, tmp_path: Path, move: str) -> None:
    """Exit 127 at a candidate is double-checked at the good end; a tree moved during that
    check (even and back) cannot say whether the command runs."""
    before = snapshot(world)
    count = tmp_path / "count"
    build = tmp_path / "build.sh"
    build.write_text(
        "#!/bin/sh\n"
        f"n=$(($(cat {count} 2>/dev/null || echo 0) + 1)); echo $n > {count}\n"
        'if [ $n = 1 ]; then echo "sh: 1: mytool: not found"; exit 127; fi\n'
        f"if [ $n = 2 ]; then {move.format(pin=pin_of(world))} >/dev/null 2>&1; fi\n"
        "exec ./build.sh\n", encoding="utf-8")
    build.chmod(0o755)
    r, result = submodule_run(world, tmp_path, build=str(build))
    assert_stopped(r, result, SUBMODULE, "after the build at the good end")
    assert snapshot(world) == before


def test_a_workspace_moved_during_a_parallel_step_gives_no_verdict(world: World,
                                                                   tmp_path: Path) -> None:
    before = snapshot(world)
    # Run from the workspace (the build's cwd): it moves the workspace's submodule.
    build = once(tmp_path, f"git -C {SUBMODULE} checkout -q {pin_of(world)}", "./build.sh")
    r, result = submodule_run(world, tmp_path, "--jobs", "2", build=str(build),
                              name="stopped")
    line = assert_stopped(r, result, SUBMODULE, "after the build")
    assert "bisectkit: error: workspace " in line
    assert snapshot(world) == before
    stopped = stopped_candidate(r)
    r, again = submodule_run(world, tmp_path, "--jobs", "2", build=str(build), name="again")
    # Several steps were in flight: none of them left a verdict in the cache.
    assert_tested_for_real(r, again, world.sha(200), stopped)


# -- a move undone before the check ---------------------------------------------------------
def aba_build(world: World, tmp_path: Path) -> Path:
    """A build that, once, checks the submodule's pin out, builds from it (``out/bug.txt``,
    what the repro reads) and checks the candidate out again: the end state is right, what
    was built is the pin's."""
    exclude = world.superproject / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    with exclude.open("a", encoding="utf-8") as f:
        f.write("out/\n")  # a build output: the rerun's key is this run's
    script = tmp_path / "aba-build.sh"
    script.write_text(
        f"#!/bin/sh\nset -e\nmkdir -p out\nsub={SUBMODULE}\n"
        f"if mkdir {tmp_path / 'aba.done'} 2>/dev/null; then\n"
        '  here=$(git -C $sub rev-parse HEAD)\n'
        '  git -C $sub checkout -q --detach "$(git rev-parse HEAD:$sub)"\n'
        "  cp $sub/lib/bug.txt out/bug.txt\n"
        '  git -C $sub checkout -q --detach "$here"\n'
        "else\n  cp $sub/lib/bug.txt out/bug.txt\nfi\n", encoding="utf-8")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("jobs", [[], ["--jobs", "2"]], ids=["in-place", "workspaces"])
def test_a_move_undone_before_the_check_stops_the_run(world: World, tmp_path: Path,
                                                      jobs: list[str]) -> None:
    """HEAD back where the step put it, files clean, but the build read the pin (bad) at
    the first candidate (in place: 150, which is good): HEAD's reflog tells, and nothing
    is recorded."""
    before = snapshot(world)
    build = aba_build(world, tmp_path)
    repro = tmp_path / "repro.sh"
    repro.write_text("#!/bin/sh\nif grep -q miscompile out/bug.txt; then\n"
                     "  echo 'error: miscompiled'; exit 1\nfi\n"
                     "echo \"HAL device 'vulkan' not found\"; exit 1\n", encoding="utf-8")
    repro.chmod(0o755)
    r, result = submodule_run(world, tmp_path, *jobs, build=str(build), repro=str(repro),
                              name="stopped")
    line = assert_stopped(r, result, SUBMODULE, "after the build", others_in_flight=bool(jobs))
    assert "HEAD moved meanwhile and came back (its reflog: 'checkout: moving from " in line
    stopped = stopped_candidate(r)
    assert jobs or stopped == world.sha(150)[:12]
    assert snapshot(world) == before
    r, result = submodule_run(world, tmp_path, *jobs, build=str(build), repro=str(repro),
                              name="again")
    assert_tested_for_real(r, result, world.sha(200), stopped)


# -- the superproject, which --submodule/--stack/advance never move --------------------------
def test_a_tracked_superproject_file_edited_during_a_step_stops_the_run(
        world: World, tmp_path: Path) -> None:
    """An editor saves the tracked repro.sh while step 1 builds: the remaining steps would
    run another repro and cache its verdicts as this superproject's."""
    before = snapshot(world)
    edited = tmp_path / "edited.sh"
    edited.write_text(OTHER_REPRO, encoding="utf-8")
    build = once(tmp_path, f"cp {edited} repro.sh", "./build.sh")
    r, result = submodule_run(world, tmp_path, build=str(build), name="stopped")
    line = assert_stopped(r, result, "the superproject", "after the build")
    assert "(seen after the build: repro.sh changed since the run began)" in line
    stopped = stopped_candidate(r)
    # The edit is the user's: kept. Undone by hand, the run is the one it was.
    assert world.git(world.superproject, "status", "--porcelain") == "M repro.sh"
    world.git(world.superproject, "checkout", "--", "repro.sh")
    assert snapshot(world) == before
    r, result = submodule_run(world, tmp_path, build=str(build), name="again")
    assert_tested_for_real(r, result, world.sha(200), stopped)


def test_a_superproject_switched_to_another_branch_during_a_step_stops_the_run(
        world: World, tmp_path: Path) -> None:
    sp = world.superproject
    before = snapshot(world)
    world.git(sp, "checkout", "-qb", "experiment")
    (sp / "repro.sh").write_text(OTHER_REPRO, encoding="utf-8")
    world.git(sp, "commit", "-qam", "repro: another experiment")
    experiment = world.git(sp, "rev-parse", "HEAD")
    world.git(sp, "checkout", "-q", "main")
    build = once(tmp_path, "git checkout -q experiment", "./build.sh")
    r, result = submodule_run(world, tmp_path, build=str(build), name="stopped")
    line = assert_stopped(r, result, "the superproject", "after the build")
    assert (f"HEAD is now {experiment[:12]}, not {before['super_head'][:12]} as when the run "
            "began") in line
    stopped = stopped_candidate(r)
    world.git(sp, "checkout", "-q", "main")  # the other terminal's checkout: not ours to undo
    assert snapshot(world) == before
    r, result = submodule_run(world, tmp_path, build=str(build), name="again")
    assert_tested_for_real(r, result, world.sha(200), stopped)


def test_verdicts_are_keyed_by_the_superproject_commit_each_run_found(
        world: World, tmp_path: Path) -> None:
    """A commit made in the superproject during a manual session is kept and tested with
    (its repro looks for another problem): its verdicts belong to it, not to the commit the
    session began on. Back on that commit, a new run reuses none of them."""
    sp = world.superproject
    before = snapshot(world)
    r = git_cli(world, "start", "--submodule", SUBMODULE, "--upstream", UPSTREAM,
                world.sha(300), world.sha(0))
    assert r.returncode == 0, r.stderr
    (sp / "repro.sh").write_text(OTHER_REPRO, encoding="utf-8")
    world.git(sp, "commit", "-qam", "repro: another experiment")
    r = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "--",
                "./repro.sh")
    assert r.returncode == 0 and "is the first bad commit" in r.stdout, r.stdout + r.stderr
    assert f"{world.sha(200)} is the first bad commit" not in r.stdout
    assert git_cli(world, "reset").returncode == 0
    world.git(sp, "reset", "-q", "--hard", before["super_head"])
    assert snapshot(world) == before
    r, result = submodule_run(world, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert result["first_bad"] == world.sha(200)
    assert [s["source"] for s in result["steps"]] == ["run"] * len(result["steps"])


# -- what counts as a move (in-process, on a tiny repository) ------------------------------
def tiny_repo(tmp_path: Path) -> tuple[dict[str, str], Path, str, str]:
    """A repository with two commits, the first checked out (detached): env, path, both."""
    env = hermetic_env(tmp_path / "home")
    repo = tmp_path / "r"
    repo.mkdir()
    git(env, repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    (repo / ".gitignore").write_text("build/\n")
    git(env, repo, "add", "-A")
    git(env, repo, "commit", "-q", "-m", "one")
    first = git(env, repo, "rev-parse", "HEAD")
    git(env, repo, "commit", "-q", "--allow-empty", "-m", "two")
    second = git(env, repo, "rev-parse", "HEAD")
    git(env, repo, "checkout", "-q", "--detach", first)
    return env, repo, first, second


def test_how_moved_counts_head_index_and_tracked_files_only(tmp_path: Path) -> None:
    env, repo, first, second = tiny_repo(tmp_path)
    r = Repo(repo)
    # Build outputs, untracked or ignored, and a touched file with the same content: no move.
    (repo / "build").mkdir()
    (repo / "build" / "obj.o").write_text("x")
    (repo / "new.txt").write_text("untracked\n")
    os.utime(repo / "a.txt", (1, 1))
    assert how_moved(Held(r, first)) is None
    assert how_moved(Held(r, second)) == (f"HEAD is now {first[:12]}, not {second[:12]} as the "
                                          "step checked it out")
    (repo / "a.txt").write_text("edited\n")
    assert how_moved(Held(r, first)) == (f"a.txt no longer as in {first[:12]}, the commit "
                                         "checked out")
    git(env, repo, "checkout", "--", "a.txt")
    (repo / "b.txt").unlink()
    git(env, repo, "add", "b.txt")  # a staged deletion: the index is no longer the tree
    assert how_moved(Held(r, first)) == (f"b.txt no longer as in {first[:12]}, the commit "
                                         "checked out")


def test_a_repository_found_with_edits_is_held_to_them(tmp_path: Path) -> None:
    """The superproject of a manual session may carry the user's edits into a run (they
    are in the verdict cache's key): they may stay, not change, not go, not grow."""
    env, repo, first, _ = tiny_repo(tmp_path)
    (repo / "a.txt").write_text("my edit\n")
    held = as_found(Repo(repo))
    assert held.commit == first and not held.checked_out
    (repo / "new.txt").write_text("untracked\n")
    assert how_moved(held) is None
    (repo / "a.txt").write_text("another edit\n")
    assert how_moved(held) == "a.txt changed since the run began"
    git(env, repo, "checkout", "--", "a.txt")
    assert how_moved(held) == "a.txt changed since the run began"  # undone: changed too
    (repo / "a.txt").write_text("my edit\n")
    (repo / "b.txt").write_text("edited too\n")
    assert how_moved(held) == "b.txt changed since the run began"
    git(env, repo, "checkout", "-q", "HEAD~0")  # nothing moves
    assert how_moved(held) == "b.txt changed since the run began"


def test_a_watch_sees_head_moved_and_back_not_what_writes_no_reflog_line(
        tmp_path: Path) -> None:
    env, repo, first, second = tiny_repo(tmp_path)
    r = Repo(repo)
    watch = Watch({".": Held(r, first)})
    git(env, repo, "status")  # reads, may refresh the index: no reflog line
    git(env, repo, "checkout", "-q", "--detach", first)  # a checkout onto itself moves nothing
    watch.check(1, "after the build")
    git(env, repo, "checkout", "-q", "--detach", second)
    git(env, repo, "checkout", "-q", "--detach", first)
    with pytest.raises(TreeMoved) as stop:
        watch.check(1, "after the build")
    assert (f"the superproject changed during step 1 (seen after the build: HEAD moved "
            f"meanwhile and came back (its reflog: 'checkout: moving from {first[:12]} to "
            f"{second[:12]}')): ") in str(stop.value)
    Watch({".": Held(r, first)}).check(2, "after the build")  # a new step begins afresh


def test_a_rewritten_reflog_stops_only_when_its_newest_line_is_gone(tmp_path: Path) -> None:
    """``git gc`` expires old reflog lines (no move: the newest is still the step's); a
    reflog emptied meanwhile cannot tell whether HEAD moved."""
    env, repo, first, _ = tiny_repo(tmp_path)
    log = repo / ".git" / "logs" / "HEAD"
    watch = Watch({".": Held(Repo(repo), first)})
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) > 1
    log.write_bytes(lines[-1])  # as an expiry of all but the newest line leaves it
    watch.check(1, "after the build")
    git(env, repo, "reflog", "expire", "--expire=all", "HEAD")
    with pytest.raises(TreeMoved, match="its HEAD reflog was rewritten meanwhile"):
        watch.check(1, "after the build")


def test_without_a_head_reflog_only_the_end_state_is_checked(tmp_path: Path) -> None:
    """core.logAllRefUpdates=false where no reflog was ever written: a move undone cannot
    be seen (documented); a move not undone still is."""
    env, repo, first, second = tiny_repo(tmp_path)
    git(env, repo, "config", "core.logAllRefUpdates", "false")
    (repo / ".git" / "logs" / "HEAD").unlink()
    watch = Watch({".": Held(Repo(repo), first)})
    git(env, repo, "checkout", "-q", "--detach", second)
    git(env, repo, "checkout", "-q", "--detach", first)
    assert not (repo / ".git" / "logs" / "HEAD").exists()
    watch.check(1, "after the build")
    git(env, repo, "checkout", "-q", "--detach", second)
    with pytest.raises(TreeMoved, match=f"HEAD is now {second[:12]}"):
        watch.check(1, "after the build")
