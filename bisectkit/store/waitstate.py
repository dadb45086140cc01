"""A session waiting for its ends: ``start`` given fewer than both, as git allows.

Kept in ``<git dir>/bisectkit/waiting.json`` by :class:`~bisectkit.store.session.SessionStore`
until the new end and an old one are known; then the session really starts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from bisectkit.model import GIT_PROG, IntegrateRequest, SubmoduleRequest, Terms, Verdict
from bisectkit.text import plural

WAITING_VERSION = 1

#: What a waiting session bisects once its ends are known (``--stack`` and ``--advance``
#: have no ends to wait for).
WaitingRequest = SubmoduleRequest | IntegrateRequest
_WAITING_KINDS: dict[str, type[WaitingRequest]] = {"submodule": SubmoduleRequest,
                                                   "integrate": IntegrateRequest}


@dataclass(frozen=True)
class Waiting:
    """A ``start`` given fewer than both ends, as ``git bisect start`` allows.

    Nothing is checked out while waiting. ``template`` is the request with no
    ends; ``marks`` are the ends given since, as (engine side, full sha) in
    order. Once the new end and an old one are known, :attr:`request` is what
    ``start NEW OLD...`` would have asked.
    """

    template: WaitingRequest
    marks: tuple[tuple[Verdict, str], ...] = ()

    @property
    def bad(self) -> str | None:
        """The new end (the latest one given: a new one replaces it, as in git)."""
        return next((sha for side, sha in reversed(self.marks) if side == "bad"), None)

    @property
    def good(self) -> list[str]:
        return list(dict.fromkeys(sha for side, sha in self.marks if side == "good"))

    @property
    def complete(self) -> bool:
        return self.bad is not None and bool(self.good)

    @property
    def request(self) -> WaitingRequest:
        """The request with the ends known so far."""
        return dataclasses.replace(self.template, bad=self.bad or "", good=tuple(self.good))

    def marked(self, side: Verdict, shas: list[str]) -> Waiting:
        return Waiting(self.template, (*self.marks, *((side, sha) for sha in shas)))

    def status(self) -> str:
        """Where it stands, in git's words (``--term-old/--term-new`` words)."""
        old, new = self.template.terms.old, self.template.terms.new
        if self.bad is None and not self.good:
            return f"waiting for both {old} and {new} commits"
        if self.bad is None:
            n = len(self.good)
            return f"waiting for {new} commit, {plural(n, f'{old} commit')} known"
        return f"waiting for {old} commit(s), {new} commit known"

    def missing(self) -> str:
        """The commands that give what is missing."""
        words = ("good", "bad") if self.template.terms.is_default else ("old", "new")
        need = ([f"'{GIT_PROG} {words[1]} [REV]'"] if self.bad is None else []) + (
            [] if self.good else [f"'{GIT_PROG} {words[0]} REV'"])
        return " and ".join(need)

    def to_json(self) -> dict[str, Any]:
        kind = "integrate" if isinstance(self.template, IntegrateRequest) else "submodule"
        fields = {f.name: getattr(self.template, f.name)
                  for f in dataclasses.fields(self.template)}
        fields["terms"] = dataclasses.asdict(self.template.terms)
        return {"version": WAITING_VERSION, "kind": kind, "request": fields,
                "marks": [list(m) for m in self.marks]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Waiting:
        if data.get("version") != WAITING_VERSION:
            raise ValueError("written by another bisectkit version")
        # JSON gives lists where the requests hold tuples.
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                  for k, v in data["request"].items()}
        fields["terms"] = Terms(**data["request"]["terms"])
        return cls(_WAITING_KINDS[data["kind"]](**fields),
                   tuple((side, sha) for side, sha in data["marks"]))
