"""What a finished run hands over: the paste-ready report (``--report``: the culprit,
its errors, links to upstream and to the fork) and the reproduce line that runs the same
bisection elsewhere (real CLI, real git worlds; the renderer alone: tests/test_report.py)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from helpers.lines import flat
from helpers.repros import local_patch_repro, run_args, target
from helpers.worlds import SUBMODULE, World, cli, git_cli

UPSTREAM = "upstream/main"
GOOD_IF = "device .* not found"


def test_report_is_ready_to_paste(world: World, tmp_path: Path):
    world.git(world.superproject, "config", "bisectkit.commit-url",
              "https://github.com/llvm/llvm-project/commit/{sha}")
    md = tmp_path / "report.md"
    r = cli(world, *run_args(world, "--good", world.sha(0), "--bad", world.sha(300), "--build",
                         "./build.sh", "--good-if", GOOD_IF, "--report", str(md),
                         "--", "./repro.sh"))
    assert r.returncode == 0, r.stderr
    text = md.read_text()
    culprit = world.sha(200)
    assert f"https://github.com/llvm/llvm-project/commit/{culprit}" in text
    assert "upstream commit 200: touch lib/bug.txt" in text
    assert "Bisect Tester" in text or "Upstream Dev" in text
    # What the stack did at the culprit and before it.
    assert "| revert |" in text and "applied" in text
    # The culprit's first error lines, from its kept step log.
    assert "error: 'func.func' op miscompiled: wrong result 41 != 42" in text
    assert "Reproduce with:" in text and "bisectkit run --submodule" in text
    assert f"report written to {md}" in flat(r.stdout).replace("/ ", "/")  # a long path breaks
    short = r.stdout.split("report written")[0].splitlines()[-10:]
    assert any(culprit[:12] in line for line in short)  # the terminal version


def test_a_run_that_stops_leaves_no_earlier_answer_in_its_report(world: World,
                                                                  tmp_path: Path) -> None:
    """The --report file of a run that stopped says so: it never still holds the first bad
    commit of an earlier run with the same --report (pasted into an issue, a stale answer
    would read as this run's), as --json says "aborted" too."""
    md, out = tmp_path / "report.md", tmp_path / "result.json"
    common = [*target(world), "--good", world.sha(190), "--bad", world.sha(210),
              "--report", str(md), "--json", str(out)]
    r = cli(world, "run", *common, "--good-if", GOOD_IF, "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    assert world.sha(200)[:12] in md.read_text(encoding="utf-8")
    r = cli(world, "run", *common, "--", "sh", "-c", "exit 130")
    assert r.returncode == 3, r.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["status"] == "aborted"
    text = md.read_text(encoding="utf-8")
    assert "first bad commit" not in text.lower() and "touch lib/bug.txt" not in text
    assert "The run stopped without a decision" in text and "exit 130" in text


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
