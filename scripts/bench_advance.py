#!/usr/bin/env python3
"""Builds used by ``bisectkit advance`` (far end, gallop, bisect) against ``--linear``.

A world whose pin is 400 affecting upstream commits behind upstream's head
(upstream 500 commits, merge-base 100, the usual patch stack: a revert, a
cherry-pick that lands upstream at 150, one picked by patch id at 160, a
local fixup); the smoketest fails from the commit ``d`` ahead of the pin (d
must not put the bug on 50, 60, 150 or 160: the stack carries those commits).
Each configuration runs on a fresh copy with ``--no-cache``, in the same
process run, and must name the same first bad commit (exit 1 otherwise).

    python3 scripts/bench_advance.py [--distances 3,75,390] [--sleep 0]

``--sleep S`` makes the build sleep S seconds, so the wall times show what
the builds cost; the build counts do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import math
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distances", default="3,75,390")
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args(argv)
    build = f"sleep {args.sleep:g}; sh build.sh" if args.sleep else "sh build.sh"
    #: (distance, {mode: (builds, wall seconds, right answer)}, the builds bound)
    rows: list[tuple[int, dict[str, tuple[int, float, bool]], int]] = []
    wrong = 0
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
            bound = 2 * math.ceil(math.log2(d + 1)) + 2
            rows.append((d, results, bound))
    print(f"{'d':>4} | {'advance builds':>14} | {'--linear builds':>15} | {'ratio':>6} | "
          f"{'bound':>5} | {'advance s':>9} | {'--linear s':>10}")
    for d, res, bound in rows:
        (gb, gw, gok), (lb, lw, lok) = res["advance"], res["advance --linear"]
        flag = "" if gok and lok else "  WRONG ANSWER"
        print(f"{d:>4} | {gb:>14} | {lb:>15} | {gb / lb:>6.3f} | {bound:>5} | {gw:>9.1f} | "
              f"{lw:>10.1f}{flag}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
