"""``refs/bisect/*``: the session shown to git's own tools (``git log --bisect``, ``gitk
--bisect``), in the repository whose commits are bisected, journaled and taken back.

Written as ``git bisect`` writes them: ``refs/bisect/<new term>`` at the oldest commit
known on the new side, ``refs/bisect/<old term>-<sha>`` per commit on the old side,
``refs/bisect/skip-<sha>`` per skipped one; ``BISECT_TERMS`` too when the terms are not
good/bad (``git log --bisect`` reads the ref names from it).

Safety:

- Never ``BISECT_START`` (git's own commands would then act on the session: ``git bisect
  reset`` would check out its branch behind bisectkit's back) nor ``BISECT_LOG`` (``git
  status`` would say a git bisect is in progress, and advise a ``git bisect reset`` that
  answers "We are not bisecting"). Without ``BISECT_START`` every ``git bisect`` command
  but ``start``/``replay`` refuses ("You need to start by git bisect start") and moves
  nothing; ``start`` clears the refs, as it clears any old state.
- A repository where ``git bisect`` has a session (``BISECT_START``, ``BISECT_LOG``), or
  whose ``refs/bisect/`` holds a ref bisectkit did not write, gets nothing: its refs are
  the user's (said once, when the session starts).
- Every write is announced in the journal first (every ref and file it may leave, the lock
  files its git takes): whatever kills bisectkit, ``reset`` removes exactly those still at
  what bisectkit wrote, never a ref somebody else wrote or moved since.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import bisectkit.safety.gitlocks as gitlocks
from bisectkit.errors import BadInput, GitFailure, WriteFailed
from bisectkit.git.repo import Repo
from bisectkit.safety import journal as journal_mod
from bisectkit.safety.fileio import write_text_atomic
from bisectkit.safety.journal import Journal, JournalState
from bisectkit.safety.journalrecords import RefWrite

PREFIX = "refs/bisect/"
#: The files of git's bisect state: one of them present, ``git bisect`` is at work here.
GIT_SESSION = ("BISECT_START", "BISECT_LOG")
TERMS_FILE = "BISECT_TERMS"
_MESSAGE = "bisectkit: the bisection in progress, for git log --bisect"


@dataclass(frozen=True)
class Marks:
    """What the session knows, in the words ``git bisect`` would use."""

    old: str
    new: str
    #: The oldest commit known on the new side (``None``: none yet, an open advance).
    bad: str | None
    good: tuple[str, ...]
    skip: tuple[str, ...]

    def refs(self) -> dict[str, str]:
        """The refs ``git bisect`` would hold for these marks."""
        found = {f"{PREFIX}{self.new}": self.bad} if self.bad else {}
        found.update({f"{PREFIX}{self.old}-{sha}": sha for sha in self.good})
        found.update({f"{PREFIX}skip-{sha}": sha for sha in self.skip})
        return found

    def files(self) -> dict[str, str]:
        """``BISECT_TERMS`` when the terms are not git's default."""
        if (self.old, self.new) == ("good", "bad"):
            return {}
        return {TERMS_FILE: f"{self.new}\n{self.old}\n"}


def key_of(superproject: Repo, repo: Repo) -> str:
    """The journal's name for ``repo`` (``"."``: the superproject; else its path)."""
    if repo.workdir == superproject.workdir:
        return "."
    return os.path.relpath(repo.workdir, superproject.workdir)


def foreign(repo: Repo, state: JournalState | None, key: str) -> str | None:
    """Why ``refs/bisect/`` of ``repo`` is not bisectkit's to write (None: it is)."""
    for name in GIT_SESSION:
        if (repo.git_dir / name).exists():
            return f"git bisect has a session there ({name})"
    ours = _ours(state, key)
    for name, sha in sorted(repo.refs.under(PREFIX).items()):
        if sha not in ours.get(name, set()):
            return f"{name} was not written by bisectkit"
    terms = _read(repo.git_dir / TERMS_FILE)
    if terms is not None and terms not in _our_files(state, key).get(TERMS_FILE, set()):
        return f"{TERMS_FILE} was not written by bisectkit"
    return None


def publish(superproject: Repo, repo: Repo, marks: Marks, journal: Journal,
            note: Callable[[str], None] | None = None) -> None:
    """Make ``refs/bisect/*`` of ``repo`` say ``marks`` (journaled first). Nothing is
    written where the refs are somebody else's (``note``, when given, is told why); a
    write that fails is said through ``note`` and changes nothing else: these refs are
    a view of the session, never a reason to stop it."""
    key = key_of(superproject, repo)
    state = journal_mod.load(journal.path)
    _clear_killed(repo, state, key, note or (lambda _: None))
    why = foreign(repo, state, key)
    if why is not None:
        if note is not None:
            note(f"refs/bisect/* not written in {repo.workdir}: {why}; 'git log --bisect' "
                 "shows that one")
        return
    wanted, files = marks.refs(), marks.files()
    current = repo.refs.under(PREFIX)
    changes = {name: (current.get(name), wanted.get(name))
               for name in {*current, *wanted} if current.get(name) != wanted.get(name)}
    stale_terms = TERMS_FILE not in files and (repo.git_dir / TERMS_FILE).exists()
    if not changes and not stale_terms and all(
            _read(repo.git_dir / k) == v for k, v in files.items()):
        return
    try:
        n = _announce(repo, key, list(changes), journal, wanted, files)
        repo.refs.transaction(changes, _MESSAGE)
        for name, text in files.items():
            write_text_atomic(repo.git_dir / name, text)
        if stale_terms:
            (repo.git_dir / TERMS_FILE).unlink(missing_ok=True)
        journal.refs_written(n)
    except (BadInput, GitFailure, OSError, WriteFailed) as exc:
        if note is not None:
            note(f"refs/bisect/* not updated in {repo.workdir}: {exc}")


def withdraw(superproject: Repo, state: JournalState, journal: Journal,
             note: Callable[[str], None]) -> None:
    """Remove what :func:`publish` wrote (per the journal) that is still as it was written;
    a repository where ``git bisect`` has since started keeps all of its refs."""
    for key in sorted({w.repo for w in state.ref_writes if w.publish is not None}):
        try:
            repo = superproject if key == "." else Repo(superproject.workdir / key)
        except BadInput:
            continue  # gone: nothing of ours to remove there
        _clear_killed(repo, state, key, note)
        if any((repo.git_dir / name).exists() for name in GIT_SESSION):
            continue  # git bisect started here since: refs/bisect/* are its own now
        ours = _ours(state, key)
        changes: dict[str, tuple[str | None, str | None]] = {
            name: (sha, None) for name, sha in repo.refs.under(PREFIX).items()
            if sha in ours.get(name, set())}
        terms = repo.git_dir / TERMS_FILE
        drop_terms = _read(terms) in _our_files(state, key).get(TERMS_FILE, set())
        if not changes and not drop_terms:
            continue
        try:
            n = _announce(repo, key, list(changes), journal, {}, {})
            repo.refs.transaction(changes, "bisectkit: the bisection ended")
            if drop_terms:
                terms.unlink(missing_ok=True)
            journal.refs_written(n)
        except (BadInput, GitFailure, OSError, WriteFailed) as exc:
            note(f"refs/bisect/* of {repo.workdir} not removed ({exc}); 'git "
                 f"update-ref -d' removes them")


def _announce(repo: Repo, key: str, names: list[str], journal: Journal,
              refs: dict[str, str], files: dict[str, str]) -> int:
    """Journal a write of ``names`` (all it may leave: ``refs``, ``files``) before it."""
    # refs/bisect/ is per work tree (in the git dir, never the common one); a delete also
    # takes packed-refs.lock.
    packed = [p for p in gitlocks.ref_locks(repo, []) if p.name == "packed-refs.lock"]
    locks = [*packed, *(repo.git_dir / f"{name}.lock" for name in [*names, *files])]
    t = gitlocks.unjournaled_free([repo], locks)
    return journal.refs(key, [str(p) for p in locks], t, publish=refs, files=files)


def _clear_killed(repo: Repo, state: JournalState | None, key: str,
                  note: Callable[[str], None]) -> None:
    """The lock files a write killed mid-way left (its git's, newer than the write)."""
    for w in _writes(state, key):
        if not w.done:
            gitlocks.clear_unjournaled([repo], [Path(p) for p in w.locks], w.t, note)


def _writes(state: JournalState | None, key: str) -> list[RefWrite]:
    return [] if state is None else [w for w in state.ref_writes
                                     if w.repo == key and w.publish is not None]


def _ours(state: JournalState | None, key: str) -> dict[str, set[str]]:
    """Every value each ref had in a write of bisectkit's (announced, maybe not done)."""
    ours: dict[str, set[str]] = {}
    for w in _writes(state, key):
        for name, sha in (w.publish or {}).items():
            ours.setdefault(name, set()).add(sha)
    return ours


def _our_files(state: JournalState | None, key: str) -> dict[str, set[str]]:
    ours: dict[str, set[str]] = {}
    for w in _writes(state, key):
        for name, text in w.files.items():
            ours.setdefault(name, set()).add(text)
    return ours


def _read(path: Path) -> str | None:
    with contextlib.suppress(OSError):
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    return None
