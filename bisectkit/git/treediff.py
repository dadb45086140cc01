"""Which paths differ between two trees, reading only the subtrees whose ids differ.

Two trees a step compares (a patch's parent and the patch, the tested tree and
the next) share all but a few of their subtrees, and a subtree with the same id
on both sides holds the same files: nothing under it can differ. libgit2's tree
diff walks both trees whole all the same (54 ms for 150,000 files, 2 of them
changed); :func:`tree_diff` compares one level at a time and goes down only
where the ids differ (0.5 ms for 3 files changed in 3 directories of 1,000
files each). A diff that changes most directories reads most trees either way,
and costs this walk more per changed path than reading libgit2's deltas: a
caller that may see one (a session's first checkout, a restore) passes a
``limit`` and asks libgit2 past it.

It answers what libgit2's ``diff_to_tree`` answers with no options (the deltas
bisectkit reads: status, path, id and mode of each side, in libgit2's order):
no rename or copy detection; a change of a path's kind (file, link, gitlink,
directory) is a deletion and an addition; a change of mode within a kind (the
executable bit, an old ``100664``) is a modification, modes as the tree holds
them. Directories are never deltas; the files under an added or deleted
directory are, one each.

A level is read from the tree object's bytes (``mode SP name NUL id``), whose
entries equal on both sides drop out in a set difference: no Python object per
unchanged entry (pygit2's per-entry objects cost three times as much, and
normalise modes, which libgit2's diff does not).
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

import pygit2
from pygit2.enums import DeltaStatus, ObjectType

from bisectkit.errors import GitFailure
from bisectkit.git.objects import TREE_MODE, Entry, empty_tree, where

#: A file mode's kind (git's S_IFMT): regular files with and without the executable bit
#: are one kind; links, gitlinks and directories each another.
_KIND = 0o170000

#: One entry of a tree object, by the length of an object id.
_ENTRY: dict[int, re.Pattern[bytes]] = {}
#: A mode as a tree object spells it -> the number (a handful of spellings exist).
_MODES: dict[bytes, int] = {}
#: What one side holds at a name: (mode, id's bytes); None: nothing.
Side = tuple[int, bytes] | None
_ENCODING, _ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
_ADDED, _DELETED, _MODIFIED = DeltaStatus.ADDED, DeltaStatus.DELETED, DeltaStatus.MODIFIED
#: How many differing subdirectories of one directory make it dense (with a ``limit``).
_DENSE = 32


class Delta(NamedTuple):
    """One path that differs: ``ADDED`` (nothing on the old side), ``DELETED`` (nothing on
    the new side) or ``MODIFIED`` (both: same kind, another id or mode)."""

    status: DeltaStatus
    path: str
    #: (mode, id's bytes) of each side, None where the path is not (see :attr:`old`).
    old_side: Side
    new_side: Side

    @property
    def old(self) -> Entry | None:
        """(id, mode) the old tree holds at the path (None: nothing)."""
        return _entry(self.old_side)

    @property
    def new(self) -> Entry | None:
        """(id, mode) the new tree holds at the path (None: nothing)."""
        return _entry(self.new_side)


def tree_diff(repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree | None,
              limit: int | None = None) -> list[Delta]:
    """What changes from tree ``old`` to ``new`` (``None``: the empty tree), sorted by path
    (a deletion before an addition at one path); subtrees with the same id on both sides
    are not read. With a ``limit``: :class:`TooManyDeltas` once more deltas than that are
    found, or most of 32 subdirectories or more of one directory differ (the walk would
    read most of the trees, which libgit2 does faster: its caller asks it instead)."""
    if old is None:
        old = empty_tree(repo)
    if new is None:
        new = empty_tree(repo)
    found: list[Delta] = []
    _level(repo, len(old.id.raw), old.id.raw, new.id.raw, "", found,
           limit if limit is not None else -1)
    return found


class TooManyDeltas(Exception):
    """:func:`tree_diff` found more deltas than its caller wanted to wait for."""


def _level(repo: pygit2.Repository, size: int, old: bytes | None, new: bytes | None,
           prefix: str, found: list[Delta], limit: int) -> None:
    """Append to ``found`` the deltas under directory ``prefix``, ``old`` and ``new`` the
    ids of its two trees (None: absent on that side); ``size``: the length of an id;
    ``limit``: how many deltas in all before :class:`TooManyDeltas` (-1: no limit)."""
    if old == new:
        return
    (before, dirs_before), (after, dirs_after) = _entries(repo, size, old), \
        _entries(repo, size, new)
    common = before & after
    gone, came = _sides(before - common, size), _sides(after - common, size)
    names = gone.keys() | came.keys()
    dirs = {n for side in (gone, came) for n, e in side.items() if e[0] & _KIND == TREE_MODE}
    # A directory sorts as if its name ended with "/" (git's order of tree entries, and
    # so of the paths under them): a file and a directory of one name are two parts.
    keys = sorted([n + b"/" for n in dirs] + [n for n in names if _has_file(n, gone, came)]
                  if dirs else names)
    if limit >= 0 and (len(found) + len(keys) > limit or len(dirs) >= _DENSE and
                       2 * len(dirs) > max(dirs_before, dirs_after)):
        # Past the limit, or most of many directories differ here: the walk would read
        # most of what is below, which libgit2 reads faster.
        raise TooManyDeltas
    for key in keys:
        if key[-1:] == b"/":
            name = key[:-1]
            was, now = _dir(gone.get(name)), _dir(came.get(name))
            _level(repo, size, was and was[1], now and now[1],
                   prefix + key.decode(_ENCODING, _ERRORS), found, limit)
            continue
        was, now = gone.get(key), came.get(key)
        if dirs:
            was, now = _file(was), _file(now)
        path = prefix + key.decode(_ENCODING, _ERRORS)
        if was is None:
            found.append(Delta(_ADDED, path, None, now))
        elif now is None:
            found.append(Delta(_DELETED, path, was, None))
        elif was[0] & _KIND != now[0] & _KIND:
            found.append(Delta(_DELETED, path, was, None))
            found.append(Delta(_ADDED, path, None, now))
        else:
            found.append(Delta(_MODIFIED, path, was, now))


def _entries(repo: pygit2.Repository, size: int, oid: bytes | None) -> tuple[set[bytes], int]:
    """The entries of tree ``oid``, each its bytes in the tree object (none for None), and
    about how many are directories (an id or a name may hold the bytes counted)."""
    if oid is None:
        return set(), 0
    # A missing tree (a tree:0 partial clone) raises libgit2's error naming it, as
    # libgit2's diff does: the caller's promisor fetches it.
    kind, data = repo.odb.read(pygit2.Oid(raw=oid))
    if kind != ObjectType.TREE:
        raise GitFailure(f"{oid.hex()} in a tree of {where(repo)} is not a tree")
    if size not in _ENTRY:
        _ENTRY[size] = re.compile(rb"\d+ [^\0]*\0.{%d}" % size, re.S)
    found = _ENTRY[size].findall(data)
    # The matches follow one another from the first byte to the last: every entry was read
    # as git wrote it (a damaged object would leave a gap).
    if sum(map(len, found)) != len(data):
        raise GitFailure(f"tree {oid.hex()} of {where(repo)} cannot be read")
    return set(found), data.count(b"40000 ")


def _sides(entries: set[bytes], size: int) -> dict[bytes, tuple[int, bytes]]:
    """name -> (mode, id's bytes) of entries ``mode SP name NUL id``."""
    found = {}
    cut = -size - 1
    for raw in entries:
        mode, rest = raw.split(b" ", 1)
        number = _MODES.get(mode)
        if number is None:
            number = _MODES[mode] = int(mode, 8)
        found[rest[:cut]] = (number, rest[-size:])
    return found


def _has_file(name: bytes, *sides: dict[bytes, tuple[int, bytes]]) -> bool:
    return any((e := side.get(name)) is not None and e[0] & _KIND != TREE_MODE
               for side in sides)


def _dir(side: Side) -> Side:
    return side if side is not None and side[0] & _KIND == TREE_MODE else None


def _file(side: Side) -> Side:
    return side if side is not None and side[0] & _KIND != TREE_MODE else None


def _entry(side: Side) -> Entry | None:
    return None if side is None else (pygit2.Oid(raw=side[1]), side[0])
