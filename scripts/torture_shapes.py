#!/usr/bin/env python3
"""Kill bisectkit at every git command in partial, sparse and shallow clones (issue 16).

The git shim of ``scripts/torture.py`` stops bisectkit at its Nth git command
(SIGKILL before, during or after it; or a catchable signal after it; or
SIGKILL to bisectkit and that git together, git holding its locks). Each
round starts from a fresh copy of the shape's world (so every round runs the
same git commands: the blobs a partial clone fetched, the history a
``--deepen`` fetched, are gone again), and after the kill:

1. ``git bisect-patched reset`` exits 0;
2. the state is as before: :func:`torture.fingerprint` (HEADs, branches,
   ``status --porcelain --ignored``, every file on disk, so nothing outside a
   sparse cone), every ref but the remote-tracking ones and ``FETCH_HEAD``, the
   sparse-checkout file and ``core.sparse*`` / ``index.sparse`` config, and
   ``.git/shallow`` (which only the ``--deepen`` fetch the user asked for may
   change, and only to what an undisturbed run leaves);
3. a fresh run names the right first bad commit, and its ``files written``
   per step are those of an undisturbed run; the state is as before again.

Partial clones get extra rounds: killed in a promisor fetch (``git fetch ...
--stdin``), then the promisor remotes made unreachable, then reset (which must
restore with the blobs HEAD already has). Usage::

    python3 scripts/torture_shapes.py [--shapes partial,sparse-cone,...] [--every 1] [-v]

Prints the rounds per shape and those left dirty or wrong; exits 1 if any.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torture import _exe, decorate, fingerprint, write_shim
from worldgen import (
    SPARSE_BUG_AT,
    SUBMODULE,
    World,
    build_partial_world,
    build_sparse_world,
    build_world,
    copy_world,
    make_shallow_world,
)

GOOD_IF = "device .* not found"
MODES = ("after", "during", "before", "signal")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
TARGET = ["--submodule", SUBMODULE, "--upstream", "upstream/main"]


@dataclass
class Shape:
    """A template world and what a round runs in a copy of it."""

    name: str
    template: World
    #: (executable, args) run one after the other; the kill lands in one of them.
    commands: list[tuple[str, list[str]]]
    #: the fresh ``bisectkit`` run afterwards, and the first bad commit it must name.
    check: list[str]
    expected: str
    #: ``.git/shallow`` may differ from before only by the --deepen fetch (state key).
    deepens: bool = False


@dataclass
class Outcome:
    """One kill and what it left behind."""

    shape: str
    n: int
    mode: str
    git: str
    killed: bool
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        what = "ok" if self.ok else "; ".join(self.problems)
        return f"{self.shape} kill at git #{self.n} ({self.mode}: {self.git[:70]}): {what}"


# -- worlds ------------------------------------------------------------------------
def _copy(template: World, dest: Path) -> World:
    """A fresh copy of ``template`` (its superproject; remotes are shared, read only)."""
    if dest.exists():
        shutil.rmtree(dest)
    return copy_world(template, dest)


def _run_args(w: World, good: str, bad: str, *extra: str) -> list[str]:
    return ["run", *TARGET, "--good", good, "--bad", bad, "--build", "./build.sh",
            "--good-if", GOOD_IF, *extra, "--", "./repro.sh"]


def partial_shape(root: Path) -> Shape:
    w = build_partial_world(root)
    decorate(w)
    args = _run_args(w, w.sha(0), w.sha(300))
    return Shape("partial", w, [("bisectkit", args)], args, w.sha(200))


def partial_manual_shape(root: Path) -> Shape:
    w = build_partial_world(root)
    decorate(w)
    cmds = [("git-bisect-patched", ["start", *TARGET, w.sha(300), w.sha(0)]),
            ("git-bisect-patched", ["run", "--build", "./build.sh", "--good-if", GOOD_IF,
                                    "./repro.sh"]),
            ("git-bisect-patched", ["reset"])]
    return Shape("partial manual", w, cmds, _run_args(w, w.sha(0), w.sha(300)), w.sha(200))


def sparse_shapes(root: Path) -> list[Shape]:
    """Cone and non-cone, each as a one-shot run and as a manual session."""
    base = build_sparse_world(root / "sparse")
    shapes = []
    for name, patterns in (("cone", ["--cone", "lib", "llvm"]),
                           ("non-cone", ["--no-cone", "/*", "!/mlir/", "!/clang/"])):
        w = _copy(base, root / f"sparse-{name}")
        w.git(w.submodule, "sparse-checkout", "set", *patterns)
        decorate(w)
        good, bad = (w.sha(0), w.sha(56)) if name == "cone" else (w.sha(30), w.sha(56))
        check = _run_args(w, good, bad)
        shapes.append(Shape(f"sparse {name}", w, [("bisectkit", check)], check,
                            w.sha(SPARSE_BUG_AT)))
        cmds = [("git-bisect-patched", ["start", *TARGET, bad, good]),
                ("git-bisect-patched", ["run", "--build", "./build.sh", "--good-if", GOOD_IF,
                                        "./repro.sh"]),
                ("git-bisect-patched", ["reset"])]
        shapes.append(Shape(f"sparse {name} manual", w, cmds, check, w.sha(SPARSE_BUG_AT)))
    return shapes


def shallow_shape(root: Path) -> Shape:
    """The shallow world of tests/test_shallow_clone.py whose boundary cuts the range
    (upstream 251..400, and 100 alone): ``--deepen`` fetches before the session."""
    w = build_world(root)
    make_shallow_world(w, ["--depth", "10"], ["--depth=150"])
    w.git(w.submodule, "fetch", "-q", "--depth=1", "upstream", w.sha(100))
    decorate(w)
    args = _run_args(w, w.sha(100), w.sha(300), "--deepen")
    return Shape("shallow --deepen", w, [("bisectkit", args)], args, w.sha(200), deepens=True)


SHAPES: dict[str, Callable[[Path], list[Shape]]] = {
    "partial": lambda r: [partial_shape(r / "partial")],
    "partial-manual": lambda r: [partial_manual_shape(r / "partial-manual")],
    "sparse": sparse_shapes,
    "shallow": lambda r: [shallow_shape(r / "shallow")],
}


# -- state ---------------------------------------------------------------------------
def _git_dir(w: World, repo: Path) -> Path:
    return Path(w.git(repo, "rev-parse", "--absolute-git-dir"))


def state(w: World) -> dict[str, str]:
    """:func:`torture.fingerprint` and what the clone shapes add."""
    found = fingerprint(w)
    for name, repo in (("super", w.superproject), ("sub", w.submodule)):
        git_dir = _git_dir(w, repo)
        patterns = git_dir / "info" / "sparse-checkout"
        found[f"{name} sparse patterns"] = (patterns.read_text(encoding="utf-8")
                                            if patterns.exists() else "(none)")
        proc = subprocess.run(["git", "config", "--get-regexp", r"core\.sparse|index\.sparse"],
                              cwd=repo, env=w.env, text=True, capture_output=True)
        found[f"{name} sparse config"] = proc.stdout
        # Remote-tracking refs move with a fetch the user asked for (--deepen); the rest
        # (branches, tags, refs/bisect*, stashes...) must be as before.
        refs = w.git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
        found[f"{name} refs"] = "\n".join(line for line in refs.splitlines()
                                          if not line.startswith("refs/remotes/"))
        shallow = git_dir / "shallow"
        found[f"{name} shallow"] = (shallow.read_text(encoding="utf-8")
                                    if shallow.exists() else "(none)")
        found[f"{name} promisor config"] = subprocess.run(
            ["git", "config", "--get-regexp", r"remote\..*\.(promisor|partialclonefilter)"],
            cwd=repo, env=w.env, text=True, capture_output=True).stdout
    return found


def differs(before: dict[str, str], after: dict[str, str], deepened: str | None) -> list[str]:
    """Keys of ``before`` that ``after`` changed; ``deepened``: the submodule's
    ``.git/shallow`` as the --deepen fetch leaves it, an allowed change."""
    return [k for k in before if before[k] != after.get(k)
            and not (k == "sub shallow" and deepened is not None and after[k] == deepened)]


# -- running ----------------------------------------------------------------------------
def run(w: World, exe: str, args: Sequence[str], path_prefix: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(w.env)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([_exe(exe), *args], cwd=w.superproject, env=env, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class Baseline:
    """An undisturbed round: its git commands (the kill points) and what it leaves."""

    gits: list[str]
    written: list[int | None]
    shallow: str | None


def _written(w: World, check: Sequence[str], where: Path
             ) -> tuple[str, list[int | None], list[str]]:
    """A fresh run of ``check`` (with --json): its output, files written per step, and
    the steps whose count is not that of the paths the move wrote (see :func:`wrong_counts`).
    """
    out = where / "check.json"
    out.unlink(missing_ok=True)
    args = [*check[:-2], "--json", str(out), *check[-2:]]
    head = w.git(w.submodule, "rev-parse", "HEAD")
    proc = run(w, "bisectkit", args)
    steps = json.loads(out.read_text())["steps"] if out.exists() else []
    return (proc.stdout + proc.stderr, [s.get("files_written") for s in steps],
            wrong_counts(w, head, steps))


def wrong_counts(w: World, head: str, steps: Sequence[dict[str, object]]) -> list[str]:
    """Steps whose ``files_written`` is not the number of paths that differ between the
    tree on disk before and the step's tree, counting in a sparse cone only those in it
    (a verdict from the cache moves nothing). A rerun after a kill reuses verdicts, so
    its counts differ from an undisturbed run's; each must still be exact."""
    cone = _cone(w)
    prev, wrong = head, []
    for step in steps:
        if step.get("source") == "cache" or "patched" not in step:
            continue
        patched = str(step["patched"])
        paths = w.git(w.submodule, "diff", "--name-only", "--no-renames", prev,
                      patched).split()
        want = sum(1 for p in paths if cone is None or "/" not in p
                   or p.split("/")[0] in cone)
        if step.get("files_written") != want:
            wrong.append(f"{patched[:12]}: {step.get('files_written')} written, {want} moved")
        prev = patched
    return wrong


def _cone(w: World) -> frozenset[str] | None:
    """The top-level directories the submodule's sparse checkout writes (the worlds'
    patterns name top-level directories only), or None when it is not sparse."""
    proc = subprocess.run(["git", "config", "--bool", "core.sparseCheckout"], cwd=w.submodule,
                          env=w.env, text=True, capture_output=True)
    if proc.stdout.strip() != "true":
        return None
    on_disk = {p.name for p in w.submodule.iterdir() if p.is_dir()}
    return frozenset(on_disk - {".git"})


def baseline(shape: Shape, tmp: Path, check: bool = True) -> Baseline:
    """The undisturbed round; ``check``: also a fresh run, whose counts must be exact."""
    w = _copy(shape.template, tmp / "baseline")
    shim = write_shim(tmp / "count-shim", 0, "none")
    for exe, args in shape.commands:
        proc = run(w, exe, args, shim)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    gits = (shim / "count.log").read_text().splitlines()
    deepened = state(w)["sub shallow"] if shape.deepens else None
    written: list[int | None] = []
    if check:
        w = _copy(shape.template, tmp / "baseline")
        said, written, wrong = _written(w, shape.check, tmp)
        assert not wrong, f"{shape.name}: {wrong}\n{said}"
    return Baseline([g.partition(" ")[2] for g in gits], written, deepened)


def cut_off(w: World, where: Path) -> dict[str, str]:
    """Point the submodule's remotes at a folder that is gone; their URLs before."""
    urls = {}
    gone = where / "moved-away"
    for remote in w.git(w.submodule, "remote").split():
        urls[remote] = w.git(w.submodule, "remote", "get-url", remote)
        w.git(w.submodule, "remote", "set-url", remote, f"file://{gone}")
    return urls


def kill_round(shape: Shape, base: Baseline, n: int, mode: str, tmp: Path,
               sig: int = signal.SIGINT, unreachable: bool = False) -> Outcome:
    """Stop bisectkit at git command ``n`` of a fresh copy, reset, compare, run again."""
    w = _copy(shape.template, tmp / "round")
    before = state(w)
    shim = write_shim(tmp / "shim", n, mode, sig)
    killed = False
    for exe, args in shape.commands:
        proc = run(w, exe, args, shim)
        if proc.returncode in (-signal.SIGKILL, 128 + sig, -sig):
            killed = True
            break
        if proc.returncode != 0:
            break
    label = mode if mode != "signal" else f"signal {signal.Signals(sig).name}"
    if unreachable:
        label += ", remotes cut off before reset"
    result = Outcome(shape.name, n, label, base.gits[n - 1], killed)
    urls = cut_off(w, tmp) if unreachable else {}
    reset = run(w, "git-bisect-patched", ["reset"])
    if reset.returncode != 0:
        result.problems.append(f"reset exit {reset.returncode}: {reset.stderr.strip()[:300]}")
    for remote, url in urls.items():
        w.git(w.submodule, "remote", "set-url", remote, url)
    if dirty := differs(before, state(w), base.shallow):
        result.problems.append(f"dirty after reset: {dirty}")
        return result
    said, _, wrong = _written(w, shape.check, tmp)
    if f"{shape.expected} is the first bad commit" not in said.splitlines():
        result.problems.append(f"fresh run: {' | '.join(said.strip().splitlines()[-3:])}")
    elif wrong:
        result.problems.append(f"files written: {wrong}")
    if dirty := differs(before, state(w), base.shallow):
        result.problems.append(f"dirty after the fresh run: {dirty}")
    return result


def fetch_points(base: Baseline) -> list[int]:
    """The kill points that are a promisor fetch or a deepening fetch."""
    return [i + 1 for i, g in enumerate(base.gits) if " fetch " in f" {g} "]


def sweep(shape: Shape, tmp: Path, report: Callable[[Outcome], None],
          every: int = 1) -> list[Outcome]:
    """Every kill point (one in ``every``), mode cycling; plus, at every fetch, each
    SIGKILL mode; at every fetch and the first two checkouts, bisectkit and its git
    killed together; and for partial clones a round with the remotes cut off."""
    base = baseline(shape, tmp)
    outcomes = []
    points = sorted(set(range(1, len(base.gits) + 1, every)))
    for n in points:
        mode = MODES[n % len(MODES)]
        outcomes.append(kill_round(shape, base, n, mode, tmp, STOP_SIGNALS[n % 4]))
        report(outcomes[-1])
    for n in fetch_points(base):
        for mode in ("before", "during", "after"):
            if n in points and MODES[n % len(MODES)] == mode:
                continue
            outcomes.append(kill_round(shape, base, n, mode, tmp, signal.SIGKILL))
            report(outcomes[-1])
    # bisectkit and its git killed together, git holding its locks (torture_shim): in
    # every fetch and in the first checkouts (index.lock held, the tree half written).
    moves = [i + 1 for i, g in enumerate(base.gits) if g.startswith("read-tree")]
    for n in [*fetch_points(base), *moves[:2]]:
        outcomes.append(kill_round(shape, base, n, "together", tmp, signal.SIGKILL))
        report(outcomes[-1])
    if shape.name.startswith("partial"):
        # Remotes cut off after a kill in a fetch, or mid-checkout (index and files on
        # the step's tree): reset must restore with the blobs already here.
        for n in [*fetch_points(base), *moves[:2]]:
            outcomes.append(kill_round(shape, base, n, "during", tmp, signal.SIGKILL,
                                       unreachable=True))
            report(outcomes[-1])
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help="default: all")
    parser.add_argument("--every", type=int, default=1, help="one kill point in so many")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per kill")
    args = parser.parse_args(argv)
    started = time.monotonic()
    total: list[Outcome] = []

    def report(o: Outcome) -> None:
        if args.verbose or not o.ok:
            print(o.describe(), flush=True)

    with tempfile.TemporaryDirectory(prefix="bisectkit-torture16-") as tmp:
        for name in args.shapes.split(","):
            for shape in SHAPES[name](Path(tmp) / name):
                outcomes = sweep(shape, Path(tmp) / name / "rounds", report, args.every)
                bad = [o for o in outcomes if not o.ok]
                print(f"{shape.name}: {len(outcomes)} rounds, "
                      f"{sum(o.killed for o in outcomes)} killed, {len(bad)} not restored "
                      f"or wrong", flush=True)
                total += outcomes
    bad = [o for o in total if not o.ok]
    print(f"total: {len(total)} rounds, {len(bad)} bad, {time.monotonic() - started:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
