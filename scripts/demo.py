#!/usr/bin/env python3
"""Demo: bisect a patched submodule in a throwaway world, in a few seconds.

Builds a hermetic world with ``worldgen`` (upstream of 400 commits, a fork
carrying a patch stack on top of upstream commit 300, and a superproject
pinning the fork as ``third_party/llvm-project``), runs ``bisectkit run``
in it, prints a summary of the JSON result and checks that the superproject
and the submodule are back on their branches and clean.

Usage: python3 scripts/demo.py [--keep]

Exit status: bisectkit's (0 = first bad commit found); 1 if bisectkit
succeeded but left a repository off its branch or dirty.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import worldgen  # noqa: E402


def bisectkit_command() -> list[str]:
    """The installed console script, or the package run as a module."""
    exe = shutil.which("bisectkit")
    return [exe] if exe else [sys.executable, "-m", "bisectkit"]


def explain(world: worldgen.World, spec: worldgen.WorldSpec) -> None:
    x, y = spec.build_breaks[0]
    print(f"World: {world.root}")
    print(f"  upstream: {spec.commits} linear commits (0..{spec.commits}); the fork's merge-base "
          f"is upstream commit {spec.merge_base}")
    print(f"  patch stack on top of {spec.merge_base}, oldest first:")
    print(f"    - revert of upstream commit {spec.reverted}")
    print(f"    - cherry-pick -x of upstream commit {y}, the fix for upstream's broken build")
    print(f"    - cherry-pick of upstream commit {spec.pick_by_patch_id} without a trailer "
          "(found by patch id)")
    print("    - a local fixup")
    print(f"  superproject: pins the fork as {worldgen.SUBMODULE}, with build.sh and repro.sh")
    print(f"    build.sh fails while upstream's build is broken (commits {x}..{y - 1}); the "
          f"picked fix {y} repairs it, so every step builds")
    print("    repro.sh prints a miscompile on bad commits; on good ones it fails with "
          "\"HAL device 'vulkan' not found\" (no GPU here), hence --good-if")
    print(f"  expected: upstream commit {spec.bug_at} is the first bad commit")
    print()


def summarize(result_path: Path, world: worldgen.World, expected: int) -> None:
    if not result_path.is_file():
        print("no JSON result was written")
        return
    data = json.loads(result_path.read_text(encoding="utf-8"))
    steps = data.get("steps", [])
    print()
    print(f"Summary (from {result_path.name}):")
    print(f"  status: {data['status']}")
    first_bad = data.get("first_bad")
    if first_bad:
        print(f"  first bad commit: {first_bad} {data.get('first_bad_subject', '')}")
        if first_bad != world.sha(expected):
            print(f"  (expected upstream commit {expected}: {world.sha(expected)})")
    elif data.get("candidates"):
        print(f"  candidates left: {len(data['candidates'])}")
    print(f"  steps: {len(steps)} for a range of {data.get('range_size', '?')} candidates")
    written = ", ".join(f"{s['files_written']}" for s in steps)
    print(f"  files written per step: {written}")


def check_restored(world: worldgen.World, sub_head: str, sup_head: str) -> list[str]:
    """Problems with the state bisectkit left behind (empty when all is back)."""
    problems = []
    for name, repo, want_sha in (("superproject", world.superproject, sup_head),
                                 ("submodule", world.submodule, sub_head)):
        branch = subprocess.run(["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=repo,
                                env=world.env, text=True, capture_output=True).stdout.strip()
        if branch != "main":
            problems.append(f"{name} is not on branch main (HEAD: {branch or 'detached'})")
        sha = world.git(repo, "rev-parse", "HEAD")
        if sha != want_sha:
            problems.append(f"{name} HEAD moved: {sha[:12]}, was {want_sha[:12]}")
        status = world.git(repo, "status", "--porcelain")
        if status:
            problems.append(f"{name} is not clean:\n{status}")
    return problems


def demo(root: Path) -> int:
    spec = worldgen.WorldSpec()
    world = worldgen.build_world(root, spec)
    explain(world, spec)
    sub_head = world.git(world.submodule, "rev-parse", "HEAD")
    sup_head = world.git(world.superproject, "rev-parse", "HEAD")
    result_path = root / "result.json"
    report_path = root / "report.md"
    argv = [*bisectkit_command(), "run",
            "--submodule", worldgen.SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(spec.merge_base),
            "--build", "./build.sh", "--good-if", "device .* not found",
            "--json", str(result_path), "--report", str(report_path), "--", "./repro.sh"]
    print(f"$ cd {shlex.quote(str(world.superproject))}")
    print(f"$ {shlex.join(argv)}")
    print(flush=True)
    proc = subprocess.Popen(argv, cwd=world.superproject, env=world.env)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        # bisectkit got the Ctrl-C too and is restoring; let it finish.
        rc = proc.wait()
    summarize(result_path, world, spec.bug_at)
    if report_path.is_file():
        print(f"\nThe report ready to paste into an issue ({report_path.name}):\n")
        print(report_path.read_text(encoding="utf-8"))
    problems = check_restored(world, sub_head, sup_head)
    if problems:
        print("NOT restored:")
        for p in problems:
            print(f"  {p}")
        return rc or 1
    print("  superproject and submodule are back on branch main, clean")
    print(f"bisectkit exited with {rc}")
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true",
                        help="keep the world's directory and print its path")
    args = parser.parse_args(argv)
    if args.keep:
        root = Path(tempfile.mkdtemp(prefix="bisectkit-demo-"))
        rc = demo(root)
        print(f"kept the world in {root} (superproject: {root / 'superproject'}; "
              f"git env: HOME={root / 'home'} GIT_CONFIG_NOSYSTEM=1)")
        return rc
    with tempfile.TemporaryDirectory(prefix="bisectkit-demo-") as tmp:
        return demo(Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
