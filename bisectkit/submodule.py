"""Submodule strategy: bisect upstream commits of a patched submodule.

At every candidate the submodule is moved to the pristine upstream commit
plus the local patch stack, replayed in memory (:mod:`bisectkit.patchstack`)
and written with one checkout.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bisectkit import patchstack, upstream
from bisectkit.errors import BadInput
from bisectkit.git import CommitInfo, Repo, open_submodule
from bisectkit.patchstack import Stack
from bisectkit.session import Session
from bisectkit.strategy import SUPERPROJECT, Prepared, Strategy, head_states, resolve_range
from bisectkit.worktree import Mover


@dataclass(frozen=True)
class StartRequest:
    """What ``start`` was asked to bisect, before validation."""

    submodule: str
    upstream: str | None
    bad: str
    good: Sequence[str]
    pathspec: Sequence[str] = ()
    #: Words of the old and new sides, for messages (``--find-fix``, ``--term-*``).
    terms: tuple[str, str] = ("good", "bad")


def start(superproject: Repo, req: StartRequest) -> Session:
    """Validate ``req`` against the repositories and build a new session; touches nothing."""
    path, sub = open_submodule(superproject, req.submodule)
    check_clean(superproject, sub, path)
    bad, goods = resolve_range(sub, req.bad, req.good, req.terms)
    up = upstream.find(superproject, path, sub, req.upstream, contains=(bad,))
    sub_head = sub.head_state()
    stack = patchstack.analyse(sub, sub_head.sha, up.sha, extra_upstream=(bad,))
    for patch in stack.patches:
        if sub.is_ancestor(patch.sha, bad):
            raise BadInput(f"{req.terms[1]} revision '{req.bad}' contains local patch "
                           f"{patch.sha[:12]} ({patch.subject}); pass upstream commits, e.g. "
                           f"the merge-base {stack.merge_base[:12]}")
    candidates = sub.first_parent_range(bad, goods, list(req.pathspec))
    return Session(
        strategy="submodule",
        root=str(superproject.workdir),
        bad=bad,
        good=goods,
        pathspec=list(req.pathspec),
        candidates=candidates,
        orig=head_states(superproject, [path]),
        params={"submodule": path, "upstream_ref": up.ref, "upstream": up.sha,
                "upstream_guessed": up.guessed, "stack": stack.to_json()},
        # The log's first line: full shas, so a replay means the same range.
        start_argv=["start", "--submodule", path, "--upstream", up.ref, bad, *goods,
                    *(["--", *req.pathspec] if req.pathspec else [])],
    )


def check_clean(superproject: Repo, sub: Repo, path: str) -> None:
    """Refuse (nothing touched) when the superproject or the submodule has local edits."""
    dirty = superproject.dirty_paths(ignore=superproject.gitlinks())
    if dirty:
        raise BadInput(dirty_message("superproject", superproject, dirty))
    dirty = sub.dirty_paths()
    if dirty:
        raise BadInput(dirty_message(f"submodule {path}", sub, dirty))


def dirty_message(what: str, repo: Repo, dirty: list[str]) -> str:
    """The one-line refusal for a work tree with uncommitted changes."""
    more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
    return (f"{what} has uncommitted changes ({dirty[0]}{more} in {repo.workdir}); "
            "commit or stash them first")


def guess_lines(params: dict[str, Any]) -> list[str]:
    """The header line saying the upstream was guessed, and why (none when it was given)."""
    note = upstream.Upstream(params["upstream_ref"], params["upstream"],
                             params.get("upstream_guessed")).note()
    return [f"  {note}"] if note else []


class LineAncestry:
    """"Is U in candidate C?" for candidates on one first-parent line, mostly without git.

    Along the line each candidate is an ancestor of the next, so the answer is
    monotonic in C's position: it is enough to know, once per U, the first
    candidate that contains it. A U on the line is its own answer; a U
    outside the range costs one or two graph queries; only a U on a side
    branch merged inside the range needs a binary search. On a history the
    size of llvm-project each graph query can take tens of milliseconds.
    """

    def __init__(self, repo: Repo, candidates: Sequence[str]) -> None:
        self.repo = repo
        self.candidates = candidates
        self.pos = {c: i for i, c in enumerate(candidates)}
        self._first: dict[str, int] = {}

    def __call__(self, ancestor: str, commit: str) -> bool:
        i = self.pos.get(commit)
        if i is None:
            return self.repo.is_ancestor(ancestor, commit)
        return i >= self.first_containing(ancestor)

    def first_containing(self, ancestor: str) -> int:
        """Index of the first candidate that has ``ancestor`` (``len`` if none has)."""
        first = self._first.get(ancestor)
        if first is None:
            first = self._search(ancestor)
            self._first[ancestor] = first
        return first

    def _search(self, ancestor: str) -> int:
        c = self.candidates
        if ancestor in self.pos:
            return self.pos[ancestor]
        if not self.repo.is_ancestor(ancestor, c[-1]):
            return len(c)
        if self.repo.is_ancestor(ancestor, c[0]):
            return 0
        lo, hi = 0, len(c) - 1  # c[lo] lacks it, c[hi] has it
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.repo.is_ancestor(ancestor, c[mid]):
                hi = mid
            else:
                lo = mid
        return hi


class PatchedSubmodule(Strategy):
    """What the strategies that replay a submodule's patch stack share."""

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        super().__init__(superproject, session, mover)
        self.path = session.params["submodule"]
        _, self.sub = open_submodule(superproject, self.path)
        self.stack = Stack.from_json(session.params["stack"])
        # The superproject never moves in these strategies: its tree is fixed.
        self._super_tree = superproject.tree_of(session.orig[SUPERPROJECT].sha)

    def describe(self, sha: str) -> CommitInfo:
        return self.sub.commit_info(sha)

    def resolve(self, rev: str) -> str:
        return self.sub.resolve(rev)

    def checkout(self, prepared: Prepared) -> int:
        """Write the patched commit to the submodule's work tree; files written."""
        return self.mover.checkout(self.path, self.sub, prepared.target)


class SubmoduleStrategy(PatchedSubmodule):
    """Candidates are upstream commits of one submodule; materialised with the patch stack."""

    name = "submodule"

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        super().__init__(superproject, session, mover)
        self.ancestry = LineAncestry(self.sub, session.candidates)

    def prepare(self, candidate: str) -> Prepared:
        """Replay the stack onto ``candidate`` in memory; a conflict makes it a skip."""
        replay = patchstack.replay(self.sub, self.stack, candidate, self.ancestry)
        details = {"patches": [a.to_json() for a in replay.actions]}
        if replay.conflict is not None:
            c = replay.conflict
            reason = (f"conflict in {c.patch.sha[:12]} ({c.patch.subject}): "
                      f"{c.why.removeprefix('conflict in ')}")
            return Prepared(candidate, (), details, skip_reason=reason)
        env = {
            "BISECTKIT_COMMIT": candidate,
            "BISECTKIT_SUBMODULE": self.path,
            "BISECTKIT_PATCHED_COMMIT": str(replay.commit),
            "BISECTKIT_STRATEGY": self.name,
        }
        # The patched commit is what was tested: kept in the step record.
        details["patched"] = replay.commit
        return Prepared(candidate, (self._super_tree, str(replay.tree)), details, env,
                        target=replay.commit)

    def prepare_pristine(self, commit: str) -> Prepared:
        """Upstream ``commit`` exactly, without the stack (``--check-stack``)."""
        tree = self.sub.tree_of(commit)
        env = {"BISECTKIT_COMMIT": commit, "BISECTKIT_SUBMODULE": self.path,
               "BISECTKIT_PATCHED_COMMIT": commit, "BISECTKIT_STRATEGY": self.name}
        return Prepared(commit, (self._super_tree, tree), {"patches": [], "patched": commit},
                        env, target=commit)

    def followup(self, first_bad: str, rerun: Sequence[str]) -> list[str]:
        """After ``--check-stack`` found the stack implicated: bisect the stack itself."""
        if not self.session.params.get("stack_implicated"):
            return []
        cmd = ["bisectkit", "run", "--submodule", self.path, "--upstream",
               self.session.params["upstream_ref"], "--stack", "--at", first_bad, *rerun]
        terms = self.session.terms
        return [f"{first_bad[:12]} is {terms['old']} without the local patch stack and "
                f"{terms['new']} with it: one of our patches is the culprit; to find which, "
                "run:", shlex.join(cmd)]

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        return {"submodule": self.path, "upstream": self.session.params["upstream_ref"]}

    def header_lines(self) -> list[str]:
        s, p = self.session, self.session.params
        stack = p["stack"]
        goods = ", ".join(g[:12] for g in s.good)
        where = f" touching {' '.join(s.pathspec)}" if s.pathspec else ""
        lines = [
            f"bisecting submodule {self.path}",
            f"  upstream {p['upstream_ref']} at {p['upstream'][:12]}, merge-base "
            f"{stack['merge_base'][:12]}, patched HEAD {stack['head'][:12]}",
            *guess_lines(p),
            f"  range: {s.terms['old']} {goods} .. {s.terms['new']} {s.bad[:12]}: "
            f"{len(s.candidates)} candidates{where}",
        ]
        patches = stack["patches"]
        lines.append(f"  patch stack: {len(patches)} patch{'es' if len(patches) != 1 else ''}")
        for patch in patches:
            ref = ""
            if patch["refers_to"]:
                arrow = "reverts" if patch["kind"] == "revert" else "from"
                how = ", by patch-id" if patch.get("found_by") == "patch-id" else ""
                ref = f"  ({arrow} {patch['refers_to'][:12]}{how})"
            lines.append(f"    {patch['kind']:<11} {patch['sha'][:12]}  {patch['subject']}{ref}")
        return lines
