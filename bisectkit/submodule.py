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
from bisectkit.git import Repo, open_submodule
from bisectkit.model import ON_CONFLICT, SUPERPROJECT, CommitInfo, OnConflict, StepRecord, Upstream
from bisectkit.patchstack import Stack
from bisectkit.session import Session
from bisectkit.strategy import Prepared, Strategy, head_states, resolve_range
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
    #: ``--on-conflict``: skip the step, or test it without a conflicting local patch.
    on_conflict: OnConflict = "skip"


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
        # on_conflict decides what is tested at a candidate, so it belongs to the
        # session: later good/bad/run commands and the log's replay use it too.
        params={"submodule": path, "upstream_ref": up.ref, "upstream": up.sha,
                "upstream_guessed": up.guessed, "stack": stack.to_json(),
                "on_conflict": req.on_conflict},
        # The log's first line: full shas, so a replay means the same range.
        start_argv=["start", "--submodule", path, "--upstream", up.ref,
                    *(["--on-conflict", req.on_conflict] if req.on_conflict != "skip" else []),
                    bad, *goods, *(["--", *req.pathspec] if req.pathspec else [])],
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
    note = Upstream(params["upstream_ref"], params["upstream"],
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
        on_conflict = session.params.get("on_conflict", "skip")
        if on_conflict not in ON_CONFLICT:
            raise BadInput(f"the session has an unknown on_conflict {on_conflict!r}; run "
                           "'git bisect-patched reset'")
        self.on_conflict: OnConflict = on_conflict
        # stops_applying() per number of steps it was computed from.
        self._stops: tuple[int, list[dict[str, Any]]] | None = None

    def prepare(self, candidate: str) -> Prepared:
        """Replay the stack onto ``candidate`` in memory; a conflict makes it a skip.

        With ``--on-conflict drop`` a conflicting local patch is left out
        instead, and the step carries a "tested without <patch>" flag.
        """
        replay = patchstack.replay(self.sub, self.stack, candidate, self.ancestry,
                                   self.on_conflict)
        details: dict[str, Any] = {"patches": [a.to_json() for a in replay.actions]}
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
        flags = replay.flags()
        if flags:
            # Step flags (console, JSON, report), not part of the verdict cache's
            # entry: the cache keys on the tree, which already lacks the patch.
            details["flags"] = flags
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
        return [f"{first_bad[:12]} is {terms.old} without the local patch stack and "
                f"{terms.new} with it: one of our patches is the culprit; to find which, "
                "run:", shlex.join(cmd)]

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        return {"submodule": self.path, "upstream": self.session.params["upstream_ref"],
                "on_conflict": self.on_conflict, "stops_applying": self.stops_applying()}

    def closing_lines(self, first_bad: str | None) -> list[str]:
        """Where each conflicting local patch stops applying; how to test past a conflict."""
        lines = [entry["message"] for entry in self.stops_applying()]
        if self.on_conflict == "skip":
            local = {p.sha for p in self.stack.patches if p.kind == "local"}
            skipped = sum(1 for step in self.session.steps if step.source == "auto" and any(
                p["action"] == "conflict" and p["commit"] in local for p in step.patches))
            if skipped:
                lines.append(f"{skipped} step{'s were' if skipped != 1 else ' was'} skipped "
                             "because a local patch conflicts; --on-conflict drop tests such "
                             "candidates without it")
        return lines

    # -- where local patches stop applying ---------------------------------------
    def stops_applying(self) -> list[dict[str, Any]]:
        """Each local patch that conflicts at some prepared candidate: from where it does.

        The boundary is the first conflicting candidate after the last one
        where the patch applied cleanly (candidate order, steps of this
        session). Between those two the stack is replayed in memory (no
        checkout, no build) to find the exact first-parent commit; when that
        is not possible (an earlier patch stops the replay) the answer says
        "between" instead of naming a commit.
        """
        key = len(self.session.steps)
        if self._stops is not None and self._stops[0] == key:
            return self._stops[1]
        states = _local_patch_states(self.session.steps, self.ancestry.pos)
        found: list[dict[str, Any]] = []
        for index, patch in enumerate(self.stack.patches):
            seen = states.get(patch.sha, {})
            if patch.kind != "local" or not any(seen.values()):
                continue
            entry = self._boundary(index, seen)
            if entry is not None:
                found.append(entry)
        self._stops = (key, found)
        return found

    def _boundary(self, index: int, seen: dict[int, bool]) -> dict[str, Any] | None:
        """The entry of ``stack.patches[index]`` (``seen``: candidate position -> conflicts)."""
        c = self.session.candidates
        clean = [i for i, conflicts in seen.items() if not conflicts]
        last_clean: str | None
        if clean:
            after = [i for i, conflicts in seen.items() if conflicts and i > max(clean)]
            if not after:
                return None  # it applies again at the newest candidate tried: nothing to rebase
            last_clean, first_conflict = c[max(clean)], c[min(after)]
        else:
            first_conflict = c[min(seen)]
            # No candidate had it apply: the good end may (the range starts before
            # the conflict), which is all the narrowing needs.
            last_clean = self._clean_good_end(index, first_conflict)
            if last_clean is None:
                return self._entry(index, first_conflict, None, exact=False)
        last_clean, first_conflict = self._narrow(index, last_clean, first_conflict)
        # Exact only when nothing lies between: the conflicting commit's first parent
        # is the clean one (with a pathspec, candidates are not adjacent commits).
        exact = self.sub.commit_info(first_conflict).parents[:1] == (last_clean,)
        return self._entry(index, first_conflict, last_clean, exact)

    def _prefix(self, index: int) -> Stack:
        """The stack up to and including patch ``index``: later ones cannot change its fate."""
        return Stack(self.stack.head, self.stack.merge_base, self.stack.patches[:index + 1])

    def _clean_good_end(self, index: int, first_conflict: str) -> str | None:
        """A good end, older than ``first_conflict``, where patch ``index`` applies cleanly."""
        for good in self.session.good:
            if (self.sub.is_ancestor(good, first_conflict)
                    and self._conflicts_at(self._prefix(index), good) is False):
                return good
        return None

    def _narrow(self, index: int, clean: str, conflict: str) -> tuple[str, str]:
        """Bisect, in memory, the first-parent line between a clean and a conflicting commit.

        Returns the last clean and the first conflicting commit found (adjacent
        unless an earlier patch stopped a replay on the way).
        """
        line = self.sub.first_parent_range(conflict, [clean])  # oldest first, ends at conflict
        prefix = self._prefix(index)
        lo, hi = -1, len(line) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            conflicts = self._conflicts_at(prefix, line[mid])
            if conflicts is None:
                break  # an earlier patch stopped the replay: this one was not tried there
            if conflicts:
                hi = mid
            else:
                lo = mid
        return (clean if lo < 0 else line[lo]), line[hi]

    def _conflicts_at(self, prefix: Stack, commit: str) -> bool | None:
        """Whether the last patch of ``prefix`` conflicts at ``commit``; None if not tried."""
        replay = patchstack.replay(self.sub, prefix, commit, self.ancestry, self.on_conflict)
        if len(replay.actions) < len(prefix.patches):
            return None
        last = replay.actions[-1]
        if last.conflicts:
            return True
        return False if last.action in ("applied", "empty") else None

    def _entry(self, index: int, first_conflict: str, last_clean: str | None,
               exact: bool) -> dict[str, Any]:
        """One ``stops_applying`` item of the JSON result, with its console line."""
        patch = self.stack.patches[index]
        subject = self.sub.commit_info(first_conflict).subject
        name = f'local patch {patch.sha[:12]} "{patch.subject}"'
        if last_clean is None:
            message = (f"{name} conflicts at every tested candidate from {first_conflict} "
                       f"{subject}; rebase it onto that commit")
        elif exact:
            message = (f"{name} stops applying at {first_conflict} {subject} (applied cleanly "
                       f"at {last_clean[:12]}); rebase it onto that commit")
        else:
            message = (f"{name} stops applying between {last_clean[:12]} (applied cleanly) and "
                       f"{first_conflict} {subject} (conflicts), the commits between could "
                       f"not be checked; rebase it onto {first_conflict[:12]}")
        return {"patch": patch.sha, "subject": patch.subject, "first_conflict": first_conflict,
                "first_conflict_subject": subject, "last_clean": last_clean, "exact": exact,
                "message": message}

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
            f"  range: {s.terms.old} {goods} .. {s.terms.new} {s.bad[:12]}: "
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
        if self.on_conflict == "drop":
            lines.append("  --on-conflict drop: a conflicting local patch is left out and the "
                         "step flagged")
        return lines


def _local_patch_states(steps: Sequence[StepRecord],
                        positions: dict[str, int]) -> dict[str, dict[int, bool]]:
    """Per local patch: candidate position -> whether it conflicted there, from step records.

    Positions where the replay stopped before the patch (an earlier conflict)
    are absent: whether it applies there is unknown.
    """
    states: dict[str, dict[int, bool]] = {}
    for step in steps:
        pos = positions.get(step.commit)
        if pos is None:  # the good end (--verify-range) or not a candidate
            continue
        for p in step.patches:
            if p["kind"] != "local":
                continue
            if p["action"] in ("applied", "empty"):
                states.setdefault(p["commit"], {})[pos] = False
            elif patchstack.conflicted(p["action"], p["why"]):
                states.setdefault(p["commit"], {})[pos] = True
    return states
