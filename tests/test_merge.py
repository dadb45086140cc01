"""The in-memory merge engine (bisectkit.git.merge) on small repositories built with the git CLI.

git itself is the oracle: a patch merged in memory must give the tree that
``git cherry-pick`` (or ``git revert``) gives in a work tree, conflicts
included, while no ref, index or file of the repository changes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from worldgen import git, hermetic_env

from bisectkit.errors import GitFailure
from bisectkit.git.merge import MergeResult, TreeEntry
from bisectkit.git.repo import Repo

BLOB = 0o100644


class Scratch:
    """A throwaway repository with a work tree, driven by the git CLI."""

    def __init__(self, root: Path) -> None:
        self.path = root / "repo"
        self.path.mkdir()
        self.env = hermetic_env(root / "home")
        self.git("init", "-q")

    def git(self, *args: str) -> str:
        return git(self.env, self.path, *args)

    def commit(self, message: str, files: dict[str, str | None]) -> str:
        """Commit ``files`` (path -> content, ``None`` removes) on top of HEAD."""
        for name, content in files.items():
            path = self.path / name
            if content is None:
                self.git("rm", "-q", "-r", name)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def tree(self, rev: str) -> str:
        return self.git("rev-parse", f"{rev}^{{tree}}")

    def show(self, tree: str, path: str) -> str:
        return self.git("cat-file", "-p", f"{tree}:{path}")

    def by_git(self, onto: str, *command: str) -> tuple[str | None, set[str]]:
        """(tree, conflicting paths) of ``git <command>`` run on a checkout of ``onto``."""
        self.git("checkout", "-q", "--detach", onto)
        proc = subprocess.run(["git", *command], cwd=self.path, env=self.env, text=True,
                              capture_output=True)
        if proc.returncode == 0:
            return self.tree("HEAD"), set()
        unmerged = set(self.git("diff", "--name-only", "--diff-filter=U").split())
        self.git("reset", "-q", "--hard")
        return None, unmerged


@pytest.fixture
def scratch(tmp_path: Path) -> Scratch:
    return Scratch(tmp_path)


def _fork(s: Scratch, base: dict[str, str | None], patch: dict[str, str | None],
          candidate: dict[str, str | None]) -> tuple[str, str]:
    """(patch commit, candidate commit): two lines of history from one base commit."""
    first = s.commit("base", base)
    patched = s.commit("the patch", patch)
    s.git("checkout", "-q", "--detach", first)
    return patched, s.commit("the candidate", candidate)


def _state(s: Scratch) -> str:
    """Every ref, HEAD, and what ``git status`` says of index and files."""
    return "\n".join([s.git("for-each-ref"), s.git("rev-parse", "HEAD"),
                      s.git("status", "--porcelain", "--untracked-files=all")])


def _unmoved(s: Scratch, before: str) -> None:
    assert _state(s) == before


def test_clean_apply_is_the_cherry_pick(scratch: Scratch):
    patch, candidate = _fork(scratch, {"a.txt": "a\n", "b.txt": "b\n", "d/c.txt": "c\n"},
                             {"a.txt": "patched\n", "d/new.txt": "new\n"},
                             {"b.txt": "candidate\n"})
    merger = Repo(scratch.path).merger
    onto = scratch.tree(candidate)
    before = _state(scratch)
    got = merger.merge_patch(onto, patch)
    _unmoved(scratch, before)
    assert got == MergeResult(tree=got.tree, conflicts=())
    assert got.tree is not None
    assert scratch.show(got.tree, "a.txt") == "patched"
    assert scratch.show(got.tree, "b.txt") == "candidate"
    assert scratch.show(got.tree, "d/new.txt") == "new"
    assert (got.tree, set()) == scratch.by_git(candidate, "cherry-pick", patch)
    # Every path resolves trivially here: the fast path answers, with the same tree.
    trivial = merger.trivial_merge(scratch.tree(f"{patch}^"), onto, scratch.tree(patch))
    assert trivial == got.tree


def test_a_content_merge_goes_to_the_full_merge(scratch: Scratch):
    lines = [f"line {i}\n" for i in range(20)]
    edited_top = ["top\n", *lines[1:]]
    edited_end = [*lines[:-1], "end\n"]
    patch, candidate = _fork(scratch, {"f.txt": "".join(lines)}, {"f.txt": "".join(edited_top)},
                             {"f.txt": "".join(edited_end)})
    merger = Repo(scratch.path).merger
    onto = scratch.tree(candidate)
    assert merger.trivial_merge(scratch.tree(f"{patch}^"), onto, scratch.tree(patch)) is None
    got = merger.merge_patch(onto, patch)
    assert got.tree is not None and got.conflicts == ()
    assert scratch.show(got.tree, "f.txt") == "".join(["top\n", *lines[1:-1], "end\n"]).strip()
    assert (got.tree, set()) == scratch.by_git(candidate, "cherry-pick", patch)


def test_a_patch_the_candidate_already_has_changes_nothing(scratch: Scratch):
    patch, candidate = _fork(scratch, {"a.txt": "a\n", "b.txt": "b\n"},
                             {"a.txt": "fixed\n"}, {"a.txt": "fixed\n", "b.txt": "other\n"})
    merger = Repo(scratch.path).merger
    onto = scratch.tree(candidate)
    assert merger.merge_patch(onto, patch) == MergeResult(tree=onto, conflicts=())
    assert merger.trivial_merge(scratch.tree(f"{patch}^"), onto, scratch.tree(patch)) == onto


def test_a_conflict_names_every_conflicting_path_and_only_those(scratch: Scratch):
    patch, candidate = _fork(scratch, {"a.txt": "a\n", "z/c.txt": "c\n", "b.txt": "b\n"},
                             {"a.txt": "mine\n", "z/c.txt": "mine\n", "b.txt": "mine\n"},
                             {"a.txt": "theirs\n", "z/c.txt": "theirs\n"})
    merger = Repo(scratch.path).merger
    before = _state(scratch)
    got = merger.merge_patch(scratch.tree(candidate), patch)
    _unmoved(scratch, before)
    assert got == MergeResult(tree=None, conflicts=("a.txt", "z/c.txt"))
    assert scratch.by_git(candidate, "cherry-pick", patch) == (None, {"a.txt", "z/c.txt"})


def test_a_directory_becoming_a_file_is_left_to_the_full_merge(scratch: Scratch):
    patch, candidate = _fork(scratch, {"foo/x": "x\n", "other": "1\n"},
                             {"foo/x": None, "foo": "now a file\n"}, {"other": "2\n"})
    merger = Repo(scratch.path).merger
    onto = scratch.tree(candidate)
    assert merger.trivial_merge(scratch.tree(f"{patch}^"), onto, scratch.tree(patch)) is None
    got = merger.merge_patch(onto, patch)
    assert got.tree is not None
    assert scratch.show(got.tree, "foo") == "now a file"
    assert (got.tree, set()) == scratch.by_git(candidate, "cherry-pick", patch)


def test_a_file_where_the_patch_adds_a_directory_conflicts(scratch: Scratch):
    """The candidate has a file ``bar`` where the patch adds ``bar/y``: git cannot merge it."""
    patch, candidate = _fork(scratch, {"a.txt": "a\n"}, {"bar/y": "y\n"},
                             {"bar": "a file named bar\n"})
    merger = Repo(scratch.path).merger
    onto = scratch.tree(candidate)
    assert merger.trivial_merge(scratch.tree(f"{patch}^"), onto, scratch.tree(patch)) is None
    got = merger.merge_patch(onto, patch)
    assert got.tree is None
    assert got == MergeResult(tree=None, conflicts=("bar",))
    # git agrees that it conflicts (and moves its side of "bar" to "bar~HEAD").
    assert scratch.by_git(candidate, "cherry-pick", patch)[0] is None


def test_a_revert_is_a_merge_with_the_sides_swapped(scratch: Scratch):
    base = scratch.commit("base", {"a.txt": "a\n", "b.txt": "b\n"})
    change = scratch.commit("the change", {"a.txt": "changed\n"})
    later = scratch.commit("later", {"b.txt": "later\n"})
    scratch.git("revert", "--no-edit", change)
    revert = scratch.git("rev-parse", "HEAD")
    merger = Repo(scratch.path).merger
    onto = scratch.tree(later)
    by_commit = merger.merge_patch(onto, revert)
    swapped = merger.merge_trees(scratch.tree(change), onto, scratch.tree(base))
    assert by_commit == swapped == MergeResult(tree=scratch.tree(revert), conflicts=())
    assert scratch.show(scratch.tree(revert), "a.txt") == "a"
    # Onto a tree that never had the change, reverting it changes nothing.
    assert merger.merge_patch(scratch.tree(base), revert).tree == scratch.tree(base)
    # Onto one that changed the same line since, it conflicts, as git revert does.
    scratch.git("checkout", "-q", "--detach", later)
    moved_on = scratch.commit("moved on", {"a.txt": "changed again\n"})
    assert merger.merge_patch(scratch.tree(moved_on), revert) == \
        MergeResult(tree=None, conflicts=("a.txt",))
    assert scratch.by_git(moved_on, "revert", "--no-edit", change) == (None, {"a.txt"})


def test_edit_tree_writes_nested_paths_and_drops_emptied_directories(scratch: Scratch):
    first = scratch.commit("base", {"top.txt": "top\n", "keep/k.txt": "k\n"})
    repo = Repo(scratch.path)
    merger = repo.merger
    tree = scratch.tree(first)
    (scratch.path / "blob").write_text("new\n", encoding="utf-8")
    blob = scratch.git("hash-object", "-w", "blob")
    added = merger.edit_tree(tree, {"a/b/c.txt": TreeEntry(blob, BLOB)})
    assert scratch.git("ls-tree", "-r", "--name-only", added).split() == \
        ["a/b/c.txt", "keep/k.txt", "top.txt"]
    assert repo.trees.blob_at(added, "a/b/c.txt") == blob
    assert merger.edit_tree(added, {"a/b/c.txt": None}) == tree
    emptied = merger.edit_tree(tree, {"keep/k.txt": None, "top.txt": None})
    assert emptied == scratch.git("hash-object", "-t", "tree", "/dev/null")
    alone = merger.edit_tree(None, {"x/y": TreeEntry(blob, BLOB)})
    assert scratch.git("ls-tree", "-r", "--name-only", alone) == "x/y"


def test_make_commit_moves_no_ref_and_is_reproducible(scratch: Scratch):
    first = scratch.commit("base", {"a.txt": "a\n"})
    like = scratch.commit("a patch\n\nwith a body", {"a.txt": "b\n"})
    merger = Repo(scratch.path).merger
    before = _state(scratch)
    made = merger.make_commit(scratch.tree(like), first, like)
    _unmoved(scratch, before)
    assert made == merger.make_commit(scratch.tree(like), first, like)
    # Same tree, parent, author, committer and message as ``like``: the same commit.
    assert made == like
    other = merger.make_commit(scratch.tree(first), first, like)
    assert scratch.git("log", "-1", "--format=%P%n%T%n%an%n%B", other).split("\n")[:4] == \
        [first, scratch.tree(first), "Bisect Tester", "a patch"]


def test_a_missing_tree_is_a_git_failure(scratch: Scratch):
    patch = scratch.commit("base", {"a.txt": "a\n"})
    merger = Repo(scratch.path).merger
    with pytest.raises(GitFailure, match="missing"):
        merger.merge_patch("0" * 40, patch)
    with pytest.raises(GitFailure, match="missing"):
        merger.merge_patch(scratch.tree(patch), "1" * 40)
