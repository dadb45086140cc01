"""Commit and tree ids: one short form everywhere, and a ``Sha`` that is a ``str`` to
every consumer (JSON, dict keys, pickling to Dask workers, pygit2)."""

from __future__ import annotations

import json
import pickle
import subprocess

from helpers.worlds import World

from bisectkit.git.repo import Repo
from bisectkit.model import CommitInfo, Sha, Step, short

FULL = "0123456789abcdef0123456789abcdef01234567"


def test_an_id_is_shown_by_its_first_twelve_hex_digits() -> None:
    assert Sha(FULL).short == short(FULL) == "0123456789ab"
    # An id a user or a test abbreviated is kept as given, never refused.
    assert Sha("c0ffee").short == "c0ffee"
    assert Sha("c0ffee") == "c0ffee"


def test_a_sha_is_the_same_text_to_every_consumer() -> None:
    sha = Sha(FULL)
    assert sha == FULL and hash(sha) == hash(FULL) and {FULL: 1}[sha] == 1
    assert json.dumps({sha: [sha]}) == json.dumps({FULL: [FULL]})
    assert repr(sha) == repr(FULL) and f"{sha}" == FULL
    assert type(sha[:4]) is str and type(str(sha)) is str
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):  # what crosses to a Dask worker
        back = pickle.loads(pickle.dumps(sha, protocol=protocol))
        assert type(back) is Sha and back == FULL and back.short == "0123456789ab"


def test_steps_and_commits_hold_a_sha_whoever_builds_them() -> None:
    # A plugin or a test may pass a plain str: the value is a Sha all the same.
    step = Step(index=1, commit=FULL, strategy="submodule")  # type: ignore[arg-type]
    assert type(step.commit) is Sha and step.commit.short == "0123456789ab"
    info = CommitInfo(sha=FULL, subject="s", message="s", author="a", date="d",  # type: ignore[arg-type]
                      parents=())
    assert type(info.sha) is Sha and info.sha.short == "0123456789ab"


def test_repository_ids_are_shas_shortened_as_git_does(world: World) -> None:
    repo = Repo.discover(world.superproject)
    head = repo.resolve("HEAD")
    git = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=world.superproject,
                         env=world.env, text=True, capture_output=True, check=True)
    assert type(head) is Sha and head.short == git.stdout.strip()
    # pygit2 takes a Sha where it takes a str.
    info = repo.commit_info(head)
    assert info.sha == head and type(repo.tree_of(head)) is Sha
