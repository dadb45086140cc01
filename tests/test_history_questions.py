"""History questions asked of the git CLI (ancestry, merge-bases, path-limited walks) give
git's exact answer or fail loudly: never a "no" git did not mean."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from worldgen import hermetic_env

from bisectkit.errors import GitFailure
from bisectkit.git.repo import Repo


@pytest.fixture
def line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A repository of six commits on one line (oldest first), this process hermetic."""
    for key, value in hermetic_env(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for i in range(6):
        (repo / "f").write_text(f"{i}\n", encoding="utf-8")
        git(repo, "add", "f")
        git(repo, "commit", "-qm", f"c{i}")
    return repo, git(repo, "rev-list", "--reverse", "HEAD").split()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, text=True,
                          capture_output=True).stdout.strip()


def test_a_commit_git_cannot_read_is_an_error_not_a_no(line: tuple[Path, list[str]]) -> None:
    """git < 2.45 exits 1 ("not an ancestor", "no merge-base") when a commit on the way
    cannot be read (a collected alternate, a crash's empty loose object): that is no
    answer, and a "no" would drop or apply a patch wrongly for the whole session."""
    repo, shas = line
    middle = shas[3]
    (repo / ".git" / "objects" / middle[:2] / middle[2:]).unlink()
    r = Repo(repo)
    with pytest.raises(GitFailure):
        r.is_ancestor(shas[0], shas[5])
    with pytest.raises(GitFailure):
        r.merge_base(shas[0], shas[5])


@pytest.mark.parametrize("variable", ["GIT_GRAFT_FILE", "GIT_SHALLOW_FILE"])
def test_a_graft_or_shallow_file_from_the_environment_cuts_no_history(
        line: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """A variable that makes git see a commit as a root, where libgit2 and the shallow
    checks (which read <git dir>/shallow) see its parents: the answers stay the graph's."""
    repo, shas = line
    cut = repo.parent / "cut"
    cut.write_text(shas[4] + "\n", encoding="utf-8")
    monkeypatch.setenv(variable, str(cut))
    r = Repo(repo)
    assert r.is_ancestor(shas[0], shas[5])
    assert r.merge_base(shas[0], shas[5]) == shas[0]


def test_a_path_ending_in_a_carriage_return_is_looked_for_as_it_is(
        line: tuple[Path, list[str]]) -> None:
    """git reads paths on stdin by lines and drops a carriage return before the line feed:
    such a path must reach git whole, or the commits that change it are never seen."""
    repo, shas = line
    name = "cr\r"
    (repo / name).write_text("x\n", encoding="utf-8")
    git(repo, "add", "--", name)
    git(repo, "commit", "-qm", "add a path ending in CR")
    head = git(repo, "rev-parse", "HEAD")
    found = set(Repo(repo).range_commits([head], [shas[5]], [name]))
    assert head in found
