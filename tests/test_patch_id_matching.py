"""A local patch without a trailer is matched, by patch id, to the upstream commit a
topological walk of the upstream range meets first; found by a path-limited walk in git,
the answer is the one the walk of the whole range gave.

The oracle below is that walk (libgit2's topological order over every commit of the
range): a relanded change goes to the reland, a side branch's change to the merge that
brought it when the merge's diff is the same, and where two matches lie on branches that
never meet, to the one the walk meets first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
from helpers.worlds import World, WorldSpec, cli

from bisectkit.git.repo import Repo
from bisectkit.patches.ids import same_patch_upstream


def oracle(repo: Repo, shas: list[str], tips: tuple[str, ...], base: str) -> dict[str, str]:
    """What the patch-id search answered when it walked the whole range in Python."""
    remaining = {s: (repo.changed_paths(s), repo.patch_id(s)) for s in shas}
    found: dict[str, str] = {}
    for upstream in repo.iter_range(tips, [base]):
        for sha, (paths, pid) in list(remaining.items()):
            if paths and repo.changed_paths(upstream) == paths and \
                    repo.patch_id(upstream) == pid:
                found[sha] = upstream
                del remaining[sha]
    return found


class History:
    """A small repository built commit by commit with the git CLI."""

    def __init__(self, world: World, root: Path) -> None:
        self.world, self.root = world, root
        root.mkdir()
        self.git("init", "-q", "-b", "main")
        self.when = 1_700_000_000

    def git(self, *args: str) -> str:
        return self.world.git(self.root, *args)

    def commit(self, message: str, **files: str) -> str:
        for name, text in files.items():
            (self.root / name).write_text(text)
        self.git("add", "-A")
        self.when += 60
        self.world.env["GIT_COMMITTER_DATE"] = self.world.env["GIT_AUTHOR_DATE"] = \
            f"@{self.when} +0000"
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def merge(self, branch: str) -> str:
        self.when += 60
        self.world.env["GIT_COMMITTER_DATE"] = self.world.env["GIT_AUTHOR_DATE"] = \
            f"@{self.when} +0000"
        self.git("merge", "-q", "--no-ff", "--no-edit", branch)
        return self.git("rev-parse", "HEAD")


def test_matches_are_the_first_the_whole_walk_met(world: World, tmp_path: Path):
    h = History(world, tmp_path / "r")
    base = h.commit("base", f="a\n", g="a\n", q="a\n", e="a\n", other="0\n")
    h.git("checkout", "-q", "-b", "early", base)
    h.commit("E on a branch merged first", e="b\n")
    h.git("checkout", "-q", "main")
    merged_first = h.merge("early")  # its first parent is the range's bottom
    x = h.commit("X", f="b\n")
    h.commit("unrelated", other="1\n")
    h.commit("revert X", f="a\n")
    reland = h.commit("reland X", f="b\n")
    h.git("checkout", "-q", "-b", "side", base)
    side = h.commit("P on a side branch", g="b\n")
    h.git("checkout", "-q", "main")
    brought = h.merge("side")  # its first-parent diff is P's
    fork = h.commit("more", other="2\n")
    for branch in ("q1", "q2"):  # the same change on two branches that never meet
        h.git("checkout", "-q", "-b", branch, fork)
        h.commit(f"Q on {branch}", q="b\n")
        h.git("checkout", "-q", "main")
        h.merge(branch)
    tip = h.commit("tip", other="3\n")
    h.git("checkout", "-q", "-b", "local", base)
    ours = [h.commit("backport of X", f="b\n"), h.commit("backport of P", g="b\n"),
            h.commit("backport of Q", q="b\n"), h.commit("only ours", other="ours\n"),
            h.commit("empty"), h.commit("backport of E", e="b\n")]
    repo = Repo(h.root)
    found = same_patch_upstream(repo, ours, (tip,), base)
    assert found == oracle(repo, ours, (tip,), base)
    assert found[ours[0]] == reland and found[ours[0]] != x
    assert found[ours[1]] == brought and found[ours[1]] != side
    assert ours[2] in found and ours[3] not in found and ours[4] not in found
    assert found[ours[5]] == merged_first


def test_a_relanded_change_is_matched_to_the_reland(world_factory, tmp_path: Path):
    """Through the CLI: upstream reverts the change the stack backported (at 360) and lands
    it again (at 370); the backport is the reland, as the walk from upstream's tip says."""
    spec = WorldSpec(writes={360: {"lib/fix2.txt": "not fixed\n"},
                             370: {"lib/fix2.txt": "fixed by patch-id pick\n"}})
    w = world_factory(tmp_path, spec)
    data = json.loads(cli(w, "status", "--json").stdout)
    by_id = [p for p in data["patches"] if p["found_by"] == "patch-id"]
    assert [p["refers_to"] for p in by_id] == [w.sha(370)]
    sub = Repo(w.submodule)
    base = data["merge_base"]
    local = [p["sha"] for p in data["patches"]]
    tip = sub.resolve("upstream/main")
    assert same_patch_upstream(sub, local, (tip,), base) == oracle(sub, local, (tip,), base)


def test_criss_cross_merge_base_is_the_one_libgit2_picks(world: World, tmp_path: Path):
    h = History(world, tmp_path / "cc")
    base = h.commit("base", f="0\n")
    h.git("checkout", "-q", "-b", "b", base)
    b1 = h.commit("b1", g="1\n")
    h.git("checkout", "-q", "main")
    a1 = h.commit("a1", f="1\n")
    h.merge(b1)
    a3 = h.commit("a3", f="3\n")
    h.git("checkout", "-q", "b")
    h.merge(a1)
    b3 = h.commit("b3", g="3\n")
    assert sorted(h.git("merge-base", "--all", a3, b3).split()) == sorted([a1, b1])
    # The oracle: bisectkit took libgit2's pick before git answered.
    expected = str(pygit2.Repository(str(h.root)).merge_base(a3, b3))
    assert Repo(h.root).merge_base(a3, b3) == expected


def test_a_first_parent_line_dated_before_what_it_hides(world: World, tmp_path: Path):
    """Local patches committed with older dates than the upstream commit under them (a
    clock, or a tool that keeps dates): the line is still exactly the patches."""
    h = History(world, tmp_path / "skew")
    base = ""
    for n in range(30):
        base = h.commit(f"upstream {n}", f=f"{n}\n")
    h.when = 1_000_000_000
    patches = [h.commit(f"patch {n}", g=f"{n}\n") for n in range(3)]
    assert Repo(h.root).first_parent_range(patches[-1], [base]) == patches


def test_a_merge_whose_first_parent_lies_below_the_range(world: World, tmp_path: Path):
    """The merge brought the change onto a line that forked below the range's bottom: its
    first-parent diff is the patch, and the walk meets it before the commit it merged
    (git's own path-limited walk leaves such a merge out: it compares it only with the
    parent inside the range, which has the same file)."""
    h = History(world, tmp_path / "below")
    p1 = h.commit("p1", e="a\n", g="a\n")
    h.git("checkout", "-q", "-b", "rel", p1)
    base = h.commit("the range's bottom, on rel", g="r\n")
    h.git("checkout", "-q", "-b", "side", p1)
    h.commit("S", e="b\n")
    h.git("checkout", "-q", "main")
    brought = h.merge("side")  # first parent p1: below base
    h.merge("rel")
    tip = h.commit("tip", g="t\n")
    h.git("checkout", "-q", "-b", "local", base)
    ours = [h.commit("backport of S", e="b\n")]
    repo = Repo(h.root)
    found = same_patch_upstream(repo, ours, (tip,), base)
    assert found == oracle(repo, ours, (tip,), base) == {ours[0]: brought}
