"""Clone shapes combined, as real LLVM checkouts are: a partial clone with a sparse cone.

The partial-clone prefetch before each checkout asks only for the blobs git
will write: the paths that differ *and* lie in the cone. Blobs outside the
cone are never fetched (nor written); the patch replay still sees whole trees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, cli, snapshot
from worldgen import SPARSE_BUG_AT, build_sparse_world, make_partial

GOOD_IF = "device .* not found"


@pytest.fixture(scope="module")
def partial_sparse(tmp_path_factory: pytest.TempPathFactory) -> World:
    w = make_partial(build_sparse_world(tmp_path_factory.mktemp("partial-sparse")))
    w.git(w.submodule, "sparse-checkout", "set", "--cone", "lib", "llvm")
    return w


def missing_blobs(w: World, commit: str, top: str) -> tuple[set[str], set[str]]:
    """(blobs of ``commit`` under ``top``, those this clone lacks), asking no remote."""
    listed = w.git(w.submodule, "ls-tree", "-r", commit, "--", top).splitlines()
    blobs = {line.split()[2] for line in listed}
    # rev-list --missing=print reports what is absent and never lazy-fetches.
    out = w.git(w.submodule, "rev-list", "--objects", "--missing=print", "--no-walk", commit)
    gone = {line[1:].split()[0] for line in out.splitlines() if line.startswith("?")}
    return blobs, blobs & gone


def test_partial_and_sparse_fetch_only_the_cone(partial_sparse: World, tmp_path: Path):
    w = partial_sparse
    before = snapshot(w)
    patterns = (Path(w.git(w.submodule, "rev-parse", "--absolute-git-dir"))
                / "info/sparse-checkout").read_text()
    bad = w.sha(56)
    clang = set().union(*(missing_blobs(w, w.sha(n), "clang")[1] for n in range(57)))
    assert clang, "the world must leave out-of-cone blobs to fetch"
    out = tmp_path / "r.json"
    r = cli(w, "run", "--submodule", SUBMODULE, "--upstream", "upstream/main",
            "--good", w.sha(0), "--bad", bad, "--build", "./build.sh", "--good-if", GOOD_IF,
            "--json", str(out), "--", "./repro.sh")
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{w.sha(SPARSE_BUG_AT)} is the first bad commit\n" in r.stdout
    assert "fetched" in r.stdout
    steps = json.loads(out.read_text())["steps"]
    assert sum(s.get("fetched", {}).get("objects", 0) for s in steps) > 0
    for step in steps:
        # In the cone every blob of the tested tree is here; outside it none was fetched.
        for top in ("lib", "llvm"):
            assert not missing_blobs(w, step["patched"], top)[1], (step, top)
    # Not one blob outside the cone was fetched, at any step.
    assert set().union(*(missing_blobs(w, w.sha(n), "clang")[1] for n in range(57))) == clang
    assert snapshot(w) == before
    assert (Path(w.git(w.submodule, "rev-parse", "--absolute-git-dir"))
            / "info/sparse-checkout").read_text() == patterns
    assert not {"mlir", "clang"} & {p.name for p in w.submodule.iterdir()}
