"""What differs between two trees (bisectkit.git.treediff): libgit2's answer, reading only the
subtrees whose ids differ.

libgit2's own tree diff is the oracle, on random pairs of trees built in a bare
repository: files with and without the executable bit, links, gitlinks and
directories, changed in place, in mode, in kind (file <-> link <-> gitlink <->
directory), added and removed, next to subtrees both sides share.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Union

import pygit2
import pytest
from pygit2.enums import DeltaStatus, FileMode, ObjectType

import bisectkit.git.trees as trees
from bisectkit.git.objects import promised_objects
from bisectkit.git.treediff import Delta, TooManyDeltas, tree_diff
from bisectkit.git.trees import TreeDiff, Trees

FILE, EXEC, LINK, GITLINK = 0o100644, 0o100755, 0o120000, 0o160000
#: A tree as nested dicts: name -> (id, mode) for a leaf, a dict for a directory.
Spec = dict[str, Union[tuple[pygit2.Oid, int], "Spec"]]


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r.git"), bare=True)


def write(repo: pygit2.Repository, spec: Spec) -> pygit2.Tree:
    builder = repo.TreeBuilder()
    for name, value in spec.items():
        if isinstance(value, dict):
            builder.insert(name, write(repo, value).id, FileMode.TREE)
        else:
            builder.insert(name, value[0], value[1])
    found = repo.get(builder.write())
    assert isinstance(found, pygit2.Tree)
    return found


def oracle(old: pygit2.Tree, new: pygit2.Tree) -> list[Delta]:
    """libgit2's deltas, as :class:`Delta` values."""
    found = []
    for d in old.diff_to_tree(new).deltas:
        was = None if d.status == DeltaStatus.ADDED else (d.old_file.mode, d.old_file.id.raw)
        now = None if d.status == DeltaStatus.DELETED else (d.new_file.mode, d.new_file.id.raw)
        found.append(Delta(d.status, d.new_file.path, was, now))
    return found


def leaf(rng: random.Random, repo: pygit2.Repository) -> tuple[pygit2.Oid, int]:
    mode = rng.choice((FILE, FILE, FILE, EXEC, LINK, GITLINK))
    if mode == GITLINK:  # a commit id: never read
        return pygit2.Oid(hex=f"{rng.getrandbits(160):040x}"), mode
    return repo.create_blob(rng.choice((b"a\n", b"b\n", b"c\n", b"lib/x"))), mode


def random_spec(rng: random.Random, repo: pygit2.Repository, depth: int = 0) -> Spec:
    names = rng.sample(["a", "a.b", "a-b", "a0", "b", "c", "d", "lib", "é"], rng.randint(1, 6))
    return {n: random_spec(rng, repo, depth + 1) if depth < 3 and rng.random() < 0.35
            else leaf(rng, repo) for n in names}


def mutate(rng: random.Random, repo: pygit2.Repository, spec: Spec, depth: int = 0) -> Spec:
    """A copy of ``spec`` with some entries changed: content, mode, kind, added, removed;
    most directories kept whole (the same subtree id on both sides)."""
    out: Spec = {}
    for name, value in spec.items():
        roll = rng.random()
        if isinstance(value, dict):
            if roll < 0.5:
                out[name] = value  # shared subtree
            elif roll < 0.85:
                out[name] = mutate(rng, repo, value, depth + 1)
            elif roll < 0.95:
                out[name] = leaf(rng, repo)  # directory -> file, link or gitlink
        elif roll < 0.5:
            out[name] = value
        elif roll < 0.6:
            out[name] = (value[0], EXEC if value[1] == FILE else FILE if value[1] == EXEC
                         else value[1])  # the executable bit only
        elif roll < 0.75:
            out[name] = leaf(rng, repo)
        elif roll < 0.85 and depth < 3:
            out[name] = random_spec(rng, repo, depth + 1)  # file -> directory
        # else: removed
    if rng.random() < 0.3:
        out[rng.choice(["new", "a", "zz", "d"])] = leaf(rng, repo)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_tree_pairs_give_libgit2s_deltas(repo: pygit2.Repository, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(10):
        spec = random_spec(rng, repo)
        old, new = write(repo, spec), write(repo, mutate(rng, repo, spec))
        assert tree_diff(repo, old, new) == oracle(old, new)
        assert tree_diff(repo, new, old) == oracle(new, old)


@pytest.mark.parametrize("seed", range(10))
def test_a_big_diff_asks_libgit2_for_the_same_answer(repo: pygit2.Repository, seed: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``WALK_LIMIT`` changed paths, diff_trees and changed_blobs take libgit2's
    answer: the same."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(10):
        spec = random_spec(rng, repo)
        pairs.append((write(repo, spec), write(repo, mutate(rng, repo, spec))))
    def answers() -> list[tuple[TreeDiff, set[str]]]:
        return [(Trees(repo).diff_trees(str(a.id), str(b.id)),
                 Trees(repo).changed_blobs(str(a.id), str(b.id))) for a, b in pairs]

    walked = answers()
    monkeypatch.setattr(trees, "WALK_LIMIT", 0)
    assert answers() == walked
    for a, b in pairs:
        if tree_diff(repo, a, b):
            with pytest.raises(TooManyDeltas):
                tree_diff(repo, a, b, limit=0)


def test_kind_changes_are_a_deletion_and_an_addition(repo: pygit2.Repository) -> None:
    blob, other = repo.create_blob(b"x\n"), repo.create_blob(b"y\n")
    commit = pygit2.Oid(hex="1" * 40)
    old = write(repo, {"exec": (blob, FILE), "link": (blob, FILE), "sub": (commit, GITLINK),
                       "dir": {"f": (blob, FILE)}, "file": (blob, FILE)})
    new = write(repo, {"exec": (blob, EXEC), "link": (blob, LINK), "sub": (other, FILE),
                       "dir": (blob, FILE), "file": {"f": (other, FILE)}})
    assert [(d.status, d.path) for d in tree_diff(repo, old, new)] == [
        (DeltaStatus.ADDED, "dir"), (DeltaStatus.DELETED, "dir/f"),
        (DeltaStatus.MODIFIED, "exec"),
        (DeltaStatus.DELETED, "file"), (DeltaStatus.ADDED, "file/f"),
        (DeltaStatus.DELETED, "link"), (DeltaStatus.ADDED, "link"),
        (DeltaStatus.DELETED, "sub"), (DeltaStatus.ADDED, "sub")]
    assert tree_diff(repo, old, new) == oracle(old, new)


def test_a_subtree_both_sides_share_is_never_read(repo: pygit2.Repository) -> None:
    """A subtree whose object is not even in the repository: libgit2 cannot diff the two
    trees, the diff that compares ids first never opens it."""
    blob, other = repo.create_blob(b"x\n"), repo.create_blob(b"y\n")
    absent = pygit2.Oid(hex="2" * 40)
    with promised_objects():
        old = write(repo, {"big": {"shared": (absent, FileMode.TREE)}, "f": (blob, FILE)})
        new = write(repo, {"big": {"shared": (absent, FileMode.TREE)}, "f": (other, FILE)})
    assert [(d.status, d.path, d.old, d.new) for d in tree_diff(repo, old, new)] == [
        (DeltaStatus.MODIFIED, "f", (blob, FILE), (other, FILE))]
    with pytest.raises((KeyError, pygit2.GitError)):
        oracle(old, new)


def test_the_empty_tree_and_identical_trees(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"x\n")
    tree = write(repo, {"d": {"f": (blob, FILE)}, "g": (blob, EXEC)})
    assert tree_diff(repo, tree, tree) == []
    assert [(d.status, d.path) for d in tree_diff(repo, None, tree)] == [
        (DeltaStatus.ADDED, "d/f"), (DeltaStatus.ADDED, "g")]
    assert [(d.status, d.path) for d in tree_diff(repo, tree, None)] == [
        (DeltaStatus.DELETED, "d/f"), (DeltaStatus.DELETED, "g")]


def test_modes_are_compared_as_the_trees_hold_them(repo: pygit2.Repository) -> None:
    """Old repositories hold ``100664`` files and ``040000`` directories: libgit2's diff
    compares the modes as written (a ``100664`` file that became ``100644`` is modified),
    and a directory whose mode is spelled otherwise holds the same files."""
    blob = repo.create_blob(b"x\n")

    def raw(*entries: tuple[bytes, bytes, pygit2.Oid]) -> pygit2.Tree:
        body = b"".join(b"%s %s\0%s" % (mode, name, oid.raw) for mode, name, oid in entries)
        found = repo.get(repo.odb.write(ObjectType.TREE, body))
        assert isinstance(found, pygit2.Tree)
        return found

    inner = raw((b"100644", b"f", blob))
    old = raw((b"040000", b"d", inner.id), (b"100664", b"g", blob))
    new = raw((b"40000", b"d", inner.id), (b"100644", b"g", blob))
    assert tree_diff(repo, old, new) == oracle(old, new)
    assert [(d.status, d.path, d.old, d.new) for d in tree_diff(repo, old, new)] == [
        (DeltaStatus.MODIFIED, "g", (blob, 0o100664), (blob, 0o100644))]
