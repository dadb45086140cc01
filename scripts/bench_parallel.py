#!/usr/bin/env python3
"""Benchmark: parallel steps (``--jobs K``, ``--scheduler``) against ``--jobs 1``, in one run.

For each of ``--bugs`` generated worlds (about 1,000 candidates between
``good = upstream 0`` and ``bad = upstream 1000``, the bug at a different
position in each), bisects the same range four ways with a build that sleeps
``--sleep S`` seconds:

- ``--jobs 1`` (the sequential bisection, the baseline);
- ``--jobs 2`` and ``--jobs 4`` (local workspaces under
  ``.git/bisectkit/workspaces/ws-N``);
- ``--scheduler`` on a Dask ``distributed.LocalCluster`` of 4 single-thread
  worker processes (started once, before the first world; its start-up is
  not timed).

Every run uses ``--no-cache`` on the same world, one after the other: the
local workspaces a run creates are kept and reused by the next (that reuse is
the product's design, so ``--jobs 4`` creates only ws-3 and ws-4 after
``--jobs 2``; with a world this small a workspace costs well under a second).

Measured per run: wall time of the CLI, builds (steps in the JSON result
that ran a build, counted or not), steps cancelled (the CLI's "cancelled"
notes), and rounds (the time at least one step was running, from the
``--trace`` file, over the median step length). The table compares the mean
over the worlds with ``--jobs 1``: the ideal wall-time ratio for k workers is
``ceil(log_{k+1}(N+1)) / ceil(log2(N+1))`` (N candidates); the goals are a
wall-time ratio within 15% of that and at most 1.7x the builds of ``--jobs 1``.
A configuration that finds a different first bad commit than ``--jobs 1``
fails the benchmark (exit 1).

Usage: PYTHONPATH=<checkout> python3 scripts/bench_parallel.py [--sleep S] [--bugs N]
       [--keep] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldgen import SUBMODULE, World, WorldSpec, build_world, hermetic_env

GOOD_IF = "device .* not found"
#: Upstream commits in each world; the range is good=0 .. bad=RANGE_END.
COMMITS = 1100
MERGE_BASE = 1050
RANGE_END = 1000
#: Goals: wall-time ratio at most ideal * WALL_SLACK; builds at most BUILD_LIMIT x --jobs 1.
WALL_SLACK = 1.15
BUILD_LIMIT = 1.7
DASK_WORKERS = 4
CANCELLED = re.compile(r"cancelled: its verdict")


@dataclass
class Config:
    """One way of running the bisection: a name, its worker count, its extra arguments."""

    name: str
    workers: int
    args: list[str]


@dataclass
class Run:
    """What one bisectkit run cost and answered."""

    wall_s: float
    builds: int
    not_counted: int
    cancelled: int
    rounds: float
    first_bad: str
    candidates: int


@dataclass
class Totals:
    """The runs of one configuration over all the worlds."""

    config: Config
    runs: list[Run] = field(default_factory=list)

    def mean(self, attr: str) -> float:
        return statistics.mean(float(getattr(r, attr)) for r in self.runs)


def ideal_ratio(workers: int, candidates: int) -> float:
    """Rounds of ``workers`` steps at once over rounds of one, for ``candidates`` commits."""
    return rounds_needed(candidates, workers) / max(1, rounds_needed(candidates, 1))


def rounds_needed(candidates: int, workers: int) -> int:
    """ceil(log_{workers+1}(candidates+1)), in integers."""
    rounds, reach = 0, 1
    while reach < candidates + 1:
        reach *= workers + 1
        rounds += 1
    return rounds


def rounds_from_trace(path: Path) -> float:
    """Time with at least one step running, over the median step length (0 if no trace)."""
    if not path.exists():
        return 0.0
    events: list[dict[str, Any]] = json.loads(path.read_text())["traceEvents"]
    spans: list[tuple[float, float]] = []
    for e in events:
        name = str(e.get("name", ""))
        # The sequential path traces each step as "step" on its own track, the
        # parallel one as "step N: <sha>" on its worker's track.
        if e.get("ph") == "X" and (name == "step" or re.match(r"step \d+:", name)):
            spans.append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    if not spans:
        return 0.0
    busy, end = 0.0, -math.inf
    for a, b in sorted(spans):
        if b > end:
            busy += b - max(a, end)
            end = b
    median = statistics.median(b - a for a, b in spans)
    return busy / median if median > 0 else 0.0


def make_world(root: Path, bug_at: int) -> World:
    """A world with no build breaks and a one-patch stack: every candidate builds."""
    spec = WorldSpec(commits=COMMITS, merge_base=MERGE_BASE, bug_at=bug_at, build_breaks=[],
                     reverted=None, picks=[], pick_by_patch_id=None, local_conflict=None)
    return build_world(root, spec)


def run_bisectkit(w: World, cfg: Config, sleep_s: float, tag: str) -> Run:
    """One ``bisectkit run --no-cache`` over the whole range; raises if it fails."""
    out = w.root / f"{tag}.json"
    trace = w.root / f"{tag}.trace.json"
    argv = [sys.executable, "-m", "bisectkit", "run", "--submodule", SUBMODULE,
            "--upstream", "upstream/main", "--good", w.sha(0), "--bad", w.sha(RANGE_END),
            "--build", f"sleep {sleep_s:g} && ./build.sh", "--good-if", GOOD_IF,
            "--no-cache", "--json", str(out), "--trace", str(trace), *cfg.args,
            "--", "./repro.sh"]
    env = dict(w.env)
    # The world's environment is hermetic; the CLI must still import this checkout.
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=w.superproject, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    (w.root / f"{tag}.out").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{cfg.name} failed (exit {proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    data = json.loads(out.read_text())
    steps: list[dict[str, Any]] = data["steps"]
    built = [s for s in steps if s.get("build_s") is not None]
    candidates = data.get("range_size")
    if not isinstance(candidates, int):
        candidates = len(data.get("candidates") or []) or RANGE_END
    return Run(wall_s=wall, builds=len(built),
               not_counted=sum("not counted" in str(s.get("reason", "")) for s in built),
               cancelled=len(CANCELLED.findall(proc.stdout + proc.stderr)),
               rounds=rounds_from_trace(trace), first_bad=str(data["first_bad"]),
               candidates=candidates)


def start_cluster(root: Path) -> tuple[Any, Any]:
    """A Dask LocalCluster of single-thread worker processes, and a client to it.

    The workers inherit this process's environment when they start, so the
    worker root, the import path and a hermetic git configuration go into
    ``os.environ`` first.
    """
    os.environ.update(hermetic_env(root / "worker-home"))
    os.environ["BISECTKIT_WORKER_ROOT"] = str(root / "worker-root")
    # Imported as Any: distributed's constructors are untyped.
    dask: Any = importlib.import_module("distributed")
    cluster = dask.LocalCluster(n_workers=DASK_WORKERS, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = dask.Client(cluster)
    client.wait_for_workers(DASK_WORKERS)
    return cluster, client


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--sleep", type=float, default=2.0, help="seconds each build sleeps")
    p.add_argument("--bugs", type=int, default=3, help="worlds, each with its own bug position")
    p.add_argument("--seed", type=int, default=13, help="chooses the bug positions")
    p.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster run")
    p.add_argument("--workdir", type=Path, help="build the worlds here (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the worlds afterwards")
    args = p.parse_args(argv)
    # Measure the checkout this script lives in, in the CLI and in the Dask workers
    # alike (both are started with this process's environment).
    checkout = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [checkout, *[x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x]])
    root = args.workdir or Path(tempfile.mkdtemp(prefix="bisectkit-bench-parallel-"))
    root.mkdir(parents=True, exist_ok=True)
    bugs = sorted(random.Random(args.seed).sample(range(2, RANGE_END), args.bugs))
    configs = [Config("--jobs 1", 1, []), Config("--jobs 2", 2, ["--jobs", "2"]),
               Config("--jobs 4", 4, ["--jobs", "4"])]
    cluster: Any = None
    client: Any = None
    try:
        if not args.no_dask:
            t = time.perf_counter()
            cluster, client = start_cluster(root)
            configs.append(Config(f"dask x{DASK_WORKERS}", DASK_WORKERS,
                                  ["--scheduler", str(cluster.scheduler_address)]))
            print(f"Dask LocalCluster: {DASK_WORKERS} worker processes x 1 thread at "
                  f"{cluster.scheduler_address}; started in {time.perf_counter() - t:.1f} s")
        totals = {c.name: Totals(c) for c in configs}
        wrong: list[str] = []
        print(f"worlds: {COMMITS} upstream commits, range 0..{RANGE_END}, build sleeps "
              f"{args.sleep:g} s; bugs at upstream commits {bugs}")
        print()
        print(f"{'bug':>5} {'config':<10}{'builds':>7}{'uncounted':>10}{'cancelled':>10}"
              f"{'rounds':>7}{'wall s':>8}  first bad")
        for bug in bugs:
            w = make_world(root / f"bug-{bug}", bug)
            expected = w.sha(bug)
            baseline = ""
            for cfg in configs:
                tag = re.sub(r"[^a-z0-9]+", "-", cfg.name.lower()).strip("-")
                r = run_bisectkit(w, cfg, args.sleep, tag)
                totals[cfg.name].runs.append(r)
                baseline = baseline or r.first_bad
                ok = "ok" if r.first_bad == expected else "WRONG"
                if r.first_bad != baseline or r.first_bad != expected:
                    wrong.append(f"bug {bug}: {cfg.name} answered {r.first_bad[:12]}, "
                                 f"--jobs 1 {baseline[:12]}, expected {expected[:12]}")
                print(f"{bug:>5} {cfg.name:<10}{r.builds:>7}{r.not_counted:>10}"
                      f"{r.cancelled:>10}{r.rounds:>7.1f}{r.wall_s:>8.1f}  "
                      f"{r.first_bad[:12]} {ok}")

        base = totals[configs[0].name]
        n = round(base.mean("candidates"))
        print()
        print(f"mean over {len(bugs)} worlds, N = {n} candidates; goals: wall ratio <= "
              f"ideal x {WALL_SLACK}, builds <= {BUILD_LIMIT} x --jobs 1")
        print(f"{'config':<10}{'builds':>7}{'cancel':>7}{'rounds':>7}{'wall s':>8}"
              f"{'wall ratio':>11}{'ideal':>7}{'build ratio':>12}  goals")
        failed_goals = 0
        for name, tot in totals.items():
            wall_ratio = tot.mean("wall_s") / base.mean("wall_s")
            build_ratio = tot.mean("builds") / base.mean("builds")
            ideal = ideal_ratio(tot.config.workers, n)
            wall_ok = wall_ratio <= ideal * WALL_SLACK
            build_ok = build_ratio <= BUILD_LIMIT
            failed_goals += (not wall_ok) + (not build_ok)
            goals = ("-" if tot is base else
                     f"wall {'ok' if wall_ok else 'MISSED'}, builds "
                     f"{'ok' if build_ok else 'MISSED'}")
            print(f"{name:<10}{tot.mean('builds'):>7.1f}{tot.mean('cancelled'):>7.1f}"
                  f"{tot.mean('rounds'):>7.1f}{tot.mean('wall_s'):>8.1f}{wall_ratio:>11.3f}"
                  f"{ideal:>7.3f}{build_ratio:>12.3f}  {goals}")
        print()
        if wrong:
            print("WRONG ANSWERS:\n  " + "\n  ".join(wrong))
            return 1
        print(f"answers: every configuration found the expected first bad commit in all "
              f"{len(bugs)} worlds; goal figures missed: {failed_goals}")
        return 0
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
