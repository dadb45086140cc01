"""Review of issue 12 (structure refactor, no behaviour change): regressions found."""

from __future__ import annotations

from conftest import SUBMODULE, World, cli


def test_blocking_the_console_observer_keeps_the_progress_lines(world: World):
    """``-p no:console`` blocks the console *observer* only (the per-verdict lines
    and the summary), as before the refactor: the step headers, the patch actions
    and the pipeline's progress lines ("checking X without the patch stack") were
    printed by bisectkit itself and must still be printed."""
    r = cli(world, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh",
            "--good-if", "device .* not found", "--check-stack", "-p", "no:console",
            "--", "./repro.sh")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"[step 1] testing {world.sha(150)[:12]} upstream commit 150" in out
    assert "    21 files written" in out
    assert f"checking {world.sha(200)[:12]} without the patch stack" in out
    # What the blocked observer printed stays gone.
    assert f"[step 1] {world.sha(150)[:12]} good" not in out
    assert "summary:" not in out
