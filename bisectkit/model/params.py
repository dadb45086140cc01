"""Each strategy's parameters, typed: what a session keeps besides its range and verdicts.

Kept in ``session.json`` under ``"params"`` (:meth:`Params.to_json`, read back by
:func:`params_from_json`, which refuses a key it does not know); a key a kind of
session never sets is left out while it holds its default (``omitted``). The
strategies (:mod:`bisectkit.strategies`) write them when a session starts; the
pipeline adds what it learns on the way (the merges ``--all-parents`` descended
into, whether the stack is implicated).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bisectkit.model.values import ON_CONFLICT, OnConflict


@dataclass(kw_only=True)
class Params:
    """What any strategy's session may hold."""

    #: The strategy these parameters belong to (``Session.strategy``).
    strategy: ClassVar[str] = ""
    #: Keys left out of the JSON while they hold their default (set only by some runs, or
    #: not a parameter of this kind of session).
    omitted: ClassVar[tuple[str, ...]] = ("descended", "force_ignored", "stack_implicated",
                                          "search")
    #: ``--all-parents``: bisect into the merges of the first-parent line.
    all_parents: bool = False
    #: The merges ``--all-parents`` has descended into, in order.
    descended: list[str] = field(default_factory=list)
    #: ``--force-ignored`` was given once: later commands of the session keep it.
    force_ignored: bool = False
    #: What checking the patch stack concluded (None: not checked).
    stack_implicated: bool | None = None
    #: How the next candidate is chosen (:func:`bisectkit.engine.search.named`; None:
    #: bisection).
    search: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``"params"`` object of ``session.json``."""
        data = dataclasses.asdict(self)
        defaults = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING
                             else f.default) for f in dataclasses.fields(self)}
        return {k: v for k, v in data.items()
                if k not in self.omitted or v != defaults[k]}


@dataclass(kw_only=True)
class PatchedParams(Params):
    """A strategy that replays a submodule's local patch stack (submodule, stack, advance)."""

    #: The submodule's path in the superproject.
    submodule: str
    #: The upstream ref as given or guessed (``upstream/main``) and its commit then.
    upstream_ref: str
    upstream: str
    #: Why the upstream was guessed (None: it was given).
    upstream_guessed: str | None = None
    #: The local patch stack (:meth:`bisectkit.patches.stack.Stack.to_json`).
    stack: dict[str, Any]
    #: ``--on-conflict``: what a conflicting local patch does to a step.
    on_conflict: OnConflict = "skip"
    #: What a partial clone fetched for the stack's analysis (None: nothing).
    analysis_fetched: dict[str, Any] | None = None

    omitted: ClassVar[tuple[str, ...]] = (*Params.omitted, "analysis_fetched")

    @property
    def patches(self) -> list[dict[str, Any]]:
        """The stack's patches as recorded (oldest first)."""
        found = self.stack.get("patches")
        return list(found) if isinstance(found, list) else []


@dataclass(kw_only=True)
class SubmoduleParams(PatchedParams):
    """``--submodule``: upstream commits of a patched submodule."""

    strategy: ClassVar[str] = "submodule"


@dataclass(kw_only=True)
class StackParams(PatchedParams):
    """``--stack``: the local patches themselves, at one upstream commit."""

    strategy: ClassVar[str] = "stack"
    omitted: ClassVar[tuple[str, ...]] = (*PatchedParams.omitted, "all_parents", "on_conflict")
    #: ``--at``: the upstream commit the patches are bisected on.
    at: str


@dataclass(kw_only=True)
class AdvanceParams(PatchedParams):
    """``advance``: how far the pin can move toward upstream."""

    strategy: ClassVar[str] = "advance"
    omitted: ClassVar[tuple[str, ...]] = (*PatchedParams.omitted, "all_parents")
    #: ``--to``, else the upstream ref: the far end, as the user named it.
    to_ref: str


@dataclass(kw_only=True)
class IntegrateParams(Params):
    """``--integrate``: the superproject's own commits."""

    strategy: ClassVar[str] = "integrate"
    #: The submodules each step moves to their pins.
    submodules: list[str]
    #: ``--upstream`` (or git config), if given: the submodules' upstream ref.
    upstream_ref: str | None = None
    #: Per submodule path, its upstream as found when the session started.
    upstreams: dict[str, Any] = field(default_factory=dict)


#: Every kind of parameters, by the strategy name a session records.
KINDS: dict[str, type[Params]] = {kind.strategy: kind for kind in (
    SubmoduleParams, StackParams, AdvanceParams, IntegrateParams)}


class UnknownStrategy(ValueError):
    """A session names a strategy this bisectkit does not have."""


def params_from_json(strategy: str, data: object) -> Params:
    """The parameters ``session.json`` holds for ``strategy``; a missing or unknown key, or
    a value of the wrong type, raises (KeyError, TypeError or ValueError): damaged."""
    if not isinstance(data, dict):
        raise TypeError("params is not an object")
    kind = KINDS.get(strategy)
    if kind is None:
        raise UnknownStrategy(strategy)
    names = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"unknown parameters {', '.join(unknown)}")
    made = kind(**data)
    for name, f in names.items():
        if not _fits(getattr(made, name), str(f.type)):
            raise TypeError(f"parameter {name} is not {f.type}")
    return made


def _fits(value: object, annotation: str) -> bool:
    """Does ``value`` have the (string) ``annotation`` of its field? Enough to tell a hand
    edit or a damaged file from what bisectkit wrote."""
    if value is None:
        return "None" in annotation
    if annotation == "OnConflict":
        return value in ON_CONFLICT
    base = annotation.split(" | ")[0].split("[")[0]
    types: dict[str, type | tuple[type, ...]] = {"bool": bool, "str": str, "list": list,
                                                 "dict": dict}
    return isinstance(value, types.get(base, object))
