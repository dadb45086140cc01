"""Integrate strategy: bisect the superproject's own commits ("Advance LLVM to X" + fixups).

At every candidate the superproject is checked out detached and every tracked
submodule whose pin changed is moved to that pin (fetched from the
submodule's remotes when missing), like ``git submodule update`` for those
paths only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bisectkit.cli.targets import Given, Option
from bisectkit.errors import BadInput
from bisectkit.git.repo import Repo, open_submodule
from bisectkit.git.shapes.base import Fetched
from bisectkit.git.shapes.shallow import ShallowCut
from bisectkit.model import (
    SUPERPROJECT,
    CommitInfo,
    FollowUp,
    IntegrateRequest,
    SubmoduleRequest,
    Upstream,
    short,
)
from bisectkit.model.documents import StepDetails
from bisectkit.model.params import IntegrateParams
from bisectkit.patches.upstream import CONFIG_KEY, GuessRefused, resolve_upstream
from bisectkit.safety.undertest import Held
from bisectkit.safety.worktree import Mover
from bisectkit.store.session import Session
from bisectkit.strategies.base import Argv, Kind, Prepared, Strategy, new_session, resolve_range
from bisectkit.strategies.cmdline import (
    given_words,
    refuse_on_conflict,
    refuse_strays,
    require_ends,
)
from bisectkit.strategies.common import (
    candidates_touching,
    check_clean,
    initialised_submodules,
    step_env,
)


def start(superproject: Repo, req: IntegrateRequest) -> Session:
    """Validate ``req`` and build a new integrate session; touches nothing."""
    if req.submodules:
        paths = [open_submodule(superproject, p)[0] for p in req.submodules]
    else:
        paths = initialised_submodules(superproject)
    check_clean(superproject, {p: Repo(superproject.workdir / p) for p in paths})
    bad, goods = resolve_range(superproject, req.bad, req.good, req.terms)
    upstreams = {p: find_upstream(superproject, p, req.upstream) for p in paths}
    return new_session(
        superproject, bad=bad, good=goods,
        candidates=candidates_touching(superproject, bad, goods, req.pathspec,
                                       "the superproject"),
        moves=paths, pathspec=req.pathspec, terms=req.terms,
        params=IntegrateParams(submodules=paths, all_parents=req.all_parents,
                               upstream_ref=req.upstream or superproject.config_get(CONFIG_KEY),
                               upstreams=upstreams))


def settled(req: IntegrateRequest, session: Session) -> IntegrateRequest:
    """``req`` as ``session`` understood it: full shas, and the submodules' paths when they
    were named (none named stays none: every initialised one)."""
    paths = tuple(session.params_as(IntegrateParams).submodules) if req.submodules else ()
    return dataclasses.replace(req, bad=session.bad, good=tuple(session.good), submodules=paths)


def find_upstream(superproject: Repo, path: str, given: str | None) -> dict[str, Any]:
    """Submodule ``path``'s upstream as session data; ``ref`` None and ``why`` if there is none.

    Here the upstream only names the upstream span of each pin move and the
    follow-up bisect command, so a submodule whose upstream cannot be guessed
    does not stop the integrate bisect (it only loses those). A ref that was
    given (``--upstream`` or git config) and names nothing is refused, as in a
    submodule bisect.
    """
    try:
        up = resolve_upstream(superproject, path, Repo(superproject.workdir / path), given)
    except (GuessRefused, ShallowCut) as exc:
        # A shallow submodule: its pins are still tested (each fetched alone if missing).
        return {"ref": None, "why": str(exc)}
    return {"ref": up.ref, "sha": up.sha, "guessed": up.guessed}


class IntegrateStrategy(Strategy):
    """Candidates are superproject commits; submodules follow their pins."""

    name = IntegrateParams.strategy

    def __init__(self, superproject: Repo, session: Session, mover: Mover | None = None) -> None:
        super().__init__(superproject, session, mover)
        self.params = session.params_as(IntegrateParams)
        self.paths = list(self.params.submodules)
        self.subs = {p: Repo(superproject.workdir / p) for p in self.paths}
        self._upstreams: dict[str, dict[str, Any]] = {}

    def target_argv(self) -> list[str]:
        words = ["--integrate", *(w for path in self.paths for w in ("--submodule", path))]
        if self.params.upstream_ref:
            words += ["--upstream", self.params.upstream_ref]
        return [*words, *self._parents_argv()]

    def describe(self, sha: str) -> CommitInfo:
        return self.superproject.commit_info(sha)

    def fetched(self) -> Fetched:
        return sum((s.promisor.total for s in self.subs.values()),
                   self.superproject.promisor.total)

    def resolve(self, rev: str) -> str:
        return self.superproject.resolve(rev)

    def pins(self, commit: str) -> dict[str, str | None]:
        return {p: self.superproject.gitlink_at(commit, p) for p in self.paths}

    def prepare(self, candidate: str) -> Prepared:
        """Pins of ``candidate`` (fetched if needed) and how they moved from its parent."""
        pins = self.pins(candidate)
        missing = []
        for path, pin in pins.items():
            sub = self.subs[path]
            if pin is not None and not sub.has_commit(pin) and not sub.fetch_commit(pin):
                missing.append(f"{path} pin {short(pin)}")
        parents = self.superproject.commit_info(candidate).parents
        old_pins = self.pins(parents[0]) if parents else dict.fromkeys(self.paths)
        moves = [self._move(p, old_pins[p], pins[p]) for p in self.paths
                 if old_pins[p] != pins[p]]
        details: StepDetails = {"submodules": moves}
        if missing:
            reason = (f"{', '.join(missing)} missing from every remote of the submodule "
                      "(cannot update it)")
            return Prepared(candidate, (), details, skip_reason=reason)
        env = step_env(strategy=self.name, commit=candidate, pins=pins)
        trees = (self.superproject.tree_of(candidate),
                 *(f"{p}={pin}" for p, pin in sorted(pins.items())))
        checkouts = {SUPERPROJECT: candidate,
                     **{p: pin for p, pin in pins.items() if pin is not None}}
        return Prepared(candidate, trees, details, env, target=pins, checkouts=checkouts)

    def _move(self, path: str, old: str | None, new: str | None) -> dict[str, Any]:
        """One submodule's move between two pins, with the upstream span when known."""
        move: dict[str, Any] = {"path": path, "old": old, "new": new,
                                "old_base": None, "new_base": None, "upstream_commits": None}
        sub = self.subs[path]
        if old is None or new is None or not sub.has_commit(old) or not sub.has_commit(new):
            return move
        upstream = self._upstream(path)
        try:
            if upstream is not None:
                move["old_base"] = sub.merge_base(old, upstream[1])
                move["new_base"] = sub.merge_base(new, upstream[1])
            lo, hi = move["old_base"] or old, move["new_base"] or new
            if sub.is_ancestor(lo, hi):
                move["upstream_commits"] = len(sub.first_parent_range(hi, [lo]))
        except ShallowCut as exc:
            # Only the span and the follow-up command need this history; testing the
            # pin does not: say what is unknown instead of guessing it.
            move.update(old_base=None, new_base=None, upstream_commits=None, shallow=str(exc))
        return move

    def _upstream(self, path: str) -> tuple[str, str] | None:
        """(ref, sha) of the submodule's upstream, as found at start."""
        found = self._upstream_data(path)
        return (found["ref"], found["sha"]) if found["ref"] else None

    def _upstream_data(self, path: str) -> dict[str, Any]:
        known = self.params.upstreams
        if path in known:
            return dict(known[path])
        # A session started before upstreams were recorded: find it now, leniently
        # (the refs may have moved since; the session must still finish).
        if path not in self._upstreams:
            try:
                found = find_upstream(self.superproject, path,
                                      self.params.upstream_ref)
            except BadInput as exc:
                found = {"ref": None, "why": str(exc)}
            self._upstreams[path] = found
        return self._upstreams[path]

    def checkout(self, prepared: Prepared) -> int:
        """Superproject to the candidate (detached), then each submodule to its pin."""
        written = self.mover.checkout(SUPERPROJECT, self.superproject, prepared.candidate)
        for path, pin in prepared.target.items():
            if pin is not None:
                written += self.mover.checkout(path, self.subs[path], pin)
        return written

    def under_test(self, prepared: Prepared) -> dict[str, Held]:
        """The superproject at the candidate and each submodule at its pin."""
        return {SUPERPROJECT: Held(self.superproject, prepared.candidate),
                **{p: Held(self.subs[p], pin) for p, pin in prepared.target.items()
                   if pin is not None}}

    def header_lines(self) -> list[str]:
        s = self.session
        goods = ", ".join(short(g) for g in s.good)
        where = f" touching {' '.join(s.pathspec)}" if s.pathspec else ""
        tracked = ", ".join(self.paths) or "none"
        lines = [
            "bisecting the superproject's integrate history",
            f"  range: {s.terms.old} {goods} .. {s.terms.new} {short(s.bad)}: "
            f"{len(s.candidates)} candidates{where}",
            f"  submodules updated at each step: {tracked}",
        ]
        for path in self.paths:
            found = self._upstream_data(path)
            if found["ref"] is None:
                lines.append(f"  {path} upstream: none, so no follow-up bisect command for it "
                             f"({found['why']})")
                continue
            note = Upstream(found["ref"], found["sha"], found.get("guessed")).note()
            if note:
                lines.append(f"  {path} {note}")
        return lines

    def result_extra(self, first_bad: str | None) -> dict[str, Any]:
        return {"submodules": self.paths}

    def followup(self, first_bad: str) -> list[FollowUp]:
        """The submodule bisect to run inside the range the culprit advanced."""
        found = []
        for move in self.prepare(first_bad).details["submodules"]:
            if not (move["old_base"] and move["new_base"]) or move["old_base"] == move["new_base"]:
                continue
            upstream = self._upstream(move["path"])
            assert upstream is not None  # the bases were computed from it
            request = SubmoduleRequest(submodule=move["path"], bad=move["new_base"],
                                       good=(move["old_base"],), upstream=upstream[0],
                                       terms=self.terms,
                                       all_parents=self.params.all_parents)
            found.append(FollowUp(request, f"{short(first_bad)} advanced {move['path']} by "
                                           f"{move['upstream_commits']} upstream commits; to "
                                           "find the upstream culprit, run:"))
        return found


# -- the command line -------------------------------------------------------------

INTEGRATE = Option("--integrate", help="bisect superproject commits (the integrate branch) "
                                       "instead, updating submodules at every step")


def request(given: Given) -> IntegrateRequest:
    """``--integrate BAD GOOD...``: the superproject's commits, any submodules named."""
    refuse_on_conflict(given)
    refuse_strays(given)
    require_ends(given)
    assert given.bad is not None
    return IntegrateRequest(given.bad, given.good, given.submodules, given.upstream,
                            given.pathspec, given.terms, given.all_parents)


def words(req: IntegrateRequest) -> list[str]:
    """``--integrate [--all-parents] [--submodule PATH]... [--upstream REF]``."""
    words = ["--integrate", *(["--all-parents"] if req.all_parents else [])]
    for path in req.submodules:
        words += ["--submodule", path]
    return words + given_words("--upstream", req.upstream)


KIND = Kind(IntegrateParams, IntegrateStrategy, IntegrateRequest, start, settled,
            Argv(INTEGRATE, (), request, words), moves_superproject=True)
