"""Kill bisectkit right at every git command it runs; ``reset`` must always recover.

The harness is ``scripts/torture.py`` (a git shim on PATH that stops
bisectkit at its Nth git command); this module runs a sample of the kill
points of a short run (:func:`sample`: the first git of each kind, then one
git that writes in 24 and one that only reads in 120; every point with
``scripts/attacks.py --family kills --full``), for both
strategies, cycling through the ways to die: SIGKILL before the git command,
during it (git goes on and finishes, as a real checkout does), just after it,
and SIGINT/SIGTERM/SIGHUP/SIGQUIT after it. After each: ``git bisect-patched
reset`` exits 0, both repositories are byte-identical to before (HEADs,
branches, ``status --porcelain --ignored``, file contents), and a fresh run
names the right first bad commit. The script runs every point in every mode
and random-delay signals on top.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from torture import STOP_SIGNALS, Scenario, delay_round, every, kill_round, scenarios
from torture_kill import git_log

MODES = ("after", "during", "before", "signal")
#: One writing git in WRITERS_EVERY and one reading git in READERS_EVERY, besides the first
#: of each kind (every one under torture.FULL_ENV: scripts/attacks.py --full).
WRITERS_EVERY, READERS_EVERY = every(24), every(120)
#: git commands that only read (a kill there leaves what the git before it left).
READERS = frozenset({"status", "ls-files", "cat-file", "rev-parse", "ls-tree", "merge-base",
                     "rev-list"})


def sample(log: list[str], writers_every: int, readers_every: int) -> list[int]:
    """Kill points (1-based) of a run whose gits are ``log``: one writing git in
    ``writers_every`` and one reading git in ``readers_every``, and the first git of each
    kind (``scripts/torture.py`` runs every point). The writers (update-ref, read-tree,
    update-index, ...) are where a kill tears something; a reader is killed too, for
    what the kill of a step's checks or of bisectkit between two gits leaves."""
    points: list[int] = []
    seen = {True: 0, False: 0}
    kinds: set[str] = set()  # the first git of each kind is always a kill point
    for n, line in enumerate(log, 1):
        words = line.split()
        i = 1 if words and words[0].endswith("git") else 0
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] == "-c" else 1
        name = words[i] if i < len(words) else ""
        reads = name in READERS or (name == "config" and any(w.startswith("--get")
                                                                for w in words))
        if seen[reads] % (readers_every if reads else writers_every) == 0 or name not in kinds:
            points.append(n)
        seen[reads] += 1
        kinds.add(name)
    return points


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    return {s.name: s for s in scenarios(tmp_path_factory.mktemp("torture"))}


@pytest.mark.parametrize("name", ["submodule", "integrate"])
def test_kill_at_every_git_command(worlds: dict[str, Scenario], name: str,
                                   tmp_path: Path) -> None:
    scenario = worlds[name]
    log = git_log(scenario, tmp_path)
    assert len(log) >= 20, "the run should exercise several steps and the restore"
    rounds = []
    for i, n in enumerate(sample(log, WRITERS_EVERY, READERS_EVERY)):
        mode = MODES[i % len(MODES)]
        rounds.append(kill_round(scenario, n, mode, tmp_path, STOP_SIGNALS[n % 4]))
    bad = [r.describe() for r in rounds if not r.ok]
    assert not bad, "\n".join(bad)
    # A catchable signal during the final restore is ignored by design (the run then
    # ends normally); every SIGKILL lands.
    assert all(r.killed for r in rounds if r.mode in ("before", "during", "after"))


@pytest.mark.parametrize("name", ["submodule", "integrate"])
def test_signals_at_random_moments(worlds: dict[str, Scenario], name: str) -> None:
    rng = random.Random(name)
    rounds = [delay_round(worlds[name], rng.uniform(0.0, 1.5), sig)
              for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)]
    bad = [r.describe() for r in rounds if not r.ok]
    assert not bad, "\n".join(bad)


def test_kill_during_a_manual_session_and_its_reset(worlds: dict[str, Scenario],
                                                    tmp_path: Path) -> None:
    """start, run and reset as separate commands, killed anywhere (reset included)."""
    scenario = worlds["manual"]
    points = sample(git_log(scenario, tmp_path), WRITERS_EVERY, READERS_EVERY)
    rounds = [kill_round(scenario, n, MODES[i % 3], tmp_path) for i, n in enumerate(points)]
    bad = [r.describe() for r in rounds if not r.ok]
    assert not bad, "\n".join(bad)
