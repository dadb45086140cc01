"""Smaller defects found on the way (issue 11, item 10), each through the real CLI.

(a) a checkout that fails after a mark keeps the mark and the candidate;
(b) ``--find-fix`` / ``--term-*`` words in every message and in ``status``;
(c) ``--json -`` writes the result to stdout and nothing else there;
(d) output files honour the umask;
(e) ``--check-stack`` always prints what it concluded;
(f) report links: fork-only patches use ``bisectkit.fork-url`` or no link;
(g) the reproduce line has full shas and the settings taken from git config.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from helpers.repros import local_patch_repro
from helpers.worlds import SUBMODULE, World, WorldSpec, cli, git_cli, snapshot

UPSTREAM = "upstream/main"
GOOD_IF = "device .* not found"
WORDS_GOOD_BAD = re.compile(r"\b(good|bad)\b")


def target(world: World) -> list[str]:
    return ["--submodule", SUBMODULE, "--upstream", UPSTREAM]


def marks(world: World) -> list[str]:
    """The mark lines of the session's log."""
    log = git_cli(world, "log")
    assert log.returncode == 0, log.stderr
    return [line for line in log.stdout.splitlines()
            if line.startswith("git bisect-patched ") and " start " not in line]


def under_test(world: World) -> str:
    status = git_cli(world, "status")
    assert status.returncode == 0, status.stderr
    return next(line for line in status.stdout.splitlines() if "under test:" in line)


# -- (a) a failed checkout loses nothing ------------------------------------------------------
@pytest.mark.parametrize("where", ["submodule", "superproject"])
def test_failed_checkout_keeps_the_mark_and_good_again_checks_the_candidate_out(
        world_factory, tmp_path: Path, where: str) -> None:
    if where == "submodule":
        world = world_factory(tmp_path)
        start = ["start", *target(world), world.sha(300), world.sha(0)]
        repo, path = world.submodule, "lib/bug.txt"  # differs between the first two candidates
    else:
        world = world_factory(tmp_path, integrate=True)
        start = ["start", "--integrate", "--submodule", SUBMODULE, world.integrate["adv12"],
                 world.integrate["init"]]
        repo, path = world.superproject, "integration.txt"
    before = snapshot(world)
    assert git_cli(world, *start).returncode == 0
    tested = under_test(world).split()[2]
    (repo / path).write_text("my edit while testing\n", encoding="utf-8")

    failed = git_cli(world, "good")
    assert failed.returncode == 4, (failed.stdout, failed.stderr)
    assert len(failed.stderr.splitlines()) == 1, failed.stderr
    # The message says the mark is kept, which candidate did not come, and what to do.
    assert f"marked {tested[:12]} good (kept)" in failed.stderr
    named = re.search(r"the next candidate ([0-9a-f]{12}) was not checked out", failed.stderr)
    assert named, failed.stderr
    assert "'git bisect-patched good' with no revision checks it out" in failed.stderr
    assert path in failed.stderr
    assert (repo / path).read_text(encoding="utf-8") == "my edit while testing\n"
    assert marks(world) == [f"git bisect-patched good {tested}"]
    line = under_test(world)
    assert f"nothing (the checkout of {named.group(1)} did not happen)" in line

    world.git(repo, "checkout", "--", path)
    again = git_cli(world, "good")
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "no commit was under test" in again.stdout
    # The same candidate, the one mark: nothing lost, nothing marked twice.
    assert under_test(world).split()[2].startswith(named.group(1))
    assert marks(world) == [f"git bisect-patched good {tested}"]
    assert git_cli(world, "reset").returncode == 0
    assert snapshot(world) == before


# -- (b) the session's words everywhere -----------------------------------------------------
def test_find_fix_words_in_status_found_summary_and_refusals(world_factory,
                                                             tmp_path: Path) -> None:
    world = world_factory(tmp_path, WorldSpec(bug_at=200, bug_fixed_at=260))
    old, new = world.sha(220), world.sha(300)
    # One end: the session waits for the other, in the session's words.
    waiting = git_cli(world, "start", "--find-fix", *target(world), new)
    assert waiting.returncode == 0, waiting.stderr
    assert "status: waiting for broken commit(s), fixed commit known" in waiting.stdout
    assert "give 'git bisect-patched old REV'" in waiting.stdout
    assert git_cli(world, "reset").returncode == 0
    refused = git_cli(world, "start", "--find-fix", *target(world), old, new)
    assert refused.returncode == 2 and "broken revision" in refused.stderr, refused.stderr
    assert "not an ancestor of fixed" in refused.stderr

    started = git_cli(world, "start", "--find-fix", *target(world), new, old)
    assert started.returncode == 0, started.stderr
    assert f"range: broken {old[:12]} .. fixed {new[:12]}" in started.stdout
    status = git_cli(world, "status")
    assert "verdicts: 0 broken, 1 fixed, 0 skip (the fixed end included)" in status.stdout
    assert "between the broken end and" in status.stdout
    assert not WORDS_GOOD_BAD.search(status.stdout), status.stdout
    # A contradiction is told in the session's words too.
    assert git_cli(world, "new", world.sha(280)).returncode == 0
    wrong = git_cli(world, "old", world.sha(290))
    assert wrong.returncode == 2
    assert (f"cannot mark broken: {world.sha(290)[:12]} is marked broken but is not older "
            f"than {world.sha(280)[:12]}, which is fixed") in wrong.stderr

    run = git_cli(world, "run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh")
    assert run.returncode == 0, run.stderr
    assert f"{world.sha(260)} is the first fixed commit" in run.stdout
    assert re.search(r"summary: \d+ steps \(\d+ broken, \d+ fixed, \d+ skip", run.stdout)
    status = git_cli(world, "status")
    assert f"{world.sha(260)} is the first fixed commit" in status.stdout
    assert not WORDS_GOOD_BAD.search(status.stdout.replace("--good-if", "")), status.stdout
    log = git_cli(world, "log").stdout
    assert f"# first fixed commit: [{world.sha(260)}]" in log
    assert git_cli(world, "reset").returncode == 0


def test_custom_terms_in_the_inconclusive_message(world: World) -> None:
    r = cli(world, "run", *target(world), "--term-old", "slow", "--term-new", "fast",
            "--good", world.sha(250), "--bad", world.sha(254), "--", "sh", "-c", "exit 125")
    assert r.returncode == 1, r.stderr + r.stdout
    assert "The first fast commit could be any of:" in r.stdout
    assert re.search(r"summary: \d+ steps \(0 slow, 0 fast, \d+ skip", r.stdout)
    assert not WORDS_GOOD_BAD.search(r.stdout), r.stdout


# -- (c) --json - -------------------------------------------------------------------------------
def test_json_dash_writes_only_the_result_to_stdout(world: World) -> None:
    before = snapshot(world)
    r = cli(world, "run", *target(world), "--good", world.sha(0), "--bad", world.sha(300),
            "--build", "./build.sh", "--good-if", GOOD_IF, "--json", "-", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "found" and result["first_bad"] == world.sha(200)
    # The human output went to stderr, the build and repro output included.
    assert f"{world.sha(200)} is the first bad commit" in r.stderr
    assert "built against" in r.stderr
    assert not Path(world.superproject, "-").exists()
    assert snapshot(world) == before


def test_json_dash_carries_an_aborted_result_too(world: World) -> None:
    r = cli(world, "run", *target(world), "--good", world.sha(0), "--bad", world.sha(300),
            "--json", "-", "--", "sh", "-c", "exit 130")
    assert r.returncode == 3, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "aborted" and "exit 130" in result["error"]


# -- (d) the umask -----------------------------------------------------------------------------
@pytest.mark.parametrize(("umask", "mode"), [("022", 0o644), ("077", 0o600)])
def test_output_files_honour_the_umask(world: World, tmp_path: Path, umask: str,
                                       mode: int) -> None:
    out = {flag: tmp_path / f"out.{flag}" for flag in ("json", "trace", "report")}
    argv = ["run", *target(world), "--good", world.sha(190), "--bad", world.sha(210),
            "--good-if", GOOD_IF, *(w for f, p in out.items() for w in (f"--{f}", str(p))),
            "--", "./repro.sh"]
    exe = shutil.which("bisectkit")
    assert exe is not None
    r = subprocess.run(["sh", "-c", f'umask {umask}; exec "$@"', "sh", exe, *argv],
                       cwd=world.superproject, env=world.env, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr + r.stdout
    for flag, path in out.items():
        assert stat.S_IMODE(path.stat().st_mode) == mode, (flag, oct(path.stat().st_mode))


def test_an_existing_output_file_keeps_its_mode(world: World, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("{}\n", encoding="utf-8")
    out.chmod(0o640)
    r = cli(world, "run", *target(world), "--good", world.sha(190), "--bad", world.sha(210),
            "--good-if", GOOD_IF, "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["status"] == "found"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


# -- (e) --check-stack always concludes ---------------------------------------------------------
def check_stack_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in r.stdout.splitlines() if line.startswith("check-stack: ")]
    assert len(lines) == 1, r.stdout
    return lines[0]


@pytest.mark.parametrize("case", ["implicated", "not implicated", "could not be checked"])
def test_check_stack_prints_its_conclusion(world: World, tmp_path: Path, case: str) -> None:
    out = tmp_path / "r.json"
    good, repro, build = world.sha(0), ["./repro.sh"], ["--good-if", GOOD_IF]
    if case == "implicated":
        # Every patched commit is bad, the good end too: --no-verify lets the stack
        # check, not the good end's confirmation, tell why.
        good, repro, build = world.sha(100), [str(local_patch_repro(tmp_path))], ["--no-verify"]
    elif case == "could not be checked":
        # Upstream's build is broken at the culprit; only the stack's cherry-pick fixes it.
        build += ["--build", "./build.sh"]
    r = cli(world, "run", *target(world), "--good", good, "--bad", world.sha(300), *build,
            "--check-stack", "--json", str(out), "--", *repro)
    assert r.returncode == 0, r.stderr + r.stdout
    result = json.loads(out.read_text())
    line = check_stack_line(r)
    checked = result["check_stack"]
    assert line == f"check-stack: {checked['conclusion']}"
    first = result["first_bad"][:12]
    if case == "implicated":
        assert checked["stack_implicated"] is True
        assert line.startswith("check-stack: the patch stack is implicated: "
                               f"{first} is good without it and bad with it")
    elif case == "not implicated":
        assert checked["stack_implicated"] is False
        assert line.startswith("check-stack: the patch stack is not implicated")
    else:
        # A skip is no acquittal: neither True nor False.
        assert checked["stack_implicated"] is None and checked["verdict"] == "skip"
        assert line.startswith(f"check-stack: could not be checked: {first} without the "
                               "patch stack tested skip (build failed")


def test_check_stack_says_when_there_is_nothing_to_check(integrate_world: World,
                                                         tmp_path: Path) -> None:
    w = integrate_world
    out = tmp_path / "r.json"
    r = cli(w, "run", "--integrate", "--good", w.integrate["init"], "--bad",
            w.integrate["adv12"], "--build", "./build.sh", "--good-if", GOOD_IF,
            "--check-stack", "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert check_stack_line(r).startswith("check-stack: not checked: an integrate bisect has "
                                          "no patch stack")
    assert json.loads(out.read_text())["check_stack"]["stack_implicated"] is None


# -- (f) report links --------------------------------------------------------------------------
UP_URL = "https://up.example/llvm/commit/{sha}"
FORK_URL = "https://fork.example/llvm/commit/{sha}"


def report_of(world: World, tmp_path: Path, *argv: str) -> str:
    out = tmp_path / "r.md"
    r = cli(world, "run", *target(world), *argv, "--report", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    return out.read_text(encoding="utf-8")


def test_report_links_patches_to_the_fork_or_not_at_all(world: World, tmp_path: Path) -> None:
    world.git(world.superproject, "config", "bisectkit.commit-url", UP_URL)
    argv = ["--good", world.sha(190), "--bad", world.sha(210), "--good-if", GOOD_IF]
    md = report_of(world, tmp_path, *argv)
    culprit = world.sha(200)
    assert f"[`{culprit[:12]}`]({UP_URL.format(sha=culprit)})" in md
    patches = world.git(world.submodule, "rev-list", f"{UPSTREAM}..HEAD").split()
    assert len(patches) == 4
    for sha in patches:
        assert f"`{sha[:12]}`" in md
        assert f"[`{sha[:12]}`](" not in md  # an upstream address would 404

    world.git(world.superproject, "config", "bisectkit.fork-url", FORK_URL)
    md = report_of(world, tmp_path, *argv)
    assert f"[`{culprit[:12]}`]({UP_URL.format(sha=culprit)})" in md
    for sha in patches:
        assert f"[`{sha[:12]}`]({FORK_URL.format(sha=sha)})" in md
        assert UP_URL.format(sha=sha) not in md


def test_report_of_a_stack_bisect_links_the_culprit_patch_to_the_fork(world: World,
                                                                      tmp_path: Path) -> None:
    world.git(world.superproject, "config", "bisectkit.commit-url", UP_URL)
    out = tmp_path / "r.md"
    repro = local_patch_repro(tmp_path)
    r = cli(world, "run", *target(world), "--stack", "--at", world.sha(101), "--report",
            str(out), "--", str(repro))
    assert r.returncode == 0, r.stderr + r.stdout
    md = out.read_text(encoding="utf-8")
    local = world.stack[-1]
    assert f"**First bad commit:** `{local[:12]}`" in md
    assert UP_URL.format(sha=local) not in md and UP_URL.format(sha=local) not in r.stdout
    # The --at commit is upstream's: it keeps its link.
    assert f"[`{world.sha(101)[:12]}`]({UP_URL.format(sha=world.sha(101))})" in md

    world.git(world.superproject, "config", "bisectkit.fork-url", FORK_URL)
    r = cli(world, "run", *target(world), "--stack", "--at", world.sha(101), "--report",
            str(out), "--", str(repro))
    assert r.returncode == 0, r.stderr + r.stdout
    md = out.read_text(encoding="utf-8")
    assert f"**First bad commit:** [`{local[:12]}`]({FORK_URL.format(sha=local)})" in md
    assert f"  {FORK_URL.format(sha=local)}" in r.stdout.splitlines()


# -- (g) the reproduce line ----------------------------------------------------------------------
def test_reproduce_line_has_full_shas_and_config_settings(world_factory,
                                                          tmp_path: Path) -> None:
    world = world_factory(tmp_path / "here")
    for key, value in (("submodule", SUBMODULE), ("upstream", UPSTREAM),
                       ("build", "./build.sh"), ("plugins", "flaky")):
        world.git(world.superproject, "config", f"bisectkit.{key}", value)
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    short_good = world.sha(0)[:9]
    r = cli(world, "run", "--good", short_good, "--bad", f"{UPSTREAM}~100", "--good-if", GOOD_IF,
            "--json", str(out), "--report", str(md), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    result = json.loads(out.read_text())
    assert result["command"].startswith(f"bisectkit run --good {short_good} ")  # as typed
    line = result["reproduce"]
    words = shlex.split(line)
    assert words[:2] == ["bisectkit", "run"]
    pairs = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("--")}
    assert pairs["--good"] == world.sha(0) and pairs["--bad"] == world.sha(300)
    assert pairs["--submodule"] == SUBMODULE and pairs["--upstream"] == UPSTREAM
    assert pairs["--build"] == "./build.sh"
    assert words[words.index("-p") + 1] == "flaky"
    assert words[-2:] == ["--", "./repro.sh"]
    assert f"Reproduce with:\n\n```sh\n{line}\n```" in md.read_text(encoding="utf-8")
    assert f"  reproduce: {line}" in r.stdout.splitlines()

    # Elsewhere, without any of that config, the line runs the same bisection.
    other = world_factory(tmp_path / "elsewhere")
    assert subprocess.run(["git", "config", "--get-regexp", "bisectkit"], cwd=other.superproject,
                          env=other.env, capture_output=True).returncode == 1
    again = cli(other, *words[1:], "--json", str(out))
    assert again.returncode == 0, again.stderr + again.stdout
    rerun = json.loads(out.read_text())
    assert rerun["first_bad"] == result["first_bad"] == world.sha(200)
    assert [s["commit"] for s in rerun["steps"]] == [s["commit"] for s in result["steps"]]
    assert any(s.get("build_s") is not None for s in rerun["steps"])  # it built, as before


def test_reproduce_line_of_a_session_with_a_pathspec_starts_it(world: World,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert git_cli(world, "start", *target(world), "upstream/main~100", world.sha(0)[:10], "--",
                   "lib/bug.txt").returncode == 0
    r = git_cli(world, "run", "--json", str(out), "--good-if", GOOD_IF, "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    line = json.loads(out.read_text())["reproduce"]
    start, run = line.split(" && ")
    assert shlex.split(start) == ["git", "bisect-patched", "start", *target(world),
                                  world.sha(300), world.sha(0), "--", "lib/bug.txt"]
    assert shlex.split(run)[:3] == ["git", "bisect-patched", "run"]
    assert git_cli(world, "reset").returncode == 0


def test_json_dash_is_accepted_where_output_paths_are_checked(world: World) -> None:
    # '-' is not a file name to check: no "directory does not exist" refusal.
    r = cli(world, "run", *target(world), "--good", world.sha(199), "--bad", world.sha(200),
            "--good-if", GOOD_IF, "--json", "-", "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["first_bad"] == world.sha(200)
    assert os.path.exists(world.superproject / "-") is False
