"""Repro scripts that stand in for a compiler test (bad from upstream commit 200), and the
run that bisects with them."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from helpers.worlds import SUBMODULE, World, cli

#: True (exit 0) in a tree where upstream commit 200's bug is in.
BUG = f"grep -q miscompile {SUBMODULE}/lib/bug.txt"


def script(path: Path, body: str) -> Path:
    """An executable ``sh`` script of ``body`` (dedented)."""
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def run(world: World, *extra: str, repro: tuple[str, ...], good: int = 0, bad: int = 300,
        json_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``bisectkit run`` of the world's submodule from upstream ``good`` to ``bad``."""
    args = ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(good), "--bad", world.sha(bad), *extra]
    if json_path is not None:
        args += ["--json", str(json_path)]
    return cli(world, *args, "--", *repro)


def local_patch_repro(tmp_path: Path) -> Path:
    """Bad exactly when our local fixup of lib/local.txt is applied."""
    repro = tmp_path / "local_repro.sh"
    repro.write_text(f"#!/bin/sh\nif grep -q 'our local fixup' {SUBMODULE}/lib/local.txt; then\n"
                     "  echo 'error: our fixup miscompiles'; exit 1\nfi\necho ok\n")
    repro.chmod(0o755)
    return repro


def target(world: World) -> list[str]:
    """The world's submodule, bisected against upstream/main."""
    return ["--submodule", SUBMODULE, "--upstream", "upstream/main"]


def run_args(world: World, *extra: str) -> list[str]:
    """``bisectkit run`` arguments for the world's submodule, then ``extra``."""
    return ["run", *target(world), *extra]
