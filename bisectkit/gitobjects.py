"""Typed access to pygit2 objects, for :mod:`bisectkit.git` and :mod:`bisectkit.merge`.

pygit2's stubs are imprecise where bisectkit knows better:
``Repository.get`` returns ``Object | None`` where the id names a tree, and
``Repository.diff`` has no overload for two trees. These helpers check what
they get and raise :class:`GitFailure` otherwise, so that their callers work
with exact types and no ``cast``.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from bisectkit.errors import GitFailure

#: File mode of a gitlink (a submodule's pinned commit) in a tree.
GITLINK_MODE = 0o160000

#: A tree entry as libgit2 gives it: (object id, file mode).
Entry = tuple[pygit2.Oid, int]


def where(repo: pygit2.Repository) -> Path:
    """The repository's work tree (its git dir when bare), for messages."""
    return Path(repo.workdir or repo.path).resolve()


def commit(repo: pygit2.Repository, sha: str) -> pygit2.Commit:
    """The commit ``sha`` names (a tag is peeled); :class:`GitFailure` if it is missing."""
    obj = repo.get(sha)
    if obj is None:
        raise GitFailure(f"commit {sha} is missing from {where(repo)}")
    return obj.peel(pygit2.Commit)


def tree(repo: pygit2.Repository, oid: str | pygit2.Oid) -> pygit2.Tree:
    """The tree ``oid`` names; :class:`GitFailure` if it is missing or not a tree."""
    obj = repo.get(oid)
    if not isinstance(obj, pygit2.Tree):
        raise GitFailure(f"tree {oid} is missing from {where(repo)}")
    return obj


def empty_tree(repo: pygit2.Repository) -> pygit2.Tree:
    """The empty tree (written to the object database if it is not there yet)."""
    return tree(repo, repo.TreeBuilder().write())


def diff(old: pygit2.Tree, new: pygit2.Tree) -> pygit2.Diff:
    """What changes from tree ``old`` to ``new`` (the options ``Repository.diff`` uses)."""
    return old.diff_to_tree(new, context_lines=3, interhunk_lines=0)


def entry(tree: pygit2.Tree, path: str) -> Entry | None:
    """(id, mode) of what ``tree`` holds at ``path``; ``None`` if nothing."""
    try:
        e = tree[path]
    except KeyError:
        return None
    return e.id, e.filemode


def entry_id(tree: pygit2.Tree | None, path: str) -> str | None:
    """Id of what ``tree`` holds at ``path`` (``""``, ``"."``: the tree itself)."""
    if tree is None:
        return None
    path = path.strip("/")
    if not path or path == ".":
        return str(tree.id)
    try:
        return str(tree[path].id)
    except KeyError:
        return None
