"""The worlds the kill torture runs in, and the state it compares before and after a kill.

A :class:`Scenario` is one flow of bisectkit in one world: a one-shot ``run``
(submodule or integrate strategy, optionally ``--jobs 2``), a manual session
(``start``, ``run``, ``reset``), ``advance`` and ``advance --apply``. Each
world has an untracked and an ignored file in both repositories, which must
survive untouched. The state compared is :func:`fingerprint` (HEADs,
branches, ``status --porcelain --ignored``, every file's content) plus, in
:func:`full_state`, every ref but the remote-tracking ones and every ``*.lock``
file a killed git may leave in the git dirs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from worldgen import (
    SUBMODULE,
    World,
    WorldSpec,
    build_integrate_world,
    build_world,
    copy_world,
)

GOOD_IF = "device .* not found"
#: The flows, by name (``--scenarios``); "manual" is start, run and reset typed by hand.
SCENARIOS = ("submodule", "integrate", "manual", "submodule-jobs", "integrate-jobs",
             "advance", "advance-apply")
#: advance worlds: the pin sits on upstream 100, the smoketest fails from 110 on.
ADVANCE_BASE, ADVANCE_BAD = 100, 110
ADVANCE_BRANCH = "sm-next"
SMOKE = "#!/bin/sh\n! grep -q miscompile third_party/llvm-project/lib/bug.txt\n"


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
    #: ``--jobs``: steps run in workspaces, which must end clean too.
    jobs: bool = False
    #: Whether the commands use the verdict cache (``--jobs`` runs here use --no-cache).
    cache: bool = True
    #: The commands change the repositories for good when undisturbed (advance --apply).
    applies: bool = False
    #: Then the state an undisturbed round leaves (:func:`full_state`, recorded by
    #: ``torture.baseline``): after a kill and ``reset``, the state must be this one or the
    #: one before, nothing between.
    applied: dict[str, str] | None = None

    def copy(self, dest: Path) -> Scenario:
        """The same scenario in a fresh copy of its world under ``dest`` (replaced)."""
        if dest.exists():
            shutil.rmtree(dest)
        return dataclasses.replace(self, world=copy_world(self.world, dest))


# -- worlds -----------------------------------------------------------------------
def decorate(world: World) -> None:
    """An untracked and an ignored file in each repository: both must survive untouched.
    And git's commit-graph, as ``git gc`` leaves it: bisectkit has git write one where
    there is none, once, which would make the first round run one git more than the
    others (the kill points are counted once); a kill around that write is tested on its
    own (tests/test_ancestry_answers.py)."""
    for repo in (world.superproject, world.submodule):
        world.git(repo, "commit-graph", "write", "--reachable", "--no-progress")
        (repo / "my-notes.txt").write_text("untracked notes\n", encoding="utf-8")
        exclude = git_dir(world, repo) / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("build-out/\n", encoding="utf-8")
        (repo / "build-out").mkdir(exist_ok=True)
        (repo / "build-out" / "cache.bin").write_bytes(b"\0ignored build output\n")


def git_dir(world: World, repo: Path) -> Path:
    """``repo``'s git dir (the submodule's lies under the superproject's)."""
    return Path(world.git(repo, "rev-parse", "--absolute-git-dir"))


def run_args(world: World, integrate: bool) -> list[str]:
    """``bisectkit run`` over the whole range of a submodule or integrate world."""
    if integrate:
        target = ["--integrate", "--good", world.integrate["init"],
                  "--bad", world.integrate["adv12"]]
    else:
        target = ["--submodule", SUBMODULE, "--upstream", "upstream/main",
                  "--good", world.sha(0), "--bad", world.sha(300)]
    return ["run", *target, "--build", "./build.sh", "--good-if", GOOD_IF, "--", "./repro.sh"]


def scenarios(root: Path) -> list[Scenario]:
    """The three basic worlds (submodule, integrate, manual), built under ``root``."""
    return [build_scenario(name, root) for name in ("submodule", "integrate", "manual")]


def build_scenario(name: str, root: Path) -> Scenario:
    """The scenario ``name`` (one of :data:`SCENARIOS`), its world built under ``root``."""
    if name.endswith("-jobs"):
        return with_jobs(build_scenario(name.removesuffix("-jobs"), root))
    if name.startswith("advance"):
        return advance_scenario(root / name, apply=name == "advance-apply")
    w = (build_integrate_world if name == "integrate" else build_world)(root / name)
    decorate(w)
    if name == "integrate":
        return Scenario(name, w, [("bisectkit", run_args(w, True))], run_args(w, True),
                        w.integrate["adv8"])
    if name == "submodule":
        return Scenario(name, w, [("bisectkit", run_args(w, False))], run_args(w, False),
                        w.sha(200))
    start = ["start", "--submodule", SUBMODULE, "--upstream", "upstream/main", w.sha(300),
             w.sha(0)]
    git_run = ["run", "--build", "./build.sh", "--good-if", GOOD_IF, "./repro.sh"]
    return Scenario("manual", w, [("git-bisect-patched", start),
                                  ("git-bisect-patched", git_run),
                                  ("git-bisect-patched", ["reset"])],
                    run_args(w, False), w.sha(200))


def with_jobs(scenario: Scenario, jobs: int = 2) -> Scenario:
    """``scenario`` run as ``--jobs`` (one-shot worlds only): every step in a workspace."""
    args = [*scenario.check[:-2], "--jobs", str(jobs), "--no-cache", "--", "./repro.sh"]
    return Scenario(f"{scenario.name} --jobs {jobs}", scenario.world, [("bisectkit", args)],
                    args, scenario.expected, jobs=True, cache=False)


def advance_scenario(root: Path, apply: bool) -> Scenario:
    """``bisectkit advance`` (``apply``: ``--apply --branch sm-next``) from a pin on upstream
    100 whose smoketest fails from 110 on (the world of tests/test_advance.py).

    What a kill in ``--apply`` may leave, after ``reset``: ``pinning.write`` records the
    moves (``.git/bisectkit/apply.json``) before it creates the branch, stages the new
    pin and moves HEAD; the next command settles the record (``pinning.settle``): HEAD
    already moved, it finishes (the new pin staged); HEAD not moved, it undoes (the
    branches it made deleted, the pin staged before staged again). So exactly two
    states are right: the one before, and the one an undisturbed ``--apply`` leaves
    (HEAD on the new commit, the index pinning the new branch, and whatever else the
    apply does, such as checking the submodule out), which ``torture.baseline``
    records in :attr:`Scenario.applied`. Anything between (a branch without its
    commit, a commit with the old pin staged, a lock file) is dirt. Either way a fresh
    ``advance`` names upstream 110 as the first commit the pin cannot move to."""
    spec = WorldSpec(merge_base=ADVANCE_BASE, bug_at=ADVANCE_BAD, build_breaks=[(80, 150)],
                     reverted=60, picks=[150], pick_by_patch_id=160, local_conflict=None)
    w = build_world(root, spec)
    smoke = w.superproject / "smoke.sh"
    smoke.write_text(SMOKE, encoding="utf-8")
    smoke.chmod(0o755)
    w.git(w.superproject, "add", "smoke.sh")
    w.git(w.superproject, "commit", "-qm", "smoketest")
    decorate(w)
    check = ["advance", "--build", "./build.sh", "--", "./smoke.sh"]
    args = [*check[:-2], "--apply", "--branch", ADVANCE_BRANCH, *check[-2:]] if apply else check
    return Scenario("advance --apply" if apply else "advance", w, [("bisectkit", args)],
                    check, w.sha(ADVANCE_BAD), applies=apply)


# -- running --------------------------------------------------------------------------
def exe(name: str) -> str:
    """The installed console script ``name``."""
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not installed (pip install -e .)")
    return found


def run_cli(world: World, name: str, args: Sequence[str], path_prefix: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run console script ``name`` in the superproject (``path_prefix``: first on PATH)."""
    env = dict(world.env)
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([exe(name), *args], cwd=world.superproject, env=env, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


# -- state ----------------------------------------------------------------------------
def fingerprint(world: World) -> dict[str, str]:
    """HEADs, branches, status with ignored files, and a digest of every file's content."""
    state: dict[str, str] = {}
    for name, repo in (("super", world.superproject), ("sub", world.submodule)):
        state[f"{name} HEAD"] = world.git(repo, "rev-parse", "HEAD")
        state[f"{name} branch"] = _symbolic(world, repo)
        state[f"{name} status"] = world.git(repo, "status", "--porcelain", "--ignored")
        state[f"{name} index.lock"] = str((git_dir(world, repo) / "index.lock").exists())
    digest = hashlib.sha256()
    for path in sorted(_files(world.superproject)):
        digest.update(path.encode() + b"\0" + (world.superproject / path).read_bytes())
    state["files"] = digest.hexdigest()
    return state


def full_state(world: World) -> dict[str, str]:
    """:func:`fingerprint`, every ref but the remote-tracking ones (branches an apply makes,
    ``refs/bisect*``, stashes...), and the lock files left anywhere in the git dirs."""
    state = fingerprint(world)
    for name, repo in (("super", world.superproject), ("sub", world.submodule)):
        refs = world.git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
        state[f"{name} refs"] = "\n".join(line for line in refs.splitlines()
                                          if not line.startswith("refs/remotes/"))
    top = world.superproject / ".git"
    locks = []
    for dirpath, dirs, files in os.walk(top):
        # bisectkit's own folder: its workspaces are checked by workspace_dirt.
        dirs[:] = [d for d in dirs if Path(dirpath, d) != top / "bisectkit"]
        locks += [str(Path(dirpath, f).relative_to(top)) for f in files if f.endswith(".lock")]
    state["lock files"] = " ".join(sorted(locks)) or "(none)"
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
    """The keys of ``before`` whose value ``after`` changed."""
    return [k for k in before if before[k] != after.get(k)]


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
