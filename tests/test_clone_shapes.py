"""Clone shapes: each one detected where git made it, and combined, as real LLVM
checkouts are: a partial clone with a sparse cone.

The partial-clone prefetch before each checkout asks only for the blobs git
will write: the paths that differ *and* lie in the cone. Blobs outside the
cone are never fetched (nor written); the patch replay still sees whole trees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.worlds import SUBMODULE, World, cli, snapshot
from worldgen import SPARSE_BUG_AT, build_sparse_world, git, hermetic_env, make_partial

from bisectkit.git import shapes
from bisectkit.git.repo import Repo

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


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small repository cloned by the git CLI as each shape (and in full)."""
    root = tmp_path_factory.mktemp("shapes")
    env = hermetic_env(root / "home")
    origin = root / "origin"
    origin.mkdir()
    git(env, origin, "init", "-q")
    git(env, origin, "config", "uploadpack.allowFilter", "true")
    for n in range(3):
        for top in ("lib", "docs"):
            (origin / top).mkdir(exist_ok=True)
            (origin / top / "f.txt").write_text(f"{top} {n}\n")
        git(env, origin, "add", "-A")
        git(env, origin, "commit", "-q", "-m", f"commit {n}")
    url = origin.as_uri()
    made = {"full": [], "shallow": ["--depth=1"], "partial": ["--filter=blob:none"],
            "sparse": []}
    for name, flags in made.items():
        git(env, root, "clone", "-q", *flags, url, name)
    git(env, root / "sparse", "sparse-checkout", "set", "--cone", "lib")
    return {name: root / name for name in made}


def test_the_registry_holds_every_shape_each_detected_only_where_it_is(
        clones: dict[str, Path], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HOME", str(clones["full"].parent / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert [s.name for s in shapes.SHAPES] == ["partial", "sparse", "shallow"]
    assert all(isinstance(s, shapes.Shape) for s in shapes.SHAPES)
    for name, path in clones.items():
        repo = Repo(path)
        found = [s.name for s in shapes.SHAPES if s.detect(repo)]
        assert found == ([] if name == "full" else [name]), name
        lines = shapes.status_lines(shapes.status(repo))
        assert [line.split(" ")[1] for line in lines] == found, lines
    # Only the sparse patterns are verdict-cache material, and they narrow a checkout.
    assert {n: shapes.cache_material(Repo(p)) for n, p in clones.items()} == {
        "full": {}, "shallow": {}, "partial": {},
        "sparse": {"sparse": {"cone": True, "patterns": "/*\n!/*/\n/lib/\n"}}}
    writes = shapes.checkout(Repo(clones["sparse"]), index=False)
    assert writes.written(["README", "lib/f.txt", "docs/f.txt"]) == 2
    assert shapes.checkout(Repo(clones["full"]), index=False).may_write is None
