#!/usr/bin/env python3
"""Kill bisectkit at every instant and check that nothing is ever lost.

Scenarios (the flows, ``--scenarios``): ``bisectkit run`` with the submodule
strategy and with ``--integrate``, each also with ``--jobs 2``; a manual
session (``start``, ``run``, ``reset``, all killed alike); ``bisectkit
advance`` and ``advance --apply``. Every world has an untracked and an
ignored file in both repositories.

Modes (``--modes``), each a column of the summary:

- at the Nth git command, for every N (:mod:`torture_kill`): ``before``,
  ``during``, ``after`` (SIGKILL), ``signal`` (SIGINT/SIGTERM/SIGHUP/SIGQUIT),
  ``together`` (bisectkit and the git it runs killed at the same instant, git
  holding its locks: ``index.lock``, ``HEAD.lock``, ref locks left behind);
- ``cache-kept``: the killed run starts from the cache a run killed half way
  left, and the fresh run reuses what both wrote; ``cache-damaged``: the same,
  then ``verdicts.json`` truncated, garbage, a list, or its "bad" entries
  damaged (verdict "maybe", not an object, no reason);
- ``reset-killed``: a run killed mid-checkout, then ``reset`` killed at each
  of its git commands (:mod:`torture_flows`);
- ``orphan``: a build leaves a ``setsid`` or ``nohup`` child that writes into
  the work tree 4 s later, then stops bisectkit (SIGKILL or SIGTERM);
- ``random``: SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGKILL after a random delay
  (one-shot flows).

Every round runs in a fresh copy of its world. After the kill:

1. ``git bisect-patched reset`` must exit 0 (signals: bisectkit restores by
   itself, and ``reset`` then finds nothing to do);
2. both repositories must be as before, byte for byte: HEADs, branches, every
   other ref, ``git status --porcelain --ignored``, every file's content, no
   lock file left in the git dirs (``advance --apply``: or exactly the state
   an undisturbed apply leaves, never one between);
3. a fresh ``bisectkit run`` (``advance``), reusing what the killed run
   cached, must name the right first bad commit and leave the state alone.

Usage::

    python3 scripts/torture.py [--scenarios submodule,advance-apply,...]
        [--modes before,together,orphan,...] [--every N] [--random 40] [-v]

Prints, per scenario and mode, kills tried, landed (bisectkit was still
running), left dirty after reset, and wrong answers afterwards; exits 1 if
any state was dirty or any answer wrong.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from torture_cache import DAMAGES, forget_cache, read_cache, seed_cache
from torture_flows import (
    ORPHANS,
    first_kill_point,
    orphan_round,
    reset_log,
    reset_round,
)
from torture_kill import (
    POINT_MODES,
    STOP_SIGNALS,
    Round,
    delay_round,
    git_commands,
    git_log,
    kill_round,
    parallel_round,
    point_round,
    stopped,
    sweep_points,
)
from torture_shim import write_shim
from torture_worlds import (
    SCENARIOS,
    Scenario,
    build_scenario,
    decorate,
    exe,
    fingerprint,
    full_state,
    run_cli,
    scenarios,
    with_jobs,
)

__all__ = ["DAMAGES", "FULL_ENV", "STOP_SIGNALS", "Baseline", "Round", "Scenario", "baseline",
           "decorate", "delay_round", "every", "family_rounds", "fingerprint", "full_state",
           "git_commands", "kill_round", "parallel_round", "scenarios", "with_jobs",
           "write_shim"]

#: Set (to anything but "" or "0"; ``scripts/attacks.py --full`` sets it), the kill tests
#: of the suite try every kill point of their sweeps instead of the sample that keeps the
#: suite within its time.
FULL_ENV = "BISECTKIT_TORTURE_FULL"


def every(sampled: int) -> int:
    """A sweep's stride: ``sampled`` in the suite, 1 (every point) under :data:`FULL_ENV`."""
    return 1 if os.environ.get(FULL_ENV, "") not in ("", "0") else sampled


#: Kept for scripts/torture_shapes.py.
_exe = exe
FAMILIES = (*POINT_MODES, "reset-killed", "orphan", "random")


@dataclass
class Baseline:
    """An undisturbed round of a scenario: its git commands, and what a round killed half
    way caches (the cache modes start from it)."""

    gits: list[str]
    partial: dict[str, object]
    #: Git commands of a round that starts from that partial cache.
    cached_gits: int


def baseline(scenario: Scenario, tmp: Path, cache_modes: bool = True) -> Baseline:
    """Count the kill points of ``scenario`` in fresh copies of its world, where the rounds
    run (the cache key holds the repro's absolute path: the cache is only good there).
    Records the state an undisturbed ``advance --apply`` leaves (:attr:`Scenario.applied`);
    ``cache_modes``: also make the partial cache and count a round that starts from it."""
    copy = scenario.copy(tmp / "round")
    gits = git_log(copy, tmp)
    if scenario.applies:
        scenario.applied = full_state(copy.world)
    partial: dict[str, object] = {}
    cached = 0
    if cache_modes and scenario.cache:
        partial = partial_cache(scenario.copy(tmp / "round"), tmp, len(gits))
        copy = scenario.copy(tmp / "round")
        seed_cache(copy.world, partial)
        cached = git_commands(copy, tmp, keep_cache=True)
    return Baseline(gits, partial, cached)


def partial_cache(scenario: Scenario, tmp: Path, total: int) -> dict[str, object]:
    """What a round of ``total`` git commands killed half way caches (SIGKILL before its
    middle one), in ``scenario``'s world (a fresh copy: left restored, cache emptied)."""
    forget_cache(scenario.world)
    shim = write_shim(tmp / "shim", total // 2, "before")
    for name, args in scenario.commands:
        if stopped(run_cli(scenario.world, name, args, str(shim)), "before", 0):
            break
    run_cli(scenario.world, "git-bisect-patched", ["reset"])
    cache = read_cache(scenario.world)
    forget_cache(scenario.world)
    return cache


def family_rounds(scenario: Scenario, family: str, base: Baseline, tmp: Path,
                  every: int = 1, rng: random.Random | None = None,
                  delays: int = 40) -> Iterator[Round]:
    """The rounds of one mode (:data:`FAMILIES`) for ``scenario`` (one point in ``every``),
    each in a fresh copy of its world under ``tmp``."""

    def fresh() -> Scenario:
        return scenario.copy(tmp / "round")

    if family in POINT_MODES:
        cached = family.startswith("cache")
        if cached and not scenario.cache:
            return
        points = sweep_points(base.cached_gits if cached else len(base.gits), every)
        for turn, n in enumerate(points):
            yield point_round(fresh(), family, n, tmp, base.partial, turn)
    elif family == "reset-killed":
        first = first_kill_point(base.gits)
        for k in sweep_points(len(reset_log(fresh(), first, tmp)), every):
            yield reset_round(fresh(), first, k, tmp)
    elif family == "orphan":
        combos = [(how, at, sig) for at in (1, 2, 3) for how in ORPHANS
                  for sig in (signal.SIGKILL, signal.SIGTERM)]
        random.Random(len(combos)).shuffle(combos)  # so that one in N still varies all three
        for how, at, sig in combos[::every]:
            yield orphan_round(fresh(), how, at, sig, tmp)
    elif family == "random" and len(scenario.commands) == 1:
        rng = rng or random.Random(10)
        for _ in range(delays):
            sig = rng.choice((*STOP_SIGNALS, signal.SIGKILL))
            yield delay_round(fresh(), rng.uniform(0.0, 2.0), sig)


def summary(rounds: Sequence[Round], took: float) -> list[str]:
    """The table: per scenario and mode, tried / landed / dirty / wrong."""
    rows: dict[tuple[str, str], list[int]] = {}
    for r in rounds:
        row = rows.setdefault((r.scenario, r.family or r.mode), [0, 0, 0, 0])
        row[0] += 1
        row[1] += r.killed
        row[2] += bool(r.dirty or r.reset_rc != 0)
        row[3] += r.wrong is not None and not r.dirty and r.reset_rc == 0
    lines = [f"{'scenario':<22} {'mode':<14} {'tried':>6} {'landed':>6} {'dirty':>6} "
             f"{'wrong':>6}"]
    for (scenario, family), (tried, landed, dirty, wrong) in rows.items():
        lines.append(f"{scenario:<22} {family:<14} {tried:>6} {landed:>6} {dirty:>6} "
                     f"{wrong:>6}")
    totals = [sum(row[i] for row in rows.values()) for i in range(4)]
    lines.append(f"{'total':<37} {totals[0]:>6} {totals[1]:>6} {totals[2]:>6} "
                 f"{totals[3]:>6}")
    lines.append(f"kills tried: {totals[0]} ({totals[1]} landed while bisectkit ran)")
    lines.append(f"states left dirty after reset: {totals[2]}")
    lines.append(f"wrong answers afterwards: {totals[3]}")
    lines.append(f"took {took:.0f} s")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"flows to torture (default: all of {','.join(SCENARIOS)})")
    parser.add_argument("--modes", default=",".join(FAMILIES),
                        help=f"modes (default: all of {','.join(FAMILIES)})")
    parser.add_argument("--every", type=int, default=1, metavar="N",
                        help="one kill point in N (default 1: every one)")
    parser.add_argument("--random", type=int, default=40, metavar="N",
                        help="random-delay signals per one-shot flow (default 40)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per kill")
    args = parser.parse_args(argv)
    names = [s for s in args.scenarios.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    unknown = [*(s for s in names if s not in SCENARIOS), *(m for m in modes
                                                            if m not in FAMILIES)]
    if unknown:
        parser.error(f"unknown scenario or mode: {', '.join(unknown)}")
    rng = random.Random(args.seed)
    rounds: list[Round] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bisectkit-torture-") as tmp:
        for name in names:
            where = Path(tmp) / name
            scenario = build_scenario(name, where / "template")
            base = baseline(scenario, where)
            for family in modes:
                these = []
                for r in family_rounds(scenario, family, base, where, max(1, args.every),
                                       rng, args.random):
                    if args.verbose or not r.ok:
                        print(r.describe(), flush=True)
                    these.append(r)
                bad = sum(not r.ok for r in these)
                print(f"-- {scenario.name}, {family}: {len(these)} rounds, {bad} bad "
                      f"({time.monotonic() - started:.0f} s)", flush=True)
                rounds += these
    print("\n".join(summary(rounds, time.monotonic() - started)))
    return 1 if any(not r.ok for r in rounds) else 0


if __name__ == "__main__":
    raise SystemExit(main())
