"""A repository's sparse checkout: which tracked paths git writes to its work tree.

``git sparse-checkout set llvm mlir`` leaves the other directories out of
the work tree: their index entries carry the *skip-worktree* bit and no
file. git's own commands (``read-tree -m -u``, ``read-tree --reset -u``,
``status``) honour the patterns; libgit2 does not (its status reports such
files as deleted, and it cannot read a *sparse index* at all). This module
reads the configuration (``core.sparseCheckout``, ``core.sparseCheckoutCone``
and ``<git dir>/info/sparse-checkout``, where a submodule's git dir is
``.git/modules/<name>``) and the skip-worktree bits, for the code that must
tell "not on disk by design" from "deleted by the user".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import bisectkit.git.cli as gitcli
from bisectkit.git.shapes.base import NOTHING, Fetched, Narrowing, PathFilter

#: Values git reads as true for a boolean config key.
_TRUE = ("true", "yes", "on", "1")


@dataclass(frozen=True)
class SparseCheckout:
    """A repository's sparse-checkout patterns, read once (:func:`of`)."""

    #: Cone mode (``core.sparseCheckoutCone`` and patterns in cone form): :meth:`covers`
    #: is exact. Otherwise gitignore-style patterns, and :meth:`covers` is conservative.
    cone: bool
    #: Cone mode: the directories checked out in full, as ``git sparse-checkout list``
    #: prints them; otherwise the pattern lines of the file.
    patterns: tuple[str, ...]
    #: The file's content, exactly (the verdict cache's key material).
    text: str
    #: Cone mode: the ancestors of the listed directories (their own files are written).
    parents: frozenset[str] = frozenset()

    def covers(self, path: str) -> bool:
        """May git write ``path`` (a tracked file, relative to the work tree, ``/``-separated)?

        Cone mode, exact: a file at the root, a file directly inside a parent of
        a listed directory, or anything under a listed directory. Non-cone mode:
        ``False`` only where no pattern can match (an empty pattern list),
        otherwise ``True`` ("may be on disk"); the exact answer for a path in the
        index is its skip-worktree bit (:func:`skip_worktree`). Stable API: the
        partial-clone prefetch calls it to fetch only the blobs git will write.
        """
        if not self.cone:
            return bool(self.patterns)
        parent, _, _ = path.rpartition("/")
        if not parent or parent in self.parents:
            return True
        return any(path.startswith(d + "/") for d in self.patterns)

    def describe(self) -> str:
        """``cone: llvm mlir`` or ``non-cone: /* !/mlir/``: one line for the user."""
        return f"{'cone' if self.cone else 'non-cone'}: {' '.join(self.patterns) or '(none)'}"

    def to_json(self) -> dict[str, object]:
        """``{"mode": "cone"|"non-cone", "patterns": [...]}`` (``bisectkit status``)."""
        return {"mode": "cone" if self.cone else "non-cone", "patterns": list(self.patterns)}


def of(git_dir: Path, config_get: Callable[[str], str | None]) -> SparseCheckout | None:
    """The sparse checkout of the repository at ``git_dir`` (``config_get``: its config);
    ``None`` when ``core.sparseCheckout`` is off."""
    if not _flag(config_get("core.sparseCheckout")):
        return None
    try:
        text = (git_dir / "info" / "sparse-checkout").read_text(encoding="utf-8",
                                                                errors="surrogateescape")
    except OSError:
        text = ""  # git writes nothing but the root's files then
    return parse(text, _flag(config_get("core.sparseCheckoutCone")))


def sparse_index_fix(workdir: Path) -> str:
    """The one command that makes git keep a full index, patterns unchanged."""
    return gitcli.shown("-C", workdir, "sparse-checkout", "init", "--cone", "--no-sparse-index")


def parse(text: str, cone_config: bool) -> SparseCheckout:
    """Read a sparse-checkout file; cone mode only when configured *and* in cone form
    (git itself falls back to gitignore-style matching otherwise)."""
    lines = tuple(ln for ln in (raw.rstrip("\r") for raw in text.splitlines())
                  if ln.strip() and not ln.startswith("#"))
    if cone_config:
        found = _cone(lines)
        if found is not None:
            recursive, parents = found
            return SparseCheckout(True, tuple(sorted(recursive)), text, frozenset(parents))
    return SparseCheckout(False, lines, text)


def _cone(lines: tuple[str, ...]) -> tuple[set[str], set[str]] | None:
    """(listed directories, their parents) of cone-form patterns; ``None`` if not cone form.

    Cone form: ``/*`` and ``!/*/``, then ``/D/`` for each directory and
    ``!/D/*/`` for each parent (whose own files only are included).
    """
    if lines[:2] != ("/*", "!/*/"):
        return None
    dirs: set[str] = set()
    parents: set[str] = set()
    for line in lines[2:]:
        if line.startswith("!/") and line.endswith("/*/"):
            parents.add(_unescape(line[2:-3]))
        elif line.startswith("/") and line.endswith("/") and len(line) > 2:
            dirs.add(_unescape(line[1:-1]))
        else:
            return None
    # A parent is listed too (as /P/ then !/P/*/); only what is not a parent is recursive.
    return dirs - parents, parents


def _unescape(text: str) -> str:
    """git escapes ``\\``, ``*``, ``?``, ``[`` and ``]`` in cone patterns with a backslash."""
    out: list[str] = []
    escaped = False
    for ch in text:
        if ch == "\\" and not escaped:
            escaped = True
            continue
        out.append(ch)
        escaped = False
    return "".join(out)


def skip_worktree(workdir: Path) -> frozenset[str]:
    """Index paths with the skip-worktree bit: tracked, and not written to the work tree
    (``git ls-files -t``: pygit2's index entries do not expose the bit)."""
    return frozenset(p for p, skipped in index_bits(workdir).items() if skipped)


def index_bits(workdir: Path) -> dict[str, bool]:
    """Every index path, with its skip-worktree bit."""
    out = gitcli.read_bytes(workdir, f"cannot read the index of {workdir}",
                            "ls-files", "-t", "-z")
    return {os.fsdecode(rec[2:]): rec[:2] == b"S " for rec in out.split(b"\0") if rec}


def _flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() in _TRUE


class Configured(Protocol):
    """What the sparse shape reads of a repository (:class:`~bisectkit.git.repo.Repo` has it)."""

    @property
    def workdir(self) -> Path:
        """The work tree."""
        ...

    @property
    def git_dir(self) -> Path:
        """The repository's private directory (``.git`` or ``.git/modules/<name>``)."""
        ...

    def config_get(self, key: str) -> str | None:
        """A config value; ``None`` when it is not set."""
        ...


@dataclass(frozen=True)
class _Cone:
    """Cone mode: the patterns alone say exactly which paths git writes."""

    sparse: SparseCheckout

    def may_write(self, path: str) -> bool:
        return self.sparse.covers(path)

    def written(self, paths: Sequence[str]) -> list[str]:
        return [p for p in paths if self.sparse.covers(p)]


@dataclass(frozen=True)
class _Bits:
    """Non-cone mode: the skip-worktree bits git keeps in the index say, ``before`` the
    checkout (a path it removes from the index) and after it."""

    workdir: Path
    before: dict[str, bool]

    def may_write(self, path: str) -> bool:
        # A path new to the index may be written: only a set bit says it is not.
        return not self.before.get(path, False)

    def written(self, paths: Sequence[str]) -> list[str]:
        after = index_bits(self.workdir)
        return [p for p in paths
                if not (after[p] if p in after else self.before.get(p, False))]


class SparseShape:
    """A sparse checkout, as a :class:`~bisectkit.git.shapes.Shape`: tracked files git
    leaves out of the work tree, by patterns a verdict depends on."""

    name = "sparse"
    key_changed: str | None = "the sparse-checkout patterns changed"

    def detect(self, repo: Configured) -> bool:
        """Is ``core.sparseCheckout`` on?"""
        return of(repo.git_dir, repo.config_get) is not None

    def cache_material(self, repo: Configured) -> dict[str, Any] | None:
        """The patterns: they decide which files the build sees, so a verdict tested in
        another cone is not the same test."""
        shape = of(repo.git_dir, repo.config_get)
        return None if shape is None else {"cone": shape.cone, "patterns": shape.text}

    def narrowing(self, repo: Configured, index: bool) -> Narrowing | None:
        """Only the paths the patterns cover. Cone mode: exact from the patterns. Non-cone
        mode: from the index's skip-worktree bits, read now (before the checkout), when
        ``index``; without it nothing narrows (every path may be written)."""
        shape = of(repo.git_dir, repo.config_get)
        if shape is None:
            return None
        if shape.cone:
            return _Cone(shape)
        return _Bits(repo.workdir, index_bits(repo.workdir)) if index else None

    def prefetch(self, repo: Configured, old: str | None, new: str,
                 wanted: PathFilter | None) -> Fetched:
        """Nothing: a sparse checkout lacks no object (:meth:`narrowing` tells a partial
        clone's prefetch which blobs are not needed)."""
        return NOTHING

    def mirror(self, user: Configured, workspace: Path) -> None:
        """Give ``workspace`` the sparse checkout of ``user`` (or none, as ``user`` has):
        a workspace writes no file the user's checkout leaves out (nor, in a partial
        clone, needs its blobs)."""
        shape = of(user.git_dir, user.config_get)
        what = f"git config in workspace {workspace}"
        gitcli.checked(workspace, what, "config", "core.sparseCheckout",
                       "true" if shape is not None else "false")
        if shape is not None:
            gitcli.checked(workspace, what, "config", "core.sparseCheckoutCone",
                           "true" if shape.cone else "false")
            (workspace / ".git" / "info").mkdir(exist_ok=True)
            (workspace / ".git" / "info" / "sparse-checkout").write_text(
                shape.text, encoding="utf-8", errors="surrogateescape")

    def status(self, repo: Configured) -> dict[str, Any] | None:
        """``{"mode": "cone"|"non-cone", "patterns": [...]}``."""
        shape = of(repo.git_dir, repo.config_get)
        return None if shape is None else shape.to_json()

    def status_line(self, data: dict[str, Any]) -> str:
        """``sparse checkout (cone: llvm mlir); only those directories are written``."""
        cone = data["mode"] == "cone"
        return (f"sparse checkout ({data['mode']}: {' '.join(data['patterns'])}); only "
                f"{'those directories are' if cone else 'the files they match are'} written")


#: The sparse shape (registered in :data:`bisectkit.git.shapes.SHAPES`).
SHAPE = SparseShape()
