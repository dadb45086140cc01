"""Stack strategy: bisect our own patches (``bisectkit run --submodule S --stack --at REV``).

When upstream REV is good without the local stack but bad with it, the
culprit is one of our patches (or a patch interacting with upstream).
Candidates are the stack's patches, oldest first; testing patch k means
applying the first k patches onto REV (with the usual drop rules), so the
first bad candidate is the first patch that turns the repro bad. The good
end is REV itself, pristine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from bisectkit.cli import argtypes
from bisectkit.cli.targets import Given, Option
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.model import StackRequest, short
from bisectkit.model.documents import StepDetails
from bisectkit.model.params import StackParams
from bisectkit.patches.stack import Stack, conflict_reason, replay
from bisectkit.patches.upstream import resolve_upstream
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session
from bisectkit.strategies.base import Argv, Kind, Prepared, Replay, new_session
from bisectkit.strategies.cmdline import (
    given_words,
    refuse_on_conflict,
    refuse_strays,
    selects_another,
)
from bisectkit.strategies.common import (
    KnownAncestry,
    PatchedSubmodule,
    analysed,
    ask_ahead,
    check_clean,
    contained_patch,
    fetch_lines,
    guess_lines,
    step_env,
)


def start(superproject: Repo, req: StackRequest) -> Session:
    """Validate ``req`` and build a session over the stack's prefixes; touches nothing."""
    path, sub = open_submodule(superproject, req.submodule)
    check_clean(superproject, {path: sub})
    at = sub.resolve(req.at)
    up = resolve_upstream(superproject, path, sub, req.upstream, contains=(at,))
    head = sub.worktree.head_state()
    stack, fetched = analysed(sub, head.sha, up.sha, (at,))
    if not stack.patches:
        raise BadInput(f"submodule {path} has no local patches on top of {up.ref}: "
                       "there is no stack to bisect")
    patch = contained_patch(sub, stack, at)
    if patch is not None:
        raise BadInput(f"--at '{req.at}' contains local patch {short(patch.sha)}; pass an "
                       "upstream commit (e.g. the first bad one a submodule bisect found)")
    known: dict[str, Any] = {}
    in_at = KnownAncestry(sub, known)
    ask_ahead(sub, stack, lambda target: in_at(target, at))
    patches = [p.sha for p in stack.patches]
    return new_session(
        superproject, bad=patches[-1], good=[at], candidates=patches, moves=[path],
        terms=req.terms, ancestry=known,
        params=StackParams(submodule=path, upstream_ref=up.ref, upstream=up.sha,
                           upstream_guessed=up.guessed, stack=stack.to_json(), at=at,
                           analysis_fetched=fetched))


def settled(req: StackRequest, session: Session) -> StackRequest:
    """``req`` as ``session`` understood it: the submodule's path, the upstream found and
    ``--at`` as a full sha."""
    p = session.params_as(StackParams)
    return dataclasses.replace(req, submodule=p.submodule, at=p.at, upstream=p.upstream_ref)


class StackStrategy(PatchedSubmodule):
    """Candidates are patches; candidate k is the first k patches on top of ``--at``."""

    name = StackParams.strategy

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        super().__init__(superproject, session, mover)
        self.at = session.params_as(StackParams).at
        #: "Is the target in --at?", answered at start (the session keeps it).
        self.known = KnownAncestry(self.sub, session.ancestry)

    def target_argv(self) -> list[str]:
        return ["--submodule", self.path, "--upstream", self.params.upstream_ref, "--stack",
                "--at", self.at, *self._parents_argv()]

    def range_argv(self, good: Sequence[str], bad: str) -> list[str]:
        return []  # --at and the stack are the range

    def stack_unchecked(self) -> str | None:
        return "not checked: the candidates already are the patch stack's patches"

    def prepare(self, candidate: str) -> Prepared:
        """The first k patches (k = the candidate's position, 0 for ``--at``) onto ``--at``."""
        shas = [p.sha for p in self.stack.patches]
        k = shas.index(candidate) + 1 if candidate in shas else 0
        prefix = Stack(self.stack.head, self.stack.merge_base, self.stack.patches[:k])
        replayed = replay(self.sub, prefix, self.at, self.known)
        details: StepDetails = {"patches": [a.to_json() for a in replayed.actions]}
        if replayed.conflict is not None:
            return Prepared(candidate, (), details, skip_reason=conflict_reason(replayed.conflict))
        details["patched"] = replayed.commit
        env = step_env(strategy=self.name, commit=self.at, submodule=self.path,
                       patched=str(replayed.commit), stack_patches=k)
        again = Replay(self.path, self.at, prefix.to_json(), "skip", str(replayed.tree))
        return Prepared(candidate, (self._super_tree, str(replayed.tree)), details, env,
                        target=replayed.commit, checkouts=self.checkouts(str(replayed.commit)),
                        replay=again)

    def header_lines(self) -> list[str]:
        patches = self.params.patches
        lines = [f"bisecting the local patch stack of submodule {self.path}",
                 f"  on upstream {short(self.at)} {self.sub.commit_info(self.at).subject}",
                 *guess_lines(self.params),
                 *fetch_lines(self.params),
                 f"  {len(patches)} patches, oldest first (candidate k = the first k applied):"]
        for p in patches:
            lines.append(f"    {p['kind']:<11} {short(p['sha'])}  {p['subject']}")
        return lines

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        return {"submodule": self.path, "upstream": self.params.upstream_ref,
                "at": self.at}


# -- the command line -------------------------------------------------------------

STACK = Option("--stack", help="bisect the submodule's local patch stack on top of --at REV "
                               "instead (candidate k = the first k patches applied)")
AT = Option("--at", metavar="REV", type=argtypes.nonempty,
            help="with --stack: the upstream commit to patch")


def request(given: Given) -> StackRequest:
    """``--stack --at REV``: one submodule, no ends (the candidates are the stack's)."""
    refuse_on_conflict(given)
    refuse_strays(given)
    at = given.text(AT)
    if selects_another(given) or given.good or given.bad or not at or len(given.submodules) > 1 \
            or given.all_parents:
        raise BadInput("--stack takes one --submodule and --at REV (no good/bad: the "
                       "candidates are the stack's patches), not --integrate/--all-parents")
    path = given.submodule(", --integrate")
    if not path:
        raise BadInput("--stack needs --submodule PATH (or git config bisectkit.submodule)")
    return StackRequest(path, at, given.upstream, given.terms)


def words(req: StackRequest) -> list[str]:
    """``--submodule PATH [--upstream REF] --stack --at REV``."""
    return ["--submodule", req.submodule, *given_words("--upstream", req.upstream), "--stack",
            "--at", req.at]


KIND = Kind(StackParams, StackStrategy, StackRequest, start, settled,
            Argv(STACK, (AT,), request, words, takes_ends=False), candidates_are_patches=True)
