"""Kill torture of the clone shapes: partial (promisor fetches before checkouts),
sparse (cone and non-cone) and shallow with ``--deepen`` (the deepening fetch).

``scripts/torture_shapes.py`` stops bisectkit at its Nth git command (the shim of
``scripts/torture.py``) in a fresh copy of the shape's world; after each stop
``git bisect-patched reset`` must restore everything (HEADs, branches, status with
ignored files, every file on disk so nothing outside a sparse cone, non-remote refs,
the sparse patterns and config, ``.git/shallow`` but for the asked-for deepening) and a
fresh run must give the same answer with exact files-written counts. The script sweeps
every point; this module a subset chosen by what the git command is (a fetch, a
checkout's ``read-tree``, the final restore), found in an undisturbed run's log.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from torture_shapes import (
    Baseline,
    Shape,
    baseline,
    fetch_points,
    kill_round,
    partial_shape,
    shallow_shape,
    sparse_shapes,
)

MODES = ("after", "during", "before", "signal")


def subcommand(line: str) -> str:
    """The git subcommand of a logged command line (after ``-c X`` and other options)."""
    words = iter(line.split())
    for word in words:
        if word == "-c":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""


def points(base: Baseline, kind: str, last: int = 1) -> list[int]:
    """Kill points (1-based) that run ``git KIND``: the first, and the ``last`` ones
    (the restore's come last)."""
    hits = [i + 1 for i, g in enumerate(base.gits) if subcommand(g) == kind]
    assert hits, (kind, base.gits)
    return sorted(set(hits[:1] + hits[-last:]))


Shaped = tuple[Shape, Baseline]


def sweep(shaped: Shaped, tmp: Path, chosen: list[int], sigkill_only: bool = False,
          unreachable: bool = False) -> list[str]:
    """Kill rounds at ``chosen`` (modes cycling); what any of them got wrong."""
    shape, base = shaped
    bad = []
    for k, n in enumerate(chosen):
        mode = ("during", "after", "before")[k % 3] if sigkill_only else MODES[k % 4]
        sig = signal.SIGKILL if mode != "signal" else signal.SIGINT
        o = kill_round(shape, base, n, mode, tmp, sig, unreachable=unreachable)
        if not o.ok or (mode != "signal" and not o.killed):
            bad.append(o.describe() + ("" if o.killed else " (never killed)"))
    return bad


def shaped(shape: Shape, tmp: Path) -> Shaped:
    return shape, baseline(shape, tmp, check=False)


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Shaped:
    where = tmp_path_factory.mktemp("kill-partial")
    return shaped(partial_shape(where / "world"), where)


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Shaped]:
    where = tmp_path_factory.mktemp("kill-sparse")
    return {s.name: shaped(s, where) for s in sparse_shapes(where / "worlds")
            if s.name in ("sparse cone", "sparse non-cone manual")}


def test_partial_killed_in_its_promisor_fetches_checkouts_and_restore(
        partial: Shaped, tmp_path: Path) -> None:
    """The patch-stack analysis' fetch, a step's prefetch (``fetch --stdin`` before the
    journaled checkout), the first ``read-tree -m -u`` and the final restore's
    ``read-tree --reset -u``: reset restores, the rerun fetches what is still missing."""
    base = partial[1]
    fetches = fetch_points(base)
    assert len(fetches) >= 4, base.gits  # the analysis, then one before each checkout
    assert not sweep(partial, tmp_path, [fetches[0], fetches[1], *points(base, "read-tree")])


def test_partial_killed_in_a_fetch_then_the_promisors_unreachable(
        partial: Shaped, tmp_path: Path) -> None:
    """Killed inside a step's promisor fetch, the remotes then moved away: reset still
    restores (it writes only HEAD's blobs, which a partial clone has: no fetch)."""
    assert not sweep(partial, tmp_path, fetch_points(partial[1])[1:2], sigkill_only=True,
                     unreachable=True)


@pytest.mark.parametrize("name", ["sparse cone", "sparse non-cone manual"])
def test_sparse_killed_at_checkouts_and_the_restore(sparse: dict[str, Shaped], name: str,
                                                    tmp_path: Path) -> None:
    """A step's ``read-tree -m -u`` and the restore's ``read-tree --reset -u`` (both
    apply the patterns), and (manual) the ``ls-files -t`` of ``reset``: after reset nothing
    outside the patterns is on disk, the patterns and config are unchanged, and the rerun's
    files-written counts are the in-cone paths each move wrote."""
    base = sparse[name][1]
    chosen = points(base, "read-tree")
    if "manual" in name:
        chosen += points(base, "ls-files")[-1:]
    assert not sweep(sparse[name], tmp_path, chosen)


def test_shallow_deepen_killed_in_and_right_after_its_fetch(tmp_path: Path) -> None:
    """The ``--deepen`` fetch killed while it runs (it finishes), and bisectkit killed right
    after it (before the session starts): the repository is as deep as the fetch made it
    (the user asked for it), nothing else changed, the rerun finds the answer."""
    shape = shallow_shape(tmp_path / "world")
    base = baseline(shape, tmp_path, check=False)
    fetch = fetch_points(base)
    assert len(fetch) == 1 and "--shallow-since" in base.gits[fetch[0] - 1], base.gits
    assert not sweep((shape, base), tmp_path / "rounds", [fetch[0], fetch[0] + 1],
                     sigkill_only=True)
