#!/usr/bin/env python3
"""What one ``bisectkit`` or ``git bisect-patched`` process costs, old tree against new.

In a manual session every ``good``, ``bad``, ``status`` or ``run`` is a new process, so
its start-up (Python, the imports, building the parser) is paid at every step. This
runs the real console scripts with ``PYTHONPATH`` set to each of two source trees
(``--old``, ``--new``: checkouts of bisectkit), interleaved (old, new, old, new...),
``--runs`` times each, and prints the median and the minimum of each command's wall
time, and their ratio:

- ``bisectkit --version``, ``bisectkit -h`` (no repository needed);
- ``bisectkit status`` (the patch stack against upstream) in the test world
  (``worldgen.build_world``: 400 upstream commits, 20 files);
- ``git bisect-patched status`` and ``git bisect-patched good`` in a session of it (the
  session is put back from a copy before each ``good``, outside the timed part).

Both trees are byte-compiled first, as an install leaves them; ``--source`` runs copies
of them that have no bytecode, with ``PYTHONDONTWRITEBYTECODE=1``, so that every process
compiles what it imports (a checkout whose environment sets it, as the test runs here).

The processes run from the world, never from a source tree (``python3 -m`` would put
the working directory first on ``sys.path``), and the console scripts are called by
their real path (a pyenv shim would add its own start-up to both sides).

    python3 scripts/bench_startup.py --old /tmp/old-checkout --new . [--runs 20] [--source]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from worldgen import SUBMODULE, World, build_world


def _bin_dir() -> str:
    """The directory of the real console scripts (not a shim's)."""
    found = subprocess.run(["pyenv", "which", "bisectkit"], capture_output=True, text=True)
    path = found.stdout.strip() if found.returncode == 0 else shutil.which("bisectkit")
    if not path:
        sys.exit("bisectkit is not installed (pip install -e .)")
    return str(Path(path).parent)


def _compiled(tree: Path) -> None:
    """The tree's modules byte-compiled, as an install leaves them (a process that compiles
    its imports from source, under PYTHONDONTWRITEBYTECODE, pays much more for each)."""
    for package in ("bisectkit", "plugins"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / package)],
                       check=True, capture_output=True)


def _uncompiled(tree: Path, dest: Path) -> Path:
    """A copy of the tree's modules without their bytecode."""
    for package in ("bisectkit", "plugins"):
        shutil.copytree(tree / package, dest / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _env(world: World, tree: Path, bin_dir: str, source: bool) -> dict[str, str]:
    env = dict(world.env, PYTHONPATH=str(tree.resolve()))
    if source:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode} with {env['PYTHONPATH']}:\n"
                 f"{proc.stderr}{proc.stdout}")
    return took


def _session(world: World, env: dict[str, str]) -> None:
    """Start a manual session (bad: upstream 300, good: 0), as the user would."""
    subprocess.run(["git", "bisect-patched", "start", "--submodule", SUBMODULE, "--upstream",
                    "upstream/main", world.sha(300), world.sha(0)], cwd=world.superproject,
                   env=env, check=True, capture_output=True)


def _restore(copy: Path, world: World) -> Callable[[], None]:
    """Put the world's superproject back as ``copy`` holds it (the session just started)."""
    def restore() -> None:
        shutil.rmtree(world.superproject)
        shutil.copytree(copy, world.superproject, symlinks=True)
    return restore


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the old code")
    parser.add_argument("--new", type=Path, default=Path("."), help="the new code's checkout")
    parser.add_argument("--runs", type=int, default=20, help="runs of each command per tree")
    parser.add_argument("--source", action="store_true",
                        help="no bytecode: every process compiles what it imports")
    opts = parser.parse_args()
    bin_dir = _bin_dir()
    trees = {"old": opts.old, "new": opts.new}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for name, tree in trees.items():
            if opts.source:
                trees[name] = _uncompiled(tree, Path(tmp) / f"{name}-source")
            else:
                _compiled(tree)
        worlds = {name: build_world(Path(tmp) / name) for name in trees}
        envs = {name: _env(worlds[name], tree, bin_dir, opts.source)
                for name, tree in trees.items()}
        for name in trees:
            _session(worlds[name], envs[name])
        copies = {name: Path(tmp) / f"{name}-session" for name in trees}
        for name in trees:
            shutil.copytree(worlds[name].superproject, copies[name], symlinks=True)
        cases: list[tuple[str, list[str], bool]] = [
            ("bisectkit --version", [f"{bin_dir}/bisectkit", "--version"], False),
            ("bisectkit -h", [f"{bin_dir}/bisectkit", "-h"], False),
            ("bisectkit status", [f"{bin_dir}/bisectkit", "status"], False),
            ("git bisect-patched status", ["git", "bisect-patched", "status"], False),
            ("git bisect-patched good", ["git", "bisect-patched", "good"], True),
        ]
        print(f"{'command':<28} {'old median':>10} {'new median':>10} {'ratio':>6} "
              f"{'old min':>8} {'new min':>8}   ({opts.runs} runs each, interleaved)")
        for label, argv, moves in cases:
            times: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(opts.runs):
                for name in trees:
                    if moves:
                        _restore(copies[name], worlds[name])()
                    times[name].append(_timed(argv, worlds[name].superproject, envs[name]))
            old, new = (statistics.median(times[n]) for n in trees)
            print(f"{label:<28} {old * 1000:>8.0f}ms {new * 1000:>8.0f}ms {new / old:>6.2f} "
                  f"{min(times['old']) * 1000:>6.0f}ms {min(times['new']) * 1000:>6.0f}ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
