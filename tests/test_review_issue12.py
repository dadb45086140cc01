"""Review of issue 12 (structure refactor): what the adversarial review pinned down."""

from __future__ import annotations

from helpers.worlds import SUBMODULE, World, cli


def test_blocking_the_console_observer_silences_the_pipeline_but_not_the_answer(world: World):
    """The pipeline never prints: its step headers, patch actions and progress lines
    reach the terminal through the ``console`` observer, so ``-p no:console`` (as the
    README says) silences them with the verdict lines and the summary. The answer,
    printed by the command itself, stays."""
    args = ("run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(300), "--build", "./build.sh",
            "--good-if", "device .* not found", "--check-stack")
    loud = cli(world, *args, "--", "./repro.sh")
    assert loud.returncode == 0, loud.stderr
    progress = [f"[step 1] testing {world.sha(150)[:12]} upstream commit 150",
                "    21 files written",
                f"checking {world.sha(200)[:12]} without the patch stack",
                f"[step 1] {world.sha(150)[:12]} good", "summary:"]
    for line in progress:
        assert line in loud.stdout
    quiet = cli(world, *args, "-p", "no:console", "--", "./repro.sh")
    assert quiet.returncode == 0, quiet.stderr
    for line in progress:
        assert line not in quiet.stdout
    assert f"{world.sha(200)} is the first bad commit" in quiet.stdout
