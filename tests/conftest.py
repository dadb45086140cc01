"""Hermetic git worlds for the tests: built once per spec, copied per test.

The fixtures only; what tests import (the worlds, the CLI, sessions, states) is in
``tests/helpers``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.worlds import World, WorldFactory, WorldSpec
from worldgen import build_integrate_world, build_world, hermetic_env


@pytest.fixture(scope="session", autouse=True)
def bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The bisectkit processes the tests spawn (thousands) share one bytecode cache.

    Where the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``, set in
    some CI images), every spawned bisectkit compiled its ~150 modules again: a third of
    its start-up, about 15% of the suite's time on 2 cores. The cache lies under pytest's
    temporary folder (``PYTHONPYCACHEPREFIX``), never in the source tree; Python checks
    each entry against its source, as always.
    """
    saved = {k: os.environ.get(k) for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session", autouse=True)
def programs_of_this_python() -> Iterator[None]:
    """The tests run the ``bisectkit`` and ``git-bisect-patched`` installed with the Python
    that runs them: its scripts folder first on ``PATH``, as activating its virtual
    environment does.

    Otherwise ``<venv>/bin/python -m pytest`` run without activating the venv tests whatever
    bisectkit ``PATH`` finds first: another install's (say, pyenv's shim of it, a bash
    script more on each of the thousands of runs, running other code). Left alone where no
    bisectkit is installed with this Python.
    """
    scripts = sysconfig.get_path("scripts")
    saved = os.environ["PATH"]
    if (Path(scripts) / "bisectkit").is_file():
        os.environ["PATH"] = os.pathsep.join([scripts, saved])
    yield
    os.environ["PATH"] = saved


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
