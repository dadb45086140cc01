"""Workspaces: bisectkit's own checkouts of the superproject, where parallel steps run.

A workspace is a superproject with its submodules, cloned from the user's
repositories (``--shared`` on this machine, plain clones on a cluster
worker), kept between runs so its build directory stays warm. It holds no
one's work: a kill at any instant is repaired by the next checkout
(``checkout -f`` rewrites the tracked files that differ, and leaves the
untracked build outputs alone). Workspaces ``ws-1``, ``ws-2``... live under
a root; a step takes the first whose lock (``ws-N.lock``, an ``flock`` the
kernel drops when its holder dies) is free.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from bisectkit.errors import GitFailure, InfrastructureFailed
from bisectkit.git import cli as gitcli
from bisectkit.git.repo import Repo
from bisectkit.git.shapes import sparse
from bisectkit.git.shapes.partial import NOTHING, Fetched
from bisectkit.model import SUPERPROJECT
from bisectkit.patches.stack import Stack, replay
from bisectkit.pipeline.parallel.wsroot import MARKER, forget, number, ours, take
from bisectkit.safety.processes import gits_working_in
from bisectkit.strategies.base import Replay

#: How long a workspace waits for a git a killed run left writing its index.
_INDEX_LOCK_WAIT_S = 10.0
#: git settings for every command in a workspace, besides those gitcli pins everywhere
#: (no recursing into submodules, no hooks, no auto gc).
_SAFE = ("-c", "advice.detachedHead=false")


def default_root(git_dir: Path) -> Path:
    """Where ``--jobs`` keeps its workspaces unless ``--workspace-root`` says."""
    return git_dir / "bisectkit" / "workspaces"


def sources_of(workdir: Path) -> list[str]:
    """Where a workspace clones and fetches a repository from: the user's own first (it
    has every commit, ours included), then the URLs of its remotes."""
    out = gitcli.run(workdir, "config", "--get-regexp", r"^remote\..*\.url$").stdout
    urls = [str(workdir)]
    for line in out.splitlines():
        url = line.partition(" ")[2].strip()
        if url.startswith(("./", "../")):
            url = str((workdir / url).resolve())
        urls.append(url)
    return list(dict.fromkeys(u for u in urls if u))


class Workspace:
    """One workspace, locked by this process while a step uses it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.job = number(path)
        self._fd = fd

    def release(self) -> None:
        """Let another step use it (the lock also goes when this process dies)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def materialise(self, checkouts: Mapping[str, str], sources: Mapping[str, Sequence[str]],
                    again: Replay | None, shared: bool) -> tuple[int, dict[str, str]]:
        """Check out ``checkouts`` (``.`` first, then the submodules) with as few writes as
        git allows; (files written, the tree each repository now holds)."""
        written, trees = 0, {}
        for key in sorted(checkouts, key=lambda k: k != SUPERPROJECT):
            where = self.path if key == SUPERPROJECT else self.path / key
            self._ensure_clone(where, sources.get(key, ()), shared)
            shape = _mirror_sparse(where, sources.get(key, ()))
            sha = checkouts[key]
            if not _has_commit(where, sha):
                if again is not None and again.path == key:
                    # Our patched commit exists only in the user's repository: make it
                    # here by the same replay (never fetched: a real remote lacks it).
                    sha = self._replay(where, again, sources.get(key, ()))
                else:
                    _fetch(where, sources.get(key, ()), [sha])
            written += _checkout(where, sha, shape)
            trees[key] = _git(where, "rev-parse", "HEAD^{tree}").stdout.strip()
        return written, trees

    def _ensure_clone(self, where: Path, sources: Sequence[str], shared: bool) -> None:
        """Clone ``where`` from the first source that works, unless it is there."""
        top = where == self.path
        if (where / ".git").is_dir() and (ours(where) or not top):
            _settle_locks(where)
            return
        if top and where.exists() and (where.is_file() or any(where.iterdir())):
            raise InfrastructureFailed(f"{where} is not a bisectkit workspace (bisectkit did "
                                       "not make it): it was left untouched; move it away or "
                                       "choose another --workspace-root")
        tmp = where.with_name(where.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)  # a clone a kill cut short
        problems = []
        for src in sources:
            flags = ["--shared"] if shared else []
            proc = _git(where.parent, "clone", "-q", "--no-checkout", *flags, src, str(tmp),
                        check=False)
            if proc.returncode == 0:
                break
            problems.append(f"{src}: {' '.join(proc.stderr.split())}")
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            raise InfrastructureFailed(f"cannot create workspace {where}: "
                                       f"{'; '.join(problems) or 'no source to clone from'}")
        if top:
            (tmp / ".git" / MARKER).write_text("made by bisectkit --jobs\n", encoding="utf-8")
        if where.is_dir() and not any(where.iterdir()):
            where.rmdir()  # the empty folder a superproject checkout leaves for a gitlink
        os.rename(tmp, where)

    def _replay(self, where: Path, again: Replay, sources: Sequence[str]) -> str:
        """Make the patched commit here with the stack replay; its tree must be ``again.tree``."""
        stack = Stack.from_json(again.stack)
        wanted = [again.onto, stack.head] + [p.refers_to for p in stack.patches if p.refers_to]
        missing = [sha for sha in wanted if not _has_commit(where, sha)]
        if missing:
            _fetch(where, sources, missing)
        repo = Repo(where)
        result = replay(repo, stack, again.onto, repo.is_ancestor,
                        "drop" if again.on_conflict == "drop" else "skip")
        if result.conflict is not None or str(result.tree) != again.tree:
            raise InfrastructureFailed(
                f"workspace {where}: replaying the patch stack onto {again.onto[:12]} gave "
                f"tree {str(result.tree)[:12]}, not {again.tree[:12]} as on the client; no "
                "verdict is taken from a tree that differs")
        return str(result.commit)


def prefetch_trees(root: Path, checkouts: Mapping[str, str]) -> Fetched:
    """Fetch into the user's repositories every blob missing from the trees ``checkouts``
    names (``.`` is ``root``), before a workspace checks them out; a no-op for full clones.

    A workspace borrows the user's objects (``clone --shared``) and is no partial
    clone itself: git there cannot fetch what a partial clone lacks. Its state is
    unknown to the client, so the whole tree is wanted (most of it is here already).
    """
    got = NOTHING
    for key, sha in checkouts.items():
        repo = _opened(str(root if key == SUPERPROJECT else root / key))
        if repo.promisor.partial and repo.has_commit(sha):
            # A sparse cone: the workspace writes only the cone too (_mirror_sparse).
            shape = sparse.of(repo.git_dir, repo.config_get)
            wanted = shape.covers if shape is not None and shape.cone else None
            got = got + repo.promisor.ensure(
                repo.trees.changed_blobs(None, repo.tree_of(sha), wanted))
    return got


@functools.lru_cache(maxsize=16)
def _opened(path: str) -> Repo:
    return Repo(path)


@contextlib.contextmanager
def taken(root: Path) -> Iterator[Workspace]:
    """The first free workspace under ``root`` (``ws-1``, ``ws-2``...), locked while used."""
    root.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        path = root / f"ws-{n}"
        fd = take(path)
        if fd is not None:
            ws = Workspace(path, fd)
            try:
                yield ws
            finally:
                ws.release()
                forget(path)
            return
        n += 1


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = gitcli.run(cwd, *_SAFE, *args)
    if check and proc.returncode != 0:
        raise GitFailure(f"git {args[0]} in workspace {cwd}: {' '.join(proc.stderr.split())}")
    return proc


def _has_commit(where: Path, sha: str) -> bool:
    return _git(where, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0


def _fetch(where: Path, sources: Sequence[str], shas: Sequence[str]) -> None:
    """Fetch ``shas`` from the first source that has them (a fetch by id)."""
    for src in sources:
        if _git(where, "fetch", "-q", "--no-tags", src, *shas, check=False).returncode == 0:
            return
    raise InfrastructureFailed(f"workspace {where}: cannot fetch "
                               f"{', '.join(s[:12] for s in shas)} from any of {list(sources)}")


def _settle_locks(where: Path) -> None:
    """A git that a killed run left writing here: let it finish, or clear its lock files
    (``index.lock``, ``HEAD.lock``, a ref's or ``packed-refs.lock``: a git killed with
    bisectkit leaves them, and every later git here would fail on them)."""
    git_dir = where / ".git"

    def locks() -> list[Path]:
        found = [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "packed-refs.lock"]
        return [p for p in found if os.path.lexists(p)] + list((git_dir / "refs").rglob("*.lock"))

    deadline = time.monotonic() + _INDEX_LOCK_WAIT_S
    while locks() and gits_working_in([where]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for lock in locks():
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()  # we hold the workspace: nobody else of ours writes here


def _mirror_sparse(where: Path, sources: Sequence[str]) -> sparse.SparseCheckout | None:
    """Give the workspace repository ``where`` the sparse checkout of the user's (the first
    source): a workspace writes no file the user's checkout leaves out (nor, in a partial
    clone, needs its blobs). Sources that are not local repositories: left as it is."""
    user = Path(sources[0]) if sources else None
    if user is None or not (user / ".git").exists():
        return None
    opened = _opened(str(user.resolve()))
    shape = sparse.of(opened.git_dir, opened.config_get)
    _git(where, "config", "core.sparseCheckout", "true" if shape is not None else "false")
    if shape is not None:
        _git(where, "config", "core.sparseCheckoutCone", "true" if shape.cone else "false")
        (where / ".git" / "info").mkdir(exist_ok=True)
        (where / ".git" / "info" / "sparse-checkout").write_text(shape.text, encoding="utf-8",
                                                                 errors="surrogateescape")
    return shape


def _checkout(where: Path, sha: str, shape: sparse.SparseCheckout | None) -> int:
    """``checkout -f --detach``: writes the tracked files that differ (repairing any a kill
    left half written) and nothing else, only those a sparse checkout covers; how many."""
    # -z: names as they are (not C-quoted, as a name that is not ASCII would be).
    diff = _git(where, "diff", "-z", "--name-only", "--no-renames", "HEAD", sha, check=False) \
        if (where / ".git" / "index").exists() else None
    # Never checked out, or a HEAD whose objects are gone (a --shared clone borrows them
    # from the user's repository, and a gc there drops our patched commits): all files.
    listed = diff.stdout if diff is not None and diff.returncode == 0 else \
        _git(where, "ls-tree", "-z", "-r", "--name-only", sha).stdout
    _git(where, "checkout", "-q", "-f", "--detach", sha)
    return sum(1 for p in listed.split("\0") if p and (shape is None or not shape.cone
                                                      or shape.covers(p)))
