"""Kill bisectkit right at every git command it runs; ``reset`` must always recover.

The harness is ``scripts/torture.py`` (a git shim on PATH that stops
bisectkit at its Nth git command); this module runs every kill point of a
short run once, for both strategies, cycling through the ways to die:
SIGKILL before the git command, during it (git goes on and finishes, as a
real checkout does), just after it, and SIGINT/SIGTERM/SIGHUP/SIGQUIT after
it. After each: ``git bisect-patched reset`` exits 0, both repositories are
byte-identical to before (HEADs, branches, ``status --porcelain --ignored``,
file contents), and a fresh run names the right first bad commit. The
script runs every point in every mode and random-delay signals on top.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from torture import STOP_SIGNALS, Scenario, delay_round, git_commands, kill_round, scenarios

MODES = ("after", "during", "before", "signal")


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    return {s.name: s for s in scenarios(tmp_path_factory.mktemp("torture"))}


@pytest.mark.parametrize("name", ["submodule", "integrate"])
def test_kill_at_every_git_command(worlds: dict[str, Scenario], name: str,
                                   tmp_path: Path) -> None:
    scenario = worlds[name]
    total = git_commands(scenario, tmp_path)
    assert total >= 20, "the run should exercise several steps and the restore"
    rounds = []
    for n in range(1, total + 1):
        mode = MODES[n % len(MODES)]
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
    total = git_commands(scenario, tmp_path)
    rounds = [kill_round(scenario, n, MODES[n % 3], tmp_path) for n in range(1, total + 1, 3)]
    bad = [r.describe() for r in rounds if not r.ok]
    assert not bad, "\n".join(bad)
