#!/usr/bin/env python3
"""Benchmark: bisectkit against the hand recipe and plain ``git bisect run``, in one run.

Generates a large synthetic patched-submodule world with ``git fast-import``
(default 100,000 upstream commits, 30,000 files, a 3-patch stack: a revert,
a cherry-pick -x of a later upstream fix, a local fixup), then bisects the
same range with the same trivial build and repro three ways:

- ``bisectkit run`` (one in-memory replay and one checkout per step);
- the hand recipe from IREE's integrate docs, driven by the git CLI: at
  every step ``git reset --hard <merge-base>``, ``git bisect good|bad <c>``,
  ``git cherry-pick --keep-redundant-commits <merge-base>..<patched HEAD>``;
- plain ``git bisect run`` on unpatched upstream, as a floor.

Files written are counted as ``git diff --name-only`` between the trees a
work tree moves through (outside the timed sections); the true diff is
between consecutive tested patched trees, the physical limit. Orchestration
time excludes build and repro and includes putting the work tree back where
it was at the end (bisectkit's restore, the others' ``git bisect reset``).
A second bisectkit run with the verdict cache on must cost no build and no
repro.

Usage: python3 scripts/bench.py [--commits N] [--files N] [--keep] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldgen import EPOCH, SUBMODULE, git, hermetic_env

REPRO = """#!/bin/sh
# Trivial repro: bad once bug/bug.txt says so. Counts its runs.
echo run >> "$BENCH_COUNTS/repro"
grep -q miscompile "${1:-third_party/llvm-project}/bug/bug.txt" && exit 1
exit 0
"""
BUILD = """#!/bin/sh
echo build >> "$BENCH_COUNTS/build"
"""


@dataclass
class Shape:
    commits: int
    files: int
    # The upstream commit that brings the bug; None: 37% of the history (this
    # script's range, 10% to the merge-base, has it in its middle).
    # scripts/bench_scale.py puts it just below the merge-base instead.
    bug_at: int | None = None

    @property
    def dirs(self) -> int:
        return max(1, self.files // 1000)

    def path(self, k: int) -> str:
        return f"src/d{k % self.dirs:03d}/f{k:06d}.txt"

    # Where things happen, as fractions of the history.
    @property
    def good(self) -> int:
        return self.commits // 10

    @property
    def bug(self) -> int:
        return int(self.commits * 0.37) + 1 if self.bug_at is None else self.bug_at

    @property
    def reverted(self) -> int:
        return self.commits // 2

    @property
    def merge_base(self) -> int:
        return int(self.commits * 0.8)

    @property
    def picked(self) -> int:
        return int(self.commits * 0.9)


def fast_import_stream(shape: Shape) -> bytes:
    out: list[bytes] = []

    def data(text: str) -> None:
        raw = text.encode()
        out.append(b"data %d\n" % len(raw) + raw + b"\n")

    special = {
        shape.bug: {"bug/bug.txt": "miscompile\n"},
        shape.reverted: {"feature/feature.txt": "feature v1\n"},
        shape.picked: {"fix/fix.txt": "fixed\n"},
    }
    for n in range(shape.commits + 1):
        if n == 0:
            changes = {shape.path(k): f"initial {k}\n" for k in range(shape.files)}
            changes.update({"bug/bug.txt": "ok\n", "feature/feature.txt": "feature v0\n",
                            "fix/fix.txt": "unfixed\n", "local/local.txt": "upstream\n"})
        else:
            # Two files per commit, spread over the tree by a fixed stride; sizes
            # vary as real edits do (same-size rewrites within one second would
            # make every checkout wait for the mtime guard, an artifact of the
            # instant build and repro here).
            text = f"change {n}\n" * (n % 7 + 1)
            changes = special.get(n) or {
                shape.path((n * 7919) % shape.files): text,
                shape.path((n * 104729) % shape.files): text,
            }
        ts = EPOCH + n * 60
        out.append(b"commit refs/heads/main\nmark :%d\n" % (n + 1))
        out.append(b"author U <u@example.com> %d +0000\ncommitter U <u@example.com> %d +0000\n"
                   % (ts, ts))
        data(f"upstream commit {n}\n")
        if n:
            out.append(b"from :%d\n" % n)
        for path, content in changes.items():
            out.append(f"M 100644 inline {path}\n".encode())
            data(content)
    out.append(b"done\n")
    return b"".join(out)


@dataclass
class World:
    root: Path
    env: dict[str, str]
    upstream: Path
    superproject: Path
    shas: list[str]
    merge_base: str
    patched_head: str
    counts: Path

    @property
    def submodule(self) -> Path:
        return self.superproject / SUBMODULE


def build_world(root: Path, shape: Shape) -> World:
    env = hermetic_env(root / "home")
    counts = root / "counts"
    counts.mkdir()
    env["BENCH_COUNTS"] = str(counts)
    upstream = root / "upstream"
    upstream.mkdir()
    git(env, upstream, "init", "-q")
    subprocess.run(["git", "fast-import", "--quiet", "--done"], cwd=upstream, env=env,
                   input=fast_import_stream(shape), check=True)
    git(env, upstream, "reset", "-q", "--hard", "main")
    shas = git(env, upstream, "rev-list", "--first-parent", "--reverse", "main").split()
    fork = root / "fork-work"
    git(env, root, "clone", "-q", str(upstream), str(fork))
    git(env, fork, "checkout", "-q", "-B", "main", shas[shape.merge_base])
    git(env, fork, "revert", "--no-edit", shas[shape.reverted])
    git(env, fork, "cherry-pick", "-x", shas[shape.picked])
    (fork / "local/local.txt").write_text("our local fixup\n")
    git(env, fork, "commit", "-q", "-am", "[local] fixup")
    sup = root / "superproject"
    sup.mkdir()
    git(env, sup, "init", "-q")
    git(env, sup, "submodule", "add", "-q", str(fork), SUBMODULE)
    git(env, sup / SUBMODULE, "remote", "add", "upstream", str(upstream))
    git(env, sup / SUBMODULE, "fetch", "-q", "upstream")
    for name, text in (("repro.sh", REPRO), ("build.sh", BUILD)):
        (sup / name).write_text(text)
        (sup / name).chmod(0o755)
    git(env, sup, "add", "-A")
    git(env, sup, "commit", "-q", "-m", "superproject")
    return World(root, env, upstream, sup, shas, shas[shape.merge_base],
                 git(env, sup / SUBMODULE, "rev-parse", "HEAD"), counts)


def changed(env: dict[str, str], repo: Path, a: str, b: str) -> int:
    """Files that differ between two trees: what a work tree move from a to b writes."""
    if a == b:
        return 0
    out = git(env, repo, "diff", "--name-only", "--no-renames", a, b)
    return len(out.splitlines()) if out else 0


def reset_counts(w: World) -> None:
    for f in w.counts.iterdir():
        f.unlink()


def count(w: World, what: str) -> int:
    f = w.counts / what
    return len(f.read_text().splitlines()) if f.exists() else 0


@dataclass
class Result:
    name: str
    steps: int = 0
    files: list[int] = field(default_factory=list)
    overhead_s: float = 0.0
    first_bad: str = ""

    @property
    def files_per_step(self) -> float:
        return sum(self.files) / self.steps if self.steps else 0.0

    @property
    def overhead_per_step(self) -> float:
        return self.overhead_s / self.steps if self.steps else 0.0


def timed(env: dict[str, str], cwd: Path, *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr}")
    return elapsed, proc.stdout


def run_repro(w: World, cwd: Path, target: Path) -> bool:
    """Build + repro, untimed; True when bad."""
    subprocess.run([str(w.superproject / "build.sh")], cwd=cwd, env=w.env, check=True)
    return subprocess.run([str(w.superproject / "repro.sh"), str(target)], cwd=cwd,
                          env=w.env).returncode != 0


def bench_bisectkit(w: World, shape: Shape,
                    cached: bool = False) -> tuple[Result, list[dict[str, Any]]]:
    out = w.root / ("bk-cached.json" if cached else "bk.json")
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    argv += ["run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
             "--good", w.shas[shape.good], "--bad", w.merge_base, "--build", "./build.sh",
             "--json", str(out), "--", "./repro.sh"]
    # The first run starts from an empty cache (a new world), so it builds every
    # step; the second identical run must be answered from the cache alone.
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=w.superproject, env=w.env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"bisectkit failed:\n{proc.stdout[-3000:]}\n{proc.stderr}")
    data = json.loads(out.read_text())
    steps = data["steps"]
    r = Result("bisectkit", steps=len(steps), first_bad=data["first_bad"])
    r.files = [s["files_written"] for s in steps]
    r.overhead_s = wall - sum((s["build_s"] or 0) + (s["repro_s"] or 0) for s in steps)
    return r, steps


def true_diff(w: World, steps: list[dict[str, Any]]) -> list[int]:
    """Files that differ between consecutive tested patched trees (the physical limit)."""
    prev = w.patched_head
    out = []
    for s in steps:
        nxt = s.get("patched")
        if not nxt:
            out.append(0)
            continue
        out.append(changed(w.env, w.submodule, prev, nxt))
        prev = nxt
    return out


def bench_hand_recipe(w: World, shape: Shape) -> Result:
    """IREE's documented recipe, step by step with the git CLI, in a clone of the submodule."""
    clone = w.root / "hand"
    git(w.env, w.root, "clone", "-q", "--no-checkout", str(w.submodule), str(clone))
    git(w.env, clone, "remote", "add", "upstream", str(w.upstream))
    git(w.env, clone, "fetch", "-q", "upstream")
    git(w.env, clone, "checkout", "-q", w.patched_head)
    r = Result("hand recipe")
    prev = w.patched_head
    elapsed, _ = timed(w.env, clone, "reset", "-q", "--hard", w.merge_base)
    r.overhead_s += elapsed
    r_files = changed(w.env, clone, prev, w.merge_base)
    elapsed, out = timed(w.env, clone, "bisect", "start", w.merge_base, w.shas[shape.good])
    r.overhead_s += elapsed
    while True:
        head = git(w.env, clone, "rev-parse", "HEAD")
        r_files += changed(w.env, clone, w.merge_base, head)
        # Re-apply the stack, one commit at a time as cherry-pick does.
        elapsed, _ = timed(w.env, clone, "cherry-pick", "--keep-redundant-commits",
                           f"{w.merge_base}..{w.patched_head}")
        r.overhead_s += elapsed
        picked = git(w.env, clone, "rev-list", "--reverse", f"{head}..HEAD").split()
        prev_c = head
        for c in picked:
            r_files += changed(w.env, clone, prev_c, c)
            prev_c = c
        bad = run_repro(w, clone, clone)
        r.steps += 1
        patched = git(w.env, clone, "rev-parse", "HEAD")
        elapsed, _ = timed(w.env, clone, "reset", "-q", "--hard", w.merge_base)
        r.overhead_s += elapsed
        r_files += changed(w.env, clone, patched, w.merge_base)
        r.files.append(r_files)
        r_files = 0
        elapsed, out = timed(w.env, clone, "bisect", "bad" if bad else "good", head)
        r.overhead_s += elapsed
        if "is the first bad commit" in out:
            r.first_bad = out.split()[0]
            break
    # Back to where the user was (bisectkit's figure includes its restore too).
    elapsed, _ = timed(w.env, clone, "bisect", "reset")
    r.overhead_s += elapsed
    elapsed, _ = timed(w.env, clone, "checkout", "-q", w.patched_head)
    r.overhead_s += elapsed
    return r


def bench_git_bisect_run(w: World, shape: Shape) -> Result:
    """Plain ``git bisect run`` on unpatched upstream: the floor for orchestration cost."""
    clone = w.root / "plain"
    git(w.env, w.root, "clone", "-q", str(w.upstream), str(clone))
    git(w.env, clone, "checkout", "-q", w.merge_base)
    reset_counts(w)
    script = w.root / "plain-step.sh"
    script.write_text(f"#!/bin/sh\n{w.superproject}/build.sh && "
                      f"exec {w.superproject}/repro.sh .\n")
    script.chmod(0o755)
    # `bisect start` checks out the first candidate: part of the cost.
    started_s, _ = timed(w.env, clone, "bisect", "start", w.merge_base, w.shas[shape.good])
    start = time.perf_counter()
    _, out = timed(w.env, clone, "bisect", "run", str(script))
    wall = time.perf_counter() - start
    log = git(w.env, clone, "bisect", "log").splitlines()
    tested = [line.split()[-1] for line in log
              if line.startswith(("git bisect good", "git bisect bad"))]
    r = Result("git bisect run", steps=len(tested))
    prev = w.merge_base
    for c in tested:
        r.files.append(changed(w.env, clone, prev, c))
        prev = c
    # Subtract what build + repro cost, measured on their own the same number of times.
    probe_start = time.perf_counter()
    for _ in range(r.steps):
        subprocess.run([str(script)], cwd=clone, env=w.env, capture_output=True)
    r.overhead_s = started_s + wall - (time.perf_counter() - probe_start)
    r.first_bad = next(line.split()[0] for line in out.splitlines()
                       if "is the first bad commit" in line)
    elapsed, _ = timed(w.env, clone, "bisect", "reset")
    r.overhead_s += elapsed
    return r


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=100_000)
    p.add_argument("--files", type=int, default=30_000)
    p.add_argument("--workdir", type=Path, help="build the world here (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the world afterwards")
    args = p.parse_args(argv)
    shape = Shape(args.commits, args.files)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="bisectkit-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        w = build_world(root, shape)
        print(f"world: {shape.commits} upstream commits, {shape.files} files, 3 patches; "
              f"range {shape.good}..{shape.merge_base} ({shape.merge_base - shape.good} "
              f"candidates); built in {time.perf_counter() - t:.0f} s")
        expected = w.shas[shape.bug]

        reset_counts(w)
        bk, steps = bench_bisectkit(w, shape)
        bk_builds = count(w, "build")
        ideal = true_diff(w, steps)
        hand = bench_hand_recipe(w, shape)
        floor = bench_git_bisect_run(w, shape)
        reset_counts(w)
        cached, _ = bench_bisectkit(w, shape, cached=True)
        cached_builds, cached_repros = count(w, "build"), count(w, "repro")

        for r in (bk, hand, floor):
            ok = "ok" if r.first_bad == expected else f"WRONG ({r.first_bad[:12]})"
            print(f"  {r.name}: first bad {ok}")
        print()
        print(f"{'':<16}{'steps':>6}{'files/step':>12}{'overhead/step s':>17}{'total s':>9}")
        for r in (bk, hand, floor):
            print(f"{r.name:<16}{r.steps:>6}{r.files_per_step:>12.1f}"
                  f"{r.overhead_per_step:>17.3f}{r.overhead_s:>9.2f}")
        true_total = sum(ideal)
        print(f"{'true diff':<16}{len(ideal):>6}{true_total / max(1, len(ideal)):>12.1f}")
        print()
        print(f"bisectkit files written per step: {bk.files}")
        print(f"true diff per step:               {ideal}")
        print(f"hand recipe files per step:       {hand.files}")
        print(f"bisectkit/true-diff files-written ratio: {sum(bk.files) / max(1, true_total):.3f}")
        print(f"bisectkit/hand-recipe files-written ratio: "
              f"{sum(bk.files) / max(1, sum(hand.files)):.3f}")
        print(f"bisectkit/hand-recipe overhead ratio: "
              f"{bk.overhead_per_step / max(1e-9, hand.overhead_per_step):.3f}")
        print(f"bisectkit/git-bisect-run overhead ratio: "
              f"{bk.overhead_per_step / max(1e-9, floor.overhead_per_step):.3f}")
        print(f"first run builds: {bk_builds}; second run (cached): {cached_builds} builds, "
              f"{cached_repros} repro runs, {cached.steps} steps")
        return 0 if bk.first_bad == expected else 1
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
