"""What every clone shape shares: path filters, a checkout's narrowing, a prefetch's cost.

The shape modules (:mod:`.partial`, :mod:`.sparse`, :mod:`.shallow`) import
these; the :class:`~bisectkit.git.shapes.Shape` protocol and the registry are
in the package itself, which no shape module imports (it refers to ``Repo``,
and ``Repo`` is built from the shape modules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bisectkit.model.documents import StepDetails

#: "May a checkout write this path?" (a tracked path, ``/``-separated, relative to the
#: work tree).
PathFilter = Callable[[str], bool]


class Narrowing(Protocol):
    """How a shape narrows what one checkout writes of the paths that differ (a sparse
    checkout: only those its patterns cover)."""

    def may_write(self, path: str) -> bool:
        """Before the checkout: may it write ``path``? (A partial clone fetches only the
        blobs of those.)"""
        ...

    def written(self, paths: Sequence[str]) -> list[str]:
        """After the checkout: those of ``paths`` (the ones it changed) that it wrote or
        removed on disk."""
        ...


@dataclass(frozen=True)
class Fetched:
    """What fetching missing objects cost: objects, bytes of new packs, seconds."""

    objects: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def __add__(self, other: Fetched) -> Fetched:
        return Fetched(self.objects + other.objects, self.bytes + other.bytes,
                       self.seconds + other.seconds)

    def __sub__(self, other: Fetched) -> Fetched:
        return Fetched(self.objects - other.objects, self.bytes - other.bytes,
                       self.seconds - other.seconds)

    def __bool__(self) -> bool:
        return self.objects > 0

    def to_json(self) -> dict[str, Any]:
        """``{"objects": n, "bytes": b, "seconds": s}`` (the step record's ``fetched``)."""
        return {"objects": self.objects, "bytes": self.bytes, "seconds": round(self.seconds, 4)}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Fetched:
        data = data or {}
        return cls(int(data.get("objects", 0)), int(data.get("bytes", 0)),
                   float(data.get("seconds", 0.0)))


#: Nothing fetched.
NOTHING = Fetched()


def add_fetched(details: StepDetails, more: Fetched) -> None:
    """Count ``more`` in a step's ``fetched`` detail (absent while nothing was fetched)."""
    if more:
        details["fetched"] = (Fetched.from_json(details.get("fetched")) + more).to_json()
