"""Local patches that are upstream commits in disguise: found by patch id.

A backport made without ``cherry-pick -x`` carries no trailer naming its
upstream commit, but its change is the same: the same patch id (as ``git
patch-id``) against its first parent. Patch-stack analysis asks this once
per bisection, for the stack's local patches, over the upstream commits
between the merge-base and the upstream tips.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bisectkit.git.repo import Repo


def same_patch_upstream(repo: Repo, shas: Sequence[str], tips: tuple[str, ...],
                        base: str) -> dict[str, str]:
    """For each of the local commits ``shas``, the first upstream commit (reachable from
    ``tips``, not from ``base``) with the same change, if any: local sha -> upstream sha."""
    changed = {s: repo.changed_paths(s) for s in shas}
    upstream: Iterable[str] = repo.iter_range(tips, [base])
    if repo.promisor.partial:
        # The only upstream commits that can match, found once (the walk reads trees).
        upstream = _prefetch(repo, list(shas), set(changed.values()), tips, base)
    remaining = {s: (changed[s], repo.patch_id(s)) for s in shas}
    found: dict[str, str] = {}
    for upstream_sha in upstream:
        if not remaining:
            break
        for sha, (paths, pid) in list(remaining.items()):
            # Comparing tree entries first keeps this cheap: a full diff is only
            # computed for upstream commits that touch every file the patch does.
            if not paths or not repo.touches_all(upstream_sha, paths):
                continue
            if repo.changed_paths(upstream_sha) == paths and repo.patch_id(upstream_sha) == pid:
                found[sha] = upstream_sha
                del remaining[sha]
    return found


def _prefetch(repo: Repo, shas: list[str], path_sets: set[frozenset[str]],
              tips: tuple[str, ...], base: str) -> list[str]:
    """A partial clone: fetch the blobs the patch ids will read, in two batches: the local
    patches', then those of every upstream commit that changes exactly a patch's paths
    (the only ones whose patch id is computed; finding them reads trees only). Those
    upstream commits, in the range's order."""
    repo.promisor.ensure(set().union(*(repo.patch_blobs(s) for s in shas)))
    sets = [p for p in path_sets if p]
    matching = [u for u in repo.iter_range(tips, [base])
                if any(repo.touches_all(u, p) and repo.changed_paths(u) == p for p in sets)]
    repo.promisor.ensure(set().union(*(repo.patch_blobs(u) for u in matching)))
    return matching
