"""Files on disk around a checkout: what stands in its way, and mtimes it must move.

Helpers of :mod:`bisectkit.safety.worktree` that only read the disk (and ask the
repository what a tree tracks), or fix what a rewrite leaves behind.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from bisectkit.git.repo import Repo


def obstacles(repo: Repo, base: str, added: Sequence[str]) -> list[str]:
    """Untracked or ignored files where a move from tree ``base`` writes ``added`` paths.

    A path counts when something is on disk there (an empty directory
    excepted: git replaces it), or when one of its parent directories is a
    file that ``base`` does not track. Paths outside a sparse checkout's patterns
    count too: git does not write them, but git (2.37+) clears the skip-worktree
    bit of an entry whose file is present, adopting the file as a tracked one
    that differs from the commit (the build would see it; the restore would
    refuse it as a local change).
    """
    found: list[str] = []
    for path in added:
        full = repo.workdir / path
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is not None:
            if stat.S_ISDIR(st.st_mode) and not _untracked_inside(repo, base, path):
                continue
            found.append(path)
            continue
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            try:
                pst = os.lstat(repo.workdir / prefix)
            except OSError:
                break
            if not stat.S_ISDIR(pst.st_mode):
                if not repo.trees.tracks(base, prefix):
                    found.append(prefix)
                break
    return list(dict.fromkeys(found))


def _untracked_inside(repo: Repo, base: str, path: str) -> bool:
    """Does directory ``path`` hold anything that tree ``base`` does not track?"""
    for dirpath, _dirs, files in os.walk(repo.workdir / path):
        rel = Path(dirpath).relative_to(repo.workdir).as_posix()
        for name in files:
            if not repo.trees.tracks(base, f"{rel}/{name}"):
                return True
    return False


def prune_empty_dirs(workdir: Path, path: str) -> None:
    """Remove the directories above ``path`` that are now empty (as git does)."""
    parent = Path(path).parent
    while parent != Path("."):
        try:
            (workdir / parent).rmdir()
        except OSError:
            return
        parent = parent.parent


def recently_written(workdir: Path, paths: Sequence[str]) -> dict[str, os.stat_result]:
    """Stat of the files about to be rewritten whose mtime is in the current second.

    Only those can end up with the same whole-second mtime after the rewrite.
    """
    now = int(time.time())
    found = {}
    for p in paths:
        try:
            st = os.stat(workdir / p, follow_symlinks=False)
        except OSError:
            continue
        if int(st.st_mtime) >= now:
            found[p] = st
    return found


def freshen_mtimes(workdir: Path, before: dict[str, os.stat_result]) -> int:
    """Give every rewritten file an mtime in a later whole second than its old one.

    Caches keyed on whole-second mtime plus size (Python's .pyc, some build
    tools) miss a same-size rewrite within the same second. Only files
    rewritten less than a second after their previous write can collide;
    they get the next whole second (at most one second ahead of the clock)
    instead of making the step wait a second. Returns how many were moved.
    """
    moved = 0
    for p, old in before.items():
        try:
            new = os.stat(workdir / p, follow_symlinks=False)
        except OSError:
            continue  # removed by the checkout
        if int(new.st_mtime) <= int(old.st_mtime) and new.st_size == old.st_size:
            # An old mtime already bumped into the future (rewrites faster than
            # one a second) is waited out, so the clock skew never exceeds 1 s.
            ahead = int(old.st_mtime) - time.time()
            if ahead > 0:
                time.sleep(ahead)
            bumped = (int(old.st_mtime) + 1) * 1_000_000_000
            os.utime(workdir / p, ns=(new.st_atime_ns, bumped), follow_symlinks=False)
            moved += 1
    return moved
