"""Local patches that are upstream commits in disguise: found by patch id.

A backport made without ``cherry-pick -x`` carries no trailer naming its
upstream commit, but its change is the same: the same patch id (as ``git
patch-id``) against its first parent. Patch-stack analysis asks this once
per bisection, for the stack's local patches, over the upstream commits
between the merge-base and the upstream tips.

Which upstream commit a patch is matched to is the first, in a topological walk
of that range from its tips (children before parents, libgit2's order), that has
the same changed paths and the same patch id: the newest of them when they lie on
one line of history (a change relanded after a revert is matched to the reland).

Performance: only the commits that change the patches' paths (and the merges) are
looked at, found by a path-limited walk in git (``git rev-list --full-history
-- paths``, which reads the commit-graph, and its changed-path filters when
the file has them), not by a walk of the whole range in Python (110,000 upstream
commits since the merge-base at llvm-project's size: 1.9 s there, 0.6 s in git). Held
at once: the matches, not the range. Only when several commits match one patch and
none of them descends from all the others does the topological walk of the range
decide, as it always did.
"""

from __future__ import annotations

from collections.abc import Sequence

from bisectkit.git.repo import Repo


def same_patch_upstream(repo: Repo, shas: Sequence[str], tips: tuple[str, ...],
                        base: str) -> dict[str, str]:
    """For each of the local commits ``shas``, the first upstream commit (reachable from
    ``tips``, not from ``base``) with the same change, if any: local sha -> upstream sha."""
    changed = {s: repo.changed_paths(s) for s in shas}
    if repo.promisor.partial:  # the blobs the local patch ids read, in one batch
        repo.promisor.ensure(set().union(*(repo.patch_blobs(s) for s in shas)))
    alike = same_paths(repo, changed, tips, base)
    if repo.promisor.partial:  # the upstream ones, in a second batch
        repo.promisor.ensure(set().union(*(repo.patch_blobs(u) for us in alike.values()
                                           for u in us)))
    found: dict[str, str] = {}
    for sha, upstream in alike.items():
        pid = repo.patch_id(sha)
        matches = [u for u in upstream if repo.patch_id(u) == pid]
        if matches:
            found[sha] = first_in_walk(repo, matches, tips, base)
    return found


def same_paths(repo: Repo, changed: dict[str, frozenset[str]], tips: tuple[str, ...],
               base: str) -> dict[str, list[str]]:
    """For each local commit of ``changed`` (sha -> the paths it changes), the upstream
    commits in range that change exactly those paths against their first parent (trees
    only: no blob is read). A patch that changes nothing matches nothing."""
    wanted = {s: paths for s, paths in changed.items() if paths}
    alike: dict[str, list[str]] = {s: [] for s in wanted}
    if not wanted:
        return alike
    every = sorted(set().union(*wanted.values()))
    for upstream in repo.range_commits(tips, [base], every):
        # Comparing tree entries first keeps this cheap: a full diff is only
        # computed for upstream commits that touch every file the patch does.
        for sha, paths in wanted.items():
            if repo.touches_all(upstream, paths) and repo.changed_paths(upstream) == paths:
                alike[sha].append(upstream)
    return alike


def first_in_walk(repo: Repo, matches: Sequence[str], tips: Sequence[str],
                  base: str) -> str:
    """The one of ``matches`` (commits in the range ``tips`` minus ``base``) a topological
    walk of the range meets first: the one all others are ancestors of, when there is one
    (a walk gives every commit before its ancestors); else the walk itself decides."""
    # The graph's own answers: within a range known complete (a shallow clone's was
    # checked by the walk), a "no" is certain, never a question for its boundary.
    reaches = repo.graph.is_ancestor
    newest = matches[0]
    for other in matches[1:]:
        if reaches(newest, other):
            newest = other
    if all(m == newest or reaches(m, newest) for m in matches):
        return newest
    wanted = set(matches)
    return next(u for u in repo.iter_range(tips, [base]) if u in wanted)
