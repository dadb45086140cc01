"""Typed access to pygit2 objects, for :mod:`bisectkit.git.repo` and :mod:`bisectkit.git.merge`.

pygit2's stubs are imprecise where bisectkit knows better:
``Repository.get`` returns ``Object | None`` where the id names a tree, and
``Repository.diff`` has no overload for two trees. These helpers check what
they get and raise :class:`GitFailure` otherwise, so that their callers work
with exact types and no ``cast``.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import pygit2
from pygit2.enums import FileMode, ObjectType

from bisectkit.errors import GitFailure

#: File mode of a gitlink (a submodule's pinned commit) in a tree.
GITLINK_MODE = 0o160000
#: File mode of a directory (a tree) in a tree.
TREE_MODE = 0o040000

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


def has_commit(repo: pygit2.Repository, sha: str) -> bool:
    """Is ``sha`` a commit in ``repo``'s object database?"""
    obj = repo.get(sha)
    return obj is not None and obj.type == ObjectType.COMMIT


def empty_tree(repo: pygit2.Repository) -> pygit2.Tree:
    """The empty tree (written to the object database if it is not there yet)."""
    return tree(repo, repo.TreeBuilder().write())


def edit_level(repo: pygit2.Repository, tree: pygit2.Tree | None,
               changes: Mapping[str, Entry | None]) -> pygit2.Oid:
    """Write ``tree`` (``None``: empty) with its entries ``changes`` names put (or removed,
    for ``None``); names are one level deep, as ``os.fsdecode`` gives them.

    libgit2's tree builder takes only names that are valid UTF-8; a name that is
    not (a Latin-1 file of an old repository, say: pygit2 gives it with
    surrogate escapes) gets the tree written byte for byte instead, in git's
    order (a directory sorts as if its name ended with ``/``).
    """
    if all(_is_utf8(name) for name in changes):
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        for name, value in changes.items():
            if value is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, value[0], value[1])
        return builder.write()
    entries: dict[bytes, Entry] = {}
    for e in tree if tree is not None else ():
        entries[os.fsencode(e.name or "")] = (e.id, int(e.filemode))
    for name, value in changes.items():
        if value is None:
            entries.pop(os.fsencode(name), None)
        else:
            entries[os.fsencode(name)] = value
    order = sorted(entries, key=lambda n: n + b"/" if entries[n][1] == FileMode.TREE else n)
    body = b"".join(b"%o %s\0%s" % (entries[n][1], n, entries[n][0].raw) for n in order)
    return repo.odb.write(ObjectType.TREE, body)


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


#: The id libgit2 names in its "object not found" errors.
_OID = re.compile(r"\b[0-9a-f]{40}\b")


def missing_oid(exc: BaseException) -> str | None:
    """The object a libgit2 error says is missing (``NotFoundError``, a ``KeyError`` of
    an id, or a ``GitError`` naming one), else None."""
    if not isinstance(exc, (KeyError, pygit2.GitError)):
        return None
    found = _OID.search(str(exc))
    return found.group(0) if found else None


def missing(repo: pygit2.Repository, oids: Iterable[str]) -> list[str]:
    """The ids among ``oids`` the object database lacks; libgit2 never fetches, so this
    only looks (a pack written meanwhile by a git fetch is found: libgit2 rescans)."""
    odb = repo.odb
    return [o for o in oids if not odb.exists(o)]


def promisor_remotes(repo: pygit2.Repository) -> list[tuple[str, str, str | None]]:
    """(name, url, partial clone filter) of each promisor remote, ``extensions.partialClone``'s
    first (git asks that one first); empty for a full clone."""
    config = repo.config
    names: list[str] = []
    with contextlib.suppress(KeyError):
        names.append(str(config["extensions.partialclone"]))
    for entry in _entries(config):
        key = entry.name.lower()
        if key.startswith("remote.") and key.endswith(".promisor") and entry.value and \
                entry.value.lower() in ("true", "yes", "on", "1"):
            names.append(entry.name[len("remote."):-len(".promisor")])
    found = []
    for name in dict.fromkeys(names):
        url = _config_str(config, f"remote.{name}.url")
        if url is not None:
            found.append((name, url, _config_str(config, f"remote.{name}.partialclonefilter")))
    return found


def _entries(config: pygit2.Config) -> Iterator[pygit2.config.ConfigEntry]:
    """The entries of ``config`` whose names are UTF-8: pygit2 cannot decode another (the
    ``submodule.<path>.url`` of a submodule at a Latin-1 path), and its iterator has
    moved past that entry when it says so."""
    entries = iter(config)
    while True:
        try:
            yield next(entries)
        except StopIteration:
            return
        except UnicodeDecodeError:
            continue


def _config_str(config: pygit2.Config, key: str) -> str | None:
    try:
        return str(config[key])
    except KeyError:
        return None


def diff_blobs(old: pygit2.Tree, new: pygit2.Tree, new_side: bool = True,
               old_side: bool = True, wanted: Callable[[str], bool] | None = None) -> set[str]:
    """Ids of the blobs (files and links, not gitlinks) on each side of what changes from
    ``old`` to ``new`` (tree entries only: no blob is read), at paths ``wanted`` keeps."""
    found: set[str] = set()
    for delta in diff(old, new).deltas:
        for keep, side in ((old_side, delta.old_file), (new_side, delta.new_file)):
            if keep and side.mode not in (0, GITLINK_MODE) and side.id.raw != _ZERO and \
                    (wanted is None or wanted(side.path)):
                found.add(str(side.id))
    return found


_ZERO = b"\0" * 20


_lenient_depth = 0
#: The setting is process-wide and ``--jobs`` replays in threads: the count moves under a lock.
_lenient_lock = threading.Lock()


@contextlib.contextmanager
def promised_objects(allowed: bool = True) -> Iterator[None]:
    """Let new trees name objects that are not here (``allowed``): a partial clone's
    promised blobs, which git itself accepts. libgit2 refuses them by default (strict
    object creation), which is right for a full clone. Re-entrant."""
    global _lenient_depth
    if not allowed:
        yield
        return
    with _lenient_lock:
        _lenient_depth += 1
        pygit2.settings.enable_strict_object_creation(False)
    try:
        yield
    finally:
        with _lenient_lock:
            _lenient_depth -= 1
            if not _lenient_depth:
                pygit2.settings.enable_strict_object_creation(True)
