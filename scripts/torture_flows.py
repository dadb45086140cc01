"""Kill torture beyond a kill at one git command: ``reset`` killed too, and builds that
leave a process behind.

- ``reset-killed``: a run is killed in the middle of a step (SIGKILL while its
  checkout runs), then ``git bisect-patched reset`` is itself stopped at each of
  its git commands (before, during, after, together, by turns); ``reset`` again
  must exit 0 and leave everything as before.
- ``orphan``: the build of step k starts a child that outlives it, ``setsid``
  (its own session and process group) or ``nohup`` (the build's process group,
  deaf to the hang-up), which sleeps and then appends to a tracked file of the
  work tree it was started in; then the build stops bisectkit (SIGKILL, or
  SIGTERM, after which bisectkit restores by itself). After ``reset``, the
  child's sleep is waited out (with a deadline): the state must still be as
  before, i.e. the child must be dead before it wrote.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from torture_cache import forget_cache
from torture_kill import Round, check_answer, settle_round, stopped, unexpected
from torture_shim import shim_log, together_outcome, write_shim
from torture_worlds import Scenario, diff_states, full_state, run_cli, workspace_dirt

#: ``reset`` killed at its Nth git command: the modes, by turns.
RESET_MODES = ("before", "during", "after", "together")
#: How the orphan leaves the build's reach, and how long it sleeps before it writes.
ORPHANS = ("setsid", "nohup")
ORPHAN_SLEEP = 4.0
#: The tracked file the orphan appends to (relative to the work tree it runs in).
ORPHAN_TARGET = "third_party/llvm-project/lib/build.txt"

ORPHAN_BUILD = """#!/bin/sh
# torture: build number {at} leaves a child behind ({how}) that writes into the tree
# {sleep} s later, then stops bisectkit with signal {sig}.
exec 9>>"{count}.lock"
flock 9
n=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "{count}"
exec 9>&-
if [ "$n" -eq {at} ]; then
  {how} sh -c 'echo $$ > "$1"; sleep {sleep}; echo "orphan was here" >> "$2"' orphan \\
    "{pidfile}" "$PWD/{target}" </dev/null >/dev/null 2>&1 &
  i=0
  while [ ! -s "{pidfile}" ] && [ $i -lt 400 ]; do sleep 0.005; i=$((i + 1)); done
  target=$PPID
  while [ "$target" -gt 1 ]; do
    case "$(tr '\\0' ' ' < /proc/$target/cmdline 2>/dev/null)" in
      *python*bisectkit*|*python*bisect-patched*) break ;;
    esac
    target=$(awk '{{print $4}}' /proc/$target/stat 2>/dev/null || echo 1)
  done
  [ "$target" -gt 1 ] && kill -{sig} "$target"
  sleep 5
fi
exec ./build.sh
"""


# -- reset killed ------------------------------------------------------------------------
def first_kill_point(gits: list[str]) -> int:
    """The checkout nearest the middle of a round (a step's work tree half moved)."""
    moves = [i + 1 for i, g in enumerate(gits) if g.startswith("read-tree -m")]
    if not moves:
        return max(1, len(gits) // 2)
    return min(moves, key=lambda n: abs(n - len(gits) / 2))


def reset_log(scenario: Scenario, first: int, tmp: Path) -> list[str]:
    """The git commands ``reset`` runs after the round was killed at git ``first``
    (``scenario``'s world must be a fresh copy: it is left restored)."""
    _kill_run(scenario, first, tmp)
    shim = write_shim(tmp / "count-shim", 0, "none")
    run_cli(scenario.world, "git-bisect-patched", ["reset"], str(shim))
    return shim_log(shim)


def _kill_run(scenario: Scenario, first: int, tmp: Path) -> bool:
    forget_cache(scenario.world)
    shim = write_shim(tmp / "run-shim", first, "during")
    for name, args in scenario.commands:
        if stopped(run_cli(scenario.world, name, args, str(shim)), "during", 0):
            return True
    return False


def reset_round(scenario: Scenario, first: int, k: int, tmp: Path,
                mode: str | None = None) -> Round:
    """Kill the round at git ``first`` (during), then ``reset`` at its git ``k`` (``mode``,
    default :data:`RESET_MODES` by turns); then :func:`settle_round` (``reset`` again,
    compare, run again)."""
    world = scenario.world
    before = full_state(world)
    killed = _kill_run(scenario, first, tmp)
    mode = mode or RESET_MODES[k % len(RESET_MODES)]
    where = tmp / "reset-shim"
    shim = write_shim(where, k, mode, signal.SIGKILL)
    proc = run_cli(world, "git-bisect-patched", ["reset"], str(shim))
    log = shim_log(where)
    label = f"reset-killed: run killed at git #{first}, its reset at git #{k} ({mode}"
    label += f": {log[k - 1][:50]})" if k <= len(log) else ", past its end)"
    result = settle_round(scenario, before, k, label, killed and stopped(proc, mode, 0))
    result.family = "reset-killed"
    result.notes += [x for x in [together_outcome(where)] if x]
    return result


# -- orphans ---------------------------------------------------------------------------
def orphan_round(scenario: Scenario, how: str, at: int, sig: int, tmp: Path) -> Round:
    """Build number ``at`` leaves an orphan (``how``: setsid or nohup) and stops bisectkit
    with ``sig``; reset; the orphan's sleep waited out; compare; run again."""
    world = scenario.world
    before = full_state(world)
    forget_cache(world)
    where = tmp / "orphan"
    where.mkdir(parents=True, exist_ok=True)
    pidfile, count = where / "orphan.pid", where / "count"
    for f in (pidfile, count):
        f.unlink(missing_ok=True)
    build = where / "orphan-build.sh"
    build.write_text(ORPHAN_BUILD.format(at=at, how=how, sleep=ORPHAN_SLEEP, sig=int(sig),
                                         count=count, pidfile=pidfile, target=ORPHAN_TARGET),
                     encoding="utf-8")
    killed = False
    for name, args in scenario.commands:
        args = [f"sh {build}" if a == "./build.sh" else a for a in args]
        if stopped(run_cli(world, name, args), "signal", sig):
            killed = True
            break
    spawned = time.monotonic()
    label = f"orphan ({how}) left by build #{at}, then {signal.Signals(sig).name}"
    result = settle_round(scenario, before, at, label, killed, fresh=False)
    result.family = "orphan"
    text = pidfile.read_text(encoding="utf-8").strip() if pidfile.exists() else ""
    if not text:
        result.notes.append("no orphan was started (the run ended first)")
    elif not _gone(int(text), spawned + ORPHAN_SLEEP + 5):
        _kill_orphan(int(text))
        result.dirty.append(f"the orphan still ran {ORPHAN_SLEEP + 5} s later")
    now = full_state(world)
    result.dirty += [f"{k} (after the orphan's sleep)" for k in unexpected(scenario, before, now)[0]
                     if k not in result.dirty]
    result.dirty += workspace_dirt(world) if scenario.jobs else []
    if not result.dirty and result.reset_rc == 0:
        result.wrong = check_answer(scenario, run_cli(world, "bisectkit", scenario.check))
        if diff_states(now, full_state(world)):
            result.dirty.append("changed by the fresh run")
    return result


def _gone(pid: int, deadline: float) -> bool:
    """Wait until process ``pid`` has ended (or is a zombie); False at ``deadline``."""
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _kill_orphan(pid: int) -> None:
    """The harness's own cleanup: kill the orphan it made, by pid, if that pid is still it."""
    try:
        with open(f"/proc/{pid}/cmdline", encoding="utf-8") as f:
            if "orphan" in f.read():
                os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
