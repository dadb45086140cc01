"""Clone shapes (partial, shallow, sparse): what each changes in what git can answer.

Every shape is one module here with one :class:`Shape` object (``SHAPE``),
listed in :data:`SHAPES`; the rest of bisectkit asks the shapes through the
functions below (the verdict cache key, a checkout's prefetch and file count,
a workspace's mirror, ``bisectkit status``), never one shape by name. What
stays shape-specific lives with ``Repo`` (:mod:`bisectkit.git.repo` holds a
repository's :class:`~.partial.Prefetcher` and shallow :class:`~.shallow.Boundary`)
and with the questions only one shape raises (:class:`~.shallow.ShallowCut`
and ``--deepen``).

A new shape: a module here defining the operations of :class:`Shape` (each
shape module declares, as a small ``Protocol``, what it reads of a
repository; ``Repo`` must have it), and its ``SHAPE`` added to :data:`SHAPES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bisectkit.git.shapes import partial, shallow, sparse
from bisectkit.git.shapes.base import NOTHING, Fetched, Narrowing, PathFilter

if TYPE_CHECKING:
    from bisectkit.git.repo import Repo


@runtime_checkable
class Shape(Protocol):
    """One way a clone is not a plain full clone, and what bisectkit does about it.

    ``detect`` says whether a repository has the shape; :func:`cache_material`,
    :func:`checkout` and :func:`status` ask the other operations only of the
    shapes detected, :func:`prefetch` and :func:`mirror` of every shape.
    """

    #: ``partial``, ``sparse``...: the key of ``bisectkit status --json`` and of the
    #: verdict cache key part.
    name: str
    #: How the verdict cache tells that :meth:`cache_material` changed (``None``: it
    #: never has any).
    key_changed: str | None

    def detect(self, repo: Repo) -> bool:
        """Has ``repo`` this shape?"""
        ...

    def cache_material(self, repo: Repo) -> dict[str, Any] | None:
        """What a verdict tested in ``repo`` depends on through this shape besides the
        trees (JSON; ``None``: nothing, and keys stay as for a plain clone)."""
        ...

    def narrowing(self, repo: Repo, index: bool) -> Narrowing | None:
        """How this shape narrows what a checkout of ``repo`` writes (``None``: not at
        all), read before the checkout; ``index``: the repository's index may be read
        (it is the one checked out), else from its configuration alone."""
        ...

    def prefetch(self, repo: Repo, old: str | None, new: str,
                 wanted: PathFilter | None) -> Fetched:
        """Before a checkout of ``repo`` from tree ``old`` (``None``: empty) to ``new``,
        fetch what it will read and is not here (only at paths ``wanted`` keeps);
        what that cost."""
        ...

    def mirror(self, user: Repo, workspace: Path) -> None:
        """Give ``workspace`` (a clone of ``user``, not yet checked out) what of this shape
        decides what a checkout there writes; undo it where ``user`` lacks the shape (a
        workspace is kept between runs)."""
        ...

    def status(self, repo: Repo) -> dict[str, Any] | None:
        """This shape of ``repo`` for ``bisectkit status`` (JSON)."""
        ...

    def status_line(self, data: dict[str, Any]) -> str:
        """One line for the user from :meth:`status`'s data (after ``shape: ``)."""
        ...


#: Every clone shape, in the order ``bisectkit status`` tells them.
SHAPES: tuple[Shape, ...] = (partial.SHAPE, sparse.SHAPE, shallow.SHAPE)


class Checkout:
    """What one checkout writes of the paths that differ, as the shapes narrow it."""

    def __init__(self, narrowings: Sequence[Narrowing] = ()) -> None:
        self._narrowings = tuple(narrowings)

    @property
    def may_write(self) -> PathFilter | None:
        """Before the checkout: the paths it may write (``None``: every one)."""
        if not self._narrowings:
            return None
        if len(self._narrowings) == 1:
            return self._narrowings[0].may_write
        return lambda path: all(n.may_write(path) for n in self._narrowings)

    def written(self, paths: Sequence[str]) -> int:
        """After the checkout: how many of ``paths`` (those it changed) it wrote or removed."""
        kept = list(paths)
        for narrowing in self._narrowings:
            kept = narrowing.written(kept)
        return len(kept)


def checkout(repo: Repo, index: bool) -> Checkout:
    """What a checkout of ``repo`` about to start writes (see :meth:`Shape.narrowing`)."""
    found = [s.narrowing(repo, index) for s in SHAPES if s.detect(repo)]
    return Checkout([n for n in found if n is not None])


def prefetch(repo: Repo, old: str | None, new: str, wanted: PathFilter | None) -> Fetched:
    """Fetch what a checkout of ``repo`` from ``old`` to ``new`` reads and lacks (a no-op
    for a full clone); what that cost."""
    got = NOTHING
    for shape in SHAPES:
        got = got + shape.prefetch(repo, old, new, wanted)
    return got


def mirror(user: Repo, workspace: Path) -> None:
    """Give the workspace clone ``workspace`` the shapes of the user's ``user``."""
    for shape in SHAPES:
        shape.mirror(user, workspace)


def cache_material(repo: Repo) -> dict[str, dict[str, Any]]:
    """``{shape name: material}`` of the shapes of ``repo`` that a verdict depends on."""
    found = {s.name: s.cache_material(repo) for s in SHAPES if s.detect(repo)}
    return {name: material for name, material in found.items() if material is not None}


def status(repo: Repo) -> dict[str, Any]:
    """``{shape name: its status data, or None where repo is not so}`` (``bisectkit status``)."""
    return {s.name: s.status(repo) if s.detect(repo) else None for s in SHAPES}


def status_lines(data: dict[str, Any]) -> list[str]:
    """One ``shape:`` line per shape in ``data`` (:func:`status`'s, within ``bisectkit
    status``'s data)."""
    return [f"shape: {s.status_line(data[s.name])}" for s in SHAPES if data.get(s.name)]
