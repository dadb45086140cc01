"""The in-memory merge engine: replaying a patch onto a tree, without a work tree.

A bisection replays the local patch stack onto every candidate it tests.
That happens entirely in the object database: each patch is 3-way merged
onto the tree built so far (:meth:`Merger.merge_patch`), the result becomes
a commit that no ref points to (:meth:`Merger.make_commit`), and only the
final commit is ever checked out (by :mod:`bisectkit.safety.worktree`). Nothing
here touches an index, a work tree, HEAD or a ref.

Most patches touch a handful of files while the candidate differs from the
patch's parent in thousands: :meth:`Merger.trivial_merge` settles those in
time proportional to the patch (whose own change is read once per process,
by a tree diff that goes down only into the directories it changes:
:mod:`bisectkit.git.treediff`), and libgit2's full merge decides the rest
(content merges, renames, file/directory clashes) and names the conflicts.
Both give the same tree whenever the fast one answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import pygit2
from pygit2.enums import DeltaStatus, FileMode

import bisectkit.git.objects as gitobjects
from bisectkit.git.objects import GITLINK_MODE, Entry
from bisectkit.git.shapes.partial import Prefetcher
from bisectkit.git.treediff import tree_diff


class TreeEntry(NamedTuple):
    """What a tree holds at one path: the object's id and its file mode."""

    id: str
    mode: int


@dataclass(frozen=True)
class MergeResult:
    """Result of merging one patch onto a tree: a new tree, or the conflicting paths."""

    #: The merged tree's id; ``None`` when the merge conflicts.
    tree: str | None
    #: Every path with a conflict (sorted), empty when the merge is clean.
    conflicts: tuple[str, ...]


class Merger:
    """3-way merges of trees and patches in one repository's object database."""

    def __init__(self, repo: pygit2.Repository, promisor: Prefetcher | None = None) -> None:
        self._repo = repo
        self._promisor = promisor
        #: (base, theirs) tree ids -> that change (:meth:`_change`), for this process.
        self._changes: dict[tuple[pygit2.Oid, pygit2.Oid], _Change] = {}

    def merge_patch(self, onto_tree: str, patch: str) -> MergeResult:
        """3-way merge of commit ``patch`` (against its first parent) onto ``onto_tree``.

        A cherry-pick in memory: nothing is written to any work tree or ref,
        and a conflict only yields the list of conflicting paths. A result
        equal to ``onto_tree`` means the patch changes nothing there.
        """
        commit = gitobjects.commit(self._repo, patch)
        base = commit.parents[0].tree if commit.parents else gitobjects.empty_tree(self._repo)
        return self._merge(base, gitobjects.tree(self._repo, onto_tree), commit.tree)

    def merge_trees(self, base: str, onto: str, theirs: str) -> MergeResult:
        """3-way merge of the change ``base`` -> ``theirs`` onto tree ``onto`` (all tree ids).

        ``merge_trees(parent, onto, commit)`` picks a commit's change;
        ``merge_trees(commit, onto, parent)`` reverts it.
        """
        tree = self._tree
        return self._merge(tree(base), tree(onto), tree(theirs))

    def trivial_merge(self, base: str, onto: str, theirs: str) -> str | None:
        """:meth:`merge_trees`' result when every path the change touches resolves trivially.

        A path resolves trivially when ``onto`` has the change's result there
        already or still has its base. ``None`` for anything else (a content
        merge, a possible rename, a file/directory clash): the full merge
        decides those, and names conflicts.
        """
        tree = self._tree
        with self._lenient():
            return self._trivial(tree(onto), tree(base), tree(theirs))

    def edit_tree(self, tree: str | None, changes: Mapping[str, TreeEntry | None]) -> str:
        """Id of ``tree`` (``None``: the empty tree) with ``changes`` applied.

        ``changes`` maps a path to the entry to put there, or to ``None`` to
        delete it. Only the trees along the changed paths are rewritten; a
        directory emptied by the changes disappears, as in git.
        """
        raw = {path: None if e is None else (pygit2.Oid(hex=e.id), e.mode)
               for path, e in changes.items()}
        with self._lenient():
            new = self._edit(None if tree is None else self._tree(tree), raw)
        return str(new if new is not None else gitobjects.empty_tree(self._repo).id)

    def make_commit(self, tree: str, parent: str, like: str) -> str:
        """Create (no ref moved) a commit of ``tree`` on ``parent`` with ``like``'s metadata.

        Author, committer and message are copied byte for byte, with the message's
        ``encoding`` header (a Latin-1 commit stays Latin-1, never re-encoded), so that
        the same patched tree always yields the same commit id.
        """
        src = gitobjects.commit(self._repo, like)
        oid = self._repo.create_commit(
            None, src.author, src.committer, src.raw_message, pygit2.Oid(hex=tree),
            [pygit2.Oid(hex=parent)], *([src.message_encoding] if src.message_encoding else []),
        )
        return str(oid)

    def _tree(self, oid: str) -> pygit2.Tree:
        return gitobjects.tree(self._repo, oid)

    def _lenient(self) -> contextlib.AbstractContextManager[None]:
        """Trees written here may name a partial clone's promised (absent) blobs."""
        return gitobjects.promised_objects(self._promisor is not None and self._promisor.partial)

    def _merge(self, base: pygit2.Tree, onto: pygit2.Tree, theirs: pygit2.Tree) -> MergeResult:
        with self._lenient():
            return self._merge_trees(base, onto, theirs)

    def _merge_trees(self, base: pygit2.Tree, onto: pygit2.Tree,
                     theirs: pygit2.Tree) -> MergeResult:
        fast = self._trivial(onto, base, theirs)
        if fast is not None:
            return MergeResult(tree=fast, conflicts=())
        index = self._full_merge(base, onto, theirs)
        if index.conflicts is not None:
            paths = sorted({entry.path for triple in index.conflicts for entry in triple
                            if entry is not None})
            return MergeResult(tree=None, conflicts=tuple(paths))
        return MergeResult(tree=str(index.write_tree(self._repo)), conflicts=())

    def _full_merge(self, base: pygit2.Tree, onto: pygit2.Tree,
                    theirs: pygit2.Tree) -> pygit2.Index:
        """libgit2's merge; in a partial clone the blobs it reads are fetched first.

        A content merge reads the three sides of each path the change touches
        (one batch, before); rename detection may read the files added or
        deleted on either side: fetched, with the one it stopped on, if it does.
        """
        promisor = self._promisor
        if promisor is None or not promisor.partial:
            return self._repo.merge_trees(base, onto, theirs)
        touched = set(self._change(base, theirs).touched)
        promisor.ensure(_blobs_at((base, onto, theirs), touched))
        return promisor.retrying(lambda: self._repo.merge_trees(base, onto, theirs),
                                 lambda: _rename_candidates(base, onto, theirs))

    def _trivial(self, onto: pygit2.Tree, base: pygit2.Tree, theirs: pygit2.Tree) -> str | None:
        """:meth:`trivial_merge` on tree objects.

        ``merge_trees`` (and writing its index back to a tree) costs time in
        the size of the difference between base and candidate; this, in the
        size of the patch.
        """
        changes: dict[str, Entry | None] = {}
        change = self._change(base, theirs)
        for path, was, want in change.paths:
            if _file_directory_clash(onto, path, change.touched):
                return None
            have = gitobjects.entry(onto, path)
            if have == want:
                continue
            if have != was:
                return None
            changes[path] = want
        if not changes:
            return str(onto.id)
        new = self._edit(onto, changes)
        return str(new if new is not None else gitobjects.empty_tree(self._repo).id)

    def _change(self, base: pygit2.Tree, theirs: pygit2.Tree) -> _Change:
        """The change from ``base`` to ``theirs``: every path it touches, with what each side
        holds there. A patch's own change (its parent's tree to its tree) is the same at
        every candidate a bisection replays it onto: computed once per process."""
        key = (base.id, theirs.id)
        found = self._changes.get(key)
        if found is None:
            touched = dict.fromkeys(d.path for d in tree_diff(self._repo, base, theirs))
            entry = gitobjects.entry
            found = _Change(frozenset(touched),
                            tuple((p, entry(base, p), entry(theirs, p)) for p in touched))
            if len(self._changes) >= _CHANGES_KEPT:
                self._changes.clear()
            self._changes[key] = found
        return found

    def _edit(self, tree: pygit2.Tree | None,
              changes: dict[str, Entry | None]) -> pygit2.Oid | None:
        """:meth:`edit_tree` on tree objects; ``None`` when an existing tree ends up empty."""
        here: dict[str, Entry | None] = {}
        nested: dict[str, dict[str, Entry | None]] = {}
        for path, value in changes.items():
            head, slash, rest = path.partition("/")
            if slash:
                nested.setdefault(head, {})[rest] = value
            else:
                here[head] = value
        for name, sub in nested.items():  # after the files: a file becoming a directory
            entry = tree[name] if tree is not None and name in tree else None
            subtree = gitobjects.tree(self._repo, entry.id) \
                if entry is not None and entry.filemode == FileMode.TREE else None
            new = self._edit(subtree, sub)
            here[name] = None if new is None else (new, FileMode.TREE)
        oid = gitobjects.edit_level(self._repo, tree, here)
        if tree is not None and not len(gitobjects.tree(self._repo, oid)):
            return None
        return oid


#: Changes :meth:`Merger._change` keeps (a stack's patches, and the reverts of a few).
_CHANGES_KEPT = 256


@dataclass(frozen=True)
class _Change:
    """What a change (one tree to another) touches, whatever it is merged onto."""

    #: Every path that differs (a file or link, a gitlink; never a directory).
    touched: frozenset[str]
    #: (path, what the old tree holds there, what the new one holds), in path order.
    paths: tuple[tuple[str, Entry | None, Entry | None], ...]


def _blobs_at(trees: tuple[pygit2.Tree, ...], paths: set[str]) -> set[str]:
    """Ids of the blobs ``trees`` hold at ``paths`` (tree entries only)."""
    found = set()
    for tree in trees:
        for path in paths:
            e = gitobjects.entry(tree, path)
            if e is not None and e[1] not in (FileMode.TREE, GITLINK_MODE):
                found.add(str(e[0]))
    return found


def _rename_candidates(base: pygit2.Tree, onto: pygit2.Tree, theirs: pygit2.Tree) -> set[str]:
    """Blobs libgit2's rename detection may compare: those added or deleted on either side."""
    found: set[str] = set()
    for side in (onto, theirs):
        for delta in gitobjects.diff(base, side).deltas:
            if delta.status == DeltaStatus.DELETED:
                found.add(str(delta.old_file.id))
            elif delta.status == DeltaStatus.ADDED and delta.new_file.mode != GITLINK_MODE:
                found.add(str(delta.new_file.id))
    return found


def _file_directory_clash(onto: pygit2.Tree, path: str, touched: Collection[str]) -> bool:
    """Does ``path`` turn a file into a directory or back (in the patch or the candidate)?

    Path-wise merging cannot express those; the full merge handles (or
    reports) them.
    """
    have = gitobjects.entry(onto, path)
    if have is not None and have[1] == FileMode.TREE:
        return True
    parts = path.split("/")
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        if prefix in touched:
            return True
        entry = gitobjects.entry(onto, prefix)
        if entry is not None and entry[1] != FileMode.TREE:
            return True
    return False
