"""Kill ``bisectkit run --jobs 2`` at sampled git commands; nothing may be lost.

With ``--jobs`` the git commands run in worker threads too (clones and checkouts
in the workspaces ``.git/bisectkit/workspaces/ws-N``); the shim of
``scripts/torture.py`` counts them under a lock and stops the bisectkit process
itself. After each kill, ``git bisect-patched reset`` leaves both repositories
as before, a fresh ``--jobs 2`` run names the right first bad commit, and every
workspace is clean. Sampled: kills while the first workspaces are cloned,
SIGINT (the run restores by itself), SIGKILL then another run with no reset
(a one-line refusal), and points spread over the whole run. The script runs
every point: ``python3 scripts/torture.py`` with :func:`torture.with_jobs`.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers.sessions import run_argv
from helpers.worlds import SUBMODULE, World, cli
from torture import Scenario, git_commands, parallel_round, scenarios, with_jobs


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    built = scenarios(tmp_path_factory.mktemp("ptorture"))
    return {s.name: with_jobs(s) for s in built if s.name != "manual"}


@pytest.mark.parametrize("name", ["submodule", "integrate"])
def test_kill_a_parallel_run(worlds: dict[str, Scenario], name: str, tmp_path: Path) -> None:
    scenario = worlds[name]
    total = git_commands(scenario, tmp_path)  # from no workspaces: clones included
    assert total >= 40, "two workspaces cloned, several steps, the restore"
    rounds = [
        # git #3 and #4 clone the first workspace's superproject and submodule.
        parallel_round(scenario, 3, "during", tmp_path, fresh_workspaces=True),
        parallel_round(scenario, 4, "before", tmp_path, fresh_workspaces=True),
        parallel_round(scenario, 13, "after", tmp_path, fresh_workspaces=True),
        parallel_round(scenario, 7, "signal", tmp_path, signal.SIGINT),
        parallel_round(scenario, total // 3, "after", tmp_path, no_reset=True),
    ]
    for i, n in enumerate(range(total // 3, total, total // 3)):
        rounds.append(parallel_round(scenario, n, ("during", "signal")[i % 2], tmp_path,
                                     signal.SIGINT))
    bad = [r.describe() for r in rounds if not r.ok]
    assert not bad, "\n".join(bad)
    # The fixed early points are always reached; the spread ones may lie past the end of
    # a run, whose git count varies with which steps finish first (they are still checked).
    missed = [r.describe() for r in rounds[:5] if not r.killed and
              not r.mode.startswith("signal")]
    assert not missed, f"never reached (a run of {total} git commands): {missed}"


def test_lock_files_a_killed_git_left_in_a_workspace_are_cleared(world: World) -> None:
    """A git killed together with bisectkit (a CI time limit kills the whole tree) leaves
    HEAD.lock, a ref's lock or index.lock in the workspace it was checking out; the
    workspaces are bisectkit's own: the next run clears them instead of failing on them."""
    argv = run_argv(world, extra=("--jobs", "2", "--no-cache"))
    first = cli(world, *argv)
    assert first.returncode == 0, (first.stdout, first.stderr)
    root = world.superproject / ".git" / "bisectkit" / "workspaces"
    workspaces = sorted(p for p in root.glob("ws-*") if (p / ".git").is_dir())
    assert workspaces
    left = []
    for ws in workspaces:
        for repo in (ws, ws / SUBMODULE):
            git_dir = repo / ".git"
            for name in ("HEAD.lock", "index.lock", "refs/heads/main.lock"):
                (git_dir / name).parent.mkdir(parents=True, exist_ok=True)
                (git_dir / name).write_text("", encoding="utf-8")
                left.append(git_dir / name)
    again = cli(world, *argv)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert f"{world.sha(200)} is the first bad commit" in again.stdout.splitlines()
    assert not [p for p in left if p.exists()]
