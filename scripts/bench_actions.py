#!/usr/bin/env python3
"""The real compiler-actions scenarios of ``tests/data/actions``, each bisected by
``bisectkit actions`` through the CLI: total actions, repro runs at limits against the
bound ceil(log2(total+1)) + 2, enumeration and check runs, wall time, the action named.

    python3 scripts/bench_actions.py            # every scenario whose tools are here
    python3 scripts/bench_actions.py --markdown # the table as the README/closing note show it

The answers are the ones the test suite checks against brute-force sweeps; this script
only measures. A scenario whose tools are missing is listed as skipped.
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
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "actions"


@dataclass(frozen=True)
class Scenario:
    """One real case: its name, the tools it needs, the ``bisectkit actions`` words before
    the repro, the repro and the environment it reads."""

    name: str
    tools: tuple[str, ...]
    args: tuple[str, ...]
    repro: str
    env: tuple[tuple[str, str], ...] = ()


SCENARIOS = (
    Scenario("opt-19, checked_add (UB fold)", ("opt-19", "lli-19"), ("--kind", "opt-bisect"),
             "checked_add.sh", (("LLVM", "19"),)),
    Scenario("opt-14, checked_add (UB fold)", ("opt-14", "lli-14"), ("--kind", "opt-bisect"),
             "checked_add.sh", (("LLVM", "14"),)),
    Scenario("mlir-opt-19, ub.mlir, pass-execution", ("mlir-opt-19", "mlir-cpu-runner-19"),
             ("--kind", "mlir-counter"), "ub_mlir.sh"),
    Scenario("mlir-opt-19, ub.mlir, apply-pattern", ("mlir-opt-19", "mlir-cpu-runner-19"),
             ("--kind", "mlir-counter", "--tag", "apply-pattern"), "ub_mlir.sh"),
    Scenario("mlir-opt-19, ub.mlir, patterns inside pass 6",
             ("mlir-opt-19", "mlir-cpu-runner-19"), ("--kind", "mlir-counter", "--within", "6"),
             "ub_mlir.sh"),
    Scenario("iree-compile, FMA contraction, pass executions",
             ("iree-compile", "iree-run-module"), ("--kind", "opt-bisect"), "iree_fma.sh"),
    Scenario("iree-compile, FMA, dagcombine inside pass 3465",
             ("iree-compile", "iree-run-module"),
             ("--kind", "llvm-counter:dagcombine", "--within", "3465"), "iree_fma.sh"),
)


def run(scenario: Scenario, tmp: Path) -> dict[str, object]:
    """One scenario through the real CLI: its row."""
    exe = shutil.which("bisectkit")
    argv = [exe] if exe else [sys.executable, "-m", "bisectkit"]
    out = tmp / "answer.json"
    env = {**os.environ, **dict(scenario.env), "TMPDIR": str(tmp)}
    started = time.perf_counter()
    r = subprocess.run([*argv, "actions", "--json", str(out), *scenario.args, "--",
                        str(DATA / scenario.repro)], env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=600)
    wall = time.perf_counter() - started
    if r.returncode != 0 or not out.exists():
        return {"scenario": scenario.name, "error": (r.stderr.strip() or r.stdout)[-200:]}
    data = json.loads(out.read_text())
    runs = data["runs"]
    action = data.get("action") or {}
    named = f"{action.get('name', '?')} on {action.get('unit', '')}".strip()
    if action.get("loc"):
        named += f" at {Path(action['loc']).name}"
    return {"scenario": scenario.name, "total": data["total"], "first_bad": data["first_bad"],
            "limits": runs["limits"], "bound": runs["bound"],
            "other": runs["enumeration"] + runs.get("checks", 0), "wall_s": round(wall, 1),
            "named": named}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    for scenario in SCENARIOS:
        missing = [t for t in scenario.tools if shutil.which(t) is None]
        if missing:
            rows.append({"scenario": scenario.name, "error": f"skipped: {', '.join(missing)}"})
            continue
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(run(scenario, Path(tmp)))
    if args.markdown:
        print("| scenario | actions | first bad | limit runs / bound | other runs | wall | "
              "named |")
        print("|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['scenario']} | {row['error']} |||||" if args.markdown
                  else f"{row['scenario']}: {row['error']}")
        elif args.markdown:
            print(f"| {row['scenario']} | {row['total']} | #{row['first_bad']} | "
                  f"{row['limits']} / {row['bound']} | {row['other']} | {row['wall_s']} s | "
                  f"{row['named']} |")
        else:
            print(f"{row['scenario']}: {row['total']} actions, #{row['first_bad']} "
                  f"({row['named']}), {row['limits']} limit runs (bound {row['bound']}) + "
                  f"{row['other']} enumeration/check runs, {row['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
