#!/usr/bin/env python3
"""LLVM-scale benchmark: bisectkit's manual flow against plain ``git bisect``, interleaved.

For each world (``--worlds COMMITSxFILES,...``: scripts/bench.py's generator,
a 3-patch stack: a revert, a cherry-pick -x of a later upstream fix, a local
fixup; the merge-base, i.e. the pin, at 80% of upstream history) and each
range (``--ranges N,...``: candidates between good and bad), it runs
``--repeat`` times, interleaved (bisectkit, git bisect, bisectkit, ...):

- bisectkit's manual flow in the superproject: ``git bisect-patched start
  --submodule third_party/llvm-project --upstream upstream/main BAD GOOD``,
  ``git bisect-patched run --build BUILD --json FILE -- REPRO``,
  ``git bisect-patched reset``;
- plain ``git bisect start BAD GOOD``, ``git bisect run STEP``, ``git bisect
  reset`` in a clone of upstream checked out at the merge-base (unpatched).

The build is ``sync``; the repro is bad when ``bug/bug.txt`` says miscompile
(bench.py's). It prints min and median of every phase and a table of ratios
bisectkit / git bisect with PASS/FAIL against issue 29's thresholds: start
<= 2x, orchestration <= 2x (ranges under 5,000) and <= 1.3x (5,000 and
more), peak RSS <= 1.5x (ratios of the medians), files written = the true
diff at every step, and both answers = the commit that brought the bug, in
every repeat. It exits 0 when every row passes.

Placement (``--placement``). ``pin`` (the default): bad is the merge-base and
good is RANGE commits below it, the bug 30 commits below the merge-base (a
regression found at the pin after an integrate), so the first checkout and
the reset write about RANGE files: start-up and per-process costs show.
``far``: bench.py's bug at 37% of history and the range around it; the first
checkout and the reset then rewrite about half of the tree for both tools.

Worlds are cached in ``--cache DIR`` (default ~/.cache/bisectkit-bench-scale),
keyed by commits, files, the bug's commit, ``--commit-graph`` and a hash of
the generator's source (bench.py's ``Shape``, ``fast_import_stream``,
``build_world`` and this script's additions); ``COMPLETE.json`` is written
last (after a sync) and checked at load (the commit list, the packs' sizes);
an entry without it is rebuilt. A ``--commit-graph`` world is derived from the
cached world without one when there is one (hard-linked, then the commit-graphs
written: seconds, not a rebuild). A cached world is never run in: each tool
runs in its own copy of it (the superproject, or the upstream clone), made
once per world with ``cp -a`` and put back before every trial, outside the
timed sections: its git dir replaced by the cache's (packs hardlinked: git
writes new packs, never into one), the indexes refreshed (a user's checkout
has a fresh index) and every HEAD, index entry and file, ignored ones too,
checked against the cache (``git status --ignored``; a copy that differs is
copied again), then ``sync``. On this 2-core machine a ``cp -a`` of 150,000
files took 7 s idle and 75-150 s while other work ran; putting back takes a
few seconds. A trial therefore starts from the state a fresh copy has, and
what a tool leaves behind (a verdict cache, a commit-graph) never reaches
the next trial.

Python's bytecode: where the environment forbids writing it
(``PYTHONDONTWRITEBYTECODE``), every bisectkit process compiled its modules again
(0.1-0.15 s a process), which an installed bisectkit never does; the benchmark
gives the processes a bytecode cache of its own (``PYTHONPYCACHEPREFIX``, a
temporary folder), filled before the first trial.

What is measured:
- each phase is one process: wall time from spawn to reap (``os.wait4``);
- peak RSS: ``ru_maxrss`` from ``os.wait4``, the largest resident set of any
  one process among the phase's process and the descendants it waited for
  (git, the build, the repro): not a sum of processes running at once;
- orchestration = start + run + reset minus the build and repro time. The
  step scripts record their own duration with bash's ``$EPOCHREALTIME``
  (no fork) on their first and last line. In place, not measured apart as
  bench.py does, because ``sync``'s cost depends on what the checkout just
  wrote, which a separate run would not see. Left in orchestration: starting
  bash (about 1 ms; bisectkit runs two scripts per step, build and repro, git
  one) and what the tools themselves do;
- files written: bisectkit's ``--json`` ``files_written`` per step against
  the true diff between consecutive tested patched trees (bench.py's
  ``true_diff``); git's files are those between consecutive tested commits.

``--bisectkit [LABEL=]CMD|DIR`` (repeatable, each interleaved with the
others): CMD is a command line that acts as ``git bisect-patched`` (e.g. a
shell shim); DIR a bisectkit source tree, run as ``python3 -c
'...git_main()'`` with PYTHONPATH=DIR. The default is this Python's
``bisectkit.app.git_main`` (PYTHONPATH as given). A before/after table:

    git worktree add --detach /tmp/bk-before <old commit>
    python3 scripts/bench_scale.py --bisectkit before=/tmp/bk-before --bisectkit after=.

Usage: python3 scripts/bench_scale.py [--worlds 100000x150000,550000x150000]
    [--ranges 100,5000] [--repeat 3] [--cache DIR] [--placement pin|far]
    [--commit-graph] [--bisectkit [LABEL=]CMD|DIR]... [--json OUT]
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import bench
from bench import Shape, build_world, changed, true_diff
from worldgen import SUBMODULE, git, hermetic_env

GIT_MAIN = "import sys; from bisectkit.app import git_main; sys.exit(git_main())"
BUG_BELOW_PIN = 30
GIT = "git bisect"
# Runs a phase's command and writes its wall time, peak RSS and CPU time. A process forked
# from this benchmark (hundreds of MB once it has built a world) would start with that RSS as its
# ru_maxrss; this small interpreter's (about 8 MB) is the floor instead.
RUSAGE = """import os, sys, time
t = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t
with open(sys.argv[1], "w") as f:
    f.write(f"{wall} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime}")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""
# The step scripts: LOG is replaced by the trial's log file.
BUILD_SH = """#!/bin/bash
t0=$EPOCHREALTIME
sync
echo "build $t0 $EPOCHREALTIME" >> LOG
"""
REPRO_SH = """#!/bin/bash
t0=$EPOCHREALTIME
if grep -q miscompile "${1:-third_party/llvm-project}/bug/bug.txt"; then rc=1; else rc=0; fi
echo "repro $t0 $EPOCHREALTIME" >> LOG
exit $rc
"""
STEP_SH = """#!/bin/bash
t0=$EPOCHREALTIME
sync
if grep -q miscompile bug/bug.txt; then rc=1; else rc=0; fi
echo "step $t0 $EPOCHREALTIME" >> LOG
exit $rc
"""


# ---------------------------------------------------------------- worlds


@dataclass
class ScaleWorld:
    """A cached world: bench.py's, plus ``plain`` (upstream cloned, at the merge-base)."""

    root: Path
    shape: Shape
    shas: list[str]
    patched_head: str
    build_s: float
    cached: bool

    @property
    def name(self) -> str:
        return f"{self.shape.commits}x{self.shape.files}"

    @property
    def superproject(self) -> Path:
        return self.root / "superproject"

    @property
    def plain(self) -> Path:
        return self.root / "plain"

    @property
    def upstream(self) -> Path:
        return self.root / "upstream"

    @property
    def merge_base(self) -> str:
        return self.shas[self.shape.merge_base]


def _prepare(root: Path, shape: Shape, commit_graph: bool) -> tuple[list[str], str]:
    """Build bench.py's world under ``root`` and what this benchmark adds to it."""
    w = build_world(root, shape)
    plain = root / "plain"
    git(w.env, root, "clone", "-q", "--no-checkout", str(w.upstream), str(plain))
    git(w.env, plain, "checkout", "-q", "--detach", w.merge_base)
    if commit_graph:
        for repo in (w.submodule, plain):
            git(w.env, repo, "commit-graph", "write", "--reachable")
    return w.shas, w.patched_head


def _derive_commit_graph(plain: ScaleWorld, root: Path) -> tuple[list[str], str]:
    """The ``--commit-graph`` world made from the cached world without one (building the
    550,000-commit world takes 14 minutes): a copy, every file hard-linked (a cached world
    is never written in; what git writes, it writes as new files), then _prepare's own
    ``git commit-graph write --reachable`` in the submodule and the upstream clone. The
    same repositories _prepare would have built, plus the same files."""
    subprocess.run(["cp", "-al", str(plain.root), str(root)], check=True)
    for name in ("COMPLETE.json", "COMPLETE.json.tmp", "shas.txt"):
        (root / name).unlink(missing_ok=True)
    (root / "home" / ".gitconfig").unlink(missing_ok=True)  # a link: written anew here
    env = hermetic_env(root / "home")
    for repo in (root / "superproject" / SUBMODULE, root / "plain"):
        git(env, repo, "commit-graph", "write", "--reachable")
    return plain.shas, plain.patched_head


def generator_version() -> str:
    """A hash of the source that decides what a world holds: a change rebuilds it."""
    parts = [inspect.getsource(o) for o in (Shape, bench.fast_import_stream, build_world,
                                            _prepare, hermetic_env)]
    return hashlib.sha256("".join(parts + [bench.REPRO, bench.BUILD]).encode()).hexdigest()[:12]


def world_key(shape: Shape, commit_graph: bool) -> str:
    cg = "-cg" if commit_graph else ""
    return f"w{shape.commits}x{shape.files}-bug{shape.bug}{cg}-{generator_version()}"


def _packs(root: Path) -> dict[str, int]:
    """Pack files of the world's repositories and their sizes (checked at load)."""
    return {str(p.relative_to(root)): p.stat().st_size
            for p in sorted(root.glob("**/objects/pack/*.pack"))}


def _load(root: Path, key: str) -> ScaleWorld | None:
    """The cached world at ``root``, or None when it is incomplete or not this key's."""
    try:
        marker = json.loads((root / "COMPLETE.json").read_text())
        shas = (root / "shas.txt").read_text().split()
    except (OSError, ValueError):
        return None
    shape = Shape(**marker["shape"])
    if marker.get("key") != key or len(shas) != shape.commits + 1:
        return None
    if _packs(root) != marker["packs"]:
        return None
    return ScaleWorld(root, shape, shas, marker["patched_head"], marker["build_s"], True)


def ensure_world(cache: Path, shape: Shape, commit_graph: bool) -> ScaleWorld:
    """The world of ``shape`` from the cache, built (and cached) when missing."""
    key = world_key(shape, commit_graph)
    root = cache / key
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{key}.lock", "w") as lock:
        # Two benchmarks sharing a cache: the second waits for the first's build.
        fcntl.flock(lock, fcntl.LOCK_EX)
        world = _load(root, key)
        if world is not None:
            return world
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        plain = _load(cache / world_key(shape, False), world_key(shape, False)) \
            if commit_graph else None
        if plain is not None:
            shas, patched = _derive_commit_graph(plain, root)
        else:
            root.mkdir()
            shas, patched = _prepare(root, shape, commit_graph)
        build_s = time.perf_counter() - t
        (root / "shas.txt").write_text("\n".join(shas) + "\n")
        os.sync()
        marker = {"key": key, "shape": asdict(shape), "patched_head": patched,
                  "build_s": build_s, "built": time.strftime("%Y-%m-%d %H:%M:%S"),
                  "packs": _packs(root),
                  "derived_from": str(plain.root) if plain is not None else None}
        tmp = root / "COMPLETE.json.tmp"
        tmp.write_text(json.dumps(marker, indent=1))
        os.replace(tmp, root / "COMPLETE.json")
        return ScaleWorld(root, shape, shas, patched, build_s, False)


def place(shape: Shape, rng: int, placement: str) -> tuple[int, int]:
    """(good, bad) upstream commit numbers of a range of ``rng`` candidates."""
    if placement == "pin":
        good, bad = shape.merge_base - rng, shape.merge_base
    else:
        good = shape.bug - max(2, rng // 3)
        bad = good + rng
    if good < 0 or bad > shape.merge_base or not good + 2 <= shape.bug < bad:
        raise SystemExit(f"bench_scale: range {rng} does not fit {shape.commits} commits "
                         f"with the bug at {shape.bug} (merge-base {shape.merge_base})")
    return good, bad


def make_shape(commits: int, files: int, placement: str) -> Shape:
    shape = Shape(commits, files)
    if placement == "pin":
        shape = Shape(commits, files, bug_at=shape.merge_base - BUG_BELOW_PIN)
    if shape.bug in (0, shape.reverted, shape.picked) or shape.bug >= shape.merge_base:
        raise SystemExit(f"bench_scale: {commits} commits is too few for this placement")
    return shape


# ---------------------------------------------------------------- trials


@dataclass
class Phase:
    wall_s: float
    maxrss_kb: int
    cpu_s: float
    rc: int


@dataclass
class Trial:
    tool: str
    world: str
    range: int
    repeat: int
    copy_s: float = 0.0
    copy: str = ""
    phases: dict[str, Phase] = field(default_factory=dict)
    step_s: float = 0.0
    steps: int = 0
    answer: str = ""
    expected: str = ""
    files: list[int] = field(default_factory=list)
    true_diff: list[int] = field(default_factory=list)
    # bisectkit's own figure per step: replaying the stack and checking out.
    prepare_s: list[float] = field(default_factory=list)
    restored: bool = True
    error: str = ""

    @property
    def orchestration_s(self) -> float:
        return sum(p.wall_s for p in self.phases.values()) - self.step_s

    def wall(self, phase: str) -> float:
        return self.phases[phase].wall_s if phase in self.phases else float("nan")

    @property
    def run_orchestration_s(self) -> float:
        return self.wall("run") - self.step_s

    @property
    def peak_rss_mb(self) -> float:
        return max((p.maxrss_kb for p in self.phases.values()), default=0) / 1024

    @property
    def start_rss_mb(self) -> float:
        return self.phases["start"].maxrss_kb / 1024 if "start" in self.phases else 0.0

    @property
    def ok(self) -> bool:
        return not self.error and self.answer == self.expected and self.restored


def run_phase(argv: Sequence[str], cwd: Path, env: dict[str, str], out: Path) -> Phase:
    """Run one phase's process under RUSAGE: its wall time and its rusage."""
    res = out.with_suffix(".rusage")
    with open(out, "ab") as f:
        f.write(f"$ {shlex.join(argv)}\n".encode())
        f.flush()
        rc = subprocess.run([sys.executable, "-I", "-S", "-c", RUSAGE, str(res), *argv],
                            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=f,
                            stderr=subprocess.STDOUT).returncode
    try:
        wall, rss, cpu = res.read_text().split()
    except (OSError, ValueError):  # the command could not be started
        return Phase(float("nan"), 0, 0.0, rc)
    finally:
        res.unlink(missing_ok=True)
    return Phase(float(wall), int(rss), float(cpu), rc)


def step_time(log: Path) -> tuple[float, int]:
    """Seconds the step scripts took by their own clocks, and how many repros ran."""
    total, repros = 0.0, 0
    lines = log.read_text().splitlines() if log.exists() else []
    for line in lines:
        kind, t0, t1 = line.split()
        total += float(t1) - float(t0)
        repros += kind != "build"
    return total, repros


def scripts(tdir: Path) -> dict[str, Path]:
    """The trial's build, repro and git step scripts, logging to ``tdir/steps.log``."""
    out = {}
    for name, text in (("build", BUILD_SH), ("repro", REPRO_SH), ("step", STEP_SH)):
        path = tdir / f"{name}.sh"
        path.write_text(text.replace("LOG", shlex.quote(str(tdir / "steps.log"))))
        path.chmod(0o755)
        out[name] = path
    return out


@dataclass
class Checkout:
    """A copy of one of the cached world's checkouts (the superproject, or the upstream
    clone), made once and put back in the cached state before every trial."""

    src: Path
    dest: Path
    heads: dict[str, str]  # repository (relative to the checkout) -> its HEAD in the cache

    @classmethod
    def of(cls, src: Path, dest: Path, repos: Sequence[str]) -> Checkout:
        env = hermetic_env(dest.parent / "home")
        return cls(src, dest, {r: git(env, src / r, "rev-parse", "HEAD") for r in repos})

    def ready(self) -> tuple[float, str]:
        """Make the copy equal to the cache; (seconds, 'restored' or 'copied')."""
        t = time.perf_counter()
        env = hermetic_env(self.dest.parent / "home")
        how = "restored"
        if not (self.dest.exists() and self._put_back(env)):
            how = "copied"
            shutil.rmtree(self.dest, ignore_errors=True)
            subprocess.run(["cp", "-a", str(self.src), str(self.dest)], check=True)
            if not self._refreshed_and_clean(env):
                raise RuntimeError(f"a copy of {self.src} differs from it")
        # What the copy wrote must not be flushed during a timed section.
        os.sync()
        return time.perf_counter() - t, how

    def _put_back(self, env: dict[str, str]) -> bool:
        """The git dir from the cache (packs hardlinked: git never writes into a pack), the
        work tree checked against it; False when the work tree is not the cached one."""
        try:
            shutil.rmtree(self.dest / ".git")
            shutil.copytree(self.src / ".git", self.dest / ".git", symlinks=True,
                            copy_function=_link_packs)
        except OSError:
            return False
        return self._refreshed_and_clean(env)

    def _refreshed_and_clean(self, env: dict[str, str]) -> bool:
        """Refresh the indexes (the copy's inodes and ctimes are not the cache's: a user's
        checkout has a fresh index) and check HEADs, index and every file, ignored ones too."""
        for rel, head in self.heads.items():
            repo = self.dest / rel
            subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo, env=env,
                           capture_output=True)
            status = subprocess.run(["git", "status", "--porcelain", "--ignored",
                                     "--untracked-files=all", "--ignore-submodules=all"],
                                    cwd=repo, env=env, capture_output=True, text=True)
            if (status.returncode != 0 or status.stdout
                    or git(env, repo, "rev-parse", "HEAD") != head):
                return False
        return True


def _link_packs(src: str, dest: str) -> None:
    if f"{os.sep}objects{os.sep}pack{os.sep}" in src:
        os.link(src, dest)
    else:
        shutil.copy2(src, dest)


def _clean(env: dict[str, str], repo: Path, head: str) -> bool:
    return (git(env, repo, "rev-parse", "HEAD") == head
            and not git(env, repo, "status", "--porcelain", "--untracked-files=no"))


@dataclass(frozen=True)
class Variant:
    """A bisectkit to measure: a command acting as ``git bisect-patched``."""

    label: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


def parse_variant(spec: str) -> Variant:
    label, sep, cmd = spec.partition("=")
    if not sep or not re.fullmatch(r"[\w.+-]+", label):
        label, cmd = spec, spec
    if Path(cmd).is_dir():
        return Variant(label, (sys.executable, "-c", GIT_MAIN),
                       (("PYTHONPATH", str(Path(cmd).resolve())),))
    return Variant(label, tuple(shlex.split(cmd)))


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:] if path.exists() else ""


def trial_bisectkit(w: ScaleWorld, v: Variant, good: str, bad: str, t: Trial,
                    tdir: Path, co: Checkout) -> Trial:
    """bisectkit's manual flow in the copy of the superproject."""
    env = hermetic_env(tdir / "home")
    env.update(v.env)
    sup = co.dest
    sub = sup / SUBMODULE
    t.copy_s, t.copy = co.ready()
    sh, out, result = scripts(tdir), tdir / "bisectkit.out", tdir / "result.json"
    phases = (("start", ["start", "--submodule", SUBMODULE, "--upstream", "upstream/main",
                         bad, good]),
              ("run", ["run", "--build", str(sh["build"]), "--json", str(result), "--",
                       str(sh["repro"])]),
              ("reset", ["reset"]))
    for name, args in phases:
        if t.error and name != "reset":
            continue
        t.phases[name] = run_phase([*v.argv, *args], sup, env, out)
        if t.phases[name].rc != 0:
            t.error = f"{name} exited {t.phases[name].rc}:\n{_tail(out)}"
    t.step_s, t.steps = step_time(tdir / "steps.log")
    if result.exists():
        data = json.loads(result.read_text())
        t.answer = data.get("first_bad") or ""
        t.files = [s.get("files_written") or 0 for s in data["steps"]]
        t.prepare_s = [s.get("prepare_s") or 0.0 for s in data["steps"]]
        bw = bench.World(tdir, env, w.upstream, sup, w.shas, w.merge_base, w.patched_head,
                         tdir)
        t.true_diff = true_diff(bw, data["steps"])
    t.restored = _clean(env, sub, w.patched_head) and not git(env, sup, "status", "--porcelain")
    return t


def trial_git(w: ScaleWorld, good: str, bad: str, t: Trial, tdir: Path,
              co: Checkout) -> Trial:
    """Plain ``git bisect`` start / run / reset in the copy of the upstream clone."""
    env = hermetic_env(tdir / "home")
    plain = co.dest
    t.copy_s, t.copy = co.ready()
    step, out = scripts(tdir)["step"], tdir / "git.out"
    t.phases["start"] = run_phase(["git", "bisect", "start", bad, good], plain, env, out)
    t.phases["run"] = run_phase(["git", "bisect", "run", str(step)], plain, env, out)
    log = git(env, plain, "bisect", "log").splitlines()
    t.phases["reset"] = run_phase(["git", "bisect", "reset"], plain, env, out)
    bad_rcs = {k: p.rc for k, p in t.phases.items() if p.rc != 0}
    if bad_rcs:
        t.error = f"exit codes {bad_rcs}:\n{_tail(out)}"
    t.step_s, t.steps = step_time(tdir / "steps.log")
    found = re.search(r"^([0-9a-f]{40}) is the first bad commit", out.read_text(), re.M)
    t.answer = found.group(1) if found else ""
    prev = w.merge_base
    for c in (line.split()[-1] for line in log
              if line.startswith(("git bisect good", "git bisect bad"))):
        t.files.append(changed(env, plain, prev, c))
        prev = c
    t.restored = _clean(env, plain, w.merge_base)
    return t


# ---------------------------------------------------------------- report


def fmt_s(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def orch_limit(rng: int) -> float:
    """Issue 29's bound on the orchestration ratio: 2x at range 100, 1.3x at 5,000."""
    return 1.3 if rng >= 5000 else 2.0


Stat = Callable[[Sequence[float]], float]
METRICS: dict[str, Callable[[Trial], float]] = {
    "start": lambda t: t.wall("start"),
    "run": lambda t: t.wall("run"),
    "run_orch": lambda t: t.run_orchestration_s,
    "reset": lambda t: t.wall("reset"),
    "step": lambda t: t.step_s,
    "orchestration": lambda t: t.orchestration_s,
    "start_rss_mb": lambda t: t.start_rss_mb,
    "peak_rss_mb": lambda t: t.peak_rss_mb,
}


def summarise(trials: Sequence[Trial], stat: Stat) -> dict[str, float]:
    return {k: stat([f(t) for t in trials]) for k, f in METRICS.items()}


def row(label: str, bk: Sequence[Trial], gb: Sequence[Trial], stat: Stat,
        show_variant: bool) -> tuple[list[str], dict[str, Any]]:
    """One table row (bisectkit ``bk`` against git ``gb`` on one world and range)."""
    b, g = summarise(bk, stat), summarise(gb, stat)
    rng = bk[0].range
    r_start, r_orch = ratio(b["start"], g["start"]), ratio(b["orchestration"], g["orchestration"])
    r_rss = ratio(b["peak_rss_mb"], g["peak_rss_mb"])
    files_ok = all(t.files == t.true_diff and t.files for t in bk)
    answers_ok = all(t.ok for t in (*bk, *gb))
    checks = ((r_start <= 2.0, f"start {r_start:.1f}x"),
              (r_orch <= orch_limit(rng), f"orchestration {r_orch:.2f}x"),
              (r_rss <= 1.5, f"RSS {r_rss:.2f}x"), (files_ok, "files"), (answers_ok, "answer"))
    fails = [what for passed, what in checks if not passed]
    cells = [bk[0].world, f"{rng:,}"] + ([label] if show_variant else []) + [
        f"{bk[0].steps} / {gb[0].steps}",
        f"{fmt_s(b['start'])} / {fmt_s(g['start'])} s ({r_start:.1f}x)",
        f"{fmt_s(b['run_orch'])} / {fmt_s(g['run_orch'])} s",
        f"{fmt_s(b['reset'])} / {fmt_s(g['reset'])} s",
        f"{fmt_s(b['orchestration'])} / {fmt_s(g['orchestration'])} s ({r_orch:.2f}x)",
        f"{b['start_rss_mb']:.0f} / {g['start_rss_mb']:.0f} MB",
        f"{b['peak_rss_mb']:.0f} / {g['peak_rss_mb']:.0f} MB ({r_rss:.2f}x)",
        f"{sum(bk[0].files):,} / {sum(bk[0].true_diff):,}" + ("" if files_ok else " (differ)"),
        "same, right" if answers_ok else "WRONG or failed",
        "PASS" if not fails else "FAIL: " + ", ".join(fails)]
    summary = {"world": bk[0].world, "range": rng, "bisectkit": label, "bisectkit_stats": b,
               "git_stats": g, "ratios": {"start": r_start, "orchestration": r_orch,
                                          "peak_rss": r_rss},
               "files_ok": files_ok, "answers_ok": answers_ok, "fails": fails}
    return cells, summary


def table(trials: Sequence[Trial], variants: Sequence[Variant], stat: Stat,
          title: str) -> list[dict[str, Any]]:
    """Print the table of ``stat`` (median or min) over the repeats; return its rows."""
    show_variant = len(variants) > 1
    head = ["world", "range"] + (["bisectkit"] if show_variant else []) + [
        "steps bk / git", "start bk / git", "run without steps bk / git", "reset bk / git",
        "orchestration bk / git", "RSS at start bk / git", "peak RSS bk / git",
        "files written / true diff", "answers", "issue 29"]
    print(f"\n{title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    rows = []
    keys = sorted({(t.world, t.range) for t in trials}, key=lambda k: (int(k[0].split("x")[0]),
                                                                       int(k[0].split("x")[1]),
                                                                       k[1]))
    for world, rng in keys:
        gb = [t for t in trials if (t.world, t.range, t.tool) == (world, rng, GIT)]
        for v in variants:
            bk = [t for t in trials if (t.world, t.range, t.tool) == (world, rng, v.label)]
            if bk and gb:
                cells, summary = row(v.label, bk, gb, stat, show_variant)
                print("| " + " | ".join(cells) + " |")
                rows.append(summary)
    return rows


def progress(t: Trial) -> None:
    phases = ", ".join(f"{k} {p.wall_s:.2f} s" for k, p in t.phases.items())
    status = "ok" if t.ok else f"FAILED {t.error.splitlines()[0] if t.error else ''}"
    if t.prepare_s:
        status += f"; its prepare_s per step: {' '.join(f'{x:.2f}' for x in t.prepare_s)}"
    if t.answer != t.expected:
        status += f" (answer {t.answer[:12] or 'none'}, expected {t.expected[:12]})"
    print(f"  [{t.world} range {t.range} #{t.repeat}] {t.tool}: {phases}; steps "
          f"{t.step_s:.2f} s ({t.steps}); orchestration {t.orchestration_s:.2f} s; peak RSS "
          f"{t.peak_rss_mb:.0f} MB (start {t.start_rss_mb:.0f}); {t.copy} in {t.copy_s:.1f} s; "
          f"{status}", flush=True)
    if t.error:
        print("    " + t.error.replace("\n", "\n    "), flush=True)


# ---------------------------------------------------------------- main


@contextmanager
def scratch(cache: Path, prefix: str) -> Iterator[Path]:
    """A folder in the cache (the same file system: copies and links stay local), removed
    afterwards; a killed benchmark's folders are removed by the next one."""
    for old in cache.glob("scratch-*"):
        pid = int(old.name.split("-")[1])
        if not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
    path = Path(tempfile.mkdtemp(prefix=f"scratch-{os.getpid()}-{prefix}-", dir=cache))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def bench_world(w: ScaleWorld, args: argparse.Namespace,
                variants: Sequence[Variant]) -> list[Trial]:
    """Every range of one world, ``--repeat`` times, the tools interleaved."""
    with scratch(args.cache, "copies") as copies:
        sup = Checkout.of(w.superproject, copies / "superproject", (".", SUBMODULE))
        plain = Checkout.of(w.plain, copies / "plain", (".",))
        return _bench_ranges(w, args, variants, sup, plain)


def _bench_ranges(w: ScaleWorld, args: argparse.Namespace, variants: Sequence[Variant],
                  sup: Checkout, plain: Checkout) -> list[Trial]:
    trials = []
    for rng in args.ranges:
        good, bad = place(w.shape, rng, args.placement)
        print(f"{w.name} range {rng:,}: good upstream commit {good}, bad {bad}, bug "
              f"{w.shape.bug}", flush=True)
        for i in range(1, args.repeat + 1):
            for tool in [*variants, None]:
                label = tool.label if tool else GIT
                t = Trial(label, w.name, rng, i, expected=w.shas[w.shape.bug])
                with scratch(args.cache, "trial") as tdir:
                    if tool:
                        trial_bisectkit(w, tool, w.shas[good], w.shas[bad], t, tdir, sup)
                    else:
                        trial_git(w, w.shas[good], w.shas[bad], t, tdir, plain)
                progress(t)
                trials.append(t)
    return trials


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--worlds", default="100000x150000,550000x150000",
                   help="COMMITSxFILES,... (default: %(default)s)")
    p.add_argument("--ranges", default="100,5000",
                   help="candidates between good and bad, comma-separated (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache", type=Path,
                   default=Path.home() / ".cache" / "bisectkit-bench-scale",
                   help="where worlds are built and kept (default: %(default)s)")
    p.add_argument("--placement", choices=("pin", "far"), default="pin",
                   help="pin: the range ends at the merge-base, the bug 30 below it; far: "
                        "bench.py's bug at 37%% of history, the range around it")
    p.add_argument("--commit-graph", action="store_true",
                   help="worlds whose repositories have a commit-graph (git commit-graph "
                        "write --reachable)")
    p.add_argument("--bisectkit", action="append", metavar="[LABEL=]CMD|DIR",
                   help="a bisectkit to measure (repeatable): a command acting as 'git "
                        "bisect-patched', or a source tree (default: this Python's)")
    p.add_argument("--json", type=Path, metavar="OUT", help="write every raw number here")
    args = p.parse_args(argv)
    args.ranges = [int(r) for r in args.ranges.split(",")]
    args.worlds = [tuple(int(n) for n in w.split("x")) for w in args.worlds.split(",")]
    args.cache = args.cache.absolute()
    return args


@contextmanager
def bytecode_cache(variants: Sequence[Variant]) -> Iterator[None]:
    """Every process of the benchmark (bisectkit's included: hermetic_env keeps the
    PYTHON* variables) reads and writes bytecode in a temporary folder, as an installed
    bisectkit has its own; each source tree's is compiled there before any trial."""
    saved = {k: os.environ.get(k) for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    with tempfile.TemporaryDirectory(prefix="bench-scale-pycache-") as cache:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = cache
        for v in variants:
            tree = dict(v.env).get("PYTHONPATH")
            if tree:
                subprocess.run([sys.executable, "-m", "compileall", "-q",
                                str(Path(tree) / "bisectkit")], check=True,
                               stdout=subprocess.DEVNULL)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    variants = ([parse_variant(s) for s in args.bisectkit] if args.bisectkit
                else [Variant("bisectkit", (sys.executable, "-c", GIT_MAIN))])
    with bytecode_cache(variants):
        return _main(args, variants)


def _main(args: argparse.Namespace, variants: Sequence[Variant]) -> int:
    print(f"bench_scale: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}"
          f", cache {args.cache}", flush=True)
    trials: list[Trial] = []
    worlds = []
    for commits, files in args.worlds:
        shape = make_shape(commits, files, args.placement)
        t = time.perf_counter()
        w = ensure_world(args.cache, shape, args.commit_graph)
        took = time.perf_counter() - t
        how = (f"cached (built in {w.build_s:.0f} s), loaded in {took:.1f} s" if w.cached
               else f"built in {w.build_s:.0f} s")
        print(f"world {w.name}: {how}; merge-base upstream commit {shape.merge_base}, "
              f"{w.root}", flush=True)
        worlds.append({"world": w.name, "root": str(w.root), "shape": asdict(shape),
                       "build_s": w.build_s, "cached": w.cached, "load_s": took})
        trials += bench_world(w, args, variants)
    print(f"\nload {os.getloadavg()[0]:.2f}; ratios are bisectkit / git bisect; 'run without "
          "steps' and orchestration leave out the build (sync) and the repro")
    rows = table(trials, variants, statistics.median, "Median of the repeats:")
    table(trials, variants, min, "Minimum of the repeats:")
    if args.json:
        args.json.write_text(json.dumps(
            {"argv": sys.argv, "placement": args.placement, "commit_graph": args.commit_graph,
             "variants": [asdict(v) for v in variants], "worlds": worlds,
             "trials": [asdict(t) | {"orchestration_s": t.orchestration_s} for t in trials],
             "summary": rows}, indent=1))
    return 0 if rows and all(not r["fails"] for r in rows) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
