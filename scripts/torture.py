#!/usr/bin/env python3
"""Kill bisectkit at every instant and check that nothing is ever lost.

A git shim first on PATH counts the git commands bisectkit runs and, at the
Nth, kills bisectkit with SIGKILL: before that git runs, while it runs (git
goes on and finishes, as a real checkout does in its own session), or just
after it. Other rounds send SIGINT/SIGTERM/SIGHUP/SIGQUIT at the Nth git
command, or after a random delay. After every kill:

1. ``git bisect-patched reset`` must exit 0 (signals: bisectkit restores by
   itself, and ``reset`` then finds nothing to do);
2. both repositories must be as before, byte for byte: HEADs, branches,
   ``git status --porcelain --ignored``, every file's content;
3. a fresh ``bisectkit run`` (reusing what the killed run cached) must name
   the right first bad commit and restore again.

Worlds: a patched submodule (submodule strategy), an integrate branch
(integrate strategy), and a manual session (``start``, ``run``, ``reset``,
all killed alike), each with an untracked and an ignored file in both
repositories. Usage::

    python3 scripts/torture.py [--modes before,during,after,signal] [--random 40]

Prints kills tried, states left dirty after reset, wrong answers afterwards;
exits 1 if any state was dirty or any answer wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worldgen import SUBMODULE, World, build_integrate_world, build_world  # noqa: E402

from bisectkit.gitcli import argv as git_argv  # noqa: E402

GOOD_IF = "device .* not found"
MODES = ("before", "during", "after")
#: Stop signals the "signal" mode cycles through, by kill number.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

SHIM = """#!/bin/sh
# bisectkit torture shim: count git commands; at the Nth, stop bisectkit.
# The log shows each command without the settings bisectkit pins on every one.
# The count is taken under a lock: with --jobs, worker threads run git at the same time.
exec 9>>"{count}.lock"
flock 9
count=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "{count}"
line="$*"
echo "$count ${{line#{pinned} }}" >> "{count}.log"
exec 9>&-
if [ "$count" -eq {n} ]; then
  # Whom to stop: the nearest ancestor that is bisectkit (our parent, unless a script of
  # bisectkit's runs this git), else our parent.
  target=$PPID
  while [ "$target" -gt 1 ]; do
    case "$(tr '\\0' ' ' < /proc/$target/cmdline 2>/dev/null)" in
      *python*bisectkit*) break ;;
    esac
    target=$(awk '{{print $4}}' /proc/$target/stat 2>/dev/null || echo 1)
  done
  [ "$target" -gt 1 ] || target=$PPID
  case "{mode}" in
    before) kill -9 $target; exit 128 ;;
    during) "{git}" "$@" & pid=$!; kill -9 $target; wait $pid; exit $? ;;
    after) "{git}" "$@"; rc=$?; kill -9 $target; exit $rc ;;
    signal) "{git}" "$@"; rc=$?; kill -{sig} $target; exit $rc ;;
  esac
fi
exec "{git}" "$@"
"""


@dataclass
class Scenario:
    """A world and the commands one round runs in it (the kill may land in any of them)."""

    name: str
    world: World
    #: Each command: (executable, args); run one after the other in the superproject.
    commands: list[tuple[str, list[str]]]
    #: The fresh run that must give the right answer afterwards.
    check: list[str]
    expected: str


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

    @property
    def ok(self) -> bool:
        return self.reset_rc == 0 and not self.dirty and self.wrong is None

    def describe(self) -> str:
        what = "ok" if self.ok else f"reset exit {self.reset_rc}; dirty {self.dirty}; " \
                                    f"wrong {self.wrong}"
        return f"{self.scenario} kill at git #{self.n} ({self.mode}): {what}"


# -- worlds -----------------------------------------------------------------------
def decorate(world: World) -> None:
    """An untracked and an ignored file in each repository: both must survive untouched."""
    for repo in (world.superproject, world.submodule):
        (repo / "my-notes.txt").write_text("untracked notes\n", encoding="utf-8")
        exclude = _git_dir(world, repo) / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("build-out/\n", encoding="utf-8")
        (repo / "build-out").mkdir(exist_ok=True)
        (repo / "build-out" / "cache.bin").write_bytes(b"\0ignored build output\n")


def _git_dir(world: World, repo: Path) -> Path:
    return Path(world.git(repo, "rev-parse", "--absolute-git-dir"))


def run_args(world: World, integrate: bool) -> list[str]:
    if integrate:
        target = ["--integrate", "--good", world.integrate["init"],
                  "--bad", world.integrate["adv12"]]
    else:
        target = ["--submodule", SUBMODULE, "--upstream", "upstream/main",
                  "--good", world.sha(0), "--bad", world.sha(300)]
    return ["run", *target, "--build", "./build.sh", "--good-if", GOOD_IF, "--", "./repro.sh"]


def scenarios(root: Path) -> list[Scenario]:
    """The three worlds, built under ``root``."""
    sub = build_world(root / "submodule")
    integ = build_integrate_world(root / "integrate")
    manual = build_world(root / "manual")
    for w in (sub, integ, manual):
        decorate(w)
    start = ["start", "--submodule", SUBMODULE, "--upstream", "upstream/main", manual.sha(300),
             manual.sha(0)]
    git_run = ["run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh"]
    return [
        Scenario("submodule", sub, [("bisectkit", run_args(sub, False))],
                 run_args(sub, False), sub.sha(200)),
        Scenario("integrate", integ, [("bisectkit", run_args(integ, True))],
                 run_args(integ, True), integ.integrate["adv8"]),
        Scenario("manual", manual, [("git-bisect-patched", start),
                                    ("git-bisect-patched", git_run),
                                    ("git-bisect-patched", ["reset"])],
                 run_args(manual, False), manual.sha(200)),
    ]


# -- state ----------------------------------------------------------------------------
def fingerprint(world: World) -> dict[str, str]:
    """HEADs, branches, status with ignored files, and a digest of every file's content."""
    state: dict[str, str] = {}
    for name, repo in (("super", world.superproject), ("sub", world.submodule)):
        state[f"{name} HEAD"] = world.git(repo, "rev-parse", "HEAD")
        state[f"{name} branch"] = _symbolic(world, repo)
        state[f"{name} status"] = world.git(repo, "status", "--porcelain", "--ignored")
        state[f"{name} index.lock"] = str((_git_dir(world, repo) / "index.lock").exists())
    digest = hashlib.sha256()
    for path in sorted(_files(world.superproject)):
        digest.update(path.encode() + b"\0" + (world.superproject / path).read_bytes())
    state["files"] = digest.hexdigest()
    return state


def _symbolic(world: World, repo: Path) -> str:
    proc = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo, env=world.env,
                          text=True, capture_output=True)
    return proc.stdout.strip() or "(detached)"


def _files(top: Path) -> list[str]:
    found = []
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if name == ".git":
                continue
            found.append(str(Path(dirpath, name).relative_to(top)))
    return found


def diff_states(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [k for k in before if before[k] != after.get(k)]


# -- running -------------------------------------------------------------------------------
def _exe(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not installed (pip install -e .)")
    return found


def _run(world: World, exe: str, args: Sequence[str], path_prefix: str | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(world.env)
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([_exe(exe), *args], cwd=world.superproject, env=env, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def write_shim(where: Path, n: int, mode: str, sig: int = signal.SIGINT) -> Path:
    """A ``git`` for PATH that stops bisectkit at its ``n``-th git command (0: never)."""
    where.mkdir(parents=True, exist_ok=True)
    count = where / "count"
    count.unlink(missing_ok=True)
    count.with_name("count.log").unlink(missing_ok=True)
    real = shutil.which("git")
    assert real is not None
    shim = where / "git"
    pinned = " ".join(git_argv()[1:])
    shim.write_text(SHIM.format(count=count, n=n, mode=mode, git=real, sig=int(sig),
                                pinned=pinned),
                    encoding="utf-8")
    shim.chmod(0o755)
    return where


def git_commands(scenario: Scenario, tmp: Path) -> int:
    """How many git commands one undisturbed round runs (the kill points)."""
    _forget_cache(scenario.world)
    shim = write_shim(tmp / "count-shim", 0, "none")
    for exe, args in scenario.commands:
        _run(scenario.world, exe, args, str(shim))
    return int((shim / "count").read_text())


def _forget_cache(world: World) -> None:
    """Every round starts from an empty verdict cache, so it runs every git command."""
    (world.superproject / ".git" / "bisectkit" / "verdicts.json").unlink(missing_ok=True)


def kill_round(scenario: Scenario, n: int, mode: str, tmp: Path,
               sig: int = signal.SIGINT) -> Round:
    """Stop bisectkit at git command ``n`` (``mode``), then reset, compare, run again."""
    world = scenario.world
    before = fingerprint(world)
    _forget_cache(world)
    shim = write_shim(tmp / "shim", n, mode, sig)
    killed = False
    for exe, args in scenario.commands:
        proc = _run(world, exe, args, str(shim))
        if proc.returncode in (-signal.SIGKILL, 128 + sig) or (
                mode == "signal" and proc.returncode == -sig):
            killed = True
            break
    self_restored = mode == "signal" and scenario.commands[0][0] == "bisectkit"
    early = diff_states(before, fingerprint(world)) if self_restored else []
    result = _after(scenario, before, n, mode if mode != "signal" else
                    f"signal {signal.Signals(sig).name}", killed)
    # A one-shot run restores by itself on a catchable signal: no reset needed.
    result.dirty = sorted(set(result.dirty) | {f"{d} (before reset)" for d in early})
    return result


def delay_round(scenario: Scenario, delay: float, sig: int) -> Round:
    """Send ``sig`` to bisectkit's process group ``delay`` seconds into a one-shot run."""
    world = scenario.world
    before = fingerprint(world)
    _forget_cache(world)
    proc = subprocess.Popen([_exe("bisectkit"), *scenario.check], cwd=world.superproject,
                            env=world.env, text=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    time.sleep(delay)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, sig)
    proc.wait(timeout=120)
    mode = f"{signal.Signals(sig).name} after {delay:.2f} s"
    # bisectkit restores by itself on a signal: compare before any reset.
    dirty = diff_states(before, fingerprint(world))
    result = _after(scenario, before, 0, mode, killed)
    result.dirty = sorted(set(result.dirty) | {f"{d} (before reset)" for d in dirty})
    return result


def _after(scenario: Scenario, before: dict[str, str], n: int, mode: str,
           killed: bool) -> Round:
    world = scenario.world
    reset = _run(world, "git-bisect-patched", ["reset"])
    result = Round(scenario.name, n, mode, killed, reset.returncode)
    if reset.returncode != 0:
        result.wrong = f"reset said: {reset.stderr.strip()}"
    result.dirty = diff_states(before, fingerprint(world))
    if result.dirty:
        return result
    fresh = _run(world, "bisectkit", scenario.check)
    line = f"{scenario.expected} is the first bad commit"
    if fresh.returncode != 0 or line not in fresh.stdout.splitlines():
        tail = (fresh.stdout + fresh.stderr).strip().splitlines()[-3:]
        result.wrong = f"fresh run exit {fresh.returncode}: {' | '.join(tail)}"
    result.dirty = diff_states(before, fingerprint(world))
    return result


def with_jobs(scenario: Scenario, jobs: int = 2) -> Scenario:
    """``scenario`` run as ``--jobs`` (one-shot worlds only): every step in a workspace."""
    args = [*scenario.check[:-2], "--jobs", str(jobs), "--no-cache", "--", "./repro.sh"]
    return Scenario(f"{scenario.name} --jobs {jobs}", scenario.world, [("bisectkit", args)],
                    args, scenario.expected)


def workspace_dirt(world: World) -> list[str]:
    """Tracked changes left in any workspace (superproject or submodule) of ``world``."""
    root = world.superproject / ".git" / "bisectkit" / "workspaces"
    dirt = []
    for ws in sorted(p for p in root.glob("ws-*") if p.is_dir() and not p.suffix):
        for repo in (ws, ws / SUBMODULE):
            proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                                   "--ignore-submodules=all"], cwd=repo, env=world.env,
                                  text=True, capture_output=True)
            if proc.returncode != 0 or proc.stdout:
                dirt.append(f"workspace {repo.relative_to(root)}: "
                            f"{(proc.stdout + proc.stderr).strip()[:200]}")
    return dirt


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
        before = fingerprint(world)
        proc = _run(world, "bisectkit", scenario.commands[0][1], str(write_shim(tmp / "shim",
                                                                              n, mode, sig)))
        again = _run(world, "bisectkit", scenario.check)
        result = _after(scenario, before, n, f"{mode}, run again without reset",
                        proc.returncode == -signal.SIGKILL)
        line = f"{scenario.expected} is the first bad commit"
        refused = again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
        if not refused and (again.returncode != 0 or line not in again.stdout.splitlines()):
            tail = (again.stdout + again.stderr).strip().splitlines()[-3:]
            result.wrong = f"run without reset exit {again.returncode}: {' | '.join(tail)}"
    if fresh_workspaces:
        result.mode += ", workspaces removed first"
    result.dirty += workspace_dirt(world)
    return result


def torture(scenario: Scenario, tmp: Path, modes: Sequence[str],
            report: Callable[[Round], None], every: int = 1) -> list[Round]:
    """Every kill point of ``scenario`` in every mode (``every``: one point in so many)."""
    total = git_commands(scenario, tmp)
    rounds = []
    for mode in modes:
        for n in range(1, total + 1, every):
            sig = STOP_SIGNALS[n % len(STOP_SIGNALS)]
            r = kill_round(scenario, n, mode, tmp, sig)
            report(r)
            rounds.append(r)
    return rounds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="before,during,after,signal",
                        help="kill modes at each git command (default: all four)")
    parser.add_argument("--random", type=int, default=40, metavar="N",
                        help="signals at random delays into a run, per world (default 40)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per kill")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    rng = random.Random(args.seed)
    rounds: list[Round] = []

    def report(r: Round) -> None:
        if args.verbose or not r.ok:
            print(r.describe(), flush=True)

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bisectkit-torture-") as tmp:
        for sc in scenarios(Path(tmp)):
            rounds += torture(sc, Path(tmp), modes, report)
            if sc.name == "manual":
                continue
            for _ in range(args.random):
                r = delay_round(sc, rng.uniform(0.0, 2.0), rng.choice(STOP_SIGNALS))
                report(r)
                rounds.append(r)
    killed = [r for r in rounds if r.killed]
    dirty = [r for r in rounds if r.dirty or r.reset_rc != 0]
    wrong = [r for r in rounds if r.wrong is not None and not r.dirty]
    print(f"kills tried: {len(rounds)} ({len(killed)} landed while bisectkit ran; "
          f"{', '.join(modes)}, plus {args.random} random-delay signals per one-shot world)")
    print(f"states left dirty after reset: {len(dirty)}")
    print(f"wrong answers afterwards: {len(wrong)}")
    print(f"took {time.monotonic() - started:.0f} s")
    return 1 if dirty or wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
