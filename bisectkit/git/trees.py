"""Reading trees: what a tree holds at a path, and what changes between two trees.

:class:`Trees` is ``Repo.trees``. Trees are objects, the same whatever the
checkout holds: the mover (:mod:`bisectkit.safety.worktree`), the cache key and
the checks on files ask it about the trees a step moves between; what HEAD, the
index and the files hold is :mod:`bisectkit.git.checkout`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pygit2
from pygit2.enums import DeltaStatus

import bisectkit.git.objects as gitobjects
from bisectkit.git.objects import GITLINK_MODE
from bisectkit.git.treediff import tree_diff


@dataclass(frozen=True)
class TreeDiff:
    """What changes between two trees."""

    #: Every path that differs (old and new names).
    paths: tuple[str, ...]
    #: Paths rewritten in place (present on both sides).
    modified: tuple[str, ...]
    #: Paths only the new tree has (files and links; not gitlinks).
    added: tuple[str, ...]


class Trees:
    """The trees of one repository's object database, by id (``Repo.trees``)."""

    def __init__(self, repo: pygit2.Repository) -> None:
        #: The libgit2 handle the trees are read from.
        self._repo = repo

    def diff_trees(self, old: str, new: str) -> TreeDiff:
        """What changes between two trees: every path, those rewritten in place, those added."""
        if old == new:
            return TreeDiff((), (), ())
        paths: set[str] = set()
        modified: list[str] = []
        added: list[str] = []
        for delta in tree_diff(self._repo, self._tree(old), self._tree(new)):
            paths.add(delta.path)
            if delta.status == DeltaStatus.MODIFIED:
                modified.append(delta.path)
            elif delta.status == DeltaStatus.ADDED and delta.new and \
                    delta.new[1] != GITLINK_MODE:
                added.append(delta.path)
        return TreeDiff(tuple(sorted(paths)), tuple(modified), tuple(sorted(added)))

    def changed_blobs(self, old: str | None, new: str,
                      wanted: Callable[[str], bool] | None = None) -> set[str]:
        """Ids of the blobs tree ``new`` has where it differs from ``old`` (``None``: the
        empty tree) at paths ``wanted`` keeps: what a checkout from one to the other writes."""
        if old == new:
            return set()
        before = self._tree(old) if old else None
        return {str(d.new[0]) for d in tree_diff(self._repo, before, self._tree(new))
                if d.new is not None and d.new[1] != GITLINK_MODE and
                (wanted is None or wanted(d.path))}

    def tracks(self, tree: str, path: str) -> bool:
        """Does ``tree`` have an entry (file, link, directory or gitlink) at ``path``?"""
        return gitobjects.entry(self._tree(tree), path) is not None

    def blob_at(self, tree: str, path: str) -> str | None:
        """Id of what ``tree`` holds at ``path`` (``None`` if nothing)."""
        found = gitobjects.entry(self._tree(tree), path)
        return None if found is None else str(found[0])

    def entry_at(self, tree: str, path: str) -> tuple[str, int] | None:
        """(blob id, mode) of what ``tree`` holds at ``path`` (``None`` if nothing)."""
        found = gitobjects.entry(self._tree(tree), path)
        return None if found is None else (str(found[0]), found[1])

    def _tree(self, oid: str) -> pygit2.Tree:
        return gitobjects.tree(self._repo, oid)
