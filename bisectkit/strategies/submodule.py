"""Submodule strategy: bisect upstream commits of a patched submodule.

At every candidate the submodule is moved to the pristine upstream commit
plus the local patch stack, replayed in memory (:mod:`bisectkit.patches.stack`)
and written with one checkout.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bisectkit.cli.targets import Given
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.model import FollowUp, OnConflict, StackRequest, SubmoduleRequest, short
from bisectkit.model.documents import StepDetails
from bisectkit.model.params import SubmoduleParams
from bisectkit.patches.stack import conflict_reason, replay
from bisectkit.patches.upstream import CONFIG_KEY, prefer_remote, resolve_upstream
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session
from bisectkit.strategies.base import Argv, Kind, Prepared, Replay, new_session, resolve_range
from bisectkit.strategies.cmdline import given_words, refuse_strays, require_ends
from bisectkit.strategies.common import (
    LineAncestry,
    PatchedSubmodule,
    analysed,
    ask_ahead,
    candidates_touching,
    check_clean,
    contained_patch,
    fetch_lines,
    guess_lines,
    step_env,
)
from bisectkit.strategies.stops import StopsApplying
from bisectkit.text import plural


def start(superproject: Repo, req: SubmoduleRequest) -> Session:
    """Validate ``req`` against the repositories and build a new session; touches nothing."""
    path, sub = open_submodule(superproject, req.submodule)
    check_clean(superproject, {path: sub})
    prefer_remote(sub, req.upstream or superproject.config_get(CONFIG_KEY))
    bad, goods = resolve_range(sub, req.bad, req.good, req.terms)
    up = resolve_upstream(superproject, path, sub, req.upstream, contains=(bad,))
    sub_head = sub.worktree.head_state()
    stack, fetched = analysed(sub, sub_head.sha, up.sha, (bad,))
    patch = contained_patch(sub, stack, bad)
    if patch is not None:
        raise BadInput(f"{req.terms.new} revision '{req.bad}' contains local patch "
                       f"{short(patch.sha)} ({patch.subject}); pass upstream commits, e.g. "
                       f"the merge-base {short(stack.merge_base)}")
    candidates = candidates_touching(sub, bad, goods, req.pathspec, f"submodule {path}")
    known: dict[str, Any] = {}
    if candidates:
        ask_ahead(sub, stack, LineAncestry(sub, candidates, known).first_containing)
    return new_session(
        superproject, bad=bad, good=goods, candidates=candidates, moves=[path],
        pathspec=req.pathspec, terms=req.terms, ancestry=known,
        # on_conflict decides what is tested at a candidate, so it belongs to the
        # session: later good/bad/run commands and the log's replay use it too.
        params=SubmoduleParams(submodule=path, upstream_ref=up.ref, upstream=up.sha,
                               upstream_guessed=up.guessed, stack=stack.to_json(),
                               on_conflict=req.on_conflict, all_parents=req.all_parents,
                               analysis_fetched=fetched))


def settled(req: SubmoduleRequest, session: Session) -> SubmoduleRequest:
    """``req`` as ``session`` understood it: full shas, the submodule's path, the upstream
    found; a replay of it means the same range."""
    p = session.params_as(SubmoduleParams)
    return dataclasses.replace(req, submodule=p.submodule, bad=session.bad,
                               good=tuple(session.good),
                               upstream=p.upstream_ref)


class SubmoduleStrategy(PatchedSubmodule):
    """Candidates are upstream commits of one submodule; materialised with the patch stack."""

    name = SubmoduleParams.strategy

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        super().__init__(superproject, session, mover)
        self.ancestry = LineAncestry(self.sub, session.candidates, session.ancestry)
        # Checked when the session was read (model.params): "skip" or "drop".
        self.on_conflict: OnConflict = self.params.on_conflict
        # stops_applying() per number of steps it was computed from.
        self._stops: tuple[int, list[dict[str, Any]]] | None = None

    def target_argv(self) -> list[str]:
        # --on-conflict decides what is tested at a candidate: the same bisection needs it.
        drop = ["--on-conflict", self.on_conflict] if self.on_conflict != "skip" else []
        return [*super().target_argv(), *drop]

    def candidates_changed(self) -> None:
        # Both rest on candidate positions (the line, the stops found along it).
        self.ancestry = LineAncestry(self.sub, self.session.candidates,
                                     self.session.ancestry)
        self._stops = None

    def prepare(self, candidate: str) -> Prepared:
        """Replay the stack onto ``candidate`` in memory; a conflict makes it a skip.

        With ``--on-conflict drop`` a conflicting local patch is left out
        instead, and the step carries a "tested without <patch>" flag.
        """
        replayed = replay(self.sub, self.stack, candidate, self.ancestry,
                                   self.on_conflict)
        details: StepDetails = {"patches": [a.to_json() for a in replayed.actions]}
        if replayed.conflict is not None:
            return Prepared(candidate, (), details, skip_reason=conflict_reason(replayed.conflict))
        env = step_env(strategy=self.name, commit=candidate, submodule=self.path,
                       patched=str(replayed.commit))
        # The patched commit is what was tested: kept in the step record.
        details["patched"] = replayed.commit
        flags = replayed.flags()
        if flags:
            # Step flags (console, JSON, report), not part of the verdict cache's
            # entry: the cache keys on the tree, which already lacks the patch.
            details["flags"] = flags
        again = Replay(self.path, candidate, self.params.stack, self.on_conflict,
                       str(replayed.tree))
        return Prepared(candidate, (self._super_tree, str(replayed.tree)), details, env,
                        target=replayed.commit, checkouts=self.checkouts(str(replayed.commit)),
                        replay=again)

    def prepare_pristine(self, commit: str) -> Prepared:
        """Upstream ``commit`` exactly, without the stack (``--check-stack``)."""
        tree = self.sub.tree_of(commit)
        env = step_env(strategy=self.name, commit=commit, submodule=self.path, patched=commit)
        return Prepared(commit, (self._super_tree, tree), {"patches": [], "patched": commit},
                        env, target=commit, checkouts=self.checkouts(commit))

    def followup(self, first_bad: str) -> list[FollowUp]:
        """After ``--check-stack`` found the stack implicated: bisect the stack itself."""
        if not self.session.params.stack_implicated:
            return []
        terms = self.terms
        request = StackRequest(submodule=self.path, at=first_bad,
                               upstream=self.params.upstream_ref, terms=terms)
        return [FollowUp(request, f"{short(first_bad)} is {terms.old} without the local patch "
                                  f"stack and {terms.new} with it: one of our patches is the "
                                  "culprit; to find which, run:")]

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        return {"submodule": self.path, "upstream": self.params.upstream_ref,
                "on_conflict": self.on_conflict, "stops_applying": self.stops_applying()}

    def closing_lines(self, first_bad: str | None) -> list[str]:
        """Where each conflicting local patch stops applying; how to test past a conflict."""
        lines = [entry["message"] for entry in self.stops_applying()]
        skipped = self.conflicted_steps()
        if skipped:
            lines.append(f"{skipped} step{'s were' if skipped != 1 else ' was'} skipped "
                         "because a local patch conflicts; --on-conflict drop tests such "
                         "candidates without it")
        return lines

    def conflicted_steps(self) -> int:
        """Steps decided without a test because a local patch conflicts (``--on-conflict
        skip``; with ``drop`` the patch is left out and the step tested)."""
        if self.on_conflict != "skip":
            return 0
        local = {p.sha for p in self.stack.patches if p.kind == "local"}
        return sum(1 for step in self.session.steps if step.source == "auto" and any(
            p["action"] == "conflict" and p["commit"] in local for p in step.patches))

    def stops_upto(self) -> int | None:
        """The last candidate position :meth:`stops_applying` looks at (None: all)."""
        return None

    def stops_applying(self) -> list[dict[str, Any]]:
        """Each local patch that conflicts at some prepared candidate: from where it does
        (:mod:`bisectkit.strategies.stops`); computed once per number of steps."""
        key = len(self.session.steps)
        if self._stops is None or self._stops[0] != key:
            found = StopsApplying(self.sub, self.stack, self.session, self.ancestry,
                                  self.on_conflict, self.stops_upto()).entries()
            self._stops = (key, found)
        return self._stops[1]

    def header_lines(self) -> list[str]:
        s, p = self.session, self.params
        stack = p.stack
        goods = ", ".join(short(g) for g in s.good)
        where = f" touching {' '.join(s.pathspec)}" if s.pathspec else ""
        lines = [
            f"bisecting submodule {self.path}",
            f"  upstream {p.upstream_ref} at {short(p.upstream)}, merge-base "
            f"{short(stack['merge_base'])}, patched HEAD {short(stack['head'])}",
            *guess_lines(p),
            *fetch_lines(p),
            f"  range: {s.terms.old} {goods} .. {s.terms.new} {short(s.bad)}: "
            f"{len(s.candidates)} candidates{where}",
        ]
        patches = stack["patches"]
        lines.append(f"  patch stack: {plural(len(patches), 'patch', 'patches')}")
        for patch in patches:
            ref = ""
            if patch["refers_to"]:
                arrow = "reverts" if patch["kind"] == "revert" else "from"
                how = ", by patch-id" if patch.get("found_by") == "patch-id" else ""
                ref = f"  ({arrow} {short(patch['refers_to'])}{how})"
            lines.append(f"    {patch['kind']:<11} {short(patch['sha'])}  {patch['subject']}{ref}")
        if self.on_conflict == "drop":
            lines.append("  --on-conflict drop: a conflicting local patch is left out and the "
                         "step flagged")
        return lines


# -- the command line -------------------------------------------------------------

def request(given: Given) -> SubmoduleRequest:
    """``[--submodule PATH] BAD GOOD...``: what is bisected when no option says otherwise."""
    refuse_strays(given)
    require_ends(given)
    assert given.bad is not None
    if len(given.submodules) > 1:
        raise BadInput("--submodule is given more than once: bisect one submodule at a time, "
                       "or several with --integrate")
    path = given.submodule(", --integrate")
    if not path:
        raise BadInput("say what to bisect: --submodule PATH, --integrate, or "
                       "git config bisectkit.submodule PATH")
    return SubmoduleRequest(path, given.bad, given.good, given.upstream, given.pathspec,
                            given.on_conflict or "skip", given.terms, given.all_parents)


def words(req: SubmoduleRequest) -> list[str]:
    """``--submodule PATH [--upstream REF] [--on-conflict drop] [--all-parents]``."""
    words = ["--submodule", req.submodule, *given_words("--upstream", req.upstream)]
    if req.on_conflict != "skip":
        words += ["--on-conflict", req.on_conflict]
    return words + (["--all-parents"] if req.all_parents else [])


#: Chosen when no other strategy's option is given: it has no option of its own.
KIND = Kind(SubmoduleParams, SubmoduleStrategy, SubmoduleRequest, start, settled,
            Argv(None, (), request, words))
