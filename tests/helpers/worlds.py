"""The git worlds the tests run in (built by ``scripts/worldgen.py``) and the real CLI on them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from worldgen import SUBMODULE, World, WorldSpec

__all__ = ["GIT_SUBCOMMAND_SH", "SUBMODULE", "World", "WorldFactory", "WorldSpec", "cli",
           "git_cli", "snapshot"]

#: Shell lines for a git shim: ``$sub`` is the git subcommand, past git's own options
#: (bisectkit puts ``-c key=value`` pins before every command).
GIT_SUBCOMMAND_SH = """sub=; skip=
for a in "$@"; do
  if [ -n "$skip" ]; then skip=; continue; fi
  case "$a" in -c|-C) skip=1 ;; -*) ;; *) sub=$a; break ;; esac
done
"""

#: The ``world_factory`` fixture: ``make(dest, spec=None, integrate=False)``, a fresh copy.
WorldFactory = Callable[..., World]


def cli(world: World, *args: str, cwd: Path | None = None, timeout: float = 120,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real ``bisectkit`` console script in the world's superproject."""
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    env = dict(world.env, **(extra_env or {}))
    return subprocess.run([*argv, *args], cwd=cwd or world.superproject, env=env, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def git_cli(world: World, *args: str, cwd: Path | None = None, timeout: float = 120,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``git bisect-patched ...`` through git, as a user would."""
    env = dict(world.env, **(extra_env or {}))
    return subprocess.run(["git", "bisect-patched", *args], cwd=cwd or world.superproject,
                          env=env, text=True, capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def snapshot(world: World) -> dict[str, str]:
    """Everything a bisect must leave as it found: HEADs, branches, status, the pinned sha."""
    sub = world.submodule
    return {
        "super_head": world.git(world.superproject, "rev-parse", "HEAD"),
        "super_branch": world.git(world.superproject, "rev-parse", "--symbolic-full-name", "HEAD"),
        "super_status": world.git(world.superproject, "status", "--porcelain"),
        "sub_head": world.git(sub, "rev-parse", "HEAD"),
        "sub_branch": world.git(sub, "rev-parse", "--symbolic-full-name", "HEAD"),
        "sub_status": world.git(sub, "status", "--porcelain"),
    }
