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
from bisectkit.git.treediff import TooManyDeltas, tree_diff


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
        #: The last diff asked for: a restore asks for the same one twice (checking what
        #: it will write, then writing it), and trees never change.
        self._last: tuple[str, str, TreeDiff] | None = None

    def diff_trees(self, old: str, new: str) -> TreeDiff:
        """What changes between two trees: every path, those rewritten in place, those added.

        Read by going down only into the subtrees whose ids differ
        (:mod:`bisectkit.git.treediff`), unless the diff is big (see :data:`WALK_LIMIT`).
        """
        if old == new:
            return TreeDiff((), (), ())
        if self._last is not None and self._last[:2] == (old, new):
            return self._last[2]
        diff = self._diff(old, new)
        self._last = (old, new, diff)
        return diff

    def _diff(self, old: str, new: str) -> TreeDiff:
        before, after = self._tree(old), self._tree(new)
        try:
            deltas = tree_diff(self._repo, before, after, limit=WALK_LIMIT)
        except TooManyDeltas:
            return _whole_diff(before, after)
        paths: set[str] = set()
        modified: list[str] = []
        added: list[str] = []
        for delta in deltas:
            paths.add(delta.path)
            if delta.status == DeltaStatus.MODIFIED:
                modified.append(delta.path)
            elif delta.status == DeltaStatus.ADDED and delta.new_side and \
                    delta.new_side[0] != GITLINK_MODE:
                added.append(delta.path)
        return TreeDiff(tuple(sorted(paths)), tuple(modified), tuple(sorted(added)))

    def changed_blobs(self, old: str | None, new: str,
                      wanted: Callable[[str], bool] | None = None) -> set[str]:
        """Ids of the blobs tree ``new`` has where it differs from ``old`` (``None``: the
        empty tree) at paths ``wanted`` keeps: what a checkout from one to the other writes."""
        if old == new:
            return set()
        before = self._tree(old) if old else gitobjects.empty_tree(self._repo)
        after = self._tree(new)
        try:
            deltas = tree_diff(self._repo, before, after, limit=WALK_LIMIT)
        except TooManyDeltas:
            return gitobjects.diff_blobs(before, after, old_side=False, wanted=wanted)
        return {d.new_side[1].hex() for d in deltas
                if d.new_side is not None and d.new_side[0] != GITLINK_MODE and
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


#: How many changed paths :meth:`Trees.diff_trees` finds going down only into the
#: directories that differ before it asks libgit2 instead: a diff that big (the first
#: checkout of a session, a restore) reads most directories anyway, which libgit2 does
#: faster, and each path costs the walk twice what it costs read from libgit2's answer.
WALK_LIMIT = 2000


def _whole_diff(old: pygit2.Tree, new: pygit2.Tree) -> TreeDiff:
    """:meth:`Trees.diff_trees` from libgit2's diff of the whole trees (the same answer)."""
    paths: set[str] = set()
    modified: list[str] = []
    added: list[str] = []
    for delta in gitobjects.diff(old, new).deltas:
        paths.add(delta.old_file.path)
        paths.add(delta.new_file.path)
        if delta.status == DeltaStatus.MODIFIED:
            modified.append(delta.new_file.path)
        elif delta.status == DeltaStatus.ADDED and delta.new_file.mode != GITLINK_MODE:
            added.append(delta.new_file.path)
    return TreeDiff(tuple(sorted(paths)), tuple(modified), tuple(sorted(added)))
