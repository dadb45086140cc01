#!/usr/bin/env python3
"""Demo: bisect a patched submodule in a throwaway world, in a few seconds.

Default: builds a hermetic world with ``worldgen`` (upstream of 400 commits, a
fork carrying a patch stack on top of upstream commit 300, and a superproject
pinning the fork as ``third_party/llvm-project``) and runs ``bisectkit run``
over upstream commits 0..400. The world is laid out so that the steps the
bisection really takes show every patch-stack action: a revert dropped (the
candidate does not contain the reverted commit yet), cherry-picks dropped
(already upstream), a revert that became empty, a local patch that conflicts
(the step is skipped, naming it) and a broken build (the step is skipped).

``--integrate``: a superproject whose integrate branch advances the pin
("Advance LLVM to X") with fixups in between; ``bisectkit run --integrate``
finds the bad advance, then the demo runs the submodule bisect bisectkit
prints as the follow-up and checks that it names the upstream culprit.

Both print what the world is and what to expect, check the expectations
against the JSON results, and check that every repository is back on its
branch and clean.

Usage: python3 scripts/demo.py [--integrate] [--keep]

Exit status: 0 when every expectation holds; otherwise bisectkit's non-zero
exit status, or 1.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import worldgen

GOOD_IF = "device .* not found"

#: The default demo's world. Upstream history, by commit number: the build breaks at
#: 180 (320 fixes it; the stack picks 320), upstream reverts 250 itself at 330, rewrites
#: the line the local fixup edits at 355 and puts it back at 357, miscompiles from 358,
#: and breaks the build again at 361 (363 fixes it; nobody picked that fix). The bisection
#: over 0..400 visits 200, 300, 350, 375, 362, 363, 356, 357, 360, 358: see demo_submodule.
DEMO_SPEC = worldgen.WorldSpec(
    bug_at=358,
    build_breaks=[(180, 320), (361, 363)],
    reverted=250,
    upstream_reverts_at=330,
    picks=[320],
    pick_by_patch_id=350,
    local_conflict=355,
    local_conflict_until=357,
)

#: The ``--integrate`` demo's upstream bug: advance 8 (upstream 175 -> 200) brings it in.
INTEGRATE_BUG_AT = 190


def bisectkit_command() -> list[str]:
    """The installed console script, or the package run as a module."""
    exe = shutil.which("bisectkit")
    return [exe] if exe else [sys.executable, "-m", "bisectkit"]


class Checks:
    """The demo's expectations: each is printed with whether it held."""

    def __init__(self) -> None:
        self.results: list[tuple[str, bool]] = []

    def expect(self, what: str, held: bool) -> None:
        """Record whether the expectation ``what`` held."""
        self.results.append((what, held))

    @property
    def ok(self) -> bool:
        """Whether every expectation held."""
        return all(held for _, held in self.results)

    def show(self) -> None:
        print()
        print("Expectations:")
        for what, held in self.results:
            print(f"  [{'ok' if held else 'FAILED'}] {what}")


def run_bisectkit(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    """Run bisectkit with the demo's terminal (its live display, if any, shows)."""
    print(f"$ {shlex.join(argv)}")
    print(flush=True)
    proc = subprocess.Popen(argv, cwd=cwd, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        # bisectkit got the Ctrl-C too and is restoring; let it finish.
        return proc.wait()


def load(path: Path) -> dict[str, Any]:
    """A JSON result (empty when bisectkit wrote none)."""
    if not path.is_file():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def steps_where(result: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> list[int]:
    """Indices of the result's steps for which ``test`` holds."""
    return [int(s.get("index", 0)) for s in result.get("steps", []) if test(s)]


def patch_steps(result: dict[str, Any], kind: str, action: str, why: str = "") -> list[int]:
    """Indices of the steps where a patch of ``kind`` got ``action``, ``why`` in its reason."""
    return steps_where(result, lambda s: any(
        p.get("kind") == kind and p.get("action") == action and why in str(p.get("why", ""))
        for p in s.get("patches", [])))


def skip_steps(result: dict[str, Any], reason: str, naming: str = "") -> list[int]:
    """Indices of the steps skipped for a reason starting with ``reason`` (and naming
    ``naming``)."""
    return steps_where(result, lambda s: s.get("verdict") == "skip"
                       and str(s.get("reason", "")).startswith(reason)
                       and naming in str(s.get("reason", "")))


def at(steps: list[int]) -> str:
    """Where something happened: "step 3", "steps 3, 5", "no step"."""
    if not steps:
        return "no step"
    return f"step{'s' if len(steps) > 1 else ''} {', '.join(map(str, steps))}"


def exited(what: str, rc: int) -> tuple[str, bool]:
    """The expectation that ``what`` exited 0."""
    return (f"{what} exited 0" if rc == 0 else f"{what} exited {rc}, not 0"), rc == 0


def check_restored(world: worldgen.World, heads: dict[str, str], checks: Checks,
                   when: str = "") -> None:
    """Expect the superproject and the submodule back on main at their HEADs, clean."""
    for name, repo in (("superproject", world.superproject), ("submodule", world.submodule)):
        branch = subprocess.run(["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=repo,
                                env=world.env, text=True, capture_output=True).stdout.strip()
        sha = world.git(repo, "rev-parse", "HEAD")
        status = world.git(repo, "status", "--porcelain")
        checks.expect(f"{name} on main at {heads[name][:12]}, clean{when}"
                      + ("" if branch == "main" else f" (HEAD: {branch or 'detached'})")
                      + ("" if sha == heads[name] else f" (HEAD moved to {sha[:12]})")
                      + ("" if not status else f" (not clean: {status.splitlines()[0]} ...)"),
                      branch == "main" and sha == heads[name] and not status)


def heads_of(world: worldgen.World) -> dict[str, str]:
    return {"superproject": world.git(world.superproject, "rev-parse", "HEAD"),
            "submodule": world.git(world.submodule, "rev-parse", "HEAD")}


def explain_submodule(world: worldgen.World, spec: worldgen.WorldSpec) -> None:
    (x1, y1), (x2, y2) = spec.build_breaks
    top = spec.commits
    conflict, conflict_end = spec.local_conflict, spec.local_conflict_until
    assert conflict is not None and conflict_end is not None  # DEMO_SPEC sets them
    print(f"World: {world.root}")
    print(f"  upstream: {top} linear commits (0..{top}; upstream/main = {top})")
    print(f"  fork: upstream commit {spec.merge_base} plus a patch stack, oldest first:")
    print(f"    - a revert of upstream commit {spec.reverted}")
    print(f"    - a cherry-pick -x of upstream commit {y1}, the fix for the build")
    print(f"      that upstream broke at {x1} (so it is empty before {x1})")
    print(f"    - a cherry-pick of upstream commit {spec.pick_by_patch_id} without a trailer")
    print("      (found by patch id)")
    print("    - a local fixup of lib/local.txt")
    print("  upstream after the fork:")
    print(f"    - {spec.upstream_reverts_at}: upstream reverts {spec.reverted} itself")
    print(f"    - {conflict}: rewrites the line the local fixup edits; {conflict_end} puts "
          "it back")
    print(f"    - {spec.bug_at}: the miscompile")
    print(f"    - {x2}: breaks the build again; {y2} fixes it (the stack has no pick of it)")
    print(f"  superproject: pins the fork as {worldgen.SUBMODULE}; build.sh fails while")
    print("    upstream's build is broken; repro.sh prints a miscompile on bad commits")
    print("    and \"HAL device 'vulkan' not found\" on good ones (no GPU), hence --good-if")
    print(f"  bisecting upstream: good = commit 0 (an old pin), bad = upstream/main ({top}),")
    print("    with the patch stack replayed at every step")
    print()
    print("What to expect in the steps below:")
    print(f"  - before {spec.reverted}: the revert is dropped (the candidate does not")
    print(f"    contain {spec.reverted} yet); the pick of {y1} makes the build work")
    print(f"  - from {y1}: the pick of {y1} is dropped (already upstream); from "
          f"{spec.pick_by_patch_id}")
    print("    the patch-id pick too")
    print(f"  - from {spec.upstream_reverts_at}: the revert is empty (upstream reverted "
          f"{spec.reverted} itself)")
    print(f"  - at {conflict}..{conflict_end - 1}: the local fixup conflicts: skip, naming "
          "the patch")
    print(f"  - at {x2}..{y2 - 1}: the build fails: skip")
    print(f"  - upstream commit {spec.bug_at} ({world.sha(spec.bug_at)[:12]}) is the first "
          "bad commit; exit 0")
    print()


def demo_submodule(root: Path) -> int:
    """Build the default world under ``root``, bisect it, check; the exit status."""
    spec = DEMO_SPEC
    world = worldgen.build_world(root, spec)
    explain_submodule(world, spec)
    heads = heads_of(world)
    result_path, report_path = root / "result.json", root / "report.md"
    argv = [*bisectkit_command(), "run",
            "--submodule", worldgen.SUBMODULE, "--upstream", "upstream/main",
            "--good", world.sha(0), "--bad", world.sha(spec.commits),
            "--build", "./build.sh", "--good-if", GOOD_IF,
            "--json", str(result_path), "--report", str(report_path), "--", "./repro.sh"]
    print(f"$ cd {shlex.quote(str(world.superproject))}")
    rc = run_bisectkit(argv, world.superproject, world.env)
    if report_path.is_file():
        print(f"\nThe report ready to paste into an issue ({report_path.name}):\n")
        print(report_path.read_text(encoding="utf-8"))

    result = load(result_path)
    checks = Checks()
    checks.expect(*exited("bisectkit", rc))
    found = result.get("first_bad")
    want = world.sha(spec.bug_at)
    checks.expect(f"first bad commit {want[:12]} (upstream commit {spec.bug_at})"
                  + ("" if found == want else f"; bisectkit said {found}"), found == want)
    empty = steps_where(result, lambda s: any(p.get("action") == "empty"
                                              for p in s.get("patches", [])))
    for what, steps in (
            ("revert dropped (not in the candidate yet)",
             patch_steps(result, "revert", "dropped", "not in the candidate")),
            ("cherry-pick dropped (already upstream)",
             patch_steps(result, "cherry-pick", "dropped", "already upstream")),
            ("a patch empty", empty),
            ("conflict: skip, naming the local patch",
             skip_steps(result, "conflict", world.stack[-1][:12])),
            ("build failed: skip", skip_steps(result, "build failed"))):
        checks.expect(f"{what}: {at(steps)}", bool(steps))
    check_restored(world, heads, checks)
    checks.show()
    return 0 if checks.ok else rc or 1


def explain_integrate(world: worldgen.World) -> None:
    adv = worldgen.ADVANCE_STEP
    first = -(-INTEGRATE_BUG_AT // adv)  # the first advance whose pin has the bug
    print(f"World: {world.root}")
    print(f"  upstream: {len(world.shas) - 1} linear commits; commit {INTEGRATE_BUG_AT} "
          "brings a miscompile")
    print(f"  fork: for each advance k, upstream commit {adv}*k plus a local fixup")
    print(f"  superproject main, the integrate branch (pins {worldgen.SUBMODULE}),")
    print("  oldest first:")
    log = world.git(world.superproject, "log", "--reverse", "--format=%h %s").splitlines()
    for line in log:
        print(f"    {line}")
    print("  build.sh fails at the fixup that breaks the build; repro.sh prints a")
    print("  miscompile on bad commits, \"device not found\" on good ones (--good-if)")
    print()
    print("What to expect:")
    print("  1. bisectkit run --integrate bisects the superproject's commits: the fixup")
    print("     that breaks the build is skipped (build failed), and the advance to")
    print(f"     upstream commit {adv * first} ({world.integrate[f'adv{first}'][:12]}) is the "
          "first bad commit;")
    print(f"     bisectkit prints the submodule bisect to run next, over upstream "
          f"{adv * (first - 1)}..{adv * first}")
    print(f"  2. that follow-up finds upstream commit {INTEGRATE_BUG_AT} "
          f"({world.sha(INTEGRATE_BUG_AT)[:12]}), the first bad one")
    print()


def demo_integrate(root: Path) -> int:
    """Build the integrate world under ``root``, bisect it, run the follow-up, check;
    the exit status."""
    world = worldgen.build_integrate_world(root, bug_at=INTEGRATE_BUG_AT)
    explain_integrate(world)
    heads = heads_of(world)
    first = -(-INTEGRATE_BUG_AT // worldgen.ADVANCE_STEP)
    checks = Checks()

    result_path = root / "integrate.json"
    argv = [*bisectkit_command(), "run", "--integrate",
            "--good", world.integrate["init"], "--bad", world.integrate[f"adv{worldgen.ADVANCES}"],
            "--build", "./build.sh", "--good-if", GOOD_IF, "--json", str(result_path),
            "--", "./repro.sh"]
    print(f"$ cd {shlex.quote(str(world.superproject))}")
    rc = run_bisectkit(argv, world.superproject, world.env)
    result = load(result_path)
    want = world.integrate[f"adv{first}"]
    checks.expect(*exited("the integrate bisect", rc))
    said = result.get("first_bad")
    checks.expect(f"first bad integrate commit {want[:12]} (advance {first})"
                  + ("" if said == want else f"; bisectkit said {said}"), said == want)
    broken = world.integrate["break"]
    checks.expect(f"the build-breaking fixup {broken[:12]} was skipped (build failed): "
                  f"{at(skip_steps(result, 'build failed'))}",
                  any(s.get("commit") == broken and s.get("verdict") == "skip"
                      for s in result.get("steps", [])))
    check_restored(world, heads, checks, " (after the bisect)")

    # The follow-up bisectkit printed ("next: bisectkit run ..."): the note, then the command.
    followup = [line for line in result.get("followup", []) if line.startswith("bisectkit ")]
    checks.expect("bisectkit printed a follow-up submodule bisect", len(followup) == 1)
    if len(followup) == 1:
        command = shlex.split(followup[0])
        follow_path = root / "followup.json"
        print()
        print("Running the follow-up bisectkit printed (with --json added for the checks):")
        frc = run_bisectkit([*bisectkit_command(), "run", "--json", str(follow_path),
                             *command[2:]], world.superproject, world.env)
        follow = load(follow_path)
        upstream = world.sha(INTEGRATE_BUG_AT)
        checks.expect(*exited("the follow-up", frc))
        said = follow.get("first_bad")
        checks.expect(f"follow-up's first bad commit {upstream[:12]} (upstream commit "
                      f"{INTEGRATE_BUG_AT})" + ("" if said == upstream else
                                               f"; bisectkit said {said}"), said == upstream)
        check_restored(world, heads, checks, " (after the follow-up)")
    checks.show()
    return 0 if checks.ok else rc or 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--integrate", action="store_true",
                        help="bisect an integrate branch, then the submodule range it names")
    parser.add_argument("--keep", action="store_true",
                        help="keep the world's directory and print its path")
    args = parser.parse_args(argv)
    demo = demo_integrate if args.integrate else demo_submodule
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
