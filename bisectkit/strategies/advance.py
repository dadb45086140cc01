"""Advance strategy: how far can a patched submodule's pin move toward upstream?

The candidates are the affecting upstream commits after the submodule's
merge-base up to ``--to`` (the upstream's head by default), materialised like
a submodule bisect's (the stack replayed by the same rules). The range is
*open*: no end is known bad. The session's search is a pin-biased split or a walk
(:mod:`bisectkit.engine.search`), and a candidate the pin cannot move to counts as
bad: its smoketest fails, its build fails, or its patch stack conflicts. A
skip (exit 125, a machine problem, a timeout) says nothing about the commit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bisectkit.cli import argtypes
from bisectkit.cli.targets import Given, Option
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.model import AdvanceRequest, Verdict, short
from bisectkit.model.params import AdvanceParams
from bisectkit.patches.stack import analyse
from bisectkit.patches.status import default_submodule
from bisectkit.patches.upstream import resolve_upstream
from bisectkit.store.session import Session
from bisectkit.strategies.base import Argv, Kind, new_session
from bisectkit.strategies.cmdline import given_words
from bisectkit.strategies.common import (
    LineAncestry,
    ask_ahead,
    check_clean,
    contained_patch,
    guess_lines,
)
from bisectkit.strategies.submodule import SubmoduleStrategy
from bisectkit.text import plural

#: What ends a blocking reason in a step record (the pin cannot move to that commit).
BLOCKS = "the pin cannot move here"


def start(superproject: Repo, req: AdvanceRequest) -> Session:
    """Validate ``req`` against the repositories and build a new session; touches nothing."""
    path, sub = open_submodule(superproject, default_submodule(superproject, req.submodule))
    check_clean(superproject, {path: sub})
    up = resolve_upstream(superproject, path, sub, req.upstream)
    target = sub.resolve(req.to) if req.to is not None else up.sha
    stack = analyse(sub, sub.worktree.head_state().sha, up.sha, extra_upstream=(target,))
    base = stack.merge_base
    patch = contained_patch(sub, stack, target)
    if patch is not None:
        raise BadInput(f"--to '{req.to}' contains local patch {short(patch.sha)} "
                       f"({patch.subject}); give an upstream commit")
    known: dict[str, Any] = {}
    if sub.is_ancestor(target, base):
        candidates: list[str] = []  # already there: up to date
    elif not sub.is_ancestor(base, target):
        raise BadInput(f"--to '{req.to}' ({short(target)}) does not descend from the "
                       f"submodule's merge-base {short(base)} with {up.ref}")
    else:
        candidates = sub.first_parent_range(target, [base], list(req.pathspec), keep_tip=False)
        if not candidates:
            # Not "up-to-date": the pin is behind; no commit on the way touches the paths
            # (a typo in --pathspec reads the same), so there is nothing to test.
            raise BadInput(f"no upstream commit between the merge-base {short(base)} and "
                           f"{short(target)} changes {' '.join(req.pathspec)} (--pathspec): "
                           "nothing to test")
        ask_ahead(sub, stack, LineAncestry(sub, candidates, known).first_containing)
    return new_session(
        superproject, bad=target, good=[base], candidates=candidates, moves=[path],
        pathspec=req.pathspec, terms=req.terms, ancestry=known,
        params=AdvanceParams(submodule=path, upstream_ref=up.ref, upstream=up.sha,
                             upstream_guessed=up.guessed, stack=stack.to_json(),
                             on_conflict=req.on_conflict,
                             search="linear" if req.linear else "gallop",
                             to_ref=req.to or up.ref))


def settled(req: AdvanceRequest, session: Session) -> AdvanceRequest:
    """``req`` as ``session`` understood it: the submodule's path, the upstream found and
    ``--to`` as a full sha (a replay means the same candidates)."""
    p = session.params_as(AdvanceParams)
    return dataclasses.replace(req, submodule=p.submodule, to=session.bad,
                               upstream=p.upstream_ref)


def blocks(reason: str) -> bool:
    """Does a skip with this reason mean the pin cannot move to the commit: its build
    fails (not a timeout: that may be the machine) or its patch stack conflicts?"""
    return reason.startswith("conflict in ") or (
        reason.startswith("build failed") and "timed out" not in reason)


class AdvanceStrategy(SubmoduleStrategy):
    """Upstream commits after the pin, the stack replayed at each; an open range."""

    name = AdvanceParams.strategy

    def judged(self, verdict: Verdict, reason: str) -> tuple[Verdict, str]:
        """A failed build or a conflicting stack blocks the advance: bad, not skip."""
        if verdict == "skip" and blocks(reason):
            return "bad", f"{reason}; {BLOCKS}"
        return verdict, reason

    def header_lines(self) -> list[str]:
        s, p = self.session, self.session.params_as(AdvanceParams)
        stack = p.stack
        where = f" touching {' '.join(s.pathspec)}" if s.pathspec else ""
        how = ("each in order (--linear)" if p.search == "linear" else
               "the far end first, then splits biased toward the pin")
        lines = [
            f"advancing submodule {self.path}",
            f"  from merge-base {short(stack['merge_base'])} (patched HEAD {short(stack['head'])}) "
            f"toward {p.to_ref} at {short(s.bad)}",
            *guess_lines(p),
            f"  {plural(len(s.candidates), 'upstream commit')}"
            f"{where} to cross; testing {how}",
        ]
        patches = p.patches
        lines.append(f"  patch stack: {plural(len(patches), 'patch', 'patches')}")
        lines += [f"    {q['kind']:<11} {short(q['sha'])}  {q['subject']}" for q in patches]
        return lines

    def stops_upto(self) -> int | None:
        """The first bad candidate: where a patch stops applying is the conflict that
        stopped the advance, whatever was tested beyond it (the far end first)."""
        verdicts = self.session.verdict_map()
        bad = [i for i, c in enumerate(self.session.candidates) if verdicts.get(c) == "bad"]
        return min(bad) if bad else None

    def closing_lines(self, first_bad: str | None) -> list[str]:
        """Where each conflicting local patch stops applying; the steps a conflict made bad."""
        lines = [entry["message"] for entry in self.stops_applying()]
        n = self.conflicted_steps()
        if n:
            lines.append(f"{plural(n, 'step')} {'was' if n == 1 else 'were'} bad because a "
                         "local patch conflicts there (not built: the pin cannot move to such "
                         "a commit); --on-conflict drop tests them without the patch")
        return lines

    def stopped_by(self, first_bad: str) -> dict[str, Any] | None:
        """The step that made ``first_bad`` bad: its number, reason, and whether a
        conflict decided it without a build (None when no step did)."""
        for step in reversed(self.session.steps):
            if step.commit == first_bad and step.verdict == "bad" and \
                    step.source != "check-stack":
                return {"commit": first_bad, "step": step.index, "reason": step.reason,
                        "conflict": step.source == "auto" and step.reason.startswith(
                            "conflict in ")}
        return None

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        extra = super().result_extra(first_bad)
        p = self.session.params_as(AdvanceParams)
        extra.update(search=p.search, to_ref=p.to_ref,
                     stopped_by=self.stopped_by(first_bad) if first_bad else None)
        return extra


# -- the command line: ``start --advance`` and ``bisectkit advance`` -------------------

ADVANCE = Option("--advance", help="a session that finds how far the pin of --submodule can "
                                   "move toward upstream (no BAD/GOOD: see 'bisectkit advance')")
TO = Option("--to", metavar="REV", type=argtypes.nonempty,
            help="advance: the farthest upstream commit to consider (default: the upstream's "
                 "head)")
LINEAR = Option("--linear", help="advance: test every affecting commit in order and stop at "
                                 "the first failure, instead of the far end first and a "
                                 "search biased toward the pin")


def request(given: Given) -> AdvanceRequest:
    """``start --advance`` / ``bisectkit advance``: one submodule, no ends, no terms."""
    if given.strays or given.good or given.bad:
        raise BadInput("an advance takes no good/bad revisions, --stack, --at or --integrate: "
                       "its candidates are the upstream commits after the pin (--to REV "
                       "stops earlier)")
    if not given.terms.is_default:
        raise BadInput("an advance has no --find-fix or --term-old/--term-new: a candidate "
                       "the pin can move to passes the smoketest")
    if given.all_parents:
        raise BadInput("an advance has no --all-parents: it moves the pin along upstream's "
                       "first-parent line")
    if len(given.submodules) > 1:
        raise BadInput("--submodule is given more than once: advance one submodule at a time")
    return AdvanceRequest(given.submodule("") or "", given.upstream, given.text(TO),
                          given.pathspec, given.flag(LINEAR), given.on_conflict or "skip",
                          given.terms)


def words(req: AdvanceRequest) -> list[str]:
    """``--advance --submodule PATH [--upstream REF] [--to REV] [--on-conflict drop]
    [--linear]``."""
    words = ["--advance", "--submodule", req.submodule,
             *given_words("--upstream", req.upstream), *given_words("--to", req.to)]
    if req.on_conflict != "skip":
        words += ["--on-conflict", req.on_conflict]
    return words + (["--linear"] if req.linear else [])


#: ``bisectkit run`` has no ``--advance``: an advance is ``bisectkit advance``
#: (or ``start --advance``), whose answer is where the pin can go.
KIND = Kind(AdvanceParams, AdvanceStrategy, AdvanceRequest, start, settled,
            Argv(ADVANCE, (TO, LINEAR), request, words, takes_ends=False, in_run=False),
            report="advance")
