"""What a commit changes against its first parent: paths, blobs, patch id (a mixin of
:class:`bisectkit.git.repo.Repo`).

Patch-stack analysis asks these of every stacked patch and of the upstream
commits that might be the same change; in a partial clone the blobs a patch
id reads are fetched first (``Repo.promisor``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pygit2

import bisectkit.git.objects as gitobjects
from bisectkit.git.objects import entry_id
from bisectkit.git.shapes.partial import Prefetcher


class CommitDiffs:
    """Commit-against-first-parent questions (a mixin of :class:`bisectkit.git.repo.Repo`)."""

    #: Set by ``Repo.__init__``.
    _repo: pygit2.Repository
    promisor: Prefetcher

    def _commit(self, sha: str) -> pygit2.Commit:
        return gitobjects.commit(self._repo, sha)

    def _touches(self, commit: pygit2.Commit, paths: Sequence[str]) -> bool:
        return any(_changes(commit, p) for p in paths)

    def touches_all(self, sha: str, paths: Iterable[str]) -> bool:
        """Cheap pre-filter for patch-id matching: does ``sha`` change every one of ``paths``?"""
        commit = self._commit(sha)
        return all(_changes(commit, p) for p in paths)

    # -- patches ------------------------------------------------------------
    def changed_paths(self, sha: str) -> frozenset[str]:
        """Paths a commit changes compared with its first parent."""
        paths: set[str] = set()
        for delta in self._first_parent_diff(sha).deltas:
            paths.add(delta.old_file.path)
            paths.add(delta.new_file.path)
        return frozenset(paths)

    def patch_id(self, sha: str) -> str:
        """Stable patch id of a commit's change against its first parent (as ``git patch-id``;
        it reads both sides' blobs, which a partial clone fetches)."""
        return self.promisor.retrying(lambda: str(self._first_parent_diff(sha).patchid),
                                      lambda: self.patch_blobs(sha))

    def patch_blobs(self, sha: str) -> set[str]:
        """Ids of the blobs on both sides of a commit's change (what its patch id reads)."""
        c = self._commit(sha)
        return gitobjects.diff_blobs(c.parents[0].tree if c.parents else
                                     gitobjects.empty_tree(self._repo), c.tree)

    def _first_parent_diff(self, sha: str) -> pygit2.Diff:
        self.promisor.check_trees()  # a tree:0 clone: one line, not libgit2's error
        commit = self._commit(sha)
        if commit.parents:
            return gitobjects.diff(commit.parents[0].tree, commit.tree)
        return commit.tree.diff_to_tree(swap=True)


def _changes(commit: pygit2.Commit, path: str) -> bool:
    """Does ``commit`` change ``path`` against its first parent (tree entries only)?"""
    parent_tree = commit.parents[0].tree if commit.parents else None
    return entry_id(commit.tree, path) != entry_id(parent_tree, path)
