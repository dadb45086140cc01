"""Fingerprints of what a verdict depends on besides the trees: files, directories,
submodules not moved by the strategy, and the superproject's local state (untracked
repositories inside it included).

Part of the verdict cache's key (:mod:`bisectkit.store.cachekey`); a file that cannot
be read is a fingerprint of its own (never a crash, never a stale hit).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from bisectkit.errors import BadInput, BisectkitError
from bisectkit.git.repo import Repo
from bisectkit.store.pathglobs import PathGlobs

#: An untracked superproject file up to this size is hashed by content...
CONTENT_LIMIT = 1 << 20
#: ...while one run's scan has read less than this; the rest are keyed by size and mtime,
#: so an in-tree build directory git does not ignore costs stats, not gigabytes of reads.
SCAN_BUDGET = 64 << 20
#: Untracked repositories inside untracked repositories are looked into this deep.
NESTED_DEPTH = 2


def file_digest(path: str | Path, small: bool = False) -> str:
    """sha256 of a file's content, whatever its size (``small``: read in one go)."""
    try:
        with open(path, "rb") as fh:
            if small:  # thousands of small untracked files: skip file_digest's buffer
                return hashlib.sha256(fh.read()).hexdigest()
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        # The repro cannot read it either; a change of that is still a change.
        return f"unreadable: {exc.strerror}"


def input_digest(path: Path) -> str:
    """sha256 of a ``--cache-input``: a file's content, or a directory's files (recursively:
    sorted relative paths, link targets and contents; ``.git`` skipped)."""
    if not path.is_dir():
        return file_digest(path)
    h = hashlib.sha256()
    for top, dirs, files in os.walk(path, onerror=_raise):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            if name == ".git":
                continue
            full = Path(top, name)
            rel = full.relative_to(path).as_posix()
            what = "link " + os.readlink(full) if full.is_symlink() else file_digest(full)
            h.update(f"{rel}\0{what}\0".encode("utf-8", "surrogateescape"))
        # Symlinks to directories are not followed (os.walk lists them as dirs).
        for name in dirs:
            link = Path(top, name)
            if link.is_symlink():
                h.update(f"{link.relative_to(path).as_posix()}\0link "
                         f"{os.readlink(link)}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _raise(exc: OSError) -> None:
    raise BadInput(f"--cache-input: cannot read {exc.filename}: {exc.strerror}")


def submodule_states(sp: Repo, moved: Collection[str]) -> dict[str, Any]:
    """HEAD and local edits of every submodule the strategy does not check out.

    Those stay wherever the user left them for the whole bisection, which may
    not be what the superproject pins: the build uses them as they are.
    """
    states: dict[str, Any] = {}
    for path in sorted(set(sp.worktree.gitlinks()) - set(moved)):
        if not (sp.workdir / path / ".git").exists():
            states[path] = "not initialised"
            continue
        try:
            sub = Repo(sp.workdir / path)
            head = sub.worktree.head_state().sha
        except BadInput as exc:
            states[path] = f"unreadable: {exc}"
            continue
        changes = sub.worktree.local_changes(untracked=False)
        states[path] = {"head": head, "modified": {
            p: _state_of(f"{sub.workdir}/{p}") for p in changes.modified}}
    return states


def local_state(sp: Repo, skip: Collection[str], own: Mapping[str, str] | None = None,
                ignore: PathGlobs | None = None, prefix: str = "",
                depth: int = 0) -> dict[str, dict[str, str]]:
    """The superproject's local edits and untracked files (not ignored), path -> digest.

    ``skip``: absolute paths of files the run writes itself; ``own``: files
    earlier runs wrote (path -> digest), skipped while they still hold that;
    ``ignore``: ``bisectkit.cacheIgnore`` patterns. Contents are read
    smallest file first, each up to :data:`CONTENT_LIMIT` and all together up
    to :data:`SCAN_BUDGET` (so small inputs are read even beside a build
    directory git does not ignore); the files left over are keyed by size and
    mtime (in nanoseconds). An untracked repository (a test suite cloned
    inside the superproject) is one item: the digest of its HEAD and of its
    own local state (:func:`_nested`; ``prefix``: its path, ``depth``: how
    deep it is).
    """
    changes = sp.worktree.local_changes(untracked=True)
    root = str(sp.workdir)
    state: dict[str, dict[str, str]] = {}
    regular: list[tuple[int, str, str, os.stat_result]] = []
    for kind, paths in (("modified", changes.modified), ("untracked", changes.untracked)):
        state[kind] = {}
        for rel in paths:
            # Plain strings, not Path: pathlib's overhead was most of a 5,000-file scan.
            full = f"{root}/{rel.rstrip('/')}"
            if full in skip or (ignore and ignore.match(prefix + rel)) or _still_own(full, own):
                continue
            try:
                st = os.lstat(full)
            except OSError as exc:
                state[kind][rel] = _unreadable(exc)
                continue
            if stat.S_ISREG(st.st_mode):
                regular.append((st.st_size, kind, rel, st))
            elif stat.S_ISDIR(st.st_mode) and os.path.lexists(full + "/.git"):
                state[kind][rel] = _nested(full, skip, own, ignore, prefix + rel, depth + 1)
            else:
                state[kind][rel] = _special(full, st)
    budget = SCAN_BUDGET
    for size, kind, rel, st in sorted(regular, key=lambda r: (r[0], r[2])):
        if size <= CONTENT_LIMIT and size <= budget:
            budget -= size
            state[kind][rel] = file_digest(f"{root}/{rel}", small=True)
        else:
            state[kind][rel] = f"size {size} mtime_ns {st.st_mtime_ns}"
    return state


def _nested(path: str, skip: Collection[str], own: Mapping[str, str] | None,
            ignore: PathGlobs | None, prefix: str, depth: int) -> str:
    """An untracked repository inside the superproject, as one digest: its HEAD and its
    own edits and untracked files (git status does not look into it)."""
    if depth > NESTED_DEPTH:
        return "repository (too deeply nested: not looked into)"
    try:
        repo = Repo(Path(path))
        if repo.workdir != Path(path).resolve():  # a broken .git: git found the one above
            return "repository, unreadable: its .git does not open"
        try:
            head = repo.worktree.head_state().sha
        except BadInput:
            head = "no commits"
        local = local_state(repo, skip, own, ignore, prefix.rstrip("/") + "/", depth)
    except BisectkitError as exc:
        return f"repository, unreadable: {exc}"
    material = json.dumps([head, local], sort_keys=True).encode("utf-8", "surrogateescape")
    return "repository " + hashlib.sha256(material).hexdigest()


def _still_own(path: str, own: Mapping[str, str] | None) -> bool:
    """Does ``path`` still hold what bisectkit wrote there (a ``--json`` of a past run)?"""
    return own is not None and path in own and file_digest(path) == own[path]


def _state_of(path: str) -> str:
    """A tracked file's content digest (or what it is instead: deleted, a link...)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return _unreadable(exc)
    return file_digest(path) if stat.S_ISREG(st.st_mode) else _special(path, st)


def _special(path: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "link " + os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "directory"  # git lists a directory only as a nested repository
    return f"mode {st.st_mode:o}"


def _unreadable(exc: OSError) -> str:
    return "deleted" if isinstance(exc, FileNotFoundError) else f"unreadable: {exc.strerror}"
