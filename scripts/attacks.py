"""Run the attack tests by family and print, per family, the attacks tried and held.

Each family is a set of behaviour test files (every one drives the real CLI on
real git worlds, with the real tools it attacks: git, a Dask scheduler and
workers started with the ``dask`` CLI, real signals); one parametrized case is
one attack. "Held" means the test passed: bisectkit kept the user's work, gave
no wrong answer and said what it could not know. The kill tortures at every
git command run in full from ``scripts/torture.py`` and
``scripts/torture_shapes.py`` (their samples are in the "kills" family here);
``--full`` makes the kill tests' own sweeps try every point instead of their
sample (``torture.FULL_ENV``).

    python3 scripts/attacks.py            # every family (about the suite's time)
    python3 scripts/attacks.py --family cluster --family cache
    python3 scripts/attacks.py --family kills --full
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from torture import FULL_ENV

ROOT = Path(__file__).resolve().parent.parent

#: family -> (what it attacks, its test files)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "kills": ("kills at every git command and at natural moments, of bisectkit, its git "
              "and both together, of reset, of --jobs runs and their workspaces",
              ("test_kill", "test_kill_flows", "test_parallel_kill",
               "test_killed_checkout_traces", "test_kill_session_commands",
               "test_kill_clone_shapes")),
    "bad-input": ("bad options, values, outputs, terms, non-UTF-8 words and paths, a full "
                  "disk, a read-only state folder",
                  ("test_bad_input", "test_non_utf8_paths", "test_requests")),
    "damage": ("damaged or lost session, journal, lock and cache files",
               ("test_journal_lost", "test_cache_validation", "test_reliability")),
    "concurrency": ("another terminal, an IDE or the build moving the tree under test, "
                    "holding git's locks, hiding files from git status",
                    ("test_tree_under_test", "test_files_hidden_during_a_step",
                     "test_lock_files")),
    "injection": ("a repository's text attacking the terminal, the report and the "
                  "commands bisectkit suggests", ("test_hostile_repository", "test_report")),
    "git-configs": ("the user's git config, filters, sparse, partial and shallow clones",
                    ("test_user_git_config", "test_filtered_files", "test_sparse_checkout",
                     "test_partial_clone", "test_shallow_clone", "test_clone_shapes")),
    "orphans": ("builds that leave processes behind", ("test_orphaned_builds",)),
    "cluster": ("a real Dask scheduler and workers killed, silenced, absent",
                ("test_cluster_faults",)),
    "cache": ("verdict-cache staleness: everything a verdict depends on",
              ("test_cache_key", "test_cache_key_inputs")),
    "safety": ("interruptions, aborts and bad input touching nothing", ("test_safety",)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="a family to run (repeatable; default: all)")
    parser.add_argument("--full", action="store_true",
                        help="the kill tests try every kill point of their sweeps, not the "
                             "suite's sample (much longer)")
    args = parser.parse_args()
    chosen = args.family or list(FAMILIES)
    env = dict(os.environ, **({FULL_ENV: "1"} if args.full else {}))
    files = {f"tests/{name}.py": family for family in chosen for name in FAMILIES[family][1]}
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={report}", *files], cwd=ROOT, check=False, env=env)
        cases = ET.parse(report).getroot().iter("testcase")
        tally = {family: [0, 0, 0] for family in chosen}  # tried, held, skipped
        for case in cases:
            module = case.get("classname", "").rpartition(".")[2] or case.get("file", "")
            family = files.get(f"tests/{module}.py")
            if family is None:
                continue
            if case.find("skipped") is not None:
                tally[family][2] += 1
                continue
            tally[family][0] += 1
            if case.find("failure") is None and case.find("error") is None:
                tally[family][1] += 1
    print(f"\n{'family':<14}{'tried':>7}{'held':>7}{'skipped':>9}  attacks")
    for family in chosen:
        tried, held, skipped = tally[family]
        print(f"{family:<14}{tried:>7}{held:>7}{skipped:>9}  {FAMILIES[family][0]}")
    total = [sum(t[i] for t in tally.values()) for i in range(3)]
    print(f"{'all':<14}{total[0]:>7}{total[1]:>7}{total[2]:>9}")
    return 0 if total[0] == total[1] else 1


if __name__ == "__main__":
    sys.exit(main())
