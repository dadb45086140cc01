"""Submodule strategy: bisect upstream commits of a patched submodule.

At every candidate the submodule is moved to the pristine upstream commit
plus the local patch stack, replayed in memory (:mod:`bisectkit.patchstack`)
and written with one checkout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bisectkit import patchstack
from bisectkit.errors import BadInput
from bisectkit.git import CommitInfo, Repo, open_submodule
from bisectkit.patchstack import Replay, Stack
from bisectkit.session import Session

#: Tried in order when neither ``--upstream`` nor ``bisectkit.upstream`` is given.
DEFAULT_UPSTREAMS = ("upstream/main", "origin/main", "origin/master")


@dataclass(frozen=True)
class StartRequest:
    """What ``start`` was asked to bisect, before validation."""

    submodule: str
    upstream: str | None
    bad: str
    good: Sequence[str]
    pathspec: Sequence[str] = ()


def start(superproject: Repo, req: StartRequest) -> Session:
    """Validate ``req`` against the repositories and build a new session; touches nothing."""
    path, sub = open_submodule(superproject, req.submodule)
    dirty = superproject.dirty_paths(ignore=superproject.gitlinks())
    if dirty:
        raise BadInput(_dirty_message("superproject", superproject, dirty))
    dirty = sub.dirty_paths()
    if dirty:
        raise BadInput(_dirty_message(f"submodule {path}", sub, dirty))
    upstream_ref, upstream = _resolve_upstream(superproject, sub, req.upstream)
    bad = sub.resolve(req.bad)
    if not req.good:
        raise BadInput("at least one good revision is needed")
    goods = [sub.resolve(g) for g in req.good]
    for rev, sha in zip(req.good, goods, strict=True):
        if sha == bad:
            raise BadInput(f"good revision '{rev}' is the bad revision itself")
        if not sub.is_ancestor(sha, bad):
            raise BadInput(f"good revision '{rev}' ({sha[:12]}) is not an ancestor of "
                           f"bad '{req.bad}' ({bad[:12]})")
    sub_head = sub.head_state()
    stack = patchstack.analyse(sub, sub_head.sha, upstream, extra_upstream=(bad,))
    for patch in stack.patches:
        if sub.is_ancestor(patch.sha, bad):
            raise BadInput(f"bad revision '{req.bad}' contains local patch {patch.sha[:12]} "
                           f"({patch.subject}); pass upstream commits, e.g. the merge-base "
                           f"{stack.merge_base[:12]}")
    candidates = sub.first_parent_range(bad, goods, list(req.pathspec))
    return Session(
        strategy="submodule",
        root=str(superproject.workdir),
        submodule=path,
        upstream_ref=upstream_ref,
        upstream=upstream,
        bad=bad,
        good=goods,
        pathspec=list(req.pathspec),
        candidates=candidates,
        stack=stack.to_json(),
        orig_super=superproject.head_state(),
        orig_sub=sub_head,
        # The log's first line: full shas, so a replay means the same range.
        start_argv=["start", "--submodule", path, "--upstream", upstream_ref, bad, *goods,
                    *(["--", *req.pathspec] if req.pathspec else [])],
    )


def _dirty_message(what: str, repo: Repo, dirty: list[str]) -> str:
    more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
    return (f"{what} has uncommitted changes ({dirty[0]}{more} in {repo.workdir}); "
            "commit or stash them first")


def _resolve_upstream(superproject: Repo, sub: Repo, upstream: str | None) -> tuple[str, str]:
    if upstream is None:
        upstream = superproject.config_get("bisectkit.upstream")
    if upstream is not None:
        return upstream, sub.resolve(upstream)
    for ref in DEFAULT_UPSTREAMS:
        sha = sub.try_resolve(ref)
        if sha is not None:
            return ref, sha
    tried = ", ".join(DEFAULT_UPSTREAMS)
    raise BadInput(f"no upstream ref found in {sub.workdir} (tried {tried}); "
                   "pass --upstream REF")


class SubmoduleStrategy:
    """Candidates are upstream commits of one submodule; materialised with the patch stack."""

    name = "submodule"

    def __init__(self, superproject: Repo, session: Session) -> None:
        self.superproject = superproject
        _, self.sub = open_submodule(superproject, session.submodule)
        self.session = session
        self.stack = Stack.from_json(session.stack)

    def describe(self, sha: str) -> CommitInfo:
        return self.sub.commit_info(sha)

    def materialize(self, candidate: str) -> Replay:
        """Patched candidate, in memory only."""
        return patchstack.replay(self.sub, self.stack, candidate)

    def checkout(self, replay: Replay) -> int:
        """Write the patched candidate to the submodule's work tree; files written."""
        assert replay.commit is not None
        return self.sub.checkout(replay.commit)

    def tested_trees(self, replay: Replay) -> list[str]:
        """What a verdict depends on: the superproject tree and the patched submodule tree."""
        return [self.superproject.tree_of(self.session.orig_super.sha), str(replay.tree)]

    def env(self, candidate: str, replay: Replay) -> dict[str, str]:
        return {
            "BISECTKIT_COMMIT": candidate,
            "BISECTKIT_SUBMODULE": self.session.submodule,
            "BISECTKIT_PATCHED_COMMIT": str(replay.commit),
            "BISECTKIT_STRATEGY": self.name,
        }

    def restore(self) -> None:
        """Put the submodule (and the superproject, should it have moved) back exactly."""
        if self.sub.head_state() != self.session.orig_sub or self.sub.dirty_paths():
            self.sub.restore(self.session.orig_sub)
        if self.superproject.head_state() != self.session.orig_super:
            self.superproject.restore(self.session.orig_super)
