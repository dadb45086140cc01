"""Hermetic git worlds for the tests: built once per spec, copied per test."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from worldgen import (  # noqa: E402
    SUBMODULE,
    World,
    WorldSpec,
    build_integrate_world,
    build_world,
    hermetic_env,
)

__all__ = ["GIT_SUBCOMMAND_SH", "SUBMODULE", "World", "WorldSpec", "cli", "git_cli", "snapshot"]

#: Shell lines for a git shim: ``$sub`` is the git subcommand, past git's own options
#: (bisectkit puts ``-c key=value`` pins before every command).
GIT_SUBCOMMAND_SH = """sub=; skip=
for a in "$@"; do
  if [ -n "$skip" ]; then skip=; continue; fi
  case "$a" in -c|-C) skip=1 ;; -*) ;; *) sub=$a; break ;; esac
done
"""

WorldFactory = Callable[..., World]


@pytest.fixture(scope="session")
def world_factory(tmp_path_factory: pytest.TempPathFactory) -> WorldFactory:
    templates: dict[str, World] = {}

    def make(dest: Path, spec: WorldSpec | None = None, integrate: bool = False) -> World:
        """A fresh copy of the world for ``spec`` (or of the integrate world)."""
        key = "integrate" if integrate else repr(spec or WorldSpec())
        if key not in templates:
            where = tmp_path_factory.mktemp("template")
            templates[key] = (build_integrate_world(where) if integrate
                              else build_world(where, spec or WorldSpec()))
        t = templates[key]
        # Only the superproject (with the submodule's git dir inside .git/modules)
        # is mutated by bisectkit; upstream and fork are shared read-only.
        shutil.copytree(t.superproject, dest / "superproject", symlinks=True)
        return dataclasses.replace(t, root=dest, env=hermetic_env(dest / "home"),
                                   superproject=dest / "superproject")

    return make


@pytest.fixture
def world(world_factory: WorldFactory, tmp_path: Path) -> World:
    return world_factory(tmp_path)


@pytest.fixture
def integrate_world(world_factory: WorldFactory, tmp_path: Path) -> World:
    return world_factory(tmp_path, integrate=True)


def cli(world: World, *args: str, cwd: Path | None = None, timeout: float = 120,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real ``bisectkit`` console script in the world's superproject."""
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    env = dict(world.env, **(extra_env or {}))
    return subprocess.run([*argv, *args], cwd=cwd or world.superproject, env=env, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def git_cli(world: World, *args: str, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``git bisect-patched ...`` through git, as a user would."""
    return subprocess.run(["git", "bisect-patched", *args], cwd=cwd or world.superproject,
                          env=world.env, text=True, capture_output=True, timeout=timeout,
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
