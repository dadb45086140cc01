#!/usr/bin/env python3
"""Builds used by ``bisectkit advance`` (far end, pin-biased splits) against ``--linear``.

A world whose pin is 400 affecting upstream commits behind upstream's head
(upstream 500 commits, merge-base 100, the usual patch stack: a revert, a
cherry-pick that lands upstream at 150, one picked by patch id at 160, a
local fixup); the smoketest fails from the commit ``d`` ahead of the pin (d
must not put the bug on 50, 60, 150 or 160: the stack carries those commits).
Each configuration runs on a fresh copy with ``--no-cache``, in the same
process run, and must name the same first bad commit (exit 1 otherwise).

    python3 scripts/bench_advance.py [--distances 3,75,390] [--sleep 0]

Two bounds per row: the gallop's 2·ceil(log2(d+1)) + 2 (``near``), which
advance keeps up to the least excess E the other one leaves room for
(``near+E``; E = 1 for this range, see :mod:`bisectkit.engine.search`), and
the bisection's ceil(log2(N+1)) + 1 for the N candidates (``bisect``), which
advance never exceeds: a row over it says ``OVER BISECTION`` and the exit
status is 1, as for a wrong answer.

``--sleep S`` makes the build sleep S seconds, so the wall times show what
the builds cost; the build counts do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from worldgen import WorldSpec, build_world

BASE, COMMITS = 100, 500
SMOKE = "#!/bin/sh\n! grep -q miscompile third_party/llvm-project/lib/bug.txt\n"


def world(root: Path, d: int) -> tuple[Path, dict[str, str], list[str]]:
    spec = WorldSpec(commits=COMMITS, merge_base=BASE, bug_at=BASE + d,
                     build_breaks=[(80, 150)], reverted=60, picks=[150],
                     pick_by_patch_id=160, local_conflict=None)
    w = build_world(root, spec)
    (w.superproject / "smoke.sh").write_text(SMOKE, encoding="utf-8")
    (w.superproject / "smoke.sh").chmod(0o755)
    w.git(w.superproject, "add", "smoke.sh")
    w.git(w.superproject, "commit", "-qm", "smoketest")
    return w.superproject, w.env, w.shas


def measure(template: Path, env: dict[str, str], where: Path, build: str,
            extra: list[str]) -> tuple[dict[str, Any], float]:
    """Run ``bisectkit advance`` on a fresh copy of ``template``: (result, wall seconds)."""
    copy = where / "superproject"
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(template, copy, symlinks=True)
    out = where / "result.json"
    started = time.perf_counter()
    proc = subprocess.run(["bisectkit", "advance", "--no-cache", "--build", build, "--json",
                           str(out), *extra, "--", "./smoke.sh"], cwd=copy, env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"advance {' '.join(extra)} exited {proc.returncode}:\n"
                         f"{proc.stdout[-3000:]}{proc.stderr}")
    return json.loads(out.read_text(encoding="utf-8")), wall


def ceil_log2(x: int) -> int:
    """ceil(log2(x)) for x >= 1, in integers."""
    return (x - 1).bit_length()


def near_bound(d: int) -> int:
    """A gallop's builds for a first failure d ahead: 2·ceil(log2(d+1)) + 2."""
    return 2 * ceil_log2(d + 1) + 2


def bisection_bound(n: int) -> int:
    """A bisection's builds for n candidates once the far end is bad: ceil(log2(n+1)) + 1."""
    return ceil_log2(n + 1) + 1


def least_excess(n: int) -> int:
    """The least E for which the depths min(bisect, near(b+1) + E), one less at b = 0, and
    1 for "none bad" fit one search tree (Kraft), as bisectkit.engine.search computes it;
    written out here so that the benchmark also runs against older code."""
    cap, excess = bisection_bound(n), 0
    while sum(2.0 ** -(min(cap, near_bound(b + 1) + excess) - (b == 0))
              for b in range(n)) > 0.5:
        excess += 1
    return excess


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distances", default="3,75,390")
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args(argv)
    build = f"sleep {args.sleep:g}; sh build.sh" if args.sleep else "sh build.sh"
    #: (distance, {mode: (builds, wall seconds, right answer)}, candidates)
    rows: list[tuple[int, dict[str, tuple[int, float, bool]], int]] = []
    wrong = over = 0
    with tempfile.TemporaryDirectory(prefix="bench-advance-") as tmp:
        for d in (int(x) for x in args.distances.split(",")):
            template, env, shas = world(Path(tmp) / f"world-{d}", d)
            results: dict[str, tuple[int, float, bool]] = {}
            for name, extra in (("advance", []), ("advance --linear", ["--linear"])):
                data, wall = measure(template, env,
                                     Path(tmp) / f"run-{d}-{len(extra)}", build, extra)
                ok = data["first_bad"] == shas[BASE + d] and data["to"] == shas[BASE + d - 1]
                wrong += not ok
                results[name] = (data["builds"], wall, ok)
                n = data["range_size"]
            rows.append((d, results, n))
    print(f"{'d':>4} | {'N':>4} | {'advance builds':>14} | {'--linear builds':>15} | "
          f"{'ratio':>6} | {'near':>4} | {'near+E':>6} | {'bisect':>6} | {'advance s':>9} | "
          f"{'--linear s':>10}")
    for d, res, n in rows:
        (gb, gw, gok), (lb, lw, lok) = res["advance"], res["advance --linear"]
        cap = bisection_bound(n)
        flags = ("" if gok and lok else "  WRONG ANSWER") + ("  OVER BISECTION" if gb > cap
                                                            else "")
        over += gb > cap
        print(f"{d:>4} | {n:>4} | {gb:>14} | {lb:>15} | {gb / lb:>6.3f} | {near_bound(d):>4} | "
              f"{min(cap, near_bound(d) + least_excess(n)):>6} | {cap:>6} | {gw:>9.1f} | "
              f"{lw:>10.1f}{flags}")
    return 1 if wrong or over else 0


if __name__ == "__main__":
    raise SystemExit(main())
