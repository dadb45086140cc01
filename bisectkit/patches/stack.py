"""The local patch stack of a submodule: what each patch is, and its replay onto a candidate.

Rules (README.md, "Patch-stack rules"): at upstream candidate C, for each
patch, oldest first,

- a cherry-pick of upstream U is dropped when U is an ancestor of C;
- a revert of R is dropped when R is not an ancestor of C;
- anything else is 3-way merged onto the tree built so far; an empty result
  is recorded as a no-op, a conflict stops the replay (the step is skipped),
  except that with ``on_conflict="drop"`` a conflicting *local* patch is
  dropped and the rest of the stack goes on top (the step is flagged
  "tested without" it). A conflicting revert or cherry-pick always stops the
  replay: testing without it would test another upstream history.

The replay happens entirely in the object database; the caller checks out the
final commit once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo
from bisectkit.model import OnConflict, short
from bisectkit.model.documents import PatchJSON
from bisectkit.patches.ids import same_patch_upstream

Kind = Literal["revert", "cherry-pick", "local"]
Action = Literal["applied", "dropped", "empty", "conflict"]

#: Start of the ``why`` of a local patch dropped because it conflicts (``--on-conflict drop``).
DROPPED_CONFLICT = "conflicts at this candidate (--on-conflict drop)"
#: Start of the flag of a step tested without a conflicting local patch.
TESTED_WITHOUT = "tested without "

_REVERT_RE = re.compile(r"This reverts commit ([0-9a-fA-F]{7,64})")
_PICK_RE = re.compile(r"\(cherry picked from commit ([0-9a-fA-F]{7,64})\)")


def trailer(message: str) -> str | None:
    """The revert or cherry-pick trailer ``message`` carries (as written), if any."""
    found = _REVERT_RE.search(message) or _PICK_RE.search(message)
    return found.group(0) if found else None


@dataclass(frozen=True)
class Patch:
    """One commit of the local stack and the upstream commit it refers to, if any."""

    sha: str
    subject: str
    kind: Kind
    refers_to: str | None = None
    #: How ``refers_to`` was found: "trailer" or "patch-id".
    found_by: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Patch:
        return cls(**data)


@dataclass(frozen=True)
class PatchAction:
    """What happened to one patch at one candidate."""

    patch: Patch
    action: Action
    why: str
    #: Time spent deciding and merging this patch (for traces).
    seconds: float = 0.0

    @property
    def conflicts(self) -> bool:
        """Whether the patch did not apply here (a conflict, or dropped for one)."""
        return conflicted(self.action, self.why)

    def to_json(self) -> PatchJSON:
        return {
            "commit": self.patch.sha,
            "subject": self.patch.subject,
            "kind": self.patch.kind,
            "refers_to": self.patch.refers_to,
            "action": self.action,
            "why": self.why,
            "seconds": round(self.seconds, 6),
        }


@dataclass(frozen=True)
class Replay:
    """A patched candidate: the commit to check out, or the patch that conflicted."""

    candidate: str
    commit: str | None
    tree: str | None
    actions: tuple[PatchAction, ...] = field(default_factory=tuple)
    conflict: PatchAction | None = None

    @property
    def dropped_for_conflict(self) -> tuple[PatchAction, ...]:
        """Local patches left out because they conflict (``--on-conflict drop``)."""
        return tuple(a for a in self.actions if a.action == "dropped" and a.conflicts)

    def flags(self) -> list[str]:
        """One "tested without <patch>" note per local patch left out."""
        return [tested_without(a.patch) for a in self.dropped_for_conflict]


def conflicted(action: str, why: str) -> bool:
    """Whether a patch action (also as recorded in a step's ``patches``) means it did not apply."""
    return action == "conflict" or (action == "dropped" and why.startswith(DROPPED_CONFLICT))


def tested_without(patch: Patch) -> str:
    """The flag of a step tested without ``patch``."""
    return f"{TESTED_WITHOUT}{short(patch.sha)} {patch.subject}"


@dataclass(frozen=True)
class Stack:
    """The stack found at bisect start: merge-base with upstream and the patches on top."""

    head: str
    merge_base: str
    patches: tuple[Patch, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "merge_base": self.merge_base,
            "patches": [p.to_json() for p in self.patches],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stack:
        return cls(
            head=data["head"],
            merge_base=data["merge_base"],
            patches=tuple(Patch.from_json(p) for p in data["patches"]),
        )


def analyse(repo: Repo, head: str, upstream: str, extra_upstream: tuple[str, ...] = ()) -> Stack:
    """Find the merge-base of ``head`` with ``upstream`` and classify the patches on top.

    ``extra_upstream`` are further upstream tips (such as the bad commit)
    whose commits are also candidates for patch-id matching.
    """
    base = repo.merge_base(head, upstream)
    if base is None:
        raise BadInput(
            f"{repo.workdir}: HEAD {short(head)} and upstream {short(upstream)} share no history"
        )
    shas = repo.first_parent_range(head, [base])
    infos = [repo.commit_info(s) for s in shas]
    patches: list[Patch] = []
    unmatched: list[int] = []
    for info in infos:
        patch = _from_message(repo, info.sha, info.subject, info.message)
        if patch.kind == "local":
            unmatched.append(len(patches))
        patches.append(patch)
    _check_targets(repo, patches)
    if unmatched:
        _match_patch_ids(repo, patches, unmatched, (upstream, *extra_upstream), base)
    return Stack(head=head, merge_base=base, patches=tuple(patches))


def targets(patches: Sequence[Patch]) -> list[tuple[Patch, str]]:
    """What the drop rules ask about: each revert's or cherry-pick's target, ours excepted."""
    own = {p.sha for p in patches}
    return [(p, p.refers_to) for p in patches
            if p.kind != "local" and p.refers_to is not None and p.refers_to not in own]


def _check_targets(repo: Repo, patches: Sequence[Patch]) -> None:
    """A target a shallow clone lacks may be behind its boundary: no guessing its fate."""
    for patch, target in targets(patches) if repo.shallow.active else []:
        if repo.try_resolve(target) is None:
            raise repo.shallow.missing(f"the fate of patch {short(patch.sha)} (it "
                                       f"{patch.kind}s {short(target)}, not here)")


def _from_message(repo: Repo, sha: str, subject: str, message: str) -> Patch:
    revert = _REVERT_RE.search(message)
    if revert:
        target = repo.try_resolve(revert.group(1)) or revert.group(1)
        return Patch(sha, subject, "revert", target, "trailer")
    picks = _PICK_RE.findall(message)
    # A patch picked twice (upstream -> fork branch -> here) carries several
    # trailers; the last one that names a commit we have is the nearest source.
    for cand in reversed(picks):
        target = repo.try_resolve(cand)
        if target is not None:
            return Patch(sha, subject, "cherry-pick", target, "trailer")
    if picks:
        return Patch(sha, subject, "cherry-pick", picks[-1], "trailer")
    return Patch(sha, subject, "local")


def _match_patch_ids(
    repo: Repo, patches: list[Patch], unmatched: list[int], tips: tuple[str, ...], base: str
) -> None:
    """Turn local patches into cherry-picks when an upstream commit has the same patch id."""
    found = same_patch_upstream(repo, [patches[i].sha for i in unmatched], tips, base)
    for i in unmatched:
        p = patches[i]
        if p.sha in found:
            patches[i] = Patch(p.sha, p.subject, "cherry-pick", found[p.sha], "patch-id")


def replay(repo: Repo, stack: Stack, candidate: str,
           is_ancestor: Callable[[str, str], bool] | None = None,
           on_conflict: OnConflict = "skip") -> Replay:
    """Apply ``stack`` onto upstream ``candidate`` in memory, following the drop rules.

    ``is_ancestor(a, b)`` answers the ancestry questions (default: the full
    graph through ``repo``); a bisection passes a faster one that knows its
    candidates lie on one first-parent line. ``on_conflict="drop"`` leaves a
    conflicting local patch out and goes on; any other conflict ends the replay.
    """
    is_ancestor = is_ancestor or repo.is_ancestor
    tree: str = repo.tree_of(candidate)
    commit = candidate
    actions: list[PatchAction] = []
    applied: set[str] = set()
    for patch in stack.patches:
        started = time.perf_counter()

        def done(action: Action, why: str, patch: Patch = patch, started: float = started) -> None:
            actions.append(PatchAction(patch, action, why, time.perf_counter() - started))

        reason = _drop_reason(repo, patch, candidate, stack, applied, is_ancestor)
        if reason is not None:
            done("dropped", reason)
            continue
        result = repo.merger.merge_patch(tree, patch.sha)
        if result.tree is None:
            paths = ", ".join(result.conflicts)
            if on_conflict == "drop" and patch.kind == "local":
                # The tree so far is untouched: the merge result is discarded whole.
                done("dropped", f"{DROPPED_CONFLICT}: conflict in {paths}")
                continue
            done("conflict", "conflict in " + paths)
            return Replay(candidate, None, None, tuple(actions), actions[-1])
        if result.tree == tree:
            done("empty", "no change on this candidate")
            continue
        tree = result.tree
        commit = repo.merger.make_commit(tree, commit, patch.sha)
        applied.add(patch.sha)
        done("applied", _applied_why(patch))
    return Replay(candidate, commit, tree, tuple(actions))


def _drop_reason(
    repo: Repo, patch: Patch, candidate: str, stack: Stack, applied: set[str],
    is_ancestor: Callable[[str, str], bool],
) -> str | None:
    target = patch.refers_to
    if target is None or patch.kind == "local":
        return None
    abbrev = short(target)
    if patch.kind == "cherry-pick":
        if repo.try_resolve(target) is not None and is_ancestor(target, candidate):
            return f"already upstream: {abbrev} is in the candidate"
        return None
    # A revert of one of our own earlier patches follows that patch's fate.
    if any(p.sha == target for p in stack.patches):
        return None if target in applied else f"reverted patch {abbrev} is not applied"
    if repo.try_resolve(target) is None:
        return f"reverted commit {abbrev} is not in this repository"
    if not is_ancestor(target, candidate):
        return f"reverted commit {abbrev} is not in the candidate"
    return None


def _applied_why(patch: Patch) -> str:
    if patch.kind == "cherry-pick":
        return f"{patch.refers_to and short(patch.refers_to)} is not in the candidate yet"
    if patch.kind == "revert":
        return f"reverts {patch.refers_to and short(patch.refers_to)}, which the candidate has"
    return "local patch"


def conflict_reason(conflict: PatchAction) -> str:
    """Why a step whose patch replay stopped at ``conflict`` is skipped unbuilt."""
    where = conflict.why.removeprefix("conflict in ")
    return f"conflict in {short(conflict.patch.sha)} ({conflict.patch.subject}): {where}"
