"""Rounds of the kill torture: stop bisectkit at its Nth git command (the shim of
:mod:`torture_shim`), then check that ``reset`` brings everything back.

Each round optionally keeps the verdict cache the world already has (the
killed run then mixes cached and tested steps) and damages ``verdicts.json``
after the kill (:mod:`torture_cache`). After the kill (:func:`settle_round`):
``git bisect-patched reset`` exits 0, the state is as before (or, for
``advance --apply``, exactly what an undisturbed apply leaves), a fresh run
names the right first bad commit, and the state is unchanged by it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torture_cache import DAMAGES, damage_cache, forget_cache, seed_cache
from torture_shim import shim_log, together_outcome, write_shim
from torture_worlds import (
    Scenario,
    diff_states,
    exe,
    full_state,
    run_cli,
    workspace_dirt,
)

#: The SIGKILL modes at a git command.
MODES = ("before", "during", "after")
#: Stop signals the "signal" mode cycles through, by kill number.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
#: The modes that stop bisectkit at its Nth git command (:func:`point_round`).
POINT_MODES = ("before", "during", "after", "signal", "together", "cache-kept",
               "cache-damaged")


@dataclass
class Round:
    """What one kill did and left behind."""

    scenario: str
    n: int
    mode: str
    killed: bool
    reset_rc: int
    dirty: list[str] = field(default_factory=list)
    wrong: str | None = None
    #: The summary's column (the mode without its details); the mode when empty.
    family: str = ""
    #: What else happened (the apply finished, git paused holding its locks, ...).
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reset_rc == 0 and not self.dirty and self.wrong is None

    def describe(self) -> str:
        what = "ok" if self.ok else f"reset exit {self.reset_rc}; dirty {self.dirty}; " \
                                    f"wrong {self.wrong}"
        notes = f" [{'; '.join(self.notes)}]" if self.notes else ""
        where = f" kill at git #{self.n}" if self.family in ("", *POINT_MODES) else ""
        return f"{self.scenario}{where} ({self.mode}): {what}{notes}"


# -- rounds ----------------------------------------------------------------------------
def git_commands(scenario: Scenario, tmp: Path, keep_cache: bool = False) -> int:
    """How many git commands one undisturbed round runs (the kill points)."""
    return len(git_log(scenario, tmp, keep_cache))


def git_log(scenario: Scenario, tmp: Path, keep_cache: bool = False) -> list[str]:
    """The git commands one undisturbed round runs, in order (in the scenario's world)."""
    if not keep_cache:
        forget_cache(scenario.world)
    shim = write_shim(tmp / "count-shim", 0, "none")
    for name, args in scenario.commands:
        proc = run_cli(scenario.world, name, args, str(shim))
        if proc.returncode != 0:
            raise RuntimeError(f"{scenario.name}: {name} {args[0]} exit {proc.returncode} "
                               f"undisturbed:\n{proc.stdout}{proc.stderr}")
    return shim_log(shim)


def stopped(proc: subprocess.CompletedProcess[str], mode: str, sig: int) -> bool:
    """Whether a command of the round was stopped by the kill."""
    return proc.returncode in (-signal.SIGKILL, 128 + sig) or (
        mode == "signal" and proc.returncode == -sig)


def kill_round(scenario: Scenario, n: int, mode: str, tmp: Path,
               sig: int = signal.SIGINT, keep_cache: bool = False,
               damage: str | None = None) -> Round:
    """Stop bisectkit at git command ``n`` (``mode``), then reset, compare, run again.

    ``keep_cache``: the killed run starts from the cache the world has (else none);
    ``damage``: then damage ``verdicts.json`` (:data:`DAMAGES`) before ``reset``.
    """
    world = scenario.world
    before = full_state(world)
    if not keep_cache:
        forget_cache(world)
    where = tmp / "shim"
    shim = write_shim(where, n, mode, sig)
    killed = False
    for name, args in scenario.commands:
        if stopped(run_cli(world, name, args, str(shim)), mode, sig):
            killed = True
            break
    label = mode if mode != "signal" else f"signal {signal.Signals(sig).name}"
    notes = [x for x in [together_outcome(where)] if x]
    # A one-shot run restores by itself on a catchable signal: compare before any reset.
    self_restored = mode == "signal" and scenario.commands[0][0] == "bisectkit"
    early = unexpected(scenario, before, full_state(world))[0] if self_restored else []
    if damage is not None:
        notes.append(damage_cache(world, damage))
        label += f", cache {damage}"
    log = shim_log(where)
    result = settle_round(scenario, before, n, label, killed)
    result.notes[:0] = notes
    if mode == "together" and n <= len(log):
        result.notes.append(f"git {log[n - 1][:60]}")
    result.dirty = sorted(set(result.dirty) | {f"{d} (before reset)" for d in early})
    return result


def delay_round(scenario: Scenario, delay: float, sig: int) -> Round:
    """Send ``sig`` to bisectkit's process group ``delay`` seconds into a one-shot run."""
    world = scenario.world
    before = full_state(world)
    forget_cache(world)
    proc = subprocess.Popen([exe("bisectkit"), *scenario.commands[0][1]],
                            cwd=world.superproject, env=world.env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    time.sleep(delay)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, sig)
    proc.wait(timeout=120)
    mode = f"{signal.Signals(sig).name} after {delay:.2f} s"
    # bisectkit restores by itself on a catchable signal: compare before any reset.
    dirty = (unexpected(scenario, before, full_state(world))[0]
             if sig != signal.SIGKILL else [])
    result = settle_round(scenario, before, 0, mode, killed)
    result.family = "random"
    result.dirty = sorted(set(result.dirty) | {f"{d} (before reset)" for d in dirty})
    return result


def unexpected(scenario: Scenario, before: dict[str, str],
               now: dict[str, str]) -> tuple[list[str], str]:
    """What differs from ``before`` and should not; a note when the state is the one an
    undisturbed ``advance --apply`` leaves (finished, not half done)."""
    dirty = diff_states(before, now)
    if dirty and scenario.applied is not None and not diff_states(scenario.applied, now):
        return [], "the apply was finished"
    return dirty, ""


def settle_round(scenario: Scenario, before: dict[str, str], n: int, mode: str,
                 killed: bool, fresh: bool = True) -> Round:
    """``reset``, compare with ``before``, run the check again (``fresh``), compare again."""
    world = scenario.world
    reset = run_cli(world, "git-bisect-patched", ["reset"])
    result = Round(scenario.name, n, mode, killed, reset.returncode,
                   family=mode.split(" ")[0].rstrip(","))
    if reset.returncode != 0:
        result.wrong = f"reset said: {reset.stderr.strip()}"
    result.dirty, note = unexpected(scenario, before, full_state(world))
    if note:
        result.notes.append(note)
    if result.dirty or not fresh:
        result.dirty += workspace_dirt(world) if scenario.jobs and fresh else []
        return result
    restored = full_state(world)
    problem = check_answer(scenario, run_cli(world, "bisectkit", scenario.check))
    if problem:
        result.wrong = problem
    result.dirty = [f"{d} (after the fresh run)" for d in diff_states(restored,
                                                                       full_state(world))]
    result.dirty += workspace_dirt(world) if scenario.jobs else []
    return result


def check_answer(scenario: Scenario, proc: subprocess.CompletedProcess[str]) -> str | None:
    """What is wrong with a fresh run's answer (None: exit 0 naming the expected commit)."""
    line = f"{scenario.expected} is the first bad commit"
    if proc.returncode == 0 and line in proc.stdout.splitlines():
        return None
    named = [x for x in proc.stdout.splitlines() if x.endswith("is the first bad commit")]
    if named:
        return f"fresh run exit {proc.returncode} named {named[0].split()[0][:12]}, not " \
               f"{scenario.expected[:12]}"
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    return f"fresh run exit {proc.returncode}: {' | '.join(tail)}"


def parallel_round(scenario: Scenario, n: int, mode: str, tmp: Path,
                   sig: int = signal.SIGINT, fresh_workspaces: bool = False,
                   no_reset: bool = False) -> Round:
    """:func:`kill_round` for a ``--jobs`` run: the workspaces must end clean too.

    ``fresh_workspaces``: remove them first, so the kill may land while one is cloned.
    ``no_reset``: after a SIGKILL, run again at once: a one-line refusal (exit 2) or the
    right answer, never a wrong one.
    """
    world = scenario.world
    if fresh_workspaces:
        shutil.rmtree(world.superproject / ".git" / "bisectkit" / "workspaces",
                      ignore_errors=True)
    if not no_reset:
        result = kill_round(scenario, n, mode, tmp, sig)
    else:
        before = full_state(world)
        proc = run_cli(world, "bisectkit", scenario.commands[0][1],
                       str(write_shim(tmp / "shim", n, mode, sig)))
        again = run_cli(world, "bisectkit", scenario.check)
        result = settle_round(scenario, before, n, f"{mode}, run again without reset",
                              proc.returncode == -signal.SIGKILL)
        refused = again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
        if not refused and check_answer(scenario, again) is not None:
            result.wrong = f"run without reset: {check_answer(scenario, again)}"
    if fresh_workspaces:
        result.mode += ", workspaces removed first"
    if not scenario.jobs:
        result.dirty += workspace_dirt(world)
    return result


def point_round(scenario: Scenario, mode: str, n: int, tmp: Path,
                partial: dict[str, object] | None = None, turn: int | None = None) -> Round:
    """One round of a git-point mode (before, during, after, signal, together,
    cache-kept, cache-damaged) at kill point ``n``, in ``scenario``'s world as it is.

    ``turn`` (default ``n``) picks the signal (signal mode), or for the cache modes the
    SIGKILL mode (before, during, after) and the damage (:data:`DAMAGES`), by turns. The
    cache modes start from the ``partial`` cache (``torture.partial_cache``, made in this
    world: the key holds the world's paths, a copy elsewhere misses)."""
    turn = n if turn is None else turn
    sig = STOP_SIGNALS[turn % len(STOP_SIGNALS)]
    if mode in ("cache-kept", "cache-damaged"):
        seed_cache(scenario.world, partial or {})
        damage = DAMAGES[turn % len(DAMAGES)] if mode == "cache-damaged" else None
        r = kill_round(scenario, n, MODES[turn % len(MODES)], tmp, signal.SIGKILL,
                       keep_cache=True, damage=damage)
        r.mode = f"{mode}: {r.mode}"
        r.family = mode
        return r
    return kill_round(scenario, n, mode, tmp, sig)


def sweep_points(total: int, every: int) -> list[int]:
    """Kill points 1..``total``, one in ``every``; the last one always (the restore)."""
    return sorted(set(range(1, total + 1, every)) | ({total} if total else set()))


def describe_all(rounds: Sequence[Round]) -> str:
    """One line per round that is not ok (for a test's assertion message)."""
    return "\n".join(r.describe() for r in rounds if not r.ok)
