#!/usr/bin/env python3
"""What a partial clone fetches per step, against what a full clone holds.

Builds the test world (``worldgen.build_world``: upstream 400 commits, the
usual patch stack) twice: once as is (a full clone) and once with the
submodule re-cloned ``--filter=blob:none`` (``worldgen.make_partial``: origin
and upstream both promisors). Runs the same real ``bisectkit run`` (good
upstream 0, bad 300, ``--no-cache``) in each and prints, per step, the
objects and bytes the partial clone fetched, beside the full clone's object
count and pack size and the partial clone's initial ones. Both runs must name
the same first bad commit (exit 1 otherwise).

    python3 scripts/bench_partial.py [--files 20] [--commits 400]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from worldgen import SUBMODULE, World, WorldSpec, build_world, make_partial


def objects(w: World) -> tuple[int, int]:
    """(objects present, bytes of packs and loose objects) of the world's submodule."""
    out = w.git(w.submodule, "count-objects", "-v")
    counts = dict(line.split(": ") for line in out.splitlines())
    return (int(counts["count"]) + int(counts["in-pack"]),
            (int(counts["size"]) + int(counts["size-pack"])) * 1024)


def run(w: World, out: Path) -> dict[str, object]:
    args = ["bisectkit", "run", "--no-cache", "--submodule", SUBMODULE, "--upstream",
            "upstream/main", "--good", w.sha(0), "--bad", w.sha(300), "--build", "./build.sh",
            "--good-if", "device .* not found", "--json", str(out), "--", "./repro.sh"]
    proc = subprocess.run(args, cwd=w.superproject, env=w.env, text=True, capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"bisectkit run failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}")
    result: dict[str, object] = json.loads(out.read_text())
    said = " ".join(proc.stdout.split())
    found = re.search(r"patch-stack analysis: (fetched .*? in \d+ m?s)", said)
    result["analysis"] = found.group(1) if found else "nothing fetched"
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20, help="files in the world's lib/")
    parser.add_argument("--commits", type=int, default=400, help="upstream commits")
    opts = parser.parse_args()
    spec = WorldSpec(commits=opts.commits, files=opts.files)
    with tempfile.TemporaryDirectory(prefix="bench-partial-") as tmp:
        full = build_world(Path(tmp) / "full", spec)
        partial = make_partial(build_world(Path(tmp) / "partial", spec))
        full_objects, full_bytes = objects(full)
        start_objects, start_bytes = objects(partial)
        a = run(full, Path(tmp) / "full.json")
        b = run(partial, Path(tmp) / "partial.json")
        end_objects, end_bytes = objects(partial)
    if a["first_bad"] != b["first_bad"]:
        print(f"answers differ: full {a['first_bad']}, partial {b['first_bad']}")
        return 1
    print(f"world: upstream {opts.commits} commits, {opts.files} files; first bad "
          f"{str(a['first_bad'])[:12]} (both clones)")
    print(f"full clone submodule:    {full_objects:6d} objects, {full_bytes:8d} bytes")
    print(f"partial clone, initial:  {start_objects:6d} objects, {start_bytes:8d} bytes")
    print(f"partial clone, after:    {end_objects:6d} objects, {end_bytes:8d} bytes (disk; with "
          "the patched trees and commits bisectkit wrote)")
    print(f"patch-stack analysis (before step 1): {b['analysis']}")
    print(f"{'step':>4}  {'commit':12}  {'files':>5}  {'fetched':>7}  {'bytes':>7}  {'ms':>5}")
    total = [0, 0, 0.0]
    steps = b["steps"]
    assert isinstance(steps, list)
    for s in steps:
        got = s.get("fetched") or {"objects": 0, "bytes": 0, "seconds": 0.0}
        total = [total[0] + got["objects"], total[1] + got["bytes"], total[2] + got["seconds"]]
        print(f"{s['index']:>4}  {s['commit'][:12]}  {s['files_written']:>5}  "
              f"{got['objects']:>7}  {got['bytes']:>7}  {got['seconds'] * 1000:>5.0f}")
    print(f"{'all':>4}  {'':12}  {'':>5}  {total[0]:>7}  {total[1]:>7}  {total[2] * 1000:>5.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
