"""The in-memory replay on a real world: the fast per-path merge agrees with libgit2's merge."""

from __future__ import annotations

import pygit2
from helpers.worlds import World

from bisectkit.git.merge import TreeEntry
from bisectkit.git.repo import Repo


def full_merge(repo: pygit2.Repository, onto: str, patch: str) -> str | None:
    """libgit2's own 3-way merge, the oracle (a handle of its own on the repository)."""
    commit, tree = repo.get(patch), repo.get(onto)
    assert isinstance(commit, pygit2.Commit) and isinstance(tree, pygit2.Tree)
    index = repo.merge_trees(commit.parents[0].tree, tree, commit.tree)
    return None if index.conflicts is not None else str(index.write_tree(repo))


def test_fast_merge_matches_merge_trees_on_every_candidate(world: World):
    sub = Repo(world.submodule)
    raw = pygit2.Repository(str(world.submodule))
    fast_hits = 0
    for n in range(0, 401, 7):
        onto: str = sub.tree_of(world.sha(n))
        for patch in world.stack:
            expected = full_merge(raw, onto, patch)
            got = sub.merger.merge_patch(onto, patch)
            assert got.tree == expected, (n, patch)
            if expected is not None:
                parent = sub.commit_info(patch).parents[0]
                fast = sub.merger.trivial_merge(sub.tree_of(parent), onto, sub.tree_of(patch))
                if fast is not None:
                    fast_hits += 1
                    assert fast == expected
            # The replay chains patches: continue from the merged tree when clean.
            onto = got.tree or onto
    assert fast_hits > 50  # the fast path is the common case, not a curiosity


def test_edit_tree_adds_nested_paths_and_drops_emptied_directories(world: World):
    sub = Repo(world.submodule)
    tree = sub.tree_of(world.sha(0))
    blob = str(pygit2.Repository(str(world.submodule)).create_blob(b"new\n"))
    added = sub.merger.edit_tree(tree, {"a/b/c.txt": TreeEntry(blob, pygit2.enums.FileMode.BLOB)})
    assert sub.trees.blob_at(added, "a/b/c.txt") == blob
    assert sub.trees.diff_trees(tree, added).paths == ("a/b/c.txt",)
    removed = sub.merger.edit_tree(added, {"a/b/c.txt": None})
    assert removed == tree


def _repo(world: World, path) -> tuple[Repo, dict[str, str]]:
    path.mkdir()
    world.git(path, "init", "-q")
    return Repo(path), {}


def _commit(world: World, path, message: str) -> str:
    world.git(path, "add", "-A")
    world.git(path, "commit", "-q", "--allow-empty", "-m", message)
    return world.git(path, "rev-parse", "HEAD")


def test_file_directory_changes_go_to_the_full_merge(world: World, tmp_path):
    """A patch replacing directory foo/ by a file foo, and one adding foo/x over a file foo."""
    root = tmp_path / "fd"
    repo, _ = _repo(world, root)
    (root / "foo").mkdir()
    (root / "foo" / "x").write_text("x\n")
    (root / "other").write_text("1\n")
    base = _commit(world, root, "base")
    world.git(root, "rm", "-q", "-r", "foo")
    (root / "foo").write_text("now a file\n")
    to_file = _commit(world, root, "dir to file")
    world.git(root, "checkout", "-q", base)
    (root / "other").write_text("2\n")
    candidate = _commit(world, root, "candidate")
    raw = pygit2.Repository(str(root))
    onto = repo.tree_of(candidate)
    merged = repo.merger.merge_patch(onto, to_file).tree
    assert merged == full_merge(raw, onto, to_file)
    assert merged is not None and repo.trees.blob_at(merged, "foo") == repo.trees.blob_at(
        repo.tree_of(to_file), "foo")

    # The other way round: the candidate has a file where the patch adds a directory.
    world.git(root, "checkout", "-q", to_file)
    (root / "bar").mkdir()
    (root / "bar" / "y").write_text("y\n")
    adds_dir = _commit(world, root, "adds bar/y")
    world.git(root, "checkout", "-q", to_file)
    (root / "bar").write_text("a file named bar\n")
    has_file = _commit(world, root, "bar is a file")
    onto = repo.tree_of(has_file)
    got = repo.merger.merge_patch(onto, adds_dir)
    assert got.tree == full_merge(raw, onto, adds_dir)
