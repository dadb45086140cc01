"""Build small, hermetic patched-submodule worlds with the git CLI (for the demo and the tests).

A world is: an upstream repository (linear history written with ``git
fast-import``), a fork carrying the local patch stack on top of a merge-base,
and a superproject that pins the fork as ``third_party/llvm-project`` with
``upstream/main`` fetched into the submodule. The superproject has a
``build.sh`` (fails while ``lib/build.txt`` says "broken") and a ``repro.sh``
(bad while ``lib/bug.txt`` says "miscompile"; good commits fail with an IREE
style "device not found" error, as on a machine without the GPU).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

SUBMODULE = "third_party/llvm-project"
EPOCH = 1767225600  # 2026-01-01T00:00:00Z: fixed dates make commit ids reproducible

BUILD_SH = """#!/bin/sh
# Stands in for the superproject build: our own sources and LLVM must compile.
if [ -f integration.txt ] && grep -q broken integration.txt; then
  echo "integration.txt:1: error: no member named 'getFoo' in 'mlir::Operation'"
  exit 1
fi
if grep -q broken third_party/llvm-project/lib/build.txt; then
  echo "FAILED: lib/build.txt"
  echo "lib/build.txt:1: error: upstream build is broken at $BISECTKIT_COMMIT"
  exit 1
fi
echo "built against ${BISECTKIT_COMMIT:-HEAD}"
"""

REPRO_SH = """#!/bin/sh
# The compiler miscompiles once lib/bug.txt says so; otherwise the compiled
# program only fails at run time because this machine has no GPU.
if grep -q miscompile third_party/llvm-project/lib/bug.txt; then
  echo "error: 'func.func' op miscompiled: wrong result 41 != 42"
  exit 1
fi
echo "iree-run-module: RESOURCE_EXHAUSTED; HAL device 'vulkan' not found"
exit 1
"""


def hermetic_env(home: Path) -> dict[str, str]:
    """Environment for git that ignores the user's and the system's configuration."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bisect Tester\n\temail = tester@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[protocol \"file\"]\n\tallow = always\n"
        "[advice]\n\tdetachedHead = false\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "BISECTKIT_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Bisect Tester",
        GIT_AUTHOR_EMAIL="tester@example.com",
        GIT_COMMITTER_NAME="Bisect Tester",
        GIT_COMMITTER_EMAIL="tester@example.com",
        GIT_AUTHOR_DATE=f"@{EPOCH + 10_000_000} +0000",
        GIT_COMMITTER_DATE=f"@{EPOCH + 10_000_000} +0000",
        LC_ALL="C",
    )
    return env


def git(env: Mapping[str, str], cwd: Path, *args: str) -> str:
    """Run git, returning stdout; raises with stderr on failure."""
    # surrogateescape: git's messages may name a file that is not UTF-8.
    proc = subprocess.run(["git", *args], cwd=cwd, env=dict(env), text=True,
                          errors="surrogateescape", capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}:\n{proc.stderr}")
    return proc.stdout.strip()


@dataclass
class WorldSpec:
    """Where things happen in upstream history (commit numbers, 1-based; 0 = the root)."""

    commits: int = 400
    merge_base: int = 300
    bug_at: int = 200
    #: upstream fixes the miscompile again here (for --find-fix), if set.
    bug_fixed_at: int | None = None
    #: commits (X, Y): upstream build broken from X until Y fixes it.
    build_breaks: list[tuple[int, int]] = field(default_factory=lambda: [(180, 320)])
    #: feature.txt: v0 -> v1 at ``feature_prep``, v1 -> v2 at ``reverted``; stack reverts it.
    feature_prep: int | None = 50
    reverted: int | None = 120
    #: upstream reverts ``reverted`` itself here (feature.txt back to v1, so ``reverted``
    #: must come after ``feature_prep``), if set.
    upstream_reverts_at: int | None = None
    #: upstream fixes cherry-picked with -x (their "build fix" commits are picked by default).
    picks: list[int] = field(default_factory=lambda: [320])
    #: an upstream commit picked without a trailer (found by patch id).
    pick_by_patch_id: int | None = 350
    #: local fixup of local.txt; upstream rewrites the same line at ``local_conflict``.
    local_fixup: bool = True
    local_conflict: int | None = 340
    #: upstream puts local.txt's original line back here, if set: the fixup conflicts
    #: only at candidates in [local_conflict, local_conflict_until).
    local_conflict_until: int | None = None
    files: int = 20
    #: commit messages (raw bytes, e.g. hostile ones) and author names replacing the
    #: generated ones, by commit number.
    messages: dict[int, bytes] = field(default_factory=dict)
    authors: dict[int, bytes] = field(default_factory=dict)
    #: more files upstream commits write (commit number -> path -> content), beside the
    #: events above (e.g. a ``.gitattributes`` and a file it filters).
    writes: dict[int, dict[str, str]] = field(default_factory=dict)


@dataclass
class World:
    root: Path
    env: dict[str, str]
    upstream: Path
    fork: Path
    superproject: Path
    shas: list[str]
    stack: list[str]
    #: Integrate worlds: superproject commits by name ("init", "adv1"..., "break", "fix").
    integrate: dict[str, str] = field(default_factory=dict)
    #: Integrate worlds: the patched submodule commit each advance pins, by advance number.
    pins: dict[int, str] = field(default_factory=dict)

    @property
    def submodule(self) -> Path:
        return self.superproject / SUBMODULE

    def sha(self, n: int) -> str:
        """Full sha of upstream commit number ``n``."""
        return self.shas[n]

    def git(self, cwd: Path, *args: str) -> str:
        return git(self.env, cwd, *args)


def _events(spec: WorldSpec) -> dict[int, dict[str, str]]:
    ev: dict[int, dict[str, str]] = {}

    def put(n: int | None, path: str, content: str) -> None:
        if n is not None:
            ev.setdefault(n, {})[path] = content

    put(spec.bug_at, "lib/bug.txt", "miscompile\n")
    put(spec.bug_fixed_at, "lib/bug.txt", "ok\n")
    for x, y in spec.build_breaks:
        put(x, "lib/build.txt", "broken\n")
        put(y, "lib/build.txt", "ok\n")
    put(spec.feature_prep, "lib/feature.txt", "feature v1\n")
    put(spec.reverted, "lib/feature.txt", "feature v2\n")
    put(spec.upstream_reverts_at, "lib/feature.txt", "feature v1\n")
    put(spec.pick_by_patch_id, "lib/fix2.txt", "fixed by patch-id pick\n")
    put(spec.local_conflict, "lib/local.txt", "upstream rewrote this line\n")
    put(spec.local_conflict_until, "lib/local.txt", "upstream line\n")
    for n, files in spec.writes.items():
        for path, content in files.items():
            put(n, path, content)
    return ev


def _fast_import_stream(spec: WorldSpec) -> bytes:
    events = _events(spec)
    initial = {
        "lib/bug.txt": "ok\n",
        "lib/build.txt": "ok\n",
        "lib/feature.txt": "feature v0\n",
        "lib/fix2.txt": "not fixed\n",
        "lib/local.txt": "upstream line\n",
        "README": "a tiny stand-in for llvm-project\n",
    }
    out: list[bytes] = []

    def data(text: str) -> None:
        raw = text.encode()
        out.append(b"data %d\n" % len(raw) + raw + b"\n")

    for n in range(spec.commits + 1):
        # Event commits touch only their event files, so reverting or picking
        # them never collides with the filler churn.
        if n == 0:
            changes = dict(initial)
        else:
            # Sizes vary like real edits do; same-size rewrites within one second
            # make bisectkit bump mtimes (tested on their own in test_minimal_work).
            filler = f"change {n}\n" * (n % 7 + 1)
            changes = events.get(n) or {f"lib/file{n % spec.files}.txt": filler}
        ts = EPOCH + n * 60
        out.append(b"commit refs/heads/main\n")
        out.append(b"mark :%d\n" % (n + 1))
        author = spec.authors.get(n, b"Upstream Dev")
        out.append(b"author %s <dev@example.com> %d +0000\n" % (author, ts))
        out.append(b"committer Upstream Dev <dev@example.com> %d +0000\n" % ts)
        what = ", ".join(sorted(events.get(n, {}))) or f"lib/file{n % spec.files}.txt"
        message = spec.messages.get(n, f"upstream commit {n}: touch {what}\n".encode())
        out.append(b"data %d\n" % len(message) + message + b"\n")
        if n > 0:
            out.append(b"from :%d\n" % n)
        for path, content in sorted(changes.items()):
            out.append(f"M 100644 inline {path}\n".encode())
            data(content)
    out.append(b"done\n")
    return b"".join(out)


def _make_upstream(root: Path, spec: WorldSpec) -> tuple[dict[str, str], Path, list[str]]:
    env = hermetic_env(root / "home")
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(env, upstream, "init", "-q")
    subprocess.run(["git", "fast-import", "--quiet", "--done"], cwd=upstream, env=env,
                   input=_fast_import_stream(spec), check=True)
    git(env, upstream, "reset", "-q", "--hard", "main")
    return env, upstream, git(env, upstream, "rev-list", "--reverse", "main").split()


def _commit_local_fixup(env: Mapping[str, str], work: Path) -> str:
    (work / "lib/local.txt").write_text("our local fixup\n", encoding="utf-8")
    git(env, work, "commit", "-q", "-am", "[local] fixup for our target")
    return git(env, work, "rev-parse", "HEAD")


def _make_superproject(env: Mapping[str, str], root: Path, fork: Path, upstream: Path) -> Path:
    """Superproject with the fork as submodule (``upstream/main`` fetched) and the scripts."""
    sup = root / "superproject"
    sup.mkdir()
    git(env, sup, "init", "-q")
    git(env, sup, "submodule", "add", "-q", str(fork), SUBMODULE)
    sub = sup / SUBMODULE
    git(env, sub, "remote", "add", "upstream", str(upstream))
    git(env, sub, "fetch", "-q", "upstream")
    for name, text in (("build.sh", BUILD_SH), ("repro.sh", REPRO_SH)):
        (sup / name).write_text(text, encoding="utf-8")
        (sup / name).chmod(0o755)
    return sup


def _pinning_superproject(env: Mapping[str, str], root: Path, work: Path,
                          upstream: Path) -> tuple[Path, Path]:
    """The fork (a bare clone of ``work``) and a superproject committed pinning its HEAD."""
    fork = root / "llvm-fork.git"
    git(env, root, "clone", "-q", "--bare", str(work), str(fork))
    sup = _make_superproject(env, root, fork, upstream)
    git(env, sup, "add", "-A")
    git(env, sup, "commit", "-q", "-m", "superproject pinning the patched llvm-project")
    return fork, sup


def build_world(root: Path, spec: WorldSpec | None = None) -> World:
    """Create upstream, fork (with the patch stack) and superproject under ``root``."""
    spec = spec or WorldSpec()
    env, upstream, shas = _make_upstream(root, spec)

    # The fork: merge-base + revert + cherry-picks + local fixup, on its main branch.
    fork_work = root / "fork-work"
    git(env, root, "clone", "-q", str(upstream), str(fork_work))
    git(env, fork_work, "checkout", "-q", "-B", "main", shas[spec.merge_base])
    if spec.reverted is not None:
        git(env, fork_work, "revert", "--no-edit", shas[spec.reverted])
    for n in spec.picks:
        git(env, fork_work, "cherry-pick", "-x", shas[n])
    if spec.pick_by_patch_id is not None:
        git(env, fork_work, "cherry-pick", shas[spec.pick_by_patch_id])
        git(env, fork_work, "commit", "-q", "--amend", "-m", "[local] backport fix2")
    if spec.local_fixup:
        _commit_local_fixup(env, fork_work)
    stack = git(env, fork_work, "rev-list", "--reverse",
                f"{shas[spec.merge_base]}..HEAD").split()
    fork, sup = _pinning_superproject(env, root, fork_work, upstream)
    return World(root=root, env=env, upstream=upstream, fork=fork, superproject=sup,
                 shas=shas, stack=stack)


#: Integrate worlds: advance k pins upstream commit ADVANCE_STEP * k plus the local fixup.
ADVANCES = 12
ADVANCE_STEP = 25
#: Pushed to the fork only after the superproject's submodule was cloned (must be fetched).
PIN_PUSHED_LATE = 11
#: Never pushed anywhere: the step pinning it cannot be tested.
PIN_NEVER_PUSHED = 10


def build_integrate_world(root: Path, bug_at: int = 200) -> World:
    """A superproject whose integrate branch advances a patched LLVM twelve times.

    History of the superproject's ``main``: ``init`` (pins upstream 0 + fixup),
    ``adv1``..``adv6``, ``break`` (a superproject fixup that breaks the build),
    ``fix`` (repairs it), ``adv7``..``adv12``. Advance k pins upstream commit
    25k plus the local fixup; with the default ``bug_at`` the first bad
    integrate commit is ``adv8``.
    """
    spec = WorldSpec(build_breaks=[], reverted=None, picks=[], pick_by_patch_id=None,
                     local_conflict=None, bug_at=bug_at)
    env, upstream, shas = _make_upstream(root, spec)
    fork_work = root / "fork-work"
    git(env, root, "clone", "-q", str(upstream), str(fork_work))
    pins: dict[int, str] = {}
    for k in range(ADVANCES + 1):
        git(env, fork_work, "checkout", "-q", "-B", f"integrate-{k}", shas[ADVANCE_STEP * k])
        pins[k] = _commit_local_fixup(env, fork_work)
    git(env, fork_work, "branch", "-q", "-f", "main", pins[ADVANCES])
    fork = root / "llvm-fork.git"
    git(env, root, "init", "-q", "--bare", str(fork))
    pushed = [f"integrate-{k}" for k in pins if k not in (PIN_PUSHED_LATE, PIN_NEVER_PUSHED)]
    git(env, fork_work, "push", "-q", str(fork), "main", *pushed)

    sup = _make_superproject(env, root, fork, upstream)
    (sup / "integration.txt").write_text("ok\n", encoding="utf-8")
    git(env, sup, "add", "-A")
    names: dict[str, str] = {}

    def commit(name: str, message: str, pin: str | None = None) -> None:
        # Only the index is committed: the submodule's work tree stays on the
        # newest pin throughout, so `commit -a` would record that pin.
        if pin is not None:
            git(env, sup, "update-index", "--cacheinfo", f"160000,{pin},{SUBMODULE}")
        git(env, sup, "add", "integration.txt")
        git(env, sup, "commit", "-q", "-m", message)
        names[name] = git(env, sup, "rev-parse", "HEAD")

    commit("init", "Initial import, pinning LLVM at upstream commit 0", pins[0])
    for k in range(1, ADVANCES + 1):
        if k == 7:
            (sup / "integration.txt").write_text("broken\n", encoding="utf-8")
            commit("break", "Fixup: adapt to the LLVM API change (breaks the build)")
            (sup / "integration.txt").write_text("ok\n", encoding="utf-8")
            commit("fix", "Fixup: repair the build")
        commit(f"adv{k}", f"Advance LLVM to {pins[k][:12]} (upstream commit "
               f"{ADVANCE_STEP * k})", pins[k])
    git(env, fork_work, "push", "-q", str(fork), f"integrate-{PIN_PUSHED_LATE}")
    return World(root=root, env=env, upstream=upstream, fork=fork, superproject=sup,
                 shas=shas, stack=[pins[ADVANCES]], integrate=names, pins=pins)


#: Sparse worlds: the submodule's top-level directories; the build and the repro read
#: only ``lib`` (and root files), the rest is what a sparse checkout leaves out.
SPARSE_DIRS = ("llvm", "mlir", "clang")
#: Sparse worlds: upstream history length, the miscompile, the fork's merge-base.
SPARSE_COMMITS, SPARSE_BUG_AT, SPARSE_MERGE_BASE = 64, 37, 56
#: Sparse worlds: the superproject's main advances the pin to upstream 8k + fixup.
SPARSE_ADVANCE = 8


def _sparse_stream() -> bytes:
    """Upstream history for :func:`build_sparse_world`: filler churn in every top-level
    directory (``llvm`` only below the bug), events in ``lib``."""
    spec = WorldSpec(commits=SPARSE_COMMITS, bug_at=SPARSE_BUG_AT, build_breaks=[],
                     feature_prep=None, reverted=None, picks=[], pick_by_patch_id=None,
                     local_conflict=None)
    events = _events(spec)
    initial = {"lib/bug.txt": "ok\n", "lib/build.txt": "ok\n", "lib/local.txt": "upstream line\n",
               "README": "a sparse stand-in for llvm-project\n"}
    for d in SPARSE_DIRS:
        initial.update({f"{d}/CMakeLists.txt": f"project({d})\n",
                        f"{d}/include/{d}/api.h": "int api(void);\n",
                        f"{d}/lib/Noise/n0.cpp": "int n0;\n"})
    out: list[bytes] = []
    for n in range(SPARSE_COMMITS + 1):
        # llvm/ (in the tests' cones) changes only below the bug, so that a step
        # between candidates above it writes nothing in a cone of lib and llvm.
        d = "llvm" if n % 3 == 0 and n < SPARSE_BUG_AT else ("mlir" if n % 2 else "clang")
        changes = initial if n == 0 else (events.get(n) or {
            f"{d}/lib/Noise/n{n % 5 + 1}.cpp": f"int n{n};\n" * (n % 7 + 1)})
        ts = EPOCH + n * 60
        out.append(b"commit refs/heads/main\nmark :%d\n" % (n + 1))
        out.append(b"author Upstream Dev <dev@example.com> %d +0000\n" % ts)
        out.append(b"committer Upstream Dev <dev@example.com> %d +0000\n" % ts)
        msg = f"upstream commit {n}: touch {', '.join(sorted(changes))}\n".encode()
        out.append(b"data %d\n%s\n" % (len(msg), msg))
        if n > 0:
            out.append(b"from :%d\n" % n)
        for path, content in sorted(changes.items()):
            raw = content.encode()
            out.append(f"M 100644 inline {path}\n".encode() + b"data %d\n%s\n" % (len(raw), raw))
    out.append(b"done\n")
    return b"".join(out)


def build_sparse_world(root: Path) -> World:
    """A world for sparse checkouts: the submodule has ``lib``, ``llvm``, ``mlir`` and
    ``clang``; upstream churn is mostly outside ``lib`` (the only directory the build and
    the repro read); the miscompile lands at upstream ``SPARSE_BUG_AT``.

    The fork's stack on upstream ``SPARSE_MERGE_BASE``: a patch touching only
    ``mlir/`` (out of any ``lib``/``llvm`` cone), then the ``lib/local.txt`` fixup. The
    superproject's ``main`` is an integrate history: ``init`` pins upstream 0 + fixup,
    ``advK`` pins upstream ``8K`` + fixup and rewrites ``docs/notes.txt`` (a superproject
    directory a sparse superproject leaves out), and its HEAD ``final`` pins the fork's
    main. Nothing is sparse yet: the tests choose the patterns. ``World.integrate`` names
    the superproject commits, ``World.pins`` the pin of each advance.
    """
    env = hermetic_env(root / "home")
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(env, upstream, "init", "-q")
    subprocess.run(["git", "fast-import", "--quiet", "--done"], cwd=upstream, env=env,
                   input=_sparse_stream(), check=True)
    git(env, upstream, "reset", "-q", "--hard", "main")
    shas = git(env, upstream, "rev-list", "--reverse", "main").split()
    work = root / "fork-work"
    git(env, root, "clone", "-q", str(upstream), str(work))
    pins: dict[int, str] = {}
    for k in range(SPARSE_COMMITS // SPARSE_ADVANCE + 1):
        git(env, work, "checkout", "-q", "-B", f"integrate-{k}", shas[SPARSE_ADVANCE * k])
        pins[k] = _commit_local_fixup(env, work)
    git(env, work, "checkout", "-q", "-B", "main", shas[SPARSE_MERGE_BASE])
    (work / "mlir/local").mkdir()
    (work / "mlir/local/ours.cpp").write_text("int ours;\n", encoding="utf-8")
    git(env, work, "add", "mlir/local/ours.cpp")
    git(env, work, "commit", "-q", "-m", "[local] mlir: our out-of-tree pass")
    _commit_local_fixup(env, work)
    stack = git(env, work, "rev-list", "--reverse", f"{shas[SPARSE_MERGE_BASE]}..HEAD").split()
    fork = root / "llvm-fork.git"
    git(env, root, "clone", "-q", "--bare", str(work), str(fork))
    sup = _make_superproject(env, root, fork, upstream)
    (sup / "docs").mkdir()
    names: dict[str, str] = {}

    def commit(name: str, pin: str) -> None:
        (sup / "docs/notes.txt").write_text(f"notes for {name}\n", encoding="utf-8")
        git(env, sup, "update-index", "--add", "--cacheinfo", f"160000,{pin},{SUBMODULE}")
        git(env, sup, "add", "-A", ".gitmodules", "build.sh", "repro.sh", "docs")
        git(env, sup, "commit", "-q", "-m", f"{name}: pin llvm-project at {pin[:12]}")
        names[name] = git(env, sup, "rev-parse", "HEAD")

    for k, pin in pins.items():
        commit("init" if k == 0 else f"adv{k}", pin)
    commit("final", stack[-1])
    git(env, sup, "submodule", "update", "-q", "--checkout")
    return World(root=root, env=env, upstream=upstream, fork=fork, superproject=sup,
                 shas=shas, stack=stack, integrate=names, pins=pins)


def make_partial(world: World) -> World:
    """Turn ``world``'s submodule into a ``--filter=blob:none`` partial clone (in place).

    The fork and the upstream serve filtered fetches (``uploadpack.allowFilter``,
    ``allowAnySHA1InWant`` for the blobs fetched later by id); the submodule is
    cloned again without blobs and ``upstream`` is fetched the same way, so
    both remotes are promisors, as after ``git submodule update --filter``.
    Only the blobs of the checked-out commit are present.
    """
    env, sup = world.env, world.superproject
    for repo in (world.upstream, world.fork):
        git(env, repo, "config", "uploadpack.allowFilter", "true")
        git(env, repo, "config", "uploadpack.allowAnySHA1InWant", "true")
    name = SUBMODULE
    git(env, sup, "submodule", "deinit", "-q", "-f", name)
    for gone in (sup / ".git" / "modules" / name, sup / name):
        subprocess.run(["rm", "-rf", str(gone)], check=True)
    git(env, sup, "config", f"submodule.{name}.url", f"file://{world.fork}")
    git(env, sup, "submodule", "update", "-q", "--init", "--filter=blob:none", name)
    sub = sup / name
    git(env, sub, "remote", "add", "upstream", f"file://{world.upstream}")
    git(env, sub, "fetch", "-q", "--filter=blob:none", "upstream")
    return world


def build_partial_world(root: Path, spec: WorldSpec | None = None) -> World:
    """:func:`build_world` whose submodule is a real ``--filter=blob:none`` partial clone."""
    return make_partial(build_world(root, spec))


#: :func:`build_merge_world`: upstream commits, the one that rewrites the first line of
#: lib/multi.txt, and the first bad one.
MERGE_COMMITS, MERGE_EDIT, MERGE_BUG = 24, 12, 6
#: :func:`build_merge_world`: the file both upstream and the local patch edit.
MERGE_PATH = "lib/multi.txt"


def build_merge_world(root: Path, path: str = MERGE_PATH, our_line: int = 9) -> World:
    """A small world whose local patch needs a real 3-way content merge below MERGE_EDIT.

    Upstream: ``path`` (ten lines; ``lib/multi.txt`` by default: any name, a
    Latin-1 one say, given as ``os.fsdecode`` of its bytes) from commit 0, its
    first line rewritten at ``MERGE_EDIT``, lib/bug.txt miscompiles from
    ``MERGE_BUG``. The fork (on the last upstream commit) carries one local
    patch rewriting line ``our_line`` of ``path``: with the default, the *last*
    one, so at a candidate before ``MERGE_EDIT`` both sides changed the file
    (different lines) and neither side's version can be taken whole; with
    ``our_line=0`` the patch conflicts at every candidate before ``MERGE_EDIT``.
    """
    env = hermetic_env(root / "home")
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(env, upstream, "init", "-q")
    lines = [f"line {i}\n" for i in range(10)]
    for n in range(MERGE_COMMITS + 1):
        files = {"lib/filler.txt": f"change {n}\n"}
        if n == 0:
            files.update({path: "".join(lines), "lib/bug.txt": "ok\n",
                          "lib/build.txt": "ok\n"})
        if n == MERGE_EDIT:
            files[path] = "".join(["upstream rewrote line 0\n", *lines[1:]])
        if n == MERGE_BUG:
            files["lib/bug.txt"] = "miscompile\n"
        for name, text in files.items():
            (upstream / name).parent.mkdir(parents=True, exist_ok=True)
            (upstream / name).write_text(text, encoding="utf-8")
        git(env, upstream, "add", "-A")
        git(env, upstream, "commit", "-q", "-m", f"upstream commit {n}")
    shas = git(env, upstream, "rev-list", "--reverse", "main").split()
    work = root / "fork-work"
    git(env, root, "clone", "-q", str(upstream), str(work))
    ours = (work / path).read_text(encoding="utf-8").splitlines(keepends=True)
    ours[our_line] = f"our line {our_line}\n"
    (work / path).write_text("".join(ours), encoding="utf-8")
    git(env, work, "commit", "-q", "-am", f"[local] our line {our_line}")
    fork, sup = _pinning_superproject(env, root, work, upstream)
    return World(root=root, env=env, upstream=upstream, fork=fork, superproject=sup,
                 shas=shas, stack=[git(env, work, "rev-parse", "HEAD")])


def make_shallow_world(world: World, fork_args: Sequence[str],
                       upstream_args: Sequence[str]) -> None:
    """Make ``world``'s submodule a shallow clone, as CI and ``git submodule update
    --depth`` leave it: cloned again from the fork with ``git submodule update --init
    FORK_ARGS`` (e.g. ``--depth 1``), then the upstream remote fetched with
    ``UPSTREAM_ARGS`` (e.g. ``--depth=150``). file:// URLs: git ignores --depth for
    plain paths. The superproject's own history and status are unchanged."""
    sup, env = world.superproject, world.env
    shutil.rmtree(sup / ".git" / "modules" / SUBMODULE)
    shutil.rmtree(sup / SUBMODULE)
    git(env, sup, "config", f"submodule.{SUBMODULE}.url", f"file://{world.fork}")
    git(env, sup, "submodule", "update", "-q", "--init", *fork_args, SUBMODULE)
    sub = sup / SUBMODULE
    git(env, sub, "remote", "add", "upstream", f"file://{world.upstream}")
    git(env, sub, "fetch", "-q", *upstream_args, "upstream")


def copy_world(template: World, dest: Path) -> World:
    """A fresh copy of ``template`` under ``dest``: its superproject (with the submodule's
    git dir inside); upstream and fork are shared, read only. The copies' stat data differ
    from their indexes', so both are refreshed, as a user's checkout is (``git
    sparse-checkout`` would otherwise keep files it cannot tell are clean)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template.superproject, dest / "superproject", symlinks=True)
    w = replace(template, root=dest, env=hermetic_env(dest / "home"),
                superproject=dest / "superproject")
    for repo in (w.superproject, w.submodule):
        w.git(repo, "update-index", "-q", "--refresh")
    return w
